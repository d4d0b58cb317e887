"""rename, link, mknod and set_times (the namespace calls a FUSE server
needs), through debugfs.extref -w, against the host kernel.

One tree is made twice: in an extref image (debugfs.extref as root) and
in a directory of the host's own filesystem.  The same steps (renameat2
with its flags, link, unlink, mknod, utimensat), each by a user (root,
or a uid with setpriv on the host and --as on the image), run on both:
per step the outcome (ok or the errno) must be the kernel's, and a
refused step must leave the image file byte for byte as it was.  At the
end a read-only loop mount of the image must show what the host shows:
names, types, modes, owners, link counts, hard-link groups, contents,
device numbers, each directory's ".." and the times set explicitly
(to the nanosecond, past 2038 and before 1970), and which modification
times the steps moved (a parent's on rename, link, mknod, unlink);
stock e2fsck -fn and fsck.extref -n find the image clean.  Every array
growth of a rename made to fail in turn leaves the image as it was.

A rename of a reflinked file keeps its sharing; replacing the original
by its reflink frees one inode and no block, as stock e2fsck counts
them.
"""

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import helpers

DBG = "debugfs.extref"
SETUP = 1000000000          # the tree's times before the steps
ALICE = (1000, 1000)

# (kind, path, mode, uid, gid, data)
TREE = [
    ("dir", "/a", 0o755, 0, 0, None),
    ("file", "/a/f1", 0o644, 0, 0, b"one\n"),
    ("file", "/a/f2", 0o644, 0, 0, b"two\n" * 300),
    ("dir", "/a/sub", 0o755, 0, 0, None),
    ("file", "/a/sub/s1", 0o644, 0, 0, b"s1\n"),
    ("dir", "/b", 0o755, 0, 0, None),
    ("dir", "/b/empty", 0o755, 0, 0, None),
    ("dir", "/b/full", 0o755, 0, 0, None),
    ("file", "/b/full/x", 0o644, 0, 0, b"x\n"),
    ("dir", "/x", 0o755, 0, 0, None),
    ("file", "/x/file", 0o644, 0, 0, b"xf\n"),
    ("dir", "/y", 0o755, 0, 0, None),
    ("dir", "/y/dir", 0o755, 0, 0, None),
    ("file", "/y/dir/c", 0o644, 0, 0, b"c\n"),
    ("dir", "/pub", 0o1777, 0, 0, None),
    ("file", "/pub/alice", 0o644, 1000, 1000, b"alice\n"),
    ("file", "/pub/bobs", 0o666, 1001, 1001, b"bob\n"),
    ("file", "/pub/rootsecret", 0o600, 0, 0, b"secret\n"),
    ("dir", "/home", 0o755, 1000, 1000, None),
    ("dir", "/home/d", 0o755, 1000, 1000, None),
    ("dir", "/home/rootd", 0o755, 0, 0, None),
    ("dir", "/ro", 0o755, 0, 0, None),
    ("file", "/ro/rf", 0o666, 0, 0, b"rf\n"),
    ("dir", "/sg", 0o2775, 0, 100, None),
    ("dir", "/z", 0o755, 0, 0, None),
    ("file", "/z/zf", 0o644, 0, 0, b"z\n"),
]

# The library follows fs.protected_hardlinks = 1; the host compares it
# only when it is set so.
PROTECTED = "link /pub/rootsecret /home/sl"

