"""Who may write an image, and what a writer trusts (the library's open).

- A lying but well-checksummed tree (a count below the number of mappings,
  made with the shell's expert set_tree_entry) makes every read-write open
  refuse: rm of two sharers and a write can no longer free a block the
  third sharer maps and write over it.  A count too high (a leak, what a
  crash leaves) is still written to.
- A mounted image (read-only loop mount) is never opened for writing:
  debugfs.extref -w, mkfs.extref --convert and fsck.extref -y refuse and
  the image is unchanged byte for byte; fsck.extref -n checks it with
  e2fsck's warning.
- One writer or any number of readers: an open writer (an interactive
  debugfs.extref -w on a pipe) makes a second writer, a reader and
  fsck.extref refuse with the reason; an open reader refuses writers only.
- Two writers started together: each one finishes or is refused (and then
  retried), and every file holds what its writer wrote.

Oracles: stock debugfs (file bytes), stock e2fsck -fn, fsck.extref -n.
"""

import subprocess
import time

import pytest

import helpers

T = 60  # seconds: no command here may hang


def dbx(img, *args, check=True, input=None):
    return helpers.run([helpers.binary("debugfs.extref"), *args, str(img)],
                       check=check, input=input, timeout=T)


def fsck_x(img, *opts, check=False):
    return helpers.run([helpers.binary("fsck/fsck.extref"), *opts, str(img)],
                       check=check, timeout=T)


def both_clean(img):
    helpers.e2fsck_fn(img)
    res = fsck_x(img, "-fn", "-E", "no_e2fsck")
    assert res.returncode == 0, helpers.describe(res)


def out(res):
    return res.stdout + res.stderr


def leaf_lblk(img):
    """lblk of the (only) leaf, from the shell's refcount_tree."""
    res = dbx(img, "-R", "refcount_tree")
    for line in res.stdout.splitlines():
        if line.startswith("lblk ") and " level 0 " in line:
            return int(line.split()[1])
    raise AssertionError("no leaf in:\n" + res.stdout)


@pytest.fixture
def shared3(tmp_path):
    """An image where f, g and h share 40 blocks (count 3)."""
    img = tmp_path / "s.img"
    helpers.mkfs(img, "16M")
    data = tmp_path / "data"
    data.write_bytes(bytes(range(256)) * 160)          # 40 KiB
    dbx(img, "-w", "-f", "-",
        input=f"write {data} f\nreflink f g\nreflink f h\n")
    assert dbx(img, "-R", "refcount").stdout.split()[-1] == "3"
    both_clean(img)
    return img


def set_count(img, count):
    res = dbx(img, "-w", "-R",
              f"set_tree_entry {leaf_lblk(img)} 0 count {count}")
    assert f"-> 0x{count:x}" in res.stdout, helpers.describe(res)


# ----- section 2: counts are not trusted by writes -----

def test_undercount_refused_third_file_kept(shared3, tmp_path):
    img = shared3
    before = helpers.debugfs_cat(img, "/f")
    set_count(img, 2)            # three inodes map the blocks
    new = tmp_path / "new"
    new.write_bytes(b"\xee" * 40960)
    res = dbx(img, "-w", "-f", "-", check=False,
              input=f"rm g\nrm h\nwrite {new} x\n")
    assert res.returncode != 0, helpers.describe(res)
    assert "fsck.extref -y" in out(res), helpers.describe(res)
    assert helpers.debugfs_cat(img, "/f") == before
    assert helpers.debugfs_cat(img, "/g") == before
    # the library refuses every writer, not only the shell
    conv = helpers.run([helpers.binary("mkfs.extref"), "--convert",
                        "--dedup", "file", str(img)], check=False, timeout=T)
    assert conv.returncode != 0
    # fsck.extref -y repairs; then the same requests are safe
    res = fsck_x(img, "-fy")
    assert res.returncode in (0, 1), helpers.describe(res)
    both_clean(img)
    dbx(img, "-w", "-f", "-", input=f"rm g\nrm h\nwrite {new} x\n")
    assert helpers.debugfs_cat(img, "/f") == before
    assert helpers.debugfs_cat(img, "/x") == new.read_bytes()
    both_clean(img)


