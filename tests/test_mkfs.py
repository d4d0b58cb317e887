"""Integration tests of mkfs.extref, checked with stock e2fsprogs and the kernel.

    /usr/bin/python3 -m pytest tests/test_mkfs.py
"""

import os
import re
import uuid as uuidlib
from pathlib import Path

import pytest

import helpers as H
from crc32c import crc32c, crc32c_le

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TiB = 1024 * GiB

SIZES = {"8M": 8 * MiB, "1G": GiB, "1T": TiB}

BASE_FEATURES = {"shared_blocks", "extent", "64bit", "flex_bg",
                 "metadata_csum", "dir_index", "huge_file", "dir_nlink",
                 "extra_isize"}

EXT4_EXTENTS_FL = 0x80000  # EXT4_EXTENTS_FL


# ----- the image matrix: block size x journal x size -----

CONFIGS = [(bs, journal, size)
           for bs in (1024, 2048, 4096)
           for journal in (True, False)
           for size in ("8M", "1G")]
# 1 TiB images: sparse, but e2fsck of a 1 KiB-block 1 TiB image takes
# several seconds, so only the journal-less variant at 1024.
CONFIGS += [(4096, True, "1T"), (4096, False, "1T"), (1024, False, "1T")]


def config_id(cfg):
    bs, journal, size = cfg
    return f"{bs}-{'journal' if journal else 'nojournal'}-{size}"


class Image:
    def __init__(self, path, bs, journal, size, res):
        self.path = path
        self.bs = bs
        self.journal = journal
        self.size = size
        self.nbytes = SIZES[size]
        self.res = res
        self.workdir = path.parent
        self._header = None

    @property
    def header(self):
        if self._header is None:
            self._header = H.dumpe2fs_header(self.path)
        return self._header


@pytest.fixture(scope="module", params=CONFIGS, ids=config_id)
def image(request, tmp_path_factory, mkfs_bin):
    bs, journal, size = request.param
    d = tmp_path_factory.mktemp(config_id(request.param))
    img = d / "fs.img"
    opts = ["-q", "-b", str(bs)]
    if not journal:
        opts += ["-O", "^has_journal"]
    res = H.mkfs(img, size, *opts)
    yield Image(img, bs, journal, size, res)
    img.unlink(missing_ok=True)


def test_e2fsck_clean(image):
    H.e2fsck_fn(image.path)


def test_features(image):
    features = set(image.header["Filesystem features"].split())
    missing = BASE_FEATURES - features
    assert not missing, f"missing features {missing} in {sorted(features)}"
    if image.journal:
        assert "has_journal" in features
    else:
        assert "has_journal" not in features


def test_geometry(image):
    h = image.header
    assert int(h["Block size"]) == image.bs
    assert int(h["Block count"]) * image.bs == image.nbytes
    st = image.path.stat()
    assert st.st_size == image.nbytes
    if image.nbytes >= GiB:
        # Created sparse: far fewer bytes allocated than the size.
        assert st.st_blocks * 512 < image.nbytes // 4


def test_inode5_is_regular_extent_file(image):
    out = H.debugfs_stat(image.path, "<5>")
    assert re.search(r"Type:\s+regular\b", out), out
    m = re.search(r"Flags:\s+0x([0-9a-fA-F]+)", out)
    assert m, out
    assert int(m.group(1), 16) & EXT4_EXTENTS_FL, \
        f"inode 5 lacks the extents flag:\n{out}"
    assert "EXTENTS:" in out, out


