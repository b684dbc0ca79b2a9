/* kernel/producer_pending.c.h
 *
 * PendingRecords: a producer batch's records encoded at append (ProducerBatch.pending on the kernel
 * path), the columns summary kept as its records are written, and encode_pending_batch (its whole batch); before
 * them, the checks of a key, value and timestamp the producer takes as they are.
 * Uses: varint.c.h, record_decode.c.h (a record rebuilt from its bytes), record_encode.c.h,
 * producer_batch_encode.c.h.
 */

/* ---- producer: a key, value and timestamp the producer takes as they are (send_batch, PendingRecords) ------- */

/* A key or value the producer takes as is: None (n = -1) or exact bytes. */
static inline int producer_bytes(PyObject *o, Py_ssize_t *n)
{
    if (o == Py_None) {
        *n = -1;
        return 0;
    }
    if (PyBytes_CheckExact(o)) {
        *n = PyBytes_GET_SIZE(o);
        return 0;
    }
    return -1;
}

/* Where the bytes of a key or value producer_bytes took are (None's, never read as its size is -1, included), without a
 * test: the address alone */
static inline __attribute__((always_inline)) const char *producer_bytes_at(PyObject *o)
{
    return (const char *)o + offsetof(PyBytesObject, ob_sval);
}

/* A record timestamp of send_batch: None (uses the default) or an int in [0, 2**62]. */
static inline int producer_timestamp(PyObject *o, int64_t dflt, int64_t *out)
{
    if (o == Py_None) {
        *out = dflt;
        return 0;
    }
    if (!PyLong_CheckExact(o))
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()) || v < 0 || v > ((int64_t)1 << 62)) {
        PyErr_Clear();
        return -1;
    }
    *out = v;
    return 0;
}

static inline int64_t estimated_size(int64_t size, double ratio)
{
    return ratio == 1.0 ? size : 61 + (int64_t)((double)(size - 61) * ratio);
}

/* ---- producer: a batch's records encoded at append (ProducerBatch.pending on the kernel path) ----------- */

/* PendingRecords: the records of one producer batch, each written at its append as the bytes it takes in the
 * batch's records section (Java MemoryRecordsBuilder: varint offset delta from the batch's first record and
 * timestamp delta from its first record's timestamp, key, value, headers), with only what completion needs kept
 * besides: the per-record delivery callbacks (a list, from the first record that has one). A sequence of the
 * (timestamp, key, value, headers, callback) tuples of producer_batch.PendingRecord: an item is rebuilt from its
 * bytes when read (the Python reference paths, splits, tests), ``append`` encodes a tuple. A record it cannot
 * encode exactly as the reference would at drain (a key or value that is not bytes or None, a timestamp outside
 * [0, 2**62], headers headers_size declines) turns it into a plain list of tuples for good (``items``): its
 * records rebuilt, then kept as given, as the reference's list would keep them. No Python object per record
 * otherwise: nothing for the garbage collector to count, visit or free record by record. */
typedef struct {
    PyObject_HEAD
    PyObject *data;          /* bytes: BATCH_OVERHEAD bytes for the batch header, the records section, room to grow */
    uint8_t *buf;            /* the records section in data (NULL while data is) */
    Py_ssize_t len, cap;     /* bytes of records, and the room for them in data */
    Py_ssize_t count;        /* records */
    uint32_t *offs;          /* where each of the first nofs records starts in buf: made when records are read */
    Py_ssize_t nofs, ocap, scan_end; /* (scan_end: where record nofs starts) */
    int64_t base_ts, max_ts, last_ts;
    PyObject *last_ts_obj;   /* an int of last_ts (the last record's timestamp object), or NULL */
    Py_ssize_t hint;         /* first allocation of buf */
    PyObject *callbacks;     /* list, one item per record from the first callback on (None before it), or NULL */
    PyObject *items;         /* list mode: the records as tuples (buf unused), or NULL */
    /* the first record's timestamp delta (0), key and value sizes (-1: null), and which of the
     * later records' differ from them (bits PCOL_KEY, PCOL_VALUE, PCOL_TS): pending_columns answers a batch of
     * one key size, value size and timestamp without walking its records (pending_note_columns) */
    int64_t col_td, col_kn, col_vn;
    int col_mixed;
} PendingObject;

