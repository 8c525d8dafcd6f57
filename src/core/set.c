/*
 * set.c — seen sets: adding, filtering, removing and forgetting items, and
 * the plan that keeps the total false-positive rate under its bound.
 *
 * Structure (docs/DESIGN.md explains the choices and their measurements).
 * A set holds:
 *   - a segment table: time slices (and count steps, with a capacity), in
 *     age order.  An item lives in the segment of its newest addition;
 *   - runs (run.c): Golomb-coded sorted values with a segment tag each.
 *     Usually two: "main" with the older slices and a small recent run, so
 *     a new item rewrites only the recent run, and a lookup visits two;
 *   - the head: raw keys of the latest additions, merged into the runs in
 *     batches once it holds about one item per thousand stored.
 *
 * Exactness and the false-positive budget.  A run with divisor c stores
 * key / c; a fresh key matches one of its n values with probability at most
 * n * c / 2^64.  The invariant is
 *
 *       sum over runs (n * c)  +  head items  <=  budget = error * 2^64,
 *
 * checked before every change, so the bound holds at every moment.  Small
 * and young sets keep c = 1 (exact keys).  Once compact, each new run gets
 * the largest divisor that leaves room for the items the set is expected to
 * hold (its recent high-water mark, or a projection of its rate over the
 * window while it is younger than one window); see "planning" below.
 *
 * Forgetting.  Slice k covers [origin + k*L, origin + (k+1)*L) with
 * L = ceil(window / slices) and is forgotten from origin + (k+1)*L + window:
 * at least `window` after its last item, at most window + L after its
 * first.  Queries skip dead segments; writes purge them from the runs.
 *
 * Failure atomicity.  Every write builds the next segment table, head and
 * runs in fresh allocations (struct next_state) and only then swaps them in
 * (commit_next), so a failed allocation leaves the set as it was.
 */
#include "internal.h"

#include <math.h>

/* ================================================================ policy */

void seen_policy_default(seen_policy *p)
{
    p->window_ms = SEEN_DEFAULT_WINDOW_MS;
    p->slices = SEEN_DEFAULT_SLICES;
    p->error = SEEN_DEFAULT_ERROR;
    p->capacity = 0;
    p->ids = SEEN_IDS_STR;
    p->exact_limit = SEEN_DEFAULT_EXACT_LIMIT;
}

seen_err seen_policy_check(const seen_policy *p)
{
    if (p == NULL)
        return SEEN_ERR_ARG;
    if (p->ids != SEEN_IDS_STR && p->ids != SEEN_IDS_INT)
        return SEEN_ERR_IDS;
    if (p->slices < 1 || p->slices > SEEN_MAX_SLICES)
        return SEEN_ERR_SLICES;
    if (p->window_ms != 0 && (p->window_ms < p->slices || p->window_ms > SEEN_MAX_WINDOW_MS))
        return SEEN_ERR_WINDOW;
    if (!(p->error == 0.0 || (p->error >= SEEN_MIN_ERROR && p->error < 0.5)))
        return SEEN_ERR_ERROR_RATE;
    if (p->capacity > SEEN_MAX_CAPACITY)
        return SEEN_ERR_CAPACITY;
    if (p->exact_limit > (UINT32_C(1) << 31))
        return SEEN_ERR_ARG;
    return SEEN_OK;
}

bool seen__set_derive(seen_set *s)
{
    if (seen_policy_check(&s->policy) != SEEN_OK)
        return false;
    const seen_policy *p = &s->policy;
    s->slice_ms = p->window_ms ? (p->window_ms + p->slices - 1) / p->slices : 0;
    s->budget = p->error > 0 ? (uint64_t)ldexp(p->error, 64) : 0;
    return true;
}

uint64_t seen__int_key(const seen_set *s, uint64_t item)
{
    return s->policy.error > 0 ? seen__mix64(item) : item;
}

/* ================================================================ time */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t slice_of(const seen_set *s, int64_t origin, int64_t t)
{
    return s->slice_ms ? floor_div(t - origin, (int64_t)s->slice_ms) : 0;
}

static int64_t slice_forget_at(const seen_set *s, int64_t origin, int64_t k)
{
    if (!s->slice_ms)
        return INT64_MAX;
    return origin + (k + 1) * (int64_t)s->slice_ms + (int64_t)s->policy.window_ms;
}

static bool seg_alive(const seen_set *s, const seen__segment *g, int64_t origin, int64_t q)
{
    return !g->dropped && slice_forget_at(s, origin, g->slice) > q;
}

static int seg_age_cmp(const seen__segment *a, const seen__segment *b)
{
    if (a->slice != b->slice)
        return a->slice < b->slice ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

static int32_t seg_find(const seen__segment *segs, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (segs[i].id == id)
            return (int32_t)i;
    return -1;
}

/* ================================================================ basics */

static size_t head_limit(uint64_t stored)
{
    uint64_t per = stored >= SEEN_HEAD_LARGE_SET ? SEEN_HEAD_PER_ITEMS / 2 : SEEN_HEAD_PER_ITEMS;
    uint64_t lim = stored / per;
    if (lim < SEEN_HEAD_MIN)
        lim = SEEN_HEAD_MIN;
    if (lim > SEEN_HEAD_MAX)
        lim = SEEN_HEAD_MAX;
    return (size_t)lim;
}

static uint64_t seg_step(const seen_set *s)
{
    uint64_t cap = s->policy.capacity;
    return cap ? (cap + s->policy.slices - 1) / s->policy.slices : 0;
}

seen_err seen_create(const seen_policy *policy, seen_set **out)
{
    if (out == NULL)
        return SEEN_ERR_ARG;
    seen_err err = seen_policy_check(policy);
    if (err != SEEN_OK)
        return err;
    seen_set *s = seen__calloc(1, sizeof *s);
    if (s == NULL)
        return SEEN_ERR_NOMEM;
    s->policy = *policy;
    seen__set_derive(s);
    *out = s;
    return SEEN_OK;
}

void seen__set_destroy(seen_set *s)
{
    for (uint32_t i = 0; i < s->nruns; i++)
        seen__run_release(&s->runs[i]);
    seen__free(s->runs);
    seen__free(s->segs);
    seen__free(s->head_keys);
    s->runs = NULL;
    s->segs = NULL;
    s->head_keys = NULL;
    s->head_segs = NULL;
    s->nruns = s->nsegs = s->head_n = s->head_cap = 0;
}

void seen_free(seen_set *s)
{
    if (s == NULL)
        return;
    seen__set_destroy(s);
    seen__free(s);
}

const seen_policy *seen_get_policy(const seen_set *s)
{
    return s ? &s->policy : NULL;
}

/* Allocates one block holding cap keys and cap segment ids. */
static bool head_alloc(uint64_t **keys, uint32_t **segs, uint32_t cap)
{
    if (cap == 0) {
        *keys = NULL;
        *segs = NULL;
        return true;
    }
    uint64_t *k = seen__malloc((size_t)cap * (sizeof(uint64_t) + sizeof(uint32_t)));
    if (k == NULL)
        return false;
    *keys = k;
    *segs = (uint32_t *)(void *)(k + cap);
    return true;
}

seen_err seen_copy(const seen_set *s, seen_set **out)
{
    if (s == NULL || out == NULL)
        return SEEN_ERR_ARG;
    seen_set *c = seen__calloc(1, sizeof *c);
    if (c == NULL)
        return SEEN_ERR_NOMEM;
    *c = *s;
    c->segs = NULL;
    c->runs = NULL;
    c->head_keys = NULL;
    c->head_segs = NULL;
    c->nsegs = c->nruns = c->head_n = c->head_cap = 0;
    if (s->nsegs) {
        c->segs = seen__malloc(s->nsegs * sizeof *c->segs);
        if (c->segs == NULL)
            goto fail;
        memcpy(c->segs, s->segs, s->nsegs * sizeof *c->segs);
        c->nsegs = s->nsegs;
    }
    if (s->head_n) {
        uint32_t cap = seen__head_cap_for(s->head_n);
        if (!head_alloc(&c->head_keys, &c->head_segs, cap))
            goto fail;
        memcpy(c->head_keys, s->head_keys, s->head_n * sizeof(uint64_t));
        memcpy(c->head_segs, s->head_segs, s->head_n * sizeof(uint32_t));
        c->head_n = s->head_n;
        c->head_cap = cap;
    }
    if (s->nruns) {
        c->runs = seen__calloc(s->nruns, sizeof *c->runs);
        if (c->runs == NULL)
            goto fail;
        for (uint32_t i = 0; i < s->nruns; i++) {
            if (seen__run_clone(&c->runs[i], &s->runs[i]) != SEEN_OK)
                goto fail;
            c->nruns = i + 1;
        }
    }
    *out = c;
    return SEEN_OK;
fail:
    seen_free(c);
    return SEEN_ERR_NOMEM;
}

/* ================================================================ lookup */

/* The rank (index in `segs`) of the segment that tag t of run r names, if
 * that segment is alive at q; -1 otherwise.  Fills tr[0..r->nsegs). */
static void run_tag_ranks(const seen_set *s, const seen__segment *segs, uint32_t nsegs,
                          int64_t origin, const seen__run *r, int64_t q, int32_t *tr)
{
    const uint32_t *ids = seen__run_segs(r);
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find(segs, nsegs, ids[t]);
        tr[t] = (k >= 0 && seg_alive(s, &segs[k], origin, q)) ? k : -1;
    }
}

/*
 * For candidates sorted by key, the rank of the newest segment alive at q
 * holding each one, or -1 when none does.  Runs are walked with a cursor,
 * so a batch costs one pass over the buckets it touches.
 */
static seen_err locate(const seen_set *s, const seen__kv *cand, size_t n, int64_t q, int32_t *rank)
{
    for (size_t i = 0; i < n; i++)
        rank[i] = -1;
    if (n == 0)
        return SEEN_OK;
    int32_t tr_small[64];
    if (n <= 4 && s->nruns <= SEEN_LOOKUP_MANY_MAX) {
        /* A few candidates (single adds): probe every run at once. */
        int32_t ranks[SEEN_LOOKUP_MANY_MAX][64];
        const seen__run *runs[SEEN_LOOKUP_MANY_MAX];
        bool small = true;
        for (uint32_t ri = 0; ri < s->nruns; ri++) {
            runs[ri] = &s->runs[ri];
            small &= s->runs[ri].nsegs <= 64;
        }
        if (small) {
            for (uint32_t ri = 0; ri < s->nruns; ri++)
                run_tag_ranks(s, s->segs, s->nsegs, s->origin, runs[ri], q, ranks[ri]);
            for (size_t i = 0; i < n; i++) {
                uint64_t vals[SEEN_LOOKUP_MANY_MAX];
                int tags[SEEN_LOOKUP_MANY_MAX];
                for (uint32_t ri = 0; ri < s->nruns; ri++) {
                    seen__divider d;
                    seen__divider_init(&d, runs[ri]->c);
                    vals[ri] = seen__div(&d, cand[i].key);
                }
                seen__run_lookup_many(runs, vals, s->nruns, tags);
                for (uint32_t ri = 0; ri < s->nruns; ri++)
                    if (tags[ri] >= 0 && ranks[ri][tags[ri]] > rank[i])
                        rank[i] = ranks[ri][tags[ri]];
            }
            goto head;
        }
    }
    uint64_t *vals = NULL; /* candidates as one run's values, then their tags */
    int32_t *tags = NULL;
    for (uint32_t ri = 0; ri < s->nruns; ri++) {
        const seen__run *r = &s->runs[ri];
        int32_t *tr = r->nsegs <= 64 ? tr_small : seen__malloc(r->nsegs * sizeof *tr);
        if (tr == NULL) {
            seen__free(vals);
            return SEEN_ERR_NOMEM;
        }
        run_tag_ranks(s, s->segs, s->nsegs, s->origin, r, q, tr);
        bool any = false;
        for (uint32_t t = 0; t < r->nsegs; t++)
            any |= tr[t] >= 0;
        if (any) {
            if (vals == NULL) {
                vals = seen__malloc(n * (sizeof *vals + sizeof *tags));
                if (vals == NULL) {
                    if (tr != tr_small)
                        seen__free(tr);
                    return SEEN_ERR_NOMEM;
                }
                tags = (int32_t *)(void *)(vals + n);
            }
            seen__divider d;
            seen__divider_init(&d, r->c);
            for (size_t i = 0; i < n; i++)
                vals[i] = seen__div(&d, cand[i].key);
            seen__run_match(r, vals, n, tags);
            for (size_t i = 0; i < n; i++)
                if (tags[i] >= 0 && tr[tags[i]] > rank[i])
                    rank[i] = tr[tags[i]];
        }
        if (tr != tr_small)
            seen__free(tr);
    }
    seen__free(vals);
head:
    if (s->head_n == 0)
        return SEEN_OK;
    /* The head is small and unsorted: scan it per candidate for small
     * batches, sort a copy and merge for large ones. */
    if ((uint64_t)n * s->head_n <= 8192) {
        /* Compare keys first (a tight loop); segments only on a match. */
        for (size_t i = 0; i < n; i++) {
            uint64_t key = cand[i].key;
            for (uint32_t h = 0; h < s->head_n; h++) {
                if (s->head_keys[h] != key)
                    continue;
                int32_t k = seg_find(s->segs, s->nsegs, s->head_segs[h]);
                if (k >= 0 && k > rank[i] && seg_alive(s, &s->segs[k], s->origin, q))
                    rank[i] = k;
            }
        }
        return SEEN_OK;
    }
    seen__kv *hk = seen__malloc(s->head_n * sizeof *hk);
    if (hk == NULL)
        return SEEN_ERR_NOMEM;
    size_t m = 0;
    for (uint32_t h = 0; h < s->head_n; h++) {
        int32_t k = seg_find(s->segs, s->nsegs, s->head_segs[h]);
        if (k >= 0 && seg_alive(s, &s->segs[k], s->origin, q))
            hk[m++] = (seen__kv){s->head_keys[h], (uint32_t)k};
    }
    seen_err err = seen__sort_kv(hk, m);
    if (err == SEEN_OK) {
        size_t a = 0, b = 0;
        while (a < n && b < m) {
            if (cand[a].key < hk[b].key) {
                a++;
            } else if (cand[a].key > hk[b].key) {
                b++;
            } else {
                /* Several candidates (and head entries) may share a key. */
                size_t b2 = b;
                int32_t best = -1;
                while (b2 < m && hk[b2].key == cand[a].key) {
                    if ((int32_t)hk[b2].idx > best)
                        best = (int32_t)hk[b2].idx;
                    b2++;
                }
                uint64_t key = cand[a].key;
                while (a < n && cand[a].key == key) {
                    if (best > rank[a])
                        rank[a] = best;
                    a++;
                }
                b = b2;
            }
        }
    }
    seen__free(hk);
    return err;
}

