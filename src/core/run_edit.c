/*
 * run_edit.c — changing a run in place: values removed (deletes) or added
 * (the head's flush into the run that takes it) by re-coding only the
 * buckets they fall in and copying every other bucket's bits, keeping the
 * run's base, span, Golomb parameter and bucket count (run.c describes the
 * layout; the bucket counts and ends an edit may leave are format version
 * 3's, docs/FORMAT.md).
 */
#include "run_write.h"

/* Runs of up to this many buckets are edited with their frame on the stack
 * (a page's flush edits the recent run: one allocation fewer, each of which
 * under Redis also asks the allocator its size twice). */
#define EDIT_SMALL_BUCKETS 32u

/* Where an edited run's buckets start: the old run's (offs, firsts), the
 * new one's (noffs, nfirsts), nbuckets + 1 each, and a run cut by rank's
 * lows, which edits keep.  One block: `small`, or allocated. */
typedef struct edit_frame {
    uint64_t *offs, *firsts, *noffs, *nfirsts, *lows;
    uint64_t small[5 * (EDIT_SMALL_BUCKETS + 1)];
} edit_frame;

static void edit_frame_free(edit_frame *f)
{
    if (f->offs != f->small)
        seen__free(f->offs);
}

static bool edit_frame_init(edit_frame *f, const seen__run *r)
{
    size_t nb = (size_t)r->nbuckets + 1;
    f->offs = nb <= EDIT_SMALL_BUCKETS + 1
                  ? f->small
                  : seen__malloc(nb * (run_ranked(r) ? 5 : 4) * sizeof *f->offs);
    if (f->offs == NULL)
        return false;
    f->firsts = f->offs + nb;
    f->noffs = f->firsts + nb;
    f->nfirsts = f->noffs + nb;
    f->lows = run_ranked(r) ? f->nfirsts + nb : NULL;
    uint64_t sl_bits = slope(r->code_bits, r->nbuckets), sl_items = slope(r->n, r->nbuckets);
    for (uint32_t j = 0; j <= r->nbuckets; j++) {
        bucket_start(r, sl_bits, sl_items, j, &f->offs[j], &f->firsts[j]);
        if (f->lows && j < r->nbuckets)
            f->lows[j] = bucket_lo(r, j);
    }
    return true;
}

/* Copy bucket j, and the buckets after it in the same block that no value
 * of vals[vi..k) falls in, as they are, their first items moved by
 * `shift`.  Returns the last bucket copied, or UINT32_MAX out of memory. */
static uint32_t copy_untouched(acc_writer *w, const seen__run *r, const edit_frame *f, uint32_t j,
                               const uint64_t *vals, size_t vi, size_t k, int64_t shift)
{
    uint32_t e = j + 1;
    while (e < r->nbuckets && (vi == k || vals[vi] > bucket_hi(r, e)) &&
           (r->tail == NULL || (f->offs[e] >= r->tail_bit) == (f->offs[j] >= r->tail_bit))) {
        f->nfirsts[e] = (uint64_t)((int64_t)f->firsts[e] + shift);
        f->noffs[e] = f->noffs[j] + (f->offs[e] - f->offs[j]);
        e++;
    }
    uint64_t org;
    const uint8_t *codes = bucket_codes(r, f->offs[j], &org);
    if (!seen__aw_copy(w, codes, f->offs[j] - org, f->offs[e] - f->offs[j]))
        return UINT32_MAX;
    return e - 1;
}

/*
 * Removing a few values from a large run.  Only the buckets holding them
 * are decoded and encoded again; every other bucket's codes are copied
 * bit for bit (a bucket's codes depend only on its own values, its base
 * and the Golomb parameter, which the run keeps), and the index and tags
 * are rebuilt from what is known.  A delete from a 1M-item run costs a
 * copy of its bits, not a decode and an encode of every value.
 */
/* Remove digit p from packed base-k tag words holding `digits` digits, g
 * a word: the digits after it move down one place, a word at a time (one
 * division by k and a multiplication per word), so a delete costs the
 * words after it, not a decode and encode of every tag. */
