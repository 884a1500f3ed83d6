/* Nimstring values (engine/dots/nimstring.py: the same rules, the same budget): the mex of
 * the values of the moves that are not loony, with the boxes that can be taken without a
 * choice taken at once, and independent components combined by XOR. Component values are
 * exact, so the memo (``Memos.nim``, by the component's undrawn lines) is pure. */
#include "core.h"

/* Settles the captures after line ``ln`` is drawn from the undrawn lines ``*u``: 0 when the
 * position is loony (the taker may decline the last boxes), else 1 with ``*u`` the undrawn
 * lines once every box that can be taken is taken. */
static int nim_settle(const Board *B, bb_t *u, int ln)
{
    bb_t U = *u;
    int todo[MAXB + 2], n = 0;
    for (int k = 0; k < 2; k++) {
        int b = B->line_box[ln][k];
        if (b >= 0 && bb_count(B->box_mask[b] & U) == 1)
            todo[n++] = b;
    }
    while (n) {
        int c = todo[--n];
        bb_t last = B->box_mask[c] & U;
        if (bb_count(last) != 1)
            continue; /* taken with its neighbour already */
        int d = other_box(B, bb_low(last), c);
        if (d >= 0 && bb_count(B->box_mask[d] & U) == 2) {
            /* c hangs on d, whose other line leads to the border or to a box that cannot be
             * taken: the taker may draw that line instead, declining c and d */
            int x = bb_high(B->box_mask[d] & U & ~last);
            int e = other_box(B, x, d);
            if (e < 0 || bb_count(B->box_mask[e] & U) >= 2)
                return 0;
        }
        U &= ~last;
        if (d >= 0 && bb_count(B->box_mask[d] & U) == 1)
            todo[n++] = d;
    }
    *u = U;
    return 1;
}

/* The component of the lowest of the undrawn lines ``u``: the lines joined to it by boxes. */
static bb_t nim_component_of(const Board *B, bb_t u)
{
    bb_t comp = u & (~u + 1), frontier = comp;
    while (frontier) {
        int l = bb_low(frontier);
        frontier &= frontier - 1;
        for (int k = 0; k < 2; k++) {
            int b = B->line_box[l][k];
            if (b >= 0) {
                bb_t fresh = B->box_mask[b] & u & ~comp;
                comp |= fresh;
                frontier |= fresh;
            }
        }
    }
    return comp;
}

static int nim_component(const Board *B, Memos *M, bb_t comp, long long *budget);

/* The value of the undrawn lines ``u`` (no box to take): the XOR of its components'; -1 when
 * the budget ran out. */
static int nim_sum(const Board *B, Memos *M, bb_t u, long long *budget)
{
    int v = 0;
    while (u) {
        bb_t comp = nim_component_of(B, u);
        u &= ~comp;
        int x = nim_component(B, M, comp, budget);
        if (x < 0)
            return -1;
        v ^= x;
    }
    return v;
}

static Memo *nim_slot(Memos *M, bb_t comp)
{
    size_t mask = NIM_SLOTS_PER_SLOT * M->slots - 1, i = hash_bb(comp) & mask;
    while (M->nim[i].used && M->nim[i].key != comp)
        i = (i + 1) & mask;
    return &M->nim[i];
}

/* Twin lines (the border lines of one box) are the same move, so a component is remembered
 * by its twin-sorted form and only the first of its twins is tried. */
static int nim_component(const Board *B, Memos *M, bb_t comp, long long *budget)
{
    bb_t key = B->full & ~twin_sort(B, B->full & ~comp);
    Memo *m = nim_slot(M, key);
    if (m->used)
        return m->value;
    if (*budget == 0)
        return -1;
    if (*budget > 0)
        (*budget)--;
    bb_t seen = 0, rest = comp;
    uint64_t groups = 0;
    while (rest) {
        int l = bb_low(rest);
        rest &= rest - 1;
        int g = B->group_of[l];
        if (g >= 0) {
            if (groups >> g & 1)
                continue;
            groups |= (uint64_t)1 << g;
        }
        bb_t after = comp & ~BIT(l);
        if (nim_settle(B, &after, l)) {
            int x = nim_sum(B, M, after, budget);
            if (x < 0)
                return -1;
            seen |= BIT(x); /* x < the options' count <= MAXL */
        }
    }
    int v = 0;
    while (HAS(seen, v))
        v++;
    if (4 * (M->nim_used + 1) > 3 * NIM_SLOTS_PER_SLOT * M->slots) {
        memset(M->nim, 0, NIM_SLOTS_PER_SLOT * M->slots * sizeof(Memo));
        M->nim_used = 0;
    }
    m = nim_slot(M, key); /* the recursion may have moved or emptied the slots */
    m->key = key;
    m->value = v;
    m->used = 1;
    M->nim_used++;
    return v;
}

/* The Nimstring value of ``drawn`` (no box to take), or -1 when it needs more than ``budget``
 * new component values (budget < 0: no limit). */
static int nimber(const Board *B, Memos *M, bb_t drawn, long long budget)
{
    return nim_sum(B, M, B->full & ~drawn, &budget);
}

/* The moves of ``drawn`` (no box to take) that are not loony, counted up to ``limit + 1``. */
static int nim_options(const Board *B, bb_t drawn, int limit)
{
    bb_t u = B->full & ~drawn, rest = u;
    int n = 0;
    while (rest && n <= limit) {
        int l = bb_low(rest);
        rest &= rest - 1;
        bb_t after = u & ~BIT(l);
        n += nim_settle(B, &after, l);
    }
    return n;
}

/* The learned estimate ``v`` of a leaf with control's sign where Nimstring decides it cheaply
 * (learned.with_control): at least one box, won with control (a value other than 0). */
static int with_control(const Board *B, Memos *M, const Model *L, bb_t drawn, int v)
{
    if (L->control_moves <= 0 || nim_options(B, drawn, L->control_moves) > L->control_moves)
        return v;
    int a = v < 0 ? -v : v;
    if (a < 1)
        a = 1;
    return nimber(B, M, drawn, -1) ? a : -a;
}
