"""Integration tests of debugfs.extref, the extref debug shell.

    /usr/bin/python3 -m pytest tests/test_shell.py

Images are made with mkfs.extref; results are checked with the shell
itself and, wherever possible, with the stock e2fsprogs tools (debugfs,
e2fsck), which know nothing of extref.
"""

import os
import re
import subprocess

import pytest

import helpers as H

SHELL = "debugfs.extref"
BS = 1024            # mkfs.extref gives 1 KiB blocks below 512 MiB


# ----- helpers -----

def dbg(img, *requests, rw=False, check=False, text=True, stdin=None,
        extra=()):
    """Run debugfs.extref on img: one -R request, or -f - with several."""
    cmd = [H.binary(SHELL), *extra]
    if rw:
        cmd.append("-w")
    if len(requests) == 1:
        cmd += ["-R", requests[0]]
        inp = stdin
    else:
        cmd += ["-f", "-"]
        inp = "\n".join(requests) + "\n"
        if not text:
            inp = inp.encode()
    cmd.append(str(img))
    return H.run(cmd, check=check, input=inp, text=text)


def ok(img, *requests, rw=False, text=True):
    res = dbg(img, *requests, rw=rw, text=text)
    assert res.returncode == 0, H.describe(res)
    return res


def fail(img, *requests, rw=False):
    res = dbg(img, *requests, rw=rw)
    assert res.returncode == 1, H.describe(res)
    return res


@pytest.fixture
def img(tmp_path, mkfs):
    path = tmp_path / "fs.img"
    H.mkfs(path, "16M", "-q")
    return path


@pytest.fixture
def hostfile(tmp_path):
    """A host file of 100000 pseudo-random bytes (not block-aligned)."""
    data = os.urandom(100000)
    path = tmp_path / "host.bin"
    path.write_bytes(data)
    path.chmod(0o644)
    return path, data


def stock_stat(img, spec):
    return H.debugfs_stat(img, spec)


def reflink_skip(img, src, dst):
    """Run reflink; skip the test when libextref does not implement it."""
    res = dbg(img, f"reflink {src} {dst}", rw=True)
    if res.returncode and "nimplemented" in res.stderr:
        pytest.skip("extref_reflink is not implemented yet: "
                    + res.stderr.strip())
    assert res.returncode == 0, H.describe(res)
    return res


FIEMAP_ROW = re.compile(
    r"^\s*(\d+): \[(\d+)\.\.(\d+)\]:\s+(?:(\d+)\.\.(\d+)|hole)\s+(\d+)"
    r"(?:\s+(0x[0-9a-f]+))?$")


def fiemap_rows(out):
    """Rows of fiemap -v: (ext, lstart, lend, pstart|None, pend, total, flags)."""
    rows = []
    for line in out.splitlines():
        m = FIEMAP_ROW.match(line)
        if m:
            g = m.groups()
            rows.append((int(g[0]), int(g[1]), int(g[2]),
                         None if g[3] is None else int(g[3]),
                         None if g[4] is None else int(g[4]),
                         int(g[5]), None if g[6] is None else int(g[6], 16)))
    return rows


DU_ROW = re.compile(r"^\s*(\S+)\s+(\S+)\s+(\S+)\s\s(.+)$")


def du_rows(out):
    lines = out.splitlines()
    assert lines[0].split() == ["Total", "Exclusive", "Set", "shared",
                                "Filename"], out
    assert lines[0] == "     Total   Exclusive  Set shared  Filename"
    rows = {}
    for line in lines[1:]:
        m = DU_ROW.match(line)
        assert m, f"bad du row {line!r}"
        rows[m.group(4)] = m.group(1, 2, 3)
    return rows


# ----- modes, options, exit status -----

def test_version_and_help():
    res = H.run([H.binary(SHELL), "-V"])
    assert "debugfs.extref" in res.stdout
    res = H.run([H.binary(SHELL), "-h"])
    assert "Usage:" in res.stdout and "-R" in res.stdout


