"""Quota: every operation charges the owners (issue 9, section 3).

The rule: every inode is charged its whole i_blocks and one inode to its
uid, gid and project id, as e2fsck computes usage; a reflinked file is
charged its full size to its owner, and a block two owners share is
charged to both.  The oracles are stock tools: the expected usage is
computed here from the block counts stock debugfs reads from each inode
(`stat`), and compared with what stock debugfs's `list_quota` reads from
the quota files; stock `e2fsck -fn` (which checks quota usage in pass 5)
must be clean after every operation.  A kernel read-only mount's `stat`
gives the same block counts (checked once).

Limits are enforced only with an identity set: tests/unit/quota_as runs
one library operation with an identity, and the shell's `--as` does the
same requests (test_shell_as_hard_limit).
"""

import os
import re
import subprocess

import pytest

import helpers

BS = 1024
QUOTA_AS = "tests/unit/quota_as"
DQUOT = 3          # quota_as's exit status for EDQUOT


def shell(img, *requests, check=True):
    """debugfs.extref -w IMG with each request in turn (one process)."""
    cmdfile = img.parent / (img.name + ".cmds")
    cmdfile.write_text("\n".join(requests) + "\n")
    return helpers.run([helpers.binary("debugfs.extref"), "-w", "-f",
                        str(cmdfile), str(img)], check=check)


def make_image(tmp_path, name="q.img", types="usrquota:grpquota:prjquota",
               size="16M"):
    img = tmp_path / name
    features = "quota,project" if "prjquota" in types else "quota"
    helpers.mkfs(img, size, "-q", "-b", str(BS), "-I", "256", "-O", features,
                 "-E", f"quotatype={types}")
    return img


def quota_inodes(img):
    hdr = helpers.dumpe2fs_header(img)
    return {int(hdr[k]) for k in ("User quota inode", "Group quota inode",
                                  "Project quota inode") if k in hdr}


def inode_table(img):
    """{ino: (uid, gid, projid, i_blocks)} of every inode in use, read by
    stock debugfs's stat."""
    hdr = helpers.dumpe2fs_header(img)
    count = int(hdr["Inode count"]) - int(hdr["Free inodes"])
    first = int(hdr.get("First inode", 11))
    # in-use inodes are dense near the start on these small images
    inos = [2] + list(range(first, first + count + 64))
    req = "\n".join(f"stat <{i}>" for i in inos) + "\n"
    res = subprocess.run(["debugfs", "-f", "-", str(img)], input=req,
                         capture_output=True, text=True,
                         env=dict(os.environ, DEBUGFS_PAGER="__none__",
                                  PAGER="cat"))
    assert res.returncode == 0, res.stderr
    table = {}
    for chunk in res.stdout.split("Inode: ")[1:]:
        ino = int(chunk.split()[0])
        links = int(re.search(r"Links: (\d+)", chunk).group(1))
        if links == 0:
            continue
        m = re.search(r"User:\s+(\d+)\s+Group:\s+(\d+)(?:\s+Project:\s+(\d+))?",
                      chunk)
        blocks = int(re.search(r"Blockcount: (\d+)", chunk).group(1))
        table[ino] = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0),
                      blocks)
    return table


def expected_usage(img):
    """{type: {id: (bytes, inodes)}}, as e2fsck charges (pass 1)."""
    skip = quota_inodes(img)
    usage = {"user": {}, "group": {}, "project": {}}
    for ino, (uid, gid, prj, blocks) in inode_table(img).items():
        if ino in skip:
            continue
        for t, i in (("user", uid), ("group", gid), ("project", prj)):
            b, n = usage[t].get(i, (0, 0))
            usage[t][i] = (b + blocks * 512, n + 1)
    return usage


def list_quota(img, qtype):
    """Stock debugfs list_quota: {id: (space, inodes, bsoft, bhard)}."""
    res = helpers.debugfs(img, f"list_quota {qtype}")
    rows = {}
    for line in res.stdout.splitlines()[1:]:
        f = line.split()
        if len(f) == 7 and f[0].isdigit():
            rows[int(f[0])] = (int(f[1]), int(f[4]), int(f[2]), int(f[3]))
    return rows


