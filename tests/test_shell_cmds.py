"""debugfs.extref's commands from stock debugfs, against stock debugfs.

    /usr/bin/python3 -m pytest tests/test_shell_cmds.py

ncheck, icheck, blocks, bmap, dirsearch, ffb, ffi, ls -p, htree,
set_inode_field and set_super_value run on the same image with
debugfs.extref and with stock debugfs (the oracle) and their outputs are
compared.  Stock debugfs prints its version line ("debugfs 1.47.0 ...")
on stderr, which is not compared; every other normalisation is named
where it is made.  rdump, dump -p, stat's added lines, owners and help
are checked against the image as stock debugfs reads it and against the
host files they make.
"""

import os
import re
import shutil
import stat as st

import pytest

import helpers as H

SHELL = "debugfs.extref"
UTC = {"TZ": "UTC"}


def ours(img, request, rw=False, check=True, env=None):
    cmd = [H.binary(SHELL)] + (["-w"] if rw else []) + ["-R", request,
                                                         str(img)]
    res = H.run(cmd, check=False, env=env)
    if check:
        assert res.returncode == 0, H.describe(res)
    return res


def stock(img, request, rw=False, env=None):
    cmd = ["debugfs"] + (["-w"] if rw else []) + ["-R", request, str(img)]
    return H.run(cmd, env=env)


def ino_of(img, path):
    out = stock(img, f"stat {path}").stdout
    return int(re.match(r"Inode: (\d+)", out).group(1))


def stock_blocks(img, path):
    return [int(b) for b in stock(img, f"blocks {path}").stdout.split()]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """An image with files, a reflinked copy, a symlink, a FIFO, devices,
    an xattr, a project id, and /d/e indexed (by stock e2fsck -D)."""
    top = tmp_path_factory.mktemp("shellcmds")
    src = top / "src"
    (src / "d" / "e").mkdir(parents=True)
    (src / "a").write_bytes(b"hello\n")
    data = os.urandom(50000)
    (src / "big").write_bytes(data)
    (src / "d" / "big2").write_bytes(os.urandom(40000))
    for i in range(200):
        (src / "d" / "e" / f"f{i}").write_text(f"{i}\n")
    os.symlink("a", src / "lnk")
    os.mkfifo(src / "fifo")
    img = top / "base.img"
    # 1 KiB blocks: /d/e's 200 entries then need several (an index)
    H.mkfs(img, "8M", "-q", "-b", "1024", "-d", str(src))
    requests = "\n".join(["reflink /big /big3",
                          "setxattr /a user.foo bar",
                          "chown 1000:1001 /a", "chmod 0640 /a"]) + "\n"
    H.run([H.binary(SHELL), "-w", "-f", "-", str(img)], input=requests)
    H.run(["debugfs", "-w", "-f", "-", str(img)],
          input="mknod dev0 c 4 65\nmknod blk0 b 8 1\n"
                "set_inode_field /a projid 42\n"
                # 259:70000, which only the new encoding in i_block[1]
                # holds (stock mknod takes numbers below 256)
                "sif /blk0 block[0] 0\nsif /blk0 block[1] 0x11110370\n")
    res = H.run(["e2fsck", "-fyD", str(img)], check=False)
    assert res.returncode in (0, 1), H.describe(res)
    H.e2fsck_fn(img)
    assert "EXT2_INDEX_FL" in stock(img, "stat /d/e").stdout or \
        "Flags: 0x81000" in stock(img, "stat /d/e").stdout
    return img


@pytest.fixture
def img(base, tmp_path):
    path = tmp_path / "fs.img"
    shutil.copyfile(base, path)
    return path


def same_as_stock(img, request, env=None):
    mine = ours(img, request, env=env).stdout
    theirs = stock(img, request, env=env).stdout
    assert mine == theirs, f"{request}:\n--- ours\n{mine}--- stock\n{theirs}"
    return mine


# ----- lookups, compared with stock debugfs -----

def test_ncheck_matches_stock(base):
    inos = [ino_of(base, p) for p in ("/a", "/big", "/d", "/big3",
                                      "/d/e/f7", "/lnk")]
    req = "ncheck " + " ".join(map(str, inos))
    mine = ours(base, req).stdout
    assert mine == root_slash(stock(base, req).stdout)
    assert f"{inos[4]}\t/d/e/f7\n" in mine
    req = f"ncheck -c {inos[0]} {inos[5]}"
    assert ours(base, req).stdout == root_slash(stock(base, req).stdout)


