/*
 * seen.h — the public API of the seen core library.
 *
 * A seen set remembers which items a user has already been shown, for a
 * time window and/or up to a count cap, and answers in one call which of a
 * batch of candidates are still unseen.  Small sets are exact; large ones
 * store compressed fingerprints whose total false-positive rate never
 * exceeds the configured bound.  The library has no Redis dependency; all
 * memory goes through the allocator installed with seen_set_allocator().
 *
 * Time is always given by the caller, in milliseconds since the Unix epoch,
 * so imported history and late events land in the slice they belong to.
 *
 * Guarantees, for an item added at time t with window W and S slices:
 *   - it is reported seen for every query time q < t + W;
 *   - it is no longer reported seen (except as an ordinary false positive)
 *     once q >= t + W * (1 + 1/S);
 *   - a candidate that was never added is reported seen with probability at
 *     most `error`.  Exact sets (error 0) and small sets store whole 64-bit
 *     keys: integer ids never collide there; string ids collide only as
 *     their 64-bit hashes do (at most n * 2^-64 for n stored items);
 *   - with a capacity C, the most recent C items are always kept, and older
 *     ones are forgotten oldest first, in steps of about C/S items.
 *
 * Every function that can fail returns a seen_err.  A failed call changes
 * nothing: a set is never left half-modified, even when an allocation fails.
 * See docs/DESIGN.md for the structures and docs/FORMAT.md for the
 * serialized form.
 */
#ifndef SEEN_H
#define SEEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SEEN_VERSION_STRING "0.1.0"

/* Limits.  Inputs beyond them are rejected with an error, never truncated. */
#define SEEN_MAX_ITEM_LEN 512u                               /* bytes in a string item */
#define SEEN_MAX_BATCH (1u << 20)                            /* items in one add/filter/remove */
#define SEEN_MAX_SLICES 64u                                  /* time slices per window */
#define SEEN_MAX_WINDOW_MS (100ull * 366 * 24 * 3600 * 1000) /* ~100 years */
#define SEEN_MAX_TIME_MS (1ll << 50)                         /* latest accepted timestamp */
#define SEEN_MIN_ERROR 1e-9                                  /* smallest accepted error bound */
#define SEEN_MAX_CAPACITY (1ull << 32)                       /* largest count cap */

typedef enum seen_err {
    SEEN_OK = 0,
    SEEN_ERR_NOMEM,            /* an allocation failed */
    SEEN_ERR_ARG,              /* a NULL pointer or an impossible argument */
    SEEN_ERR_WINDOW,           /* window out of range or shorter than slices */
    SEEN_ERR_SLICES,           /* slices not in 1..SEEN_MAX_SLICES */
    SEEN_ERR_ERROR_RATE,       /* error rate not 0 and not in [1e-9, 0.5) */
    SEEN_ERR_CAPACITY,         /* capacity above SEEN_MAX_CAPACITY */
    SEEN_ERR_IDS,              /* unknown id kind, or items of the other kind */
    SEEN_ERR_ITEM_LEN,         /* a string item is empty or too long */
    SEEN_ERR_BATCH,            /* a batch larger than SEEN_MAX_BATCH */
    SEEN_ERR_TIME,             /* a timestamp below 0 or above SEEN_MAX_TIME_MS */
    SEEN_ERR_BUFFER,           /* the output buffer is too small */
    SEEN_ERR_FORMAT_MAGIC,     /* serialized bytes do not start with "SEEN" */
    SEEN_ERR_FORMAT_VERSION,   /* serialized by a newer, unknown format */
    SEEN_ERR_FORMAT_CHECKSUM,  /* serialized bytes fail their checksum */
    SEEN_ERR_FORMAT_TRUNCATED, /* serialized bytes end early */
    SEEN_ERR_FORMAT_CORRUPT,   /* a field is out of range or inconsistent */
    SEEN_ERR_LIMIT,            /* the write would take the set past a limit of its
                                  serialized form; the set is unchanged */
    SEEN_ERR__COUNT
} seen_err;

/* A static, human-readable description of an error code. */
const char *seen_strerror(seen_err err);

/* ---------------------------------------------------------------- memory */

/*
 * The allocator every allocation of the library goes through.  Install it
 * once, before creating any set (the Redis module installs Redis's own so
 * that MEMORY USAGE and INFO memory are true).  usable_size_fn may be NULL;
 * when given, seen_bytes() reports what the allocator really handed out, and
 * large runs are laid out in blocks that fit jemalloc-like size classes
 * (four per doubling) with little waste.
 */