/* ================================================================ queries */

struct seen_query {
    size_t n;
    seen_ids ids;
    seen__kv *by_key;   /* hashed (STR) or raw (INT) keys, sorted */
    seen__kv *by_mixed; /* INT only: mixed keys, sorted on first need */
    uint64_t *raw;      /* INT only: the ids, to mix later */
};

void seen_query_free(seen_query *q)
{
    if (q == NULL)
        return;
    seen__free(q->by_key);
    seen__free(q->by_mixed);
    seen__free(q->raw);
    seen__free(q);
}

size_t seen_query_count(const seen_query *q)
{
    return q ? q->n : 0;
}

static seen_err check_strs(const seen_str *items, size_t n)
{
    if (n > SEEN_MAX_BATCH)
        return SEEN_ERR_BATCH;
    if (n && items == NULL)
        return SEEN_ERR_ARG;
    for (size_t i = 0; i < n; i++) {
        if (items[i].len == 0 || items[i].len > SEEN_MAX_ITEM_LEN)
            return SEEN_ERR_ITEM_LEN;
        if (items[i].ptr == NULL)
            return SEEN_ERR_ARG;
    }
    return SEEN_OK;
}

seen_err seen_query_str(const seen_str *items, size_t n, seen_query **out)
{
    if (out == NULL)
        return SEEN_ERR_ARG;
    seen_err err = check_strs(items, n);
    if (err != SEEN_OK)
        return err;
    seen_query *q = seen__calloc(1, sizeof *q);
    if (q == NULL)
        return SEEN_ERR_NOMEM;
    q->n = n;
    q->ids = SEEN_IDS_STR;
    q->by_key = seen__malloc((n ? n : 1) * sizeof *q->by_key);
    if (q->by_key == NULL) {
        seen_query_free(q);
        return SEEN_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        q->by_key[i] = (seen__kv){seen__hash_str(items[i].ptr, items[i].len), (uint32_t)i};
    err = seen__sort_kv(q->by_key, n);
    if (err != SEEN_OK) {
        seen_query_free(q);
        return err;
    }
    *out = q;
    return SEEN_OK;
}

seen_err seen_query_int(const uint64_t *items, size_t n, seen_query **out)
{
    if (out == NULL || (n && items == NULL))
        return SEEN_ERR_ARG;
    if (n > SEEN_MAX_BATCH)
        return SEEN_ERR_BATCH;
    seen_query *q = seen__calloc(1, sizeof *q);
    if (q == NULL)
        return SEEN_ERR_NOMEM;
    q->n = n;
    q->ids = SEEN_IDS_INT;
    q->by_key = seen__malloc((n ? n : 1) * sizeof *q->by_key);
    q->raw = seen__malloc((n ? n : 1) * sizeof *q->raw);
    if (q->by_key == NULL || q->raw == NULL) {
        seen_query_free(q);
        return SEEN_ERR_NOMEM;
    }
    if (n)
        memcpy(q->raw, items, n * sizeof *items);
    for (size_t i = 0; i < n; i++)
        q->by_key[i] = (seen__kv){items[i], (uint32_t)i};
    seen_err err = seen__sort_kv(q->by_key, n);
    if (err != SEEN_OK) {
        seen_query_free(q);
        return err;
    }
    *out = q;
    return SEEN_OK;
}

static seen_err check_time(int64_t t)
{
    return (t < 0 || t > SEEN_MAX_TIME_MS) ? SEEN_ERR_TIME : SEEN_OK;
}

seen_err seen_query_run(const seen_set *s, seen_query *q, int64_t now, uint8_t *seen)
{
    if (s == NULL || q == NULL || (q->n && seen == NULL))
        return SEEN_ERR_ARG;
    if (q->ids != s->policy.ids)
        return SEEN_ERR_IDS;
    seen_err err = check_time(now);
    if (err != SEEN_OK)
        return err;
    const seen__kv *cand = q->by_key;
    if (q->ids == SEEN_IDS_INT && s->policy.error > 0) {
        if (q->by_mixed == NULL) {
            seen__kv *m = seen__malloc((q->n ? q->n : 1) * sizeof *m);
            if (m == NULL)
                return SEEN_ERR_NOMEM;
            for (size_t i = 0; i < q->n; i++)
                m[i] = (seen__kv){seen__mix64(q->raw[i]), (uint32_t)i};
            err = seen__sort_kv(m, q->n);
            if (err != SEEN_OK) {
                seen__free(m);
                return err;
            }
            q->by_mixed = m;
        }
        cand = q->by_mixed;
    }
    if (q->n == 0)
        return SEEN_OK;
    int32_t *rank = seen__malloc(q->n * sizeof *rank);
    if (rank == NULL)
        return SEEN_ERR_NOMEM;
    err = locate(s, cand, q->n, now, rank);
    if (err == SEEN_OK)
        for (size_t i = 0; i < q->n; i++)
            if (rank[i] >= 0)
                seen[cand[i].idx] = 1;
    seen__free(rank);
    return err;
}

seen_err seen_filter_str(const seen_set *s, const seen_str *items, size_t n, int64_t now,
                         uint8_t *seen)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    if (s->policy.ids != SEEN_IDS_STR)
        return SEEN_ERR_IDS;
    seen_query *q;
    seen_err err = seen_query_str(items, n, &q);
    if (err != SEEN_OK)
        return err;
    err = seen_query_run(s, q, now, seen);
    seen_query_free(q);
    return err;
}

seen_err seen_filter_int(const seen_set *s, const uint64_t *items, size_t n, int64_t now,
                         uint8_t *seen)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    if (s->policy.ids != SEEN_IDS_INT)
        return SEEN_ERR_IDS;
    seen_query *q;
    seen_err err = seen_query_int(items, n, &q);
    if (err != SEEN_OK)
        return err;
    err = seen_query_run(s, q, now, seen);
    seen_query_free(q);
    return err;
}

/* ================================================================ writes */

/*
 * The state a write builds before it commits: a new segment table, the
 * head (old entries plus new ones), and — when runs are rewritten — a new
 * run array.  Old blocks are freed only by commit_next().
 */
typedef struct next_state {
    seen__segment *segs;
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
    bool backfill; /* the write imports past history (see flush) */
    /* Coalescing count steps (next_coalesce): table index -> the index
     * its entries move to as runs are rewritten; NULL when none do. */
    int32_t *seg_map;
} next_state;

static int32_t seg_mapped(const next_state *ns, int32_t k)
{
    return k >= 0 && ns->seg_map ? ns->seg_map[k] : k;
}

static void next_discard(const seen_set *s, next_state *ns)
{
    seen__free(ns->segs);
    seen__free(ns->seg_map);
    if (ns->head_fresh)
        seen__free(ns->hkeys);
    if (ns->runs) {
        /* Release only the runs this write created. */
        for (uint32_t i = 0; i < ns->nruns; i++) {
            bool old = false;
            for (uint32_t j = 0; j < s->nruns; j++)
                old |= ns->runs[i].mem == s->runs[j].mem;
            if (!old)
                seen__run_release(&ns->runs[i]);
        }
        seen__free(ns->runs);
    }
    memset(ns, 0, sizeof *ns);
}

static seen_err next_begin(const seen_set *s, next_state *ns, int64_t now, size_t extra_segs)
{
    memset(ns, 0, sizeof *ns);
    /* The write's own time decides what is alive.  The set's clock only
     * records the latest of them: a clock from the future (a crafted or
     * skewed set) must not make a write purge or ignore what is alive now. */
    ns->clock = now;
    ns->origin = s->origin;
    ns->newest = s->newest;
    ns->has_origin = s->has_origin;
    ns->plan_c = s->plan_c;
    ns->hwm = s->hwm;
    ns->hwm_clock = s->hwm_clock;
    ns->next_seg_id = s->next_seg_id;
    ns->segs_cap = s->nsegs + (uint32_t)(extra_segs < 16 ? extra_segs : 16) + 1;
    ns->segs = seen__malloc(ns->segs_cap * sizeof *ns->segs);
    if (ns->segs == NULL)
        return SEEN_ERR_NOMEM;
    if (s->nsegs)
        memcpy(ns->segs, s->segs, s->nsegs * sizeof *s->segs);
    ns->nsegs = s->nsegs;
    ns->hkeys = s->head_keys;
    ns->hsegs = s->head_segs;
    ns->hn = s->head_n;
    ns->hcap = s->head_cap;
    return SEEN_OK;
}

uint32_t seen__head_cap_for(uint32_t n)
{
    /* Capacities follow one sequence from SEEN_HEAD_MIN, so a set loaded
     * from its serialized form holds exactly the same memory. */
    uint32_t c = 0;
    while (c < n)
        c = c ? c + c / 2 : SEEN_HEAD_MIN;
    return c;
}

static bool next_head_push(next_state *ns, uint64_t key, uint32_t seg)
{
    if (ns->hn == ns->hcap) {
        uint32_t cap = seen__head_cap_for(ns->hn + 1);
        uint64_t *k;
        uint32_t *g;
        if (!head_alloc(&k, &g, cap))
            return false;
        if (ns->hn) {
            memcpy(k, ns->hkeys, ns->hn * sizeof *k);
            memcpy(g, ns->hsegs, ns->hn * sizeof *g);
        }
        if (ns->head_fresh)
            seen__free(ns->hkeys);
        ns->hkeys = k;
        ns->hsegs = g;
        ns->hcap = cap;
        ns->head_fresh = true;
    }
    ns->hkeys[ns->hn] = key;
    ns->hsegs[ns->hn] = seg;
    ns->hn++;
    return true;
}

