/* The node: its phases and search(). */
#include "core.h"

/* Every 16 nodes: the deadline, the node budget, and (threaded) the other threads. */
static inline int limits_reached(Core *S)
{
    if (S->has_deadline && mono_now() >= S->c_deadline)
        return 1;
    if (S->sh)
        return shared_check(S);
    if (S->max_nodes >= 0 && S->nodes >= S->max_nodes)
        return 1;
    return 0;
}

/* ---------------------------------------------------------------------------- The node
 *
 * search() runs each node as seven phases, in this order; search_core.py's ``search`` runs
 * the same phases under the same names and in the same order (tests/engine/dots/
 * test_phases.py keeps the two so). A phase that settles the node returns 1 and leaves in
 * ``N->value`` the value of the position after the forced captures (search() adds the boxes
 * they took). The captures come before the probe: the table keys the position after them.
 *
 *   node_captures  takes the forced captures (capture_phase), keeping the decision points;
 *                  settles the node when the board is full or the boxes left cannot reach
 *                  into the window.
 *   node_probe     keys the position (modulo symmetries and twins; a key handed down by the
 *                  parent's cutoffs is used as is) and probes the table: settles the node
 *                  when the entry is deep enough and decides the window; else gives the TT
 *                  move (in a proof only a proven entry's).
 *   node_leaf      without decision points: settles the node by the chain DP when every box
 *                  left has valence 2 (stored as proven), or at depth 0 by the evaluation
 *                  (a horizon value).
 *   node_generate  the moves to search, in order: the decision points' replies (take, and
 *                  decline when there is one), or the safe lines best first (gen_safe); the
 *                  TT move first (an unsafe one added in front, "tried"). The safe lines'
 *                  generation order is kept for node_etc, which probes in it.
 *   node_etc       enhanced transposition cutoffs (safe lines, at nodes with etc_min_free
 *                  undrawn lines or more): keys every safe line's child and settles the node
 *                  when one's entry refutes the window (the first in generation order); the
 *                  keys are kept to be handed to the children.
 *   node_children  searches the moves (principal variation search; a capture keeps the
 *                  turn), then the sacrifices (gen_sacrifices) when no safe line cut the
 *                  node off, skipping a loony one whose bound cannot reach into the window
 *                  (loony_bound): the best value and move, and whether they are proven (no
 *                  horizon value used below). Returns 1 when a limit stopped the search.
 *   node_store     stores the result in the table: exact, a lower or an upper bound, proven
 *                  or at this depth, the best move in the key's frame.
 *
 * The phases are static inline functions forced inline, so search() compiles to one function
 * as before; the horizon evaluation is the one call kept out of it (leaf_evaluate). Measured
 * with bench/dots_solve_bench.py's "cores" section: the same nodes, no slower.
 */
#define NODE_PHASE static inline __attribute__((always_inline))

/* The state of one node, handed from phase to phase. */
typedef struct {
    bb_t drawn;          /* the position, after the forced captures */
    bb_t d0;             /* before them */
    bb_t key;            /* its table key, in the frame of symmetry ``s`` */
    bb_t unsafe;         /* the undrawn lines that are not safe: the sacrifices to generate */
    uint8_t *vals;       /* the valences of ``drawn`` (the node's own copy) */
    const uint8_t *safe; /* the safe lines in generation order (node_etc) */
    int alpha, beta;     /* the window, less the boxes of the captures */
    int depth, gained, ndec, s, ttmove, have_raw, nm, nsafe, tried;
    int value;           /* the value after the captures, when a phase settled the node */
    int best, bestm, proven; /* node_children's result */
    bb_t raw[MAXS];      /* the images of ``drawn`` (have_raw) */
    uint8_t dtake[MAXB], ddecl[MAXB]; /* the decision points (take, decline) */
    uint8_t moves[MAXL + 2];
    uint8_t gen[MAXL];   /* the safe lines in generation order when the TT move moved up */
} Node;

/* node_etc's keys of the safe lines' children, handed to node_children. (Apart from Node, and
 * first used by node_etc: the compiler then lets them share their stack with what the phases
 * before need, gen_safe's sort keys; in Node they made search()'s frame 1 KiB larger.) */
