/*
 * write.h — what the parts of a set (set.c, query.c, write.c, state.c,
 * merge.c, plan.c) share: time and segment arithmetic, the state a write
 * builds, the working list of runs a flush edits, and the functions one
 * part offers the others.  Private to the core library.
 */
#ifndef SEEN_WRITE_H
#define SEEN_WRITE_H

#include "internal.h"

static inline int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static inline int64_t slice_of(const seen_set *s, int64_t origin, int64_t t)
{
    return s->slice_ms ? floor_div(t - origin, (int64_t)s->slice_ms) : 0;
}

static inline int64_t slice_forget_at(const seen_set *s, int64_t origin, int64_t k)
{
    if (!s->slice_ms)
        return INT64_MAX;
    return origin + (k + 1) * (int64_t)s->slice_ms + (int64_t)s->policy.window_ms;
}

static inline bool seg_alive(const seen_set *s, const seen__segment *g, int64_t origin, int64_t q)
{
    return !g->dropped && slice_forget_at(s, origin, g->slice) > q;
}

static inline int seg_age_cmp(const seen__segment *a, const seen__segment *b)
{
    if (a->slice != b->slice)
        return a->slice < b->slice ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

static inline int32_t seg_find(const seen__segment *segs, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (segs[i].id == id)
            return (int32_t)i;
    return -1;
}

/* seg_find for a sequence of lookups that tend to follow the table: a
 * run's ids are in table order, and neighbouring head entries share
 * segments.  The scan starts at *hint and wraps, so a sequence in table
 * order costs one pass over the table, not one per lookup. */
static inline int32_t seg_find_near(const seen__segment *segs, uint32_t n, uint32_t id,
                                    uint32_t *hint)
{
    uint32_t i = *hint < n ? *hint : 0;
    for (uint32_t step = 0; step < n; step++) {
        if (segs[i].id == id) {
            *hint = i;
            return (int32_t)i;
        }
        if (++i == n)
            i = 0;
    }
    return -1;
}

static inline size_t head_limit(uint64_t stored)
{
    uint64_t per = stored >= SEEN_HEAD_LARGE_SET ? SEEN_HEAD_PER_ITEMS / 2 : SEEN_HEAD_PER_ITEMS;
    uint64_t lim = stored / per;
    if (lim < SEEN_HEAD_MIN)
        lim = SEEN_HEAD_MIN;
    if (lim > SEEN_HEAD_MAX)
        lim = SEEN_HEAD_MAX;
    return (size_t)lim;
}

static inline uint64_t seg_step(const seen_set *s)
{
    uint64_t cap = s->policy.capacity;
    return cap ? (cap + s->policy.slices - 1) / s->policy.slices : 0;
}

static inline seen_err check_time(int64_t t)
{
    return (t < 0 || t > SEEN_MAX_TIME_MS) ? SEEN_ERR_TIME : SEEN_OK;
}

/*
 * The state a write builds before it commits: a new segment table, the
 * head (old entries plus new ones), and — when runs are rewritten — a new
 * run array.  Old blocks are freed only by seen__commit_next().
 */
typedef struct next_state {
    seen__segment *segs;
    seen__span *spans; /* with a capacity, beside segs (same capacity) */
    uint32_t nsegs, segs_cap;
    uint64_t *hkeys;
    uint32_t *hsegs;
    uint32_t hn, hcap;
    bool head_fresh; /* hkeys is a new block, not the set's */
    seen__run *runs; /* NULL: runs unchanged */
    uint32_t nruns;
    int64_t clock, origin, newest;
    uint64_t plan_c, hwm;
    int64_t hwm_clock;
    uint32_t next_seg_id;
    uint8_t has_origin;
    uint8_t raw_keys; /* as in seen_set; cleared by the flush that mixes */
    /* Set for the one merge that leaves raw keys: runs and head are read
     * as raw ids and mixed before they are divided (merge.c). */
    bool mixing;
    bool backfill; /* the write imports past history (see flush) */
    /* Coalescing count steps (next_coalesce): table index -> the index
     * its entries move to as runs are rewritten; NULL when none do. */
    int32_t *seg_map;
} next_state;

static inline int32_t seg_mapped(const next_state *ns, int32_t k)
{
    return k >= 0 && ns->seg_map ? ns->seg_map[k] : k;
}

static inline unsigned __int128 budget_of(const seen_set *s)
{
    return s->budget ? (unsigned __int128)s->budget : ~(unsigned __int128)0;
}

/* The first of sorted a[0..n) that is not below x (n if none). */
static inline size_t lower_bound(const uint64_t *a, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline bool in_sorted(const uint64_t *a, size_t n, uint64_t x)
{
    size_t lo = lower_bound(a, n, x);
    return lo < n && a[lo] == x;
}

/* Which head items a merge takes: relative to the slice of the clock. */
typedef enum head_part { HEAD_NONE, HEAD_ALL, HEAD_OLD, HEAD_CURRENT } head_part;

/* A working copy of the run list that flush edits: a few runs of room
 * above the limit, which flush brings the list back under. */
#define RUNLIST_MAX (SEEN_MAX_RUNS + 8)
typedef struct runlist {
    seen__run r[RUNLIST_MAX];
    bool created[RUNLIST_MAX]; /* built by this write (owned until commit) */
    uint32_t n;
    /* Entries of dead segments a run still holds while flush waits to
     * drop them in a merge it is about to make anyway (seen__flush); the
     * counts that plan from the list leave them out. */
    uint64_t dead_held;
} runlist;

/* The budget governs fingerprints: runs with c > 1.  Exact keys (c = 1)
 * collide only as 64-bit hashes do, which the error bound does not cover
 * (docs/DESIGN.md), so storing an item exactly always fits. */
static inline unsigned __int128 run_mass(const seen__run *r)
{
    return r->c > 1 ? (unsigned __int128)r->n * r->c : 0;
}

/* set.c */
bool seen__head_alloc(uint64_t **keys, uint32_t **segs, uint32_t cap);

/* query.c */
void seen__run_tag_ranks(const seen_set *s, const seen__segment *segs, uint32_t nsegs,
                         int64_t origin, const seen__run *r, int64_t q, int32_t *tr);
seen_err seen__locate(const seen_set *s, const seen__kv *cand, size_t n, int64_t q,
                      bool presence_only, int32_t *rank);
/* One string item's own errors: a length outside 1..SEEN_MAX_ITEM_LEN,
 * then a missing pointer. */
static inline seen_err seen__check_str(const seen_str *item)
{
    if (item->len - 1 >= SEEN_MAX_ITEM_LEN) /* 0 wraps around */
        return SEEN_ERR_ITEM_LEN;
    return item->ptr == NULL ? SEEN_ERR_ARG : SEEN_OK;
}
seen_err seen__check_strs(const seen_str *items, size_t n);

/* state.c */
void seen__next_discard(const seen_set *s, next_state *ns);
seen_err seen__next_begin(const seen_set *s, next_state *ns, int64_t now);
/* Room in the head for n entries in all, in one block: a batch's pushes
 * then allocate once, not at each step of the capacity sequence.  The
 * block follows the sequence, so if every item is pushed it is the one
 * the steps would have reached; seen__next_head_fit trims it to the
 * sequence's size for what was pushed (as a loaded set's head is). */
bool seen__next_head_reserve(next_state *ns, uint32_t n);
bool seen__next_head_fit(next_state *ns);
bool seen__next_head_push(next_state *ns, uint64_t key, uint32_t seg);
bool seen__next_head_prune(const seen_set *s, next_state *ns);
void seen__next_expire(const seen_set *s, next_state *ns);
uint64_t seen__next_live_items(const seen_set *s, const next_state *ns);
int32_t seen__open_segment(const seen_set *s, next_state *ns, int64_t slice, int64_t t);
void seen__apply_capacity(const seen_set *s, next_state *ns);
void seen__next_drop_unreferenced(const seen_set *s, next_state *ns);
void seen__update_hwm(const seen_set *s, next_state *ns);
void seen__commit_next(seen_set *s, next_state *ns);
seen_err seen__finish_write(seen_set *s, next_state *ns, bool force);

/* merge.c */
seen_err seen__merge_build(const seen_set *s, next_state *ns, const seen__run *const *inputs,
                           size_t ninputs, head_part with_head, uint64_t c_out, const uint64_t *rm,
                           size_t nrm, seen__run *out, bool *empty);

/* plan.c */
bool seen__next_exact_phase(const seen_set *s, const next_state *ns, const seen__run *runs,
                            uint32_t nruns, uint64_t live);
bool seen__run_has_dead(const seen_set *s, const next_state *ns, const seen__run *r);
void seen__runlist_release_created(runlist *rl);
void seen__runlist_replace(runlist *rl, uint32_t a, uint32_t b, const seen__run *nr, bool empty);
seen_err seen__flush(const seen_set *s, next_state *ns);
bool seen__need_flush(const seen_set *s, const next_state *ns, bool dead);

#endif /* SEEN_WRITE_H */
