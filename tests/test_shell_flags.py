"""debugfs.extref's chattr and lsattr (extref_set_flags and
extref_get_flags): chattr(1)'s modes and letters, the flags ext4 lets a
user change, the refusals, and the identity's rules (--as): the owner,
CAP_LINUX_IMMUTABLE for i and a.  Checked with stock debugfs (the flags
word) and stock e2fsck -fn.  The mount's chattr is compared with the
kernel's ext4 in test_fuse.py."""

import re

import helpers

DBG = "debugfs.extref"


def dbg(img, *args):
    return helpers.run([helpers.binary(DBG), *args, str(img)], check=False)


def flags_of(img, path):
    out = helpers.run(["debugfs", "-R", f"stat {path}", str(img)]).stdout
    return int(re.search(r"Flags: 0x([0-9a-f]+)", out).group(1), 16)


def test_chattr_and_lsattr(tmp_path):
    img = tmp_path / "f.img"
    helpers.mkfs(img, "16M", "-q")
    src = tmp_path / "a"
    src.write_bytes(b"hello\n")
    assert dbg(img, "-w", "-R", f"write {src} a").returncode == 0
    assert dbg(img, "-w", "-R", "set_inode_field a uid 1000"
               ).returncode == 0
    base = flags_of(img, "/a")
    assert base & 0x80000                       # extents

    res = dbg(img, "-w", "-R", "chattr /a +iA")
    assert res.returncode == 0, helpers.describe(res)
    assert flags_of(img, "/a") == base | 0x10 | 0x80
    res = dbg(img, "-R", "lsattr /a")
    assert res.returncode == 0 and re.match(r"----i--A------e------- /a",
                                            res.stdout), res.stdout
    # the owner may not change i without CAP_LINUX_IMMUTABLE, nor
    # anything else on an immutable inode; with it, i may go
    res = dbg(img, "-w", "--as", "1000:1000", "-R", "chattr /a -i")
    assert res.returncode != 0 and "EPERM" in res.stderr, res.stderr
    res = dbg(img, "-w", "--as", "1000:1000", "--cap", "linux_immutable",
              "-R", "chattr /a -A")
    assert res.returncode != 0 and "EPERM" in res.stderr, res.stderr
    res = dbg(img, "-w", "--as", "1000:1000", "--cap", "linux_immutable",
              "-R", "chattr /a -i")
    assert res.returncode == 0, helpers.describe(res)
    # another user is not the owner
    res = dbg(img, "-w", "--as", "1001:1001", "-R", "chattr /a +d")
    assert res.returncode != 0 and "EPERM" in res.stderr, res.stderr
    # the owner changes the plain flags; = keeps the extents flag
    res = dbg(img, "-w", "--as", "1000:1000", "-R", "chattr /a =dS")
    assert res.returncode == 0, helpers.describe(res)
    assert flags_of(img, "/a") == 0x80000 | 0x40 | 0x8
    # data journaling and the extents flag are not changed here
    for mode in ("+j", "-e"):
        res = dbg(img, "-w", "-R", f"chattr /a {mode}")
        assert res.returncode != 0 and "EOPNOTSUPP" in res.stderr, mode
    res = dbg(img, "-w", "-R", "chattr /a +q")
    assert res.returncode != 0 and "bad mode" in res.stderr, res.stderr
    assert flags_of(img, "/a") == 0x80000 | 0x40 | 0x8
    helpers.e2fsck_fn(img)
