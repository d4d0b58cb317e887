"""An archive's owners, modes and POSIX ACLs kept exactly
(libfs/builder/populate_acl.c).

The oracle is stock tar (and cpio) itself: the tree is archived, then
the archive is unpacked by `tar --acls --xattrs` (`cpio -idm`) as root
and built into an image by mkfs.extref -d; the unpacked tree and the
image, read through a read-only kernel mount, must agree path by path
(`getfacl -n`, lstat's type, mode, owner, size, link target and device,
`getfattr -d -m -`).

The tree has ACLs whose mask is wider than the group entry (libarchive
reports the group entry's bits as the mode's: 0755 where the file is
0775), users and groups named by the host (GNU tar records the names
only: they used to become id -1) and ids the host has no name for,
default ACLs, setgid directories.  An ACL entry the image cannot hold
is an error naming the entry.
"""
import grp
import io
import os
import pwd
import stat
import subprocess
import tarfile

import pytest

import helpers

UNNAMED_UID, UNNAMED_GID = 4242, 4343


def named_ids():
    """A user and a group (other than root) this host has names for."""
    uid = next(p.pw_uid for p in sorted(pwd.getpwall(),
                                        key=lambda p: p.pw_uid)
               if p.pw_uid not in (0, UNNAMED_UID))
    gid = next(g.gr_gid for g in sorted(grp.getgrall(),
                                        key=lambda g: g.gr_gid)
               if g.gr_gid not in (0, UNNAMED_GID))
    return uid, gid


def setfacl(path, *args):
    helpers.run(["setfacl", *args, str(path)])


def make_tree(root):
    uid, gid = named_ids()
    if UNNAMED_UID in {p.pw_uid for p in pwd.getpwall()} or \
            UNNAMED_GID in {g.gr_gid for g in grp.getgrall()}:
        pytest.skip("this host names 4242 or 4343")
    root.mkdir()
    os.chmod(root, 0o755)
    d = root / "d"
    d.mkdir()
    # mask wider than the group entry: the file is 0775, group r-x
    f = d / "wide-mask"
    f.write_text("wide\n")
    os.chmod(f, 0o755)
    setfacl(f, "-m", f"u:{uid}:rwx,g:{UNNAMED_GID}:r")
    # mask narrower than the group entry
    g = d / "narrow-mask"
    g.write_text("narrow\n")
    os.chmod(g, 0o664)
    setfacl(g, "-m", f"u:{UNNAMED_UID}:rw,g:{gid}:rw,m::r")
    # owned by ids with and without names, no ACL, odd mode
    h = d / "owned"
    h.write_text("owned\n")
    os.chown(h, UNNAMED_UID, gid)
    os.chmod(h, 0o4751)
    # a setgid directory with access and default ACLs
    s = root / "shared"
    s.mkdir()
    os.chmod(s, 0o2770)
    setfacl(s, "-m", f"u:{uid}:rwx,g:{UNNAMED_GID}:rx")
    setfacl(s, "-d", "-m", f"u:{UNNAMED_UID}:rx,g:{gid}:rwx,o::-")
    (s / "inherits").write_text("x\n")
    os.symlink("../d/wide-mask", s / "link")
    os.mkfifo(root / "fifo", 0o620)
    os.setxattr(d / "owned", "user.note", b"kept")
    os.chmod(d, 0o1777)


ARCHIVERS = {
    "pax": ["tar", "--format=posix", "--acls", "-cf"],
    "pax-xattrs": ["tar", "--format=posix", "--acls", "--xattrs", "-cf"],
    "gnu": ["tar", "--format=gnu", "--acls", "--xattrs", "-cf"],
    "cpio": None,
}


def archive(kind, src, out):
    if ARCHIVERS[kind]:
        helpers.run([*ARCHIVERS[kind], out, "-C", src, "."])
    else:
        names = subprocess.run(["find", "."], cwd=src, check=True,
                               capture_output=True).stdout
        with open(out, "wb") as f:
            subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"],
                           cwd=src, input=names, stdout=f, check=True)


