/*
 * plan.c — how fingerprints are planned and runs kept few: the planned
 * size and divisor, the flush that merges the head and tidies the runs,
 * settling an import, and when a write must flush.  Past 1,000 lines on
 * purpose: the plan, the exact phase of raw ids and the flush decide from
 * the same private readings of a write (the live slices, the rates over
 * the window and over its newest slices, the runs' budget), which a split
 * would have to export.
 */
#include "write.h"

#include <math.h>
#include <stdlib.h>

/*
 * The plan.  A compact set plans its fingerprints for T items (its recent
 * high-water mark, a projection while it is younger than a window, or
 * while it grows for weeks the peak its newest data's rate projects): the
 * plan divisor is error * 2^64 * (1 - reserve) / T, kept with 24
 * significant bits so it halves exactly.  New runs use plan / 2^j, the
 * coarsest that fits the budget left, and runs merge only at equal
 * divisors; a run squeezed finer while the set outgrew its plan is
 * coarsened back by powers of two once expiry frees budget.  The plan moves
 * only when T moves by more than SEEN_PLAN_HYSTERESIS, so runs keep
 * sharing a divisor; runs from an older plan simply age out.
 */
/* Runs at which a set re-plans by whole factors only, and past which a
 * flush merges the runs that share a divisor (internal.h). */
static uint32_t runs_whole_replan(const seen_set *s)
{
    return s->policy.slices >= SEEN_MANY_SLICES ? SEEN_RUNS_WHOLE_REPLAN_MANY_SLICES
                                                : SEEN_RUNS_WHOLE_REPLAN;
}

static uint32_t runs_consolidate(const seen_set *s)
{
    return s->policy.slices >= SEEN_MANY_SLICES ? SEEN_RUNS_CONSOLIDATE_MANY_SLICES
                                                : SEEN_RUNS_CONSOLIDATE;
}

/* Keep 24 significant bits, so the divisor can later be halved exactly. */
static uint64_t mantissa_round(uint64_t x)
{
    unsigned bl = seen__bitlen(x);
    return bl > 24 ? x & ~((UINT64_C(1) << (bl - 24)) - 1) : x;
}

/* The oldest live slice that holds items (INT64_MAX: none). */
static int64_t oldest_live_slice(const seen_set *s, const next_state *ns)
{
    for (uint32_t i = 0; i < ns->nsegs; i++) /* age order: the first found */
        if (seg_alive(s, &ns->segs[i], ns->origin, ns->clock) && seen__seg_items(&ns->segs[i]) > 0)
            return ns->segs[i].slice;
    return INT64_MAX;
}

/*
 * Where the live data starts, as planning measures a rate (INT64_MAX: no
 * live items): the start of the oldest live slice that holds items, or
 * the origin when that is the slice just before it.  The origin is the
 * oldest time of the set's first write, so that slice holds only items
 * written later with older times: mostly pages that arrived out of order
 * (events seconds apart, delivered late), just before the origin, where
 * the slice's start would count up to a slice of history the set never
 * had.  A new key then looked a slice old, was planned for a fraction of
 * its rate and re-planned at nearly every flush as it grew, each plan a
 * divisor of its own (a 1,000-a-day key whose second page was a minute
 * older than its first: 18 runs and 26 bits per item on day 49, against 5
 * and 15.4).  An import of older history behind live writes reaches
 * further back, where slices' starts measure it; one of less than a slice
 * is planned a little finer for its first window.
 */
static int64_t oldest_live_start(const seen_set *s, const next_state *ns)
{
    int64_t k = oldest_live_slice(s, ns);
    if (k == INT64_MAX)
        return INT64_MAX;
    return k == -1 ? ns->origin : ns->origin + k * (int64_t)s->slice_ms;
}

/* Young: a windowed set whose live items span less than one slice of data
 * time, too little to tell the user's rate. */
static bool is_young(const seen_set *s, const next_state *ns)
{
    if (!s->slice_ms)
        return false;
    int64_t start = oldest_live_start(s, ns);
    return start == INT64_MAX || ns->newest - start < (int64_t)s->slice_ms;
}

/* The newest slice a live segment is in (INT64_MIN: none). */
static int64_t newest_live_slice(const seen_set *s, const next_state *ns)
{
    int64_t newest = INT64_MIN;
    for (uint32_t i = 0; i < ns->nsegs; i++)
        if (seg_alive(s, &ns->segs[i], ns->origin, ns->clock) && ns->segs[i].slice > newest)
            newest = ns->segs[i].slice;
    return newest;
}

/* Is the set bursting: past its youth, with more live items in its newest
 * slice than SEEN_BURST_RATIO times those of all its older ones?  A
 * steady set's newest slice holds about 1/S of its items, a growing one's
 * a little more; a set without a window has one slice. */
static bool is_bursting(const seen_set *s, const next_state *ns)
{
    if (!s->slice_ms || is_young(s, ns))
        return false;
    const int64_t newest = newest_live_slice(s, ns);
    uint64_t cur = 0, older = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++) {
        const seen__segment *g = &ns->segs[i];
        if (!seg_alive(s, g, ns->origin, ns->clock))
            continue;
        if (g->slice == newest)
            cur += seen__seg_items(g);
        else
            older += seen__seg_items(g);
    }
    return cur > SEEN_BURST_RATIO * older;
}

/* What the set would hold at its peak (a window and a slice of history)
 * at the rate of its newest data: the items of its newest slices over the
 * data time they span, taken back until that is at least half a slice and
 * a week (a week's swings then read as its average).  0 when they hold
 * too few items to tell (a light user's page now and then). */
