"""The tree's own blocks are not trusted blindly (safety issue, section 1).

Hostile images are made here with stock debugfs (inode 5's extent tree
edited with extent_open / set_bmap, its i_blocks kept right so that stock
e2fsck accepts the image) and with debugfs.extref's expert commands.  The
oracles are the stock tools: file bytes read back with stock debugfs, raw
blocks read with Python, stock e2fsck -fn.  Every tool runs under a
timeout, and under an address-space limit where a wild header could make
it allocate gigabytes.

Cases:
  * inode 5 maps, past h_nblocks, the inode-table block holding the root
    inode, the block bitmap, or another file's data block.  The next
    reflink makes the tree grow into that block: it must be refused (or
    done elsewhere), leaving the block as it was; fsck.extref -fn and the
    shell's check report it (0x0205 / 0x0206); fsck.extref -y gives the
    tree new blocks, the other owner keeps its block, both checkers end
    clean, and a reflink then works.
  * inode 5 maps its committed leaf's block a second time past
    h_nblocks: the copy-on-write of the leaf must not land on it.
  * the tree empties while inode 5 maps another file's block past
    h_nblocks: giving the tree's file back must not free that block.
  * the header's h_nblocks is 2^31 or 2^28: every tool ends quickly, with
    a clear error or a repair; the expert command that puts the header
    right works.
"""

import resource
import subprocess

import pytest

import helpers

TIMEOUT = 60        # seconds for any single tool run
MEM_LIMIT = 1 << 30  # address space of a tool run on a wild header

A_DATA = "".join(f"{i}\n" for i in range(1, 9001)).encode()
G_DATA = "".join(f"{i}\n" for i in range(100001, 102501)).encode()


# AddressSanitizer reserves terabytes of address space for its shadow: an
# address-space limit cannot apply to a sanitized build (the timeout does).
SANITIZED = helpers.sanitized_build()

def limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def tool(name, *args, check=None, limit=False):
    """Run a built tool under TIMEOUT (a hang fails the test)."""
    res = subprocess.run([helpers.binary(name), *map(str, args)],
                         capture_output=True, text=True, timeout=TIMEOUT,
                         preexec_fn=limited if limit and not SANITIZED
                         else None)
    if check is not None:
        assert res.returncode == check, helpers.describe(res)
    return res


def fsck(img, *opts, check=None, limit=False):
    return tool("fsck/fsck.extref", *opts, img, check=check, limit=limit)


def xdebugfs(img, request, write=False, check=None, limit=False,
             verify=False):
    args = (["-w"] if write else []) + (["--verify"] if verify else []) + \
        ["-R", request, img]
    return tool("debugfs.extref", *args, check=check, limit=limit)


def stock_debugfs_w(img, script):
    res = helpers.run(["debugfs", "-w", "-f", "-", str(img)], input=script,
                      timeout=TIMEOUT)
    return res


def stock_num(img, request):
    out = helpers.debugfs(img, request).stdout.strip()
    return int(out)


def blockcount(img, spec):
    out = helpers.debugfs_stat(img, spec)
    for tok in out.split("Blockcount:")[1:2]:
        return int(tok.split()[0])
    raise AssertionError(f"no Blockcount in stat {spec}:\n{out}")


def block_size(img):
    return int(helpers.dumpe2fs_header(img)["Block size"])


def read_block(img, blk, bs):
    with open(img, "rb") as f:
        f.seek(blk * bs)
        return f.read(bs)


def files(img):
    """Every regular file of / as stock debugfs reads it."""
    out = helpers.debugfs(img, "ls -p /").stdout
    names = {}
    for line in out.splitlines():
        parts = line.strip("/").split("/")
        if len(parts) >= 5 and parts[4] not in (".", "..", "lost+found"):
            names[parts[4]] = helpers.debugfs_cat(img, "/" + parts[4])
    return names


def map_into_ino5(img, lblk, pblk):
    """Stock debugfs: inode 5 maps pblk at lblk, i_blocks kept right."""
    bs = block_size(img)
    count = blockcount(img, "<5>")
    stock_debugfs_w(img, f"extent_open <5>\nset_bmap {lblk} {pblk}\n"
                         f"extent_close\n"
                         f"sif <5> blocks {count + bs // 512}\n")
    assert stock_num(img, f"bmap <5> {lblk}") == pblk


def ino5_blocks(img):
    """Every block inode 5's extents map, from stock debugfs."""
    out = helpers.debugfs_stat(img, "<5>")
    text = out.split("EXTENTS:")[1] if "EXTENTS:" in out else ""
    blocks = []
    for ext in text.replace("\n", " ").split(","):
        ext = ext.strip()
        if not ext or ":" not in ext:
            continue
        lblks, pblks = ext.split(":", 1)
        if lblks.startswith("(ETB"):
            continue
        lo, _, hi = pblks.strip().partition("-")
        blocks.extend(range(int(lo), int(hi or lo) + 1))
    return blocks