static void tags_drop_digit(uint64_t *words, uint64_t digits, uint64_t p, uint32_t k, uint32_t g,
                            const seen__divider *kdiv)
{
    uint64_t nwords = (digits + g - 1) / g, w = p / g;
    uint32_t q = (uint32_t)(p % g);
    uint64_t top = ipow(k, g - 1);
    for (; w < nwords; w++) {
        uint64_t cur = words[w], kept;
        if (q > 0) {
            uint64_t kq = ipow(k, q);
            uint64_t low = cur % kq;
            kept = low + (cur / kq / k) * kq;
            q = 0;
        } else {
            kept = seen__div(kdiv, cur);
        }
        uint64_t next = w + 1 < nwords ? words[w + 1] : 0;
        words[w] = kept + (next - seen__div(kdiv, next) * k) * top;
    }
}

/* Whether every tag that loses values (removed[t] > 0) names more values
 * than it loses, so that no segment is left named without values.  One
 * pass over the tags, stopping as soon as every such tag has shown one
 * value more than it loses (a segment a delete might empty usually has
 * many more).  Asked once per tag that loses values, a delete of 1,000
 * values from a run of 50,000 scanned the tags up to 1,000 times (60 ms). */
static seen_err tags_keep_a_value(const seen__run *r, const uint64_t *removed, bool *keep)
{
    *keep = true;
    uint64_t *want = seen__malloc((size_t)r->nsegs * sizeof *want);
    if (want == NULL)
        return SEEN_ERR_NOMEM;
    uint32_t pending = 0;
    for (uint32_t t = 0; t < r->nsegs; t++) {
        want[t] = removed[t] ? removed[t] + 1 : 0;
        pending += removed[t] != 0;
    }
    seen__divider kd;
    seen__divider_init(&kd, r->nsegs);
    const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
    uint32_t per = run_tags_per_word(r);
    for (uint64_t i = 0; i < r->n && pending; i += per) {
        uint64_t word = seen__load64le(tw + (i / per) * 8);
        uint64_t end_i = i + per < r->n ? i + per : r->n;
        for (uint64_t d = i; d < end_i; d++) {
            uint64_t q = seen__div(&kd, word);
            uint64_t t = word - q * r->nsegs;
            if (want[t] && --want[t] == 0)
                pending--;
            word = q;
        }
    }
    seen__free(want);
    *keep = pending == 0;
    return SEEN_OK;
}

/* Deletes of up to this many values from one run move tag digits word by
 * word; more re-pack every tag. */
#define TAG_SHIFT_MAX 16u

seen_err seen__tags_without(const seen__run *r, const uint64_t *gone_at, size_t gone,
                            uint64_t *removed_per_tag, tag_source *ts, bool *keeps, void **own_a,
                            void **own_b)
{
    *keeps = false;
    *own_a = *own_b = NULL;
    *ts = (tag_source){NULL, NULL, r->n, NULL};
    if (r->nsegs <= 1) {
        removed_per_tag[0] += gone;
        *keeps = true;
        return SEEN_OK;
    }
    /* Each segment must keep a value here: count per tag what goes, then
     * look for one more of each such tag. */
    const uint32_t per = run_tags_per_word(r);
    for (size_t i = 0; i < gone; i++)
        removed_per_tag[tag_at(r, per, gone_at[i])]++;
    bool keep;
    if (tags_keep_a_value(r, removed_per_tag, &keep) != SEEN_OK)
        goto nomem;
    if (!keep) {
        memset(removed_per_tag, 0, r->nsegs * sizeof *removed_per_tag);
        return SEEN_OK; /* a segment would be named without values */
    }
    if (gone <= TAG_SHIFT_MAX) {
        uint64_t nw = tag_words(r);
        const uint8_t *tw = r->mem + (size_t)r->nsegs * sizeof(uint32_t) + seen__run_index_bytes(r);
        uint64_t *words = seen__malloc((nw ? nw : 1) * sizeof *words);
        if (words == NULL)
            goto nomem;
        for (uint64_t wi = 0; wi < nw; wi++)
            words[wi] = seen__load64le(tw + wi * 8);
        seen__divider kd;
        seen__divider_init(&kd, r->nsegs);
        for (size_t i = gone; i-- > 0;)
            tags_drop_digit(words, r->n - (gone - 1 - i), gone_at[i], r->nsegs, per, &kd);
        ts->packed = words;
        *own_a = words;
    } else {
        uint16_t *tags = seen__malloc((size_t)r->n * sizeof *tags);
        uint8_t *skip = seen__calloc(r->n, 1);
        *own_a = tags;
        *own_b = skip;
        if (tags == NULL || skip == NULL)
            goto nomem;
        seen__run_decode_tags(r, tags);
        for (size_t i = 0; i < gone; i++)
            skip[gone_at[i]] = 1;
        ts->tags = tags;
        ts->skip = skip;
    }
    *keeps = true;
    return SEEN_OK;
nomem:
    seen__free(*own_a);
    seen__free(*own_b);
    *own_a = *own_b = NULL;
    memset(removed_per_tag, 0, r->nsegs * sizeof *removed_per_tag);
    return SEEN_ERR_NOMEM;
}