/* ---- producer: a PendingRecords' columns kept as its records are written ---------------------------------------- */

#define PCOL_KEY 1
#define PCOL_VALUE 2
#define PCOL_TS 4
#define PCOL_UNKNOWN 8 /* a record was written without its columns noted (send()'s path): pending_columns reads them */

/* Before record p->count is written (buffer mode): its timestamp delta td and key and value sizes kn, vn (-1 for
 * None) noted in the columns summary that pending_columns reads. */
static inline __attribute__((always_inline)) void pending_note_columns(PendingObject *p, int64_t td, Py_ssize_t kn,
                                                                       Py_ssize_t vn)
{
    if (p->count == 0) {
        p->col_td = td;
        p->col_kn = kn;
        p->col_vn = vn;
        p->col_mixed = 0;
    } else if (kn != p->col_kn || vn != p->col_vn || td != p->col_td) /* (rarely: the columns are mostly even) */
        p->col_mixed |= (kn != p->col_kn ? PCOL_KEY : 0) | (vn != p->col_vn ? PCOL_VALUE : 0) |
                        (td != p->col_td ? PCOL_TS : 0);
}

static PyTypeObject PendingType;
static PyObject *empty_tuple_obj = NULL;

#define PENDING_MAX_BYTES (INT32_MAX - BATCH_OVERHEAD)

static inline int is_pending(PyObject *o) { return Py_IS_TYPE(o, &PendingType); }

/* room for rs more bytes of records: 0, or -1 with an exception. ``data`` is written only while nothing
 * else refers to it (encode_pending_batch hands it out as the encoded batch): else the records go on in a copy. */
static int pending_reserve(PendingObject *p, Py_ssize_t rs)
{
    if (p->len + rs > p->cap || (p->data != NULL && Py_REFCNT(p->data) > 1)) {
        Py_ssize_t want = p->len + rs > p->cap ? (p->data == NULL ? p->hint : 2 * p->cap) : p->cap;
        if (want < p->len + rs)
            want = p->len + rs;
        if (want > PENDING_MAX_BYTES)
            want = PENDING_MAX_BYTES;
        PyObject *nd = PyBytes_FromStringAndSize(NULL, BATCH_OVERHEAD + want);
        if (nd == NULL)
            return -1;
        if (p->len > 0)
            memcpy(PyBytes_AS_STRING(nd) + BATCH_OVERHEAD, p->buf, (size_t)p->len);
        Py_XSETREF(p->data, nd);
        p->buf = (uint8_t *)PyBytes_AS_STRING(nd) + BATCH_OVERHEAD;
        p->cap = want;
    }
    return 0;
}

/* Where every record starts (offs[0..count)), found by walking the records read for the first time: appends and
 * encoding never need it, only reading records back (the Python paths, a split). 0, or -1 with an exception. */
