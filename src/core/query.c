/*
 * query.c — where candidates are in a set: the batch walk over the runs
 * and the head (locate), and the public queries built on it (prepared
 * queries, seen_filter_*).
 */
#include "write.h"

/* The rank (index in `segs`) of the segment that tag t of run r names, if
 * that segment is alive at q; -1 otherwise.  Fills tr[0..r->nsegs). */
void seen__run_tag_ranks(const seen_set *s, const seen__segment *segs, uint32_t nsegs,
                         int64_t origin, const seen__run *r, int64_t q, int32_t *tr)
{
    const uint32_t *ids = seen__run_segs(r);
    uint32_t hint = 0;
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find_near(segs, nsegs, ids[t], &hint);
        tr[t] = (k >= 0 && seg_alive(s, &segs[k], origin, q)) ? k : -1;
    }
}

/* Candidates below lo from keys[c] on: eight at a time, then the last
 * eight counted without a branch on where they end. */
static inline size_t skip_below(const uint64_t *keys, size_t c, uint64_t lo)
{
    while (keys[c + 7] < lo)
        c += 8;
    return c + (size_t)(keys[c] < lo) + (keys[c + 1] < lo) + (keys[c + 2] < lo) +
           (keys[c + 3] < lo) + (keys[c + 4] < lo) + (keys[c + 5] < lo) + (keys[c + 6] < lo) +
           (keys[c + 7] < lo);
}

/* The same four at a time, for walks with at least two values for every
 * three candidates: most steps pass one key or none, and four compares
 * cost half of eight (10k/10k in process: 113 -> 110 us). */
static inline size_t skip_below4(const uint64_t *keys, size_t c, uint64_t lo)
{
    while (keys[c + 3] < lo)
        c += 4;
    return c + (size_t)(keys[c] < lo) + (keys[c + 1] < lo) + (keys[c + 2] < lo) +
           (keys[c + 3] < lo);
}

/* The candidates from keys[c] on that divide to the value whose keys start
 * at lo take segment rank k if it is newer than theirs. */
static inline void mark_from(const uint64_t *keys, size_t n, size_t c, uint64_t lo, uint64_t d,
                             int32_t k, int32_t *rank)
{
    for (size_t j = c; j < n && keys[j] - lo < d; j++)
        if (k > rank[j])
            rank[j] = k;
}

/*
 * Run r against candidates it has few values for: its values decoded in
 * order, and for each the candidates that divide to it found by comparing
 * keys with value * c (no division per candidate).  Where a value's
 * candidates start is counted eight keys at a time, so a run of 2,500
 * values against 10,000 candidates costs 2,500 short steps, not 10,000
 * mispredicted ones; the two halves of the run are walked side by side,
 * two independent chains of loads the CPU overlaps.  `keys` holds the
 * candidates' keys and SEEN_CURSOR_PAD copies of UINT64_MAX after them.
 */
