"""Safety of debugfs.extref and the recursive reflink on hostile input.

    /usr/bin/python3 -m pytest tests/test_safety_shell.py

Each test builds its image with mkfs.extref and, for the hostile parts,
stock debugfs -w or dd; it checks that what the shell refuses leaves the
image byte for byte as it was (files read back through stock debugfs),
that stock e2fsck -fn and fsck.extref -fn stay clean, and that nothing
hangs (every run has a timeout).
"""

import subprocess

import pytest

import helpers as H

SHELL = "debugfs.extref"
TIMEOUT = 60
DATA = b"extref payload " * 300     # 4.5 KiB: several 1 KiB blocks
MAX_DEPTH = 1024                    # docs/debugfs.extref.8, reflink -r


# ----- helpers -----

def dbg(img, *requests, rw=False, extra=(), text=True):
    """debugfs.extref [-w] -R REQUEST, or -f - with several requests."""
    cmd = [H.binary(SHELL), *extra]
    if rw:
        cmd.append("-w")
    if len(requests) == 1:
        cmd += ["-R", requests[0]]
        inp = None
    else:
        cmd += ["-f", "-"]
        inp = "\n".join(requests) + "\n"
        if not text:
            inp = inp.encode("latin-1")
    cmd.append(str(img))
    return H.run(cmd, check=False, input=inp, text=text, timeout=TIMEOUT)


def stock_w(img, requests):
    """Stock debugfs -w -f with raw request lines (bytes)."""
    return H.run(["debugfs", "-w", "-f", "-", str(img)], check=True,
                 input=b"\n".join(requests) + b"\n", text=False,
                 timeout=TIMEOUT)


def fsck_extref_fn(img):
    res = H.run([H.binary("fsck/fsck.extref"), "-fn", str(img)],
                check=False, timeout=TIMEOUT)
    assert res.returncode == 0, "fsck.extref -fn: " + H.describe(res)


def all_clean(img):
    H.e2fsck_fn(img)
    fsck_extref_fn(img)


def refused(res, *words):
    """Exit 1, one clear message naming the problem, no crash."""
    assert res.returncode == 1, H.describe(res)
    err = res.stderr if isinstance(res.stderr, str) else res.stderr.decode()
    for w in words:
        assert w in err, f"{w!r} not in stderr:\n" + H.describe(res)


@pytest.fixture
def base(tmp_path, mkfs):
    """/a (a file with a reflinked copy, a subdirectory) on a clean image."""
    img = tmp_path / "fs.img"
    H.mkfs(img, "16M", "-q")
    host = tmp_path / "data"
    host.write_bytes(DATA)
    res = dbg(img, "mkdir /a", "mkdir /a/b", f"write {host} /a/f",
              "reflink /a/f /a/b/g", rw=True)
    assert res.returncode == 0, H.describe(res)
    all_clean(img)
    return img


def unchanged(img, digest):
    """The image is byte for byte as before, its files read back whole."""
    assert H.sha256(img) == digest, f"{img} changed"
    assert H.debugfs_cat(img, "/a/f") == DATA
    assert H.debugfs_cat(img, "/a/b/g") == DATA


# ----- 1. reflink -r into itself, loops, depth -----

@pytest.mark.parametrize("src,dst", [
    ("/a", "/a/x"),
    ("/a", "/a/b/x"),
    ("/", "/c"),
    ("/a/b", "/a/b/x"),
])
def test_reflink_r_into_itself_refused(base, src, dst):
    digest = H.sha256(base)
    res = dbg(base, f"reflink -r {src} {dst}", rw=True)
    refused(res, "Cannot copy a directory into itself")
    unchanged(base, digest)
    all_clean(base)


def test_reflink_r_beside_itself_still_works(base):
    res = dbg(base, "reflink -r /a /c", rw=True)
    assert res.returncode == 0, H.describe(res)
    assert H.debugfs_cat(base, "/c/f") == DATA
    assert H.debugfs_cat(base, "/c/b/g") == DATA
    all_clean(base)


def test_reflink_r_directory_loop_refused(base):
    """A directory hard link (made by stock debugfs) would copy forever."""
    stock_w(base, [b"ln /a /a/b/loop"])
    digest = H.sha256(base)
    res = dbg(base, "reflink -r /a /c", rw=True)
    refused(res, "Directory reached twice")
    unchanged(base, digest)


def _chain(img, depth):
    """/d/d/.../d, depth directories, made by stock debugfs."""
    reqs = []
    for _ in range(depth):
        reqs += [b"mkdir d", b"cd d"]
    stock_w(img, reqs)


