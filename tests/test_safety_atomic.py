"""An operation that fails leaves the image as it was.

Each case makes a hostile or full image with stock tools (debugfs -w, dd)
and the shell's own commands, runs one operation that must be refused,
and checks with stock tools that the image file is byte for byte what it
was (the refused operation writes nothing), that the other files read back
the same through stock debugfs, and that after fsck.extref -y both
checkers (stock e2fsck -fn and fsck.extref -fn) end clean.

  clone_range into a file whose extent root has eh_entries > eh_max (the
    splice walked entries past the inode: a stack overflow under ASan; run
    on the sanitized build too), or whose extent leaf has a bad checksum
    (it was re-stamped) or eh_entries > eh_max (a heap overflow);
  punch on a full filesystem (partial shared blocks need copies);
  rm and pwrite with a damaged node of the reference-count tree (the
    count change stopped after the name or the mappings were gone);
  reflink -r with fewer free inodes than the copy needs (it stopped
    half-way, with a partial tree and counts raised).
"""

import re

import pytest

import helpers

BS = 1024
SAN_ENV = {
    "ASAN_OPTIONS": "exitcode=99:detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "halt_on_error=1:exitcode=98:print_stacktrace=1",
}
SAN_REPORT = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|"
                        r"runtime error:")


def dbg():
    return helpers.binary("debugfs.extref")


def fsck():
    return helpers.binary("fsck/fsck.extref")


def dx(img, *cmds, tool=None, env=None, check=True):
    """Requests through 'debugfs.extref -w -f -'."""
    cmd = [tool or dbg(), "-w", "-f", "-", str(img)]
    return helpers.run(cmd, check=check, env=env, timeout=60,
                       input="".join(c + "\n" for c in cmds))