/* Drops head entries of dead segments (in a fresh block if need be). */
static bool next_head_prune(const seen_set *s, next_state *ns)
{
    uint32_t keep = 0;
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ns->hsegs[h]);
        keep += k >= 0 && seg_alive(s, &ns->segs[k], ns->origin, ns->clock);
    }
    if (keep == ns->hn)
        return true;
    /* The block fits what is kept, as a loaded set's would. */
    uint64_t *nk;
    uint32_t *ng;
    uint32_t cap = seen__head_cap_for(keep);
    if (!head_alloc(&nk, &ng, cap))
        return false;
    uint32_t w = 0;
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ns->hsegs[h]);
        if (k >= 0 && seg_alive(s, &ns->segs[k], ns->origin, ns->clock)) {
            nk[w] = ns->hkeys[h];
            ng[w] = ns->hsegs[h];
            w++;
        } else if (k >= 0) {
            ns->segs[k].phys--;
        }
    }
    if (ns->head_fresh)
        seen__free(ns->hkeys);
    ns->hkeys = nk;
    ns->hsegs = ng;
    ns->hn = w;
    ns->hcap = cap;
    ns->head_fresh = true;
    return true;
}

static bool next_segs_reserve(next_state *ns)
{
    if (ns->nsegs < ns->segs_cap)
        return true;
    uint32_t cap = ns->segs_cap * 2 + 4;
    seen__segment *g = seen__realloc(ns->segs, cap * sizeof *g);
    if (g == NULL)
        return false;
    ns->segs = g;
    ns->segs_cap = cap;
    return true;
}

/* A dead segment's items no longer count; its stored entries do, until a
 * rewrite purges them. */
static void next_expire(const seen_set *s, next_state *ns)
{
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (!seg_alive(s, &ns->segs[i], ns->origin, ns->clock))
            ns->segs[i].shadow = 0;
}

static uint64_t next_live_items(const seen_set *s, const next_state *ns)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (seg_alive(s, &ns->segs[i], ns->origin, ns->clock))
            total += seen__seg_items(&ns->segs[i]);
    return total;
}

/* The segment new items of `slice` go to: the newest one of that slice, or
 * a new one when there is none or (with a capacity) it is full.  Returns its
 * index in ns->segs, or -1 when out of memory. */
static int32_t open_segment(const seen_set *s, next_state *ns, int64_t slice)
{
    int32_t newest = -1;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (ns->segs[i].slice == slice && (newest < 0 || ns->segs[i].seq > ns->segs[newest].seq))
            newest = (int32_t)i;
    uint64_t step = seg_step(s);
    if (newest >= 0 && !ns->segs[newest].dropped &&
        (step == 0 || seen__seg_items(&ns->segs[newest]) < step))
        return newest;
    if (!next_segs_reserve(ns))
        return -1;
    if (newest >= 0 && ns->segs[newest].seq >= SEEN_MAX_SEQ) {
        /* Only the order of a slice's steps matters: number them again from
         * 0 (they are adjacent in the table) before one passes the limit. */
        uint64_t seq = 0;
        for (uint32_t i = 0; i < ns->nsegs; i++)
            if (ns->segs[i].slice == slice)
                ns->segs[i].seq = seq++;
    }
    seen__segment g = {.slice = slice,
                       .phys = 0,
                       .shadow = 0,
                       .id = ns->next_seg_id++,
                       .seq = newest >= 0 ? ns->segs[newest].seq + 1 : 0,
                       .dropped = 0};
    uint32_t at = ns->nsegs;
    while (at > 0 && seg_age_cmp(&ns->segs[at - 1], &g) > 0)
        at--;
    memmove(&ns->segs[at + 1], &ns->segs[at], (ns->nsegs - at) * sizeof g);
    ns->segs[at] = g;
    ns->nsegs++;
    return (int32_t)at;
}

/* The capacity rule: forget the oldest segment while the newer ones alone
 * hold at least `capacity` items. */
static void apply_capacity(const seen_set *s, next_state *ns)
{
    uint64_t cap = s->policy.capacity;
    if (cap == 0)
        return;
    uint64_t total = next_live_items(s, ns);
    for (uint32_t i = 0; i < ns->nsegs; i++) {
        seen__segment *g = &ns->segs[i];
        if (!seg_alive(s, g, ns->origin, ns->clock))
            continue;
        uint64_t items = seen__seg_items(g);
        if (total - items < cap)
            break;
        total -= items;
        g->shadow = 0;
        g->dropped = 1;
    }
}

/* --------------------------------------------------------------- merging */

static unsigned __int128 budget_of(const seen_set *s)
{
    return s->budget ? (unsigned __int128)s->budget : ~(unsigned __int128)0;
}

typedef struct stream {
    uint64_t *v;
    int32_t *rank;
    size_t n, pos;
} stream;

static void stream_free(stream *st)
{
    seen__free(st->v);
    seen__free(st->rank);
    st->v = NULL;
    st->rank = NULL;
}

/* Decode run r, keep values of live segments not in rm (keys, sorted),
 * and express them under divisor c_out (a multiple of r->c).  in_count[k]
 * gets the number of entries of table segment k the run held. */
static seen_err stream_from_run(const seen_set *s, const next_state *ns, const seen__run *r,
                                uint64_t c_out, const uint64_t *rm, size_t nrm, stream *st,
                                uint64_t *in_count)
{
    memset(st, 0, sizeof *st);
    uint64_t *v = seen__malloc(r->n * sizeof *v);
    /* Tags are decoded into the rank array (int32 holds any uint16). */
    int32_t *rank = seen__malloc(r->n * sizeof *rank);
    uint16_t *t = seen__malloc(r->n * sizeof *t);
    int32_t *tr = seen__malloc(r->nsegs * sizeof *tr);
    if (v == NULL || rank == NULL || t == NULL || tr == NULL) {
        seen__free(v);
        seen__free(rank);
        seen__free(t);
        seen__free(tr);
        return SEEN_ERR_NOMEM;
    }
    seen__run_decode(r, v, t);
    {
        /* Entries per tag, charged to their table segments. */
        const uint32_t *ids = seen__run_segs(r);
        for (uint32_t k = 0; k < r->nsegs; k++)
            tr[k] = 0;
        for (size_t i = 0; i < r->n; i++)
            tr[t[i]]++;
        for (uint32_t k = 0; k < r->nsegs; k++) {
            int32_t at = seg_find(ns->segs, ns->nsegs, ids[k]);
            if (at >= 0)
                in_count[at] += (uint64_t)tr[k];
        }
    }
    run_tag_ranks(s, ns->segs, ns->nsegs, ns->origin, r, ns->clock, tr);
    for (uint32_t k = 0; k < r->nsegs; k++)
        tr[k] = seg_mapped(ns, tr[k]);
    seen__divider d, f;
    seen__divider_init(&d, r->c);
    seen__divider_init(&f, c_out / r->c);
    size_t w = 0, ri = 0;
    bool all_live = true;
    for (uint32_t k = 0; k < r->nsegs; k++)
        all_live &= tr[k] >= 0;
    if (all_live && nrm == 0 && f.kind == 0) {
        for (size_t i = 0; i < r->n; i++)
            rank[i] = tr[t[i]];
        w = r->n;
    } else {
        for (size_t i = 0; i < r->n; i++) {
            int32_t rk = tr[t[i]];
            if (rk < 0)
                continue;
            while (ri < nrm && seen__div(&d, rm[ri]) < v[i])
                ri++;
            if (ri < nrm && seen__div(&d, rm[ri]) == v[i])
                continue;
            v[w] = seen__div(&f, v[i]);
            rank[w] = rk;
            w++;
        }
    }
    seen__free(t);
    seen__free(tr);
    st->v = v;
    st->rank = rank;
    st->n = w;
    return SEEN_OK;
}

static bool in_sorted(const uint64_t *a, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == x;
}

/* Which head items a merge takes: relative to the slice of the clock. */
typedef enum head_part { HEAD_NONE, HEAD_ALL, HEAD_OLD, HEAD_CURRENT } head_part;

static bool head_part_has(const seen_set *s, const next_state *ns, head_part part, int64_t slice)
{
    if (part == HEAD_ALL)
        return true;
    if (part == HEAD_NONE)
        return false;
    int64_t cur = slice_of(s, ns->origin, ns->clock);
    return part == HEAD_OLD ? slice < cur : slice >= cur;
}

static seen_err stream_from_head(const seen_set *s, const next_state *ns, head_part part,
                                 uint64_t c_out, const uint64_t *rm, size_t nrm, stream *st,
                                 uint64_t *in_count)
{
    memset(st, 0, sizeof *st);
    seen__kv *kv = seen__malloc((ns->hn ? ns->hn : 1) * sizeof *kv);
    if (kv == NULL)
        return SEEN_ERR_NOMEM;
    seen__divider d;
    seen__divider_init(&d, c_out);
    size_t m = 0;
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ns->hsegs[h]);
        if (k < 0 || !head_part_has(s, ns, part, ns->segs[k].slice))
            continue;
        in_count[k]++; /* this merge consumes the entry */
        if (!seg_alive(s, &ns->segs[k], ns->origin, ns->clock))
            continue;
        if (nrm && in_sorted(rm, nrm, ns->hkeys[h]))
            continue;
        kv[m++] = (seen__kv){seen__div(&d, ns->hkeys[h]), (uint32_t)seg_mapped(ns, k)};
    }
    seen_err err = seen__sort_kv(kv, m);
    if (err == SEEN_OK) {
        st->v = seen__malloc((m ? m : 1) * sizeof *st->v);
        st->rank = seen__malloc((m ? m : 1) * sizeof *st->rank);
        if (st->v == NULL || st->rank == NULL) {
            stream_free(st);
            err = SEEN_ERR_NOMEM;
        } else {
            for (size_t i = 0; i < m; i++) {
                st->v[i] = kv[i].key;
                st->rank[i] = (int32_t)kv[i].idx;
            }
            st->n = m;
        }
    }
    seen__free(kv);
    return err;
}

/*
 * Build one run holding the live items of `inputs` (runs whose divisors
 * divide c_out) and of the chosen part of the head, minus keys in rm.
 * Equal values keep their newest segment; the copy dropped was an older
 * addition of the same item (a shadow) or, rarely, a fingerprint collision.
 * *empty is set when nothing is left.  Segment entry counts (phys, shadow)
 * in ns follow what was consumed and produced.
 */
