/* The horizon evaluations: the fill evaluation (engine/dots/search/evaluate.py: the mean of
 * the fills' loony values, scaled by trust) and the learned one (engine/dots/search/
 * learned.py: regression trees over features that include the fills'). */
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

/* learned.feature_count */
static inline int feature_count(const Board *B)
{
    return B->nl + 3 * B->nb + 3 * B->nfills + 4 + 7 + 8;
}

/* learned.features, in learned.py's order; returns how many. */
static int learned_features(const Board *B, Memos *M, bb_t drawn, const uint8_t *vals,
                            int32_t *x)
{
    const int nl = B->nl, nb = B->nb;
    memset(x, 0, sizeof(int32_t) * feature_count(B));
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
    int sum_s = 0, sum_f = 0, sum_sf = 0, sum_k = 0, min_k = INF, max_k = -INF;
    int min_sf = INF, max_sf = -INF;
    for (int i = 0; i < B->nallfills; i++) {
        uint8_t ev[MAXB];
        bb_t end;
        int k = fill_run(B, drawn, vals, blocked, i, &end, ev);
        int f = fill_loony(B, M, end, ev);
        int s = (k & 1) ? 1 : -1;
        if (i < B->nfills) {
            x[o + 3 * i] = s;
            x[o + 3 * i + 1] = f;
            x[o + 3 * i + 2] = s * f;
        }
        if (i == 0) {
            end0 = end;
            memcpy(ends0, ev, nb);
        }
        sum_s += s;
        sum_f += f;
        sum_sf += s * f;
        sum_k += k;
        min_k = k < min_k ? k : min_k;
        max_k = k > max_k ? k : max_k;
        min_sf = s * f < min_sf ? s * f : min_sf;
        max_sf = s * f > max_sf ? s * f : max_sf;
    }
    o += 3 * B->nfills;
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
    o += 7;
    x[o] = sum_s;
    x[o + 1] = sum_f;
    x[o + 2] = sum_sf;
    x[o + 3] = sum_k;
    x[o + 4] = min_k;
    x[o + 5] = max_k;
    x[o + 6] = min_sf;
    x[o + 7] = max_sf;
    return o + 8;
}

/* Model.value_of: the trees' sum, rounded half up, clamped to the boxes left. */
static int learned_evaluate(const Board *B, Memos *M, const Model *L, bb_t drawn,
                            const uint8_t *vals)
{
    int32_t x[MAXFEAT];
    learned_features(B, M, drawn, vals, x);
    const TreeNode *nodes = L->nodes;
    int64_t total = 0;
    for (int t = 0; t < L->ntrees; t++) {
        const TreeNode *n = nodes + L->roots[t];
        while (n->feature >= 0)
            n = nodes + ((double)x[n->feature] <= n->threshold ? n->left : n->right);
        total += n->value;
    }
    int64_t v = (total + ((int64_t)1 << (L->shift - 1))) >> L->shift;
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
    int v = L && B->nl - bb_count(drawn) <= L->max_undrawn
                ? learned_evaluate(B, M, L, drawn, vals)
                : fill_evaluate(B, M, drawn, vals);
    if (L)
        v = with_control(B, M, L, drawn, v);
    m->key = drawn;
    m->value = v;
    m->used = 1;
    return v;
}

/* ------------------------------------------------------------------ the Model type */

static void Model_dealloc(Model *L)
{
    PyMem_RawFree(L->nodes);
    PyMem_RawFree(L->roots);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

/* ``buf`` as ``n`` items of ``size`` bytes: their count, or -1 (an exception set). */
static Py_ssize_t items_of(Py_buffer *buf, size_t size, const char *name)
{
    if (buf->len % (Py_ssize_t)size) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of %zu-byte "
                     "items", name, buf->len, size);
        return -1;
    }
    return buf->len / (Py_ssize_t)size;
}

