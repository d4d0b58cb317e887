"""Security labels and the two reflink modes.

- copy mode drops every extended attribute and, with -Z CONTEXT (as
  cp -Z), gives every inode it creates that security.selinux;
- a bad context, or -Z with -p, is refused with the image unchanged;
- preserve mode keeps security.*, user.* and trusted.* attributes;
- mkfs.extref --file-contexts FILE labels every file the build creates,
  as libselinux's own selabel_lookup tool looks the path up in FILE;
- chmod and chown of a reflinked file change that inode only.

Attributes are read back with getfattr through the kernel's read-only
mount; stock e2fsck -fn is clean on every image.
"""

import os
import re
import stat

import pytest

import helpers
from helpers import dumpe2fs_header, e2fsck_fn, run, sha256

pytestmark = pytest.mark.skipif(helpers.loop_skip_reason() is not None,
                                reason=str(helpers.loop_skip_reason()))

CTX = "system_u:object_r:copied_t:s0"
HOST_CTX = b"system_u:object_r:host_t:s0:c1,c2\x00"


def shell(img, *requests, check=True):
    """debugfs.extref -w IMG -R REQUEST, once a request."""
    for r in requests:
        res = run([helpers.binary("debugfs.extref"), "-w", str(img),
                   "-R", r], check=check)
    return res


def getfattr(path):
    """{absolute path: {name: bytes}} of path and below, by getfattr."""
    res = run(["getfattr", "-h", "-R", "-d", "-m", "-", "-e", "hex",
               "--absolute-names", str(path)])
    out, cur = {}, None
    for line in res.stdout.splitlines():
        if line.startswith("# file: "):
            cur = out.setdefault(line[len("# file: "):], {})
        elif "=" in line and cur is not None:
            name, _, val = line.partition("=")
            cur[name] = bytes.fromhex(val[2:])
    return out


def all_paths(root):
    paths = [str(root)]
    for dirpath, dirs, files in os.walk(root):
        paths += [os.path.join(dirpath, n) for n in dirs + files]
    return paths


def make_source(src):
    """A host tree with user.*, trusted.* and security.* attributes."""
    (src / "d" / "sub").mkdir(parents=True)
    (src / "d" / "f").write_bytes(os.urandom(20000))
    (src / "d" / "tiny").write_bytes(b"tiny")
    (src / "d" / "sub" / "g").write_bytes(os.urandom(5000))
    os.link(src / "d" / "f", src / "d" / "sub" / "f_link")
    os.symlink("f", src / "d" / "sl")
    os.mkfifo(src / "d" / "fifo")
    os.mkdir(src / "etc")
    (src / "etc" / "passwd").write_bytes(b"root:x:0:0::/:/bin/sh\n")
    (src / "etc" / "keep").write_bytes(b"keep")
    os.symlink("passwd", src / "etc" / "pw")
    for p in ("d", "d/f", "d/sub", "etc/keep"):
        os.setxattr(src / p, "user.u", b"uval")
        os.setxattr(src / p, "trusted.t", b"tval")
        os.setxattr(src / p, "security.selinux", HOST_CTX)
    os.setxattr(src / "d" / "f", "security.ima", b"\x01\x02")


@pytest.fixture
def img(tmp_path):
    src = tmp_path / "src"
    make_source(src)
    image = tmp_path / "img"
    helpers.mkfs(image, "32M", "-q", "-b", "4096", "-d", src)
    return image


def test_copy_mode_label_on_every_new_inode(img, loop_mount):
    shell(img, f"reflink -Z {CTX} /d/f /lab",
          f"reflink -r -Z {CTX} /d /copy",
          "reflink /d/f /plain")
    e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    new = getfattr(mnt / "copy")
    new.update(getfattr(mnt / "lab"))
    paths = all_paths(mnt / "copy") + [str(mnt / "lab")]
    # getfattr lists every inode made: each with the label alone, stored
    # as SELinux stores it (with its NUL)
    assert sorted(new) == sorted(paths)
    for p in paths:
        assert new[p] == {"security.selinux": CTX.encode() + b"\0"}, p
    assert getfattr(mnt / "plain") == {}
    # the source keeps its own, and the data is the source's
    assert getfattr(mnt / "d" / "f")[str(mnt / "d" / "f")][
        "security.selinux"] == HOST_CTX
    assert (mnt / "copy" / "f").read_bytes() == \
        (mnt / "d" / "f").read_bytes()
    assert os.lstat(mnt / "copy" / "f").st_ino == \
        os.lstat(mnt / "copy" / "sub" / "f_link").st_ino


@pytest.mark.parametrize("req", [
    "reflink -Z bad /d/f /x",
    "reflink -Z a:b:c /d/f /x",                 # no level
    "reflink -Z a:b::s0 /d/f /x",               # empty type
    "reflink -Z a:b:c:s0/x /d/f /x",
    "reflink -r -Z a:b:c:s0: /d /x",
    f"reflink -p -Z {CTX} /d/f /x",             # a snapshot keeps its own
])
def test_bad_label_refused_unchanged(img, req):
    before = sha256(img)
    res = shell(img, req, check=False)
    assert res.returncode != 0
    assert "-Z" in res.stderr, res.stderr
    assert sha256(img) == before
    res = run(["debugfs", "-R", "stat /x", str(img)], check=False)
    assert "File not found" in res.stderr


