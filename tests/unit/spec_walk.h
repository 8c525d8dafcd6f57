/*
 * spec_walk.h — an independent reading of docs/FORMAT.md for the tests: the
 * offset, length, encoding and value of every field of a serialized set
 * (versions 1 to 6), and forgeries that re-encode one field and make the
 * checksum right again, so a test can break one rule at a time and ask the
 * loader for its error.  It reads only sets the loader accepts; anything
 * else fails the calling test.
 */
#ifndef SEEN_SPEC_WALK_H
#define SEEN_SPEC_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "seen.h"

#define SPEC_MAX_FIELDS 4096

typedef enum { FIXED, UV, ZZ, SH } encoding;

typedef struct field {
    const char *name;
    int at;       /* which segment, head entry or run; -1 in the header */
    size_t off;   /* where its bytes start */
    size_t len;   /* how many */
    encoding enc; /* FIXED: `len` bytes little-endian */
    uint64_t v;   /* its value (ZZ: the signed value's bits; SH: the divisor) */
} field;

typedef struct walk {
    const uint8_t *b;
    size_t len, pos;
    unsigned version;
    field f[SPEC_MAX_FIELDS];
    size_t n;
} walk;

/* Every field of b[0..len) (the first SPEC_MAX_FIELDS kept); the walk
 * must end exactly at the checksum, or the calling test fails. */
void spec_walk(walk *w, const uint8_t *b, size_t len);
/* Field `name` of entry `at` (-1: the header); fails the test if none.
 * Names follow FORMAT.md; times stored relative to another are named by
 * their difference ("clock-origin"), a segment's id field "id" holds
 * id << 1 | dropped in versions 2 to 6, and a run's payload parts are
 * "index", "tags" and "codes". */
const field *spec_find(const walk *w, const char *name, int at);
/* The varint of v in out (at most 10 bytes); its length. */
size_t spec_put_varint(uint8_t *out, uint64_t v);
/* A copy of the walked bytes with f's bytes replaced by `with`, the
 * checksum made right; *out_len its length (free() it). */
uint8_t *spec_splice(const walk *w, const field *f, const uint8_t *with, size_t wlen,
                     size_t *out_len);
/* The same with f holding v in its own encoding. */
uint8_t *spec_forged_field(const walk *w, const field *f, uint64_t v, size_t *out_len);
/* The same for field `name` of entry `at`. */
uint8_t *spec_forged(const walk *w, const char *name, int at, uint64_t v, size_t *out_len);

/* The loader's answer to b[0..len); a set it accepts must also pass its
 * own invariant check (or the calling test fails). */
seen_err spec_load(const uint8_t *b, size_t len);

#endif
