"""Reproducible images from real trees: the same input gives the same
image, byte for byte, whatever the process's memory held and whatever
order the host lists directories in (mkfs.extref(8), ENVIRONMENT;
docs/FORMAT.md on directory blocks).

Two builds of a large tree used to differ in the directory blocks that
libext2fs's leaf split writes from an uncleared buffer: heap contents
past the last entry.  Small trees never split a leaf, which is why the
other reproducibility tests passed.  glibc's MALLOC_PERTURB_ fills
fresh allocations with a pattern that differs per value, so two builds
under two values differ wherever uninitialised memory reaches the image.

Oracles: `cmp` of whole images; stock e2fsck -fn; a reader of the
on-disk format (dirscan.py) that finds non-zero bytes past each entry's
name and past each index block's last entry.
"""

import os
import shutil
import stat
import subprocess
import tempfile

import pytest

import dirscan
import helpers

UUID = "0e2b6a3f-9d1c-4a57-8f00-123456789abc"
ENV = {"SOURCE_DATE_EPOCH": "1000000000"}   # every host time clamped
WIDE = 10000
DOC_BYTES = 16 << 20


def copy_tree(src, dst, reverse, links=None):
    """src copied to dst, each directory's entries made in sorted (or
    reverse sorted) order; hard links kept, owners and modes kept."""
    links = {} if links is None else links
    os.mkdir(dst)
    for name in sorted(os.listdir(src), reverse=reverse):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        st = os.lstat(s)
        if stat.S_ISDIR(st.st_mode):
            copy_tree(s, d, reverse, links)
        elif (st.st_dev, st.st_ino) in links:
            os.link(links[st.st_dev, st.st_ino], d)
            continue
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(s), d)
        elif stat.S_ISREG(st.st_mode):
            shutil.copy2(s, d)
        else:
            continue                    # sockets and such: not in /etc
        links[st.st_dev, st.st_ino] = d
        os.lchown(d, st.st_uid, st.st_gid)
        if not stat.S_ISLNK(st.st_mode):
            os.chmod(d, stat.S_IMODE(st.st_mode))
    shutil.copystat(src, dst)


def wide_tree(dst):
    """One directory of WIDE names of many lengths, a few with data."""
    os.mkdir(dst)
    for i in range(WIDE):
        name = f"n{i}-" + "x" * (i * 7 % 61)
        with open(os.path.join(dst, name), "w") as f:
            if i % 500 == 0:
                f.write(f"{i}\n")


def doc_subset(dst):
    """The first packages of /usr/share/doc, about DOC_BYTES of them."""
    os.mkdir(dst)
    total = 0
    for pkg in sorted(os.listdir("/usr/share/doc")):
        s = os.path.join("/usr/share/doc", pkg)
        if not os.path.isdir(s) or os.path.islink(s):
            continue
        copy_tree(s, os.path.join(dst, pkg), False)
        for d, _, files in os.walk(s):
            total += sum(os.lstat(os.path.join(d, f)).st_size
                         for f in files)
        if total >= DOC_BYTES:
            break


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """{name: (a, b)}: each tree twice, a on this disk in sorted order, b
    in reverse order on a tmpfs (/dev/shm) where the host lists it in
    another order than a."""
    base = tmp_path_factory.mktemp("trees")
    shm = tempfile.mkdtemp(prefix="extref-order-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm")
                           else None)
    made = {}
    try:
        made["wide"] = base / "wide"
        wide_tree(made["wide"])
        made["etc"] = base / "etc"
        copy_tree("/etc", made["etc"], False)
        if os.path.isdir("/usr/share/doc"):
            made["doc"] = base / "doc"
            doc_subset(made["doc"])
        out = {}
        for name, a in made.items():
            b = os.path.join(shm, name)
            copy_tree(a, b, True)
            out[name] = (a, b)
        yield out
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


def build(img, src, perturb, *opts, size=None):
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-U", UUID, "-E",
                 f"hash_seed={UUID}", *opts, "-d", src, img,
                 *([size] if size else [])],
                env=dict(ENV, MALLOC_PERTURB_=perturb))


def same_image(a, b):
    """None when a and b are equal, else cmp's report."""
    res = subprocess.run(["cmp", str(a), str(b)], capture_output=True,
                         text=True)
    if res.returncode == 0:
        return None
    return res.stdout + res.stderr


def listing_orders_differ(a, b):
    return any(os.listdir(os.path.join(a, d)) !=
               os.listdir(os.path.join(b, d))
               for d in ["."] + [e for e in sorted(os.listdir(a))
                                 if os.path.isdir(os.path.join(a, e))][:20])


