"""neverworse.py --- the differential fuzzer "never worse" (issue 29, 4).

A trial starts from a valid extref image with reflinks (mkfs.extref -d,
then debugfs.extref -w reflink and punch), applies one to three random
edits by stock tools (debugfs -w sif / set_bg / freeb / setb / zap_block,
dd of a block, tune2fs options), then one random extref operation through
the default open (debugfs.extref -w, or mkfs.extref --update).  The
invariant, for that operation:

  - it refuses (exit != 0) and leaves the image byte-identical, or
  - it succeeds and every file it was not asked to change reads back
    (stock debugfs dump) as before, and stock e2fsck -fn is no worse than
    before: no new exit bit among 4 and 8, no new kind of problem.

Everything is drawn from random.Random(seed), so a seed names a trial; a
trial is also a plain record (edits + op, see Trial) that replay() runs
again, which is how regression cases are kept (test_never_worse.py).

Used by tests/test_never_worse.py (a fixed set of seeds, short) and by
bench/fuzz_never_worse.sh (long runs):

    python3 tests/neverworse.py [--seconds N] [--seed S] [--count N]
                                [--json FILE] [--minimize]
"""

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Files of the base image; the second group (after the reflinks) share data.
FILES = ["/a", "/b", "/c", "/d/e", "/d/f", "/g", "/g2", "/d2/e", "/d2/f"]
DIRS = ["/", "/d", "/d2"]
BLOCK = 1024
SIZE = "16M"
TIMEOUT = 60
FSIZE_CAP = 4 << 20


def build_dir():
    if "EXTREF_BUILD_DIR" in os.environ:
        return Path(os.environ["EXTREF_BUILD_DIR"]).resolve()
    for d in (REPO_ROOT, REPO_ROOT / "build-test", REPO_ROOT / "build"):
        if (d / "Makefile").is_file():
            return d.resolve()
    return REPO_ROOT


def tools(build=None):
    b = Path(build) if build else build_dir()
    return {"mkfs": str(b / "mkfs/mkfs.extref"),
            "debugfs": str(b / "debug/debugfs.extref")}


def _small_files():
    """preexec_fn: files the child writes stop at FSIZE_CAP (EFBIG, the
    signal ignored): a dump of a file an edit made 1 TiB long ends
    there."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_CAP, FSIZE_CAP))


def run(cmd, timeout=TIMEOUT, input=None, small=False):
    """(exit code, stdout+stderr text); a timeout is exit -999."""
    try:
        r = subprocess.run([str(c) for c in cmd], capture_output=True,
                           timeout=timeout, input=input,
                           preexec_fn=_small_files if small else None)
    except subprocess.TimeoutExpired:
        return -999, "timeout"
    out = (r.stdout + r.stderr).decode("utf-8", "replace")
    return r.returncode, out


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ----- the base image -----

def _source(d, rng, version=0):
    """The source tree; version 1 is the --update's next version (one file
    changed, one new, one gone, the rest as they were)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "d").mkdir(exist_ok=True)
    data = {"a": 40960, "c": 12288, "d/e": 20000, "d/f": 100, "g": 262144}
    r = random.Random(1234)
    for name, n in data.items():
        (d / name).write_bytes(r.randbytes(n))
    if version:
        (d / "c").write_bytes(rng.randbytes(rng.choice([0, 100, 5000,
                                                          20480])))
        (d / "new").write_bytes(rng.randbytes(rng.randrange(1, 30000)))
        (d / "d/f").unlink()
    return d


