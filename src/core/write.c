/*
 * write.c — the writes: adds (with their import detection and in-batch
 * capacity), removes (in place where a run allows it) and expiry.  Each
 * builds a next state (state.c) and commits it whole.
 */
#include "write.h"

/* Batches of up to this many items reserve their head entries at once. */
#define SEEN_HEAD_RESERVE_MAX 4096u

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
    if (runs == NULL || !seen__head_alloc(&hk, &hg, ns->hcap)) {
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
        uint32_t near_seg = 0; /* the scans follow the table */
        for (uint32_t t = 0; t < runs[i].nsegs; t++)
            ids[t] = (uint32_t)seg_find_near(ns->segs, ns->nsegs, ids[t], &near_seg);
    }
    uint32_t near_seg = 0; /* the scans follow the table */
    for (uint32_t h = 0; h < ns->hn; h++) {
        hk[h] = ns->hkeys[h];
        hg[h] = (uint32_t)seg_find_near(ns->segs, ns->nsegs, ns->hsegs[h], &near_seg);
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

/*
 * A re-added item whose older copy was found in a segment none of whose
 * entries is left unmarked: the capacity rule counts phys - shadow per
 * segment, and a fingerprint collision can spend a segment's mark on the
 * wrong item.  Items X (older segment A) and Y (newer segment B) share a
 * fingerprint in B's run; re-adding X finds the newest match, B, and marks
 * Y's entry there, leaving X's own old copy in A counted; re-adding Y then
 * finds B with nothing left to mark.  Without a mark somewhere the set
 * counts one item more than it holds and the capacity rule forgets its
 * oldest kept item one step early.  Where X's copy lies is not known, so
 * the mark goes to the newest live segment with an unmarked entry: a count
 * too low for a segment only keeps more (never fewer) than `capacity`
 * items, and the total is right again.  The mark stays until its segment
 * is forgotten: each such collision (a re-add meets one with probability
 * about the error rate) keeps one item more than the cap needs.
 */
static void mark_unplaced_shadow(const seen_set *s, next_state *ns)
{
    for (uint32_t k = ns->nsegs; k-- > 0;) {
        seen__segment *g = &ns->segs[k];
        if (seg_alive(s, g, ns->origin, ns->clock) && seen__seg_items(g) > 0) {
            g->shadow++;
            return;
        }
    }
}

/* Item i's time: its own (capped at now), or now. */
static inline int64_t item_time(const int64_t *at, size_t i, int64_t now)
{
    return at ? (at[i] < now ? at[i] : now) : now;
}

/* A windowed set that has forgotten everything it held by `now` (its
 * user came back after more than a window away). */
static bool holds_nothing_alive(const seen_set *s, int64_t now)
{
    return s->slice_ms && s->has_origin && seen_forget_all_at(s) <= now;
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
    if ((err = seen__next_begin(s, &ns, now)) != SEEN_OK)
        return err;
    bool renumbered = false;
    if ((uint64_t)ns.next_seg_id + n + 1 > SEEN_SEG_ID_LIMIT) {
        if ((err = next_renumber(s, &ns)) != SEEN_OK) {
            seen__next_discard(s, &ns);
            return err;
        }
        renumbered = true;
    }
    /* Scratch arrays in one block; on the stack for small batches (a
     * feed's page of adds). */
    enum { SMALL = 64 };
    const size_t per = sizeof(seen__kv) + sizeof(int64_t) + sizeof(int32_t) + 2 * sizeof(uint32_t);
    _Alignas(16) uint8_t small[SMALL * (sizeof(seen__kv) + sizeof(int64_t) + sizeof(int32_t) +
                                        2 * sizeof(uint32_t))];
    uint8_t *scratch = n <= SMALL ? small : seen__malloc(n * per);
    if (scratch == NULL) {
        seen__next_discard(s, &ns);
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
            int64_t t = item_time(at, i, now);
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
        int64_t t = item_time(at, i, now);
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
    /* One entry per distinct key: its newest addition, i.e. the latest
     * time (and so the newest slice) and, among equal times, the last in
     * input order (so items between two occurrences count as older, as
     * they arrived before the second). */
    size_t u = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i, pick = i;
        while (j < m && kv[j].key == kv[i].key) {
            uint32_t a = kv[j].idx, b = kv[pick].idx;
            int64_t ta = item_time(at, a, now), tb = item_time(at, b, now);
            if (ta > tb || (ta == tb && a > b))
                pick = j;
            j++;
        }
        kv[u++] = kv[pick];
        i = j;
    }
    /* Where each key is now (ranks refer to s->segs). */
    if ((err = seen__locate(s, kv, u, ns.clock, false, rank)) != SEEN_OK)
        goto out;
    /* Assign segments in the items' time order, and in input order among
     * equal times, so a capacity's count steps follow time within a write
     * whatever order its items come in: the oldest steps are forgotten
     * first, and they hold the oldest items. */
    {
        for (size_t i = 0; i < n; i++)
            pos_of[i] = UINT32_MAX;
        for (size_t i = 0; i < u; i++)
            pos_of[kv[i].idx] = (uint32_t)i;
        seen__kv *by_time = NULL;
        if (at != NULL && s->policy.capacity && u > 1) {
            by_time = seen__malloc(u * sizeof *by_time);
            if (by_time == NULL) {
                err = SEEN_ERR_NOMEM;
                goto out;
            }
            size_t w = 0;
            for (size_t i = 0; i < n; i++)
                if (pos_of[i] != UINT32_MAX)
                    by_time[w++] = (seen__kv){(uint64_t)item_time(at, i, now), (uint32_t)i};
            /* Stable: equal times keep input order. */
            if ((err = seen__sort_kv(by_time, u)) != SEEN_OK) {
                seen__free(by_time);
                goto out;
            }
            for (size_t k = 0; k < u; k++)
                order[k] = pos_of[by_time[k].idx];
            seen__free(by_time);
        } else {
            size_t w = 0;
            for (size_t i = 0; i < n; i++)
                if (pos_of[i] != UINT32_MAX)
                    order[w++] = pos_of[i];
        }
    }
    size_t new_items = 0;
    uint32_t prune_at = ns.nsegs * 2 + 64;
    /* A page's entries in one head block (a larger batch grows it step by
     * step, which amortizes, and a capped set may prune it as it goes). */
    if (u > 1 && u <= SEEN_HEAD_RESERVE_MAX && !seen__next_head_reserve(&ns, ns.hn + (uint32_t)u)) {
        err = SEEN_ERR_NOMEM;
        goto out;
    }
    for (size_t oi = 0; oi < u; oi++) {
        size_t i = order[oi];
        int64_t when = item_time(at, kv[i].idx, now);
        int32_t t = seen__open_segment(s, &ns, slice[kv[i].idx], when);
        if (t < 0) {
            err = SEEN_ERR_NOMEM;
            goto out;
        }
        seen__segment *target = &ns.segs[t];
        bool unmarked = false;
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
            else if (f >= 0 && !ns.segs[f].dropped)
                unmarked = true;
        } else {
            new_items++;
        }
        target->phys++;
        if (ns.spans) {
            seen__span *sp = &ns.spans[t];
            if (when < sp->lo)
                sp->lo = when;
            if (when > sp->hi)
                sp->hi = when;
        }
        if (unmarked)
            mark_unplaced_shadow(s, &ns);
        if (!seen__next_head_push(&ns, kv[i].key, target->id)) {
            err = SEEN_ERR_NOMEM;
            goto out;
        }
        /* A count step may just have filled: apply the cap as we go so the
         * oldest steps leave before they are needed again. */
        if (s->policy.capacity) {
            seen__apply_capacity(s, &ns);
            /* A batch far larger than the cap drops a step every few
             * items: take dropped steps and their head entries out as it
             * goes, so the table (scanned per item) stays small. */
            if (ns.nsegs > prune_at) {
                if (!seen__next_head_prune(s, &ns)) {
                    err = SEEN_ERR_NOMEM;
                    goto out;
                }
                seen__next_drop_unreferenced(s, &ns);
                prune_at = ns.nsegs * 2 + 64;
            }
        }
    }
    if (!seen__next_head_fit(&ns)) {
        err = SEEN_ERR_NOMEM;
        goto out;
    }
    err = seen__finish_write(s, &ns, renumbered);
    if (err == SEEN_OK && added)
        *added = new_items;
out:
    if (err != SEEN_OK)
        seen__next_discard(s, &ns);
    if (scratch != small)
        seen__free(scratch);
    return err;
}