typedef struct seen_allocator {
    void *(*malloc_fn)(size_t size);
    void *(*realloc_fn)(void *ptr, size_t size);
    void (*free_fn)(void *ptr);
    size_t (*usable_size_fn)(void *ptr);
} seen_allocator;

/* NULL restores the C library's allocator. */
void seen_set_allocator(const seen_allocator *alloc);

/* ---------------------------------------------------------------- policy */

typedef enum seen_ids {
    SEEN_IDS_STR = 0, /* items are byte strings of 1..512 bytes */
    SEEN_IDS_INT = 1  /* items are 64-bit integers */
} seen_ids;

typedef struct seen_policy {
    uint64_t window_ms;   /* how long an item is remembered; 0: no limit */
    uint32_t slices;      /* time granularity of forgetting (1..64) */
    double error;         /* false-positive bound; 0 means exact */
    uint64_t capacity;    /* keep at most about this many items; 0: no cap */
    seen_ids ids;         /* kind of item */
    uint32_t exact_limit; /* sets up to this many items stay exact */
} seen_policy;

/* 90-day window, 4 slices, error 0.001, no cap, string ids. */
void seen_policy_default(seen_policy *policy);

/* SEEN_OK, or the error naming the first field out of range. */
seen_err seen_policy_check(const seen_policy *policy);

/* ------------------------------------------------------------------ sets */

typedef struct seen_set seen_set;

/* A string item: `len` bytes at `ptr` (1..SEEN_MAX_ITEM_LEN). */
typedef struct seen_str {
    const void *ptr;
    size_t len;
} seen_str;

seen_err seen_create(const seen_policy *policy, seen_set **out);
void seen_free(seen_set *set);
seen_err seen_copy(const seen_set *set, seen_set **out);
const seen_policy *seen_get_policy(const seen_set *set);

/*
 * Add n items.  at[i] is when item i was seen (NULL: all at `now`); times
 * later than `now` count as `now`, and items whose slice has already expired
 * at `now` are ignored.  *added (may be NULL) receives how many items were
 * not seen before the call — adding an item again is idempotent.
 */
seen_err seen_add_str(seen_set *set, const seen_str *items, size_t n, const int64_t *at,
                      int64_t now, size_t *added);
seen_err seen_add_int(seen_set *set, const uint64_t *items, size_t n, const int64_t *at,
                      int64_t now, size_t *added);

/*
 * Which of n candidates are seen at time `now`: seen[i] is set to 1 for a
 * seen candidate and left untouched otherwise, so the caller can OR the
 * answers of several sets (clear the array first for a single set).
 */
seen_err seen_filter_str(const seen_set *set, const seen_str *items, size_t n, int64_t now,
                         uint8_t *seen);
seen_err seen_filter_int(const seen_set *set, const uint64_t *items, size_t n, int64_t now,
                         uint8_t *seen);

/*
 * Forget items ("un-see").  *removed receives how many of them were seen.
 * In approximate mode an item is stored as a fingerprint, so removing it
 * also forgets any other item sharing that fingerprint (probability about
 * error / items per other item) — see docs/DESIGN.md.
 */
seen_err seen_remove_str(seen_set *set, const seen_str *items, size_t n, int64_t now,
                         size_t *removed);
seen_err seen_remove_int(seen_set *set, const uint64_t *items, size_t n, int64_t now,
                         size_t *removed);

/*
 * Drop what has expired at `now` and reclaim its memory.  A set that took
 * an import (items older than ten minutes before the call's `now`) keeps
 * the imported items exact, since their final count is unknown while the
 * import runs; this call, like the next add without such items, compacts
 * them for what the set then holds.
 */
seen_err seen_expire(seen_set *set, int64_t now);

/* 1 if seen_expire(set, now) would compact exact keys (an import has
 * ended or paused); 0 otherwise.  Hosts call it after a write to schedule
 * that compaction. */
int seen_compactable(const seen_set *set, int64_t now);

/* 1 if the set still stores entries forgotten by `now` (a slice past the
 * window): queries ignore them, and seen_expire(set, now), or any write,
 * drops them.  Hosts call it on idle sets to reclaim that memory. */
int seen_holds_forgotten(const seen_set *set, int64_t now);

