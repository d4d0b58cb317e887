"""Differential test: extref's range operations against the kernel's.

Seeded random sequences of operations (pwrite, clone_range aligned and
unaligned, len 0, at and past EOF, within one file and overlapping,
dedupe of equal and unequal ranges, truncate, punch, unshare, whole-file
reflink) run on

- a loop-mounted XFS image (mkfs.xfs -m reflink=1, 4 KiB blocks) through
  the kernel's own calls: FICLONERANGE, FICLONE, FIDEDUPERANGE ioctls,
  fallocate(2) PUNCH_HOLE|KEEP_SIZE and UNSHARE_RANGE|KEEP_SIZE,
  ftruncate, pwrite;
- an extref image (4 KiB blocks) through debugfs.extref, one process per
  operation.

After every operation the outcome (success, errno class, "differs" and
the bytes a dedupe reports) and every file's size and bytes are compared;
the extref side is read back with *stock* debugfs (dump), the XFS side
through the mount.  Stock e2fsck -fn must pass on the extref image every
50 operations and at the end.

Seeds and lengths: EXTREF_DIFF_SEEDS ("3" = seeds 1..3, "7,9", "10-40"),
EXTREF_DIFF_OPS (operations per seed, default 200).  bench/kernel_diff.sh
runs many.  Differences by design are the table DIFFERENCES below (the
same list is in docs/debugfs.extref.8, RANGE RULES).
"""

import ctypes
import errno
import fcntl
import os
import random
import re
import struct
import subprocess

import pytest

import helpers


pytestmark = pytest.mark.slow     # seeds of random operations

BS = 4096
NFILES = 4
MAXBLK = 16          # offsets and lengths mostly within 16 blocks
FSCK_EVERY = 50

FICLONE = 0x40049409
FICLONERANGE = 0x4020940d
FIDEDUPERANGE = 0xc0189436
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_UNSHARE_RANGE = 0x40
DEDUPE_DIFFERS = 1

# Differences by design: name -> (reason, predicate(op, xfs_outcome,
# extref_outcome) or None when the comparison here cannot see it).  A
# mismatch is accepted only when a predicate says it is this difference.
DIFFERENCES = {
    "eof-block-stays-shared": (
        "A write that extends a file whose partial EOF block is shared "
        "leaves that block shared in extref (the bytes past the old EOF "
        "read as zeros either way); XFS unshares it.  Only the block "
        "counts differ.", None),
    "punch-frees-eof-block": (
        "A punch from the start of a partial last block to exactly EOF "
        "frees that block in extref (as ext4 does, and as XFS does when "
        "the range runs past EOF); XFS zeroes it, copying it first when "
        "it is shared.  Reads are zeros either way; only the block "
        "counts differ.", None),
    "unshare-leaves-holes": (
        "unshare (UNSHARE_RANGE|KEEP_SIZE) gives shared blocks copies of "
        "their own but leaves holes as holes and allocates nothing past "
        "EOF; XFS also allocates unwritten extents over the whole range, "
        "so a range larger than the free space is ENOSPC there and "
        "succeeds in extref.  Reads are the same.",
        lambda op, xo, eo: op[0] == "unshare" and xo[0] == "ENOSPC"
        and eo[0] == "ok"),
    "unshare-keeps-size": (
        "unshare never changes a file's size: it is fallocate's "
        "UNSHARE_RANGE with KEEP_SIZE (the mode compared here), where "
        "xfs_io's funshare, without KEEP_SIZE, grows a file to the "
        "range's end.", None),
    "largest-file-size": (
        "extref applies ext4's largest file size ((2^32-1) blocks, less "
        "without huge_file): a range ending past it is EFBIG where XFS "
        "(8 EiB) goes on.  Not generated here (the files would differ "
        "from then on); tests/test_range_limits.py checks these limits "
        "against the kernel's ext4.", None),
    "pwrite-all-or-nothing": (
        "A pwrite that would cross the largest file size is refused "
        "(EFBIG) where the kernel writes a short count.  Never generated "
        "here.", None),
}


