"""A block freed and allocated again by its number inside one transaction
stays in use at the commit (libfs/txn/txn.c, deferred frees).

Blocks freed in a transaction stay marked in the bitmap until the commit
(so that nothing reuses them before), and the commit unmarks them.  The
shell's expert `set_block_bitmap -c` frees and allocates a block by its
number, through ext2fs_block_alloc_stats2; inside `begin` ... `commit`
both steps are one transaction.  Checked with stock debugfs (testb) and
both checkers.
"""

import os

import helpers


def shell(img, *reqs):
    script = img.parent / "cmds"
    script.write_text("\n".join(reqs) + "\n")
    return helpers.run([helpers.binary("debugfs.extref"), "-w", "-f",
                        str(script), str(img)], check=False)


def image(tmp_path):
    img = tmp_path / "b.img"
    helpers.mkfs(img, "16M", "-q")
    data = tmp_path / "a"
    data.write_bytes(os.urandom(20000))
    res = shell(img, f"write {data} /a")
    assert res.returncode == 0, helpers.describe(res)
    blk = int(helpers.debugfs(img, "bmap /a 0").stdout)
    return img, blk, data.read_bytes()


def in_use(img, blk):
    out = helpers.debugfs(img, f"testb {blk}").stdout
    assert "marked in use" in out or "not in use" in out, out
    return "not in use" not in out


def test_freed_then_allocated_again_stays_in_use(tmp_path):
    img, blk, data = image(tmp_path)
    res = shell(img, "begin", f"set_block_bitmap -c {blk} 0",
                f"set_block_bitmap -c {blk} 0",
                f"set_block_bitmap -c {blk} 1", "commit")
    assert res.returncode == 0, helpers.describe(res)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("block")]
    # inside the batch the shell sees the block free after the first
    # command, though the bitmap keeps it marked until the commit
    assert lines == [f"block {blk}: 1 -> 0 (free counts updated)",
                     f"block {blk}: already 0",
                     f"block {blk}: 0 -> 1 (free counts updated)"], lines
    assert in_use(img, blk)
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert helpers.debugfs_cat(img, "/a") == data


def test_freed_in_a_batch_is_free_after_the_commit(tmp_path):
    """The control: freed alone, the block is free once the batch
    commits (and stock e2fsck sees the file still mapping it)."""
    img, blk, _data = image(tmp_path)
    res = shell(img, "begin", f"set_block_bitmap -c {blk} 0", "commit")
    assert res.returncode == 0, helpers.describe(res)
    assert not in_use(img, blk)
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 4 and f"+{blk}" in res.stdout, \
        helpers.describe(res)


def test_rolled_back_batch_keeps_the_block(tmp_path):
    img, blk, data = image(tmp_path)
    before = helpers.sha256(img)
    res = shell(img, "begin", f"set_block_bitmap -c {blk} 0", "rollback")
    assert res.returncode == 0, helpers.describe(res)
    assert in_use(img, blk)
    assert helpers.sha256(img) == before
    helpers.e2fsck_fn(img)