def test_reflink_r_too_deep_refused(tmp_path, mkfs):
    img = tmp_path / "deep.img"
    H.mkfs(img, "16M", "-q")
    _chain(img, MAX_DEPTH + 2)      # /d and MAX_DEPTH + 1 levels below
    all_clean(img)
    digest = H.sha256(img)
    res = dbg(img, "reflink -r /d /c", rw=True)
    refused(res, "too deep")
    assert H.sha256(img) == digest
    all_clean(img)


def test_reflink_r_at_depth_limit_copies(tmp_path, mkfs):
    img = tmp_path / "deep.img"
    H.mkfs(img, "16M", "-q")
    _chain(img, MAX_DEPTH + 1)      # /d and MAX_DEPTH levels below
    res = dbg(img, "reflink -r /d /c", rw=True)
    assert res.returncode == 0, H.describe(res)
    deepest = "/c" + "/d" * MAX_DEPTH
    st = H.debugfs(img, f"stat {deepest}").stdout
    assert "Type: directory" in st, st
    all_clean(img)


# ----- 2. dump never truncates the host file for a bad image path -----

@pytest.mark.parametrize("path", ["/missing", "/a", "/", "<2>", "/a/lnk"])
def test_dump_bad_path_leaves_host_file(base, tmp_path, path):
    stock_w(base, [b"symlink /a/lnk /a/f"])
    digest = H.sha256(base)
    keep = tmp_path / "keep.txt"
    keep.write_bytes(b"precious\n")
    res = dbg(base, f"dump {path} {keep}")
    assert res.returncode == 1, H.describe(res)
    assert keep.read_bytes() == b"precious\n"
    assert H.sha256(base) == digest
    all_clean(base)


def test_dump_missing_host_file_not_created(base, tmp_path):
    out = tmp_path / "new.txt"
    res = dbg(base, f"dump /a {out}")
    assert res.returncode == 1, H.describe(res)
    assert not out.exists()


@pytest.mark.parametrize("path", ["/a", "/missing"])
def test_cat_bad_path_fails_cleanly(base, path):
    res = dbg(base, f"cat {path}", text=False)
    assert res.returncode == 1, H.describe(res)
    assert res.stdout == b""


def test_dump_regular_file_still_works(base, tmp_path):
    out = tmp_path / "out"
    out.write_bytes(b"old contents, longer than nothing")
    res = dbg(base, f"dump /a/b/g {out}")
    assert res.returncode == 0, H.describe(res)
    assert out.read_bytes() == DATA


# ----- 3. writes verify checksums; read-only says when it does not -----

def _bad_inode_csum(img):
    stock_w(img, [b"set_inode_field /a/f checksum 0x1234"])
    res = H.run(["debugfs", "-R", "stat /a/f", str(img)], check=False)
    assert "checksum does not match" in res.stderr, H.describe(res)


@pytest.mark.parametrize("request_", [
    "truncate /a/f 0",
    "pwrite /a/f 0 1024",
    "punch /a/f 0 1024",
    "chmod 600 /a/f",
    "rm /a/f",
    "reflink /a/f /a/h",
    "unshare /a/f",
])
def test_write_over_bad_inode_checksum_refused(base, request_):
    _bad_inode_csum(base)
    digest = H.sha256(base)
    res = dbg(base, request_, rw=True)
    refused(res, "checksum does not match", "fsck.extref")
    assert H.sha256(base) == digest


def _bad_sb_csum(img):
    # s_checksum is the superblock's last 4 bytes (offset 1024 + 0x3fc)
    with open(img, "r+b") as f:
        f.seek(1024 + 0x3FC)
        old = f.read(4)
        f.seek(1024 + 0x3FC)
        f.write(bytes(b ^ 0xFF for b in old))


def _bad_desc_csum(img):
    # group 0's descriptor: block 2 (1 KiB blocks), bg_checksum at 0x1e
    with open(img, "r+b") as f:
        f.seek(2048 + 0x1E)
        old = f.read(2)
        f.seek(2048 + 0x1E)
        f.write(bytes(b ^ 0xFF for b in old))


@pytest.mark.parametrize("corrupt,what", [
    (_bad_sb_csum, "Superblock checksum"),
    (_bad_desc_csum, "Group descriptor checksum"),
])
def test_rw_open_with_bad_checksums_refused(base, corrupt, what):
    corrupt(base)
    digest = H.sha256(base)
    res = dbg(base, "mkdir /z", rw=True)
    refused(res, what, "fsck.extref")
    assert H.sha256(base) == digest


