/* kernel/record_decode.c.h
 *
 * Decoding a magic v2 batch's records: the one record parser (parse_record, rec_t, batch_args) and the
 * decoders built on it: decode_records (Record tuples), decode_consumer_records (the consumer's records) and
 * decode_columns (columns, the GIL released on large batches).
 * Uses: varint.c.h; _kernel.c's globals (the Record type, the TimestampType members).
 */

/* ---- the one record parser ------------------------------------------------------------------------ */

typedef struct {
    int64_t ts_delta;
    int64_t offset_delta;
    const uint8_t *key; /* NULL for a null key */
    int64_t key_len;
    const uint8_t *value; /* NULL for a null value */
    int64_t value_len;
    int64_t header_count;
    const uint8_t *headers; /* first header, already checked */
    const uint8_t *rec_end;
} rec_t;

typedef struct {
    const uint8_t *key;
    int64_t key_len;
    const uint8_t *value; /* NULL for a null value */
    int64_t value_len;
} hdr_t;

/* A nullable varint-length byte string inside [*pp, rec_end). */
static inline int rd_bytes(const uint8_t **pp, const uint8_t *rec_end, const uint8_t **out, int64_t *len)
{
    if (rd_varint(pp, rec_end, 5, len) < 0)
        return -1;
    if (*len == -1) {
        *out = NULL;
        return 0;
    }
    if (*len < 0 || *len > rec_end - *pp)
        return -1;
    *out = *pp;
    *pp += *len;
    return 0;
}

/* One header at *pp (bounded by rec_end). */
static inline int rd_header(const uint8_t **pp, const uint8_t *rec_end, hdr_t *h)
{
    if (rd_varint(pp, rec_end, 5, &h->key_len) < 0 || h->key_len < 0 || h->key_len > rec_end - *pp)
        return -1;
    h->key = *pp;
    *pp += h->key_len;
    return rd_bytes(pp, rec_end, &h->value, &h->value_len);
}

/* One record at *pp, accepted exactly when default_record_batch.decode_records accepts it. */
static inline __attribute__((always_inline)) int parse_record(const uint8_t **pp, const uint8_t *end, rec_t *r)
{
    const uint8_t *p = *pp;
    int64_t length;
    if (rd_varint(&p, end, 5, &length) < 0 || length < MIN_RECORD_SIZE - 1 || length > end - p)
        return -1;
    const uint8_t *rec_end = p + length;
    p++; /* attributes (unused) */
    if (rd_varint(&p, rec_end, 10, &r->ts_delta) < 0 || rd_varint(&p, rec_end, 5, &r->offset_delta) < 0)
        return -1;
    if (rd_bytes(&p, rec_end, &r->key, &r->key_len) < 0 || rd_bytes(&p, rec_end, &r->value, &r->value_len) < 0)
        return -1;
    if (rd_varint(&p, rec_end, 5, &r->header_count) < 0)
        return -1;
    r->headers = p;
    if (r->header_count) {
        if (r->header_count < 0 || r->header_count > (rec_end - p) / 2)
            return -1;
        hdr_t h = {NULL, 0, NULL, 0};
        for (int64_t j = 0; j < r->header_count; j++)
            if (rd_header(&p, rec_end, &h) < 0)
                return -1;
    }
    if (p != rec_end)
        return -1;
    r->rec_end = rec_end;
    *pp = p;
    return 0;
}

typedef struct {
    Py_buffer view;
    long long count, base_offset, base_timestamp;
} batch_args;

/* Parse (data, count, base_offset, base_timestamp, ...) and check count against the bytes: a record takes at
 * least MIN_RECORD_SIZE bytes, so a larger count cannot be right and nothing is allocated from it. 1 ok, 0
 * declined (view released), -1 error. */
static int batch_args_check(batch_args *a)
{
    if (a->count < 0 || a->count > a->view.len / MIN_RECORD_SIZE) {
        PyBuffer_Release(&a->view);
        return 0;
    }
    return 1;
}

static inline int add_overflows(int64_t a, int64_t b, int64_t *out) { return __builtin_add_overflow(a, b, out); }

/* ---- decode to Record tuples --------------------------------------------------------------------- */

/* The next record at *pp with its absolute offset and timestamp; -1 to decline (bad bytes, int64 overflow). */
static inline int next_record(const uint8_t **pp, const uint8_t *end, const batch_args *a, rec_t *r,
                              int64_t *offset, int64_t *ts)
{
    if (parse_record(pp, end, r) < 0 || add_overflows(a->base_offset, r->offset_delta, offset) ||
        add_overflows(a->base_timestamp, r->ts_delta, ts))
        return -1;
    return 0;
}

