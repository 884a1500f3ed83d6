/* The CPython module boxfish.engine.dots.search._core: the translation unit that includes
 * every unit of the core (core.h says what each holds), the conversions between Python ints
 * and bitboards, the Core type (one search session) and the module's init.
 *
 * One translation unit, so that the node inlines the table's probes, the keys and the move
 * generators of the other units: compiled apart, without those calls inlined, the search
 * ran 6% fewer nodes a second (bench/dots_core_speed_bench.py, the cores set). */
#include "core.h"

#include "board.c"
#include "table.c"
#include "chain_dp.c"
#include "chain_graph.c"
#include "nimstring.c"
#include "evaluate.c"
#include "moves.c"
#include "node.c"
#include "threads.c"

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

static void Core_dealloc(Core *S)
{
    Py_XDECREF(S->B);
    Py_XDECREF(S->T);
    Py_XDECREF(S->aborted);
    Py_XDECREF(S->clock);
    Py_XDECREF(S->model);
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
    S->sized_proofs = 1;
    S->chain_graph = 1;
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
        v = search_root(S, drawn, alpha, beta, depth, vals);
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

/* The drawn lines of ``o`` on the core's board, with their box valences, for a leaf's
 * evaluation: -1 (an exception set) when ``o`` has bits beyond the board or a box to take. */
static int leaf_of(Core *S, PyObject *o, bb_t *drawn, uint8_t *vals)
{
    const Board *B = S->B;
    if (to_bb(o, drawn) < 0)
        return -1;
    if (*drawn & ~B->full) {
        PyErr_SetString(PyExc_ValueError, "bits beyond the board's lines");
        return -1;
    }
    for (int b = 0; b < B->nb; b++) {
        vals[b] = (uint8_t)bb_count(*drawn & B->box_mask[b]);
        if (vals[b] == 3) {
            PyErr_SetString(PyExc_ValueError, "a box can be taken: not a horizon position");
            return -1;
        }
    }
    if (S->busy || S->T->busy) {
        PyErr_SetString(PyExc_RuntimeError, "a search is already running on this core or table");
        return -1;
    }
    return 0;
}

static PyObject *Core_features(Core *S, PyObject *o)
{
    bb_t drawn;
    uint8_t vals[MAXB];
    int32_t x[MAXFEAT];
    if (leaf_of(S, o, &drawn, vals) < 0)
        return NULL;
    int n = learned_features(S->B, S->M, drawn, vals, x);
    PyObject *out = PyList_New(n);
    for (int i = 0; out && i < n; i++) {
        PyObject *v = PyLong_FromLong(x[i]);
        if (!v) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

static PyObject *Core_evaluate(Core *S, PyObject *o)
{
    bb_t drawn;
    uint8_t vals[MAXB];
    if (leaf_of(S, o, &drawn, vals) < 0)
        return NULL;
    return PyLong_FromLong(evaluate(S->B, S->M, S->model, drawn, vals));
}

static PyObject *Core_nimber(Core *S, PyObject *args)
{
    PyObject *o;
    long long budget = -1;
    bb_t drawn;
    uint8_t vals[MAXB];
    if (!PyArg_ParseTuple(args, "O|L", &o, &budget) || leaf_of(S, o, &drawn, vals) < 0)
        return NULL;
    int v = nimber(S->B, S->M, drawn, budget);
    if (v < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(v);
}

static PyMethodDef Core_methods[] = {
    {"nimber", (PyCFunction)Core_nimber, METH_VARARGS,
     "nimber(drawn, budget=-1) -> the Nimstring value of a position with no box to take "
     "(nimstring.Nimstring.value), or None when it needs more than budget new component "
     "values (the memo, the table's, is kept)"},
    {"features", (PyCFunction)Core_features, METH_O,
     "features(drawn) -> the learned evaluation's features of a position with no box to "
     "take (learned.features)"},
    {"evaluate", (PyCFunction)Core_evaluate, METH_O,
     "evaluate(drawn) -> the horizon value of a position with no box to take, by the "
     "core's evaluation (``model``)"},
    {"search", (PyCFunction)Core_search, METH_VARARGS,
     "search(drawn, alpha, beta, depth) -> value for the player to move; raises the "
     "``aborted`` exception when the deadline or the node budget is reached."},
    {NULL}};

/* Core_get_<field> and Core_set_<field> of a field of type T: to_py makes its Python value,
 * from_py reads one into x, ``failed`` tells when that failed. */
#define FIELD_GETSET(field, T, to_py, from_py, failed)                                       \
    static PyObject *Core_get_##field(Core *S, void *c) { return to_py(S->field); }          \
    static int Core_set_##field(Core *S, PyObject *v, void *c)                               \
    {                                                                                        \
        if (!v) {                                                                            \
            PyErr_SetString(PyExc_TypeError, "cannot delete");                               \
            return -1;                                                                       \
        }                                                                                    \
        T x = from_py(v);                                                                    \
        if (failed)                                                                          \
            return -1;                                                                       \
        S->field = x;                                                                        \
        return 0;                                                                            \
    }
#define LL_GETSET(field)                                                                     \
    FIELD_GETSET(field, long long, PyLong_FromLongLong, PyLong_AsLongLong,                   \
                 x == -1 && PyErr_Occurred())
/* a switch of the core: an int field read and set as a bool */
#define FLAG_GETSET(field) FIELD_GETSET(field, int, PyBool_FromLong, PyObject_IsTrue, x < 0)
LL_GETSET(nodes)
LL_GETSET(tt_hits)
LL_GETSET(horizon)
LL_GETSET(spawn_nodes)
LL_GETSET(helper_nodes)
LL_GETSET(graph_calls)
LL_GETSET(graph_hits)
LL_GETSET(graph_solved)

static PyObject *Core_get_etc(Core *S, void *c) { return PyLong_FromLong(S->etc_min_free); }
static int Core_set_etc(Core *S, PyObject *v, void *c)
{
    long x = v ? PyLong_AsLong(v) : -1;
    if (!v || (x == -1 && PyErr_Occurred()))
        return -1;
    S->etc_min_free = (int)x;
    return 0;
}

FLAG_GETSET(loony_bound)
FLAG_GETSET(chain_graph)
FLAG_GETSET(sized_proofs)

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

static PyObject *Core_get_model(Core *S, void *c)
{
    return Py_NewRef(S->model ? (PyObject *)S->model : Py_None);
}
static int Core_set_model(Core *S, PyObject *v, void *c)
{
    if (!v || (v != Py_None && !PyObject_TypeCheck(v, &ModelType))) {
        PyErr_SetString(PyExc_TypeError, "model must be a Model or None");
        return -1;
    }
    if (v != Py_None) {
        const Board *B = S->B;
        int nf = feature_count(B);
        if (((Model *)v)->nf != nf) {
            PyErr_Format(PyExc_ValueError, "the model reads %d features, this board has %d",
                         ((Model *)v)->nf, nf);
            return -1;
        }
    }
    if (S->busy) {
        PyErr_SetString(PyExc_RuntimeError, "a search is running on this core");
        return -1;
    }
    Py_XSETREF(S->model, v == Py_None ? NULL : (Model *)Py_NewRef(v));
    return 0;
}

static PyObject *Core_get_settled(Core *S, void *c)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < NSETTLED; i++) {
        PyObject *v = PyLong_FromLongLong(S->settled[i]);
        if (!v || PyDict_SetItemString(d, SETTLED[i], v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(v);
    }
    return d;
}

/* The attribute ``name`` of Core_get_<name> and Core_set_<name>. */
#define GETSET(name, doc) {#name, (getter)Core_get_##name, (setter)Core_set_##name, doc, NULL}
static PyGetSetDef Core_getset[] = {
    GETSET(model, "the learned evaluation's Model, or None: the fill evaluation"),
    GETSET(nodes, "positions searched"),
    GETSET(tt_hits, "table hits"),
    GETSET(horizon, "heuristic values used so far"),
    {"etc_min_free", (getter)Core_get_etc, (setter)Core_set_etc,
     "enhanced transposition cutoffs at nodes with this many undrawn lines or more", NULL},
    GETSET(loony_bound,
           "skip the loony sacrifices whose bound (gen_sacrifices) cannot reach into the window"),
    GETSET(sized_proofs,
           "proven entries carry the size class of their search, which replacement keeps longest"),
    GETSET(chain_graph,
           "settle the positions with no safe line left by the chain graph (chain_graph.c)"),
    {"settled", (getter)Core_get_settled, NULL,
     "this thread's nodes by what settled them: a phase (node_leaf's three ways apart: "
     "chain_dp, chain_graph, horizon; node_children: searched) or the parent, which read "
     "the child's entry (parent_read)", NULL},
    GETSET(graph_calls, "positions the chain graph settled (this thread's)"),
    GETSET(graph_hits, "of them, those whose graph the memo held"),
    GETSET(graph_solved, "graphs the chain graph solved (memo misses, inner ones included)"),
    GETSET(spawn_nodes,
           "a threaded search starts its helper threads once it has searched this many nodes"),
    GETSET(helper_nodes, "nodes searched by helper threads (counted in ``nodes`` too)"),
    GETSET(threads, "threads a search runs (1: this one only; see core/threads.c)"),
    GETSET(deadline, "time.perf_counter() time to stop at, or None"),
    GETSET(max_nodes, "node budget, or None"),
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
    "The compiled Dots-and-Boxes search (see engine/dots/search/compiled.py).", -1, NULL};

/* node.c's PHASES as a tuple of str (NULL on error). */
static PyObject *phase_names(void)
{
    Py_ssize_t n = (Py_ssize_t)(sizeof(PHASES) / sizeof(PHASES[0]));
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        PyObject *name = PyUnicode_FromString(PHASES[i]);
        if (!name)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, name);
    }
    return t;
}

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&BoardType) < 0 || PyType_Ready(&TableType) < 0 ||
        PyType_Ready(&CoreType) < 0 || PyType_Ready(&ModelType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&coremodule);
    if (!m)
        return NULL;
    PyObject *phases = phase_names();
    int bad = !phases || PyModule_AddObjectRef(m, "PHASES", phases) < 0;
    Py_XDECREF(phases);
    if (bad ||
        PyModule_AddObjectRef(m, "Board", (PyObject *)&BoardType) < 0 ||
        PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0 ||
        PyModule_AddObjectRef(m, "Core", (PyObject *)&CoreType) < 0 ||
        PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_LINES", MAXL) < 0 ||
        PyModule_AddIntConstant(m, "MAX_BOXES", MAXB) < 0 ||
        PyModule_AddIntConstant(m, "MAX_THREADS", MAX_THREADS) < 0 ||
        PyModule_AddIntConstant(m, "NIM_SLOTS_PER_SLOT", NIM_SLOTS_PER_SLOT) < 0 ||
        PyModule_AddIntConstant(m, "WIDE_ENTRY_BYTES", (long)sizeof(WideEntry)) < 0 ||
        PyModule_AddIntConstant(m, "NARROW_ENTRY_BYTES", (long)sizeof(NarrowEntry)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