seen_err seen__run_without(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                           unsigned shape, uint64_t *removed_per_tag, size_t *removed,
                           bool *applies)
{
    *removed = 0;
    *applies = false;
    if (seen__run_is_ef(r))
        return seen__ef_without(out, r, vals, k, shape, removed_per_tag, removed, applies);
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    seen__divider mdiv;
    seen__divider_init(&mdiv, r->golomb_m);
    edit_frame f;
    f.offs = NULL;
    /* The run positions of the values that go, in increasing order. */
    uint64_t *gone_at = seen__malloc((k ? k : 1) * sizeof *gone_at);
    uint8_t *drop = NULL;              /* per value of the bucket being edited */
    void *own_a = NULL, *own_b = NULL; /* what the new run's tags are read from */
    uint64_t *bucket = NULL;
    acc_writer w = {0};
    seen_err err = SEEN_ERR_NOMEM;
    /* A ranked run keeps its buckets' lowest values: a bucket that loses
     * its first value codes the next one from the same low. */
    if (gone_at == NULL || !edit_frame_init(&f, r))
        goto done;
    uint64_t *offs = f.offs, *firsts = f.firsts, *noffs = f.noffs, *nfirsts = f.nfirsts,
             *lows = f.lows;
    size_t bucket_cap = 0;
    if (!seen__aw_reserve(&w, r->code_bits + 64))
        goto done;
    size_t vi = 0, gone = 0;
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        noffs[j] = aw_bits(&w);
        nfirsts[j] = firsts[j] - gone;
        /* The bucket's values lie in [lo, top]. */
        uint64_t lo = bucket_lo(r, j), top = bucket_hi(r, j);
        while (vi < k && vals[vi] < lo)
            vi++;
        uint64_t org;
        const uint8_t *codes = bucket_codes(r, offs[j], &org);
        size_t cnt = (size_t)(firsts[j + 1] - firsts[j]);
        if (vi == k || vals[vi] > top || cnt == 0) {
            /* Untouched: its bits as they are. */
            if ((j = copy_untouched(&w, r, &f, j, vals, vi, k, -(int64_t)gone)) == UINT32_MAX)
                goto done;
            continue;
        }
        if (cnt > bucket_cap) {
            seen__free(bucket);
            seen__free(drop);
            bucket_cap = cnt;
            bucket = seen__malloc(cnt * sizeof *bucket);
            drop = seen__malloc(cnt);
            if (bucket == NULL || drop == NULL)
                goto done;
        }
        memset(drop, 0, cnt);
        uint64_t v = lo;
        reader rd;
        reader_init(&rd, codes, offs[j] - org);
        unsigned used;
        for (size_t i = 0; i < cnt; i++) {
            v = (i == 0 ? lo : v + 1) + reader_golomb(&rd, &g, &used);
            bucket[i] = v;
        }
        /* Values to drop, then the rest coded again from the bucket base. */
        size_t bi = 0;
        while (vi < k && vals[vi] <= top) {
            while (bi < cnt && bucket[bi] < vals[vi])
                bi++;
            if (bi < cnt && bucket[bi] == vals[vi] && !drop[bi]) {
                drop[bi] = 1;
                gone_at[gone++] = firsts[j] + bi;
            }
            vi++;
        }
        uint64_t prev = 0;
        bool first = true;
        for (size_t i = 0; i < cnt; i++) {
            if (drop[i])
                continue;
            uint64_t gap = first ? bucket[i] - lo : bucket[i] - prev - 1;
            uint64_t q = g.m > 1 ? seen__div(&mdiv, gap) : gap;
            if (w.byte + (q + 130) / 8 + 16 > w.cap && !seen__aw_reserve(&w, q + 130))
                goto done;
            golomb_put(&w, &g, &mdiv, gap);
            prev = bucket[i];
            first = false;
        }
    }
    noffs[r->nbuckets] = aw_bits(&w);
    nfirsts[r->nbuckets] = r->n - gone;
    err = SEEN_OK;
    if (gone == 0) {
        *applies = true;
        goto done;
    }
    uint64_t n2 = r->n - gone;
    if (n2 == 0 || !nbuckets_allowed(n2, r->nbuckets))
        goto done; /* the run has lost half its values: rebuild */
    tag_source ts;
    bool keeps;
    err = seen__tags_without(r, gone_at, gone, removed_per_tag, &ts, &keeps, &own_a, &own_b);
    if (err != SEEN_OK || !keeps)
        goto done; /* out of memory, or rebuild: a segment would lose its values */
    seen__run nr = *r;
    nr.mem = NULL;
    nr.tail = NULL;
    nr.tail_bit = 0;
    nr.n = (uint32_t)n2;
    nr.code_bits = noffs[r->nbuckets];
    nr.loose_ends |= gone_at[0] == 0 || gone_at[gone - 1] + 1 == r->n;
    err = seen__run_assemble(&nr, noffs, nfirsts, lows, seen__run_segs(r), NULL,
                             r->nsegs > 1 ? &ts : NULL, w.buf);
    if (err != SEEN_OK)
        goto fail;
    *out = nr;
    *removed = gone;
    *applies = true;
    goto done;
