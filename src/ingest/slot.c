/* slot.c — Redis Cluster key slots: CRC16 (XMODEM: polynomial 0x1021,
 * initial value 0, no reflection) of the key, or of its {hash tag}, modulo
 * 16384, as the Cluster specification defines them. */
#include "ingest.h"

#include <string.h>

uint16_t crc16_xmodem(const void *data, size_t n)
{
    /* Bitwise: keys are short and one slot is computed per key and batch,
     * so a table would buy nothing measurable. */
    const unsigned char *p = data;
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

uint16_t key_slot(const char *key, size_t n)
{
    /* Only the part between the first '{' and the next '}' is hashed, if
     * that part is not empty. */
    const char *open = memchr(key, '{', n);
    if (open) {
        size_t rest = n - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1) {
            key = open + 1;
            n = (size_t)(close - key);
        }
    }
    return crc16_xmodem(key, n) & (CLUSTER_SLOTS - 1);
}
