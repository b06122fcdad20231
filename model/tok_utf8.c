#include "tok_utf8.h"

size_t tok_utf8_valid_prefix(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t b = s[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (b >= 0xC2 && b <= 0xDF) {
            n = 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            n = 3;
            if (b == 0xE0)
                lo = 0xA0; /* overlong */
            else if (b == 0xED)
                hi = 0x9F; /* UTF-16 surrogates */
        } else if (b >= 0xF0 && b <= 0xF4) {
            n = 4;
            if (b == 0xF0)
                lo = 0x90; /* overlong */
            else if (b == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            return i; /* continuation byte, C0/C1 overlong lead, or F5..FF */
        }
        if (len - i < n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k < n; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += n;
    }
    return len;
}
