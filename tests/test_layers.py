"""The library's layers point down (docs/HACKING).

Every quoted #include of a file under libfs/ names a header of its own
layer, of a layer below it, or a public header no higher than its layer
(extref.h, extref_format.h and extref_err.h are everyone's; extref_extent.h
belongs to extent/, extref_ops.h to ops/, extref_fsck.h to check/,
extref_builder.h to builder/).  A header of a higher layer,
or of an unknown folder, fails the test with the edge it found.
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
