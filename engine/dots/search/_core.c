/* The compiled Dots-and-Boxes search: the same negamax as search_core.py, node for node.
 *
 * search_core.py is the readable reference; this file follows it step by step (the same
 * forced captures and decision points, move ordering, enhanced transposition cutoffs,
 * transposition-table semantics, symmetry and twin-line keys, sacrifices, chain DP and
 * horizon evaluation), so both report the same value, bound, best move and node count (on
 * one thread) as long as neither transposition table has had to replace an entry. Comments
 * here say only what differs from the Python or why the C is written the way it is.
 *
 * Three types:
 *   Board  the immutable tables of one board size (built from engine.dots.search.board);
 *   Table  the transposition table (sized in bytes) and the evaluation's memo caches,
 *          owned by the caller (SearchCache) and kept between searches;
 *   Core   one search session: counters, limits, history; ``search(drawn, a, b, depth)``,
 *          on ``threads`` threads that share the Table (see "Threads").
 *
 * A position is a 128-bit bitboard of drawn lines (bit i = OpenSpiel action id i), so boards
 * of up to 128 lines (and 64 boxes) fit. The search runs without the GIL; the deadline is read
 * from CLOCK_MONOTONIC every 16 nodes, translated from time.perf_counter once per call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
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

static int to_bb(PyObject *o, bb_t *out)
{
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "a bitboard must be an int");
        return -1;
    }
    uint64_t lo = PyLong_AsUnsignedLongLongMask(o);
    PyObject *sh = PyLong_FromLong(64);
    if (!sh)
        return -1;
    PyObject *h = PyNumber_Rshift(o, sh);
    PyObject *top = h ? PyNumber_Rshift(h, sh) : NULL;
    Py_DECREF(sh);
    if (!top) {
        Py_XDECREF(h);
        return -1;
    }
    /* negative ints shift to -1, ints of more than 128 bits to non-zero */
    int ok = PyObject_Not(top);
    Py_DECREF(top);
    if (ok != 1) {
        Py_DECREF(h);
        if (ok == 0)
            PyErr_SetString(PyExc_ValueError,
                            "a bitboard must be a non-negative int of at most 128 bits");
        return -1;
    }
    uint64_t hi = PyLong_AsUnsignedLongLongMask(h);
    Py_DECREF(h);
    if (PyErr_Occurred())
        return -1;
    *out = ((bb_t)hi << 64) | lo;
    return 0;
}

static PyObject *from_bb(bb_t x)
{
    PyObject *hi = PyLong_FromUnsignedLongLong((uint64_t)(x >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((uint64_t)x);
    PyObject *sh = PyLong_FromLong(64);
    PyObject *out = NULL, *t = NULL;
    if (hi && lo && sh && (t = PyNumber_Lshift(hi, sh)))
        out = PyNumber_Or(t, lo);
    Py_XDECREF(t);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(sh);
    return out;
}

static inline int floordiv(long long a, long long b) /* Python's a // b for b > 0 */
{
    long long q = a / b;
    if ((a % b) != 0 && a < 0)
        q--;
    return (int)q;
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
    int nfills;
    uint8_t fill[4][MAXL];
    int trust_num, trust_den;
    long long parity_horizon, parity_ramp;
} Board;

static inline int other_box(const Board *B, int ln, int box)
{
    int a = B->line_box[ln][0], b = B->line_box[ln][1];
    return a == box ? b : a;
}

static int read_ints(PyObject *seq, int *out, int maxn, const char *what)
{
    PyObject *f = PySequence_Fast(seq, what);
    if (!f)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n > maxn) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s: too many items (%zd > %d)", what, n, maxn);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(f, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(f);
            return -1;
        }
        out[i] = (int)v;
    }
    Py_DECREF(f);
    return (int)n;
}

static int read_rows(PyObject *seq, int rows[][8], int *lens, int maxrows, const char *what)
{
    PyObject *f = PySequence_Fast(seq, what);
    if (!f)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n > maxrows) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s: too many rows", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int k = read_ints(PySequence_Fast_GET_ITEM(f, i), rows[i], 8, what);
        if (k < 0) {
            Py_DECREF(f);
            return -1;
        }
        lens[i] = k;
    }
    Py_DECREF(f);
    return (int)n;
}

static inline bb_t twin_sort(const Board *B, bb_t x)
{
    for (int i = 0; i < B->nswap; i++) {
        bb_t a = B->swap_lo_bit[i], b = B->swap_hi_bit[i];
        if ((x & b) && !(x & a))
            x ^= a | b;
    }
    return x;
}

static void images(const Board *B, int nsym, bb_t drawn, bb_t *raw)
{
    raw[0] = drawn;
    for (int s = 1; s < nsym; s++) {
        const bb_t *tab = B->ptab + (size_t)(s - 1) * B->nchunks * 256;
        bb_t m = 0, d = drawn;
        for (int c = 0; d; c++, d >>= 8)
            m |= tab[c * 256 + (int)(d & 255)];
        raw[s] = m;
    }
}

/* The transposition key: the smallest twin-sorted image, and the first symmetry giving it. */
static inline bb_t key_of_images(const Board *B, int nsym, const bb_t *raw, int *sym)
{
    bb_t best = twin_sort(B, raw[0]);
    int bs = 0;
    for (int s = 1; s < nsym; s++) {
        bb_t m = twin_sort(B, raw[s]);
        if (m < best) {
            best = m;
            bs = s;
        }
    }
    *sym = bs;
    return best;
}