# ----------------------------------------------------------------------
# seeds

def seeds():
    spec = os.environ.get("EXTREF_DIFF_SEEDS", "3").strip()
    if re.fullmatch(r"\d+", spec):
        return list(range(1, int(spec) + 1))
    if re.fullmatch(r"\d+-\d+", spec):
        lo, hi = map(int, spec.split("-"))
        return list(range(lo, hi + 1))
    return [int(s) for s in spec.split(",") if s.strip()]


def nops():
    return int(os.environ.get("EXTREF_DIFF_OPS", "200"))


# ----------------------------------------------------------------------
# the operations

def gen_ops(seed, count):
    """The sequence for a seed: tuples (kind, args...)."""
    rng = random.Random(seed)
    sizes = [0] * NFILES        # a rough model, only to aim at EOFs

    def off(f):
        size = sizes[f]
        r = rng.random()
        if r < 0.40:
            return rng.randrange(0, (size + BS - 1) // BS + 1) * BS
        if r < 0.55:
            return rng.randrange(0, MAXBLK) * BS
        if r < 0.67:
            return size
        if r < 0.75:
            return (size + BS - 1) // BS * BS
        if r < 0.83:
            return size // BS * BS
        if r < 0.93:
            return rng.randrange(0, MAXBLK * BS)
        return size + rng.choice([1, BS, 3 * BS])

    def length(f, o, falloc=False):
        r = rng.random()
        left = sizes[f] - o
        if r < 0.10:
            return 0
        if r < 0.55:
            return rng.randrange(1, max(2, min(5, left // BS + 1))) * BS
        if r < 0.75:
            return max(left, 1)      # to EOF
        if r < 0.90:
            return rng.randrange(1, 3 * BS)
        # past 2^63 (negative as a loff_t); for a clone or dedupe also
        # the largest loff_t (an end past ext4's largest file size is
        # the difference "largest-file-size" for fallocate)
        return rng.choice([(1 << 30) + BS, 1 << 31, 8 * BS + 1,
                           (1 << 64) - BS] +
                          ([] if falloc else [(1 << 63) - BS]))

    ops = []
    for _ in range(count):
        kind = rng.choices(
            ["pwrite", "clone", "dedupe", "truncate", "punch", "unshare",
             "reflink", "ficlone"],
            weights=[24, 26, 18, 8, 10, 8, 6, 4])[0]
        f = rng.randrange(NFILES)
        if kind == "pwrite":
            o = rng.randrange(0, MAXBLK) * BS if rng.random() < 0.7 \
                else rng.randrange(0, MAXBLK * BS)
            n = rng.randrange(1, 4) * BS if rng.random() < 0.7 \
                else rng.randrange(1, 3 * BS)
            ops.append(("pwrite", f, o, n, rng.choice([0x41, 0x42])))
            sizes[f] = max(sizes[f], o + n)
        elif kind in ("clone", "dedupe"):
            g = f if rng.random() < 0.2 else rng.randrange(NFILES)
            so, do = off(f), off(g)
            n = length(f, so)
            ops.append((kind, f, so, g, do, n))
            if kind == "clone" and n and so + n <= sizes[f]:
                sizes[g] = max(sizes[g], do + n)
        elif kind == "truncate":
            n = rng.choice([rng.randrange(0, MAXBLK) * BS,
                            rng.randrange(0, MAXBLK * BS)])
            ops.append(("truncate", f, n))
            sizes[f] = n
        elif kind in ("punch", "unshare"):
            o = off(f)
            ops.append((kind, f, o, length(f, o, falloc=True)))
        else:
            g = rng.randrange(NFILES)
            if g == f and kind == "reflink":
                g = (g + 1) % NFILES
            ops.append((kind, f, g))
            if g != f:
                sizes[g] = max(sizes[f], sizes[g]) if kind == "ficlone" \
                    else sizes[f]
    return ops


def op_text(op):
    return " ".join(str(x) for x in op)


def shell_cmds(op):
    kind = op[0]
    p = lambda i: f"/f{i}"
    if kind == "pwrite":
        _, f, o, n, b = op
        return [f"pwrite -S {b} {p(f)} {o} {n}"]
    if kind == "clone":
        _, f, so, g, do, n = op
        return [f"clone_range {p(f)} {so} {p(g)} {do} {n}"]
    if kind == "dedupe":
        _, f, so, g, do, n = op
        return [f"dedupe {p(f)} {so} {p(g)} {do} {n}"]
    if kind == "truncate":
        return [f"truncate {p(op[1])} {op[2]}"]
    if kind in ("punch", "unshare"):
        return [f"{kind} {p(op[1])} {op[2]} {op[3]}"]
    if kind == "ficlone":       # FICLONE onto an existing file
        return [f"clone_range {p(op[1])} 0 {p(op[2])} 0 0"]
    _, f, g = op
    return [f"rm {p(g)}", f"reflink {p(f)} {p(g)}"]


# ----------------------------------------------------------------------
# the kernel's side

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                            ctypes.c_longlong]


def _s64(x):
    """A u64 request as the kernel's signed loff_t."""
    return x - (1 << 64) if x >= 1 << 63 else x


class XfsSide:
    def __init__(self, mnt):
        self.mnt = mnt
        self.fds = []
        for i in range(NFILES):
            self.fds.append(os.open(self.path(i),
                                    os.O_RDWR | os.O_CREAT | os.O_TRUNC,
                                    0o644))

    def path(self, i):
        return os.path.join(self.mnt, f"f{i}")

    def close(self):
        for fd in self.fds:
            os.close(fd)
        for i in range(NFILES):
            os.unlink(self.path(i))

    def state(self, contents=True):
        out = []
        for fd in self.fds:
            size = os.fstat(fd).st_size
            if not contents:
                out.append(size)
            else:
                out.append(os.pread(fd, size, 0) if size else b"")
        return out

    def run(self, op):
        """('ok', done) or ('differs', None) or (ERRNAME, None)."""
        try:
            return self._run(op)
        except OSError as e:
            return (errno.errorcode[e.errno], None)

    def _run(self, op):
        kind = op[0]
        fds = self.fds
        if kind == "pwrite":
            _, f, o, n, b = op
            os.pwrite(fds[f], bytes([b]) * n, o)
            return ("ok", None)
        if kind == "clone":
            _, f, so, g, do, n = op
            arg = struct.pack("qQQQ", fds[f], so, n, do)
            fcntl.ioctl(fds[g], FICLONERANGE, arg)
            return ("ok", None)
        if kind == "dedupe":
            _, f, so, g, do, n = op
            buf = bytearray(struct.pack("QQHHI", so, n, 1, 0, 0) +
                            struct.pack("qQQiI", fds[g], do, 0, 0, 0))
            fcntl.ioctl(fds[f], FIDEDUPERANGE, buf)
            done, status = struct.unpack_from("QQHHIqQQiI", buf)[7:9]
            if status == DEDUPE_DIFFERS:
                return ("differs", None)
            if status < 0:
                return (errno.errorcode[-status], None)
            return ("ok", done)
        if kind == "truncate":
            os.ftruncate(fds[op[1]], op[2])
            return ("ok", None)
        if kind in ("punch", "unshare"):
            _, f, o, n = op
            mode = FALLOC_FL_KEEP_SIZE | (FALLOC_FL_PUNCH_HOLE
                                          if kind == "punch"
                                          else FALLOC_FL_UNSHARE_RANGE)
            if _libc.fallocate(fds[f], mode, _s64(o), _s64(n)):
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
            return ("ok", None)
        if kind == "ficlone":
            fcntl.ioctl(fds[op[2]], FICLONE, fds[op[1]])
            return ("ok", None)
        _, f, g = op
        os.close(fds[g])
        os.unlink(self.path(g))
        fds[g] = os.open(self.path(g), os.O_RDWR | os.O_CREAT | os.O_EXCL,
                         0o644)
        fcntl.ioctl(fds[g], FICLONE, fds[f])
        return ("ok", None)


# ----------------------------------------------------------------------
# extref's side

_CLASS = re.compile(r"\((E[A-Z0-9]+)\)(?:: |$)")
_DEDUPED = re.compile(r"^deduped (\d+)/(\d+) bytes")


class ExtrefSide:
    def __init__(self, img, work):
        self.img = img
        self.work = work
        self.dbg = helpers.binary("debugfs.extref")
        helpers.mkfs(img, "16M", "-b", "4096", "-q")
        empty = work / "empty"
        empty.write_bytes(b"")
        self.shell([f"write {empty} /f{i}" for i in range(NFILES)])

    def shell(self, cmds):
        res = subprocess.run([self.dbg, "-w", "-f", "-", str(self.img)],
                             input="".join(c + "\n" for c in cmds),
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             timeout=120)
        return res.returncode, res.stdout

    def run(self, op):
        rc, out = self.shell(shell_cmds(op))
        self.last = self._outcome(rc, out)
        return self.last, out

    @staticmethod
    def _outcome(rc, out):
        # the outcome is that of the last request (reflink's rm first)
        lines = out.split("debugfs.extref: ")[-1].splitlines()[1:]
        for line in lines:
            m = _CLASS.search(line)
            if m:
                return (m.group(1), None)
            if line.endswith("contents differ"):
                return ("differs", None)
            m = _DEDUPED.match(line)
            if m:
                return ("ok", int(m.group(1)))
        if rc != 0:
            return ("failed-unclassified", None)
        return ("ok", None)

    def state(self, contents=True):
        """Every file's bytes (or size), read by stock debugfs (dump)."""
        if not contents:
            return [int(re.search(r"Size: (\d+)", helpers.debugfs(
                str(self.img), f"stat /f{i}").stdout).group(1))
                for i in range(NFILES)]
        cmds = "".join(f"dump /f{i} {self.work}/d{i}\n"
                       for i in range(NFILES))
        for i in range(NFILES):
            try:
                os.unlink(self.work / f"d{i}")
            except FileNotFoundError:
                pass
        helpers.run(["debugfs", "-f", "-", str(self.img)], input=cmds)
        return [(self.work / f"d{i}").read_bytes() for i in range(NFILES)]


# ----------------------------------------------------------------------
# the comparison

def outcome_matches(op, xo, eo):
    if xo == eo:
        return True
    # clone_range reports what it linked, the kernel nothing
    if op[0] != "dedupe" and xo[0] == eo[0] == "ok":
        return True
    for name, (reason, pred) in DIFFERENCES.items():
        if pred and pred(op, xo, eo):
            return True
    return False


def describe_state(xs, es):
    rows = []
    for i, (x, e) in enumerate(zip(xs, es)):
        mark = "" if x == e else "   <-- differs"
        first = next((k for k in range(min(len(x), len(e)))
                      if x[k] != e[k]), None)
        rows.append(f"  f{i}: xfs {len(x)} bytes, extref {len(e)} bytes"
                    + (f", first different byte at {first}"
                       if first is not None else "") + mark)
    return "\n".join(rows)


def run_ops(ops, mnt, work, label, check=None, contents=True):
    """Run ops on both sides, comparing after each; check(i, op, ext) is
    called after each operation for extra assertions.  contents False:
    compare the sizes only (files of a GiB)."""
    img = work / "extref.img"
    ext = ExtrefSide(img, work)
    xfs = XfsSide(mnt)
    try:
        for i, op in enumerate(ops):
            where = (f"{label}, op {i}: {op_text(op)}\n"
                     f"  shell: {' ; '.join(shell_cmds(op))}")
            before = helpers.sha256(img)
            xo = xfs.run(op)
            eo, out = ext.run(op)
            assert outcome_matches(op, xo, eo), (
                f"outcome differs at {where}\n  xfs: {xo}\n"
                f"  extref: {eo}\n  shell output:\n{out}")
            if eo[0] not in ("ok", "differs"):
                assert helpers.sha256(img) == before, \
                    f"refused, yet the image changed: {where}"
            xs, es = xfs.state(contents), ext.state(contents)
            assert xs == es, (f"file contents differ after {where}\n"
                              + describe_state(xs, es))
            if check:
                check(i, op, ext)
            if (i + 1) % FSCK_EVERY == 0:
                helpers.e2fsck_fn(img)
        helpers.e2fsck_fn(img)
        if contents:
            kernel_read_back(img, work, xfs.state(), label)
    finally:
        xfs.close()
    img.unlink()


def kernel_read_back(img, work, want, label):
    """The files as the kernel's ext4 reads them (read-only loop mount)."""
    mnt = work / "ro"
    with helpers.loop_mount(img, mnt, options="ro"):
        got = [(mnt / f"f{i}").read_bytes() for i in range(NFILES)]
    assert got == want, (f"{label}: the kernel's ext4 reads other bytes "
                         "than XFS holds\n" + describe_state(want, got))


def run_seed(seed, count, mnt, work):
    label = (f"seed {seed} (rerun: EXTREF_DIFF_SEEDS={seed} "
             f"EXTREF_DIFF_OPS={count})")
    run_ops(gen_ops(seed, count), mnt, work, label)


@pytest.fixture(scope="module")
def xfs_mnt(tmp_path_factory):
    """A reflink-capable XFS on a loop device, for the whole module."""
    helpers.require_loop()
    for tool in ("mkfs.xfs", "debugfs", "e2fsck"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            pytest.skip(f"{tool} is not installed")
    base = tmp_path_factory.mktemp("kdiff")
    img = base / "xfs.img"
    with open(img, "wb") as f:
        f.truncate(320 << 20)
    helpers.run(["mkfs.xfs", "-q", "-f", "-m", "reflink=1", "-b",
                 "size=4096", str(img)])
    mnt = base / "mnt"
    with helpers.loop_mount(img, mnt, options="rw"):
        yield mnt


# The six differences issue 9 found, each as a sequence (the last
# operation is the one in question).
GIB = 1 << 30
SCRIPTED = {
    # a clone is never shortened: 12288 bytes of an 8192-byte file
    "clone-never-shortened": [("pwrite", 0, 0, 8192, 0x41),
                              ("clone", 0, 0, 1, 0, 12288)],
    # len 0 at the source's EOF succeeds before the alignment check
    "clone-len0-at-eof": [("pwrite", 0, 0, 5000, 0x41),
                          ("clone", 0, 5000, 1, 0, 0)],
    # an unaligned dedupe length is rounded down and done
    "dedupe-rounds-down": [("pwrite", 0, 0, 8192, 0x41),
                           ("pwrite", 1, 0, 8192, 0x41),
                           ("dedupe", 0, 0, 1, 0, 5000)],
    # the source range past EOF is checked first, even for len 0
    "dedupe-src-past-eof": [("pwrite", 0, 0, 4096, 0x41),
                            ("pwrite", 1, 0, 8192, 0x41),
                            ("dedupe", 0, 12288, 1, 0, 0)],
    "punch-len0": [("pwrite", 0, 0, 8192, 0x41), ("punch", 0, 4096, 0)],
    "unshare-len0": [("pwrite", 0, 0, 8192, 0x41), ("unshare", 0, 0, 0)],
    # a punch of a shared partial last block up to EOF frees it
    "punch-partial-eof-block": [("pwrite", 0, 0, 5000, 0x41),
                                ("reflink", 0, 1),
                                ("punch", 0, 4096, 904)],
    # a dedupe request over 1 GiB is cut to 1 GiB (and reported so)
    "dedupe-cap-1g": [("truncate", 0, GIB + 2 * BS),
                      ("truncate", 1, GIB + 2 * BS),
                      ("pwrite", 0, 0, BS, 0x41),
                      ("pwrite", 1, 0, BS, 0x41),
                      ("dedupe", 0, 0, 1, 0, GIB + BS)],
}


def first_block(img, path):
    res = helpers.debugfs(str(img), f"bmap {path} 0")
    return int(res.stdout.split()[0])


def blockcount(img, path):
    res = helpers.debugfs(str(img), f"stat {path}")
    return int(re.search(r"Blockcount: (\d+)", res.stdout).group(1))


@pytest.mark.parametrize("name", sorted(SCRIPTED))
def test_issue_cases(name, xfs_mnt, tmp_path):
    ops = SCRIPTED[name]
    last = len(ops) - 1
    seen = {}

    def check(i, op, ext):
        if i == last:
            seen["outcome"] = ext.last
            if name == "punch-partial-eof-block":
                # one block left of two, and no new block for the copy
                seen["blocks"] = blockcount(ext.img, "/f0")
            if name == "dedupe-cap-1g":
                seen["shared"] = (first_block(ext.img, "/f0") ==
                                  first_block(ext.img, "/f1"))

    run_ops(ops, str(xfs_mnt), tmp_path, name, check,
            contents=name != "dedupe-cap-1g")
    want = {"clone-never-shortened": "EINVAL", "clone-len0-at-eof": "ok",
            "dedupe-rounds-down": "ok", "dedupe-src-past-eof": "EINVAL",
            "punch-len0": "EINVAL", "unshare-len0": "EINVAL",
            "punch-partial-eof-block": "ok", "dedupe-cap-1g": "ok"}[name]
    assert seen["outcome"][0] == want, seen
    if name == "dedupe-rounds-down":
        assert seen["outcome"][1] == 5000
    if name == "dedupe-cap-1g":
        assert seen["outcome"][1] == GIB and seen["shared"], seen
    if name == "punch-partial-eof-block":
        assert seen["blocks"] == BS // 512, seen


@pytest.mark.parametrize("seed", seeds())
def test_kernel_diff(seed, xfs_mnt, tmp_path):
    run_seed(seed, nops(), str(xfs_mnt), tmp_path)


def test_differences_documented():
    """Every difference by design in the table is in the man page."""
    page = (helpers.REPO_ROOT / "docs" / "debugfs.extref.8").read_text()
    section = page.split(".SH RANGE RULES", 1)
    assert len(section) == 2, "docs/debugfs.extref.8 lacks RANGE RULES"
    body = section[1].split("\n.SH ", 1)[0]
    for name in DIFFERENCES:
        assert name in body, f"difference {name!r} not in the man page"


def test_directory_source(xfs_mnt, tmp_path):
    """A directory given as the source: EISDIR from both, image unchanged
    (a directory cannot be opened for writing, so only the source side
    can be compared with the kernel)."""
    d = os.path.join(str(xfs_mnt), "dir")
    os.mkdir(d)
    dfd = os.open(d, os.O_RDONLY)
    ffd = os.open(os.path.join(str(xfs_mnt), "file"),
                  os.O_RDWR | os.O_CREAT, 0o644)
    want = []
    try:
        os.pwrite(ffd, b"A" * 8192, 0)
        for so, n in ((0, 0), (0, BS), (BS, 1)):
            try:
                fcntl.ioctl(ffd, FICLONERANGE,
                            struct.pack("qQQQ", dfd, so, n, 0))
                want.append("ok")
            except OSError as e:
                want.append(errno.errorcode[e.errno])
    finally:
        os.close(dfd)
        os.close(ffd)
        os.unlink(os.path.join(str(xfs_mnt), "file"))
        os.rmdir(d)
    img = tmp_path / "e.img"
    ext = ExtrefSide(img, tmp_path)
    ext.shell(["mkdir /dir", "pwrite -S 65 /f0 0 8192"])
    before = helpers.sha256(img)
    for (so, n), w in zip(((0, 0), (0, BS), (BS, 1)), want):
        rc, out = ext.shell([f"clone_range /dir {so} /f0 0 {n}"])
        assert ExtrefSide._outcome(rc, out)[0] == w == "EISDIR", out
    assert helpers.sha256(img) == before
