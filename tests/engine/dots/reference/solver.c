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
 * Boards of at most 128 lines (no board has exactly 128: the largest are 8x7 and 7x8 with
 * 127 lines and 56 boxes). The search (search.h) is compiled twice, over 64-bit masks for
 * boards of up to 64 lines and over unsigned __int128 masks for the others: the same code,
 * and the small boards keep the speed of 64-bit arithmetic. A position is passed as the two
 * 64-bit halves of its mask. Not thread-safe: one table, one search at a time (the Python
 * wrapper holds a lock).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_LINES 128
#define MAX_BOXES 64
#define NO_MOVE 255
#define BIG 100
/* enhanced transposition cut-offs at nodes with this many undrawn lines or more (5x5 with 38
 * undrawn: a third of the nodes and three quarters of the time of none; 6-18 all did better
 * than none, 10 best) */
#define ETC_MIN_UNDRAWN 10

typedef unsigned __int128 u128;

typedef struct {
    uint64_t key;     /* the drawn lines (of a board of more than 64 lines: lines 0-63) */
    uint64_t key_hi;  /* lines 64-127 of a board of more than 64 lines, else 0 */
    int8_t lo, hi;    /* bounds on the value for the player to move */
    uint8_t move;     /* the best (or refuting) line found, NO_MOVE if none */
    uint8_t undrawn;  /* undrawn lines of the position; 0 = empty slot */
    uint16_t board;   /* which board size the entry belongs to */
    uint16_t pad;
} Entry;              /* 24 bytes */

#define WAYS 4 /* entries per bucket */

static Entry *table = NULL;
static void *table_raw = NULL; /* the mapping (table: its first 2 MiB boundary) */
static size_t table_raw_bytes = 0;
static uint64_t bucket_mask = 0;
static int table_log2 = 0;

/* the board being searched */
static int nl, nb;
static uint16_t board_tag;
static uint64_t full64;               /* the board's lines, when it has at most 64 */
static uint64_t box_mask64[MAX_BOXES];
static u128 full128;                  /* the board's lines, any board */
static u128 box_mask128[MAX_BOXES];
static uint64_t line_box_mask[MAX_LINES]; /* the boxes a line borders */

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

/* The largest board the solver takes, in lines (for the wrapper's checks). */
int ref_max_lines(void) { return MAX_LINES; }

static int setup_board(int w, int h) {
    if (w < 1 || h < 1 || w > 255 || h > 255) return -1;
    int H = (h + 1) * w;
    int n = H + h * (w + 1);
    if (n > MAX_LINES || w * h > MAX_BOXES) return -1;
    nl = n;
    nb = w * h;
    board_tag = (uint16_t)((w << 8) | h);
    full128 = nl == 128 ? ~(u128)0 : (((u128)1 << nl) - 1);
    full64 = (uint64_t)full128; /* used only when nl <= 64 */
    memset(line_box_mask, 0, sizeof line_box_mask);
    for (int r = 0; r < h; r++) {
        for (int c = 0; c < w; c++) {
            int b = r * w + c;
            int top = r * w + c, bottom = (r + 1) * w + c;
            int left = H + r * (w + 1) + c, right = left + 1;
            box_mask128[b] = ((u128)1 << top) | ((u128)1 << bottom) | ((u128)1 << left) |
                             ((u128)1 << right);
            box_mask64[b] = (uint64_t)box_mask128[b];
            line_box_mask[top] |= (uint64_t)1 << b;
            line_box_mask[bottom] |= (uint64_t)1 << b;
            line_box_mask[left] |= (uint64_t)1 << b;
            line_box_mask[right] |= (uint64_t)1 << b;
        }
    }
    return 0;
}

/* The bucket of a position given as the halves of its mask (hi = 0 for boards of up to 64
 * lines). */
static inline Entry *bucket_of(uint64_t d, uint64_t hi) {
    uint64_t x = d ^ ((uint64_t)board_tag << 48);
    x ^= hi * 0xC2B2AE3D27D4EB4FULL;
    x *= 0x9E3779B97F4A7C15ULL;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 32;
    return table + (x & bucket_mask) * WAYS;
}

static inline Entry *probe(uint64_t d, uint64_t hi) {
    Entry *b = bucket_of(d, hi);
    for (int i = 0; i < WAYS; i++)
        if (b[i].undrawn && b[i].key == d && b[i].key_hi == hi && b[i].board == board_tag)
            return &b[i];
    return NULL;
}

/* Stores bounds [lo, hi] of the position d, dhi (intersected with what the table already
 * knows of it); a new entry replaces the one of its bucket with the fewest undrawn lines (the
 * cheapest to redo). */
static void store(uint64_t d, uint64_t dhi, int undrawn, int lo, int hi, int move) {
    Entry *b = bucket_of(d, dhi);
    Entry *e = NULL;
    for (int i = 0; i < WAYS; i++) {
        if (b[i].undrawn && b[i].key == d && b[i].key_hi == dhi && b[i].board == board_tag) {
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
    e->key_hi = dhi;
    e->board = board_tag;
    e->undrawn = (uint8_t)undrawn;
    e->lo = (int8_t)lo;
    e->hi = (int8_t)hi;
    e->move = (uint8_t)move;
}

/* the search over 64-bit masks: boards of up to 64 lines */
#define MASK uint64_t
#define NAMED(f) f##64
#define FULL full64
#define BOX_MASK box_mask64
#define HALVES 1
#define HALF(m, i) ((uint64_t)(m))
#include "search.h"
#undef MASK
#undef NAMED
#undef FULL
#undef BOX_MASK
#undef HALVES
#undef HALF

/* the search over 128-bit masks: every board */
#define MASK u128
#define NAMED(f) f##128
#define FULL full128
#define BOX_MASK box_mask128
#define HALVES 2
#define HALF(m, i) ((uint64_t)((m) >> (64 * (i))))
#include "search.h"
#undef MASK
#undef NAMED
#undef FULL
#undef BOX_MASK
#undef HALVES
#undef HALF

/* The exact value of the position ``drawn_lo | drawn_hi << 64`` (lines 0-63, lines 64-127)
 * on a w x h board for the player to move, by MTD(f) (zero-window searches; the table keeps
 * the bounds between them).
 * Limits: ``max_seconds`` (<= 0: none) and ``max_nodes`` (<= 0: none), counted from this call.
 * Returns 0 and sets *value; 1 when a limit stopped it; -1 for a bad board or a mask with a
 * line off the board; -2 when the table cannot be allocated. *nodes_out: the nodes searched
 * (may be NULL). */
int ref_solve(int w, int h, uint64_t drawn_lo, uint64_t drawn_hi, double max_seconds,
              int64_t node_limit, int *value, int64_t *nodes_out) {
    if (setup_board(w, h) != 0) return -1;
    u128 drawn = (u128)drawn_hi << 64 | drawn_lo;
    if (drawn & ~full128) return -1;
    if (!table && ref_table_init(24) != 0) return -2;
    nodes = 0;
    aborted = 0;
    memset(history, 0, sizeof history);
    max_nodes = node_limit;
    deadline = max_seconds > 0 ? now() + max_seconds : 0;
    if (nl <= 64) mtdf64(drawn_lo, value);
    else mtdf128(drawn, value);
    if (nodes_out) *nodes_out = nodes;
    return aborted ? 1 : 0;
}
