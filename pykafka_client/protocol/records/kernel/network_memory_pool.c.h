/* kernel/network_memory_pool.c.h
 *
 * memory_counter (SimpleMemoryPool compiled: the broker's request memory pool) and release_once (a
 * received frame's reservation given back once).
 * Uses: none of the other parts.
 */

/* ---- network: the memory pool of received frames (the broker's) and a frame's release --------------------------- */

/* ReleaseOnce: pykafka_client.network.transport.memory_pool._Release compiled. Called (with no argument) it gives a
 * frame's reservation back to its pool once: pool.release(size) on the first call when the pool is not None and the
 * size is not 0, nothing on later calls. Called through vectorcall: no Python frame of its own and no __call__ lookup
 * (the broker's Processor calls one a request). */
typedef struct {
    PyObject_HEAD
    PyObject *pool; /* NULL once called (or when it was None) */
    PyObject *size;
    vectorcallfunc vectorcall;
} ReleaseOnceObject;

static PyObject *str_release = NULL;

static void release_once_dealloc(ReleaseOnceObject *self)
{
    Py_XDECREF(self->pool);
    Py_XDECREF(self->size);
    PyObject_Free(self);
}

static PyObject *release_once_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ReleaseOnceObject *self = (ReleaseOnceObject *)callable;
    if (PyVectorcall_NARGS(nargsf) != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "a frame's release takes no arguments");
        return NULL;
    }
    PyObject *pool = self->pool;
    if (pool == NULL)
        Py_RETURN_NONE;
    self->pool = NULL;
    int nonzero = PyObject_IsTrue(self->size);
    if (nonzero < 0) {
        Py_DECREF(pool);
        return NULL;
    }
    PyObject *r = Py_None;
    Py_INCREF(r);
    if (nonzero) {
        Py_DECREF(r);
        PyObject *margs[2] = {pool, self->size};
        r = PyObject_VectorcallMethod(str_release, margs, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_DECREF(pool);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyTypeObject ReleaseOnceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_kernel.ReleaseOnce",
    .tp_basicsize = sizeof(ReleaseOnceObject),
    .tp_dealloc = (destructor)release_once_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ReleaseOnceObject, vectorcall),
    .tp_doc = "A received frame's pool release (pykafka_client.network.transport.memory_pool._Release, compiled).",
};

PyDoc_STRVAR(release_once_doc,
"release_once(pool, size) -> ReleaseOnce\n\n"
"Reference: pykafka_client.network.transport.memory_pool._Release(pool, size): a callable taking no argument that\n"
"calls pool.release(size) the first time it is called (when pool is not None and size is not 0), then nothing.");

static PyObject *k_release_once(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "release_once(pool, size)");
        return NULL;
    }
    if (str_release == NULL && (str_release = PyUnicode_InternFromString("release")) == NULL)
        return NULL;
    if (PyType_Ready(&ReleaseOnceType) < 0)
        return NULL;
    ReleaseOnceObject *o = PyObject_New(ReleaseOnceObject, &ReleaseOnceType);
    if (o == NULL)
        return NULL;
    o->pool = args[0] == Py_None ? NULL : Py_NewRef(args[0]);
    o->size = Py_NewRef(args[1]);
    o->vectorcall = release_once_call;
    return (PyObject *)o;
}

/* MemoryCounter: pykafka_client.network.transport.memory_pool.SimpleMemoryPool compiled (the broker's request memory
 * pool: a non-strict byte counter bounded by its capacity, the small-frame reserve, the one large frame in overdraft).
 * Each method runs under the GIL without calling back into Python, so each is atomic, as the reference's lock makes
 * it. A frame's try_allocate and release are then a C call each (the reference: a frame and a lock's with-block). */
typedef struct {
    PyObject_HEAD
    long long capacity;
    long long reserve;
    long long available;
    long long refused;
    PyObject *overdraft_owner; /* NULL: none */
} MemCounterObject;

static int memcounter_traverse(MemCounterObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->overdraft_owner);
    return 0;
}

static int memcounter_clear(MemCounterObject *self)
{
    Py_CLEAR(self->overdraft_owner);
    return 0;
}

static void memcounter_dealloc(MemCounterObject *self)
{
    PyObject_GC_UnTrack(self);
    memcounter_clear(self);
    PyObject_GC_Del(self);
}

static int memcounter_size_arg(PyObject *o, long long *out)
{
    *out = PyLong_AsLongLong(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* The arguments named by `names` (as the reference's parameters are), given positionally or by keyword, into `out`;
 * -1 with TypeError when one is missing, unknown or given twice. */
static int memcounter_args(PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames, const char *const *names,
                           Py_ssize_t n, PyObject **out, const char *signature)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > n)
        goto bad;
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = i < nargs ? args[i] : NULL;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        Py_ssize_t i = 0;
        while (i < n && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), names[i]) != 0)
            i++;
        if (i == n || out[i] != NULL)
            goto bad;
        out[i] = args[nargs + k];
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (out[i] == NULL)
            goto bad;
    return 0;
bad:
    PyErr_Format(PyExc_TypeError, "the arguments are %s", signature);
    return -1;
}

static const char *const memcounter_allocate_names[] = {"size", "large"};
static const char *const memcounter_room_names[] = {"large"};