static void Board_dealloc(Board *self)
{
    PyMem_Free(self->ptab);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Board_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"num_lines", "box_lines", "syms", "twin_groups", "swaps",
                             "centrality", "fill_orders", "trust", "parity", NULL};
    int nl, trust_num, trust_den;
    long long ph, pr;
    PyObject *box_lines, *syms, *groups, *swaps, *cen, *fills;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iOOOOOO(ii)(LL)", kwlist, &nl, &box_lines,
                                     &syms, &groups, &swaps, &cen, &fills, &trust_num,
                                     &trust_den, &ph, &pr))
        return NULL;
    if (nl < 1 || nl > MAXL) {
        PyErr_Format(PyExc_ValueError, "the compiled core takes boards of 1..%d lines, got %d",
                     MAXL, nl);
        return NULL;
    }
    if (trust_den <= 0) {
        PyErr_SetString(PyExc_ValueError, "trust denominator must be positive");
        return NULL;
    }
    Board *B = (Board *)type->tp_alloc(type, 0);
    if (!B)
        return NULL;
    B->ptab = NULL;
    B->nl = nl;
    B->full = nl == 128 ? ~(bb_t)0 : BIT(nl) - 1;
    B->trust_num = trust_num;
    B->trust_den = trust_den;
    B->parity_horizon = ph;
    B->parity_ramp = pr;
    int rows[MAXL * 2][8];
    int lens[MAXL * 2];
    int vals[MAXL * 8];
    int nb = read_rows(box_lines, rows, lens, MAXB, "box_lines");
    if (nb < 0)
        goto fail;
    B->nb = nb;
    for (int l = 0; l < nl; l++)
        B->line_box[l][0] = B->line_box[l][1] = -1;
    for (int b = 0; b < nb; b++) {
        if (lens[b] != 4)
            goto bad;
        B->box_mask[b] = 0;
        for (int i = 0; i < 4; i++) {
            int l = rows[b][i];
            if (l < 0 || l >= nl)
                goto bad;
            B->box_mask[b] |= BIT(l);
            if (B->line_box[l][0] < 0)
                B->line_box[l][0] = (int8_t)b;
            else
                B->line_box[l][1] = (int8_t)b;
        }
    }
    /* symmetries: identity first */
    PyObject *sf = PySequence_Fast(syms, "syms");
    if (!sf)
        goto fail;
    Py_ssize_t ns = PySequence_Fast_GET_SIZE(sf);
    if (ns < 1 || ns > MAXS) {
        Py_DECREF(sf);
        goto bad;
    }
    B->nsym = (int)ns;
    for (int s = 0; s < ns; s++) {
        int k = read_ints(PySequence_Fast_GET_ITEM(sf, s), vals, MAXL, "syms");
        if (k != nl) {
            Py_DECREF(sf);
            if (k >= 0)
                goto bad;
            goto fail;
        }
        for (int l = 0; l < nl; l++) {
            if (vals[l] < 0 || vals[l] >= nl) {
                Py_DECREF(sf);
                goto bad;
            }
            B->perm[s][l] = (uint8_t)vals[l];
            B->inv[s][vals[l]] = (uint8_t)l;
            B->limg[l][s] = BIT(vals[l]);
        }
    }
    Py_DECREF(sf);
    B->nchunks = (nl + 7) / 8;
    if (B->nsym > 1) {
        size_t n = (size_t)(B->nsym - 1) * B->nchunks * 256;
        B->ptab = PyMem_Calloc(n, sizeof(bb_t));
        if (!B->ptab) {
            PyErr_NoMemory();
            goto fail;
        }
        for (int s = 1; s < B->nsym; s++) {
            bb_t *tab = B->ptab + (size_t)(s - 1) * B->nchunks * 256;
            for (int c = 0; c < B->nchunks; c++)
                for (int byte = 1; byte < 256; byte++) {
                    int low = __builtin_ctz(byte);
                    int l = c * 8 + low;
                    tab[c * 256 + byte] =
                        tab[c * 256 + (byte & (byte - 1))] | (l < nl ? B->limg[l][s] : 0);
                }
        }
    }
    int ng = read_rows(groups, rows, lens, MAXB, "twin_groups");
    if (ng < 0)
        goto fail;
    B->ngroups = ng;
    memset(B->group_of, -1, sizeof(B->group_of));
    B->twin_line = 0;
    B->ntwinp = 0;
    for (int g = 0; g < ng; g++) {
        if (lens[g] > 4)
            goto bad;
        B->group_len[g] = (uint8_t)lens[g];
        for (int i = 0; i < lens[g]; i++) {
            int l = rows[g][i];
            if (l < 0 || l >= nl)
                goto bad;
            B->group_line[g][i] = (uint8_t)l;
            B->group_of[l] = (int8_t)g;
            B->twin_line |= BIT(l);
            for (int j = i + 1; j < lens[g]; j++) {
                B->twinp_lo[B->ntwinp] = (uint8_t)l;
                B->twinp_hi[B->ntwinp] = (uint8_t)rows[g][j];
                B->ntwinp++;
            }
        }
    }
    int nsw = read_rows(swaps, rows, lens, MAXL * 2, "swaps");
    if (nsw < 0)
        goto fail;
    B->nswap = nsw;
    for (int i = 0; i < nsw; i++) {
        if (lens[i] != 2 || rows[i][0] < 0 || rows[i][1] >= nl || rows[i][0] >= rows[i][1])
            goto bad;
        B->swap_lo[i] = (uint8_t)rows[i][0];
        B->swap_hi[i] = (uint8_t)rows[i][1];
        B->swap_lo_bit[i] = BIT(rows[i][0]);
        B->swap_hi_bit[i] = BIT(rows[i][1]);
    }
    if (read_ints(cen, vals, MAXL, "centrality") != nl)
        goto fail_or_bad;
    for (int l = 0; l < nl; l++)
        B->cen[l] = vals[l];
    PyObject *ff = PySequence_Fast(fills, "fill_orders");
    if (!ff)
        goto fail;
    Py_ssize_t nf = PySequence_Fast_GET_SIZE(ff);
    if (nf < 1 || nf > 4) {
        Py_DECREF(ff);
        goto bad;
    }
    B->nfills = (int)nf;
    for (int i = 0; i < nf; i++) {
        int k = read_ints(PySequence_Fast_GET_ITEM(ff, i), vals, MAXL, "fill_orders");
        if (k != nl) {
            Py_DECREF(ff);
            goto fail_or_bad;
        }
        for (int l = 0; l < nl; l++)
            B->fill[i][l] = (uint8_t)vals[l];
    }
    Py_DECREF(ff);
    return (PyObject *)B;
fail_or_bad:
    if (PyErr_Occurred())
        goto fail;
bad:
    PyErr_SetString(PyExc_ValueError, "inconsistent board tables");
fail:
    Py_DECREF(B);
    return NULL;
}

static PyObject *Board_key(Board *B, PyObject *args)
{
    PyObject *o;
    int symmetry = 1;
    if (!PyArg_ParseTuple(args, "O|p", &o, &symmetry))
        return NULL;
    bb_t d, raw[MAXS];
    if (to_bb(o, &d) < 0)
        return NULL;
    if ((d & ~B->full) != 0) {
        PyErr_SetString(PyExc_ValueError, "bits beyond the board's lines");
        return NULL;
    }
    int nsym = symmetry ? B->nsym : 1, s;
    images(B, nsym, d, raw);
    bb_t k = key_of_images(B, nsym, raw, &s);
    PyObject *ko = from_bb(k);
    if (!ko)
        return NULL;
    return Py_BuildValue("(Ni)", ko, s);
}

static PyMethodDef Board_methods[] = {
    {"key", (PyCFunction)Board_key, METH_VARARGS,
     "key(drawn, symmetry=True) -> (key, symmetry index): the transposition key."},
    {NULL}};

static PyObject *Board_get_nl(Board *B, void *c) { return PyLong_FromLong(B->nl); }
static PyObject *Board_get_nsym(Board *B, void *c) { return PyLong_FromLong(B->nsym); }

static PyGetSetDef Board_getset[] = {
    {"num_lines", (getter)Board_get_nl, NULL, "lines of the board", NULL},
    {"num_symmetries", (getter)Board_get_nsym, NULL, "symmetries (identity included)", NULL},
    {NULL}};

static PyTypeObject BoardType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "boxfish.engine.dots.search._core.Board",
    .tp_basicsize = sizeof(Board),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The immutable tables of one board size for the compiled search.",
    .tp_new = Board_new,
    .tp_dealloc = (destructor)Board_dealloc,
    .tp_methods = Board_methods,
    .tp_getset = Board_getset,
};

/* ------------------------------------------------------------------------------- Table */

/* Several threads read and write the entries at once, without locks (see "Threads" below).
 * So an entry is a few 64-bit words, each read and written whole (relaxed atomics: plain
 * moves on x86-64 and arm64), and a reader takes an entry only when its words agree with
 * each other: a read torn by another thread's write to the same slot reads as another key
 * (a miss), never as a mix of two writes (Hyatt and Mann's lockless hashing).
 *
 * ``data``: depth (32 bits), lo, hi and move (8 bits each, signed) and gen (8 bits; 0 marks
 * an empty slot, so the data of a used slot is never 0). Values are box margins (|v| <= 64)
 * or +-INF (stored as +-127); moves are lines (< 128) or -1. Boards of up to 64 lines have
 * 16-byte entries {key ^ data, data}; larger ones 32-byte entries {key low, key high, data,
 * check}, where check is a hash of the other three words. */
typedef struct {
    uint64_t kx, data;
} NarrowEntry;

typedef struct {
    uint64_t klo, khi, data, check;
} WideEntry;

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
 * a helper thread its session's (see "Threads"). */
