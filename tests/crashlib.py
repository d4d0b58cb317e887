"""The crash tests' loop and helpers.

sweep(img0, op, oracle, workdir, limit) is the one crash loop: it counts
the writes of an operation, crashes copies of the image at a sample of
them (crash=N, powercut=N,seed=N), replays each (stock e2fsck, the next
extref open, or none) and collects what oracle(img, how) finds wrong.
The operations are shell_op, request_op, fsck_op and tool_op.

Everything that judges a crashed image works without libextref's own view
of the mappings:

- the in-use inodes come from reading the inode tables of the image
  directly (an inode is in use when its link count is not zero, as stock
  e2fsck decides; the bitmaps are not trusted: after a crash they are
  stale, libext2fs writes them at close);
- their extents come from stock debugfs ("ex <INO>", many requests in one
  process with -f), so the number of mappings of every physical block is
  counted independently of libextref;
- only the recorded counts come from `debugfs.extref -R refcount`;
- file contents come from stock debugfs (dump / rdump).

Stock debugfs runs with -n (no checksum verification): an interrupted run
leaves stale bitmaps and group checksums (libext2fs writes them at close),
and plain debugfs refuses to open such an image at all.

The operations run in debugfs.extref under the fault-injecting io manager
(libfs/txn/faultio.c), selected by EXTREF_FAULT.  That manager exists only
in builds configured with --enable-fault-injection (scripts/test passes
it); elsewhere EXTREF_FAULT is ignored, and the tests using these helpers
skip (helpers.fault_injection_skip_reason()).
"""

import os
import re
import shutil
import struct
import subprocess
import time
from collections import Counter
from pathlib import Path

import helpers

# ----- binaries -----


def debugfs_extref():
    return helpers.binary("debugfs.extref")


def fsck_path():
    """Path of fsck.extref, or None while it is not built."""
    path = helpers.BUILD_DIR / "fsck/fsck.extref"
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    return None


def _run(cmd, env=None, text=True, timeout=120):
    full_env = dict(os.environ)
    # Tool runs must not inherit a fault setting from the caller.
    full_env.pop("EXTREF_FAULT", None)
    full_env.pop("EXTREF_FAULT_OUT", None)
    full_env["SOURCE_DATE_EPOCH"] = "1700000000"
    if env:
        full_env.update({k: str(v) for k, v in env.items()})
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=text, env=full_env, timeout=timeout)


# ----- images -----