def test_preserve_keeps_security_user_trusted(img, loop_mount):
    shell(img, "reflink -p /d/f /snapf", "reflink -r -p /d /snap")
    e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    src, dst = getfattr(mnt / "d"), getfattr(mnt / "snap")
    moved = {p.replace(str(mnt / "d"), str(mnt / "snap"), 1): v
             for p, v in src.items()}
    assert moved == dst
    names = set().union(*dst.values())
    assert {"security.selinux", "security.ima", "user.u",
            "trusted.t"} <= names
    assert getfattr(mnt / "snapf")[str(mnt / "snapf")] == \
        src[str(mnt / "d" / "f")]


FILE_CONTEXTS = """\
# the default, overridden below
/.*                   system_u:object_r:default_t:s0
/                -d   system_u:object_r:root_t:s0
/d(/.*)?              system_u:object_r:d_t:s0
/d/sub(/.*)?     -d   system_u:object_r:subdir_t:s0
/d/[a-z]+        --   system_u:object_r:d_file_t:s0:c0.c255
/d/sl            -l   system_u:object_r:link_t:s0
/d/fifo          -p   system_u:object_r:fifo_t:s0
/etc/keep        --   <<none>>
/etc/pw?(asswd)?      system_u:object_r:etc_t:s0
"""


def oracle(fc, path, mode):
    """The context libselinux's selabel_lookup tool gives, or None."""
    res = run(["selabel_lookup", "-b", "file", "-k", path, "-t",
               str(mode), "-f", str(fc)], check=False)
    m = re.search(r"Default context: (\S+)", res.stdout)
    return m.group(1) if res.returncode == 0 and m else None


def test_builder_file_contexts(tmp_path, loop_mount):
    src = tmp_path / "src"
    make_source(src)
    fc = tmp_path / "file_contexts"
    fc.write_text(FILE_CONTEXTS)
    image = tmp_path / "img"
    helpers.mkfs(image, "32M", "-q", "-d", src, "--file-contexts", fc)
    e2fsck_fn(image)
    mnt, _ = loop_mount(image)
    got = getfattr(mnt)
    seen, names = set(), {}
    for p in all_paths(mnt):
        names.setdefault(os.lstat(p).st_ino, []).append(p)
    for p in all_paths(mnt):
        have = got.get(p, {}).get("security.selinux")
        # a hard link gets the label of one of its paths
        wants = []
        for q in names[os.lstat(p).st_ino]:
            rel = "/" + os.path.relpath(q, mnt) if q != str(mnt) else "/"
            want = oracle(fc, rel, os.lstat(q).st_mode)
            if want is None:    # <<none>>: what the source gave it
                host = (src / rel[1:]) if rel != "/" else src
                wants.append(os.getxattr(host, "security.selinux"))
            else:
                wants.append(want.encode() + b"\0")
            seen.add(want)
        assert have in wants, p
    # every kind of entry of the file was exercised, lost+found included
    assert None in seen and "system_u:object_r:root_t:s0" in seen
    assert {"system_u:object_r:subdir_t:s0", "system_u:object_r:link_t:s0",
            "system_u:object_r:fifo_t:s0", "system_u:object_r:etc_t:s0",
            "system_u:object_r:d_file_t:s0:c0.c255",
            "system_u:object_r:default_t:s0"} <= seen
    assert got[str(mnt / "d" / "f")]["user.u"] == b"uval"


def test_builder_file_contexts_refused(tmp_path):
    image = tmp_path / "img"
    with open(image, "wb") as f:
        f.write(os.urandom(4096))
        f.truncate(32 << 20)
    before = sha256(image)
    res = helpers.mkfs(image, None, "-F", "--file-contexts",
                       tmp_path / "missing", check=False)
    assert res.returncode != 0 and "missing" in res.stderr
    assert sha256(image) == before
    fc = tmp_path / "fc"
    fc.write_text("/.*  not-a-context\n")
    res = helpers.mkfs(tmp_path / "new", "32M", "--file-contexts", fc,
                       check=False)
    assert res.returncode != 0
    assert "not-a-context" in res.stderr and "/" in res.stderr
    assert not (tmp_path / "new").exists()


def free_blocks(image):
    return int(dumpe2fs_header(image)["Free blocks"])


def test_chmod_chown_of_reflinked_file_copy_nothing(tmp_path, loop_mount):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(os.urandom(1 << 20))
    image = tmp_path / "img"
    helpers.mkfs(image, "32M", "-q", "-d", src)
    shell(image, "reflink /a /b")
    free = free_blocks(image)
    blocks = run(["debugfs", "-R", "blocks /a", str(image)]).stdout.split()
    assert len(blocks) >= 256
    shell(image, "chmod 0600 /b", "chown 5:6 /b")
    e2fsck_fn(image)
    assert free_blocks(image) == free
    for f in ("/a", "/b"):
        assert run(["debugfs", "-R", f"blocks {f}",
                    str(image)]).stdout.split() == blocks, f
    mnt, _ = loop_mount(image)
    a, b = os.lstat(mnt / "a"), os.lstat(mnt / "b")
    assert stat.S_IMODE(b.st_mode) == 0o600 and (b.st_uid, b.st_gid) == (5, 6)
    assert stat.S_IMODE(a.st_mode) != 0o600 and (a.st_uid, a.st_gid) != (5, 6)
    assert (mnt / "a").read_bytes() == (mnt / "b").read_bytes()


