"""Craft jbd2 logs with valid checksum-v3 records, written straight into an
image's internal journal, so that a test can put in it exactly the damage
it wants and nothing else (docs/FORMAT.md section 13; the kernel's
include/linux/jbd2.h for the layout).  Stock debugfs maps the journal;
nothing of ours is used to build what our replay is then tested on.

    log = Log(img)                     # journal superblock, features v3
    t = log.transaction()
    t.block(fsblk, data)               # a tag and its copy
    t.revoke(fsblk, ...)               # a revoke block
    log.commit(t)                      # descriptor(s), copies, commit
    log.write(needs_recovery=True)     # s_start, s_sequence, the flag

Hooks for damage: Transaction.revoke_count overrides r_count (the
revoke block's checksum still verifies); Log.put(jblk, bytes) writes any
block of the journal; Log.pblk(jblk) is where a journal block lives.
"""

import struct

import helpers as H
from crc32c import crc32c_le

MAGIC = 0xC03B3998
DESCRIPTOR, COMMIT, SUPER_V2, REVOKE = 1, 2, 4, 5
FLAG_ESCAPE, FLAG_SAME_UUID, FLAG_LAST = 1, 2, 8
INCOMPAT_REVOKE, INCOMPAT_64BIT, INCOMPAT_CSUM_V3 = 0x1, 0x2, 0x10
CSUM_V2 = 0x8
CRC32C = 4


def journal_map(img):
    """Filesystem block of each journal block, in order (stock debugfs)."""
    out = H.run(["debugfs", "-R", "blocks <8>", str(img)]).stdout
    return [int(x) for x in out.split() if x.isdigit()]


class Transaction:
    def __init__(self, tid):
        self.tid = tid
        self.blocks = []          # (fsblk, data)
        self.revokes = []         # fsblk
        self.revoke_count = None  # override r_count

    def block(self, fsblk, data):
        self.blocks.append((fsblk, bytes(data)))

    def revoke(self, *fsblks):
        self.revokes.extend(fsblks)


class Log:
    def __init__(self, img):
        self.img = str(img)
        self.map = journal_map(img)
        self.bs = int(H.dumpe2fs_header(self.img)["Block size"])
        raw = self.get(0)
        self.sb = bytearray(raw[:1024])
        jbs, self.maxlen, self.first, self.sequence = struct.unpack(
            ">IIII", self.sb[12:28])
        assert jbs == self.bs
        assert len(self.map) >= self.maxlen
        self.uuid = bytes(self.sb[48:64])
        incompat = struct.unpack(">I", self.sb[40:44])[0]
        incompat = (incompat & ~CSUM_V2) | INCOMPAT_CSUM_V3 | INCOMPAT_REVOKE
        struct.pack_into(">I", self.sb, 40, incompat)
        self.sb[80] = CRC32C
        self.is64 = bool(incompat & INCOMPAT_64BIT)
        self.seed = crc32c_le(0xFFFFFFFF, self.uuid)
        self.pos = self.first     # next journal block to write
        self.start_tid = self.sequence
        self.next_tid = self.sequence

    # ----- blocks of the journal -----
    def pblk(self, jblk):
        return self.map[jblk]

    def get(self, jblk):
        with open(self.img, "rb") as f:
            f.seek(self.map[jblk] * self.bs)
            return f.read(self.bs)

    def put(self, jblk, data):
        assert len(data) == self.bs
        with open(self.img, "r+b") as f:
            f.seek(self.map[jblk] * self.bs)
            f.write(data)

    def _next(self):
        j = self.pos
        self.pos = self.first if self.pos + 1 >= self.maxlen else self.pos + 1
        return j

    # ----- records -----
    def _csum(self, blk, off):
        b = bytearray(blk)
        b[off:off + 4] = b"\0\0\0\0"
        return crc32c_le(self.seed, bytes(b))

    def _header(self, kind, tid):
        b = bytearray(self.bs)
        struct.pack_into(">III", b, 0, MAGIC, kind, tid)
        return b

    def _tail(self, b):
        off = self.bs - 4
        struct.pack_into(">I", b, off, self._csum(b, off))

    def transaction(self):
        t = Transaction(self.next_tid)
        self.next_tid += 1
        return t

    def _descriptor(self, t, chunk):
        d = self._header(DESCRIPTOR, t.tid)
        off = 12
        copies = []
        for i, (fsblk, data) in enumerate(chunk):
            data = bytearray(data)
            flags = 0 if i == 0 else FLAG_SAME_UUID
            if struct.unpack(">I", data[:4])[0] == MAGIC:
                flags |= FLAG_ESCAPE
            if flags & FLAG_ESCAPE:
                data[0:4] = b"\0\0\0\0"
            seq = struct.pack(">I", t.tid)   # over the copy as logged
            csum = crc32c_le(crc32c_le(self.seed, seq), bytes(data))
            if i == len(chunk) - 1:
                flags |= FLAG_LAST
            struct.pack_into(">IIII", d, off, fsblk & 0xFFFFFFFF, flags,
                             fsblk >> 32, csum)
            off += 16
            if i == 0:
                d[off:off + 16] = self.uuid
                off += 16
            copies.append(bytes(data))
        self._tail(d)
        return d, copies

    def commit(self, t, commit_ok=True):
        """Write transaction t at the log's head; returns the journal
        blocks used: {'desc': [...], 'copies': [...], 'revoke': [...],
        'commit': jblk}."""
        per = (self.bs - 12 - 4 - 16) // 16
        where = {"desc": [], "copies": [], "revoke": [], "commit": None}
        for i in range(0, len(t.blocks), per):
            d, copies = self._descriptor(t, t.blocks[i:i + per])
            j = self._next()
            self.put(j, bytes(d))
            where["desc"].append(j)
            for c in copies:
                j = self._next()
                self.put(j, c)
                where["copies"].append(j)
        if t.revokes or t.revoke_count is not None:
            rs = 8 if self.is64 else 4
            r = self._header(REVOKE, t.tid)
            off = 16
            for b in t.revokes:
                if rs == 8:
                    struct.pack_into(">Q", r, off, b)
                else:
                    struct.pack_into(">I", r, off, b)
                off += rs
            count = off if t.revoke_count is None else t.revoke_count
            struct.pack_into(">I", r, 12, count)
            self._tail(r)
            j = self._next()
            self.put(j, bytes(r))
            where["revoke"].append(j)
        c = self._header(COMMIT, t.tid)
        struct.pack_into(">Q", c, 48, 1700000000)
        struct.pack_into(">I", c, 16, self._csum(c, 16))
        if not commit_ok:
            c[16] ^= 0xFF
        j = self._next()
        self.put(j, bytes(c))
        where["commit"] = j
        return where

    def write(self, needs_recovery=True):
        """The journal superblock (s_start = s_first, s_sequence = the
        first tid) and, with needs_recovery, the flag (stock debugfs)."""
        struct.pack_into(">II", self.sb, 24, self.start_tid, self.first)
        struct.pack_into(">I", self.sb, 0xFC, 0)
        struct.pack_into(">I", self.sb, 0xFC,
                         crc32c_le(0xFFFFFFFF, bytes(self.sb)))
        blk = bytearray(self.get(0))
        blk[:1024] = self.sb
        self.put(0, bytes(blk))
        if needs_recovery:
            H.run(["debugfs", "-w", "-R", "feature needs_recovery",
                   self.img])
