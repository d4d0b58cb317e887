"""The library's layers point down (docs/HACKING), and the tools above it write through it only.

Every quoted #include of a file under libfs/ names a header of its own
layer, of a layer below it, or a public header no higher than its layer
(extref.h, extref_format.h and extref_err.h are everyone's; extref_extent.h
belongs to extent/, extref_ops.h to ops/, extref_fsck.h to check/,
extref_builder.h to builder/).  A header of a higher layer,
or of an unknown folder, fails the test with the edge it found.

mkfs.extref, fsck.extref and extref-fuse say, ask and call; only the
library writes an image (issue 32, "the library is the product").  Their
sources (mkfs/, fsck/, fuse/) may use of libext2fs only the calls READ_ONLY names, each
of which writes nothing, never open for writing (EXT2_FLAG_RW), write
through a channel or assign a superblock field.  debug/ is exempt: its
expert commands edit raw structures by design.
"""

import re

import helpers

LIBFS = helpers.REPO_ROOT / "libfs"

# Lowest first; a layer may include its own headers and those below it.
LAYERS = ["base", "journal", "tree", "txn", "quota", "extent", "ops",
          "check", "image", "builder"]
PUBLIC = {"extref.h": "base", "extref_format.h": "base",
          "extref_err.h": "base", "extref_extent.h": "extent",
          "extref_ops.h": "ops", "extref_fsck.h": "check",
          "extref_builder.h": "builder"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """The layer a header or source belongs to, or None."""
    rel = path.relative_to(LIBFS)
    if len(rel.parts) == 1:
        return PUBLIC.get(rel.name)
    return rel.parts[0] if rel.parts[0] in LAYERS else None


def resolve(src, name):
    """The file an #include "name" in src finds, as the compiler would
    (the including file's folder, then libfs/, the build's -I)."""
    for base in (src.parent, LIBFS):
        p = (base / name).resolve()
        if p.is_file():
            return p
    return None


def edges():
    for src in sorted(LIBFS.rglob("*.[ch]")):
        for name in INCLUDE.findall(src.read_text()):
            if name == "extref_err.h":      # generated in the build
                continue
            yield src, name, resolve(src, name)


def test_every_source_is_in_a_layer():
    stray = [str(p.relative_to(LIBFS)) for p in LIBFS.rglob("*.[ch]")
             if layer_of(p) is None and p.name != "extref_err.c"]
    assert not stray, f"files outside the layers {LAYERS}: {stray}"


def test_includes_point_down():
    bad = []
    for src, name, target in edges():
        if target is None or LIBFS not in target.parents:
            bad.append(f"{src.relative_to(LIBFS)}: \"{name}\" not found "
                       "under libfs/")
            continue
        have, want = layer_of(src), layer_of(target)
        if want is None or LAYERS.index(want) > LAYERS.index(have):
            bad.append(f"{src.relative_to(LIBFS)} ({have}) includes "
                       f"{target.relative_to(LIBFS)} ({want})")
    assert not bad, "include edges that point up:\n" + "\n".join(bad)


def test_the_rule_catches_an_upward_edge(tmp_path, monkeypatch):
    """The checker itself: a tree/ file including an ops/ header fails."""
    fake = tmp_path / "libfs"
    (fake / "tree").mkdir(parents=True)
    (fake / "ops").mkdir()
    (fake / "ops" / "x.h").write_text("")
    (fake / "tree" / "y.c").write_text('#include "ops/x.h"\n')
    monkeypatch.setattr(__import__(__name__), "LIBFS", fake)
    try:
        test_includes_point_down()
    except AssertionError as e:
        assert "tree/y.c (tree) includes ops/x.h (ops)" in str(e)
    else:
        raise AssertionError("an upward edge passed")


def test_calls_point_down():
    """The same rule for the calls themselves: no library object uses a
    symbol that a higher layer's object defines (nm over the build's
    objects), so a call through a public header cannot hide an edge."""
    objs = sorted((helpers.BUILD_DIR / "libfs").glob("*/*.o"))
    assert len(objs) > 50, f"no library objects under {helpers.BUILD_DIR}"
    defined, used = {}, {}
    for o in objs:
        out = helpers.run(["nm", str(o)]).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBR":
                defined[f[2]] = o.parent.name
            elif len(f) == 2 and f[0] == "U":
                used.setdefault(o, []).append(f[1])
    bad = [f"{o.parent.name}/{o.name} calls {s} ({defined[s]})"
           for o, syms in used.items() for s in syms
           if s in defined and o.parent.name in LAYERS
           and LAYERS.index(defined[s]) > LAYERS.index(o.parent.name)]
    assert not bad, "calls that point up:\n" + "\n".join(bad)


# The tools' sources, and the libext2fs calls they may make: each writes
# nothing (why, for each).  A writing call belongs in the library, behind
# a public call of the layer it is about (libfs/libextref.map).
TOOLS = ["mkfs", "fsck", "fuse"]
READ_ONLY = {
    # read an inode, or test one read (extref-fuse's getattr, readlink)
    "ext2fs_read_inode_full", "ext2fs_is_fast_symlink",
    "ext2fs_get_stat_i_blocks",
    # superblock counts, read (statfs)
    "ext2fs_blocks_count", "ext2fs_free_blocks_count",
    "ext2fs_r_blocks_count",
    # an inode's extended attributes, read: the handle is closed without
    # ext2fs_xattrs_write (getxattr, listxattr)
    "ext2fs_xattrs_open", "ext2fs_xattrs_read", "ext2fs_xattr_get",
    "ext2fs_xattrs_iterate", "ext2fs_xattrs_close",
    # frees memory libext2fs allocated
    "ext2fs_free_mem",
    # opens read-only: EXT2_FLAG_RW is refused in the same sources
    "ext2fs_open2",
    # closes such a handle: only a read-write one marked dirty is flushed
    "ext2fs_close_free",
    # reads /proc/mounts (and the loop devices' backing files)
    "ext2fs_check_if_mounted",
    # returns libext2fs's version strings
    "ext2fs_get_library_version",
}
# tests a feature bit of an in-memory superblock
READ_ONLY_PREFIXES = ("ext2fs_has_feature_",)
# what writes whatever call opened the handle
FORBIDDEN = [
    (re.compile(r"\bEXT2_FLAG_RW\b"), "opens for writing"),
    (re.compile(r"\bio_channel_write\w*"), "writes through a channel"),
    (re.compile(r"->\s*super\s*->\s*\w+(?:\[[^]]*\])?\s*"
                r"(?:[-+*/%&|^]|<<|>>)?=(?!=)"), "sets a superblock field"),
]
NAME = re.compile(r"(?<!struct )\b(ext2fs_\w+)")
SKIP = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                  r"'(?:\\.|[^'\\\n])*'", re.S)