typedef struct {
    int n;              /* how many (0: none computed) */
    bb_t key[MAXL];     /* the keys, */
    uint8_t sym[MAXL];  /* their symmetries, */
    int8_t pos[MAXL];   /* and each line's index in them (-1: none) */
} ChildKeys;

static int search(Core *S, bb_t drawn, int alpha, int beta, int depth, uint8_t *vals,
                  const bb_t *praw, int pline, int has_key, bb_t hkey, int hs,
                  const Probe *probed);

/* node_leaf's horizon evaluation, kept out of search(): inlined there, its fills' 17 KiB of
 * stack were part of every node's frame and its loops compiled worse. */
static __attribute__((noinline)) int leaf_evaluate(const Board *B, Memos *M, bb_t drawn,
                                                   const uint8_t *vals)
{
    return evaluate(B, M, drawn, vals);
}

/* 1. Forced captures. */
NODE_PHASE int node_captures(Core *S, Node *N)
{
    const Board *B = S->B;
    const int nb = B->nb;
    uint8_t *vals = N->vals;
    N->gained = 0;
    N->ndec = -1;
    if (has3(vals, nb)) {
        N->drawn = capture_phase(B, N->drawn, vals, &N->gained, N->dtake, N->ddecl, &N->ndec);
        if (N->drawn == B->full) {
            N->value = 0;
            return 1;
        }
        N->alpha -= N->gained;
        N->beta -= N->gained;
    } else if (N->drawn == B->full) {
        N->value = 0;
        return 1;
    }
    int n4 = 0;
    for (int b = 0; b < nb; b++)
        n4 += vals[b] == 4;
    int rem = nb - n4;
    if (N->alpha >= rem) {
        N->value = rem;
        return 1;
    }
    if (N->beta <= -rem) {
        N->value = -rem;
        return 1;
    }
    return 0;
}

/* 2. Table probe. ``praw``/``pline``, ``has_key``/``hkey``/``hs``, ``probed``: as search's. */
NODE_PHASE int node_probe(Core *S, Node *N, const bb_t *praw, int pline, int has_key,
                          bb_t hkey, int hs, const Probe *probed)
{
    const Board *B = S->B;
    const int nsym = S->nsym;
    const bb_t drawn = N->drawn;
    N->have_raw = 0;
    if (nsym > 1 && !has_key) {
        if (praw) {
            for (int i = 0; i < nsym; i++)
                N->raw[i] = praw[i] | B->limg[pline][i];
            for (bb_t diff = drawn ^ N->d0; diff; diff &= diff - 1) {
                int l = bb_low(diff);
                for (int i = 0; i < nsym; i++)
                    N->raw[i] |= B->limg[l][i];
            }
        } else
            images(B, nsym, drawn, N->raw);
        N->have_raw = 1;
    }
    if (has_key) {
        N->key = hkey;
        N->s = hs;
    } else if (nsym > 1)
        N->key = key_of_images(B, nsym, N->raw, &N->s);
    else {
        N->key = twin_sort(B, drawn);
        N->s = 0;
    }
    N->ttmove = -1;
    /* the parent's probe of this key, when nothing was stored since */
    Probe pe;
    int found;
    if (has_key == 2) {
        found = probed != NULL;
        if (found)
            pe = *probed;
    } else
        found = tt_get(S->T, N->key, &pe);
    if (found) {
        S->tt_hits++;
        int ed = pe.depth, lo = pe.lo, hi = pe.hi, m = pe.move;
        if (ed >= N->depth) {
            if (lo >= N->beta || lo == hi) {
                if (ed < PROVEN)
                    S->horizon++;
                N->value = lo;
                return 1;
            }
            if (hi <= N->alpha) {
                if (ed < PROVEN)
                    S->horizon++;
                N->value = hi;
                return 1;
            }
        }
        if (m >= 0 && (ed >= PROVEN || N->depth < HEUR))
            N->ttmove = from_key_frame(B, drawn, m, N->s);
    }
    return 0;
}