typedef struct {
    Memo *eval, *ends;      /* horizon values, and loony values of fill ends (direct-mapped) */
    LoonyMemo *loony;       /* the chain DP's memo (open addressing, emptied when 3/4 full) */
    size_t loony_used;
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

static inline uint64_t wide_check(uint64_t klo, uint64_t khi, uint64_t data)
{
    return mix64(klo ^ mix64(khi ^ mix64(data + 0x9E3779B97F4A7C15ULL)));
}

#define ENC(v) ((v) >= INF ? 127 : (v) <= -INF ? -127 : (v))
#define DEC(c) ((c) == 127 ? INF : (c) == -127 ? -INF : (c))

static inline uint64_t pack(int depth, int lo, int hi, int move, uint8_t gen)
{
    return (uint64_t)(uint32_t)depth | (uint64_t)(uint8_t)(int8_t)ENC(lo) << 32 |
           (uint64_t)(uint8_t)(int8_t)ENC(hi) << 40 | (uint64_t)(uint8_t)(int8_t)move << 48 |
           (uint64_t)gen << 56;
}

static inline int d_depth(uint64_t d) { return (int32_t)(uint32_t)d; }
static inline int d_lo(uint64_t d) { return DEC((int8_t)(d >> 32)); }
static inline int d_hi(uint64_t d) { return DEC((int8_t)(d >> 40)); }
static inline int d_move(uint64_t d) { return (int8_t)(d >> 48); }
static inline uint8_t d_gen(uint64_t d) { return (uint8_t)(d >> 56); }

/* the key of a used slot (read whole: only while no other thread writes) */
static inline bb_t narrow_key(const NarrowEntry *e) { return e->kx ^ e->data; }
static inline bb_t wide_key(const WideEntry *e) { return ((bb_t)e->khi << 64) | e->klo; }

/* whether slot e holds key k, with data d (already read) */
static inline int narrow_is(NarrowEntry *e, bb_t k, uint64_t d)
{
    return (LOAD(&e->kx) ^ d) == (uint64_t)k;
}
static inline int wide_is(WideEntry *e, bb_t k, uint64_t d)
{
    uint64_t lo = (uint64_t)k, hi = (uint64_t)(k >> 64);
    return LOAD(&e->klo) == lo && LOAD(&e->khi) == hi &&
           LOAD(&e->check) == wide_check(lo, hi, d);
}
static inline void narrow_put(NarrowEntry *e, bb_t k, uint64_t d)
{
    STORE(&e->data, d);
    STORE(&e->kx, (uint64_t)k ^ d);
}
static inline void wide_put(WideEntry *e, bb_t k, uint64_t d)
{
    uint64_t lo = (uint64_t)k, hi = (uint64_t)(k >> 64);
    STORE(&e->data, d);
    STORE(&e->klo, lo);
    STORE(&e->khi, hi);
    STORE(&e->check, wide_check(lo, hi, d));
}

static void *entries_alloc(size_t nbytes);
static void entries_free(void *e, size_t nbytes);
static void table_grow(Table *T);

/* The table's counters. A threaded search counts in its thread's own (``tls``), added to the
 * table's every 16 nodes (table_flush): no cache line bounces between the threads' cores at
 * every store. */
static __thread struct {
    size_t used;
    unsigned long long evictions, refused;
} tls;

/* one more slot used: the slots used now (all but the other threads' last few) */
static inline size_t count_used(Table *T)
{
    if (T->sh)
        return LOAD(&T->used) + ++tls.used;
    return ++T->used;
}

static inline void count_eviction(Table *T)
{
    if (T->sh)
        tls.evictions++;
    else
        T->evictions++;
}

static inline void count_refused(Table *T)
{
    if (T->sh)
        tls.refused++;
    else
        T->refused++;
}

/* adds this thread's counts to the table's */
static void table_flush(Table *T)
{
    if (tls.used)
        ADD(&T->used, tls.used);
    if (tls.evictions)
        ADD(&T->evictions, tls.evictions);
    if (tls.refused)
        ADD(&T->refused, tls.refused);
    tls.used = 0;
    tls.evictions = tls.refused = 0;
}

/* The table starts with at most this many slots and doubles while more than 1 / GROW_AT of
 * them are used, up to the size it was given: a short search pays for the memory it touches,
 * not for zeroing the whole table. (At an eighth full a window of WINDOW slots is almost never
 * full, so nothing is replaced before the table reaches its size.) */
#define INITIAL_SLOTS ((size_t)1 << 16)
#define GROW_AT 8

/* Replacement rule: a slot keeps its key; a new key takes the first empty slot of its window
 * of WINDOW slots; with none, it replaces the window's least valuable entry (heuristic before
 * proven, an earlier search's before this one's, shallower before deeper), except that a
 * heuristic entry never replaces a proven one (it is dropped instead). An existing key is
 * updated as search_tt.TranspositionTable.store does.
 *
 * With threads: two stores of one key may take two slots (one of them read the other's slot
 * torn); a probe finds the first. Every entry written holds what one search proved or
 * estimated of its key, so whichever is read is true. A store that fills the table past
 * its growth point asks for the table to grow (table_grow); with threads the table grows
 * once they have all stopped between two nodes (see "Threads"). */
#define TT_IMPL(NAME, ENTRY)                                                                   \
    static inline int NAME##_get(Table *T, bb_t key, Probe *p)                                \
    {                                                                                          \
        ENTRY *E = (ENTRY *)T->e;                                                              \
        size_t mask = T->mask, i = (size_t)hash_bb(key) & mask;                                \
        for (int w = 0; w < WINDOW; w++) {                                                     \
            ENTRY *e = &E[(i + w) & mask];                                                     \
            uint64_t d = LOAD(&e->data);                                                       \
            if (!d)                                                                            \
                return 0;                                                                      \
            if (NAME##_is(e, key, d)) {                                                        \
                p->depth = d_depth(d);                                                         \
                p->lo = d_lo(d);                                                               \
                p->hi = d_hi(d);                                                               \
                p->move = d_move(d);                                                           \
                return 1;                                                                      \
            }                                                                                  \
        }                                                                                      \
        return 0;                                                                              \
    }                                                                                          \
    static void NAME##_store(Table *T, bb_t key, int depth, int lo, int hi, int move)          \
    {                                                                                          \
        ENTRY *E = (ENTRY *)T->e, *slot = NULL;                                                \
        size_t mask = T->mask, i = (size_t)hash_bb(key) & mask;                                \
        uint8_t gen = T->gen;                                                                  \
        for (int w = 0; w < WINDOW; w++) {                                                     \
            ENTRY *e = &E[(i + w) & mask];                                                     \
            uint64_t d = LOAD(&e->data);                                                       \
            if (!d) {                                                                          \
                slot = e;                                                                      \
                break;                                                                         \
            }                                                                                  \
            if (NAME##_is(e, key, d)) {                                                        \
                int ed = d_depth(d);                                                           \
                if (ed >= PROVEN) {                                                            \
                    if (depth < PROVEN)                                                        \
                        return;                                                                \
                    if (d_lo(d) > lo)                                                          \
                        lo = d_lo(d);                                                          \
                    if (d_hi(d) < hi)                                                          \
                        hi = d_hi(d);                                                          \
                    if (move < 0)                                                              \
                        move = d_move(d);                                                      \
                } else if (depth < ed)                                                         \
                    return;                                                                    \
                NAME##_put(e, key, pack(depth, lo, hi, move, gen));                            \
                return;                                                                        \
            }                                                                                  \
        }                                                                                      \
        if (slot) {                                                                            \
            size_t used = count_used(T);                                                       \
            NAME##_put(slot, key, pack(depth, lo, hi, move, gen));                             \
            if (used * GROW_AT > mask + 1 && mask < T->grow_mask)                              \
                table_grow(T);                                                                 \
            return;                                                                            \
        }                                                                                      \
        int vr = 0;                                                                            \
        for (int w = 0; w < WINDOW; w++) {                                                     \
            ENTRY *e = &E[(i + w) & mask];                                                     \
            uint64_t d = LOAD(&e->data);                                                       \
            int ed = d_depth(d);                                                               \
            int r = (ed >= PROVEN ? 1 << 30 : 0) + (d_gen(d) == gen ? 1 << 29 : 0) +           \
                    (ed >= PROVEN || ed < 0 ? 0 : ed);                                         \
            if (!slot || r < vr) {                                                             \
                slot = e;                                                                      \
                vr = r;                                                                        \
            }                                                                                  \
        }                                                                                      \
        if (vr >= 1 << 30 && depth < PROVEN) {                                                 \
            count_refused(T);                                                                  \
            return;                                                                            \
        }                                                                                      \
        count_eviction(T);                                                                     \
        NAME##_put(slot, key, pack(depth, lo, hi, move, gen));                                 \
    }                                                                                          \
    /* moves every entry into ``E2`` (mask2 + 1 slots, more than now; no other thread       \
     * touches the table meanwhile) and counts them again */                                   \
    static void NAME##_rehash(Table *T, void *E2v, size_t mask2)                               \
    {                                                                                          \
        ENTRY *E = (ENTRY *)T->e, *E2 = (ENTRY *)E2v;                                          \
        size_t used = 0;                                                                       \
        for (size_t j = 0; j <= T->mask; j++) {                                                \
            if (!E[j].data)                                                                    \
                continue;                                                                      \
            size_t i = (size_t)hash_bb(NAME##_key(&E[j])) & mask2;                             \
            int w = 0;                                                                         \
            while (w < WINDOW && E2[(i + w) & mask2].data)                                     \
                w++;                                                                           \
            if (w < WINDOW) {                                                                  \
                E2[(i + w) & mask2] = E[j];                                                    \
                used++;                                                                        \
            } else                                                                             \
                T->evictions++;                                                                \
        }                                                                                      \
        T->used = used;                                                                        \
    }

TT_IMPL(wide, WideEntry)
TT_IMPL(narrow, NarrowEntry)

static inline size_t entry_size(int wide)
{
    return wide ? sizeof(WideEntry) : sizeof(NarrowEntry);
}

static void shared_request_grow(struct Shared *sh);

/* Doubles the table (rehashing every entry), or, while a threaded search runs on it, asks
 * its threads to stop so that the last one to stop does it (see "Threads"). */
static void table_grow_now(Table *T)
{
    if (T->mask >= T->max_mask)
        return;
    size_t mask2 = T->mask * 2 + 1, es = entry_size(T->wide);
    void *e2 = entries_alloc((mask2 + 1) * es);
    if (!e2) { /* no memory: stay at this size */
        T->max_mask = T->grow_mask = T->mask;
        return;
    }
    if (T->wide)
        wide_rehash(T, e2, mask2);
    else
        narrow_rehash(T, e2, mask2);
    entries_free(T->e, T->nbytes);
    T->e = e2;
    T->mask = mask2;
    T->nbytes = (mask2 + 1) * es;
}

/* A growth rehashes the whole table into fresh memory, which is zeroed as it is first
 * touched: 6.0-6.5 ms per MiB of the new table on a loaded 2-core machine (16 to 256 MiB;
 * about a third of that unloaded). A search with a deadline grows the table only while that
 * much time is left, so no rehash runs past the deadline (the doubling of a 1 s search's
 * table, 64 to 128 MiB, made answers up to 0.3 s late). Once it refuses, it does not try
 * again until its next call. (Growing the table to the time's needs before the search
 * instead cost more: its pages are all touched at once, at about 1 s a GiB here.) */
#define GROW_SECONDS_PER_MIB 0.008

static double mono_now(void);

static void table_grow(Table *T)
{
    if (T->grow_deadline > 0) {
        double mib = (double)((T->mask + 1) * 2 * entry_size(T->wide)) / (1 << 20);
        if (mono_now() + mib * GROW_SECONDS_PER_MIB > T->grow_deadline) {
            T->grow_mask = T->mask;
            return;
        }
    }
    if (T->sh)
        shared_request_grow(T->sh);
    else
        table_grow_now(T);
}

static inline int tt_get(Table *T, bb_t key, Probe *p)
{
    return T->wide ? wide_get(T, key, p) : narrow_get(T, key, p);
}

static inline void tt_store(Table *T, bb_t key, int depth, int lo, int hi, int move)
{
    if (T->wide)
        wide_store(T, key, depth, lo, hi, move);
    else
        narrow_store(T, key, depth, lo, hi, move);
}

static inline void tt_prefetch(Table *T, bb_t key)
{
    __builtin_prefetch((char *)T->e + ((size_t)hash_bb(key) & T->mask) * entry_size(T->wide));
}

static int memos_alloc(Memos *M, size_t slots)
{
    M->slots = slots;
    M->loony_used = 0;
    M->eval = PyMem_RawCalloc(slots, sizeof(Memo));
    M->ends = PyMem_RawCalloc(slots, sizeof(Memo));
    M->loony = PyMem_RawCalloc(slots, sizeof(LoonyMemo));
    return M->eval && M->ends && M->loony ? 0 : -1;
}

static void memos_free(Memos *M)
{
    PyMem_RawFree(M->eval);
    PyMem_RawFree(M->ends);
    PyMem_RawFree(M->loony);
    M->eval = M->ends = NULL;
    M->loony = NULL;
}

static void memos_clear(Memos *M)
{
    memset(M->eval, 0, M->slots * sizeof(Memo));
    memset(M->ends, 0, M->slots * sizeof(Memo));
    memset(M->loony, 0, M->slots * sizeof(LoonyMemo));
    M->loony_used = 0;
}

/* Empties the table and gives its memory back: it starts again at its initial size. */
static int table_clear(Table *T)
{
    size_t slots = T->max_mask + 1 < INITIAL_SLOTS ? T->max_mask + 1 : INITIAL_SLOTS;
    size_t es = entry_size(T->wide);
    void *e = entries_alloc(slots * es);
    if (!e)
        return -1;
    entries_free(T->e, T->nbytes);
    T->e = e;
    T->mask = slots - 1;
    T->grow_mask = T->max_mask;
    T->nbytes = slots * es;
    memos_clear(&T->memo);
    T->used = 0;
    T->evictions = T->refused = 0;
    T->gen = 1;
    return 0;
}

/* The entry array: anonymous memory, zero until touched, in huge pages where the kernel
 * offers them (a search touches the table at random: with 4 KiB pages most probes would also
 * miss the TLB and the first touch of every page would fault). */
static void *entries_alloc(size_t nbytes)
{
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    void *p = mmap(NULL, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, nbytes, MADV_HUGEPAGE);
#endif
    return p;
#else
    return PyMem_RawCalloc(1, nbytes);
#endif
}

static void entries_free(void *e, size_t nbytes)
{
    if (!e)
        return;
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    munmap(e, nbytes);
#else
    PyMem_RawFree(e);
#endif
}

static void Table_dealloc(Table *T)
{
    entries_free(T->e, T->nbytes);
    memos_free(&T->memo);
    Py_TYPE(T)->tp_free((PyObject *)T);
}

static PyObject *Table_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"nbytes", "wide", "memo_entries", NULL};
    long long nbytes, memo_entries = 1 << 16;
    int wide = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|pL", kwlist, &nbytes, &wide, &memo_entries))
        return NULL;
    size_t memo = 1;
    while ((long long)memo * 2 <= memo_entries && memo < ((size_t)1 << 24))
        memo *= 2;
    size_t es = entry_size(wide);
    if (nbytes < (long long)es) {
        PyErr_Format(PyExc_ValueError, "a table needs at least %zu bytes, got %lld", es,
                     nbytes);
        return NULL;
    }
    /* (a table smaller than a window works: the window's probes wrap around it) */
    size_t max_slots = 1;
    while (max_slots * 2 * es <= (unsigned long long)nbytes)
        max_slots *= 2;
    size_t slots = max_slots < INITIAL_SLOTS ? max_slots : INITIAL_SLOTS;
    Table *T = (Table *)type->tp_alloc(type, 0);
    if (!T)
        return NULL;
    /* calloc: the pages of a big table cost nothing until a search touches them */
    T->wide = wide;
    T->nbytes = slots * es;
    T->e = entries_alloc(T->nbytes);
    if (!T->e || memos_alloc(&T->memo, memo) < 0) {
        Py_DECREF(T);
        return PyErr_NoMemory();
    }
    T->mask = slots - 1;
    T->max_mask = T->grow_mask = max_slots - 1;
    T->gen = 1;
    return (PyObject *)T;
}