def test_stats_fresh_image(img):
    res = ok(img, "stats")
    out = res.stdout
    assert "Reference-count tree" in out
    assert re.search(r"Records:\s+0\b", out), out
    assert re.search(r"Depth:\s+0\b", out), out
    assert "shared_blocks" in out
    assert re.search(r"Block size:\s+1024\b", out), out
    uuid = H.dumpe2fs_header(img)["Filesystem UUID"]
    assert uuid in out
    assert res.stderr == ""


def test_cmdfile_runs_and_echoes_every_request(img, tmp_path):
    cmdfile = tmp_path / "cmds"
    cmdfile.write_text("# a comment\n\npwd\n  ls /\nstats\n")
    res = H.run([H.binary(SHELL), "-f", str(cmdfile), str(img)])
    out = res.stdout
    assert "debugfs.extref: pwd\n/\n" in out
    assert "debugfs.extref: ls /\n" in out
    assert "lost+found" in out
    assert "debugfs.extref: stats\n" in out
    assert "a comment" not in out
    assert out.count("debugfs.extref: ") == 3


def test_cmdfile_from_stdin(img):
    res = ok(img, "pwd", "ls")
    assert "debugfs.extref: pwd\n/\n" in res.stdout
    assert "lost+found" in res.stdout


def test_quit_ends_a_command_file(img):
    res = ok(img, "pwd", "quit", "stat /nonexistent")
    assert "debugfs.extref: quit" in res.stdout
    assert res.stderr == ""


def test_interactive_mode_reads_stdin(img):
    # interactive: libss reads through readline, whose memory is its own
    res = H.run([H.binary(SHELL), str(img)], input="pwd\nls /\nquit\n",
                env=H.no_leak_check_env())
    assert "/\n" in res.stdout and "lost+found" in res.stdout


def test_exit_status_nonzero_when_a_request_fails(img):
    res = fail(img, "stat /nonexistent")
    assert res.stderr.startswith("stat: /nonexistent: "), res.stderr
    assert len(res.stderr.splitlines()) == 1
    # A failure in the middle: later requests still run, status 1.
    res = fail(img, "pwd", "stat /nonexistent", "ls /")
    assert "lost+found" in res.stdout
    ok(img, "stat /")
    ok(img, "stat <2>")


def test_unknown_request_fails(img):
    res = fail(img, "no_such_request")
    assert "no_such_request" in res.stderr


@pytest.mark.parametrize("request_, usage", [
    ("stat", "stat: usage: stat PATH"),
    ("stat / /", "stat: usage: stat PATH"),
    ("dump /", "dump: usage: dump [-p] [--same-permissions] [--xattrs] "
               "PATH HOSTFILE"),
    ("ls / /", "ls: usage: ls [-l] [-p] [PATH]"),
    ("refcount 1 2 3", "refcount: usage: refcount [START [LEN]]"),
    ("owners", "owners: usage: owners BLOCK"),
    ("fiemap", "fiemap: usage: fiemap [-v] PATH"),
    ("du", "du: usage: du [-s] [--raw] PATH..."),
    ("pwd x", "pwd: usage: pwd"),
])
def test_wrong_argument_count_prints_usage(img, request_, usage):
    res = fail(img, request_)
    assert res.stderr.strip() == usage


@pytest.mark.parametrize("request_, usage", [
    ("chmod 644", "chmod: usage: chmod MODE PATH"),
    ("clone_range /a 0 /b 0", "clone_range: usage: clone_range SRC SOFF DST DOFF LEN"),
    ("unshare /a 0", "unshare: usage: unshare PATH [OFF LEN]"),
])
def test_wrong_argument_count_change_commands(img, request_, usage):
    res = fail(img, request_, rw=True)
    assert res.stderr.strip() == usage