def check_quota(img, types=("user", "group", "project")):
    """The quota files hold exactly the usage the inodes add up to."""
    helpers.e2fsck_fn(img)
    want = expected_usage(img)
    for t in types:
        got = {i: (s, n) for i, (s, n, _, _) in list_quota(img, t).items()
               if s or n}
        assert got == want[t], f"{t} quota: files {got} != inodes {want[t]}"
    return want


def data(tmp_path, name, size, seed):
    p = tmp_path / name
    p.write_bytes(bytes((i * seed + i // 251) & 0xff for i in range(size)))
    return p


OPS = [
    # (shell requests, what it shows)
    (["chown 1000:100 /a"], "chown moves the usage"),
    (["reflink -p /a /a_snap"], "preserve mode: the owner pays again"),
    (["reflink /a /a_copy"], "copy mode: the caller (root) pays in full"),
    (["chown 1001:101 /a_copy"], "a shared file changes owner"),
    (["clone_range /a 0 /b 4096 16384"], "clone_range grows b"),
    (["dedupe /a 0 /c 0 40960"], "dedupe: usage unchanged"),
    (["pwrite /a_snap 0 8192"], "CoW write of shared blocks"),
    (["pwrite /b 200000 5000"], "write past EOF allocates"),
    (["truncate /a_snap 10000"], "truncate frees"),
    (["punch /b 0 8192"], "punch frees"),
    (["unshare /a_copy"], "unshare: blocks the file owns now"),
    (["mkdir /d", "symlink /d/l /a", "write {f} /d/e"], "create"),
    (["chown 1002:102 /d/e", "rm /a"], "unlink gives back"),
    (["reflink -r -p /d /d2"], "recursive preserve"),
    (["rm /d2/e", "rm /d2/l", "rmdir /d2"], "rmdir"),
    (["link /b /d/bl", "rename /d/bl /c"],
     "a hard link; a rename over another owner's file gives its usage back"),
    (["mknod /p p", "mknod /d/cd c 1 3", "mknod /dd d"], "mknod"),
    (["rename -x /p /dd", "rename /a_copy /p/x"], "exchange, move"),
    (["set_times /b 5 now"], "times: usage unchanged"),
    (["fallocate /b 300000 20000", "fallocate -z /a_snap 0 20000"],
     "fallocate allocates; zeroing shared blocks"),
]


def test_every_operation_charges_both_owners(tmp_path):
    img = make_image(tmp_path)
    fa = data(tmp_path, "fa", 60000, 7)
    fb = data(tmp_path, "fb", 30000, 11)
    shell(img, f"write {fa} /a", f"write {fb} /b", f"write {fa} /c",
          "chown 1003:103 /c")
    want = check_quota(img)
    for requests, what in OPS:
        before = want
        shell(img, *[r.format(f=fb) for r in requests])
        want = check_quota(img)
        if what.startswith("preserve mode"):
            # the snapshot shares every block of /a, yet 1000 pays twice
            assert want["user"][1000][0] == 2 * before["user"][1000][0]
        if what.startswith(("dedupe", "times")):
            assert want == before
        if what.startswith("a hard link"):
            assert 1003 in before["user"] and 1003 not in want["user"]


def test_reflink_charges_full_size_to_each_owner(tmp_path):
    img = make_image(tmp_path, types="usrquota:grpquota")
    shell(img, f"write {data(tmp_path, 'f', 81920, 3)} /a",
          "chown 1000:100 /a", "reflink -p /a /snap", "reflink /a /copy",
          "chown 1001:101 /copy")
    check_quota(img, ("user", "group"))
    rows = list_quota(img, "user")
    # 80 KiB of data: 1000 pays for a and its snapshot, 1001 for the
    # copy, though the three share one set of blocks
    assert rows[1000][0] >= 2 * 81920
    assert rows[1001][0] >= 81920
    assert rows[1000][0] == 2 * rows[1001][0]
    assert list_quota(img, "group")[100][0] == rows[1000][0]


def test_project_quota(tmp_path):
    """A project quota image made by mke2fs itself, then converted."""
    img = tmp_path / "p.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", str(BS), "-I", "256",
                 "-O", "quota,project", "-E", "quotatype=prjquota", "-F",
                 str(img), "16M"])
    helpers.mkfs(img, None, "-q", "--convert")
    res = shell(img, "list_quota user", check=False)
    assert res.returncode != 0 and "no user quota" in res.stderr
    shell(img, f"write {data(tmp_path, 'f', 50000, 5)} /a")
    shell(img, "set_inode_field /a projid 7")
    check_quota(img, ("project",))
    shell(img, "reflink -p /a /p", "clone_range /a 0 /p 0 0",
          "pwrite /p 0 4096")
    want = check_quota(img, ("project",))
    assert want["project"][7][1] == 2
    # the project quota file is no file to reflink, clone or write
    prj = int(helpers.dumpe2fs_header(img)["Project quota inode"])
    before = helpers.sha256(img)
    for req in (f"reflink <{prj}> /x", f"reflink -p <{prj}> /x",
                f"clone_range <{prj}> 0 /p 0 1024", f"pwrite <{prj}> 0 1",
                f"truncate <{prj}> 0", f"chown 1:1 <{prj}>"):
        res = shell(img, req, check=False)
        assert res.returncode == 1 and "Illegal inode" in res.stderr, \
            helpers.describe(res)
    assert helpers.sha256(img) == before


def test_convert_quota_of_tune2fs(tmp_path):
    """A plain ext4 image written by the kernel (rw mount, chown), then
    given quota by tune2fs (a kernel without CONFIG_QUOTA mounts quota
    and project images read-only only), converts; operations go on
    charging from there, and the kernel's read-only mount sees the block
    counts the quota files charge."""
    helpers.require_loop()
    img = tmp_path / "k.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", str(BS), "-I", "256",
                 "-F", str(img), "16M"])
    mnt = tmp_path / "mnt"
    blob = os.urandom(30000)
    with helpers.loop_mount(img, mnt, options="rw"):
        (mnt / "x").write_bytes(blob)
        os.chown(mnt / "x", 1000, 100)
        (mnt / "twin").write_bytes(blob)
        os.chown(mnt / "twin", 1005, 105)
    helpers.run(["tune2fs", "-O", "quota", "-Q", "usrquota,grpquota",
                 str(img)])
    helpers.e2fsck_fn(img)
    free = int(helpers.dumpe2fs_header(img)["Free blocks"])
    helpers.mkfs(img, None, "-q", "--convert", "--dedup=block")
    # the twins share their blocks now, and each owner still pays in full
    assert int(helpers.dumpe2fs_header(img)["Free blocks"]) > free
    want = check_quota(img, ("user", "group"))
    assert want["user"][1005] == want["user"][1000]
    shell(img, "reflink -p /x /y", "reflink /x /z")
    want = check_quota(img, ("user", "group"))
    assert want["user"][1000][1] == 2 and want["group"][100][1] == 2
    with helpers.loop_mount(img, mnt, options="ro"):
        st = [os.stat(mnt / n) for n in ("x", "y")]
    assert sum(s.st_blocks * 512 for s in st) == want["user"][1000][0]
    assert st[1].st_uid == 1000