static PyObject *Table_get(Table *T, PyObject *o)
{
    bb_t key;
    if (to_bb(o, &key) < 0)
        return NULL;
    if (T->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the table is in use by a running search");
        return NULL;
    }
    if (!T->wide && (uint64_t)(key >> 64)) {
        PyErr_SetString(PyExc_ValueError, "a key of more than 64 bits for a narrow table");
        return NULL;
    }
    Probe p;
    if (!tt_get(T, key, &p))
        Py_RETURN_NONE;
    return Py_BuildValue("(iiii)", p.depth, p.lo, p.hi, p.move);
}

static PyObject *Table_store(Table *T, PyObject *args)
{
    PyObject *o;
    int depth, lo, hi, move;
    if (!PyArg_ParseTuple(args, "Oiiii", &o, &depth, &lo, &hi, &move))
        return NULL;
    bb_t key;
    if (to_bb(o, &key) < 0)
        return NULL;
    if (T->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the table is in use by a running search");
        return NULL;
    }
    if (!T->wide && (uint64_t)(key >> 64)) {
        PyErr_SetString(PyExc_ValueError, "a key of more than 64 bits for a narrow table");
        return NULL;
    }
    if (move > 127 || move < -1 || ((lo > 100 || lo < -100) && lo != INF && lo != -INF) ||
        ((hi > 100 || hi < -100) && hi != INF && hi != -INF)) {
        PyErr_SetString(PyExc_ValueError, "a table holds moves below 128 and values within "
                                          "+-100 or +-INF");
        return NULL;
    }
    tt_store(T, key, depth, lo, hi, move);
    Py_RETURN_NONE;
}

