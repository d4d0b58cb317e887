"""The library's one extent walk (libfs/extent/extent_walk.c, public
extref_iterate_extents) on a file whose extent tree has an index level:
the shell's blocks (leaf extents) and icheck (index entries too, through
EXTREF_EXTENTS_INDEX) against stock debugfs on the same image, and the
file read back through the library (pread, which walks the same tree)
against stock debugfs's cat.

Oracle: stock debugfs (blocks, icheck, ex, cat); stock e2fsck -fn.
"""

import pytest

import helpers as H

BS = 1024


def ours(img, request):
    return H.run([H.binary("debugfs.extref"), "-R", request, str(img)])


def stock(img, request):
    return H.run(["debugfs", "-R", request, str(img)])


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    """/f: 120 KiB with every other block punched: 60 extents, more than
    the inode holds, so its tree has an index level."""
    tmp = tmp_path_factory.mktemp("walk")
    img = tmp / "d.img"
    H.mkfs(img, "16M", "-q")
    src = tmp / "big"
    src.write_bytes(bytes(range(256)) * (120 * BS // 256))
    script = f"write {src} /f\n" + "".join(
        f"punch /f {i * BS} {BS}\n" for i in range(0, 120, 2))
    H.run([H.binary("debugfs.extref"), "-w", "-f", "-", str(img)],
          input=script)
    H.e2fsck_fn(img)
    return img


def index_blocks(img):
    """Extent blocks of /f, from stock debugfs's ex (level 0 of 1)."""
    out = stock(img, "ex /f").stdout.splitlines()
    assert out[0].split()[0] == "Level", out
    rows = [l.split() for l in out[1:] if l.strip()]
    assert any(r[0] == "1/" for r in rows), "no index level:\n" + "\n".join(out)
    return [int(r[-2]) for r in rows if r[0] == "0/"]


def test_blocks_match_stock(deep):
    """blocks prints what stock debugfs prints: every data block and the
    extent tree's index-level blocks, in libext2fs's iteration order."""
    idx = index_blocks(deep)
    theirs = stock(deep, "blocks /f").stdout
    assert ours(deep, "blocks /f").stdout == theirs
    mine = [int(b) for b in theirs.split()]
    assert len(mine) == 60 + len(idx) and set(idx) <= set(mine)


def test_icheck_names_index_and_data_blocks_as_stock(deep):
    idx = index_blocks(deep)
    data = [int(b) for b in ours(deep, "blocks /f").stdout.split()
            if int(b) not in idx]
    req = "icheck " + " ".join(str(b) for b in idx + data[:3] + data[-2:])
    assert ours(deep, req).stdout == stock(deep, req).stdout


def test_read_back_through_the_walk(deep, tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    H.run([H.binary("debugfs.extref"), "-R", f"dump /f {mine}", str(deep)])
    H.run(["debugfs", "-R", f"dump /f {theirs}", str(deep)])
    assert mine.read_bytes() == theirs.read_bytes()
    want = bytearray(bytes(range(256)) * (120 * BS // 256))
    for i in range(0, 120, 2):
        want[i * BS:(i + 1) * BS] = bytes(BS)
    assert mine.read_bytes() == bytes(want)
