/* The compiled Dots-and-Boxes search: what its units share (types, constants, bit tricks).
 *
 * The search is the same negamax as the Python node (engine/dots/search/node.py), node for
 * node: the same forced captures and decision points, move ordering, enhanced transposition
 * cutoffs, transposition-table semantics, symmetry and twin-line keys, sacrifices, chain DP
 * and horizon evaluation, so both report the same value, bound, best move and node count (on
 * one thread) as long as neither transposition table has had to replace an entry. Comments
 * here say only what differs from the Python or why the C is written the way it is.
 *
 * Three types:
 *   Board  the immutable tables of one board size (built from engine.dots.search.board);
 *   Table  the transposition table (sized in bytes) and the evaluation's memo caches,
 *          owned by the caller (SearchCache) and kept between searches;
 *   Core   one search session: counters, limits, history; ``search(drawn, a, b, depth)``,
 *          on ``threads`` threads that share the Table (see threads.c).
 *
 * The units, compiled as one translation unit by module.c (in this order): board.c (the
 * board's tables and keys), table.c (the transposition table and the memos), chain_dp.c (the
 * chains and loops of a position and the chain DP), chain_graph.c (the chain graph: no safe
 * line left, joints included), nimstring.c (Nimstring values and
 * control), evaluate.c (the horizon evaluations, fill and learned),
 * moves.c (forced captures, safe lines, sacrifices), node.c (the node's phases and
 * search()), threads.c (a search on several threads), module.c (the Python types' glue).
 *
 * A position is a 128-bit bitboard of drawn lines (bit i = OpenSpiel action id i), so boards
 * of up to 128 lines (and 64 boxes) fit. The search runs without the GIL; the deadline is read
 * from CLOCK_MONOTONIC every 16 nodes, translated from time.perf_counter once per call.
 */
#ifndef BOXFISH_CORE_H
#define BOXFISH_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

typedef unsigned __int128 bb_t;

#define MAXL 128
#define MAXB 64
#define MAXS 8
#define MAXCOMP 64
#define INF (1 << 20)
#define PROVEN (1 << 16)
#define HEUR (PROVEN / 2)
#define WINDOW 8
/* The Nimstring memo's slots per slot of the other memos: with 1, searches with control took
 * twice the time they take with 4 (the 5x5 regression positions at 40 undrawn), with 16 no
 * less than with 4. */
#define NIM_SLOTS_PER_SLOT 4
#define MAXFILLS 8 /* fill orders of the evaluations (board.FEATURE_FILLS at most) */

#define FORCE_INLINE static inline __attribute__((always_inline))

#define BIT(i) (((bb_t)1) << (i))
#define HAS(x, i) ((int)(((x) >> (i)) & 1))

static inline int bb_high(bb_t x) /* bit_length() - 1 of a non-zero x */
{
    uint64_t hi = (uint64_t)(x >> 64);
    if (hi)
        return 127 - __builtin_clzll(hi);
    return 63 - __builtin_clzll((uint64_t)x);
}

static inline int bb_low(bb_t x) /* index of the lowest set bit of a non-zero x */
{
    uint64_t lo = (uint64_t)x;
    if (lo)
        return __builtin_ctzll(lo);
    return 64 + __builtin_ctzll((uint64_t)(x >> 64));
}

static inline int bb_count(bb_t x)
{
    return __builtin_popcountll((uint64_t)x) + __builtin_popcountll((uint64_t)(x >> 64));
}

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t hash_bb(bb_t k)
{
    return mix64((uint64_t)k ^ ((uint64_t)(k >> 64) * 0x9E3779B97F4A7C15ULL));
}

static inline double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------------- Board */

typedef struct {
    PyObject_HEAD
    int nl, nb, nsym, nchunks;
    bb_t full;
    bb_t box_mask[MAXB];
    int8_t line_box[MAXL][2]; /* the boxes a line borders, -1 when none */
    uint8_t perm[MAXS][MAXL], inv[MAXS][MAXL];
    bb_t limg[MAXL][MAXS];  /* bit of line l's image under symmetry s */
    bb_t *ptab;             /* [(s - 1) * nchunks + c][byte]: image of byte c under s */
    int nswap;              /* the twin sort: a bubble-sort network of (low, high) pairs */
    uint8_t swap_lo[4 * MAXL], swap_hi[4 * MAXL];
    bb_t swap_lo_bit[4 * MAXL], swap_hi_bit[4 * MAXL];
    int ntwinp;             /* twin pairs (a, b), a < b: b is not searched while a is free */
    uint8_t twinp_lo[4 * MAXL], twinp_hi[4 * MAXL];
    int ngroups;
    uint8_t group_len[MAXB], group_line[MAXB][4];
    int8_t group_of[MAXL];
    bb_t twin_line;
    int32_t cen[MAXL];
    int nfills;             /* the fill evaluation's orders: the first nfills of fill */
    int nallfills;          /* the learned features': all of them */
    uint8_t fill[MAXFILLS][MAXL];
    int trust_num, trust_den;
    long long parity_horizon, parity_ramp;
} Board;

/* The box on the other side of line ``ln`` from ``box`` (-1: none, the board's edge). */
static inline int other_box(const Board *B, int ln, int box)
{
    int a = B->line_box[ln][0], b = B->line_box[ln][1];
    return a == box ? b : a;
}

