"""The permission model (issue 9, section 2): debugfs.extref --as.

One sequence of requests, each made by a user (uid, gid, groups,
capabilities), runs twice: on an extref image through
``debugfs.extref -w --as ... --cap ...``, and on a loop-mounted XFS image
(``mkfs.xfs -m reflink=1``: the kernel's own rules for FICLONE,
FICLONERANGE, FIDEDUPERANGE and fallocate, besides the VFS rules every
filesystem shares) by a child process that ``setpriv`` gives the same
identity.  Per step the outcome (allowed, EACCES, EPERM, other) must be
the same; a refused step must leave the extref image file byte for byte
as it was.  At the end both trees are compared inode by inode (mode,
owner, size, data, extended attributes: new files' owner and mode, the
setgid directory's group, setuid/setgid and security.capability dropped
on write and chown), the extref image through a read-only loop mount,
and stock e2fsck -fn is clean.

Preserve-mode reflinks (a snapshot that keeps the owner) have no kernel
call: the rule (the source's owner or CAP_CHOWN, else EPERM) is by design,
so those steps carry their expected outcome, and the kernel side makes
the allowed ones with ``cp -a --reflink=always`` as root.
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import helpers

UMASK = 0o022
XFS_SIZE = 320 << 20

ROOT = None
ALICE = (1000, 1000, ())
ALICE100 = (1000, 1000, (100,))
BOB = (1001, 1001, ())
CAROL = (1002, 100, ())
DAVE = (1003, 1003, (0,))       # in the owning group (0) of /ro/acl3

# The kernel's names of the capabilities the library knows (but
# sys_resource, which this machine's bounding set may lack).
CAPS = ["chown", "dac_override", "dac_read_search", "fowner", "fsetid",
        "linux_immutable", "sys_admin", "setfcap"]

DATA = b"A" * 8192

# (kind, path, mode, uid, gid, extra)
TREE = [
    ("dir", "/home", 0o755, 0, 0, None),
    ("dir", "/home/alice", 0o700, 1000, 1000, None),
    ("file", "/home/alice/secret", 0o600, 1000, 1000, None),
    ("dir", "/pub", 0o1777, 0, 0, None),
    ("file", "/pub/afile", 0o644, 1000, 1000, None),
    ("file", "/pub/aro", 0o444, 1000, 1000, None),
    ("file", "/pub/ag", 0o644, 1000, 100, None),
    ("file", "/pub/bfile", 0o666, 1001, 1001, None),
    ("dir", "/pub/mixed", 0o755, 1001, 1001, None),
    ("file", "/pub/mixed/a", 0o644, 1000, 1000, None),
    ("dir", "/shared", 0o2775, 0, 100, None),
    ("file", "/shared/g", 0o664, 0, 100, None),
    ("dir", "/ro", 0o755, 0, 0, None),
    ("file", "/ro/rfile", 0o644, 0, 0, None),
    ("file", "/ro/private", 0o600, 0, 0, None),
    ("file", "/ro/suid", 0o6755, 1000, 1000, None),
    ("file", "/ro/suid2", 0o6755, 1000, 1000, None),
    ("file", "/ro/caps", 0o755, 1000, 1000, "caps"),
    ("file", "/ro/caps2", 0o755, 1000, 1000, "caps"),
    ("file", "/ro/caps3", 0o4755, 1000, 1000, "caps"),
    ("file", "/ro/caps4", 0o755, 1000, 1000, "caps"),
    ("file", "/ro/suid3", 0o6755, 1000, 1000, None),
    ("file", "/ro/suid4", 0o6755, 1000, 1000, None),
    ("file", "/ro/suid5", 0o6745, 1000, 1000, None),
    ("file", "/ro/imm", 0o666, 0, 0, "immutable"),
    ("file", "/ro/app", 0o666, 0, 0, "append"),
    # ACL u:1001:rw, g::r, mask rw, o::- (mode 0660: group bits = mask)
    ("file", "/ro/acl", 0o660, 0, 0, ("acl", 6)),
    # the same with mask r: the named user's rw is limited to r
    ("file", "/ro/acl2", 0o640, 0, 0, ("acl", 4)),
    # ACL g::r, g:100:rw, mask rw, o::rw: a named group, and the owning
    # group's r refusing a write the others' rw would allow
    ("file", "/ro/acl3", 0o666, 0, 0, ("acl", "group")),
    # default ACL u::rwx, u:1001:rwx, g::r-x, m::rwx, o::r-x
    ("dir", "/acld", 0o777, 0, 0, "default_acl"),
]

# vfs_cap_data, revision 2, effective: cap_net_bind_service permitted
CAP_VALUE = struct.pack("<IIIII", 0x02000001, 1 << 10, 0, 0, 0)

# (who, caps, request, expected) -- expected is checked only where the
# kernel has no counterpart (reflink -p); elsewhere the kernel decides,
# and the expectation documents the rule.
STEPS = [
    # path walk: search permission on every directory
    (BOB, "", "cat /home/alice/secret", "EACCES"),
    # a file as a parent: ENOTDIR before any permission, as the walk
    (BOB, "", "mkdir /ro/private/x", "other"),
    (BOB, "", "rm /ro/private/x", "other"),
    (ALICE, "", "cat /home/alice/secret", "ok"),
    (BOB, "dac_read_search", "cat /home/alice/secret", "ok"),
    (BOB, "", "cat /ro/private", "EACCES"),
    (BOB, "dac_override", "cat /ro/private", "ok"),
    (BOB, "", "ls /home/alice", "EACCES"),
    (BOB, "", "write HOST /home/alice/secret", "EACCES"),
    # reflink, copy mode: read on the source, write+search on the dir
    (BOB, "", "reflink /pub/afile /pub/bcopy", "ok"),
    (BOB, "", "reflink /home/alice/secret /pub/x", "EACCES"),
    (BOB, "dac_read_search", "reflink /home/alice/secret /pub/x2", "ok"),
    (BOB, "", "reflink /pub/afile /ro/x", "EACCES"),
    (ALICE, "", "reflink /ro/suid /pub/suidcopy", "ok"),
    (BOB, "", "reflink -r /pub/mixed /pub/m3", "ok"),
    (ALICE100, "", "reflink /ro/suid /shared/acopy", "ok"),
    (ALICE100, "", "reflink -r /pub/mixed /shared/m5", "ok"),
    # sticky directory: only the file's or the directory's owner
    (BOB, "", "rm /pub/afile", "EPERM"),
    (ALICE, "", "rm /pub/bfile", "EPERM"),
    (BOB, "", "rm /pub/bcopy", "ok"),
    (BOB, "fowner", "rm /pub/x2", "ok"),
    # setgid directory: the group is the directory's, subdirs inherit
    (CAROL, "", "write HOST /shared/c", "ok"),
    (BOB, "", "mkdir /shared/b", "EACCES"),
    (CAROL, "", "mkdir /shared/cd", "ok"),
    (BOB, "", "rmdir /shared/cd", "EACCES"),
    (BOB, "", "symlink /ro/l /pub", "EACCES"),
    # a default ACL: the new inode's mode and ACLs from it, not the umask
    (ALICE, "", "write HOST /acld/f", "ok"),
    (ALICE, "", "mkdir /acld/sub", "ok"),
    (ALICE, "", "symlink /acld/l f", "ok"),
    (BOB, "", "write HOST /acld/sub/g", "ok"),
    (CAROL, "", "mkdir /acld/sub/c", "EACCES"),
    (ALICE, "", "reflink /pub/afile /acld/r", "ok"),
    (ALICE, "", "symlink /pub/lnk afile", "ok"),
    # writes: the group's and the others' bits, CAP_DAC_OVERRIDE
    (BOB, "", "pwrite /shared/g 0 100", "EACCES"),
    (CAROL, "", "pwrite /shared/g 0 100", "ok"),
    (BOB, "", "pwrite /ro/rfile 0 100", "EACCES"),
    (BOB, "dac_override", "pwrite /ro/rfile 8192 100", "ok"),
    # file_remove_privs: setuid/setgid and security.capability go
    (ALICE, "", "pwrite /ro/suid 0 10", "ok"),
    (ALICE, "", "pwrite /ro/caps 0 10", "ok"),
    (ROOT, "", "pwrite /ro/caps3 0 10", "ok"),     # caps go, setuid stays
    (ALICE, "", "punch /ro/caps4 0 4096", "ok"),
    (ALICE, "", "truncate /ro/suid3 8192", "ok"),
    (ALICE, "", "dedupe /ro/rfile 0 /ro/suid4 0 4096", "ok"),  # keeps them
    (ALICE, "", "clone_range /ro/rfile 0 /ro/suid5 0 4096", "ok"),
    # immutable: nobody writes; append-only: appends only
    (BOB, ",".join(CAPS), "pwrite /ro/imm 0 10", "EPERM"),
    (BOB, ",".join(CAPS), "truncate /ro/imm 0", "EPERM"),
    (BOB, "", "pwrite /ro/app 0 10", "EPERM"),
    (BOB, "", "pwrite /ro/app 8192 10", "ok"),
    (BOB, "", "truncate /ro/app 0", "EPERM"),
    (BOB, "", "punch /ro/app 0 4096", "EPERM"),
    (BOB, "", "rm /ro/imm", "EACCES"),
    (BOB, "", "chmod 777 /ro/app", "EPERM"),
    # clone_range: read on the source, write on the destination
    (BOB, "", "clone_range /pub/afile 0 /pub/bfile 0 4096", "ok"),
    (ALICE, "", "clone_range /pub/bfile 0 /pub/afile 4096 4096", "ok"),
    (BOB, "", "clone_range /pub/bfile 0 /ro/rfile 0 4096", "EACCES"),
    (BOB, "", "clone_range /pub/aro 0 /ro/app 0 4096", "EPERM"),
    # dedupe: may_dedupe_file (write, owner, or CAP_SYS_ADMIN)
    (BOB, "", "dedupe /ro/rfile 4096 /pub/aro 4096 4096", "EPERM"),
    # the kernel checks the source's range (EINVAL) before may_dedupe_file
    (BOB, "", "dedupe /ro/rfile 1048576 /pub/aro 0 4096", "other"),
    (ALICE, "", "dedupe /ro/rfile 4096 /pub/aro 4096 4096", "ok"),
    (BOB, "sys_admin", "dedupe /pub/aro 0 /ro/rfile 0 4096", "ok"),
    (CAROL, "", "dedupe /ro/rfile 4096 /shared/g 4096 4096", "ok"),
    (BOB, "", "dedupe /ro/rfile 0 /ro/app 0 4096", "ok"),
    # unshare, punch, truncate: write on the file
    (BOB, "", "unshare /pub/afile 0 4096", "EACCES"),
    (ALICE, "", "unshare /pub/afile 0 4096", "ok"),
    (BOB, "", "punch /pub/bfile 0 4096", "ok"),
    (BOB, "", "truncate /pub/afile 0", "EACCES"),
    # ACLs: named user through the mask
    (BOB, "", "pwrite /ro/acl 0 10", "ok"),
    (CAROL, "", "pwrite /ro/acl 0 10", "EACCES"),
    (BOB, "", "pwrite /ro/acl2 0 10", "EACCES"),
    (BOB, "", "cat /ro/acl2", "ok"),
    (DAVE, "", "cat /ro/acl3", "ok"),
    (DAVE, "", "pwrite /ro/acl3 0 10", "EACCES"),
    (BOB, "", "pwrite /ro/acl3 20 10", "ok"),
    (CAROL, "", "pwrite /ro/acl3 0 10", "ok"),
    # chmod: owner or CAP_FOWNER; setgid dropped outside the group
    (BOB, "", "chmod 777 /pub/afile", "EPERM"),
    (ALICE, "", "chmod 2755 /pub/afile", "ok"),
    (ALICE, "", "chmod 2755 /pub/ag", "ok"),
    (BOB, "fowner", "chmod 600 /pub/aro", "ok"),
    # chown: CAP_CHOWN, or the owner to one of its groups
    (ALICE, "", "chown 1001 /pub/afile", "EPERM"),
    (ALICE, "", "chown :100 /pub/afile", "EPERM"),
    (ALICE100, "", "chown :100 /pub/afile", "ok"),
    (BOB, "chown", "chown 1000 /pub/bfile", "ok"),
    (ALICE, "", "chown 1000:1000 /ro/suid2", "ok"),
    (ROOT, "", "chown 1001 /ro/caps2", "ok"),
    # extended attributes, per namespace
    (BOB, "", "setxattr /pub/afile user.x v", "EACCES"),
    (ALICE, "", "setxattr /pub/afile user.x v", "ok"),
    (BOB, "", "setxattr /pub/bfile trusted.x v", "EPERM"),
    (BOB, "sys_admin", "setxattr /pub/bfile trusted.x v", "ok"),
    (BOB, "", "setxattr /pub/bfile security.x v", "EPERM"),
    (ALICE, "", "setxattr /pub/lnk user.x v", "EPERM"),
    (BOB, "", "setxattr /pub user.y v", "EPERM"),
    (BOB, "", "rmxattr /pub/afile user.x", "EACCES"),
    (ALICE, "", "rmxattr /pub/afile user.x", "ok"),
    (ALICE, "", "setxattr -f CAPFILE /ro/suid security.capability",
     "EPERM"),
    (BOB, "setfcap", "setxattr -f CAPFILE /pub/bfile security.capability",
     "ok"),
    # reflink, preserve mode (by design: no kernel call)
    (BOB, "", "reflink -p /pub/afile /pub/p1", "EPERM"),
    (ALICE, "", "reflink -p /pub/afile /pub/p2", "ok"),
    (BOB, "chown", "reflink -p /pub/afile /pub/p3", "ok"),
    (ALICE, "", "reflink -r -p /home/alice /pub/snap", "ok"),
    (BOB, "", "reflink -r -p /pub/mixed /pub/m2", "EPERM"),
    (BOB, "chown", "reflink -r -p /pub/mixed /pub/m4", "ok"),
    (BOB, "chown", "reflink -p /home/alice/secret /pub/p4", "EACCES"),
    (BOB, "chown", "reflink -p /ro/private /pub/p5", "EACCES"),
    (BOB, "chown,dac_read_search", "reflink -p /ro/private /pub/p6", "ok"),
    (ALICE, "", "reflink -p /pub/afile /ro/p7", "EACCES"),
    (ALICE, "", "reflink -r -p /home/alice /ro/snap", "EACCES"),
    (BOB, "", "reflink -r /home/alice /pub/snap2", "EACCES"),
]

# The kernel side of one request, run as the user (argv[1:] the request).
KERNEL_OP = r'''
import ctypes, errno, fcntl, os, struct, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
FICLONERANGE = 0x4020940d
FIDEDUPERANGE = 0xc0189436

def fallocate(path, mode, off, length):
    fd = os.open(path, os.O_WRONLY)
    r = libc.fallocate(fd, mode, ctypes.c_long(off), ctypes.c_long(length))
    e = ctypes.get_errno()
    os.close(fd)
    if r:
        raise OSError(e, os.strerror(e))

def main(a):
    op = a[0]
    if op == "cat":
        os.close(os.open(a[1], os.O_RDONLY))
    elif op == "ls":
        os.listdir(a[1])
    elif op == "reflink":
        r = subprocess.run(["cp", "--reflink=always"] + a[1:],
                           capture_output=True, text=True)
        if r.returncode:
            e = r.stderr
            raise OSError(errno.EACCES if "Permission denied" in e else
                          errno.EPERM if "not permitted" in e else
                          errno.EIO, e)
    elif op == "rm":
        os.unlink(a[1])
    elif op == "rmdir":
        os.rmdir(a[1])
    elif op == "mkdir":
        os.mkdir(a[1], 0o777)
    elif op == "symlink":
        os.symlink(a[2], a[1])
    elif op == "write":
        src = os.stat(a[1])
        fd = os.open(a[2], os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     src.st_mode & 0o7777)
        os.write(fd, open(a[1], "rb").read())
        os.close(fd)
    elif op == "pwrite":
        off, n = int(a[2]), int(a[3])
        append = off == os.stat(a[1]).st_size
        fd = os.open(a[1], os.O_WRONLY | (os.O_APPEND if append else 0))
        os.pwrite(fd, b"\xcd" * n, off)
        os.close(fd)
    elif op == "truncate":
        os.truncate(a[1], int(a[2]))
    elif op == "punch":
        fallocate(a[1], 3, int(a[2]), int(a[3]))
    elif op == "unshare":
        fallocate(a[1], 0x40, int(a[2]), int(a[3]))
    elif op in ("clone_range", "dedupe"):
        src = os.open(a[1], os.O_RDONLY)
        dflags = os.O_WRONLY if op == "clone_range" else os.O_RDONLY
        dst = os.open(a[3], dflags)
        so, do, n = int(a[2]), int(a[4]), int(a[5])
        if op == "clone_range":
            fcntl.ioctl(dst, FICLONERANGE, struct.pack("qQQQ", src, so, n, do))
        else:
            buf = bytearray(struct.pack("QQHHI", so, n, 1, 0, 0) +
                            struct.pack("qQQiI", dst, do, 0, 0, 0))
            fcntl.ioctl(src, FIDEDUPERANGE, buf)
            status = struct.unpack_from("i", buf, 24 + 24)[0]
            if status < 0:
                raise OSError(-status, os.strerror(-status))
    elif op == "chmod":
        os.chmod(a[2], int(a[1], 8))
    elif op == "chown":
        u, _, g = a[1].partition(":")
        os.chown(a[2], int(u) if u else -1, int(g) if g else -1,
                 follow_symlinks=False)
    elif op == "setxattr":
        val = (open(a[3][1:], "rb").read() if a[3].startswith("@")
               else a[3].encode())
        os.setxattr(a[1], a[2], val, follow_symlinks=False)
    elif op == "rmxattr":
        os.removexattr(a[1], a[2], follow_symlinks=False)
    else:
        raise SystemExit("unknown op " + op)

try:
    main(sys.argv[1:])
    print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
'''


def outcome_of_shell(res):
    if res.returncode == 0:
        return "ok"
    if "(EACCES)" in res.stderr:
        return "EACCES"
    if "(EPERM)" in res.stderr:
        return "EPERM"
    return "other"


def kernel_class(name):
    return name if name in ("ok", "EACCES", "EPERM") else "other"


def identity_args(who, caps):
    if who is None:
        return []
    uid, gid, groups = who
    spec = f"{uid}:{gid}" + "".join(f",{g}" for g in groups)
    return ["--as", spec] + (["--cap", caps] if caps else [])


def setpriv_args(who, caps):
    if who is None:
        return []
    uid, gid, groups = who
    args = ["setpriv", f"--reuid={uid}", f"--regid={gid}"]
    args += [f"--groups={','.join(map(str, groups))}"] if groups else \
        ["--clear-groups"]
    if caps:
        plus = ",".join("+" + c for c in caps.split(","))
        args += [f"--inh-caps={plus}", f"--ambient-caps={plus}"]
    return args


def acl_value(kind):
    """system.posix_acl_access as the kernel's xattr interface has it:
    u:1001:rw with mask KIND, or (KIND "group") g:100:rw, mask rw, o::rw."""
    named = (0x08, 6, 100) if kind == "group" else (0x02, 6, 1001)
    mask = 6 if kind == "group" else kind
    ent = [(0x01, 6, 0xffffffff), (0x04, 4, 0xffffffff), named,
           (0x10, mask, 0xffffffff),
           (0x20, 6 if kind == "group" else 0, 0xffffffff)]
    ent.sort(key=lambda e: e[0])
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e)
                                           for e in ent)


def acl_entries(value):
    """(tag, perm, id) of an ACL value; the id only of named entries (the
    one of the others is undefined, and filesystems report it apart)."""
    ent = struct.iter_unpack("<HHI", value[4:])
    return [(t, p, i if t in (0x02, 0x08) else None) for t, p, i in ent]


DEFAULT_ACL = struct.pack("<I", 2) + b"".join(
    struct.pack("<HHI", *e) for e in [
        (0x01, 7, 0xffffffff), (0x02, 7, 1001), (0x04, 5, 0xffffffff),
        (0x10, 7, 0xffffffff), (0x20, 5, 0xffffffff)])


def build_extref(img, work):
    helpers.mkfs(img, "32M")
    data = work / "data"
    data.write_bytes(DATA)
    lines = []
    for kind, path, mode, uid, gid, extra in TREE:
        lines.append(f"mkdir {path}" if kind == "dir"
                     else f"write {data} {path}")
        if extra == "caps":
            (work / "capval").write_bytes(CAP_VALUE)
            lines.append(f"setxattr -f {work / 'capval'} {path} "
                         "security.capability")
        elif isinstance(extra, tuple):
            acl = work / f"acl{extra[1]}"
            acl.write_bytes(acl_value(extra[1]))
            lines.append(f"setxattr -f {acl} {path} system.posix_acl_access")
        elif extra == "default_acl":
            (work / "dacl").write_bytes(DEFAULT_ACL)
            lines.append(f"setxattr -f {work / 'dacl'} {path} "
                         "system.posix_acl_default")
        lines.append(f"chown {uid}:{gid} {path}")
        lines.append(f"chmod {mode:o} {path}")
        if extra == "immutable":
            lines.append(f"set_inode_field {path} flags 0x80010")
        elif extra == "append":
            lines.append(f"set_inode_field {path} flags 0x80020")
    cmds = work / "setup.cmds"
    cmds.write_text("\n".join(lines) + "\n")
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-f", cmds, img])


def build_kernel(mnt):
    for kind, path, mode, uid, gid, extra in TREE:
        p = str(mnt) + path
        if kind == "dir":
            os.mkdir(p)
        else:
            with open(p, "wb") as f:
                f.write(DATA)
        if extra == "caps":
            os.setxattr(p, "security.capability", CAP_VALUE)
        elif isinstance(extra, tuple):
            os.setxattr(p, "system.posix_acl_access", acl_value(extra[1]))
        elif extra == "default_acl":
            os.setxattr(p, "system.posix_acl_default", DEFAULT_ACL)
        os.chown(p, uid, gid)
        os.chmod(p, mode)
        if extra == "immutable":
            helpers.run(["chattr", "+i", p])
        elif extra == "append":
            helpers.run(["chattr", "+a", p])


def kernel_step(mnt, script, who, caps, request, host):
    words = request.split()
    op = words[0]
    flags = [w for w in words[1:] if w.startswith("-")]
    args = [str(host) if w == "HOST" else
            str(host.parent / "capval") if w == "CAPFILE" else
            str(mnt) + w if w.startswith("/") else w
            for w in words[1:] if not w.startswith("-")]
    if op == "setxattr" and "-f" in flags:      # the value, last
        args = args[1:] + ["@" + args[0]]
    if op == "reflink":
        args = (["-r"] if "-r" in flags else []) + args
        if "-p" in flags:
            # no kernel call: the allowed ones made as root, kept alike
            return None, ["cp", "-a", "--reflink=always"] + args
    cmd = setpriv_args(who, caps) + [sys.executable, str(script), op, *args]
    res = helpers.run(cmd, check=False)
    assert res.returncode == 0, helpers.describe(res)
    return res.stdout.strip(), None


def tree_state(top):
    """path -> (mode, uid, gid, size, data, xattrs) under top."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != "lost+found"]
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            data = None
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    data = f.read()
            elif os.path.islink(p):
                data = os.readlink(p)
            xattrs = {}
            for n in os.listxattr(p, follow_symlinks=False):
                # XFS shows its on-disk ACLs to root as trusted.SGI_ACL_*
                if n.startswith(("security.selinux", "trusted.SGI_ACL")):
                    continue
                xattrs[n] = os.getxattr(p, n, follow_symlinks=False)
                if n.startswith("system.posix_acl"):
                    xattrs[n] = acl_entries(xattrs[n])
            size = None if os.path.isdir(p) else st.st_size
            state[os.path.relpath(p, top)] = (oct(st.st_mode), st.st_uid,
                                              st.st_gid, size, xattrs,
                                              data and data[:16])
    return state


