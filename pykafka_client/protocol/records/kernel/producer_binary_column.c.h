/* kernel/producer_binary_column.c.h
 *
 * send_batch's keys and values read where they are: BinaryColumn (batch_append.BinaryColumnReference compiled, made
 * by binary_column), one Arrow binary or string array's items over its buffers, and kv_source, the one way the
 * send_batch steps (scan_records, key_partitions, append_pending, ManyAppender) read item i of a list of bytes or
 * None or of such a column: its bytes and size, no Python object made for a column's item.
 * Uses: producer_pending.c.h (producer_bytes, producer_bytes_at, sequence_subscript).
 */

/* ---- producer: an Arrow binary column over its buffers (batch_append.BinaryColumnReference) ---------------------- */

/* The items of one Arrow binary / string array (32- or 64-bit offsets), read from its buffers. The data and validity
 * buffers are held (Py_buffer views: their exporters kept alive and unresizable); the offsets are copied at the
 * column's making, checked in order and within the data once, so an item's read needs no check and a later write to
 * an exporter's memory cannot move a read outside it. A sequence: len() and column[i] (bytes or None), as the
 * reference. */
typedef struct {
    PyObject_HEAD
    Py_buffer data, validity;
    int have_data, have_validity;
    const uint8_t *bits;    /* the validity bitmap, or NULL: no nulls */
    Py_ssize_t bit0;        /* the bit of item 0 (the array's offset) */
    Py_ssize_t length;
    int large;              /* the starts are 64-bit (else 32-bit) */
    void *starts;           /* length + 1 item starts in data, ascending, as the array's offsets (int32 or int64) */
    Py_ssize_t largest;     /* the largest item's size (0 for none) */
} BinaryColumnObject;

static PyTypeObject BinaryColumnType;

static inline int is_binary_column(PyObject *o) { return Py_IS_TYPE(o, &BinaryColumnType); }

/* item i (0 <= i < length) of a column: its bytes at *ptr and size (-1: null) */
static inline __attribute__((always_inline)) Py_ssize_t bc_item(const BinaryColumnObject *c, Py_ssize_t i,
                                                                const char **ptr)
{
    Py_ssize_t j = c->bit0 + i;
    if (c->bits != NULL && !((c->bits[j >> 3] >> (j & 7)) & 1)) {
        *ptr = NULL;
        return -1;
    }
    int64_t start, end;
    if (c->large) {
        start = ((const int64_t *)c->starts)[i], end = ((const int64_t *)c->starts)[i + 1];
    } else {
        start = ((const int32_t *)c->starts)[i], end = ((const int32_t *)c->starts)[i + 1];
    }
    *ptr = (const char *)c->data.buf + start;
    return (Py_ssize_t)(end - start);
}

static void bc_dealloc(PyObject *op)
{
    BinaryColumnObject *c = (BinaryColumnObject *)op;
    if (c->have_data)
        PyBuffer_Release(&c->data);
    if (c->have_validity)
        PyBuffer_Release(&c->validity);
    PyMem_Free(c->starts);
    Py_TYPE(op)->tp_free(op);
}

static Py_ssize_t bc_length(PyObject *op)
{
    return ((BinaryColumnObject *)op)->length;
}

