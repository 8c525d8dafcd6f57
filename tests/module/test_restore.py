"""test_restore.py — crafted RESTORE payloads get an error, never a crash.

Every forged payload carries a valid Redis CRC64, so Redis passes it on to
the module's loader; the deeper ones also carry a valid XXH3 checksum of
the serialized set, so the core's field validation is what must refuse
them.  After each attempt the server must still answer and the key must
not exist.
"""
import random
import struct

import pytest
import redis

import payloads
from conftest import server_ms
from payloads import OPCODE_STRING, OPCODE_UINT, dump


@pytest.fixture
def sample(r):
    """A compact, windowed set with several runs and slices, and its DUMP."""
    now = server_ms(r)
    r.execute_command("SEEN.RESERVE", "src", "WINDOW", "40d", "ERROR", "0.01", "EXPIRY", "ON",
                      "JITTER", "1000")
    for b in range(4):
        r.execute_command("SEEN.INSERT", "src", "AT", now - 30 * 86400000 + b * 8 * 86400000,
                          "BULK", "\n".join("x%d-%d" % (b, i) for i in range(3000)))
    r.execute_command("SEEN.ADD", "src", "fresh1", "fresh2")
    return dump(r, "src")


def rejected(r, payload):
    with pytest.raises(redis.ResponseError):
        r.restore("dst", 0, payload)
    assert r.ping()
    assert not r.exists("dst")


def test_genuine_payload_restores(r, sample):
    # The digest notes whether a key has a TTL: restore it with src's.
    r.restore("dst", r.pexpiretime("src"), sample.build(), absttl=True)
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "dst") == r.execute_command(
        "DEBUG", "DIGEST-VALUE", "src")
    assert r.execute_command("SEEN.FILTER", "dst", "x0-1", "fresh1", "nope") == [b"nope"]