def test_unknown_option_prints_usage(img):
    res = fail(img, "ls -x /")
    assert res.stderr.strip() == \
        "ls: unknown option -x; usage: ls [-l] [-p] [PATH]"
    res = fail(img, "du --bogus /")
    assert "usage: du" in res.stderr


@pytest.mark.parametrize("request_", [
    "mkdir /x", "write {host} /x", "rm /lost+found", "rmdir /lost+found",
    "symlink /l /t", "chmod 700 /", "chown 1:1 /",
    "setxattr / user.a b", "truncate /x 0", "punch /x 0 1",
    "pwrite /x 0 1", "unshare /x", "reflink /a /b",
    "clone_range /a 0 /b 0 0", "dedupe /a 0 /b 0 0",
])
def test_change_refused_without_w(img, hostfile, request_):
    before = H.sha256(img)
    res = fail(img, request_.format(host=hostfile[0]))
    name = request_.split()[0]
    assert res.stderr.strip() == f"{name}: needs an image opened with -w"
    assert H.sha256(img) == before


def test_read_only_session_leaves_image_identical(img):
    before = H.sha256(img)
    ok(img, "stats", "ls -l /", "stat <5>", "refcount", "refcount_tree",
       "check", "fiemap -v <5>", "du /", "owners 100")
    assert H.sha256(img) == before


# ----- inspection -----

REFCOUNT_HEADER = "       Start     Length   Count\n"


def test_refcount_empty_tree(img):
    res = ok(img, "refcount")
    assert res.stdout == REFCOUNT_HEADER
    res = ok(img, "refcount 0x10 100")
    assert res.stdout == REFCOUNT_HEADER


def test_refcount_tree_empty(img):
    res = ok(img, "refcount_tree")
    lines = res.stdout.splitlines()
    assert len(lines) == 1, res.stdout
    assert lines[0].startswith("header: lblk 0")
    assert "records 0" in lines[0] and "depth 0" in lines[0]
    assert "nblocks 1" in lines[0]
    assert lines[0].endswith("csum ok")


def test_check_clean_image(img):
    res = ok(img, "check")
    assert "no problems" in res.stdout


def test_stat_inode5_shows_extents(img):
    res = ok(img, "stat <5>")
    assert "Inode: 5" in res.stdout
    assert "EXTENTS:" in res.stdout
    assert re.search(r"lblk 0-0  pblk \d+-\d+  len 1  refcount 1$",
                     res.stdout, re.M), res.stdout


def test_image_without_tree_still_inspectable(tmp_path):
    path = tmp_path / "plain.img"
    H.run(["mke2fs", "-q", "-F", "-t", "ext4", str(path), "8M"])
    res = ok(path, "ls /")
    assert "lost+found" in res.stdout
    assert str(path) in res.stderr and "warning" in res.stderr
    res = fail(path, "refcount")
    assert "refcount: needs the reference-count tree" in res.stderr
    res = ok(path, "stats")
    assert "not loaded" in res.stdout
    res = fail(path, "mkdir /x", rw=True)
    assert "needs the reference-count tree" in res.stderr


# ----- changes -----

def test_mkdir_write_cat_roundtrip(img, hostfile, tmp_path):
    host, data = hostfile
    res = ok(img, "mkdir /dir", f"write {host} /dir/file", rw=True)
    assert "Allocated inode:" in res.stdout
    got = ok(img, "cat /dir/file", text=False).stdout
    assert got == data
    assert H.debugfs_cat(img, "/dir/file") == data
    out = tmp_path / "dumped"
    ok(img, f"dump /dir/file {out}")
    assert out.read_bytes() == data
    H.e2fsck_fn(img)


def test_write_refuses_existing_name(img, hostfile):
    host, _ = hostfile
    ok(img, f"write {host} /f", rw=True)
    res = fail(img, f"write {host} /f", rw=True)
    assert "File exists" in res.stderr
    H.e2fsck_fn(img)