static int pending_index(PendingObject *p)
{
    if (p->nofs == p->count)
        return 0;
    if (p->count > p->ocap) {
        Py_ssize_t want = p->count < 64 ? 64 : p->count + p->count / 2;
        uint32_t *no = PyMem_Realloc(p->offs, (size_t)want * sizeof(uint32_t));
        if (no == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->offs = no;
        p->ocap = want;
    }
    const uint8_t *q = p->buf + p->scan_end, *end = p->buf + p->len;
    rec_t r;
    for (; p->nofs < p->count; p->nofs++) {
        p->offs[p->nofs] = (uint32_t)(q - p->buf);
        if (parse_record(&q, end, &r) < 0) {
            PyErr_SetString(PyExc_SystemError, "PendingRecords: a record does not parse");
            return -1;
        }
    }
    p->scan_end = q - p->buf;
    return 0;
}

/* The size of the next record in buffer mode (its length varint included), or -1 when it cannot take it (list
 * mode, too many records or bytes). ts in [0, 2**62]; kn, vn: -1 for None; hs from headers_size. */
static inline Py_ssize_t pending_record_size(PendingObject *p, int64_t ts, Py_ssize_t kn, Py_ssize_t vn, Py_ssize_t hs)
{
    if (p->items != NULL || p->count >= INT32_MAX - 1 || ts < 0 || ts > ((int64_t)1 << 62))
        return -1;
    int64_t body = record_body_size(p->count == 0 ? 0 : ts - p->base_ts, p->count, kn, vn, hs);
    int64_t rs = varint_size(body) + body;
    if (rs > PENDING_MAX_BYTES - p->len)
        return -1;
    return rs;
}

/* Writes the record sized by pending_record_size (rs): 0, or -1 with an exception (nothing changed). */
static inline __attribute__((always_inline)) int pending_write(PendingObject *p, Py_ssize_t rs, int64_t ts, PyObject *ts_obj, const char *kd, Py_ssize_t kn, const char *vd,
                         Py_ssize_t vn, PyObject *headers, Py_ssize_t hs, PyObject *callback)
{
    if (pending_reserve(p, rs) < 0)
        return -1;
    if (callback != Py_None || p->callbacks != NULL) {
        if (p->callbacks == NULL) {
            PyObject *cbs = PyList_New(p->count); /* None for the records before */
            if (cbs == NULL)
                return -1;
            for (Py_ssize_t i = 0; i < p->count; i++)
                PyList_SET_ITEM(cbs, i, Py_NewRef(Py_None));
            p->callbacks = cbs;
            if (!PyObject_GC_IsTracked((PyObject *)p))
                PyObject_GC_Track((PyObject *)p); /* (it now refers to objects that may be in cycles) */
        }
        if (PyList_Append(p->callbacks, callback) < 0)
            return -1;
    }
    if (p->count == 0) {
        p->base_ts = ts;
        p->max_ts = ts;
    }
    int64_t delta = ts - p->base_ts;
    Py_ssize_t body = record_body_size(delta, p->count, kn, vn, hs);
    record_write(p->buf + p->len, body, delta, p->count, kd, kn, vd, vn, hs == 1 ? Py_None : headers);
    pending_note_columns(p, delta, kn, vn);
    p->len += rs;
    p->count++;
    p->last_ts = ts;
    Py_XINCREF(ts_obj);
    Py_XSETREF(p->last_ts_obj, ts_obj);
    if (ts > p->max_ts)
        p->max_ts = ts;
    return 0;
}

/* Record i rebuilt: (timestamp, key, value, headers, callback). New reference, NULL with an exception. */
static PyObject *pending_rebuild(PendingObject *p, Py_ssize_t i)
{
    if (pending_index(p) < 0)
        return NULL;
    const uint8_t *q = p->buf + p->offs[i];
    rec_t r;
    if (parse_record(&q, p->buf + p->len, &r) < 0) {
        PyErr_SetString(PyExc_SystemError, "PendingRecords: a record does not parse");
        return NULL;
    }
    PyObject *ts = PyLong_FromLongLong(p->base_ts + r.ts_delta), *k = NULL, *v = NULL, *h = NULL;
    if (ts == NULL || (k = make_bytes(r.key, r.key_len)) == NULL || (v = make_bytes(r.value, r.value_len)) == NULL)
        goto fail;
    if (r.header_count == 0)
        h = Py_NewRef(empty_tuple_obj);
    else {
        if ((h = PyList_New((Py_ssize_t)r.header_count)) == NULL)
            goto fail;
        const uint8_t *hp = r.headers;
        for (int64_t j = 0; j < r.header_count; j++) {
            hdr_t hd;
            if (rd_header(&hp, r.rec_end, &hd) < 0) { /* (parse_record checked the headers: never) */
                PyErr_SetString(PyExc_SystemError, "PendingRecords: a record's header does not parse");
                goto fail;
            }
            PyObject *hk = PyUnicode_DecodeUTF8((const char *)hd.key, (Py_ssize_t)hd.key_len, NULL), *hv = NULL, *t = NULL;
            if (hk == NULL || (hv = make_bytes(hd.value, hd.value_len)) == NULL || (t = PyTuple_Pack(2, hk, hv)) == NULL) {
                Py_XDECREF(hk);
                Py_XDECREF(hv);
                goto fail;
            }
            Py_DECREF(hk);
            Py_DECREF(hv);
            PyList_SET_ITEM(h, (Py_ssize_t)j, t);
        }
    }
    PyObject *cb = p->callbacks == NULL ? Py_None : PyList_GET_ITEM(p->callbacks, i);
    PyObject *out = PyTuple_Pack(5, ts, k, v, h, cb);
    Py_DECREF(ts);
    Py_DECREF(k);
    Py_DECREF(v);
    Py_DECREF(h);
    return out;
fail:
    Py_XDECREF(ts);
    Py_XDECREF(k);
    Py_XDECREF(v);
    Py_XDECREF(h);
    return NULL;
}

/* To list mode: every record rebuilt into ``items``. 0, or -1 with an exception (nothing changed). */
static int pending_to_list(PendingObject *p)
{
    if (p->items != NULL)
        return 0;
    PyObject *items = PyList_New(p->count);
    if (items == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < p->count; i++) {
        PyObject *rec = pending_rebuild(p, i);
        if (rec == NULL) {
            Py_DECREF(items);
            return -1;
        }
        PyList_SET_ITEM(items, i, rec);
    }
    p->items = items;
    if (!PyObject_GC_IsTracked((PyObject *)p))
        PyObject_GC_Track((PyObject *)p);
    Py_CLEAR(p->data);
    PyMem_Free(p->offs);
    p->buf = NULL;
    p->offs = NULL;
    p->len = p->cap = p->count = p->ocap = p->nofs = p->scan_end = 0;
    Py_CLEAR(p->callbacks);
    Py_CLEAR(p->last_ts_obj);
    return 0;
}

static PyObject *pending_make(PyTypeObject *type, Py_ssize_t hint)
{
    if (empty_tuple_obj == NULL && (empty_tuple_obj = PyTuple_New(0)) == NULL)
        return NULL;
    PendingObject *p = (PendingObject *)type->tp_alloc(type, 0);
    if (p == NULL)
        return NULL;
    /* Untracked while it holds no object that could be part of a cycle (its bytes, an int): tracked from its first
     * callback, or in list mode. A batch's records then cost the collector nothing, as their tuples did not. */
    PyObject_GC_UnTrack(p);
    p->hint = hint < 256 ? 256 : hint > (1 << 20) ? (1 << 20) : hint; /* (bytes of records the first allocation takes) */
    p->base_ts = p->max_ts = p->last_ts = -1;
    return (PyObject *)p;
}

static PyObject *pending_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t hint = 4096;
    static char *kwlist[] = {"hint", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|n:PendingRecords", kwlist, &hint))
        return NULL;
    return pending_make(type, hint);
}

/* PendingRecords(hint) without the argument tuple (one per batch) */
static PyObject *pending_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), hint = 4096;
    if (kwnames != NULL || nargs > 1 || (nargs == 1 && !PyLong_CheckExact(args[0]))) {
        /* any other call: as tp_new takes it */
        PyObject *tuple = PyTuple_New(nargs), *kw = NULL, *out = NULL;
        if (tuple == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < nargs; i++)
            PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
        if (kwnames != NULL && (kw = PyDict_New()) != NULL) {
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++)
                if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                    Py_CLEAR(kw);
                    break;
                }
        }
        if (kwnames == NULL || kw != NULL)
            out = pending_new((PyTypeObject *)type, tuple, kw);
        Py_DECREF(tuple);
        Py_XDECREF(kw);
        return out;
    }
    if (nargs == 1 && (hint = PyLong_AsSsize_t(args[0])) == -1 && PyErr_Occurred())
        return NULL;
    return pending_make((PyTypeObject *)type, hint);
}