/* Declines a log_append_time that is neither None nor an exact int (the view is released); 1 when accepted. */
static int log_append_time_ok(batch_args *a, PyObject *lat_obj)
{
    if (lat_obj != Py_None && !PyLong_CheckExact(lat_obj)) {
        PyBuffer_Release(&a->view);
        return 0;
    }
    return 1;
}

static PyObject *make_bytes(const uint8_t *p, int64_t n)
{
    if (p == NULL)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
}

/* New references to a record's offset, timestamp (log_append_time when not NULL), key and value, in that
 * order; -1 (nothing left allocated) on error. */
static int record_values(const rec_t *r, int64_t offset, int64_t ts, PyObject *log_append_time, PyObject *out[4])
{
    out[0] = PyLong_FromLongLong(offset);
    if (log_append_time != NULL) {
        Py_INCREF(log_append_time);
        out[1] = log_append_time;
    } else
        out[1] = PyLong_FromLongLong(ts);
    out[2] = make_bytes(r->key, r->key_len);
    out[3] = make_bytes(r->value, r->value_len);
    if (out[0] && out[1] && out[2] && out[3])
        return 0;
    for (int i = 0; i < 4; i++)
        Py_CLEAR(out[i]);
    return -1;
}

/* The end of a decode into `list`: released view, and the list (ok), None (declined) or NULL (error). */
enum { DONE, DECLINED, FAILED };
static PyObject *decoded(batch_args *a, PyObject *list, int how)
{
    PyBuffer_Release(&a->view);
    if (how == DONE)
        return list;
    Py_XDECREF(list);
    if (how == DECLINED)
        Py_RETURN_NONE;
    return NULL;
}

static PyObject *make_headers(const rec_t *r)
{
    PyObject *list = PyList_New((Py_ssize_t)r->header_count);
    if (list == NULL)
        return NULL;
    const uint8_t *p = r->headers;
    for (int64_t j = 0; j < r->header_count; j++) {
        hdr_t h = {NULL, 0, NULL, 0};
        rd_header(&p, r->rec_end, &h); /* checked by parse_record */
        PyObject *k = PyUnicode_DecodeUTF8((const char *)h.key, (Py_ssize_t)h.key_len, "surrogateescape");
        PyObject *v = k ? make_bytes(h.value, h.value_len) : NULL;
        PyObject *pair = v ? PyTuple_Pack(2, k, v) : NULL;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (pair == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)j, pair);
    }
    return list;
}

PyDoc_STRVAR(decode_records_doc,
    "decode_records(data, count, base_offset, base_timestamp, log_append_time) -> list[Record] | None\n\n"
    "default_record_batch.decode_records compiled; None when the reference must decide (bad input).");

static PyObject *k_decode_records(PyObject *self, PyObject *args)
{
    batch_args a;
    PyObject *lat_obj;
    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_kernel.setup() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*LLLO", &a.view, &a.count, &a.base_offset, &a.base_timestamp, &lat_obj))
        return NULL;
    if (batch_args_check(&a) == 0)
        Py_RETURN_NONE;
    if (!log_append_time_ok(&a, lat_obj))
        Py_RETURN_NONE;
    int has_lat = lat_obj != Py_None;
    PyObject *ts_type = has_lat ? log_append_time_type : create_time;
    const uint8_t *p = a.view.buf, *end = p + a.view.len;
    PyObject *list = PyList_New((Py_ssize_t)a.count);
    if (list == NULL)
        return decoded(&a, NULL, FAILED);
    for (long long i = 0; i < a.count; i++) {
        rec_t r;
        int64_t offset, ts;
        if (next_record(&p, end, &a, &r, &offset, &ts) < 0)
            return decoded(&a, list, DECLINED);
        PyObject *rec = ((PyTypeObject *)record_type)->tp_alloc((PyTypeObject *)record_type, 6);
        if (rec == NULL)
            return decoded(&a, list, FAILED);
        PyList_SET_ITEM(list, (Py_ssize_t)i, rec);
        PyObject *v[4], *o;
        if (record_values(&r, offset, ts, has_lat ? lat_obj : NULL, v) < 0)
            return decoded(&a, list, FAILED);
        PyTuple_SET_ITEM(rec, 0, v[0]);
        PyTuple_SET_ITEM(rec, 1, v[1]);
        Py_INCREF(ts_type);
        PyTuple_SET_ITEM(rec, 2, ts_type);
        PyTuple_SET_ITEM(rec, 3, v[2]);
        PyTuple_SET_ITEM(rec, 4, v[3]);
        if ((o = make_headers(&r)) == NULL)
            return decoded(&a, list, FAILED);
        PyTuple_SET_ITEM(rec, 5, o);
    }
    return decoded(&a, list, p == end ? DONE : DECLINED);
}

