"""libextref as an installed product: what `make install` gives a program.

The example program (examples/reflink_file.c) is built against a
`make install DESTDIR=...` tree with pkg-config, linked dynamically, and
run: it reflinks a file inside an image (read back with stock debugfs,
checked by stock e2fsck) and prints a library error through com_err's
error_message() without registering any table itself.  The shared
library exports only extref_* symbols, versioned EXTREF_1.0, and every
public header compiles as C++.
"""

import os
import re
import shutil
import subprocess

import pytest

import helpers

PUBLIC = ["extref.h", "extref_format.h", "extref_extent.h", "extref_ops.h",
          "extref_builder.h", "extref_fsck.h", "extref_err.h"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if helpers.sanitized_build():
        pytest.skip("a libextref.so built with AddressSanitizer loads only "
                    "into programs built with it; the installed library is "
                    "tested on the plain build")
    dest = tmp_path_factory.mktemp("destdir")
    helpers.run(["make", "-s", "-C", str(helpers.BUILD_DIR), "install",
                 f"DESTDIR={dest}"])
    pcs = list(dest.rglob("extref.pc"))
    assert len(pcs) == 1, pcs
    return dest, pcs[0].parent


def pkg_config(pcdir, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcdir))
    # --define-prefix: the prefix from where the .pc file was installed
    res = helpers.run(["pkg-config", "--define-prefix", *args, "extref"],
                      env=env)
    return res.stdout.split()


@pytest.fixture(scope="module")
def example(installed, tmp_path_factory):
    dest, pcdir = installed
    out = tmp_path_factory.mktemp("example") / "reflink_file"
    src = helpers.REPO_ROOT / "examples" / "reflink_file.c"
    flags = pkg_config(pcdir, "--cflags", "--libs")
    helpers.run(["cc", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                 str(src), *flags])
    libdir = pcdir.parent
    return out, dict(os.environ, LD_LIBRARY_PATH=str(libdir)), libdir


def test_every_public_header_installed(installed):
    dest, _ = installed
    inc = list(dest.rglob("extref.h"))[0].parent
    for h in PUBLIC:
        assert (inc / h).is_file(), h


def test_example_links_dynamically(example):
    prog, env, libdir = example
    res = helpers.run(["ldd", str(prog)], env=env)
    line = [ln for ln in res.stdout.splitlines() if "libextref" in ln]
    assert line and str(libdir) in line[0], res.stdout


def test_example_reflinks_a_file(example, tmp_path):
    prog, env, _ = example
    img = tmp_path / "x.img"
    helpers.mkfs(img, "16M")
    payload = tmp_path / "payload"
    payload.write_bytes(os.urandom(50000))
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 f"write {payload} /a", str(img)])
    res = helpers.run([str(prog), str(img), "/a", "/b"], env=env)
    assert "reflinked /a to /b" in res.stdout
    assert helpers.debugfs_cat(img, "/b") == payload.read_bytes()
    helpers.e2fsck_fn(img)
    st = helpers.run([helpers.binary("debugfs.extref"), "-R", "stat /b",
                      str(img)]).stdout
    assert re.search(r"count 2|shared", st), st


def test_example_prints_library_error_unregistered(example, tmp_path):
    """error_message() names an extref code: the library registered it."""
    prog, env, _ = example
    img = tmp_path / "plain.img"
    helpers.run(["truncate", "-s", "16M", str(img)])
    helpers.run(["mke2fs", "-qF", "-t", "ext4", str(img)])
    res = helpers.run([str(prog), str(img), "/a", "/b"], env=env, check=False)
    assert res.returncode == 1
    assert "Filesystem lacks the shared_blocks feature" in res.stderr, \
        res.stderr
    assert "Unknown code" not in res.stderr
    # a libext2fs code, also without registration
    res = helpers.run([str(prog), str(img) + ".none", "/a", "/b"], env=env,
                      check=False)
    assert res.returncode == 1 and "Unknown code" not in res.stderr


def test_only_extref_symbols_exported(installed):
    dest, pcdir = installed
    so = sorted(pcdir.parent.glob("libextref.so.*.*"))[0]
    res = helpers.run(["nm", "-D", "--defined-only", str(so)])
    names = [ln.split()[-1].split("@")[0]
             for ln in res.stdout.splitlines() if ln.strip()]
    assert names, res.stdout
    # the version node itself is listed as an absolute symbol
    bad = [n for n in names if not n.startswith("extref_")
           and n != "EXTREF_1.0"]
    assert bad == []
    assert "extref_reflink" in names and "extref_fs_open" in names
    res = helpers.run(["objdump", "-T", str(so)])
    assert re.search(r"EXTREF_1\.0\s+extref_fs_open", res.stdout)


def test_public_headers_compile_as_cxx(installed, tmp_path):
    cxx = shutil.which("g++")
    assert cxx, "g++ (build-essential) is a build dependency"
    _, pcdir = installed
    src = tmp_path / "all.cc"
    src.write_text("".join(f"#include <{h}>\n" for h in PUBLIC) +
                   "int main() { extref_fs_t fs = nullptr; (void)fs; "
                   "return 0; }\n")
    flags = pkg_config(pcdir, "--cflags")
    res = subprocess.run([cxx, "-std=c++17", "-Wall", "-Werror", "-c",
                          "-o", str(tmp_path / "all.o"), str(src), *flags],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_callbacks_error_is_not_stop(tmp_path):
    """A callback's EXTREF_ITER_STOP ends the call with 0; any other code
    ends it with that code (tests/unit/callbacks, on a tree with a record:
    tree_iterate, iterate_mappings, iterate_extents; then check_fs on a
    header with a wrong record count)."""
    img = tmp_path / "cb.img"
    env = dict(os.environ, MKFS=helpers.binary("mkfs.extref"),
               DEBUGFS=helpers.binary("debugfs.extref"), TMP=str(tmp_path),
               IMG=str(img))
    helpers.run(["sh", str(helpers.REPO_ROOT / "tests/fsck/build.default")],
                env=env)
    ino = re.search(r"Inode: (\d+)", helpers.debugfs(img, "stat /a").stdout)
    prog = helpers.binary("tests/unit/callbacks")
    res = helpers.run([prog, str(img), ino[1]], check=False)
    assert res.returncode == 0 and res.stdout.count(": ok") == 6, \
        helpers.describe(res)
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "set_tree_header nrecords 3", str(img)])
    res = helpers.run([prog, "-p", str(img)], check=False)
    assert res.returncode == 0 and res.stdout.count(": ok") == 2, \
        helpers.describe(res)