static seen_err merge_build(const seen_set *s, next_state *ns, const seen__run *const *inputs,
                            size_t ninputs, head_part with_head, uint64_t c_out, const uint64_t *rm,
                            size_t nrm, seen__run *out, bool *empty)
{
    size_t nst = 0;
    seen_err err = SEEN_OK;
    uint64_t *ov = NULL;
    uint16_t *ot = NULL;
    int32_t *orank = NULL;
    size_t total = 0;
    *empty = false;
    if (ninputs > SEEN_MAX_RUNS)
        return SEEN_ERR_ARG;
    stream *st = seen__calloc(ninputs + 1, sizeof *st);
    /* Per table segment: entries consumed, produced, and dropped as the
     * older of two equal values. */
    uint64_t *acct = seen__calloc((size_t)ns->nsegs * 3 + 1, sizeof *acct);
    if (acct == NULL || st == NULL) {
        seen__free(st);
        seen__free(acct);
        return SEEN_ERR_NOMEM;
    }
    uint64_t *in_count = acct, *out_count = acct + ns->nsegs, *collapsed = acct + 2 * ns->nsegs;
    for (size_t i = 0; i < ninputs && err == SEEN_OK; i++) {
        err = stream_from_run(s, ns, inputs[i], c_out, rm, nrm, &st[nst], in_count);
        if (err == SEEN_OK)
            total += st[nst++].n;
    }
    if (err == SEEN_OK && with_head != HEAD_NONE) {
        err = stream_from_head(s, ns, with_head, c_out, rm, nrm, &st[nst], in_count);
        if (err == SEEN_OK)
            total += st[nst++].n;
    }
    if (err != SEEN_OK)
        goto done;
    if (total == 0) {
        *empty = true;
        goto account;
    }
    ov = seen__malloc(total * sizeof *ov);
    ot = seen__malloc(total * sizeof *ot);
    orank = seen__malloc(total * sizeof *orank);
    if (ov == NULL || ot == NULL || orank == NULL) {
        err = SEEN_ERR_NOMEM;
        goto done;
    }
    /* k-way merge; equal values collapse into the newest segment.  Two
     * inputs (a run and the head) is the common case: merge them directly. */
    size_t n = 0;
    if (nst == 2) {
        stream *x = &st[0], *y = &st[1];
        size_t i = 0, j = 0;
        while (i < x->n || j < y->n) {
            uint64_t v;
            int32_t rk;
            if (j >= y->n || (i < x->n && x->v[i] < y->v[j])) {
                v = x->v[i];
                rk = x->rank[i++];
            } else if (i >= x->n || y->v[j] < x->v[i]) {
                v = y->v[j];
                rk = y->rank[j++];
            } else {
                v = x->v[i];
                rk = x->rank[i] > y->rank[j] ? x->rank[i] : y->rank[j];
                collapsed[x->rank[i] > y->rank[j] ? y->rank[j] : x->rank[i]]++;
                i++;
                j++;
            }
            if (n > 0 && ov[n - 1] == v) {
                collapsed[rk > orank[n - 1] ? orank[n - 1] : rk]++;
                if (rk > orank[n - 1])
                    orank[n - 1] = rk;
            } else {
                ov[n] = v;
                orank[n] = rk;
                n++;
            }
        }
        for (size_t k = 0; k < 2; k++)
            st[k].pos = st[k].n; /* the general loop below has nothing left */
    }
    for (;;) {
        int best = -1;
        for (size_t i = 0; i < nst; i++)
            if (st[i].pos < st[i].n && (best < 0 || st[i].v[st[i].pos] < st[best].v[st[best].pos]))
                best = (int)i;
        if (best < 0)
            break;
        uint64_t v = st[best].v[st[best].pos];
        int32_t rk = st[best].rank[st[best].pos];
        st[best].pos++;
        if (n > 0 && ov[n - 1] == v) {
            collapsed[rk > orank[n - 1] ? orank[n - 1] : rk]++;
            if (rk > orank[n - 1])
                orank[n - 1] = rk;
        } else {
            ov[n] = v;
            orank[n] = rk;
            n++;
        }
    }
    /* Tags: the ranks used, renumbered in age order. */
    {
        uint32_t used_cnt = 0;
        /* One block: the tag of each table segment, then the ids of the
         * segments used (at most the table's size, never a fixed bound). */
        int32_t *tag_of = seen__malloc((size_t)ns->nsegs * (sizeof *tag_of + sizeof(uint32_t)));
        if (tag_of == NULL) {
            err = SEEN_ERR_NOMEM;
            goto done;
        }
        uint32_t *seg_ids = (uint32_t *)(void *)(tag_of + ns->nsegs);
        for (uint32_t i = 0; i < ns->nsegs; i++)
            tag_of[i] = -1;
        for (size_t i = 0; i < n; i++)
            tag_of[orank[i]] = 0;
        for (uint32_t i = 0; i < ns->nsegs; i++)
            if (tag_of[i] == 0) {
                tag_of[i] = (int32_t)used_cnt;
                seg_ids[used_cnt++] = ns->segs[i].id;
            }
        for (size_t i = 0; i < n; i++) {
            ot[i] = (uint16_t)tag_of[orank[i]];
            out_count[orank[i]]++;
        }
        /* Fine buckets: for exact keys (~55 bits each, so the index is
         * noise) and for the run that takes the head in a large set (see
         * SEEN_HEAD_LARGE_SET). */
        uint64_t stored = 0;
        for (uint32_t i = 0; i < s->nruns; i++)
            stored += s->runs[i].n;
        bool fine =
            c_out == 1 || (with_head != HEAD_NONE && ninputs <= 1 && stored >= SEEN_HEAD_LARGE_SET);
        err = seen__run_encode(out, c_out, ov, ot, n, seg_ids, used_cnt, fine);
        seen__free(tag_of);
    }
account:
    if (err == SEEN_OK) {
        for (uint32_t k = 0; k < ns->nsegs; k++) {
            seen__segment *g = &ns->segs[k];
            g->phys = g->phys + out_count[k] - in_count[k];
            g->shadow -= collapsed[k] < g->shadow ? collapsed[k] : g->shadow;
            if (g->shadow > g->phys)
                g->shadow = g->phys;
        }
    }
done:
    for (size_t i = 0; i < nst; i++)
        stream_free(&st[i]);
    seen__free(st);
    seen__free(ov);
    seen__free(ot);
    seen__free(orank);
    seen__free(acct);
    return err;
}

/* ------------------------------------------------------------- planning */

/*
 * The plan.  A compact set plans its fingerprints for T items (its recent
 * high-water mark, or a projection while it is younger than a window): the
 * plan divisor is error * 2^64 * (1 - reserve) / T, kept with 24
 * significant bits so it halves exactly.  New runs use plan / 2^j, the
 * coarsest that fits the budget left, and runs merge only at equal
 * divisors; a run squeezed finer while the set outgrew its plan is
 * coarsened back by powers of two once expiry frees budget.  The plan moves
 * only when T moves by more than SEEN_PLAN_HYSTERESIS, so runs keep
 * sharing a divisor; runs from an older plan simply age out.
 */

/* Keep 24 significant bits, so the divisor can later be halved exactly. */
static uint64_t mantissa_round(uint64_t x)
{
    unsigned bl = seen__bitlen(x);
    return bl > 24 ? x & ~((UINT64_C(1) << (bl - 24)) - 1) : x;
}

/* The start of the oldest live slice that holds items (INT64_MAX: none). */
static int64_t oldest_live_start(const seen_set *s, const next_state *ns)
{
    for (uint32_t i = 0; i < ns->nsegs; i++) /* age order: the first found */
        if (seg_alive(s, &ns->segs[i], ns->origin, ns->clock) && seen__seg_items(&ns->segs[i]) > 0)
            return ns->origin + ns->segs[i].slice * (int64_t)s->slice_ms;
    return INT64_MAX;
}

static bool next_exact_phase(const seen_set *s, const next_state *ns, uint64_t live)
{
    if (s->budget == 0)
        return true;
    if (ns->plan_c != 0)
        return false;
    if (live <= s->policy.exact_limit)
        return true;
    if (!s->slice_ms || live > SEEN_YOUNG_EXACT_MAX)
        return false;
    /* Young: its live items span less than one slice of data time. */
    int64_t start = oldest_live_start(s, ns);
    return start == INT64_MAX || ns->newest - start < (int64_t)s->slice_ms;
}

/* How many items the set should be planned for; never fewer than the
 * entries it stores (`entries`), so a merge of all of them at the plan's
 * divisor fits the budget whatever the counts claim. */
static uint64_t plan_target(const seen_set *s, const next_state *ns, uint64_t live,
                            uint64_t entries)
{
    uint64_t t = live > ns->hwm ? live : ns->hwm;
    if (s->slice_ms) {
        /* Less than a window of history among the live slices: project
         * the observed rate over the window.  Measured on the data's own
         * times (an import arrives at one `now` with times spread over the
         * past), from the oldest live slice, so a history longer than the
         * window is planned for what the window holds. */
        int64_t start = oldest_live_start(s, ns);
        int64_t span = start == INT64_MAX ? 0 : ns->newest - start;
        int64_t w = (int64_t)s->policy.window_ms;
        if (span < w) {
            int64_t base = span > (int64_t)s->slice_ms ? span : (int64_t)s->slice_ms;
            double proj = (double)live * (double)w / (double)base;
            if (proj > (double)t)
                t = proj > 1e18 ? (uint64_t)1e18 : (uint64_t)proj;
        }
    } else if (s->policy.capacity == 0) {
        /* No window, no cap: it can only grow; plan one doubling ahead. */
        if (live * 2 > t)
            t = live * 2;
    }
    if (s->policy.capacity) {
        uint64_t cap = s->policy.capacity + seg_step(s);
        if (t > cap)
            t = cap > live ? cap : live;
    }
    if (t < entries)
        t = entries;
    return t ? t : 1;
}

static uint64_t ideal_divisor(const seen_set *s, uint64_t target)
{
    double c = ldexp(s->policy.error, 64) * (1.0 - SEEN_BUDGET_RESERVE) / (double)target;
    if (c < 1.0)
        return 1;
    if (c > 9.2e18)
        return UINT64_C(1) << 63;
    return (uint64_t)c;
}

/* The first plan fits the target exactly (a loaded history is planned for
 * what it holds).  Later, re-plan as soon as the target outgrows what the
 * plan holds, or once it falls well below it; a re-plan leaves half the
 * hysteresis as headroom so that peaks recurring at about the same height
 * do not re-plan again. */
static void replan(const seen_set *s, next_state *ns, uint64_t target)
{
    if (ns->plan_c == 0) {
        ns->plan_c = mantissa_round(ideal_divisor(s, target));
        return;
    }
    double holds = ldexp(s->policy.error, 64) * (1.0 - SEEN_BUDGET_RESERVE) / (double)ns->plan_c;
    if ((double)target > holds || (double)target * (1.0 + SEEN_PLAN_HYSTERESIS) < holds) {
        double with_room = (double)target * (1.0 + SEEN_PLAN_HYSTERESIS / 2);
        ns->plan_c = mantissa_round(ideal_divisor(
            s, with_room > 1e18 ? UINT64_C(1000000000000000000) : (uint64_t)with_room));
    }
}

/* The coarsest plan / 2^j (j >= 0) with n * c <= room; 1 if none. */
static uint64_t fitting_divisor(uint64_t plan, unsigned __int128 room, uint64_t n)
{
    uint64_t c = plan;
    while (c > 1 && (unsigned __int128)n * c > room) {
        if (c & 1)
            return 1; /* cannot halve exactly: exact keys */
        c >>= 1;
    }
    return c;
}

static bool pow2_multiple(uint64_t small, uint64_t big)
{
    if (small == 0 || big < small || big % small)
        return false;
    uint64_t k = big / small;
    return (k & (k - 1)) == 0;
}

/* Does run r name a segment that is dead in ns? */
static bool run_has_dead(const seen_set *s, const next_state *ns, const seen__run *r)
{
    const uint32_t *ids = seen__run_segs(r);
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ids[t]);
        if (k < 0 || !seg_alive(s, &ns->segs[k], ns->origin, ns->clock))
            return true;
    }
    return false;
}

/* Does run r name a segment that coalescing moves? */
static bool run_has_mapped(const next_state *ns, const seen__run *r)
{
    if (ns->seg_map == NULL)
        return false;
    const uint32_t *ids = seen__run_segs(r);
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ids[t]);
        if (k >= 0 && ns->seg_map[k] != k)
            return true;
    }
    return false;
}

/* Has run r's time passed: does it hold only slices older than the
 * current one?  Folding such a recent run into main at that moment keeps
 * the recent run aligned with the newest slice, so the split between the
 * two runs costs no more than the slice tags it replaces. */
static bool run_is_sealed(const seen_set *s, const next_state *ns, const seen__run *r)
{
    if (!s->slice_ms)
        return false;
    int64_t cur = slice_of(s, ns->origin, ns->clock);
    const uint32_t *ids = seen__run_segs(r);
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ids[t]);
        if (k >= 0 && ns->segs[k].slice >= cur)
            return false;
    }
    return true;
}

/* A working copy of the run list that flush edits: a few runs of room
 * above the limit, which flush brings the list back under. */
#define RUNLIST_MAX (SEEN_MAX_RUNS + 8)
typedef struct runlist {
    seen__run r[RUNLIST_MAX];
    bool created[RUNLIST_MAX]; /* built by this write (owned until commit) */
    uint32_t n;
} runlist;

static void runlist_release_created(runlist *rl)
{
    for (uint32_t i = 0; i < rl->n; i++)
        if (rl->created[i])
            seen__run_release(&rl->r[i]);
}

/* Replace runs [a, b) of rl with `nr` (absent when empty). */
static void runlist_replace(runlist *rl, uint32_t a, uint32_t b, const seen__run *nr, bool empty)
{
    for (uint32_t i = a; i < b; i++)
        if (rl->created[i])
            seen__run_release(&rl->r[i]);
    uint32_t add = empty ? 0 : 1;
    memmove(&rl->r[a + add], &rl->r[b], (rl->n - b) * sizeof rl->r[0]);
    memmove(&rl->created[a + add], &rl->created[b], (rl->n - b) * sizeof rl->created[0]);
    rl->n = rl->n - (b - a) + add;
    if (!empty) {
        rl->r[a] = *nr;
        rl->created[a] = true;
    }
}

