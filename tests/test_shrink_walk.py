"""mkfs.extref --shrink's walk (issue 32): one library call
(extref_build_shrink) that takes the image's lock first and opens the
image once; and --convert's (extref_build_convert), the same.  Oracles: strace (every openat of the image by the
mkfs.extref process itself: the lock's descriptor and one read-only
open, however many parts of the walk read it), stock e2fsck -fn and
dumpe2fs on the result.  The children (stock e2fsck -fn, mke2fs) open
what they open: they are not counted."""

import random
import re
import shutil

import pytest

import helpers

EPOCH = "1700000000"


def _image(tmp_path, journal=True):
    src = tmp_path / "src"
    src.mkdir()
    data = random.Random(4).randbytes(200000)
    (src / "a").write_bytes(data)
    (src / "b").write_bytes(data)
    (src / "d").mkdir()
    (src / "d" / "c").write_bytes(b"hello\n")
    img = tmp_path / "t.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096",
                 *([] if journal else ["-O", "^has_journal"]),
                 "-d", str(src), str(img), "32M"],
                env={"E2FSPROGS_FAKE_TIME": EPOCH})
    return img


def _opens_by_the_tool(trace, img):
    """The openat calls of img by the traced process itself (the first
    pid of the trace: the one strace started)."""
    lines = trace.read_text().splitlines()
    main = lines[0].split()[0]
    name = re.escape(f'"{img}"')
    return [l for l in lines if l.split()[0] == main and
            re.search(rf"open(at)?\((AT_FDCWD, )?{name},", l) and
            not re.search(r"= -1 ", l)]


@pytest.mark.parametrize("args", [["--convert", "--dedup=block"],
                                  ["--convert"]])
def test_shrink_opens_the_image_once(tmp_path, args):
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    img = _image(tmp_path)
    before = int(helpers.dumpe2fs_header(img)["Block count"])
    trace = tmp_path / "trace"
    res = helpers.run(["strace", "-f", "-qq", "-e", "trace=open,openat",
                       "-o", str(trace), helpers.binary("mkfs.extref"),
                       *args, "--shrink", "-q", str(img)], check=False,
                      env={"SOURCE_DATE_EPOCH": EPOCH,
                           **helpers.no_leak_check_env()})
    if res.returncode and "ptrace" in res.stderr:
        pytest.skip("strace cannot trace here: " + res.stderr.strip())
    assert res.returncode == 0, helpers.describe(res)
    opens = _opens_by_the_tool(trace, img)
    # the lock's descriptor (close-on-exec), then the one filesystem open
    assert len(opens) == 2, "\n".join(opens)
    assert "O_CLOEXEC" in opens[0] and "O_RDONLY" in opens[1], opens
    assert not any("O_RDWR" in l or "O_WRONLY" in l for l in opens), opens
    helpers.e2fsck_fn(img)
    after = helpers.dumpe2fs_header(img)
    assert int(after["Block count"]) < before // 2, after
    assert "shared_blocks" in helpers.dumpe2fs_features(img)
    assert not [p for p in tmp_path.iterdir() if ".shrink-" in p.name]


def test_a_replay_opens_it_again(tmp_path):
    """A journal that needs recovery: replayed (a read-write open of the
    library's), then the image opened once more for the rest."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    img = _image(tmp_path)
    blk = tmp_path / "blk"
    blk.write_bytes(b"j" * 4096)
    helpers.run(["debugfs", "-w", "-f", "-", str(img)],
                input=f"jo\njw -b 300 {blk}\njc\n")
    assert "needs_recovery" in helpers.dumpe2fs_features(img)
    trace = tmp_path / "trace"
    res = helpers.run(["strace", "-f", "-qq", "-e", "trace=open,openat",
                       "-o", str(trace), helpers.binary("mkfs.extref"),
                       "--convert", "--shrink", str(img)], check=False,
                      env={"SOURCE_DATE_EPOCH": EPOCH,
                           **helpers.no_leak_check_env()})
    if res.returncode and "ptrace" in res.stderr:
        pytest.skip("strace cannot trace here: " + res.stderr.strip())
    assert res.returncode == 0, helpers.describe(res)
    assert "journal recovered (1 transaction)" in res.stdout, res.stdout
    opens = _opens_by_the_tool(trace, img)
    rw = [i for i, l in enumerate(opens) if "O_RDWR" in l]
    # the lock, the first look, the replay's open(s), the open for the
    # rest; then, the image replaced, the summary's read (not -q)
    assert rw, "\n".join(opens)
    after_replay = opens[rw[-1] + 1:-1]
    assert len(after_replay) == 1 and "O_RDONLY" in after_replay[0], \
        "\n".join(opens)
    helpers.e2fsck_fn(img)


def test_convert_opens_the_image_once(tmp_path):
    """--convert: the lock's descriptor first (before the stock e2fsck
    -fn check, a child), then one read-write open for the whole
    conversion."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    img = _image(tmp_path)
    trace = tmp_path / "trace"
    res = helpers.run(["strace", "-f", "-qq", "-e", "trace=open,openat",
                       "-o", str(trace), helpers.binary("mkfs.extref"),
                       "--convert", "-q", str(img)], check=False,
                      env={"SOURCE_DATE_EPOCH": EPOCH,
                           **helpers.no_leak_check_env()})
    if res.returncode and "ptrace" in res.stderr:
        pytest.skip("strace cannot trace here: " + res.stderr.strip())
    assert res.returncode == 0, helpers.describe(res)
    opens = _opens_by_the_tool(trace, img)
    assert len(opens) == 2, "\n".join(opens)
    assert "O_CLOEXEC" in opens[0] and "O_RDONLY" in opens[0], opens
    assert "O_RDWR" in opens[1], opens
    # the e2fsck -fn child ran after the lock was taken
    lines = trace.read_text().splitlines()
    lock = next(i for i, l in enumerate(lines) if l == opens[0])
    child = [i for i, l in enumerate(lines) if "e2fsck" in l]
    assert child and child[0] > lock, "\n".join(lines[:lock + 1])
    helpers.e2fsck_fn(img)
    assert "shared_blocks" in helpers.dumpe2fs_features(img)
