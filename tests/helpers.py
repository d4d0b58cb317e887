"""Helpers shared by the extref integration tests.

Everything here drives the built tools and the *stock* e2fsprogs tools
(e2fsck, dumpe2fs, debugfs) and the kernel (loop mounts), so the checks do
not depend on libextref reading its own output.

The build directory is EXTREF_BUILD_DIR, else the first configured of the
repository root, build-test/ and build/.
"""

import contextlib
import hashlib
import os
import shlex
import shutil
import signal
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from crc32c import crc32c_le

REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_build_dir():
    """EXTREF_BUILD_DIR; else the first configured of the repository root
    (an in-tree build), build-test/ (scripts/test) and build/ (scripts/demo)."""
    if "EXTREF_BUILD_DIR" in os.environ:
        return Path(os.environ["EXTREF_BUILD_DIR"])
    for d in (REPO_ROOT, REPO_ROOT / "build-test", REPO_ROOT / "build"):
        if (d / "Makefile").is_file():
            return d
    return REPO_ROOT


BUILD_DIR = _default_build_dir().resolve()

# Binaries, relative to the build directory.
BINARIES = {
    "mkfs.extref": "mkfs/mkfs.extref",
    "debugfs.extref": "debug/debugfs.extref",
}


def binary(name):
    """Path of a built binary; fails the test (not skip) when it is missing."""
    path = BUILD_DIR / BINARIES.get(name, name)
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} not found or not executable: run make first "
                    f"(build dir {BUILD_DIR}; set EXTREF_BUILD_DIR to override)",
                    pytrace=False)
    return str(path)


def _fmt_cmd(cmd):
    return " ".join(shlex.quote(str(c)) for c in cmd)


def describe(res):
    """A CompletedProcess as text, for assertion messages."""
    cmd = res.args if isinstance(res.args, (list, tuple)) else [res.args]
    out = res.stdout if isinstance(res.stdout, str) else repr(res.stdout)
    err = res.stderr if isinstance(res.stderr, str) else repr(res.stderr)
    return (f"$ {_fmt_cmd(cmd)}\n-> exit {res.returncode}\n"
            f"--- stdout ---\n{out}\n--- stderr ---\n{err}")