def test_builder_with_quota(tmp_path):
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    blob = os.urandom(40000)
    for p in ("x", "d/y", "z"):
        (src / p).write_bytes(blob)
    os.chown(src / "x", 1000, 100)
    os.chown(src / "z", 1001, 101)
    img = tmp_path / "b.img"
    res = helpers.mkfs(img, "16M", "-q", "-d", str(src), "--dedup=block",
                       "-I", "256", "-O", "quota,project",
                       "-E", "quotatype=usrquota:grpquota:prjquota")
    # the builder's last step, e2fsck -fp indexing directories, found the
    # quota files true (it would have said so, and fixed them)
    assert "QUOTA" not in res.stdout + res.stderr, helpers.describe(res)
    want = check_quota(img)
    assert want["user"][1000][1] == 1 and want["user"][1001][1] == 1


def test_mkfs_rejects_bad_quotatype(tmp_path):
    img = tmp_path / "x.img"
    res = helpers.mkfs(img, "8M", "-O", "quota", "-E", "quotatype=usr",
                       check=False)
    assert res.returncode != 0 and "quotatype" in res.stderr
    assert not img.exists() or img.stat().st_size == 0


# ----- limits: an identity is refused, root charges past them -----

def quota_as(img, uid, gid, *op, caps="0"):
    return helpers.run([helpers.binary(QUOTA_AS), str(img), str(uid),
                        str(gid), caps, *map(str, op)], check=False)


