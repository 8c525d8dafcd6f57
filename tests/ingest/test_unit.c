/* test_unit.c — unit tests (cmocka) of seen-ingest's pure parts: Cluster
 * key slots, key templates, JSON and field-pair events, integers. */
#include "ingest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_crc16_and_slots(void **state)
{
    (void)state;
    /* The Cluster specification's check value and examples. */
    assert_int_equal(crc16_xmodem("123456789", 9), 0x31C3);
    assert_int_equal(key_slot("foo", 3), 12182);
    assert_int_equal(key_slot("{user1000}.following", 20), key_slot("{user1000}.followers", 20));
    assert_int_equal(key_slot("{user1000}.following", 20), key_slot("user1000", 8));
    /* An empty tag hashes the whole key; only the first tag counts. */
    assert_int_equal(key_slot("foo{}{bar}", 10), crc16_xmodem("foo{}{bar}", 10) & 16383);
    assert_int_equal(key_slot("foo{{bar}}zap", 13), key_slot("{bar", 4));
    assert_int_equal(key_slot("foo{bar}{zap}", 13), key_slot("bar", 3));
    assert_int_equal(key_slot("no-close{abc", 12), crc16_xmodem("no-close{abc", 12) & 16383);
}

static void expect_template_error(const char *text, const char *message)
{
    struct tmpl t;
    char err[256];
    assert_false(tmpl_compile(&t, text, err, sizeof err));
    assert_non_null(strstr(err, message));
}

static void test_template_compile(void **state)
{
    (void)state;
    struct tmpl t;
    char err[256];
    assert_true(tmpl_compile(&t, "seen:{%user}:%kind%%", err, sizeof err));
    assert_int_equal(t.n, 5);
    assert_true(t.parts[1].is_field);
    assert_string_equal(t.parts[1].text, "user");
    assert_string_equal(t.parts[2].text, "}:");
    assert_string_equal(t.parts[3].text, "kind");
    assert_string_equal(t.parts[4].text, "%"); /* %% is a literal */
    assert_true(tmpl_uses(&t, "kind"));
    assert_false(tmpl_uses(&t, "item"));
    tmpl_free(&t);
    expect_template_error("", "empty template");
    expect_template_error("seen:%", "must be followed by a field name");
    expect_template_error("seen:%-x", "must be followed by a field name");
    expect_template_error("%a%b", "need literal text between them");
}

static struct event_spec spec_of(const char *template)
{
    struct event_spec spec = {.item_field = "item", .ts_field = "ts", .ts_scale = 1};
    char err[256];
    assert_true(tmpl_compile(&spec.key, template, err, sizeof err));
    return spec;
}

/* Parses text; on success checks key, item and time. */
static bool parse(const struct event_spec *spec, const char *text, const char *key,
                  const char *item, int64_t ts, char *err)
{
    struct event ev = {0};
    bool ok = event_from_json(spec, text, strlen(text), &ev, err, 256);
    if (ok) {
        assert_int_equal(ev.key.len, strlen(key));
        assert_memory_equal(ev.key.data, key, ev.key.len);
        assert_int_equal(ev.item_len, strlen(item));
        assert_memory_equal(ev.item, item, ev.item_len);
        assert_int_equal(ev.ts, ts);
    }
    event_release(&ev);
    buf_free(&ev.key);
    return ok;
}

static void expect_bad(const struct event_spec *spec, const char *text, const char *message)
{
    char err[256] = "";
    if (parse(spec, text, "", "", 0, err))
        fail_msg("accepted: %s", text);
    if (!strstr(err, message))
        fail_msg("for %s: expected '%s' in '%s'", text, message, err);
}