def run(cmd, check=True, input=None, env=None, text=True, timeout=600):
    """Run cmd (a list); return the CompletedProcess with captured output.

    With check, a non-zero exit fails with the command and its output.
    env entries are added to (not substituted for) the current environment.
    """
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update({k: str(v) for k, v in env.items()})
    cmd = [str(c) for c in cmd]
    res = subprocess.run(cmd, input=input, capture_output=True, text=text,
                         env=full_env, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError("command failed:\n" + describe(res))
    return res


def default_signals():
    """preexec_fn for a child the test will signal: every disposition
    back to its default and no signal blocked, whatever the test run
    inherited.  Under nohup SIGHUP is ignored, in a shell's background
    job SIGINT and SIGQUIT are, and exec keeps an ignored signal ignored:
    a tool that rightly leaves such a signal alone would never see the
    test's signal."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass    # the C library's own real-time signals
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def mkfs(img, size=None, *opts, check=True, env=None):
    """mkfs.extref [opts] IMG [SIZE]."""
    cmd = [binary("mkfs.extref"), *opts, str(img)]
    if size is not None:
        cmd.append(str(size))
    return run(cmd, check=check, env=env)


def journal_blocks(img):
    """The block numbers of the image's journal (inode 8), by stock
    debugfs."""
    res = run(["debugfs", "-R", "blocks <8>", str(img)], check=False)
    return {int(x) for x in res.stdout.split() if x.isdigit()}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def host_tree(root, data=True, times=("mtime", "atime", "ctime"), ns=True,
              xattrs=True, link_xattrs=False, all_nlink=False, extra=None):
    """Every entry below root as the host's kernel reports it, by path
    (lost+found itself left out): type and mode, owner; but for a
    directory (whose size is its blocks), its size and its hard-link group
    (the first path of its inode); a regular file's link count and, with
    data, its bytes' sha256; a symlink's target; a device's number.  What
    a test compares is what its source records: the times named (st_NAME,
    in nanoseconds, or whole seconds without ns), the extended attributes
    (xattrs; a symlink's too with link_xattrs), every entry's link count
    (all_nlink), and what extra(path, lstat) adds."""
    out, names = {}, {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if rel == "lost+found":
                continue
            st = os.lstat(p)
            d = {"mode": st.st_mode, "uid": st.st_uid, "gid": st.st_gid}
            for t in times:
                d[t] = (getattr(st, f"st_{t}_ns") if ns
                        else int(getattr(st, f"st_{t}")))
            if not stat.S_ISDIR(st.st_mode):
                d["size"] = st.st_size
                names.setdefault(st.st_ino, []).append(rel)
            if stat.S_ISREG(st.st_mode):
                d["links"] = st.st_nlink
                if data:
                    d["sha"] = sha256(p)
            elif stat.S_ISLNK(st.st_mode):
                d["target"] = os.readlink(p)
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                d["rdev"] = st.st_rdev
            if all_nlink:
                d["links"] = st.st_nlink
            if xattrs and (link_xattrs or not stat.S_ISLNK(st.st_mode)):
                d["xattrs"] = {k: os.getxattr(p, k, follow_symlinks=False)
                               for k in os.listxattr(p,
                                                     follow_symlinks=False)}
            if extra:
                d.update(extra(p, st))
            out[rel] = d
    for group in names.values():
        for rel in group:
            out[rel]["group"] = min(group)
    return out


# ----- stock e2fsprogs -----

def e2fsck_fn(img):
    """Stock e2fsck -fn must exit 0; shows its output otherwise."""
    res = run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 0, "e2fsck -fn is not clean:\n" + describe(res)
    return res


def dumpe2fs_header(img):
    """dumpe2fs -h as a dict of 'Field name' -> value string."""
    res = run(["dumpe2fs", "-h", str(img)])
    fields = {}
    for line in res.stdout.splitlines():
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        key = key.strip()
        if key and key not in fields:
            fields[key] = value.strip()
    return fields


def dumpe2fs_features(img):
    return set(dumpe2fs_header(img)["Filesystem features"].split())


def debugfs(img, request, text=True):
    """Stock debugfs -R REQUEST IMG (read-only); returns the CompletedProcess."""
    return run(["debugfs", "-R", request, str(img)], text=text)


def debugfs_cat(img, path):
    """File contents read by stock debugfs (bytes)."""
    return debugfs(img, f"cat {path}", text=False).stdout


def debugfs_stat(img, spec):
    """Stock debugfs 'stat SPEC' output, e.g. spec '<5>'."""
    res = debugfs(img, f"stat {spec}")
    return res.stdout


def dump_inode(img, ino, out):
    """Data of inode INO, written by stock debugfs 'dump <INO> OUT'."""
    out = Path(out)
    if out.exists():
        out.unlink()
    debugfs(img, f"dump <{ino}> {out}")
    assert out.exists(), f"debugfs dump <{ino}> wrote nothing for {img}"
    return out.read_bytes()


def parse_uuid(text):
    """'c301e9c0-ce14-...' -> 16 raw bytes as stored in the superblock."""
    hexstr = text.replace("-", "")
    assert len(hexstr) == 32, f"not a UUID: {text!r}"
    return bytes.fromhex(hexstr)


def fs_uuid(img, header=None):
    header = header or dumpe2fs_header(img)
    return parse_uuid(header["Filesystem UUID"])


def csum_seed(img, header=None):
    """The crc32c seed extref uses: s_checksum_seed with metadata_csum_seed,
    else crc32c_le(~0, s_uuid)."""
    header = header or dumpe2fs_header(img)
    features = set(header["Filesystem features"].split())
    if "metadata_csum_seed" in features:
        return int(header["Checksum seed"], 16)
    return crc32c_le(0xFFFFFFFF, fs_uuid(img, header))


# ----- the refcount tree header (libfs/extref_format.h) -----

EXTREF_INO = 5
EXTREF_HDR_MAGIC = 0x48465258  # "XRFH"
EXTREF_VERSION = 1
EXTREF_HDR_CSUM_OFFSET = 0x7C
EXTREF_HDR_SIZE = 0x80

# struct extref_disk_header, little-endian, 0x80 bytes.
_HDR = struct.Struct("<IHHIIII16sIIQIIQ13II")
assert _HDR.size == EXTREF_HDR_SIZE
_HDR_FIELDS = ("magic", "version", "depth", "compat", "ro_compat",
               "incompat", "blocksize", "uuid", "root", "nblocks",
               "nrecords", "free_head", "free_count", "generation")


def parse_header(block):
    """Decode the header block into a dict (reserved words as a tuple)."""
    assert len(block) >= EXTREF_HDR_SIZE, \
        f"inode 5 data is {len(block)} bytes, shorter than the header"
    vals = _HDR.unpack_from(block, 0)
    hdr = dict(zip(_HDR_FIELDS, vals[:14]))
    hdr["reserved"] = vals[14:27]
    hdr["checksum"] = vals[27]
    return hdr


def header_csum(seed, block):
    """ext2fs_crc32c_le(seed, block, EXTREF_HDR_CSUM_OFFSET)."""
    return crc32c_le(seed, block[:EXTREF_HDR_CSUM_OFFSET])


def read_tree_header(img, workdir):
    """Dump inode 5 with stock debugfs; return (data, header dict)."""
    data = dump_inode(img, EXTREF_INO, Path(workdir) / "inode5.dump")
    return data, parse_header(data)


def check_header_csum(img, data, hdr, header=None):
    seed = csum_seed(img, header)
    want = header_csum(seed, data)
    assert hdr["checksum"] == want, (
        f"header checksum 0x{hdr['checksum']:08x}, expected 0x{want:08x} "
        f"(seed 0x{seed:08x})")


def superblock_csum_ok(img):
    """Recompute the ext4 superblock checksum (crc32c_le(~0, sb[:0x3fc]))
    and compare with the stored one: checks our crc32c against e2fsprogs."""
    with open(img, "rb") as f:
        f.seek(1024)
        sb = f.read(1024)
    stored = struct.unpack_from("<I", sb, 0x3FC)[0]
    return stored == crc32c_le(0xFFFFFFFF, sb[:0x3FC]), stored


# ----- loop mounts -----

def loop_skip_reason():
    """Why real loop mounts cannot be tested here, or None."""
    if os.geteuid() != 0:
        return "loop mounts need root (running as uid %d)" % os.geteuid()
    if not os.path.exists("/dev/loop-control"):
        return "/dev/loop-control is missing: no loop device support"
    return None


def require_loop():
    reason = loop_skip_reason()
    if reason:
        pytest.skip(reason)


def loop_devices_for(img):
    """Loop devices backed by img, per losetup -j."""
    res = run(["losetup", "-j", str(Path(img).resolve())], check=False)
    devs = []
    for line in res.stdout.splitlines():
        dev = line.split(":", 1)[0].strip()
        if dev:
            devs.append(dev)
    return devs


def mount_entry(mnt):
    """The /proc/mounts entry (fields list) for mountpoint mnt, or None."""
    mnt = str(Path(mnt).resolve())
    found = None
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 4 and fields[1] == mnt:
                found = fields  # the last one is the top of the stack
    return found


def _cleanup_mount(img, mnt):
    """Unmount mnt and detach every loop device on img; return problems."""
    problems = []
    for _ in range(5):
        if mount_entry(mnt) is None:
            break
        res = run(["umount", str(mnt)], check=False)
        if res.returncode != 0:
            problems.append("umount failed:\n" + describe(res))
    if mount_entry(mnt) is not None:
        run(["umount", "-l", str(mnt)], check=False)
        problems.append(f"{mnt} was still mounted; lazily unmounted")
    for dev in loop_devices_for(img):
        res = run(["losetup", "-d", dev], check=False)
        if res.returncode != 0:
            problems.append(f"losetup -d {dev} failed:\n" + describe(res))
    left = loop_devices_for(img)
    if left:
        problems.append(f"loop devices still attached to {img}: {left}")
    return problems


@contextlib.contextmanager
def loop_mount(img, mnt, options="ro", check=True, extra_args=()):
    """mount [extra_args] -o loop,OPTIONS IMG MNT; yields the CompletedProcess.

    With check, a failed mount fails the test.  The teardown always unmounts
    and detaches the loop device (found with losetup -j), even on failure,
    and fails the test if anything is left behind.
    """
    require_loop()
    mnt = Path(mnt)
    mnt.mkdir(parents=True, exist_ok=True)
    try:
        res = run(["mount", *extra_args, "-o", f"loop,{options}",
                   str(img), str(mnt)], check=False)
        if check:
            assert res.returncode == 0, "mount failed:\n" + describe(res)
        yield res
    except BaseException:
        _cleanup_mount(img, mnt)
        raise
    else:
        problems = _cleanup_mount(img, mnt)
        assert not problems, "\n".join(problems)


def fault_injection_skip_reason():
    """None when the library was built with configure
    --enable-fault-injection (libfs/txn/faultio.c: EXTREF_FAULT,
    EXTREF_FAULT_NOMEM), else why the tests that need it skip.  Judged by
    the symbols of the built libextref.a, not by a setting."""
    lib = BUILD_DIR / "libextref.a"
    if not lib.is_file():
        return None     # not built: let binary() fail the test
    res = subprocess.run(["nm", "-g", "--defined-only", str(lib)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return "nm failed on libextref.a: " + res.stderr.strip()[:200]
    if "extref_fault_io_manager" in res.stdout:
        return None
    return ("libextref was built without configure --enable-fault-injection "
            "(the fault-injecting io manager is test-only; scripts/test "
            "enables it)")


def copy_sources(work):
    """Copy the source tree (git's tracked and unignored files, as they
    are in the working tree) into the directory work, for a build of its
    own (sanitized, production)."""
    files = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached",
         "--others", "--exclude-standard"],
        capture_output=True, check=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        p = REPO_ROOT / f.decode()
        if p.is_file():
            dst = Path(work) / f.decode()
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dst)


def sanitized_build():
    """Whether the tools under test were built with --enable-sanitizers
    (their Makefile's flags carry -fsanitize)."""
    mk = BUILD_DIR / "Makefile"
    return mk.is_file() and any(
        line.startswith("ALL_CFLAGS") or line.startswith("EXTREF_CFLAGS")
        for line in mk.read_text().splitlines()
        if "-fsanitize=" in line)


def no_leak_check_env():
    """Environment additions that turn LeakSanitizer off, for a run it
    cannot check: under strace (LSan cannot work under ptrace) or through
    readline, which libss loads and never frees.  Other ASan checks stay."""
    opts = os.environ.get("ASAN_OPTIONS", "")
    return {"ASAN_OPTIONS": (opts + ":" if opts else "") + "detect_leaks=0"}
