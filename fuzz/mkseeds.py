#!/usr/bin/python3
"""fuzz/mkseeds.py OUTDIR --- seed corpora of the libFuzzer targets.

Images are made by the tools of the build (mkfs/mkfs.extref,
debug/debugfs.extref; EXTREF_BUILD_DIR to take them elsewhere), small
(1 MiB of 1 KiB blocks, no journal, 64 inodes) and with the files that
fuzz/fz_ops.c names: files, reflinks, cloned ranges, a directory tree
and its reflink, a file of many one-block clones (a tree of two levels),
a sparse file.  Each is written as fuzz/fz.h's sparse input, several
times with different operation arguments:

  OUTDIR/image/    the image targets (check, clone, rm, pwrite, reflink)
  OUTDIR/journal/  images whose journals hold transactions (journal)
  OUTDIR/shell.img the image fuzz_shell opens (raw)
  OUTDIR/shell/    command lines for fuzz_shell
  OUTDIR/archive/  tar and cpio archives, plain and compressed, of every
                   entry type
  OUTDIR/archive_acl/  pax archives with xattrs, ACLs, a capability and
                   several owners (archive_acl)
  OUTDIR/quota/    images with user, group and project quota files
                   holding entries and limits (quota)

Usage: fuzz/mkseeds.py OUTDIR [--image-only IMG OUT] (the second form
turns one raw image into a sparse input, e.g. an image that
tests/test_fuzz.py kept).
"""

import gzip
import io
import os
import random
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("EXTREF_BUILD_DIR", str(ROOT)))
MKFS = BUILD / "mkfs/mkfs.extref"
DEBUGFS = BUILD / "debug/debugfs.extref"
FIX_CSUMS = 0x01
UUID = "5eed5eed-0000-4000-8000-00000000f022"


def run(cmd, **kw):
    res = subprocess.run([str(c) for c in cmd], capture_output=True,
                         text=True, **kw)
    if res.returncode != 0:
        raise SystemExit(f"mkseeds: {' '.join(map(str, cmd))}: exit "
                         f"{res.returncode}\n{res.stdout}{res.stderr}")
    return res


def sparse(img, flags=FIX_CSUMS, arg16=0, arg0=0, arg1=0, bs=1024):
    """An image file as fz.h's sparse input: its non-zero blocks."""
    data = Path(img).read_bytes()
    nblocks = len(data) // bs
    out = [struct.pack("<BBHIII", flags, {1024: 0, 2048: 1, 4096: 2}[bs],
                       arg16, nblocks, arg0, arg1)]
    zero = bytes(bs)
    for b in range(nblocks):
        blk = data[b * bs:(b + 1) * bs]
        if blk != zero:
            out.append(struct.pack("<I", b) + blk)
    return b"".join(out)


def make_image(path, tmp, csum, many=0, quota=False):
    feats = "^has_journal" + ("" if csum else ",^metadata_csum")
    inode = []
    if quota:
        feats += ",quota,project"
        inode = ["-I", "256"]
    run([MKFS, "-q", "-b", "1024", "-N", "64", *inode, "-U", UUID, "-O",
         feats, path, "1M"],
        env=dict(os.environ, SOURCE_DATE_EPOCH="1700000000"))
    # Data blocks of zeros (but f0's first): the sparse input leaves
    # them out, and the input is nearly all metadata.
    host = {}
    for name, kib in (("f0", 5), ("f1", 12), ("f2", 3), ("f3", 20),
                      ("x", 2), ("y", 7), ("z", 4), ("m", 2 * many + 2)):
        h = tmp / name
        h.write_bytes((b"f0 data " * 128 if name == "f0" else b"") +
                      bytes(kib * 1024 - (1024 if name == "f0" else 0)))
        host[name] = h
    cmds = [f"write {host['f0']} /f0", f"write {host['f1']} /f1",
            f"write {host['f2']} /f2", f"write {host['f3']} /f3",
            "reflink /f0 /r0", "reflink -p /f1 /r1",
            "clone_range /f1 0 /f2 1024 2048",
            "clone_range /f3 4096 /f0 0 4096",
            "mkdir /d", f"write {host['x']} /d/x", f"write {host['y']} /d/y",
            "mkdir /d/s", f"write {host['z']} /d/s/z", "reflink /f3 /d/s/w",
            "setxattr /d/x user.k v", "symlink /d/l /f0",
            "reflink -r /d /e",
            f"write {host['f2']} /holes", "truncate /holes 40K",
            "pwrite -S 9 /holes 30K 1K",
            f"write {host['m']} /many"]
    # One-block clones at every other block: records that do not merge,
    # enough of them for a tree of two levels on 1 KiB nodes.
    for i in range(many):
        cmds.append(f"clone_range /many {2 * i * 1024} /many "
                    f"{(2 * i + 1) * 1024} 1024")
    if quota:
        # owners with entries and limits in the three quota files
        cmds += ["chown 1000:2000 /f1", "chown 1001:2000 /d/x",
                 "chown 1000:2001 /d/s/z",
                 "set_quota user 1000 100 200 10 20",
                 "set_quota user 1001 1 2 1 1",
                 "set_quota group 2000 50 0 0 5",
                 "set_quota project 0 10 20 1 2"]
    script = tmp / "cmds"
    script.write_text("\n".join(cmds) + "\n")
    run([DEBUGFS, "-w", "-f", script, path])
    run(["e2fsck", "-fn", path])