fail:
    err = SEEN_ERR_NOMEM;
    memset(removed_per_tag, 0, r->nsegs * sizeof *removed_per_tag);
done:
    edit_frame_free(&f);
    seen__free(gone_at);
    seen__free(drop);
    seen__free(own_a);
    seen__free(own_b);
    seen__free(bucket);
    seen__free(w.buf);
    return err;
}

/*
 * Adding values to a run of one segment: the counterpart of
 * seen__run_without for the flush of the head into the run that takes it.
 * Only the buckets the new values fall in are decoded and coded again; the
 * rest is copied, and base, span, Golomb parameter and bucket count stay.
 * A 20-item page into a run of thousands then re-codes a few buckets, not
 * the run.  Values past the top of a run of several buckets are appended
 * after its codes (append_past_top), which moves the top and adds buckets.
 */
/* Unary parts longer than this make seen__run_with give way to a rebuild. */
#define SEEN_WITH_MAX_QUOTIENT 1024u
/* Golomb runs from this many values take values past their top by
 * appending them.  A smaller one is rebuilt: that costs little, and keeps
 * its buckets cut by value, whose index carries no lows (300 catalogue ids
 * in a session: 26.1 bits each rebuilt, 26.5 appended). */
#define APPEND_MIN_RUN 1024u

/* Where the buckets of a run with values appended start, and their lows:
 * the edit frame's, grown by the buckets the appended values open. */
typedef struct append_frame {
    uint64_t *noffs, *nfirsts, *lows;
} append_frame;

/*
 * Append vals[0..k) (increasing, all above r's top, which is r's last
 * value) after the codes w holds, which are r's buckets as f->noffs and
 * f->nfirsts place them.  The last bucket takes values up to the run's
 * average per bucket, then new buckets start, each at its first value;
 * a value whose gap would be too wide to code starts one too.  The run
 * comes out cut by rank (its buckets' lows in the index): cut by value,
 * each bucket's place depends on the span, which grows.  *nb receives the
 * bucket count (the caller checks it is one the run may have), and
 * a->noffs, nfirsts and lows describe all of them.
 */