def unpack(kind, arc, dst):
    dst.mkdir()
    if ARCHIVERS[kind]:
        helpers.run(["tar", "--acls", "--xattrs", "--xattrs-include=*",
                     "-xpf", arc, "-C", dst])
    else:
        with open(arc, "rb") as f:
            subprocess.run(["cpio", "-idm", "--quiet"], cwd=dst, stdin=f,
                           check=True)


def describe(root):
    """{path: what getfacl, lstat and getfattr say of it}, lost+found
    left out."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs
                         if x != "lost+found" or d != str(root))
        for name in [""] + sorted(dirs + files):
            p = os.path.join(d, name) if name else d
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            info = {"mode": oct(st.st_mode), "uid": st.st_uid,
                    "gid": st.st_gid}
            if stat.S_ISREG(st.st_mode):
                info["size"] = st.st_size
            if stat.S_ISLNK(st.st_mode):
                info["target"] = os.readlink(p)
            else:
                info["acl"] = helpers.run(["getfacl", "-n", "-p", "-c",
                                           p]).stdout
            info["xattrs"] = helpers.run(["getfattr", "-h", "-d", "-m",
                                          "-", "-e", "hex", "--absolute-"
                                          "names", p]).stdout.replace(p, "")
            out[rel] = info
    return out


@pytest.mark.parametrize("kind", list(ARCHIVERS))
def test_archive_metadata_as_tar_unpacks_it(tmp_path, kind, loop_mount):
    src = tmp_path / "src"
    make_tree(src)
    arc = tmp_path / "a.arc"
    archive(kind, src, arc)
    ref = tmp_path / "ref"
    unpack(kind, arc, ref)
    img = tmp_path / "t.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", arc, img])
    helpers.e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    want, got = describe(ref), describe(mnt)
    assert got.keys() == want.keys()
    for path in sorted(want):
        assert got[path] == want[path], path
    if kind != "cpio":      # the cases the tree is made for were there
        assert "mask::rwx" in want["d/wide-mask"]["acl"]
        assert want["d/wide-mask"]["mode"] == oct(0o100775)
        assert "default:user:4242:r-x" in want["shared"]["acl"]


def pax_entry(tf, name, headers, uid=0):
    ti = tarfile.TarInfo(name)
    ti.mode, ti.uid, ti.gid, ti.size = 0o644, uid, 0, 0
    ti.pax_headers = headers
    tf.addfile(ti, io.BytesIO(b""))


def bad_archive(path, bad):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w",
                      format=tarfile.PAX_FORMAT) as tf:
        pax_entry(tf, "fine", {})
        if bad == "unknown-name":
            pax_entry(tf, "bad", {"SCHILY.acl.access":
                                  "user::rw-\nuser:no-such-user-xr:r--\n"
                                  "group::r--\nmask::r--\nother::---\n"})
        elif bad == "xattr-id-minus-1":
            acl = (b"\x02\0\0\0" + b"\x01\0\x06\0\xff\xff\xff\xff"
                   + b"\x02\0\x04\0\xff\xff\xff\xff"
                   + b"\x04\0\x04\0\xff\xff\xff\xff"
                   + b"\x10\0\x04\0\xff\xff\xff\xff"
                   + b"\x20\0\0\0\xff\xff\xff\xff")
            pax_entry(tf, "bad", {"SCHILY.xattr.system.posix_acl_access":
                                  acl.decode("utf-8", "surrogateescape")})
        elif bad == "xattr-short":
            pax_entry(tf, "bad", {"SCHILY.xattr.system.posix_acl_access":
                                  "\x02\0\0\0\x01\0"})
        else:
            pax_entry(tf, "bad", {}, uid=0xFFFFFFFF)
    path.write_bytes(buf.getvalue())


@pytest.mark.parametrize("bad,why", [
    ("unknown-name", "user:no-such-user-xr"),
    ("xattr-id-minus-1", "user:-1"),
    ("xattr-short", "ACL xattr of 6 bytes"),
    ("uid-minus-1", "Owner or device number out of range")])
def test_what_the_image_cannot_hold_is_an_error(tmp_path, bad, why):
    """Never id -1 in the image: an error naming the entry, no image."""
    arc = tmp_path / "bad.tar"
    bad_archive(arc, bad)
    img = tmp_path / "t.img"
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", arc,
                       img], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "bad" in res.stderr and why in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not img.exists()