def root_slash(text):
    """Stock 1.47.0 joins the root's path "/" and a name with another "/"
    ("//a"); ours prints "/a": that doubled slash is the only change."""
    return re.sub(r"^(\d+)\t//", r"\1\t/", text, flags=re.M)


def test_icheck_lists_every_owner(base):
    a, big, big3 = (ino_of(base, p) for p in ("/a", "/big", "/big3"))
    ablk = stock_blocks(base, "/a")[0]
    shared = stock_blocks(base, "/big")[5]
    assert stock_blocks(base, "/big3")[5] == shared
    free = int(stock(base, "ffb 1 100").stdout.split()[-1])
    req = f"icheck {ablk} {free} {shared} 1"
    mine = ours(base, req).stdout.splitlines()
    theirs = stock(base, req).stdout.splitlines()
    # Stock names the first owner of a block; ours names every one: the
    # shared block has a second line, the others match stock's exactly.
    assert theirs == ["Block\tInode number", f"{ablk}\t{a}",
                      f"{free}\t<block not found>", f"{shared}\t{big}",
                      "1\t<block not found>"]
    assert mine == theirs[:4] + [f"{shared}\t{big3}"] + theirs[4:]


def test_blocks_bmap_dirsearch_ffb_ffi_match_stock(base):
    for req in ("blocks /big", "blocks /a", "blocks /fifo", "bmap /big 0",
                "bmap /big 17", "bmap /big 4000", "bmap /d/e 2",
                "dirsearch /d big2", "dirsearch /d/e f150",
                "dirsearch /d/e nosuch", "ffb", "ffb 5 1000", "ffi",
                "ffi 2 0100644", f"ffi {ino_of(base, '/d')} 040755"):
        same_as_stock(base, req)


def test_ls_p_matches_stock_and_ls_l_has_stock_dates(base):
    for req in ("ls -p /", "ls -p /d", "ls -p /d/e"):
        same_as_stock(base, req)
    mine = ours(base, "ls -l /", env=UTC).stdout
    theirs = stock(base, "ls -l /", env=UTC).stdout
    date = re.compile(r"(\d+-\w{3}-\d{4} \d\d:\d\d) (\S+)$")
    want = {m.group(2): m.group(1) for m in
            (date.search(l.strip()) for l in theirs.splitlines()) if m}
    got = {m.group(2): m.group(1) for m in
           (date.search(l.replace("  ", " ").strip())
            for l in mine.splitlines()) if m}
    assert got and got == want


def test_htree_matches_stock(base):
    out = same_as_stock(base, "htree /d/e")
    assert "Root node dump:" in out and "Reading directory block 1" in out
    res = ours(base, "htree /d", check=False)
    assert res.returncode == 1
    assert "Not a hash-indexed directory" in res.stderr


# ----- stat, owners -----

def test_htree_of_a_damaged_index_is_bounded(img):
    """An index root claiming 0xffff entries: reported, not overrun."""
    root = stock_blocks(img, "/d/e")[0]
    with open(img, "r+b") as f:
        f.seek(root * 1024 + 32 + 2)        # dx_root: count after limit
        f.write(b"\xff\xff")
    res = ours(img, "htree /d/e", check=False)
    assert res.returncode == 1
    assert "Number of entries (count): 65535" in res.stdout
    assert "Entry count 65535 is past the limit or the block" in res.stdout
    assert "Reading directory block 1" in res.stdout


def test_stat_adds_stock_lines(base):
    for path, want in (("/a", ("Project: 42", "Size of extra inode fields",
                               "Extended attributes:",
                               '  user.foo (3) = "bar"', "Inode checksum")),
                       ("/dev0", ("Device major/minor number",)),
                       ("/blk0", ("(New-style) Device major/minor",))):
        mine = ours(base, f"stat {path}").stdout.splitlines()
        theirs = stock(base, f"stat {path}").stdout
        for key in want:
            line = [l for l in mine if l.startswith(key)]
            assert line, (path, key, mine)
            # "Project:" sits on stock's User line; the rest are verbatim.
            if key.startswith("Project"):
                assert re.search(r"Project:\s+42\s", theirs)
            else:
                assert line[0] in theirs.splitlines(), (line[0], theirs)
    mine = ours(base, "stat /blk0").stdout
    assert "(New-style) Device major/minor number: 259:70000 (hex 103:11170)" \
        in mine


