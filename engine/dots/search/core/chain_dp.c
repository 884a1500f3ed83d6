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

/* Stores ``value`` under ``key`` (emptying the memo first when 3/4 full). */
static void loony_put(Memos *M, const uint8_t *key, int klen, int value)
{
    if (M->loony_used + 1 > M->slots * 3 / 4) {
        memset(M->loony, 0, M->slots * sizeof(LoonyMemo));
        M->loony_used = 0;
    }
    /* probed again: a recursion since the caller's probe may have filled its slot */
    LoonyMemo *slot = loony_slot(M, key, klen);
    if (!slot || slot->used) /* (a table of one or two slots is kept empty) */
        return;
    slot->used = 1;
    slot->len = (uint8_t)klen;
    memcpy(slot->key, key, klen);
    slot->value = value;
    M->loony_used++;
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
    /* the best component to open: each length of chain once, then each length of loop */
    int best = 1 << 30;
    uint8_t rest[MAXCOMP];
    for (int loop = 0; loop < 2; loop++) {
        const uint8_t *a = loop ? lp : ch;
        const int na = loop ? nlp : nc;
        for (int i = 0; i < na; i++) {
            int n = a[i];
            if (i && n == a[i - 1])
                continue;
            memcpy(rest, a, i); /* the others */
            memcpy(rest + i, a + i + 1, na - i - 1);
            int r = loop ? loony_value(M, ch, nc, rest, nlp - 1)
                         : loony_value(M, rest, nc - 1, lp, nlp);
            int v = loop ? n - 4 + abs(4 - r) : n <= 2 ? n - r : n - 2 + abs(2 - r);
            if (v < best)
                best = v;
        }
    }
    if (memo)
        loony_put(M, key, klen, best);
    return best;
}

/* ``name(a, n)``: sorts n values of type T ascending (insertion: the arrays are short). */
#define DEFINE_SORT(name, T)                                                                 \
    static void name(T *a, int n)                                                            \
    {                                                                                        \
        for (int i = 1; i < n; i++) {                                                        \
            T x = a[i];                                                                      \
            int j = i - 1;                                                                   \
            while (j >= 0 && a[j] > x) {                                                     \
                a[j + 1] = a[j];                                                             \
                j--;                                                                         \
            }                                                                                \
            a[j + 1] = x;                                                                    \
        }                                                                                    \
    }
DEFINE_SORT(sort_u8, uint8_t)

/* A chain or a loop: the boxes of valence 2 that one of them reaches through undrawn lines. */
typedef struct {
    int n;           /* its boxes */
    int loop;        /* 1: a loop (the walk came back to its first box) */
    uint64_t boxes;  /* its boxes, as a mask */
    int start[2];    /* the first box's undrawn lines, lowest first: where each walk went */
    int end[2];      /* a chain: the box past each end (-1: none, the board's edge), */
    int end_line[2]; /* the line into it, */
    int half;        /* and the boxes between the first box and the first end */
} Chain;

/* The chain or loop of box ``b0`` (of valence 2): walked from b0 both ways, through its
 * lowest undrawn line and then its highest, to the first box of another valence each way,
 * or back to b0. The one walk of chains in the core. */
FORCE_INLINE void walk_chain(const Board *B, bb_t drawn, const uint8_t *vals, int b0,
                             Chain *ch)
{
    bb_t fr = B->box_mask[b0] & ~drawn;
    ch->start[0] = bb_low(fr);
    ch->start[1] = bb_high(fr);
    ch->n = 1;
    ch->loop = ch->half = 0;
    ch->boxes = 1ULL << b0;
    ch->end[0] = ch->end[1] = -1;
    for (int d = 0; d < 2; d++) {
        int ln = ch->start[d], cur = b0;
        for (;;) {
            int nb = other_box(B, ln, cur);
            if (nb < 0 || vals[nb] != 2) {
                ch->end[d] = nb;
                ch->end_line[d] = ln;
                break;
            }
            if (nb == b0) {
                ch->loop = 1;
                return;
            }
            ch->boxes |= 1ULL << nb;
            ch->n++;
            ch->half += !d;
            ln = other_line(B, drawn, nb, ln);
            cur = nb;
        }
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
        Chain ch;
        walk_chain(B, drawn, vals, b0, &ch);
        seen |= ch.boxes;
        if (ch.loop)
            loops[(*nlp)++] = (uint8_t)ch.n;
        else
            chains[(*nc)++] = (uint8_t)ch.n;
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