/* 3. Loony endgame / leaf. */
NODE_PHASE int node_leaf(Core *S, Node *N)
{
    const Board *B = S->B;
    const int nb = B->nb;
    const uint8_t *vals = N->vals;
    if (N->ndec > 0)
        return 0;
    int loony = 1;
    for (int b = 0; b < nb; b++)
        if (vals[b] < 2) {
            loony = 0;
            break;
        }
    if (loony) {
        uint8_t chains[MAXCOMP], loops[MAXCOMP];
        int nc, nlp, joints;
        component_counts(B, N->drawn, vals, chains, &nc, loops, &nlp, &joints);
        sort_u8(chains, nc);
        sort_u8(loops, nlp);
        int v = -loony_value(S->M, chains, nc, loops, nlp);
        tt_store(S->T, N->key, PROVEN, v, v, -1);
        N->value = v;
        return 1;
    }
    if (N->depth <= 0) {
        S->horizon++;
        N->value = leaf_evaluate(B, S->M, N->drawn, vals);
        return 1;
    }
    return 0;
}

/* 4. Generate and order. */
NODE_PHASE void node_generate(Core *S, Node *N)
{
    uint8_t *moves = N->moves;
    int nm = 0;
    N->unsafe = 0;
    N->tried = -1;
    if (N->ndec > 0) {
        for (int i = 0; i < N->ndec; i++)
            moves[nm++] = N->dtake[i];
        if (N->ndec == 1)
            moves[nm++] = N->ddecl[0];
    } else
        nm = gen_safe(S, N->drawn, N->vals, N->depth >= HEUR, moves, &N->unsafe);
    N->nsafe = nm;
    N->safe = moves;
    int ttmove = N->ttmove;
    if (ttmove >= 0) {
        int idx = -1;
        for (int i = 0; i < nm; i++)
            if (moves[i] == ttmove) {
                idx = i;
                break;
            }
        if (idx > 0) {
            memcpy(N->gen, moves, nm);
            N->safe = N->gen;
            memmove(moves + 1, moves, idx);
            moves[0] = (uint8_t)ttmove;
        } else if (idx < 0 && HAS(N->unsafe, ttmove)) {
            memmove(moves + 1, moves, nm);
            moves[0] = (uint8_t)ttmove;
            nm++;
            N->tried = ttmove;
            N->safe = moves + 1;
        }
    }
    N->nm = nm;
}

/* 5. Enhanced transposition cutoffs. */
NODE_PHASE int node_etc(Core *S, Node *N, ChildKeys *K)
{
    const Board *B = S->B;
    Table *T = S->T;
    const int nsym = S->nsym;
    const bb_t drawn = N->drawn;
    K->n = 0;
    if (N->ndec > 0 || bb_count(B->full & ~drawn) < S->etc_min_free)
        return 0;
    const uint8_t *safe = N->safe;
    const int nsafe = N->nsafe, depth = N->depth;
    bb_t *raw = N->raw, *ck = K->key;
    int nck = 0;
    int cdepth = depth - 1;
    bb_t srt[MAXS];
    if (nsym > 1) {
        if (!N->have_raw) {
            images(B, nsym, drawn, raw);
            N->have_raw = 1;
        }
        for (int i = 0; i < nsym; i++)
            srt[i] = twin_sort(B, raw[i]);
    }
    memset(K->pos, -1, B->nl);
    for (int i = 0; i < nsafe; i++) {
        int ln = safe[i];
        bb_t k;
        int ks = 0;
        if (nsym > 1) {
            const bb_t *img = B->limg[ln];
            if (HAS(B->twin_line, ln)) {
                k = twin_sort(B, raw[0] | img[0]);
                for (int j = 1; j < nsym; j++) {
                    bb_t m = twin_sort(B, raw[j] | img[j]);
                    if (m < k) {
                        k = m;
                        ks = j;
                    }
                }
            } else {
                /* a line of no twin group: the sorted images stay sorted */
                k = srt[0] | img[0];
                for (int j = 1; j < nsym; j++) {
                    bb_t m = srt[j] | img[j];
                    if (m < k) {
                        k = m;
                        ks = j;
                    }
                }
            }
        } else
            k = twin_sort(B, drawn | BIT(ln));
        ck[nck] = k;
        K->sym[nck] = (uint8_t)ks;
        K->pos[ln] = (int8_t)nck++;
        tt_prefetch(T, k);
    }
    K->n = nck;
    for (int i = 0; i < nck; i++) {
        Probe cp;
        if (tt_get(T, ck[i], &cp) && cp.depth >= cdepth && -cp.hi >= N->beta) {
            int ln = safe[i];
            int v = -cp.hi, cd = cp.depth;
            if (cd < PROVEN)
                S->horizon++;
            int cm = N->s ? B->perm[N->s][ln] : ln;
            tt_store(T, N->key, cd >= PROVEN ? PROVEN : depth, v, INF, cm);
            N->value = v;
            return 1;
        }
    }
    return 0;
}

