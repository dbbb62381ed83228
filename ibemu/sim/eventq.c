/* The scheduler's queue of events, in C: the compiled core's ibemu.sim.eventq (issue 28).
 *
 * The same queue as eventq.py, whose text gives the interface and the order: items
 * ordered by the key (time, seq), least first; seq is unique within a queue, so every
 * correct heap pops one and the same sequence.  This one keeps each key beside its item
 * in one array of C structs, so a comparison reads two machine words of that array and
 * never the item (a heap of Python objects reads every object it compares: 1,824
 * instructions a pop on the 648-host congestion-tree case, and cache misses at 11,664
 * hosts; benchmarks/README.md, stops 37 and 38).
 *
 * A 4-ary heap (the children of entry i are 4i+1 .. 4i+4), popped bottom-up as heapq
 * pops its binary one: the hole at the top goes down the least children to a leaf, and
 * the last entry fills it and rises to its place.  Four children a level halve the
 * levels a pop goes down and a push goes up (about 13 to 7 for the 6,000 events pending
 * on the 648-host congestion-tree case), for three comparisons a level instead of one,
 * on four entries that lie side by side (issue 28).  The keys are unique, so it pops the
 * same sequence as the binary heap did.
 *
 * push_item(item) takes the key from the item itself.  For the compiled core's events it
 * reads it without a call and without making int objects (push(item, time, seq) boxes
 * two ints per event: a tenth of the event loop's instructions).  mypyc lays a native
 * class's instance out as PyObject_HEAD, a vtable pointer, then the attributes in the
 * order the class and its bases declare them; ibemu.sim.heap.Ordered declares time and
 * seq first, and an int attribute is a "tagged" word: the value shifted left by one, or,
 * low bit set, a pointer to a boxed int.  That layout is not taken on trust:
 * native_layout(probe, time, seq) reads a probe made with known keys and registers its
 * type only when both read back (the scheduler calls it once, at import).  Any other
 * item, or a boxed key, is read through its attributes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    int64_t time;
    int64_t seq;
    PyObject *item;
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *a;
    Py_ssize_t n;
    Py_ssize_t cap;
    int64_t lim_time;       /* pop_due's limit: nothing at or after (lim_time, lim_seq) */
    int64_t lim_seq;
} EventQueue;

/* Whether x's key is before y's, computed without a branch (the choice of the least
 * child cannot be predicted). */
static inline Py_ssize_t
less(const Entry *x, const Entry *y)
{
    return (x->time < y->time) | ((x->time == y->time) & (x->seq < y->seq));
}

static void
sift_up(Entry *a, Py_ssize_t pos, Entry e)
{
    while (pos > 0) {
        Py_ssize_t up = (pos - 1) >> 2;
        if (less(&e, &a[up])) {
            a[pos] = a[up];
            pos = up;
        } else {
            break;
        }
    }
    a[pos] = e;
}

/* Remove and return the least entry's item (a new reference: the queue's own). */
static PyObject *
take_least(EventQueue *q)
{
    Entry *a = q->a;
    PyObject *top = a[0].item;
    Py_ssize_t n = --q->n;
    if (n == 0)
        return top;
    Entry last = a[n];
    Py_ssize_t pos = 0, child = 1;
    /* while all four children exist: the least of the two pairs' least, by arithmetic
     * (issue 28) */
    while (child + 3 < n) {
        const Entry *c = &a[child];
        Py_ssize_t m01 = less(&c[1], &c[0]);
        Py_ssize_t m23 = 2 + less(&c[3], &c[2]);
        Py_ssize_t m = less(&c[m23], &c[m01]) ? m23 : m01;
        a[pos] = c[m];
        pos = child + m;
        child = 4 * pos + 1;
    }
    if (child < n) {                /* one to three children, the last level's */
        Py_ssize_t m = child;
        for (Py_ssize_t k = child + 1; k < n; k++)
            if (less(&a[k], &a[m]))
                m = k;
        a[pos] = a[m];
        pos = m;
    }
    sift_up(a, pos, last);
    return top;
}

/* *v* as a 64-bit int (PyLong_AsLongLongAndOverflow: a loop over the digits, where
 * PyLong_AsLongLong goes through a byte array, twice the instructions for the scheduler's
 * keys of two or three digits). */
