/*
 * merge.c — building one run from runs and the head: decode into sorted
 * streams, drop what is dead or removed, k-way merge with equal values
 * collapsing into their newest segment, encode, and keep the segments'
 * entry counts true.
 */
#include "write.h"

/* A sorted stream of values and their segments' ranks.  Each stream's
 * arrays (and the scratch that made them) are one block, from v: a page's
 * flush makes a stream or two, and each allocation through Redis's
 * allocator also asks its size twice. */
typedef struct stream {
    uint64_t *v;
    int32_t *rank;
    size_t n, pos;
} stream;

static void stream_free(stream *st)
{
    seen__free(st->v);
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
    /* Values, ranks, then the segments' ranks and the tags (scratch). */
    uint64_t *v = seen__malloc((size_t)r->n * (sizeof *v + sizeof(int32_t) + sizeof(uint16_t)) +
                               (size_t)r->nsegs * sizeof(int32_t));
    if (v == NULL)
        return SEEN_ERR_NOMEM;
    int32_t *rank = (int32_t *)(void *)(v + r->n);
    int32_t *tr = rank + r->n;
    uint16_t *t = (uint16_t *)(void *)(tr + r->nsegs);
    seen__run_decode(r, v, t);
    {
        /* Entries per tag, charged to their table segments. */
        const uint32_t *ids = seen__run_segs(r);
        for (uint32_t k = 0; k < r->nsegs; k++)
            tr[k] = 0;
        for (size_t i = 0; i < r->n; i++)
            tr[t[i]]++;
        uint32_t near_seg = 0; /* the scans follow the table */
        for (uint32_t k = 0; k < r->nsegs; k++) {
            int32_t at = seg_find_near(ns->segs, ns->nsegs, ids[k], &near_seg);
            if (at >= 0)
                in_count[at] += (uint64_t)tr[k];
        }
    }
    seen__run_tag_ranks(s, ns->segs, ns->nsegs, ns->origin, r, ns->clock, tr);
    for (uint32_t k = 0; k < r->nsegs; k++)
        tr[k] = seg_mapped(ns, tr[k]);
    seen__divider d, f;
    seen__divider_init(&d, r->c);
    seen__divider_init(&f, c_out / r->c);
    size_t w = 0, ri = 0;
    bool all_live = true;
    for (uint32_t k = 0; k < r->nsegs; k++)
        all_live &= tr[k] >= 0;
    seen_err err = SEEN_OK;
    if (ns->mixing) {
        /* Raw ids (an exact run) leaving for mixed keys: mixed, divided,
         * and sorted again with their ranks. */
        seen__kv *kv = seen__malloc((r->n ? r->n : 1) * sizeof *kv);
        if (kv == NULL) {
            err = SEEN_ERR_NOMEM;
        } else {
            for (size_t i = 0; i < r->n; i++)
                if (tr[t[i]] >= 0)
                    kv[w++] = (seen__kv){seen__div(&f, seen__mix64(v[i])), (uint32_t)tr[t[i]]};
            err = seen__sort_kv(kv, w);
            for (size_t i = 0; i < w; i++) {
                v[i] = kv[i].key;
                rank[i] = (int32_t)kv[i].idx;
            }
            seen__free(kv);
        }
    } else if (all_live && nrm == 0 && f.kind == 0) {
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
    if (err != SEEN_OK) {
        seen__free(v);
        return err;
    }
    st->v = v;
    st->rank = rank;
    st->n = w;
    return SEEN_OK;
}

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
    /* Values, then the sorted pairs they come from, then ranks. */
    const size_t cap = ns->hn ? ns->hn : 1;
    uint64_t *v = seen__malloc(cap * (sizeof *v + sizeof(seen__kv) + sizeof(int32_t)));
    if (v == NULL)
        return SEEN_ERR_NOMEM;
    seen__kv *kv = (seen__kv *)(void *)(v + cap);
    int32_t *rank = (int32_t *)(void *)(kv + cap);
    seen__divider d;
    seen__divider_init(&d, c_out);
    size_t m = 0;
    uint32_t near_seg = 0; /* the scans follow the table */
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ns->hsegs[h], &near_seg);
        if (k < 0 || !head_part_has(s, ns, part, ns->segs[k].slice))
            continue;
        in_count[k]++; /* this merge consumes the entry */
        if (!seg_alive(s, &ns->segs[k], ns->origin, ns->clock))
            continue;
        if (nrm && in_sorted(rm, nrm, ns->hkeys[h]))
            continue;
        uint64_t key = ns->mixing ? seen__mix64(ns->hkeys[h]) : ns->hkeys[h];
        kv[m++] = (seen__kv){seen__div(&d, key), (uint32_t)seg_mapped(ns, k)};
    }
    seen_err err = seen__sort_kv(kv, m);
    if (err != SEEN_OK) {
        seen__free(v);
        return err;
    }
    for (size_t i = 0; i < m; i++) {
        v[i] = kv[i].key;
        rank[i] = (int32_t)kv[i].idx;
    }
    st->v = v;
    st->rank = rank;
    st->n = m;
    return SEEN_OK;
}