def tool_writes(root):
    """[(file, line, what)] of every write or unlisted libext2fs name in
    root's tool sources, comments and strings left out (lines kept)."""
    out = []
    for d in TOOLS:
        for src in sorted((root / d).glob("*.[ch]")):
            text = SKIP.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                            src.read_text())
            rel = src.relative_to(root)
            for m in NAME.finditer(text):
                name = m.group(1)
                if name in READ_ONLY or name.startswith(READ_ONLY_PREFIXES):
                    continue
                line = text.count("\n", 0, m.start()) + 1
                out.append((str(rel), line, f"{name} (not known read-only)"))
            for pat, what in FORBIDDEN:
                for m in pat.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    out.append((str(rel), line, f"{what}: {m.group(0)}"))
    return out


def test_tools_write_only_through_the_library():
    srcs = [p for d in TOOLS for p in (helpers.REPO_ROOT / d).glob("*.c")]
    assert len(srcs) > 10, f"no tool sources under {helpers.REPO_ROOT}"
    bad = tool_writes(helpers.REPO_ROOT)
    assert not bad, (
        "mkfs/, fsck/ and fuse/ write an image themselves (move the write into "
        "the library, behind a public call; a call that writes nothing "
        "goes into READ_ONLY, saying why):\n"
        + "\n".join(f"{f}:{n}: {w}" for f, n, w in bad))


def test_the_rule_catches_a_tool_write(tmp_path):
    """The checker itself: each kind of write is found, in its file and
    line; the listed read-only calls, comments and strings are not."""
    for d in TOOLS:
        (tmp_path / d).mkdir()
    (tmp_path / "fsck" / "a.c").write_text(
        "/* ext2fs_write_inode(fs) in a comment */\n"
        "err = ext2fs_open2(name, NULL, EXT2_FLAG_64BITS, 0, 0, m, &fs);\n"
        "if (ext2fs_has_feature_journal(fs->super)) puts(\"ext2fs_flush\");\n"
        "ext2fs_mark_super_dirty(fs);\n"
        "fs->super->s_jnl_blocks[3] = 0;\n"
        "if (fs->super->s_state == 1) ext2fs_close_free(&fs);\n")
    (tmp_path / "mkfs" / "b.c").write_text(
        "int f = EXT2_FLAG_RW;\nstruct ext2fs_journal_params jp;\n"
        "io_channel_write_blk64(io, 1, 1, buf);\n"
        "fs->super->s_feature_ro_compat |= 1;\n")
    bad = tool_writes(tmp_path)
    got = {(f, n) for f, n, _ in bad}
    assert got == {("fsck/a.c", 4), ("fsck/a.c", 5), ("mkfs/b.c", 1),
                   ("mkfs/b.c", 3), ("mkfs/b.c", 4)}, bad
    assert any("ext2fs_mark_super_dirty" in w for _, _, w in bad)