/* 6. Children. */
NODE_PHASE int node_children(Core *S, Node *N, const ChildKeys *K)
{
    const Board *B = S->B;
    Table *T = S->T;
    const int nsym = S->nsym, nb = B->nb;
    const bb_t drawn = N->drawn;
    uint8_t *vals = N->vals, *moves = N->moves;
    const int beta = N->beta, depth = N->depth, nck = K->n, tried = N->tried;
    const bb_t *ck = K->key;
    const uint8_t *cks = K->sym;
    const int8_t *ckpos = K->pos;
    int alpha = N->alpha, nm = N->nm;
    bb_t unsafe = N->unsafe;
    if (nsym > 1 && !N->have_raw) {
        images(B, nsym, drawn, N->raw);
        N->have_raw = 1;
    }
    const bb_t *craw = nsym > 1 ? N->raw : NULL;

    long long h0 = S->horizon;
    int best = -INF, bestm = -1, first = 1, sac = 0;
    uint8_t cv[MAXB];
    int8_t sbound[MAXL + 2];
    for (;;) {
        int cut = 0;
        for (int i = 0; i < nm; i++) {
            int ln = moves[i], v = 0, have_v = 0, c = 0;
            if (sac && sbound[i] <= alpha && S->loony_bound) {
                /* a loony sacrifice whose bound cannot reach into the window */
                if (sbound[i] > best) {
                    best = sbound[i];
                    bestm = ln;
                }
                continue;
            }
            int ki = nck ? ckpos[ln] : -1;
            bb_t child = drawn | BIT(ln);
            Probe cp;
            const Probe *ce = NULL;
            if (ki >= 0) {
                if (tt_get(T, ck[ki], &cp))
                    ce = &cp;
                if (ce && ce->depth >= depth - 1) {
                    int clo = ce->lo, chi = ce->hi, cd = ce->depth;
                    if (clo == chi || clo >= -alpha) {
                        v = -clo;
                        have_v = 1;
                    } else if (chi <= (first ? -beta : -alpha - 1)) {
                        v = -chi;
                        have_v = 1;
                    }
                    if (have_v) {
                        S->nodes++;
                        S->tt_hits++;
                        if (cd < PROVEN)
                            S->horizon++;
                        if (!first && alpha < v && v < beta && clo != chi) {
                            memcpy(cv, vals, nb);
                            for (int j = 0; j < 2; j++) {
                                int b = B->line_box[ln][j];
                                if (b >= 0)
                                    cv[b]++;
                            }
                            v = -search(S, child, -beta, -alpha, depth - 1, cv, craw, ln, 1,
                                        ck[ki], cks[ki], NULL);
                            if (S->abort)
                                return 1;
                        }
                    }
                }
            }
            if (!have_v) {
                memcpy(cv, vals, nb);
                for (int j = 0; j < 2; j++) {
                    int b = B->line_box[ln][j];
                    if (b >= 0) {
                        if (cv[b] == 3)
                            c++;
                        cv[b]++;
                    }
                }
                /* 2: the key and its probe just now (nothing stored since) */
                int hk = ki >= 0 ? 2 : 0;
                bb_t kk = hk ? ck[ki] : 0;
                int ks = hk ? cks[ki] : 0;
                if (c) {
                    uint8_t cv2[MAXB];
                    memcpy(cv2, cv, nb);
                    if (first)
                        v = c + search(S, child, alpha - c, beta - c, depth, cv, craw, ln, 0, 0,
                                       0, NULL);
                    else {
                        v = c + search(S, child, alpha - c, alpha + 1 - c, depth, cv, craw, ln,
                                       0, 0, 0, NULL);
                        if (S->abort)
                            return 1;
                        if (alpha < v && v < beta)
                            v = c + search(S, child, alpha - c, beta - c, depth, cv2, craw, ln,
                                           0, 0, 0, NULL);
                    }
                } else if (first)
                    v = -search(S, child, -beta, -alpha, depth - 1, cv, craw, ln, hk, kk, ks,
                                ce);
                else {
                    uint8_t cv2[MAXB];
                    memcpy(cv2, cv, nb);
                    v = -search(S, child, -alpha - 1, -alpha, depth - 1, cv, craw, ln, hk, kk,
                                ks, ce);
                    if (S->abort)
                        return 1;
                    if (alpha < v && v < beta)
                        v = -search(S, child, -beta, -alpha, depth - 1, cv2, craw, ln, hk ? 1 : 0,
                                    kk, ks, NULL);
                }
                if (S->abort)
                    return 1;
            }
            first = 0;
            if (v > best) {
                best = v;
                bestm = ln;
                if (v > alpha) {
                    alpha = v;
                    if (v >= beta) {
                        if (!c && depth < HEUR)
                            S->history[ln] += (long long)depth * depth + 1;
                        cut = 1;
                        break;
                    }
                }
            }
        }
        if (cut)
            break;
        if (unsafe) {
            /* no safe line cut the node off: now the sacrifices */
            int any_safe = nm > (tried >= 0);
            unsafe = 0;
            if (depth < HEUR) {
                S->pruned = 0;
                nm = gen_sacrifices(S, drawn, vals, 1, any_safe, moves, sbound);
                if (S->pruned)
                    S->horizon++;
            } else
                nm = gen_sacrifices(S, drawn, vals, 0, 0, moves, sbound);
            sac = 1;
            if (tried >= 0)
                for (int i = 0; i < nm; i++)
                    if (moves[i] == tried) {
                        memmove(moves + i, moves + i + 1, nm - i - 1);
                        memmove(sbound + i, sbound + i + 1, nm - i - 1);
                        nm--;
                        break;
                    }
            if (nm)
                continue;
        }
        break;
    }
    N->best = best;
    N->bestm = bestm;
    N->proven = S->horizon == h0;
    return 0;
}