def test_truncated(r, sample):
    body = sample.body()
    for cut in list(range(1, 40)) + list(range(40, len(body) - 1, 997)) + [len(body) - 2]:
        # Cutting the set's last byte and the EOF marker: Redis reads the
        # set on into the footer, taking the RDB version's low byte for the
        # set's last and its high byte (0) for EOF.  When the set ends in
        # that very byte (one dump in 256: it is a checksum byte), those
        # are the intact payload's bytes, a valid encoding of the same key.
        if cut == len(body) - 2 and sample.blob[-1] == sample.rdb_version[0]:
            continue
        rejected(r, sample.seal(body[:cut]))
    blob = sample.blob
    for cut in (0, 4, 6, 50, 97, 98, 120, len(blob) // 2, len(blob) - 9, len(blob) - 1):
        rejected(r, sample.build(blob=blob[:cut]))
        rejected(r, sample.build(blob=payloads.fix_set_checksum(blob[:cut]) if cut > 8 else
                                 blob[:cut]))


def test_bit_flips(r, sample):
    rng = random.Random(1)
    blob = bytearray(sample.blob)
    for _ in range(200):
        bad = bytearray(blob)
        pos = rng.randrange(len(bad) - 8)
        bad[pos] ^= 1 << rng.randrange(8)
        rejected(r, sample.build(blob=bytes(bad)))  # the set's checksum catches it


def test_bit_flips_past_the_checksum(r, sample):
    """With the XXH3 fixed up, a flip must be refused by a field check or
    give a set that behaves; it must never crash the server."""
    rng = random.Random(2)
    blob = bytearray(sample.blob)
    accepted = 0
    for i in range(400):
        bad = bytearray(blob)
        # Most flips in the header and tables, some in the coded runs.
        limit = 2000 if i % 4 else len(bad) - 8
        for _ in range(1 + i % 3):
            pos = rng.randrange(min(limit, len(bad) - 8))
            bad[pos] ^= 1 << rng.randrange(8)
        payload = sample.build(blob=payloads.fix_set_checksum(bytes(bad)))
        try:
            r.restore("dst", 0, payload)
        except redis.ResponseError:
            assert r.ping()
            continue
        accepted += 1
        # Whatever was accepted must work (a flip may turn a string set
        # into an integer one: then strings are refused, in words).
        for command in (("SEEN.FILTER", "dst", "x1-5", "never"), ("SEEN.INFO", "dst"),
                        ("SEEN.ADD", "dst", "more"), ("SEEN.ADD", "dst", "17"),
                        ("DEBUG", "DIGEST-VALUE", "dst")):
            try:
                r.execute_command(*command)
            except redis.ResponseError as e:
                assert "decimal integers" in str(e), e
        r.delete("dst")
    assert accepted < 400, accepted


def put32(blob, off, v):
    return blob[:off] + struct.pack("<I", v) + blob[off + 4:]


def put64(blob, off, v):
    return blob[:off] + struct.pack("<Q", v) + blob[off + 8:]


@pytest.mark.parametrize("field,value", [
    ("nsegs", 0xFFFFFFFF), ("nsegs", 5000), ("nruns", 0xFFFFFFFF), ("nruns", 65),
    ("head_n", 0xFFFFFFFF), ("head_n", 1 << 22), ("slices", 0), ("slices", 1000),
    ("window", 1 << 62), ("error_bits", 0x7FF8000000000000), ("error_bits", 0x3FF0000000000000),
])
def test_absurd_header_fields(r, sample, field, value):
    """Format version 1 (fixed offsets), which the loader still takes."""
    offsets = {"nsegs": (payloads.OFF_NSEGS, 4), "nruns": (payloads.OFF_NRUNS, 4),
               "head_n": (payloads.OFF_HEAD_N, 4), "slices": (payloads.OFF_SLICES, 4),
               "window": (payloads.OFF_WINDOW, 8), "error_bits": (payloads.OFF_ERROR, 8)}
    off, size = offsets[field]
    v1 = payloads.v1_blob()
    r.restore("v1", 0, sample.build(blob=v1))  # untouched, it loads
    blob = (put32 if size == 4 else put64)(v1, off, value)
    rejected(r, sample.build(blob=payloads.fix_set_checksum(blob)))


uv = payloads.uvarint


@pytest.mark.parametrize("field,raw", [
    ("nsegs", uv(0xFFFFFFFF)), ("nsegs", uv(5000)), ("nsegs", uv(1 << 40)),
    ("nruns", uv(65)), ("nruns", uv((1 << 64) - 1)), ("head_n", uv(1 << 22)),
    ("slices", uv(0)), ("slices", uv(65)), ("window", uv(1 << 62)),
    ("flags", uv(256 | 1)), ("flags", b"\x81\x00"),           # unknown bit; overlong
    ("error", uv(5) + b"\x01"),                                # 0.5
    ("error", uv(1) + b"\x17"),                                # 10^-23
    ("error", uv(1 << 53) + b"\x10"),                          # m past 2^53
    ("plan", b"\x40" + uv(1)), ("plan", b"\x02" + uv(2)),      # shift 64; not one form
    ("origin", uv((1 << 50) + 1)), ("clock", b"\xff" * 10 + b"\x01"),  # past 64 bits
    ("next_seg_id", uv(1 << 32)),
])
@pytest.mark.parametrize("version", [2, 4])
def test_absurd_header_fields_varint(r, sample, version, field, raw):
    """Versions 2 (a fuzz seed: what the writer wrote before) and 4 (what
    it writes)."""
    blob = sample.blob if version == 4 else payloads.corpus_blob("v2-compact-str")
    assert payloads.version(blob) == version
    r.restore("ok%d" % version, 0, sample.build(blob=blob))  # untouched, it loads
    if field == "flags" and version == 2 and raw == uv(256 | 1):
        raw = uv(8 | 1)  # the first bit version 2 does not know
    rejected(r, sample.build(blob=payloads.set_replace(blob, field, raw)))


def test_absurd_run_fields(r, sample):
    """Each 8-byte field of the first run header set to huge values
    (format version 1, fixed offsets)."""
    blob = payloads.v1_blob()
    nsegs = struct.unpack_from("<I", blob, payloads.OFF_NSEGS)[0]
    head_n = struct.unpack_from("<I", blob, payloads.OFF_HEAD_N)[0]
    run = payloads.SET_HEADER_BYTES + payloads.SEGMENT_BYTES * nsegs + payloads.HEAD_ENTRY_BYTES * head_n
    assert struct.unpack_from("<I", blob, payloads.OFF_NRUNS)[0] >= 1
    for field in range(8):  # c, base, span, golomb_m, bucket_w, code_bits, idx_min_*
        for value in (0, 1 << 63, (1 << 64) - 1):
            bad = put64(blob, run + 8 * field, value)
            if bad == blob:
                continue
            payload = sample.build(blob=payloads.fix_set_checksum(bad))
            try:
                r.restore("dst", 0, payload)
            except redis.ResponseError:
                pass
            else:  # a harmless value (e.g. base): the set must still work
                r.execute_command("SEEN.FILTER", "dst", "a")
                r.delete("dst")
            assert r.ping()
    for field, value in ((64, 0xFFFFFFFF), (68, 0xFFFFFFFF), (72, 0xFFFFFFFF), (64, 0)):
        rejected(r, sample.build(blob=payloads.fix_set_checksum(put32(blob, run + field, value))))


def test_bad_envelope(r, sample):
    rejected(r, sample.build(flags=2))
    rejected(r, sample.build(flags=1 << 40))
    rejected(r, sample.build(jitter=1 << 63))
    # Past the longest window (100 years of 366 days): no key's expiry
    # may be put that far past its forgetting.
    rejected(r, sample.build(jitter=100 * 366 * 24 * 3600 * 1000 + 1))
    rejected(r, sample.build(jitter=(1 << 64) - 1))
    rejected(r, sample.build(blob=b""))
    rejected(r, sample.build(blob=b"SEEN"))
    rejected(r, sample.build(blob=b"\x00" * 500))
    # Fields of the wrong kind, missing, or in the wrong order.
    rejected(r, sample.build(fields=[(OPCODE_UINT, 0), (OPCODE_UINT, 0)]))
    rejected(r, sample.build(fields=[(OPCODE_STRING, sample.blob)]))
    rejected(r, sample.build(fields=[(OPCODE_STRING, b"1"), (OPCODE_UINT, 0),
                                     (OPCODE_STRING, sample.blob)]))
    rejected(r, sample.build(fields=[(OPCODE_UINT, 0), (OPCODE_UINT, 0),
                                     (OPCODE_STRING, sample.blob), (OPCODE_UINT, 0)]))
    # Another encoding version of the type (low 10 bits of the module id).
    rejected(r, sample.build(module_id=(sample.module_id & ~1023) | 2))


def test_expiry_without_window(r):
    r.execute_command("SEEN.RESERVE", "nowin", "WINDOW", "0")
    d = dump(r, "nowin")
    rejected(r, d.build(flags=1))


def test_random_garbage(r, sample):
    rng = random.Random(3)
    head = sample.body()[:1 + len(payloads.write_len(sample.module_id))]
    for n in (0, 1, 2, 5, 17, 100, 1000):
        for _ in range(10):
            rejected(r, sample.seal(head + bytes(rng.getrandbits(8) for _ in range(n))))


def test_load_command_validates_the_same(r, sample):
    bad = payloads.set_replace(sample.blob, "nsegs", payloads.uvarint(0xFFFFFFFF))
    with pytest.raises(redis.ResponseError, match="corrupt|truncated"):
        r.execute_command("SEEN.LOAD", "dst", bad)
    assert not r.exists("dst")