/* ---- decode to the consumer's records -------------------------------------------------------------- */

/* ConsumerRecord's slots, in the order decode_consumer_records fills them; their offsets are looked up once
 * per type (the member descriptors of its __slots__). */
static const char *const cr_slot_names[] = {
    "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers", "leader_epoch",
    "serialized_key_size", "serialized_value_size",
};
#define CR_SLOTS 11
static PyTypeObject *cr_type = NULL;
static Py_ssize_t cr_offsets[CR_SLOTS];

static int cr_setup(PyTypeObject *type)
{
    if (type == cr_type)
        return 0;
    Py_ssize_t offsets[CR_SLOTS];
    for (int i = 0; i < CR_SLOTS; i++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)type, cr_slot_names[i]);
        if (d == NULL)
            PyErr_Clear();
        int ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 ((PyMemberDescrObject *)d)->d_common.d_type == type;
        if (ok)
            offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot of that class", type->tp_name, cr_slot_names[i]);
            return -1;
        }
    }
    memcpy(cr_offsets, offsets, sizeof offsets);
    Py_INCREF(type);
    Py_XSETREF(cr_type, type);
    return 0;
}

#define CR_SET(obj, i, v) (*(PyObject **)((char *)(obj) + cr_offsets[i]) = (v))

static PyObject *make_header_tuple(const rec_t *r)
{
    PyObject *list = make_headers(r);
    if (list == NULL)
        return NULL;
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    return t;
}

PyDoc_STRVAR(decode_consumer_records_doc,
    "decode_consumer_records(data, count, base_offset, base_timestamp, log_append_time, position, record_type,\n"
    "                        topic, partition, timestamp_type, leader_epoch) -> list[ConsumerRecord] | None\n\n"
    "completed_fetch.consumer_records_reference compiled: the records of a batch as ConsumerRecords (bytes as\n"
    "they are), each record behind the running position skipped; None when the reference must decide.");

static PyObject *k_decode_consumer_records(PyObject *self, PyObject *args)
{
    batch_args a;
    long long position;
    PyObject *lat_obj, *topic, *partition, *ts_type, *leader_epoch;
    PyTypeObject *type;
    if (!PyArg_ParseTuple(args, "y*LLLOLO!OOOO", &a.view, &a.count, &a.base_offset, &a.base_timestamp, &lat_obj,
                          &position, &PyType_Type, &type, &topic, &partition, &ts_type, &leader_epoch))
        return NULL;
    if (cr_setup(type) < 0) {
        PyBuffer_Release(&a.view);
        return NULL;
    }
    if (batch_args_check(&a) == 0)
        Py_RETURN_NONE;
    if (!log_append_time_ok(&a, lat_obj))
        Py_RETURN_NONE;
    int has_lat = lat_obj != Py_None;
    const uint8_t *p = a.view.buf, *end = p + a.view.len;
    PyObject *list = PyList_New((Py_ssize_t)a.count);
    if (list == NULL)
        return decoded(&a, NULL, FAILED);
    Py_ssize_t n = 0;
    int64_t next = (int64_t)position;
    for (long long i = 0; i < a.count; i++) {
        rec_t r;
        int64_t offset, ts;
        if (next_record(&p, end, &a, &r, &offset, &ts) < 0)
            return decoded(&a, list, DECLINED);
        if (offset < next)
            continue; /* behind the position: never returned twice or out of order */
        if (offset == INT64_MAX)
            return decoded(&a, list, DECLINED); /* the reference's next position (offset + 1) would not fit */
        next = offset + 1;
        PyObject *rec = type->tp_alloc(type, 0);
        if (rec == NULL)
            return decoded(&a, list, FAILED);
        PyList_SET_ITEM(list, n, rec);
        n++;
        PyObject *v[4], *o;
        Py_INCREF(topic);
        CR_SET(rec, 0, topic);
        Py_INCREF(partition);
        CR_SET(rec, 1, partition);
        Py_INCREF(ts_type);
        CR_SET(rec, 4, ts_type);
        Py_INCREF(leader_epoch);
        CR_SET(rec, 8, leader_epoch);
        if (record_values(&r, offset, ts, has_lat ? lat_obj : NULL, v) < 0)
            return decoded(&a, list, FAILED);
        CR_SET(rec, 2, v[0]);
        CR_SET(rec, 3, v[1]);
        CR_SET(rec, 5, v[2]);
        CR_SET(rec, 6, v[3]);
        if ((o = make_header_tuple(&r)) == NULL)
            return decoded(&a, list, FAILED);
        CR_SET(rec, 7, o);
        if ((o = PyLong_FromLongLong(r.key == NULL ? -1 : r.key_len)) == NULL)
            return decoded(&a, list, FAILED);
        CR_SET(rec, 9, o);
        if ((o = PyLong_FromLongLong(r.value == NULL ? -1 : r.value_len)) == NULL)
            return decoded(&a, list, FAILED);
        CR_SET(rec, 10, o);
    }
    Py_SET_SIZE(list, n); /* the items past n were never set (NULL) */
    return decoded(&a, list, p == end ? DONE : DECLINED);
}

