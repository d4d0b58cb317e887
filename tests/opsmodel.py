"""A model of file contents for random operations on an extref image.

The model is a dict path -> bytearray (the file's bytes; the size is the
length) plus the set of directories.  OpGenerator draws random *valid*
operations (valid per the FICLONERANGE / FIDEDUPERANGE rules described in
docs/debugfs.extref.8; the rules themselves are tested in test_ops_rules.py),
turns each into one debugfs.extref request, applies it to the model and
records the output the tool must print for it.

Batches of requests are run with `debugfs.extref -w -f CMDFILE`, and the
checks below compare the image with the model using tools that do not
share extref's code paths: stock debugfs, stock e2fsck, dumpe2fs and the
kernel (read-only loop mount).
"""

import collections
import re
import subprocess
from pathlib import Path

import helpers

ECHO = "debugfs.extref: "
KIB = 1024


class OpFailure(AssertionError):
    pass


# ----------------------------------------------------------------------
# the model

class Model:
    def __init__(self, bs):
        self.bs = bs
        self.files = {}           # path -> bytearray
        self.dirs = {"/"}         # directories made by the test (and /)

    def total_bytes(self):
        return sum(len(d) for d in self.files.values())

    def children(self, d):
        pre = d.rstrip("/") + "/"
        return [p for p in list(self.files) + list(self.dirs)
                if p != d and p.startswith(pre) and "/" not in p[len(pre):]]

    def files_under(self, d):
        pre = d.rstrip("/") + "/"
        return sorted(p for p in self.files if p.startswith(pre))

    def dirs_under(self, d):
        pre = d.rstrip("/") + "/"
        return sorted(p for p in self.dirs if p.startswith(pre))


def _write_at(buf, off, data):
    end = off + len(data)
    if end > len(buf):
        buf.extend(bytes(end - len(buf)))
    buf[off:end] = data


# ----------------------------------------------------------------------
# random operations

class Op:
    """One request, the check of its output, and its effect on the model."""

    def __init__(self, cmd, expect=None, apply=None):
        self.cmd = cmd
        self.expect = expect      # list of exact output lines, or None
        self.apply = apply        # callable(model), run when generated