static PyObject *bc_getitem(PyObject *op, Py_ssize_t i)
{
    BinaryColumnObject *c = (BinaryColumnObject *)op;
    if (i < 0 || i >= c->length) { /* (sq_item: a negative index already has the length added) */
        PyErr_SetString(PyExc_IndexError, "BinaryColumn index out of range");
        return NULL;
    }
    const char *d;
    Py_ssize_t n = bc_item(c, i, &d);
    if (n < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(d, n);
}

/* column[index] (a negative index from the end) or column[slice] (a list), as the reference's */
static PyObject *bc_subscript(PyObject *op, PyObject *key)
{
    return sequence_subscript(op, key, ((BinaryColumnObject *)op)->length, bc_getitem, "BinaryColumn");
}

static PySequenceMethods bc_as_sequence = {
    .sq_length = bc_length,
    .sq_item = bc_getitem,
};

static PyMappingMethods bc_as_mapping = {
    .mp_length = bc_length,
    .mp_subscript = bc_subscript,
};

PyDoc_STRVAR(binary_column_doc,
    "binary_column(validity, offsets, data, offset, length, large) -> BinaryColumn | None\n\n"
    "producer.batch_append.BinaryColumnReference compiled: the items offset..offset+length of one Arrow binary or\n"
    "string array (large: 64-bit offsets) over its buffers (validity bitmap or None, offsets, data or None), a\n"
    "sequence of bytes or None that send_batch's kernel steps read without a bytes object per item. None, with\n"
    "nothing made, when a buffer is too short or an offset is out of order or outside the data (the reference\n"
    "reports it).");

static PyObject *k_binary_column(PyObject *self, PyObject *args)
{
    PyObject *validity, *offsets, *data;
    Py_ssize_t offset, length;
    int large;
    if (!PyArg_ParseTuple(args, "OOOnnp", &validity, &offsets, &data, &offset, &length, &large))
        return NULL;
    if (offset < 0 || length < 0)
        Py_RETURN_NONE;
    BinaryColumnObject *c = PyObject_New(BinaryColumnObject, &BinaryColumnType);
    if (c == NULL)
        return NULL;
    c->have_data = c->have_validity = 0;
    c->bits = NULL;
    c->bit0 = offset;
    c->length = length;
    c->large = large;
    c->starts = NULL;
    c->largest = 0;
    Py_buffer ob;
    int have_o = 0;
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &c->validity, PyBUF_SIMPLE) < 0)
            goto decline;
        c->have_validity = 1;
        c->bits = (const uint8_t *)c->validity.buf;
    }
    if (PyObject_GetBuffer(offsets, &ob, PyBUF_SIMPLE) < 0)
        goto decline;
    have_o = 1;
    if (data != Py_None) {
        if (PyObject_GetBuffer(data, &c->data, PyBUF_SIMPLE) < 0)
            goto decline;
        c->have_data = 1;
    } else {
        c->data.buf = (void *)"";
        c->data.len = 0;
    }
    const Py_ssize_t width = large ? 8 : 4;
    /* every bound is checked before a read: offsets offset..offset+length, bits offset..offset+length-1 */
    if (offset > (PY_SSIZE_T_MAX / width) - length - 1 || ob.len < (offset + length + 1) * width)
        goto decline;
    if (c->have_validity && length > 0 && c->validity.len < (offset + length + 7) / 8)
        goto decline;
    /* the offsets copied in one go (this column's own: nothing can change them after the checks), then checked: the
     * first at least 0, each at least the one before, the last within the data */
    if ((c->starts = PyMem_Malloc((size_t)(length + 1) * (size_t)width)) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(c->starts, (const uint8_t *)ob.buf + offset * width, (size_t)(length + 1) * (size_t)width);
    int64_t first, last, largest = 0;
    if (large) {
        const int64_t *at = c->starts;
        for (Py_ssize_t i = 0; i < length; i++) {
            if (at[i + 1] < at[i]) /* (compared, not subtracted: a difference of two 64-bit offsets may overflow) */
                goto decline;
            int64_t n = at[i + 1] - at[i];
            largest = n > largest ? n : largest;
        }
        first = at[0], last = at[length];
    } else {
        const int32_t *at = c->starts;
        int32_t bad = 0, most = 0; /* (no branch in the loop: any negative size shows in bad's sign bit) */
        for (Py_ssize_t i = 0; i < length; i++) {
            int32_t n = (int32_t)((uint32_t)at[i + 1] - (uint32_t)at[i]);
            bad |= n | (at[i + 1] < at[i] ? -1 : 0);
            most = n > most ? n : most;
        }
        if (bad < 0)
            goto decline;
        largest = most;
        first = at[0], last = at[length];
    }
    if (first < 0 || last > (int64_t)c->data.len)
        goto decline;
    c->largest = (Py_ssize_t)largest;
    PyBuffer_Release(&ob);
    return (PyObject *)c;
decline:
    PyErr_Clear();
    if (have_o)
        PyBuffer_Release(&ob);
    Py_DECREF(c);
    Py_RETURN_NONE;
fail:
    if (have_o)
        PyBuffer_Release(&ob);
    Py_DECREF(c);
    return NULL;
}