static PyObject *Model_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"features", "shift", "feature", "threshold", "left", "right",
                             "value", "roots", "max_undrawn", "control_moves", NULL};
    int nf, shift, max_undrawn, control_moves = 0;
    Py_buffer feature, threshold, left, right, value, roots;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiy*y*y*y*y*y*i|i", kwlist, &nf, &shift,
                                     &feature, &threshold, &left, &right, &value, &roots,
                                     &max_undrawn, &control_moves))
        return NULL;
    Model *L = NULL;
    Py_ssize_t n = items_of(&feature, 4, "feature"), nt = items_of(&roots, 4, "roots");
    if (n < 0 || nt < 0)
        ;
    else if (items_of(&threshold, 8, "threshold") != n || items_of(&left, 4, "left") != n ||
             items_of(&right, 4, "right") != n || items_of(&value, 4, "value") != n) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "the node arrays have different lengths");
    } else if (nf < 1 || nf > MAXFEAT || shift < 1 || shift > 30 || n < 1 || nt < 1)
        PyErr_Format(PyExc_ValueError, "a model of %d features, %zd nodes, %zd trees and "
                     "shift %d does not fit", nf, n, nt, shift);
    else if ((L = (Model *)type->tp_alloc(type, 0))) {
        L->nf = nf;
        L->shift = shift;
        L->max_undrawn = max_undrawn;
        L->control_moves = control_moves;
        L->nnodes = (int)n;
        L->ntrees = (int)nt;
        L->nodes = PyMem_RawCalloc(n, sizeof(TreeNode));
        L->roots = PyMem_RawCalloc(nt, sizeof(int32_t));
        if (!L->nodes || !L->roots) {
            PyErr_NoMemory();
            Py_CLEAR(L);
        }
        const int32_t *fe = feature.buf, *lo = left.buf, *hi = right.buf, *va = value.buf;
        const double *th = threshold.buf;
        for (Py_ssize_t i = 0; L && i < n; i++) {
            TreeNode *d = &L->nodes[i];
            d->feature = fe[i] < 0 ? -1 : fe[i];
            d->threshold = th[i];
            d->left = lo[i];
            d->right = hi[i];
            d->value = va[i];
            /* children after their parent: every walk ends, inside the array */
            if (d->feature >= nf || (d->feature >= 0 && (d->left <= i || d->left >= n ||
                                                         d->right <= i || d->right >= n))) {
                PyErr_Format(PyExc_ValueError, "node %zd refers outside the model", i);
                Py_CLEAR(L);
            }
        }
        if (L)
            memcpy(L->roots, roots.buf, nt * sizeof(int32_t));
        for (Py_ssize_t i = 0; L && i < nt; i++)
            if (L->roots[i] < 0 || L->roots[i] >= n) {
                PyErr_Format(PyExc_ValueError, "tree %zd's root is outside the model", i);
                Py_CLEAR(L);
            }
    }
    PyBuffer_Release(&feature);
    PyBuffer_Release(&threshold);
    PyBuffer_Release(&left);
    PyBuffer_Release(&right);
    PyBuffer_Release(&value);
    PyBuffer_Release(&roots);
    return (PyObject *)L;
}

static PyObject *Model_get_features(Model *L, void *c) { return PyLong_FromLong(L->nf); }

static PyObject *Model_get_control_moves(Model *L, void *c)
{
    return PyLong_FromLong(L->control_moves);
}

static PyGetSetDef Model_getset[] = {
    {"features", (getter)Model_get_features, NULL, "the features it reads", NULL},
    {"control_moves", (getter)Model_get_control_moves, NULL,
     "leaves of at most this many non-loony moves take control's sign", NULL},
    {NULL}};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "boxfish.engine.dots.search._core.Model",
    .tp_basicsize = sizeof(Model),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(features, shift, feature, threshold, left, right, value, roots, "
              "max_undrawn, control_moves=0): the learned evaluation's regression trees, as "
              "little-endian node arrays (int32; threshold float64), for positions of at most "
              "max_undrawn undrawn lines (the fill evaluation past them); leaves of at most "
              "control_moves non-loony moves take the sign of their Nimstring control.",
    .tp_new = Model_new,
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_getset = Model_getset,
};