static seen_err append_past_top(const seen__run *r, const edit_frame *f, acc_writer *w,
                                const seen__golomb *g, const seen__divider *mdiv,
                                const uint64_t *vals, size_t k, append_frame *a, uint32_t *nb)
{
    *nb = 0;
    const size_t cap = (size_t)r->nbuckets + k + 1;
    a->noffs = seen__malloc(3 * cap * sizeof *a->noffs);
    if (a->noffs == NULL)
        return SEEN_ERR_NOMEM;
    a->nfirsts = a->noffs + cap;
    a->lows = a->nfirsts + cap;
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        a->noffs[j] = f->noffs[j];
        a->nfirsts[j] = f->nfirsts[j];
        a->lows[j] = f->lows ? f->lows[j] : bucket_lo(r, j);
    }
    uint32_t j = r->nbuckets - 1;
    uint64_t count = f->nfirsts[r->nbuckets]; /* values written so far */
    const uint64_t per = (r->n + r->nbuckets - 1) / r->nbuckets;
    uint64_t in_bucket = count - a->nfirsts[j];
    uint64_t prev = r->base + r->span;
    for (size_t i = 0; i < k; i++) {
        uint64_t gap = vals[i] - prev - 1;
        uint64_t q = g->m > 1 ? seen__div(mdiv, gap) : gap;
        if (in_bucket >= per || q > SEEN_WITH_MAX_QUOTIENT) {
            j++;
            a->noffs[j] = aw_bits(w);
            a->nfirsts[j] = count;
            a->lows[j] = vals[i];
            in_bucket = 0;
            gap = 0;
        }
        if (w->byte + (q + 130) / 8 + 16 > w->cap && !seen__aw_reserve(w, q + 130))
            return SEEN_ERR_NOMEM;
        golomb_put(w, g, mdiv, gap);
        prev = vals[i];
        count++;
        in_bucket++;
    }
    a->noffs[j + 1] = aw_bits(w);
    a->nfirsts[j + 1] = count;
    *nb = j + 1;
    return SEEN_OK;
}