def image_seeds(out, tmp):
    d = out / "image"
    d.mkdir(parents=True, exist_ok=True)
    imgs = []
    for name, csum, many in (("plain", 0, 0), ("csum", 1, 0),
                             ("deep", 0, 80)):
        img = tmp / f"{name}.img"
        make_image(img, tmp, csum, many)
        imgs.append((name, img))
    shutil.copy(tmp / "plain.img", out / "shell.img")
    rng = random.Random(3)
    for name, img in imgs:
        for k in range(6):
            a16, a0, a1 = (rng.getrandbits(16), rng.getrandbits(8),
                           rng.getrandbits(8))
            (d / f"{name}-{k}").write_bytes(sparse(img, FIX_CSUMS, a16,
                                                   a0, a1))
        (d / f"{name}-nofix").write_bytes(sparse(img, 0, 0x213, 1, 2))


def quota_seeds(out, tmp):
    """Images with user, group and project quota files holding entries
    and limits; arg0 is an id the target reads, limits and charges."""
    d = out / "quota"
    d.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    for name, csum in (("quota", 0), ("quota-csum", 1)):
        img = tmp / f"{name}.img"
        make_image(img, tmp, csum, 0, quota=True)
        for k, uid in enumerate((0, 1000, 1001, 2000, 77)):
            a1 = rng.getrandbits(32) & ~(0x80000000 if k % 2 else 0)
            (d / f"{name}-{k}").write_bytes(
                sparse(img, FIX_CSUMS, rng.getrandbits(4), uid, a1))
        (d / f"{name}-nofix").write_bytes(sparse(img, 0, 1, 1000, 3))


SHELL_SEEDS = [
    "ls -l /\nstat /f0\nrefcount\nrefcount 100 50\n",
    "reflink -p /f0 /n\nclone_range /f1 0 /f2 0 2048\n"
    "pwrite -S 7 /f3 1024 3000\n",
    "truncate /r0 100\npunch /f1 0 1K\nunshare /r1\nunshare /f3 0 4K\n",
    "mkdir /x\nsymlink /x/l /f0\nrm /f2\nrmdir /d/s\nrmdir /x\n",
    "setxattr /f0 user.a 1\ngetxattr /f0 user.a\nlistxattr /f0\n"
    "ea_list /d/x\nchmod 600 /f0\nchown 1:2 /f0\n",
    "set_tree_header -n depth 3\ncheck\nset_tree_node 1 nr 0\n"
    "refcount_tree -v\n",
    "set_tree_entry 1 0 count 1\ncheck\nset_tree_header root 7\nrefcount\n",
    "map_raw /f0 0 100 2\nset_block_bitmap -c 100 0\ncheck\ndrop_tree -k\n",
    "du -s --raw /\ndu /d /e\nfiemap -v /f1\nowners 300\ncd /d\npwd\n"
    "cat x\ncd ..\n",
    "dedupe /f0 0 /r0 0 0\ndedupe /f1 0 /r1 1K 1K\n",
    "stats\nstat <5>\nstat <2>\nls <11>\nclose\nls\n",
    "pwrite -S 0x41 -- /holes 1G 10\ntruncate /many 0\ncheck\n",
    "truncate /many 0\ntruncate /many 0\nclone_range /f0 0 /many 0 4K\n"
    "reflink /many /m2\ncheck\n",
    "rm /e/x\nreflink /d/s/w /e/s/new\nclone_range /e/s/w 0 /e/s/new 0 0\n",
]