/* The budget governs fingerprints: runs with c > 1.  Exact keys (c = 1)
 * collide only as 64-bit hashes do, which the error bound does not cover
 * (docs/DESIGN.md), so storing an item exactly always fits. */
static unsigned __int128 run_mass(const seen__run *r)
{
    return r->c > 1 ? (unsigned __int128)r->n * r->c : 0;
}

static unsigned __int128 usage_except(const runlist *rl, uint32_t a, uint32_t b)
{
    unsigned __int128 u = 0;
    for (uint32_t i = 0; i < rl->n; i++)
        if (i < a || i >= b)
            u += run_mass(&rl->r[i]);
    return u;
}

/*
 * Fold the last run into the one before it (with the chosen part of the
 * head): only at a common divisor — the coarser of the two, if the finer
 * reaches it by doubling, the result is no coarser than the plan allows,
 * and the budget holds.  *done tells whether it happened.
 */
static seen_err fold_last(const seen_set *s, next_state *ns, runlist *rl, head_part head,
                          bool *done)
{
    *done = false;
    uint32_t a = rl->n - 2, b = rl->n - 1;
    seen__run *p = &rl->r[a], *d = &rl->r[b];
    uint64_t c = p->c > d->c ? p->c : d->c;
    uint64_t lo = p->c < d->c ? p->c : d->c;
    if (!pow2_multiple(lo, c))
        return SEEN_OK;
    if (lo != c && ns->plan_c && (double)c > (double)ns->plan_c * (1.0 + SEEN_PLAN_HYSTERESIS))
        return SEEN_OK; /* would coarsen items past the plan */
    uint64_t n = (uint64_t)p->n + d->n + (head != HEAD_NONE ? ns->hn : 0);
    if (c > 1 && usage_except(rl, a, b + 1) + (unsigned __int128)n * c > budget_of(s))
        return SEEN_OK;
    const seen__run *in[2] = {p, d};
    seen__run nr;
    bool empty;
    seen_err err = merge_build(s, ns, in, 2, head, c, NULL, 0, &nr, &empty);
    if (err != SEEN_OK)
        return err;
    runlist_replace(rl, a, b + 1, &nr, empty);
    *done = true;
    return SEEN_OK;
}

/* How many items are expected to arrive before the budget frees up: until
 * the oldest live slice is forgotten, at the rate the live items arrived.
 * Without a window nothing is forgotten; expect the set to double. */
static uint64_t expected_arrivals(const seen_set *s, const next_state *ns, uint64_t live)
{
    if (!s->slice_ms)
        return live;
    int64_t oldest = INT64_MAX;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (seg_alive(s, &ns->segs[i], ns->origin, ns->clock) &&
            seen__seg_items(&ns->segs[i]) > 0 && ns->segs[i].slice < oldest)
            oldest = ns->segs[i].slice;
    if (oldest == INT64_MAX)
        return live;
    int64_t start = ns->origin + oldest * (int64_t)s->slice_ms;
    int64_t seen_for = ns->clock - start;
    int64_t until_free = slice_forget_at(s, ns->origin, oldest) - ns->clock;
    if (seen_for < 1)
        seen_for = 1;
    if (until_free < 0)
        until_free = 0;
    double e = (double)live * (double)until_free / (double)seen_for;
    return e > 1e18 ? (uint64_t)1e18 : (uint64_t)e;
}

/*
 * Settle: exact runs (c = 1) in a compact set — an import's, or keys stored
 * exactly while the budget was short — are re-encoded as one run at the
 * coarsest plan / 2^j the budget left allows, in the place of the first of
 * them, where the fold can merge it with main.  Nothing happens when the
 * budget has no room for fingerprints coarser than 1.
 */
static seen_err settle_exact_runs(const seen_set *s, next_state *ns, runlist *rl)
{
    const seen__run *in[RUNLIST_MAX];
    uint32_t k = 0, first = UINT32_MAX;
    uint64_t n = 0;
    for (uint32_t i = 0; i < rl->n; i++)
        if (rl->r[i].c == 1) {
            in[k++] = &rl->r[i];
            n += rl->r[i].n;
            if (first == UINT32_MAX)
                first = i;
        }
    if (k == 0 || ns->plan_c == 0)
        return SEEN_OK;
    unsigned __int128 budget = budget_of(s), used = usage_except(rl, 0, 0);
    unsigned __int128 room = budget > used ? budget - used : 0;
    uint64_t c = fitting_divisor(ns->plan_c, room, n);
    if (c <= 1)
        return SEEN_OK;
    seen__run nr;
    bool empty;
    seen_err err = merge_build(s, ns, in, k, HEAD_NONE, c, NULL, 0, &nr, &empty);
    if (err != SEEN_OK)
        return err;
    for (uint32_t i = rl->n; i-- > 0;)
        if (rl->r[i].c == 1)
            runlist_replace(rl, i, i + 1, NULL, true);
    if (!empty)
        runlist_replace(rl, first, first, &nr, false);
    return SEEN_OK;
}

/*
 * Merge the head into the runs and tidy them, in this order: purge items of
 * dead segments (so budget checks see what is really held); leave the exact
 * phase if it is over, or re-plan; fold a recent run whose slice has ended
 * into main; merge the head into the recent run or start a new one; fold a
 * recent run that has grown as large as main; coarsen runs that were
 * squeezed finer than the plan, where the budget now allows.  Builds the new
 * run array in ns and changes nothing in s.
 */
static seen_err flush(const seen_set *s, next_state *ns)
{
    runlist *rl = seen__calloc(1, sizeof *rl);
    if (rl == NULL)
        return SEEN_ERR_NOMEM;
    /* Input runs: the set's, or the renumbered copies this write owns. */
    bool owned = ns->runs != NULL;
    const seen__run *src = owned ? ns->runs : s->runs;
    rl->n = owned ? ns->nruns : s->nruns;
    if (rl->n)
        memcpy(rl->r, src, rl->n * sizeof *src);
    for (uint32_t i = 0; i < rl->n; i++)
        rl->created[i] = owned;
    if (owned) {
        seen__free(ns->runs);
        ns->runs = NULL;
        ns->nruns = 0;
    }
    seen_err err = SEEN_OK;
    unsigned __int128 budget = budget_of(s);
    uint64_t live = next_live_items(s, ns);
    seen__run nr;
    bool empty;

    for (uint32_t i = 0; i < rl->n; i++) {
        if (!run_has_dead(s, ns, &rl->r[i]) && !run_has_mapped(ns, &rl->r[i]))
            continue;
        const seen__run *in[1] = {&rl->r[i]};
        err = merge_build(s, ns, in, 1, HEAD_NONE, rl->r[i].c, NULL, 0, &nr, &empty);
        if (err != SEEN_OK)
            goto fail;
        runlist_replace(rl, i, i + 1, &nr, empty);
        if (empty)
            i--;
    }

    uint64_t entries = ns->hn;
    for (uint32_t i = 0; i < rl->n; i++)
        entries += rl->r[i].n;
    /* An import (a write of past history) keeps what it brings exact: its
     * items' count is not known until it ends, and fingerprints planned
     * for part of it could never be refined.  The first live write or
     * expiry after it settles the set for what it then holds. */
    bool importing = ns->backfill && entries <= SEEN_IMPORT_EXACT_MAX;
    bool exact = next_exact_phase(s, ns, live) || (importing && ns->plan_c == 0);
    uint64_t target = plan_target(s, ns, live, entries);

    if (!exact && ns->plan_c == 0) {
        /* Leaving the exact phase: every run holds exact keys (c = 1), so
         * all of them can be re-encoded under the planned divisor. */
        replan(s, ns, target);
        const seen__run *in[RUNLIST_MAX];
        for (uint32_t i = 0; i < rl->n; i++)
            in[i] = &rl->r[i];
        err = merge_build(s, ns, in, rl->n, HEAD_ALL, ns->plan_c, NULL, 0, &nr, &empty);
        if (err != SEEN_OK)
            goto fail;
        runlist_replace(rl, 0, rl->n, &nr, empty);
        ns->hn = 0;
    } else if (importing && ns->hn) {
        /* Into the compact set, an import adds exact runs; the fold below
         * merges them with each other as they grow. */
        err = merge_build(s, ns, NULL, 0, HEAD_ALL, 1, NULL, 0, &nr, &empty);
        if (err != SEEN_OK)
            goto fail;
        runlist_replace(rl, rl->n, rl->n, &nr, empty);
        ns->hn = 0;
    } else if (!importing) {
        if (!exact)
            replan(s, ns, target);
        uint64_t plan = exact ? 1 : ns->plan_c;
        /* The recent run's slice has ended: fold it, with the head's items
         * of ended slices, into main, so the next recent run starts with
         * the current slice alone. */
        head_part rest = HEAD_ALL;
        bool sealed = rl->n >= 2 && run_is_sealed(s, ns, &rl->r[rl->n - 1]);
        if (sealed) {
            bool done;
            if ((err = fold_last(s, ns, rl, ns->hn ? HEAD_OLD : HEAD_NONE, &done)) != SEEN_OK)
                goto fail;
            if (done)
                rest = HEAD_CURRENT;
        }
        /* A sealed recent run that could not fold (its divisor is from an
         * older plan, or was squeezed) takes no new slice: it ages out. */
        bool merged = ns->hn == 0;
        uint64_t stored = 0;
        for (uint32_t i = 0; i < rl->n; i++)
            stored += rl->r[i].n;
        /* Only a small recent run takes the head: a large last run (main,
         * or an older plan's run) would make every merge rewrite it. */
        if (!merged && rl->n >= 2 && !(sealed && rest == HEAD_ALL) &&
            (uint64_t)rl->r[rl->n - 1].n * 2 <= stored) {
            /* Into the recent run, if the budget allows and its divisor is
             * not coarser than the plan. */
            uint32_t last = rl->n - 1;
            seen__run *d = &rl->r[last];
            bool fits = d->c == 1 || usage_except(rl, last, last + 1) +
                                             (unsigned __int128)(d->n + ns->hn) * d->c <=
                                         budget;
            bool suits = exact || (double)d->c <= (double)plan * (1.0 + SEEN_PLAN_HYSTERESIS);
            if (fits && suits) {
                const seen__run *in[1] = {d};
                err = merge_build(s, ns, in, 1, rest, d->c, NULL, 0, &nr, &empty);
                if (err != SEEN_OK)
                    goto fail;
                runlist_replace(rl, last, last + 1, &nr, empty);
                merged = true;
            }
        }
        if (!merged) {
            /* A new run: plan / 2^j, the coarsest whose items fit the budget
             * left — that budget must last for the items the plan still
             * expects or, past the plan, until the oldest slice frees its
             * share. */
            uint64_t c = 1;
            if (!exact) {
                unsigned __int128 u = usage_except(rl, 0, 0);
                unsigned __int128 room = budget > u ? budget - u : 0;
                uint64_t expect = target > live ? target - live : expected_arrivals(s, ns, live);
                if (expect < ns->hn)
                    expect = ns->hn;
                c = fitting_divisor(plan, room, expect);
                if (c > 1 && (unsigned __int128)ns->hn * c > room)
                    c = 1;
            }
            if (rl->n >= RUNLIST_MAX - 2) {
                err = SEEN_ERR_LIMIT;
                goto fail;
            }
            err = merge_build(s, ns, NULL, 0, rest, c, NULL, 0, &nr, &empty);
            if (err != SEEN_OK)
                goto fail;
            runlist_replace(rl, rl->n, rl->n, &nr, empty);
        }
        ns->hn = 0;

        /* Runs squeezed finer than the plan while the set outgrew it:
         * coarsen them back, doubling while the result stays within the
         * plan's band and the budget (freed by expiry) allows.  Only runs
         * no longer receiving items. */
        double band = (double)plan * (1.0 + SEEN_PLAN_HYSTERESIS);
        for (uint32_t i = 0; !exact && i + 1 < rl->n; i++) {
            seen__run *r = &rl->r[i];
            unsigned __int128 used = usage_except(rl, 0, 0);
            unsigned __int128 room = budget > used ? budget - used : 0;
            uint64_t c = r->c;
            while (c <= UINT64_MAX / 2 && (double)(c * 2) <= band &&
                   (unsigned __int128)r->n * (c * 2 - r->c) <= room)
                c *= 2;
            if (c == r->c)
                continue;
            const seen__run *in[1] = {r};
            err = merge_build(s, ns, in, 1, HEAD_NONE, c, NULL, 0, &nr, &empty);
            if (err != SEEN_OK)
                goto fail;
            runlist_replace(rl, i, i + 1, &nr, empty);
        }
        if (!exact && (err = settle_exact_runs(s, ns, rl)) != SEEN_OK)
            goto fail;
    }

    /* Fold a recent run that has grown as large as main (so rewrites stay
     * amortized O(1) per item when items arrive in random time order), and
     * keep small sets in one run.  Runs of unequal divisors stay apart. */
    while (rl->n >= 2) {
        seen__run *p = &rl->r[rl->n - 2], *d = &rl->r[rl->n - 1];
        if ((uint64_t)d->n * SEEN_DELTA_RATIO < p->n && rl->n <= 4 &&
            (uint64_t)p->n + d->n > SEEN_SINGLE_RUN_MAX)
            break;
        bool done;
        if ((err = fold_last(s, ns, rl, HEAD_NONE, &done)) != SEEN_OK)
            goto fail;
        if (!done)
            break;
    }

    /* The state must load back: the budget holds and the runs are within
     * the format's limit (neither fails unless planning is wrong). */
    if (rl->n > SEEN_MAX_RUNS || usage_except(rl, 0, 0) > budget) {
        err = SEEN_ERR_LIMIT;
        goto fail;
    }
    ns->nruns = rl->n;
    ns->runs = seen__malloc((rl->n ? rl->n : 1) * sizeof *ns->runs);
    if (ns->runs == NULL) {
        err = SEEN_ERR_NOMEM;
        goto fail;
    }
    memcpy(ns->runs, rl->r, rl->n * sizeof *rl->r);
    seen__free(rl);
    return SEEN_OK;
fail:
    runlist_release_created(rl);
    seen__free(rl);
    ns->runs = NULL;
    ns->nruns = 0;
    return err;
}