def make_base(workdir, csum=True, build=None):
    """A valid extref image with reflinks; returns its path.  /b is a
    reflink of /a, /g2 of /g, /d2 of /d (-r); /g has an extent tree of
    its own (every other block punched)."""
    t = tools(build)
    workdir = Path(workdir)
    img = workdir / ("base-csum.img" if csum else "base-nocsum.img")
    src = _source(workdir / "src0", None)
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    opts = ["-b", str(BLOCK), "-U", "12345678-1234-1234-1234-123456789abc"]
    if not csum:
        opts += ["-O", "^metadata_csum"]
    r = subprocess.run([t["mkfs"], *opts, "-d", str(src), str(img), SIZE],
                       capture_output=True, env=env)
    if r.returncode:
        raise RuntimeError(f"mkfs.extref failed: {r.stderr!r}")
    cmds = ["reflink /a /b", "reflink -r /d /d2"]
    cmds += [f"punch /g {i * BLOCK} {BLOCK}" for i in range(1, 64, 2)]
    cmds += ["reflink /g /g2"]
    f = workdir / "base.cmds"
    f.write_text("\n".join(cmds) + "\n")
    rc, out = run([t["debugfs"], "-w", "-f", f, img])
    if rc:
        raise RuntimeError(f"debugfs.extref failed: {out}")
    rc, out = run(["e2fsck", "-fn", img])
    if rc:
        raise RuntimeError(f"the base image is not clean: {out}")
    return img


def geometry(img):
    """Blocks by kind: 'meta' (superblocks, descriptors, reserved GDT,
    bitmaps, inode tables), 'bitmap' (block bitmaps), 'journal', 'tree'
    (inode 5), 'etb' (extent-tree nodes), 'data' (files' data); and the
    group descriptors' fields."""
    _, out = run(["dumpe2fs", img])
    g = {"meta": set(), "bitmap": set(), "ibitmap": set(), "itable": set(),
         "rgdt": set(), "groups": []}
    for line in out.splitlines():
        if re.match(r"Group \d+:", line):
            g["groups"].append({})
        for m in re.finditer(r"(superblock|Group descriptors|Reserved GDT "
                             r"blocks|Block bitmap|Inode bitmap|Inode table)"
                             r" at (\d+)(-(\d+))?", line):
            _zone(g, m)
    g["journal"] = _blocks(img, "<8>")
    g["tree"] = _blocks(img, "<5>")
    g["etb"], g["data"] = set(), set()
    for p in FILES:
        _, st = run(["debugfs", "-R", f"stat {p}", img])
        for m in re.finditer(r"\((ETB\d+|[\d-]+)\):(\d+)(-(\d+))?", st):
            a = int(m.group(2))
            b = int(m.group(4)) if m.group(4) else a
            (g["etb"] if m.group(1).startswith("ETB") else
             g["data"]).update(range(a, b + 1))
    g["count"] = 16 * 1024 * 1024 // BLOCK
    return g


def _zone(g, m):
    a = int(m.group(2))
    b = int(m.group(4)) if m.group(4) else a
    blocks = set(range(a, b + 1))
    g["meta"] |= blocks
    field, kind = {"Block bitmap": ("block_bitmap", "bitmap"),
                   "Inode bitmap": ("inode_bitmap", "ibitmap"),
                   "Inode table": ("inode_table", "itable")}.get(
                       m.group(1), (None, None))
    if field:
        g[kind] |= blocks
        g["groups"][-1][field] = a
    elif m.group(1).startswith("Reserved"):
        g["rgdt"] |= blocks


def _blocks(img, spec):
    _, out = run(["debugfs", "-R", f"blocks {spec}", img])
    return {int(x) for x in out.split() if x.isdigit()}


# ----- random trials -----

def _pick_block(rng, g):
    kind = rng.choice(["meta", "bitmap", "itable", "journal", "tree", "etb",
                       "data", "data", "any"])
    pool = sorted(g.get(kind, ())) if kind != "any" else None
    if not pool:
        return rng.randrange(g["count"])
    return rng.choice(pool)


def _inode_spec(rng):
    return rng.choice(FILES + ["<8>", "<5>", "<2>"])