/* ---- decode to columns ---------------------------------------------------------------------------- */

typedef struct {
    int64_t *offsets, *timestamps;
    uint8_t *key_valid, *value_valid, *hvalue_valid;
    int32_t *key_offsets, *value_offsets, *header_offsets, *hkey_offsets, *hvalue_offsets;
    uint8_t *key_data, *value_data, *hkey_data, *hvalue_data;
    Py_ssize_t n, nbitmap, nheaders, key_len, value_len, hkey_len, hvalue_len;
} columns_t;

static void columns_free(columns_t *c)
{
    free(c->offsets); free(c->timestamps);
    free(c->key_valid); free(c->value_valid); free(c->hvalue_valid);
    free(c->key_offsets); free(c->value_offsets); free(c->header_offsets);
    free(c->hkey_offsets); free(c->hvalue_offsets);
    free(c->key_data); free(c->value_data); free(c->hkey_data); free(c->hvalue_data);
}

/* Allocate for n records in len bytes: every data column fits in len, a header takes at least 2 bytes. */
static int columns_alloc(columns_t *c, Py_ssize_t n, Py_ssize_t len)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->nbitmap = (n + 7) / 8;
    Py_ssize_t hmax = len / 2;
    c->offsets = malloc(sizeof(int64_t) * (n + 1));
    c->timestamps = malloc(sizeof(int64_t) * (n + 1));
    c->key_valid = calloc(c->nbitmap + 1, 1);
    c->value_valid = calloc(c->nbitmap + 1, 1);
    c->hvalue_valid = calloc(hmax / 8 + 1, 1);
    c->key_offsets = malloc(sizeof(int32_t) * (n + 1));
    c->value_offsets = malloc(sizeof(int32_t) * (n + 1));
    c->header_offsets = malloc(sizeof(int32_t) * (n + 1));
    c->hkey_offsets = malloc(sizeof(int32_t) * (hmax + 1));
    c->hvalue_offsets = malloc(sizeof(int32_t) * (hmax + 1));
    c->key_data = malloc(len + 1);
    c->value_data = malloc(len + 1);
    c->hkey_data = malloc(len + 1);
    c->hvalue_data = malloc(len + 1);
    if (!c->offsets || !c->timestamps || !c->key_valid || !c->value_valid || !c->hvalue_valid || !c->key_offsets ||
        !c->value_offsets || !c->header_offsets || !c->hkey_offsets || !c->hvalue_offsets || !c->key_data ||
        !c->value_data || !c->hkey_data || !c->hvalue_data) {
        columns_free(c);
        return -1;
    }
    return 0;
}

static inline void put_binary(const uint8_t *src, int64_t n, Py_ssize_t i, uint8_t *valid, int32_t *offs,
                              uint8_t *data, Py_ssize_t *used)
{
    if (src != NULL) {
        valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        memcpy(data + *used, src, (size_t)n);
        *used += (Py_ssize_t)n;
    }
    offs[i + 1] = (int32_t)*used;
}

/* Fill the columns (no Python object touched: runs without the GIL). 0 ok, -1 declined. Offsets are int32:
 * every column is at most the batch length, which the caller checked is below 2**31. */
