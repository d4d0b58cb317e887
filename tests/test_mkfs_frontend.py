"""mkfs.extref's front end: the progress bar, the summary, the usage
line, removal of what a run leaves on a signal, the block size of a
build, the lock's holder named when another writer holds the image,
and the blocks --convert hands back to the host.

Oracles: a pseudo-terminal (python's pty) sees what a user sees; stock
debugfs lists every file's blocks and dumpe2fs the image's counts;
os.stat gives what the host allocated; stock e2fsck -fn and a read-only
kernel mount check every image a test keeps.
"""

import filecmp
import os
import re
import select
import signal
import subprocess
import tarfile
import time

import pytest

import helpers

MiB = 1 << 20
BAR = re.compile(r"^(\S.*?)\s+\[[#-]{30}\]\s+(\d+)%$")


def dup_tree(root, n, ncommon=40, seed=5):
    """n files of one whole block shared with others (one of ncommon)
    and a unique tail: block dedupe shares about n ranges."""
    root.mkdir()
    common = [os.urandom(4096) for _ in range(ncommon)]
    for i in range(n):
        d = root / f"d{i % 16:02d}"
        d.mkdir(exist_ok=True)
        (d / f"f{i:05d}").write_bytes(common[(i * 7 + seed) % ncommon] +
                                      os.urandom(4096) +
                                      common[(i * 3) % ncommon] +
                                      os.urandom(100 + i % 50))
    return root


def mkfs_cmd(*args):
    return [helpers.binary("mkfs.extref"), *[str(a) for a in args]]


def run_pty(cmd, env=None, until=None, sig=None):
    """Run cmd with a pseudo-terminal as its stdout and stderr.  With
    until, send sig once the output holds until.  Returns (status,
    output, seconds)."""
    master, slave = os.openpty()
    full_env = dict(os.environ, **(env or {}))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=slave, stderr=slave, env=full_env,
                            preexec_fn=helpers.default_signals)
    os.close(slave)
    out, sent = b"", False
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            proc.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if until and not sent and until.encode() in out:
            proc.send_signal(sig)
            sent = True
    status = proc.wait()
    os.close(master)
    return status, out.decode(errors="replace"), time.monotonic() - t0


def bars(out):
    """[(phase, percent)] of every redraw, in order."""
    got = []
    for seg in re.split(r"[\r\n]", out):
        m = BAR.match(seg.strip())
        if m:
            got.append((m.group(1), int(m.group(2))))
    return got


# ----- progress -----

def test_progress_moves_forward_a_few_times_a_second(tmp_path):
    """Thousands of shared ranges, a handful of redraws: every phase has
    its own bar, drawn in order, never going back, ending full."""
    n = 2500
    src = dup_tree(tmp_path / "src", n)
    status, out, secs = run_pty(mkfs_cmd("--dedup=block", "-d", src,
                                         tmp_path / "a.img"))
    assert status == 0, out
    got = bars(out)
    phases = []
    for phase, _ in got:
        if not phases or phases[-1] != phase:
            assert phase not in phases, f"{phase} drawn again:\n{out}"
            phases.append(phase)
    for phase in phases:
        pcts = [p for ph, p in got if ph == phase]
        assert pcts == sorted(pcts), (phase, pcts)
        assert pcts[-1] == 100, (phase, pcts)
    # block dedupe happens as the data is copied: no phase of its own
    # sizing: no total, no bar, but the bytes read so far
    assert re.search(r"reading the source +\.\.\. \d+\.\d MiB", out), out
    assert "copying files" in phases, out
    for gone in ("hashing blocks", "sharing blocks"):
        assert gone not in phases, out
    # at most 5 a second, plus the first and the full bar of each phase
    limit = 5 * secs + 2 * len(phases) + 2
    assert len(got) <= limit, (len(got), secs, phases)
    copying = [p for ph, p in got if ph == "copying files"]
    assert len(copying) <= 5 * secs + 2 and n > 50 * len(copying), copying
    assert "allocated on the host" in out
    helpers.e2fsck_fn(tmp_path / "a.img")


def test_no_progress_nor_summary_when_quiet_or_piped(tmp_path):
    src = dup_tree(tmp_path / "src", 20)
    piped = helpers.run(mkfs_cmd("--dedup=block", "-d", src,
                                 tmp_path / "a.img")).stdout
    assert "\r" not in piped and "[#" not in piped and "[-" not in piped
    assert "stored data" in piped            # the summary is not progress
    status, out, _ = run_pty(mkfs_cmd("-q", "--dedup=block", "-d", src,
                                      tmp_path / "b.img"))
    assert status == 0 and out == "", out