static seen_err locate_by_values(const seen__run *r, const uint64_t *keys, size_t n,
                                 const int32_t *tr, bool untagged, int32_t *rank)
{
    /* A small run's scratch on the stack (a page of adds walks the small
     * runs this way). */
    enum { SMALL_RUN = 128 };
    uint64_t vals_small[(2 * sizeof(uint64_t) + sizeof(uint16_t)) * SMALL_RUN / sizeof(uint64_t)];
    uint64_t *vals = r->n <= SMALL_RUN
                         ? vals_small
                         : seen__malloc((size_t)r->n * (2 * sizeof *vals + sizeof(uint16_t)));
    if (vals == NULL)
        return SEEN_ERR_NOMEM;
    uint64_t *hits = vals + r->n; /* (candidate << 32) | value, for each value matched */
    uint16_t *tags = (uint16_t *)(void *)(hits + r->n);
    /* Untagged (the caller asks only whether candidates are seen, and
     * every segment of the run is alive): the tags are not decoded and
     * every value counts as tag 0, whose rank is as alive as any. */
    if (untagged)
        memset(tags, 0, (size_t)r->n * sizeof *tags);
    seen__run_decode(r, vals, untagged ? NULL : tags);
    /* vals[i] * d cannot overflow: vals[i] = key / d for some key. */
    const uint64_t d = r->c;
    const uint32_t half = r->n / 2;
    /* First list the values that some candidate matches, without a branch
     * (about one value in ten: a branch on it mispredicted), then mark
     * their candidates.  The second half starts from its first value's
     * first candidate. */
    size_t a = 0, b = lower_bound(keys, n, vals[half] * d), h = 0;
#define WALK_HALVES(skip)                                                                          \
    for (uint32_t i = 0, j = half; i < half; i++, j++) {                                           \
        const uint64_t lo_a = vals[i] * d, lo_b = vals[j] * d;                                     \
        a = skip(keys, a, lo_a);                                                                   \
        b = skip(keys, b, lo_b);                                                                   \
        hits[h] = (uint64_t)a << 32 | i;                                                           \
        h += (a < n) & (keys[a] - lo_a < d) & (tr[tags[i]] >= 0);                                  \
        hits[h] = (uint64_t)b << 32 | j;                                                           \
        h += (b < n) & (keys[b] - lo_b < d) & (tr[tags[j]] >= 0);                                  \
    }
    if (2 * n <= 3 * (size_t)r->n)
        WALK_HALVES(skip_below4)
    else
        WALK_HALVES(skip_below)
#undef WALK_HALVES
    if (r->n & 1) {
        /* The last value, left over by the halves. */
        const uint32_t i = r->n - 1;
        b = skip_below(keys, b, vals[i] * d);
        hits[h] = (uint64_t)b << 32 | i;
        h += b < n && keys[b] - vals[i] * d < d && tr[tags[i]] >= 0;
    }
    for (size_t k = 0; k < h; k++) {
        const uint32_t i = (uint32_t)hits[k];
        mark_from(keys, n, (size_t)(hits[k] >> 32), vals[i] * d, d, tr[tags[i]], rank);
    }
    if (vals != vals_small)
        seen__free(vals);
    return SEEN_OK;
}

/* The first h' >= h with keys[h'] == key, or n.  Four keys a step, with
 * one branch on all four: a single add scans a head of up to 256 keys
 * (100,000 items: a key a step was ~6% of the add). */
static inline uint32_t head_find(const uint64_t *keys, uint32_t h, uint32_t n, uint64_t key)
{
    for (; h + 4 <= n; h += 4)
        if ((keys[h] == key) | (keys[h + 1] == key) | (keys[h + 2] == key) | (keys[h + 3] == key))
            break;
    for (; h < n; h++)
        if (keys[h] == key)
            return h;
    return n;
}

/*
 * For candidates sorted by key, the rank of the newest segment alive at q
 * holding each one, or -1 when none does.  Runs are walked with a cursor,
 * so a batch costs one pass over the buckets it touches.  With
 * `presence_only` (a query: only seen or not matters) a rank is some
 * segment holding the candidate, not always the newest, so a run whose
 * segments are all alive is walked without decoding its tags.
 */