/*
 * The common flush, done in place: the head's items into the one run that
 * takes them, when that run has the output's divisor and only live
 * segments, every head entry consumed is alive and of one of them, and
 * nothing is removed.  The head's values go into the buckets they fall in
 * (seen__run_with) and the rest of the run is copied; values the run holds
 * already (or the head twice) collapse as in the general merge.  *done is
 * false when this does not apply; then nothing has changed.
 */
static seen_err merge_in_place(const seen_set *s, next_state *ns, const seen__run *r,
                               head_part with_head, uint64_t c_out, seen__run *out, bool *done)
{
    *done = false;
    if (r->c != c_out || ns->seg_map != NULL || ns->hn == 0 || ns->mixing)
        return SEEN_OK;
    const uint32_t *ids = seen__run_segs(r);
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find(ns->segs, ns->nsegs, ids[t]);
        if (k < 0 || !seg_alive(s, &ns->segs[k], ns->origin, ns->clock))
            return SEEN_OK;
    }
    enum { SMALL_TABLE = 64 };
    uint64_t in_small[SMALL_TABLE] = {0};
    uint64_t *in_count =
        ns->nsegs <= SMALL_TABLE ? in_small : seen__calloc(ns->nsegs, sizeof *in_count);
    if (in_count == NULL)
        return SEEN_ERR_NOMEM;
    stream hs;
    seen_err err = stream_from_head(s, ns, with_head, c_out, NULL, 0, &hs, in_count);
    if (err != SEEN_OK)
        goto done;
    /* Every entry consumed must be alive and of one of the run's
     * segments: its tag. */
    uint64_t consumed = 0;
    int32_t at = -1;
    for (uint32_t k = 0; k < ns->nsegs; k++) {
        consumed += in_count[k];
        if (in_count[k] == hs.n)
            at = (int32_t)k;
    }
    uint32_t tag = 0;
    while (at >= 0 && tag < r->nsegs && ids[tag] != ns->segs[at].id)
        tag++;
    if (hs.n == 0 || consumed != hs.n || at < 0 || tag == r->nsegs)
        goto done;
    /* The head's distinct values, in place of the stream's own. */
    uint64_t *fresh = hs.v;
    size_t k = 0;
    uint64_t collapsed = 0;
    for (size_t i = 0; i < hs.n; i++) {
        if (i > 0 && hs.v[i] == hs.v[k - 1])
            collapsed++;
        else
            fresh[k++] = hs.v[i];
    }
    bool applies = false;
    size_t held = 0;
    err = seen__run_with(out, r, fresh, k, SEEN_RUN_TAKES_HEAD | seen__set_run_shape(s), tag, &held,
                         &applies);
    if (err != SEEN_OK || !applies)
        goto done;
    collapsed += held;
    /* The counts the general merge would leave. */
    seen__segment *g = &ns->segs[at];
    g->phys = g->phys + out->n - (r->n + hs.n);
    g->shadow -= collapsed < g->shadow ? collapsed : g->shadow;
    if (g->shadow > g->phys)
        g->shadow = g->phys;
    *done = true;