static uint64_t recent_rate_target(const seen_set *s, const next_state *ns)
{
    const int64_t newest = newest_live_slice(s, ns);
    if (newest == INT64_MIN)
        return 0;
    const int64_t slice = (int64_t)s->slice_ms;
    int64_t span = slice / 2 > SEEN_GROWTH_MIN_SPAN_MS ? slice / 2 : SEEN_GROWTH_MIN_SPAN_MS;
    if (span > (int64_t)s->policy.window_ms)
        span = (int64_t)s->policy.window_ms;
    /* The oldest slice counted: the newest whose start lies span back (a
     * floor division: the time may lie before the origin). */
    const int64_t back = ns->newest - span - ns->origin;
    int64_t first = back >= 0 ? back / slice : -((-back + slice - 1) / slice);
    if (first > newest)
        first = newest;
    uint64_t items = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++) {
        const seen__segment *g = &ns->segs[i];
        if (seg_alive(s, g, ns->origin, ns->clock) && g->slice >= first)
            items += seen__seg_items(g);
    }
    const int64_t ran = ns->newest - (ns->origin + first * slice);
    if (items < SEEN_GROWTH_MIN_ITEMS || ran <= 0)
        return 0;
    double proj = (double)items * ((double)s->policy.window_ms + (double)slice) / (double)ran;
    return proj > 1e18 ? (uint64_t)1e18 : (uint64_t)proj;
}

/* Has the set grown over its last two ended slices: the newer one holding
 * SEEN_GROWTH_SIGNAL times the items of the one before?  Growth for weeks
 * shows there before the newest slice outweighs the older ones; a burst
 * after a flat history does not. */
static bool slices_grow(const seen_set *s, const next_state *ns)
{
    const int64_t newest = newest_live_slice(s, ns);
    if (newest == INT64_MIN)
        return false;
    uint64_t last = 0, before = 0;
    for (uint32_t i = 0; i < ns->nsegs; i++) {
        const seen__segment *g = &ns->segs[i];
        if (!seg_alive(s, g, ns->origin, ns->clock))
            continue;
        if (g->slice == newest - 1)
            last += seen__seg_items(g);
        else if (g->slice == newest - 2)
            before += seen__seg_items(g);
    }
    return before > 0 && last >= SEEN_GROWTH_MIN_ITEMS &&
           (double)last >= (double)before * SEEN_GROWTH_SIGNAL;
}

/* How many items the set should be planned for; never fewer than the
 * entries it stores (`entries`), so a merge of all of them at the plan's
 * divisor fits the budget whatever the counts claim.  *growing (if asked)
 * tells whether the newest data's rate set it. */