static PyObject *Table_clear(Table *T, PyObject *unused)
{
    if (T->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the table is in use by a running search");
        return NULL;
    }
    if (table_clear(T) < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *Table_new_search(Table *T, PyObject *unused)
{
    T->gen = (uint8_t)(T->gen == 255 ? 1 : T->gen + 1);
    Py_RETURN_NONE;
}

static Py_ssize_t Table_len(Table *T) { return (Py_ssize_t)T->used; }

static PyObject *Table_stats(Table *T, PyObject *unused)
{
    size_t ev = 0, en = 0;
    for (size_t i = 0; i < T->memo.slots; i++) {
        ev += T->memo.eval[i].used != 0;
        en += T->memo.ends[i].used != 0;
    }
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:K,s:K,s:n,s:n,s:n,s:n}", "memo_slots",
                         (Py_ssize_t)T->memo.slots, "max_capacity",
                         (Py_ssize_t)(T->max_mask + 1), "max_nbytes",
                         (Py_ssize_t)((T->max_mask + 1) * entry_size(T->wide)), "entries",
                         (Py_ssize_t)T->used,
                         "capacity", (Py_ssize_t)(T->mask + 1), "nbytes",
                         (Py_ssize_t)T->nbytes, "evictions", T->evictions, "refused",
                         T->refused, "eval_entries", (Py_ssize_t)ev, "end_entries",
                         (Py_ssize_t)en, "loony_entries", (Py_ssize_t)T->memo.loony_used);
}

/* Proven entries as records of PROVEN_RECORD bytes, little-endian: the key's low and high
 * 64 bits, the depth (int32), lo, hi (int8, +-127 for +-INF) and the move (int8), one byte
 * of padding. The format does not depend on the entry layout, so a checkpoint outlives it. */
#define PROVEN_RECORD 24

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static size_t export_entry(uint8_t *out, bb_t key, uint64_t d)
{
    put_u64(out, (uint64_t)key);
    put_u64(out + 8, (uint64_t)(key >> 64));
    uint32_t depth = (uint32_t)d_depth(d);
    for (int i = 0; i < 4; i++)
        out[16 + i] = (uint8_t)(depth >> (8 * i));
    out[20] = (uint8_t)(d >> 32); /* ENC(lo) */
    out[21] = (uint8_t)(d >> 40); /* ENC(hi) */
    out[22] = (uint8_t)(d >> 48); /* move */
    out[23] = 0;
    return PROVEN_RECORD;
}

static PyObject *Table_export_proven(Table *T, PyObject *unused)
{
    if (T->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the table is in use by a running search");
        return NULL;
    }
    size_t n = 0;
    for (size_t j = 0; j <= T->mask; j++) {
        uint64_t d = T->wide ? ((WideEntry *)T->e)[j].data : ((NarrowEntry *)T->e)[j].data;
        n += d && d_depth(d) >= PROVEN;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * PROVEN_RECORD));
    if (!out)
        return NULL;
    uint8_t *p = (uint8_t *)PyBytes_AS_STRING(out);
    for (size_t j = 0; j <= T->mask; j++) {
        if (T->wide) {
            WideEntry *e = &((WideEntry *)T->e)[j];
            if (e->data && d_depth(e->data) >= PROVEN)
                p += export_entry(p, wide_key(e), e->data);
        } else {
            NarrowEntry *e = &((NarrowEntry *)T->e)[j];
            if (e->data && d_depth(e->data) >= PROVEN)
                p += export_entry(p, narrow_key(e), e->data);
        }
    }
    return out;
}

static PyObject *Table_import_proven(Table *T, PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    if (T->busy || b.len % PROVEN_RECORD) {
        PyErr_SetString(T->busy ? PyExc_RuntimeError : PyExc_ValueError,
                        T->busy ? "the table is in use by a running search"
                                : "not a whole number of proven-entry records");
        PyBuffer_Release(&b);
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)b.buf;
    Py_ssize_t bad = -1;
    for (Py_ssize_t i = 0; i < b.len; i += PROVEN_RECORD) {
        bb_t key = ((bb_t)get_u64(p + i + 8) << 64) | get_u64(p + i);
        int depth = (int32_t)(p[i + 16] | p[i + 17] << 8 | p[i + 18] << 16 |
                              (uint32_t)p[i + 19] << 24);
        int lo = DEC((int8_t)p[i + 20]), hi = DEC((int8_t)p[i + 21]), move = (int8_t)p[i + 22];
        if (depth < PROVEN || lo > hi || (!T->wide && (uint64_t)(key >> 64))) {
            bad = i / PROVEN_RECORD;
            break;
        }
        tt_store(T, key, depth, lo, hi, move);
    }
    PyBuffer_Release(&b);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "record %zd is not a proven entry of this table", bad);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef Table_methods[] = {
    {"get", (PyCFunction)Table_get, METH_O,
     "get(key) -> (depth, lo, hi, move) or None."},
    {"store", (PyCFunction)Table_store, METH_VARARGS,
     "store(key, depth, lo, hi, move): the search's store (merge and replacement rules)."},
    {"clear", (PyCFunction)Table_clear, METH_NOARGS, "Empty the table and the memo caches."},
    {"new_search", (PyCFunction)Table_new_search, METH_NOARGS,
     "Start a new generation: entries of earlier searches are replaced first when full."},
    {"stats", (PyCFunction)Table_stats, METH_NOARGS, "Counters and sizes, as a dict."},
    {"export_proven", (PyCFunction)Table_export_proven, METH_NOARGS,
     "export_proven() -> bytes: every proven entry, 24 bytes each (see import_proven)."},
    {"import_proven", (PyCFunction)Table_import_proven, METH_O,
     "import_proven(data): store export_proven's records (the store's merge rules); "
     "ValueError for data that is not such records."},
    {NULL}};

static PyObject *Table_get_nbytes(Table *T, void *c) { return PyLong_FromSize_t(T->nbytes); }
static PyObject *Table_get_capacity(Table *T, void *c)
{
    return PyLong_FromSize_t(T->mask + 1);
}
static PyObject *Table_get_max_capacity(Table *T, void *c)
{
    return PyLong_FromSize_t(T->max_mask + 1);
}
static PyObject *Table_get_max_nbytes(Table *T, void *c)
{
    return PyLong_FromSize_t((T->max_mask + 1) * entry_size(T->wide));
}
static PyObject *Table_get_wide(Table *T, void *c) { return PyBool_FromLong(T->wide); }
static PyObject *Table_get_memo_slots(Table *T, void *c)
{
    return PyLong_FromSize_t(T->memo.slots);
}
static PyObject *Table_get_evictions(Table *T, void *c)
{
    return PyLong_FromUnsignedLongLong(T->evictions);
}

static PyGetSetDef Table_getset[] = {
    {"nbytes", (getter)Table_get_nbytes, NULL, "bytes of the entry array now", NULL},
    {"capacity", (getter)Table_get_capacity, NULL, "entry slots now", NULL},
    {"max_capacity", (getter)Table_get_max_capacity, NULL,
     "entry slots the table may grow to (a power of two in the bytes it was given)", NULL},
    {"max_nbytes", (getter)Table_get_max_nbytes, NULL, "bytes the entries may grow to", NULL},
    {"evictions", (getter)Table_get_evictions, NULL, "entries replaced by other keys", NULL},
    {"memo_slots", (getter)Table_get_memo_slots, NULL,
     "slots of each of the three memos (horizon values, fill ends, chain DP)", NULL},
    {"wide", (getter)Table_get_wide, NULL,
     "128-bit keys (boards of more than 64 lines); else 64-bit keys in 16-byte entries", NULL},
    {NULL}};