/* Segments that hold no entries leave the table: dead ones once purged,
 * count steps emptied by re-adds, steps coalesced into a neighbour.  (An
 * entry-less segment is named by no run and no head entry.) */
static void next_drop_unreferenced(const seen_set *s, next_state *ns)
{
    (void)s;
    uint32_t w = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (ns->segs[i].phys > 0)
            ns->segs[w++] = ns->segs[i];
    ns->nsegs = w;
}

static void update_hwm(const seen_set *s, next_state *ns)
{
    uint64_t live = next_live_items(s, ns);
    int64_t horizon = (int64_t)(s->policy.window_ms + s->slice_ms);
    if (s->slice_ms && ns->clock - ns->hwm_clock > horizon) {
        ns->hwm = live;
        ns->hwm_clock = ns->clock;
    }
    /* A peak within the plan's band of the mark renews it: steady-state
     * peaks recur at about the same height and must keep the plan. */
    if ((double)live >= (double)ns->hwm * (1.0 - SEEN_PLAN_HYSTERESIS / 2)) {
        if (live > ns->hwm)
            ns->hwm = live;
        ns->hwm_clock = ns->clock;
    }
}

/* Does the set hold exact keys that a flush would now compact: it is past
 * its exact phase but has no plan yet, or it has exact runs beside its
 * compact ones and budget to spare for them (an import has ended)? */
static bool unsettled(const seen_set *s, const next_state *ns)
{
    if (s->budget == 0 || (s->nruns == 0 && ns->hn == 0))
        return false;
    if (ns->plan_c == 0)
        return !next_exact_phase(s, ns, next_live_items(s, ns));
    unsigned __int128 used = 0;
    uint64_t exact = 0;
    for (uint32_t i = 0; i < s->nruns; i++) {
        used += run_mass(&s->runs[i]);
        exact += s->runs[i].c == 1 ? s->runs[i].n : 0;
    }
    unsigned __int128 budget = budget_of(s);
    return exact > 0 && used < budget && fitting_divisor(ns->plan_c, budget - used, exact) > 1;
}

int seen_compactable(const seen_set *s, int64_t now)
{
    if (s == NULL || check_time(now) != SEEN_OK)
        return 0;
    /* A read-only view of the set as a write at `now` would start it. */
    next_state ns;
    memset(&ns, 0, sizeof ns);
    ns.clock = now;
    ns.origin = s->origin;
    ns.newest = s->newest;
    ns.plan_c = s->plan_c;
    ns.segs = s->segs;
    ns.nsegs = s->nsegs;
    ns.hn = s->head_n;
    return unsettled(s, &ns) ? 1 : 0;
}

/* Should this write flush the head or rewrite runs? */
static bool need_flush(const seen_set *s, const next_state *ns, bool dead)
{
    uint64_t stored = ns->hn;
    for (uint32_t i = 0; i < s->nruns; i++)
        stored += s->runs[i].n;
    if (ns->hn >= head_limit(stored))
        return true;
    if (!ns->backfill && unsettled(s, ns))
        return true;
    /* A segment died: purge the runs that name it. */
    for (uint32_t i = 0; dead && i < s->nruns; i++)
        if (run_has_dead(s, ns, &s->runs[i]))
            return true;
    return false;
}

/* Swap the next state in.  Cannot fail. */
static void commit_next(seen_set *s, next_state *ns)
{
    if (ns->runs) {
        for (uint32_t j = 0; j < s->nruns; j++) {
            bool kept = false;
            for (uint32_t i = 0; i < ns->nruns; i++)
                kept |= ns->runs[i].mem == s->runs[j].mem;
            if (!kept)
                seen__run_release(&s->runs[j]);
        }
        seen__free(s->runs);
        s->runs = ns->nruns ? ns->runs : NULL;
        if (!ns->nruns)
            seen__free(ns->runs);
        s->nruns = ns->nruns;
    }
    if (ns->head_fresh)
        seen__free(s->head_keys);
    if (ns->hn == 0 && ns->hkeys != NULL) {
        /* An empty head holds no block: its memory would count against
         * every stored item. */
        seen__free(ns->hkeys);
        ns->hkeys = NULL;
        ns->hsegs = NULL;
        ns->hcap = 0;
    }
    s->head_keys = ns->hkeys;
    s->head_segs = ns->hsegs;
    s->head_n = ns->hn;
    s->head_cap = ns->hcap;
    seen__free(s->segs);
    if (ns->nsegs) {
        /* Shrink the table to its size (it is small; a failed shrink just
         * keeps the larger block). */
        seen__segment *g =
            ns->segs_cap > ns->nsegs ? seen__realloc(ns->segs, ns->nsegs * sizeof *g) : NULL;
        s->segs = g ? g : ns->segs;
    } else {
        seen__free(ns->segs);
        s->segs = NULL;
    }
    s->nsegs = ns->nsegs;
    if (ns->clock > s->clock)
        s->clock = ns->clock;
    s->origin = ns->origin;
    s->newest = ns->newest;
    s->has_origin = ns->has_origin;
    s->plan_c = ns->plan_c;
    s->hwm = ns->hwm;
    s->hwm_clock = ns->hwm_clock;
    s->next_seg_id = ns->next_seg_id;
    seen__free(ns->seg_map);
    memset(ns, 0, sizeof *ns);
}

/* The tail shared by every write: capacity, expiry, planning size, then a
 * flush if due, then commit. */
static bool next_any_dead(const seen_set *s, const next_state *ns)
{
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (!seg_alive(s, &ns->segs[i], ns->origin, ns->clock))
            return true;
    return false;
}

/*
 * A capped set's count steps empty as their items are added again into
 * newer steps, and a large batch fills and drops a step every few items.
 * Past SEEN_SEGMENTS_SOFT segments, neighbouring live steps of one slice
 * whose items together fit one step are merged into the older of them: the
 * merged items are forgotten no later than the capacity rule allows (the
 * newer steps still hold the newest `capacity` items), and afterwards any
 * two neighbours hold more than a step, so a slice keeps at most about
 * 2 * items / step + 1 segments.  Head entries move now; runs are
 * rewritten by the flush that follows (seg_map).
 */
static seen_err next_coalesce(const seen_set *s, next_state *ns)
{
    uint64_t step = seg_step(s);
    int32_t *map = seen__malloc((size_t)ns->nsegs * sizeof *map);
    if (map == NULL)
        return SEEN_ERR_NOMEM;
    bool any = false;
    int32_t acc = -1;
    uint64_t acc_items = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++) {
        seen__segment *g = &ns->segs[i];
        map[i] = (int32_t)i;
        bool live = seg_alive(s, g, ns->origin, ns->clock);
        uint64_t items = seen__seg_items(g);
        if (acc >= 0 && live && ns->segs[acc].slice == g->slice && acc_items + items <= step) {
            map[i] = acc;
            ns->segs[acc].shadow += g->shadow;
            g->shadow = 0;
            acc_items += items;
            any = true;
        } else {
            acc = live ? (int32_t)i : -1;
            acc_items = items;
        }
    }
    if (!any) {
        seen__free(map);
        return SEEN_OK;
    }
    uint64_t *nk;
    uint32_t *ng;
    if (!head_alloc(&nk, &ng, ns->hcap)) {
        seen__free(map);
        return SEEN_ERR_NOMEM;
    }
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ns->hsegs[h]);
        nk[h] = ns->hkeys[h];
        ng[h] = ns->hsegs[h];
        if (k >= 0 && map[k] != k) {
            ng[h] = ns->segs[map[k]].id;
            ns->segs[k].phys--;
            ns->segs[map[k]].phys++;
        }
    }
    if (ns->head_fresh)
        seen__free(ns->hkeys);
    ns->hkeys = nk;
    ns->hsegs = ng;
    ns->head_fresh = true;
    ns->seg_map = map;
    return SEEN_OK;
}

static seen_err finish_write(seen_set *s, next_state *ns, bool force)
{
    apply_capacity(s, ns);
    next_expire(s, ns);
    update_hwm(s, ns);
    if (s->policy.capacity && ns->nsegs > SEEN_SEGMENTS_SOFT(s->policy.slices)) {
        seen_err err = next_coalesce(s, ns);
        if (err != SEEN_OK)
            return err;
        force |= ns->seg_map != NULL;
    }
    /* Dead segments are rare events (a slice ending, a capacity step);
     * only then do the head and runs need scanning for them. */
    bool dead = next_any_dead(s, ns);
    if (dead && !next_head_prune(s, ns))
        return SEEN_ERR_NOMEM;
    if (force || need_flush(s, ns, dead)) {
        seen_err err = flush(s, ns);
        if (err != SEEN_OK)
            return err;
    }
    next_drop_unreferenced(s, ns);
    if (ns->nsegs > SEEN_MAX_SEGMENTS)
        return SEEN_ERR_LIMIT;
    commit_next(s, ns);
    return SEEN_OK;
}

/* ------------------------------------------------------------------ add */

/*
 * Give segments the ids 0..nsegs-1 when ids near SEEN_SEG_ID_LIMIT (a hot
 * key with a capacity opens a segment every few items, for years).  Runs
 * carry ids, so this write takes renumbered copies of every run; the flush
 * that follows always runs.
 */
static seen_err next_renumber(const seen_set *s, next_state *ns)
{
    seen__run *runs = seen__calloc(s->nruns + 1, sizeof *runs);
    uint64_t *hk = NULL;
    uint32_t *hg = NULL;
    if (runs == NULL || !head_alloc(&hk, &hg, ns->hcap)) {
        seen__free(runs);
        return SEEN_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < s->nruns; i++) {
        if (seen__run_clone(&runs[i], &s->runs[i]) != SEEN_OK) {
            for (uint32_t j = 0; j < i; j++)
                seen__run_release(&runs[j]);
            seen__free(runs);
            seen__free(hk);
            return SEEN_ERR_NOMEM;
        }
        uint32_t *ids = (uint32_t *)(void *)runs[i].mem;
        for (uint32_t t = 0; t < runs[i].nsegs; t++)
            ids[t] = (uint32_t)seg_find(ns->segs, ns->nsegs, ids[t]);
    }
    for (uint32_t h = 0; h < ns->hn; h++) {
        hk[h] = ns->hkeys[h];
        hg[h] = (uint32_t)seg_find(ns->segs, ns->nsegs, ns->hsegs[h]);
    }
    if (ns->head_fresh)
        seen__free(ns->hkeys);
    ns->hkeys = hk;
    ns->hsegs = hg;
    ns->head_fresh = true;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        ns->segs[i].id = i;
    ns->next_seg_id = ns->nsegs;
    ns->runs = runs;
    ns->nruns = s->nruns;
    return SEEN_OK;
}