def small_image(tmp_path):
    """/a and /g written, nothing shared: the tree is its header only."""
    img = tmp_path / "t.img"
    (tmp_path / "a").write_bytes(A_DATA)
    (tmp_path / "g").write_bytes(G_DATA)
    helpers.mkfs(img, "16M", "-q", "-F")
    for src, dst in (("a", "/a"), ("g", "/g")):
        xdebugfs(img, f"write {tmp_path / src} {dst}", write=True, check=0)
    return img


def target_block(img, kind):
    if kind == "inode_table":
        # the block of the inode table that holds the root inode
        out = helpers.debugfs(img, "imap <2>").stdout
        return int(out.split("located at block")[1].split(",")[0])
    if kind == "block_bitmap":
        fields = helpers.run(["dumpe2fs", str(img)]).stdout
        for line in fields.splitlines():
            if line.strip().startswith("Block bitmap at"):
                return int(line.split("at")[1].split()[0])
    if kind == "data":
        return stock_num(img, "bmap /g 0")
    raise AssertionError(kind)


OPEN_REFUSAL = "run fsck.extref -y before writing"


def trusted(img, *args):
    """One operation through the library opened with EXTREF_OPEN_TRUSTED
    (no open-time check of the tree against the mappings)."""
    return helpers.run([helpers.binary("tests/unit/trusted_op"), str(img),
                        *args], check=False, timeout=60)


def assert_files(img, want):
    got = files(img)
    for name, data in want.items():
        assert got.get(name) == data, f"/{name} changed or lost"


def assert_repaired(img, want, code):
    """-n reports code; -y repairs; both checkers clean; files kept."""
    before = helpers.sha256(img)
    res = fsck(img, "-fn", check=4)
    assert f"0x{code:04x} " in res.stdout + res.stderr, helpers.describe(res)
    assert helpers.sha256(img) == before, "fsck.extref -n changed the image"
    shell = xdebugfs(img, "check")
    assert f"0x{code:04x} " in shell.stdout, helpers.describe(shell)
    assert shell.returncode != 0, helpers.describe(shell)
    fsck(img, "-fy", check=1)
    fsck(img, "-fn", check=0)
    helpers.e2fsck_fn(img)
    assert_files(img, want)


@pytest.mark.parametrize("kind,code", [("inode_table", 0x0205),
                                       ("block_bitmap", 0x0205),
                                       ("data", 0x0206)])
def test_tree_never_grows_into_foreign_block(tmp_path, kind, code):
    img = small_image(tmp_path)
    bs = block_size(img)
    blk = target_block(img, kind)
    map_into_ino5(img, 1, blk)
    # The hostile image passes stock e2fsck: shared_blocks makes the
    # cross-link legal.
    helpers.e2fsck_fn(img)
    want = files(img)
    assert want == {"a": A_DATA, "g": G_DATA}
    raw = read_block(img, blk, bs)
    image = helpers.sha256(img)

    # The shell's writer: with --verify its open refuses the image (the
    # check of the tree against every mapping); by default the tree's
    # stamp still matches (stock sif of inode 5 is the documented blind
    # spot), and the operation meets the tree's own proof and rolls
    # back.  The library opened without either check
    # (tests/unit/trusted_op) reaches the tree's own proof too.
    res = xdebugfs(img, "reflink /a /b", write=True, verify=True)
    assert res.returncode != 0 and OPEN_REFUSAL in res.stderr, \
        helpers.describe(res)
    assert helpers.sha256(img) == image, "a refused reflink changed it"
    res = xdebugfs(img, "reflink /a /b", write=True)
    assert res.returncode != 0, helpers.describe(res)
    assert OPEN_REFUSAL in res.stderr or "not the tree's own" in res.stderr, \
        helpers.describe(res)
    assert helpers.sha256(img) == image, "a refused reflink changed it"
    res = trusted(img, "reflink", "/a", "/", "b")
    assert read_block(img, blk, bs) == raw, \
        f"reflink wrote into the {kind} block {blk}:\n" + helpers.describe(res)
    helpers.e2fsck_fn(img)
    if res.returncode != 0:
        assert "not the tree's own" in res.stderr, helpers.describe(res)
        assert helpers.sha256(img) == image, "a refused reflink changed it"
    else:
        want["b"] = A_DATA
    assert_files(img, want)

    assert_repaired(img, want, code)
    # The other owner kept its block; the tree has new ones.  (A block
    # bitmap records them: on an image with a journal the rebuilt tree
    # takes new blocks, the old ones staying in use until its commit, so
    # that bitmap changes; e2fsck -fn above found it right.)
    if kind != "block_bitmap":
        assert read_block(img, blk, bs) == raw
    assert blk not in ino5_blocks(img)
    # A reflink now works and leaves both checkers clean.
    xdebugfs(img, "reflink /a /c", write=True, check=0)
    want["c"] = A_DATA
    if kind == "data":      # metadata changes legitimately now
        assert read_block(img, blk, bs) == raw
    fsck(img, "-fn", check=0)
    helpers.e2fsck_fn(img)
    assert_files(img, want)


