/* kernel/broker_log_index.c.h
 *
 * IndexColumns: a log segment's offset or time index entries, two columns owned by a C type
 * (index_columns).
 * Uses: record_validate.c.h (be_field).
 */

/* ---- broker log: a segment index's two columns of entries, owned by a C type ------------------------------------ */

/* IndexColumns: the entries of an offset or time index (mini_broker/log/index_columns.py is the reference and says
 * what each method does). Each column has a width (4 or 8 bytes) that bounds its values, is its size in memory (as
 * the reference's arrays) and in the file's big-endian entries. */
typedef struct {
    PyObject_HEAD
    void *col[2]; /* cap values each, int32_t or int64_t by width */
    Py_ssize_t len, cap;
    int w[2];
} IdxColsObject;

static inline int64_t idxcols_get(const IdxColsObject *self, int c, Py_ssize_t i)
{
    return self->w[c] == 4 ? (int64_t)((const int32_t *)self->col[c])[i] : ((const int64_t *)self->col[c])[i];
}

static inline void idxcols_set(IdxColsObject *self, int c, Py_ssize_t i, int64_t v)
{
    if (self->w[c] == 4)
        ((int32_t *)self->col[c])[i] = (int32_t)v;
    else
        ((int64_t *)self->col[c])[i] = v;
}