seen_err seen__run_with(seen__run *out, const seen__run *r, const uint64_t *vals, size_t k,
                        unsigned shape, uint32_t tag, size_t *held, bool *applies)
{
    *applies = false;
    *held = 0;
    if (seen__run_is_ef(r))
        return seen__ef_with(out, r, vals, k, shape, tag, held, applies);
    /* Buckets grow as values come in: a large run (fine buckets, probed by
     * every add) is rebuilt once they average twice its canonical ones. */
    uint64_t n2 = (uint64_t)r->n + k;
    if (tag >= r->nsegs || k == 0)
        return SEEN_OK;
    /* A run of one bucket cut by value (a small set's) takes values past
     * its ends too: its base and span move, and no other bucket's base
     * depends on them. */
    uint64_t base = r->base, top = r->base + r->span;
    if (r->nbuckets == 1 && !run_ranked(r)) {
        base = vals[0] < base ? vals[0] : base;
        top = vals[k - 1] > top ? vals[k - 1] : top;
    }
    /* A run of several buckets takes values past its top by appending
     * them (append_past_top): integer ids handed out in sequence arrive
     * there, and a rebuild for each flush cost the whole run. */
    size_t past = 0;
    while (r->nbuckets > 1 && r->n >= APPEND_MIN_RUN && past < k && vals[k - 1 - past] > top)
        past++;
    const uint64_t new_top = past ? vals[k - 1] : top;
    /* Values past the top that are not appended, and a run grown to the
     * size Elias-Fano codes (rebuilt as one), make a rebuild. */
    if (vals[0] < base || vals[k - 1] > new_top || n2 > UINT32_MAX ||
        seen__ef_wanted(r->c, n2, new_top - base, shape))
        return SEEN_OK;
    if (past == 0 && (!nbuckets_allowed(n2, r->nbuckets) ||
                      (n2 >= SEEN_LARGE_RUN && n2 > (uint64_t)r->nbuckets * SEEN_BUCKET_ITEMS)))
        return SEEN_OK;
    /* Appending needs the run's last value, which is its top unless a
     * delete took it; and a Golomb parameter that suits the new values. */
    if (past && (r->loose_ends || !seen__golomb_keeps(r->golomb_m, past, new_top - top)))
        return SEEN_OK;
    /* The Golomb parameter stays while it codes the new size within
     * ~0.03 bit of the best; past that a rebuild's codes are shorter. */
    if (!run_ranked(r) && !seen__golomb_keeps(r->golomb_m, n2, new_top - base))
        return SEEN_OK;
    seen__golomb g;
    seen__golomb_init(&g, r->golomb_m);
    seen__divider mdiv;
    seen__divider_init(&mdiv, r->golomb_m);
    edit_frame f;
    f.offs = NULL;
    append_frame app = {NULL, NULL, NULL};
    acc_writer w = {0};
    seen_err err = SEEN_ERR_NOMEM;
    /* With tags: how many of the run's values precede each new one. */
    uint64_t ins_small[64];
    uint64_t *ins = r->nsegs <= 1 ? NULL : k <= 64 ? ins_small : seen__malloc(k * sizeof *ins);
    uint16_t *tags = NULL;
    size_t nins = 0;
    if ((r->nsegs > 1 && ins == NULL) || !edit_frame_init(&f, r))
        goto done;
    uint64_t *offs = f.offs, *firsts = f.firsts, *noffs = f.noffs, *nfirsts = f.nfirsts,
             *lows = f.lows;
    /* New codes take about as many bits each as the old ones do. */
    uint64_t per = r->code_bits / r->n + 1;
    if (!seen__aw_reserve(&w, r->code_bits + (uint64_t)k * (per + g.b + 2) + 64))
        goto done;
    size_t vi = 0, added = 0;
    for (uint32_t j = 0; j < r->nbuckets; j++) {
        noffs[j] = aw_bits(&w);
        nfirsts[j] = firsts[j] + added;
        /* Old codes decode from lo; new ones are written from lo_out (the
         * new base, in a run of one bucket that widens). */
        uint64_t lo = bucket_lo(r, j), hi = r->nbuckets == 1 ? top : bucket_hi(r, j);
        uint64_t lo_out = r->nbuckets == 1 ? base : lo;
        uint64_t org;
        const uint8_t *codes = bucket_codes(r, offs[j], &org);
        if (vi == k || vals[vi] > hi) {
            if ((j = copy_untouched(&w, r, &f, j, vals, vi, k, (int64_t)added)) == UINT32_MAX)
                goto done;
            continue;
        }
        /* A code depends only on the gap to the value before it, so the
         * codes before the first new value, and those after the old value
         * that follows the last new one, are copied as they are; only the
         * codes in between are decoded and written again. */
        size_t cnt = (size_t)(firsts[j + 1] - firsts[j]);
        uint64_t pos = offs[j] - org, end = offs[j + 1] - org, from = pos;
        uint64_t prev = 0, next = 0;
        bool have_prev = false, have_next = false;
        size_t i = 0;
        /* Decoded in a register (run_layout.h): a code's length is on the
         * critical path, a load per code would be too. */
        reader rd;
        reader_init(&rd, codes, pos);
        unsigned used = 0;
        while (i < cnt) {
            uint64_t v = (i == 0 ? lo : prev + 1) + reader_golomb(&rd, &g, &used);
            i++;
            if (v >= vals[vi]) {
                next = v;
                have_next = true;
                break;
            }
            prev = v;
            have_prev = true;
        }
        pos = reader_pos(&rd, codes);
        /* With a next value, its code starts `used` bits back. */
        uint64_t kept = have_next ? pos - used : pos;
        uint64_t olds_before = firsts[j] + (have_next ? i - 1 : i);
        if (kept > from && !seen__aw_copy(&w, codes, from, kept - from))
            goto done;
        /* The new values merged with the old ones they fall between; a
         * value the run holds already is counted, not added. */
        for (;;) {
            uint64_t x;
            bool more = vi < k && vals[vi] <= hi;
            if (have_next && (!more || next <= vals[vi])) {
                if (more && next == vals[vi]) {
                    /* With tags the value would move to the newest of its
                     * two segments, which a rebuild accounts for. */
                    if (ins) {
                        err = SEEN_OK;
                        goto done;
                    }
                    (*held)++;
                    vi++;
                }
                x = next;
                olds_before++;
                /* The old value after it, while new ones remain; the rest
                 * of the bucket is copied from pos. */
                have_next = more && i < cnt;
                if (have_next) {
                    next = next + 1 + reader_golomb(&rd, &g, &used);
                    i++;
                }
            } else if (more) {
                x = vals[vi++];
                added++;
                if (ins)
                    ins[nins++] = olds_before;
            } else {
                break;
            }
            uint64_t gap = have_prev ? x - prev - 1 : x - lo_out;
            uint64_t q = g.m > 1 ? seen__div(&mdiv, gap) : gap;
            if (q > SEEN_WITH_MAX_QUOTIENT) {
                /* A gap far wider than the parameter was chosen for (a
                 * value between two clusters of a run cut by rank): a
                 * rebuild cuts a bucket there instead. */
                err = SEEN_OK;
                goto done;
            }
            if (w.byte + (q + 130) / 8 + 16 > w.cap && !seen__aw_reserve(&w, q + 130))
                goto done;
            golomb_put(&w, &g, &mdiv, gap);
            prev = x;
            have_prev = true;
        }
        pos = reader_pos(&rd, codes);
        if (end > pos && !seen__aw_copy(&w, codes, pos, end - pos))
            goto done;
    }
    noffs[r->nbuckets] = aw_bits(&w);
    nfirsts[r->nbuckets] = r->n + added;
    seen__run nr = *r;
    if (past) {
        uint32_t nb = 0;
        err = append_past_top(r, &f, &w, &g, &mdiv, vals + (k - past), past, &app, &nb);
        if (err != SEEN_OK)
            goto done;
        for (size_t i = 0; ins && i < past; i++)
            ins[nins++] = r->n; /* after every old value */
        added += past;
        noffs = app.noffs, nfirsts = app.nfirsts, lows = app.lows;
        nr.nbuckets = nb;
        nr.bucket_w = 0;
        top = new_top;
        err = SEEN_ERR_NOMEM;
    }
    nr.base = base;
    nr.span = top - base;
    nr.mem = NULL;
    nr.tail = NULL;
    nr.tail_bit = 0;
    nr.n = (uint32_t)(r->n + added);
    nr.code_bits = noffs[nr.nbuckets];
    if (nr.code_bits > SEEN_MAX_CODE_BITS || !nbuckets_allowed(nr.n, nr.nbuckets) ||
        (nr.n >= SEEN_LARGE_RUN && nr.n > (uint64_t)nr.nbuckets * SEEN_BUCKET_ITEMS)) {
        err = SEEN_OK;
        goto done;
    }
    if (ins) {
        /* The old tags, then the new values' tag inserted where they went
         * in (old values first: ins counts them). */
        tags = seen__malloc(((size_t)r->n + nr.n) * sizeof *tags);
        if (tags == NULL)
            goto done;
        uint16_t *old = tags + nr.n;
        seen__run_decode_tags(r, old);
        size_t o = 0, a = 0;
        for (size_t q = 0; q < nr.n; q++)
            tags[q] = (a < nins && ins[a] == o) ? (a++, (uint16_t)tag) : old[o++];
    }
    err = seen__run_assemble(&nr, noffs, nfirsts, lows, seen__run_segs(r), tags, NULL, w.buf);
    if (err != SEEN_OK || nr.mem == NULL)
        goto done;
    *out = nr;
    *applies = true;
done:
    edit_frame_free(&f);
    seen__free(app.noffs);
    seen__free(w.buf);
    if (ins != ins_small)
        seen__free(ins);
    seen__free(tags);
    return err;
}