def random_edit(rng, g, csum):
    """One stock-tool edit: a record replay() understands."""
    k = rng.choice(["sif", "sif", "sif", "set_bg", "freeb", "freeb", "setb",
                    "zap", "dd", "tune2fs"])
    if k == "sif":
        ino = _inode_spec(rng)
        if rng.random() < 0.8:
            word = rng.choice([4, 5, 5, 5, 8, 8, 11, 14, 3, 6])
            return ["debugfs", f"sif {ino} block[{word}] "
                    f"{_pick_block(rng, g)}"]
        field, val = rng.choice([("size", rng.choice([0, 1, 1 << 40,
                                                      rng.randrange(1 << 20)])),
                                 ("links_count", 0),
                                 ("flags", 0), ("blocks", rng.randrange(999)),
                                 ("mode", "0100644")])
        return ["debugfs", f"sif {ino} {field} {val}"]
    if k == "set_bg":
        grp = rng.randrange(len(g["groups"]))
        other = g["groups"][1 - grp] if len(g["groups"]) > 1 else {}
        field = rng.choice(["block_bitmap", "inode_bitmap", "inode_table",
                            "free_blocks_count", "flags", "itable_unused"])
        if field in other and rng.random() < 0.5:
            val = other[field]
        elif field in ("block_bitmap", "inode_bitmap", "inode_table"):
            val = _pick_block(rng, g)
        elif field == "flags":
            val = rng.choice([0, 1, 2, 3, 7])
        else:
            val = rng.randrange(10000)
        return ["debugfs", f"set_bg {grp} {field} {val}"]
    if k in ("freeb", "setb"):
        return ["debugfs", f"{k} {_pick_block(rng, g)} "
                f"{rng.choice([1, 1, 2, 8, 64])}"]
    if k == "zap":
        if rng.random() < 0.3:
            return ["debugfs", f"zap_block -f {rng.choice(FILES)} "
                    f"{rng.randrange(8)}"]
        return ["debugfs", f"zap_block -p {rng.randrange(256)} "
                f"{_pick_block(rng, g)}"]
    if k == "dd":
        blk = _pick_block(rng, g)
        off = rng.choice([0, 0, rng.randrange(BLOCK)])
        return ["dd", blk, off, rng.randrange(1, BLOCK - off + 1),
                rng.randrange(1 << 30) if rng.random() < 0.7 else None]
    opt = rng.choice([["-O", "^has_journal"], ["-L", "fuzz"], ["-c", "20"],
                      ["-e", "remount-ro"], ["-r", "100"],
                      ["-U", "87654321-4321-4321-4321-cba987654321"],
                      ["-O", "^dir_index"], ["-E", "stride=4"],
                      ["-O", "^metadata_csum" if csum else "metadata_csum"],
                      ["-I", "512"], ["-o", "acl"]])
    return ["tune2fs", *opt]


def random_op(rng, edited=()):
    """One extref operation; half the time on a file an edit touched."""
    files = FILES
    f = rng.choice(sorted(edited) if edited and rng.random() < 0.5
                   else files)
    n = rng.choice([BLOCK, 2 * BLOCK, 3000, 16384, 1])
    off = rng.choice([0, BLOCK, 5 * BLOCK, rng.randrange(40000)])
    k = rng.choice(["write", "pwrite", "pwrite", "rm", "mkdir", "reflink",
                    "reflink_r", "clone_range", "truncate", "punch",
                    "unshare", "setxattr", "symlink", "update", "update",
                    "dedupe", "rmdir", "link", "rename", "mknod",
                    "set_times", "fallocate", "orphan_release"])
    if k == "write":
        return ["write", rng.randrange(1, 70000), rng.randrange(1 << 30),
                "/new"]
    if k == "pwrite":
        return ["shell", f"pwrite -S {rng.randrange(256)} {f} {off} {n}"]
    if k == "rm":
        return ["shell", f"rm {f}"]
    if k == "rmdir":
        return ["shell", f"rmdir {rng.choice(['/d', '/d2'])}"]
    if k == "mkdir":
        return ["shell", f"mkdir {rng.choice(['/newdir', '/d/newdir'])}"]
    if k == "reflink":
        return ["shell", f"reflink {f} /new"]
    if k == "reflink_r":
        return ["shell", "reflink -r /d /new"]
    if k in ("clone_range", "dedupe"):
        g = rng.choice(files)
        return ["shell", f"{k} {f} {rng.randrange(8) * BLOCK} {g} "
                f"{rng.randrange(40) * BLOCK} {rng.randrange(1, 9) * BLOCK}"]
    if k == "truncate":
        return ["shell", f"truncate {f} {rng.choice([0, 1, 5000, 70000])}"]
    if k == "punch":
        return ["shell", f"punch {f} {off} {n}"]
    if k == "unshare":
        return ["shell", f"unshare {f}"]
    if k == "setxattr":
        return ["shell", f"setxattr {f} user.fuzz {'v' * rng.randrange(1, 300)}"]
    if k == "symlink":
        return ["shell", f"symlink /newlink {'t' * rng.randrange(1, 200)}"]
    if k == "link":
        return ["shell", f"link {f} {rng.choice(['/hard', '/d/hard'])}"]
    if k == "rename":
        how = rng.choice(["", "-n ", "-x "])
        return ["shell", f"rename {how}{f} "
                f"{rng.choice(['/moved', *files]) if how != '-x ' else rng.choice(files)}"]
    if k == "mknod":
        return ["shell", rng.choice(["mknod /fifo p", "mknod /dev c 1 3",
                                     "mknod -m 600 /d/blk b 8 1"])]
    if k == "set_times":
        return ["shell", f"set_times {f} {rng.randrange(1 << 31)} "
                f"{rng.randrange(1 << 31)}"]
    if k == "fallocate":
        mode = rng.choice(["", "-k ", "-z ", "-p -k ", "-u "])
        return ["shell", f"fallocate {mode}{f} {off} {n}"]
    if k == "orphan_release":
        return ["shell", f"orphan_release {rng.randrange(11, 24)}"]
    return ["update", rng.randrange(1 << 30)]


