/* The reference Dots-and-Boxes solver: the oracle the engine is checked against.
 *
 * It shares no code and no tables with the engine (engine/dots/): everything here is derived
 * from the board's width and height alone. It is deliberately plain: negamax alpha-beta over
 * a bitmask of drawn lines, a transposition table of lower/upper bounds keyed by that mask,
 * and move ordering only (the table's move, captures, lines that give no box its third side,
 * then the rest; within a group by the history heuristic), driven by MTD(f) zero-window
 * searches, with enhanced transposition cut-offs. No Dots-and-Boxes strategy prunes
 * anything: every legal line is searched.
 * The only cut-offs besides alpha-beta are arithmetic: a position's value lies in
 * [-r, r] for r undecided boxes.
 *
 * Lines are OpenSpiel's action ids: horizontal lines first, row-major ((h + 1) * w of them),
 * then vertical ones (h * (w + 1)). Box (r, c) is bordered by top r*w+c, bottom (r+1)*w+c,
 * left H + r*(w+1)+c and right H + r*(w+1)+c+1, where H = (h + 1) * w.
 *
 * Value: the boxes the player to move will still take minus the opponent's, under optimal
 * play. A line that completes c > 0 boxes keeps the turn (value c + child), any other line
 * passes it (value -child).
 *
 * Boards of at most 64 lines (so at most 25 boxes). Not thread-safe: one table, one search at
 * a time (the Python wrapper holds a lock).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_LINES 64
#define MAX_BOXES 32
#define NO_MOVE 255
#define BIG 100
/* enhanced transposition cut-offs at nodes with this many undrawn lines or more (5x5 with 38
 * undrawn: a third of the nodes and three quarters of the time of none; 6-18 all did better
 * than none, 10 best) */
#define ETC_MIN_UNDRAWN 10

typedef struct {
    uint64_t key;     /* the drawn lines */
    int8_t lo, hi;    /* bounds on the value for the player to move */
    uint8_t move;     /* the best (or refuting) line found, NO_MOVE if none */
    uint8_t undrawn;  /* undrawn lines of the position; 0 = empty slot */
    uint16_t board;   /* which board size the entry belongs to */
    uint16_t pad1;
    uint32_t pad2;
} Entry;

#define WAYS 4 /* entries per bucket: one 64-byte cache line */

static Entry *table = NULL;
static void *table_raw = NULL; /* the mapping (table: its first 2 MiB boundary) */
static size_t table_raw_bytes = 0;
static uint64_t bucket_mask = 0;
static int table_log2 = 0;

/* the board being searched */
static int nl, nb;
static uint16_t board_tag;
static uint64_t full;
static uint64_t box_mask[MAX_BOXES];
static uint32_t line_box_mask[MAX_LINES]; /* the boxes a line borders */

/* the history heuristic: how much each line refuted (cut off) in this solve; it only orders
 * the lines within each of the groups below */
static uint64_t history[MAX_LINES];

/* sorts lines[0..n) by history, highest first (insertion sort: the lists are short) */
static inline void by_history(uint8_t *lines, int n) {
    for (int i = 1; i < n; i++) {
        uint8_t x = lines[i];
        uint64_t hx = history[x];
        int j = i - 1;
        while (j >= 0 && history[lines[j]] < hx) {
            lines[j + 1] = lines[j];
            j--;
        }
        lines[j + 1] = x;
    }
}

/* limits and counters of the current call */
static int64_t nodes, max_nodes;
static double deadline;
static int aborted;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ref_table_free(void) {
    if (table_raw) munmap(table_raw, table_raw_bytes);
    table_raw = NULL;
    table = NULL;
    table_log2 = 0;
}

#define HUGE_PAGE ((size_t)2 << 20)

/* Allocates the table with 2^log2_entries entries (rounded to whole buckets) when it has
 * another size, else keeps it and its contents. Returns 0, or -1 when out of memory. */