@pytest.fixture
def limited(tmp_path):
    """1000 owns /a (40 KiB) and /s (shared with root's /r); 60 KiB
    hard limit, 2 inodes."""
    img = make_image(tmp_path, types="usrquota:grpquota")
    f = data(tmp_path, "f", 40960, 13)
    # / writable by 1000, who creates there (the permission model)
    shell(img, f"write {f} /a", "chown 1000:100 /a", f"write {f} /r",
          "reflink -p /r /s", "chown 1000:100 /s", "chmod 777 /")
    shell(img, "set_quota user 1000 0 100 0 3")
    check_quota(img, ("user", "group"))
    return img


REFUSED = [
    ("pwrite", "/a", 40960, 65536),
    ("clone", "/r", 0, "/a", 40960, 40960),
    ("reflink_p", "/a", "/", "a2"),
    ("reflink", "/r", "/", "mine"),
    ("chown", "/r", 1000, 100),
]


def test_mknod_and_fallocate_are_limited(limited):
    """1000 owns 2 inodes of 3 and 80 KiB of 100: a third inode is made,
    a fourth refused; a fallocate past the space limit is refused, one
    within it charged; the image unchanged by each refusal."""
    def as1000(req):
        return helpers.run([helpers.binary("debugfs.extref"), "-w", "--as",
                            "1000:100", "-R", req, str(limited)],
                           check=False)

    assert as1000("mknod /p1 p").returncode == 0
    for req in ("mknod /p2 p", "fallocate /a 40960 65536"):
        before = helpers.sha256(limited)
        res = as1000(req)
        assert "(EDQUOT)" in res.stderr, helpers.describe(res)
        assert helpers.sha256(limited) == before
    assert as1000("fallocate /a 40960 8192").returncode == 0
    check_quota(limited, ("user", "group"))
    assert list_quota(limited, "user")[1000][:2] == (88 * 1024, 3)


@pytest.mark.parametrize("op", REFUSED, ids=lambda o: o[0])
def test_hard_limit_refuses_unchanged(limited, op):
    """1000 uses 80 KiB of a 90 KiB hard limit; each op adds 40 KiB."""
    shell(limited, "set_quota user 1000 0 90 0 3")
    before = helpers.sha256(limited)
    # giving root's /r away takes CAP_CHOWN (else EPERM, before quota)
    caps = "chown" if op[0] == "chown" else "0"
    res = quota_as(limited, 1000, 100, *op, caps=caps)
    assert res.returncode == DQUOT, helpers.describe(res)
    assert "quota" in res.stderr.lower()
    assert helpers.sha256(limited) == before
    # root (CAP_SYS_RESOURCE) is not refused, and is charged
    res = quota_as(limited, 1000, 100, *op, caps=caps + ",resource")
    assert res.returncode == 0, helpers.describe(res)
    check_quota(limited, ("user", "group"))
    assert list_quota(limited, "user")[1000][0] > 90 * 1024


def test_unshare_and_cow_charge_nothing_new(limited):
    """/s shares all its blocks with /r and is charged for them already:
    unsharing it, or writing over it, replaces blocks one for one."""
    shell(limited, "set_quota user 1000 0 80 0 3")
    res = quota_as(limited, 1000, 100, "unshare", "/s")
    assert res.returncode == 0, helpers.describe(res)
    res = quota_as(limited, 1000, 100, "pwrite", "/a", 0, 40960)
    assert res.returncode == 0, helpers.describe(res)
    check_quota(limited, ("user", "group"))
    assert list_quota(limited, "user")[1000][0] == 80 * 1024


def test_inode_limit(limited):
    shell(limited, "set_quota user 1000 0 0 0 2")
    before = helpers.sha256(limited)
    res = quota_as(limited, 1000, 100, "create", "/", "new")
    assert res.returncode == DQUOT, helpers.describe(res)
    assert helpers.sha256(limited) == before
    shell(limited, "set_quota user 1000 0 0 0 3")
    res = quota_as(limited, 1000, 100, "create", "/", "new")
    assert res.returncode == 0, helpers.describe(res)
    check_quota(limited, ("user", "group"))


def test_mkdir_charges_its_owner(limited):
    """A directory an identity makes is its own (the kernel's owner):
    that owner's limit is the one checked, and it is charged."""
    used = list_quota(limited, "user")[1000][1]
    shell(limited, f"set_quota user 1000 0 0 0 {used}")
    before = helpers.sha256(limited)
    res = quota_as(limited, 1000, 100, "mkdir", "/", "dd")
    assert res.returncode == DQUOT, helpers.describe(res)
    assert helpers.sha256(limited) == before
    shell(limited, f"set_quota user 1000 0 0 0 {used + 1}")
    res = quota_as(limited, 1000, 100, "mkdir", "/", "dd")
    assert res.returncode == 0, helpers.describe(res)
    assert "User:  1000   Group:   100" in helpers.debugfs_stat(limited, "/dd")
    check_quota(limited, ("user", "group"))
    assert list_quota(limited, "user")[1000][1] == used + 1


