/* The moves of a node (Searcher's generators): the forced captures and decision points,
 * the safe lines best first, and the sacrifices with their bounds. */
#include "core.h"

static inline int has3(const uint8_t *vals, int nb)
{
    for (int b = 0; b < nb; b++)
        if (vals[b] == 3)
            return 1;
    return 0;
}

/* Searcher.capture_phase: take the forced captures; the decision points as (take, decline). */
static bb_t capture_phase(const Board *B, bb_t drawn, uint8_t *vals, int *gained,
                          uint8_t *dtake, uint8_t *ddecl, int *ndec)
{
    int nb = B->nb;
    for (;;) {
        int took = 0, nd = 0, x0 = 0;
        while (x0 < nb && vals[x0] != 3)
            x0++;
        for (; x0 < nb; x0++) {
            if (vals[x0] != 3)
                continue;
            int x = x0;
            for (;;) {
                int lx = bb_high(B->box_mask[x] & ~drawn);
                int y = other_box(B, lx, x);
                if (y >= 0 && vals[y] == 2) {
                    int ml = other_line(B, drawn, y, lx);
                    int z = other_box(B, ml, y);
                    if (z < 0 || vals[z] <= 1) {
                        dtake[nd] = (uint8_t)lx;
                        ddecl[nd++] = (uint8_t)ml;
                        break;
                    }
                    if (vals[z] == 2) {
                        int nl2 = other_line(B, drawn, z, ml);
                        int w = other_box(B, nl2, z);
                        if (w >= 0 && vals[w] == 3) {
                            dtake[nd] = (uint8_t)lx;
                            ddecl[nd++] = (uint8_t)ml;
                            break;
                        }
                    }
                }
                drawn |= BIT(lx);
                took = 1;
                for (int j = 0; j < 2; j++) {
                    int b = B->line_box[lx][j];
                    if (b >= 0 && ++vals[b] == 4)
                        (*gained)++;
                }
                if (y < 0 || vals[y] != 3)
                    break;
                x = y;
            }
        }
        if (took && !has3(vals, nb)) {
            *ndec = 0;
            return drawn;
        }
        if (!took) {
            if (nd > 1) { /* one decision per decline line, the first kept */
                int k = 0;
                for (int i = 0; i < nd; i++) {
                    int dup = 0;
                    for (int j = 0; j < k; j++)
                        if (ddecl[j] == ddecl[i])
                            dup = 1;
                    if (!dup) {
                        dtake[k] = dtake[i];
                        ddecl[k++] = ddecl[i];
                    }
                }
                nd = k;
            }
            *ndec = nd;
            return drawn;
        }
    }
}

/* The undrawn lines of the boxes of valence 2: those that are not safe. */
static inline bb_t unsafe_lines(const Board *B, bb_t drawn, const uint8_t *vals)
{
    bb_t unsafe = 0;
    for (int b = 0; b < B->nb; b++)
        if (vals[b] == 2)
            unsafe |= B->box_mask[b];
    return unsafe & B->full & ~drawn;
}

/* Searcher.gen_safe: safe lines best first (stable); returns their count. ``unsafe``: the
 * position's unsafe_lines (node_leaf's). */
static int gen_safe(Core *S, bb_t drawn, const uint8_t *vals, int proof, uint8_t *out,
                    bb_t unsafe)
{
    const Board *B = S->B;
    bb_t fr = B->full & ~drawn;
    bb_t cand = fr & ~unsafe;
    for (int i = 0; i < B->ntwinp; i++)
        if (HAS(fr, B->twinp_lo[i]))
            cand &= ~BIT(B->twinp_hi[i]);
    int n = 0;
    long long k1[MAXL], k2[MAXL], k3[MAXL];
    while (cand) {
        int ln = bb_low(cand);
        cand &= cand - 1;
        int sv = 0;
        for (int j = 0; j < 2; j++) {
            int b = B->line_box[ln][j];
            if (b >= 0)
                sv += vals[b];
        }
        long long a, c, d;
        if (proof) {
            a = B->cen[ln];
            c = sv;
            d = 0;
        } else {
            a = sv;
            c = B->cen[ln];
            d = S->history[ln];
        }
        /* insertion sort, descending, equal keys in line order (Python's stable reverse) */
        int j = n - 1;
        while (j >= 0 && (a > k1[j] || (a == k1[j] && (c > k2[j] || (c == k2[j] && d > k3[j]))))) {
            out[j + 1] = out[j];
            k1[j + 1] = k1[j];
            k2[j + 1] = k2[j];
            k3[j + 1] = k3[j];
            j--;
        }
        out[j + 1] = (uint8_t)ln;
        k1[j + 1] = a;
        k2[j + 1] = c;
        k3[j + 1] = d;
        n++;
    }
    return n;
}

/* The sacrifices found, before gen_sacrifices' filter, sort and dedupe: each one's line, the
 * size of its chain or loop, and its bound (INF: none). */
typedef struct {
    int n;
    int size[2 * MAXL], line[2 * MAXL], bound[2 * MAXL];
} Sacrifices;

