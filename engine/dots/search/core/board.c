/* The tables of one board size (the Board type, built from engine.dots.search.board's
 * Tables), and the transposition key of a position: its images under the symmetries, each
 * twin-sorted, the smallest. */
#include "core.h"

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

static void Board_dealloc(Board *self)
{
    PyMem_Free(self->ptab);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The steps of Board_new: each reads one or two of its arguments into B; -1 on a failure,
 * with a Python error pending, or none when the tables are inconsistent. */

static int read_boxes(Board *B, PyObject *box_lines)
{
    int rows[MAXB][8], lens[MAXB];
    for (int l = 0; l < B->nl; l++)
        B->line_box[l][0] = B->line_box[l][1] = -1;
    int nb = read_rows(box_lines, rows, lens, MAXB, "box_lines");
    if (nb < 0)
        return -1;
    B->nb = nb;
    for (int b = 0; b < nb; b++) {
        if (lens[b] != 4)
            return -1;
        B->box_mask[b] = 0;
        for (int i = 0; i < 4; i++) {
            int l = rows[b][i];
            if (l < 0 || l >= B->nl)
                return -1;
            B->box_mask[b] |= BIT(l);
            if (B->line_box[l][0] < 0)
                B->line_box[l][0] = (int8_t)b;
            else
                B->line_box[l][1] = (int8_t)b;
        }
    }
    return 0;
}

/* The symmetries (the identity first), each a permutation of the lines. */
static int read_symmetries(Board *B, PyObject *syms)
{
    const int nl = B->nl;
    int perm[MAXL];
    PyObject *f = PySequence_Fast(syms, "syms");
    if (!f)
        return -1;
    Py_ssize_t ns = PySequence_Fast_GET_SIZE(f);
    int r = ns >= 1 && ns <= MAXS ? 0 : -1;
    for (int s = 0; !r && s < ns; s++) {
        if (read_ints(PySequence_Fast_GET_ITEM(f, s), perm, MAXL, "syms") != nl) {
            r = -1;
            break;
        }
        for (int l = 0; l < nl; l++) {
            if (perm[l] < 0 || perm[l] >= nl) {
                r = -1;
                break;
            }
            B->perm[s][l] = (uint8_t)perm[l];
            B->inv[s][perm[l]] = (uint8_t)l;
            B->limg[l][s] = BIT(perm[l]);
        }
    }
    Py_DECREF(f);
    B->nsym = (int)ns;
    return r;
}

/* ``ptab``: the image of every byte of a position under every symmetry but the identity. */
static int image_tables(Board *B)
{
    B->nchunks = (B->nl + 7) / 8;
    if (B->nsym == 1)
        return 0;
    B->ptab = PyMem_Calloc((size_t)(B->nsym - 1) * B->nchunks * 256, sizeof(bb_t));
    if (!B->ptab) {
        PyErr_NoMemory();
        return -1;
    }
    for (int s = 1; s < B->nsym; s++) {
        bb_t *tab = B->ptab + (size_t)(s - 1) * B->nchunks * 256;
        for (int c = 0; c < B->nchunks; c++)
            for (int byte = 1; byte < 256; byte++) {
                int l = c * 8 + __builtin_ctz(byte);
                tab[c * 256 + byte] =
                    tab[c * 256 + (byte & (byte - 1))] | (l < B->nl ? B->limg[l][s] : 0);
            }
    }
    return 0;
}

/* The twin groups, and their pairs (a, b), a < b. */
static int read_twin_groups(Board *B, PyObject *groups)
{
    int rows[MAXB][8], lens[MAXB];
    int ng = read_rows(groups, rows, lens, MAXB, "twin_groups");
    if (ng < 0)
        return -1;
    B->ngroups = ng;
    memset(B->group_of, -1, sizeof(B->group_of));
    B->twin_line = 0;
    B->ntwinp = 0;
    for (int g = 0; g < ng; g++) {
        if (lens[g] > 4)
            return -1;
        B->group_len[g] = (uint8_t)lens[g];
        for (int i = 0; i < lens[g]; i++) {
            int l = rows[g][i];
            if (l < 0 || l >= B->nl)
                return -1;
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
    return 0;
}

/* The twin sort's network of (low, high) swaps. */
static int read_swaps(Board *B, PyObject *swaps)
{
    int rows[MAXL * 2][8], lens[MAXL * 2];
    int nsw = read_rows(swaps, rows, lens, MAXL * 2, "swaps");
    if (nsw < 0)
        return -1;
    B->nswap = nsw;
    for (int i = 0; i < nsw; i++) {
        if (lens[i] != 2 || rows[i][0] < 0 || rows[i][1] >= B->nl || rows[i][0] >= rows[i][1])
            return -1;
        B->swap_lo[i] = (uint8_t)rows[i][0];
        B->swap_hi[i] = (uint8_t)rows[i][1];
        B->swap_lo_bit[i] = BIT(rows[i][0]);
        B->swap_hi_bit[i] = BIT(rows[i][1]);
    }
    return 0;
}

/* The lines' centrality, and the fill orders (1 to MAXFILLS, each of every line), of which
 * the fill evaluation reads the first ``eval_fills``. */
static int read_line_orders(Board *B, PyObject *cen, PyObject *fills, int eval_fills)
{
    const int nl = B->nl;
    int vals[MAXL];
    if (read_ints(cen, vals, MAXL, "centrality") != nl)
        return -1;
    for (int l = 0; l < nl; l++)
        B->cen[l] = vals[l];
    PyObject *f = PySequence_Fast(fills, "fill_orders");
    if (!f)
        return -1;
    Py_ssize_t nf = PySequence_Fast_GET_SIZE(f);
    int r = nf >= 1 && nf <= MAXFILLS && eval_fills >= 1 && eval_fills <= nf ? 0 : -1;
    for (int i = 0; !r && i < nf; i++) {
        if (read_ints(PySequence_Fast_GET_ITEM(f, i), vals, MAXL, "fill_orders") != nl)
            r = -1;
        for (int l = 0; !r && l < nl; l++)
            B->fill[i][l] = (uint8_t)vals[l];
    }
    Py_DECREF(f);
    B->nallfills = (int)nf;
    B->nfills = eval_fills;
    return r;
}

static PyObject *Board_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"num_lines", "box_lines", "syms", "twin_groups", "swaps",
                             "centrality", "fill_orders", "trust", "parity", "eval_fills",
                             NULL};
    int nl, trust_num, trust_den, eval_fills = -1;
    long long ph, pr;
    PyObject *box_lines, *syms, *groups, *swaps, *cen, *fills;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iOOOOOO(ii)(LL)|i", kwlist, &nl, &box_lines,
                                     &syms, &groups, &swaps, &cen, &fills, &trust_num,
                                     &trust_den, &ph, &pr, &eval_fills))
        return NULL;
    if (eval_fills < 0) {
        eval_fills = (int)PySequence_Size(fills);
        if (eval_fills < 0)
            return NULL;
    }
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
    if (read_boxes(B, box_lines) < 0 || read_symmetries(B, syms) < 0 || image_tables(B) < 0 ||
        read_twin_groups(B, groups) < 0 || read_swaps(B, swaps) < 0 ||
        read_line_orders(B, cen, fills, eval_fills) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "inconsistent board tables");
        Py_DECREF(B);
        return NULL;
    }
    return (PyObject *)B;
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