/* The undrawn line of a box of valence 2 other than its undrawn line ``ln``: a step along a
 * chain. */
static inline int other_line(const Board *B, bb_t drawn, int box, int ln)
{
    return bb_high(B->box_mask[box] & ~drawn & ~BIT(ln));
}

/* ------------------------------------------------------------------------------- Table */

/* what a probe found */
typedef struct {
    int depth, lo, hi, move;
} Probe;

typedef struct {
    bb_t key;
    int32_t value;
    int32_t used;
} Memo;

#define LKEY 70
typedef struct {
    uint8_t len, used;
    uint8_t key[LKEY];
    int32_t value;
} LoonyMemo;

/* The memos of one search thread: they cache pure functions of a position, so each thread
 * keeps its own (no sharing, no locks): the main thread the table's, kept between searches;
 * a helper thread its session's (see threads.c). */
typedef struct {
    Memo *eval, *ends;      /* horizon values, and loony values of fill ends (direct-mapped) */
    const void *eval_tag;   /* the evaluation ``eval`` holds values of (its Model, or NULL) */
    LoonyMemo *loony;       /* the chain DP's memo (open addressing, emptied when 3/4 full) */
    size_t loony_used;
    Memo *nim;              /* Nimstring values of components (open addressing, as loony) */
    size_t nim_used;
    size_t slots;           /* slots of each memo (a power of two) */
} Memos;

struct Shared;

typedef struct {
    PyObject_HEAD
    void *e;
    int wide;
    size_t mask, used, nbytes;
    size_t max_mask;        /* the table grows (doubling) up to max_mask + 1 slots */
    size_t grow_mask;       /* ...and the running search up to grow_mask + 1 */
    double grow_deadline;   /* the running search's deadline (mono_now), 0 for none */
    unsigned long long evictions, refused;
    uint8_t gen;
    int busy;
    struct Shared *sh;      /* the threaded search running on the table, or NULL */
    Memos memo;             /* the main thread's memos */
} Table;

/* ------------------------------------------------------------------------------- Model */

/* The learned evaluation's regression trees (engine/dots/search/learned.py's Model). */
#define MAXFEAT (MAXL + 3 * MAXB + 3 * 4 + 4 + 7 + 8)
typedef struct {
    double threshold; /* a split sends x[feature] <= threshold left, else right */
    int32_t left, right;
    int32_t feature;  /* -1: a leaf */
    int32_t value;    /* a leaf's value, times 2**shift */
} TreeNode;

typedef struct {
    PyObject_HEAD
    int nf, nnodes, ntrees, shift;
    int max_undrawn;  /* past it the fill evaluation answers */
    int control_moves; /* Nimstring control signs leaves of at most this many non-loony moves */
    TreeNode *nodes;
    int32_t *roots;
} Model;

/* -------------------------------------------------------------------------------- Core */

/* What settled a node (Core.settled, a diagnostic; the names: node.c's SETTLED): a phase, the
 * three ways of node_leaf apart, or the parent, which read the child's entry. */
enum { SET_CAPTURES, SET_PROBE, SET_CHAIN_DP, SET_GRAPH, SET_HORIZON, SET_ETC, SET_SEARCHED,
       SET_READ, NSETTLED };

/* The most threads one search runs (the main one and its helpers). */
#define MAX_THREADS 64

typedef struct Core {
    PyObject_HEAD
    Board *B;
    Table *T;
    Model *model;      /* the learned evaluation's network, or NULL: the fill evaluation */
    PyObject *aborted; /* the exception class raised when a limit stops the search */
    PyObject *clock;   /* time.perf_counter: the clock the deadline is given in */
    long long nodes, tt_hits, horizon, max_nodes;
    double deadline, c_deadline;
    int has_deadline, nsym, etc_min_free, loony_bound, pruned, abort, busy;
    int sized_proofs;  /* proven entries carry their subtree's size class (node.c) */
    int chain_graph;   /* node_leaf solves positions with no safe line by the chain graph */
    long long graph_calls, graph_hits, graph_solved; /* its positions, memo hits, graphs */
    long long settled[NSETTLED]; /* this thread's nodes by what settled them (SETTLED) */
    long long history[MAXL];
    /* threads (see threads.c) */
    Memos *M;          /* this thread's memos: the table's (main), or ``own`` (helper) */
    Memos own;
    int threads;       /* the threads a search may run, this one included */
    int id;            /* 0: the main thread (the Python object); i: helper i */
    struct Shared *sh; /* the threaded search running, or NULL */
    long long flushed; /* of ``nodes``, those already added to sh->nodes */
    long long spawn_nodes;  /* a search starts its helpers after this many nodes */
    long long helper_nodes; /* nodes the helpers searched, in all */
    struct Core *helper[MAX_THREADS]; /* helper i's session (made on first use) */
} Core;

/* defined in a later unit */
static int to_bb(PyObject *o, bb_t *out);           /* module.c */
static PyObject *from_bb(bb_t x);                   /* module.c */
static void shared_request_grow(struct Shared *sh); /* threads.c */
static int shared_check(Core *S);                   /* threads.c */

#endif