/*
 * A write into a set that has forgotten everything goes into a new set of
 * the same policy, which then takes the old one's place.  Nothing of the
 * old life is kept: its slices start from the new first item (slices
 * anchored in the old life would start up to a slice before it, and a
 * set's age is measured from its oldest slice's start), its plan, its
 * high-water mark and its key form (an integer set starts keyed by its raw
 * ids again) are those of a new key.  Kept, a user back after a window away
 * at 1,000 a day was planned as a slice older than its data: for a fraction
 * of its rate, re-planned at nearly every flush as it grew (14 runs and 22
 * bits per item on its 50th day back, against 6 and 15.4 for a new key).
 * starts_afresh() makes the new set when the write should go there;
 * replace_with() takes the write's result in it: on success it becomes s,
 * otherwise it is dropped and s is untouched.
 */
static seen_err starts_afresh(const seen_set *s, size_t n, int64_t now, seen_set **fresh)
{
    *fresh = NULL;
    if (n == 0 || check_time(now) != SEEN_OK || !holds_nothing_alive(s, now))
        return SEEN_OK;
    return seen_create(&s->policy, fresh);
}

static seen_err replace_with(seen_set *s, seen_set *fresh, seen_err written)
{
    if (written != SEEN_OK) {
        seen_free(fresh);
        return written;
    }
    if (fresh->clock < s->clock)
        fresh->clock = s->clock; /* the latest `now` of any write, still */
    seen_set old = *s;
    *s = *fresh;
    *fresh = old;
    seen_free(fresh);
    return SEEN_OK;
}

