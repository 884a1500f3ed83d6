/* A search on several threads (Lazy SMP). */
#include "core.h"

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
 *   the table's entries: lockless (see table.c); its counters: each thread counts in its
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
    int v = search_root(H, sh->drawn, sh->alpha, sh->beta, sh->depth, vals);
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
    H->sized_proofs = S->sized_proofs;
    H->chain_graph = S->chain_graph;
    H->model = S->model;
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
    int v = search_root(S, drawn, alpha, beta, depth, vals);
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