static PyObject *memcounter_try_allocate(MemCounterObject *self, PyObject *const *args, Py_ssize_t nargsf,
                                         PyObject *kwnames)
{
    long long size;
    PyObject *a[2];
    if (kwnames == NULL && nargsf == 2) {
        a[0] = args[0];
        a[1] = args[1];
    } else if (memcounter_args(args, nargsf, kwnames, memcounter_allocate_names, 2, a, "(size, large)") < 0) {
        return NULL;
    }
    if (memcounter_size_arg(a[0], &size) < 0)
        return NULL;
    int large = PyObject_IsTrue(a[1]);
    if (large < 0)
        return NULL;
    if (self->available <= (large ? self->reserve : 0)) {
        self->refused += 1;
        Py_RETURN_FALSE;
    }
    self->available -= size;
    Py_RETURN_TRUE;
}

static PyObject *memcounter_release(MemCounterObject *self, PyObject *arg)
{
    long long size;
    if (memcounter_size_arg(arg, &size) < 0)
        return NULL;
    self->available += size;
    Py_RETURN_NONE;
}

static PyObject *memcounter_try_overdraft(MemCounterObject *self, PyObject *owner)
{
    if (self->overdraft_owner != NULL && self->overdraft_owner != owner)
        Py_RETURN_FALSE;
    PyObject *previous = self->overdraft_owner;
    Py_INCREF(owner);
    self->overdraft_owner = owner;
    Py_XDECREF(previous);
    Py_RETURN_TRUE;
}

static PyObject *memcounter_end_overdraft(MemCounterObject *self, PyObject *owner)
{
    if (self->overdraft_owner == owner)
        Py_CLEAR(self->overdraft_owner);
    Py_RETURN_NONE;
}

static PyObject *memcounter_has_room(MemCounterObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    PyObject *a[1];
    if (memcounter_args(args, nargsf, kwnames, memcounter_room_names, 1, a, "(large)") < 0)
        return NULL;
    int large = PyObject_IsTrue(a[0]);
    if (large < 0)
        return NULL;
    return PyBool_FromLong(self->available > (large ? self->reserve : 0) || (large && self->overdraft_owner == NULL));
}

static PyObject *memcounter_is_out_of_memory(MemCounterObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->available <= 0);
}

static PyObject *memcounter_get_available(MemCounterObject *self, void *closure)
{
    return PyLong_FromLongLong(self->available);
}

static PyObject *memcounter_get_used(MemCounterObject *self, void *closure)
{
    return PyLong_FromLongLong(self->capacity - self->available);
}

static PyObject *memcounter_get_capacity(MemCounterObject *self, void *closure)
{
    return PyLong_FromLongLong(self->capacity);
}

static PyObject *memcounter_get_reserve(MemCounterObject *self, void *closure)
{
    return PyLong_FromLongLong(self->reserve);
}

static PyObject *memcounter_get_refused(MemCounterObject *self, void *closure)
{
    return PyLong_FromLongLong(self->refused);
}

static PyMethodDef memcounter_methods[] = {
    {"try_allocate", (PyCFunction)(void (*)(void))memcounter_try_allocate, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"release", (PyCFunction)memcounter_release, METH_O, NULL},
    {"try_overdraft", (PyCFunction)memcounter_try_overdraft, METH_O, NULL},
    {"end_overdraft", (PyCFunction)memcounter_end_overdraft, METH_O, NULL},
    {"has_room", (PyCFunction)(void (*)(void))memcounter_has_room, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"is_out_of_memory", (PyCFunction)memcounter_is_out_of_memory, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef memcounter_getset[] = {
    {"available", (getter)memcounter_get_available, NULL, NULL, NULL},
    {"used", (getter)memcounter_get_used, NULL, NULL, NULL},
    {"capacity", (getter)memcounter_get_capacity, NULL, NULL, NULL},
    {"small_frame_reserve", (getter)memcounter_get_reserve, NULL, NULL, NULL},
    {"refused_total", (getter)memcounter_get_refused, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MemCounterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_kernel.MemoryCounter",
    .tp_basicsize = sizeof(MemCounterObject),
    .tp_dealloc = (destructor)memcounter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)memcounter_traverse,
    .tp_clear = (inquiry)memcounter_clear,
    .tp_doc = "The broker's request memory pool (pykafka_client.network.transport.memory_pool.SimpleMemoryPool, "
              "compiled).",
    .tp_methods = memcounter_methods,
    .tp_getset = memcounter_getset,
};

PyDoc_STRVAR(memory_counter_doc,
"memory_counter(capacity, small_frame_reserve) -> MemoryCounter\n\n"
"Reference: pykafka_client.network.transport.memory_pool.SimpleMemoryPool(capacity) (its small-frame reserve given):\n"
"try_allocate, release, try_overdraft, end_overdraft, has_room, is_out_of_memory; available, used, capacity,\n"
"small_frame_reserve, refused_total.");

static PyObject *k_memory_counter(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    long long capacity, reserve;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "memory_counter(capacity, small_frame_reserve)");
        return NULL;
    }
    if (memcounter_size_arg(args[0], &capacity) < 0 || memcounter_size_arg(args[1], &reserve) < 0)
        return NULL;
    if (capacity <= 0) {
        PyErr_Format(PyExc_ValueError, "memory pool capacity must be positive, got %lld", capacity);
        return NULL;
    }
    if (PyType_Ready(&MemCounterType) < 0)
        return NULL;
    MemCounterObject *o = PyObject_GC_New(MemCounterObject, &MemCounterType);
    if (o == NULL)
        return NULL;
    o->capacity = o->available = capacity;
    o->reserve = reserve;
    o->refused = 0;
    o->overdraft_owner = NULL;
    PyObject_GC_Track(o);
    return (PyObject *)o;
}