static int pending_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((PendingObject *)op)->callbacks);
    Py_VISIT(((PendingObject *)op)->items);
    return 0;
}

static int pending_clear(PyObject *op)
{
    Py_CLEAR(((PendingObject *)op)->callbacks);
    Py_CLEAR(((PendingObject *)op)->items);
    Py_CLEAR(((PendingObject *)op)->last_ts_obj);
    return 0;
}

static void pending_dealloc(PyObject *op)
{
    PendingObject *p = (PendingObject *)op;
    PyObject_GC_UnTrack(op);
    pending_clear(op);
    Py_XDECREF(p->data);
    PyMem_Free(p->offs);
    Py_TYPE(op)->tp_free(op);
}

static Py_ssize_t pending_length(PyObject *op)
{
    PendingObject *p = (PendingObject *)op;
    return p->items != NULL ? PyList_GET_SIZE(p->items) : p->count;
}

static PyObject *pending_item(PyObject *op, Py_ssize_t i)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items != NULL)
        return PySequence_GetItem(p->items, i);
    if (i < 0 || i >= p->count) {
        PyErr_SetString(PyExc_IndexError, "PendingRecords index out of range");
        return NULL;
    }
    return pending_rebuild(p, i);
}

/* obj[key] of a sequence type of ``length`` items whose item(obj, i) takes 0 <= i < length: an index (negative from
 * the end) or a slice (a list), the errors of a list's. New reference, NULL with an exception. */