def shell_seeds(out):
    d = out / "shell"
    d.mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(SHELL_SEEDS):
        (d / f"cmds-{i}").write_text(s)


def archive_seeds(out):
    d = out / "archive"
    d.mkdir(parents=True, exist_ok=True)

    def entries(tf, fmt):
        def add(name, typ, data=b"", **kw):
            ti = tarfile.TarInfo(name)
            ti.type = typ
            ti.size = len(data)
            ti.mtime = 1700000000
            ti.mode = kw.pop("mode", 0o644)
            for k, v in kw.items():
                setattr(ti, k, v)
            tf.addfile(ti, io.BytesIO(data) if data else None)
        add("dir", tarfile.DIRTYPE, mode=0o755)
        add("dir/file", tarfile.REGTYPE, b"hello\n" * 50, uid=12, gid=34)
        add("dir/link", tarfile.SYMTYPE, linkname="file")
        add("dir/hard", tarfile.LNKTYPE, linkname="dir/file")
        add("fifo", tarfile.FIFOTYPE)
        add("dev", tarfile.CHRTYPE, devmajor=1, devminor=3)
        if fmt == tarfile.PAX_FORMAT:
            add("pax", tarfile.REGTYPE, b"x" * 700,
                pax_headers={"SCHILY.xattr.user.k": "v", "mtime":
                             "1700000000.5"})
        add("d2/" + "n" * 120, tarfile.REGTYPE, b"long name")

    for fmt, fname in ((tarfile.USTAR_FORMAT, "ustar"),
                       (tarfile.GNU_FORMAT, "gnu"),
                       (tarfile.PAX_FORMAT, "pax")):
        if fmt == tarfile.USTAR_FORMAT:
            continue    # names over 100 bytes need gnu or pax
        for mode, ext in (("w", "tar"), ("w:gz", "tgz"), ("w:bz2", "tbz"),
                          ("w:xz", "txz")):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode=mode, format=fmt) as tf:
                entries(tf, fmt)
            (d / f"{fname}.{ext}").write_bytes(buf.getvalue())
    cpio_seeds(d)


def posix_acl(entries):
    """A system.posix_acl_* value: version 2, then (tag, perm, id)."""
    return struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, qid) for tag, perm, qid in entries)


def archive_acl_seeds(out):
    """pax archives whose entries carry extended attributes (SCHILY and
    LIBARCHIVE records, text and binary, small and past an inode's room),
    POSIX ACLs (text access and default ACLs, a raw xattr one), an NFSv4
    ACL and a capability, owned by several ids (charged to quota)."""
    d = out / "archive_acl"
    d.mkdir(parents=True, exist_ok=True)
    raw_acl = posix_acl([(0x01, 6, 0xffffffff), (0x02, 4, 1000),
                         (0x04, 4, 0xffffffff), (0x10, 4, 0xffffffff),
                         (0x20, 4, 0xffffffff)])
    cap = struct.pack("<IIIII", 0x02000001, 0x400, 0, 0, 0)
    metas = [
        {"SCHILY.acl.access": "user::rw-,user:1000:r--,group::r--,"
                              "mask::r--,other::r--"},
        {"SCHILY.acl.access": "user::rwx,group::r-x,other::r-x",
         "SCHILY.acl.default": "user::rwx,user:1001:rwx,group::r-x,"
                               "mask::rwx,other::---"},
        {"SCHILY.xattr.user.k": "v", "SCHILY.xattr.trusted.t": "t" * 300,
         "SCHILY.xattr.system.posix_acl_access":
             raw_acl.decode("utf-8", "surrogateescape")},
        {"LIBARCHIVE.xattr.user.b64": "aGVsbG8=",
         "SCHILY.xattr.security.capability":
             cap.decode("utf-8", "surrogateescape")},
        {"SCHILY.acl.ace": "owner@:rw-p--aARWcCos::allow,"
                           "everyone@:r-----a-R-c--s::allow"},
    ]

    def add(tf, name, typ, data=b"", uid=0, gid=0, pax=None):
        ti = tarfile.TarInfo(name)
        ti.type = typ
        ti.linkname = "f" if typ == tarfile.SYMTYPE else ""
        ti.size = len(data)
        ti.mtime = 1700000000
        ti.mode = 0o755 if typ == tarfile.DIRTYPE else 0o644
        ti.uid, ti.gid = uid, gid
        ti.pax_headers = pax or {}
        tf.addfile(ti, io.BytesIO(data) if data else None)

    for i, meta in enumerate(metas):
        for mode, ext in (("w", "tar"), ("w:gz", "tgz")):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode=mode,
                              format=tarfile.PAX_FORMAT) as tf:
                add(tf, "dir", tarfile.DIRTYPE, uid=1000, gid=2000,
                    pax=metas[1])
                add(tf, "dir/f", tarfile.REGTYPE, b"acl\n" * 40,
                    uid=1000 + i, gid=2000, pax=meta)
                add(tf, "dir/l", tarfile.SYMTYPE, pax=metas[2])
                add(tf, "g", tarfile.REGTYPE, b"x" * 3000, uid=1001,
                    gid=2001, pax=metas[(i + 1) % len(metas)])
            (d / f"acl{i}.{ext}").write_bytes(buf.getvalue())