def test_permissions_as_the_kernel(tmp_path):
    helpers.require_loop()
    for tool in ("mkfs.xfs", "setpriv", "chattr", "cp"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed")
    os.umask(UMASK)
    img = tmp_path / "extref.img"
    build_extref(img, tmp_path)
    # what the users' processes read: outside root's private tmp_path
    pub = Path(tempfile.mkdtemp(prefix="extref-perm-"))
    try:
        run_sequence(img, pub)
    finally:
        shutil.rmtree(pub)


def run_sequence(img, pub):
    pub.chmod(0o755)
    host = pub / "hostfile"
    host.write_bytes(b"hello\n")
    host.chmod(0o4755)          # a setuid source: "write" keeps no setuid
    script = pub / "kernel_op.py"
    script.write_text(KERNEL_OP)
    script.chmod(0o644)
    (pub / "capval").write_bytes(CAP_VALUE)

    ximg = pub / "xfs.img"
    with open(ximg, "wb") as f:
        f.truncate(XFS_SIZE)
    helpers.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(ximg)])
    mnt = pub / "xfs"
    with helpers.loop_mount(ximg, mnt, options="rw"):
        os.chmod(mnt, 0o755)
        build_kernel(mnt)
        run_steps(img, mnt, script, host)
        kernel = tree_state(mnt)
    # cp -r made the directory before it found the source unreadable;
    # extref refuses before it changes anything
    del kernel["pub/snap2"]
    helpers.e2fsck_fn(img)
    with helpers.loop_mount(img, pub / "extref", options="ro"):
        ours = tree_state(pub / "extref")
    diffs = [f"{p}: extref {ours.get(p)!r:.200}\n   kernel {kernel.get(p)!r:.200}"
             for p in sorted(set(ours) | set(kernel))
             if ours.get(p) != kernel.get(p)]
    assert not diffs, "\n".join(diffs)


