/*
 * state.c — the state a write builds before it commits (next_state): the
 * segment table with its count steps and capacity rule, the head, and the
 * commit that swaps it all in.  A failed write discards it and leaves the
 * set as it was.
 */
#include "write.h"

void seen__next_discard(const seen_set *s, next_state *ns)
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

seen_err seen__next_begin(const seen_set *s, next_state *ns, int64_t now, size_t extra_segs)
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

bool seen__next_head_push(next_state *ns, uint64_t key, uint32_t seg)
{
    if (ns->hn == ns->hcap) {
        uint32_t cap = seen__head_cap_for(ns->hn + 1);
        uint64_t *k;
        uint32_t *g;
        if (!seen__head_alloc(&k, &g, cap))
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
bool seen__next_head_prune(const seen_set *s, next_state *ns)
{
    uint32_t keep = 0;
    uint32_t near_seg = 0; /* the scans follow the table */
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ns->hsegs[h], &near_seg);
        keep += k >= 0 && seg_alive(s, &ns->segs[k], ns->origin, ns->clock);
    }
    if (keep == ns->hn)
        return true;
    /* The block fits what is kept, as a loaded set's would. */
    uint64_t *nk;
    uint32_t *ng;
    uint32_t cap = seen__head_cap_for(keep);
    if (!seen__head_alloc(&nk, &ng, cap))
        return false;
    uint32_t w = 0;
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ns->hsegs[h], &near_seg);
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
void seen__next_expire(const seen_set *s, next_state *ns)
{
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (!seg_alive(s, &ns->segs[i], ns->origin, ns->clock))
            ns->segs[i].shadow = 0;
}

uint64_t seen__next_live_items(const seen_set *s, const next_state *ns)
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
int32_t seen__open_segment(const seen_set *s, next_state *ns, int64_t slice)
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
void seen__apply_capacity(const seen_set *s, next_state *ns)
{
    uint64_t cap = s->policy.capacity;
    if (cap == 0)
        return;
    uint64_t total = seen__next_live_items(s, ns);
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

/* Segments that hold no entries leave the table: dead ones once purged,
 * count steps emptied by re-adds, steps coalesced into a neighbour.  (An
 * entry-less segment is named by no run and no head entry.) */
void seen__next_drop_unreferenced(const seen_set *s, next_state *ns)
{
    (void)s;
    uint32_t w = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (ns->segs[i].phys > 0)
            ns->segs[w++] = ns->segs[i];
    ns->nsegs = w;
}

void seen__update_hwm(const seen_set *s, next_state *ns)
{
    uint64_t live = seen__next_live_items(s, ns);
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

/* Swap the next state in.  Cannot fail. */
void seen__commit_next(seen_set *s, next_state *ns)
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
    if (!seen__head_alloc(&nk, &ng, ns->hcap)) {
        seen__free(map);
        return SEEN_ERR_NOMEM;
    }
    uint32_t near_seg = 0; /* the scans follow the table */
    for (uint32_t h = 0; h < ns->hn; h++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ns->hsegs[h], &near_seg);
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

seen_err seen__finish_write(seen_set *s, next_state *ns, bool force)
{
    seen__apply_capacity(s, ns);
    seen__next_expire(s, ns);
    seen__update_hwm(s, ns);
    if (s->policy.capacity && ns->nsegs > SEEN_SEGMENTS_SOFT(s->policy.slices)) {
        seen_err err = next_coalesce(s, ns);
        if (err != SEEN_OK)
            return err;
        force |= ns->seg_map != NULL;
    }
    /* Dead segments are rare events (a slice ending, a capacity step);
     * only then do the head and runs need scanning for them. */
    bool dead = next_any_dead(s, ns);
    if (dead && !seen__next_head_prune(s, ns))
        return SEEN_ERR_NOMEM;
    if (force || seen__need_flush(s, ns, dead)) {
        seen_err err = seen__flush(s, ns);
        if (err != SEEN_OK)
            return err;
    }
    seen__next_drop_unreferenced(s, ns);
    if (ns->nsegs > SEEN_MAX_SEGMENTS)
        return SEEN_ERR_LIMIT;
    seen__commit_next(s, ns);
    return SEEN_OK;
}
