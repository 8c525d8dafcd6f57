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
    seen__free(ns->spans);
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

seen_err seen__next_begin(const seen_set *s, next_state *ns, int64_t now)
{
    memset(ns, 0, sizeof *ns);
    /* The write's own time decides what is alive.  The set's clock only
     * records the latest of them: a clock from the future (a crafted or
     * skewed set) must not make a write purge or ignore what is alive now. */
    ns->clock = now;
    ns->origin = s->origin;
    ns->newest = s->newest;
    ns->has_origin = s->has_origin;
    ns->raw_keys = s->raw_keys;
    ns->plan_c = s->plan_c;
    ns->hwm = s->hwm;
    ns->hwm_clock = s->hwm_clock;
    ns->next_seg_id = s->next_seg_id;
    /* Exactly the set's segments: most writes open none, and a table with
     * room to spare would be shrunk again by the commit (a malloc, a
     * realloc and a free on every single add was ~8% of one at 100,000
     * items).  A write that opens segments grows it (next_segs_reserve).
     * With room for a capped set's spans, so the commit can put them after
     * the segments without allocating. */
    ns->segs_cap = s->nsegs;
    ns->segs = seen__malloc(seen__segs_block_bytes(s, ns->segs_cap));
    if (ns->segs == NULL)
        return SEEN_ERR_NOMEM;
    if (s->nsegs)
        memcpy(ns->segs, s->segs, s->nsegs * sizeof *s->segs);
    if (s->policy.capacity) {
        ns->spans = seen__malloc(ns->segs_cap * sizeof *ns->spans);
        if (ns->spans == NULL) {
            seen__free(ns->segs);
            ns->segs = NULL;
            return SEEN_ERR_NOMEM;
        }
        const seen__span *from = seen__set_spans(s);
        for (uint32_t i = 0; i < s->nsegs; i++)
            ns->spans[i] = from ? from[i] : (seen__span){0, s->newest};
    }
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

/* The head in a block of its own of `cap` entries (cap >= hn). */
static bool next_head_move(next_state *ns, uint32_t cap)
{
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
    return true;
}

bool seen__next_head_reserve(next_state *ns, uint32_t n)
{
    return ns->hcap >= n || next_head_move(ns, seen__head_cap_for(n));
}

bool seen__next_head_fit(next_state *ns)
{
    uint32_t cap = seen__head_cap_for(ns->hn);
    return !ns->head_fresh || ns->hcap <= cap || next_head_move(ns, cap);
}

bool seen__next_head_push(next_state *ns, uint64_t key, uint32_t seg)
{
    if (ns->hn == ns->hcap && !next_head_move(ns, seen__head_cap_for(ns->hn + 1)))
        return false;
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
    if (ns->spans) {
        /* Grown first: if the table then cannot grow, a larger span block
         * beside it does no harm. */
        seen__span *sp = seen__realloc(ns->spans, cap * sizeof *sp);
        if (sp == NULL)
            return false;
        ns->spans = sp;
    }
    seen__segment *g =
        seen__realloc(ns->segs, (size_t)cap * (sizeof *g + (ns->spans ? sizeof(seen__span) : 0)));
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

/* A new segment of `slice` with the range [t, t], placed in the table
 * after position `after` (-1: before the slice's first segment); the
 * slice's steps are numbered again in table order.  Its index, or -1 when
 * out of memory. */
static int32_t insert_segment(next_state *ns, int64_t slice, int32_t after, int64_t t)
{
    if (!next_segs_reserve(ns))
        return -1;
    uint32_t at = 0;
    if (after >= 0)
        at = (uint32_t)after + 1;
    else
        while (at < ns->nsegs && ns->segs[at].slice < slice)
            at++;
    memmove(&ns->segs[at + 1], &ns->segs[at], (ns->nsegs - at) * sizeof *ns->segs);
    ns->segs[at] = (seen__segment){.slice = slice, .id = ns->next_seg_id++};
    if (ns->spans) {
        memmove(&ns->spans[at + 1], &ns->spans[at], (ns->nsegs - at) * sizeof *ns->spans);
        ns->spans[at] = (seen__span){t, t};
    }
    ns->nsegs++;
    uint64_t seq = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (ns->segs[i].slice == slice)
            ns->segs[i].seq = seq++;
    return (int32_t)at;
}

/* A new segment after the newest of `slice` (`newest`, -1 if none). */
static int32_t append_segment(next_state *ns, int64_t slice, int32_t newest, int64_t t)
{
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
    if (ns->spans) {
        memmove(&ns->spans[at + 1], &ns->spans[at], (ns->nsegs - at) * sizeof *ns->spans);
        ns->spans[at] = (seen__span){t, t};
    }
    ns->nsegs++;
    return (int32_t)at;
}

/*
 * The segment an item of `slice` written at time t goes to.  Without a
 * capacity: the slice's newest segment.  With one, the slice's live count
 * steps keep disjoint time ranges in step order where they can, so that
 * the oldest step the capacity rule forgets holds the oldest items: the
 * item joins the step whose range holds t, or a neighbour of the gap t
 * falls in, while it has room; else a new step takes its place in that
 * order.  A full step whose range holds t cannot be split (items keep no
 * times), so the new step follows it: only there do steps overlap.  An
 * item newer than everything (every live write) goes to the newest step,
 * or a new one after it.  Returns an index in ns->segs, or -1 when out of
 * memory; the caller widens the range to t.
 */
int32_t seen__open_segment(const seen_set *s, next_state *ns, int64_t slice, int64_t t)
{
    int32_t newest = -1;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (ns->segs[i].slice == slice && (newest < 0 || ns->segs[i].seq > ns->segs[newest].seq))
            newest = (int32_t)i;
    uint64_t step = seg_step(s);
    if (step == 0 || ns->spans == NULL) {
        if (newest >= 0 && !ns->segs[newest].dropped &&
            (step == 0 || seen__seg_items(&ns->segs[newest]) < step))
            return newest;
        return append_segment(ns, slice, newest, t);
    }
    /* The slice's live steps, in table (= step) order: the last one whose
     * range starts at or before t, and the first. */
    int32_t first = -1, at = -1;
    for (uint32_t i = 0; i < ns->nsegs; i++) {
        const seen__segment *g = &ns->segs[i];
        if (g->slice != slice || g->dropped)
            continue;
        if (first < 0)
            first = (int32_t)i;
        if (ns->spans[i].lo <= t)
            at = (int32_t)i;
    }
    if (first < 0)
        return append_segment(ns, slice, newest, t);
    if (at < 0) {
        /* Older than every live step. */
        if (seen__seg_items(&ns->segs[first]) < step)
            return first;
        return insert_segment(ns, slice, first - 1, t);
    }
    if (seen__seg_items(&ns->segs[at]) < step)
        return at;
    /* The live step after `at`, if any. */
    int32_t next = -1;
    for (uint32_t i = (uint32_t)at + 1; i < ns->nsegs && ns->segs[i].slice == slice; i++)
        if (!ns->segs[i].dropped) {
            next = (int32_t)i;
            break;
        }
    if (next < 0)
        return append_segment(ns, slice, newest, t);
    if (t > ns->spans[at].hi && seen__seg_items(&ns->segs[next]) < step)
        return next;
    return insert_segment(ns, slice, at, t);
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
        if (ns->segs[i].phys > 0) {
            if (ns->spans)
                ns->spans[w] = ns->spans[i];
            ns->segs[w++] = ns->segs[i];
        }
    ns->nsegs = w;
}

/*
 * The planning size: the entries the live segments store, which are the
 * live items and, while an item added again still has its older copy
 * stored, that copy too.  A feed that shows items again about a window
 * later (a game played again, an article re-shown) re-adds them while the
 * older copies are held; a fold drops those copies at the end of each
 * slice, and until then the budget pays for both.  Planned for the items
 * alone, the plan moved twice a slice (finer as the copies grew to a
 * slice's worth, coarser once the fold dropped them), and each move left
 * runs of a divisor the others are no whole factor of, which could not
 * fold: 100,000 items re-added each window took 12 runs and 254 KB where
 * fresh ones take 3 runs and 227 KB.
 */
static uint64_t planning_size(const seen_set *s, const next_state *ns)
{
    uint64_t held = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (seg_alive(s, &ns->segs[i], ns->origin, ns->clock))
            held += ns->segs[i].phys;
    return held < SEEN_MAX_COUNT ? held : SEEN_MAX_COUNT;
}

void seen__update_hwm(const seen_set *s, next_state *ns)
{
    uint64_t held = planning_size(s, ns);
    int64_t horizon = (int64_t)(s->policy.window_ms + s->slice_ms);
    if (s->slice_ms && ns->clock - ns->hwm_clock > horizon) {
        ns->hwm = held;
        ns->hwm_clock = ns->clock;
    }
    /* A peak within the plan's band of the mark renews it: steady-state
     * peaks recur at about the same height and must keep the plan. */
    if ((double)held >= (double)ns->hwm * (1.0 - SEEN_PLAN_HYSTERESIS / 2)) {
        if (held > ns->hwm)
            ns->hwm = held;
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
         * keeps the larger block), with a capped set's spans after it. */
        if (ns->spans)
            memcpy(ns->segs + ns->nsegs, ns->spans, ns->nsegs * sizeof *ns->spans);
        seen__free(ns->spans);
        ns->spans = NULL;
        seen__segment *g = ns->segs_cap > ns->nsegs
                               ? seen__realloc(ns->segs, seen__segs_block_bytes(s, ns->nsegs))
                               : NULL;
        s->segs = g ? g : ns->segs;
    } else {
        seen__free(ns->segs);
        seen__free(ns->spans);
        ns->spans = NULL;
        s->segs = NULL;
    }
    s->nsegs = ns->nsegs;
    if (ns->clock > s->clock)
        s->clock = ns->clock;
    s->origin = ns->origin;
    s->newest = ns->newest;
    s->has_origin = ns->has_origin;
    s->raw_keys = ns->raw_keys;
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
            if (ns->spans) {
                seen__span *a = &ns->spans[acc];
                if (ns->spans[i].lo < a->lo)
                    a->lo = ns->spans[i].lo;
                if (ns->spans[i].hi > a->hi)
                    a->hi = ns->spans[i].hi;
            }
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