static uint64_t plan_target(const seen_set *s, const next_state *ns, uint64_t live,
                            uint64_t entries, bool *growing)
{
    if (growing)
        *growing = false;
    uint64_t t = live > ns->hwm ? live : ns->hwm;
    if (s->slice_ms) {
        /* Less than a window of history among the live slices: project
         * the observed rate over the window.  Measured on the data's own
         * times (an import arrives at one `now` with times spread over the
         * past), from the oldest live slice, so a history longer than the
         * window is planned for what the window holds. */
        int64_t start = oldest_live_start(s, ns);
        int64_t span = start == INT64_MAX ? 0 : ns->newest - start;
        /* A set holds up to window + one slice of history (its oldest
         * slice is forgotten whole), so that is what a full set spans. */
        int64_t w = (int64_t)s->policy.window_ms + (int64_t)s->slice_ms;
        if (span < w) {
            /* A young set's rate is measured over what it has seen, at
             * least a day (or a slice, if shorter): a first session's
             * burst is planned as a heavy user, and the plan coarsens as
             * the rate settles (replan). */
            int64_t floor_ms = (int64_t)s->slice_ms;
            if (is_young(s, ns) && floor_ms > SEEN_YOUNG_MIN_SPAN_MS)
                floor_ms = SEEN_YOUNG_MIN_SPAN_MS;
            int64_t base = span > floor_ms ? span : floor_ms;
            double proj = (double)live * (double)w / (double)base;
            /* Inside that floor the projection grows with every item, so
             * the plan halves at each doubling and each halving leaves a
             * run.  Over a long window the projection is far ahead
             * (112.5 days over a day: 112x), and those runs take little
             * budget; over a short one it is not (a week: 8.75x), and a
             * first day's nine halvings took half the budget, squeezing
             * the rest of the first window into fine runs.  So it looks at
             * least SEEN_YOUNG_AHEAD times ahead. */
            if (span < floor_ms && proj < (double)live * SEEN_YOUNG_AHEAD)
                proj = (double)live * SEEN_YOUNG_AHEAD;
            /* And for at least SEEN_YOUNG_MIN_TARGET (internal.h): the
             * first young run then fills its share of the budget as it
             * reaches the most items a run takes the head for. */
            if (span < floor_ms && proj < (double)SEEN_YOUNG_MIN_TARGET)
                proj = (double)SEEN_YOUNG_MIN_TARGET;
            /* Everything at one time: a bulk load, with no rate to project
             * (internal.h, SEEN_YOUNG_BULK_AHEAD). */
            if (span == 0 && live >= SEEN_YOUNG_BULK_MIN)
                proj = (double)live * SEEN_YOUNG_BULK_AHEAD;
            if (proj > (double)t)
                t = proj > 1e18 ? (uint64_t)1e18 : (uint64_t)proj;
        }
        /* Growing for weeks: the newest data's rate, not the window's
         * average, tells what the set will hold, and fingerprints stored
         * now cannot be refined when it gets there (internal.h,
         * SEEN_GROWTH_SIGNAL).  A burst after a flat history is left to
         * the burst's own sizing of runs (seen__flush); a bursting set
         * whose ended slices grew as well is growing (slices_grow). */
        if (!is_young(s, ns) && (!is_bursting(s, ns) || slices_grow(s, ns))) {
            uint64_t r = recent_rate_target(s, ns);
            if ((double)r > (double)t * SEEN_GROWTH_SIGNAL) {
                t = r;
                if (growing)
                    *growing = true;
            }
        }
    } else if (s->policy.capacity == 0) {
        /* No window, no cap: it can only grow, and fingerprints stored
         * cannot be refined, so plan well ahead (SEEN_GROWTH_AHEAD).  One
         * doubling ahead, each doubling's runs took half the budget left
         * and the next went finer, down to 64-bit keys: 20-item pages
         * stored 42 bits an item at 100,000 items, 46 at 1,000,000 (now
         * 17.5 and 17.3, and 17.4 at 4,000,000).  A set whose first plan
         * is made for many items at once (a bulk load) is planned one
         * doubling ahead still: it may never grow, and planned 8x ahead
         * it cost 2 bits an item more. */
        uint64_t ahead = ns->plan_c == 0 && live >= SEEN_GROWTH_BULK_MIN ? 2 : SEEN_GROWTH_AHEAD;
        if (live > UINT64_MAX / ahead)
            t = UINT64_MAX;
        else if (live * ahead > t)
            t = live * ahead;
    } else {
        /* A cap and no window: the set fills to its cap and stays there,
         * so plan for that from the start.  Planned for what it held (one
         * doubling after another), each run took a share of the budget
         * sized for the items so far, the next ones finer, down to exact
         * keys: 20-item pages into `CAPACITY 100000` stored 50 bits an item
         * (13 runs) until the cap turned over, and 15.3 planned for it. */
        t = UINT64_MAX;
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

/* Bits an exact code of a gap takes (a repeated key's gap of 0 counts
 * as 1). */
static double gap_bits(uint64_t gap)
{
    return (gap > 1 ? log2((double)gap) : 0.0) + SEEN_RAW_KEYS_OVERHEAD_BITS;
}

static bool sorted_u64(const uint64_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (a[i - 1] > a[i])
            return false;
    return true;
}

/* Bits the head's keys outside [lo, hi] would take coded exactly: each
 * log2 of its gap to the next key towards the range, plus
 * SEEN_RAW_KEYS_OVERHEAD_BITS.  At most SEEN_RAW_KEYS_SAMPLE of them are
 * measured (the head is normally smaller), the rest counted at their
 * average.  *outside gets how many there are. */
static double head_outside_bits(const next_state *ns, uint64_t lo, uint64_t hi, uint64_t *outside)
{
    uint64_t above[SEEN_RAW_KEYS_SAMPLE], below[SEEN_RAW_KEYS_SAMPLE];
    uint32_t na = 0, nb = 0;
    uint64_t count = 0;
    for (uint32_t h = 0; h < ns->hn; h++) {
        const uint64_t k = ns->hkeys[h];
        if (k >= lo && k <= hi)
            continue;
        count++;
        if (na + nb < SEEN_RAW_KEYS_SAMPLE) {
            if (k > hi)
                above[na++] = k;
            else
                below[nb++] = k;
        }
    }
    *outside = count;
    if (count == 0)
        return 0;
    /* Every write of a set still exact asks this: ids handed out in
     * sequence come in order, and a sort of sorted keys is a pass. */
    if (!sorted_u64(above, na))
        qsort(above, na, sizeof *above, seen__cmp_u64);
    if (!sorted_u64(below, nb))
        qsort(below, nb, sizeof *below, seen__cmp_u64);
    /* Above the range from hi up, below it from lo down; a key the head
     * holds twice opens no gap the second time. */
    double sum = 0;
    for (uint32_t i = 0; i < na; i++)
        sum += gap_bits(above[i] - (i ? above[i - 1] : hi));
    for (uint32_t i = nb; i-- > 0;)
        sum += gap_bits((i + 1 < nb ? below[i + 1] : lo) - below[i]);
    return sum * (double)count / (double)(na + nb);
}

/*
 * Raw integer ids.  An IDS INT set keeps its ids as they are, exactly,
 * while that costs no more than fingerprints would at the size it is
 * planned for.  Ids drawn from a catalogue cluster: 300 of a 400,000-id
 * range cost log2(400,000 / 300) + ~2.5 = ~13 bits each, where
 * fingerprints cost log2(1 / error) + ~2 = ~12 at 0.001 in a set's steady
 * state and more while its plan is young.  Exact ids answer with no false
 * positives; SEEN_RAW_KEYS_PREMIUM_BITS is what the set pays for that.
 * A young set's fingerprints cost more than nominal (its plan is a guess
 * and each halving of it leaves a run: 300 ids in a 10-minute session took
 * ~18 bits each), so until its data spans a slice it stays exact while ids
 * cost up to SEEN_RAW_KEYS_YOUNG_PREMIUM_BITS more; the decision to mix is
 * never undone, so it waits for a rate it can trust.
 * Random 64-bit ids cost ~55 bits each exactly, so such a set leaves its
 * exact phase at its exact limit, as a hashed one does.
 *
 * The estimate of exact bits per id at the planned size: from the runs'
 * own codes and index once they hold SEEN_RAW_KEYS_MEASURED values (the
 * gaps narrow by log2(planned / held) as more ids of the same range come;
 * a head key outside their range counts the gap it opens), and from the
 * span of the keys before that.
 */
static bool raw_keys_stay_exact(const seen_set *s, const next_state *ns, const seen__run *runs,
                                uint32_t nruns, uint64_t live)
{
    uint64_t held = 0, lo = UINT64_MAX, hi = 0, bits = 0;
    for (uint32_t i = 0; i < nruns; i++) {
        const seen__run *r = &runs[i];
        held += r->n;
        bits += r->code_bits + 8 * (uint64_t)seen__run_index_bytes(r);
        lo = r->base < lo ? r->base : lo;
        hi = r->base + r->span > hi ? r->base + r->span : hi;
    }
    const uint64_t entries = held + ns->hn;
    if (entries > SEEN_RAW_KEYS_MAX)
        return false;
    if (entries == 0)
        return true;
    uint64_t all_lo = lo, all_hi = hi;
    for (uint32_t h = 0; h < ns->hn; h++) {
        all_lo = ns->hkeys[h] < all_lo ? ns->hkeys[h] : all_lo;
        all_hi = ns->hkeys[h] > all_hi ? ns->hkeys[h] : all_hi;
    }
    const double n = (double)plan_target(s, ns, live, entries, NULL);
    double exact;
    if (held >= SEEN_RAW_KEYS_MEASURED) {
        /* Head keys inside the runs' range cost what the runs' ids cost;
         * those outside, the gaps they open (head_outside_bits): new ids
         * just past the range cost little, wide ones a whole key. */
        uint64_t outside = 0;
        double outside_bits = head_outside_bits(ns, lo, hi, &outside);
        double inside = (double)bits / (double)held - log2(n / (double)held);
        exact = (inside * (double)(entries - outside) + outside_bits) / (double)entries;
    } else {
        exact = log2(((double)(all_hi - all_lo) + 1.0) / n) + SEEN_RAW_KEYS_OVERHEAD_BITS;
    }
    double fingerprint = log2(1.0 / s->policy.error) + SEEN_FINGERPRINT_OVERHEAD_BITS;
    return exact <= fingerprint + (is_young(s, ns) ? SEEN_RAW_KEYS_YOUNG_PREMIUM_BITS
                                                   : SEEN_RAW_KEYS_PREMIUM_BITS);
}

bool seen__next_exact_phase(const seen_set *s, const next_state *ns, const seen__run *runs,
                            uint32_t nruns, uint64_t live)
{
    if (s->budget == 0)
        return true;
    if (ns->plan_c != 0)
        return false;
    return live <= s->policy.exact_limit ||
           (ns->raw_keys && raw_keys_stay_exact(s, ns, runs, nruns, live));
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

static unsigned __int128 usage_except(const runlist *rl, uint32_t a, uint32_t b);

/* May a young set keep n items at divisor c, coarser than its plan, in
 * the place of runs [a, b) of rl?  Its plan halves as a first day's volume
 * grows, and runs of each halving could never merge: a young set keeps
 * them in one run at the coarser divisor (fewer bits, fewer runs) while
 * that run takes at most 1/SEEN_YOUNG_SHARE of the budget and all runs
 * together at most 1/SEEN_YOUNG_SHARE_ALL.  The items it holds later pay
 * for that share, at most log2(1 / (1 - 1/SEEN_YOUNG_SHARE_ALL)) bits each,
 * until the young items are forgotten. */
static bool young_share_ok(const seen_set *s, const next_state *ns, const runlist *rl, uint32_t a,
                           uint32_t b, uint64_t n, uint64_t c)
{
    unsigned __int128 mass = (unsigned __int128)n * c, budget = budget_of(s);
    return is_young(s, ns) && mass <= budget / SEEN_YOUNG_SHARE &&
           usage_except(rl, a, b) + mass <= budget / SEEN_YOUNG_SHARE_ALL;
}

/* Values under divisor `small` convert exactly to divisor `big`. */
static bool divides(uint64_t small, uint64_t big)
{
    return small != 0 && big >= small && big % small == 0;
}

/* The coarsest divisor among the runs that is the plan times a power of
 * two (the plan itself if none is): what a whole-multiple re-plan keeps
 * them convertible to. */
static uint64_t coarsest_lattice_run(const runlist *rl, uint64_t plan)
{
    uint64_t g = plan;
    for (uint32_t i = 0; i < rl->n; i++) {
        uint64_t c = rl->r[i].c;
        if (c > g && divides(plan, c) && ((c / plan) & (c / plan - 1)) == 0)
            g = c;
    }
    return g;
}

/*
 * The first plan fits the target exactly (a loaded history is planned for
 * what it holds).  While the set is young its plan only gets finer, by
 * halving, when the target outgrows it: young runs then differ by powers
 * of two and fold together.  Later, re-plan as soon as the target outgrows
 * what the plan holds, or once it falls well below it; a re-plan leaves
 * half the hysteresis as headroom so that peaks recurring at about the
 * same height do not re-plan again.
 */
static void replan(const seen_set *s, next_state *ns, const runlist *rl, uint64_t target,
                   bool young)
{
    if (ns->plan_c == 0) {
        ns->plan_c = mantissa_round(ideal_divisor(s, target));
        return;
    }
    double holds = ldexp(s->policy.error, 64) * (1.0 - SEEN_BUDGET_RESERVE) / (double)ns->plan_c;
    uint64_t stored = ns->hn;
    for (uint32_t i = 0; i < rl->n; i++)
        stored += rl->r[i].n;
    stored -= rl->dead_held;
    /* A small set's target moving a little (a light user's pages, days
     * apart): whole factors.  Far past the plan (a burst): as a larger
     * set re-plans, for what the burst projects. */
    const bool small = stored < SEEN_SMALL_WHOLE_REPLAN &&
                       (double)target <= holds * SEEN_SMALL_WHOLE_REPLAN_REACH &&
                       !is_bursting(s, ns);
    if (young || rl->n >= runs_whole_replan(s) || small) {
        /* The plan moves by whole factors only, so young runs (or those of
         * a set with many runs already, or of a small one) convert to it
         * exactly and fold together: finer by halving when the target
         * outgrows it, coarser by a whole multiple once it holds more than
         * twice the target. */
        while ((double)target > holds && ns->plan_c > 1 && !(ns->plan_c & 1)) {
            ns->plan_c >>= 1;
            holds *= 2;
        }
        uint64_t k = ideal_divisor(s, target) / ns->plan_c;
        if (k >= 2 && ns->plan_c <= UINT64_MAX / k)
            ns->plan_c *= k;
        return;
    }
    if ((double)target > holds || (double)target * (1.0 + SEEN_PLAN_HYSTERESIS) < holds) {
        double with_room = (double)target * (1.0 + SEEN_PLAN_HYSTERESIS / 2);
        uint64_t c = mantissa_round(ideal_divisor(
            s, with_room > 1e18 ? UINT64_C(1000000000000000000) : (uint64_t)with_room));
        /* Far coarser than the old plan (a young set's provisional plan
         * firming up): a whole multiple of it, a little finer than ideal,
         * so the old plan's runs coarsen into the new one exactly and
         * merge with its runs — of the coarsest young run too, if that
         * costs as little. */
        uint64_t k = c / ns->plan_c;
        uint64_t g = coarsest_lattice_run(rl, ns->plan_c) / ns->plan_c;
        if (k >= SEEN_REPLAN_MULTIPLE_MIN * g)
            c = ns->plan_c * (k - k % g);
        else if (k >= SEEN_REPLAN_MULTIPLE_MIN)
            c = ns->plan_c * k;
        ns->plan_c = c;
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

/* Does run r name a segment that is dead in ns? */
bool seen__run_has_dead(const seen_set *s, const next_state *ns, const seen__run *r)
{
    const uint32_t *ids = seen__run_segs(r);
    uint32_t near_seg = 0; /* the scans follow the table */
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ids[t], &near_seg);
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
    uint32_t near_seg = 0; /* the scans follow the table */
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ids[t], &near_seg);
        if (k >= 0 && ns->seg_map[k] != k)
            return true;
    }
    return false;
}

/* Whether run r holds entries of a slice that has ended (*ended) and of
 * the current one or a later one (*live), by the write's clock. */
static void run_slice_ages(const seen_set *s, const next_state *ns, const seen__run *r, bool *ended,
                           bool *live)
{
    *ended = *live = false;
    int64_t cur = slice_of(s, ns->origin, ns->clock);
    const uint32_t *ids = seen__run_segs(r);
    uint32_t near_seg = 0; /* the scans follow the table */
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ids[t], &near_seg);
        if (k >= 0 && ns->segs[k].slice < cur)
            *ended = true;
        else if (k >= 0)
            *live = true;
    }
}