def host(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def rand(n, seed):
    import random
    return random.Random(seed).randbytes(n)


def stock_w(img, request):
    """Stock debugfs -w -R REQUEST (the damage is made with it)."""
    helpers.run(["debugfs", "-w", "-R", request, str(img)], timeout=60)


def refused(img, request, pattern, tool=None, env=None):
    """request must fail with a message matching pattern, writing nothing."""
    before = helpers.sha256(img)
    res = dx(img, request, tool=tool, env=env, check=False)
    assert res.returncode != 0, f"{request!r} was accepted:\n" + \
        helpers.describe(res)
    assert not SAN_REPORT.search(res.stderr), helpers.describe(res)
    assert res.returncode not in (98, 99), helpers.describe(res)
    assert re.search(pattern, res.stderr, re.I), \
        f"{request!r}: message does not match {pattern!r}:\n" + \
        helpers.describe(res)
    assert helpers.sha256(img) == before, f"{request!r} changed the image"
    return res


# A writer's open refuses an image whose extent trees do not read whole
# (the open-time check of the tree against every mapping); the library
# opened with EXTREF_OPEN_TRUSTED skips that check, and the operation's
# own reader must refuse (tests/unit/trusted_op).
OPEN_REFUSAL = r"run fsck.extref -y before writing"


def refused_trusted(img, args, pattern, tool=None, env=None):
    """The operation through the library, open-time check skipped: it
    fails with a message matching pattern, writing nothing."""
    before = helpers.sha256(img)
    res = helpers.run([tool or helpers.binary("tests/unit/trusted_op"),
                       str(img), *args], check=False, env=env, timeout=60)
    assert res.returncode == 1, helpers.describe(res)
    assert not SAN_REPORT.search(res.stderr), helpers.describe(res)
    assert re.search(pattern, res.stderr, re.I), helpers.describe(res)
    assert helpers.sha256(img) == before, f"{args!r} changed the image"


# the sanitized copy is built once a session (conftest.py's san_build)
BUILDS = ["plain", pytest.param("asan", marks=[pytest.mark.sanitizers,
                                               pytest.mark.slow])]


def tools(build, request):
    """(debugfs.extref, trusted_op, env) of the plain or sanitized build."""
    if build == "asan":
        b = request.getfixturevalue("san_build")
        return b["debugfs"], b["trusted_op"], SAN_ENV
    return None, None, None


def same_bytes(img, files):
    for path, data in files.items():
        assert helpers.debugfs_cat(img, path) == data, \
            f"{path} reads back changed"


def repaired_clean(img):
    """fsck.extref -y, then both checkers clean."""
    res = helpers.run([fsck(), "-fy", str(img)], check=False, timeout=120)
    assert res.returncode in (0, 1), helpers.describe(res)
    helpers.e2fsck_fn(img)
    res = helpers.run([fsck(), "-fn", str(img)], check=False, timeout=120)
    assert res.returncode == 0, helpers.describe(res)


def both_clean(img):
    helpers.e2fsck_fn(img)
    res = helpers.run([fsck(), "-fn", str(img)], check=False, timeout=120)
    assert res.returncode == 0, helpers.describe(res)


# ----------------------------------------------------------------------
# clone_range into a file with a corrupt extent header

def striped(tmp_path, nblk=200):
    """/a (nblk blocks) and /b whose even blocks are cloned from /a: /b
    has nblk/2 + 1 extents (an extent leaf block below its inode) and the
    tree nblk/2 records (two levels on 1 KiB blocks)."""
    img = tmp_path / "s.img"
    helpers.mkfs(img, "8M", "-b", str(BS), "-q")
    a = rand(nblk * BS, 1)
    b = rand(nblk * BS, 2)
    cmds = [f"write {host(tmp_path, 'a', a)} /a",
            f"write {host(tmp_path, 'b', b)} /b"]
    cmds += [f"clone_range /a {i * BS} /b {i * BS} {BS}"
             for i in range(0, nblk, 2)]
    dx(img, *cmds)
    b = bytearray(b)
    for i in range(0, nblk, 2):
        b[i * BS:(i + 1) * BS] = a[i * BS:(i + 1) * BS]
    both_clean(img)
    return img, {"/a": a, "/b": bytes(b)}


def leaf_block(img, path):
    """Physical block of the extent leaf below path's inode (stock debugfs)."""
    out = helpers.debugfs(img, f"ex {path}").stdout
    m = re.search(r"^\s*0/\s*1\s+\d+/\s*\d+\s+\d+\s*-\s*\d+\s+(\d+)", out,
                  re.M)
    assert m, out
    return int(m[1])


def small_pair(tmp_path):
    img = tmp_path / "p.img"
    helpers.mkfs(img, "8M", "-b", str(BS), "-q")
    a = rand(16 * BS, 3)
    b = rand(16 * BS, 4)
    dx(img, f"write {host(tmp_path, 'a', a)} /a",
       f"write {host(tmp_path, 'b', b)} /b")
    return img, {"/a": a, "/b": b}


@pytest.mark.parametrize("build", BUILDS)
def test_clone_into_root_with_too_many_entries(tmp_path, build, request):
    """eh_entries 100 in an inode root that holds 4 (stock debugfs sif)."""
    tool, top, env = tools(build, request)
    img, files = small_pair(tmp_path)
    stock_w(img, "sif /b block[0] 0x0064f30a")
    refused(img, "clone_range /a 0 /b 0 4096",
            r"extent header|" + OPEN_REFUSAL, tool=tool, env=env)
    refused_trusted(img, ["clone", "/a", "0", "/b", "0", "4096"],
                    r"extent header", tool=top, env=env)
    same_bytes(img, {"/a": files["/a"]})
    repaired_clean(img)
    same_bytes(img, {"/a": files["/a"]})


@pytest.mark.parametrize("damage,pattern", [
    # the checksum in the leaf's tail (at 12 + 84 * 12 on 1 KiB blocks)
    ("-o 1020 -l 1 -p 0x55", r"checksum"),
    # eh_entries 0xffff, past eh_max
    ("-o 2 -l 2 -p 0xff", r"extent header"),
], ids=["bad-csum", "entries"])
@pytest.mark.parametrize("build", BUILDS)
def test_clone_into_corrupt_leaf(tmp_path, damage, pattern, build, request):
    tool, top, env = tools(build, request)
    img, files = striped(tmp_path)
    leaf = leaf_block(img, "/b")
    stock_w(img, f"zap_block {damage} {leaf}")
    refused(img, f"clone_range /a {4 * BS} /b {4 * BS} {BS}",
            pattern + "|" + OPEN_REFUSAL, tool=tool, env=env)
    refused_trusted(img, ["clone", "/a", str(4 * BS), "/b", str(4 * BS),
                          str(BS)], pattern, tool=top, env=env)
    same_bytes(img, {"/a": files["/a"]})
    repaired_clean(img)
    same_bytes(img, {"/a": files["/a"]})


def test_clone_into_sound_leaf_still_works(tmp_path):
    """The reader refuses nothing sound: the same clone on the undamaged
    image succeeds, read back through stock debugfs."""
    img, files = striped(tmp_path)
    dx(img, f"clone_range /a {5 * BS} /b {5 * BS} {BS}")
    b = bytearray(files["/b"])
    b[5 * BS:6 * BS] = files["/a"][5 * BS:6 * BS]
    same_bytes(img, {"/a": files["/a"], "/b": bytes(b)})
    both_clean(img)


# ----------------------------------------------------------------------
# punch on a full filesystem

def full_image(tmp_path):
    """/a reflinked to /b, then every free block taken by a file written
    with stock debugfs."""
    img = tmp_path / "f.img"
    helpers.mkfs(img, "4M", "-b", str(BS), "-q")
    a = rand(64 * BS, 5)
    dx(img, f"write {host(tmp_path, 'a', a)} /a", "reflink /a /b")
    free = int(helpers.dumpe2fs_header(img)["Free blocks"])
    fill = b"x" * (free * BS)
    stock_w(img, f"write {host(tmp_path, 'fill', fill)} fill")
    assert int(helpers.dumpe2fs_header(img)["Free blocks"]) == 0
    both_clean(img)
    return img, {"/a": a, "/b": a, "/fill": fill}


def test_punch_on_full_fs_refused_unchanged(tmp_path):
    """The whole blocks would go first, then the shared partial blocks
    need copies that cannot be allocated."""
    img, files = full_image(tmp_path)
    refused(img, "punch /a 1000 10000", r"allocate|space")
    same_bytes(img, files)
    both_clean(img)


# ----------------------------------------------------------------------
# rm and pwrite with a damaged node of the reference-count tree

def sibling_leaf_pblk(img):
    """Physical block of the second leaf of the reference-count tree in key
    order (debugfs.extref refcount_tree lists lblk, pblk, level, first
    key): the requests below change records of the first leaf, and a leaf
    left under half full borrows from or merges with this one, so the
    count change meets it only after the files were changed."""
    out = helpers.run([dbg(), "-R", "refcount_tree", str(img)]).stdout
    leaves = sorted((int(m[2]), int(m[1])) for m in re.finditer(
        r"pblk (\d+)\s+level 0\s+entries \d+\s+first (\d+)", out))
    assert len(leaves) >= 2, out
    return leaves[1][1]


@pytest.mark.parametrize("request_", [
    "rm /b", f"pwrite /b 0 {4 * BS}", f"pwrite /a {8 * BS} {BS}",
    f"punch /b 0 {8 * BS}", f"truncate /b {BS}",
])
def test_op_on_damaged_tree_node_refused_unchanged(tmp_path, request_):
    img, files = striped(tmp_path)
    pblk = sibling_leaf_pblk(img)
    with open(img, "r+b") as f:          # one byte of a record, as dd would
        f.seek(pblk * BS + 100)
        byte = f.read(1)
        f.seek(pblk * BS + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    refused(img, request_, r"tree|checksum")
    same_bytes(img, files)
    repaired_clean(img)
    same_bytes(img, files)


# ----------------------------------------------------------------------
# reflink -r with too few free inodes

def test_reflink_r_too_few_inodes_refused_unchanged(tmp_path):
    img = tmp_path / "n.img"
    helpers.mkfs(img, "8M", "-N", "48", "-q")
    data = rand(3 * 4096, 6)
    src = host(tmp_path, "d", data)
    cmds = ["mkdir /d", "mkdir /d/e"]
    for i in range(11):
        cmds += [f"write {src} /d/f{i}", f"write {src} /d/e/g{i}"]
    dx(img, *cmds)
    free = int(helpers.dumpe2fs_header(img)["Free inodes"])
    assert 0 < free < 24, free          # the copy needs 24
    refused(img, "reflink -r /d /d2", r"inode")
    res = helpers.debugfs(img, "ls -l /")
    assert "d2" not in res.stdout
    same_bytes(img, {"/d/f0": data, "/d/e/g10": data})
    both_clean(img)
    # a copy that fits still goes through
    dx(img, "reflink -r /d/e /e2")
    same_bytes(img, {f"/e2/g{i}": data for i in range(11)})
    both_clean(img)



def test_reflink_r_corrupt_file_refused_unchanged(tmp_path):
    """A file of the source whose extent leaf is corrupt (eh_entries past
    eh_max): refused before the copy starts (it stopped at that file, the
    files before it already copied and their counts raised)."""
    img = tmp_path / "c.img"
    helpers.mkfs(img, "8M", "-b", str(BS), "-q")
    a = rand(40 * BS, 7)
    cmds = ["mkdir /d", f"write {host(tmp_path, 'a', a)} /d/a",
            f"write {host(tmp_path, 'b', a)} /d/b"]
    cmds += [f"clone_range /d/a {i * BS} /d/b {i * BS} {BS}"
             for i in range(0, 40, 2)]
    dx(img, *cmds)
    both_clean(img)
    stock_w(img, f"zap_block -o 2 -l 2 -p 0xff {leaf_block(img, '/d/b')}")
    refused(img, "reflink -r /d /d2", r"extent header|" + OPEN_REFUSAL)
    refused_trusted(img, ["reflink_r", "/d", "/", "d2"], r"extent header")
    assert "d2" not in helpers.debugfs(img, "ls /").stdout
    same_bytes(img, {"/d/a": a})
    repaired_clean(img)
    same_bytes(img, {"/d/a": a})