def test_ls_long(img, hostfile):
    host, data = hostfile
    ok(img, "mkdir /d", f"write {host} /d/f", rw=True)
    res = ok(img, "ls -l /d")
    line = [l for l in res.stdout.splitlines() if l.endswith("  f")][0]
    fields = line.split()
    assert fields[1] == "-rw-r--r--"
    assert fields[2] == "1"
    assert fields[5] == str(len(data))
    res = ok(img, "ls -l /")
    assert re.search(r"^\s*\d+  drwxr-xr-x\s+2\s+\d+\s+\d+\s+\d+"
                     r"\s+\d+-\w{3}-\d{4} \d\d:\d\d  d$",
                     res.stdout, re.M), res.stdout
    res = ok(img, "ls /d")
    assert res.stdout.splitlines() == [".", "..", "f"]


def test_cd_pwd_relative_paths(img, hostfile):
    host, data = hostfile
    res = ok(img, "mkdir /a", "cd /a", "mkdir b", "cd b",
             f"write {host} f", "pwd", rw=True)
    assert "/a/b\n" in res.stdout
    assert H.debugfs_cat(img, "/a/b/f") == data
    res = fail(img, "cd /a/b/f")
    assert "Not a directory" in res.stderr
    H.e2fsck_fn(img)


def test_symlink(img):
    long_target = "/" + "x" * 100
    ok(img, "symlink /fast /target", f"symlink /slow {long_target}", rw=True)
    st = stock_stat(img, "/fast")
    assert "Type: symlink" in st
    assert '"/target"' in st
    st = stock_stat(img, "/slow")
    assert "Type: symlink" in st
    res = H.debugfs(img, "cat /slow")
    assert res.stdout == long_target
    H.e2fsck_fn(img)


def test_chmod_chown_visible_to_stock_debugfs(img, hostfile):
    host, _ = hostfile
    ok(img, f"write {host} /f", "chmod 640 /f", "chown 1000:100 /f",
       "chown :7 /", rw=True)
    st = stock_stat(img, "/f")
    assert re.search(r"Mode:\s+0640\b", st), st
    assert re.search(r"User:\s+1000\s+Group:\s+100\b", st), st
    st = stock_stat(img, "/")
    assert re.search(r"User:\s+0\s+Group:\s+7\b", st), st
    res = fail(img, "chmod 999 /f", rw=True)
    assert "bad mode" in res.stderr
    H.e2fsck_fn(img)


def test_xattr_roundtrip(img, hostfile):
    host, _ = hostfile
    ok(img, f"write {host} /f", "setxattr /f user.foo bar",
       'setxattr /f user.second "two words"', rw=True)
    res = ok(img, "getxattr /f user.foo")
    assert res.stdout == "bar\n"
    res = ok(img, "listxattr /f")
    assert 'user.foo (3) = "bar"' in res.stdout
    assert 'user.second (9) = "two words"' in res.stdout
    res = fail(img, "getxattr /f user.none")
    assert "no such attribute" in res.stderr
    stock = H.debugfs(img, "ea_get /f user.foo").stdout
    assert "bar" in stock
    H.e2fsck_fn(img)


def test_rm_and_rmdir(img, hostfile):
    host, _ = hostfile
    ok(img, "mkdir /d", f"write {host} /d/f", rw=True)
    res = fail(img, "rmdir /d", rw=True)          # not empty
    res = fail(img, "rm /d", rw=True)
    assert "rmdir" in res.stderr
    ok(img, "rm /d/f", "rmdir /d", rw=True)
    assert "d" not in H.debugfs(img, "ls -l /").stdout.split()
    H.e2fsck_fn(img)
    res = ok(img, "stats")
    assert re.search(r"Records:\s+0\b", res.stdout)