def test_owners_names_what_an_unmapped_block_is(base):
    free = int(stock(base, "ffb").stdout.split()[-1])
    assert ours(base, f"owners {free}").stdout == f"block {free} is free\n"
    assert ours(base, "owners 1").stdout == \
        "block 1 is group metadata: the superblock of group 0\n"
    itable = int(re.search(r"Inode table at (\d+)",
                           H.run(["dumpe2fs", str(base)]).stdout).group(1))
    assert ours(base, f"owners {itable + 1}").stdout == \
        f"block {itable + 1} is group metadata: the inode table of group 0\n"
    tree = stock_blocks(base, "<5>")[0]
    out = ours(base, f"owners {tree}").stdout
    assert out.splitlines()[-1] == \
        f"block {tree} belongs to the reference-count tree (inode 5)"


# ----- rdump, dump -p -----

def check_meta(img, path, host):
    """Owner, mode and mtime (with nanoseconds) of host == image path."""
    out = stock(img, f"stat {path}").stdout
    mode = int(re.search(r"Mode:\s+(\d+)", out).group(1), 8)
    uid = int(re.search(r"User:\s+(\d+)", out).group(1))
    gid = int(re.search(r"Group:\s+(\d+)", out).group(1))
    m = re.search(r"mtime: 0x([0-9a-f]+):([0-9a-f]+)", out)
    secs = int(m.group(1), 16) + ((int(m.group(2), 16) & 3) << 32)
    nsec = int(m.group(2), 16) >> 2
    s = os.lstat(host)
    assert (st.S_IMODE(s.st_mode), s.st_uid, s.st_gid) == (mode, uid, gid)
    assert s.st_mtime_ns == secs * 10**9 + nsec