/* Has run r's time passed: does it hold only slices older than the
 * current one?  Folding such a recent run into main at that moment keeps
 * the recent run aligned with the newest slice, so the split between the
 * two runs costs no more than the slice tags it replaces. */
static bool run_is_sealed(const seen_set *s, const next_state *ns, const seen__run *r)
{
    bool ended, live;
    run_slice_ages(s, ns, r, &ended, &live);
    return s->slice_ms && !live;
}

/* Does run r hold several segments, one of a slice that has ended (a run of
 * ended slices only is sealed)? */
static bool run_spans_ended_slice(const seen_set *s, const next_state *ns, const seen__run *r)
{
    bool ended, live;
    run_slice_ages(s, ns, r, &ended, &live);
    return s->slice_ms && r->nsegs >= 2 && ended;
}

void seen__runlist_release_created(runlist *rl)
{
    for (uint32_t i = 0; i < rl->n; i++)
        if (rl->created[i])
            seen__run_release(&rl->r[i]);
}

/* Replace runs [a, b) of rl with `nr` (absent when empty). */
void seen__runlist_replace(runlist *rl, uint32_t a, uint32_t b, const seen__run *nr, bool empty)
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

/* What re-encoding run r at divisor c (>= its own) adds to the budget's
 * use: n * c less what it uses now, which is nothing for exact keys (the
 * budget does not count them), not n * 1. */
