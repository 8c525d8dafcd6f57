/*
 * testutil.c — the shared test helpers (see testutil.h).  The model is
 * deliberately naive: a hash table of items with the times of their
 * additions, and the guarantees of include/seen.h written out literally.
 */
#include "testutil.h"

#include "internal.h" /* seen__alloc_class */

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t rng_next(rng *r)
{
    /* splitmix64 */
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t rng_below(rng *r, uint64_t n)
{
    return n ? rng_next(r) % n : 0;
}

uint64_t test_seed(const char *test, uint64_t fallback)
{
    const char *e = getenv("SEEN_TEST_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 0) : fallback;
    fprintf(stderr, "[seed] %s: SEEN_TEST_SEED=%llu\n", test, (unsigned long long)seed);
    return seed;
}

void fix_checksum(uint8_t *buf, size_t len)
{
    if (len < 8)
        return;
    uint64_t sum = XXH3_64bits(buf, len - 8);
    for (int i = 0; i < 8; i++)
        buf[len - 8 + i] = (uint8_t)(sum >> (8 * i));
}

void make_str(str_item *it, uint64_t id)
{
    /* Mix the id so neighbouring ids give unrelated strings. */
    uint64_t x = id * UINT64_C(0x9e3779b97f4a7c15) + 0x1234;
    snprintf(it->buf, sizeof it->buf, "%016llx%08llx", (unsigned long long)x,
             (unsigned long long)(id & 0xffffffff));
    it->s.ptr = it->buf;
    it->s.len = 24;
}

/* ---------------------------------------------------------------- alloc */

alloc_stats g_alloc = {-1, 0, 0, 0};

static bool may_allocate(void)
{
    g_alloc.calls++;
    if (g_alloc.fail_after >= 0 && g_alloc.calls > g_alloc.fail_after) {
        g_alloc.failures++;
        return false;
    }
    return true;
}

static void *t_malloc(size_t n)
{
    if (!may_allocate())
        return NULL;
    void *p = malloc(n);
    if (p)
        g_alloc.live++;
    return p;
}

static void *t_realloc(void *p, size_t n)
{
    if (!may_allocate())
        return NULL;
    void *q = realloc(p, n);
    if (q && !p)
        g_alloc.live++;
    return q;
}

static void t_free(void *p)
{
    if (p) {
        g_alloc.live--;
        free(p);
    }
}

static size_t t_usable(void *p)
{
    return malloc_usable_size(p);
}

void alloc_install(void)
{
    /* Usable sizes reported, so the runs' two-block layout is made (and its
     * allocations failed) here too. */
    static const seen_allocator a = {t_malloc, t_realloc, t_free, t_usable};
    seen_set_allocator(&a);
}

/* Size-class accounting: each block remembers its request in a header, and
 * reports the size jemalloc would have handed out, as under Redis. */
#define CLASS_HEADER 16u

static void *c_malloc(size_t n)
{
    uint8_t *p = malloc(n + CLASS_HEADER);
    if (p == NULL)
        return NULL;
    memcpy(p, &n, sizeof n);
    return p + CLASS_HEADER;
}

static void *c_realloc(void *ptr, size_t n)
{
    if (ptr == NULL)
        return c_malloc(n);
    uint8_t *p = realloc((uint8_t *)ptr - CLASS_HEADER, n + CLASS_HEADER);
    if (p == NULL)
        return NULL;
    memcpy(p, &n, sizeof n);
    return p + CLASS_HEADER;
}

static void c_free(void *ptr)
{
    if (ptr)
        free((uint8_t *)ptr - CLASS_HEADER);
}

static size_t c_usable(void *ptr)
{
    size_t n;
    memcpy(&n, (uint8_t *)ptr - CLASS_HEADER, sizeof n);
    return seen__alloc_class(n);
}

void alloc_install_classes(void)
{
    static const seen_allocator a = {c_malloc, c_realloc, c_free, c_usable};
    seen_set_allocator(&a);
}

void alloc_reset(long fail_after)
{
    g_alloc.fail_after = fail_after;
    g_alloc.calls = 0;
    g_alloc.failures = 0;
}

/* ---------------------------------------------------------------- model */

static void refresh_counts(model *m, int64_t q);

static size_t slot(const model *m, uint64_t id)
{
    size_t i = (size_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 20) & (m->cap - 1);
    while (m->items[i].used && m->items[i].id != id)
        i = (i + 1) & (m->cap - 1);
    return i;
}

void model_init(model *m, const seen_policy *p)
{
    memset(m, 0, sizeof *m);
    m->p = *p;
    m->slice_ms = p->window_ms ? (int64_t)((p->window_ms + p->slices - 1) / p->slices) : 0;
    m->cap = 1024;
    m->items = calloc(m->cap, sizeof *m->items);
    m->used = calloc(m->cap, sizeof *m->used);
    m->cnt_maybe = calloc(m->cap, sizeof *m->cnt_maybe);
    m->cnt_surely = calloc(m->cap, sizeof *m->cnt_surely);
    m->cached_version = UINT64_MAX;
}

void model_free(model *m)
{
    free(m->items);
    free(m->used);
    free(m->cnt_maybe);
    free(m->cnt_surely);
    memset(m, 0, sizeof *m);
}

static void grow(model *m)
{
    model_item *old = m->items;
    m->cap *= 2;
    m->items = calloc(m->cap, sizeof *m->items);
    m->used = realloc(m->used, m->cap * sizeof *m->used);
    m->cnt_maybe = realloc(m->cnt_maybe, m->cap * sizeof *m->cnt_maybe);
    m->cnt_surely = realloc(m->cnt_surely, m->cap * sizeof *m->cnt_surely);
    for (size_t k = 0; k < m->n; k++) {
        model_item *it = &old[m->used[k]];
        size_t at = slot(m, it->id);
        m->items[at] = *it;
        m->used[k] = at;
    }
    m->version++;
    free(old);
}

model_item *model_find(const model *m, uint64_t id)
{
    size_t i = slot(m, id);
    return m->items[i].used ? &m->items[i] : NULL;
}

void model_add(model *m, uint64_t id, int64_t t, int64_t now)
{
    int64_t w = (int64_t)m->p.window_ms;
    /* Stored surely if t + W > now (its slice outlives now); maybe up to
     * t + W + L; never beyond. */
    bool sure = w == 0 || t + w > now;
    bool maybe = w == 0 || t + w + m->slice_ms > now;
    if (!maybe)
        return;
    if ((m->n + 1) * 2 > m->cap)
        grow(m);
    size_t i = slot(m, id);
    model_item *it = &m->items[i];
    if (!it->used) {
        memset(it, 0, sizeof *it);
        it->used = true;
        it->id = id;
        m->used[m->n] = i;
        it->uidx = m->n;
        it->t_sure = -1;
        it->t_maybe = -1;
        m->n++;
    }
    uint64_t arrival = ++m->seq;
    m->version++;
    if (t < m->latest)
        m->out_of_order = true;
    if (t > m->latest)
        m->latest = t;
    if (sure && t > it->t_sure)
        it->t_sure = t;
    if (t >= it->t_maybe) {
        it->t_maybe = t;
        it->seq = arrival;
        it->peak_maybe = it->peak_surely = 0;
    }
    it->seq_hi = arrival;
}

void model_observe(model *m, int64_t q)
{
    if (m->p.capacity == 0)
        return;
    for (size_t u = 0; u < m->n; u++) {
        model_item *it = &m->items[m->used[u]];
        if (it->t_maybe < 0)
            continue;
        size_t a = model_rank_newer(m, it, q), b = model_surely_newer(m, it, q);
        if (a > it->peak_maybe)
            it->peak_maybe = a;
        if (b > it->peak_surely)
            it->peak_surely = b;
    }
    m->version++; /* peaks feed the counts */
}

void model_remove(model *m, uint64_t id)
{
    model_item *it = model_find(m, id);
    if (it) {
        it->t_sure = -1;
        it->t_maybe = -1;
        m->version++;
    }
}

/*
 * The set orders items for its capacity by time slice, and within a slice
 * by count steps that keep to time order except where an item's time falls
 * inside a full step's range (it then goes to a new step after it).  The
 * model knows times, not slice boundaries, which lie within slice_ms of a
 * time.  So y may be newer than x if it is later in time, or arrived later
 * (and, with a window, is close in time); it surely is if a whole slice
 * later, or not earlier and arrived later.  Without a window every item is
 * in one slice.
 */
static bool maybe_newer(const model *m, const model_item *y, const model_item *x)
{
    if (m->slice_ms == 0)
        return y->t_maybe > x->t_maybe || y->seq_hi > x->seq;
    return y->t_maybe > x->t_maybe || (y->t_maybe > x->t_maybe - m->slice_ms && y->seq_hi > x->seq);
}

static bool surely_newer(const model *m, const model_item *y, const model_item *x)
{
    if (m->slice_ms == 0)
        return y->t_maybe >= x->t_maybe && y->seq > x->seq_hi;
    return y->t_maybe >= x->t_maybe + m->slice_ms ||
           (y->t_maybe >= x->t_maybe && y->seq > x->seq_hi);
}

/*
 * For every item: how many items may be more recent and may still be held
 * (if fewer than the capacity, it is surely kept), and how many are surely
 * more recent and surely still held (if at least capacity + one step, it is
 * surely evicted).  An item counts as surely held only if it is surely kept
 * itself, so the second count needs the first for every item.
 */
static void refresh_counts(model *m, int64_t q)
{
    if (m->cached_version == m->version && m->cached_q == q)
        return;
    int64_t w = (int64_t)m->p.window_ms;
    for (size_t a = 0; a < m->n; a++) {
        const model_item *x = &m->items[m->used[a]];
        size_t maybe = 0;
        for (size_t b = 0; b < m->n && x->t_maybe >= 0; b++) {
            const model_item *y = &m->items[m->used[b]];
            if (a == b || y->t_maybe < 0 || (w && y->t_maybe + w + m->slice_ms <= q))
                continue;
            maybe += maybe_newer(m, y, x);
        }
        m->cnt_maybe[a] = maybe;
    }
    for (size_t a = 0; a < m->n; a++) {
        const model_item *x = &m->items[m->used[a]];
        size_t surely = 0;
        for (size_t b = 0; b < m->n && x->t_maybe >= 0; b++) {
            const model_item *y = &m->items[m->used[b]];
            if (a == b || y->t_sure < 0 || y->t_sure != y->t_maybe || (w && y->t_sure + w <= q))
                continue;
            if (m->p.capacity &&
                (m->cnt_maybe[b] >= m->p.capacity || y->peak_maybe >= m->p.capacity))
                continue; /* may have been evicted: may no longer count */
            surely += surely_newer(m, y, x);
        }
        m->cnt_surely[a] = surely;
    }
    m->cached_version = m->version;
    m->cached_q = q;
}

/* Direct counts, for additions in time order: evictions then go strictly
 * oldest first, so a newer item that was evicted means `it` was too, and
 * counting it cannot mislead. */
static size_t count_newer(const model *m, const model_item *it, int64_t q, bool surely)
{
    size_t newer = 0;
    int64_t w = (int64_t)m->p.window_ms;
    for (size_t u = 0; u < m->n; u++) {
        const model_item *o = &m->items[m->used[u]];
        if (o == it || o->t_maybe < 0)
            continue;
        if (surely) {
            if (o->t_sure < 0 || o->t_sure != o->t_maybe || (w && o->t_sure + w <= q))
                continue;
            newer += surely_newer(m, o, it);
        } else {
            if (w && o->t_maybe + w + m->slice_ms <= q)
                continue;
            newer += maybe_newer(m, o, it);
        }
    }
    return newer;
}

size_t model_rank_newer(const model *m, const model_item *it, int64_t q)
{
    if (!m->out_of_order)
        return count_newer(m, it, q, false);
    refresh_counts((model *)m, q);
    return m->cnt_maybe[it->uidx];
}

size_t model_surely_newer(const model *m, const model_item *it, int64_t q)
{
    if (!m->out_of_order)
        return count_newer(m, it, q, true);
    refresh_counts((model *)m, q);
    return m->cnt_surely[it->uidx];
}

expect model_expect(const model *m, uint64_t id, int64_t q)
{
    const model_item *it = model_find(m, id);
    if (it == NULL || it->t_maybe < 0)
        return MUST_NOT_SEE;
    int64_t w = (int64_t)m->p.window_ms;
    expect e;
    if (w == 0)
        e = it->t_sure >= 0 ? MUST_SEE : EITHER;
    else if (it->t_sure >= 0 && q < it->t_sure + w)
        e = MUST_SEE;
    else if (q >= it->t_maybe + w + m->slice_ms)
        e = MUST_NOT_SEE;
    else
        e = EITHER;
    if (m->p.capacity && e != MUST_NOT_SEE) {
        uint64_t step = (m->p.capacity + m->p.slices - 1) / m->p.slices;
        size_t surely = model_surely_newer(m, it, q), maybe = model_rank_newer(m, it, q);
        if (it->peak_surely > surely)
            surely = it->peak_surely;
        if (it->peak_maybe > maybe)
            maybe = it->peak_maybe;
        if (surely >= m->p.capacity + step)
            e = MUST_NOT_SEE;
        else if (e == MUST_SEE && maybe >= m->p.capacity)
            e = EITHER;
    }
    return e;
}

bool set_sees(const seen_set *s, uint64_t id, int64_t now)
{
    uint8_t f = 0;
    str_item it;
    make_str(&it, id);
    seen_err e = seen_get_policy(s)->ids == SEEN_IDS_INT ? seen_filter_int(s, &id, 1, now, &f)
                                                         : seen_filter_str(s, &it.s, 1, now, &f);
    if (e != SEEN_OK)
        abort();
    return f;
}
