"""mkfs.extref --update --grow, and the "needs about" figure of an update
that does not fit (issue 30, section 2: images that grow).

An image made with -d and no size (5% headroom) cannot take an update
bigger than its headroom.  Without --grow the update fails and says what
it needs: the test holds that figure within 1.15x of what the update then
allocates, blocks and inodes, on two real trees copied from this
machine (parts of /usr/share and of /usr/lib/python3): version 2 adds a
directory and changes 200-300 files, and is given as a directory and as
a tar of the whole tree (one more layer: the figure is what its update
writes, not the archive); the update is then run on a copy grown by
stock resize2fs, and what it allocated is counted with stock tools only
(dumpe2fs's free blocks and inodes before and after, plus the blocks of
the replaced files that stock debugfs finds freed).  A layer's figure
follows the layer's rules (whiteouts, an opaque directory, hard links,
missing directories).  With --grow the image
file is grown (stock resize2fs, the new size from that figure) and
updated: stock e2fsck -fn and fsck.extref -n are clean, every file reads
back through stock debugfs as the source has it (some through a
read-only kernel mount too); grown for a tar, the image grows as for the
directory.  A block device is
refused and left byte-identical; a resize2fs that fails (a stand-in that
runs the real one and then fails, or fails at once) leaves the image
file byte-identical, its length too.

An interrupted grow leaves resize2fs's undo file beside the image
(IMAGE.grow.e2undo), and every writer (mkfs.extref, fsck.extref -fy,
debugfs.extref -w, extref-fuse) refuses while it is there, saying what to
do: a SIGKILL of mkfs.extref alone lets resize2fs finish (the image grown
and clean, stock e2undo puts it back byte for byte); resize2fs killed at
its middle write too (strace -e inject: a power cut) leaves the image
half grown (stock e2fsck -fn exits 4), which stock e2undo and e2fsck -fy
put back.
"""

import io
import os
import random
import re
import shutil
import signal
import stat
import tarfile
import time

import pytest

import helpers

BS = 4096
MIB = 1 << 20
# (v1, added directories) for each tree; the first that exists is used
TREES = {
    "share": [("/usr/share/perl", ["/usr/share/cmake-3.25/Modules"]),
              ("/usr/share/vim", ["/usr/share/i18n/locales"])],
    "python": [("/usr/lib/python3/dist-packages",
                ["/usr/lib/python3.11/asyncio", "/usr/lib/python3.11/email",
                 "/usr/lib/python3.11/encodings"])],
}
KEEP = {"share": None,
        "python": ("pip", "pygments", "setuptools", "_pytest")}


def mkfs_bin():
    return helpers.binary("mkfs.extref")


