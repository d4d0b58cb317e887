"""mkfs.extref adds the tree without reading every bitmap (libfs/builder/lean.c).

After mke2fs, mkfs.extref loads only the block bitmap of the group the
tree's block comes from, and writes only that bitmap, the descriptor
blocks that changed (at each place a copy lives) and the superblocks;
before, it read and wrote every bitmap and every copy of the descriptors
(most of its time at 1 TiB).  Checked:

- the image is the one the full path makes: the same mke2fs output (kept
  by a wrapper mke2fs that copies the image aside) converted by
  `mkfs.extref --convert`, which reads every bitmap and lets libext2fs
  write them all, is byte for byte the image mkfs.extref made, but for
  the superblocks' count of bytes ever written (s_kbytes_written: fewer
  bytes were written) and their checksums; over geometries with one and
  many groups, 1 KiB and 4 KiB blocks, flex_bg or not, meta_bg, no
  metadata_csum, 1 TiB; stock e2fsck -fn passes on the image;
- at 1 TiB (8192 groups) mkfs.extref itself, after mke2fs, reads and
  writes a few dozen blocks (strace of the process), not the hundreds of
  bitmaps and 10 MiB of descriptor copies of the full path, and calls
  fsync once the image is complete, after its last write (mkfs/nosync.c),
  not between the steps (plus the one libext2fs makes as it opens).
"""
import os
import re
import shutil
import subprocess

import pytest

from helpers import binary, describe, e2fsck_fn, no_leak_check_env, run

UUID = "3f0d5a9e-1c2b-4d3e-8f70-112233445566"
SEED = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
EPOCH = "1700000000"

KBYTES_WRITTEN = range(0x178, 0x180)    # in each superblock
CHECKSUM = range(0x3FC, 0x400)


def _wrapper(tmp_path):
    """An mke2fs that runs the real one, then copies the image to $SNAP."""
    real = shutil.which("mke2fs") or "/sbin/mke2fs"
    w = tmp_path / "mke2fs-snap"
    w.write_text("#!/bin/sh\n"
                 f"{real} \"$@\" || exit $?\n"
                 "for a; do prev=$img; img=$a; done\n"
                 "cp --sparse=always \"$prev\" \"$SNAP\"\n")
    w.chmod(0o755)
    return w


def _data_ranges(fd, size):
    out, off = [], 0
    while off < size:
        try:
            d = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            break
        h = os.lseek(fd, d, os.SEEK_HOLE)
        out.append((d, h))
        off = h
    return out


def _differing(a, b):
    """Offsets where the two (sparse) files differ."""
    diffs = []
    with open(a, "rb") as fa, open(b, "rb") as fb:
        size = os.fstat(fa.fileno()).st_size
        assert size == os.fstat(fb.fileno()).st_size
        spans = sorted(_data_ranges(fa.fileno(), size) +
                       _data_ranges(fb.fileno(), size))
        end = 0
        for s, e in spans:
            s = max(s, end)
            while s < e:
                n = min(1 << 22, e - s)
                x = os.pread(fa.fileno(), n, s)
                y = os.pread(fb.fileno(), n, s)
                if x != y:
                    diffs += [s + i for i in range(n) if x[i] != y[i]]
                s += n
            end = max(end, e)
    return diffs


def _superblock_offsets(img):
    """Byte offsets of the primary and every backup superblock."""
    res = run(["dumpe2fs", str(img)])
    bs = int(re.search(r"^Block size:\s+(\d+)", res.stdout, re.M).group(1))
    offs = {1024}                               # the primary
    offs |= {int(m.group(1)) * bs for m in
             re.finditer(r"Backup superblock at (\d+)", res.stdout)}
    return offs


GEOMETRIES = [
    pytest.param("1G", [], id="1G"),
    pytest.param("64M", ["-b", "1024"], id="64M-1k"),
    pytest.param("2G", ["-b", "1024"], id="2G-1k"),
    pytest.param("1G", ["-O", "^flex_bg"], id="no-flex_bg"),
    pytest.param("1G", ["-O", "meta_bg,^resize_inode"], id="meta_bg"),
    pytest.param("2G", ["-O", "^metadata_csum,^has_journal"],
                 id="no-csum"),
    pytest.param("1T", [], id="1T"),
]


@pytest.mark.parametrize("size,opts", GEOMETRIES)
def test_same_image_as_full_path(tmp_path, size, opts):
    img, snap = tmp_path / "lean.img", tmp_path / "full.img"
    env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH, SNAP=str(snap),
               MKFS_EXTREF_MKE2FS=str(_wrapper(tmp_path)))
    cmd = [binary("mkfs.extref"), "-q", "-U", UUID, "-E",
           f"hash_seed={SEED}", *opts, str(img), size]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert res.returncode == 0, describe(res)
    assert snap.exists(), "the wrapper mke2fs did not run"
    # the full path: every bitmap read and written by libext2fs
    res = subprocess.run([binary("mkfs.extref"), "-q", "--convert",
                          str(snap)], env=dict(os.environ,
                                               SOURCE_DATE_EPOCH=EPOCH),
                         capture_output=True, text=True)
    assert res.returncode == 0, describe(res)
    e2fsck_fn(img)

    sbs = _superblock_offsets(img)
    allowed = {sb + r for sb in sbs for r in (*KBYTES_WRITTEN, *CHECKSUM)}
    diffs = _differing(img, snap)
    assert not [d for d in diffs if d not in allowed], \
        f"{len(diffs)} bytes differ, first {diffs[:8]}"


def _strace_files(prefix):
    d = prefix.parent
    return [d / f for f in os.listdir(d) if f.startswith(prefix.name + ".")]


def test_1t_reads_few_blocks(tmp_path):
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    img = tmp_path / "a.img"
    prefix = tmp_path / "tr"
    res = run(["strace", "-ff", "-e",
               "trace=execve,pread64,pwrite64,write,fsync",
               "-o", prefix, binary("mkfs.extref"), "-q", img, "1T"],
              check=False, env=no_leak_check_env())
    assert res.returncode == 0, describe(res)
    mine = [f for f in _strace_files(prefix)
            if "mkfs.extref" in f.read_text().split("\n", 1)[0]]
    assert len(mine) == 1, [f.name for f in _strace_files(prefix)]
    text = mine[0].read_text()
    reads = re.findall(r"^pread64\(\d+, .*, (\d+), \d+\) = \d+", text, re.M)
    writes = re.findall(r"^pwrite64\(\d+, .*, (\d+), \d+\) = \d+", text,
                        re.M)
    assert reads, text[:2000]                  # the pattern matched
    assert len(reads) <= 40, f"{len(reads)} reads"
    assert sum(map(int, writes)) <= 1 << 20, \
        f"{sum(map(int, writes))} bytes written in {len(writes)} writes"
    # one fsync when the image is complete, after the last write (and
    # the one libext2fs makes as it opens the file), not one per step
    calls = re.findall(r"^(fsync|pwrite64|write)\((\d+)", text, re.M)
    img_fd = [fd for name, fd in calls if name == "pwrite64"][-1]
    syncs = [i for i, (name, _) in enumerate(calls) if name == "fsync"]
    last_write = max(i for i, (name, fd) in enumerate(calls)
                     if name != "fsync" and fd == img_fd)
    assert 1 <= len(syncs) <= 2, calls
    assert syncs[-1] > last_write, calls