def test_tree_never_grows_into_its_own_block(tmp_path):
    """Past h_nblocks, inode 5 maps the committed leaf's block again."""
    img = small_image(tmp_path)
    xdebugfs(img, "reflink /a /b", write=True, check=0)
    leaf = stock_num(img, "bmap <5> 1")
    map_into_ino5(img, 2, leaf)
    helpers.e2fsck_fn(img)
    fsck(img, "-fn", check=4)       # reported, nothing changed
    want = files(img)
    bs = block_size(img)
    raw = read_block(img, leaf, bs)
    image = helpers.sha256(img)
    # The leaf is copied on write into a new block: lblk 2, the leaf's.
    res = trusted(img, "reflink", "/g", "/", "h")
    assert read_block(img, leaf, bs) == raw, \
        "reflink overwrote the committed leaf:\n" + helpers.describe(res)
    if res.returncode == 0:
        want["h"] = G_DATA
    else:
        assert helpers.sha256(img) == image, "a refused reflink changed it"
    assert_files(img, want)
    helpers.e2fsck_fn(img)
    refs = xdebugfs(img, "refcount", check=0).stdout
    assert len(refs.strip().splitlines()) > 1, "the tree lost its records"
    assert_repaired(img, want, 0x0206)
    blocks = ino5_blocks(img)
    assert len(blocks) == len(set(blocks)), blocks


def test_empty_tree_frees_only_its_own_blocks(tmp_path):
    """The tree empties while inode 5 also maps /g's block past h_nblocks:
    giving the file back must not free /g's block."""
    img = small_image(tmp_path)
    xdebugfs(img, "reflink /a /b", write=True, check=0)
    gblk = stock_num(img, "bmap /g 0")
    map_into_ino5(img, 2, gblk)
    helpers.e2fsck_fn(img)
    res = trusted(img, "rm", "/", "b")
    assert res.returncode == 0, helpers.describe(res)
    # /g's block is still in use: stock e2fsck finds no bitmap difference.
    helpers.e2fsck_fn(img)
    want = {"a": A_DATA, "g": G_DATA}
    assert_files(img, want)
    assert_repaired(img, want, 0x0206)
    assert gblk not in ino5_blocks(img)


@pytest.mark.parametrize("nblocks", [0x80000000, 0x10000000])
def test_wild_h_nblocks(tmp_path, nblocks):
    img = tmp_path / "t.img"
    env = {"MKFS": helpers.binary("mkfs.extref"),
           "DEBUGFS": helpers.binary("debugfs.extref"),
           "TMP": str(tmp_path), "IMG": str(img)}
    helpers.run(["sh", str(helpers.REPO_ROOT / "tests/fsck/build.default")],
                env=env)
    want = files(img)
    old = xdebugfs(img, "refcount_tree", check=0).stdout
    orig = int(old.split("nblocks")[1].split()[0])
    xdebugfs(img, f"set_tree_header nblocks {nblocks:#x}", write=True,
             check=0, limit=True)
    helpers.e2fsck_fn(img)
    before = helpers.sha256(img)

    # Every tool ends, with a clear error, in bounded memory.
    res = fsck(img, "-fn", check=4, limit=True)
    assert "0x0003 " in res.stdout, helpers.describe(res)
    res = xdebugfs(img, "stats", limit=True)
    assert "counts more blocks than inode 5" in res.stderr, \
        helpers.describe(res)
    res = xdebugfs(img, "refcount", limit=True)
    assert res.returncode != 0, helpers.describe(res)
    xdebugfs(img, "refcount_tree", limit=True)
    res = xdebugfs(img, "reflink /a /z", write=True, limit=True)
    assert res.returncode != 0, helpers.describe(res)
    assert_files(img, want)
    assert "z" not in files(img)
    helpers.e2fsck_fn(img)
    assert helpers.sha256(img) == before, "a refused reflink changed it"

    # The expert command that puts the header right works on it.
    fixed = tmp_path / "fixed.img"
    fixed.write_bytes(img.read_bytes())
    xdebugfs(fixed, f"set_tree_header nblocks {orig}", write=True, check=0,
             limit=True)
    fsck(fixed, "-fn", check=0)
    assert_files(fixed, want)

    # fsck.extref repairs it; then both checkers are clean.
    fsck(img, "-fy", check=1, limit=True)
    fsck(img, "-fn", check=0, limit=True)
    helpers.e2fsck_fn(img)
    assert_files(img, want)
    xdebugfs(img, "reflink /a /z", write=True, check=0)
    fsck(img, "-fn", check=0)
    helpers.e2fsck_fn(img)
