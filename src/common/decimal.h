/*
 * decimal.h — the one parser of unsigned decimal numbers shared by the
 * Redis module (command arguments) and the ingester (event fields, options):
 * digits only, no sign, space or leading '+', and nothing that overflows, so
 * both refuse the same inputs.
 */
#ifndef SEEN_COMMON_DECIMAL_H
#define SEEN_COMMON_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool decimal_u64(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t digit = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

#endif
