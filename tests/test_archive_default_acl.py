"""mkfs.extref -d ARCHIVE: a default ACL is kept on directories only, as
libarchive's own extraction (bsdtar) and GNU tar do; the kernel refuses
one on any other file (EACCES).  Found by the archive_acl fuzz target's
seeds (fuzz/mkseeds.py)."""
import io
import tarfile

import helpers

DEFAULT = "user::rwx,user:1001:rwx,group::r-x,mask::rwx,other::---"


def test_default_acl_on_directories_only(tmp_path):
    arc = tmp_path / "a.tar"
    with tarfile.open(arc, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, typ in (("dir", tarfile.DIRTYPE), ("f", tarfile.REGTYPE)):
            ti = tarfile.TarInfo(name)
            ti.type = typ
            ti.mode = 0o755
            ti.pax_headers = {"SCHILY.acl.default": DEFAULT,
                              "SCHILY.xattr.user.k": "v"}
            tf.addfile(ti, io.BytesIO(b"") if typ == tarfile.REGTYPE
                       else None)
    img = tmp_path / "x.img"
    helpers.mkfs(img, "8M", "-q", "-d", str(arc))
    helpers.e2fsck_fn(img)
    on_dir = helpers.debugfs(img, "ea_list /dir").stdout
    on_file = helpers.debugfs(img, "ea_list /f").stdout
    assert "system.posix_acl_default" in on_dir, on_dir
    assert "system.posix_acl_default" not in on_file, on_file
    assert "user.k" in on_file and "user.k" in on_dir