seen_err seen__locate(const seen_set *s, const seen__kv *cand, size_t n, int64_t q,
                      bool presence_only, int32_t *rank)
{
    for (size_t i = 0; i < n; i++)
        rank[i] = -1;
    if (n == 0)
        return SEEN_OK;
    /* Ranks of a run's tags, after a -1 for "no tag": tr[-1] is -1, so
     * a candidate's rank from a run is tr[tag] whether it was found or
     * not, taken without a branch (one candidate in ten is found, and a
     * branch on it mispredicted). */
    int32_t tr_small[65];
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
                seen__run_tag_ranks(s, s->segs, s->nsegs, s->origin, runs[ri], q, ranks[ri]);
            for (size_t i = 0; i < n; i++) {
                uint64_t vals[SEEN_LOOKUP_MANY_MAX];
                int tags[SEEN_LOOKUP_MANY_MAX];
                /* One value per run: a hardware division costs less than
                 * deriving a divider's magic number (a 128-bit division in
                 * software) for it. */
                for (uint32_t ri = 0; ri < s->nruns; ri++)
                    vals[ri] = cand[i].key / runs[ri]->c;
                seen__run_lookup_many(runs, vals, s->nruns, tags);
                for (uint32_t ri = 0; ri < s->nruns; ri++)
                    if (tags[ri] >= 0 && ranks[ri][tags[ri]] > rank[i])
                        rank[i] = ranks[ri][tags[ri]];
            }
            goto head;
        }
    }
    uint64_t *vals = NULL; /* candidates as one run's values, then their tags */
    uint64_t vals_c = 0;   /* the divisor vals are under (0: none yet) */
    int32_t *tags = NULL;
    uint64_t *keys = NULL; /* the candidates' keys, padded (locate_by_values) */
    /* A page of adds or a small query: its scratch on the stack (each
     * allocation through Redis's allocator also asks its size). */
    enum { LOCATE_SMALL = 64 };
    uint64_t vals_small[LOCATE_SMALL], keys_small[LOCATE_SMALL + SEEN_CURSOR_PAD];
    int32_t tags_small[LOCATE_SMALL];
    const bool on_stack = n <= LOCATE_SMALL;
    seen_err err = SEEN_OK;
    for (uint32_t ri = 0; ri < s->nruns && err == SEEN_OK; ri++) {
        const seen__run *r = &s->runs[ri];
        int32_t *const tr_buf =
            r->nsegs <= 64 ? tr_small : seen__malloc((r->nsegs + 1) * sizeof *tr_buf);
        if (tr_buf == NULL) {
            err = SEEN_ERR_NOMEM;
            break;
        }
        tr_buf[0] = -1;
        int32_t *const tr = tr_buf + 1;
        seen__run_tag_ranks(s, s->segs, s->nsegs, s->origin, r, q, tr);
        bool any = false, all = true;
        for (uint32_t t = 0; t < r->nsegs; t++) {
            any |= tr[t] >= 0;
            all &= tr[t] >= 0;
        }
        const uint64_t by_values =
            seen__run_is_ef(r) ? SEEN_BY_VALUES_RATIO : SEEN_BY_VALUES_RATIO_GOLOMB;
        if (any && (uint64_t)r->n <= (uint64_t)n * by_values) {
            if (keys == NULL) {
                keys = on_stack ? keys_small : seen__malloc((n + SEEN_CURSOR_PAD) * sizeof *keys);
                if (keys == NULL) {
                    err = SEEN_ERR_NOMEM;
                } else {
                    for (size_t i = 0; i < n; i++)
                        keys[i] = cand[i].key;
                    for (size_t i = 0; i < SEEN_CURSOR_PAD; i++)
                        keys[n + i] = UINT64_MAX;
                }
            }
            if (err == SEEN_OK)
                err = locate_by_values(r, keys, n, tr, presence_only && all, rank);
        } else if (any) {
            if (vals == NULL && on_stack) {
                vals = vals_small;
                tags = tags_small;
            } else if (vals == NULL) {
                vals = seen__malloc(n * (sizeof *vals + sizeof *tags));
                if (vals == NULL) {
                    if (tr_buf != tr_small)
                        seen__free(tr_buf);
                    err = SEEN_ERR_NOMEM;
                    break;
                }
                tags = (int32_t *)(void *)(vals + n);
            }
            /* Runs of one divisor (main and the recent run, mostly) share
             * the candidates' values. */
            if (r->c != vals_c) {
                seen__divider d;
                seen__divider_init(&d, r->c);
                for (size_t i = 0; i < n; i++)
                    vals[i] = seen__div(&d, cand[i].key);
                vals_c = r->c;
            }
            seen__run_match(r, vals, n, tags);
            for (size_t i = 0; i < n; i++) {
                const int32_t t = tr[tags[i]];
                rank[i] = t > rank[i] ? t : rank[i];
            }
        }
        if (tr_buf != tr_small)
            seen__free(tr_buf);
    }
    if (vals != vals_small)
        seen__free(vals);
    if (keys != keys_small)
        seen__free(keys);
    if (err != SEEN_OK)
        return err;
