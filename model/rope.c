#include "rope.h"

#include <math.h>
#include <stdlib.h>

#include "bert.h"

float *rope_table_new(size_t positions, size_t d, double theta)
{
    return rope_table_ntk_new(positions, d, theta, 1.0);
}

float *rope_table_ntk_new(size_t positions, size_t d, double theta, double factor)
{
    const size_t half = d / 2;
    float *t = malloc(positions * d * sizeof *t);
    if (t == NULL)
        return NULL;
    const double scale = pow(factor, -2.0 / (double)d);
    for (size_t k = 0; k < half; k++) {
        const double f = pow(theta * factor, -(double)(2 * k) / (double)d) * scale;
        for (size_t p = 0; p < positions; p++) {
            t[p * d + k] = (float)cos((double)p * f);
            t[p * d + half + k] = (float)sin((double)p * f);
        }
    }
    return t;
}

void rope_rotate(float *x, size_t d, const float *row)
{
    const size_t half = d / 2;
    const float *cs = row, *sn = row + half;
    for (size_t k = 0; k < half; k++) {
        const float a = x[k], b = x[k + half];
        x[k] = a * cs[k] - b * sn[k];
        x[k + half] = b * cs[k] + a * sn[k];
    }
}

void rope_rotate_rows(const struct bert_batch *b, float *qkv, size_t r0, size_t r1, size_t H,
                      size_t A, const float *table)
{
    const size_t D = H / A;
    size_t seq = 0;
    for (size_t t = r0; t < r1; t++) {
        while (b->seq_start[seq + 1] <= t)
            seq++;
        const float *row = table + (t - b->seq_start[seq]) * D;
        float *q = qkv + t * 3 * H;
        for (size_t h = 0; h < 2 * A; h++) /* the A query heads, then the A key heads */
            rope_rotate(q + h * D, D, row);
    }
}
