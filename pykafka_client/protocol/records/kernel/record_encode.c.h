/* kernel/record_encode.c.h
 *
 * Encoding records: the size and bytes of a record and of its headers from the reference's tuples, and
 * append_records.
 * Uses: varint.c.h.
 */

/* ---- encode ---------------------------------------------------------------------------------------- */

/* A key or value: None (n = -1), bytes or bytearray; anything else is left to the reference. */
static inline int bytes_like(PyObject *o, const char **data, Py_ssize_t *n)
{
    if (o == Py_None) {
        *data = NULL;
        *n = -1;
        return 0;
    }
    if (PyBytes_Check(o)) {
        *data = PyBytes_AS_STRING(o);
        *n = PyBytes_GET_SIZE(o);
        return 0;
    }
    if (PyByteArray_Check(o)) {
        *data = PyByteArray_AS_STRING(o);
        *n = PyByteArray_GET_SIZE(o);
        return 0;
    }
    return -1;
}

static inline Py_ssize_t nullable_size(Py_ssize_t n) { return n < 0 ? 1 : varint_size(n) + n; }

/* The encoded size of a headers field, or -1 when the reference must encode it. */
static Py_ssize_t headers_size(PyObject *headers)
{
    if (headers == Py_None)
        return 1;
    if (!PyList_Check(headers) && !PyTuple_Check(headers))
        return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers), size = varint_size(count);
    for (Py_ssize_t j = 0; j < count; j++) {
        PyObject *h = PySequence_Fast_GET_ITEM(headers, j);
        const char *d;
        Py_ssize_t kn = -1, vn = -1;
        if (!PyTuple_CheckExact(h) || PyTuple_GET_SIZE(h) != 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(h, 0)))
            return -1;
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(h, 0), &kn) == NULL) { /* lone surrogates */
            PyErr_Clear();
            return -1;
        }
        if (bytes_like(PyTuple_GET_ITEM(h, 1), &d, &vn) < 0)
            return -1;
        size += varint_size(kn) + kn + nullable_size(vn);
    }
    return size;
}

static inline uint8_t *wr_nullable(uint8_t *p, const char *d, Py_ssize_t n)
{
    if (n < 0)
        return wr_varint(p, -1);
    p = wr_varint(p, n);
    memcpy(p, d, (size_t)n);
    return p + n;
}

static uint8_t *wr_headers(uint8_t *p, PyObject *headers)
{
    if (headers == Py_None)
        return wr_varint(p, 0);
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers);
    p = wr_varint(p, count);
    for (Py_ssize_t j = 0; j < count; j++) {
        PyObject *h = PySequence_Fast_GET_ITEM(headers, j);
        const char *d;
        Py_ssize_t n;
        d = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(h, 0), &n); /* cached by headers_size */
        p = wr_nullable(p, d, n);
        bytes_like(PyTuple_GET_ITEM(h, 1), &d, &n);
        p = wr_nullable(p, d, n);
    }
    return p;
}

/* Timestamp of a record tuple, or 0 with *ok = 0 when the reference must handle it. */
static inline int64_t record_timestamp(PyObject *ts_obj, int *ok)
{
    if (!PyLong_CheckExact(ts_obj)) {
        *ok = 0;
        return 0;
    }
    int overflow = 0;
    long long ts = PyLong_AsLongLongAndOverflow(ts_obj, &overflow);
    if (ts == -1 && !overflow && PyErr_Occurred()) { /* (an exact int never fails: no error to clear per record) */
        PyErr_Clear();
        *ok = 0;
        return ts;
    }
    *ok = !overflow && (ts >= 0 || ts == -1);
    return ts;
}

/* One record tuple checked (the append_records layout): its timestamp, key and value, and its headers' size; 0, or
   -1 when the reference must encode it (also for a -1 timestamp when nonneg). Consecutive records often share their
   timestamp int and headers object (the producer's clock int, its one empty headers tuple): a record holding the
   same object as the one before (*last_ts, *last_headers) reuses its conversion (*ts, *hs). */
static inline int record_check(PyObject *rec, int nonneg, PyObject **last_ts, int64_t *ts, PyObject **last_headers,
                               Py_ssize_t *hs, const char **kd, Py_ssize_t *kn, const char **vd, Py_ssize_t *vn)
{
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) < 4)
        return -1;
    PyObject *ts_obj = PyTuple_GET_ITEM(rec, 0), *headers = PyTuple_GET_ITEM(rec, 3);
    if (ts_obj != *last_ts) {
        int ok;
        *ts = record_timestamp(ts_obj, &ok);
        if (!ok || (nonneg && *ts < 0))
            return -1;
        *last_ts = ts_obj;
    }
    if (bytes_like(PyTuple_GET_ITEM(rec, 1), kd, kn) < 0 || bytes_like(PyTuple_GET_ITEM(rec, 2), vd, vn) < 0)
        return -1;
    if (headers != *last_headers) {
        if ((*hs = headers_size(headers)) < 0)
            return -1;
        *last_headers = headers;
    }
    return 0;
}