head:
    if (s->head_n == 0)
        return SEEN_OK;
    /* The head is small and unsorted: scan it per candidate for small
     * batches, sort a copy and merge for large ones. */
    if ((uint64_t)n * s->head_n <= 8192) {
        /* Compare keys first (head_find); segments only on a match. */
        const uint64_t *hkeys = s->head_keys;
        const uint32_t hn = s->head_n;
        uint32_t hint = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t key = cand[i].key;
            for (uint32_t h = head_find(hkeys, 0, hn, key); h < hn;
                 h = head_find(hkeys, h + 1, hn, key)) {
                int32_t k = seg_find_near(s->segs, s->nsegs, s->head_segs[h], &hint);
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
    uint32_t hint = 0;
    for (uint32_t h = 0; h < s->head_n; h++) {
        int32_t k = seg_find_near(s->segs, s->nsegs, s->head_segs[h], &hint);
        if (k >= 0 && seg_alive(s, &s->segs[k], s->origin, q))
            hk[m++] = (seen__kv){s->head_keys[h], (uint32_t)k};
    }
    err = seen__sort_kv(hk, m);
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

seen_err seen__check_strs(const seen_str *items, size_t n)
{
    if (n > SEEN_MAX_BATCH)
        return SEEN_ERR_BATCH;
    if (n && items == NULL)
        return SEEN_ERR_ARG;
    for (size_t i = 0; i < n; i++) {
        seen_err err = seen__check_str(&items[i]);
        if (err != SEEN_OK)
            return err;
    }
    return SEEN_OK;
}

seen_err seen_query_str(const seen_str *items, size_t n, seen_query **out)
{
    if (out == NULL)
        return SEEN_ERR_ARG;
    if (n > SEEN_MAX_BATCH)
        return SEEN_ERR_BATCH;
    if (n && items == NULL)
        return SEEN_ERR_ARG;
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
    /* Each item is checked as it is hashed, not in a pass of its own over
     * the batch (seen__check_strs): ~3% of a 10,000-item query. */
    for (size_t i = 0; i < n; i++) {
        seen_err bad = seen__check_str(&items[i]);
        if (bad != SEEN_OK) {
            seen_query_free(q);
            return bad;
        }
        q->by_key[i] = (seen__kv){seen__hash_item(items, i, n), (uint32_t)i};
    }
    seen_err err = seen__sort_hashes(q->by_key, n);
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
    if (q->ids == SEEN_IDS_INT && s->policy.error > 0 && !s->raw_keys) {
        if (q->by_mixed == NULL) {
            seen__kv *m = seen__malloc((q->n ? q->n : 1) * sizeof *m);
            if (m == NULL)
                return SEEN_ERR_NOMEM;
            for (size_t i = 0; i < q->n; i++)
                m[i] = (seen__kv){seen__mix64(q->raw[i]), (uint32_t)i};
            err = seen__sort_hashes(m, q->n);
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
    err = seen__locate(s, cand, q->n, now, true, rank);
    if (err == SEEN_OK) {
        /* About one candidate in ten is seen.  A branch per candidate
         * would mispredict on those, and a store per candidate (into the
         * caller's flags, which are in input order, so the stores land at
         * random) cost more than both loops here: list the seen candidates
         * first, in place of their ranks and without a branch, then set
         * only their flags. */
        size_t k = 0;
        for (size_t i = 0; i < q->n; i++) {
            int32_t r = rank[i];
            rank[k] = (int32_t)i;
            k += r >= 0;
        }
        for (size_t j = 0; j < k; j++)
            seen[cand[rank[j]].idx] = 1;
    }
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