static PyTypeObject BinaryColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.BinaryColumn",
    .tp_basicsize = sizeof(BinaryColumnObject),
    .tp_dealloc = bc_dealloc,
    .tp_as_sequence = &bc_as_sequence,
    .tp_as_mapping = &bc_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_SEQUENCE,
    .tp_doc = "One Arrow binary or string array's items over its buffers (made by binary_column).",
};

/* ---- producer: a send_batch key or value column, a list or a BinaryColumn (kv_source) ---------------------------- */

/* Where item i of a send_batch column is: a list's items (bytes or None; anything else declines), or a column. */
typedef struct {
    PyObject *const *items; /* a list's items, or NULL */
    const BinaryColumnObject *column;
    Py_ssize_t length;
    /* a column's fields, read once (a loop's copy of the source in locals: no reload after each record's write) */
    const char *data;
    const void *starts;
    const uint8_t *bits;
    Py_ssize_t bit0;
    int large;
} kv_source;

/* o as a kv_source: 0, or 1 when o is neither a list nor a BinaryColumn */
static inline int kv_source_init(kv_source *s, PyObject *o)
{
    if (PyList_Check(o)) {
        *s = (kv_source){.items = PySequence_Fast_ITEMS(o), .length = PyList_GET_SIZE(o)};
        return 0;
    }
    if (is_binary_column(o)) {
        const BinaryColumnObject *c = (const BinaryColumnObject *)o;
        s->items = NULL;
        s->column = c;
        s->length = c->length;
        s->data = (const char *)c->data.buf;
        s->starts = c->starts;
        s->bits = c->bits;
        s->bit0 = c->bit0;
        s->large = c->large;
        return 0;
    }
    return 1;
}

/* kv_item's kinds of source: known a list, a column, or a column of 32-bit offsets and no nulls where a loop is compiled
 * for one, else told per item */
enum { KV_LIST, KV_COLUMN, KV_DENSE32, KV_ANY };

/* item i of s: *n its size (-1: None) and *ptr its bytes; -1 when a list's item is neither bytes nor None. kind:
 * KV_LIST or KV_COLUMN when the caller knows s's, else KV_ANY. */
static inline __attribute__((always_inline)) int kv_item(int kind, const kv_source *s, Py_ssize_t i, const char **ptr,
                                                         Py_ssize_t *n)
{
    if (kind == KV_DENSE32) {
        int32_t start = ((const int32_t *)s->starts)[i], end = ((const int32_t *)s->starts)[i + 1];
        *ptr = s->data + start;
        *n = (Py_ssize_t)end - start;
        return 0;
    }
    if (kind == KV_COLUMN || (kind == KV_ANY && s->items == NULL)) {
        Py_ssize_t j = s->bit0 + i;
        if (s->bits != NULL && !((s->bits[j >> 3] >> (j & 7)) & 1)) {
            *ptr = NULL;
            *n = -1;
            return 0;
        }
        int64_t start, end;
        if (s->large) {
            start = ((const int64_t *)s->starts)[i], end = ((const int64_t *)s->starts)[i + 1];
        } else {
            start = ((const int32_t *)s->starts)[i], end = ((const int32_t *)s->starts)[i + 1];
        }
        *ptr = s->data + start;
        *n = (Py_ssize_t)(end - start);
        return 0;
    }
    PyObject *o = s->items[i];
    if (producer_bytes(o, n) < 0)
        return -1;
    *ptr = producer_bytes_at(o);
    return 0;
}

/* item i of s as an object (new reference): a list's item itself, a column's as bytes or None */
static inline PyObject *kv_object(const kv_source *s, Py_ssize_t i)
{
    if (s->items != NULL)
        return Py_NewRef(s->items[i]);
    return bc_getitem((PyObject *)s->column, i);
}
