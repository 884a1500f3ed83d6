/* The chains and loops of a position, and the chain DP (engine/dots/chain_dp.py): the value of
 * an endgame where every box left has valence 2. */
#include "core.h"

static int loony_value(Memos *M, const uint8_t *ch, int nc, const uint8_t *lp, int nlp);

static inline uint64_t hash_bytes(const uint8_t *p, int n)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/* The memo slot of a key: its entry, or the empty slot where it would go; NULL when every
 * slot holds another key. */
static LoonyMemo *loony_slot(Memos *M, const uint8_t *key, int klen)
{
    size_t i = hash_bytes(key, klen) & (M->slots - 1);
    for (size_t n = 0; n < M->slots; n++) {
        LoonyMemo *m = &M->loony[i];
        if (!m->used || (m->len == klen && !memcmp(m->key, key, klen)))
            return m;
        i = (i + 1) & (M->slots - 1);
    }
    return NULL;
}

/* f(G) of chain_dp.loony_value: chains and loops sorted ascending. */
static int loony_value(Memos *M, const uint8_t *ch, int nc, const uint8_t *lp, int nlp)
{
    if (!nc && !nlp)
        return 0;
    uint8_t key[LKEY];
    int klen = nc + nlp + 1;
    int memo = klen <= LKEY;
    if (memo) {
        memcpy(key, ch, nc);
        key[nc] = 0;
        memcpy(key + nc + 1, lp, nlp);
        LoonyMemo *m = loony_slot(M, key, klen);
        if (m && m->used)
            return m->value;
    }
    int best = 1 << 30, last = -1;
    uint8_t rest[MAXCOMP];
    for (int i = 0; i < nc; i++) {
        int n = ch[i];
        if (n == last)
            continue;
        last = n;
        memcpy(rest, ch, i);
        memcpy(rest + i, ch + i + 1, nc - i - 1);
        int r = loony_value(M, rest, nc - 1, lp, nlp);
        int v = n <= 2 ? n - r : n - 2 + abs(2 - r);
        if (v < best)
            best = v;
    }
    last = -1;
    for (int i = 0; i < nlp; i++) {
        int n = lp[i];
        if (n == last)
            continue;
        last = n;
        memcpy(rest, lp, i);
        memcpy(rest + i, lp + i + 1, nlp - i - 1);
        int r = loony_value(M, ch, nc, rest, nlp - 1);
        int v = n - 4 + abs(4 - r);
        if (v < best)
            best = v;
    }
    if (memo) {
        if (M->loony_used + 1 > M->slots * 3 / 4) {
            memset(M->loony, 0, M->slots * sizeof(LoonyMemo));
            M->loony_used = 0;
        }
        /* probed again: the recursion may have filled the slot found before it */
        LoonyMemo *slot = loony_slot(M, key, klen);
        if (!slot || slot->used) /* (a table of one or two slots is kept empty) */
            return best;
        slot->used = 1;
        slot->len = (uint8_t)klen;
        memcpy(slot->key, key, klen);
        slot->value = best;
        M->loony_used++;
    }
    return best;
}

static void sort_u8(uint8_t *a, int n)
{
    for (int i = 1; i < n; i++) {
        uint8_t x = a[i];
        int j = i - 1;
        while (j >= 0 && a[j] > x) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = x;
    }
}

/* chain_dp.component_counts: lengths of chains and loops, and boxes of valence 0/1. */
static void component_counts(const Board *B, bb_t drawn, const uint8_t *vals, uint8_t *chains,
                             int *nc, uint8_t *loops, int *nlp, int *joints)
{
    uint64_t seen = 0;
    *nc = *nlp = *joints = 0;
    for (int b0 = 0; b0 < B->nb; b0++) {
        int v0 = vals[b0];
        if (v0 != 2) {
            if (v0 < 2)
                (*joints)++;
            continue;
        }
        if ((seen >> b0) & 1)
            continue;
        seen |= 1ULL << b0;
        bb_t fr = B->box_mask[b0] & ~drawn;
        int la = bb_low(fr);
        int lb = bb_high(fr);
        int n = 1, loop = 0;
        int dirs[2] = {la, lb};
        for (int d = 0; d < 2 && !loop; d++) {
            int ln = dirs[d], cur = b0;
            for (;;) {
                int nb = other_box(B, ln, cur);
                if (nb < 0 || vals[nb] != 2)
                    break;
                if (nb == b0) {
                    loop = 1;
                    break;
                }
                seen |= 1ULL << nb;
                n++;
                ln = bb_high(B->box_mask[nb] & ~drawn & ~BIT(ln));
                cur = nb;
            }
        }
        if (loop)
            loops[(*nlp)++] = (uint8_t)n;
        else
            chains[(*nc)++] = (uint8_t)n;
    }
}

/* chain_dp.loony_value_fast */
static int loony_value_fast(Memos *M, uint8_t *chains, int nc, uint8_t *loops, int nlp)
{
    sort_u8(chains, nc);
    sort_u8(loops, nlp);
    int size = 1;
    for (int i = 0; i < nc;) {
        int j = i;
        while (j < nc && chains[j] == chains[i])
            j++;
        size *= j - i + 1;
        i = j;
        if (size > 64)
            break;
    }
    for (int i = 0; i < nlp && size <= 64;) {
        int j = i;
        while (j < nlp && loops[j] == loops[i])
            j++;
        size *= j - i + 1;
        i = j;
    }
    if (size <= 64)
        return loony_value(M, chains, nc, loops, nlp);
    uint8_t longc[MAXCOMP];
    int nlong = 0;
    for (int i = 0; i < nc; i++)
        if (chains[i] >= 3)
            longc[nlong++] = chains[i];
    /* _long_only(longc, loops, i, j) as a table, from the end */
    int f[MAXCOMP + 1][MAXCOMP + 1];
    f[0][0] = 0; /* set below; this quiets gcc, which cannot see that the loops reach it */
    for (int i = nlong; i >= 0; i--)
        for (int j = nlp; j >= 0; j--) {
            if (i == nlong && j == nlp) {
                f[i][j] = 0;
                continue;
            }
            int best = 1 << 30;
            if (i < nlong)
                best = longc[i] - 2 + abs(2 - f[i + 1][j]);
            if (j < nlp) {
                int v = loops[j] - 4 + abs(4 - f[i][j + 1]);
                if (v < best)
                    best = v;
            }
            f[i][j] = best;
        }
    int v = f[0][0];
    for (int i = nc - 1; i >= 0; i--) /* short chains, largest first */
        if (chains[i] < 3)
            v = chains[i] - v;
    return v;
}