def run_steps(img, mnt, script, host):

    debugfs = helpers.binary("debugfs.extref")
    problems = []
    for who, caps, request, expected in STEPS:
        before = helpers.sha256(img)
        req = request.replace("HOST", str(host)).replace(
            "CAPFILE", str(host.parent / "capval"))
        res = helpers.run([debugfs, "-w", *identity_args(who, caps), "-R",
                           req, img], check=False)
        ours = outcome_of_shell(res)
        kern, as_root = kernel_step(mnt, script, who, caps, request, host)
        want = kernel_class(kern) if kern is not None else expected
        if as_root and ours == "ok":
            helpers.run(as_root)
        tag = f"{who} caps={caps or '-'}: {request}"
        if ours != want:
            problems.append(f"{tag}: extref {ours}, kernel/rule {want} "
                            f"({kern}); {res.stderr.strip()}")
        if ours != expected:
            problems.append(f"{tag}: expected {expected}, got {ours}")
        if ours != "ok" and helpers.sha256(img) != before:
            problems.append(f"{tag}: refused but the image changed")
    assert not problems, "\n".join(problems)



def test_library_calls(tmp_path):
    """tests/unit/perm_api: the calls themselves (extref_set_identity,
    extref_namei, extref_chmod/chown/setxattr/removexattr, a write)."""
    img = tmp_path / "api.img"
    helpers.mkfs(img, "8M")
    data = tmp_path / "data"
    data.write_bytes(DATA)
    cmds = tmp_path / "cmds"
    cmds.write_text(f"mkdir /d\nchmod 700 /d\nwrite {data} /d/f\n"
                    f"chown 0:0 /d/f\nchmod 644 /d/f\nwrite {data} /g\n"
                    "chown 1000:1000 /g\nchmod 644 /g\n")
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-f", cmds, img])
    helpers.run([helpers.binary("tests/unit/perm_api"), img])
    helpers.e2fsck_fn(img)
    out = helpers.debugfs(img, "stat /g").stdout
    assert "User:  1000   Group:  1000" in out, out
    assert helpers.debugfs_cat(img, "/d/f")[:2] == b"xy"