static PySequenceMethods Table_as_sequence = {.sq_length = (lenfunc)Table_len};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "boxfish.engine.dots.search._core.Table",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Table(nbytes, wide=True, memo_entries=65536): the compiled search's "
              "transposition table and memo caches.",
    .tp_new = Table_new,
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_methods = Table_methods,
    .tp_getset = Table_getset,
    .tp_as_sequence = &Table_as_sequence,
};

/* -------------------------------------------------------------------------- chain DP */

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

/* ------------------------------------------------------------------------- evaluation */

static int fill_value(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals0, bb_t blocked,
                      int order)
{
    uint8_t vals[MAXB];
    memcpy(vals, vals0, B->nb);
    const uint8_t *ord = B->fill[order];
    int k = 0;
    for (int i = 0; i < B->nl; i++) {
        int ln = ord[i];
        if (HAS(blocked, ln))
            continue;
        drawn |= BIT(ln);
        k++;
        for (int j = 0; j < 2; j++) {
            int b = B->line_box[ln][j];
            if (b >= 0 && ++vals[b] == 2)
                blocked |= B->box_mask[b];
        }
    }
    Memo *m = &M->ends[hash_bb(drawn) & (M->slots - 1)];
    int f;
    if (m->used && m->key == drawn)
        f = m->value;
    else {
        uint8_t chains[MAXCOMP + 1], loops[MAXCOMP];
        int nc, nlp, joints;
        component_counts(B, drawn, vals, chains, &nc, loops, &nlp, &joints);
        if (joints) {
            if (nc) {
                int mi = 0;
                for (int i = 1; i < nc; i++)
                    if (chains[i] > chains[mi])
                        mi = i;
                chains[mi] = (uint8_t)(chains[mi] + joints);
            } else
                chains[nc++] = (uint8_t)joints;
        }
        f = loony_value_fast(M, chains, nc, loops, nlp);
        m->key = drawn;
        m->value = f;
        m->used = 1;
    }
    long long weight = B->parity_horizon - k;
    if (weight <= 0)
        return 0;
    if (weight < B->parity_ramp)
        f = floordiv((long long)f * weight, B->parity_ramp);
    return (k & 1) ? f : -f;
}

/* evaluate.evaluate: the mean of the fills, scaled by trust. */
static int evaluate(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals)
{
    Memo *m = &M->eval[hash_bb(drawn) & (M->slots - 1)];
    if (m->used && m->key == drawn)
        return m->value;
    bb_t blocked = drawn;
    for (int b = 0; b < B->nb; b++)
        if (vals[b] >= 2)
            blocked |= B->box_mask[b];
    long long total = 0;
    for (int i = 0; i < B->nfills; i++)
        total += fill_value(B, M, drawn, vals, blocked, i);
    int v = floordiv(total * B->trust_num, (long long)B->nfills * B->trust_den);
    m->key = drawn;
    m->value = v;
    m->used = 1;
    return v;
}

/* -------------------------------------------------------------------------------- Core */

/* The most threads one search runs (the main one and its helpers). */
#define MAX_THREADS 64

typedef struct Core {
    PyObject_HEAD
    Board *B;
    Table *T;
    PyObject *aborted; /* the exception class raised when a limit stops the search */
    PyObject *clock;   /* time.perf_counter: the clock the deadline is given in */
    long long nodes, tt_hits, horizon, max_nodes;
    double deadline, c_deadline;
    int has_deadline, nsym, etc_min_free, loony_bound, pruned, abort, busy;
    long long history[MAXL];
    /* threads (see "Threads" below) */
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

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int shared_check(Core *S);

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

/* Tables.from_key_frame */
static int from_key_frame(const Board *B, bb_t drawn, int line, int s)
{
    int ln = s ? B->inv[s][line] : line;
    if (HAS(drawn, ln)) {
        int g = B->group_of[ln];
        if (g >= 0)
            for (int i = 0; i < B->group_len[g]; i++) {
                int x = B->group_line[g][i];
                if (!HAS(drawn, x))
                    return x;
            }
        return -1;
    }
    return ln;
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

/* ------------------------------------------------------------------------------ Threads */

/* A search on several threads (Core.threads > 1): Lazy SMP. The main thread (the caller's)
 * searches the root as with one thread; once it has searched SPAWN_NODES nodes (a smaller
 * search never starts a thread), threads - 1 helpers search the same root with the same
 * window and depth, sharing the transposition table. Each helper orders its moves by its
 * own perturbed centrality (a copy of the board's tables where equally central lines are
 * split at random, differently in each helper), so the threads spread over different
 * subtrees and each finds the others' results in the table. The first thread to finish has
 * the answer (every thread searches the same root, window and depth, and every entry in the
 * table is true, so any thread's value is right); the others stop at their next limit
 * check (every 16 nodes).
 *
 * What the threads share, and how:
 *   the table's entries: lockless (see "Table"); its counters: each thread counts in its
 *     own (tls) and adds them to the table's every 16 nodes;
 *   its growth: a store that would grow the table asks for it (shared_request_grow); every
 *     thread stops at its next limit check (between two nodes, holding no entry) and the
 *     last to stop grows it, then all go on;
 *   nodes: each thread adds its nodes to sh->nodes every 16 nodes; the node budget is on
 *     that sum, and the core's ``nodes`` is the sum once the search ends;
 *   the deadline: each thread reads the clock itself.
 * Each thread has its own memos (the main thread the table's; a helper its own, made with
 * its session and dropped with it, so a SearchCache keeps no more than with one thread: the
 * memos cache pure functions, there is nothing to share), history, counters and board
 * copy. ``horizon`` (the heuristic values used, which tell a proven value) is the
 * finishing thread's. */

#define SPAWN_NODES 2048
#define HELPER_SPLIT 4
#define HELPER_STACK ((size_t)16 << 20)

typedef struct Shared {
    long long nodes;     /* every thread's nodes so far (atomic) */
    long long max_nodes; /* the node budget on them, -1: none */
    int stop;            /* (atomic) a thread finished, or the main thread stopped */
    int grow;            /* (atomic) a store asked the table to grow */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, parked; /* threads searching, threads stopped for a growth (under mu) */
    unsigned epoch;      /* growths so far (under mu) */
    int done, value;     /* the first thread to finish: its value, and the heuristic */
    long long horizon;   /*   values it used (under mu) */
    long long spawn_at;  /* the main thread starts the helpers at this many nodes */
    int started, nhelpers;
    pthread_t tid[MAX_THREADS];
    bb_t drawn; /* the root */
    int alpha, beta, depth;
    uint8_t vals[MAXB];
} Shared;

static int search(Core *S, bb_t drawn, int alpha, int beta, int depth, uint8_t *vals,
                  const bb_t *praw, int pline, int has_key, bb_t hkey, int hs,
                  const Probe *probed);

static void shared_request_grow(Shared *sh) { STORE(&sh->grow, 1); }

/* Under sh->mu, every other running thread stopped: grow the table, wake them. */
static void shared_grow(Shared *sh, Table *T)
{
    if (T->used * GROW_AT > T->mask + 1)
        table_grow_now(T);
    STORE(&sh->grow, 0);
    sh->parked = 0;
    sh->epoch++;
    pthread_cond_broadcast(&sh->cv);
}

/* A growth was asked for: stop until it is done (the last thread to stop does it). */
static void shared_park(Core *S)
{
    Shared *sh = S->sh;
    pthread_mutex_lock(&sh->mu);
    if (LOAD(&sh->grow)) {
        if (++sh->parked == sh->running)
            shared_grow(sh, S->T);
        else {
            unsigned ep = sh->epoch;
            while (sh->epoch == ep)
                pthread_cond_wait(&sh->cv, &sh->mu);
        }
    }
    pthread_mutex_unlock(&sh->mu);
}

/* A thread is done searching (``v``: its value unless it was stopped; ``h0``: its
 * ``horizon`` when it started). */
static void shared_leave(Core *S, int v, long long h0)
{
    Shared *sh = S->sh;
    __atomic_add_fetch(&sh->nodes, S->nodes - S->flushed, __ATOMIC_RELAXED);
    S->flushed = S->nodes;
    table_flush(S->T);
    pthread_mutex_lock(&sh->mu);
    if (!S->abort && !sh->done) {
        sh->done = 1;
        sh->value = v;
        sh->horizon = S->horizon - h0;
    }
    if (!S->id || sh->done)
        STORE(&sh->stop, 1);
    sh->running--;
    if (LOAD(&sh->grow) && sh->running > 0 && sh->parked == sh->running)
        shared_grow(sh, S->T);
    pthread_mutex_unlock(&sh->mu);
}

static void *helper_run(void *arg)
{
    Core *H = arg;
    Shared *sh = H->sh;
    uint8_t vals[MAXB];
    memcpy(vals, sh->vals, H->B->nb);
    long long h0 = H->horizon;
    int v = search(H, sh->drawn, sh->alpha, sh->beta, sh->depth, vals, NULL, 0, 0, 0, 0, NULL);
    shared_leave(H, v, h0);
    return NULL;
}

/* Helper i's session, ready to search (made on first use; NULL without memory). */
static Core *core_helper(Core *S, int i)
{
    Core *H = S->helper[i];
    if (!H) {
        H = PyMem_RawCalloc(1, sizeof(Core));
        Board *B = PyMem_RawMalloc(sizeof(Board));
        if (!H || !B) {
            PyMem_RawFree(H);
            PyMem_RawFree(B);
            return NULL;
        }
        /* a plain copy of the board's tables (never seen by Python; ptab stays the
         * board's) whose centrality splits each class of equally central lines into four
         * at random: a helper's order differs from the main thread's only among lines the
         * order ranks alike, and keeps the next key (the boxes' valences) within a part.
         * (On 4x4 positions of 32-33 undrawn lines, two threads searched 1-14% more
         * nodes in all than one this way; 11-18% without a perturbation, 15-20% breaking
         * every tie at random: measured on a busy two-core host, where the spread from
         * run to run is about as large.) */
        memcpy(B, S->B, sizeof(Board));
        uint64_t r = 0x9E3779B97F4A7C15ULL * (uint64_t)i;
        for (int l = 0; l < B->nl; l++) {
            r = mix64(r + 0x9E3779B97F4A7C15ULL);
            B->cen[l] = B->cen[l] * HELPER_SPLIT + (int32_t)(r % HELPER_SPLIT);
        }
        H->B = B;
        H->id = i;
        S->helper[i] = H;
    }
    if (!H->own.eval || H->own.slots != S->T->memo.slots) {
        memos_free(&H->own);
        if (memos_alloc(&H->own, S->T->memo.slots) < 0) {
            memos_free(&H->own);
            return NULL;
        }
    }
    H->T = S->T;
    H->M = &H->own;
    H->nsym = S->nsym;
    H->etc_min_free = S->etc_min_free;
    H->loony_bound = S->loony_bound;
    H->has_deadline = S->has_deadline;
    H->c_deadline = S->c_deadline;
    H->max_nodes = -1;
    H->nodes = H->flushed = H->tt_hits = H->horizon = 0;
    H->abort = H->pruned = 0;
    H->threads = 1;
    H->sh = S->sh;
    memcpy(H->history, S->history, sizeof(S->history));
    return H;
}

/* The main thread, at SPAWN_NODES nodes: start the helpers. */
static void shared_spawn(Core *S)
{
    Shared *sh = S->sh;
    sh->started = 1;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr))
        return;
    pthread_attr_setstacksize(&attr, HELPER_STACK);
    for (int i = 1; i < S->threads; i++) {
        Core *H = core_helper(S, i);
        if (!H)
            break;
        pthread_mutex_lock(&sh->mu);
        sh->running++;
        pthread_mutex_unlock(&sh->mu);
        if (pthread_create(&sh->tid[sh->nhelpers], &attr, helper_run, H)) {
            pthread_mutex_lock(&sh->mu);
            sh->running--;
            pthread_mutex_unlock(&sh->mu);
            break;
        }
        sh->nhelpers++;
    }
    pthread_attr_destroy(&attr);
}

