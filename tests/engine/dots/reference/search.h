/* The search of the reference solver over one type of mask, included twice by solver.c:
 * once with MASK = uint64_t (boards of up to 64 lines), once with MASK = unsigned __int128
 * (up to 128). The includer defines
 *   MASK       the type of a set of lines,
 *   NAMED(f)   this instance's name for the function f,
 *   FULL       the board's lines, and BOX_MASK[b] the four lines of box b, as MASKs,
 *   HALVES     the 64-bit halves a MASK has (1 or 2), HALF(m, i) the i-th one.
 * Everything else (the table, the board's line-to-box masks, the history, the limits) is
 * solver.c's and shared by both instances. */

static inline int NAMED(popcount)(MASK m) {
    int n = 0;
    for (int i = 0; i < HALVES; i++) n += __builtin_popcountll(HALF(m, i));
    return n;
}

static inline Entry *NAMED(probe)(MASK d) {
    return probe(HALF(d, 0), HALVES > 1 ? HALF(d, HALVES - 1) : 0);
}

static inline void NAMED(store)(MASK d, int undrawn, int lo, int hi, int move) {
    store(HALF(d, 0), HALVES > 1 ? HALF(d, HALVES - 1) : 0, undrawn, lo, hi, move);
}

/* Negamax alpha-beta, fail-soft. ``left``: boxes not yet completed in d. */
static int NAMED(search)(MASK d, int alpha, int beta, int left) {
    if (d == FULL) return 0;
    if (left <= alpha) return left;   /* the value is at most left */
    if (-left >= beta) return -left;  /* and at least -left */
    nodes++;
    if ((nodes & 0x3fff) == 0) {
        if ((max_nodes > 0 && nodes >= max_nodes) || (deadline > 0 && now() > deadline))
            aborted = 1;
    }
    if (aborted) return 0;

    MASK free_lines = FULL & ~d;
    int undrawn = NAMED(popcount)(free_lines);
    int tt_move = NO_MOVE;
    Entry *e = NAMED(probe)(d);
    if (e) {
        int lo = e->lo, hi = e->hi;
        if (lo >= beta) return lo;
        if (hi <= alpha) return hi;
        if (lo == hi) return lo;
        if (lo > alpha) alpha = lo;
        if (hi < beta) beta = hi;
        tt_move = e->move;
    }

    /* valence 2 and valence 3 boxes */
    uint64_t v2 = 0, v3 = 0;
    for (int b = 0; b < nb; b++) {
        int c = NAMED(popcount)(d & BOX_MASK[b]);
        if (c == 3) v3 |= (uint64_t)1 << b;
        else if (c == 2) v2 |= (uint64_t)1 << b;
    }

    /* order: table move, captures (two boxes before one), safe lines, lines that give one
     * box its third side, lines that give two */
    uint8_t order[MAX_LINES];
    uint8_t caps[MAX_LINES], safe[MAX_LINES], give1[MAX_LINES], give2[MAX_LINES];
    int nc = 0, ns = 0, ng1 = 0, ng2 = 0, n = 0;
    for (int half = 0; half < HALVES; half++) {
        uint64_t f = HALF(free_lines, half);
        while (f) {
            int ln = 64 * half + __builtin_ctzll(f);
            f &= f - 1;
            if (ln == tt_move) continue;
            uint64_t lb = line_box_mask[ln];
            int c = __builtin_popcountll(lb & v3);
            if (c) {
                caps[nc++] = (uint8_t)(ln | (c == 2 ? 0x80 : 0)); /* ln < 128: bit 7 free */
            } else {
                int g = __builtin_popcountll(lb & v2);
                if (g == 0) safe[ns++] = (uint8_t)ln;
                else if (g == 1) give1[ng1++] = (uint8_t)ln;
                else give2[ng2++] = (uint8_t)ln;
            }
        }
    }
    by_history(safe, ns);
    by_history(give1, ng1);
    if (tt_move != NO_MOVE && ((free_lines >> tt_move) & 1)) order[n++] = (uint8_t)tt_move;
    for (int i = 0; i < nc; i++) if (caps[i] & 0x80) order[n++] = caps[i] & 0x7f;
    for (int i = 0; i < nc; i++) if (!(caps[i] & 0x80)) order[n++] = caps[i];
    memcpy(order + n, safe, ns); n += ns;
    memcpy(order + n, give1, ng1); n += ng1;
    memcpy(order + n, give2, ng2); n += ng2;

    /* enhanced transposition cut-off: a child whose table bounds already refute the window
     * (probed only far from the leaves, where a search saved is worth the probes) */
    if (undrawn >= ETC_MIN_UNDRAWN) {
        for (int i = 0; i < n; i++) {
            MASK child = d | (MASK)1 << order[i];
            __builtin_prefetch(bucket_of(HALF(child, 0),
                                         HALVES > 1 ? HALF(child, HALVES - 1) : 0));
        }
        for (int i = 0; i < n; i++) {
            int ln = order[i];
            Entry *ce = NAMED(probe)(d | (MASK)1 << ln);
            if (!ce) continue;
            int c = __builtin_popcountll(line_box_mask[ln] & v3);
            int lower = c ? c + ce->lo : -ce->hi;
            if (lower >= beta) {
                NAMED(store)(d, undrawn, lower, BIG, ln);
                return lower;
            }
        }
    }

    int a0 = alpha;
    int best = -BIG, best_move = NO_MOVE;
    for (int i = 0; i < n; i++) {
        int ln = order[i];
        MASK child = d | (MASK)1 << ln;
        int c = __builtin_popcountll(line_box_mask[ln] & v3);
        int v;
        if (c) v = c + NAMED(search)(child, alpha - c, beta - c, left - c);
        else v = -NAMED(search)(child, -beta, -alpha, left);
        if (aborted) return 0;
        if (v > best) {
            best = v;
            best_move = ln;
            if (v > alpha) {
                alpha = v;
                if (v >= beta) {
                    if (!c) history[ln] += (uint64_t)undrawn * undrawn;
                    break;
                }
            }
        }
    }
    if (best <= a0) NAMED(store)(d, undrawn, -BIG, best, best_move);
    else if (best >= beta) NAMED(store)(d, undrawn, best, BIG, best_move);
    else NAMED(store)(d, undrawn, best, best, best_move);
    return best;
}

static int NAMED(completed_boxes)(MASK d) {
    int k = 0;
    for (int b = 0; b < nb; b++)
        if ((d & BOX_MASK[b]) == BOX_MASK[b]) k++;
    return k;
}

/* MTD(f) from ``drawn`` (see ref_solve); the board is set up and the limits are set. */
static void NAMED(mtdf)(MASK drawn, int *value) {
    int left = nb - NAMED(completed_boxes)(drawn);
    int lo = -left, hi = left;
    Entry *e = NAMED(probe)(drawn);
    if (e) {
        if (e->lo > lo) lo = e->lo;
        if (e->hi < hi) hi = e->hi;
    }
    int g = 0;
    if (g < lo) g = lo;
    if (g > hi) g = hi;
    while (lo < hi) {
        int beta = g == lo ? g + 1 : g;
        int v = NAMED(search)(drawn, beta - 1, beta, left);
        if (aborted) return;
        if (v >= beta) lo = v;
        else hi = v;
        g = v;
    }
    *value = lo;
}
