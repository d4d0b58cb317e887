"""Pure-Python CRC-32C (Castagnoli), table driven.

crc32c_le(crc, data) is the raw reflected update, like libext2fs's
ext2fs_crc32c_le(): it starts from the caller's value and applies no final
inversion.  crc32c(data) is the standard CRC-32C (init ~0, final xor ~0).
"""

POLY = 0x82F63B78  # Castagnoli polynomial, reflected


def _make_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


TABLE = _make_table()


def crc32c_le(crc, data):
    """Reflected CRC-32C update without pre/post inversion."""
    crc &= 0xFFFFFFFF
    tab = TABLE
    for b in bytes(data):
        crc = tab[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def crc32c(data):
    """Standard CRC-32C: 0xE3069283 for b"123456789"."""
    return crc32c_le(0xFFFFFFFF, data) ^ 0xFFFFFFFF


# Known-answer checks, run at import so a broken table can never pass silently.
assert crc32c(b"123456789") == 0xE3069283
assert crc32c(b"") == 0
assert crc32c(bytes(32)) == 0x8A9136AA          # RFC 3720 B.4: 32 zero bytes
assert crc32c(b"\xff" * 32) == 0x62A8AB43       # RFC 3720 B.4: 32 0xff bytes
assert crc32c(bytes(range(32))) == 0x46DD794E   # RFC 3720 B.4: incrementing