TOOLS = {"mkfs.extref": ("mkfs", ["-lblkid", "-le2p"]),
         "fsck.extref": ("fsck", ["-lblkid", "-le2p"]),
         "debugfs.extref": ("debug", ["-lss", "-le2p"]),
         "extref-fuse": ("fuse", ["-I/usr/include/fuse3", "-lfuse3",
                                  "-lpthread", "-lblkid"])}


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_tool_builds_against_the_installed_library(installed, tmp_path,
                                                   tool):
    """Each tool's own sources build with nothing of the library but the
    installed headers (no -I of libfs/: a private header would not be
    found) and link against the installed libextref.so, which exports
    only the public calls; the tool then runs (--version)."""
    dest, pcdir = installed
    folder, extra = TOOLS[tool]
    src = helpers.REPO_ROOT / folder
    gen = helpers.BUILD_DIR / folder     # debug's generated command table
    inc = next(dest.rglob("extref/extref.h")).parent
    flags = pkg_config(pcdir, "--cflags", "--libs")
    defs = ['-DEXTREF_VERSION_STRING="test"', '-DMKE2FS_PATH="/sbin/mke2fs"']
    srcs = sorted(str(p) for p in src.glob("*.c"))
    srcs += sorted(str(p) for p in gen.glob("*.c")
                   if not (src / p.name).exists())
    out = tmp_path / tool
    res = helpers.run(["cc", "-w", f"-I{inc}", f"-I{src}", f"-I{gen}",
                       "-I/usr/include/ext2fs", "-I/usr/include/et",
                       "-I/usr/include/ss", "-I/usr/include/blkid", "-I/usr/include/uuid",
                       *defs, "-o", str(out), *srcs,
                       *flags, *extra, "-lext2fs", "-lcom_err", "-luuid"],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    libdir = pcdir.parent
    run = helpers.run([str(out), "-V"], check=False,
                      env={"LD_LIBRARY_PATH": str(libdir)})
    assert run.returncode == 0 and "extref" in run.stdout + run.stderr, \
        helpers.describe(run)
    assert str(libdir) in helpers.run(
        ["ldd", str(out)], env={"LD_LIBRARY_PATH": str(libdir)}).stdout


def test_every_public_call_is_exported(installed):
    """Every function the installed headers declare is in libextref.so's
    dynamic symbol table (a definition compiled where its public
    declaration is not seen would be hidden by -fvisibility=hidden)."""
    dest, pcdir = installed
    inc = next(dest.rglob("extref/extref.h")).parent
    declared = set()
    for h in inc.glob("*.h"):
        text = re.sub(r"/\*.*?\*/", "", h.read_text(), flags=re.S)
        declared |= set(re.findall(r"\b(extref_\w+)\s*\(", text))
    so = next(pcdir.parent.glob("libextref.so.*.*"))
    dyn = helpers.run(["nm", "-D", "--defined-only", str(so)]).stdout
    exported = {l.split()[-1].split("@")[0] for l in dyn.splitlines()}
    missing = sorted(declared - exported)
    assert len(declared) > 50 and not missing, missing


def test_the_map_names_every_public_call():
    """libfs/libextref.map is the named list of the library's calls: the
    same set as the public headers declare, each named once."""
    declared = set()
    for h in [h for h in PUBLIC if h != "extref_err.h"]:
        text = (helpers.REPO_ROOT / "libfs" / h).read_text()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        declared |= set(re.findall(r"\b(extref_\w+)\s*\(", text))
    text = (helpers.REPO_ROOT / "libfs/libextref.map").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    listed = re.findall(r"^\s*(extref_\w+);", text, flags=re.M)
    assert len(listed) == len(set(listed)), "a call is listed twice"
    assert "*" not in text.split("local:")[0], "a wildcard in global:"
    assert sorted(set(listed) ^ declared) == []


def map_calls():
    text = (helpers.REPO_ROOT / "libfs/libextref.map").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.findall(r"^\s*(extref_\w+);", text, flags=re.M)


def unnamed(calls, page):
    """The calls the man page's text never names (a whole word: not
    extref_dedupe_fs for extref_dedupe_fs2)."""
    return sorted(c for c in calls
                  if not re.search(rf"(?<!\w){c}(?!\w)", page))


def test_the_man_page_names_every_call_of_the_map():
    """libextref(3) names every call of libfs/libextref.map: a call
    added to the library's API is documented with it."""
    calls = map_calls()
    page = (helpers.REPO_ROOT / "docs/libextref.3").read_text()
    assert unnamed(["extref_dedupe_fs", "extref_x"],
                   ".B extref_dedupe_fs2\n.BR extref_x ,\n") == \
        ["extref_dedupe_fs"]
    missing = unnamed(calls, page)
    assert len(calls) > 100 and not missing, (
        "calls of libfs/libextref.map that docs/libextref.3 does not "
        "name (say what each does, in its section):\n"
        + "\n".join(missing))