def test_shell_identity(tmp_path):
    """--as/--cap and the 'as' command: the identity shown, bad ones
    refused with a message, errors naming the path and the kernel's
    error."""
    img = tmp_path / "id.img"
    helpers.mkfs(img, "8M")
    dbg = helpers.binary("debugfs.extref")
    helpers.run([dbg, "-w", "-R", "mkdir /d", img])
    helpers.run([dbg, "-w", "-R", "chmod 700 /d", img])
    cmds = tmp_path / "cmds"
    cmds.write_text("as\nas 1000:1000,27,100 chown,CAP_FOWNER\nas\n"
                    "as root\nas\n")
    out = helpers.run([dbg, "-f", cmds, img]).stdout
    assert out.count("no identity: nothing is checked") == 2, out
    assert "uid=1000 gid=1000 groups=27,100 caps=cap_chown,cap_fowner " \
        "umask=" in out, out
    res = helpers.run([dbg, "--as", "1000", "-R", "as", img])
    assert "uid=1000 gid=1000 groups= caps=none" in res.stdout, res.stdout
    for bad in (["--as", "x"], ["--as", "1000:"], ["--cap", "chown"],
                ["--as", "1", "--cap", "cap_nonsense"]):
        res = helpers.run([dbg, *bad, "-R", "as", img], check=False)
        assert res.returncode == 1 and "debugfs.extref:" in res.stderr, \
            helpers.describe(res)
    res = helpers.run([dbg, "-R", "as 1000 bogus", img], check=False)
    assert res.returncode == 1 and "bad capability list" in res.stderr
    before = helpers.sha256(img)
    res = helpers.run([dbg, "-w", "--as", "1000", "-R", "mkdir /d/e", img],
                      check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert res.stderr.startswith("mkdir: /d/e: Permission denied (EACCES)"), \
        res.stderr
    assert helpers.sha256(img) == before
    res = helpers.run([dbg, "-w", "--as", "1000", "-R", "chmod 777 /d", img],
                      check=False)
    assert res.stderr.startswith("chmod: /d: Operation not permitted "
                                 "(EPERM)"), res.stderr
    assert helpers.sha256(img) == before
    helpers.e2fsck_fn(img)


def test_walk_through_an_indexed_directory(tmp_path):
    """extref_namei resolves ".", ".." and names of a hash-indexed
    directory (the dot entries are in no index) for an identity."""
    img = tmp_path / "walk.img"
    helpers.mkfs(img, "16M")
    dbg = helpers.binary("debugfs.extref")
    cmds = tmp_path / "cmds"
    cmds.write_text("mkdir /big\n" + "".join(
        f"mkdir /big/entry_with_a_long_name_{i}\n" for i in range(300)))
    helpers.run([dbg, "-w", "-f", cmds, img])
    assert "Root node dump" in helpers.run(
        [dbg, "-R", "htree /big", img]).stdout
    walk = tmp_path / "walk"
    walk.write_text("cd /big/./entry_with_a_long_name_7/../"
                    "entry_with_a_long_name_299\npwd\ncd ..\npwd\n")
    out = helpers.run([dbg, "--as", "1000", "-f", walk, img]).stdout
    assert "\n/big/entry_with_a_long_name_299\n" in out, out
    assert out.endswith("\n/big\n"), out