def test_soft_limit_grace(limited):
    """Past the soft limit: allowed, and the grace time starts; once it
    is over, refused (the grace time is set back to the past here)."""
    shell(limited, "set_quota user 1000 90 0 0 0")
    res = quota_as(limited, 1000, 100, "pwrite", "/a", 40960, 20480)
    assert res.returncode == 0, helpers.describe(res)
    check_quota(limited, ("user", "group"))
    # the grace period of 1 week has started: a write goes on
    res = quota_as(limited, 1000, 100, "pwrite", "/a", 61440, 1024)
    assert res.returncode == 0, helpers.describe(res)
    # with the clock a week and a day later, the soft limit is hard
    later = {"SOURCE_DATE_EPOCH": str(int(__import__("time").time())
                                      + 8 * 86400)}
    before = helpers.sha256(limited)
    res = helpers.run([helpers.binary(QUOTA_AS), str(limited), "1000", "100",
                       "0", "pwrite", "/a", 62464, 4096], check=False,
                      env=later)
    assert res.returncode == DQUOT, helpers.describe(res)
    assert helpers.sha256(limited) == before
    check_quota(limited, ("user", "group"))


def test_no_identity_charges_past_limits(limited):
    shell(limited, "set_quota user 1000 0 50 0 1")
    shell(limited, "pwrite /a 0 200000", "reflink -p /a /a3")
    check_quota(limited, ("user", "group"))
    assert list_quota(limited, "user")[1000][0] > 50 * 1024


def test_many_ids_fill_the_tree(tmp_path):
    """Entries for ids spread over every byte of the id: new tree blocks,
    data blocks filled past their 14 entries, all read back by stock
    debugfs and accepted by stock e2fsck."""
    img = make_image(tmp_path, types="usrquota:grpquota")
    ids = list(range(1, 33)) + [255, 256, 65535, 65536, 70000, 1 << 24,
                                (1 << 24) + 5, 4294967294]
    cmds = [f"set_quota user {i} {i} {2 * i} {i % 7} {i % 11}" for i in ids]
    cmds += [f"set_quota group {i} 1 2 3 4" for i in ids[::3]]
    shell(img, *cmds)
    shell(img, f"write {data(tmp_path, 'f', 3000, 9)} /a",
          "chown 65536:1 /a")
    rows = list_quota(img, "user")
    for i in ids:
        assert rows[i][2:] == (i, 2 * i), (i, rows.get(i))
    ours = helpers.run([helpers.binary("debugfs.extref"), "-R",
                        "list_quota user", str(img)]).stdout
    stock = helpers.debugfs(img, "list_quota user").stdout
    assert ours.split() == stock.split()
    check_quota(img, ("user", "group"))


# ----- hostile quota files -----

def quota_file_offset(img, qtype_ino, offset):
    """Where byte offset of a quota inode is in the image (stock debugfs)."""
    res = helpers.debugfs(img, f"bmap <{qtype_ino}> {offset // BS}")
    return int(res.stdout.split()[0]) * BS + offset % BS


@pytest.mark.parametrize("offset,value", [
    (0, b"\0\0\0\0"),                 # magic
    (4, b"\x07\0\0\0"),               # version
    (20, b"\xff\xff\xff\x7f"),        # dqi_blocks past the file
    (24, b"\xff\xff\0\0"),            # free block out of range
    (1024, b"\x01\0\0\0"),            # root points at itself
])
def test_corrupt_quota_file_refused(tmp_path, offset, value):
    img = make_image(tmp_path, types="usrquota")
    shell(img, f"write {data(tmp_path, 'f', 5000, 3)} /a")
    with open(img, "r+b") as f:
        f.seek(quota_file_offset(img, 3, offset))
        f.write(value)
    before = helpers.sha256(img)
    res = shell(img, "set_quota user 4242 1 2 3 4", check=False)
    assert res.returncode != 0
    assert "quota" in (res.stderr + res.stdout).lower()
    # an operation is refused before it writes anything
    res = shell(img, f"write {tmp_path / 'f'} /b", check=False)
    assert res.returncode != 0 and "quota" in res.stderr.lower(), \
        helpers.describe(res)
    res = shell(img, "list_quota user", check=False)
    # refused or listed, never a crash
    assert res.returncode in (0, 1), helpers.describe(res)
    assert helpers.sha256(img) == before


