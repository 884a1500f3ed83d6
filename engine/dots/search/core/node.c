/* The node of the search: its seven phases (node_children's in named steps), search() and
 * search_root(). */
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
 * search() runs each node as the seven phases of ``PHASES`` below, in that order; what each
 * promises is written once, in engine/dots/search/phases.py. A phase that settles the node
 * (node_captures, node_probe, node_leaf, node_etc) returns 1 and leaves in ``N->value`` the
 * value of the position after the forced captures (search() adds the boxes they took);
 * node_children returns 1 when a limit stopped the search.
 *
 * The phases, and the steps of node_children, are static inline functions forced inline, so
 * search() compiles to one function; the horizon evaluation is the one call kept out of it
 * (leaf_evaluate).
 */
#define NODE_PHASE static inline __attribute__((always_inline))
#define NODE_STEP NODE_PHASE

/* The phases' names, in the order search() calls them (the module's PHASES). */
static const char *const PHASES[] = {"node_captures", "node_probe",    "node_leaf", "node_generate",
                                     "node_etc",      "node_children", "node_store"};

/* Core.settled's names, by SET_* (core.h). */
static const char *const SETTLED[NSETTLED] = {"node_captures", "node_probe", "chain_dp",
                                              "chain_graph",   "horizon",    "node_etc",
                                              "node_children", "parent_read"};

/* A call of search(): the position and the window, and what the caller already computed of
 * the position. */
typedef struct {
    bb_t drawn;
    uint8_t *vals;       /* the valences of ``drawn`` (the callee's copy: search() changes it) */
    int alpha, beta, depth;
    const bb_t *praw;    /* the parent's images (NULL: computed here), */
    int pline;           /* and the line drawn from the parent */
    int has_key;         /* 1: ``key`` (in the frame of symmetry ``sym``) is the position's
                            key, computed by the parent's cutoffs; 2: and ``probed`` is its
                            probe just now (NULL: absent) */
    int sym;
    bb_t key;
    const Probe *probed;
} SearchCall;