# (who, request, expected outcome): the expectation documents the rule;
# the host kernel's outcome is the oracle and must agree with it.
STEPS = [
    (None, "rename /a/f1 /a/f2", "ok"),                 # over a file
    (None, "rename /a/sub /b/empty", "ok"),             # over an empty dir
    (None, "rename -n /a/f2 /b/full/x", "EEXIST"),
    (None, "rename /x/file /b/full", "EISDIR"),
    (None, "rename /b/empty /x/file", "ENOTDIR"),
    (None, "rename /y/dir /b/full", "ENOTEMPTY"),
    (None, "rename /b /b/full/in", "EINVAL"),           # into itself
    (None, "rename /b/full /b", "ENOTEMPTY"),           # onto an ancestor
    (None, "rename -x /x/nothing /y/dir", "ENOENT"),
    (None, "rename -x /x/file /y/dir", "ok"),           # file <-> dir
    (None, "rename /a/f2 /a/f2", "ok"),                 # same inode
    (None, "link /a/f2 /b/hl", "ok"),
    (None, "link /a/f2 /x/hl2", "ok"),
    (None, "link /a/f2 /b/hl", "EEXIST"),
    (None, "link /b /x/dl", "EPERM"),                   # a directory
    (None, "rm /x/hl2", "ok"),
    (None, "rm /z/zf", "ok"),                           # /z's times
    (None, "mknod -m 644 /a/fifo p", "ok"),
    (None, "mknod -m 600 /a/sock s", "ok"),
    (None, "mknod -m 640 /a/chr c 1 3", "ok"),
    (None, "mknod -m 660 /a/blk b 259 70000", "ok"),   # new encoding
    (None, "mknod -m 644 /a/reg f", "ok"),
    (None, "mknod -m 755 /sg/dd d", "ok"),              # setgid dir
    (None, "mknod -m 644 /a/fifo p", "EEXIST"),
    (None, "set_times /a/f2 1234567890.123456789 3000000000.25", "ok"),
    (None, "set_times /a/fifo omit -1.5", "ok"),
    (ALICE, "rename /ro/rf /ro/rf2", "EACCES"),
    (ALICE, "rename /pub/bobs /pub/mine", "EPERM"),     # sticky
    (ALICE, "rename /pub/alice /home/alice2", "ok"),
    (ALICE, "rename /home/rootd /pub/rootd", "EACCES"),  # its ".."
    (ALICE, "rename /home/d /pub/d", "ok"),
    (ALICE, PROTECTED, "EPERM"),
    (ALICE, "link /pub/bobs /home/bl", "ok"),
    (ALICE, "set_times /ro/rf 1 1", "EPERM"),
    (ALICE, "set_times /ro/rf now now", "ok"),
    (ALICE, "set_times /b/hl now now", "EACCES"),
    (ALICE, "mknod -m 644 /home/c c 1 3", "EPERM"),
    (ALICE + ("mknod",), "mknod -m 644 /home/c c 1 3", "ok"),
    (ALICE, "mknod -m 644 /home/p p", "ok"),
    (ALICE, "rm /pub/rootsecret", "EPERM"),
]

# Paths whose times were set explicitly: (path, compare atime, mtime).
EXPLICIT_TIMES = [("/a/f2", True, True), ("/b/hl", True, True),
                  ("/a/fifo", False, True)]

# The host side of a run of steps by one user: one process (under
# setpriv for a user), one outcome a line.
HOST_OPS = r"""
import ctypes, errno, json, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
class TS(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
os.umask(0)
for op, a in json.loads(sys.argv[1]):
    try:
        if op == "rename":
            if libc.renameat2(-100, a[0].encode(), -100, a[1].encode(),
                              a[2]):
                raise OSError(ctypes.get_errno(), "renameat2")
        elif op == "link":
            os.link(a[0], a[1])
        elif op == "rm":
            os.unlink(a[0])
        elif op == "mknod" and a[1] == stat.S_IFDIR:
            os.mkdir(a[0], a[2])
        elif op == "mknod":
            os.mknod(a[0], a[1] | a[2], os.makedev(a[3], a[4]))
        elif op == "utimens":
            ts = (TS * 2)(*[TS(*t) for t in a[1]])
            if libc.utimensat(-100, a[0].encode(), ts, 0):
                raise OSError(ctypes.get_errno(), "utimensat")
        print("ok")
    except OSError as e:
        print(errno.errorcode[e.errno])
"""


def steps():
    """STEPS, without the protected link where the host does not protect
    hard links."""
    try:
        on = Path("/proc/sys/fs/protected_hardlinks").read_text().strip()
    except OSError:
        on = "0"
    return [s for s in STEPS if on == "1" or s[1] != PROTECTED]


def kernel_outcomes(root):
    """Each step's outcome on the host's own filesystem, in order."""
    runs = []
    for who, request, _ in steps():
        if not runs or runs[-1][0] != who:
            runs.append((who, []))
        runs[-1][1].append(host_args(request, root))
    out = []
    for who, ops in runs:
        _, pargs = who_args(who)
        res = helpers.run(pargs + [sys.executable, "-c", HOST_OPS,
                                   json.dumps(ops)])
        assert len(res.stdout.split()) == len(ops), res.stdout
        out += res.stdout.split()
    return out