def test_builder_file_contexts_without_source(tmp_path):
    """Without -d the build creates / and lost+found: both labeled."""
    fc = tmp_path / "file_contexts"
    fc.write_text(FILE_CONTEXTS)
    image = tmp_path / "img"
    helpers.mkfs(image, "16M", "-q", "--file-contexts", fc)
    e2fsck_fn(image)
    for path, mode in (("/", 0o40755), ("/lost+found", 0o40700)):
        want = oracle(fc, path, mode)
        out = run(["debugfs", "-R", f"ea_get {path} security.selinux",
                   str(image)]).stdout
        assert want and out.strip() == \
            f'security.selinux ({len(want) + 1}) = "{want}\\000"', out


def test_reflink2_options(tmp_path, loop_mount):
    """The library call: refused options change nothing; a label is
    stored (tests/unit/reflink_opts)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(os.urandom(10000))
    os.setxattr(src / "a", "user.u", b"dropped in copy mode")
    image = tmp_path / "img"
    helpers.mkfs(image, "16M", "-q", "-d", src)
    prog = helpers.binary("tests/unit/reflink_opts")
    before = sha256(image)
    res = run([prog, str(image), "refuse"], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert res.stdout.count(": ok") == 13, res.stdout
    assert sha256(image) == before
    res = run([prog, str(image), "label"], check=False)
    assert res.returncode == 0, helpers.describe(res)
    e2fsck_fn(image)
    mnt, _ = loop_mount(image)
    assert getfattr(mnt / "labeled") == {str(mnt / "labeled"): {
        "security.selinux": b"system_u:object_r:lib_t:s0\0"}}


def test_builder_file_contexts_archive(tmp_path):
    """From a tar archive: the file's labels win over the archive's,
    except where it says <<none>>; other attributes stay."""
    tree_ = tmp_path / "tree"
    (tree_ / "etc").mkdir(parents=True)
    (tree_ / "etc" / "keep").write_bytes(b"keep")
    (tree_ / "etc" / "passwd").write_bytes(b"passwd")
    for f in ("keep", "passwd"):
        os.setxattr(tree_ / "etc" / f, "security.selinux",
                    b"system_u:object_r:from_tar_t:s0")
        os.setxattr(tree_ / "etc" / f, "user.x", b"1")
    tar = tmp_path / "a.tar"
    run(["tar", "--xattrs", "--xattrs-include=*", "--format=pax", "-C",
         str(tree_), "-cf", str(tar), "."])
    fc = tmp_path / "file_contexts"
    fc.write_text(FILE_CONTEXTS)
    image = tmp_path / "img"
    helpers.mkfs(image, "16M", "-q", "-d", tar, "--file-contexts", fc)
    e2fsck_fn(image)

    def ea(path):
        return run(["debugfs", "-R", f"ea_list {path}",
                    str(image)]).stdout

    assert oracle(fc, "/etc/keep", 0o100644) is None
    assert 'security.selinux (31) = "system_u:object_r:from_tar_t:s0"' \
        in ea("/etc/keep")
    want = oracle(fc, "/etc/passwd", 0o100644)
    assert f'security.selinux ({len(want) + 1}) = "{want}\\000"' \
        in ea("/etc/passwd")
    assert 'user.x (1) = "1"' in ea("/etc/passwd")


@pytest.mark.skipif(helpers.fault_injection_skip_reason() is not None,
                    reason=str(helpers.fault_injection_skip_reason()))
@pytest.mark.parametrize("req", [f"reflink -r -Z {CTX} /d /new",
                                 f"reflink -Z {CTX} /d/f /new",
                                 "reflink -r -p /d /new"])
def test_failed_reflink_leaves_no_label_behind(img, tmp_path, req):
    """A reflink that fails part-way (the N-th allocation of the library
    fails, for every N until it succeeds) takes back what it made, the
    labels' and the snapshot's xattr blocks included: e2fsck -fn clean."""
    work = tmp_path / "work.img"
    for n in range(1, 200):
        work.write_bytes(img.read_bytes())
        res = run([helpers.binary("debugfs.extref"), "-w", str(work), "-R",
                   req], check=False, env={"EXTREF_FAULT_NOMEM": str(n)})
        e2fsck_fn(work)
        if res.returncode == 0:
            break
        if "while closing" in res.stderr:
            continue    # the reflink was made; the commit at close failed
        assert run(["debugfs", "-R", "stat /new", str(work)],
                   check=False).stderr.count("File not found"), n
    assert n > 5, "no allocation failed"