static void test_json_events(void **state)
{
    (void)state;
    struct event_spec spec = spec_of("seen:{%user}:%kind");
    char err[256];
    assert_true(parse(&spec,
                      "{\"user\":\"u1\",\"item\":\"v9\",\"ts\":1763700000000,\"kind\":\"play\"}",
                      "seen:{u1}:play", "v9", 1763700000000, err));
    /* Integers as user and item, the time as a digit string, extra fields
     * (nested too) ignored, escapes decoded. */
    assert_true(parse(
        &spec, "{\"user\":42,\"item\":7,\"ts\":\"5\",\"kind\":\"p\\u00e9\",\"x\":{\"y\":[1]}}",
        "seen:{42}:p\xc3\xa9", "7", 5, err));
    expect_bad(&spec, "{\"user\":\"u1\"", "bad JSON at byte");
    expect_bad(&spec, "[1]", "not a JSON object");
    expect_bad(&spec, "{\"item\":\"v\",\"ts\":1,\"kind\":\"k\"}", "field 'user' is missing");
    expect_bad(&spec, "{\"user\":\"\",\"item\":\"v\",\"ts\":1,\"kind\":\"k\"}",
               "field 'user' is empty");
    expect_bad(&spec, "{\"user\":-1,\"item\":\"v\",\"ts\":1,\"kind\":\"k\"}",
               "must be a string or a non-negative integer");
    expect_bad(&spec, "{\"user\":true,\"item\":\"v\",\"ts\":1,\"kind\":\"k\"}",
               "must be a string or a non-negative integer");
    expect_bad(&spec, "{\"user\":\"u\",\"ts\":1,\"kind\":\"k\"}", "field 'item' is missing");
    expect_bad(&spec, "{\"user\":\"u\",\"item\":\"v\",\"kind\":\"k\"}", "field 'ts' is missing");
    expect_bad(&spec, "{\"user\":\"u\",\"item\":\"v\",\"ts\":1.0,\"kind\":\"k\"}",
               "non-negative integer");
    expect_bad(&spec, "{\"user\":\"u\",\"item\":\"v\",\"ts\":\"1e3\",\"kind\":\"k\"}",
               "non-negative integer");
    expect_bad(&spec, "{\"user\":\"u\",\"item\":\"v\",\"ts\":1125899906842625,\"kind\":\"k\"}",
               "out of range");
    expect_bad(&spec, "{\"user\":\"u\",\"user\":\"w\",\"item\":\"v\",\"ts\":1,\"kind\":\"k\"}",
               "duplicate");
    /* A NUL byte is reported in our words, not the JSON library's. */
    expect_bad(&spec, "{\"user\":\"u\",\"item\":\"a\\u0000b\",\"ts\":1,\"kind\":\"k\"}",
               "holds a NUL byte");

    char big[700];
    snprintf(big, sizeof big, "{\"user\":\"u\",\"item\":\"%0512d\",\"ts\":1,\"kind\":\"k\"}", 0);
    char item512[513];
    memset(item512, '0', 512);
    item512[512] = '\0';
    assert_true(parse(&spec, big, "seen:{u}:k", item512, 1, err));
    snprintf(big, sizeof big, "{\"user\":\"u\",\"item\":\"%0513d\",\"ts\":1,\"kind\":\"k\"}", 0);
    expect_bad(&spec, big, "must be 1 to 512 bytes long");

    /* Seconds, and a missing time stamped now. */
    spec.ts_scale = 1000;
    assert_true(parse(&spec, "{\"user\":\"u\",\"item\":\"v\",\"ts\":3,\"kind\":\"k\"}",
                      "seen:{u}:k", "v", 3000, err));
    spec.missing_ts_now = true;
    struct event ev = {0};
    const char *no_time = "{\"user\":\"u\",\"item\":\"v\",\"kind\":\"k\"}";
    int64_t before = now_ms();
    assert_true(event_from_json(&spec, no_time, strlen(no_time), &ev, err, sizeof err));
    assert_true(ev.ts >= before && ev.ts <= now_ms());
    event_release(&ev);
    buf_free(&ev.key);
    tmpl_free(&spec.key);
}

static void test_pair_events(void **state)
{
    (void)state;
    struct event_spec spec = spec_of("played:%uid");
    spec.item_field = "vid";
    const char *names[] = {"uid", "vid", "ts"};
    const char *values[] = {"u5", "v1", "17"};
    size_t name_lens[] = {3, 3, 2}, value_lens[] = {2, 2, 2};
    struct event ev = {0};
    char err[256];
    assert_true(
        event_from_pairs(&spec, names, name_lens, values, value_lens, 3, &ev, err, sizeof err));
    assert_memory_equal(ev.key.data, "played:u5", 9);
    assert_int_equal(ev.ts, 17);
    values[2] = "x7";
    assert_false(
        event_from_pairs(&spec, names, name_lens, values, value_lens, 3, &ev, err, sizeof err));
    assert_non_null(strstr(err, "non-negative integer"));
    assert_false(
        event_from_pairs(&spec, names, name_lens, values, value_lens, 1, &ev, err, sizeof err));
    assert_non_null(strstr(err, "field 'vid' is missing"));
    buf_free(&ev.key);
    tmpl_free(&spec.key);
}

static void test_integers(void **state)
{
    (void)state;
    uint64_t v;
    assert_true(decimal_u64("18446744073709551615", 20, &v));
    assert_true(v == UINT64_MAX);
    assert_false(decimal_u64("18446744073709551616", 20, &v));
    assert_false(decimal_u64("", 0, &v));
    assert_false(decimal_u64("-1", 2, &v));
    assert_false(decimal_u64("1 ", 2, &v));
    char host[64];
    int port;
    assert_true(parse_host_port("127.0.0.1:6379", host, sizeof host, &port));
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 6379);
    assert_true(parse_host_port("::1:7000", host, sizeof host, &port));
    assert_string_equal(host, "::1");
    assert_false(parse_host_port("localhost", host, sizeof host, &port));
    assert_false(parse_host_port(":6379", host, sizeof host, &port));
    assert_false(parse_host_port("h:0", host, sizeof host, &port));
    assert_false(parse_host_port("h:65536", host, sizeof host, &port));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_and_slots), cmocka_unit_test(test_template_compile),
        cmocka_unit_test(test_json_events),     cmocka_unit_test(test_pair_events),
        cmocka_unit_test(test_integers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
