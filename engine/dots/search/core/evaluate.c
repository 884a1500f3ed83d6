/* The horizon evaluations: the fill evaluation (engine/dots/search/evaluate.py: the mean of
 * the fills' loony values, scaled by trust) and the learned one (engine/dots/search/
 * learned.py: an integer network over features that include the fills'). */
#include "core.h"

static inline int floordiv(long long a, long long b) /* Python's a // b for b > 0 */
{
    long long q = a / b;
    if ((a % b) != 0 && a < 0)
        q--;
    return (int)q;
}

/* Evaluator.fill: the greedy fill of safe lines in order ``order``; the lines it drew, and
 * the position (``*end``) and valences (``vals``, from ``vals0``) where it ends. */
static int fill_run(const Board *B, bb_t drawn, const uint8_t *vals0, bb_t blocked, int order,
                    bb_t *end, uint8_t *vals)
{
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
    *end = drawn;
    return k;
}

/* Evaluator.loony: the loony value where a fill ends, remembered by position. */
static int fill_loony(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals)
{
    Memo *m = &M->ends[hash_bb(drawn) & (M->slots - 1)];
    if (m->used && m->key == drawn)
        return m->value;
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
    int f = loony_value_fast(M, chains, nc, loops, nlp);
    m->key = drawn;
    m->value = f;
    m->used = 1;
    return f;
}

static int fill_value(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals0, bb_t blocked,
                      int order)
{
    uint8_t vals[MAXB];
    bb_t end;
    int k = fill_run(B, drawn, vals0, blocked, order, &end, vals);
    int f = fill_loony(B, M, end, vals);
    long long weight = B->parity_horizon - k;
    if (weight <= 0)
        return 0;
    if (weight < B->parity_ramp)
        f = floordiv((long long)f * weight, B->parity_ramp);
    return (k & 1) ? f : -f;
}

static inline bb_t blocked_lines(const Board *B, bb_t drawn, const uint8_t *vals)
{
    bb_t blocked = drawn;
    for (int b = 0; b < B->nb; b++)
        if (vals[b] >= 2)
            blocked |= B->box_mask[b];
    return blocked;
}

/* evaluate.evaluate: the mean of the fills, scaled by trust. */
static int fill_evaluate(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals)
{
    bb_t blocked = blocked_lines(B, drawn, vals);
    long long total = 0;
    for (int i = 0; i < B->nfills; i++)
        total += fill_value(B, M, drawn, vals, blocked, i);
    return floordiv(total * B->trust_num, (long long)B->nfills * B->trust_den);
}

/* learned.features, in learned.py's order; returns how many (at most MAXFEAT). */
static int learned_features(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals,
                            int32_t *x)
{
    const int nl = B->nl, nb = B->nb;
    int n = nl + 3 * nb + 3 * B->nfills + 4 + 7;
    memset(x, 0, sizeof(int32_t) * n);
    for (bb_t d = drawn; d; d &= d - 1)
        x[bb_low(d)] = 1;
    int left = 0;
    for (int b = 0; b < nb; b++) {
        if (vals[b] < 3)
            x[nl + 3 * b + vals[b]] = 1;
        left += vals[b] < 4;
    }
    bb_t blocked = blocked_lines(B, drawn, vals);
    int o = nl + 3 * nb;
    uint8_t ends0[MAXB];
    bb_t end0 = 0;
    for (int i = 0; i < B->nfills; i++) {
        uint8_t ev[MAXB];
        bb_t end;
        int k = fill_run(B, drawn, vals, blocked, i, &end, ev);
        int f = fill_loony(B, M, end, ev);
        int s = (k & 1) ? 1 : -1;
        x[o] = s;
        x[o + 1] = f;
        x[o + 2] = s * f;
        o += 3;
        if (i == 0) {
            end0 = end;
            memcpy(ends0, ev, nb);
        }
    }
    int safe = bb_count(B->full & ~blocked);
    x[o] = nl - bb_count(drawn);
    x[o + 1] = left;
    x[o + 2] = safe;
    x[o + 3] = (safe & 1) ? 1 : -1;
    o += 4;
    uint8_t chains[MAXCOMP], loops[MAXCOMP];
    int nc, nlp, joints;
    component_counts(B, end0, ends0, chains, &nc, loops, &nlp, &joints);
    for (int i = 0; i < nc; i++) {
        if (chains[i] == 1)
            x[o]++;
        else if (chains[i] == 2)
            x[o + 1]++;
        else {
            x[o + 2]++;
            x[o + 3] += chains[i];
        }
    }
    x[o + 4] = nlp;
    for (int i = 0; i < nlp; i++)
        x[o + 5] += loops[i];
    x[o + 6] = joints;
    return o + 7;
}

