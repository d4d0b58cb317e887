"""Helpers have homes one can predict (docs/HACKING, "Where things go").

Inside libfs/ops/ no two files call each other in a circle, through any
number of files (nm over the build's objects, as tests/test_layers.py's
test_calls_point_down): a helper two operations share lives in a file
named for what it is (inode.c, timestamps.c, identity.c, dirent.c, ...),
not in the file of its first user.  Inside libfs/check/ the passes never
call the driver (fsck.c): calls go from the driver to the passes and to
what they share (fsck_progress.c).  And the private headers of both
layers declare each call under the name of the file that defines it.
"""

import functools
import re

import helpers

LIBFS = helpers.REPO_ROOT / "libfs"
DRIVER = "fsck.o"
HEADERS = {"ops": "extref_ops_int.h", "check": "extref_fsck_int.h"}


@functools.lru_cache(maxsize=None)
def calls(layer):
    """({object: {object it calls: [symbols]}} between the layer's
    objects, {symbol: object defining it}), from one nm -A over them."""
    objs = sorted((helpers.BUILD_DIR / "libfs" / layer).glob("*.o"))
    assert len(objs) > 10, f"no {layer}/ objects under {helpers.BUILD_DIR}"
    defined, used = {}, {}
    out = helpers.run(["nm", "-A"] + [str(o) for o in objs]).stdout
    for line in out.splitlines():
        path, _, sym = line.partition(": ")
        if not sym:
            path, _, sym = line.partition(":")
        name, f = path.rsplit("/", 1)[-1], sym.split()
        if len(f) == 3 and f[1] in "TDBR":
            defined[f[2]] = name
        elif len(f) == 2 and f[0] == "U":
            used.setdefault(name, []).append(f[1])
    graph = {}
    for o, syms in used.items():
        for s in syms:
            if s in defined and defined[s] != o:
                graph.setdefault(o, {}).setdefault(defined[s], []).append(s)
    return graph, defined


def find_cycle(graph):
    """One circle of calls in graph ({node: {node: [symbols]}}) as the
    list of its nodes (first repeated at the end), or None."""
    state = {}          # 1: on the current path, 2: done

    def visit(v, path):
        state[v] = 1
        path.append(v)
        for w in sorted(graph.get(v, {})):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w, path)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v, [])
            if found:
                return found
    return None


def describe_cycle(graph, cycle):
    return "\n".join(f"  {a} calls {b}: {' '.join(sorted(graph[a][b]))}"
                     for a, b in zip(cycle, cycle[1:]))


def test_ops_files_call_in_no_circle():
    graph, _ = calls("ops")
    cycle = find_cycle(graph)
    assert cycle is None, (
        "ops/ files that call each other in a circle (give the shared "
        "helper a file of its own, named for what it is):\n"
        + describe_cycle(graph, cycle))


def test_the_rule_catches_a_circle():
    """The checker itself: a -> b -> c -> a is found, a tree is not."""
    graph = {"a.o": {"b.o": ["f"]}, "b.o": {"c.o": ["g"]},
             "c.o": {"a.o": ["h"]}, "d.o": {"a.o": ["f"]}}
    cycle = find_cycle(graph)
    assert cycle is not None and len(cycle) == 4 and cycle[0] == cycle[-1]
    assert set(cycle) == {"a.o", "b.o", "c.o"}
    assert "c.o calls a.o: h" in describe_cycle(graph, cycle)
    del graph["c.o"]
    assert find_cycle(graph) is None


def exported():
    """The calls libfs/libextref.map lists (the library's API)."""
    text = (LIBFS / "libextref.map").read_text()
    return set(re.findall(r"^\s*(extref_\w+);", text, re.M))


def test_passes_never_call_the_driver():
    """The driver's public entry (extref_fsck) is the library's like any
    other: check/'s front ends (fsck_trust.c) may call it; nothing else
    of fsck.c's is called from check/."""
    graph, defined = calls("check")
    assert DRIVER in defined.values(), f"no check/{DRIVER}"
    public = exported()
    assert "extref_fsck" in public
    bad = [f"check/{o} calls {s} (check/fsck.c)"
           for o, to in sorted(graph.items())
           for s in sorted(to.get(DRIVER, [])) if s not in public]
    assert not bad, ("passes that call the driver back (give the helper "
                     "a file of its own that both call):\n" + "\n".join(bad))


# A heading names the file(s) whose calls follow: "/* inode.c: ..." or
# "/* htree.c, dirlist.c: ...", at the start of a comment.
HEADING = re.compile(r"/\*[\s*]*((?:\w+\.c(?:,\s*|\b))+)")
DECL = re.compile(r"^(?:const\s+)?(?:struct\s+)?\w+[\s*]+(xr_\w+)\(",
                  re.M)


def header_homes(text):
    """[(call, [files of the heading above it] or None)] in the order
    the header declares them."""
    marks = [(m.start(), "h", [f.strip() for f in m.group(1).split(",")])
             for m in HEADING.finditer(text)]
    marks += [(m.start(), "d", m.group(1)) for m in DECL.finditer(text)]
    files, out = None, []
    for _, kind, v in sorted(marks, key=lambda m: m[0]):
        if kind == "h":
            files = v
        else:
            out.append((v, files))
    return out


def test_private_headers_name_each_call_s_file():
    bad = []
    for layer, header in HEADERS.items():
        _, defined = calls(layer)
        homes = header_homes((LIBFS / layer / header).read_text())
        assert len(homes) > 20, f"{header}: only {homes} read"
        for call, files in homes:
            where = defined.get(call)
            if where is None:
                continue        # defined in no object of this build
            src = where[:-2] + ".c"
            if files is None or src not in files:
                bad.append(f"{layer}/{header}: {call} is declared under "
                           f"{files or 'no file name'}, defined in {src}")
    assert not bad, "\n".join(bad)


def test_header_homes_reads_headings():
    text = ("/* a.c: one */\nint xr_a(void);\n"
            "/*\n * b.c, c.c: two\n */\nconst struct s *xr_b(int x);\n"
            "/* Not a heading. */\nvoid xr_c(void);\n")
    assert header_homes(text) == [("xr_a", ["a.c"]),
                                  ("xr_b", ["b.c", "c.c"]),
                                  ("xr_c", ["b.c", "c.c"])]
