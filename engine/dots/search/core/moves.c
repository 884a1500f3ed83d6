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
                    int ml = bb_high(B->box_mask[y] & ~drawn & ~BIT(lx));
                    int z = other_box(B, ml, y);
                    if (z < 0 || vals[z] <= 1) {
                        dtake[nd] = (uint8_t)lx;
                        ddecl[nd++] = (uint8_t)ml;
                        break;
                    }
                    if (vals[z] == 2) {
                        int nl2 = bb_high(B->box_mask[z] & ~drawn & ~BIT(ml));
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

/* Searcher.gen_safe: safe lines best first (stable); returns their count, sets *unsafe. */
static int gen_safe(Core *S, bb_t drawn, const uint8_t *vals, int proof, uint8_t *out,
                    bb_t *unsafe_out)
{
    const Board *B = S->B;
    bb_t fr = B->full & ~drawn, unsafe = 0;
    for (int b = 0; b < B->nb; b++)
        if (vals[b] == 2)
            unsafe |= B->box_mask[b];
    unsafe &= fr;
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
    *unsafe_out = unsafe;
    return n;
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
    int size[2 * MAXL], line[2 * MAXL], bnd[2 * MAXL], n = 0;
    uint64_t seen = 0;
    int classes[2 * MAXB + 2];
    int ncls = 0;
    for (int b0 = 0; b0 < B->nb; b0++) {
        if (vals[b0] != 2 || ((seen >> b0) & 1))
            continue;
        seen |= 1ULL << b0;
        bb_t fr = B->box_mask[b0] & ~drawn;
        int la = bb_low(fr), lb = bb_high(fr);
        int cnt = 1, loop = 0, steps_a = 0, end_a = -1, end_b = -1, line_a = -1;
        for (int d = 0; d < 2; d++) {
            int first = d ? lb : la;
            int cur = b0, ln = first;
            for (;;) {
                int nb = other_box(B, ln, cur);
                if (nb < 0 || vals[nb] != 2) {
                    if (!d) {
                        end_a = nb;
                        line_a = ln;
                    } else
                        end_b = nb;
                    break;
                }
                if (nb == b0) {
                    loop = 1;
                    break;
                }
                seen |= 1ULL << nb;
                cnt++;
                if (!d)
                    steps_a++;
                ln = bb_high(B->box_mask[nb] & ~drawn & ~BIT(ln));
                cur = nb;
            }
            if (loop)
                break;
        }
        if (loop || (end_a < 0 && end_b < 0)) {
            int cls = loop ? -cnt : cnt, dup = 0;
            for (int i = 0; i < ncls; i++)
                if (classes[i] == cls)
                    dup = 1;
            if (dup)
                continue;
            classes[ncls++] = cls;
        }
        if (loop) {
            size[n] = cnt + 1;
            bnd[n] = 4 - cnt;
            line[n++] = la;
        } else if (cnt == 2) {
            size[n] = 2;
            bnd[n] = INF;
            line[n++] = steps_a == 1 ? la : lb;
        } else if (cnt >= 3 && end_a >= 0 && end_a == end_b) {
            /* every undrawn line of the chain's boxes */
            bb_t lines = 0;
            uint64_t todo = 1ULL << b0, done = 0;
            while (todo) {
                int b = __builtin_ctzll(todo);
                todo &= todo - 1;
                done |= 1ULL << b;
                bb_t f = B->box_mask[b] & ~drawn;
                lines |= f;
                while (f) {
                    int l = bb_low(f);
                    f &= f - 1;
                    int o = other_box(B, l, b);
                    if (o >= 0 && vals[o] == 2 && !((done >> o) & 1))
                        todo |= 1ULL << o;
                }
            }
            while (lines) {
                size[n] = cnt;
                bnd[n] = INF;
                line[n++] = bb_low(lines);
                lines &= lines - 1;
            }
        } else {
            size[n] = cnt;
            bnd[n] = cnt >= 3 ? 2 - cnt : INF;
            line[n++] = line_a;
        }
    }
    if (prune_long && any_safe) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (size[i] <= 2) {
                size[k] = size[i];
                bnd[k] = bnd[i];
                line[k++] = line[i];
            }
        S->pruned = k != n;
        n = k;
    }
    for (int i = 1; i < n; i++) { /* sort by (size, line) */
        int a = size[i], b = line[i], c = bnd[i], j = i - 1;
        while (j >= 0 && (size[j] > a || (size[j] == a && line[j] > b))) {
            size[j + 1] = size[j];
            line[j + 1] = line[j];
            bnd[j + 1] = bnd[j];
            j--;
        }
        size[j + 1] = a;
        line[j + 1] = b;
        bnd[j + 1] = c;
    }
    bb_t used = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!HAS(used, line[i])) {
            used |= BIT(line[i]);
            bound_out[m] = (int8_t)(bnd[i] < INF ? bnd[i] : 127);
            out[m++] = (uint8_t)line[i];
        }
    return m;
}
