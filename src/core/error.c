/*
 * error.c — the messages of seen_err.  Each names what was wrong, in words a
 * Redis client can show as-is after "ERR ".
 */
#include "seen.h"

const char *seen_strerror(seen_err err)
{
    switch (err) {
    case SEEN_OK:
        return "ok";
    case SEEN_ERR_NOMEM:
        return "out of memory";
    case SEEN_ERR_ARG:
        return "invalid argument";
    case SEEN_ERR_WINDOW:
        return "bad window: must be 0 or at least one ms per slice, at most 100 years";
    case SEEN_ERR_SLICES:
        return "bad slices: must be an integer from 1 to 64";
    case SEEN_ERR_ERROR_RATE:
        return "error rate must be in (0, 0.5), at least 1e-9, or EXACT";
    case SEEN_ERR_CAPACITY:
        return "capacity must be from 0 (no cap) to 4294967296";
    case SEEN_ERR_IDS:
        return "item kind does not match the set (STR or INT)";
    case SEEN_ERR_ITEM_LEN:
        return "items must be 1 to 512 bytes long";
    case SEEN_ERR_BATCH:
        return "batch too large: at most 1048576 items per call";
    case SEEN_ERR_TIME:
        return "timestamp out of range: must be 0 to 2^50 ms since the epoch";
    case SEEN_ERR_BUFFER:
        return "output buffer too small";
    case SEEN_ERR_FORMAT_MAGIC:
        return "not a serialized seen set (bad magic)";
    case SEEN_ERR_FORMAT_VERSION:
        return "serialized seen set has an unsupported format version";
    case SEEN_ERR_FORMAT_CHECKSUM:
        return "serialized seen set fails its checksum";
    case SEEN_ERR_FORMAT_TRUNCATED:
        return "serialized seen set is truncated";
    case SEEN_ERR_FORMAT_CORRUPT:
        return "serialized seen set is corrupt";
    case SEEN_ERR_LIMIT:
        return "write refused: the set would pass a limit of its stored form";
    case SEEN_ERR__COUNT:
        break;
    }
    return "unknown error";
}