def test_ro_open_bad_sb_checksum_says_so_once(base):
    _bad_sb_csum(base)
    digest = H.sha256(base)
    res = dbg(base, "ls /a")
    assert res.returncode == 0, H.describe(res)
    assert res.stdout.split() == [".", "..", "b", "f"]
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "checksum" in lines[0] \
        and "without verifying" in lines[0], H.describe(res)
    assert H.sha256(base) == digest


def test_ro_open_clean_image_says_nothing(base):
    res = dbg(base, "ls /a")
    assert res.returncode == 0 and res.stderr == "", H.describe(res)


def test_ro_bad_inode_checksum_fails_unless_n(base):
    """As stock debugfs: an error by default, read anyway with -n."""
    _bad_inode_csum(base)
    res = dbg(base, "cat /a/f")
    refused(res, "checksum does not match")
    res = dbg(base, "cat /a/f", extra=["-n"], text=False)
    assert res.returncode == 0, H.describe(res)
    assert res.stdout == DATA


def test_n_with_w_allows_only_expert_commands(base):
    _bad_sb_csum(base)
    digest = H.sha256(base)
    res = dbg(base, "mkdir /z", rw=True, extra=["-n"])
    refused(res, "only the expert commands may write")
    assert "checksums not verified" in res.stderr
    assert H.sha256(base) == digest
    res = dbg(base, "set_block_bitmap 5000 1", rw=True, extra=["-n"])
    assert res.returncode == 0, H.describe(res)
    assert "checksums not verified" in res.stderr
    assert H.sha256(base) != digest


# ----- 4. names with control and non-ASCII bytes, escaped -----

NAMES = [b"a\x01b\x1b[31mX", b"caf\xc3\xa9", b"hi\xff\x80z", b"d\x7f",
         b"back\\sl", b"nl\nx\ty"]


def stock_escape(name):
    """As stock debugfs's ls prints a name (checked against it below)."""
    return "".join(chr(c) if 0x20 <= c < 0x7F and c != 0x5C
                   else f"\\x{c:02x}" for c in name)


@pytest.fixture
def named(base, tmp_path):
    host = str(tmp_path / "data").encode()
    stock_w(base, [b"mkdir /n", b"mkdir /n/dir\x1b]0;evil\x07"])
    for n in NAMES:
        # one -R each, quoted: its parser keeps a newline or tab in quotes
        req = b'write ' + host + b' "/n/' + n + b'"'
        res = subprocess.run([b"debugfs", b"-w", b"-R", req, bytes(base)],
                             capture_output=True, timeout=TIMEOUT)
        assert res.returncode == 0 and b"Allocated inode" in res.stdout, res
    all_clean(base)
    return base


def _only_printable(b):
    bad = [c for c in b if (c < 0x20 and c not in (0x0A,)) or c >= 0x7F]
    assert not bad, f"raw bytes {bad!r} in {b!r}"


def test_stock_debugfs_escapes_so(named):
    """The oracle: stock debugfs's ls shows each name as stock_escape."""
    out = H.run(["debugfs", "-R", "ls /n", str(named)]).stdout
    for n in NAMES:
        assert stock_escape(n) in out, out


def test_ls_escapes_names(named):
    res = dbg(named, "ls /n", text=False)
    assert res.returncode == 0, H.describe(res)
    _only_printable(res.stdout)
    got = res.stdout.decode().splitlines()
    for n in NAMES:
        assert stock_escape(n) in got, got
    res = dbg(named, "ls -l /n", text=False)
    _only_printable(res.stdout)
    assert any(line.endswith(stock_escape(NAMES[0]))
               for line in res.stdout.decode().splitlines())


@pytest.mark.parametrize("request_", [
    "du /n",
    "stat /n/nothere\x1b[2J",
    "cat /n/nothere\x01",
    "ls /n/dir\x1b]0;evil\x07",
    "cd /n/dir\x1b]0;evil\x07\npwd",
    "fiemap /n/a\x01b\x1b[31mX",
])
def test_shell_output_never_raw(named, request_):
    reqs = request_.split("\n")
    res = dbg(named, *reqs, text=False)
    _only_printable(res.stdout.replace(b"\t", b" "))
    _only_printable(res.stderr)


def test_owners_and_pwd_paths_escaped(named):
    res = dbg(named, "cd /n/dir\x1b]0;evil\x07", "pwd", text=False)
    assert res.returncode == 0, H.describe(res)
    assert b"/n/dir\\x1b]0;evil\\x07" in res.stdout
    out = H.run(["debugfs", "-R", "blocks /n/caf\u00e9",
                 str(named)]).stdout.split()
    res = dbg(named, f"owners {out[0]}", text=False)
    assert res.returncode == 0, H.describe(res)
    _only_printable(res.stdout)
    assert b"caf\\xc3\\xa9" in res.stdout