static seen_err add_keys(seen_set *s, const uint64_t *keys, size_t n, const int64_t *at,
                         int64_t now, size_t *added)
{
    seen_err err = check_time(now);
    if (err != SEEN_OK)
        return err;
    for (size_t i = 0; at && i < n; i++)
        if ((err = check_time(at[i])) != SEEN_OK)
            return err;
    if (added)
        *added = 0;

    next_state ns;
    if ((err = next_begin(s, &ns, now, n)) != SEEN_OK)
        return err;
    bool renumbered = false;
    if ((uint64_t)ns.next_seg_id + n + 1 > SEEN_SEG_ID_LIMIT) {
        if ((err = next_renumber(s, &ns)) != SEEN_OK) {
            next_discard(s, &ns);
            return err;
        }
        renumbered = true;
    }
    /* Scratch arrays in one block; on the stack for small batches. */
    enum { SMALL = 16 };
    const size_t per = sizeof(seen__kv) + sizeof(int64_t) + sizeof(int32_t) + 2 * sizeof(uint32_t);
    _Alignas(16) uint8_t small[SMALL * (sizeof(seen__kv) + sizeof(int64_t) + sizeof(int32_t) +
                                        2 * sizeof(uint32_t))];
    uint8_t *scratch = n <= SMALL ? small : seen__malloc(n * per);
    if (scratch == NULL) {
        next_discard(s, &ns);
        return SEEN_ERR_NOMEM;
    }
    size_t cap = n <= SMALL ? SMALL : n;
    seen__kv *kv = (seen__kv *)(void *)scratch;
    int64_t *slice = (int64_t *)(void *)(scratch + cap * sizeof(seen__kv));
    int32_t *rank = (int32_t *)(void *)(slice + cap);
    uint32_t *order = (uint32_t *)(void *)(rank + cap);
    uint32_t *pos_of = order + cap;
    if (!ns.has_origin && n > 0) {
        int64_t lo = INT64_MAX;
        for (size_t i = 0; i < n; i++) {
            int64_t t = at ? (at[i] < now ? at[i] : now) : now;
            if (t < lo)
                lo = t;
        }
        ns.origin = s->slice_ms ? lo : 0;
        ns.newest = ns.origin;
        ns.has_origin = 1;
    }

    /* Slices; items already forgotten at `now` are ignored.  Items from
     * well before `now` make the write an import. */
    int64_t lag = s->slice_ms && (int64_t)s->slice_ms < SEEN_IMPORT_LAG_MS ? (int64_t)s->slice_ms
                                                                           : SEEN_IMPORT_LAG_MS;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t t = at ? (at[i] < now ? at[i] : now) : now;
        int64_t k = slice_of(s, ns.origin, t);
        slice[i] = k;
        if (t < now - lag)
            ns.backfill = true;
        if (slice_forget_at(s, ns.origin, k) <= ns.clock)
            continue;
        if (t > ns.newest)
            ns.newest = t;
        kv[m++] = (seen__kv){keys[i], (uint32_t)i};
    }
    if ((err = seen__sort_kv(kv, m)) != SEEN_OK)
        goto out;
    /* One entry per distinct key: its newest addition, i.e. the newest
     * slice and, within it, the last in input order (so items between two
     * occurrences count as older, as they arrived before the second). */
    size_t u = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i, pick = i;
        while (j < m && kv[j].key == kv[i].key) {
            uint32_t a = kv[j].idx, b = kv[pick].idx;
            if (slice[a] > slice[b] || (slice[a] == slice[b] && a > b))
                pick = j;
            j++;
        }
        kv[u++] = kv[pick];
        i = j;
    }
    /* Where each key is now (ranks refer to s->segs). */
    if ((err = locate(s, kv, u, ns.clock, rank)) != SEEN_OK)
        goto out;
    /* Assign segments in input order, so a capacity's count steps follow
     * arrival. */
    for (size_t i = 0; i < u; i++)
        order[i] = (uint32_t)i;
    {
        /* Order the distinct keys by input position. */
        for (size_t i = 0; i < n; i++)
            pos_of[i] = UINT32_MAX;
        for (size_t i = 0; i < u; i++)
            pos_of[kv[i].idx] = (uint32_t)i;
        size_t w = 0;
        for (size_t i = 0; i < n; i++)
            if (pos_of[i] != UINT32_MAX)
                order[w++] = pos_of[i];
    }
    size_t new_items = 0;
    uint32_t prune_at = ns.nsegs * 2 + 64;
    for (size_t oi = 0; oi < u; oi++) {
        size_t i = order[oi];
        int32_t t = open_segment(s, &ns, slice[kv[i].idx]);
        if (t < 0) {
            err = SEEN_ERR_NOMEM;
            goto out;
        }
        seen__segment *target = &ns.segs[t];
        if (rank[i] >= 0) {
            /* rank indexes s->segs; a renumbering kept the order, so the
             * segment's id is now its old position. */
            uint32_t old_id = renumbered ? (uint32_t)rank[i] : s->segs[rank[i]].id;
            int32_t f = seg_find(ns.segs, ns.nsegs, old_id);
            if (f >= 0 && seg_age_cmp(&ns.segs[f], target) >= 0)
                continue; /* already as recent as this addition */
            /* The older copy stays stored until a merge meets both. */
            if (f >= 0 && !ns.segs[f].dropped && seen__seg_items(&ns.segs[f]) > 0)
                ns.segs[f].shadow++;
        } else {
            new_items++;
        }
        target->phys++;
        if (!next_head_push(&ns, kv[i].key, target->id)) {
            err = SEEN_ERR_NOMEM;
            goto out;
        }
        /* A count step may just have filled: apply the cap as we go so the
         * oldest steps leave before they are needed again. */
        if (s->policy.capacity) {
            apply_capacity(s, &ns);
            /* A batch far larger than the cap drops a step every few
             * items: take dropped steps and their head entries out as it
             * goes, so the table (scanned per item) stays small. */
            if (ns.nsegs > prune_at) {
                if (!next_head_prune(s, &ns)) {
                    err = SEEN_ERR_NOMEM;
                    goto out;
                }
                next_drop_unreferenced(s, &ns);
                prune_at = ns.nsegs * 2 + 64;
            }
        }
    }
    err = finish_write(s, &ns, renumbered);
    if (err == SEEN_OK && added)
        *added = new_items;
out:
    if (err != SEEN_OK)
        next_discard(s, &ns);
    if (scratch != small)
        seen__free(scratch);
    return err;
}

seen_err seen_add_str(seen_set *s, const seen_str *items, size_t n, const int64_t *at, int64_t now,
                      size_t *added)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    if (s->policy.ids != SEEN_IDS_STR)
        return SEEN_ERR_IDS;
    seen_err err = check_strs(items, n);
    if (err != SEEN_OK)
        return err;
    uint64_t small[16] = {0};
    uint64_t *keys = n <= 16 ? small : seen__malloc(n * sizeof *keys);
    if (keys == NULL)
        return SEEN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = seen__hash_str(items[i].ptr, items[i].len);
    err = add_keys(s, keys, n, at, now, added);
    if (keys != small)
        seen__free(keys);
    return err;
}

seen_err seen_add_int(seen_set *s, const uint64_t *items, size_t n, const int64_t *at, int64_t now,
                      size_t *added)
{
    if (s == NULL || (n && items == NULL))
        return SEEN_ERR_ARG;
    if (s->policy.ids != SEEN_IDS_INT)
        return SEEN_ERR_IDS;
    if (n > SEEN_MAX_BATCH)
        return SEEN_ERR_BATCH;
    uint64_t small[16] = {0};
    uint64_t *keys = n <= 16 ? small : seen__malloc(n * sizeof *keys);
    if (keys == NULL)
        return SEEN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = seen__int_key(s, items[i]);
    seen_err err = add_keys(s, keys, n, at, now, added);
    if (keys != small)
        seen__free(keys);
    return err;
}

/* --------------------------------------------------------------- remove */

/* Remove sorted keys from run r without rebuilding it (seen__run_without),
 * and charge what went to the segments; *applies false: rebuild instead. */
static seen_err run_remove_in_place(next_state *ns, const seen__run *r, const seen__divider *d,
                                    const uint64_t *keys, size_t u, seen__run *out, bool *applies)
{
    uint64_t *vals = seen__malloc((u ? u : 1) * sizeof *vals);
    uint64_t *per_tag = seen__calloc(r->nsegs, sizeof *per_tag);
    if (vals == NULL || per_tag == NULL) {
        seen__free(vals);
        seen__free(per_tag);
        return SEEN_ERR_NOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < u; i++) {
        uint64_t v = seen__div(d, keys[i]);
        if (k == 0 || vals[k - 1] != v)
            vals[k++] = v;
    }
    size_t gone;
    seen_err err = seen__run_without(out, r, vals, k, per_tag, &gone, applies);
    if (err == SEEN_OK && *applies && gone == 0)
        *applies = false; /* nothing matched after all: let the rebuild decide */
    if (err == SEEN_OK && *applies) {
        const uint32_t *ids = seen__run_segs(r);
        for (uint32_t t = 0; t < r->nsegs; t++) {
            int32_t at = seg_find(ns->segs, ns->nsegs, ids[t]);
            if (at < 0 || per_tag[t] == 0)
                continue;
            seen__segment *g = &ns->segs[at];
            g->phys -= per_tag[t];
            if (g->shadow > g->phys)
                g->shadow = g->phys;
        }
    }
    seen__free(vals);
    seen__free(per_tag);
    return err;
}

