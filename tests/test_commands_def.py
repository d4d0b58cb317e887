"""debug/commands.def, the one list of the shell's commands, against what
is built from it and what is written about it.

The list is read here by a parser of its own (shlex), not by the build's
generator; the oracles are the running shell (libss's list_requests, help),
the compiler's view of the sources (every impl_NAME defined once), groff's
rendering of the man page, and, for the generator itself, its refusal of
malformed lists.
"""

import re
import shlex
import shutil

import pytest

import helpers as H

SHELL = "debugfs.extref"
DEF = H.REPO_ROOT / "debug" / "commands.def"
AWK_SCRIPT = H.REPO_ROOT / "debug" / "gen_cmds.awk"
HOST_WORDS = {"HOSTFILE", "HOSTDIR", "IMAGE"}


def read_def(text):
    """[{name, names, args, opts, flags, usage, help}] in file order."""
    cmds = []
    for line in text.replace("\\\n", " ").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        f = shlex.split(line)
        assert len(f) == 7, line
        name, names, args, opts, flags, usage, hlp = f
        cmds.append({
            "name": name,
            "names": [name] if names == "-" else names.split(","),
            "args": args, "opts": opts,
            "flags": set() if flags == "-" else set(flags.split(",")),
            "usage": usage, "help": hlp})
    return cmds


COMMANDS = read_def(DEF.read_text())


def awk():
    """The awk configure chose (the build's Makefile), else awk."""
    mk = H.BUILD_DIR / "Makefile"
    if mk.exists():
        m = re.search(r"^AWK = (\S+)$", mk.read_text(), re.M)
        if m:
            return m[1]
    return "awk"


def gen(path, *args):
    return H.run([awk(), *args, "-f", str(AWK_SCRIPT), str(path)],
                 check=False)


@pytest.fixture(scope="module")
def img(tmp_path_factory):
    path = tmp_path_factory.mktemp("cmds") / "base.img"
    H.mkfs(path, "4M", "-q")
    return path


def test_list_is_sane():
    names = [n for c in COMMANDS for n in c["names"]]
    assert len(COMMANDS) > 40
    assert len(names) == len(set(names)), names
    for c in COMMANDS:
        assert c["name"] in c["names"], c


def test_every_command_has_one_implementation():
    """impl_NAME is defined once in debug/*.c for every NAME of the list,
    and no implementation is left out of it."""
    defined = {}
    for src in sorted((H.REPO_ROOT / "debug").glob("*.c")):
        for m in re.finditer(r"^int impl_(\w+)\(struct cmd_args \*a\)$",
                             src.read_text(), re.M):
            defined.setdefault(m[1], []).append(src.name)
    listed = {c["name"] for c in COMMANDS}
    assert set(defined) == listed, (set(defined) ^ listed)
    assert all(len(v) == 1 for v in defined.values()), defined


def man_lines():
    """debugfs.extref(8) as groff renders it: plain lines."""
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    res = H.run(["groff", "-man", "-Tascii", "-P-cbou", "-rLL=250n",
                 str(H.REPO_ROOT / "docs" / "debugfs.extref.8")])
    return res.stdout.splitlines()


# A .TP paragraph under .SH: the tag at column 7, the text at column 14,
# on the tag's line when the tag is shorter than 7 columns.
TAG, TEXT = 7, 14


def is_tag(line, pattern):
    """line is the .TP tag matching the regular expression pattern."""
    m = re.match(" " * TAG + "(" + pattern + ")", line)
    if not m:
        return False
    rest = line[m.end():]
    return rest.strip() == "" or (m.end() < TEXT and
                                  len(rest) > TEXT - m.end() and
                                  rest[:TEXT - m.end()].isspace() and
                                  not rest[TEXT - m.end()].isspace())


def test_man_page_shows_every_command_with_its_usage():
    """Each command has a tag in the man page that reads "NAME USAGE"
    (aliases after the name allowed), as "help NAME" prints it."""
    lines = man_lines()
    missing = []
    for c in COMMANDS:
        aliases = "".join(f"(, {a})?" for a in c["names"]
                          if a != c["name"])
        want = re.escape(c["name"]) + aliases + \
            (" " + re.escape(c["usage"]) if c["usage"] else "")
        if not any(is_tag(line, want) for line in lines):
            missing.append(f"{c['name']} {c['usage']}")
    assert not missing, missing


def ss_text(s):
    """A string of the list as the shell prints it: mk_cmds puts a blank
    after every comma of a request's help."""
    return re.sub(r",(?! )", ", ", s)


def listing(img):
    """libss's list_requests, as [(names, help)] (our requests only)."""
    out = H.run([H.binary(SHELL), "-R", "lr", str(img)]).stdout
    entries = []
    for line in out.splitlines()[2:]:
        if not line.strip():
            continue
        if line[0].isspace():
            names, _ = entries[-1]
            entries[-1] = (names, line.strip())
            continue
        names, _, hlp = line.partition("  ")
        entries.append((names.split(", "), hlp.strip()))
    return entries


def test_listing_follows_the_list(img):
    """list_requests prints every command's names and help, in the list's
    order, before libss's own requests."""
    got = listing(img)
    ours = got[:len(COMMANDS)]
    assert [n for n, _ in ours] == [c["names"] for c in COMMANDS]
    for (_, hlp), c in zip(ours, COMMANDS):
        assert hlp == ss_text(c["help"]), (hlp, c)
    rest = [n[0] for n, _ in got[len(COMMANDS):]]
    assert rest == ["help", "list_requests", "quit"], rest