static PyObject *sequence_subscript(PyObject *obj, PyObject *key, Py_ssize_t length, ssizeargfunc item,
                                    const char *type_name)
{
    if (PyIndex_Check(key)) {
        Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred())
            return NULL;
        return item(obj, i < 0 ? i + length : i);
    }
    if (!PySlice_Check(key)) {
        PyErr_Format(PyExc_TypeError, "%s indices must be integers or slices, not %.200s", type_name, Py_TYPE(key)->tp_name);
        return NULL;
    }
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0)
        return NULL;
    Py_ssize_t n = PySlice_AdjustIndices(length, &start, &stop, step);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0, i = start; j < n; j++, i += step) {
        PyObject *v = item(obj, i);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, j, v);
    }
    return out;
}

static PyObject *pending_subscript(PyObject *op, PyObject *key)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items != NULL)
        return PyObject_GetItem(p->items, key);
    return sequence_subscript(op, key, p->count, pending_item, "PendingRecords");
}

/* append(record): a (timestamp, key, value, headers, callback) tuple, encoded when it can be, else kept as is
 * (list mode). */
static PyObject *pending_append(PyObject *op, PyObject *rec)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items == NULL && PyTuple_CheckExact(rec) && PyTuple_GET_SIZE(rec) == 5) {
        PyObject *ts_obj = PyTuple_GET_ITEM(rec, 0), *key = PyTuple_GET_ITEM(rec, 1), *value = PyTuple_GET_ITEM(rec, 2),
                 *headers = PyTuple_GET_ITEM(rec, 3);
        Py_ssize_t kn, vn, hs, rs;
        int64_t ts;
        int overflow = 0;
        if (PyLong_CheckExact(ts_obj) && producer_bytes(key, &kn) == 0 && producer_bytes(value, &vn) == 0) {
            ts = PyLong_AsLongLongAndOverflow(ts_obj, &overflow);
            if (!overflow && ts >= 0 && ts <= ((int64_t)1 << 62) && (hs = headers_size(headers)) >= 0 &&
                (rs = pending_record_size(p, ts, kn, vn, hs)) >= 0) {
                if (pending_write(p, rs, ts, ts_obj, kn < 0 ? NULL : PyBytes_AS_STRING(key), kn,
                                  vn < 0 ? NULL : PyBytes_AS_STRING(value), vn, headers, hs, PyTuple_GET_ITEM(rec, 4)) < 0)
                    return NULL;
                Py_RETURN_NONE;
            }
        }
        PyErr_Clear();
    }
    if (pending_to_list(p) < 0 || PyList_Append(p->items, rec) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *pending_records_bytes(PyObject *op, PyObject *unused)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items != NULL)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p->buf, p->len);
}