FORCE_INLINE void sacrifice(Sacrifices *L, int size, int line, int bound)
{
    L->size[L->n] = size;
    L->line[L->n] = line;
    L->bound[L->n++] = bound;
}

/* Whether a chain or loop like ``ch`` (of its length, and a loop or a chain with no box past
 * either end) was seen before, whose sacrifices are then the same; remembers it in
 * ``classes``. Other chains are never alike. */
FORCE_INLINE int seen_alike(const Chain *ch, int *classes, int *ncls)
{
    if (!ch->loop && (ch->end[0] >= 0 || ch->end[1] >= 0))
        return 0;
    int cls = ch->loop ? -ch->n : ch->n;
    for (int i = 0; i < *ncls; i++)
        if (classes[i] == cls)
            return 1;
    classes[(*ncls)++] = cls;
    return 0;
}

/* chain_dp.sacrifice_lines of one chain or loop. */
FORCE_INLINE void chain_sacrifices(const Board *B, bb_t drawn, const Chain *ch,
                                   Sacrifices *L)
{
    const int n = ch->n;
    if (ch->loop)
        sacrifice(L, n + 1, ch->start[0], 4 - n);
    else if (n == 2)
        sacrifice(L, 2, ch->start[ch->half == 1 ? 0 : 1], INF);
    else if (n >= 3 && ch->end[0] >= 0 && ch->end[0] == ch->end[1]) {
        /* every undrawn line of the chain's boxes */
        bb_t lines = 0;
        for (uint64_t bx = ch->boxes; bx; bx &= bx - 1)
            lines |= B->box_mask[__builtin_ctzll(bx)] & ~drawn;
        for (; lines; lines &= lines - 1)
            sacrifice(L, n, bb_low(lines), INF);
    } else
        sacrifice(L, n, ch->end_line[0], n >= 3 ? 2 - n : INF);
}

/* Keeps the sacrifices of chains of at most 2 boxes; whether it dropped any. */
FORCE_INLINE int drop_long(Sacrifices *L)
{
    int k = 0;
    for (int i = 0; i < L->n; i++)
        if (L->size[i] <= 2) {
            L->size[k] = L->size[i];
            L->bound[k] = L->bound[i];
            L->line[k++] = L->line[i];
        }
    int dropped = k != L->n;
    L->n = k;
    return dropped;
}

/* Sorts the sacrifices by (size, line), stably. */
FORCE_INLINE void sort_sacrifices(Sacrifices *L)
{
    for (int i = 1; i < L->n; i++) {
        int a = L->size[i], b = L->line[i], c = L->bound[i], j = i - 1;
        while (j >= 0 && (L->size[j] > a || (L->size[j] == a && L->line[j] > b))) {
            L->size[j + 1] = L->size[j];
            L->line[j + 1] = L->line[j];
            L->bound[j + 1] = L->bound[j];
            j--;
        }
        L->size[j + 1] = a;
        L->line[j + 1] = b;
        L->bound[j + 1] = c;
    }
}

/* chain_dp.sacrifice_lines, then Searcher.gen_sacrifices' filter, sort and dedupe. With each
 * line, in ``bound_out``, an upper bound on its value to the mover (127: none). A loony
 * sacrifice (an end of a chain of k >= 3 boxes, or a loop of k) lets the taker choose between
 * taking all k and moving in the rest R, worth k + v(R) to them, and declining the last two
 * (a loop: four), which the opener takes before moving in R, worth k - 4 - v(R) (a loop:
 * k - 8 - v(R)). The better of two is at least their mean, whatever v(R): the sacrifice is
 * worth at most 2 - k to the opener (a loop: 4 - k). tests/engine/dots/test_loony_bound.py
 * checks the bound against the reference solver; bench/dots_frontier_bench.py --compare
 * measures what it saves. */
static int gen_sacrifices(Core *S, bb_t drawn, const uint8_t *vals, int prune_long,
                          int any_safe, uint8_t *out, int8_t *bound_out)
{
    const Board *B = S->B;
    Sacrifices L;
    L.n = 0;
    uint64_t seen = 0;
    int classes[2 * MAXB + 2], ncls = 0;
    for (int b0 = 0; b0 < B->nb; b0++) {
        if (vals[b0] != 2 || ((seen >> b0) & 1))
            continue;
        Chain ch;
        walk_chain(B, drawn, vals, b0, &ch);
        seen |= ch.boxes;
        if (!seen_alike(&ch, classes, &ncls))
            chain_sacrifices(B, drawn, &ch, &L);
    }
    if (prune_long && any_safe)
        S->pruned = drop_long(&L);
    sort_sacrifices(&L);
    bb_t used = 0;
    int m = 0;
    for (int i = 0; i < L.n; i++)
        if (!HAS(used, L.line[i])) {
            used |= BIT(L.line[i]);
            bound_out[m] = (int8_t)(L.bound[i] < INF ? L.bound[i] : 127);
            out[m++] = (uint8_t)L.line[i];
        }
    return m;
}