/* Model.value: the network on the features, rounded half up, clamped to the boxes left. */
static int learned_evaluate(const Board *B, Memos *M, const Model *L, bb_t drawn,
                            const uint8_t *vals)
{
    int32_t x[MAXFEAT];
    int nf = learned_features(B, M, drawn, vals, x);
    int64_t a1[MAXHIDDEN];
    for (int j = 0; j < L->h1; j++)
        a1[j] = L->b1[j];
    for (int i = 0; i < nf; i++) {
        int64_t xi = x[i];
        if (!xi)
            continue;
        const int32_t *col = L->w1t + (size_t)i * L->h1;
        for (int j = 0; j < L->h1; j++)
            a1[j] += xi * col[j];
    }
    for (int j = 0; j < L->h1; j++)
        if (a1[j] < 0)
            a1[j] = 0;
    int64_t out = L->b3;
    for (int k = 0; k < L->h2; k++) {
        const int32_t *row = L->w2 + (size_t)k * L->h1;
        int64_t acc = L->b2[k];
        for (int j = 0; j < L->h1; j++)
            acc += a1[j] * row[j];
        if (acc > 0)
            out += (acc >> L->shift) * L->w3[k];
    }
    int64_t v = (out + ((int64_t)1 << (2 * L->shift - 1))) >> (2 * L->shift);
    int left = x[B->nl + 3 * B->nb + 3 * B->nfills + 1];
    return v > left ? left : v < -left ? -left : (int)v;
}

/* The horizon value of a leaf (no box can be taken): the learned evaluation when the search
 * has a model, else the fill evaluation; remembered by position (the memo is emptied when the
 * evaluation it holds values of changes). */
static int evaluate(const Board *B, Memos *M, const Model *L, bb_t drawn, const uint8_t *vals)
{
    if (M->eval_tag != (const void *)L) {
        memset(M->eval, 0, M->slots * sizeof(Memo));
        M->eval_tag = L;
    }
    Memo *m = &M->eval[hash_bb(drawn) & (M->slots - 1)];
    if (m->used && m->key == drawn)
        return m->value;
    int v = L ? learned_evaluate(B, M, L, drawn, vals) : fill_evaluate(B, M, drawn, vals);
    m->key = drawn;
    m->value = v;
    m->used = 1;
    return v;
}

/* ------------------------------------------------------------------ the Model type */

static void Model_dealloc(Model *L)
{
    PyMem_RawFree(L->w1t);
    PyMem_RawFree(L->b1);
    PyMem_RawFree(L->w2);
    PyMem_RawFree(L->b2);
    PyMem_RawFree(L->w3);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

/* A copy of ``buf``'s bytes, which must be ``n`` items of ``size`` bytes. */
static void *copy_array(Py_buffer *buf, Py_ssize_t n, size_t size, const char *name)
{
    if (buf->len != n * (Py_ssize_t)size) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd", name, buf->len,
                     n * (Py_ssize_t)size);
        return NULL;
    }
    void *p = PyMem_RawMalloc(n * size);
    if (!p)
        PyErr_NoMemory();
    else
        memcpy(p, buf->buf, n * size);
    return p;
}

static PyObject *Model_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"features", "hidden1", "hidden2", "shift", "w1t", "b1", "w2",
                             "b2", "w3", "b3", NULL};
    int nf, h1, h2, shift;
    long long b3;
    Py_buffer w1t, b1, w2, b2, w3;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiiiy*y*y*y*y*L", kwlist, &nf, &h1, &h2,
                                     &shift, &w1t, &b1, &w2, &b2, &w3, &b3))
        return NULL;
    Model *L = NULL;
    if (nf < 1 || nf > MAXFEAT || h1 < 1 || h1 > MAXHIDDEN || h2 < 1 || h2 > MAXHIDDEN ||
        shift < 1 || shift > 23)
        PyErr_Format(PyExc_ValueError, "a model of %d features, %d and %d hidden units and "
                     "shift %d does not fit (at most %d, %d, %d, 23)", nf, h1, h2, shift,
                     MAXFEAT, MAXHIDDEN, MAXHIDDEN);
    else if ((L = (Model *)type->tp_alloc(type, 0))) {
        L->nf = nf;
        L->h1 = h1;
        L->h2 = h2;
        L->shift = shift;
        L->b3 = b3;
        if (!(L->w1t = copy_array(&w1t, (Py_ssize_t)nf * h1, 4, "w1t")) ||
            !(L->b1 = copy_array(&b1, h1, 8, "b1")) ||
            !(L->w2 = copy_array(&w2, (Py_ssize_t)h2 * h1, 4, "w2")) ||
            !(L->b2 = copy_array(&b2, h2, 8, "b2")) ||
            !(L->w3 = copy_array(&w3, h2, 4, "w3")))
            Py_CLEAR(L);
    }
    PyBuffer_Release(&w1t);
    PyBuffer_Release(&b1);
    PyBuffer_Release(&w2);
    PyBuffer_Release(&b2);
    PyBuffer_Release(&w3);
    return (PyObject *)L;
}

static PyObject *Model_get_features(Model *L, void *c) { return PyLong_FromLong(L->nf); }

static PyGetSetDef Model_getset[] = {
    {"features", (getter)Model_get_features, NULL, "the features it reads", NULL},
    {NULL}};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "boxfish.engine.dots.search._core.Model",
    .tp_basicsize = sizeof(Model),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(features, hidden1, hidden2, shift, w1t, b1, w2, b2, w3, b3): the learned "
              "evaluation's integer network (little-endian int32 weights, int64 biases; w1t "
              "feature by feature).",
    .tp_new = Model_new,
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_getset = Model_getset,
};