static seen_err remove_keys(seen_set *s, uint64_t *keys, size_t n, int64_t now, size_t *removed)
{
    seen_err err = check_time(now);
    if (err != SEEN_OK)
        return err;
    if (removed)
        *removed = 0;
    next_state ns;
    if ((err = next_begin(s, &ns, now, 0)) != SEEN_OK)
        return err;
    seen__kv *kv = seen__malloc((n ? n : 1) * sizeof *kv);
    int32_t *rank = seen__malloc((n ? n : 1) * sizeof *rank);
    runlist *rl = seen__calloc(1, sizeof *rl);
    if (kv == NULL || rank == NULL || rl == NULL) {
        err = SEEN_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        kv[i] = (seen__kv){keys[i], (uint32_t)i};
    if ((err = seen__sort_kv(kv, n)) != SEEN_OK)
        goto out;
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || kv[u - 1].key != kv[i].key)
            kv[u++] = kv[i];
    for (size_t i = 0; i < u; i++)
        keys[i] = kv[i].key; /* sorted, distinct */
    if ((err = locate(s, kv, u, ns.clock, rank)) != SEEN_OK)
        goto out;
    size_t gone = 0;
    for (size_t i = 0; i < u; i++)
        gone += rank[i] >= 0;
    /* Copies other than an item's newest were shadows: as they go, so does
     * their shadow mark.  (The table is unchanged so far: ranks index both
     * s->segs and ns.segs.) */
    for (uint32_t h = 0; h < ns.hn; h++) {
        size_t lo = 0, hi = u;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (keys[mid] < ns.hkeys[h])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == u || keys[lo] != ns.hkeys[h])
            continue;
        int32_t k = seg_find(ns.segs, ns.nsegs, ns.hsegs[h]);
        if (k >= 0 && k != rank[lo] && ns.segs[k].shadow > 0)
            ns.segs[k].shadow--;
    }
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        seen__divider d;
        seen__divider_init(&d, r->c);
        seen__cursor cur;
        seen__cursor_init(&cur, r);
        const uint32_t *ids = seen__run_segs(r);
        for (size_t k = 0; k < u; k++) {
            int t = seen__cursor_find(&cur, seen__div(&d, keys[k]));
            if (t < 0)
                continue;
            int32_t at = seg_find(ns.segs, ns.nsegs, ids[t]);
            if (at >= 0 && at != rank[k] && ns.segs[at].shadow > 0)
                ns.segs[at].shadow--;
        }
    }
    /* Physically remove every copy: head entries and run values. */
    {
        uint32_t w = 0, gone_from_head = 0;
        for (uint32_t h = 0; h < ns.hn; h++)
            gone_from_head += in_sorted(keys, u, ns.hkeys[h]);
        if (gone_from_head) {
            uint64_t *nk;
            uint32_t *ng;
            uint32_t cap = seen__head_cap_for(ns.hn - gone_from_head);
            if (!head_alloc(&nk, &ng, cap)) {
                err = SEEN_ERR_NOMEM;
                goto out;
            }
            for (uint32_t h = 0; h < ns.hn; h++) {
                if (!in_sorted(keys, u, ns.hkeys[h])) {
                    nk[w] = ns.hkeys[h];
                    ng[w] = ns.hsegs[h];
                    w++;
                } else {
                    int32_t k = seg_find(ns.segs, ns.nsegs, ns.hsegs[h]);
                    if (k >= 0) {
                        ns.segs[k].phys--;
                        if (ns.segs[k].shadow > ns.segs[k].phys)
                            ns.segs[k].shadow = ns.segs[k].phys;
                    }
                }
            }
            ns.hkeys = nk;
            ns.hsegs = ng;
            ns.hn = w;
            ns.hcap = cap;
            ns.head_fresh = true;
        }
    }
    if (s->nruns)
        memcpy(rl->r, s->runs, s->nruns * sizeof *s->runs);
    rl->n = s->nruns;
    bool runs_changed = false;
    for (uint32_t i = 0; i < rl->n; i++) {
        seen__run *r = &rl->r[i];
        seen__divider d;
        seen__divider_init(&d, r->c);
        seen__cursor cur;
        seen__cursor_init(&cur, r);
        bool hit = false;
        for (size_t k = 0; k < u && !hit; k++)
            hit = seen__cursor_find(&cur, seen__div(&d, keys[k])) >= 0;
        if (!hit)
            continue;
        seen__run nr;
        bool empty;
        if (!run_has_dead(s, &ns, r)) {
            /* In place: copy the buckets no removed value is in. */
            bool applies;
            if ((err = run_remove_in_place(&ns, r, &d, keys, u, &nr, &applies)) != SEEN_OK)
                goto out;
            if (applies) {
                runlist_replace(rl, i, i + 1, &nr, false);
                runs_changed = true;
                continue;
            }
        }
        const seen__run *in[1] = {r};
        err = merge_build(s, &ns, in, 1, HEAD_NONE, r->c, keys, u, &nr, &empty);
        if (err != SEEN_OK)
            goto out;
        runlist_replace(rl, i, i + 1, &nr, empty);
        if (empty)
            i--;
        runs_changed = true;
    }
    if (runs_changed) {
        ns.nruns = rl->n;
        ns.runs = seen__malloc((rl->n ? rl->n : 1) * sizeof *ns.runs);
        if (ns.runs == NULL) {
            err = SEEN_ERR_NOMEM;
            goto out;
        }
        memcpy(ns.runs, rl->r, rl->n * sizeof *rl->r);
        rl->n = 0; /* now owned by ns */
    }
    if (ns.runs == NULL) {
        err = finish_write(s, &ns, false);
    } else {
        /* Runs already rebuilt: skip the flush, just commit. */
        next_expire(s, &ns);
        update_hwm(s, &ns);
        next_drop_unreferenced(s, &ns);
        commit_next(s, &ns);
    }
    if (err == SEEN_OK && removed)
        *removed = gone;
out:
    if (err != SEEN_OK) {
        if (rl)
            runlist_release_created(rl);
        next_discard(s, &ns);
    }
    seen__free(rl);
    seen__free(kv);
    seen__free(rank);
    return err;
}

seen_err seen_remove_str(seen_set *s, const seen_str *items, size_t n, int64_t now, size_t *removed)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    if (s->policy.ids != SEEN_IDS_STR)
        return SEEN_ERR_IDS;
    seen_err err = check_strs(items, n);
    if (err != SEEN_OK)
        return err;
    uint64_t *keys = seen__malloc((n ? n : 1) * sizeof *keys);
    if (keys == NULL)
        return SEEN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = seen__hash_str(items[i].ptr, items[i].len);
    err = remove_keys(s, keys, n, now, removed);
    seen__free(keys);
    return err;
}

seen_err seen_remove_int(seen_set *s, const uint64_t *items, size_t n, int64_t now, size_t *removed)
{
    if (s == NULL || (n && items == NULL))
        return SEEN_ERR_ARG;
    if (s->policy.ids != SEEN_IDS_INT)
        return SEEN_ERR_IDS;
    if (n > SEEN_MAX_BATCH)
        return SEEN_ERR_BATCH;
    uint64_t *keys = seen__malloc((n ? n : 1) * sizeof *keys);
    if (keys == NULL)
        return SEEN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = seen__int_key(s, items[i]);
    seen_err err = remove_keys(s, keys, n, now, removed);
    seen__free(keys);
    return err;
}

seen_err seen_expire(seen_set *s, int64_t now)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    seen_err err = check_time(now);
    if (err != SEEN_OK)
        return err;
    next_state ns;
    if ((err = next_begin(s, &ns, now, 0)) != SEEN_OK)
        return err;
    err = finish_write(s, &ns, false);
    if (err != SEEN_OK)
        next_discard(s, &ns);
    return err;
}

/* ============================================================ inspection */

size_t seen_bytes(const seen_set *s)
{
    if (s == NULL)
        return 0;
    size_t b = seen__alloc_size((void *)s, sizeof *s);
    b += seen__alloc_size(s->segs, s->nsegs * sizeof *s->segs);
    b += seen__alloc_size(s->runs, s->nruns * sizeof *s->runs);
    b +=
        seen__alloc_size(s->head_keys, (size_t)s->head_cap * (sizeof(uint64_t) + sizeof(uint32_t)));
    for (uint32_t i = 0; i < s->nruns; i++)
        b += seen__run_alloc_bytes(&s->runs[i]);
    return b;
}

uint64_t seen_count(const seen_set *s, int64_t now)
{
    if (s == NULL)
        return 0;
    uint64_t total = 0;
    for (uint32_t i = 0; i < s->nsegs; i++)
        if (seg_alive(s, &s->segs[i], s->origin, now))
            total += seen__seg_items(&s->segs[i]);
    return total;
}

int64_t seen_forget_all_at(const seen_set *s)
{
    if (s == NULL || !s->has_origin)
        return 0;
    if (!s->slice_ms)
        return INT64_MAX;
    int64_t last = INT64_MIN;
    for (uint32_t i = 0; i < s->nsegs; i++)
        if (!s->segs[i].dropped && seen__seg_items(&s->segs[i]) > 0) {
            int64_t f = slice_forget_at(s, s->origin, s->segs[i].slice);
            if (f > last)
                last = f;
        }
    return last == INT64_MIN ? s->clock : last;
}

double seen_fpr_estimate(const seen_set *s)
{
    if (s == NULL)
        return 0;
    /* Exact keys collide only as 64-bit string hashes can; integer keys
     * (the id itself, or a bijection of it) never do. */
    bool exact_keys_collide = s->policy.ids == SEEN_IDS_STR;
    double mass = exact_keys_collide ? (double)s->head_n : 0;
    for (uint32_t i = 0; i < s->nruns; i++)
        if (s->runs[i].c > 1 || exact_keys_collide)
            mass += (double)s->runs[i].n * (double)s->runs[i].c;
    return ldexp(mass, -64);
}

size_t seen_segments(const seen_set *s, int64_t now, seen_segment_info *out, size_t cap)
{
    size_t k = 0;
    if (s == NULL)
        return 0;
    for (uint32_t i = 0; i < s->nsegs; i++) {
        const seen__segment *g = &s->segs[i];
        if (!seg_alive(s, g, s->origin, now))
            continue;
        if (k < cap && out) {
            seen_segment_info *o = &out[k];
            o->start_ms = s->slice_ms ? s->origin + g->slice * (int64_t)s->slice_ms : 0;
            o->end_ms = s->slice_ms ? o->start_ms + (int64_t)s->slice_ms : INT64_MAX;
            o->forget_ms = slice_forget_at(s, s->origin, g->slice);
            o->seq = g->seq;
            o->items = seen__seg_items(g);
        }
        k++;
    }
    return k;
}

size_t seen_runs(const seen_set *s, seen_run_info *out, size_t cap)
{
    if (s == NULL)
        return 0;
    size_t k = 0;
    if (s->head_n) {
        if (out && k < cap) {
            size_t bytes = (size_t)s->head_cap * (sizeof(uint64_t) + sizeof(uint32_t));
            out[k] =
                (seen_run_info){SEEN_ENC_BUFFER,
                                s->head_n,
                                bytes,
                                seen__alloc_size(s->head_keys, bytes),
                                1,
                                96.0,
                                s->policy.ids == SEEN_IDS_STR ? ldexp((double)s->head_n, -64) : 0,
                                0};
        }
        k++;
    }
    for (uint32_t i = 0; i < s->nruns; i++) {
        const seen__run *r = &s->runs[i];
        if (out && k < cap) {
            size_t bytes = seen__run_front_bytes(r) + seen__run_tail_bytes(r);
            bool collide = r->c > 1 || s->policy.ids == SEEN_IDS_STR;
            out[k] = (seen_run_info){r->c > 1 ? SEEN_ENC_COMPACT : SEEN_ENC_EXACT,
                                     r->n,
                                     bytes,
                                     seen__run_alloc_bytes(r),
                                     r->tail ? 2 : 1,
                                     (double)bytes * 8.0 / (double)r->n,
                                     collide ? ldexp((double)r->n * (double)r->c, -64) : 0,
                                     r->nsegs};
        }
        k++;
    }
    return k;
}

/* ========================================================== self-check */

seen_err seen__set_check(const seen_set *s)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    for (uint32_t i = 0; i < s->nsegs; i++) {
        const seen__segment *g = &s->segs[i];
        if (g->shadow > g->phys || (g->dropped && g->shadow) || g->id >= s->next_seg_id)
            return CORRUPT;
        if (i > 0 && seg_age_cmp(&s->segs[i - 1], g) >= 0)
            return CORRUPT;
        if (seg_find(s->segs, i, g->id) >= 0)
            return CORRUPT; /* duplicate id */
    }
    uint64_t *phys = seen__calloc(s->nsegs + 1, sizeof *phys);
    if (phys == NULL)
        return SEEN_ERR_NOMEM;
    seen_err err = SEEN_OK;
    for (uint32_t h = 0; h < s->head_n && err == SEEN_OK; h++) {
        int32_t k = seg_find(s->segs, s->nsegs, s->head_segs[h]);
        if (k < 0)
            err = CORRUPT;
        else
            phys[k]++;
    }
    unsigned __int128 mass = 0;
    for (uint32_t i = 0; i < s->nruns && err == SEEN_OK; i++) {
        const seen__run *r = &s->runs[i];
        if ((err = seen__run_validate(r)) != SEEN_OK)
            break;
        if ((s->budget == 0 || s->plan_c == 0) && r->c != 1) {
            err = CORRUPT;
            break;
        }
        mass += r->c > 1 ? (unsigned __int128)r->n * r->c : 0;
        const uint32_t *ids = seen__run_segs(r);
        int32_t last = -1;
        uint64_t *vals = seen__malloc((size_t)r->n * sizeof *vals);
        uint16_t *tags = seen__malloc((size_t)r->n * sizeof *tags);
        if (vals == NULL || tags == NULL) {
            seen__free(vals);
            seen__free(tags);
            err = SEEN_ERR_NOMEM;
            break;
        }
        seen__run_decode(r, vals, tags);
        for (uint32_t t = 0; t < r->nsegs && err == SEEN_OK; t++) {
            int32_t k = seg_find(s->segs, s->nsegs, ids[t]);
            if (k <= last)
                err = CORRUPT; /* unknown segment, or not in age order */
            last = k;
        }
        for (uint32_t k = 0; k < r->n && err == SEEN_OK; k++)
            phys[seg_find(s->segs, s->nsegs, ids[tags[k]])]++;
        seen__free(vals);
        seen__free(tags);
    }
    if (err == SEEN_OK && s->budget && mass > s->budget)
        err = CORRUPT;
    for (uint32_t i = 0; i < s->nsegs && err == SEEN_OK; i++)
        if (phys[i] != s->segs[i].phys)
            err = CORRUPT;
    seen__free(phys);
    return err;
}