static PyObject *pending_callbacks(PyObject *op, PyObject *unused)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items != NULL) {
        PyObject *out = PyList_New(PyList_GET_SIZE(p->items));
        if (out == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(p->items); i++) {
            PyObject *rec = PyList_GET_ITEM(p->items, i);
            PyObject *cb = PyTuple_Check(rec) && PyTuple_GET_SIZE(rec) >= 5 ? PyTuple_GET_ITEM(rec, 4) : Py_None;
            PyList_SET_ITEM(out, i, Py_NewRef(cb));
        }
        return out;
    }
    if (p->callbacks != NULL)
        return PyList_GetSlice(p->callbacks, 0, p->count);
    PyObject *out = PyList_New(p->count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->count; i++)
        PyList_SET_ITEM(out, i, Py_NewRef(Py_None));
    return out;
}

/* encode_compressed(payload, codec, producer_id, producer_epoch, base_sequence, is_transactional, crc32c) */
static PyObject *pending_encode_compressed(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    PendingObject *p = (PendingObject *)op;
    if (nargs != 7 || !PyBytes_CheckExact(args[0]) || p->items != NULL || p->count == 0)
        Py_RETURN_NONE;
    long codec = PyLong_AsLong(args[1]);
    long long pid = PyLong_AsLongLong(args[2]);
    long epoch = PyLong_AsLong(args[3]);
    long seq = PyLong_AsLong(args[4]);
    int txn = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred() || txn < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    if (codec < 1 || codec > 7 || epoch < INT16_MIN || epoch > INT16_MAX || seq < INT32_MIN || seq > INT32_MAX ||
        n > PENDING_MAX_BYTES)
        Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize(NULL, BATCH_OVERHEAD + n);
    if (out == NULL)
        return NULL;
    memcpy(PyBytes_AS_STRING(out) + BATCH_OVERHEAD, PyBytes_AS_STRING(args[0]), (size_t)n);
    return batch_header_finish(out, n, p->count, p->base_ts, p->max_ts, pid, epoch, seq, txn, args[6], (int)codec);
}

static PyObject *pending_is_encoded(PyObject *op, PyObject *unused)
{
    return PyBool_FromLong(((PendingObject *)op)->items == NULL);
}

/* The records as a list of tuples (new reference): list mode's list, else rebuilt. */
static PyObject *pending_as_list(PyObject *op)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items != NULL)
        return Py_NewRef(p->items);
    PyObject *all = PySlice_New(NULL, NULL, NULL);
    if (all == NULL)
        return NULL;
    PyObject *out = pending_subscript(op, all);
    Py_DECREF(all);
    return out;
}

/* == and != compare the records (as the lists of tuples they stand for) with another PendingRecords or a list */
static PyObject *pending_richcompare(PyObject *a, PyObject *b, int op)
{
    if ((op != Py_EQ && op != Py_NE) || !(is_pending(b) || PyList_Check(b)))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *la = pending_as_list(a), *lb = la == NULL ? NULL : is_pending(b) ? pending_as_list(b) : Py_NewRef(b);
    PyObject *out = lb == NULL ? NULL : PyObject_RichCompare(la, lb, op);
    Py_XDECREF(la);
    Py_XDECREF(lb);
    return out;
}

static PyObject *pending_repr(PyObject *op)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items != NULL)
        return PyUnicode_FromFormat("PendingRecords(%R)", p->items);
    return PyUnicode_FromFormat("PendingRecords(<%zd records, %zd bytes>)", p->count, p->len);
}