/* 7. Store. */
NODE_PHASE void node_store(Core *S, Node *N)
{
    const Board *B = S->B;
    int best = N->best, s = N->s, bestm = N->bestm;
    int lo, hi;
    if (best <= N->alpha) {
        lo = -INF;
        hi = best;
    } else if (best >= N->beta) {
        lo = best;
        hi = INF;
    } else
        lo = hi = best;
    int cm = (s && bestm >= 0) ? B->perm[s][bestm] : bestm;
    tt_store(S->T, N->key, N->proven ? PROVEN : N->depth, lo, hi, cm);
}

/* The node: the phases above in order. ``vals``: the valences of ``drawn`` (the callee's
 * copy). ``praw``/``pline``: the parent's images and the line drawn from it (NULL: computed
 * here); ``hkey``: the key when the parent's enhanced transposition cutoff computed it
 * (has_key; 2: ``probed`` is its probe just now, NULL when absent). */
static int search(Core *S, bb_t drawn, int alpha, int beta, int depth, uint8_t *vals,
                  const bb_t *praw, int pline, int has_key, bb_t hkey, int hs,
                  const Probe *probed)
{
    long long n = ++S->nodes;
    if (!(n & 15) && limits_reached(S)) {
        S->abort = 1;
        return 0;
    }
    Node N;
    N.drawn = N.d0 = drawn;
    N.vals = vals;
    N.alpha = alpha;
    N.beta = beta;
    N.depth = depth;
    if (node_captures(S, &N))
        return N.gained + N.value;
    if (node_probe(S, &N, praw, pline, has_key, hkey, hs, probed))
        return N.gained + N.value;
    if (node_leaf(S, &N))
        return N.gained + N.value;
    node_generate(S, &N);
    ChildKeys K;
    if (node_etc(S, &N, &K))
        return N.gained + N.value;
    if (node_children(S, &N, &K))
        return 0; /* a limit stopped the search */
    node_store(S, &N);
    return N.gained + N.best;
}

