"""fsck.extref as a user of e2fsck expects it.

- Without -n, -p or -y on a terminal it asks before each repair (a pty
  stands in for the terminal): "no" changes nothing and exits 4, "yes"
  repairs and exits 1, "a" answers yes to everything after; e2fsck runs
  interactively first.  Off a terminal the same command checks only.
- A plain ext4 image says so in one line and exits as e2fsck did.
- -v names each pass once.
"""

import os
import pty
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import helpers

CASES = Path(__file__).resolve().parent / "fsck"


def fsck():
    return helpers.binary("fsck/fsck.extref")


def script(path, img, tmp):
    env = dict(os.environ, MKFS=helpers.binary("mkfs.extref"),
               DEBUGFS=helpers.binary("debugfs.extref"), TMP=str(tmp),
               IMG=str(img))
    res = subprocess.run(["sh", str(path)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, helpers.describe(res)


@pytest.fixture
def too_high(tmp_path):
    """The default case image with the /a /b record raised to 5."""
    img = tmp_path / "test.img"
    script(CASES / "build.default", img, tmp_path)
    script(CASES / "f_0302_count_too_high" / "corrupt", img, tmp_path)
    return img


def on_pty(argv, answers, timeout=60):
    """Run argv on a pseudo-terminal; answer each "<y>? " prompt in turn.
    Returns (exit status, everything printed, prompts seen)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    out, prompts, answers = b"", 0, list(answers)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
                if out.count(b"<y>? ") > prompts:
                    prompts = out.count(b"<y>? ")
                    os.write(fd, (answers.pop(0) if answers else "n")
                             .encode() + b"\n")
        else:
            os.kill(pid, 9)
            pytest.fail("fsck.extref on a terminal did not finish:\n" +
                        out.decode(errors="replace"))
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace"), \
        prompts


def test_terminal_no_changes_nothing(too_high):
    code, out, prompts = on_pty([fsck(), str(too_high)], ["n"])
    assert prompts == 1, out
    assert "0x0302 reference count too high" in out
    assert "Lower the count<y>? " in out
    assert out.rstrip().split("<y>? ", 1)[1].split("\n")[1].strip() == "no", out
    assert code == 4, out
    # (e2fsck, run read-write, stamps its check time in the superblock)
    res = helpers.run([fsck(), "-fn", str(too_high)], check=False)
    assert res.returncode == 4 and "0x0302" in res.stdout


def test_terminal_yes_repairs(too_high):
    code, out, prompts = on_pty([fsck(), str(too_high)], ["y"])
    assert prompts == 1 and code == 1, out
    assert "Pass 5" in out          # e2fsck ran on the same terminal
    res = helpers.run([fsck(), "-fn", str(too_high)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(too_high)


def test_terminal_yes_to_all(too_high, tmp_path):
    """Two problems, one tree rebuild: one question, 'a' answers it."""
    script(CASES / "f_0301_count_too_low" / "corrupt", too_high, tmp_path)
    code, out, prompts = on_pty([fsck(), str(too_high)], ["a"])
    assert prompts == 1, out
    assert "0x0302" in out and "0x0301" in out
    assert "2 problems of the reference-count tree above" in out
    assert "yes to all" in out and code == 1, out
    assert helpers.run([fsck(), "-fn", str(too_high)],
                       check=False).returncode == 0


def test_off_a_terminal_checks_only(too_high):
    before = helpers.sha256(too_high)
    res = helpers.run([fsck(), str(too_high)], check=False,
                      input="y\ny\n")
    assert res.returncode == 4, helpers.describe(res)
    assert "would lower the count" in res.stdout
    assert helpers.sha256(too_high) == before


def plain_ext4(tmp_path):
    img = tmp_path / "plain.img"
    helpers.run(["truncate", "-s", "16M", str(img)])
    helpers.run(["mke2fs", "-qF", "-t", "ext4", str(img)])
    return img


def test_plain_ext4_says_so(tmp_path):
    img = plain_ext4(tmp_path)
    res = helpers.run([fsck(), "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    lines = [ln for ln in res.stdout.splitlines() if "extref" in ln]
    assert lines == [f"{img}: not an extref image (no shared_blocks "
                     "feature, no tree in inode 5): "
                     "e2fsck's check is the whole check"], res.stdout


def test_plain_ext4_exits_as_e2fsck(tmp_path):
    img = plain_ext4(tmp_path)
    # a wrong link count on the root directory: e2fsck -n reports it
    helpers.run(["debugfs", "-w", "-R", "sif <2> links_count 7", str(img)])
    e2 = subprocess.run(["e2fsck", "-fn", str(img)], capture_output=True)
    ours = helpers.run([fsck(), "-fn", str(img)], check=False)
    assert e2.returncode == 4
    assert ours.returncode == e2.returncode, helpers.describe(ours)
    assert "not an extref image" in ours.stdout


def test_verbose_names_each_pass_once(tmp_path):
    img = tmp_path / "x.img"
    script(CASES / "build.default", img, tmp_path)
    res = helpers.run([fsck(), "-fnv", str(img)])
    for n in range(4):
        assert res.stdout.count(f"Pass R{n}:") == 1, res.stdout


def test_preen_leaves_a_fresh_build_alone(tmp_path):
    """A directory of several blocks leaves mkfs.extref -d indexed, as
    e2fsck -p would make it, so fsck.extref -p rewrites nothing but the
    superblock's check time and counters (block 0) and, since e2fsck
    wrote the superblock, the tree header's record of it (FORMAT.md
    section 11, "Foreign writers")."""
    src = tmp_path / "src"
    (src / "big").mkdir(parents=True)
    for i in range(400):
        (src / "big" / f"a-rather-long-file-name-number-{i:04d}").write_text(
            str(i))
    img = tmp_path / "x.img"
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-b", "4096",
                 "--dedup=file", "-d", str(src), str(img)], env=env)
    stat = helpers.debugfs(img, "stat /big").stdout
    assert "Flags: 0x1000" in stat or "Flags: 0x81000" in stat, stat
    helpers.e2fsck_fn(img)
    before = img.read_bytes()
    res = helpers.run([fsck(), "-p", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    after = img.read_bytes()
    bs = 4096
    changed = {i // bs for i in range(0, len(before), bs)
               if before[i:i + bs] != after[i:i + bs]}
    header = int(helpers.debugfs(img, "bmap <5> 0").stdout.strip())
    assert changed <= {0, header}, sorted(changed)