static int
read_int(PyObject *v, int64_t *out)
{
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "a key does not fit 64 bits");
        return -1;
    }
    if (x == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)x;
    return 0;
}

static int
read_key(PyObject *time, PyObject *seq, int64_t *t, int64_t *s)
{
    return read_int(time, t) < 0 || read_int(seq, s) < 0 ? -1 : 0;
}

/* mypyc's instance of a native class whose first attributes are the ints time and seq */
typedef struct {
    PyObject_HEAD
    void *vtable;
    Py_ssize_t time;        /* tagged: value << 1, or (low bit set) a boxed int */
    Py_ssize_t seq;
} NativeOrdered;

/* The registered type of such instances (native_layout); NULL: none. */
static PyTypeObject *native_type = NULL;

/* The key of *item* read from its fields: 1, or 0 when it is not an instance of the
 * registered type or a key is boxed. */
static int
native_key(PyObject *item, int64_t *t, int64_t *s)
{
    if (native_type == NULL || Py_TYPE(item) != native_type)
        return 0;
    const NativeOrdered *n = (const NativeOrdered *)item;
    Py_ssize_t tt = n->time, ss = n->seq;
    if ((tt | ss) & 1)
        return 0;
    *t = (int64_t)(tt >> 1);
    *s = (int64_t)(ss >> 1);
    return 1;
}

/* The key of *item* read through its attributes time and seq. */
static int
attr_key(PyObject *item, int64_t *t, int64_t *s)
{
    PyObject *time = PyObject_GetAttrString(item, "time");
    if (time == NULL)
        return -1;
    PyObject *seq = PyObject_GetAttrString(item, "seq");
    if (seq == NULL) {
        Py_DECREF(time);
        return -1;
    }
    int r = read_key(time, seq, t, s);
    Py_DECREF(time);
    Py_DECREF(seq);
    return r;
}