class OpGenerator:
    MAX_FILE = 1536 * KIB         # a file never grows past this
    MAX_FILES = 48
    MAX_PER_DIR = 24

    def __init__(self, rng, model, hostdir, budget):
        self.rng = rng
        self.m = model
        self.hostdir = Path(hostdir)
        self.budget = budget      # bound on the sum of logical file sizes
        self.serial = 0
        self.hostfiles = []       # (path, bytes) kept for rewriting twins
        self.counts = collections.Counter()

    # -- helpers --
    def _name(self, prefix):
        self.serial += 1
        return f"{prefix}{self.serial}"

    def _new_path(self, prefix="f"):
        dirs = [d for d in self.m.dirs
                if len(self.m.children(d)) < self.MAX_PER_DIR]
        d = self.rng.choice(sorted(dirs))
        return d.rstrip("/") + "/" + self._name(prefix)

    def _host(self, data):
        path = self.hostdir / self._name("h")
        path.write_bytes(data)
        return path

    def _randbytes(self, n):
        """Random data; often made of repeated blocks so that equal block
        ranges turn up at different offsets (material for dedupe)."""
        r = self.rng.random()
        if r < 0.6 or n == 0:
            return self.rng.randbytes(n)
        bs = self.m.bs
        palette = [self.rng.randbytes(bs) for _ in range(3)]
        if r < 0.7:
            palette.append(bytes(bs))   # zero blocks
        out = bytearray()
        while len(out) < n:
            out += self.rng.choice(palette)
        return bytes(out[:n])

    def _size(self):
        r = self.rng.random()
        bs = self.m.bs
        if r < 0.08:
            return 0
        if r < 0.35:
            return self.rng.randrange(1, 8 * KIB)
        if r < 0.75:
            n = self.rng.randrange(1, 64 * KIB)
        else:
            n = self.rng.randrange(64 * KIB, 400 * KIB)
        if self.rng.random() < 0.3:
            n = max(bs, n - n % bs)     # block-aligned sizes too
        return n

    def _pick_file(self, nonempty=False):
        files = sorted(p for p, d in self.m.files.items()
                       if len(d) or not nonempty)
        return self.rng.choice(files) if files else None

    def _room(self, extra):
        return self.m.total_bytes() + extra <= self.budget

    def _align_down(self, x):
        return x - x % self.m.bs

    # -- operations; each returns an Op or None (not possible now) --
    def op_write(self):
        if len(self.m.files) >= self.MAX_FILES:
            return None
        if self.hostfiles and self.rng.random() < 0.15:
            host, data = self.rng.choice(self.hostfiles)   # identical twin
        else:
            data = self._randbytes(self._size())
            host = self._host(data)
            if len(self.hostfiles) < 40:
                self.hostfiles.append((host, data))
        if not self._room(len(data)):
            return None
        path = self._new_path()

        def apply(m):
            m.files[path] = bytearray(data)
        return Op(f"write {host} {path}", ["re:Allocated inode: \\d+"], apply)

    def op_reflink(self):
        src = self._pick_file()
        if src is None or len(self.m.files) >= self.MAX_FILES:
            return None
        if not self._room(len(self.m.files[src])):
            return None
        dst = self._new_path("r")
        flag = "-p " if self.rng.random() < 0.5 else ""
        n = len(self.m.files[src])

        def apply(m):
            m.files[dst] = bytearray(m.files[src])
        return Op(f"reflink {flag}{src} {dst}",
                  [f"linked {n}/{n} bytes at offset 0"], apply)

    def op_mkdir(self):
        if len(self.m.dirs) >= 10:
            return None
        parents = [d for d in self.m.dirs if d.count("/") <= 1 and
                   len(self.m.children(d)) < self.MAX_PER_DIR]
        parent = self.rng.choice(sorted(parents))
        path = parent.rstrip("/") + "/" + self._name("d")

        def apply(m):
            m.dirs.add(path)
        return Op(f"mkdir {path}", [], apply)

    def op_reflink_tree(self):
        cands = []
        for d in sorted(self.m.dirs - {"/"}):
            files = self.m.files_under(d)
            subdirs = self.m.dirs_under(d)
            if 1 <= len(files) <= 8 and d.count("/") == 1:
                cands.append((d, files, subdirs))
        if not cands or len(self.m.files) + 8 > self.MAX_FILES:
            return None
        if len(self.m.dirs) >= 12:
            return None
        d, files, subdirs = self.rng.choice(cands)
        size = sum(len(self.m.files[f]) for f in files)
        if not self._room(size):
            return None
        if len(self.m.children("/")) >= self.MAX_PER_DIR:
            return None
        dst = "/" + self._name("t")
        flag = "-p " if self.rng.random() < 0.5 else ""

        def apply(m):
            m.dirs.add(dst)
            for s in subdirs:
                m.dirs.add(dst + s[len(d):])
            for f in files:
                m.files[dst + f[len(d):]] = bytearray(m.files[f])
        return Op(f"reflink -r {flag}{d} {dst}", None, apply)

    def op_clone_range(self):
        src = self._pick_file(nonempty=True)
        if src is None:
            return None
        bs = self.m.bs
        ssize = len(self.m.files[src])
        dst = src if self.rng.random() < 0.15 else self._pick_file()
        dsize = len(self.m.files[dst])
        soff = self._align_down(self.rng.randrange(ssize))
        mode = self.rng.random()
        if mode < 0.2:
            length = 0                                   # to the source EOF
            real = ssize - soff
        elif mode < 0.4:
            real = length = ssize - soff                 # to EOF, maybe unaligned
        else:
            nblk = (ssize - soff) // bs
            if nblk == 0:
                real = length = ssize - soff
            else:
                real = length = bs * self.rng.randint(1, min(nblk, 64))
        # destination offset: inside, at or a little beyond its EOF
        limit = min(dsize + 16 * bs, self.MAX_FILE - real)
        if limit < 0:
            return None
        doff = self._align_down(self.rng.randint(0, limit))
        if real % bs:
            # an unaligned length must not end inside the destination
            lo = dsize - real
            if doff < lo:
                doff = lo + (-lo) % bs
        if dst == src:
            rl = real + (-real) % bs
            if not (doff + rl <= soff or soff + rl <= doff):
                return None
            if real % bs and doff + real < dsize:
                return None
        newsize = max(dsize, doff + real)
        if newsize > self.MAX_FILE or not self._room(newsize - dsize):
            return None

        def apply(m):
            data = bytes(m.files[src][soff:soff + real])
            _write_at(m.files[dst], doff, data)
        return Op(f"clone_range {src} {soff} {dst} {doff} {length}",
                  [f"re:linked {real}/{length} bytes at offset {doff}"]
                  if length else [f"re:linked {real}/\\d+ bytes at offset {doff}"],
                  apply)

    def _find_equal(self, src, dst):
        """An aligned (soff, doff, len) whose bytes are equal, or None."""
        bs = self.m.bs
        a, b = self.m.files[src], self.m.files[dst]
        index = collections.defaultdict(list)
        for off in range(0, len(a) - len(a) % bs, bs):
            index[bytes(a[off:off + bs])].append(off)
        starts = list(range(0, len(b) - len(b) % bs, bs))
        self.rng.shuffle(starts)
        for doff in starts[:200]:
            for soff in index.get(bytes(b[doff:doff + bs]), ()):
                if src == dst and soff == doff:
                    continue
                n = 1
                while (soff + (n + 1) * bs <= len(a) and
                       doff + (n + 1) * bs <= len(b) and
                       a[soff + n * bs:soff + (n + 1) * bs] ==
                       b[doff + n * bs:doff + (n + 1) * bs] and n < 64):
                    n += 1
                n = self.rng.randint(1, n)
                if src == dst and not (doff + n * bs <= soff or
                                       soff + n * bs <= doff):
                    continue
                return soff, doff, n * bs
        return None

    def op_dedupe(self):
        src = self._pick_file(nonempty=True)
        if src is None:
            return None
        bs = self.m.bs
        a = self.m.files[src]
        dst = self._pick_file(nonempty=True)
        b = self.m.files[dst]
        r = self.rng.random()
        found = None
        if r < 0.6:
            found = self._find_equal(src, dst)
        if found is None and r < 0.75 and src != dst and len(a) == len(b) \
                and len(a) % bs:
            # whole files ending unaligned at both EOFs
            found = (0, 0, len(a))
        if found is None:
            # any valid pair of ranges (usually different contents)
            nblk = min(len(a), len(b)) // bs
            if nblk == 0:
                return None
            n = self.rng.randint(1, min(nblk, 32))
            soff = bs * self.rng.randrange(len(a) // bs - n + 1)
            doff = bs * self.rng.randrange(len(b) // bs - n + 1)
            if src == dst and not (doff + n * bs <= soff or
                                   soff + n * bs <= doff):
                return None
            found = (soff, doff, n * bs)
        soff, doff, n = found
        same = a[soff:soff + n] == b[doff:doff + n]
        expect = ([f"deduped {n}/{n} bytes at offset {doff}"] if same
                  else ["dedupe: contents differ"])
        self.counts["dedupe_same" if same else "dedupe_differ"] += 1
        return Op(f"dedupe {src} {soff} {dst} {doff} {n}", expect,
                  lambda m: None)

    def op_pwrite(self):
        path = self._pick_file()
        if path is None:
            return None
        size = len(self.m.files[path])
        r = self.rng.random()
        if r < 0.15:
            off = size + self.rng.randrange(0, 200 * KIB)   # leaves a hole
        elif r < 0.3 and size:
            off = self._align_down(self.rng.randrange(size))
        else:
            off = self.rng.randrange(0, size + 1)
        length = self.rng.choice([1, self.rng.randrange(1, 2 * self.m.bs),
                                  self.rng.randrange(1, 32 * KIB),
                                  self.m.bs * self.rng.randint(1, 16)])
        if off + length > self.MAX_FILE:
            return None
        if not self._room(max(0, off + length - size)):
            return None
        if self.rng.random() < 0.3:
            byte = self.rng.randrange(256)
            data = bytes([byte]) * length
            cmd = f"pwrite -S 0x{byte:02x} {path} {off} {length}"
        else:
            data = self._randbytes(length)
            cmd = f"pwrite -i {self._host(data)} {path} {off} {length}"

        def apply(m):
            _write_at(m.files[path], off, data)
        return Op(cmd, [f"wrote {length}/{length} bytes at offset {off}"],
                  apply)

    def op_truncate(self):
        path = self._pick_file()
        if path is None:
            return None
        size = len(self.m.files[path])
        r = self.rng.random()
        if r < 0.55 and size:
            new = self.rng.randrange(0, size)
            if self.rng.random() < 0.3:
                new = self._align_down(new)
        else:
            new = size + self.rng.randrange(0, 100 * KIB)
        if new > self.MAX_FILE or not self._room(max(0, new - size)):
            return None

        def apply(m):
            buf = m.files[path]
            if new < len(buf):
                del buf[new:]
            else:
                buf.extend(bytes(new - len(buf)))
        return Op(f"truncate {path} {new}", [], apply)

    def op_punch(self):
        path = self._pick_file(nonempty=True)
        if path is None:
            return None
        size = len(self.m.files[path])
        off = self.rng.randrange(size)
        if self.rng.random() < 0.3:
            off = self._align_down(off)
        length = self.rng.choice([self.rng.randrange(1, 3 * self.m.bs),
                                  self.rng.randrange(1, size - off + 1),
                                  self.m.bs * self.rng.randint(1, 8)])

        def apply(m):
            buf = m.files[path]
            end = min(off + length, len(buf))
            buf[off:end] = bytes(end - off)
        return Op(f"punch {path} {off} {length}", [], apply)

    def op_unshare(self):
        path = self._pick_file(nonempty=True)
        if path is None:
            return None
        size = len(self.m.files[path])
        if self.rng.random() < 0.5:
            return Op(f"unshare {path}", [], lambda m: None)
        off = self.rng.randrange(size)
        length = self.rng.randrange(1, size - off + 1)
        return Op(f"unshare {path} {off} {length}", [], lambda m: None)

    def op_rm(self):
        path = self._pick_file()
        if path is None:
            return None

        def apply(m):
            del m.files[path]
        return Op(f"rm {path}", [], apply)

    def op_rmdir(self):
        empty = sorted(d for d in self.m.dirs - {"/"}
                       if not self.m.children(d))
        if not empty:
            return None
        d = self.rng.choice(empty)

        def apply(m):
            m.dirs.discard(d)
        return Op(f"rmdir {d}", [], apply)

    WEIGHTS = {
        "write": 12, "reflink": 8, "reflink_tree": 2, "mkdir": 2,
        "clone_range": 14, "dedupe": 10, "pwrite": 16, "truncate": 8,
        "punch": 8, "unshare": 5, "rm": 9, "rmdir": 1,
    }

    def next_op(self):
        names = list(self.WEIGHTS)
        weights = [self.WEIGHTS[n] for n in names]
        nfiles = len(self.m.files)
        full = (self.m.total_bytes() > 0.8 * self.budget or
                nfiles > 0.8 * self.MAX_FILES)
        if full:
            weights[names.index("rm")] *= 6
        if nfiles < 3:
            weights[names.index("write")] *= 6
        while True:
            name = self.rng.choices(names, weights)[0]
            op = getattr(self, "op_" + name)()
            if op is not None:
                self.counts[name] += 1
                if op.apply:
                    op.apply(self.m)
                return op


# ----------------------------------------------------------------------
# running requests

def split_output(stdout):
    """'-f' output -> list of (request, [output lines])."""
    out = []
    for line in stdout.splitlines():
        if line.startswith(ECHO):
            out.append((line[len(ECHO):], []))
        elif out:
            out[-1][1].append(line)
        else:
            out.append((None, [line]))
    return out


def run_batch(dbg, img, ops, workdir, context=""):
    """Run ops in one 'debugfs.extref -w -f'; check exit status and each
    request's output against what the model expects."""
    cmdfile = Path(workdir) / "batch.cmds"
    cmdfile.write_text("".join(op.cmd + "\n" for op in ops))
    res = subprocess.run([dbg, "-w", "-f", str(cmdfile), str(img)],
                         capture_output=True, text=True, timeout=600)
    where = f"{context}\nrequests of this batch:\n" + \
        "\n".join(op.cmd for op in ops)
    if res.returncode != 0 or res.stderr.strip():
        raise OpFailure(f"debugfs.extref -f exit {res.returncode}\n"
                        f"stderr:\n{res.stderr}\nstdout tail:\n"
                        f"{res.stdout[-3000:]}\n{where}")
    got = split_output(res.stdout)
    if [g[0] for g in got] != [op.cmd for op in ops]:
        raise OpFailure(f"echoed requests differ from those sent\n"
                        f"{res.stdout[-3000:]}\n{where}")
    for op, (_, lines) in zip(ops, got):
        if op.expect is None:
            continue
        ok = len(lines) == len(op.expect) and all(
            re.fullmatch(e[3:], l) if e.startswith("re:") else e == l
            for e, l in zip(op.expect, lines))
        if not ok:
            raise OpFailure(f"request {op.cmd!r} printed {lines!r}, "
                            f"expected {op.expect!r}\n{where}")
    return res


# ----------------------------------------------------------------------
# checks with tools that are not extref

_EX_LEAF = re.compile(r"^\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+(\d+)\s*-\s*(\d+)\s+"
                      r"(\d+)\s*-\s*(\d+)\s+(\d+)")


def used_inodes(img):
    """In-use inode numbers, from dumpe2fs's per-group free inode lists."""
    res = helpers.run(["dumpe2fs", str(img)])
    count = None
    free = set()
    for line in res.stdout.splitlines():
        s = line.strip()
        if s.startswith("Inode count:"):
            count = int(s.split(":")[1])
        elif s.startswith("Free inodes:"):
            for part in s.split(":", 1)[1].split(","):
                part = part.strip()
                if not part:
                    continue
                lo, _, hi = part.partition("-")
                free.update(range(int(lo), int(hi or lo) + 1))
    assert count, "no inode count in dumpe2fs output"
    return [i for i in range(1, count + 1) if i not in free]


def stock_mappings(img, workdir):
    """Every data-block mapping of every in-use inode, as stock debugfs
    lists the extent leaves: {inode: [(lblk, pblk, len)]}."""
    inos = used_inodes(img)
    cmdfile = Path(workdir) / "ex.cmds"
    cmdfile.write_text("".join(f"ex -l <{i}>\n" for i in inos))
    res = helpers.run(["debugfs", "-f", str(cmdfile), str(img)])
    maps = collections.defaultdict(list)
    cur = None
    for line in res.stdout.splitlines():
        m = re.match(r"^debugfs: ex -l <(\d+)>", line)
        if m:
            cur = int(m.group(1))
            continue
        m = _EX_LEAF.match(line)
        if m and cur is not None:
            lvl, maxlvl = int(m.group(1)), int(m.group(2))
            if lvl != maxlvl:
                continue
            lstart, pstart, pend, n = (int(m.group(3)), int(m.group(5)),
                                       int(m.group(6)), int(m.group(7)))
            assert pend - pstart + 1 == n, line
            maps[cur].append((lstart, pstart, n))
    return maps


def expected_records(maps):
    """Records the tree must hold: maximal runs of blocks with an equal
    count >= 2, counting every mapping of every block."""
    counts = collections.Counter()
    for exts in maps.values():
        for _, p, n in exts:
            for b in range(p, p + n):
                counts[b] += 1
    recs = []
    for b in sorted(k for k, c in counts.items() if c >= 2):
        c = counts[b]
        if recs and recs[-1][0] + recs[-1][1] == b and recs[-1][2] == c:
            recs[-1][1] += 1
        else:
            recs.append([b, 1, c])
    return [tuple(r) for r in recs]


def tree_records(dbg, img):
    res = helpers.run([dbg, "-R", "refcount", str(img)])
    lines = res.stdout.splitlines()
    assert lines and lines[0].split() == ["Start", "Length", "Count"], \
        res.stdout
    return [tuple(int(x) for x in line.split()) for line in lines[1:]
            if line.strip()]


def check_recount(dbg, img, workdir, context=""):
    """The tree equals a recount of all extent mappings (stock debugfs)."""
    want = expected_records(stock_mappings(img, workdir))
    got = tree_records(dbg, img)
    if got != want:
        gs, ws = set(got), set(want)
        raise OpFailure(
            f"refcount tree differs from a recount of the extent mappings\n"
            f"only in tree: {sorted(gs - ws)[:20]}\n"
            f"only in recount: {sorted(ws - gs)[:20]}\n{context}")
    return got


def check_fsck(img, context=""):
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    if res.returncode != 0:
        raise OpFailure("e2fsck -fn is not clean:\n" + helpers.describe(res)
                        + "\n" + context)


def blockcount(img, spec):
    """i_blocks (in 512-byte units) of an inode, per stock debugfs stat."""
    out = helpers.debugfs_stat(img, spec)
    m = re.search(r"Blockcount: (\d+)", out)
    assert m, out
    return int(m.group(1))


def free_blocks(img):
    return int(helpers.dumpe2fs_header(img)["Free blocks"])