def random_trial(seed, g, csum=None):
    rng = random.Random(seed)
    if csum is None:
        csum = rng.random() < 0.6
    edits = [random_edit(rng, g[csum], csum)
             for _ in range(rng.randint(1, 3))]
    edited = {w for e in edits if e[0] == "debugfs" for w in e[1].split()
              if w in FILES}
    return {"seed": seed, "csum": csum, "edits": edits,
            "op": random_op(rng, edited)}


# ----- running a trial -----

def apply_edit(img, e):
    if e[0] == "debugfs":
        run(["debugfs", "-w", "-R", e[1], img])
    elif e[0] == "dd":
        _, blk, off, n, s = e
        data = random.Random(s).randbytes(n) if s is not None else bytes(n)
        with open(img, "r+b") as f:
            f.seek(blk * BLOCK + off)
            f.write(data)
    elif e[0] == "tune2fs":
        run(["tune2fs", *e[1:], img])
    else:
        raise ValueError(f"unknown edit {e!r}")


def changed_by(op):
    """The paths whose bytes op may change (or remove)."""
    if op[0] == "write":
        return {op[3]}
    if op[0] == "update":
        return {"/c", "/new", "/d/f"}
    words = op[1].split()
    cmd = words[0]
    if cmd in ("pwrite", "truncate", "punch", "rm"):
        return {words[-3] if cmd in ("pwrite", "punch") else
                words[-2] if cmd == "truncate" else words[-1]}
    if cmd == "rmdir":
        return {p for p in FILES if p.startswith(words[1] + "/")}
    if cmd == "clone_range":
        return {words[3]}
    if cmd == "fallocate":
        return {words[-3]}
    if cmd == "rename":
        # the old name goes; over another name (or exchanged) that one
        # changes too
        return {w for w in words[1:] if w in FILES}
    if cmd == "reflink":
        return {"/new"}
    return set()


def read_files(img, outdir):
    """({path: bytes or None}, {path: set of its blocks}), by stock
    debugfs dump and blocks."""
    outdir = Path(outdir)
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    cmds = [f"blocks {p}" for p in FILES]
    cmds += [f"dump {p} {outdir}/{i}" for i, p in enumerate(FILES)]
    cf = outdir / "cmds"
    cf.write_text("\n".join(cmds) + "\n")
    _, out = run(["debugfs", "-f", cf, img], small=True)
    res, blocks, cur = {}, {p: set() for p in FILES}, None
    for line in out.splitlines():
        if line.startswith("debugfs: "):
            w = line.split()
            cur = w[2] if len(w) > 2 and w[1] == "blocks" else None
        elif cur in blocks:
            blocks[cur] |= {int(x) for x in line.split() if x.isdigit()}
    for i, p in enumerate(FILES):
        f = outdir / str(i)
        res[p] = f.read_bytes() if f.exists() else None
    return res, blocks


