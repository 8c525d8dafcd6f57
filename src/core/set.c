/*
 * set.c — seen sets: policy, creation, copies, inspection and the self-check.
 * The other parts of a set live beside it: queries (query.c), adds and
 * removes (write.c), the state a write builds (state.c), merging runs
 * (merge.c) and planning fingerprints (plan.c); write.h is what they share.
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
 *       sum over runs with c > 1 (n * c)  <=  budget = error * 2^64,
 *
 * checked before every change, so the bound holds at every moment.  Exact
 * keys (the head, runs with c = 1) are outside it: a string id's 64-bit
 * hash collides with a fresh one's with probability 2^-64.  Small
 * sets (up to the exact limit) keep c = 1 (exact keys).  Once compact, each
 * new run gets the largest divisor that leaves room for the items the set
 * is expected to hold (its recent high-water mark, or a projection of its
 * rate while it is younger than a window); see plan.c.
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
#include "run_layout.h"
#include "write.h"

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
    return s->policy.error > 0 && !s->raw_keys ? seen__mix64(item) : item;
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
    /* Integer ids start keyed as they are: exact while that is the smaller
     * form (plan.c), and mixed into fingerprints once it is not. */
    s->raw_keys = policy->ids == SEEN_IDS_INT && policy->error > 0;
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
bool seen__head_alloc(uint64_t **keys, uint32_t **segs, uint32_t cap)
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
        c->segs = seen__malloc(seen__segs_block_bytes(s, s->nsegs));
        if (c->segs == NULL)
            goto fail;
        memcpy(c->segs, s->segs, seen__segs_block_bytes(s, s->nsegs));
        c->nsegs = s->nsegs;
    }
    if (s->head_n) {
        uint32_t cap = seen__head_cap_for(s->head_n);
        if (!seen__head_alloc(&c->head_keys, &c->head_segs, cap))
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

size_t seen_bytes(const seen_set *s)
{
    if (s == NULL)
        return 0;
    size_t b = seen__alloc_size((void *)s, sizeof *s);
    b += seen__alloc_size(s->segs, seen__segs_block_bytes(s, s->nsegs));
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

int64_t seen_last_write_at(const seen_set *s)
{
    return s ? s->clock : 0;
}

int64_t seen_forget_all_at(const seen_set *s)
{
    if (s == NULL || !s->has_origin)
        return 0;
    if (!s->slice_ms)
        return INT64_MAX;
    /* Every segment that stores an entry, whatever its count: a re-add
     * whose older copy a fingerprint collision hid marks the newest
     * segment with an entry left (write.c, mark_unplaced_shadow), which
     * may be the one holding that very item, counted 0 while it answers
     * for it.  Taken by its count, a set whose only live entry was so
     * marked looked forgotten, and its next write started it afresh. */
    int64_t last = INT64_MIN;
    for (uint32_t i = 0; i < s->nsegs; i++)
        if (!s->segs[i].dropped && s->segs[i].phys > 0) {
            int64_t f = slice_forget_at(s, s->origin, s->segs[i].slice);
            if (f > last)
                last = f;
        }
    return last == INT64_MIN ? s->clock : last;
}

int seen_keys_raw(const seen_set *s)
{
    return s != NULL && s->raw_keys;
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

seen_err seen__set_check(const seen_set *s)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    /* Raw keys: an IDS INT set with a budget, still in its exact phase. */
    if (s->raw_keys > 1 ||
        (s->raw_keys && (s->policy.ids != SEEN_IDS_INT || s->budget == 0 || s->plan_c != 0)))
        return CORRUPT;
    for (uint32_t i = 0; i < s->nsegs; i++) {
        const seen__segment *g = &s->segs[i];
        if (g->shadow > g->phys || (g->dropped && g->shadow) || g->id >= s->next_seg_id ||
            (seen__set_spans(s) && seen__set_spans(s)[i].lo > seen__set_spans(s)[i].hi))
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
        /* A run not marked loose has exact ends (version 2 needs them, and
         * the mark is written with the run). */
        if (!r->loose_ends && !seen__run_ends_exact(r)) {
            err = CORRUPT;
            break;
        }
        if ((s->budget == 0 || s->plan_c == 0 || s->raw_keys) && r->c != 1) {
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
