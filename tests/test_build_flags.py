"""The build rebuilds what a new configuration changes (BUILD-FLAGS).

Objects depend on the flags they were made with: configuring again with
another option and running make compiles again, with the new flags; the
same configuration twice compiles nothing; making one object that has
flags of its own leaves BUILD-FLAGS as the configuration wrote it (its
flags are private, not inherited by BUILD-FLAGS).  The sources are copied once
(helpers.copy_sources) and each test configures a build directory of its
own beside them (an out-of-tree build, as scripts/test's), so the build
under test is not touched.
"""

import hashlib
import re
import subprocess

import pytest

import helpers


@pytest.fixture(scope="module")
def configure_script(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    helpers.copy_sources(src)
    subprocess.run(["sh", str(src / "autogen.sh")], check=True)
    return src / "configure"


@pytest.fixture
def configure(configure_script, tmp_path):
    def run(*args):
        subprocess.run([str(configure_script), *args], cwd=tmp_path,
                       check=True, stdout=subprocess.DEVNULL)
    return run


def make(build, *args):
    r = subprocess.run(["make", "-j2", *args], cwd=build, check=True,
                       capture_output=True, text=True)
    return r.stdout


def compiles(out):
    """The sources that make's output compiles (lines with -c)."""
    return {l.split()[-1]: l for l in out.splitlines() if " -c " in l}


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reconfigure_rebuilds_objects(configure, tmp_path):
    obj = tmp_path / "mkfs/main.o"
    configure("CFLAGS=-O2 -g")
    assert any(s.endswith("mkfs/main.c")
               for s in compiles(make(tmp_path, "mkfs/main.o")))
    first = digest(obj)

    # The same configuration again: nothing to compile.
    configure("CFLAGS=-O2 -g")
    assert not compiles(make(tmp_path, "mkfs/main.o"))
    assert digest(obj) == first

    # Another configuration: compiled again, with the new flags.
    configure("CFLAGS=-O0")
    cmd = [c for s, c in compiles(make(tmp_path, "mkfs/main.o")).items()
           if s.endswith("mkfs/main.c")]
    assert cmd and "-O0" in cmd[0]
    assert digest(obj) != first


def test_fault_injection_reaches_every_library_object(configure, tmp_path):
    """scripts/demo's configuration, then scripts/test's: every library
    object is compiled again, with -Werror and fault injection."""
    configure()
    make(tmp_path, "BUILD-FLAGS", "libfs/extref_err.h")
    objs = [c.split(" -o ")[1].split()[0]
            for c in compiles(make(tmp_path, "-n", "lib")).values()]
    assert len(objs) > 50
    # Stand-ins for objects built with this configuration, newer than
    # their sources: make now has nothing to compile for the library.
    for o in objs:
        (tmp_path / o).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / o).touch()
    assert not compiles(make(tmp_path, "-n", "lib"))

    configure("--enable-werror", "--enable-fault-injection")
    cmds = compiles(make(tmp_path, "-n", "lib"))
    for o in objs:
        hit = [c for s, c in cmds.items() if s.endswith(o[:-2] + ".c")]
        assert hit, f"{o} is not rebuilt"
        assert "-DEXTREF_FAULT_INJECTION=1" in hit[0] and "-Werror" in hit[0]


# A target-specific variable: TARGETS: [private] VAR op VALUE.
TARGET_VAR = re.compile(r"^([^\t#:=][^:=]*?):\s*(private\s+)?"
                        r"(?:override\s+)?([A-Za-z_]\w*)\s*(?:\+=|:=|\?=|=)")


def target_vars(text):
    """[(targets, private, variable)] of a makefile's text, each line
    with its continuations joined."""
    text = re.sub(r"\\\n\s*", " ", text)
    return [(m.group(1).strip(), bool(m.group(2)), m.group(3))
            for m in map(TARGET_VAR.match, text.splitlines()) if m]


def test_per_object_flags_are_private():
    """Every object depends on BUILD-FLAGS, so a flag given to some
    objects only must be private: else BUILD-FLAGS, made for one of
    them, takes it, and the next make rebuilds everything."""
    assert target_vars("a.o b.o: \\\n\tprivate X += 1\nc.o: Y = 2\n"
                       "D := 3\nd.o: d.c\n\te.o: Z = 4\n") == \
        [("a.o b.o", True, "X"), ("c.o", False, "Y")]
    found = target_vars((helpers.REPO_ROOT / "Makefile.in").read_text())
    assert any("mke2fs_run.o" in t for t, _, _ in found), found
    bad = [f"{t}: {v}" for t, private, v in found if not private]
    assert not bad, ("target-specific flags without private "
                     "(Makefile.in):\n" + "\n".join(bad))


@pytest.mark.parametrize("obj", ["mkfs/mke2fs_run.o", "debug/main.o",
                                 "libfs/builder/oci_layout.o"])
def test_one_object_leaves_build_flags(configure, tmp_path, obj):
    configure()
    make(tmp_path, "BUILD-FLAGS")
    before = (tmp_path / "BUILD-FLAGS").read_text()
    out = make(tmp_path, "-n", obj)     # BUILD-FLAGS' recipe runs (+)
    said = "BUILD-FLAGS: the configuration changed: rebuilding"
    assert said not in out.splitlines(), out
    assert (tmp_path / "BUILD-FLAGS").read_text() == before