static unsigned __int128 mass_added(const seen__run *r, uint64_t c)
{
    return (unsigned __int128)r->n * c - run_mass(r);
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
    if (!divides(lo, c))
        return SEEN_OK;
    /* The dead entries main may still hold (seen__flush) go in this
     * merge. */
    uint64_t n = (uint64_t)p->n + d->n + (head != HEAD_NONE ? ns->hn : 0) - rl->dead_held;
    if (lo != c && ns->plan_c && (double)c > (double)ns->plan_c * (1.0 + SEEN_PLAN_HYSTERESIS) &&
        !young_share_ok(s, ns, rl, a, b + 1, n, c))
        return SEEN_OK; /* would coarsen items past the plan */
    if (c > 1 && usage_except(rl, a, b + 1) + (unsigned __int128)n * c > budget_of(s))
        return SEEN_OK;
    const seen__run *in[2] = {p, d};
    seen__run nr;
    bool empty;
    seen_err err = seen__merge_build(s, ns, in, 2, head, c, NULL, 0, &nr, &empty);
    if (err != SEEN_OK)
        return err;
    seen__runlist_replace(rl, a, b + 1, &nr, empty);
    rl->dead_held = 0;
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
    int64_t oldest = oldest_live_slice(s, ns);
    if (oldest == INT64_MAX)
        return live;
    int64_t seen_for = ns->clock - oldest_live_start(s, ns);
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
    seen_err err = seen__merge_build(s, ns, in, k, HEAD_NONE, c, NULL, 0, &nr, &empty);
    if (err != SEEN_OK)
        return err;
    for (uint32_t i = rl->n; i-- > 0;)
        if (rl->r[i].c == 1)
            seen__runlist_replace(rl, i, i + 1, NULL, true);
    if (!empty)
        seen__runlist_replace(rl, first, first, &nr, false);
    return SEEN_OK;
}

/*
 * Merge every group of runs sharing a divisor into one, in the place of
 * the group's first; the last run (the one taking the head) stays as it
 * is.  Exact: equal divisors, and a merge stores no more than its inputs,
 * so the budget holds.  Runs are not ordered by anything a reader relies
 * on but the last.
 */
static seen_err merge_equal_divisors(const seen_set *s, next_state *ns, runlist *rl)
{
    for (uint32_t i = 0; i + 2 < rl->n; i++) {
        const seen__run *in[RUNLIST_MAX];
        uint32_t at[RUNLIST_MAX];
        size_t k = 0;
        for (uint32_t j = i; j + 1 < rl->n; j++) {
            if (rl->r[j].c == rl->r[i].c) {
                at[k] = j;
                in[k++] = &rl->r[j];
            }
        }
        if (k < 2)
            continue;
        seen__run nr;
        bool empty;
        seen_err err = seen__merge_build(s, ns, in, k, HEAD_NONE, rl->r[i].c, NULL, 0, &nr, &empty);
        if (err != SEEN_OK)
            return err;
        /* The later members go (last first, so the positions hold), then
         * the merged run takes the first one's place. */
        for (size_t m = k; m-- > 1;)
            seen__runlist_replace(rl, at[m], at[m] + 1, NULL, true);
        seen__runlist_replace(rl, i, i + 1, &nr, empty);
        if (empty)
            i--;
    }
    return SEEN_OK;
}

/* Rebuild run *i alone at its divisor: what merge_build drops (dead
 * segments' items) goes, and an emptied run leaves the list (*i steps
 * back, for the caller's loop). */
static seen_err rebuild_alone(const seen_set *s, next_state *ns, runlist *rl, uint32_t *i)
{
    const seen__run *in[1] = {&rl->r[*i]};
    seen__run nr;
    bool empty;
    seen_err err = seen__merge_build(s, ns, in, 1, HEAD_NONE, rl->r[*i].c, NULL, 0, &nr, &empty);
    if (err != SEEN_OK)
        return err;
    seen__runlist_replace(rl, *i, *i + 1, &nr, empty);
    if (empty)
        (*i)--;
    return SEEN_OK;
}

