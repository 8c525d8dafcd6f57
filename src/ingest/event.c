/* event.c — turns one JSON event (or a stream entry's fields) into a key,
 * an item and an event time, through the configured key template.
 *
 * JSON is parsed by jansson: it is strict (RFC 8259, duplicate keys refused
 * with JSON_REJECT_DUPLICATES), reports where a line is broken, and is
 * already a dependency; the cost per event (a few hundred ns for these small
 * objects) is measured by bench-ingest and is far below a Redis round trip. */
#include "ingest.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- templates */
static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void tmpl_push(struct tmpl *t, bool is_field, const char *text, size_t len)
{
    t->parts = xrealloc(t->parts, (t->n + 1) * sizeof *t->parts);
    char *copy = xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    t->parts[t->n++] = (struct tmpl_part){.is_field = is_field, .text = copy, .len = len};
}

bool tmpl_compile(struct tmpl *t, const char *text, char *err, size_t errlen)
{
    *t = (struct tmpl){0};
    struct buf lit = {0};
    for (const char *p = text; *p;) {
        if (*p != '%') {
            buf_append(&lit, p++, 1);
            continue;
        }
        if (p[1] == '%') { /* %% is a literal percent sign */
            buf_append(&lit, "%", 1);
            p += 2;
            continue;
        }
        const char *name = ++p;
        while (is_name_char(*p))
            p++;
        if (p == name) {
            snprintf(err, errlen, "'%%' must be followed by a field name or '%%' at offset %zu",
                     (size_t)(name - text));
            buf_free(&lit);
            tmpl_free(t);
            return false;
        }
        if (t->n && t->parts[t->n - 1].is_field && lit.len == 0) {
            /* Two fields in a row cannot be told apart when matching. */
            snprintf(err, errlen, "fields %%%s and %%%.*s need literal text between them",
                     t->parts[t->n - 1].text, (int)(p - name), name);
            buf_free(&lit);
            tmpl_free(t);
            return false;
        }
        if (lit.len)
            tmpl_push(t, false, lit.data, lit.len);
        lit.len = 0;
        tmpl_push(t, true, name, (size_t)(p - name));
    }
    if (lit.len)
        tmpl_push(t, false, lit.data, lit.len);
    buf_free(&lit);
    if (t->n == 0) {
        snprintf(err, errlen, "empty template");
        return false;
    }
    return true;
}

void tmpl_free(struct tmpl *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->parts[i].text);
    free(t->parts);
    *t = (struct tmpl){0};
}

bool tmpl_uses(const struct tmpl *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->parts[i].is_field && strcmp(t->parts[i].text, name) == 0)
            return true;
    return false;
}

