"""The superblock's lifetime-writes counter (s_kbytes_written) on images
with a journal.

libext2fs adds the bytes its io channel wrote to s_kbytes_written at
close, and the kernel counts every sector it writes (the journal's too).
Writes through the journal count the same way: the bytes written to the
journal, in place and as file data.  `dumpe2fs -h` "Lifetime writes" is
read before and after; the kernel's own count for the same write, on the
same geometry (a loop mount read-write), is the oracle.
"""

import os
import re

import pytest

import helpers

SIZE = 1_000_000


def lifetime_kb(img):
    out = helpers.run(["dumpe2fs", "-h", str(img)]).stdout
    m = re.search(r"^Lifetime writes:\s+(\d+) ([kMG])B$", out, re.M)
    assert m, out
    return int(m.group(1)) * {"k": 1, "M": 1024, "G": 1 << 20}[m.group(2)]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("kbytes") / "data"
    path.write_bytes(os.urandom(SIZE))
    return path


def ours(tmp_path, data, *mkfs_opts):
    img = tmp_path / f"ours{len(list(tmp_path.glob('ours*')))}.img"
    helpers.mkfs(img, "16M", "-q", *mkfs_opts)
    before = lifetime_kb(img)
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 f"write {data} /f", str(img)])
    helpers.e2fsck_fn(img)
    return img, lifetime_kb(img) - before


def kernel(tmp_path, data):
    img = tmp_path / "kernel.img"
    # inode tables and journal written by mke2fs, and noinit_itable: else
    # the kernel's ext4lazyinit thread zeroes the inode tables (1 MiB here)
    # after the mount, when it gets to it, and its writes count too
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-E",
                 "lazy_itable_init=0,lazy_journal_init=0", str(img), "16M"])
    before = lifetime_kb(img)
    with helpers.loop_mount(img, tmp_path / "mnt", "rw,noinit_itable"):
        (tmp_path / "mnt" / "f").write_bytes(data.read_bytes())
    return lifetime_kb(img) - before


def test_journaled_writes_count_as_the_kernel_counts(tmp_path, data):
    img, delta = ours(tmp_path, data)
    assert "has_journal" in helpers.run(["dumpe2fs", "-h",
                                         str(img)]).stdout
    want = kernel(tmp_path, data)
    # the data at least, and within a tenth (plus 64 KiB of metadata
    # and journal) of what the kernel counted for the same write
    assert delta >= SIZE // 1024, (delta, want)
    assert abs(delta - want) <= want // 10 + 64, (delta, want)


def test_journaled_and_ordered_paths_count_alike(tmp_path, data):
    _img, journaled = ours(tmp_path, data)
    _img, plain = ours(tmp_path, data, "-O", "^has_journal")
    assert plain >= SIZE // 1024
    assert abs(journaled - plain) <= plain // 10 + 64, (journaled, plain)


def test_an_operation_with_no_data_counts_its_journal(tmp_path, data):
    """A reflink writes metadata only: through the journal (descriptor,
    copies, commit block) and in place; both count."""
    img, _ = ours(tmp_path, data)
    before = lifetime_kb(img)
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "reflink /f /g", str(img)])
    after = lifetime_kb(img)
    journal_kb = len(helpers.journal_blocks(img))  # 1 KiB blocks
    assert 2 <= after - before < journal_kb, (before, after)
    helpers.e2fsck_fn(img)