def test_tree_header(image):
    data, hdr = H.read_tree_header(image.path, image.workdir)
    bs = image.bs
    assert data[:4] == b"XRFH"
    assert hdr["magic"] == H.EXTREF_HDR_MAGIC
    assert hdr["version"] == H.EXTREF_VERSION
    assert hdr["blocksize"] == bs
    assert hdr["uuid"] == H.fs_uuid(image.path, image.header)
    assert hdr["root"] == 0
    assert hdr["depth"] == 0
    assert hdr["nrecords"] == 0
    assert hdr["nblocks"] == 1
    assert hdr["free_head"] == 0
    assert hdr["free_count"] == 0
    assert (hdr["compat"], hdr["ro_compat"], hdr["incompat"]) == (0, 0, 0)
    assert all(r == 0 for r in hdr["reserved"])
    # The file holds at least the h_nblocks blocks the format uses, and the
    # rest of the header block is zero.
    assert len(data) >= hdr["nblocks"] * bs
    assert data[H.EXTREF_HDR_SIZE:bs] == bytes(bs - H.EXTREF_HDR_SIZE)
    H.check_header_csum(image.path, data, hdr, image.header)


def test_mount_ro(image, loop_mount):
    mnt, _ = loop_mount(image.path, "ro")
    assert "lost+found" in os.listdir(mnt)
    entry = H.mount_entry(mnt)
    assert entry is not None and "ro" in entry[3].split(",")


def test_mount_rw_refused(image, loop_mount):
    mnt, res = loop_mount(image.path, "rw", check=False)
    if res.returncode == 0:
        entry = H.mount_entry(mnt)
        assert entry is not None
        assert "ro" in entry[3].split(","), (
            "kernel mounted a shared_blocks image read-write: "
            f"{' '.join(entry)}")


# ----- the harness's own checks -----

def test_crc32c_known_vectors():
    assert crc32c(b"123456789") == 0xE3069283
    # The raw update has no inversions: chaining equals one pass.
    a = crc32c_le(0x12345678, b"abc")
    assert crc32c_le(a, b"def") == crc32c_le(0x12345678, b"abcdef")


def test_crc32c_matches_e2fsprogs(tmp_path, mkfs_bin):
    """Our crc32c_le reproduces the superblock checksum e2fsprogs wrote."""
    img = tmp_path / "fs.img"
    H.mkfs(img, "8M", "-q")
    ok, stored = H.superblock_csum_ok(img)
    assert ok, f"superblock checksum 0x{stored:08x} not reproduced"
    assert int(H.dumpe2fs_header(img)["Checksum"], 16) == stored


# ----- defaults follow mke2fs -t ext4 -----

COMPARED = ["Block size", "Block count", "Inode count", "Inode size",
            "Blocks per group", "Inodes per group", "Flex block group size",
            "Reserved block count", "Default mount options",
            "Total journal size"]


@pytest.mark.parametrize("size", ["8M", "1G"])
def test_defaults_follow_mke2fs(tmp_path, size, mkfs_bin):
    ours = tmp_path / "ours.img"
    stock = tmp_path / "stock.img"
    H.mkfs(ours, size, "-q")
    H.run(["mke2fs", "-q", "-F", "-t", "ext4", str(stock), size])
    a = H.dumpe2fs_header(ours)
    b = H.dumpe2fs_header(stock)
    assert set(a["Filesystem features"].split()) == \
        set(b["Filesystem features"].split()) | {"shared_blocks"}
    for key in COMPARED:
        assert a.get(key) == b.get(key), f"{key}: {a.get(key)} vs mke2fs {b.get(key)}"


# ----- reproducibility -----

FIXED_UUID = "0b1c2d3e-4f50-4162-8374-8596a7b8c9da"
FIXED_SEED = "deadbeef-0123-4567-89ab-cdef01234567"
EPOCH = 1700000000


def _repro(path, epoch):
    path.parent.mkdir(parents=True, exist_ok=True)
    H.mkfs(path, "64M", "-q", "-U", FIXED_UUID, "-E", f"hash_seed={FIXED_SEED}",
           env={"SOURCE_DATE_EPOCH": epoch})
    return H.sha256(path)