static int
add(EventQueue *q, PyObject *item, Entry e)
{
    if (q->n == q->cap) {
        Py_ssize_t cap = q->cap ? q->cap * 2 : 64;
        Entry *a = PyMem_Realloc(q->a, (size_t)cap * sizeof(Entry));
        if (a == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        q->a = a;
        q->cap = cap;
    }
    Py_INCREF(item);
    e.item = item;
    sift_up(q->a, q->n++, e);
    return 0;
}

static PyObject *
EventQueue_push_item(EventQueue *q, PyObject *item)
{
    Entry e;
    if (!native_key(item, &e.time, &e.seq) && attr_key(item, &e.time, &e.seq) < 0)
        return NULL;
    if (add(q, item, e) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
EventQueue_push(EventQueue *q, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "push(item, time, seq) takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    Entry e;
    if (read_key(args[1], args[2], &e.time, &e.seq) < 0)
        return NULL;
    if (add(q, args[0], e) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
EventQueue_pop_least(EventQueue *q, PyObject *Py_UNUSED(ignored))
{
    if (q->n == 0) {
        PyErr_SetString(PyExc_IndexError, "pop_least from an empty queue");
        return NULL;
    }
    return take_least(q);
}

static PyObject *
EventQueue_set_limit(EventQueue *q, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "set_limit(time, seq) takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (read_key(args[0], args[1], &q->lim_time, &q->lim_seq) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
EventQueue_pop_due(EventQueue *q, PyObject *Py_UNUSED(ignored))
{
    if (q->n == 0)
        Py_RETURN_NONE;
    const Entry *top = &q->a[0];
    if (top->time > q->lim_time || (top->time == q->lim_time && top->seq >= q->lim_seq))
        Py_RETURN_NONE;
    return take_least(q);
}

static PyObject *
EventQueue_clear_method(EventQueue *q, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t n = q->n;
    q->n = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(q->a[i].item);
    Py_RETURN_NONE;
}

static Py_ssize_t
EventQueue_len(EventQueue *q)
{
    return q->n;
}

static PyObject *
EventQueue_item(EventQueue *q, Py_ssize_t i)
{
    if (i < 0 || i >= q->n) {
        PyErr_SetString(PyExc_IndexError, "queue index out of range");
        return NULL;
    }
    PyObject *item = q->a[i].item;
    Py_INCREF(item);
    return item;
}

static int
EventQueue_traverse(EventQueue *q, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; i < q->n; i++)
        Py_VISIT(q->a[i].item);
    return 0;
}

static int
EventQueue_clear(EventQueue *q)
{
    Py_ssize_t n = q->n;
    q->n = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_CLEAR(q->a[i].item);
    return 0;
}

static void
EventQueue_dealloc(EventQueue *q)
{
    PyObject_GC_UnTrack(q);
    EventQueue_clear(q);
    PyMem_Free(q->a);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

static PyObject *
EventQueue_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "EventQueue() takes no arguments");
        return NULL;
    }
    EventQueue *q = (EventQueue *)type->tp_alloc(type, 0);
    if (q == NULL)
        return NULL;
    q->a = NULL;
    q->n = q->cap = 0;
    q->lim_time = INT64_MAX;
    q->lim_seq = 0;
    return (PyObject *)q;
}

static PyMethodDef EventQueue_methods[] = {
    {"push", (PyCFunction)(void (*)(void))EventQueue_push, METH_FASTCALL,
     "push(item, time, seq): add item under the key (time, seq)"},
    {"push_item", (PyCFunction)EventQueue_push_item, METH_O,
     "push_item(item): add item under its own key (item.time, item.seq)"},
    {"pop_least", (PyCFunction)EventQueue_pop_least, METH_NOARGS,
     "Remove and return the item of the least key (IndexError when empty)"},
    {"set_limit", (PyCFunction)(void (*)(void))EventQueue_set_limit, METH_FASTCALL,
     "set_limit(time, seq): pop_due returns nothing at or after this key"},
    {"pop_due", (PyCFunction)EventQueue_pop_due, METH_NOARGS,
     "Remove and return the least item if its key is before the limit, else None"},
    {"clear", (PyCFunction)EventQueue_clear_method, METH_NOARGS, "Remove every item"},
    {NULL, NULL, 0, NULL}
};

static PySequenceMethods EventQueue_as_sequence = {
    .sq_length = (lenfunc)EventQueue_len,
    .sq_item = (ssizeargfunc)EventQueue_item,
};

static PyTypeObject EventQueueType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ibemu.sim.eventq.EventQueue",
    .tp_doc = "The scheduler's events by (time, seq), least first (eventq.py: the interface).",
    .tp_basicsize = sizeof(EventQueue),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = EventQueue_new,
    .tp_dealloc = (destructor)EventQueue_dealloc,
    .tp_traverse = (traverseproc)EventQueue_traverse,
    .tp_clear = (inquiry)EventQueue_clear,
    .tp_methods = EventQueue_methods,
    .tp_as_sequence = &EventQueue_as_sequence,
};

static PyObject *
eventq_native_layout(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "native_layout(probe, time, seq) takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    int64_t t, s, nt, ns;
    if (read_key(args[1], args[2], &t, &s) < 0)
        return NULL;
    PyTypeObject *type = Py_TYPE(args[0]);
    if (type->tp_basicsize < (Py_ssize_t)sizeof(NativeOrdered)) /* too small to hold the fields */
        Py_RETURN_FALSE;
    PyTypeObject *was = native_type;
    native_type = type;
    int ok = native_key(args[0], &nt, &ns) && nt == t && ns == s;
    native_type = was;
    if (!ok)
        Py_RETURN_FALSE;
    Py_INCREF(type);
    Py_XDECREF(was);
    native_type = type;
    Py_RETURN_TRUE;
}

static PyMethodDef eventq_functions[] = {
    {"native_layout", (PyCFunction)(void (*)(void))eventq_native_layout, METH_FASTCALL,
     "native_layout(probe, time, seq): register type(probe) for push_item's direct reads of\n"
     "the key, when the probe's fields read back as (time, seq); True when registered"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef eventq_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ibemu.sim.eventq",
    .m_doc = "The scheduler's queue of events, in C (eventq.py is the same in Python).",
    .m_size = -1,
    .m_methods = eventq_functions,
};

PyMODINIT_FUNC
PyInit_eventq(void)
{
    if (PyType_Ready(&EventQueueType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&eventq_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "EventQueue", (PyObject *)&EventQueueType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
