#include "rope.h"

#include <math.h>
#include <stdlib.h>

float *rope_table_new(size_t positions, size_t d, double theta)
{
    const size_t half = d / 2;
    float *t = malloc(positions * d * sizeof *t);
    if (t == NULL)
        return NULL;
    for (size_t k = 0; k < half; k++) {
        const double f = pow(theta, -(double)(2 * k) / (double)d);
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