def test_reproducible(tmp_path, mkfs_bin):
    a = _repro(tmp_path / "a" / "fs.img", EPOCH)
    b = _repro(tmp_path / "b" / "fs.img", EPOCH)
    assert a == b, "same -U, hash_seed and SOURCE_DATE_EPOCH gave different images"
    c = _repro(tmp_path / "c" / "fs.img", EPOCH + 86400)
    assert c != a, "SOURCE_DATE_EPOCH had no effect on the image"
    H.e2fsck_fn(tmp_path / "a" / "fs.img")


def test_source_date_epoch_used_for_inode5(tmp_path, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, "8M", "-q", env={"SOURCE_DATE_EPOCH": EPOCH})
    out = H.debugfs_stat(img, "<5>")
    for field in ("ctime", "mtime"):
        m = re.search(rf"\b{field}:\s+0x([0-9a-f]+)", out)
        assert m, out
        assert int(m.group(1), 16) == EPOCH, f"inode 5 {field}:\n{out}"


# ----- options take effect -----

def test_label(tmp_path, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, "8M", "-q", "-L", "refdata")
    assert H.dumpe2fs_header(img)["Filesystem volume name"] == "refdata"
    H.e2fsck_fn(img)


def test_uuid(tmp_path, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, "8M", "-q", "-U", FIXED_UUID)
    h = H.dumpe2fs_header(img)
    assert h["Filesystem UUID"] == FIXED_UUID
    data, hdr = H.read_tree_header(img, tmp_path)
    assert hdr["uuid"] == uuidlib.UUID(FIXED_UUID).bytes
    H.check_header_csum(img, data, hdr, h)
    H.e2fsck_fn(img)


def test_hash_seed(tmp_path, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, "8M", "-q", "-E", f"hash_seed={FIXED_SEED}")
    assert H.dumpe2fs_header(img)["Directory Hash Seed"] == FIXED_SEED


def test_inode_count(tmp_path, mkfs_bin):
    """-N as in mke2fs: mke2fs rounds the per-group count to whole inode-table
    blocks, which can land slightly below N (64M, -N 5000 -> 4992), so the
    count is compared with stock mke2fs and required to be near N."""
    ours = tmp_path / "ours.img"
    stock = tmp_path / "stock.img"
    H.mkfs(ours, "64M", "-q", "-N", "5000")
    H.run(["mke2fs", "-q", "-F", "-t", "ext4", "-N", "5000", str(stock), "64M"])
    n = int(H.dumpe2fs_header(ours)["Inode count"])
    assert n == int(H.dumpe2fs_header(stock)["Inode count"])
    assert abs(n - 5000) <= 5000 // 20
    # The default for 64M (inode_ratio 4096) is 16384: -N must have mattered.
    H.e2fsck_fn(ours)


def test_bytes_per_inode(tmp_path, mkfs_bin):
    ours = tmp_path / "ours.img"
    stock = tmp_path / "stock.img"
    H.mkfs(ours, "64M", "-q", "-i", "65536")
    H.run(["mke2fs", "-q", "-F", "-t", "ext4", "-i", "65536", str(stock), "64M"])
    a = int(H.dumpe2fs_header(ours)["Inode count"])
    b = int(H.dumpe2fs_header(stock)["Inode count"])
    assert a == b
    assert a <= 64 * MiB // 65536 * 2


def test_inode_size(tmp_path, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, "8M", "-q", "-I", "512")
    h = H.dumpe2fs_header(img)
    assert int(h["Inode size"]) == 512
    data, hdr = H.read_tree_header(img, tmp_path)
    assert hdr["magic"] == H.EXTREF_HDR_MAGIC
    H.check_header_csum(img, data, hdr, h)
    H.e2fsck_fn(img)


@pytest.mark.parametrize("bs", [1024, 2048, 4096])
def test_plain_size_counts_blocks(tmp_path, bs, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, "16384", "-q", "-b", str(bs))
    h = H.dumpe2fs_header(img)
    assert int(h["Block count"]) == 16384
    assert img.stat().st_size == 16384 * bs