def changed_blocks(a, b):
    """The block numbers where images a and b differ."""
    out = []
    with open(a, "rb") as fa, open(b, "rb") as fb:
        n = 0
        while True:
            x, y = fa.read(BLOCK * 256), fb.read(BLOCK * 256)
            if not x and not y:
                return out
            if x != y:
                out += [n + i for i in range(0, max(len(x), len(y)) // BLOCK)
                        if x[i * BLOCK:(i + 1) * BLOCK] !=
                        y[i * BLOCK:(i + 1) * BLOCK]]
            n += 256


def in_use(img, blocks, zone):
    """Which of blocks are in use in img: in zone (metadata, journal) or
    owned by an inode (stock debugfs icheck, whatever the bitmap says)."""
    used = [b for b in blocks if b in zone]
    rest = [b for b in blocks if b not in zone][:500]
    if rest:
        _, out = run(["debugfs", "-R", "icheck " + " ".join(map(str, rest)),
                      img])
        used += [int(m.group(1)) for m in
                 re.finditer(r"^(\d+)\s+(\d+)\s*$", out, re.M)]
    return sorted(used)


_SKIP = re.compile(r"^(e2fsck \d|Pass \d|\S+: \d+/\d+ files|$|"
                   r"\S+: \*\*\*\*\* FILE SYSTEM|Running additional passes)")


def _norm(line):
    line = re.sub(r"\(mod time [^)]*\)", "", line)
    line = re.sub(r"(differences:).*", r"\1", line)
    line = re.sub(r"0x[0-9a-fA-F]+", "#", line)
    return re.sub(r"\d+", "#", line).strip()


def fsck(img):
    """(exit code, set of kinds of problem) of stock e2fsck -fn."""
    rc, out = run(["e2fsck", "-fn", img])
    out = out.replace(str(img), "IMG")
    kinds = {_norm(x) for x in out.splitlines() if not _SKIP.match(x)}
    kinds = {k for k in kinds if k and not re.search(
        r"could be (shorter|narrower)|^Fix\? no$", k)}
    return rc, kinds


def run_op(img, op, workdir, build=None):
    t = tools(build)
    if op[0] == "write":
        host = Path(workdir) / "host"
        host.write_bytes(random.Random(op[2]).randbytes(op[1]))
        return run([t["debugfs"], "-w", "-R", f"write {host} {op[3]}", img])
    if op[0] == "shell":
        return run([t["debugfs"], "-w", "-R", op[1], img])
    if op[0] == "update":
        src = _source(Path(workdir) / "src1", random.Random(op[1]), 1)
        return run([t["mkfs"], "--update", "-d", src, img])
    raise ValueError(f"unknown op {op!r}")


def worse(before, after):
    """What makes after worse than before: a list of reasons."""
    (rc0, k0), (rc1, k1) = before, after
    why = []
    if rc1 < 0 or (rc1 & ~rc0 & 12):
        why.append(f"e2fsck exit {rc0} -> {rc1}")
    new = sorted(k1 - k0)
    if new:
        why.append("new problems: " + "; ".join(new[:6]))
    return why


def check_trial(trial, base, workdir, build=None, edits=None, zone=()):
    """Run one trial on a copy of base; returns None when the invariant
    holds, else a dict saying how it broke.  A file that maps blocks of
    zone (the base's metadata, journal and tree) before the operation is
    not compared: its bytes are the metadata's, which any writer changes
    (the kernel's journal too)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    img = workdir / "img"
    shutil.copyfile(base, img)
    for e in (trial["edits"] if edits is None else edits):
        apply_edit(img, e)
    h0 = sha256(img)
    fs0 = fsck(img)
    files0, blocks0 = read_files(img, workdir / "before")
    if sha256(img) != h0:
        raise RuntimeError("a stock read changed the image")
    shutil.copyfile(img, workdir / "img0")
    op = trial["op"]
    rc, out = run_op(img, op, workdir, build)
    res = {"rc": rc, "out": out[-2000:]}
    if rc < 0 or rc >= 128 or "Sanitizer" in out or "runtime error" in out:
        res["fail"] = "crash" if rc != -999 else "hang"
        return res
    if rc != 0:
        if sha256(img) != h0:
            ch = changed_blocks(workdir / "img0", img)
            used = in_use(workdir / "img0", ch, set(zone))
            res["fail"] = (f"refused but changed the image ({len(ch)} "
                           f"blocks, {len(used)} of them in use before: "
                           f"{used[:8]})")
            res["used"] = len(used)
            res["fsck"] = worse(fs0, fsck(img))
            return res
        return None
    fs1 = fsck(img)
    files1, _ = read_files(img, workdir / "after")
    zone = set(zone)
    spared = [p for p in FILES if p not in changed_by(op) and
              files0[p] is not None and files1[p] != files0[p] and
              not blocks0[p] & zone]
    if op[0] == "update":
        # files equal to their source stay; a damaged one may be rewritten
        src = workdir / "src0"
        _source(src, None)
        spared = [p for p in spared if (src / p.lstrip("/")).exists() and
                  (src / p.lstrip("/")).read_bytes() == files0[p]]
    why = worse(fs0, fs1)
    if spared:
        why.insert(0, "other files changed: " + " ".join(spared))
    if why:
        res["fail"] = "; ".join(why)
        return res
    return None


# ----- classes -----

CLASSES = [
    "--update committed, then mkfs.extref's summary failed (exit 1)",
    "refused after writing only unowned blocks",
    "journal trusted",
    "aliasing group descriptors",
    "data written into metadata",
    "metadata freed",
    "allocation of system-zone blocks",
    "group metadata marked free then allocated",
    "extent-tree/tree blocks marked free",
    "damaged extent-tree or tree node",
    "a file's data block marked free, then allocated",
    "other",
]

_WRITES = ("pwrite", "write", "clone_range", "update", "unshare")


def _blk_of(edit):
    """The block an edit aims at (freeb/setb B [N]: B; zap_block: its
    last number; dd: its block)."""
    if edit[0] == "dd":
        return edit[1]
    if edit[0] != "debugfs":
        return None
    w = edit[1].split()
    nums = [x for x in w[1:] if x.isdigit()]
    if w[0] in ("freeb", "setb") and nums:
        return int(nums[0])
    if w[0] == "zap_block" and "-f" not in w and nums:
        return int(nums[-1])
    if w[0] == "sif" and nums:
        return int(nums[-1])
    return None


def _is_pointer(edit):
    """Does a sif of i_block[k] set a block number?  In an inode whose
    extents are in i_block (depth 0) words 5, 8, 11, 14 are ee_start_lo;
    in /g and /g2 (depth 1) words 4, 7, 10, 13 are ei_leaf_lo."""
    m = re.match(r"sif (\S+) block\[(\d+)\]", edit[1])
    if not m:
        return False
    k = int(m.group(2))
    return k % 3 == (1 if m.group(1) in ("/g", "/g2") else 2) and k > 3


def classify(trial, g, res=None):
    """The system-zone class a failing trial most likely belongs to, from
    its result, its edits and its operation (a heuristic: the first that
    fits)."""
    if res and res.get("used") and "updated from" in res.get("out", ""):
        return "--update committed, then mkfs.extref's summary failed " \
            "(exit 1)"
    g = g[trial["csum"]]
    op = trial["op"]
    opname = op[0] if op[0] != "shell" else op[1].split()[0]
    zone = g["meta"] | g["journal"]
    for e in trial["edits"]:
        if e[0] == "debugfs" and e[1].startswith("sif <8> block"):
            return "journal trusted"
    for e in trial["edits"]:
        if e[0] == "debugfs" and e[1].startswith("set_bg") and \
                re.search(r"bitmap|inode_table", e[1]):
            return "aliasing group descriptors"
    for e in trial["edits"]:
        if e[0] == "debugfs" and _is_pointer(e) and _blk_of(e) in zone:
            return ("data written into metadata" if opname in _WRITES
                    else "metadata freed")
    for e in trial["edits"]:
        b = _blk_of(e)
        if e[0] in ("dd",) or e[1].startswith("zap_block -p"):
            if b in g["bitmap"]:
                return "allocation of system-zone blocks"
            if b in g["etb"] | g["tree"]:
                return "damaged extent-tree or tree node"
        if e[0] == "debugfs" and e[1].startswith("freeb"):
            n = int(e[1].split()[2])
            rng = set(range(b, b + n))
            if rng & zone:
                return "group metadata marked free then allocated"
            if rng & (g["etb"] | g["tree"]):
                return "extent-tree/tree blocks marked free"
            if rng & g["data"]:
                return "a file's data block marked free, then allocated"
    if res and res.get("used") == 0:
        return "refused after writing only unowned blocks"
    return "other"


def minimize(trial, base, workdir, build=None, zone=()):
    """The smallest subset of the trial's edits that still fails (one
    edit tried alone, then pairs); the trial itself if none."""
    edits = trial["edits"]
    if len(edits) == 1:
        return trial
    subsets = [[e] for e in edits]
    if len(edits) == 3:
        subsets += [[edits[i], edits[j]] for i in range(3)
                    for j in range(i + 1, 3)]
    for s in subsets:
        if check_trial(trial, base, workdir, build, edits=s, zone=zone):
            return dict(trial, edits=s)
    return trial


class Fuzzer:
    def __init__(self, workdir, build=None):
        self.workdir = Path(workdir)
        self.build = build
        self.base = {c: make_base(self.workdir, c, build)
                     for c in (True, False)}
        self.geo = {c: geometry(self.base[c]) for c in (True, False)}

    def trial(self, seed):
        return random_trial(seed, self.geo)

    def zone(self, csum):
        g = self.geo[csum]
        return g["meta"] | g["journal"] | g["tree"]

    def check(self, trial, edits=None):
        return check_trial(trial, self.base[trial["csum"]],
                           self.workdir / "t", self.build, edits,
                           self.zone(trial["csum"]))

    def minimize(self, trial):
        return minimize(trial, self.base[trial["csum"]],
                        self.workdir / "t", self.build,
                        self.zone(trial["csum"]))

    def classify(self, trial, res=None):
        return classify(trial, self.geo, res)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--count", type=int, default=0,
                    help="trials (0: until --seconds)")
    ap.add_argument("--json", help="write the failures here")
    ap.add_argument("--minimize", action="store_true")
    ap.add_argument("--build", help="build directory")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="neverworse.")
    fz = Fuzzer(tmp, a.build)
    end = time.monotonic() + a.seconds
    fails, counts, n, seed = [], {}, 0, a.seed
    while (a.count and n < a.count) or (not a.count and
                                        time.monotonic() < end):
        t = fz.trial(seed)
        r = fz.check(t)
        n += 1
        if r:
            if a.minimize:
                t = fz.minimize(t)
            cls = fz.classify(t, r)
            counts[cls] = counts.get(cls, 0) + 1
            fails.append(dict(t, cls=cls, fail=r["fail"], rc=r["rc"],
                              out=r["out"][-400:], fsck=r.get("fsck")))
            print(f"seed {seed}: {cls}: {r['fail']}\n  edits {t['edits']}"
                  f"\n  op {t['op']} -> exit {r['rc']}", flush=True)
        seed += 1
        if n % 50 == 0:
            print(f"... {n} trials, {len(fails)} failures", flush=True)
    print(f"{n} trials (seeds {a.seed}..{seed - 1}), {len(fails)} failures "
          f"({100.0 * len(fails) / max(n, 1):.1f}%)")
    for c in CLASSES:
        if c in counts:
            print(f"  {counts[c]:4d}  {c}")
    if a.json:
        Path(a.json).write_text(json.dumps(fails, indent=1) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