seen_err seen_add_str(seen_set *s, const seen_str *items, size_t n, const int64_t *at, int64_t now,
                      size_t *added)
{
    if (s == NULL)
        return SEEN_ERR_ARG;
    if (s->policy.ids != SEEN_IDS_STR)
        return SEEN_ERR_IDS;
    seen_err err = seen__check_strs(items, n);
    if (err != SEEN_OK)
        return err;
    seen_set *fresh;
    if ((err = starts_afresh(s, n, now, &fresh)) != SEEN_OK)
        return err;
    if (fresh)
        return replace_with(s, fresh, seen_add_str(fresh, items, n, at, now, added));
    uint64_t small[64] = {0};
    uint64_t *keys = n <= 64 ? small : seen__malloc(n * sizeof *keys);
    if (keys == NULL)
        return SEEN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = seen__hash_item(items, i, n);
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
    seen_set *fresh;
    seen_err err = starts_afresh(s, n, now, &fresh);
    if (err != SEEN_OK)
        return err;
    if (fresh)
        return replace_with(s, fresh, seen_add_int(fresh, items, n, at, now, added));
    uint64_t small[64] = {0};
    uint64_t *keys = n <= 64 ? small : seen__malloc(n * sizeof *keys);
    if (keys == NULL)
        return SEEN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = seen__int_key(s, items[i]);
    err = add_keys(s, keys, n, at, now, added);
    if (keys != small)
        seen__free(keys);
    return err;
}

/* Remove sorted keys from run r without rebuilding it (seen__run_without),
 * and charge what went to the segments; *applies false: rebuild instead. */