def test_shared_without_record_refused(tmp_path):
    """Blocks mapped twice with no record at all (a cross-link made with
    the expert map_raw): rm of one mapper would free the other's data."""
    img = tmp_path / "x.img"
    helpers.mkfs(img, "16M")
    data, empty = tmp_path / "data", tmp_path / "empty"
    data.write_bytes(bytes(range(251)) * 200)
    empty.write_bytes(b"")
    dbx(img, "-w", "-f", "-", input=f"write {data} f\nwrite {empty} g\n")
    pblk = int(helpers.debugfs(img, "bmap /f 0").stdout)
    n = -(-len(data.read_bytes()) // 1024)
    dbx(img, "-w", "-R", f"map_raw g 0 {pblk} {n}")
    before = helpers.debugfs_cat(img, "/f")
    new = tmp_path / "new"
    new.write_bytes(b"\x5a" * 60000)
    res = dbx(img, "-w", "-f", "-", check=False,
              input=f"rm g\nwrite {new} x\n")
    assert res.returncode != 0 and "fsck.extref -y" in out(res), \
        helpers.describe(res)
    assert helpers.debugfs_cat(img, "/f") == before
    res = fsck_x(img, "-fy")
    assert res.returncode in (0, 1), helpers.describe(res)
    both_clean(img)
    dbx(img, "-w", "-f", "-", input=f"rm g\nwrite {new} x\n")
    assert helpers.debugfs_cat(img, "/f") == before
    assert helpers.debugfs_cat(img, "/x") == new.read_bytes()
    both_clean(img)


def test_overcount_still_writable(shared3, tmp_path):
    """A count too high only leaks space: writes go on, nothing is lost."""
    img = shared3
    before = helpers.debugfs_cat(img, "/f")
    set_count(img, 5)
    new = tmp_path / "new"
    new.write_bytes(b"\x11" * 40960)
    dbx(img, "-w", "-f", "-", input=f"rm g\nrm h\nwrite {new} x\n")
    assert helpers.debugfs_cat(img, "/f") == before
    assert helpers.debugfs_cat(img, "/x") == new.read_bytes()
    helpers.e2fsck_fn(img)
    res = fsck_x(img, "-fy")
    assert res.returncode in (0, 1), helpers.describe(res)
    both_clean(img)


def test_damaged_tree_refused_expert_still_works(shared3):
    """A tree node that fails its checksum: writes refused, the expert
    commands (which repair by hand) still run, fsck.extref -y repairs."""
    img = shared3
    before = helpers.debugfs_cat(img, "/f")
    lblk = leaf_lblk(img)
    dbx(img, "-w", "-R", f"set_tree_node -n {lblk} checksum 1")
    res = dbx(img, "-w", "-R", "rm g", check=False)
    assert res.returncode != 0 and "tree" in out(res)
    assert helpers.debugfs_cat(img, "/g") == before
    # the expert commands still edit the tree of a refused image
    res = dbx(img, "-w", "-R", f"set_tree_node -n {lblk} checksum 2")
    assert "-> 0x2" in res.stdout, helpers.describe(res)
    res = fsck_x(img, "-fy")
    assert res.returncode in (0, 1), helpers.describe(res)
    both_clean(img)
    dbx(img, "-w", "-R", "rm g")
    assert helpers.debugfs_cat(img, "/f") == before
    both_clean(img)


# ----- section 3: mounted images -----

def test_mounted_image_refused(shared3, tmp_path, loop_mount):
    img = shared3
    plain = tmp_path / "plain.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", str(plain), "8M"])
    loop_mount(img)
    loop_mount(plain)
    sums = {p: helpers.sha256(p) for p in (img, plain)}
    res = dbx(img, "-w", "-R", "rm g", check=False)
    assert res.returncode != 0 and "mounted" in out(res), \
        helpers.describe(res)
    res = helpers.run([helpers.binary("mkfs.extref"), "--convert",
                       str(plain)], check=False, timeout=T)
    assert res.returncode != 0 and "mounted" in out(res), \
        helpers.describe(res)
    for mode in ("-fy", "-fp"):
        res = fsck_x(img, mode)
        assert res.returncode & 8 and "mounted" in out(res), \
            helpers.describe(res)
    res = fsck_x(img, "-fn")             # e2fsck's rule: -n warns
    assert res.returncode == 0 and "is mounted" in out(res), \
        helpers.describe(res)
    dbx(img, "-R", "ls")                  # a reader may look
    assert {p: helpers.sha256(p) for p in (img, plain)} == sums


# ----- section 3: one writer at a time -----