# ----- summary -----

def summary(out):
    vals = {}
    for key in ("file data", "stored data", "saved", "image size",
                "allocated on the host"):
        m = re.search(rf"^  {key}: +([\d.]+) MiB", out, re.M)
        assert m, f"no '{key}' in:\n{out}"
        vals[key] = float(m.group(1))
    return vals


def debugfs_file_blocks(img, src):
    """Every regular file's physical blocks, by stock debugfs."""
    paths = []
    for dirpath, _, files in os.walk(src):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.isfile(p) and not os.path.islink(p):
                paths.append("/" + os.path.relpath(p, src))
    cmds = img.parent / "blocks.cmd"
    cmds.write_text("".join(f"blocks {p}\n" for p in paths))
    out = helpers.run(["debugfs", "-f", str(cmds), str(img)]).stdout
    per_file = []
    for chunk in out.split("debugfs: blocks ")[1:]:
        lines = chunk.split("\n", 1)
        per_file.append([int(b) for b in lines[1].split("\n")[0].split()])
    assert len(per_file) == len(paths), out[:2000]
    return per_file


def check_summary(img, src, out):
    vals = summary(out)
    h = helpers.dumpe2fs_header(img)
    bs = int(h["Block size"])
    per_file = debugfs_file_blocks(img, src)
    logical = sum(len(b) for b in per_file) * bs
    stored = len({b for f in per_file for b in f}) * bs
    used = (int(h["Block count"]) - int(h["Free blocks"])) * bs
    assert stored < used

    def near(mib, nbytes):
        return abs(mib - nbytes / MiB) <= 0.051

    assert near(vals["file data"], logical), (vals, logical)
    assert near(vals["stored data"], stored), (vals, stored)
    for key, n in (("file data", logical // bs), ("stored data",
                                                  stored // bs)):
        assert re.search(rf"^  {key}: +[\d.]+ MiB \({n} blocks\)$", out,
                         re.M), (key, n, out)
    assert near(vals["saved"], logical - stored), vals
    assert near(vals["image size"], int(h["Block count"]) * bs), vals
    assert near(vals["allocated on the host"],
                os.stat(img).st_blocks * 512), vals
    return vals


@pytest.mark.parametrize("mode", ["none", "block"])
def test_summary_matches_the_image(tmp_path, mode):
    src = dup_tree(tmp_path / "src", 300, ncommon=10)
    (src / "empty").write_bytes(b"")
    with open(src / "sparse", "wb") as f:           # a hole inside
        f.write(os.urandom(5000))
        f.seek(3 * MiB)
        f.write(os.urandom(8192))
    img = tmp_path / "a.img"
    out = helpers.run(mkfs_cmd(f"--dedup={mode}", "-d", src, img)).stdout
    vals = check_summary(img, src, out)
    if mode == "none":
        assert vals["saved"] == 0.0
    else:
        assert vals["saved"] > 1.0, vals      # 300 x 2 blocks, 10 distinct
    helpers.e2fsck_fn(img)
    assert "file data" not in helpers.run(
        mkfs_cmd("-q", f"--dedup={mode}", "-d", src,
                 tmp_path / "q.img")).stdout


def test_summary_after_convert(tmp_path):
    src = dup_tree(tmp_path / "src", 200, ncommon=10)
    img = tmp_path / "c.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", "4096", "-d", str(src),
                 str(img), "32M"])
    out = helpers.run(mkfs_cmd("--convert", "--dedup=block", img)).stdout
    check_summary(img, src, out)


# ----- usage -----

@pytest.mark.parametrize("args,needle", [
    (["--bogus", "IMG"], "invalid option --bogus"),
    (["-Y", "IMG"], "invalid option -Y"),
    (["IMG", "-b"], "option -b needs an argument"),
    ([], None),
    (["IMG", "8M", "extra"], None),
])
def test_bad_option_gives_a_short_usage(tmp_path, args, needle):
    """As e2fsprogs: what was wrong, the usage lines, where help is."""
    img = tmp_path / "a.img"
    res = helpers.run(mkfs_cmd(*[img if a == "IMG" else a for a in args]),
                      check=False)
    full = helpers.run(mkfs_cmd("--help")).stdout
    assert res.returncode == 1 and res.stdout == ""
    err = res.stderr.splitlines()
    if needle:
        assert err[0] == f"mkfs.extref: {needle}", res.stderr
    assert err[-1] == "Try 'mkfs.extref --help' for more information."
    assert any(line.startswith("Usage: mkfs.extref") for line in err)
    assert len(err) <= 8 and len(res.stderr) * 4 < len(full), res.stderr
    assert not img.exists()


