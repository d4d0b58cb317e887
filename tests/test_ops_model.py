"""Model-based random test of the debugfs.extref change commands.

For each (block size, seed): thousands of random valid operations (write,
reflink copy/-p, recursive reflink, clone_range, dedupe, pwrite, truncate,
punch, unshare, rm, mkdir/rmdir) run in batches through
`debugfs.extref -w -f`, mirrored on a Python model of the file contents
(tests/opsmodel.py).  Every request must succeed and print what the model
predicts (for dedupe: "deduped" exactly when the model's bytes are equal).

Every CHECK_EVERY operations: stock e2fsck -fn and a recount of the refcount
tree from the extent mappings listed by stock debugfs.  At the end: every
file read with debugfs.extref cat, stock debugfs cat and a read-only kernel
loop mount equals the model; e2fsck; recount; then everything is removed
and the tree must be empty, the free block count back to its mkfs value
(less the blocks the tree file and the root directory kept: both only grow),
and e2fsck clean again.

EXTREF_MODEL_OPS and EXTREF_MODEL_SEEDS (comma list) override the defaults.
"""

import os
import random
import time

import pytest

import helpers
import opsmodel
from opsmodel import OpFailure


pytestmark = pytest.mark.slow     # OPS random operations

OPS = int(os.environ.get("EXTREF_MODEL_OPS", "4000"))
SEEDS = [int(s) for s in
         os.environ.get("EXTREF_MODEL_SEEDS", "1,2,3,4").split(",")]
BATCH = 100
CHECK_EVERY = 500
IMAGE_SIZE = "96M"
BUDGET = 28 * 1024 * 1024   # bound on the sum of the model's file sizes


def _context(seed, bs, done, history):
    return (f"seed {seed}, block size {bs}, after {done} operations; "
            f"reproduce with EXTREF_MODEL_SEEDS={seed}\nlast requests:\n"
            + "\n".join(history[-40:]))


def _read_all_ways(dbg, img, model, ctx):
    bad = []
    for path, data in sorted(model.files.items()):
        want = bytes(data)
        ours = helpers.run([dbg, "-R", f"cat {path}", str(img)],
                           text=False).stdout
        if ours != want:
            bad.append(f"debugfs.extref cat {path}: {len(ours)} bytes, "
                       f"model {len(want)}, first difference at "
                       f"{_first_diff(ours, want)}")
        stock = helpers.debugfs_cat(img, path)
        if stock != want:
            bad.append(f"stock debugfs cat {path}: {len(stock)} bytes, "
                       f"model {len(want)}, first difference at "
                       f"{_first_diff(stock, want)}")
    # unmounted again before the removals below: writers refuse a
    # mounted image
    mnt = img.parent / "mnt"
    with helpers.loop_mount(img, mnt):
        _kernel_reads(mnt, model, bad)
    if bad:
        raise OpFailure("\n".join(bad[:30]) + "\n" + ctx)


def _kernel_reads(mnt, model, bad):
    for path, data in sorted(model.files.items()):
        with open(str(mnt) + path, "rb") as f:
            kern = f.read()
        if kern != bytes(data):
            bad.append(f"kernel read {path}: {len(kern)} bytes, model "
                       f"{len(data)}, first difference at "
                       f"{_first_diff(kern, bytes(data))}")
    # the kernel sees exactly the model's files and directories
    seen_files, seen_dirs = set(), set()
    for root, dirs, files in os.walk(mnt):
        rel = "/" + os.path.relpath(root, mnt)
        rel = "/" if rel == "/." else rel
        for d in dirs:
            p = rel.rstrip("/") + "/" + d
            if p != "/lost+found":
                seen_dirs.add(p)
        for f in files:
            seen_files.add(rel.rstrip("/") + "/" + f)
    if seen_files != set(model.files):
        bad.append(f"kernel sees files {sorted(seen_files ^ set(model.files))}"
                   f" that differ from the model")
    if seen_dirs != model.dirs - {"/"}:
        bad.append(f"kernel sees dirs {sorted(seen_dirs ^ model.dirs)}"
                   f" that differ from the model")


def _first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bs", [1024, 4096])
def test_random_ops(tmp_path, bs, seed, loop_mount):
    dbg = helpers.binary("debugfs.extref")
    img = tmp_path / "model.img"
    helpers.mkfs(img, IMAGE_SIZE, "-b", str(bs), "-q")
    free0 = opsmodel.free_blocks(img)
    i5_0 = opsmodel.blockcount(img, "<5>")
    root0 = opsmodel.blockcount(img, "<2>")
    hostdir = tmp_path / "host"
    hostdir.mkdir()

    rng = random.Random(seed * 7919 + bs)
    model = opsmodel.Model(bs)
    gen = opsmodel.OpGenerator(rng, model, hostdir, BUDGET)
    history = []
    t0 = time.monotonic()
    done = 0
    while done < OPS:
        ops = [gen.next_op() for _ in range(min(BATCH, OPS - done))]
        history.extend(op.cmd for op in ops)
        ctx = _context(seed, bs, done + len(ops), history)
        opsmodel.run_batch(dbg, img, ops, tmp_path, ctx)
        done += len(ops)
        for p in hostdir.iterdir():      # batch host files are used up
            if all(p != h for h, _ in gen.hostfiles):
                p.unlink()
        if done % CHECK_EVERY == 0 and done < OPS:
            opsmodel.check_fsck(img, ctx)
            opsmodel.check_recount(dbg, img, tmp_path, ctx)

    ctx = _context(seed, bs, done, history)
    print(f"seed {seed} bs {bs}: {done} ops in {time.monotonic() - t0:.1f}s; "
          f"{len(model.files)} files, {model.total_bytes()} bytes; "
          f"op counts {dict(sorted(gen.counts.items()))}")
    # the run exercised what it claims to
    for name in ("write", "reflink", "reflink_tree", "clone_range",
                 "dedupe_same", "dedupe_differ", "pwrite", "truncate",
                 "punch", "unshare", "rm"):
        assert gen.counts[name] > 0, f"no {name} in {dict(gen.counts)}"

    opsmodel.check_fsck(img, ctx)
    recs = opsmodel.check_recount(dbg, img, tmp_path, ctx)
    assert recs, "nothing is shared at the end of a random run: " + ctx
    _read_all_ways(dbg, img, model, ctx)

    # remove everything; the space must come back
    cmds = [f"rm {p}" for p in sorted(model.files)]
    cmds += [f"rmdir {d}" for d in sorted(model.dirs - {"/"},
                                          key=lambda d: -d.count("/"))]
    ops = [opsmodel.Op(c, []) for c in cmds]
    for i in range(0, len(ops), BATCH):
        opsmodel.run_batch(dbg, img, ops[i:i + BATCH], tmp_path,
                           ctx + "\n(final removal)")
    assert opsmodel.tree_records(dbg, img) == [], \
        "refcount tree not empty after removing every file\n" + ctx
    spb = bs // 512
    grown = ((opsmodel.blockcount(img, "<5>") - i5_0) +
             (opsmodel.blockcount(img, "<2>") - root0)) // spb
    free1 = opsmodel.free_blocks(img)
    assert free1 == free0 - grown, (
        f"free blocks {free1} after removing everything; {free0} after mkfs, "
        f"less {grown} kept by the tree file and the root directory\n{ctx}")
    opsmodel.check_fsck(img, ctx)
    opsmodel.check_recount(dbg, img, tmp_path, ctx)