int ref_table_init(int log2_entries) {
    if (log2_entries < 4) log2_entries = 4;
    if (table && table_log2 == log2_entries) return 0;
    ref_table_free();
    size_t buckets = (size_t)1 << (log2_entries - 2);
    size_t bytes = buckets * WAYS * sizeof(Entry);
    /* zero pages from the system, touched only as used; aligned to and advised as huge pages
     * where the kernel has them (a probe per node misses the TLB far less often) */
    size_t raw = bytes + HUGE_PAGE;
    void *p = mmap(NULL, raw, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    table_raw = p;
    table_raw_bytes = raw;
    table = (Entry *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    madvise((void *)table, bytes, MADV_HUGEPAGE);
#endif
    bucket_mask = buckets - 1;
    table_log2 = log2_entries;
    return 0;
}

/* Forgets every entry: a fresh block of zero pages (cheaper than writing zeros over a big
 * table, and it gives the touched memory back). Returns 0, or -1 when out of memory. */
int ref_table_clear(void) {
    int log2_entries = table_log2;
    if (!table) return 0;
    ref_table_free();
    return ref_table_init(log2_entries);
}

static int setup_board(int w, int h) {
    if (w < 1 || h < 1) return -1;
    int H = (h + 1) * w;
    int n = H + h * (w + 1);
    if (n > MAX_LINES || w * h > MAX_BOXES) return -1;
    nl = n;
    nb = w * h;
    board_tag = (uint16_t)((w << 8) | h);
    full = nl == 64 ? ~(uint64_t)0 : (((uint64_t)1 << nl) - 1);
    memset(line_box_mask, 0, sizeof line_box_mask);
    for (int r = 0; r < h; r++) {
        for (int c = 0; c < w; c++) {
            int b = r * w + c;
            int top = r * w + c, bottom = (r + 1) * w + c;
            int left = H + r * (w + 1) + c, right = left + 1;
            box_mask[b] = ((uint64_t)1 << top) | ((uint64_t)1 << bottom) |
                          ((uint64_t)1 << left) | ((uint64_t)1 << right);
            line_box_mask[top] |= (uint32_t)1 << b;
            line_box_mask[bottom] |= (uint32_t)1 << b;
            line_box_mask[left] |= (uint32_t)1 << b;
            line_box_mask[right] |= (uint32_t)1 << b;
        }
    }
    return 0;
}

static inline Entry *bucket_of(uint64_t d) {
    uint64_t x = d ^ ((uint64_t)board_tag << 48);
    x *= 0x9E3779B97F4A7C15ULL;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 32;
    return table + (x & bucket_mask) * WAYS;
}

static inline Entry *probe(uint64_t d) {
    Entry *b = bucket_of(d);
    for (int i = 0; i < WAYS; i++)
        if (b[i].undrawn && b[i].key == d && b[i].board == board_tag) return &b[i];
    return NULL;
}

/* Stores bounds [lo, hi] of d (intersected with what the table already knows of d); a new
 * entry replaces the one of its bucket with the fewest undrawn lines (the cheapest to redo). */
static void store(uint64_t d, int undrawn, int lo, int hi, int move) {
    Entry *b = bucket_of(d);
    Entry *e = NULL;
    for (int i = 0; i < WAYS; i++) {
        if (b[i].undrawn && b[i].key == d && b[i].board == board_tag) {
            e = &b[i];
            if (e->lo > lo) lo = e->lo;
            if (e->hi < hi) hi = e->hi;
            if (move == NO_MOVE) move = e->move;
            break;
        }
    }
    if (!e) {
        e = &b[0];
        for (int i = 1; i < WAYS && e->undrawn; i++)
            if (b[i].undrawn < e->undrawn) e = &b[i];
    }
    e->key = d;
    e->board = board_tag;
    e->undrawn = (uint8_t)undrawn;
    e->lo = (int8_t)lo;
    e->hi = (int8_t)hi;
    e->move = (uint8_t)move;
}

/* Negamax alpha-beta, fail-soft. ``left``: boxes not yet completed in d. */
static int search(uint64_t d, int alpha, int beta, int left) {
    if (d == full) return 0;
    if (left <= alpha) return left;   /* the value is at most left */
    if (-left >= beta) return -left;  /* and at least -left */
    nodes++;
    if ((nodes & 0x3fff) == 0) {
        if ((max_nodes > 0 && nodes >= max_nodes) || (deadline > 0 && now() > deadline))
            aborted = 1;
    }
    if (aborted) return 0;

    uint64_t free_lines = full & ~d;
    int undrawn = __builtin_popcountll(free_lines);
    int tt_move = NO_MOVE;
    Entry *e = probe(d);
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
    uint32_t v2 = 0, v3 = 0;
    for (int b = 0; b < nb; b++) {
        int c = __builtin_popcountll(d & box_mask[b]);
        if (c == 3) v3 |= (uint32_t)1 << b;
        else if (c == 2) v2 |= (uint32_t)1 << b;
    }

    /* order: table move, captures (two boxes before one), safe lines, lines that give one
     * box its third side, lines that give two */
    uint8_t order[MAX_LINES];
    uint8_t caps[MAX_LINES], safe[MAX_LINES], give1[MAX_LINES], give2[MAX_LINES];
    int nc = 0, ns = 0, ng1 = 0, ng2 = 0, n = 0;
    uint64_t f = free_lines;
    while (f) {
        int ln = __builtin_ctzll(f);
        f &= f - 1;
        if (ln == tt_move) continue;
        uint32_t lb = line_box_mask[ln];
        int c = __builtin_popcount(lb & v3);
        if (c) {
            caps[nc++] = (uint8_t)(ln | (c == 2 ? 0x80 : 0));
        } else {
            int g = __builtin_popcount(lb & v2);
            if (g == 0) safe[ns++] = (uint8_t)ln;
            else if (g == 1) give1[ng1++] = (uint8_t)ln;
            else give2[ng2++] = (uint8_t)ln;
        }
    }
    by_history(safe, ns);
    by_history(give1, ng1);
    if (tt_move != NO_MOVE && (free_lines >> tt_move & 1)) order[n++] = (uint8_t)tt_move;
    for (int i = 0; i < nc; i++) if (caps[i] & 0x80) order[n++] = caps[i] & 0x7f;
    for (int i = 0; i < nc; i++) if (!(caps[i] & 0x80)) order[n++] = caps[i];
    memcpy(order + n, safe, ns); n += ns;
    memcpy(order + n, give1, ng1); n += ng1;
    memcpy(order + n, give2, ng2); n += ng2;

    /* enhanced transposition cut-off: a child whose table bounds already refute the window
     * (probed only far from the leaves, where a search saved is worth the probes) */
    if (undrawn >= ETC_MIN_UNDRAWN) {
        for (int i = 0; i < n; i++)
            __builtin_prefetch(bucket_of(d | ((uint64_t)1 << order[i])));
        for (int i = 0; i < n; i++) {
            int ln = order[i];
            Entry *ce = probe(d | ((uint64_t)1 << ln));
            if (!ce) continue;
            int c = __builtin_popcount(line_box_mask[ln] & v3);
            int lower = c ? c + ce->lo : -ce->hi;
            if (lower >= beta) {
                store(d, undrawn, lower, BIG, ln);
                return lower;
            }
        }
    }

    int a0 = alpha;
    int best = -BIG, best_move = NO_MOVE;
    for (int i = 0; i < n; i++) {
        int ln = order[i];
        uint64_t child = d | ((uint64_t)1 << ln);
        int c = __builtin_popcount(line_box_mask[ln] & v3);
        int v;
        if (c) v = c + search(child, alpha - c, beta - c, left - c);
        else v = -search(child, -beta, -alpha, left);
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
    if (best <= a0) store(d, undrawn, -BIG, best, best_move);
    else if (best >= beta) store(d, undrawn, best, BIG, best_move);
    else store(d, undrawn, best, best, best_move);
    return best;
}

static int completed_boxes(uint64_t d) {
    int k = 0;
    for (int b = 0; b < nb; b++)
        if ((d & box_mask[b]) == box_mask[b]) k++;
    return k;
}

/* The exact value of ``drawn`` on a w x h board for the player to move, by MTD(f)
 * (zero-window searches; the table keeps the bounds between them).
 * Limits: ``max_seconds`` (<= 0: none) and ``max_nodes`` (<= 0: none), counted from this call.
 * Returns 0 and sets *value; 1 when a limit stopped it; -1 for a bad board or mask; -2 when
 * the table cannot be allocated. *nodes_out: the nodes searched (may be NULL). */
int ref_solve(int w, int h, uint64_t drawn, double max_seconds, int64_t node_limit,
              int *value, int64_t *nodes_out) {
    if (setup_board(w, h) != 0) return -1;
    if (drawn & ~full) return -1;
    if (!table && ref_table_init(24) != 0) return -2;
    nodes = 0;
    aborted = 0;
    memset(history, 0, sizeof history);
    max_nodes = node_limit;
    deadline = max_seconds > 0 ? now() + max_seconds : 0;
    int left = nb - completed_boxes(drawn);
    int lo = -left, hi = left;
    Entry *e = probe(drawn);
    if (e) {
        if (e->lo > lo) lo = e->lo;
        if (e->hi < hi) hi = e->hi;
    }
    int g = 0;
    if (g < lo) g = lo;
    if (g > hi) g = hi;
    while (lo < hi) {
        int beta = g == lo ? g + 1 : g;
        int v = search(drawn, beta - 1, beta, left);
        if (aborted) break;
        if (v >= beta) lo = v;
        else hi = v;
        g = v;
    }
    if (nodes_out) *nodes_out = nodes;
    if (aborted) return 1;
    *value = lo;
    return 0;
}