def sparse_copy(src, dst):
    """Copy an image keeping its holes (only the data segments are copied)."""
    src, dst = str(src), str(dst)
    size = os.path.getsize(src)
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        fo.truncate(size)
        fdi, fdo = fi.fileno(), fo.fileno()
        off = 0
        while off < size:
            try:
                data = os.lseek(fdi, off, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            hole = os.lseek(fdi, data, os.SEEK_HOLE)
            pos = data
            while pos < hole:
                n = os.copy_file_range(fdi, fdo, hole - pos, pos, pos)
                if n <= 0:
                    fi.seek(pos)
                    fo.seek(pos)
                    fo.write(fi.read(hole - pos))
                    break
                pos += n
            off = hole


class Geometry:
    """The few superblock and group-descriptor fields the scan needs."""

    def __init__(self, img):
        with open(img, "rb") as f:
            sb = f.read(2048)[1024:]
            self.inodes_count, blocks_lo = struct.unpack_from("<II", sb, 0)
            self.first_data_block, log_bs = struct.unpack_from("<II", sb, 20)
            self.block_size = 1024 << log_bs
            self.blocks_per_group = struct.unpack_from("<I", sb, 32)[0]
            self.inodes_per_group = struct.unpack_from("<I", sb, 40)[0]
            rev = struct.unpack_from("<I", sb, 76)[0]
            self.inode_size = (struct.unpack_from("<H", sb, 88)[0]
                               if rev else 128)
            incompat = struct.unpack_from("<I", sb, 96)[0]
            is64 = bool(incompat & 0x80)
            desc_size = struct.unpack_from("<H", sb, 0xFE)[0] if is64 else 32
            if desc_size < 32:
                desc_size = 32
            blocks_hi = struct.unpack_from("<I", sb, 0x150)[0] if is64 else 0
            self.blocks_count = blocks_lo | (blocks_hi << 32)
            self.groups = -(-(self.blocks_count - self.first_data_block)
                            // self.blocks_per_group)
            f.seek((self.first_data_block + 1) * self.block_size)
            gdt = f.read(self.groups * desc_size)
        self.inode_tables = []
        for g in range(self.groups):
            d = gdt[g * desc_size:(g + 1) * desc_size]
            lo = struct.unpack_from("<I", d, 8)[0]
            hi = struct.unpack_from("<I", d, 0x28)[0] if desc_size >= 64 else 0
            self.inode_tables.append(lo | (hi << 32))


EXTENTS_FL = 0x80000
INLINE_DATA_FL = 0x10000000
TREE_INO = 5


def inodes_in_use(img):
    """{ino: (mode, flags)} of every inode whose link count is not zero.

    The whole inode table of every group is read (uninit flags and
    itable_unused are ignored: group descriptors are stale after a crash,
    and mkfs leaves unused inode tables zeroed on a fresh image).
    """
    geo = Geometry(img)
    used = {}
    isz = geo.inode_size
    with open(img, "rb") as f:
        for g, table in enumerate(geo.inode_tables):
            f.seek(table * geo.block_size)
            data = f.read(geo.inodes_per_group * isz)
            for i in range(geo.inodes_per_group):
                off = i * isz
                mode, = struct.unpack_from("<H", data, off)
                links, = struct.unpack_from("<H", data, off + 26)
                if links == 0 or mode == 0:
                    continue
                flags, = struct.unpack_from("<I", data, off + 32)
                used[g * geo.inodes_per_group + i + 1] = (mode, flags)
    return used


_ECHO = re.compile(r"^debugfs: ex <(\d+)>")
# A leaf line: "Level Entries Logical Physical Length Flags", both ranges
# "a - b".  Index lines have a single physical block and do not match.
_LEAF = re.compile(r"^\s*(\d+)/\s*(\d+)\s+(\d+)/\s*(\d+)\s+(\d+) -\s+(\d+)"
                   r"\s+(\d+) -\s+(\d+)\s+(\d+)\s*(\S*)\s*$")


def parse_ex_output(text):
    """Stock debugfs 'ex' output (several, echoed by -f) -> {ino: extents}.

    Each extent is (logical, physical, length, uninit).
    """
    result = {}
    cur = None
    for line in text.splitlines():
        m = _ECHO.match(line)
        if m:
            cur = int(m.group(1))
            result[cur] = []
            continue
        m = _LEAF.match(line)
        if m and cur is not None:
            lstart, lend = int(m.group(5)), int(m.group(6))
            pstart, pend = int(m.group(7)), int(m.group(8))
            length = int(m.group(9))
            assert lend - lstart + 1 == length == pend - pstart + 1, line
            result[cur].append((lstart, pstart, length,
                                m.group(10) == "Uninit"))
    return result


def extents_of(img, inos, workdir):
    """{ino: [(logical, physical, length, uninit)]} read by stock debugfs."""
    inos = sorted(inos)
    if not inos:
        return {}
    cmdfile = Path(workdir) / "ex.cmds"
    cmdfile.write_text("".join(f"ex <{i}>\n" for i in inos))
    res = _run(["debugfs", "-n", "-f", str(cmdfile), str(img)])
    assert res.returncode == 0, helpers.describe(res)
    # Every request must have printed its table header: otherwise the
    # image did not open or the inode's extent tree is unreadable, and
    # its mappings would silently count as none.
    heads = res.stdout.count("Level Entries")
    assert heads == len(inos), (f"debugfs ex: {heads} tables for "
                                f"{len(inos)} inodes\n"
                                + helpers.describe(res))
    ext = parse_ex_output(res.stdout)
    missing = set(inos) - set(ext)
    assert not missing, f"debugfs ex printed nothing for {missing}"
    return ext


def mapping_counts(img, workdir):
    """Counter {physical block: mappings}, over every in-use inode but 5."""
    used = inodes_in_use(img)
    inos = [i for i, (mode, flags) in used.items()
            if i != TREE_INO and flags & EXTENTS_FL
            and not flags & INLINE_DATA_FL]
    counts = Counter()
    for ino, extents in extents_of(img, inos, workdir).items():
        for _l, p, n, _u in extents:
            for b in range(p, p + n):
                counts[b] += 1
    return counts


def refcount_records(img):
    """[(start, len, count)] from debugfs.extref -R refcount.

    Raises AssertionError when the tree cannot be read.
    """
    res = _run([debugfs_extref(), "-R", "refcount", str(img)])
    assert res.returncode == 0, ("debugfs.extref refcount failed:\n"
                                 + helpers.describe(res))
    recs = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and all(p.isdigit() for p in parts):
            recs.append(tuple(int(p) for p in parts))
    return recs


def count_violations(img, workdir, exact=False):
    """Problems with the recorded counts of img, as strings.

    Always: no block's recorded count is below its number of mappings (a
    block with no record counts as 1).  With exact (after a repair): every
    block mapped k >= 2 times has a record of exactly k and no record
    covers a block mapped fewer than 2 times.
    """
    try:
        recs = refcount_records(img)
    except AssertionError as e:
        return [f"tree unreadable: {e}"]
    try:
        maps = mapping_counts(img, workdir)
    except AssertionError as e:
        return [f"mappings unreadable by stock debugfs: {e}"]
    recorded = {}
    for start, n, c in recs:
        for b in range(start, start + n):
            recorded[b] = c
    problems = []
    for b, k in sorted(maps.items()):
        c = recorded.get(b, 1)
        if c < k:
            problems.append(f"block {b}: {k} mappings, recorded count "
                            f"{recorded.get(b, 'none (<= 1)')}")
        elif exact and k >= 2 and c != k:
            problems.append(f"block {b}: {k} mappings, recorded {c} "
                            f"(after repair)")
    if exact:
        for b, c in sorted(recorded.items()):
            if maps.get(b, 0) < 2:
                problems.append(f"block {b}: record count {c}, "
                                f"{maps.get(b, 0)} mappings (after repair)")
    # Keep the message short: ranges of consecutive problems collapse.
    if len(problems) > 12:
        problems = problems[:10] + [f"... {len(problems) - 10} more"]
    return problems


# ----- file contents -----


def dump_files(img, paths, workdir):
    """{path: bytes, or None when the path does not resolve} (stock debugfs)."""
    workdir = Path(workdir)
    outdir = workdir / "dump"
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    names = {}
    lines = []
    for i, p in enumerate(paths):
        host = outdir / f"f{i}"
        names[p] = host
        lines.append(f'dump "{p}" {host}\n')
    cmdfile = workdir / "dump.cmds"
    cmdfile.write_text("".join(lines))
    _run(["debugfs", "-n", "-f", str(cmdfile), str(img)])
    result = {}
    for p, host in names.items():
        result[p] = host.read_bytes() if host.exists() else None
    shutil.rmtree(outdir)
    return result


def ls_dir(img, path):
    """{name: (ino, mode)} of a directory by stock debugfs 'ls -p', or None."""
    res = _run(["debugfs", "-n", "-R", f'ls -p "{path}"', str(img)])
    if res.returncode != 0 or not res.stdout.strip():
        return None
    entries = {}
    for line in res.stdout.splitlines():
        # /ino/mode/uid/gid/name/size/
        parts = line.strip().split("/")
        if len(parts) < 7 or not parts[1].isdigit():
            continue
        name = "/".join(parts[5:-2])
        if name in (".", "..") or int(parts[1]) == 0:
            continue   # 0: an empty slot of the directory block
        entries[name] = (int(parts[1]), int(parts[2], 8))
    return entries if entries or "ls:" not in res.stderr else None


def rdump_tree(img, path, workdir):
    """Dump a directory tree with stock debugfs rdump.

    Returns {relative path: bytes} for regular files and {relative: None}
    for directories, or None when the path does not exist.
    """
    workdir = Path(workdir)
    out = workdir / "rdump"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _run(["debugfs", "-n", "-R", f'rdump "{path}" {out}', str(img)])
    top = out / Path(path).name
    if not top.exists():
        shutil.rmtree(out)
        return None
    tree = {}
    for root, dirs, files in os.walk(top):
        rel = os.path.relpath(root, top)
        for d in dirs:
            tree[os.path.normpath(os.path.join(rel, d))] = None
        for fn in files:
            tree[os.path.normpath(os.path.join(rel, fn))] = \
                (Path(root) / fn).read_bytes()
    shutil.rmtree(out)
    return tree


def range_violations(old, new, got, lo, hi, bs, sizes=None):
    """Is got an allowed state of a file changed from old to new in [lo, hi)?

    Per FORMAT.md's table: the size is one of sizes (default: old's or
    new's); each block (bs bytes) overlapping [lo, hi) holds its old bytes,
    its new bytes or zeros (a hole); every other block its old bytes.
    Returns a list of problems (empty when allowed).
    """
    if got is None:
        return ["file is missing"]
    if sizes is None:
        sizes = {len(old), len(new)}
    problems = []
    if len(got) not in sizes:
        problems.append(f"size {len(got)} not in {sorted(sizes)}")
    size = max(len(old), len(new), len(got))
    pad = lambda b: b + bytes(size - len(b))  # noqa: E731
    old_p, new_p, got_p = pad(old), pad(new), pad(got)
    zero = bytes(bs)
    for b in range(-(-size // bs)):
        s, e = b * bs, min((b + 1) * bs, size)
        g = got_p[s:e]
        if s < hi and e > lo:
            if g not in (old_p[s:e], new_p[s:e], zero[:e - s]):
                problems.append(f"block {b} (bytes {s}-{e}) in the range is "
                                f"neither old, new nor zeros")
        elif g != old_p[s:e]:
            problems.append(f"block {b} (bytes {s}-{e}) outside the range "
                            f"changed")
    if len(problems) > 8:
        problems = problems[:6] + [f"... {len(problems) - 6} more"]
    return problems


# ----- the fault-injected run -----


def run_op(img, request, fault, out=None):
    """debugfs.extref -w -R REQUEST IMG with EXTREF_FAULT=fault.

    Returns (CompletedProcess, [lines of EXTREF_FAULT_OUT]).
    """
    env = {"EXTREF_FAULT": fault}
    if out is not None:
        out = Path(out)
        if out.exists():
            out.unlink()
        env["EXTREF_FAULT_OUT"] = str(out)
    res = _run([debugfs_extref(), "-w", "-R", request, str(img)], env=env)
    lines = out.read_text().splitlines() if out and out.exists() else []
    return res, lines


def count_writes(img, request, workdir):
    """(writes, flushes) of one run of request (EXTREF_FAULT=count)."""
    res, lines = run_op(img, request, "count", Path(workdir) / "count.out")
    assert res.returncode == 0, helpers.describe(res)
    assert len(lines) == 1, f"expected one channel, got {lines}"
    m = re.match(r"writes=(\d+) flushes=(\d+)$", lines[0])
    assert m, lines
    return int(m.group(1)), int(m.group(2))


def crash_points(total, limit):
    """1..total when total <= limit, else limit points spread evenly
    (always including 1 and total)."""
    if total <= limit:
        return list(range(1, total + 1))
    pts = {1 + round(i * (total - 1) / (limit - 1)) for i in range(limit)}
    return sorted(pts)


def fsck_run(img, *args):
    # A concurrent rebuild may have the binary missing for a moment.
    for _ in range(120):
        path = fsck_path()
        if path:
            break
        time.sleep(0.5)
    else:
        raise AssertionError("fsck.extref disappeared during the test")
    return _run([path, *args, str(img)])


def e2fsck(img, *args):
    return _run(["e2fsck", *args, str(img)])


def needs_recovery(img):
    """The superblock says the journal needs recovery (stock dumpe2fs)."""
    return "needs_recovery" in _run(["dumpe2fs", "-h", str(img)]).stdout


def fsck_problems(img):
    """(sorted problem lines, exit) of fsck.extref -fn -E no_e2fsck."""
    res = fsck_run(img, "-fn", "-E", "no_e2fsck")
    return sorted(ln for ln in res.stdout.splitlines()
                  if re.match(r"^0x[0-9a-f]{4} ", ln)), res.returncode


def checkers_clean(img, fsck=True, tail=800, stock=True):
    """Problems (empty: none) of stock e2fsck -fn and fsck.extref -fn."""
    probs = []
    res = e2fsck(img, "-fn") if stock else None
    if res and res.returncode != 0:
        probs.append("e2fsck -fn: " + res.stdout[-tail:])
    if fsck:
        res = fsck_run(img, "-fn")
        if res.returncode != 0:
            probs.append("fsck.extref -fn: " + res.stdout[-tail:])
    return probs


def converted_or_not(read, want, records):
    """The oracle of a crashed mkfs.extref --convert --dedup=block: stock
    e2fsck -fn clean and read(img) == want (every file's bytes); once the
    feature is set, fsck.extref -fn clean and records(the refcount
    records) -> no problem."""
    def oracle(img, how):
        probs = checkers_clean(img, fsck=False)
        if read(img) != want:
            probs.append("file contents changed")
        if "shared_blocks" in _run(["dumpe2fs", "-h", str(img)]).stdout:
            probs += checkers_clean(img, stock=False)
            probs += records(refcount_records(img))
        return probs
    return oracle


# ----- operations: op(img, env=None) runs one on img, with env added -----


def shell_op(cmds):
    """debugfs.extref -w -f CMDS IMG (the requests in one session)."""
    def op(img, env=None):
        cmdfile = Path(str(img) + ".cmds")
        cmdfile.write_text("\n".join(cmds) + "\n")
        return _run([debugfs_extref(), "-w", "-f", str(cmdfile), str(img)],
                    env=env)
    return op


def request_op(request, env=None):
    """debugfs.extref -w -R REQUEST IMG."""
    return tool_op([debugfs_extref(), "-w", "-R", request], env)


def tool_op(argv, env=None):
    """ARGV IMG with env (fixed settings, e.g. EXTREF_FAULT_TX_ROOM)."""
    def op(img, more=None):
        return _run([*argv, str(img)], env={**(env or {}), **(more or {})})
    return op


def fsck_op(*opts, env=None):
    """fsck.extref -fy OPTS IMG (the path is looked up at each run)."""
    def op(img, more=None):
        return _run([fsck_path(), "-fy", *opts, str(img)],
                    env={**(env or {}), **(more or {})})
    return op


def count(op, img, workdir, status=0):
    """(writes, flushes) of op run on img with EXTREF_FAULT=count (the
    first io channel the run opens); its exit must be status."""
    out = Path(workdir) / "count.out"
    if out.exists():
        out.unlink()
    res = op(img, {"EXTREF_FAULT": "count", "EXTREF_FAULT_OUT": str(out)})
    assert res.returncode == status, helpers.describe(res)
    m = re.match(r"writes=(\d+) flushes=(\d+)$",
                 out.read_text().splitlines()[0])
    assert m, out.read_text()
    return int(m.group(1)), int(m.group(2))


def replay(img, how, e2fsck_worst=1, extref_opens=True):
    """Replay the journal of a crashed img by stock e2fsck -fy, or only
    the journal by e2fsck -y -E journal_only ("journal"; the exit at most
    e2fsck_worst), or by the next extref open for writing
    (debugfs.extref -w; with extref_opens it must succeed); None: no
    replay.  Returns problems (empty: none), the journal still needing
    recovery among them."""
    if how is None:
        return []
    if how in ("e2fsck", "journal"):
        res = e2fsck(img, *(["-fy"] if how == "e2fsck"
                            else ["-y", "-E", "journal_only"]))
        ok = res.returncode <= e2fsck_worst
    else:
        res = _run([debugfs_extref(), "-w", "-R", "stats", str(img)])
        ok = res.returncode == 0 or not extref_opens
    probs = [] if ok else [f"replay by {how}: {helpers.describe(res)}"]
    if needs_recovery(img):
        probs.append(f"still needs recovery after the replay by {how}")
    return probs


def crash_and_powercut(every, at=0, last=False):
    """Faults at the i-th crash point n: crash=n, and also a power cut
    where i % every == at (and at the last point, with last)."""
    def faults(i, n, is_last):
        cut = i % every == at or (last and is_last)
        return [f"crash={n}"] + ([f"powercut={n},seed={n}"] if cut else [])
    return faults


def crash_or_powercut(every, at):
    """One fault at the i-th crash point n: a power cut where
    i % every == at, else crash=n."""
    def faults(i, n, is_last):
        return [f"powercut={n},seed={n}" if i % every == at
                else f"crash={n}"]
    return faults


def only(kind):
    """One fault of kind at every crash point n: crash=n, or
    powercut=n,seed=n."""
    def faults(i, n, is_last):
        return [f"crash={n}" if kind == "crash" else f"powercut={n},seed={n}"]
    return faults


class Swept:
    """What a sweep did: W writes and flushes of the whole operation,
    the faults run, and the failures [(fault, replayed by, problems)]."""

    def __init__(self, writes, flushes, counted):
        self.writes, self.flushes = writes, flushes
        self.counted = counted      # the image the counting run left
        self.faults = []
        self.failures = []
        self.kept = []

    def report(self, label, failures=None):
        lines = [f"{f}" + (f" (replayed by {h})" if h else "") + f": {p}"
                 for f, h, p in (self.failures if failures is None
                                 else failures)]
        if len(lines) > 40:
            lines = lines[:40] + [f"... {len(lines) - 40} more"]
        return (f"{label} W={self.writes}, {len(self.faults)} faults, "
                f"failed images kept: {self.kept}:\n  "
                + "\n  ".join(lines))

    def assert_clean(self, label=""):
        assert not self.failures, self.report(label)


def sweep(img0, op, oracle, workdir, limit, faults=crash_and_powercut(3),
          replayers=("extref", "e2fsck"), count_status=0, crash_exits=None,
          stop_after=3, keep=3, **replay_opts):
    """Crash op on copies of img0 at a sample of its writes and judge
    each crashed image.

    The writes W of the whole op are counted first (EXTREF_FAULT=count,
    on workdir/probe.img, left there: Swept.counted).  At each of
    crash_points(W, limit), faults(i, n, last) gives the faults to run
    (EXTREF_FAULT); each crashed copy is replayed by the next of
    replayers in turn (see replay(); None: not replayed) and judged by
    oracle(img, how) -> problems (empty: none); with crash_exits, the
    crashed run's exit must be one of them.  A failing image is kept
    (the first keep of them, workdir/failed-*.img); the sweep stops at
    the end of a point once stop_after runs failed (None: never).
    Returns a Swept.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    probe = workdir / "probe.img"
    sparse_copy(img0, probe)
    done = Swept(*count(op, probe, workdir, count_status), probe)
    points = crash_points(done.writes, limit)
    img = workdir / "crash.img"
    for i, n in enumerate(points):
        for fault in faults(i, n, n == points[-1]):
            how = replayers[len(done.faults) % len(replayers)]
            done.faults.append(fault)
            sparse_copy(img0, img)
            res = op(img, {"EXTREF_FAULT": fault})
            probs = [] if crash_exits is None or res.returncode in \
                crash_exits else [f"exit {res.returncode}: {res.stderr}"]
            probs += replay(img, how, **replay_opts) + oracle(img, how)
            if probs:
                done.failures.append((fault, how, probs))
                if len(done.kept) < keep:
                    kept = workdir / f"failed-{fault.replace(',', '-')}.img"
                    sparse_copy(img, kept)
                    done.kept.append(str(kept))
        if stop_after and len(done.failures) >= stop_after:
            break
    img.unlink(missing_ok=True)
    return done


def first_crash(img0, op, img, pred, points):
    """Crash op on a copy of img0 at img at each of points in turn until
    pred(img) holds; returns that point, or None."""
    for n in points:
        sparse_copy(img0, img)
        op(img, {"EXTREF_FAULT": f"crash={n}"})
        if pred(img):
            return n
    return None