TYPES = {"p": stat.S_IFIFO, "s": stat.S_IFSOCK, "c": stat.S_IFCHR,
         "b": stat.S_IFBLK, "f": stat.S_IFREG, "d": stat.S_IFDIR}


def dbg(img, *args, check=False, input=None):
    return helpers.run([helpers.binary(DBG), *args, str(img)],
                       check=check, input=input)


def sha(img):
    return hashlib.sha256(Path(img).read_bytes()).hexdigest()


def parse_time(s):
    """(sec, nsec) as utimensat takes it; set_times's syntax."""
    if s in ("now", "omit"):
        return (0, (1 << 30) - (1 if s == "now" else 2))
    sec, _, frac = s.partition(".")
    ns = int((frac + "000000000")[:9]) if frac else 0
    sec = int(sec)
    if s.startswith("-") and ns:
        return (sec - 1, 1_000_000_000 - ns)
    return (sec, ns)


def host_args(request, root):
    """The host call of a debugfs.extref request: (op, arguments)."""
    words = request.split()
    cmd, rest = words[0], words[1:]
    at = lambda p: str(root) + p  # noqa: E731
    if cmd == "rename":
        flags = (1 if "-n" in rest else 0) | (2 if "-x" in rest else 0)
        paths = [w for w in rest if not w.startswith("-")]
        return "rename", [at(paths[0]), at(paths[1]), flags]
    if cmd == "link":
        return "link", [at(rest[0]), at(rest[1])]
    if cmd == "rm":
        return "rm", [at(rest[0])]
    if cmd == "mknod":
        mode, path, kind = int(rest[1], 8), rest[2], rest[3]
        nums = [int(n) for n in rest[4:]] or [0, 0]
        return "mknod", [at(path), TYPES[kind], mode] + nums
    if cmd == "set_times":
        return "utimens", [at(rest[0]), [parse_time(rest[1]),
                                         parse_time(rest[2])]]
    raise AssertionError(request)


def who_args(who):
    """(debugfs.extref arguments, setpriv prefix) of an identity."""
    if who is None:
        return [], []
    uid, gid, *caps = who
    dargs = ["--as", f"{uid}:{gid}"] + (["--cap", caps[0]] if caps else [])
    pargs = ["setpriv", f"--reuid={uid}", f"--regid={gid}",
             "--clear-groups"]
    if caps:
        pargs += [f"--inh-caps=+{caps[0]}", f"--ambient-caps=+{caps[0]}"]
    return dargs, pargs


def outcome(res):
    """ok, or the errno name a failed request printed."""
    if res.returncode == 0:
        return "ok"
    m = re.search(r"\((E[A-Z]+)\)", res.stderr)
    if m:
        return m.group(1)
    if "File not found" in res.stderr:
        return "ENOENT"
    if "File exists" in res.stderr:
        return "EEXIST"
    return "other: " + res.stderr.strip()


def build(img, root, work):
    """TREE in the image (debugfs.extref, root) and under root on the
    host."""
    helpers.mkfs(img, "16M")
    reqs = []
    for i, (kind, path, mode, uid, gid, data) in enumerate(TREE):
        host = Path(str(root) + path)
        if kind == "dir":
            host.mkdir()
            reqs.append(f"mkdir {path}")
        else:
            host.write_bytes(data)
            src = work / f"src{i}"
            src.write_bytes(data)
            reqs.append(f"write {src} {path}")
        reqs += [f"chown {uid}:{gid} {path}", f"chmod {mode:o} {path}"]
        os.chown(host, uid, gid)
        os.chmod(host, mode)
    # both trees stamped SETUP: a time the steps change shows
    helpers.run([helpers.binary(DBG), "-w", "-f", "-", str(img)],
                input="\n".join(reqs) + "\n",
                env={"SOURCE_DATE_EPOCH": str(SETUP)})
    for _, path, *_ in reversed(TREE):
        os.utime(str(root) + path, (SETUP, SETUP))


