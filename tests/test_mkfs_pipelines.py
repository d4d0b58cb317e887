"""mkfs.extref takes the command lines image pipelines give mkfs.ext4
(issue 24 section 1): systemd-repart's, mkosi's and Yocto wic's, run as
they are against mkfs.extref and against stock mke2fs on the same input;
the two images are compared field by field (dumpe2fs -h) and through
read-only kernel mounts (names, contents, owners, modes, xattrs).  Also:
an existing file or device without SIZE is used whole, as mke2fs uses
it; the options that do not fit an extref image are refused with a
reason; the man page's option table is the code's.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

import helpers
from test_mkfs_d import build_tree, describe_tree

UUID = "5a1e0f2c-8d3b-4c6e-9f70-0123456789ab"
ROOT = Path(__file__).resolve().parent.parent

# The command lines, IMAGE and DIR where the tool puts them.
PIPELINES = {
    # systemd-repart (src/shared/mkfs-util.c), the partition file made
    # at its size first
    "repart": ["-L", "root-x86-64", "-U", UUID, "-I", "256", "-m", "0",
               "-E", "nodiscard,lazy_itable_init=1", "-b", "4096",
               "-T", "default", "-d", "DIR", "IMAGE"],
    # the same with discard (systemd-repart --discard=yes)
    "repart-discard": ["-L", "root-x86-64", "-U", UUID, "-I", "256", "-m",
                       "0", "-E", "discard,lazy_itable_init=1", "-b",
                       "4096", "-T", "default", "-d", "DIR", "IMAGE"],
    # lazy_itable_init=0: every inode table zeroed, as mke2fs zeroes them
    "eager": ["-q", "-E", "lazy_itable_init=0", "-d", "DIR", "IMAGE"],
    # mkosi's mkfs_ext4_cmd (the tree given with -d instead of a mount)
    "mkosi": ["-I", "256", "-L", "root", "-M", "/", "-d", "DIR", "IMAGE"],
    # wic's prepare_rootfs_ext: extraopts "-F -i 8192", the image first
    "wic": ["-F", "-i", "8192", "IMAGE", "-L", "rootfs", "-U", UUID,
            "-d", "DIR"],
    # wic's selftest extraopts
    "wic-D": ["-D", "-F", "-i", "8192", "IMAGE", "-L", "rootfs", "-U",
              UUID, "-d", "DIR"],
}

# dumpe2fs -h fields that differ between any two runs of mke2fs itself
# (times, counters, random seeds) or by design (the tree's block).
VARYING = {"Filesystem created", "Last write time", "Last mount time",
           "Last checked", "Lifetime writes", "Checksum",
           "Directory Hash Seed", "Free blocks", "Filesystem features"}


def mkfs_bin():
    return helpers.binary("mkfs.extref")


def cmdline(args, img, src):
    return [str(img) if a == "IMAGE" else str(src) if a == "DIR" else a
            for a in args]


def header(img):
    return helpers.dumpe2fs_header(img)


def compare_headers(ours, theirs, random_uuid):
    a, b = header(ours), header(theirs)
    skip = set(VARYING)
    if random_uuid:
        skip.add("Filesystem UUID")
    diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b)
            if k not in skip and a.get(k) != b.get(k)}
    assert not diff, diff
    fa = a["Filesystem features"].split()
    fb = b["Filesystem features"].split()
    assert "shared_blocks" in fa
    assert sorted(f for f in fa if f != "shared_blocks") == sorted(fb)
    # the tree's block, and the build's own directory and extent sizes:
    # at most 16 blocks more than mke2fs's (fewer where the default block
    # dedupe found equal data)
    fr_a, fr_b = int(a["Free blocks"]), int(b["Free blocks"])
    assert fr_a >= fr_b - 16, (fr_a, fr_b)


def group_flags(img):
    """How many groups dumpe2fs shows with ITABLE_ZEROED and
    INODE_UNINIT: what lazy_itable_init decides."""
    out = helpers.run(["dumpe2fs", str(img)]).stdout
    return (out.count("ITABLE_ZEROED"), out.count("INODE_UNINIT"))


def root_of(mnt):
    st = os.lstat(mnt)
    return (st.st_mode, st.st_uid, st.st_gid)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipeline_same_as_mke2fs(name, tmp_path, loop_mount):
    src = build_tree(tmp_path / "src")
    ours, theirs = tmp_path / "ours.img", tmp_path / "theirs.img"
    size = "256M" if name == "repart" else "48M"
    for img in (ours, theirs):
        helpers.run(["truncate", "-s", size, str(img)])
    args = PIPELINES[name]
    helpers.run([mkfs_bin(), *cmdline(args, ours, src)])
    helpers.run(["mkfs.ext4", *cmdline(args, theirs, src)])
    helpers.e2fsck_fn(ours)
    assert os.path.getsize(ours) == os.path.getsize(theirs)
    compare_headers(ours, theirs, random_uuid="-U" not in args)
    assert group_flags(ours) == group_flags(theirs)
    m1, _ = loop_mount(ours)
    m2, _ = loop_mount(theirs)
    # mke2fs 1.47.0 drops the nanoseconds, which mkfs.extref keeps
    assert describe_tree(m1, times=False) == describe_tree(m2, times=False)
    assert root_of(m1) == root_of(m2)
    r = subprocess.run(["diff", "-r", "--no-dereference", str(m1), str(m2)],
                       capture_output=True, text=True)
    # diff names special files it does not compare: the same type is
    # what describe_tree checked
    same_kind = re.compile(r"^File .* is a (.+) while file .* is a \1$")
    left = [line for line in r.stdout.splitlines()
            if not same_kind.match(line)]
    assert r.returncode in (0, 1) and not left and not r.stderr, \
        r.stdout + r.stderr


def blocks(img):
    h = header(img)
    return int(h["Block count"]), int(h["Block size"])


def test_existing_file_used_whole(tmp_path):
    src = build_tree(tmp_path / "src")
    img = tmp_path / "a.img"
    helpers.run(["truncate", "-s", "256M", str(img)])
    helpers.run([mkfs_bin(), "-q", "-d", str(src), str(img)])
    n, bs = blocks(img)
    assert n * bs == 256 << 20
    helpers.e2fsck_fn(img)
    # --size=auto: sized from the content, as for a new file
    auto = tmp_path / "b.img"
    helpers.run(["truncate", "-s", "256M", str(auto)])
    helpers.run([mkfs_bin(), "-q", "--size=auto", "-d", str(src),
                 str(auto)])
    n2, bs2 = blocks(auto)
    new = tmp_path / "c.img"
    helpers.run([mkfs_bin(), "-q", "-d", str(src), str(new)])
    assert blocks(new) == (n2, bs2)
    assert n2 * bs2 < 64 << 20
    # an empty file is a new one: sized from the content
    empty = tmp_path / "d.img"
    empty.touch()
    helpers.run([mkfs_bin(), "-q", "-d", str(src), str(empty)])
    assert blocks(empty) == (n2, bs2)


def test_existing_device_used_whole(tmp_path):
    helpers.require_loop()
    src = build_tree(tmp_path / "src")
    backing = tmp_path / "dev.img"
    helpers.run(["truncate", "-s", "256M", str(backing)])
    dev = helpers.run(["losetup", "--find", "--show",
                       str(backing)]).stdout.strip()
    try:
        helpers.run([mkfs_bin(), "-q", "-d", str(src), dev])
        n, bs = blocks(dev)
        assert n * bs == 256 << 20
    finally:
        helpers.run(["losetup", "-d", dev], check=False)
    helpers.e2fsck_fn(backing)


@pytest.mark.parametrize("opts,why", [
    (["-C", "16384"], "bigalloc"),
    (["-O", "bigalloc"], "bigalloc"),
    (["-O", "^extent"], "extents"),
    (["-t", "ext3"], "extents"),
    (["-r", "0"], "revision"),
    (["-E", "offset=4096"], "first byte"),
    (["-S"], "superblocks"),
    (["-J", "device=/dev/null"], "external journal"),
    (["-J", "size=abc"], "size= takes a number"),
    (["-J", "location=0,size=4x"], "size= takes a number"),
])
def test_refused_with_reason(tmp_path, opts, why):
    img = tmp_path / "r.img"
    helpers.run(["truncate", "-s", "16M", str(img)])
    res = helpers.run([mkfs_bin(), *opts, str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert why in res.stderr, res.stderr
    assert res.stderr.startswith("mkfs.extref: ")
    # nothing written
    assert open(img, "rb").read(1 << 16) == bytes(1 << 16)


def test_passed_options_take_effect(tmp_path):
    """A sample of mke2fs options: the image says each was applied."""
    img = tmp_path / "p.img"
    helpers.run([mkfs_bin(), "-q", "-m", "3", "-e", "remount-ro",
                 "-M", "/srv", "-o", "Linux", "-G", "4", "-g", "8192",
                 "-j", "-J", "size=4", "-E", "stride=4,stripe_width=8,"
                 "num_backup_sb=0,test_fs,discard,root_owner",
                 str(img), "64M"])
    h = header(img)
    assert h["Errors behavior"] == "Remount read-only"
    assert h["Last mounted on"] == "/srv"
    assert h["Blocks per group"] == "8192"
    assert h["Flex block group size"] == "4"
    assert h["RAID stride"] == "4"
    assert h["RAID stripe width"] == "8"
    assert "test_filesystem" in h["Filesystem flags"]
    assert int(h["Reserved block count"]) == \
        int(h["Block count"]) * 3 // 100
    helpers.e2fsck_fn(img)


def test_no_copy_xattrs(tmp_path):
    """-E no_copy_xattrs: as mke2fs -d, no attribute copied."""
    src = build_tree(tmp_path / "src")
    for tool in (mkfs_bin(), "mkfs.ext4"):
        img = tmp_path / "x.img"
        helpers.run([tool, "-q", "-F", "-E", "no_copy_xattrs", "-d",
                     str(src), str(img), "32M"])
        out = helpers.debugfs(img, "ea_list /f_small").stdout
        assert "user.note" not in out, (tool, out)
        img.unlink()


def test_m_wins_over_the_builds_zero(tmp_path):
    src = build_tree(tmp_path / "src")
    img = tmp_path / "m.img"
    helpers.run([mkfs_bin(), "-q", "-m", "5", "-d", str(src), str(img)])
    h = header(img)
    assert int(h["Reserved block count"]) == int(h["Block count"]) * 5 // 100


def test_long_label_truncated_with_a_warning(tmp_path):
    img = tmp_path / "l.img"
    res = helpers.run([mkfs_bin(), "-q", "-L", "a-label-of-20-bytes!",
                       str(img), "16M"])
    assert "truncated to 'a-label-of-20-by'" in res.stderr
    assert header(img)["Filesystem volume name"] == "a-label-of-20-by"


def test_usage_types_from_mke2fs_conf(tmp_path):
    """-T and -t are read from mke2fs's configuration, as mke2fs reads
    it: MKE2FS_CONFIG, else /etc/mke2fs.conf."""
    conf = tmp_path / "mke2fs.conf"
    conf.write_text(open("/etc/mke2fs.conf").read() +
                    "\n[fs_types]\n\textreftest = {\n"
                    "\t\tinode_ratio = 131072\n\t\tinode_size = 512\n\t}\n")
    env = {"MKE2FS_CONFIG": str(conf)}
    ours, theirs = tmp_path / "a.img", tmp_path / "b.img"
    helpers.run([mkfs_bin(), "-q", "-T", "extreftest", str(ours), "300M"],
                env=env)
    helpers.run(["mkfs.ext4", "-q", "-T", "extreftest", str(theirs),
                 "300M"], env=env)
    a, b = header(ours), header(theirs)
    for k in ("Inode count", "Inode size", "Block size", "Block count"):
        assert a[k] == b[k], k
    assert a["Inode size"] == "512"
    # a usage type of the host's file: largefile
    helpers.run([mkfs_bin(), "-q", "-F", "-T", "largefile", str(ours)])
    helpers.run(["mkfs.ext4", "-q", "-F", "-T", "largefile", str(theirs)])
    assert header(ours)["Inode count"] == header(theirs)["Inode count"]
    helpers.e2fsck_fn(ours)


def test_dry_run_writes_nothing(tmp_path):
    src = build_tree(tmp_path / "src")
    new = tmp_path / "new.img"
    res = helpers.run([mkfs_bin(), "-n", "-d", str(src), str(new)])
    assert "Creating filesystem with" in res.stdout, res.stdout
    assert not new.exists()
    old = tmp_path / "old.img"
    helpers.run(["truncate", "-s", "32M", str(old)])
    res = helpers.run([mkfs_bin(), "-n", "-b", "4096", str(old)])
    assert "Creating filesystem with 8192 4k blocks" in res.stdout
    assert open(old, "rb").read() == bytes(32 << 20)


def test_a_type_without_extents_is_refused(tmp_path):
    """A usage type of mke2fs.conf that clears extent: refused after
    mke2fs, the new file removed."""
    conf = tmp_path / "mke2fs.conf"
    conf.write_text("[fs_types]\n\tplain = {\n"
                    "\t\tfeatures = ^extent\n\t}\n")
    img = tmp_path / "p.img"
    res = helpers.run([mkfs_bin(), "-q", "-T", "plain", str(img), "16M"],
                      env={"MKE2FS_CONFIG": str(conf)}, check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "without extents" in res.stderr, res.stderr
    assert not img.exists()


def test_verbose_prints_mke2fs_report(tmp_path):
    res = helpers.run([mkfs_bin(), "-v", str(tmp_path / "v.img"), "16M"])
    assert "Writing superblocks" in res.stdout, res.stdout


def test_archive_on_stdin(tmp_path):
    src = build_tree(tmp_path / "src")
    tar = tmp_path / "t.tar"
    helpers.run(["tar", "-C", str(src), "--xattrs", "-cf", str(tar), "."])
    for how in ("file", "pipe"):
        img = tmp_path / f"{how}.img"
        cmd = [mkfs_bin(), "-q", "-d", "-", str(img)]
        if how == "file":
            with open(tar, "rb") as f:
                r = subprocess.run(cmd, stdin=f, capture_output=True)
        else:
            r = subprocess.run(cmd, input=tar.read_bytes(),
                               capture_output=True)
        assert r.returncode == 0, r.stderr
        helpers.e2fsck_fn(img)
        assert helpers.debugfs_cat(img, "/f_small") == b"x" * 10
        assert "user.note" in helpers.debugfs(img, "ea_list /f_small").stdout


def test_out_of_inodes_says_so(tmp_path):
    src = tmp_path / "many"
    src.mkdir()
    for i in range(300):
        (src / f"f{i}").write_text(str(i))
    for opts in (["-N", "10"], ["-i", "67108864"]):
        img = tmp_path / "n.img"
        res = helpers.run([mkfs_bin(), "-q", *opts, "-d", str(src),
                           str(img), "64M"], check=False)
        assert res.returncode == 1, helpers.describe(res)
        assert "out of inodes" in res.stderr, res.stderr
        assert "raise -N or lower -i" in res.stderr
        assert not img.exists()


def test_update_without_room_says_how_much(tmp_path):
    img = tmp_path / "u.img"
    helpers.run([mkfs_bin(), "-q", str(img), "32M"])
    src = tmp_path / "big"
    src.mkdir()
    (src / "f").write_bytes(os.urandom(40 << 20))
    res = helpers.run([mkfs_bin(), "--update", "-q", "-d", str(src),
                       str(img)], check=False)
    assert res.returncode == 1
    m = re.search(r"about ([0-9.]+) MiB more needed", res.stderr)
    assert m, res.stderr
    assert 10 < float(m.group(1)) < 20, res.stderr
    helpers.e2fsck_fn(img)


def test_undo_file_covers_the_whole_run(tmp_path):
    """-z: e2undo puts the old filesystem back after a build; a build
    that fails puts the file back itself, byte for byte."""
    src = build_tree(tmp_path / "src")
    img, undo = tmp_path / "z.img", tmp_path / "z.e2undo"
    helpers.run(["mkfs.ext4", "-q", "-L", "old", str(img), "64M"])
    helpers.run(["debugfs", "-w", "-R", f"write {src / 'f_plain'} kept",
                 str(img)])
    before = helpers.sha256(img)
    # a build that fails after mke2fs (out of inodes)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(600):
        (many / f"f{i}").write_text(str(i))
    res = helpers.run([mkfs_bin(), "-q", "-F", "-N", "12", "-z", str(undo),
                       "-d", str(many), str(img)], check=False)
    assert res.returncode == 1 and "out of inodes" in res.stderr, \
        res.stderr
    assert helpers.sha256(img) == before
    assert not undo.exists()
    # one that goes through, then e2undo by hand
    helpers.run([mkfs_bin(), "-q", "-F", "-z", str(undo), "-d", str(src),
                 str(img)])
    assert "shared_blocks" in header(img)["Filesystem features"]
    helpers.run(["e2undo", str(undo), str(img)])
    helpers.e2fsck_fn(img)
    assert header(img)["Filesystem volume name"] == "old"
    assert helpers.debugfs_cat(img, "/kept") == \
        (src / "f_plain").read_bytes()


# ----- the man page's table of mke2fs options, against the code -----

def code_options():
    """(taken, refused) short options of libfs/builder/args_mke2fs.c's table
    (taken: passed to mke2fs, or mkfs.extref's own, -z)."""
    text = (ROOT / "libfs/builder/args_mke2fs.c").read_text()
    passed, refused = set(), set()
    for m in re.finditer(r"\{ '(.)', \"-.\", [01], (NULL|\")", text):
        (passed if m.group(2) == "NULL" else refused).add(m.group(1))
    return passed, refused


def code_ext_options():
    text = (ROOT / "libfs/builder/args_ext.c").read_text()
    table = re.search(r"pass_ext\[\] = \{(.*?)\};", text, re.S).group(1)
    passed = set(re.findall(r'"([a-z_-]+)"', table))
    passed |= {"hash_seed", "root_owner", "lazy_itable_init", "quotatype"}
    refused = set(re.findall(r'\{ "([a-z_]+)", "', text))
    return passed, refused


def man_table(section):
    """Rows 'opt<TAB>passed|refused...' of the man page's table whose
    first row names section (tbl, between .TS and .TE)."""
    man = (ROOT / "docs/mkfs.extref.8").read_text()
    for tbl in re.findall(r"^\.TS\n(.*?)^\.TE", man, re.S | re.M):
        if section in tbl:
            rows = {}
            for line in tbl.splitlines():
                cells = line.split("\t")
                if len(cells) >= 2 and cells[1] in ("passed", "own",
                                                    "refused"):
                    key = re.sub(r"\\f[BRI]|\\", "", cells[0]).strip()
                    rows[key] = cells[1]
            return rows
    raise AssertionError(f"no table for {section} in mkfs.extref.8")


def test_man_page_option_table_is_the_code():
    passed, refused = code_options()
    rows = man_table("mke2fs option")
    assert {k.lstrip("-") for k, v in rows.items() if v != "refused"} \
        == passed
    assert {k.lstrip("-") for k, v in rows.items() if v == "refused"} \
        == refused
    ep, er = code_ext_options()
    rows = man_table("extended option")
    assert {k for k, v in rows.items() if v == "passed"} == ep
    assert {k for k, v in rows.items() if v == "refused"} == er
    # and the getopt string holds every one of them
    text = (ROOT / "libfs/builder/args_mke2fs.c").read_text()
    optstring = re.search(r'xr_mke2fs_pass_optstring\[\] = "([^"]*)"',
                          text).group(1)
    assert set(optstring.replace(":", "")) == passed | refused


def _option_pairs(args):
    """Options with their values, order aside; IMAGE and DIR by role."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and i + 1 < len(args) and \
                not args[i + 1].startswith("-"):
            out.append((a, args[i + 1]))
            i += 2
        else:
            out.append((a,))
            i += 1
    return sorted(out)


def test_readme_gives_the_repart_line_tested_here():
    """The README's systemd-repart command is PIPELINES["repart"]."""
    text = (helpers.REPO_ROOT / "README").read_text()
    m = re.search(r"repart \(mkfs-util\.c\) runs:\n\n((?:    .*\n)+)",
                  text)
    assert m, "the README lost repart's line"
    words = m[1].replace("\\\n", " ").split()
    assert words[0] == "mkfs.ext4", words
    readme = [w.replace("PARTITION", "IMAGE") for w in words[1:]]
    tested = [w if w != UUID else "UUID" for w in PIPELINES["repart"]]
    assert _option_pairs(readme) == _option_pairs(tested)