def test_rdump_keeps_data_and_metadata(base, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    ours(base, f"rdump -p --devices /d /a /lnk /fifo {out}")
    assert (out / "a").read_bytes() == H.debugfs_cat(base, "/a")
    assert (out / "d" / "big2").read_bytes() == H.debugfs_cat(base,
                                                             "/d/big2")
    names = sorted(os.listdir(out / "d" / "e"))
    assert names == sorted(f"f{i}" for i in range(200))
    assert os.readlink(out / "lnk") == "a"
    assert st.S_ISFIFO(os.lstat(out / "fifo").st_mode)
    for path, host in (("/a", out / "a"), ("/d", out / "d"),
                       ("/d/e/f3", out / "d" / "e" / "f3")):
        check_meta(base, path, host)
    try:
        assert os.getxattr(out / "a", "user.foo") == b"bar"
    except OSError as e:
        pytest.skip(f"host file system takes no user xattrs: {e}")


def test_rdump_root_and_refusals(base, tmp_path):
    out = tmp_path / "out"
    res = ours(base, f"rdump /a {out}", check=False)
    assert res.returncode == 1 and "No such file" in res.stderr
    out.mkdir()
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep")
    os.symlink(outside, out / "a")      # planted: must not be followed
    res = ours(base, f"rdump / {out}", check=False)
    assert res.returncode == 1 and "a: creating: File exists" in res.stderr
    assert outside.read_bytes() == b"keep"
    assert (out / "big3").read_bytes() == H.debugfs_cat(base, "/big3")
    check_meta(base, "/", out)          # "/" goes into HOSTDIR itself


def test_rdump_refuses_a_directory_loop(img, tmp_path):
    # A hostile image: /d/e/loop is another name of /d (stock ln).
    stock(img, "ln /d /d/e/loop", rw=True)
    out = tmp_path / "out"
    out.mkdir()
    res = ours(img, f"rdump /d {out}", check=False)
    assert res.returncode == 1
    assert "contains itself, not followed" in res.stderr
    assert (out / "d" / "big2").is_file()
    assert not (out / "d" / "e" / "loop").exists()


def test_dump_p_keeps_owner_mode_times(base, tmp_path):
    host = tmp_path / "a"
    ours(base, f"dump -p /a {host}")
    assert host.read_bytes() == b"hello\n"
    check_meta(base, "/a", host)
    plain = tmp_path / "plain"
    ours(base, f"dump /a {plain}")
    assert st.S_IMODE(os.stat(plain).st_mode) != 0o640


# ----- expert edits, compared byte for byte with stock -----

def expert_diff(a, b, journal, bs):
    """Offsets where a and b differ, but for what may: each superblock
    copy's s_wtime (0x30), s_kbytes_written (0x178) and checksum (0x3fc)
    (1 KiB blocks, first data block 1, 8192 blocks a group), and the
    journal's blocks."""
    out = []
    for i in range(len(a)):
        if a[i] == b[i] or i // bs in journal:
            continue
        o = (i - 1024) % (8192 * 1024)
        if o in range(0x30, 0x34) or o in range(0x178, 0x180) or \
                o in range(0x3fc, 0x400):
            continue
        out.append(i)
    return out


def cleared_stamp(img, data):
    """The offsets of the tree header's h_stamp (0x48) and checksum
    (0x7c), after checking that the stamp is 0 (cleared by the edit)."""
    hdr = int(H.debugfs(img, "blocks <5>").stdout.split()[0]) * 1024
    assert data[hdr + 0x48:hdr + 0x4c] == bytes(4)
    return set(range(hdr + 0x48, hdr + 0x4c)) | set(range(hdr + 0x7c,
                                                          hdr + 0x80))


@pytest.mark.parametrize("req", [
    "set_inode_field /a mode 0100600", "sif /a uid 70000",
    "sif /a block[2] 7", "sif /a size 0x100000000", "sif <12> flags 0x80001",
    "sif /a checksum 0x12345678", "sif /a i_links_count 3",
    "ssv mnt_count 7", "set_super_value volume_name hello",
    "ssv free_blocks_count 0x100000001", "ssv s_errors 3",
    "ssv hash_seed 01234567-89ab-cdef-0123-456789abcdef",
])
def test_set_fields_match_stock(base, tmp_path, req):
    mine, theirs = tmp_path / "mine.img", tmp_path / "theirs.img"
    shutil.copyfile(base, mine)
    shutil.copyfile(base, theirs)
    ours(mine, req, rw=True)
    stock(theirs, req, rw=True)
    # Both write the superblocks' s_wtime at close: the same second
    # unless the clock ticked between the runs, so s_wtime (0x30) and the
    # checksum over it (0x3fc) of each superblock copy may differ (1 KiB
    # blocks, first data block 1, 8192 blocks a group).
    # Ours goes through the image's journal (debugfs.extref(8),
    # TRANSACTIONS): the journal's blocks and the superblock's count of
    # bytes written (s_kbytes_written, 0x178) differ too.
    # Ours also clears the tree's stamp before its raw edit (FORMAT.md
    # section 11: the next writer proves the counts again): the header's
    # h_stamp (0x48) and checksum (0x7c) may differ, the stamp being 0.
    a, b = mine.read_bytes(), theirs.read_bytes()
    stamp = cleared_stamp(mine, a)
    if a != b:
        diff = [o for o in expert_diff(a, b, H.journal_blocks(mine), 1024)
                if o not in stamp]
        assert not diff, (req, diff[:10])


def test_set_fields_need_w_and_a_known_field(img):
    res = ours(img, "sif /a mode 0600", check=False)
    assert res.returncode == 1 and "needs an image opened with -w" in res.stderr
    res = ours(img, "sif /a nosuch 1", rw=True, check=False)
    assert res.returncode == 1 and "invalid field specifier" in res.stderr
    res = ours(img, "ssv mnt_count 0x10000", rw=True, check=False)
    assert res.returncode == 1 and "does not fit" in res.stderr
    res = ours(img, "sif /a block[15] 1", rw=True, check=False)
    assert res.returncode == 1


def test_ssv_checksum_writes_a_bad_checksum(img):
    ours(img, "ssv checksum 0x1234", rw=True)
    res = H.run(["dumpe2fs", "-h", str(img)], check=False)
    assert "Superblock checksum does not match" in res.stderr


# ----- help, --help -----

def test_help_command_prints_usage(base):
    res = ours(base, "help dump_inode")
    assert res.stdout.splitlines()[-1] == \
        "usage: dump [-p] [--same-permissions] [--xattrs] PATH HOSTFILE"
    res = ours(base, "help sif")
    assert res.stdout.splitlines()[-1] == \
        "usage: set_inode_field INODE FIELD VALUE"
    res = ours(base, "help nosuch", check=False)
    assert res.returncode == 1 and "no such command" in res.stderr
    assert "ncheck" in ours(base, "help").stdout


def test_help_usage_agrees_with_argument_errors(base):
    """Every command's help usage is the one its argument check prints."""
    listing = ours(base, "lr").stdout
    names = [l.split()[0].rstrip(",") for l in listing.splitlines()[2:]
             if l.strip() and not l[0].isspace()]
    names = [n for n in names if n not in ("list_requests", "quit")]
    assert len(names) > 40
    for name in names:
        usage = ours(base, f"help {name}").stdout.splitlines()[-1]
        assert usage.startswith("usage: "), (name, usage)
        # Too many arguments, or (commands taking any number) none.
        res = ours(base, name + " x" * 40, check=False)
        if "usage:" not in res.stderr:
            res = ours(base, name, check=False)
        assert res.returncode == 1, (name, res.stderr)
        canon = usage.split()[1]
        assert res.stderr.strip().endswith(usage[len("usage: "):]
                                           .replace(canon, name, 1)), \
            (name, usage, res.stderr)


def test_help_prints_the_usage_once(base):
    """help NAME says what NAME does, then its usage on a line of its own:
    the list's help line, which may end in the usage, is not printed with
    it (issue 24, section 5: the usage came twice)."""
    res = ours(base, "help refcount")
    assert res.stdout == ("refcount: Reference-count records\n"
                          "usage: refcount [START [LEN]]\n"), res.stdout
    listing = ours(base, "lr").stdout
    names = [l.split()[0].rstrip(",") for l in listing.splitlines()[2:]
             if l.strip() and not l[0].isspace()]
    names = [n for n in names if n not in ("list_requests", "quit")]
    for name in names:
        lines = ours(base, f"help {name}").stdout.splitlines()
        assert len(lines) == 2 and lines[1].startswith("usage: "), lines
        usage = lines[1][len("usage: "):]
        if " " in usage:
            assert usage not in lines[0], (name, lines)


def test_refcount_has_a_header_line(base):
    """refcount names its columns (issue 24, section 5), each record's
    numbers right-aligned under them."""
    lines = ours(base, "refcount").stdout.splitlines()
    assert lines[0].split() == ["Start", "Length", "Count"], lines
    ends = [m.end() for m in re.finditer(r"\S+", lines[0])]
    assert len(lines) > 1, lines                    # /big is reflinked
    for line in lines[1:]:
        assert [m.end() for m in re.finditer(r"\d+", line)] == ends, \
            (lines[0], line)
        start, length, count = map(int, line.split())
        assert length >= 1 and count >= 2, line
    res = ours(base, "refcount 1 1")
    assert res.stdout.splitlines() == lines[:1], res.stdout


def test_dash_dash_help_and_version():
    for opt in ("--help", "-h"):
        res = H.run([H.binary(SHELL), opt])
        assert res.stdout.startswith("Usage: debugfs.extref ")
        assert "--help" in res.stdout and "--version" in res.stdout
    res = H.run([H.binary(SHELL), "--version"])
    assert res.stdout.startswith("debugfs.extref ")
    res = H.run([H.binary(SHELL), "--bogus"], check=False)
    assert res.returncode == 1 and "Usage:" in res.stderr


def test_man_page_names_every_command(base):
    """The man page describes the commands (the README, a front door,
    points to it: issue 24, section 4)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    man = open(os.path.join(root, "docs", "debugfs.extref.8")).read()
    readme = open(os.path.join(root, "README")).read()
    for name in ("ncheck", "icheck", "blocks", "bmap", "rdump", "htree",
                 "set_inode_field", "set_super_value", "dirsearch", "ffb",
                 "ffi", "help"):
        assert re.search(rf"\b{name}\b", man), name
    assert "debugfs.extref(8)" in readme
    assert r"\-\-help" in man and r"\-\-version" in man


def test_set_inode_field_on_128_byte_inodes(tmp_path):
    """No high half past a 128-byte inode: the low half alone, as stock."""
    base = tmp_path / "small.img"
    H.mkfs(base, "4M", "-q", "-I", "128")
    H.run([H.binary(SHELL), "-w", "-R", "mkdir /d", str(base)])
    for req in ("sif /d checksum 0x1234", "sif /d version 0x12345678",
                "sif /d uid 70000"):
        mine, theirs = tmp_path / "mine.img", tmp_path / "theirs.img"
        shutil.copyfile(base, mine)
        shutil.copyfile(base, theirs)
        ours(mine, req, rw=True)
        stock(theirs, req, rw=True)
        a, b = mine.read_bytes(), theirs.read_bytes()
        stamp = cleared_stamp(mine, a)
        diff = [o for o in expert_diff(a, b, H.journal_blocks(mine), 1024)
                if o not in stamp]
        assert not diff, (req, diff[:10])
    res = ours(mine, "sif /d checksum 0x12345", rw=True, check=False)
    assert res.returncode == 1 and "does not fit checksum (16 bits)" in \
        res.stderr
    res = ours(mine, "sif /d projid 1", rw=True, check=False)
    assert res.returncode == 1 and "past the inode size" in res.stderr