/*
 * In a large set, recode as Elias-Fano the compact Golomb runs that a
 * merge would now code so (SEEN_EF_LARGE_SET): runs written while the set
 * was small, which no merge may meet again before they age out.  Each is
 * recoded once.  Same divisor and values: the budget does not move.
 */
static seen_err recode_for_large_set(const seen_set *s, next_state *ns, runlist *rl)
{
    /* As merge_build measures the set. */
    if (!(seen__set_run_shape(s) & SEEN_RUN_IN_LARGE_SET))
        return SEEN_OK;
    for (uint32_t i = 0; i < rl->n; i++) {
        const seen__run *r = &rl->r[i];
        if (r->c == 1 || seen__run_is_ef(r) ||
            !seen__ef_wanted(r->c, r->n, r->span, SEEN_RUN_IN_LARGE_SET))
            continue;
        seen_err err = rebuild_alone(s, ns, rl, &i);
        if (err != SEEN_OK)
            return err;
    }
    return SEEN_OK;
}

/*
 * Whether the purge of main (the run before the last) may wait for the
 * fold of the last run into it (seen__flush): a compact set, writing live,
 * whose last run is sealed and the one before it holds dead segments that
 * the table still counts.  The fold may still not happen (purge_waiting
 * then purges), but every count the plan reads in between leaves the
 * waiting dead entries out, as after a purge.
 */
static bool main_purge_waits(const seen_set *s, const next_state *ns, const runlist *rl)
{
    if (rl->n < 2 || ns->plan_c == 0 || ns->backfill || ns->seg_map != NULL || ns->mixing)
        return false;
    const seen__run *main_run = &rl->r[rl->n - 2], *last = &rl->r[rl->n - 1];
    if (seen__run_has_dead(s, ns, last) || !run_is_sealed(s, ns, last) ||
        !seen__run_has_dead(s, ns, main_run))
        return false;
    const uint32_t *ids = seen__run_segs(main_run);
    uint32_t near_seg = 0;
    for (uint32_t t = 0; t < main_run->nsegs; t++)
        if (seg_find_near(ns->segs, ns->nsegs, ids[t], &near_seg) < 0)
            return false;
    return true;
}

/* Entries of dead segments in run r: after the head is pruned and every
 * other run purged, what the table counts of them is all in r. */
static uint64_t dead_entries_of(const seen_set *s, const next_state *ns, const seen__run *r)
{
    const uint32_t *ids = seen__run_segs(r);
    uint32_t near_seg = 0;
    uint64_t dead = 0;
    for (uint32_t t = 0; t < r->nsegs; t++) {
        int32_t k = seg_find_near(ns->segs, ns->nsegs, ids[t], &near_seg);
        if (k >= 0 && !seg_alive(s, &ns->segs[k], ns->origin, ns->clock))
            dead += ns->segs[k].phys;
    }
    return dead < r->n ? dead : r->n;
}