static PyMethodDef pending_methods[] = {
    {"append", pending_append, METH_O, "append(record): encode a (timestamp, key, value, headers, callback) tuple."},
    {"records_bytes", pending_records_bytes, METH_NOARGS,
     "records_bytes() -> bytes | None: the records section as encoded (base offset 0), None in list mode."},
    {"callbacks", pending_callbacks, METH_NOARGS, "callbacks() -> list: each record's delivery callback or None."},
    {"encode_compressed", (PyCFunction)(void (*)(void))pending_encode_compressed, METH_FASTCALL,
     "encode_compressed(payload, codec, producer_id, producer_epoch, base_sequence, is_transactional, crc32c)\n"
     "    -> bytes | None\n\n"
     "The batch of these records (base offset 0, CREATE_TIME) whose records section, compressed with ``codec``\n"
     "(its CompressionType value, 1-7), is ``payload`` (records_bytes() compressed), as MemoryRecordsBuilder.build\n"
     "writes it. None when it does not take the input (list mode, no records, a value out of range)."},
    {"is_encoded", pending_is_encoded, METH_NOARGS, "is_encoded() -> bool: the records are kept as bytes (not tuples)."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods pending_as_sequence = {
    .sq_length = pending_length,
    .sq_item = pending_item,
};

static PyMappingMethods pending_as_mapping = {
    .mp_length = pending_length,
    .mp_subscript = pending_subscript,
};

PyDoc_STRVAR(pending_doc,
    "PendingRecords(hint=4096): a producer batch's records, encoded at append (the kernel's ProducerBatch.pending;\n"
    "``hint``: the bytes of records its buffer first takes, in [256, 1 MiB]).\n\n"
    "A sequence of (timestamp, key, value, headers, callback) tuples, rebuilt from their bytes when read;\n"
    "append(record) encodes one. A record the encoding cannot take as the reference would (a key or value not\n"
    "bytes or None, a timestamp outside [0, 2**62], headers it does not take) turns it into a list of tuples.");

static PyTypeObject PendingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.PendingRecords",
    .tp_basicsize = sizeof(PendingObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = pending_doc,
    .tp_new = pending_new,
    .tp_vectorcall = pending_vectorcall,
    .tp_traverse = pending_traverse,
    .tp_clear = pending_clear,
    .tp_dealloc = pending_dealloc,
    .tp_repr = pending_repr,
    .tp_richcompare = pending_richcompare,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_methods = pending_methods,
    .tp_as_sequence = &pending_as_sequence,
    .tp_as_mapping = &pending_as_mapping,
};

/* encode_batch of a PendingRecords: its records section copied after the header (list mode: its items). */
static PyObject *encode_pending_batch(PyObject *pending, long long pid, long epoch, long seq, int txn, PyObject *crc32c)
{
    if (!is_pending(pending))
        Py_RETURN_NONE;
    PendingObject *p = (PendingObject *)pending;
    if (p->items != NULL) {
        PyObject *args[6] = {p->items, NULL, NULL, NULL, NULL, crc32c};
        PyObject *pid_o = PyLong_FromLongLong(pid), *epoch_o = PyLong_FromLong(epoch), *seq_o = PyLong_FromLong(seq);
        PyObject *out = NULL;
        if (pid_o != NULL && epoch_o != NULL && seq_o != NULL) {
            args[1] = pid_o;
            args[2] = epoch_o;
            args[3] = seq_o;
            args[4] = txn ? Py_True : Py_False;
            out = k_encode_batch(NULL, args, 6);
        }
        Py_XDECREF(pid_o);
        Py_XDECREF(epoch_o);
        Py_XDECREF(seq_o);
        return out;
    }
    if (p->count == 0)
        Py_RETURN_NONE;
    PyObject *out;
    if (Py_REFCNT(p->data) == 1) {
        /* Nothing else refers to the buffer: it becomes the encoded batch, its header written in front of the records
         * and its size cut to theirs (the bytes object's block stays as allocated: only its length shrinks), not
         * copied. Written only while it is ours alone (pending_reserve copies it before a later append; never hashed,
         * its hash is still uncomputed). */
        out = p->data;
        Py_SET_SIZE(out, BATCH_OVERHEAD + p->len);
        PyBytes_AS_STRING(out)[BATCH_OVERHEAD + p->len] = '\0';
        p->cap = p->len;
        Py_INCREF(out);
    } else {
        /* handed out before (a re-stamp after an epoch bump): that batch's bytes stay as they are, a copy gets the
         * new header */
        if ((out = PyBytes_FromStringAndSize(NULL, BATCH_OVERHEAD + p->len)) == NULL)
            return NULL;
        memcpy(PyBytes_AS_STRING(out) + BATCH_OVERHEAD, p->buf, (size_t)p->len);
    }
    return batch_header_finish(out, p->len, p->count, p->base_ts, p->max_ts, pid, epoch, seq, txn, crc32c, 0);
}