def test_random_damage_never_crashes(tmp_path):
    """Random bytes over the quota files: every command either works or
    fails with a message (exit 1), never a crash; a refused change leaves
    the image as it was."""
    import random
    base = make_image(tmp_path, name="base.img")
    f = data(tmp_path, "f", 5000, 17)
    shell(base, f"write {f} /a", "set_quota user 70000 1 2 3 4",
          "set_quota group 1 5 6 7 8")
    offsets = []
    for ino in sorted(quota_inodes(base)):
        for lblk in range(4):
            res = helpers.debugfs(base, f"bmap <{ino}> {lblk}")
            blk = int(res.stdout.split()[0]) if res.stdout.strip() else 0
            if blk:
                offsets.append(blk * BS)
    assert offsets
    img = tmp_path / "d.img"
    for seed in range(24):
        rnd = random.Random(seed)
        img.write_bytes(base.read_bytes())
        with open(img, "r+b") as fh:
            for _ in range(rnd.randint(1, 6)):
                fh.seek(rnd.choice(offsets) + rnd.randrange(BS))
                fh.write(bytes([rnd.randrange(256)]) * rnd.choice((1, 4)))
        for req in ("list_quota user", "list_quota project",
                    f"write {f} /b", "chown 1234:5678 /a",
                    "set_quota group 99999 1 1 1 1", "rm /a"):
            before = helpers.sha256(img)
            res = shell(img, req, check=False)
            assert res.returncode in (0, 1), (seed, helpers.describe(res))
            if res.returncode:
                assert helpers.sha256(img) == before, (seed, req)


def test_quota_inode_must_be_its_own(tmp_path):
    """The superblock names the quota inodes: a user file (inode 3/4 are
    the only user and group quota inodes), or a project quota file whose
    blocks another file shares (written in place, it would change the
    other file), is refused before anything is written."""
    img = make_image(tmp_path, types="usrquota:prjquota")
    f = data(tmp_path, "f", 5000, 19)
    prj = int(helpers.dumpe2fs_header(img)["Project quota inode"])
    copy = tmp_path / "prj.quota"
    helpers.debugfs(img, f"dump <{prj}> {copy}")
    shell(img, f"write {f} /a", f"write {copy} /qf", "reflink -p /qf /qf2")
    qf = int(helpers.debugfs(img, "stat /qf").stdout.split()[1])
    cases = [("usr_quota_inum", qf), ("prj_quota_inum", qf)]
    for field, value in cases:
        case = tmp_path / f"{field}.img"
        case.write_bytes(img.read_bytes())
        helpers.run(["debugfs", "-w", "-R",
                     f"ssv {field} {value}", str(case)])
        before = helpers.sha256(case)
        for req in (f"write {f} /z", "pwrite /a 0 100", "chown 5:5 /a"):
            res = shell(case, req, check=False)
            assert res.returncode == 1, helpers.describe(res)
            assert "quota" in res.stderr.lower(), helpers.describe(res)
        assert helpers.sha256(case) == before, field
    # the same file as a quota file of its own is accepted
    case = tmp_path / "own.img"
    case.write_bytes(img.read_bytes())
    shell(case, "unshare /qf")
    helpers.run(["debugfs", "-w", "-R", f"ssv prj_quota_inum {qf}",
                 str(case)])
    shell(case, f"write {f} /z")


# ----- limits through the shell's identity (debugfs.extref --as) -----

SHELL_REFUSED = [
    ("pwrite /a 40960 65536", ""),
    ("clone_range /r 0 /a 40960 40960", ""),
    ("reflink -p /a /a2", ""),
    ("reflink /r /mine", ""),
    ("chown 1000:100 /r", "chown"),
]


@pytest.mark.parametrize("req,caps", SHELL_REFUSED,
                         ids=lambda x: x.split()[0] if " " in x else x)