def snapshot(top):
    """{path: facts} of a tree as the kernel shows it: stats first, then
    contents (a read can move a host file's atime)."""
    facts, inos = {}, {}
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(dirpath, name)
            rel = p[len(str(top)):]
            if rel.startswith("/lost+found"):
                continue
            s = os.lstat(p)
            f = {"type": stat.S_IFMT(s.st_mode),
                 "mode": oct(stat.S_IMODE(s.st_mode)),
                 "uid": s.st_uid, "gid": s.st_gid, "nlink": s.st_nlink,
                 "atime": s.st_atime_ns, "mtime": s.st_mtime_ns}
            if stat.S_ISCHR(s.st_mode) or stat.S_ISBLK(s.st_mode):
                f["rdev"] = (os.major(s.st_rdev), os.minor(s.st_rdev))
            if stat.S_ISDIR(s.st_mode):
                up = os.stat(os.path.join(p, ".."))
                par = os.stat(dirpath)
                f["dotdot_is_parent"] = (up.st_ino, up.st_dev) == \
                    (par.st_ino, par.st_dev)
            facts[rel] = f
            inos.setdefault(s.st_ino, []).append(rel)
    for rel, f in facts.items():
        if f["type"] == stat.S_IFREG:
            f["data"] = hashlib.sha256(
                Path(str(top) + rel).read_bytes()).hexdigest()
    links = sorted(sorted(v) for v in inos.values() if len(v) > 1)
    return facts, links


def comparable(facts):
    """The facts both sides must share: times exactly where set
    explicitly, elsewhere whether the modification time moved."""
    out = {}
    for rel, f in facts.items():
        g = dict(f)
        g.pop("atime")
        g["mtime_moved"] = g.pop("mtime") != SETUP * 10**9
        for path, a, m in EXPLICIT_TIMES:
            if rel == path:
                if a:
                    g["atime"] = f["atime"]
                if m:
                    g["mtime"] = f["mtime"]
        out[rel] = g
    return out


@pytest.fixture
def host_root():
    """A directory of the host's filesystem every user can walk into."""
    d = tempfile.mkdtemp(prefix="extref-ns-", dir="/tmp")
    os.chmod(d, 0o755)
    try:
        yield Path(d)
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", d], check=False)


def test_steps_match_the_kernel(tmp_path, host_root):
    helpers.require_loop()
    img, work = tmp_path / "img", tmp_path / "work"
    work.mkdir()
    root = host_root / "t"
    root.mkdir()
    os.chmod(root, 0o755)
    build(img, root, work)
    kernel = kernel_outcomes(root)
    t0 = time.time()
    problems = []
    before = sha(img)
    for (who, request, want), kern in zip(steps(), kernel):
        dargs, _ = who_args(who)
        res = dbg(img, "-w", *dargs, "-R", request)
        got = outcome(res)
        tag = f"{who or 'root'}: {request}"
        if got != kern or kern != want:
            problems.append(f"{tag}: extref {got}, kernel {kern}, "
                            f"expected {want}")
        after = sha(img)
        if got != "ok" and after != before:
            problems.append(f"{tag}: refused, but the image changed")
        before = after
    assert not problems, "\n".join(problems)

    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-n", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)

    host_facts, host_links = snapshot(root)
    mnt = tmp_path / "mnt"
    with helpers.loop_mount(img, mnt):
        img_facts, img_links = snapshot(mnt)
        ctime = os.stat(mnt / "a/f2").st_ctime
    assert img_links == host_links
    assert [["/a/f2", "/b/hl"], ["/home/bl", "/pub/bobs"]] == img_links
    mine, theirs = comparable(img_facts), comparable(host_facts)
    assert sorted(mine) == sorted(theirs)
    diff = {p: (mine[p], theirs[p]) for p in mine if mine[p] != theirs[p]}
    assert not diff, diff
    # what the model says, read from the kernel's view of the image
    assert all(f["dotdot_is_parent"] for f in img_facts.values()
               if "dotdot_is_parent" in f)
    f = img_facts
    assert f["/a/f2"]["atime"] == 1234567890_123456789
    assert f["/a/f2"]["mtime"] == 3000000000_250000000
    assert f["/a/fifo"]["mtime"] == -1_500_000_000
    assert ctime >= int(t0) - 1
    assert f["/a/chr"]["type"] == stat.S_IFCHR
    assert f["/a/chr"]["rdev"] == (1, 3)
    assert f["/a/blk"]["type"] == stat.S_IFBLK
    assert f["/a/blk"]["rdev"] == (259, 70000)
    assert f["/a/fifo"]["type"] == stat.S_IFIFO
    assert f["/a/sock"]["type"] == stat.S_IFSOCK
    assert f["/sg/dd"]["gid"] == 100 and f["/sg/dd"]["mode"] == "0o2755"
    assert f["/x/file"]["type"] == stat.S_IFDIR      # the exchange
    assert f["/y/dir"]["type"] == stat.S_IFREG
    assert f["/x"]["nlink"] == 3 and f["/y"]["nlink"] == 2
    assert f["/b/empty"]["nlink"] == 2 and "/b/empty/s1" in f
    assert f["/a/f2"]["nlink"] == 2 and "/a/f1" not in f