def newc(entries):
    """A cpio archive (newc) of (name, mode, data, ino, nlink, rdev)."""
    out = b""
    for name, mode, data, ino, nlink, (maj, mnr) in entries + [
            ("TRAILER!!!", 0, b"", 0, 1, (0, 0))]:
        n = name.encode() + b"\0"
        hdr = b"070701" + b"".join(b"%08X" % v for v in (
            ino, mode, 0, 0, nlink, 1700000000, len(data), 0, 0, maj, mnr,
            len(n), 0)) + n
        out += hdr + b"\0" * (-len(hdr) % 4) + data + b"\0" * (-len(data) % 4)
    return out + b"\0" * (-len(out) % 512)


def cpio_seeds(d):
    entries = [(".", 0o40755, b"", 1, 2, (0, 0)),
               ("dir", 0o40755, b"", 2, 2, (0, 0)),
               ("dir/file", 0o100644, b"", 3, 2, (0, 0)),
               ("dir/hard", 0o100644, b"hello\n" * 50, 3, 2, (0, 0)),
               ("dir/link", 0o120777, b"file", 4, 1, (0, 0)),
               ("fifo", 0o10644, b"", 5, 1, (0, 0)),
               ("dev", 0o20644, b"", 6, 1, (1, 3)),
               ("sock", 0o140755, b"", 7, 1, (0, 0))]
    raw = newc(entries)
    (d / "newc.cpio").write_bytes(raw)
    (d / "newc.cpio.gz").write_bytes(gzip.compress(raw, mtime=0))


def journal_seeds(out, tmp):
    """Images with a journal (stock mke2fs, 4 MiB, a 1024-block journal)
    holding transactions stock debugfs wrote (jo/jw/jc: descriptors,
    escaped copies, revoke records, commits; the last logs the superblock
    and the group descriptors as they are, for fuzz_replay's validation),
    left unreplayed."""
    d = out / "journal"
    d.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    magic = struct.pack(">I", 0xC03B3998)
    host = tmp / "jdata"
    host.write_bytes(magic + rng.randbytes(1020) + rng.randbytes(2048))
    for i, feats in enumerate(["^metadata_csum,^64bit", "^metadata_csum",
                               "metadata_csum"]):
        img = tmp / f"j{i}.img"
        run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-O", feats,
             "-J", "size=1", "-U", UUID, img,
             "4M"], env=dict(os.environ, E2FSPROGS_FAKE_TIME="1700000000"))
        meta = tmp / f"meta{i}"
        meta.write_bytes(Path(img).read_bytes()[1024:3072])
        script = ("jo\njw -b 4000,4001,4002 " + str(host) + "\njc\n"
                  "jo\njw -r 4001\njc\njo\njw -b 1950 " + str(host) +
                  "\njc\njo\njw -b 1,2 " + str(meta) + "\njc\n")
        run(["debugfs", "-w", "-f", "-", img], input=script)
        for arg0 in (0, 1):
            (d / f"j{i}-{arg0}").write_bytes(
                sparse(img, flags=0, arg0=arg0, arg1=4090 + i))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--image-only":
        Path(sys.argv[3]).write_bytes(sparse(sys.argv[2]))
        return
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = Path(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="extref-seeds-") as t:
        tmp = Path(t)
        image_seeds(out, tmp)
        journal_seeds(out, tmp)
        quota_seeds(out, tmp)
    shell_seeds(out)
    archive_seeds(out)
    archive_acl_seeds(out)


if __name__ == "__main__":
    main()