class Holder:
    """An interactive shell on IMG (debugfs.extref [-w] -f -), open until
    close(): the image stays open as long as its stdin does."""

    def __init__(self, img, write):
        args = [helpers.binary("debugfs.extref")] + (["-w"] if write else [])
        self.p = subprocess.Popen(args + ["-f", "-", str(img)],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        # once "pwd" is echoed, the image is open
        self.p.stdin.write("pwd\n")
        self.p.stdin.flush()
        deadline = time.time() + T
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line or "pwd" in line:
                break
        assert self.p.poll() is None, "holder exited: " + self.p.stderr.read()

    def close(self):
        try:
            so, se = self.p.communicate("", timeout=T)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
        assert self.p.returncode == 0, se


def test_writer_excludes_everyone(shared3, tmp_path):
    img = shared3
    before = helpers.debugfs_cat(img, "/f")
    h = Holder(img, write=True)
    try:
        res = dbx(img, "-w", "-R", "rm g", check=False)
        assert res.returncode != 0 and \
            "in use by another extref writer" in out(res), \
            helpers.describe(res)
        # the message names the process holding the lock (/proc/locks)
        holder = f"the lock is held by debugfs.extref (pid {h.p.pid})"
        assert holder in res.stderr, helpers.describe(res)
        # a reader is not shut out (as stock debugfs): it reads, warned
        res = dbx(img, "-R", "ls", check=False)
        assert res.returncode == 0, helpers.describe(res)
        assert "in use by another extref writer; reading it anyway" in \
            res.stderr and "g" in res.stdout.split(), helpers.describe(res)
        # unless it asks for a consistent view
        res = dbx(img, "--consistent", "-R", "ls", check=False)
        assert res.returncode != 0 and \
            "in use by another extref writer" in out(res) and \
            "reading it anyway" not in out(res), helpers.describe(res)
        for mode in ("-fn", "-fy"):
            res = fsck_x(img, mode)
            assert res.returncode & 8 and "extref writer" in out(res), \
                helpers.describe(res)
            assert holder in res.stderr, helpers.describe(res)
    finally:
        h.close()
    assert helpers.debugfs_cat(img, "/g") == before
    dbx(img, "-w", "-R", "rm g")         # free again
    both_clean(img)


def test_reader_excludes_writers_only(shared3):
    img = shared3
    h = Holder(img, write=False)
    try:
        res = dbx(img, "-w", "-R", "rm g", check=False)
        assert res.returncode != 0 and \
            "open for reading by another extref program" in out(res), \
            helpers.describe(res)
        dbx(img, "-R", "ls")                      # readers share
        res = fsck_x(img, "-fy")
        assert res.returncode & 8, helpers.describe(res)
    finally:
        h.close()
    dbx(img, "-w", "-R", "rm g")


def run_writer(img, script, deadline):
    """Run a writer until it is not refused for the lock; its result."""
    while True:
        res = dbx(img, "-w", "-f", str(script), check=False)
        if "in use by another extref" not in out(res) and \
           "open for reading" not in out(res):
            return res
        assert res.stdout.count("debugfs.extref: ") == 0, \
            "a refused writer ran requests:\n" + helpers.describe(res)
        assert time.time() < deadline, "writer refused until the timeout"
        time.sleep(0.05)


def writer_script(tmp_path, w, n, expect):
    lines = []
    for i in range(n):
        d = tmp_path / f"{w}{i}.dat"
        d.write_bytes(bytes([ord(w[0]), i]) * (2048 + 512 * i))
        lines.append(f"write {d} {w}{i}")
        lines.append(f"reflink {w}{i} {w}{i}r")
        lines.append(f"pwrite -S {i + 1} {w}{i}r 0 1024")
        expect[f"{w}{i}"] = d.read_bytes()
        expect[f"{w}{i}r"] = bytes([i + 1]) * 1024 + d.read_bytes()[1024:]
    s = tmp_path / f"{w}.cmds"
    s.write_text("\n".join(lines) + "\n")
    return s


def test_two_concurrent_writers(tmp_path):
    img = tmp_path / "c.img"
    helpers.mkfs(img, "32M")
    expect = {}
    for rnd in range(3):
        scripts = [writer_script(tmp_path, f"{w}{rnd}_", 10, expect)
                   for w in "ab"]
        # both started at once: the first open takes the lock
        procs = [subprocess.Popen([helpers.binary("debugfs.extref"), "-w",
                                   "-f", str(s), str(img)],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for s in scripts]
        try:
            results = [p.communicate(timeout=T) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        deadline = time.time() + T
        for s, p, (so, se) in zip(scripts, procs, results):
            if "in use by another extref writer" in so + se:
                assert "debugfs.extref: " not in so, \
                    "a refused writer ran requests:\n" + so
                assert run_writer(img, s, deadline).returncode == 0
            else:
                assert p.returncode == 0, f"exit {p.returncode}\n{so}\n{se}"
        for name, data in expect.items():
            assert helpers.debugfs_cat(img, f"/{name}") == data, name
        both_clean(img)