def e2fsck_usage(img):
    """(inodes, blocks) in use, as stock e2fsck -fn counts them."""
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    m = re.search(r"(\d+)/\d+ files .*, (\d+)/\d+ blocks", res.stdout)
    return int(m.group(1)), int(m.group(2))


def tree_blocks(img):
    """Blocks of the reference-count tree (inode 5), by stock debugfs."""
    out = helpers.debugfs_stat(img, "<5>")
    count = int(re.search(r"Blockcount: (\d+)", out).group(1))
    bsize = int(helpers.dumpe2fs_header(img)["Block size"])
    return count * 512 // bsize


def shared_blocks(img):
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-n", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    return int(re.search(r"(\d+) shared blocks", res.stdout).group(1))


def test_rename_keeps_reflinks_exact(tmp_path):
    img, src = tmp_path / "img", tmp_path / "src"
    data = os.urandom(96 << 10)
    src.write_bytes(data)
    helpers.mkfs(img, "64M")
    dbg(img, "-w", "-f", "-", check=True, input=(
        f"mkdir /r\nmkdir /s\nwrite {src} /r/orig\n"
        "reflink /r/orig /r/copy\n"))
    shared = shared_blocks(img)
    assert shared > 0
    dbg(img, "-w", "-R", "rename /r/copy /s/moved", check=True)
    assert shared_blocks(img) == shared
    inodes, blocks = e2fsck_usage(img)
    tree = tree_blocks(img)
    # the original replaced by its reflink: one inode goes, and no data
    # block (the tree may give back a node it no longer needs)
    dbg(img, "-w", "-R", "mv /s/moved /r/orig", check=True)
    assert shared_blocks(img) == 0
    assert e2fsck_usage(img) == (inodes - 1,
                                 blocks - tree + tree_blocks(img))
    assert helpers.debugfs_cat(img, "/r/orig") == data
    res = dbg(img, "-R", "ls /s")
    assert "moved" not in res.stdout


def failures_leave_files(img, request, paths):
    """Run request with the N-th array growth failing (EXTREF_FAULT_NOMEM),
    N = 1, 2, ... until it succeeds three times running; each run on a
    fresh copy of img.  A run that fails must leave every one of paths
    reading as before (stock debugfs) and both checkers clean.  Returns
    how many runs failed inside the operation (rolled back), not at the
    open."""
    reason = helpers.fault_injection_skip_reason()
    if reason:
        pytest.skip(reason)
    before = {p: helpers.debugfs_cat(img, p) for p in paths}
    work = img.with_name("nomem")
    failed = ok_run = 0
    n = 0
    while ok_run < 3 and n < 400:
        n += 1
        work.write_bytes(img.read_bytes())
        res = helpers.run([helpers.binary(DBG), "-w", "-R", request,
                           str(work)], check=False,
                          env={"EXTREF_FAULT_NOMEM": str(n)})
        if res.returncode == 0:
            ok_run += 1
            continue
        ok_run = 0
        failed += "rolled back" in res.stderr
        assert "growth" in res.stderr, helpers.describe(res)
        for p, data in before.items():
            assert helpers.debugfs_cat(work, p) == data, (n, p)
        helpers.e2fsck_fn(work)
        chk = helpers.run([helpers.binary("fsck/fsck.extref"), "-n",
                           str(work)], check=False)
        assert chk.returncode == 0, (n, helpers.describe(chk))
    assert ok_run == 3, n
    return failed


def test_a_failed_rename_leaves_the_image(tmp_path):
    """Every allocation of a rename over a reflinked file made to fail in
    turn: the image reads as before, counts exact."""
    img, src = tmp_path / "img", tmp_path / "src"
    src.write_bytes(os.urandom(48 << 10))
    helpers.mkfs(img, "16M")
    dbg(img, "-w", "-f", "-", check=True, input=(
        f"mkdir /r\nmkdir /s\nwrite {src} /r/orig\n"
        "reflink /r/orig /s/copy\n"))
    assert failures_leave_files(img, "rename /s/copy /r/orig",
                                ["/r/orig", "/s/copy"]) >= 1