def test_plain_size_without_b_counts_kib(tmp_path, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, "65536", "-q")
    assert img.stat().st_size == 65536 * KiB
    h = H.dumpe2fs_header(img)
    assert int(h["Block count"]) * int(h["Block size"]) == 64 * MiB


@pytest.mark.parametrize("size,nbytes", [("16384K", 16 * MiB), ("16M", 16 * MiB),
                                         ("2G", 2 * GiB), ("2T", 2 * TiB)])
def test_size_suffixes(tmp_path, size, nbytes, mkfs_bin):
    img = tmp_path / "fs.img"
    H.mkfs(img, size, "-q", "-O", "^has_journal")
    assert img.stat().st_size == nbytes
    h = H.dumpe2fs_header(img)
    assert int(h["Block count"]) * int(h["Block size"]) == nbytes


def test_metadata_csum_seed(tmp_path, mkfs_bin):
    """With metadata_csum_seed the header checksum uses s_checksum_seed."""
    img = tmp_path / "fs.img"
    H.mkfs(img, "8M", "-q", "-O", "metadata_csum_seed")
    h = H.dumpe2fs_header(img)
    assert "metadata_csum_seed" in h["Filesystem features"].split()
    assert "Checksum seed" in h
    data, hdr = H.read_tree_header(img, tmp_path)
    H.check_header_csum(img, data, hdr, h)
    H.e2fsck_fn(img)


def test_quiet(tmp_path, mkfs_bin):
    res = H.mkfs(tmp_path / "fs.img", "8M", "-q")
    assert res.stdout == "" and res.stderr == "", H.describe(res)


def test_help(mkfs_bin):
    for flag in ("--help", "-h"):
        res = H.run([mkfs_bin, flag], check=False)
        assert res.returncode == 0, H.describe(res)
        assert re.search(r"[Uu]sage:.*mkfs\.extref", res.stdout), H.describe(res)
        assert "IMAGE" in res.stdout


def test_version(mkfs_bin):
    res = H.run([mkfs_bin, "-V"], check=False)
    assert res.returncode == 0, H.describe(res)
    assert re.search(r"mkfs\.extref.*\d+\.\d+", res.stdout + res.stderr), \
        H.describe(res)


# ----- bad input -----

def assert_one_line_error(res, *mentions):
    """Exit status 1, exactly one stderr line starting 'mkfs.extref:' that
    mentions at least one of the given strings."""
    assert res.returncode == 1, H.describe(res)
    lines = res.stderr.splitlines()
    assert len(lines) == 1, "expected exactly one line on stderr:\n" + H.describe(res)
    assert lines[0].startswith("mkfs.extref:"), H.describe(res)
    assert any(str(m) in lines[0] for m in mentions), (
        f"message should mention one of {mentions}:\n" + H.describe(res))


def make_random_file(path, nbytes=8 * MiB, head=64 * KiB):
    """A file of nbytes (sparse) whose first head bytes are random: no fs."""
    with open(path, "wb") as f:
        f.write(os.urandom(head))
        f.truncate(nbytes)
    return path


def make_stock_ext4(path, size="8M"):
    H.run(["mke2fs", "-q", "-F", "-t", "ext4", str(path), size])
    return path


BAD_OPTS = [
    pytest.param(["-b", "3000"], "3000", id="blocksize-3000"),
    pytest.param(["-b", "512"], "512", id="blocksize-512"),
    pytest.param(["-b", "8192"], "8192", id="blocksize-8192"),
    pytest.param(["-b", "abc"], "abc", id="blocksize-abc"),
    pytest.param(["-O", "nosuchfeature"], "nosuchfeature", id="feature"),
    # Not named in the brief, but covered by the general bad-input contract.
    pytest.param(["-U", "not-a-uuid"], "not-a-uuid", id="uuid"),
    pytest.param(["-E", "hash_seed=bogus"], "bogus", id="hash_seed"),
]


