"""_commands.py — the SEEN.* command lines and reply shapes, shared by the
synchronous and asyncio clients: what to send for each method, and how to
turn what comes back into Python values.  Nothing here does I/O.

The fast forms are chosen here: items travel in one newline-separated BULK
argument (Redis builds one object per argument, which costs more than the
filter itself at 10,000 candidates) and filters answer as REPLY FLAGS, one
byte per candidate, from which the caller's own objects are picked, so
nothing is decoded twice.
"""
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

Item = Union[str, bytes, int]

MAX_ITEM_BYTES = 512
# Items per command: the module's default seen.max-batch.
DEFAULT_MAX_BATCH = 1_000_000


class SeenError(ValueError):
    """An argument the module would refuse, caught before sending."""


class CrossSlotError(SeenError):
    """Keys of one SEEN.MFILTER that live in different cluster slots."""


def encode_item(item: Item) -> bytes:
    if isinstance(item, bool):
        raise SeenError("items are str, bytes or non-negative int, not bool")
    if isinstance(item, int):
        if item < 0 or item >= 1 << 64:
            raise SeenError("integer items must be in [0, 2^64)")
        return str(item).encode()
    if isinstance(item, str):
        data = item.encode()
    elif isinstance(item, (bytes, bytearray, memoryview)):
        data = bytes(item)
    else:
        raise SeenError("items are str, bytes or non-negative int, not %s" % type(item).__name__)
    if not 1 <= len(data) <= MAX_ITEM_BYTES:
        raise SeenError("items must be 1 to %d bytes long" % MAX_ITEM_BYTES)
    return data


def encode_items(items: Sequence[Item]) -> List[bytes]:
    return [encode_item(i) for i in items]


def item_tail(encoded: List[bytes]) -> List[Any]:
    """`BULK <lines>` when no item holds a newline, else `ITEMS a b ...`."""
    if any(b"\n" in e for e in encoded):
        return ["ITEMS", *encoded]
    return ["BULK", b"\n".join(encoded)]


def chunks(seq: Sequence[Any], size: int) -> List[Sequence[Any]]:
    return [seq[i:i + size] for i in range(0, len(seq), size)] or [seq[:0]]


def duration(value: Union[int, str]) -> str:
    """Milliseconds as an int, or a string the module reads ("90d")."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SeenError("durations are int milliseconds or strings like '90d'")
    if isinstance(value, int) and value < 0:
        raise SeenError("durations are not negative")
    return str(value)


def policy_args(window=None, slices=None, error=None, exact=False, capacity=None, ids=None,
                exact_limit=None, expiry=None, jitter=None) -> List[Any]:
    """The policy options of SEEN.RESERVE / SEEN.INSERT, only those given."""
    args: List[Any] = []
    if window is not None:
        args += ["WINDOW", duration(window)]
    if slices is not None:
        args += ["SLICES", int(slices)]
    if exact and error is not None:
        raise SeenError("give error or exact, not both")
    if exact:
        args.append("EXACT")
    elif error is not None:
        args += ["ERROR", repr(float(error))]
    if capacity is not None:
        args += ["CAPACITY", int(capacity)]
    if ids is not None:
        if ids not in ("str", "int"):
            raise SeenError("ids is 'str' or 'int'")
        args += ["IDS", ids.upper()]
    if exact_limit is not None:
        args += ["EXACTLIMIT", int(exact_limit)]
    if expiry is not None:
        args += ["EXPIRY", "ON" if expiry else "OFF"]
    if jitter is not None:
        args += ["JITTER", duration(jitter)]
    return args


def timed_tail(encoded: List[bytes], times: Sequence[int]) -> List[Any]:
    """TIMED items: each with its time, as "ms item" lines or pairs."""
    if len(times) != len(encoded):
        raise SeenError("times must give one time per item")
    stamps = [str(int(t)).encode() for t in times]
    if any(b"\n" in e for e in encoded):
        pairs: List[Any] = []
        for t, e in zip(stamps, encoded):
            pairs += [t, e]
        return ["TIMED", "ITEMS", *pairs]
    return ["TIMED", "BULK", b"\n".join(t + b" " + e for t, e in zip(stamps, encoded))]


def mfilter_args(keys: Sequence[Any], encoded: List[bytes], at: Optional[int],
                 reply: str) -> List[Any]:
    if not keys:
        raise SeenError("at least one key")
    args: List[Any] = ["SEEN.MFILTER", len(keys), *keys]
    if at is not None:
        args += ["AT", int(at)]
    return args + ["REPLY", reply] + item_tail(encoded)


def flag_bytes(replies: Sequence[Any]) -> bytes:
    """FLAGS replies as one byte string (a client made with
    decode_responses=True hands them over as str)."""
    return b"".join(r.encode() if isinstance(r, str) else r for r in replies)


def pick_unseen(items: Sequence[Item], flags: bytes) -> List[Item]:
    """The caller's own items whose flag is "0" (not seen)."""
    return [item for item, f in zip(items, flags) if f == 0x30]


def to_bools(flags: bytes) -> List[bool]:
    return [f == 0x31 for f in flags]


def _value(v: Any) -> Any:
    if isinstance(v, (bytes, str)):
        text = v.decode(errors="replace") if isinstance(v, bytes) else v
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return text
    if isinstance(v, list):
        if len(v) % 2 == 0 and all(isinstance(k, (bytes, str)) for k in v[::2]) and v and \
                not all(isinstance(x, list) for x in v):
            return {(k.decode() if isinstance(k, bytes) else k): _value(x)
                    for k, x in zip(v[::2], v[1::2])}
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {(k.decode() if isinstance(k, bytes) else k): _value(x) for k, x in v.items()}
    return v


def info_dict(reply: Any) -> Dict[str, Any]:
    """SEEN.INFO (a flat array in RESP2, a map in RESP3) as nested dicts,
    numbers as int or float; `runs` and `slices` as lists of dicts."""
    if isinstance(reply, dict):
        pairs: List[Tuple[Any, Any]] = list(reply.items())
    else:
        pairs = list(zip(reply[::2], reply[1::2]))
    out: Dict[str, Any] = {}
    for k, v in pairs:
        name = k.decode() if isinstance(k, bytes) else k
        if name in ("runs", "slices"):
            out[name] = [_value(x) for x in v]
        else:
            out[name] = _value(v)
    return out