def described(c):
    """A command's help less a closing ": NAME ..." (NAME one of its
    names): the usage, which "help NAME" prints on its own line."""
    for m in re.finditer(": ", c["help"]):
        rest = c["help"][m.end():]
        if any(re.match(re.escape(n) + "( |$)", rest) for n in c["names"]):
            return c["help"][:m.start()]
    return c["help"]


def test_help_prints_the_usage_of_every_name(img, tmp_path):
    """help NAME, for every name and alias: the names, the help line less
    the usage it may end in, and "usage: CANONICAL USAGE", as the list
    has them."""
    cmdfile = tmp_path / "cmds"
    names = [n for c in COMMANDS for n in c["names"]]
    cmdfile.write_text("".join(f"help {n}\n" for n in names))
    out = H.run([H.binary(SHELL), "-f", str(cmdfile), str(img)]).stdout
    blocks = re.split(rf"^{SHELL}: help (\w+)\n", out, flags=re.M)[1:]
    got = dict(zip(blocks[::2], blocks[1::2]))
    assert list(got) == names
    for c in COMMANDS:
        usage = (c["name"] + " " + c["usage"]).rstrip()
        want = (f"{', '.join(c['names'])}: {ss_text(described(c))}\n"
                f"usage: {usage}\n")
        for n in c["names"]:
            assert got[n] == want, (n, got[n], want)


def test_host_flag_marks_the_commands_naming_host_files():
    """"host" (left out of the fuzz target) is on exactly the commands
    whose positional arguments name a host file or image."""
    for c in COMMANDS:
        positional = re.sub(r"\[-\w [A-Z]+\]", "", c["usage"])
        names_host = bool(HOST_WORDS & set(re.findall(r"[A-Z]+",
                                                      positional)))
        assert names_host == ("host" in c["flags"]), c


def test_generated_tables(tmp_path):
    """The libss table carries every command; the fuzz table all but the
    "host" ones; the C table and header every implementation."""
    res = gen(DEF, "-v", "out=ct", "-v", "table=t")
    assert res.returncode == 0, H.describe(res)
    reqs = re.findall(r"^request do_(\w+), \"(.*)\",\n\t(.*);$",
                      res.stdout, re.M)
    assert reqs == [(c["name"], c["help"], ", ".join(c["names"]))
                    for c in COMMANDS]
    res = gen(DEF, "-v", "out=ct", "-v", "table=t", "-v", "skip=host")
    assert res.returncode == 0, H.describe(res)
    assert re.findall(r"^request do_(\w+),", res.stdout, re.M) == \
        [c["name"] for c in COMMANDS if "host" not in c["flags"]]
    res = gen(DEF, "-v", "out=c")
    assert res.returncode == 0, H.describe(res)
    assert re.findall(r"^\t\{ \"(\w+)\", impl_(\w+),", res.stdout, re.M) \
        == [(c["name"], c["name"]) for c in COMMANDS]
    res = gen(DEF, "-v", "out=h")
    assert res.returncode == 0, H.describe(res)
    assert re.findall(r"^int impl_(\w+)\(", res.stdout, re.M) == \
        [c["name"] for c in COMMANDS]


GOOD = 'ls  list_directory,ls  0-1  lp  image  "[PATH]" "List: ls [PATH]"\n'


@pytest.mark.parametrize("line, why", [
    ('cat  dir,list  1  -  image  "PATH" "Cat"\n', "lack"),
    ('ls  -  0-1  lp  image  "[PATH]" "List"\n', "twice"),
    ('dir  ls  0-1  -  image  "[PATH]" "List"\n', "also a name"),
    ('cat  -  one  -  image  "PATH" "Cat"\n', "ARGS"),
    ('cat  -  3-1  -  image  "PATH" "Cat"\n', "MIN above MAX"),
    ('cat  -  1  -  disk  "PATH" "Cat"\n', "unknown flag"),
    ('cat  -  1  -  expert  "PATH" "Cat"\n', "expert without write"),
    ('cat  -  1  x-  image  "PATH" "Cat"\n', "OPTIONS"),
    ('cat  -  1  -  image  PATH "Cat"\n', "double quotes"),
    ('cat  -  1  -  image  "PATH"\n', "HELP"),
    ('cat  -  1  -  image  "PATH" "Cat" x\n', "after"),
    ('cat  -  1  -  image  "PATH" "C\\at"\n', "backslash"),
    ('cat  -  1  -  image  "PATH" \\\n', "backslash"),
])
def test_generator_refuses_a_malformed_list(tmp_path, line, why):
    """A bad line: an error naming the file and the line, no output (the
    makefile then keeps no half-made table)."""
    path = tmp_path / "commands.def"
    path.write_text("# a comment\n" + GOOD + line)
    for out in ("ct", "c", "h"):
        res = gen(path, "-v", f"out={out}", "-v", "table=t")
        assert res.returncode != 0, (line, out)
        assert res.stdout == "", (line, out)
        assert res.stderr.startswith(f"{path}:3: "), res.stderr
        assert why in res.stderr, res.stderr
    path.write_text("# a comment\n" + GOOD)
    assert gen(path, "-v", "out=ct", "-v", "table=t").returncode == 0