def test_fiemap_of_written_file(img, tmp_path):
    data = os.urandom(3 * BS)
    host = tmp_path / "three"
    host.write_bytes(data)
    ok(img, f"write {host} /f", rw=True)
    res = ok(img, "fiemap -v /f")
    lines = res.stdout.splitlines()
    assert lines[0] == "/f:"
    assert lines[1] == " EXT: FILE-OFFSET      BLOCK-RANGE      TOTAL FLAGS"
    rows = fiemap_rows(res.stdout)
    assert sum(r[5] for r in rows) == len(data) // 512
    assert all(r[3] is not None for r in rows), "no holes expected"
    for r in rows:
        assert not r[6] & 0x2000, "nothing is shared"
        assert not r[6] & 0x800
    assert rows[-1][6] & 0x1, "last extent flagged FIEMAP_EXTENT_LAST"
    assert all(r[6] == 0 for r in rows[:-1])
    # The physical sectors map the blocks stock debugfs reports.
    blocks = H.debugfs(img, "blocks /f").stdout.split()
    assert rows[0][3] == int(blocks[0]) * BS // 512
    # Without -v: xfs_io's plain rows.
    res = ok(img, "fiemap /f")
    assert re.search(r"^\t0: \[0\.\.\d+\]: \d+\.\.\d+$", res.stdout, re.M)