static seen_err run_remove_in_place(next_state *ns, const seen__run *r, const seen__divider *d,
                                    const uint64_t *keys, size_t u, unsigned shape, seen__run *out,
                                    bool *applies)
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
    seen_err err = seen__run_without(out, r, vals, k, shape, per_tag, &gone, applies);
    if (err == SEEN_OK && *applies && gone == 0)
        *applies = false; /* nothing matched after all: let the rebuild decide */
    if (err == SEEN_OK && *applies) {
        const uint32_t *ids = seen__run_segs(r);
        uint32_t near_seg = 0; /* the scans follow the table */
        for (uint32_t t = 0; t < r->nsegs; t++) {
            int32_t at = seg_find_near(ns->segs, ns->nsegs, ids[t], &near_seg);
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
    if ((err = seen__next_begin(s, &ns, now)) != SEEN_OK)
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
    if ((err = seen__locate(s, kv, u, ns.clock, false, rank)) != SEEN_OK)
        goto out;
    size_t gone = 0;
    for (size_t i = 0; i < u; i++)
        gone += rank[i] >= 0;
    /* Copies other than an item's newest were shadows: as they go, so does
     * their shadow mark.  (The table is unchanged so far: ranks index both
     * s->segs and ns.segs.) */
    uint32_t near_seg = 0; /* the scans follow the table */
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
        int32_t k = seg_find_near(ns.segs, ns.nsegs, ns.hsegs[h], &near_seg);
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
            int32_t at = seg_find_near(ns.segs, ns.nsegs, ids[t], &near_seg);
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
            if (!seen__head_alloc(&nk, &ng, cap)) {
                err = SEEN_ERR_NOMEM;
                goto out;
            }
            for (uint32_t h = 0; h < ns.hn; h++) {
                if (!in_sorted(keys, u, ns.hkeys[h])) {
                    nk[w] = ns.hkeys[h];
                    ng[w] = ns.hsegs[h];
                    w++;
                } else {
                    int32_t k = seg_find_near(ns.segs, ns.nsegs, ns.hsegs[h], &near_seg);
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
    /* A run edited in place stays Elias-Fano while a rebuild of it, as the
     * run taking the head or not, could code it so. */
    const unsigned shape = SEEN_RUN_TAKES_HEAD | seen__set_run_shape(s);
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
        if (!seen__run_has_dead(s, &ns, r)) {
            /* In place: copy the buckets no removed value is in. */
            bool applies;
            if ((err = run_remove_in_place(&ns, r, &d, keys, u, shape, &nr, &applies)) != SEEN_OK)
                goto out;
            if (applies) {
                seen__runlist_replace(rl, i, i + 1, &nr, false);
                runs_changed = true;
                continue;
            }
        }
        const seen__run *in[1] = {r};
        err = seen__merge_build(s, &ns, in, 1, HEAD_NONE, r->c, keys, u, &nr, &empty);
        if (err != SEEN_OK)
            goto out;
        seen__runlist_replace(rl, i, i + 1, &nr, empty);
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
        err = seen__finish_write(s, &ns, false);
    } else {
        /* Runs already rebuilt: skip the flush, just commit. */
        seen__next_expire(s, &ns);
        seen__update_hwm(s, &ns);
        seen__next_drop_unreferenced(s, &ns);
        seen__commit_next(s, &ns);
    }
    if (err == SEEN_OK && removed)
        *removed = gone;
out:
    if (err != SEEN_OK) {
        if (rl)
            seen__runlist_release_created(rl);
        seen__next_discard(s, &ns);
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
    seen_err err = seen__check_strs(items, n);
    if (err != SEEN_OK)
        return err;
    uint64_t *keys = seen__malloc((n ? n : 1) * sizeof *keys);
    if (keys == NULL)
        return SEEN_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        keys[i] = seen__hash_item(items, i, n);
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
    if ((err = seen__next_begin(s, &ns, now)) != SEEN_OK)
        return err;
    err = seen__finish_write(s, &ns, false);
    if (err != SEEN_OK)
        seen__next_discard(s, &ns);
    return err;
}
