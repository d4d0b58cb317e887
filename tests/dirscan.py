"""Every directory block of an ext4 image, read from the file: the bytes
that no entry uses (past each entry's name, past an index block's last
entry, the reserved words of the htree root and tails) must be zero.

A small reader of the on-disk format (superblock, group descriptors,
inode tables, extent trees and htree nodes as ext4's documentation lays
them out): it reports where stale bytes are, as (inode, logical block,
offset in the block) triples.
"""
import struct

EXTENTS_FL = 0x80000
INDEX_FL = 0x1000
INLINE_DATA_FL = 0x10000000
METADATA_CSUM = 0x400      # ro_compat
INCOMPAT_64BIT = 0x80
EXTENT_MAGIC = 0xF30A


class Image:
    def __init__(self, path):
        self.f = open(path, "rb")
        sb = self.read(1024, 1024)
        self.bs = 1024 << struct.unpack_from("<I", sb, 24)[0]
        (self.inodes_per_group,) = struct.unpack_from("<I", sb, 40)
        (self.inode_size,) = struct.unpack_from("<H", sb, 88)
        incompat, ro = struct.unpack_from("<II", sb, 96)
        self.csum = bool(ro & METADATA_CSUM)
        self.desc_size = (struct.unpack_from("<H", sb, 254)[0]
                          if incompat & INCOMPAT_64BIT else 32)
        (first_data,) = struct.unpack_from("<I", sb, 20)
        (self.ninodes,) = struct.unpack_from("<I", sb, 0)
        ngroups = -(-self.ninodes // self.inodes_per_group)
        gdt = self.read((first_data + 1) * self.bs,
                        ngroups * self.desc_size)
        self.itables = []
        for g in range(ngroups):
            d = gdt[g * self.desc_size:(g + 1) * self.desc_size]
            lo = struct.unpack_from("<I", d, 8)[0]
            hi = struct.unpack_from("<I", d, 0x28)[0] \
                if self.desc_size >= 64 else 0
            flags = struct.unpack_from("<H", d, 0x12)[0]
            self.itables.append(None if flags & 1 else lo | hi << 32)

    def close(self):
        self.f.close()

    def read(self, off, n):
        self.f.seek(off)
        return self.f.read(n)

    def block(self, pblk):
        return self.read(pblk * self.bs, self.bs)

    def inode(self, ino):
        g, i = divmod(ino - 1, self.inodes_per_group)
        if self.itables[g] is None:
            return None
        return self.read(self.itables[g] * self.bs + i * self.inode_size,
                         self.inode_size)

    def extents(self, node):
        """(logical, physical, length) of the leaves under node."""
        magic, n, _, depth = struct.unpack_from("<HHHH", node, 0)
        assert magic == EXTENT_MAGIC, "bad extent header"
        for k in range(n):
            e = node[12 + 12 * k:24 + 12 * k]
            if depth:
                lo, hi = struct.unpack_from("<IH", e, 4)
                yield from self.extents(self.block(lo | hi << 32))
            else:
                lblk, length, hi, lo = struct.unpack_from("<IHHI", e, 0)
                if length > 32768:          # unwritten
                    length -= 32768
                yield lblk, lo | hi << 32, length

    def directories(self):
        """(inode, flags, {logical block: physical}) of every directory."""
        for ino in range(1, self.ninodes + 1):
            raw = self.inode(ino)
            if raw is None:
                continue
            mode, = struct.unpack_from("<H", raw, 0)
            links, = struct.unpack_from("<H", raw, 26)
            dtime, = struct.unpack_from("<I", raw, 20)
            flags, = struct.unpack_from("<I", raw, 32)
            if (mode & 0xF000) != 0x4000 or not links or dtime or \
                    flags & INLINE_DATA_FL:
                continue
            assert flags & EXTENTS_FL, f"directory {ino} without extents"
            blocks = {}
            for lblk, pblk, n in self.extents(raw[40:100]):
                for k in range(n):
                    blocks[lblk + k] = pblk + k
            yield ino, flags, blocks


def nonzero(buf, start, end):
    """Offsets in [start, end) whose byte is not zero."""
    return [start + i for i, b in enumerate(buf[start:end]) if b]


def leaf_stale(img, buf):
    """Stale offsets of a block of entries (linear, or an htree leaf)."""
    out, off, bs = [], 0, img.bs
    end = bs - 12 if img.csum else bs
    while off + 8 <= end:
        rec_len, name_len = struct.unpack_from("<HB", buf, off + 4)
        if rec_len < 8 or off + rec_len > end:
            return out + [off]              # not a sound block: say so
        out += nonzero(buf, off + 8 + name_len, off + rec_len)
        off += rec_len
    return out


def node_stale(img, buf, off):
    """Stale offsets of an index block whose count/limit is at off."""
    limit, count = struct.unpack_from("<HH", buf, off)
    end = off + 8 * limit
    out = nonzero(buf, off + 8 * count, end)
    if img.csum:
        out += nonzero(buf, end, end + 4)   # dt_reserved
        end += 8
    return out + nonzero(buf, end, img.bs)


def root_stale(img, buf):
    out = nonzero(buf, 9, 12) + nonzero(buf, 22, 28)  # '.', '..', zero
    return out + nonzero(buf, 31, 32) + node_stale(img, buf, 32)


def htree_stale(img, blocks):
    """{logical block: stale offsets} of an indexed directory."""
    root = img.block(blocks[0])
    levels = root[30]
    found = {0: root_stale(img, root)}
    nodes = [(0, root, 32)]
    for level in range(levels + 1):
        children = []
        for _, buf, off in nodes:
            _, count = struct.unpack_from("<HH", buf, off)
            for k in range(count):
                child = struct.unpack_from("<I", buf, off + 8 * k + 4)[0]
                children.append(child & 0x0FFFFFFF)
        if level == levels:
            for lblk in children:
                found[lblk] = leaf_stale(img, img.block(blocks[lblk]))
        else:
            nodes = [(c, img.block(blocks[c]), 8) for c in children]
            for c, buf, _ in nodes:
                found[c] = nonzero(buf, 0, 4) + nonzero(buf, 6, 8) + \
                    node_stale(img, buf, 8)
    return found


def stale_bytes(path):
    """[(inode, logical block, offset)] of every stale byte in the
    directory blocks of the image at path."""
    img = Image(path)
    out = []
    try:
        for ino, flags, blocks in img.directories():
            if flags & INDEX_FL:
                per = htree_stale(img, blocks)
                assert set(per) == set(blocks), (ino, sorted(blocks))
            else:
                per = {lblk: leaf_stale(img, img.block(p))
                       for lblk, p in blocks.items()}
            out += [(ino, lblk, off) for lblk, offs in sorted(per.items())
                    for off in offs]
    finally:
        img.close()
    return out
