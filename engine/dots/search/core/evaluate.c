/* The horizon evaluation (engine/dots/search/evaluate.py): the mean of the fills' loony
 * values, scaled by trust. */
#include "core.h"

static inline int floordiv(long long a, long long b) /* Python's a // b for b > 0 */
{
    long long q = a / b;
    if ((a % b) != 0 && a < 0)
        q--;
    return (int)q;
}

static int fill_value(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals0, bb_t blocked,
                      int order)
{
    uint8_t vals[MAXB];
    memcpy(vals, vals0, B->nb);
    const uint8_t *ord = B->fill[order];
    int k = 0;
    for (int i = 0; i < B->nl; i++) {
        int ln = ord[i];
        if (HAS(blocked, ln))
            continue;
        drawn |= BIT(ln);
        k++;
        for (int j = 0; j < 2; j++) {
            int b = B->line_box[ln][j];
            if (b >= 0 && ++vals[b] == 2)
                blocked |= B->box_mask[b];
        }
    }
    Memo *m = &M->ends[hash_bb(drawn) & (M->slots - 1)];
    int f;
    if (m->used && m->key == drawn)
        f = m->value;
    else {
        uint8_t chains[MAXCOMP + 1], loops[MAXCOMP];
        int nc, nlp, joints;
        component_counts(B, drawn, vals, chains, &nc, loops, &nlp, &joints);
        if (joints) {
            if (nc) {
                int mi = 0;
                for (int i = 1; i < nc; i++)
                    if (chains[i] > chains[mi])
                        mi = i;
                chains[mi] = (uint8_t)(chains[mi] + joints);
            } else
                chains[nc++] = (uint8_t)joints;
        }
        f = loony_value_fast(M, chains, nc, loops, nlp);
        m->key = drawn;
        m->value = f;
        m->used = 1;
    }
    long long weight = B->parity_horizon - k;
    if (weight <= 0)
        return 0;
    if (weight < B->parity_ramp)
        f = floordiv((long long)f * weight, B->parity_ramp);
    return (k & 1) ? f : -f;
}

/* evaluate.evaluate: the mean of the fills, scaled by trust. */
static int evaluate(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals)
{
    Memo *m = &M->eval[hash_bb(drawn) & (M->slots - 1)];
    if (m->used && m->key == drawn)
        return m->value;
    bb_t blocked = drawn;
    for (int b = 0; b < B->nb; b++)
        if (vals[b] >= 2)
            blocked |= B->box_mask[b];
    long long total = 0;
    for (int i = 0; i < B->nfills; i++)
        total += fill_value(B, M, drawn, vals, blocked, i);
    int v = floordiv(total * B->trust_num, (long long)B->nfills * B->trust_den);
    m->key = drawn;
    m->value = v;
    m->used = 1;
    return v;
}