/* limits_reached's threaded part: count the nodes, stop when another thread finished, stop
 * for a growth, start the helpers; whether the node budget is spent. */
static int shared_check(Core *S)
{
    Shared *sh = S->sh;
    long long n = __atomic_add_fetch(&sh->nodes, S->nodes - S->flushed, __ATOMIC_RELAXED);
    S->flushed = S->nodes;
    table_flush(S->T);
    if (LOAD(&sh->stop))
        return 1;
    if (LOAD(&sh->grow))
        shared_park(S);
    if (!S->id && !sh->started && S->nodes >= sh->spawn_at)
        shared_spawn(S);
    return sh->max_nodes >= 0 && n >= sh->max_nodes;
}

/* search() of the root on S->threads threads (without the GIL): the value of the first
 * thread to finish; S->abort when a limit stopped them all. */
static int search_threads(Core *S, Shared *sh, bb_t drawn, int alpha, int beta, int depth,
                          uint8_t *vals)
{
    Table *T = S->T;
    sh->nodes = S->nodes;
    sh->max_nodes = S->max_nodes;
    sh->running = 1;
    sh->spawn_at = S->nodes + S->spawn_nodes;
    sh->drawn = drawn;
    sh->alpha = alpha;
    sh->beta = beta;
    sh->depth = depth;
    memcpy(sh->vals, vals, S->B->nb);
    S->sh = sh;
    S->flushed = S->nodes;
    T->sh = sh;
    long long h0 = S->horizon;
    int v = search(S, drawn, alpha, beta, depth, vals, NULL, 0, 0, 0, 0, NULL);
    shared_leave(S, v, h0);
    for (int i = 0; i < sh->nhelpers; i++)
        pthread_join(sh->tid[i], NULL);
    T->sh = NULL;
    S->sh = NULL;
    if (sh->grow && T->used * GROW_AT > T->mask + 1)
        table_grow_now(T);
    S->nodes = sh->nodes;
    for (int i = 1; i <= sh->nhelpers; i++) {
        S->tt_hits += S->helper[i]->tt_hits;
        S->helper_nodes += S->helper[i]->nodes;
    }
    if (!sh->done) {
        S->abort = 1;
        return 0;
    }
    S->abort = 0;
    S->horizon = h0 + sh->horizon;
    return sh->value;
}

static void Core_dealloc(Core *S)
{
    Py_XDECREF(S->B);
    Py_XDECREF(S->T);
    Py_XDECREF(S->aborted);
    Py_XDECREF(S->clock);
    for (int i = 1; i < MAX_THREADS; i++)
        if (S->helper[i]) {
            memos_free(&S->helper[i]->own);
            PyMem_RawFree(S->helper[i]->B);
            PyMem_RawFree(S->helper[i]);
        }
    Py_TYPE(S)->tp_free((PyObject *)S);
}

static PyObject *Core_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"board", "table", "aborted", "clock", "symmetry", NULL};
    PyObject *board, *table, *aborted, *clock;
    int symmetry = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!OO|p", kwlist, &BoardType, &board,
                                     &TableType, &table, &aborted, &clock, &symmetry))
        return NULL;
    if (!((Table *)table)->wide && (((Board *)board)->nl > 64 || ((Board *)board)->nb > 64)) {
        PyErr_SetString(PyExc_ValueError, "a board of more than 64 lines needs a wide table");
        return NULL;
    }
    Core *S = (Core *)type->tp_alloc(type, 0);
    if (!S)
        return NULL;
    Py_INCREF(board);
    Py_INCREF(table);
    Py_INCREF(aborted);
    Py_INCREF(clock);
    S->B = (Board *)board;
    S->T = (Table *)table;
    S->M = &S->T->memo;
    S->threads = 1;
    S->spawn_nodes = SPAWN_NODES;
    S->aborted = aborted;
    S->clock = clock;
    S->nsym = symmetry ? S->B->nsym : 1;
    S->max_nodes = -1;
    S->etc_min_free = 10;
    S->loony_bound = 1;
    return (PyObject *)S;
}

