"""Files unlinked while open kept on ext4's orphan list (issue 31),
through debugfs.extref's rm -k and orphan_release: the list as stock
dumpe2fs and debugfs read it, its release through the counts (by the
call, by the next writer's open, by fsck.extref -p before stock
e2fsck), and a damaged list refused with the image unchanged.  Judged
by stock e2fsck -fn, stock dumpe2fs and debugfs, and fsck.extref."""
import os
import re

import pytest

import crashlib
import helpers


def shell(img, *cmds, check=True):
    """debugfs.extref -w with the requests in one session."""
    res = crashlib.shell_op(list(cmds))(img)
    if check:
        assert res.returncode == 0, helpers.describe(res)
    return res


def free_blocks(img):
    return int(helpers.dumpe2fs_header(img)["Free blocks"])


def first_orphan(img):
    v = helpers.dumpe2fs_header(img).get("First orphan inode")
    return int(v) if v else None


@pytest.fixture
def pair(tmp_path):
    """An image with /a (600 KiB) and its free count, then /b a reflink
    of a with a block of its own: (img, data of a, free count before
    b)."""
    img = tmp_path / "o.img"
    helpers.mkfs(img, "32M", "-q")
    host = tmp_path / "a"
    data = os.urandom(600 * 1024)
    host.write_bytes(data)
    shell(img, f"write {host} /a")
    free0 = free_blocks(img)
    shell(img, "reflink /a /b", "pwrite -S 0x77 /b 8192 4096")
    return img, data, free0


def kept_ino(res):
    m = re.search(r"/b: inode (\d+) kept on the orphan list", res.stdout)
    assert m, helpers.describe(res)
    return int(m.group(1))


def ino_of(img, path):
    return int(re.search(r"Inode: (\d+)",
                         helpers.debugfs(img, f"stat {path}").stdout)[1])


def test_keep_then_release_in_one_session(pair):
    img, data, free0 = pair
    ino = ino_of(img, "/b")
    res = shell(img, "rm -k /b", f"orphan_release {ino}")
    assert kept_ino(res) == ino
    assert first_orphan(img) is None
    assert crashlib.checkers_clean(img) == []
    assert free_blocks(img) == free0
    assert helpers.debugfs_cat(img, "/a") == data
    # an inode not on the list (a's, or b's again) is refused
    for n in (ino, ino_of(img, "/a")):
        res = shell(img, f"orphan_release {n}", check=False)
        assert res.returncode != 0
        assert "not on the orphan list" in res.stdout + res.stderr
    assert crashlib.checkers_clean(img) == []
    assert helpers.debugfs_cat(img, "/a") == data


@pytest.mark.parametrize("by", ["fsck", "open"])
def test_orphan_left_released_first(pair, by):
    """An orphan left on the list (a crash while open) is released by
    fsck.extref -p before stock e2fsck, or by the next writer's open."""
    img, data, free0 = pair
    ino = kept_ino(shell(img, "rm -k /b"))
    # on the list as the kernel leaves an open unlinked inode
    assert first_orphan(img) == ino
    st = helpers.debugfs(img, f"stat <{ino}>").stdout
    assert re.search(r"Links: 0\b", st), st
    assert "b" not in helpers.debugfs(img, "ls /").stdout.split()
    # the kept inode's mappings are counted: fsck.extref's own passes
    # find the counts exact (stock e2fsck -n, which leaves the list to
    # a writable run, calls the inode deleted)
    assert crashlib.fsck_problems(img) == ([], 0)
    if by == "fsck":
        res = crashlib.fsck_run(img, "-p")
        assert res.returncode in (0, 1), helpers.describe(res)
        assert "orphan inodes" in res.stdout
        assert "Clearing orphaned inode" not in res.stdout
    else:
        shell(img, "stats")
    assert first_orphan(img) is None
    assert crashlib.checkers_clean(img) == []
    assert free_blocks(img) == free0
    assert helpers.debugfs_cat(img, "/a") == data


def damage(img, head):
    """The list's head a reserved inode, an inode with links (/a's), or
    a loop (the orphan b pointing at itself)."""
    if head == "loop":
        ino = kept_ino(shell(img, "rm -k /b"))
        helpers.run(["debugfs", "-w", "-R", f"sif <{ino}> dtime {ino}",
                     str(img)])
        value = str(ino)
    else:
        value = "2" if head == "2" else helpers.debugfs(
            img, "stat /a").stdout.split()[1]
    helpers.run(["debugfs", "-w", "-R", f"ssv last_orphan {value}",
                 str(img)])


@pytest.mark.parametrize("head", ["2", "linked", "loop"])
def test_damaged_list_refused_unchanged(pair, head):
    """A damaged list: the writer's open and fsck.extref -p refuse (-p
    exits 4 and asks for -y; stock e2fsck is not run on it: it would
    free the blocks of the orphans before the damage, shared ones too)
    and leave the image byte for byte as it was."""
    img, _, _ = pair
    damage(img, head)
    before = helpers.sha256(img)
    res = shell(img, "mkdir /x", check=False)
    assert res.returncode != 0
    assert "orphan list is damaged" in res.stdout + res.stderr, \
        helpers.describe(res)
    assert helpers.sha256(img) == before
    res = crashlib.fsck_run(img, "-p")
    assert res.returncode == 4, helpers.describe(res)
    assert "orphan list is damaged" in res.stdout + res.stderr
    assert "-y" in res.stderr
    assert helpers.sha256(img) == before


@pytest.mark.parametrize("head", ["2", "linked", "loop"])
def test_damaged_list_cut_by_y(pair, head):
    """fsck.extref -y cuts a damaged list: stock e2fsck clears the
    orphan it held and the count pass brings the counts down; both
    checkers clean, no list left (dumpe2fs), /a's bytes whole, the free
    count the one before b (stock dumpe2fs; b's own block freed)."""
    img, data, free0 = pair
    if head != "loop":
        shell(img, "rm /b")
    damage(img, head)
    res = crashlib.fsck_run(img, "-y")
    assert res.returncode in (0, 1), helpers.describe(res)
    assert "orphan list" in res.stdout and "cut" in res.stdout, res.stdout
    assert first_orphan(img) is None
    assert crashlib.checkers_clean(img) == []
    assert helpers.debugfs_cat(img, "/a") == data
    assert free_blocks(img) == free0


def test_kernel_ro_mount_leaves_the_list(pair, tmp_path):
    """The kernel's read-only loop mount neither releases nor trips on
    the list (its orphan cleanup skips a read-only device and an unknown
    read-only-compatible feature): after the unmount the image is byte
    for byte as it was; a's data read through it; fsck.extref -p then
    releases the list."""
    helpers.require_loop()
    img, data, free0 = pair
    kept_ino(shell(img, "rm -k /b"))
    before = helpers.sha256(img)
    mnt = tmp_path / "mnt"
    with helpers.loop_mount(img, mnt, options="ro"):
        assert (mnt / "a").read_bytes() == data
        assert sorted(p.name for p in mnt.iterdir()) == ["a", "lost+found"]
    assert helpers.sha256(img) == before
    res = crashlib.fsck_run(img, "-p")
    assert res.returncode in (0, 1), helpers.describe(res)
    assert first_orphan(img) is None
    assert crashlib.checkers_clean(img) == []
    assert free_blocks(img) == free0