def fsck_n(img):
    res = helpers.run([helpers.BUILD_DIR / "fsck/fsck.extref", "-n",
                       str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert "another tool" not in res.stdout + res.stderr, res.stdout
    return res


def pick(name):
    for v1, added in TREES[name]:
        if os.path.isdir(v1) and all(os.path.isdir(a) for a in added):
            return v1, added
    pytest.skip(f"none of the {name} trees is on this machine")


def copy_v1(src, dst, keep):
    if keep is None:
        shutil.copytree(src, dst, symlinks=True)
        return
    dst.mkdir()
    for k in keep:
        if os.path.isdir(os.path.join(src, k)):
            shutil.copytree(os.path.join(src, k), dst / k, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__"))


def make_v2(v1, v2, added, nrep):
    """v1, with added directories and nrep files changed (every other one
    appended to, the rest rewritten at the head); the changed paths."""
    shutil.copytree(v1, v2, symlinks=True)
    for k, a in enumerate(added):
        shutil.copytree(a, v2 / f"added{k}", symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    files = sorted(p for p in v2.rglob("*")
                   if not p.relative_to(v2).parts[0].startswith("added")
                   and p.is_file() and not p.is_symlink()
                   and p.stat().st_size > 0)
    step = max(1, len(files) // nrep)
    changed = files[::step][:nrep]
    for i, p in enumerate(changed):
        os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
        with open(p, "r+b") as f:
            if i % 2:
                f.write(b"changed at the head %d\n" % i)
            else:
                f.seek(0, 2)
                f.write(b"appended %d\n" % i)
    return ["/" + str(p.relative_to(v2)) for p in changed]


def free_blocks(img):
    return int(helpers.dumpe2fs_header(img)["Free blocks"])


def blocks_of(img, paths):
    """The blocks stock debugfs lists for paths."""
    req = "".join(f'blocks "{p}"\n' for p in paths)
    res = helpers.run(["debugfs", "-f", "-", str(img)], input=req)
    return {int(w) for line in res.stdout.splitlines()
            if not line.startswith("debugfs")
            for w in line.split() if w.isdigit()}


def now_free(img, blocks):
    """How many of blocks stock debugfs finds free."""
    req = "".join(f"testb {b}\n" for b in sorted(blocks))
    res = helpers.run(["debugfs", "-f", "-", str(img)], input=req)
    return sum("not in use" in line for line in res.stdout.splitlines())


def symlinks(v1):
    """v1's symlinks: an archive's update makes each anew (a new inode;
    the old one's block, when its target is 60 bytes or more, freed)."""
    return ["/" + str(p.relative_to(v1)) for p in v1.rglob("*")
            if p.is_symlink()]


def slow(tree, links):
    return [p for p in links if len(os.readlink(tree / p[1:])) >= 60]


def free_inodes(img):
    return int(helpers.dumpe2fs_header(img)["Free inodes"])


def tar_of(tree, tar):
    """tree as an archive (stock tar), its root "."."""
    helpers.run(["tar", "-C", str(tree), "-cf", str(tar), "."])
    return tar


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dir", "tar"])
@pytest.mark.parametrize("name", ["share", "python"])
def test_needs_about_is_what_the_update_uses(tmp_path, name, kind):
    """v2 as a directory, or as a tar of the whole tree (one more layer,
    stock tar): the figure is what that update allocates, blocks and
    inodes, not the archive's size."""
    src, added = pick(name)
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    copy_v1(src, v1, KEEP[name])
    changed = make_v2(v1, v2, added, 300 if name == "python" else 200)
    source = v2 if kind == "dir" else tar_of(v2, tmp_path / "v2.tar")
    renewed = changed + (symlinks(v1) if kind == "tar" else [])
    img = tmp_path / "img"
    helpers.run([mkfs_bin(), "-q", "-d", str(v1), str(img)])
    res = helpers.run([mkfs_bin(), "--update", "-q", "-d", str(source),
                       str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    m = re.search(r"the update needs about ([0-9.]+) MiB \(([0-9.]+) MiB "
                  r"free\) and ([0-9]+) inodes", res.stderr)
    assert m, res.stderr
    need, need_inodes = float(m.group(1)), int(m.group(3))
    assert need > float(m.group(2)), res.stderr
    helpers.e2fsck_fn(img)
    # the same update on a copy grown by stock resize2fs, counted by
    # stock tools: what it allocated (net growth, plus the blocks and
    # inodes of the replaced files and symlinks it freed)
    big = tmp_path / "big"
    shutil.copy(img, big)
    helpers.run(["resize2fs", str(big),
                 "%dM" % max(640, 3 * img.stat().st_size // MIB)])
    old = blocks_of(big, changed + slow(v1, renewed[len(changed):]))
    before, inodes_before = free_blocks(big), free_inodes(big)
    helpers.run([mkfs_bin(), "--update", "-q", "-d", str(source),
                 str(big)])
    used = (before - free_blocks(big) + now_free(big, old)) * BS / MIB
    inodes = inodes_before - free_inodes(big) + len(renewed)
    assert used > 1, used
    assert 1 / 1.15 <= need / used <= 1.15, (need, used, res.stderr)
    assert 1 / 1.15 <= need_inodes / inodes <= 1.15, \
        (need_inodes, inodes, res.stderr)
    helpers.e2fsck_fn(big)


def layer_tar(path, entries):
    """entries: (name, bytes) a file, (name, None) a directory,
    (name, "->target") a symlink, (name, "=>target") a hard link."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime, ti.mode = 1700000000, 0o644
            if data is None:
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            elif isinstance(data, str):
                ti.type = (tarfile.SYMTYPE if data[:2] == "->" else
                           tarfile.LNKTYPE)
                ti.linkname = data[2:]
            else:
                ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if isinstance(data, bytes)
                      else None)
    return path


@pytest.mark.parametrize("end", ["whole", "trailer_missing"])
def test_needs_about_a_layer_follows_its_rules(tmp_path, end):
    """A layer's figure counts its entries as the update applies them,
    against the image as the entries before left it: files an opaque
    directory or a whiteout removed are new again even with the bytes
    the image had (reflinks: an inode, no data), an unchanged file is
    kept, missing directories are made, a hard link is a name only, a
    symlink is made anew.  12 new inodes, as the update then uses them
    (stock dumpe2fs, plus the 17 it frees); the blocks within 1.15x; the
    image grown from that figure takes the update at once.  Also with
    the tar cut right after its last file's data (no padding, no end
    records: umoci 0.4.7's layers), which the update takes as its end."""
    rnd = random.Random(5)
    v1 = tmp_path / "v1"
    body = {}
    for d, n in (("d0", 10), ("d1", 5), ("keep", 1)):
        (v1 / d).mkdir(parents=True)
        for i in range(n):
            body[f"{d}/f{i}"] = rnd.randbytes(5000)
            (v1 / d / f"f{i}").write_bytes(body[f"{d}/f{i}"])
    os.symlink("d0/f0", v1 / "link")
    entries = [("d0/.wh..wh..opq", b"")]
    entries += [(f"d0/f{i}", body[f"d0/f{i}"]) for i in range(5)]
    entries += [(".wh.d1", b""), ("d1", None), ("d1/f0", body["d1/f0"]),
                ("keep/f0", body["keep/f0"]), ("new/sub/x", b"x"),
                ("h", "=>d0/f0"), ("link", "->d0/f1"), (".wh.nothing", b""),
                ("big", rnd.randbytes(6 * MIB + 100))]
    tar = layer_tar(tmp_path / "layer.tar", entries)
    if end == "trailer_missing":
        with tarfile.open(tar) as t:
            last = t.getmembers()[-1]
        os.truncate(tar, last.offset_data + last.size)
    img = tmp_path / "img"
    helpers.run([mkfs_bin(), "-q", "-d", str(v1), str(img)])
    res = helpers.run([mkfs_bin(), "--update", "-q", "-d", str(tar),
                       str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    m = re.search(r"the update needs about ([0-9.]+) MiB \([0-9.]+ MiB "
                  r"free\) and ([0-9]+) inodes", res.stderr)
    assert m, res.stderr
    assert int(m.group(2)) == 12, res.stderr
    helpers.e2fsck_fn(img)
    big = tmp_path / "big"
    shutil.copy(img, big)
    helpers.run(["resize2fs", str(big), "64M"])
    gone = [f"/{k}" for k in body if not k.startswith("keep")]
    old = blocks_of(big, gone + ["/d1"])
    before, inodes_before = free_blocks(big), free_inodes(big)
    helpers.run([mkfs_bin(), "--update", "-q", "-d", str(tar), str(big)])
    assert inodes_before - free_inodes(big) + len(gone) + 2 == 12
    used = (before - free_blocks(big) + now_free(big, old)) * BS / MIB
    assert 1 / 1.15 <= float(m.group(1)) / used <= 1.15, \
        (m.group(1), used, res.stderr)
    helpers.e2fsck_fn(big)
    # --grow from that figure: one grow, both checkers clean
    res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(tar),
                       str(img)])
    assert len(re.findall(r"grown from", res.stdout)) == 1, res.stdout
    helpers.e2fsck_fn(img)
    out = fsck_n(img).stdout
    assert " 0 problems" in out, out
    res = helpers.run(["debugfs", "-R", "cat /big", str(img)], text=False)
    assert res.stdout == entries[-1][1]


def small_tree(root, seed, n, size):
    rnd = random.Random(seed)
    root.mkdir(parents=True)
    for i in range(n):
        d = root / f"d{i % 7}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}").write_bytes(rnd.randbytes(rnd.randrange(1, size)))
    os.symlink("d0/f0", root / "link")
    os.symlink("y" * 100, root / "slow_link")
    return root


@pytest.fixture
def grow_case(tmp_path):
    """An auto-sized image of v1, and v2 (v1 with 3000 small files and
    4 MiB more, 20 files changed): more inodes and blocks than it has
    free."""
    v1 = small_tree(tmp_path / "v1", 1, 400, 20000)
    v2 = tmp_path / "v2"
    shutil.copytree(v1, v2, symlinks=True)
    small_tree(v2 / "new", 2, 3000, 3000)
    (v2 / "big").write_bytes(random.Random(3).randbytes(4 * MIB))
    for i in range(0, 400, 20):
        with open(v2 / f"d{i % 7}" / f"f{i}", "ab") as f:
            f.write(b"v2")
    img = tmp_path / "img"
    helpers.run([mkfs_bin(), "-q", "-d", str(v1), str(img)])
    return img, v2


def rdump_is(img, tree, tmp_path):
    """Every file and symlink of tree as stock debugfs reads it back."""
    dump = tmp_path / "dump"
    dump.mkdir()
    helpers.run(["debugfs", "-R", f"rdump / {dump}", str(img)])
    for p in tree.rglob("*"):
        q = dump / p.relative_to(tree)
        if p.is_symlink():
            assert os.readlink(q) == os.readlink(p), p
        elif p.is_file():
            assert q.read_bytes() == p.read_bytes(), p
    shutil.rmtree(dump)


@pytest.mark.slow
def test_grow_then_update(tmp_path, grow_case):
    img, v2 = grow_case
    size0 = img.stat().st_size
    res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(v2),
                       str(img)])
    assert re.search(r"grown from [0-9.]+ MiB to [0-9.]+ MiB", res.stdout), \
        res.stdout
    assert img.stat().st_size > size0
    assert not img.with_name(img.name + ".grow.e2undo").exists()
    assert "shared_blocks" in helpers.dumpe2fs_features(img)
    helpers.e2fsck_fn(img)
    out = fsck_n(img).stdout
    assert " 0 problems" in out, out
    # every file as the source has it, read by stock debugfs
    rdump_is(img, v2, tmp_path)
    # and through a read-only kernel mount
    if helpers.loop_skip_reason() is None:
        with helpers.loop_mount(img, tmp_path / "mnt"):
            for p in [v2 / "big", *sorted((v2 / "new").rglob("f*"))[:50]]:
                q = tmp_path / "mnt" / p.relative_to(v2)
                assert q.read_bytes() == p.read_bytes(), p
    # a second --grow with nothing new grows nothing
    res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(v2),
                       str(img)])
    assert "grown" not in res.stdout, res.stdout
    helpers.e2fsck_fn(img)
    fsck_n(img)


@pytest.mark.slow
def test_grow_for_an_archive_is_what_its_update_needs(tmp_path):
    """v1 mostly one 16 MiB file, v2 adds 3 MiB and changes 10 files
    (fewer new inodes than the image has free): the image grown for a tar
    of all of v2 is the size it is grown to for the directory v2, not
    16 MiB and an inode per entry more; the update then fits (one grow),
    both checkers clean, every file as v2 has it."""
    v1 = small_tree(tmp_path / "v1", 1, 100, 20000)
    (v1 / "base").write_bytes(random.Random(4).randbytes(16 * MIB))
    v2 = tmp_path / "v2"
    shutil.copytree(v1, v2, symlinks=True)
    (v2 / "big").write_bytes(random.Random(3).randbytes(3 * MIB))
    for i in range(0, 100, 10):
        with open(v2 / f"d{i % 7}" / f"f{i}", "ab") as f:
            f.write(b"v2")
    tar = tar_of(v2, tmp_path / "v2.tar")
    imgs = {k: tmp_path / f"img_{k}" for k in ("dir", "tar")}
    helpers.run([mkfs_bin(), "-q", "-d", str(v1), str(imgs["dir"])])
    shutil.copy(imgs["dir"], imgs["tar"])
    size0 = imgs["dir"].stat().st_size
    for k, source in (("dir", v2), ("tar", tar)):
        res = helpers.run([mkfs_bin(), "--update", "--grow", "-d",
                           str(source), str(imgs[k])])
        assert len(re.findall(r"grown from [0-9.]+ MiB to [0-9.]+ MiB",
                              res.stdout)) == 1, res.stdout
    grown = {k: imgs[k].stat().st_size - size0 for k in imgs}
    assert grown["dir"] > 2 * MIB, grown
    assert 1 / 1.15 <= grown["tar"] / grown["dir"] <= 1.15, grown
    img = imgs["tar"]
    helpers.e2fsck_fn(img)
    out = fsck_n(img).stdout
    assert " 0 problems" in out, out
    rdump_is(img, v2, tmp_path)


def test_grow_refuses_a_block_device(tmp_path, grow_case):
    helpers.require_loop()
    img, v2 = grow_case
    dev = helpers.run(["losetup", "-f", "--show", str(img)]).stdout.strip()
    try:
        before = helpers.sha256(dev)
        res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(v2),
                           dev], check=False)
        assert res.returncode == 1, helpers.describe(res)
        assert f"{dev}: A block device is never grown" in res.stderr, \
            res.stderr
        assert helpers.sha256(dev) == before
    finally:
        helpers.run(["losetup", "-d", dev], check=False)
    helpers.e2fsck_fn(img)


@pytest.mark.parametrize("how", ["after", "at_once", "proof"])
def test_failed_grow_leaves_the_image_as_it_was(tmp_path, grow_case, how):
    """resize2fs fails after growing, or at once (a stand-in), or the
    real one grows and the proof of the grown image fails (fault
    injection): the file as it was."""
    img, v2 = grow_case
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": tmp}
    if how == "proof":
        reason = helpers.fault_injection_skip_reason()
        if reason:
            pytest.skip(reason)
        env["EXTREF_FAULT_GROW"] = "prove"
    else:
        fake = tmp_path / "resize2fs"
        real = shutil.which("resize2fs") or "/sbin/resize2fs"
        body = f'"{real}" "$@" || exit 2\n' if how == "after" else ""
        fake.write_text(f"#!/bin/sh\n{body}echo stand-in fails >&2\n"
                        "exit 1\n")
        fake.chmod(0o755)
        env["EXTREF_RESIZE2FS"] = fake
    size, before = img.stat().st_size, helpers.sha256(img)
    res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(v2),
                       str(img)], check=False, env=env)
    assert res.returncode == 1, helpers.describe(res)
    if how == "proof":
        assert "Resizing the filesystem" in res.stderr, res.stderr
        assert "the grow was undone (e2undo), the image is as it was" in \
            res.stderr, res.stderr
    else:
        assert "stand-in fails" in res.stderr
        assert "resize2fs could not grow the image; it is as it was" in \
            res.stderr, res.stderr
    assert img.stat().st_size == size
    assert helpers.sha256(img) == before
    # the undo file (beside the image, never in TMPDIR) went
    assert not list(tmp.iterdir())
    assert not img.with_name(img.name + ".grow.e2undo").exists()
    helpers.e2fsck_fn(img)
    fsck_n(img)


# An interrupted grow (mkfs.extref(8), --grow): resize2fs's undo file
# beside the image, IMAGE.grow.e2undo, which every writer then refuses
# to open past, saying the two ways out.

LEFT = "is left from an interrupted mkfs.extref --update --grow"


@pytest.fixture
def small_grow(tmp_path):
    """An auto-sized image of 100 small files, and v2: v1 with 12 MiB
    more (blocks, no inodes: a grow of a few MiB)."""
    v1 = small_tree(tmp_path / "v1", 1, 100, 20000)
    v2 = tmp_path / "v2"
    shutil.copytree(v1, v2, symlinks=True)
    (v2 / "big").write_bytes(random.Random(4).randbytes(12 * MIB))
    img = tmp_path / "img"
    helpers.run([mkfs_bin(), "-q", "-d", str(v1), str(img)])
    return img, v2


def stand_in(tmp_path, body):
    """A resize2fs stand-in: body runs around the real one ($REAL)."""
    real = shutil.which("resize2fs") or "/sbin/resize2fs"
    fake = tmp_path / "resize2fs"
    fake.write_text(f'#!/bin/sh\nREAL="{real}"\n{body}')
    fake.chmod(0o755)
    return fake


def state(pid):
    """A process's state letter (R, S, T, Z...), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def wait_state(pid, states, timeout=60):
    """Wait for a process not ours to reach one of states (None: gone)."""
    for _ in range(timeout * 20):
        if state(pid) in states:
            return
        time.sleep(0.05)
    pytest.fail(f"resize2fs {pid} is {state(pid)}, not in {states}")


def checked(img):
    """fsck.extref -n exits 0 (it may say that another tool wrote: the
    resize2fs no proof followed, e2undo); its output."""
    res = helpers.run([helpers.BUILD_DIR / "fsck/fsck.extref", "-n",
                       str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    return res.stdout


def refused_while_left(img, undo, tmp_path):
    """Every writer refuses, saying the note, and writes nothing; the
    read-only check warns."""
    before = helpers.sha256(img)
    said = f"{undo} {LEFT}"
    how = f"'e2undo {undo} {img}'"
    new = tmp_path / "new"
    new.mkdir(exist_ok=True)
    res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(new),
                       str(img)], check=False)
    assert res.returncode == 1 and said in res.stderr and how in \
        res.stderr and "nothing was changed" in res.stderr, \
        helpers.describe(res)
    fsck = helpers.binary("fsck/fsck.extref")
    res = helpers.run([fsck, "-fy", str(img)], check=False)
    assert res.returncode == 8 and said in res.stderr, helpers.describe(res)
    res = helpers.run([fsck, "-n", str(img)], check=False)
    assert f"warning: {said}" in res.stdout, helpers.describe(res)
    res = helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                       "stats", str(img)], check=False)
    assert said in res.stderr and "not opened for writing" in res.stderr, \
        helpers.describe(res)
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    res = helpers.run([helpers.binary("fuse/extref-fuse"), str(img),
                       str(mnt), "-f"], check=False, timeout=60)
    assert res.returncode == 1 and said in res.stderr and \
        "not mounted" in res.stderr, helpers.describe(res)
    assert helpers.sha256(img) == before


def test_killed_grow_lets_resize2fs_finish(tmp_path, small_grow):
    """mkfs.extref SIGKILLed while its resize2fs runs (the stand-in
    kills it, stops, then execs the real one): resize2fs is not killed
    and finishes alone, holding the image's lock meanwhile (a writer and
    a reader are refused); then the image is grown and clean,
    not updated, the undo file left beside it and said by every writer.
    Stock e2undo puts the image back byte for byte (the file cut back to
    its length); or the file deleted, the grown image is kept and the
    update runs."""
    img, v2 = small_grow
    size, before = img.stat().st_size, helpers.sha256(img)
    pidfile = tmp_path / "pid"
    fake = stand_in(tmp_path, f'echo $$ > "{pidfile}"\nkill -KILL $PPID\n'
                    'kill -STOP $$\nexec "$REAL" "$@"\n')
    res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(v2),
                       str(img)], check=False,
                      env={"EXTREF_RESIZE2FS": fake})
    assert res.returncode == -9, helpers.describe(res)
    pid = int(pidfile.read_text())
    wait_state(pid, ("T",))
    try:
        (tmp_path / "new").mkdir()
        res = helpers.run([mkfs_bin(), "--update", "-d", str(tmp_path /
                           "new"), str(img)], check=False)
        assert res.returncode == 1 and "in use by another extref writer" \
            in res.stderr, helpers.describe(res)
        res = helpers.run([helpers.BUILD_DIR / "fsck/fsck.extref", "-n",
                           str(img)], check=False)
        assert res.returncode == 8 and "in use by another extref writer" \
            in res.stderr, helpers.describe(res)
        assert helpers.sha256(img) == before
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_state(pid, ("Z", None))
    undo = img.with_name(img.name + ".grow.e2undo")
    assert undo.read_bytes()[:8] == b"E2UNDO02"
    assert img.stat().st_size > size
    helpers.e2fsck_fn(img)
    assert "big" not in helpers.debugfs(img, "ls /").stdout    # not updated
    refused_while_left(img, undo, tmp_path)
    back = tmp_path / "back.img"
    shutil.copyfile(img, back)
    res = helpers.run(["e2undo", str(undo), str(back)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    os.truncate(back, size)
    assert helpers.sha256(back) == before
    undo.unlink()
    helpers.run([mkfs_bin(), "-q", "--update", "--grow", "-d", str(v2),
                 str(img)])
    helpers.e2fsck_fn(img)
    assert " 0 problems" in checked(img)
    assert helpers.debugfs_cat(img, "/big") == (v2 / "big").read_bytes()
    assert not undo.exists()


def test_crash_during_resize2fs_is_put_back_with_e2undo(tmp_path,
                                                        small_grow):
    """resize2fs and mkfs.extref both killed at resize2fs's middle write
    (a power cut, a kill of the whole group: strace -e inject): the
    image half grown, the undo file left beside it and said by every
    writer; stock e2undo puts it back (then e2fsck -fy, as it asks): the
    old size, clean, and the update then runs."""
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    img, v2 = small_grow
    blocks = helpers.dumpe2fs_header(img)["Block count"]
    spare = tmp_path / "spare.img"
    shutil.copyfile(img, spare)
    out = tmp_path / "count.strace"
    count = stand_in(tmp_path, f'exec strace -f -qq -o "{out}" '
                     '-e trace=pwrite64 "$REAL" "$@"\n')
    helpers.run([mkfs_bin(), "-q", "--update", "--grow", "-d", str(v2),
                 str(spare)], env={"EXTREF_RESIZE2FS": count,
                                   **helpers.no_leak_check_env()})
    n = out.read_text().count("pwrite64(")
    assert n > 10, n
    fake = stand_in(tmp_path, 'strace -f -qq -o /dev/null -e '
                    f'trace=pwrite64 -e inject=pwrite64:signal=KILL:'
                    f'when={n // 2} "$REAL" "$@"\nkill -KILL $PPID\n')
    res = helpers.run([mkfs_bin(), "--update", "--grow", "-d", str(v2),
                       str(img)], check=False,
                      env={"EXTREF_RESIZE2FS": fake,
                           **helpers.no_leak_check_env()})
    assert res.returncode == -9, helpers.describe(res)
    undo = img.with_name(img.name + ".grow.e2undo")
    assert undo.read_bytes()[:8] == b"E2UNDO02"
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 4, helpers.describe(res)    # half grown
    refused_while_left(img, undo, tmp_path)
    res = helpers.run(["e2undo", str(undo), str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    helpers.run(["e2fsck", "-fy", str(img)], check=False)
    helpers.e2fsck_fn(img)
    assert helpers.dumpe2fs_header(img)["Block count"] == blocks
    undo.unlink()
    assert " 0 problems" in checked(img)
    helpers.run([mkfs_bin(), "-q", "--update", "--grow", "-d", str(v2),
                 str(img)])
    helpers.e2fsck_fn(img)
    assert helpers.debugfs_cat(img, "/big") == (v2 / "big").read_bytes()