# ----- signals -----

def tmpdir_env(tmp_path):
    t = tmp_path / "tmp"
    t.mkdir()
    return t, {"TMPDIR": str(t)}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("mode,phase", [("file", "copying files"),
                                        ("block", "copying files")])
def test_signal_during_dedupe_removes_what_the_run_made(tmp_path, sig,
                                                        mode, phase):
    """From an archive: the signal ends the run with its own status,
    and neither the image nor anything in TMPDIR stays (both modes share
    as the data is copied)."""
    src = dup_tree(tmp_path / "src", 1500)
    tar = tmp_path / "src.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(src, arcname=".")
    t, env = tmpdir_env(tmp_path)
    img = tmp_path / "a.img"
    status, out, _ = run_pty(mkfs_cmd(f"--dedup={mode}", "-d", tar, img),
                             env=env, until=phase, sig=sig)
    assert status == -sig, (status, out)
    assert not img.exists()
    assert os.listdir(t) == []


def test_signal_keeps_an_image_file_the_user_gave(tmp_path):
    src = dup_tree(tmp_path / "src", 1500)
    img = tmp_path / "given.img"
    with open(img, "wb") as f:
        f.truncate(64 * MiB)
    t, env = tmpdir_env(tmp_path)
    status, out, _ = run_pty(mkfs_cmd("--dedup=block", "-d", src, img),
                             env=env, until="copying files",
                             sig=signal.SIGTERM)
    assert status == -signal.SIGTERM, out
    assert img.exists() and os.stat(img).st_size == 64 * MiB
    assert os.listdir(t) == []


def test_signal_during_convert_is_a_crash_fsck_repairs(tmp_path,
                                                       loop_mount):
    """--convert works on the user's image: a signal stops it between
    two writes, as a crash would (FORMAT.md section 8); the image stays,
    the run says how to repair it, fsck.extref -fy does, and every file
    reads back as it was."""
    src = dup_tree(tmp_path / "src", 1500)
    img = tmp_path / "c.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", "4096", "-d", str(src),
                 str(img), "64M"])
    status, out, _ = run_pty(mkfs_cmd("--convert", "--dedup=block", img),
                             until="sharing blocks", sig=signal.SIGINT)
    assert status == -signal.SIGINT, out
    # the run names both ways out; this test takes the second: keep the
    # image, drop the undo file, let fsck.extref finish the job
    undo = f"{img}.convert.e2undo"
    assert f"'e2undo {undo} {img}' puts the image back" in out, out
    assert f"or delete the file to keep the image as it is (then " \
           f"fsck.extref -fy {img}" in out, out
    fsck = helpers.binary("fsck/fsck.extref")
    res = helpers.run([fsck, "-fy", str(img)], check=False)
    assert res.returncode == 8 and undo in res.stdout + res.stderr, \
        helpers.describe(res)                  # not while the file is there
    os.unlink(undo)
    res = helpers.run([fsck, "-fy", str(img)], check=False)
    assert res.returncode & 12 == 0, helpers.describe(res)
    res = helpers.run([fsck, "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    for dirpath, _, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for f in files:
            assert filecmp.cmp(os.path.join(dirpath, f), mnt / rel / f,
                               shallow=False), f"{rel}/{f}"


# ----- block size and a sparse image file -----

def test_a_build_has_4k_blocks_unless_b_says(tmp_path):
    src = dup_tree(tmp_path / "src", 10)
    for args, bs in (([], 4096), (["-b", "1024"], 1024),
                     (["-b", "2048"], 2048)):
        img = tmp_path / f"b{bs}.img"
        helpers.run(mkfs_cmd("-q", *args, "-d", src, img, "64M"))
        assert int(helpers.dumpe2fs_header(img)["Block size"]) == bs
        helpers.e2fsck_fn(img)


def test_unused_part_of_a_sized_image_is_a_hole(tmp_path, loop_mount):
    src = dup_tree(tmp_path / "src", 50)
    img = tmp_path / "big.img"
    helpers.run(mkfs_cmd("-q", "-d", src, img, "1G"))
    st = os.stat(img)
    assert st.st_size == 1 << 30
    assert st.st_blocks * 512 < st.st_size // 10, st.st_blocks
    helpers.e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    assert filecmp.cmp(src / "d03" / "f00003", mnt / "d03" / "f00003",
                       shallow=False)


# ----- --convert hands freed blocks back -----

def used_blocks(img):
    h = helpers.dumpe2fs_header(img)
    return int(h["Block count"]) - int(h["Free blocks"])


def test_convert_punches_the_blocks_it_frees(tmp_path, loop_mount):
    src = dup_tree(tmp_path / "src", 300, ncommon=10)
    img = tmp_path / "c.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", "4096", "-d", str(src),
                 str(img), "32M"])
    alloc0, used0 = os.stat(img).st_blocks * 512, used_blocks(img)
    helpers.run(mkfs_cmd("-q", "--convert", "--dedup=block", img))
    alloc1, used1 = os.stat(img).st_blocks * 512, used_blocks(img)
    freed = (used0 - used1) * 4096
    assert freed > 2 * MiB                   # 600 duplicate blocks, less 10
    # what the dedupe freed left the file; the few blocks the tree took
    # were holes before
    assert abs((alloc0 - alloc1) - freed) <= 4 * 4096, (alloc0, alloc1,
                                                         freed)
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    mnt, _ = loop_mount(img)
    for dirpath, _, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for f in files:
            assert filecmp.cmp(os.path.join(dirpath, f), mnt / rel / f,
                               shallow=False), f"{rel}/{f}"