/* The earliest `now` at which seen_holds_forgotten or seen_compactable can
 * be 1 while nothing writes (INT64_MIN: already; INT64_MAX: never): a host
 * holding idle sets in their serialized form need not look at one before. */
int64_t seen_idle_work_at(const seen_set *set);

/* ------------------------------------------------------- prepared queries */

/*
 * A batch of candidates hashed and sorted once, to be checked against
 * several sets (e.g. a user's "delivered" and "played" keys).
 */
typedef struct seen_query seen_query;

seen_err seen_query_str(const seen_str *items, size_t n, seen_query **out);
seen_err seen_query_int(const uint64_t *items, size_t n, seen_query **out);
size_t seen_query_count(const seen_query *query);
/* OR the answers of `set` into seen[0..count-1]. */
seen_err seen_query_run(const seen_set *set, seen_query *query, int64_t now, uint8_t *seen);
void seen_query_free(seen_query *query);

/* ------------------------------------------------------------ inspection */

/* Bytes of memory the set holds, header and payload together. */
size_t seen_bytes(const seen_set *set);

/* Items held and not yet expired at `now` (distinct fingerprints). */
uint64_t seen_count(const seen_set *set, int64_t now);

/*
 * The time from which everything now in the set is forgotten: a key can be
 * deleted then.  INT64_MAX when the set has no window; a past time when the
 * set is empty.
 */
int64_t seen_forget_all_at(const seen_set *set);
/* The latest `now` a write gave the set (0 if it was never written): how
 * long it has been idle, for a host deciding whether an import has ended. */
int64_t seen_last_write_at(const seen_set *set);

/* The current false-positive rate bound: sum over stored fingerprints. */
double seen_fpr_estimate(const seen_set *set);
/* 1 if an IDS INT set stores its ids as they are (dense ids, kept exact
 * while that is smaller than fingerprints: no false positives), 0 if it
 * stores hashes (string items, or ids once mixed). */
int seen_keys_raw(const seen_set *set);

/* One time slice (and, with a capacity, one count segment of it). */
typedef struct seen_segment_info {
    int64_t start_ms;  /* first millisecond of the slice (0: no window) */
    int64_t end_ms;    /* first millisecond after the slice */
    int64_t forget_ms; /* from when its items are forgotten (INT64_MAX: never) */
    uint64_t seq;      /* count step within the slice (with a capacity) */
    uint64_t items;
} seen_segment_info;

/* One stored run of items: how it is encoded. */
typedef enum seen_encoding {
    SEEN_ENC_BUFFER = 0, /* raw recent additions, not yet merged */
    SEEN_ENC_EXACT,      /* sorted exact keys, Golomb-coded gaps */
    SEEN_ENC_COMPACT     /* sorted fingerprints: Golomb-coded gaps, or Elias-Fano when large */
} seen_encoding;

typedef struct seen_run_info {
    seen_encoding encoding;
    uint64_t items;
    uint64_t bytes;       /* bytes requested for it */
    uint64_t held;        /* bytes the allocator holds for it (size classes) */
    uint32_t blocks;      /* allocations it is stored in */
    double bits_per_item; /* payload bits per item */
    double fpr;           /* this run's share of the false-positive rate */
    uint32_t segments;    /* slices/segments it holds items of */
} seen_run_info;

/* Fill up to `cap` entries; return how many exist. */
size_t seen_segments(const seen_set *set, int64_t now, seen_segment_info *out, size_t cap);
size_t seen_runs(const seen_set *set, seen_run_info *out, size_t cap);

/* ---------------------------------------------------------- serialization */

/* Exact size seen_serialize() will write. */
size_t seen_serialized_size(const seen_set *set);
/* SEEN_ERR_BUFFER if cap is below that size (buf's first cap bytes are then
 * unspecified; the set is unchanged). */
seen_err seen_serialize(const seen_set *set, uint8_t *buf, size_t cap, size_t *written);
/* Validates every field; malformed input gets an error, never a crash. */
seen_err seen_deserialize(const uint8_t *buf, size_t len, seen_set **out);
/* The same for bytes this process's seen_serialize() wrote and that never
 * left its memory (a small set kept in its serialized form to save the
 * tables): every field is still checked, but not the checksum nor every
 * code, which makes it several times faster.  Anything read from outside
 * (a file, the network) goes through seen_deserialize(). */
seen_err seen_deserialize_trusted(const uint8_t *buf, size_t len, seen_set **out);

#ifdef __cplusplus
}
#endif

#endif /* SEEN_H */