@pytest.mark.parametrize("tree,opts", [
    ("wide", []), ("wide", ["-b", "1024"]), ("etc", []),
    ("doc", ["--dedup=block"])],
    ids=["wide", "wide-1k", "etc", "doc-dedup"])
def test_build_same_whatever_memory_and_host_order(trees, tmp_path, tree,
                                                   opts):
    """Three builds of one tree: under two MALLOC_PERTURB_ values, and
    from a copy the host lists in another order; one image, byte for
    byte, with no stale byte in a directory block."""
    if tree not in trees:
        pytest.skip("no /usr/share/doc here")
    a, b = trees[tree]
    assert listing_orders_differ(a, b), "the two copies list alike"
    imgs = [tmp_path / f"{i}.img" for i in range(3)]
    build(imgs[0], a, 1, *opts)
    build(imgs[1], a, 170, *opts)
    build(imgs[2], b, 85, *opts)
    helpers.e2fsck_fn(imgs[0])
    assert same_image(imgs[0], imgs[1]) is None, \
        "MALLOC_PERTURB_ changed the image: " + same_image(imgs[0], imgs[1])
    assert same_image(imgs[0], imgs[2]) is None, \
        "the host's order changed the image: " + same_image(imgs[0],
                                                            imgs[2])
    assert dirscan.stale_bytes(imgs[0]) == []


def test_wide_directory_is_indexed_two_levels_at_1k(trees, tmp_path):
    """The 1 KiB build above exercises the index growing a level (and
    the leaf splits under it): its root has an indirect level."""
    img = tmp_path / "k.img"
    build(img, trees["wide"][0], 1, "-b", "1024")
    out = helpers.debugfs(img, "htree /").stdout
    assert "Indirect levels: 1" in out, out[:400]


def update(img, src, perturb, *opts):
    helpers.run([helpers.binary("mkfs.extref"), "-q", "--update", *opts,
                 "-d", src, img], env=dict(ENV, MALLOC_PERTURB_=perturb))


def test_update_same_whatever_memory(trees, tmp_path):
    """--update of /etc with the wide directory, then --delete down to
    half of it (names unlinked from an indexed directory): the same
    image under two MALLOC_PERTURB_ values, no stale byte left (a
    removed name is cleared, not left in its neighbour's slack)."""
    half = tmp_path / "half"
    os.mkdir(half)
    for name in sorted(os.listdir(trees["wide"][0]))[::2]:
        os.link(os.path.join(trees["wide"][0], name), half / name)
    imgs = []
    for perturb in (1, 170):
        img = tmp_path / f"u{perturb}.img"
        build(img, trees["etc"][0], perturb, "-b", "1024", size="48M")
        imgs.append(img)
    for img, perturb in zip(imgs, (1, 170)):
        update(img, trees["wide"][0], perturb, "--at", "/")
    helpers.e2fsck_fn(imgs[0])
    assert dirscan.stale_bytes(imgs[0]) == []
    assert same_image(*imgs) is None, same_image(*imgs)
    for img, perturb in zip(imgs, (1, 170)):
        update(img, half, perturb, "--at", "/", "--delete")
    helpers.e2fsck_fn(imgs[0])
    assert same_image(*imgs) is None, same_image(*imgs)
    assert dirscan.stale_bytes(imgs[0]) == []
    out = helpers.debugfs(imgs[0], "ls -p /").stdout
    names = {line.split("/")[5] for line in out.splitlines()
             if line.count("/") >= 6 and line.split("/")[1] != "0"}
    assert names - {".", "..", "lost+found"} == set(os.listdir(half))


def test_convert_same_whatever_memory(trees, tmp_path):
    """--convert --dedup=block of one stock mke2fs -d image of /etc,
    twice under two MALLOC_PERTURB_ values: the same image."""
    ext4 = tmp_path / "ext4.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-U", UUID, "-E",
                 f"hash_seed={UUID}", "-d", trees["etc"][0], ext4, "64M"],
                env={"E2FSPROGS_FAKE_TIME": "1000000000"})
    imgs = []
    for perturb in (1, 170):
        img = tmp_path / f"c{perturb}.img"
        shutil.copyfile(ext4, img)
        helpers.run([helpers.binary("mkfs.extref"), "-q", "--convert",
                     "--dedup=block", img],
                    env=dict(ENV, MALLOC_PERTURB_=perturb))
        imgs.append(img)
    helpers.e2fsck_fn(imgs[0])
    assert same_image(*imgs) is None, same_image(*imgs)