# ----- errors -----

@pytest.mark.skipif(helpers.fault_injection_skip_reason() is not None,
                    reason=helpers.fault_injection_skip_reason() or "")
@pytest.mark.parametrize("nomem,mode,step",
                         [("1+", "block", "Memory allocation failed"),
                          ("10+", "file", "while copying")])
def test_error_in_a_phase_removes_what_the_run_made(tmp_path, nomem, mode,
                                                    step):
    """An allocation made to fail (EXTREF_FAULT_NOMEM) in one phase: one
    line, on its own line after a bar, and nothing left behind."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(30):
        data = os.urandom(9000)
        (src / f"f{i}").write_bytes(data)
        (src / f"g{i}").write_bytes(data)
    tar = tmp_path / "src.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(src, arcname=".")
    t, env = tmpdir_env(tmp_path)
    env["EXTREF_FAULT_NOMEM"] = nomem
    img = tmp_path / "a.img"
    status, out, _ = run_pty(mkfs_cmd(f"--dedup={mode}", "-d", tar, img),
                             env=env)
    assert status == 1, out
    lines = [ln for ln in out.replace("\r\n", "\n").split("\n")
             if "mkfs.extref:" in ln]
    assert len(lines) == 1 and step in lines[0], out
    assert lines[0].startswith(f"mkfs.extref: {img}: "), out
    assert not img.exists()
    assert os.listdir(t) == []


def test_build_punches_what_its_dedupe_frees(tmp_path):
    """-d --dedup=block: the image file takes what was saved less on the
    host than the plain build of the same tree (each distinct block is
    written once: nothing freed keeps its bytes)."""
    src = dup_tree(tmp_path / "src", 300, ncommon=10)
    out = {}
    for mode in ("none", "block"):
        img = tmp_path / f"{mode}.img"
        res = helpers.run(mkfs_cmd(f"--dedup={mode}", "-d", src, img))
        out[mode] = (summary(res.stdout), os.stat(img))
        helpers.e2fsck_fn(img)
    (s0, st0), (s1, st1) = out["none"], out["block"]
    drop = (st0.st_blocks - st1.st_blocks) * 512
    saved = s1["saved"] * MiB
    assert saved > MiB
    # the tree's own blocks, written where there were holes, and rounding
    assert saved - 16 * 4096 - 0.05 * MiB <= drop <= saved + 0.05 * MiB, \
        (drop, saved)


@pytest.mark.parametrize("args", [["--update", "-d", "SRC"], ["--shrink"],
                                  ["--convert", "--shrink"]])
def test_a_locked_image_names_its_holder(tmp_path, args):
    """Another extref writer holds the image (debugfs.extref -w): the
    run is refused, says who holds the lock (/proc/locks), as
    debugfs.extref and fsck.extref say it, and changes nothing."""
    from test_safety_open import Holder
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(os.urandom(50000))
    img = tmp_path / "t.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(src),
                 str(img)])
    before = img.read_bytes()
    h = Holder(img, write=True)
    try:
        res = helpers.run([helpers.binary("mkfs.extref"),
                           *[str(src) if a == "SRC" else a for a in args],
                           str(img)], check=False)
    finally:
        h.close()
    assert res.returncode == 1, helpers.describe(res)
    assert "in use by another extref writer" in res.stderr, \
        helpers.describe(res)
    holder = f"the lock is held by debugfs.extref (pid {h.p.pid})"
    assert holder in res.stderr, helpers.describe(res)
    assert img.read_bytes() == before
    helpers.e2fsck_fn(img)
