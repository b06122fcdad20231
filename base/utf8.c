#include "utf8.h"

size_t utf8_valid_prefix(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (s[i] < 0x80) { /* most text is ASCII: no call per byte */
            i++;
            continue;
        }
        size_t n = utf8_sequence_length(s + i, len - i);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}

size_t utf8_invalid_length(const uint8_t *s, size_t avail)
{
    uint8_t lo, hi;
    size_t n = utf8__lead(s[0], &lo, &hi);
    if (n <= 1)
        return 1; /* not a lead byte: it alone is the subpart */
    for (size_t k = 1; k < n; k++) {
        uint8_t lo_k = k == 1 ? lo : 0x80, hi_k = k == 1 ? hi : 0xBF;
        if (k >= avail || s[k] < lo_k || s[k] > hi_k)
            return k;
    }
    return n; /* a whole valid sequence: not reached from a lossy decoder */
}