/* The purge that waited for a fold that did not happen. */
static seen_err purge_waiting(const seen_set *s, next_state *ns, runlist *rl)
{
    rl->dead_held = 0;
    for (uint32_t i = 0; i < rl->n; i++) {
        if (!seen__run_has_dead(s, ns, &rl->r[i]))
            continue;
        seen_err err = rebuild_alone(s, ns, rl, &i);
        if (err != SEEN_OK)
            return err;
    }
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
seen_err seen__flush(const seen_set *s, next_state *ns)
{
    /* On the stack (~7.5 KB; only entries below n are read): a page of
     * adds flushes once, and an allocation through Redis's allocator also
     * asks its size twice. */
    runlist rl_store;
    runlist *rl = &rl_store;
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
    rl->dead_held = 0;
    seen_err err = SEEN_OK;
    unsigned __int128 budget = budget_of(s);
    uint64_t live = seen__next_live_items(s, ns);
    seen__run nr;
    bool empty;

    /* As a slice ends, main holds the slice that has just died and the
     * recent run the one that has just ended: main is purged here and then
     * folded with the recent run below, two rewrites of the set where the
     * fold alone drops the dead items too.  Main waits for the fold, its
     * dead entries left out of the counts until then. */
    const bool main_waits = main_purge_waits(s, ns, rl);
    for (uint32_t i = 0; i < rl->n; i++) {
        if (i + 2 == rl->n && main_waits)
            continue;
        if (!seen__run_has_dead(s, ns, &rl->r[i]) && !run_has_mapped(ns, &rl->r[i]))
            continue;
        if ((err = rebuild_alone(s, ns, rl, &i)) != SEEN_OK)
            goto fail;
    }
    if (main_waits)
        rl->dead_held = dead_entries_of(s, ns, &rl->r[rl->n - 2]);

    uint64_t entries = ns->hn;
    for (uint32_t i = 0; i < rl->n; i++)
        entries += rl->r[i].n;
    entries -= rl->dead_held;
    /* An import (a write of past history) keeps what it brings exact: its
     * items' count is not known until it ends, and fingerprints planned
     * for part of it could never be refined.  The first live write or
     * expiry after it settles the set for what it then holds. */
    bool importing = ns->backfill && entries <= SEEN_IMPORT_EXACT_MAX;
    bool exact =
        seen__next_exact_phase(s, ns, rl->r, rl->n, live) || (importing && ns->plan_c == 0);
    bool growing;
    uint64_t target = plan_target(s, ns, live, entries, &growing);

    if (!exact && ns->plan_c == 0) {
        /* Leaving the exact phase: every run holds exact keys (c = 1), so
         * all of them can be re-encoded under the planned divisor. */
        replan(s, ns, rl, target, is_young(s, ns));
        const seen__run *in[RUNLIST_MAX];
        for (uint32_t i = 0; i < rl->n; i++)
            in[i] = &rl->r[i];
        /* Raw integer ids are mixed on the way: from here on the set's
         * keys are fingerprints of mixed ids, as every later write's. */
        ns->mixing = ns->raw_keys != 0;
        err = seen__merge_build(s, ns, in, rl->n, HEAD_ALL, ns->plan_c, NULL, 0, &nr, &empty);
        ns->mixing = false;
        if (err != SEEN_OK)
            goto fail;
        ns->raw_keys = 0;
        seen__runlist_replace(rl, 0, rl->n, &nr, empty);
        ns->hn = 0;
    } else if (importing && ns->hn) {
        /* Into the compact set, an import adds exact runs; the fold below
         * merges them with each other as they grow. */
        err = seen__merge_build(s, ns, NULL, 0, HEAD_ALL, 1, NULL, 0, &nr, &empty);
        if (err != SEEN_OK)
            goto fail;
        seen__runlist_replace(rl, rl->n, rl->n, &nr, empty);
        ns->hn = 0;
    } else if (!importing) {
        if (!exact)
            /* A growing set's plan moves by whole factors, as a young
             * one's: its runs of each step then fold together once the
             * plan coarsens back. */
            replan(s, ns, rl, target, is_young(s, ns) || growing);
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
        if (rl->dead_held && (err = purge_waiting(s, ns, rl)) != SEEN_OK)
            goto fail;
        /* A sealed recent run that could not fold (its divisor is from an
         * older plan, or was squeezed) takes no new slice: it ages out. */
        bool merged = ns->hn == 0;
        const bool bursting = !exact && is_bursting(s, ns);
        uint64_t stored = 0;
        for (uint32_t i = 0; i < rl->n; i++)
            stored += rl->r[i].n;
        /* Only a small recent run takes the head: a large last run (main,
         * or an older plan's run) would make every merge rewrite it.  A last
         * run of the plan's divisor that the head's items would join within
         * SEEN_SINGLE_RUN_MAX takes them too: a run of them would be folded
         * into it at once (below), which codes them twice and rewrites it
         * whole on every flush, where taking them splices them in. */
        bool folds_at_once = rl->n >= 1 && rl->r[rl->n - 1].c == plan &&
                             (uint64_t)rl->r[rl->n - 1].n + ns->hn <= SEEN_SINGLE_RUN_MAX;
        /* A larger last run holding ended slices beside the current one
         * (an import's slices, settled into one run) takes no head either:
         * every merge into it would write all its tags again (10,000 items:
         * ~200,000 instructions a flush, every ten adds).  The head starts
         * a run of its own, as a live key's new slice does, and the split
         * costs no bits: it is the slice information the tags held.  A run
         * of several count steps of the current slice still takes it: a run
         * of its own there would be a split the tags do not pay for
         * (capacity 100,000, 4 slices: +0.2-0.4 bit per item). */
        bool takes_head = rl->n >= 1 && !run_spans_ended_slice(s, ns, &rl->r[rl->n - 1]);
        if (!merged && rl->n >= 1 && !(sealed && rest == HEAD_ALL) &&
            (folds_at_once ||
             (takes_head && rl->n >= 2 && (uint64_t)rl->r[rl->n - 1].n * 2 <= stored))) {
            /* Into the recent run, if the budget allows and its divisor is
             * not coarser than the plan.  A recent run coarser than the plan
             * (a set outgrowing an old plan fast: a light user turned heavy)
             * takes items only while the budget still holds the items the
             * plan expects at the plan's divisor; otherwise it would spend
             * their share a run at a time, each next run finer, down to exact
             * keys (30 a day for 40 days then 3,000 a day: 29.6 bits per item
             * at 40,000 items, the last 14,000 exact; now 17.6). */
            uint32_t last = rl->n - 1;
            seen__run *d = &rl->r[last];
            unsigned __int128 after =
                usage_except(rl, last, last + 1) + (unsigned __int128)(d->n + ns->hn) * d->c;
            uint64_t still = target > live + ns->hn ? target - live - ns->hn : 0;
            bool fits = d->c == 1 ||
                        (after <= budget && (exact || d->c <= plan ||
                                             after + (unsigned __int128)still * plan <= budget));
            bool suits = exact || (double)d->c <= (double)plan * (1.0 + SEEN_PLAN_HYSTERESIS) ||
                         young_share_ok(s, ns, rl, last, last + 1, d->n + ns->hn, d->c);
            if (fits && suits) {
                const seen__run *in[1] = {d};
                err = seen__merge_build(s, ns, in, 1, rest, d->c, NULL, 0, &nr, &empty);
                if (err != SEEN_OK)
                    goto fail;
                seen__runlist_replace(rl, last, last + 1, &nr, empty);
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
                /* Short of budget (a burst far past the plan): size the run
                 * for the set to double, not for the few items expected,
                 * or each flush would take most of what is left and the
                 * next start finer still, down to exact keys.  Sized so,
                 * runs double and lose ~2 bits per doubling.  In a burst
                 * they are sized for the set to grow SEEN_BURST_HEDGE
                 * times over (internal.h). */
                if (c < plan && expect < live)
                    c = fitting_divisor(plan, room, bursting ? live * SEEN_BURST_HEDGE : live);
                if (c > 1 && (unsigned __int128)ns->hn * c > room)
                    c = 1;
            }
            if (rl->n >= RUNLIST_MAX - 2) {
                err = SEEN_ERR_LIMIT;
                goto fail;
            }
            err = seen__merge_build(s, ns, NULL, 0, rest, c, NULL, 0, &nr, &empty);
            if (err != SEEN_OK)
                goto fail;
            seen__runlist_replace(rl, rl->n, rl->n, &nr, empty);
        }
        ns->hn = 0;

        /* Runs squeezed finer than the plan while the set outgrew it:
         * coarsen them back, doubling while the result stays within the
         * plan's band and the budget (freed by expiry) allows.  Only runs
         * no longer receiving items, and not in a burst: there the budget
         * left is what the burst's next runs are sized from. */
        double band = (double)plan * (1.0 + SEEN_PLAN_HYSTERESIS);
        for (uint32_t i = 0; !exact && !bursting && i + 1 < rl->n; i++) {
            seen__run *r = &rl->r[i];
            unsigned __int128 used = usage_except(rl, 0, 0);
            unsigned __int128 room = budget > used ? budget - used : 0;
            uint64_t c = r->c;
            if (plan > c && divides(c, plan) && mass_added(r, plan) <= room)
                c = plan; /* straight to the plan: then it merges with its runs */
            while (c <= UINT64_MAX / 2 && (double)(c * 2) <= band && mass_added(r, c * 2) <= room)
                c *= 2;
            if (c == r->c)
                continue;
            const seen__run *in[1] = {r};
            err = seen__merge_build(s, ns, in, 1, HEAD_NONE, c, NULL, 0, &nr, &empty);
            if (err != SEEN_OK)
                goto fail;
            seen__runlist_replace(rl, i, i + 1, &nr, empty);
        }
        if (!exact && (err = settle_exact_runs(s, ns, rl)) != SEEN_OK)
            goto fail;
    }

    /* Fold a recent run that has grown as large as main (so rewrites stay
     * amortized O(1) per item when items arrive in random time order), and
     * keep small sets in one run.  Runs of unequal divisors stay apart. */
    while (rl->n >= 2) {
        seen__run *p = &rl->r[rl->n - 2], *d = &rl->r[rl->n - 1];
        const uint64_t ratio = rl->n <= 4 ? SEEN_DELTA_RATIO : SEEN_MANY_RUNS_RATIO;
        if ((uint64_t)d->n * ratio < p->n && rl->n <= SEEN_MANY_RUNS_MAX &&
            (uint64_t)p->n + d->n > SEEN_SINGLE_RUN_MAX)
            break;
        bool done;
        if ((err = fold_last(s, ns, rl, HEAD_NONE, &done)) != SEEN_OK)
            goto fail;
        if (!done)
            break;
    }

    if (rl->n > runs_consolidate(s) && (err = merge_equal_divisors(s, ns, rl)) != SEEN_OK)
        goto fail;
    if ((err = recode_for_large_set(s, ns, rl)) != SEEN_OK)
        goto fail;

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
    return SEEN_OK;
fail:
    seen__runlist_release_created(rl);
    ns->runs = NULL;
    ns->nruns = 0;
    return err;
}

/* Does the set hold exact keys that a flush would now compact: it is past
 * its exact phase but has no plan yet, or it has exact runs beside its
 * compact ones and budget to spare for them (an import has ended)? */
static bool unsettled(const seen_set *s, const next_state *ns)
{
    if (s->budget == 0 || (s->nruns == 0 && ns->hn == 0))
        return false;
    if (ns->plan_c == 0)
        return !seen__next_exact_phase(s, ns, s->runs, s->nruns, seen__next_live_items(s, ns));
    unsigned __int128 used = 0;
    uint64_t exact = 0;
    for (uint32_t i = 0; i < s->nruns; i++) {
        used += run_mass(&s->runs[i]);
        exact += s->runs[i].c == 1 ? s->runs[i].n : 0;
    }
    unsigned __int128 budget = budget_of(s);
    return exact > 0 && used < budget && fitting_divisor(ns->plan_c, budget - used, exact) > 1;
}

int seen_holds_forgotten(const seen_set *s, int64_t now)
{
    if (s == NULL || check_time(now) != SEEN_OK)
        return 0;
    for (uint32_t i = 0; i < s->nsegs; i++)
        if (s->segs[i].phys > 0 && !seg_alive(s, &s->segs[i], s->origin, now))
            return 1;
    return 0;
}

int64_t seen_idle_work_at(const seen_set *s)
{
    if (s == NULL)
        return INT64_MAX;
    /* Compactable now, or a segment forgotten by the capacity rule: at once.
     * Otherwise when the first segment holding entries leaves the window
     * (an expiry is also what can end an exact phase, compacting it). */
    if (seen_compactable(s, s->clock))
        return INT64_MIN;
    int64_t at = INT64_MAX;
    for (uint32_t i = 0; i < s->nsegs; i++) {
        if (s->segs[i].phys == 0)
            continue;
        if (s->segs[i].dropped)
            return INT64_MIN;
        int64_t f = slice_forget_at(s, s->origin, s->segs[i].slice);
        if (f < at)
            at = f;
    }
    return at;
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
    ns.raw_keys = s->raw_keys;
    ns.segs = s->segs;
    ns.nsegs = s->nsegs;
    ns.hkeys = s->head_keys;
    ns.hsegs = s->head_segs;
    ns.hn = s->head_n;
    return unsettled(s, &ns) ? 1 : 0;
}

/* Should this write flush the head or rewrite runs? */
bool seen__need_flush(const seen_set *s, const next_state *ns, bool dead)
{
    uint64_t stored = ns->hn;
    for (uint32_t i = 0; i < s->nruns; i++)
        stored += s->runs[i].n;
    /* A small exact set keeps its keys raw in the head (internal.h,
     * SEEN_HEAD_EXACT_MAX); its next write past that flushes, and leaves
     * the exact phase if it is over.  Raw integer ids are left to their
     * runs: clustered ids code in a few bits each. */
    const bool keeps_head = ns->plan_c == 0 && !ns->raw_keys && stored <= s->policy.exact_limit &&
                            stored <= SEEN_HEAD_EXACT_MAX;
    if (!keeps_head && ns->hn >= head_limit(stored))
        return true;
    /* A set still keyed by its raw ids weighs every head key to know
     * whether its exact phase is over: asked at every write, that was most
     * of a single add (ids handed out in sequence, 100,000 held: 0.86 us,
     * 58% of it this).  Asked as the head passes each multiple of
     * SEEN_RAW_KEYS_CHECK_EVERY entries instead, the phase ends a few
     * writes later at most; a write that adds nothing to the head (an
     * expiry, a compaction) always asks. */
    const bool weighs_head = ns->raw_keys && ns->plan_c == 0;
    const bool asks = !weighs_head || ns->hn == s->head_n ||
                      ns->hn / SEEN_RAW_KEYS_CHECK_EVERY != s->head_n / SEEN_RAW_KEYS_CHECK_EVERY;
    if (!ns->backfill && asks && unsettled(s, ns))
        return true;
    /* A segment died: purge the runs that name it. */
    for (uint32_t i = 0; dead && i < s->nruns; i++)
        if (seen__run_has_dead(s, ns, &s->runs[i]))
            return true;
    return false;
}