@pytest.mark.parametrize("opts,bad", BAD_OPTS)
def test_bad_option_new_file(tmp_path, opts, bad, mkfs_bin):
    img = tmp_path / "new.img"
    res = H.mkfs(img, "8M", *opts, check=False)
    assert_one_line_error(res, bad)
    assert not img.exists(), "failed mkfs left the image behind"


@pytest.mark.parametrize("opts,bad", BAD_OPTS)
def test_bad_option_existing_file(tmp_path, opts, bad, mkfs_bin):
    img = make_random_file(tmp_path / "old.img")
    before = H.sha256(img)
    res = H.mkfs(img, None, *opts, check=False)
    assert_one_line_error(res, bad)
    assert H.sha256(img) == before, "failed mkfs modified the existing file"


@pytest.mark.parametrize("size", ["16K", "12Q", "0"])
def test_bad_size_new_file(tmp_path, size, mkfs_bin):
    img = tmp_path / "new.img"
    res = H.mkfs(img, size, check=False)
    assert_one_line_error(res, img, size, img.name)
    assert not img.exists(), "failed mkfs left the image behind"


def test_existing_file_too_small(tmp_path, mkfs_bin):
    img = make_random_file(tmp_path / "old.img", nbytes=16 * KiB, head=16 * KiB)
    before = H.sha256(img)
    res = H.mkfs(img, None, check=False)
    assert_one_line_error(res, img, img.name)
    assert H.sha256(img) == before
    assert img.stat().st_size == 16 * KiB


def test_missing_size_for_new_image(tmp_path, mkfs_bin):
    img = tmp_path / "new.img"
    res = H.mkfs(img, None, check=False)
    assert_one_line_error(res, img, img.name)
    assert not img.exists()


def test_unwritable_proc(mkfs_bin):
    res = H.mkfs("/proc/x.img", "8M", check=False)
    assert_one_line_error(res, "/proc/x.img")
    assert not Path("/proc/x.img").exists()


def test_unwritable_missing_dir(tmp_path, mkfs_bin):
    img = tmp_path / "nodir" / "x.img"
    res = H.mkfs(img, "8M", check=False)
    assert_one_line_error(res, img)
    assert not img.parent.exists()


@pytest.mark.parametrize("size", [None, "8M"])
@pytest.mark.parametrize("maker", ["stock-ext4", "extref"])
def test_existing_filesystem_refused(tmp_path, size, maker, mkfs_bin):
    img = tmp_path / "old.img"
    if maker == "stock-ext4":
        make_stock_ext4(img)
    else:
        H.mkfs(img, "8M", "-q")
    before = H.sha256(img)
    res = H.mkfs(img, size, "-q", check=False)
    assert_one_line_error(res, img, img.name)
    assert H.sha256(img) == before, "existing filesystem was modified without -F"


def test_force_overwrites_filesystem(tmp_path, mkfs_bin):
    img = make_stock_ext4(tmp_path / "old.img")
    old_uuid = H.dumpe2fs_header(img)["Filesystem UUID"]
    assert "shared_blocks" not in H.dumpe2fs_features(img)
    res = H.mkfs(img, None, "-q", "-F", check=False)
    assert res.returncode == 0, H.describe(res)
    h = H.dumpe2fs_header(img)
    assert "shared_blocks" in h["Filesystem features"].split()
    assert h["Filesystem UUID"] != old_uuid
    data, hdr = H.read_tree_header(img, tmp_path)
    assert hdr["magic"] == H.EXTREF_HDR_MAGIC
    assert hdr["uuid"] == H.parse_uuid(h["Filesystem UUID"])
    H.check_header_csum(img, data, hdr, h)
    H.e2fsck_fn(img)


def test_non_fs_file_is_used(tmp_path, mkfs_bin):
    """An existing file holding no filesystem is formatted at its size."""
    img = make_random_file(tmp_path / "old.img", nbytes=8 * MiB)
    H.mkfs(img, None, "-q")
    assert img.stat().st_size == 8 * MiB
    assert "shared_blocks" in H.dumpe2fs_features(img)
    H.e2fsck_fn(img)