def test_shell_as_hard_limit(limited, req, caps):
    """The same limits through debugfs.extref --as: EDQUOT named with the
    path, exit 1, the image unchanged; with CAP_SYS_RESOURCE it goes on."""
    shell(limited, "set_quota user 1000 0 90 0 3")
    before = helpers.sha256(limited)
    argv = [helpers.binary("debugfs.extref"), "-w", "--as", "1000:100"]
    res = helpers.run(argv + (["--cap", caps] if caps else [])
                      + ["-R", req, str(limited)], check=False)
    assert res.returncode != 0, helpers.describe(res)
    assert "quota exceeded" in res.stderr.lower(), res.stderr
    assert helpers.sha256(limited) == before
    res = helpers.run(argv + ["--cap", ",".join(filter(None, [caps,
                                                          "sys_resource"]))]
                      + ["-R", req, str(limited)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    check_quota(limited, ("user", "group"))
    assert list_quota(limited, "user")[1000][0] > 90 * 1024


def test_project_inherited(tmp_path):
    """As the kernel's __ext4_new_inode: a new inode in a directory with
    PROJINHERIT takes the directory's project id, a new directory there
    the flag too (so it passes on); elsewhere 0; a snapshot (-p) keeps
    its source's.  Read back with stock debugfs; stock e2fsck and
    list_quota agree on the usage."""
    projinherit = 0x20000000
    img = tmp_path / "p.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", str(BS), "-I", "256",
                 "-O", "quota,project", "-E",
                 "quotatype=usrquota:prjquota", "-F", str(img), "16M"])
    helpers.mkfs(img, None, "-q", "--convert")
    f = data(tmp_path, "f", 20000, 3)
    shell(img, "mkdir /p", f"write {f} /top", "mkdir /tree",
          f"write {f} /tree/x")
    flags = int(re.search(r"Flags: (0x[0-9a-f]+)",
                          helpers.debugfs_stat(img, "/p")).group(1), 16)
    shell(img, "set_inode_field /p projid 7",
          f"set_inode_field /p flags {flags | projinherit:#x}")
    shell(img, f"write {f} /p/a", "mkdir /p/d", f"write {f} /p/d/b",
          "symlink /p/l /top", "reflink /top /p/copy",
          "reflink -r /tree /p/tree", "reflink -p /top /p/snap",
          f"write {f} /outside")

    def stat(path):
        text = helpers.debugfs_stat(img, path)
        prj = re.search(r"Project:\s+(\d+)", text)
        fl = int(re.search(r"Flags: (0x[0-9a-f]+)", text).group(1), 16)
        return int(prj.group(1)) if prj else 0, bool(fl & projinherit)

    want = {"/p/a": (7, False), "/p/d": (7, True), "/p/d/b": (7, False),
            "/p/l": (7, False), "/p/copy": (7, False),
            "/p/tree": (7, True), "/p/tree/x": (7, False),
            "/p/snap": (0, False), "/outside": (0, False),
            "/tree/x": (0, False)}
    got = {p: stat(p) for p in want}
    assert got == want
    usage = check_quota(img, ("user", "project"))
    assert usage["project"][7][1] == 1 + len([p for p, w in want.items()
                                              if w[0] == 7])


@pytest.mark.skipif(helpers.fault_injection_skip_reason() is not None,
                    reason=str(helpers.fault_injection_skip_reason()))
def test_failed_quota_flush_keeps_the_changes_for_the_next(tmp_path):
    """Without a journal an operation's writes are in place before its
    quota flush: a flush that fails (here an allocation while summing the
    changes; an inode read error takes the same path) must keep what it
    recorded, so that the close's flush charges it.  The old code dropped
    every record: the created file was never charged and stock e2fsck -fn
    found the usage wrong (allocations 6 and 8 of this run)."""
    base = tmp_path / "q.img"
    helpers.mkfs(base, "16M", "-q", "-b", str(BS), "-I", "256", "-O",
                 "quota,^has_journal", "-E", "quotatype=usrquota:grpquota")
    small = tmp_path / "small"
    small.write_bytes(os.urandom(50000))
    failed = 0
    for n in range(1, 30):
        img = tmp_path / "t.img"
        img.write_bytes(base.read_bytes())
        res = helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                           f"write {small} /new", str(img)], check=False,
                          env={"EXTREF_FAULT_NOMEM": str(n)})
        failed += "Memory allocation failed" in res.stderr
        helpers.e2fsck_fn(img)
    assert failed >= 4, failed
