/* The transposition table (the Table type) and the memos of the evaluation and the chain
 * DP that it owns. */
#include "core.h"

/* Several threads read and write the entries at once, without locks (see threads.c).
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
 * proven, an earlier search's before this one's, shallower before deeper; a proof's depth is
 * PROVEN plus the size class of its subtree, node.c's proven_depth), except that a
 * heuristic entry never replaces a proven one (it is dropped instead). An existing key is
 * updated as table.TranspositionTable.store does.
 *
 * With threads: two stores of one key may take two slots (one of them read the other's slot
 * torn); a probe finds the first. Every entry written holds what one search proved or
 * estimated of its key, so whichever is read is true. A store that fills the table past
 * its growth point asks for the table to grow (table_grow); with threads the table grows
 * once they have all stopped between two nodes (see threads.c). */
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
                    if (ed > depth)                                                            \
                        depth = ed;                                                            \
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
                    (ed >= PROVEN ? ed - PROVEN : ed < 0 ? 0 : ed);                            \
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



/* Doubles the table (rehashing every entry), or, while a threaded search runs on it, asks
 * its threads to stop so that the last one to stop does it (see threads.c). */
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
    M->eval_tag = NULL;
    M->eval = PyMem_RawCalloc(slots, sizeof(Memo));
    M->ends = PyMem_RawCalloc(slots, sizeof(Memo));
    M->loony = PyMem_RawCalloc(slots, sizeof(LoonyMemo));
    M->nim = PyMem_RawCalloc(NIM_SLOTS_PER_SLOT * slots, sizeof(Memo));
    M->nim_used = 0;
    return M->eval && M->ends && M->loony && M->nim ? 0 : -1;
}

static void memos_free(Memos *M)
{
    PyMem_RawFree(M->eval);
    PyMem_RawFree(M->ends);
    PyMem_RawFree(M->loony);
    PyMem_RawFree(M->nim);
    M->eval = M->ends = M->nim = NULL;
    M->loony = NULL;
}

static void memos_clear(Memos *M)
{
    memset(M->eval, 0, M->slots * sizeof(Memo));
    memset(M->ends, 0, M->slots * sizeof(Memo));
    memset(M->loony, 0, M->slots * sizeof(LoonyMemo));
    M->loony_used = 0;
    memset(M->nim, 0, NIM_SLOTS_PER_SLOT * M->slots * sizeof(Memo));
    M->nim_used = 0;
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

/* The key ``o`` of Table.get or Table.store, for a table no search is running on: 0, else -1
 * with an error set. */
static int table_key_arg(Table *T, PyObject *o, bb_t *key)
{
    if (to_bb(o, key) < 0)
        return -1;
    if (T->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the table is in use by a running search");
        return -1;
    }
    if (!T->wide && (uint64_t)(*key >> 64)) {
        PyErr_SetString(PyExc_ValueError, "a key of more than 64 bits for a narrow table");
        return -1;
    }
    return 0;
}

static PyObject *Table_get(Table *T, PyObject *o)
{
    bb_t key;
    if (table_key_arg(T, o, &key) < 0)
        return NULL;
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
    if (table_key_arg(T, o, &key) < 0)
        return NULL;
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
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:K,s:K,s:n,s:n,s:n,s:n,s:n,s:n}", "memo_slots",
                         (Py_ssize_t)T->memo.slots, "max_capacity",
                         (Py_ssize_t)(T->max_mask + 1), "max_nbytes",
                         (Py_ssize_t)((T->max_mask + 1) * entry_size(T->wide)), "entries",
                         (Py_ssize_t)T->used,
                         "capacity", (Py_ssize_t)(T->mask + 1), "nbytes",
                         (Py_ssize_t)T->nbytes, "evictions", T->evictions, "refused",
                         T->refused, "eval_entries", (Py_ssize_t)ev, "end_entries",
                         (Py_ssize_t)en, "loony_entries", (Py_ssize_t)T->memo.loony_used,
                         "nim_slots", (Py_ssize_t)(NIM_SLOTS_PER_SLOT * T->memo.slots),
                         "nim_entries", (Py_ssize_t)T->memo.nim_used);
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