static void idxcols_dealloc(IdxColsObject *self)
{
    PyMem_Free(self->col[0]);
    PyMem_Free(self->col[1]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t idxcols_length(IdxColsObject *self) { return self->len; }

static int idxcols_reserve(IdxColsObject *self, Py_ssize_t n)
{
    if (n <= self->cap)
        return 0;
    Py_ssize_t cap = self->cap < 16 ? 16 : self->cap;
    while (cap < n)
        cap *= 2;
    for (int c = 0; c < 2; c++) {
        void *col = PyMem_Realloc(self->col[c], (size_t)cap * (size_t)self->w[c]);
        if (col == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->col[c] = col;
    }
    self->cap = cap;
    return 0;
}

/* v as a value of column c (OverflowError outside its width); -1 with an error set on failure */
static int idxcols_value(IdxColsObject *self, int c, PyObject *o, int64_t *out)
{
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (self->w[c] == 4 && (v < INT32_MIN || v > INT32_MAX)) {
        PyErr_SetString(PyExc_OverflowError, "an index value does not fit its column");
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static int idxcols_push(IdxColsObject *self, int64_t a, int64_t b)
{
    if (idxcols_reserve(self, self->len + 1) < 0)
        return -1;
    idxcols_set(self, 0, self->len, a);
    idxcols_set(self, 1, self->len, b);
    self->len++;
    return 0;
}

static PyObject *idxcols_load(IdxColsObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t size = self->w[0] + self->w[1], n = view.len / size;
    if (idxcols_reserve(self, self->len + n) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)view.buf;
    for (Py_ssize_t i = 0; i < n; i++, p += size) {
        int64_t v[2];
        const uint8_t *q = p;
        for (int c = 0; c < 2; c++) {
            uint64_t u = be_field(q, self->w[c]);
            v[c] = self->w[c] == 4 ? (int64_t)(int32_t)u : (int64_t)u;
            q += self->w[c];
        }
        idxcols_set(self, 0, self->len, v[0]);
        idxcols_set(self, 1, self->len, v[1]);
        self->len++;
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *idxcols_entry(IdxColsObject *self, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0)
        n += self->len;
    if (n < 0 || n >= self->len) {
        PyErr_SetString(PyExc_IndexError, "index entry out of range");
        return NULL;
    }
    return Py_BuildValue("(LL)", (long long)idxcols_get(self, 0, n), (long long)idxcols_get(self, 1, n));
}

static PyObject *idxcols_bisect(IdxColsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "bisect takes 3 arguments");
        return NULL;
    }
    long c = PyLong_AsLong(args[0]);
    if (c == -1 && PyErr_Occurred())
        return NULL;
    if (c != 0 && c != 1) {
        PyErr_SetString(PyExc_ValueError, "column is 0 or 1");
        return NULL;
    }
    int overflow = 0;
    long long key = PyLong_AsLongLongAndOverflow(args[1], &overflow);
    if (key == -1 && PyErr_Occurred())
        return NULL;
    int right = PyObject_IsTrue(args[2]);
    if (right < 0)
        return NULL;
    Py_ssize_t lo = 0, hi = self->len;
    if (overflow > 0)
        lo = hi; /* a key above every int64: past every entry */
    else if (overflow < 0)
        hi = 0;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        int64_t v = idxcols_get(self, (int)c, mid);
        if (right ? (key < v) : (v >= key))
            hi = mid;
        else
            lo = mid + 1;
    }
    return PyLong_FromSsize_t(lo);
}

static PyObject *idxcols_truncate(IdxColsObject *self, PyObject *arg)
{
    Py_ssize_t keep = PyLong_AsSsize_t(arg);
    if (keep == -1 && PyErr_Occurred())
        return NULL;
    if (keep < 0)
        keep = 0;
    if (keep < self->len)
        self->len = keep;
    Py_RETURN_NONE;
}

static PyObject *idxcols_encode(IdxColsObject *self, PyObject *arg)
{
    Py_ssize_t start = PyLong_AsSsize_t(arg);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    if (start < 0)
        start = 0;
    Py_ssize_t n = start < self->len ? self->len - start : 0, size = self->w[0] + self->w[1];
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * size);
    if (out == NULL)
        return NULL;
    uint8_t *p = (uint8_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = start; i < self->len; i++) {
        for (int c = 0; c < 2; c++) {
            uint64_t u = (uint64_t)idxcols_get(self, c, i);
            for (int k = self->w[c] - 1; k >= 0; k--) {
                p[k] = (uint8_t)u;
                u >>= 8;
            }
            p += self->w[c];
        }
    }
    return out;
}

static PyObject *idxcols_pairs(IdxColsObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New(self->len);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->len; i++) {
        PyObject *t = Py_BuildValue("(LL)", (long long)idxcols_get(self, 0, i), (long long)idxcols_get(self, 1, i));
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
    }
    return out;
}

/* append_increasing(first, second, max_entries, write_at) and append_newer(first, second, max_entries, check_full,
 * write_at) */
static PyObject *idxcols_append_rule(IdxColsObject *self, PyObject *const *args, Py_ssize_t nargs, int newer)
{
    if (nargs != (newer ? 5 : 4)) {
        PyErr_SetString(PyExc_TypeError, newer ? "append_newer takes 5 arguments" : "append_increasing takes 4 arguments");
        return NULL;
    }
    int64_t a, b;
    if (idxcols_value(self, 0, args[0], &a) < 0 || idxcols_value(self, 1, args[1], &b) < 0)
        return NULL;
    Py_ssize_t max_entries = PyLong_AsSsize_t(args[2]);
    if (max_entries == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t write_at = PyLong_AsSsize_t(args[newer ? 4 : 3]);
    if (write_at == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t len = self->len;
    if (newer) {
        int check_full = PyObject_IsTrue(args[3]);
        if (check_full < 0)
            return NULL;
        if (a <= (len ? idxcols_get(self, 0, len - 1) : -1) || (check_full && len >= max_entries))
            return PyLong_FromLong(0);
        if (len && b < idxcols_get(self, 1, len - 1))
            return PyLong_FromLong(-1);
    } else {
        if (len && a <= idxcols_get(self, 0, len - 1))
            return PyLong_FromLong(-1);
        if (len >= max_entries)
            return PyLong_FromLong(0);
    }
    if (idxcols_push(self, a, b) < 0)
        return NULL;
    return PyLong_FromLong(self->len >= write_at ? 1 : 0);
}

static PyObject *idxcols_append_increasing(IdxColsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return idxcols_append_rule(self, args, nargs, 0);
}

static PyObject *idxcols_append_newer(IdxColsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return idxcols_append_rule(self, args, nargs, 1);
}

static PyObject *idxcols_sizeof(IdxColsObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(IdxColsObject) + self->cap * (self->w[0] + self->w[1]));
}

static PyMethodDef idxcols_methods[] = {
    {"__sizeof__", (PyCFunction)idxcols_sizeof, METH_NOARGS, NULL},
    {"load", (PyCFunction)idxcols_load, METH_O, NULL},
    {"entry", (PyCFunction)idxcols_entry, METH_O, NULL},
    {"bisect", (PyCFunction)(void (*)(void))idxcols_bisect, METH_FASTCALL, NULL},
    {"truncate", (PyCFunction)idxcols_truncate, METH_O, NULL},
    {"encode", (PyCFunction)idxcols_encode, METH_O, NULL},
    {"pairs", (PyCFunction)idxcols_pairs, METH_NOARGS, NULL},
    {"append_increasing", (PyCFunction)(void (*)(void))idxcols_append_increasing, METH_FASTCALL, NULL},
    {"append_newer", (PyCFunction)(void (*)(void))idxcols_append_newer, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods idxcols_as_sequence = {.sq_length = (lenfunc)idxcols_length};

static PyTypeObject IdxColsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_kernel.IndexColumns",
    .tp_basicsize = sizeof(IdxColsObject),
    .tp_dealloc = (destructor)idxcols_dealloc,
    .tp_as_sequence = &idxcols_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A segment index's entries (mini_broker/log/index_columns.py's IndexColumns, compiled).",
    .tp_methods = idxcols_methods,
};

PyDoc_STRVAR(index_columns_doc,
"index_columns(first_width, second_width) -> IndexColumns\n\n"
"Reference: mini_broker.log.index_columns.IndexColumns(first_width, second_width): the empty entries of a segment\n"
"index whose columns are 4- or 8-byte signed big-endian integers in the file.");

static PyObject *k_index_columns(PyObject *self, PyObject *args)
{
    int w0, w1;
    if (!PyArg_ParseTuple(args, "ii", &w0, &w1))
        return NULL;
    if ((w0 != 4 && w0 != 8) || (w1 != 4 && w1 != 8)) {
        PyErr_SetString(PyExc_ValueError, "a column is 4 or 8 bytes wide");
        return NULL;
    }
    if (PyType_Ready(&IdxColsType) < 0)
        return NULL;
    IdxColsObject *o = PyObject_New(IdxColsObject, &IdxColsType);
    if (o == NULL)
        return NULL;
    o->col[0] = o->col[1] = NULL;
    o->len = o->cap = 0;
    o->w[0] = w0;
    o->w[1] = w1;
    return (PyObject *)o;
}