bool tmpl_expand(const struct tmpl *t, field_lookup lookup, void *ctx, struct buf *out, char *err,
                 size_t errlen)
{
    out->len = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct tmpl_part *part = &t->parts[i];
        if (!part->is_field) {
            buf_append(out, part->text, part->len);
            continue;
        }
        const char *val;
        size_t len;
        if (!lookup(ctx, part->text, &val, &len, err, errlen))
            return false;
        if (len == 0) {
            snprintf(err, errlen, "field '%s' is empty", part->text);
            return false;
        }
        buf_append(out, val, len);
    }
    if (out->len > KEY_MAX) {
        snprintf(err, errlen, "key longer than %d bytes", KEY_MAX);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ numbers */
/* An event time in ms from its text or integer form, scaled and checked
 * against the range the module accepts for AT. */
static bool event_time(const struct event_spec *spec, uint64_t raw, int64_t *ts, char *err,
                       size_t errlen)
{
    if (raw > (uint64_t)SEEN_TIME_MAX / (uint64_t)spec->ts_scale) {
        snprintf(err, errlen, "field '%s' is out of range", spec->ts_field);
        return false;
    }
    *ts = (int64_t)raw * spec->ts_scale;
    return true;
}

static bool event_item(struct event *ev, const char *field, const char *val, size_t len, char *err,
                       size_t errlen)
{
    if (len == 0 || len > SEEN_ITEM_MAX) {
        snprintf(err, errlen, "field '%s' must be 1 to %d bytes long", field, SEEN_ITEM_MAX);
        return false;
    }
    ev->item = val;
    ev->item_len = len;
    return true;
}

/* --------------------------------------------------------------- JSON */
struct json_fields {
    json_t *root;
    char num[24]; /* an integer field's decimal form, for the template */
};

/* A field as text: strings as they are, integers in decimal. */
static bool json_text(json_t *v, const char *name, char *num, const char **val, size_t *len,
                      char *err, size_t errlen)
{
    if (!v) {
        snprintf(err, errlen, "field '%s' is missing", name);
        return false;
    }
    if (json_is_string(v)) {
        *val = json_string_value(v);
        *len = json_string_length(v);
        return true;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *len = (size_t)snprintf(num, 24, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *val = num;
        return true;
    }
    snprintf(err, errlen, "field '%s' must be a string or a non-negative integer", name);
    return false;
}

static bool json_lookup(void *ctx, const char *name, const char **val, size_t *len, char *err,
                        size_t errlen)
{
    struct json_fields *f = ctx;
    return json_text(json_object_get(f->root, name), name, f->num, val, len, err, errlen);
}

bool event_from_json(const struct event_spec *spec, const char *text, size_t len, struct event *ev,
                     char *err, size_t errlen)
{
    json_error_t jerr;
    ev->item = NULL;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (json_error_code(&jerr) == json_error_null_character)
            snprintf(err, errlen,
                     "a field holds a NUL byte (\\u0000, at byte %d): items and keys "
                     "may not contain one",
                     jerr.position);
        else
            snprintf(err, errlen, "bad JSON at byte %d: %s", jerr.position, jerr.text);
        return false;
    }
    /* The item may point into root, so root lives until event_release. */
    ev->json = root;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "not a JSON object");
        return false;
    }
    struct json_fields f = {.root = root};
    if (!tmpl_expand(&spec->key, json_lookup, &f, &ev->key, err, errlen))
        return false;
    const char *item;
    size_t item_len;
    if (!json_text(json_object_get(root, spec->item_field), spec->item_field, ev->item_num, &item,
                   &item_len, err, errlen) ||
        !event_item(ev, spec->item_field, item, item_len, err, errlen))
        return false;
    json_t *ts = json_object_get(root, spec->ts_field);
    if (!ts && spec->missing_ts_now) {
        ev->ts = now_ms();
        return true;
    }
    uint64_t raw;
    if (json_is_integer(ts) && json_integer_value(ts) >= 0) {
        raw = (uint64_t)json_integer_value(ts);
    } else if (!(json_is_string(ts) &&
                 decimal_u64(json_string_value(ts), json_string_length(ts), &raw))) {
        snprintf(err, errlen,
                 ts ? "field '%s' must be a non-negative integer" : "field '%s' is missing",
                 spec->ts_field);
        return false;
    }
    return event_time(spec, raw, &ev->ts, err, errlen);
}

/* -------------------------------------------------------- field pairs */
struct pair_fields {
    const char *const *names, *const *values;
    const size_t *name_lens, *value_lens;
    size_t n;
};

static bool pair_lookup(void *ctx, const char *name, const char **val, size_t *len, char *err,
                        size_t errlen)
{
    const struct pair_fields *f = ctx;
    size_t name_len = strlen(name);
    for (size_t i = 0; i < f->n; i++) {
        if (f->name_lens[i] == name_len && memcmp(f->names[i], name, name_len) == 0) {
            *val = f->values[i];
            *len = f->value_lens[i];
            return true;
        }
    }
    snprintf(err, errlen, "field '%s' is missing", name);
    return false;
}

bool event_from_pairs(const struct event_spec *spec, const char *const *names,
                      const size_t *name_lens, const char *const *values, const size_t *value_lens,
                      size_t n, struct event *ev, char *err, size_t errlen)
{
    struct pair_fields f = {names, values, name_lens, value_lens, n};
    ev->item = NULL;
    if (!tmpl_expand(&spec->key, pair_lookup, &f, &ev->key, err, errlen))
        return false;
    const char *val;
    size_t len;
    if (!pair_lookup(&f, spec->item_field, &val, &len, err, errlen) ||
        !event_item(ev, spec->item_field, val, len, err, errlen))
        return false;
    if (!pair_lookup(&f, spec->ts_field, &val, &len, err, errlen)) {
        if (!spec->missing_ts_now)
            return false;
        ev->ts = now_ms();
        return true;
    }
    uint64_t raw;
    if (!decimal_u64(val, len, &raw)) {
        snprintf(err, errlen, "field '%s' must be a non-negative integer", spec->ts_field);
        return false;
    }
    return event_time(spec, raw, &ev->ts, err, errlen);
}

void event_release(struct event *ev)
{
    if (ev->json)
        json_decref(ev->json);
    ev->json = NULL;
}