static inline Py_ssize_t record_body_size(int64_t ts_delta, int64_t count, Py_ssize_t kn, Py_ssize_t vn, Py_ssize_t hs)
{
    return 1 + varint_size(ts_delta) + varint_size(count) + nullable_size(kn) + nullable_size(vn) + hs;
}

/* One record at p (its size varint, then its body of ``body`` bytes); returns the end. */
static inline uint8_t *record_write(uint8_t *p, Py_ssize_t body, int64_t ts_delta, int64_t count, const char *kd,
                                    Py_ssize_t kn, const char *vd, Py_ssize_t vn, PyObject *headers)
{
    p = wr_varint(p, body);
    *p++ = 0;
    p = wr_varint(p, ts_delta);
    p = wr_varint(p, count);
    p = wr_nullable(p, kd, kn);
    p = wr_nullable(p, vd, vn);
    return wr_headers(p, headers);
}

/* Pass 1 of append_records: checks every record tuple (record_check) and returns the bytes they take, or -1 when
   the reference must encode them. No Python code runs in it. */
static Py_ssize_t records_encoded_size(PyObject *records, int64_t count, int64_t bts)
{
    Py_ssize_t n = PyList_GET_SIZE(records), total = 0, hs = 0;
    PyObject *last_ts_obj = NULL, *last_headers = NULL;
    int64_t ts = 0;
    for (Py_ssize_t i = 0; i < n; i++, count++) {
        const char *d;
        Py_ssize_t kn, vn;
        if (record_check(PyList_GET_ITEM(records, i), 0, &last_ts_obj, &ts, &last_headers, &hs, &d, &kn, &d, &vn) < 0)
            return -1;
        int64_t ts_delta;
        if (count == 0)
            bts = ts;
        if (__builtin_sub_overflow(ts, bts, &ts_delta)) /* the reference encodes the wider Python int */
            return -1;
        Py_ssize_t body = record_body_size(ts_delta, count, kn, vn, hs);
        total += varint_size(body) + body;
        if (count >= INT32_MAX || total > PY_SSIZE_T_MAX / 2)
            return -1;
    }
    return total;
}

/* Pass 2: writes the records checked by records_encoded_size at p; state is (count, base_timestamp,
   max_timestamp, offset_of_max_timestamp), updated. */
static uint8_t *records_write(uint8_t *p, PyObject *records, int64_t base_offset, int64_t state[4])
{
    Py_ssize_t n = PyList_GET_SIZE(records);
    int64_t count = state[0], bts = state[1], mts = state[2], omax = state[3];
    for (Py_ssize_t i = 0; i < n; i++, count++) {
        PyObject *rec = PyList_GET_ITEM(records, i);
        const char *kd = NULL, *vd = NULL;
        Py_ssize_t kn = -1, vn = -1;
        int ok;
        int64_t ts = record_timestamp(PyTuple_GET_ITEM(rec, 0), &ok);
        bytes_like(PyTuple_GET_ITEM(rec, 1), &kd, &kn);
        bytes_like(PyTuple_GET_ITEM(rec, 2), &vd, &vn);
        PyObject *headers = PyTuple_GET_ITEM(rec, 3);
        if (count == 0)
            bts = ts;
        Py_ssize_t body = record_body_size(ts - bts, count, kn, vn, headers_size(headers));
        p = record_write(p, body, ts - bts, count, kd, kn, vd, vn, headers);
        if (ts > mts) {
            mts = ts;
            omax = base_offset + count;
        }
    }
    state[0] = count;
    state[1] = bts;
    state[2] = mts;
    state[3] = omax;
    return p;
}

PyDoc_STRVAR(append_records_doc,
    "append_records(buf, records, count, base_offset, base_timestamp, max_timestamp, offset_of_max)\n"
    "    -> (count, base_timestamp, max_timestamp, offset_of_max) | None\n\n"
    "MemoryRecordsBuilder.append_all compiled: encodes each (timestamp, key, value, headers, ...) tuple onto\n"
    "the bytearray buf. None, with buf untouched, when the reference must encode them.");

static PyObject *k_append_records(PyObject *self, PyObject *args)
{
    PyObject *buf, *records;
    long long count0, base_offset, base_ts, max_ts, offset_of_max;
    if (!PyArg_ParseTuple(args, "O!O!LLLLL", &PyByteArray_Type, &buf, &PyList_Type, &records, &count0, &base_offset,
                          &base_ts, &max_ts, &offset_of_max))
        return NULL;
    Py_ssize_t total = records_encoded_size(records, count0, base_ts);
    if (total < 0)
        Py_RETURN_NONE;
    Py_ssize_t old = PyByteArray_GET_SIZE(buf);
    if (PyByteArray_Resize(buf, old + total) < 0) { /* e.g. exported: the reference raises the same way */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int64_t state[4] = {count0, base_ts, max_ts, offset_of_max};
    records_write((uint8_t *)PyByteArray_AS_STRING(buf) + old, records, base_offset, state);
    return Py_BuildValue("(LLLL)", (long long)state[0], (long long)state[1], (long long)state[2], (long long)state[3]);
}