static int columns_scan(const uint8_t *p, const uint8_t *end, const batch_args *a, int has_lat, int64_t lat,
                        columns_t *c)
{
    c->key_offsets[0] = c->value_offsets[0] = c->header_offsets[0] = 0;
    c->hkey_offsets[0] = c->hvalue_offsets[0] = 0;
    for (Py_ssize_t i = 0; i < c->n; i++) {
        rec_t r;
        if (parse_record(&p, end, &r) < 0 || add_overflows(a->base_offset, r.offset_delta, &c->offsets[i]) ||
            add_overflows(a->base_timestamp, r.ts_delta, &c->timestamps[i]))
            return -1;
        if (has_lat)
            c->timestamps[i] = lat;
        put_binary(r.key, r.key_len, i, c->key_valid, c->key_offsets, c->key_data, &c->key_len);
        put_binary(r.value, r.value_len, i, c->value_valid, c->value_offsets, c->value_data, &c->value_len);
        const uint8_t *hp = r.headers;
        for (int64_t j = 0; j < r.header_count; j++) {
            hdr_t h = {NULL, 0, NULL, 0};
            Py_ssize_t k = c->nheaders++;
            rd_header(&hp, r.rec_end, &h); /* checked by parse_record */
            memcpy(c->hkey_data + c->hkey_len, h.key, (size_t)h.key_len);
            c->hkey_len += (Py_ssize_t)h.key_len;
            c->hkey_offsets[k + 1] = (int32_t)c->hkey_len;
            put_binary(h.value, h.value_len, k, c->hvalue_valid, c->hvalue_offsets, c->hvalue_data, &c->hvalue_len);
        }
        c->header_offsets[i + 1] = (int32_t)c->nheaders;
    }
    return p == end ? 0 : -1;
}

PyDoc_STRVAR(decode_columns_doc,
    "decode_columns(data, count, base_offset, base_timestamp, log_append_time) -> tuple[bytes, ...] | None\n\n"
    "The records as column buffers (see columns.RecordColumns for the order); None when the reference must\n"
    "decide.");

static PyObject *k_decode_columns(PyObject *self, PyObject *args)
{
    batch_args a;
    PyObject *lat_obj;
    long long lat = 0;
    if (!PyArg_ParseTuple(args, "y*LLLO", &a.view, &a.count, &a.base_offset, &a.base_timestamp, &lat_obj))
        return NULL;
    if (batch_args_check(&a) == 0)
        Py_RETURN_NONE;
    int has_lat = lat_obj != Py_None;
    if (has_lat) {
        int overflow = 0;
        lat = PyLong_Check(lat_obj) ? PyLong_AsLongLongAndOverflow(lat_obj, &overflow) : 0;
        if (!PyLong_Check(lat_obj) || overflow || (lat == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyBuffer_Release(&a.view);
            Py_RETURN_NONE;
        }
    }
    if (a.view.len >= INT32_MAX) {
        PyBuffer_Release(&a.view);
        Py_RETURN_NONE;
    }
    columns_t c;
    if (columns_alloc(&c, (Py_ssize_t)a.count, a.view.len) < 0) {
        PyBuffer_Release(&a.view);
        return PyErr_NoMemory();
    }
    const uint8_t *p = a.view.buf, *end = p + a.view.len;
    int rc;
    if (a.view.len >= NOGIL_THRESHOLD) {
        Py_BEGIN_ALLOW_THREADS
        rc = columns_scan(p, end, &a, has_lat, lat, &c);
        Py_END_ALLOW_THREADS
    } else {
        rc = columns_scan(p, end, &a, has_lat, lat, &c);
    }
    PyBuffer_Release(&a.view);
    if (rc < 0) {
        columns_free(&c);
        Py_RETURN_NONE;
    }
    Py_ssize_t n = c.n, h = c.nheaders;
    PyObject *out = Py_BuildValue(
        "(ny#y#y#y#y#y#y#y#y#y#y#y#y#y#)", n,
        (const char *)c.offsets, n * 8, (const char *)c.timestamps, n * 8,
        (const char *)c.key_valid, c.nbitmap, (const char *)c.key_offsets, (n + 1) * 4,
        (const char *)c.key_data, c.key_len,
        (const char *)c.value_valid, c.nbitmap, (const char *)c.value_offsets, (n + 1) * 4,
        (const char *)c.value_data, c.value_len,
        (const char *)c.header_offsets, (n + 1) * 4,
        (const char *)c.hkey_offsets, (h + 1) * 4, (const char *)c.hkey_data, c.hkey_len,
        (const char *)c.hvalue_valid, (h + 7) / 8, (const char *)c.hvalue_offsets, (h + 1) * 4,
        (const char *)c.hvalue_data, c.hvalue_len);
    columns_free(&c);
    return out;
}
