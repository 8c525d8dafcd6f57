"""payloads.py — taking DUMP payloads of seen keys apart and building new ones.

A DUMP payload of a module value is: the RDB type byte, the module id,
our three fields (unsigned flags, unsigned jitter, string set), the module
EOF opcode, the RDB version (2 bytes) and a CRC64 of all that (8 bytes).
Tests forge payloads with a valid CRC (and, where they want to reach the
deeper checks, a valid XXH3 checksum inside the serialized set) so that
what must reject them is the module's own validation.
"""
import ctypes
import os
import struct

OPCODE_EOF = 0
OPCODE_UINT = 2
OPCODE_STRING = 5

# Offsets into a serialized set of core format version 1 (the writer now
# writes version 4, whose header fields are varints: see header()).
SET_HEADER_BYTES = 106
OFF_WINDOW = 8
OFF_SLICES = 16
OFF_ERROR = 20
OFF_NSEGS = 94
OFF_NRUNS = 98
OFF_HEAD_N = 102
SEGMENT_BYTES = 29
HEAD_ENTRY_BYTES = 12


def _crc64_table():
    poly = 0x95AC9329AC4BC9B5  # Jones polynomial, reflected, as Redis uses
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc64_table()


def crc64(data):
    crc = 0
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA

_xxhash = ctypes.CDLL("libxxhash.so.0")
_xxhash.XXH3_64bits.restype = ctypes.c_uint64
_xxhash.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3(data):
    return _xxhash.XXH3_64bits(bytes(data), len(data))


def fix_set_checksum(blob):
    """Recompute the XXH3 checksum that ends a serialized set."""
    body = bytes(blob[:-8])
    return body + struct.pack("<Q", xxh3(body))


def read_len(buf, pos):
    first = buf[pos]
    kind = first >> 6
    if kind == 0:
        return first & 0x3F, pos + 1
    if kind == 1:
        return ((first & 0x3F) << 8) | buf[pos + 1], pos + 2
    if first == 0x80:
        return struct.unpack(">I", buf[pos + 1:pos + 5])[0], pos + 5
    if first == 0x81:
        return struct.unpack(">Q", buf[pos + 1:pos + 9])[0], pos + 9
    raise ValueError("encoded length %#x not expected here" % first)


def write_len(v):
    if v < 64:
        return bytes([v])
    if v < 16384:
        return bytes([0x40 | (v >> 8), v & 0xFF])
    if v <= 0xFFFFFFFF:
        return b"\x80" + struct.pack(">I", v)
    return b"\x81" + struct.pack(">Q", v)


class Dump:
    """A parsed DUMP payload of a seen key."""

    def __init__(self, payload):
        self.type_byte = payload[0]
        pos = 1
        self.module_id, pos = read_len(payload, pos)
        fields = []
        while True:
            op, pos = read_len(payload, pos)
            if op == OPCODE_EOF:
                break
            if op == OPCODE_UINT:
                v, pos = read_len(payload, pos)
                fields.append(v)
            elif op == OPCODE_STRING:
                n, pos = read_len(payload, pos)
                fields.append(bytes(payload[pos:pos + n]))
                pos += n
            else:
                raise ValueError("unexpected module opcode %d" % op)
        self.flags, self.jitter, self.blob = fields
        self.rdb_version = payload[pos:pos + 2]
        assert pos + 10 == len(payload)

    def body(self, flags=None, jitter=None, blob=None, module_id=None, fields=None):
        """The payload before version and CRC, with any field replaced."""
        if fields is None:
            fields = [(OPCODE_UINT, self.flags if flags is None else flags),
                      (OPCODE_UINT, self.jitter if jitter is None else jitter),
                      (OPCODE_STRING, self.blob if blob is None else blob)]
        out = bytes([self.type_byte]) + write_len(
            self.module_id if module_id is None else module_id)
        for op, value in fields:
            out += write_len(op)
            if op == OPCODE_UINT:
                out += write_len(value)
            else:
                out += write_len(len(value)) + value
        return out + write_len(OPCODE_EOF)

    def seal(self, body):
        """Add the RDB version and a valid CRC64 to a payload body."""
        body = bytes(body) + self.rdb_version
        return body + struct.pack("<Q", crc64(body))

    def build(self, **kwargs):
        return self.seal(self.body(**kwargs))


def dump(client, key):
    """DUMP a key of a server that has rdbcompression off (raw strings)."""
    payload = client.dump(key)
    assert payload is not None, "no such key"
    return Dump(payload)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def v1_blob():
    """A set serialized by format version 1 (tests/unit/data): the loader
    still takes it, and its fields sit at fixed offsets."""
    with open(os.path.join(ROOT, "tests", "unit", "data", "v1_window.bin"), "rb") as f:
        return f.read()


def corpus_blob(name):
    """A serialized set of the loader's fuzz corpus (tests/fuzz/corpus/load)."""
    with open(os.path.join(ROOT, "tests", "fuzz", "corpus", "load", name), "rb") as f:
        return f.read()


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def read_uvarint(buf, pos):
    v, shift = 0, 0
    while True:
        b = buf[pos]
        v |= (b & 0x7F) << shift
        pos += 1
        shift += 7
        if not b & 0x80:
            return v, pos


HEADER_FIELDS = ["flags", "window", "slices", "error", "capacity", "exact_limit", "origin",
                 "clock", "newest", "plan", "hwm", "hwm_clock", "next_seg_id", "nsegs",
                 "nruns", "head_n"]
# Version 4 writes a policy field only when its flag says so (it differs
# from the format's usual value).
V4_GIVEN = {"window": 8, "slices": 16, "error": 32, "capacity": 64, "exact_limit": 128}


def version(blob):
    return blob[4] | blob[5] << 8


def header(blob):
    """Where each header field of a version 2 to 4 set starts and ends:
    {name: (start, end)}; `error` and `plan` span their two parts, and a
    policy field version 4 leaves out is empty where it would stand."""
    assert blob[:4] == b"SEEN" and 2 <= version(blob) <= 4, "not format version 2 to 4"
    pos, spans = 6, {}
    flags = None
    for name in HEADER_FIELDS:
        start = pos
        if version(blob) == 4 and name in V4_GIVEN and not flags & V4_GIVEN[name]:
            pass
        elif name == "error":
            if flags & 4:
                pos += 8
            else:
                _, pos = read_uvarint(blob, pos)
                pos += 1
        elif name == "plan":
            pos += 1
            _, pos = read_uvarint(blob, pos)
        else:
            v, pos = read_uvarint(blob, pos)
            if name == "flags":
                flags = v
        spans[name] = (start, pos)
    return spans


def set_replace(blob, field, raw):
    """The set with one header field's bytes replaced (checksum fixed); in
    version 4 a policy field left out is written, and flagged."""
    spans = header(blob)
    start, end = spans[field]
    out = blob[:start] + raw + blob[end:]
    if version(blob) == 4 and field in V4_GIVEN:
        flags, flags_end = read_uvarint(blob, 6)
        out = out[:6] + uvarint(flags | V4_GIVEN[field]) + out[flags_end:]
    return fix_set_checksum(out)
