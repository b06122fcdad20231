/* MPNet's relative position bias (Song et al. 2020, "MPNet", sec. 2.3;
 * modeling_mpnet.py's MPNetEncoder.compute_position_bias): T5's bucketing
 * of the distance between key and query, one learned scalar per bucket and
 * head, shared by every layer and added to the scaled attention scores.
 * The layers themselves are BERT's (bert.c); attention.c adds the table
 * built here. */
#include <math.h>
#include <stdlib.h>

#include "family.h"

/* relative_position_bucket(memory - context, num_buckets = 32,
 * max_distance = 128): half the buckets for keys before the query, half for
 * keys after it; within each half, distances below 8 exactly, larger ones
 * logarithmically up to 128 and beyond. Computed in float, as transformers
 * computes it, so that a distance on a bucket boundary lands where it does
 * there. */
static size_t mpnet_bucket(long relative)
{
    const long half = 16, max_exact = 8;
    const float log_range = (float)log(128.0 / 8.0);
    long n = -relative;
    size_t bucket = n < 0 ? (size_t)half : 0;
    n = n < 0 ? -n : n;
    if (n < max_exact)
        return bucket + (size_t)n;
    const float scaled = logf((float)n / (float)max_exact) / log_range * (float)(half - max_exact);
    long large = max_exact + (long)scaled;
    return bucket + (size_t)(large < half - 1 ? large : half - 1);
}

float *family_mpnet_rel_bias_new(const struct bert_config *c, const float *bias, size_t positions)
{
    const size_t A = c->num_heads, span = 2 * positions - 1;
    float *table = malloc(A * span * sizeof *table);
    if (table == NULL)
        return NULL;
    for (size_t k = 0; k < span; k++) {
        const size_t b = mpnet_bucket((long)k - (long)(positions - 1));
        for (size_t h = 0; h < A; h++)
            table[h * span + k] = bias[b * A + h];
    }
    return table;
}