static PyObject *Core_search(Core *S, PyObject *args)
{
    PyObject *o;
    int alpha, beta, depth;
    if (!PyArg_ParseTuple(args, "Oiii", &o, &alpha, &beta, &depth))
        return NULL;
    bb_t drawn;
    if (to_bb(o, &drawn) < 0)
        return NULL;
    const Board *B = S->B;
    if (drawn & ~B->full) {
        PyErr_SetString(PyExc_ValueError, "bits beyond the board's lines");
        return NULL;
    }
    if (S->busy || S->T->busy) {
        PyErr_SetString(PyExc_RuntimeError, "a search is already running on this core or table");
        return NULL;
    }
    if (S->has_deadline) {
        PyObject *now = PyObject_CallNoArgs(S->clock);
        if (!now)
            return NULL;
        double py_now = PyFloat_AsDouble(now);
        Py_DECREF(now);
        if (py_now == -1.0 && PyErr_Occurred())
            return NULL;
        S->c_deadline = S->deadline - py_now + mono_now();
    }
    uint8_t vals[MAXB];
    for (int b = 0; b < B->nb; b++)
        vals[b] = (uint8_t)bb_count(drawn & B->box_mask[b]);
    Shared *sh = NULL;
    if (S->threads > 1) {
        sh = PyMem_RawCalloc(1, sizeof(Shared));
        if (!sh)
            return PyErr_NoMemory();
        pthread_mutex_init(&sh->mu, NULL);
        pthread_cond_init(&sh->cv, NULL);
    }
    S->abort = 0;
    S->T->grow_mask = S->T->max_mask;
    S->T->grow_deadline = S->has_deadline ? S->c_deadline : 0;
    S->busy = S->T->busy = 1;
    int v;
    Py_BEGIN_ALLOW_THREADS
    if (sh)
        v = search_threads(S, sh, drawn, alpha, beta, depth, vals);
    else
        v = search(S, drawn, alpha, beta, depth, vals, NULL, 0, 0, 0, 0, NULL);
    Py_END_ALLOW_THREADS
    S->busy = S->T->busy = 0;
    S->T->grow_deadline = 0;
    S->T->grow_mask = S->T->max_mask;
    if (sh) {
        pthread_mutex_destroy(&sh->mu);
        pthread_cond_destroy(&sh->cv);
        PyMem_RawFree(sh);
    }
    if (S->abort) {
        S->abort = 0;
        PyErr_SetNone(S->aborted);
        return NULL;
    }
    return PyLong_FromLong(v);
}

static PyMethodDef Core_methods[] = {
    {"search", (PyCFunction)Core_search, METH_VARARGS,
     "search(drawn, alpha, beta, depth) -> value for the player to move; raises the "
     "``aborted`` exception when the deadline or the node budget is reached."},
    {NULL}};

#define LL_GETSET(field)                                                                    \
    static PyObject *Core_get_##field(Core *S, void *c) { return PyLong_FromLongLong(S->field); } \
    static int Core_set_##field(Core *S, PyObject *v, void *c)                                \
    {                                                                                         \
        long long x = v ? PyLong_AsLongLong(v) : -1;                                          \
        if (!v || (x == -1 && PyErr_Occurred())) {                                            \
            if (!v)                                                                           \
                PyErr_SetString(PyExc_TypeError, "cannot delete");                            \
            return -1;                                                                        \
        }                                                                                     \
        S->field = x;                                                                         \
        return 0;                                                                             \
    }
LL_GETSET(nodes)
LL_GETSET(tt_hits)
LL_GETSET(horizon)
LL_GETSET(spawn_nodes)
LL_GETSET(helper_nodes)

static PyObject *Core_get_etc(Core *S, void *c) { return PyLong_FromLong(S->etc_min_free); }
static int Core_set_etc(Core *S, PyObject *v, void *c)
{
    long x = v ? PyLong_AsLong(v) : -1;
    if (!v || (x == -1 && PyErr_Occurred()))
        return -1;
    S->etc_min_free = (int)x;
    return 0;
}

static PyObject *Core_get_loony(Core *S, void *c) { return PyBool_FromLong(S->loony_bound); }
static int Core_set_loony(Core *S, PyObject *v, void *c)
{
    int x = v ? PyObject_IsTrue(v) : -1;
    if (x < 0) {
        if (!v)
            PyErr_SetString(PyExc_TypeError, "cannot delete");
        return -1;
    }
    S->loony_bound = x;
    return 0;
}

static PyObject *Core_get_threads(Core *S, void *c) { return PyLong_FromLong(S->threads); }
static int Core_set_threads(Core *S, PyObject *v, void *c)
{
    long x = v ? PyLong_AsLong(v) : -1;
    if (!v || (x == -1 && PyErr_Occurred()))
        return -1;
    if (x < 1 || x > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be 1..%d, got %ld", MAX_THREADS, x);
        return -1;
    }
    if (S->busy) {
        PyErr_SetString(PyExc_RuntimeError, "a search is running on this core");
        return -1;
    }
    S->threads = (int)x;
    return 0;
}

static PyObject *Core_get_deadline(Core *S, void *c)
{
    if (!S->has_deadline)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(S->deadline);
}
static int Core_set_deadline(Core *S, PyObject *v, void *c)
{
    if (!v || v == Py_None) {
        S->has_deadline = 0;
        return 0;
    }
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    S->deadline = d;
    S->has_deadline = 1;
    return 0;
}
static PyObject *Core_get_max_nodes(Core *S, void *c)
{
    if (S->max_nodes < 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(S->max_nodes);
}
static int Core_set_max_nodes(Core *S, PyObject *v, void *c)
{
    if (!v || v == Py_None) {
        S->max_nodes = -1;
        return 0;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    S->max_nodes = x < 0 ? 0 : x;
    return 0;
}

static PyGetSetDef Core_getset[] = {
    {"nodes", (getter)Core_get_nodes, (setter)Core_set_nodes, "positions searched", NULL},
    {"tt_hits", (getter)Core_get_tt_hits, (setter)Core_set_tt_hits, "table hits", NULL},
    {"horizon", (getter)Core_get_horizon, (setter)Core_set_horizon,
     "heuristic values used so far", NULL},
    {"etc_min_free", (getter)Core_get_etc, (setter)Core_set_etc,
     "enhanced transposition cutoffs at nodes with this many undrawn lines or more", NULL},
    {"loony_bound", (getter)Core_get_loony, (setter)Core_set_loony,
     "skip the loony sacrifices whose bound (gen_sacrifices) cannot reach into the window",
     NULL},
    {"spawn_nodes", (getter)Core_get_spawn_nodes, (setter)Core_set_spawn_nodes,
     "a threaded search starts its helper threads once it has searched this many nodes",
     NULL},
    {"helper_nodes", (getter)Core_get_helper_nodes, (setter)Core_set_helper_nodes,
     "nodes searched by helper threads (counted in ``nodes`` too)", NULL},
    {"threads", (getter)Core_get_threads, (setter)Core_set_threads,
     "threads a search runs (1: this one only; see _core.c, \"Threads\")", NULL},
    {"deadline", (getter)Core_get_deadline, (setter)Core_set_deadline,
     "time.perf_counter() time to stop at, or None", NULL},
    {"max_nodes", (getter)Core_get_max_nodes, (setter)Core_set_max_nodes,
     "node budget, or None", NULL},
    {NULL}};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "boxfish.engine.dots.search._core.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Core(board, table, aborted, clock, symmetry=True): one search session.",
    .tp_new = Core_new,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_getset = Core_getset,
};

static struct PyModuleDef coremodule = {
    PyModuleDef_HEAD_INIT, "_core",
    "The compiled Dots-and-Boxes search (see engine/dots/compiled.py).", -1, NULL};

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&BoardType) < 0 || PyType_Ready(&TableType) < 0 ||
        PyType_Ready(&CoreType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&coremodule);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "Board", (PyObject *)&BoardType) < 0 ||
        PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0 ||
        PyModule_AddObjectRef(m, "Core", (PyObject *)&CoreType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_LINES", MAXL) < 0 ||
        PyModule_AddIntConstant(m, "MAX_BOXES", MAXB) < 0 ||
        PyModule_AddIntConstant(m, "MAX_THREADS", MAX_THREADS) < 0 ||
        PyModule_AddIntConstant(m, "WIDE_ENTRY_BYTES", (long)sizeof(WideEntry)) < 0 ||
        PyModule_AddIntConstant(m, "NARROW_ENTRY_BYTES", (long)sizeof(NarrowEntry)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