done:
    stream_free(&hs);
    if (in_count != in_small)
        seen__free(in_count);
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
seen_err seen__merge_build(const seen_set *s, next_state *ns, const seen__run *const *inputs,
                           size_t ninputs, head_part with_head, uint64_t c_out, const uint64_t *rm,
                           size_t nrm, seen__run *out, bool *empty)
{
    size_t nst = 0;
    seen_err err = SEEN_OK;
    uint64_t *ov = NULL;   /* the merged values, then in the same block ... */
    int32_t *orank = NULL; /* ... their ranks, the tag of each segment ... */
    uint16_t *ot = NULL;   /* ... and their tags */
    size_t total = 0;
    *empty = false;
    if (ninputs > SEEN_MAX_RUNS)
        return SEEN_ERR_ARG;
    if (ninputs == 1 && with_head != HEAD_NONE && nrm == 0) {
        bool done = false;
        err = merge_in_place(s, ns, inputs[0], with_head, c_out, out, &done);
        if (err != SEEN_OK || done)
            return err;
    }
    /* Per table segment: entries consumed, produced, and dropped as the
     * older of two equal values; then the streams, in the same block (each
     * allocation through Redis's allocator also asks its size twice). */
    const size_t nacct = (size_t)ns->nsegs * 3 + 1;
    uint64_t *acct = seen__calloc(1, nacct * sizeof *acct + (ninputs + 1) * sizeof(stream));
    if (acct == NULL)
        return SEEN_ERR_NOMEM;
    stream *st = (stream *)(void *)(acct + nacct);
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
    /* Widest first, so each array stays aligned: values, ranks, the tag
     * of each table segment and the ids of the segments used, tags. */
    ov = seen__malloc(total * (sizeof *ov + sizeof *orank + sizeof *ot) +
                      (size_t)ns->nsegs * (sizeof(int32_t) + sizeof(uint32_t)));
    if (ov == NULL) {
        err = SEEN_ERR_NOMEM;
        goto done;
    }
    orank = (int32_t *)(void *)(ov + total);
    int32_t *tag_of = orank + total;
    uint32_t *seg_ids = (uint32_t *)(void *)(tag_of + ns->nsegs);
    ot = (uint16_t *)(void *)(seg_ids + ns->nsegs);
    /* k-way merge; equal values collapse into the newest segment.  Two
     * non-empty inputs is the common case (a run and the head; a recent run
     * folded into main, the head's part of ended slices often empty): merge
     * them directly. */
    size_t n = 0;
    size_t two[2], nonempty = 0;
    for (size_t i = 0; i < nst; i++)
        if (st[i].n > 0 && nonempty++ < 2)
            two[nonempty - 1] = i;
    if (nonempty == 2) {
        stream *x = &st[two[0]], *y = &st[two[1]];
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
        x->pos = x->n; /* the general loop below has nothing left */
        y->pos = y->n;
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
        /* Each table segment's tag (-1 while unused) and the ids of the
         * segments used: at most the table's size, never a fixed bound. */
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
         * SEEN_FINE_RECENT_SET). */
        const unsigned set_shape = seen__set_run_shape(s);
        const bool takes_head = with_head != HEAD_NONE && ninputs <= 1;
        bool fine = c_out == 1 || (takes_head && (set_shape & SEEN_RUN_IN_MID_SET));
        err = seen__run_encode(out, c_out, ov, ot, n, seg_ids, used_cnt,
                               (fine ? SEEN_RUN_FINE : 0u) |
                                   (takes_head ? SEEN_RUN_TAKES_HEAD : 0u) | set_shape);
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
    seen__free(ov);
    seen__free(acct);
    return err;
}