def test_fiemap_shows_trailing_hole(img, tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    ok(img, f"write {empty} /e", rw=True)
    res = dbg(img, "truncate /e 8192", rw=True)
    if res.returncode and "nimplemented" in res.stderr:
        pytest.skip("extref_truncate is not implemented yet")
    assert res.returncode == 0, H.describe(res)
    res = ok(img, "fiemap -v /e")
    rows = fiemap_rows(res.stdout)
    assert rows == [(0, 0, 15, None, None, 16, None)], res.stdout
    H.e2fsck_fn(img)


def test_du_unshared_file(img, hostfile):
    host, data = hostfile
    ok(img, "mkdir /d", f"write {host} /d/f", rw=True)
    rows = du_rows(ok(img, "du --raw /d").stdout)
    total, excl, shared = rows["/d/f"]
    blocks = -(-len(data) // BS)
    assert int(total) == blocks * BS
    assert excl == total
    assert shared == "-"
    assert rows["/d"] == (total, excl, "0")
    rows = du_rows(ok(img, "du -s /d").stdout)
    assert list(rows) == ["/d"]
    assert rows["/d"][0] == rows["/d"][1] == "98.00KiB"
    assert rows["/d"][2] == "0.00B"


def test_du_counts_a_hard_linked_file_once(tmp_path):
    """A file with two names in the tree is counted once, under its first
    name (no row for the second), as btrfs filesystem du does; a second
    argument naming it again counts it again."""
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "a").write_bytes(os.urandom(5 * BS))
    os.link(src / "d" / "a", src / "d" / "b")
    (src / "d" / "c").write_bytes(os.urandom(2 * BS))
    img = tmp_path / "links.img"
    H.run([H.binary("mkfs.extref"), "-q", "-b", str(BS), "-d", str(src),
           str(img), "8M"])
    rows = du_rows(ok(img, "du --raw /d").stdout)
    assert sorted(rows) == ["/d", "/d/a", "/d/c"], rows
    assert int(rows["/d"][0]) == 7 * BS
    rows = du_rows(ok(img, "du --raw /d/a /d/b").stdout)
    assert rows["/d/a"][0] == rows["/d/b"][0] == str(5 * BS)


def test_owners_of_file_block(img, hostfile):
    host, _ = hostfile
    ok(img, f"write {host} /f", rw=True)
    blk = int(H.debugfs(img, "blocks /f").stdout.split()[1])
    res = ok(img, f"owners {blk}")
    assert re.search(r"^inode \d+  lblk 1  path /f$", res.stdout, re.M)
    assert res.stdout.splitlines()[-1].startswith("1 mapping of block")


def test_pwrite_pattern(img, hostfile):
    host, data = hostfile
    ok(img, f"write {host} /f", rw=True)
    res = dbg(img, "pwrite -S 0x41 /f 4096 100", rw=True)
    if res.returncode and "nimplemented" in res.stderr:
        pytest.skip("extref_pwrite is not implemented yet")
    assert res.stdout.strip() == "wrote 100/100 bytes at offset 4096"
    want = data[:4096] + b"A" * 100 + data[4196:]
    assert H.debugfs_cat(img, "/f") == want
    H.e2fsck_fn(img)


# ----- sharing (needs extref_reflink) -----

def test_reflink_shares_blocks(img, hostfile):
    host, data = hostfile
    ok(img, f"write {host} /a", rw=True)
    res = reflink_skip(img, "/a", "/b")
    assert res.stdout.strip() == \
        f"linked {len(data)}/{len(data)} bytes at offset 0"
    assert H.debugfs_cat(img, "/b") == data
    out = ok(img, "refcount").stdout
    assert out.startswith(REFCOUNT_HEADER), out
    recs = [tuple(map(int, l.split()))
            for l in out.splitlines()[1:]]
    blocks = -(-len(data) // BS)
    assert sum(r[1] for r in recs) == blocks
    assert all(r[2] == 2 for r in recs)
    rows = fiemap_rows(ok(img, "fiemap -v /b").stdout)
    assert all(r[6] & 0x2000 for r in rows)
    du = du_rows(ok(img, "du --raw /").stdout)
    assert du["/a"][1] == "0" and du["/b"][1] == "0"
    assert int(du["/"][2]) == blocks * BS
    res = ok(img, "check")
    H.e2fsck_fn(img)
    # Removing one copy drops the records again.
    ok(img, "rm /b", rw=True)
    assert ok(img, "refcount").stdout == REFCOUNT_HEADER
    H.e2fsck_fn(img)


def test_clone_range_and_dedupe(img, tmp_path):
    data = os.urandom(8 * BS)
    host = tmp_path / "eight"
    host.write_bytes(data)
    ok(img, f"write {host} /a", f"write {host} /b", rw=True)
    reflink_skip(img, "/a", "/c")
    res = ok(img, f"clone_range /a 0 /b {4 * BS} {2 * BS}", rw=True)
    assert res.stdout.strip() == \
        f"linked {2 * BS}/{2 * BS} bytes at offset {4 * BS}"
    assert H.debugfs_cat(img, "/b") == data[:4 * BS] + data[:2 * BS] + \
        data[6 * BS:]
    res = ok(img, f"dedupe /a {6 * BS} /b {6 * BS} {2 * BS}", rw=True)
    assert res.stdout.strip() == \
        f"deduped {2 * BS}/{2 * BS} bytes at offset {6 * BS}"
    res = ok(img, f"dedupe /a 0 /b {BS} {BS}", rw=True)
    assert res.stdout.strip() == "dedupe: contents differ"
    ok(img, "check")
    H.e2fsck_fn(img)


def test_reflink_r_progress_on_a_terminal_only(tmp_path):
    """reflink -r of a tree reports its progress on a terminal's stderr
    (entries copied of the source's, ending at all of them); piped, the
    output is the result line alone."""
    from test_mkfs_frontend import run_pty
    src = tmp_path / "src" / "t"
    for i in range(40):
        (src / f"d{i % 4}").mkdir(parents=True, exist_ok=True)
        (src / f"d{i % 4}" / f"f{i}").write_bytes(b"x" * 5000)
    img = tmp_path / "a.img"
    H.run([H.binary("mkfs.extref"), "-q", "-d", str(tmp_path / "src"),
           str(img), "16M"])
    dbx = H.binary("debugfs.extref")
    status, out, _ = run_pty([dbx, "-w", "-R", "reflink -r /t /c",
                              str(img)])
    assert status == 0, out
    # 40 files, 4 directories and /t itself
    assert "reflinking 45 of 45 entries (100%)" in out, out
    res = H.run([dbx, "-w", "-R", "reflink -r /t /c2", str(img)])
    assert "reflinking" not in res.stdout + res.stderr, H.describe(res)
    H.e2fsck_fn(img)