/* The state of one node, handed from phase to phase. */
typedef struct {
    bb_t drawn;          /* the position, after the forced captures */
    bb_t d0;             /* before them */
    bb_t key;            /* its table key, in the frame of symmetry ``s`` */
    bb_t unsafe;         /* the undrawn lines that are not safe: the sacrifices to generate
                            (node_leaf's, 0 at a decision point) */
    uint8_t *vals;       /* the valences of ``drawn`` (the node's own copy) */
    const uint8_t *safe; /* the safe lines in generation order (node_etc) */
    int alpha, beta;     /* the window, less the boxes of the captures */
    int depth, gained, ndec, s, ttmove, have_raw, nm, nsafe, tried;
    int value;           /* the value after the captures, when a phase settled the node */
    int best, bestm, proven; /* node_children's result */
    long long n0;        /* this thread's node count on entering the node */
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

static int search(Core *S, const SearchCall *a);

/* node_leaf's horizon evaluation, kept out of search(): inlined there, its fills' 17 KiB of
 * stack were part of every node's frame and its loops compiled worse. */
static __attribute__((noinline)) int leaf_evaluate(const Core *S, bb_t drawn,
                                                   const uint8_t *vals)
{
    return evaluate(S->B, S->M, S->model, drawn, vals);
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

/* 2. Table probe. ``a``: the call of search() (what the parent computed). */
NODE_PHASE int node_probe(Core *S, Node *N, const SearchCall *a)
{
    const Board *B = S->B;
    const int nsym = S->nsym, has_key = a->has_key;
    const bb_t drawn = N->drawn;
    N->have_raw = 0;
    if (nsym > 1 && !has_key) {
        if (a->praw) {
            for (int i = 0; i < nsym; i++)
                N->raw[i] = a->praw[i] | B->limg[a->pline][i];
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
        N->key = a->key;
        N->s = a->sym;
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
        found = a->probed != NULL;
        if (found)
            pe = *a->probed;
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

/* 3. Loony endgame, no safe line left (the chain graph), or leaf. */
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
    /* (for node_generate too: the sacrifices, and the lines gen_safe leaves out) */
    N->unsafe = unsafe_lines(B, N->drawn, vals);
    if (loony) {
        uint8_t chains[MAXCOMP], loops[MAXCOMP];
        int nc, nlp, joints;
        component_counts(B, N->drawn, vals, chains, &nc, loops, &nlp, &joints);
        sort_u8(chains, nc);
        sort_u8(loops, nlp);
        int v = -loony_value(S->M, chains, nc, loops, nlp);
        tt_store(S->T, N->key, PROVEN, v, v, -1);
        N->value = v;
        S->settled[SET_CHAIN_DP]++;
        return 1;
    }
    int v;
    if (S->chain_graph && N->unsafe == (B->full & ~N->drawn) &&
        graph_position_value(S, N->drawn, vals, &v)) {
        tt_store(S->T, N->key, PROVEN, v, v, -1);
        N->value = v;
        S->settled[SET_GRAPH]++;
        return 1;
    }
    if (N->depth <= 0) {
        S->horizon++;
        S->settled[SET_HORIZON]++;
        N->value = leaf_evaluate(S, N->drawn, vals);
        return 1;
    }
    return 0;
}

/* 4. Generate and order. */
NODE_PHASE void node_generate(Core *S, Node *N)
{
    uint8_t *moves = N->moves;
    int nm = 0;
    N->tried = -1;
    if (N->ndec > 0) {
        N->unsafe = 0;
        for (int i = 0; i < N->ndec; i++)
            moves[nm++] = N->dtake[i];
        if (N->ndec == 1)
            moves[nm++] = N->ddecl[0];
    } else
        nm = gen_safe(S, N->drawn, N->vals, N->depth >= HEUR, moves, N->unsafe);
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
            tt_store(T, N->key, cd >= PROVEN ? cd : depth, v, INF, cm);
            N->value = v;
            return 1;
        }
    }
    return 0;
}

/* node_children's scan of the moves: the window's lower end so far, the best value and move,
 * and whether a move was searched yet. */
typedef struct {
    int alpha, best, bestm, first;
} Scan;

/* The valences after line ``ln`` in ``cv``; the boxes it completes. */
NODE_STEP int child_vals(const Board *B, const uint8_t *vals, int ln, uint8_t *cv)
{
    int c = 0;
    memcpy(cv, vals, B->nb);
    for (int j = 0; j < 2; j++) {
        int b = B->line_box[ln][j];
        if (b >= 0) {
            if (cv[b] == 3)
                c++;
            cv[b]++;
        }
    }
    return c;
}

/* The child's value to this node, searched with this node's window (lo, hi): a capture
 * (``c`` boxes) keeps the turn, another move gives it (negamax). ``a``: the child's call, all
 * but its window. */
NODE_STEP int child_value(Core *S, SearchCall *a, int c, int lo, int hi)
{
    if (c) {
        a->alpha = lo - c;
        a->beta = hi - c;
        return c + search(S, a);
    }
    a->alpha = -hi;
    a->beta = -lo;
    return -search(S, a);
}

/* Principal variation search of a child: the first move with the full window; a later one
 * with the null window above alpha, then with the full window when its value falls inside. */
NODE_STEP int child_search(Core *S, const Node *N, SearchCall *a, int c, const Scan *sc)
{
    if (sc->first)
        return child_value(S, a, c, sc->alpha, N->beta);
    uint8_t again[MAXB];
    memcpy(again, a->vals, S->B->nb);
    int v = child_value(S, a, c, sc->alpha, sc->alpha + 1);
    if (S->abort || !(sc->alpha < v && v < N->beta))
        return v;
    a->vals = again;
    if (a->has_key == 2) { /* the probe handed down is stale now */
        a->has_key = 1;
        a->probed = NULL;
    }
    return child_value(S, a, c, sc->alpha, N->beta);
}

/* Whether the child's entry ``e`` decides the child's window (deep enough; exact, or a bound
 * outside the window, which is the null window above alpha after the first move): its value
 * to this node in *v, counted as a node searched and a table hit, as the child's own probe
 * would count it. */
NODE_STEP int child_entry_decides(Core *S, const Node *N, const Scan *sc, const Probe *e,
                                  int *v)
{
    if (e->depth < N->depth - 1)
        return 0;
    if (e->lo == e->hi || e->lo >= -sc->alpha)
        *v = -e->lo;
    else if (e->hi <= (sc->first ? -N->beta : -sc->alpha - 1))
        *v = -e->hi;
    else
        return 0;
    S->nodes++;
    S->settled[SET_READ]++;
    S->tt_hits++;
    if (e->depth < PROVEN)
        S->horizon++;
    return 1;
}

/* The value to this node of line ``ln``'s child (``*c``: the boxes the line completes): from
 * the child's entry when node_etc keyed the child and the entry decides its window (a bound
 * inside a later move's window is searched again with the full window), else searched. */
NODE_STEP int child(Core *S, const Node *N, const ChildKeys *K, const Scan *sc, int ln, int *c)
{
    const Board *B = S->B;
    uint8_t cv[MAXB];
    SearchCall a = {.drawn = N->drawn | BIT(ln), .vals = cv, .depth = N->depth - 1,
                    .praw = S->nsym > 1 ? N->raw : NULL, .pline = ln};
    int ki = K->n ? K->pos[ln] : -1;
    Probe cp;
    if (ki >= 0) {
        a.has_key = 2;
        a.key = K->key[ki];
        a.sym = K->sym[ki];
        if (tt_get(S->T, a.key, &cp))
            a.probed = &cp;
        int v;
        if (a.probed && child_entry_decides(S, N, sc, &cp, &v)) {
            if (sc->first || !(sc->alpha < v && v < N->beta) || cp.lo == cp.hi)
                return v;
            child_vals(B, N->vals, ln, cv);
            a.has_key = 1;
            a.probed = NULL;
            return child_value(S, &a, 0, sc->alpha, N->beta);
        }
    }
    *c = child_vals(B, N->vals, ln, cv);
    if (*c)
        a.depth = N->depth;
    return child_search(S, N, &a, *c, sc);
}

/* Searches the first ``nm`` of N->moves in order: 1 at a cutoff (the move's history
 * credited), -1 when a limit stopped the search, else 0. ``bound``: the sacrifices' bounds
 * (NULL for the first moves): a loony sacrifice whose bound cannot reach into the window is
 * not searched, its bound taken as its value (loony_bound). */
NODE_STEP int scan_moves(Core *S, const Node *N, const ChildKeys *K, Scan *sc, int nm,
                         const int8_t *bound)
{
    for (int i = 0; i < nm; i++) {
        int ln = N->moves[i], c = 0;
        if (bound && bound[i] <= sc->alpha && S->loony_bound) {
            if (bound[i] > sc->best) {
                sc->best = bound[i];
                sc->bestm = ln;
            }
            continue;
        }
        int v = child(S, N, K, sc, ln, &c);
        if (S->abort)
            return -1;
        sc->first = 0;
        if (v > sc->best) {
            sc->best = v;
            sc->bestm = ln;
            if (v > sc->alpha) {
                sc->alpha = v;
                if (v >= N->beta) {
                    if (!c && N->depth < HEUR)
                        S->history[ln] += (long long)N->depth * N->depth + 1;
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* The sacrifices, in N->moves with their bounds (how many), once no safe line cut the node
 * off: below the proof depth, the long ones are pruned when a safe line was there (a
 * heuristic value when it did); the TT move, searched first already ("tried"), is left out. */
NODE_STEP int sacrifices_left(Core *S, Node *N, int8_t *bound)
{
    const int tried = N->tried;
    uint8_t *moves = N->moves;
    int nm;
    if (N->depth < HEUR) {
        S->pruned = 0;
        nm = gen_sacrifices(S, N->drawn, N->vals, 1, N->nm > (tried >= 0), moves, bound);
        if (S->pruned)
            S->horizon++;
    } else
        nm = gen_sacrifices(S, N->drawn, N->vals, 0, 0, moves, bound);
    if (tried >= 0)
        for (int i = 0; i < nm; i++)
            if (moves[i] == tried) {
                memmove(moves + i, moves + i + 1, nm - i - 1);
                memmove(bound + i, bound + i + 1, nm - i - 1);
                nm--;
                break;
            }
    return nm;
}

/* 6. Children. */
NODE_PHASE int node_children(Core *S, Node *N, const ChildKeys *K)
{
    if (S->nsym > 1 && !N->have_raw) {
        images(S->B, S->nsym, N->drawn, N->raw);
        N->have_raw = 1;
    }
    long long h0 = S->horizon;
    Scan sc = {.alpha = N->alpha, .best = -INF, .bestm = -1, .first = 1};
    int8_t sbound[MAXL + 2];
    const int8_t *bound = NULL;
    int nm = N->nm, r;
    for (;;) {
        r = scan_moves(S, N, K, &sc, nm, bound);
        if (r || bound || !N->unsafe)
            break;
        nm = sacrifices_left(S, N, sbound);
        bound = sbound;
    }
    if (r < 0)
        return 1;
    N->best = sc.best;
    N->bestm = sc.bestm;
    N->proven = S->horizon == h0;
    return 0;
}

/* The depth a proof of this node is stored at: PROVEN plus the bit length of the nodes its
 * search took on this thread (sized_proofs), so that the table replaces the cheapest proofs
 * first (table.c); else PROVEN. */
NODE_STEP int proven_depth(const Core *S, const Node *N)
{
    long long n = S->nodes - N->n0;
    return S->sized_proofs && n > 0 ? PROVEN + 64 - __builtin_clzll((unsigned long long)n)
                                    : PROVEN;
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
    tt_store(S->T, N->key, N->proven ? proven_depth(S, N) : N->depth, lo, hi, cm);
}

/* The node: the phases above in order (``a``: the call). */
static int search(Core *S, const SearchCall *a)
{
    long long n = ++S->nodes;
    if (!(n & 15) && limits_reached(S)) {
        S->abort = 1;
        return 0;
    }
    Node N;
    N.drawn = N.d0 = a->drawn;
    N.vals = a->vals;
    N.alpha = a->alpha;
    N.beta = a->beta;
    N.depth = a->depth;
    N.n0 = n;
    if (node_captures(S, &N)) {
        S->settled[SET_CAPTURES]++;
        return N.gained + N.value;
    }
    if (node_probe(S, &N, a)) {
        S->settled[SET_PROBE]++;
        return N.gained + N.value;
    }
    if (node_leaf(S, &N))
        return N.gained + N.value;
    node_generate(S, &N);
    ChildKeys K;
    if (node_etc(S, &N, &K)) {
        S->settled[SET_ETC]++;
        return N.gained + N.value;
    }
    if (node_children(S, &N, &K))
        return 0; /* a limit stopped the search */
    S->settled[SET_SEARCHED]++;
    node_store(S, &N);
    return N.gained + N.best;
}

/* search() of a root position (``vals``: its valences, changed by the search). */
static int search_root(Core *S, bb_t drawn, int alpha, int beta, int depth, uint8_t *vals)
{
    SearchCall a = {.drawn = drawn, .vals = vals, .alpha = alpha, .beta = beta, .depth = depth};
    return search(S, &a);
}
