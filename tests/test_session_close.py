"""The session's own edges (issue: opening an image, part 4).

- extref_tx_end without its extref_tx_begin is refused
  (EXT2_ET_INVALID_ARGUMENT) and leaves the transactions working: a later
  begin/end pair that ends with an error still rolls back.  Before, the
  depth went to -1 and every later operation wrote in place, outside the
  journal.
- The last flush of a close (the fsync after the final superblock) can
  fail: the close reports it, the tool exits non-zero.  Before,
  ext2fs_free ignored the channel's close and the tool said nothing.
"""

import subprocess

import pytest

import crashlib
import helpers

pytestmark = pytest.mark.skipif(helpers.fault_injection_skip_reason()
                                is not None, reason="needs the test build")


@pytest.fixture
def image(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(b"a" * 20000)
    img = tmp_path / "img"
    helpers.run([helpers.binary("mkfs.extref"), "-d", str(src), str(img),
                 "16M"])
    return img


def ls_root(img):
    return helpers.run(["debugfs", "-R", "ls -l /", str(img)]).stdout


def test_end_without_begin_is_refused(image):
    tool = helpers.BUILD_DIR / "tests/unit/tx_api"
    res = subprocess.run([str(tool), str(image), "unbalanced", "a"],
                         capture_output=True, text=True)
    assert "end without begin: Invalid argument passed to ext2 library" \
        in res.stdout, helpers.describe(res)
    assert "rollback:" in res.stdout and res.returncode == 0, \
        helpers.describe(res)
    # the unlink of the pair that ended with an error did not happen
    assert " a\n" in ls_root(image) or " a " in ls_root(image)
    helpers.run(["e2fsck", "-fn", str(image)])


def test_failed_final_flush_is_reported(image, tmp_path):
    host = tmp_path / "new"
    host.write_bytes(b"n" * 5000)
    request = f"write {host} /new"
    probe = tmp_path / "probe.img"
    probe.write_bytes(image.read_bytes())
    _, flushes = crashlib.count_writes(probe, request, tmp_path)
    assert flushes >= 1
    res, _ = crashlib.run_op(image, request, f"flusheio={flushes}")
    assert res.returncode != 0, helpers.describe(res)
    assert "Input/output error" in res.stderr, helpers.describe(res)
