/* The record fast path: the per-record loops of magic v2 batches, compiled (see docs/ARCHITECTURE.md,
 * "Record fast path").
 *
 * The pure-Python modules of this package are the reference. Every function here either returns exactly
 * what its reference returns, or returns None ("not handled") so that the caller runs the reference,
 * which then produces the result or raises the error. The kernel therefore never builds an error message
 * of its own: on bad or unusual input (truncation, a lying length, a value that does not fit 64 bits, a
 * type it does not know) it declines, and the reference reports it.
 *
 * Safety: every read is bounded by the end of the buffer or of the current record, whichever is
 * smaller; a length from the input is compared with the bytes left before it is used; a count from the
 * input is compared with what the buffer could hold before anything is allocated from it. The GIL is
 * released only in the column and validation scans, which touch no Python object (only the bytes of a
 * buffer exported to us and memory of our own), and by GilHandoff (its epoll wait and its hand-off wait).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Set once by setup(): the Record named tuple, the TimestampType members, the reference varint reader. */
static PyObject *record_type = NULL;
static PyObject *create_time = NULL;
static PyObject *log_append_time_type = NULL;
static PyObject *py_read_varint = NULL;

#define MIN_RECORD_SIZE 7
/* Scans on batches at least this large release the GIL. */
#define NOGIL_THRESHOLD 4096

/* ---- varints ------------------------------------------------------------------------------------ */

/* Zig-zag varint of at most maxb bytes in [*pp, end). 0 and *pp advanced on success; -1 when truncated,
 * too long, or wider than 64 bits (the reference keeps such values as Python ints; we decline). */
static inline int rd_varint(const uint8_t **pp, const uint8_t *end, int maxb, int64_t *out)
{
    const uint8_t *p = *pp;
    /* one and two bytes (values up to +-8191: record lengths, deltas and sizes of small records) without the loop */
    if (end - p >= 2) {
        uint64_t b0 = p[0];
        if (!(b0 & 0x80)) {
            *pp = p + 1;
            *out = (int64_t)((b0 >> 1) ^ (0 - (b0 & 1)));
            return 0;
        }
        uint64_t b1 = p[1];
        if (!(b1 & 0x80) && maxb >= 2) {
            uint64_t r2 = (b0 & 0x7F) | (b1 << 7);
            *pp = p + 2;
            *out = (int64_t)((r2 >> 1) ^ (0 - (r2 & 1)));
            return 0;
        }
    }
    uint64_t r = 0;
    int shift = 0;
    for (int i = 0; i < maxb; i++) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        if (shift == 63 && (b & 0x7E))
            return -1;
        r |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = (int64_t)((r >> 1) ^ (0 - (r & 1)));
            return 0;
        }
        shift += 7;
    }
    return -1;
}

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline Py_ssize_t varint_size(int64_t v)
{
    uint64_t u = zigzag(v);
    Py_ssize_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *wr_varint(uint8_t *p, int64_t v)
{
    uint64_t u = zigzag(v);
    while (u >= 0x80) {
        *p++ = (uint8_t)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    *p++ = (uint8_t)u;
    return p;
}

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

/* ---- broker validation ------------------------------------------------------------------------------ */

typedef struct {
    int check_ts, require_keys;
    int64_t now, before_max, after_max;
} checks_t;

static inline const uint8_t *brk_quick_record(const uint8_t *p, const uint8_t *end, long long i, const batch_args *a,
                                              const checks_t *k, int ts_all_ok); /* h/brkappend's region */
static int brk_quick_ts_all_ok(const batch_args *a, const checks_t *k); /* h/prodappend's region */

/* Every record well formed, offset delta i for the i-th, timestamps in bounds, keys present if required:
 * 1 when the reference would accept, 0 when it must look (it raises). */
static int validate_scan(const uint8_t *p, const uint8_t *end, const batch_args *a, const checks_t *k)
{
    if (a->count > 0 && a->base_offset > INT64_MAX - (a->count - 1))
        return 0; /* (the i-th record's offset base + i overflows for some i: the loop below would say 0 there) */
    int ts_all_ok = brk_quick_ts_all_ok(a, k);
    for (long long i = 0; i < a->count; i++) {
        const uint8_t *q = brk_quick_record(p, end, i, a, k, ts_all_ok);
        if (q != NULL) { /* the common record, accepted (a NULL: parse_record and the checks below judge it) */
            p = q;
            continue;
        }
        rec_t r;
        int64_t ts, offset;
        if (parse_record(&p, end, &r) < 0 || r.offset_delta != i || add_overflows(a->base_offset, i, &offset) ||
            add_overflows(a->base_timestamp, r.ts_delta, &ts))
            return 0;
        if (k->require_keys && r.key == NULL)
            return 0;
        if (k->check_ts && ts >= 0) {
            int64_t before, after;
            if (__builtin_sub_overflow(k->now, ts, &before) || __builtin_sub_overflow(ts, k->now, &after) || before > k->before_max ||
                after > k->after_max)
                return 0;
        }
    }
    return p == end;
}

PyDoc_STRVAR(validate_records_doc,
    "validate_records(data, count, base_offset, base_timestamp, check_timestamps, now, before_max_ms,\n"
    "                 after_max_ms, require_keys) -> bool\n\n"
    "True when batch_ops.check_records' reference would accept the records; False when it must run.");

static PyObject *k_validate_records(PyObject *self, PyObject *args)
{
    batch_args a;
    checks_t k;
    long long now, before, after;
    if (!PyArg_ParseTuple(args, "y*LLLpLLLp", &a.view, &a.count, &a.base_offset, &a.base_timestamp, &k.check_ts,
                          &now, &before, &after, &k.require_keys))
        return NULL;
    k.now = now;
    k.before_max = before;
    k.after_max = after;
    if (batch_args_check(&a) == 0)
        Py_RETURN_FALSE;
    const uint8_t *p = a.view.buf, *end = p + a.view.len;
    int ok;
    if (a.view.len >= NOGIL_THRESHOLD) {
        Py_BEGIN_ALLOW_THREADS
        ok = validate_scan(p, end, &a, &k);
        Py_END_ALLOW_THREADS
    } else {
        ok = validate_scan(p, end, &a, &k);
    }
    PyBuffer_Release(&a.view);
    return PyBool_FromLong(ok);
}

/* A big-endian field of n bytes at p, as unsigned. */
static inline uint64_t be_field(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* v2 batch header fields (byte offsets) and attribute bits, as default_record_batch.py has them. */
#define BATCH_LENGTH_AT 8
#define MAGIC_AT 16
#define CRC_AT 17
#define ATTRIBUTES_AT 21
#define LAST_OFFSET_DELTA_AT 23
#define BASE_TIMESTAMP_AT 27
#define RECORDS_COUNT_AT 57
#define RECORDS_AT 61
#define MIN_BATCH_LENGTH (RECORDS_AT - 12)
#define CODEC_MASK 0x07
#define MAX_CODEC_ID 4
#define TIMESTAMP_TYPE_BIT 0x08
#define CONTROL_BIT 0x20

PyDoc_STRVAR(check_batch_doc,
    "check_batch(buf, pos, from_client, deep, now, before_max_ms, after_max_ms, require_keys, crc32c) -> int | None\n\n"
    "The size of the v2 batch at pos when batch_ops.check_batch's reference (validate_batch, then with deep\n"
    "check_records) would accept it; None when the reference must decide (it raises, or the batch is compressed).\n"
    "The CRC is computed by calling crc32c(view).");

/* check_batch on the bytes [buf, buf + len) at pos: the batch's size when the reference would accept it, -1 when the
 * reference must decide (the CRC is computed by calling crc32c on a view of the bytes; an error there declines). */
static long long check_batch_view(const uint8_t *buf, Py_ssize_t len, long long pos, int from_client, int deep,
                                  long long now, long long before, long long after, int require_keys, PyObject *crc32c)
{
    if (pos < 0 || pos > len || len - (Py_ssize_t)pos < 12)
        return -1;
    const uint8_t *h = buf + pos;
    Py_ssize_t available = len - (Py_ssize_t)pos;
    int64_t batch_length = (int32_t)be_field(h + BATCH_LENGTH_AT, 4);
    if (batch_length < MIN_BATCH_LENGTH || batch_length > available - 12 || h[MAGIC_AT] != 2)
        return -1;
    PyObject *mv = PyMemoryView_FromMemory((char *)h + ATTRIBUTES_AT, (Py_ssize_t)batch_length + 12 - ATTRIBUTES_AT,
                                           PyBUF_READ);
    PyObject *crc = mv != NULL ? PyObject_CallOneArg(crc32c, mv) : NULL;
    Py_XDECREF(mv);
    unsigned long long computed = crc != NULL ? PyLong_AsUnsignedLongLong(crc) : 0;
    Py_XDECREF(crc);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    int attributes = (int)(int16_t)be_field(h + ATTRIBUTES_AT, 2);
    int64_t last_offset_delta = (int32_t)be_field(h + LAST_OFFSET_DELTA_AT, 4);
    int64_t count = (int32_t)be_field(h + RECORDS_COUNT_AT, 4);
    int codec = attributes & CODEC_MASK;
    if (computed != be_field(h + CRC_AT, 4) || codec > MAX_CODEC_ID || count < 0 ||
        (codec == 0 && count > (batch_length + 12 - RECORDS_AT) / MIN_RECORD_SIZE) || last_offset_delta < 0)
        return -1;
    if (from_client && ((attributes & CONTROL_BIT) || count == 0 || last_offset_delta + 1 != count))
        return -1;
    if (deep && count > 0) {
        /* check_records: the reference decodes compressed records and judges inconsistent counts */
        if (codec != 0 || last_offset_delta != count - 1)
            return -1;
        checks_t k;
        k.check_ts = !(attributes & TIMESTAMP_TYPE_BIT) && (before < INT64_MAX || after < INT64_MAX);
        k.require_keys = require_keys;
        k.now = now;
        k.before_max = before;
        k.after_max = after;
        batch_args a;
        a.count = count;
        a.base_offset = (long long)(int64_t)be_field(h, 8);
        a.base_timestamp = (long long)(int64_t)be_field(h + BASE_TIMESTAMP_AT, 8);
        const uint8_t *p = h + RECORDS_AT, *end = h + batch_length + 12;
        int ok;
        if (end - p >= NOGIL_THRESHOLD) {
            Py_BEGIN_ALLOW_THREADS
            ok = validate_scan(p, end, &a, &k);
            Py_END_ALLOW_THREADS
        } else {
            ok = validate_scan(p, end, &a, &k);
        }
        if (!ok)
            return -1;
    }
    return batch_length + 12;
}

static PyObject *k_check_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "check_batch takes 9 arguments");
        return NULL;
    }
    long long pos = PyLong_AsLongLong(args[1]);
    long long now = PyLong_AsLongLong(args[4]);
    long long before = PyLong_AsLongLong(args[5]);
    long long after = PyLong_AsLongLong(args[6]);
    int from_client = PyObject_IsTrue(args[2]), deep = PyObject_IsTrue(args[3]);
    int require_keys = PyObject_IsTrue(args[7]);
    if (PyErr_Occurred() || from_client < 0 || deep < 0 || require_keys < 0) {
        PyErr_Clear(); /* a value the reference judges (an int past 64 bits, ...) */
        Py_RETURN_NONE;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    long long size = check_batch_view((const uint8_t *)view.buf, view.len, pos, from_client, deep, now, before, after,
                                      require_keys, args[8]);
    PyBuffer_Release(&view);
    if (size < 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(size);
}

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

/* ---- producer: a whole uncompressed batch in one call (the Sender's per-request encoding) ------------- */

#define BATCH_OVERHEAD 61
#define BATCH_ATTRIBUTES_OFFSET 21
#define BATCH_CRC_OFFSET 17

static inline uint8_t *wr_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
    return p + n;
}

/* encode_batch's records in one pass: each record checked and sized as records_encoded_size does (nonneg), then
   written at once, as records_write writes it, after the BATCH_OVERHEAD header bytes of ``*out``: a bytes object
   made at the first record for about n records of its size, grown when short and cut to the exact size at the end.
   state: (count, base timestamp, max timestamp, offset of max), as records_write's. Returns the records' bytes; -1
   when the reference must encode them, -2 with an exception (either way ``*out`` may hold a bytes object to drop). */
static Py_ssize_t records_encode_into(PyObject *records, PyObject **out, int64_t state[4])
{
    Py_ssize_t n = PyList_GET_SIZE(records), total = 0, cap = 0, hs = 0;
    PyObject *last_ts_obj = NULL, *last_headers = NULL;
    int64_t ts = 0, bts = 0, mts = -1, omax = -1, count = 0;
    for (Py_ssize_t i = 0; i < n; i++, count++) {
        PyObject *rec = PyList_GET_ITEM(records, i);
        const char *kd, *vd;
        Py_ssize_t kn, vn;
        if (record_check(rec, 1, &last_ts_obj, &ts, &last_headers, &hs, &kd, &kn, &vd, &vn) < 0)
            return -1;
        if (count == 0)
            bts = ts;
        int64_t ts_delta;
        if (__builtin_sub_overflow(ts, bts, &ts_delta)) /* the reference encodes the wider Python int */
            return -1;
        Py_ssize_t body = record_body_size(ts_delta, count, kn, vn, hs);
        if (count >= INT32_MAX || body > INT32_MAX)
            return -1;
        Py_ssize_t rs = varint_size(body) + body;
        if (rs > INT32_MAX - BATCH_OVERHEAD - total) /* the batch length is an int32 */
            return -1;
        if (total + rs > cap) {
            /* the first record's size (and a few varint bytes more) for every record; then twice as much each time */
            Py_ssize_t want = cap == 0 ? (rs + 4) * (n < INT32_MAX / (rs + 4) ? n : 1) : 2 * cap;
            if (want < total + rs)
                want = total + rs;
            if (want > INT32_MAX - BATCH_OVERHEAD)
                want = INT32_MAX - BATCH_OVERHEAD;
            if (*out == NULL)
                *out = PyBytes_FromStringAndSize(NULL, BATCH_OVERHEAD + want);
            else if (_PyBytes_Resize(out, BATCH_OVERHEAD + want) < 0)
                *out = NULL; /* (freed by the resize) */
            if (*out == NULL)
                return -2;
            cap = want;
        }
        record_write((uint8_t *)PyBytes_AS_STRING(*out) + BATCH_OVERHEAD + total, body, ts_delta, count, kd, kn, vd, vn,
                     PyTuple_GET_ITEM(rec, 3));
        total += rs;
        if (ts > mts) {
            mts = ts;
            omax = count;
        }
    }
    if (total < cap && _PyBytes_Resize(out, BATCH_OVERHEAD + total) < 0) {
        *out = NULL;
        return -2;
    }
    state[0] = count;
    state[1] = bts;
    state[2] = mts;
    state[3] = omax;
    return total;
}

PyDoc_STRVAR(encode_batch_doc,
    "encode_batch(records, producer_id, producer_epoch, base_sequence, is_transactional, crc32c) -> bytes | None\n\n"
    "producer.batch_encoder.encode_batch for an uncompressed batch compiled: the whole magic v2 batch (base offset 0,\n"
    "CREATE_TIME) of the (timestamp, key, value, headers, ...) tuples, its CRC computed by calling crc32c(view).\n"
    "``records``: a list of them, or a PendingRecords (its bytes as encoded at append, only the header written).\n"
    "None when the reference must encode it (no records, a negative timestamp, any input it does not take).");

/* The batch header of ``out`` (BATCH_OVERHEAD bytes, then ``total`` bytes of ``count`` records, compressed with
 * ``codec`` (its attribute bits, 0: none)) written, its CRC computed by calling crc32c(view): ``out`` on success,
 * NULL with an exception (``out`` released). */
static PyObject *batch_header_finish(PyObject *out, Py_ssize_t total, int64_t count, int64_t bts, int64_t mts,
                                     long long pid, long epoch, long seq, int txn, PyObject *crc32c, int codec)
{
    uint8_t *b = (uint8_t *)PyBytes_AS_STRING(out);
    uint8_t *p = b;
    p = wr_be(p, 0, 8);                                          /* base offset */
    p = wr_be(p, (uint64_t)(BATCH_OVERHEAD + total - 12), 4);   /* batch length */
    p = wr_be(p, (uint64_t)(int64_t)-1, 4);                      /* partition leader epoch: none */
    *p++ = 2;                                                    /* magic */
    p = wr_be(p, 0, 4);                                          /* crc, below */
    p = wr_be(p, (uint64_t)((txn ? 0x10 : 0) | (codec & 0x7)), 2); /* attributes: the codec, CREATE_TIME */
    p = wr_be(p, (uint64_t)(count - 1), 4);                      /* last offset delta */
    p = wr_be(p, (uint64_t)bts, 8);                              /* base timestamp */
    p = wr_be(p, (uint64_t)mts, 8);                              /* max timestamp */
    p = wr_be(p, (uint64_t)pid, 8);
    p = wr_be(p, (uint64_t)(int64_t)epoch, 2);
    p = wr_be(p, (uint64_t)(int64_t)seq, 4);
    wr_be(p, (uint64_t)count, 4);                                /* records count */
    PyObject *view = PyMemoryView_FromMemory((char *)b + BATCH_ATTRIBUTES_OFFSET, BATCH_OVERHEAD + total -
                                             BATCH_ATTRIBUTES_OFFSET, PyBUF_READ);
    if (view == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    PyObject *crc = PyObject_CallOneArg(crc32c, view);
    Py_DECREF(view);
    unsigned long c = crc != NULL ? PyLong_AsUnsignedLong(crc) : 0;
    Py_XDECREF(crc);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    wr_be(b + BATCH_CRC_OFFSET, (uint64_t)c, 4);
    return out;
}

static PyObject *encode_pending_batch(PyObject *pending, long long pid, long epoch, long seq, int txn, PyObject *crc32c);

static PyObject *k_encode_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        Py_RETURN_NONE;
    PyObject *records = args[0];
    long long pid = PyLong_AsLongLong(args[1]);
    long epoch = PyLong_AsLong(args[2]);
    long seq = PyLong_AsLong(args[3]);
    int txn = PyObject_IsTrue(args[4]);
    if (PyErr_Occurred() || txn < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (epoch < INT16_MIN || epoch > INT16_MAX || seq < INT32_MIN || seq > INT32_MAX)
        Py_RETURN_NONE;
    if (!PyList_CheckExact(records))
        return encode_pending_batch(records, pid, epoch, seq, txn, args[5]);
    Py_ssize_t n = PyList_GET_SIZE(records);
    if (n == 0)
        Py_RETURN_NONE;
    int64_t state[4] = {0, -1, -1, -1};
    PyObject *out = NULL;
    Py_ssize_t total = records_encode_into(records, &out, state);
    if (total < 0) {
        Py_XDECREF(out);
        if (total == -2)
            return NULL;
        Py_RETURN_NONE;
    }
    return batch_header_finish(out, total, state[0], state[1], state[2], pid, epoch, seq, txn, args[5], 0);
}

/* ---- producer: appending many records to a batch's pending list (KafkaProducer.send_batch) ------------ */

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
    /* (h/sender6) the first record's timestamp delta (0), key and value sizes (-1: null), and which of the
     * later records' differ from them (bits PCOL_KEY, PCOL_VALUE, PCOL_TS): pending_columns answers a batch of
     * one key size, value size and timestamp without walking its records (pending_note_columns) */
    int64_t col_td, col_kn, col_vn;
    int col_mixed;
} PendingObject;

/* ==== h/sender6: a PendingRecords' columns kept as its records are written ================================== */

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
    } else
        p->col_mixed |= (kn != p->col_kn ? PCOL_KEY : 0) | (vn != p->col_vn ? PCOL_VALUE : 0) |
                        (td != p->col_td ? PCOL_TS : 0);
}

/* ==== end of h/sender6's columns summary ======================================================================= */

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

static PyObject *pending_subscript(PyObject *op, PyObject *key)
{
    PendingObject *p = (PendingObject *)op;
    if (p->items != NULL)
        return PyObject_GetItem(p->items, key);
    if (PyIndex_Check(key)) {
        Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred())
            return NULL;
        return pending_item(op, i < 0 ? i + p->count : i);
    }
    if (!PySlice_Check(key)) {
        PyErr_Format(PyExc_TypeError, "PendingRecords indices must be integers or slices, not %.200s", Py_TYPE(key)->tp_name);
        return NULL;
    }
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0)
        return NULL;
    Py_ssize_t n = PySlice_AdjustIndices(p->count, &start, &stop, step);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0, i = start; j < n; j++, i += step) {
        PyObject *rec = pending_rebuild(p, i);
        if (rec == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, j, rec);
    }
    return out;
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

PyDoc_STRVAR(scan_records_doc,
    "scan_records(keys, values, timestamps) -> int\n\n"
    "producer.batch_append.scan_records_reference compiled: the largest len(key) + len(value) of the records\n"
    "(None counts 0), -1 when a key or value is not bytes or None, -2 when a timestamp is not None or an int in\n"
    "[0, 2**62]. keys and timestamps may be None; the lists have the length of values.");

static PyObject *k_scan_records(PyObject *self, PyObject *args)
{
    PyObject *keys, *values, *timestamps;
    if (!PyArg_ParseTuple(args, "OO!O", &keys, &PyList_Type, &values, &timestamps))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values), best = 0;
    if ((keys != Py_None && (!PyList_Check(keys) || PyList_GET_SIZE(keys) != n)) ||
        (timestamps != Py_None && (!PyList_Check(timestamps) || PyList_GET_SIZE(timestamps) != n))) {
        PyErr_SetString(PyExc_ValueError, "scan_records: keys and timestamps must be None or lists as long as values");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t kn = -1, vn;
        if (keys != Py_None && producer_bytes(PyList_GET_ITEM(keys, i), &kn) < 0)
            return PyLong_FromLong(-1);
        if (producer_bytes(PyList_GET_ITEM(values, i), &vn) < 0)
            return PyLong_FromLong(-1);
        Py_ssize_t total = (kn < 0 ? 0 : kn) + (vn < 0 ? 0 : vn);
        if (total > best)
            best = total;
    }
    if (timestamps != Py_None) {
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t ts;
            if (producer_timestamp(PyList_GET_ITEM(timestamps, i), 0, &ts) < 0)
                return PyLong_FromLong(-2);
        }
    }
    return PyLong_FromSsize_t(best);
}

static int32_t murmur2_of(const uint8_t *d, Py_ssize_t len)
{
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    Py_ssize_t end = len & ~(Py_ssize_t)3;
    for (Py_ssize_t i = 0; i < end; i += 4) {
        uint32_t k = (uint32_t)d[i] | ((uint32_t)d[i + 1] << 8) | ((uint32_t)d[i + 2] << 16) | ((uint32_t)d[i + 3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (len & 3) {
    case 3:
        h ^= (uint32_t)d[end + 2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)d[end + 1] << 8;
        /* fall through */
    case 1:
        h ^= d[end];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

PyDoc_STRVAR(murmur2_doc, "murmur2(data) -> int: partitioner.murmur2 compiled (bytes only; None otherwise).");

static PyObject *k_murmur2(PyObject *self, PyObject *arg)
{
    if (!PyBytes_Check(arg))
        Py_RETURN_NONE;
    return PyLong_FromLong(murmur2_of((const uint8_t *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)));
}

PyDoc_STRVAR(key_partitions_doc,
    "key_partitions(keys, num_partitions) -> list[int] | None\n\n"
    "producer.batch_append.key_partitions_reference compiled: to_positive(murmur2(key)) % num_partitions per key,\n"
    "-1 for a None key; None when a key is not bytes or None.");

static PyObject *k_key_partitions(PyObject *self, PyObject *args)
{
    PyObject *keys;
    Py_ssize_t parts;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &keys, &parts))
        return NULL;
    if (parts < 1) {
        PyErr_SetString(PyExc_ValueError, "key_partitions: num_partitions must be at least 1");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(keys);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        if (k != Py_None && !PyBytes_CheckExact(k))
            Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        long p = k == Py_None ? -1
                              : (long)(((uint32_t)murmur2_of((const uint8_t *)PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k)) &
                                        0x7fffffffu) % (uint32_t)parts);
        PyObject *v = PyLong_FromLong(p);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

/* ==== send_batch append (h/sbcaller): append_pending's argument reading, result and common-case loop =========== */

/* An int argument of append_pending into *out: 0, or -1 with TypeError (OverflowError when it does not fit 64 bits). */
static int sb_int_arg(PyObject *v, const char *what, long long *out)
{
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "append_pending: %s must be an int, not %.100s", what, Py_TYPE(v)->tp_name);
        return -1;
    }
    *out = PyLong_AsLongLong(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* append_pending's 18 positional arguments checked and its numbers read (a vectorcall: no argument tuple, no format
 * string parsed per call). 0, or -1 with an exception. */
static int sb_append_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t *start, Py_ssize_t *stop,
                          long long *ts_default, long long *size0, long long *limit, long long *base_ts0,
                          long long *max_ts0, long long *max_rec0, double *ratio, long long *produced0,
                          long long *switch_bytes, long long *sticky_bytes)
{
    if (nargs != 18) {
        PyErr_Format(PyExc_TypeError, "append_pending expected 18 arguments, got %zd", nargs);
        return -1;
    }
    if (!PyList_Check(args[2])) {
        PyErr_Format(PyExc_TypeError, "append_pending: values must be a list, not %.100s", Py_TYPE(args[2])->tp_name);
        return -1;
    }
    long long a, b;
    if (sb_int_arg(args[3], "start", &a) < 0 || sb_int_arg(args[4], "stop", &b) < 0 ||
        sb_int_arg(args[6], "timestamp", ts_default) < 0 || sb_int_arg(args[9], "size", size0) < 0 ||
        sb_int_arg(args[10], "limit", limit) < 0 || sb_int_arg(args[11], "base_ts", base_ts0) < 0 ||
        sb_int_arg(args[12], "max_ts", max_ts0) < 0 || sb_int_arg(args[13], "max_rec", max_rec0) < 0 ||
        sb_int_arg(args[15], "produced", produced0) < 0 || sb_int_arg(args[16], "switch_bytes", switch_bytes) < 0 ||
        sb_int_arg(args[17], "sticky_bytes", sticky_bytes) < 0)
        return -1;
    if (a < PY_SSIZE_T_MIN || a > PY_SSIZE_T_MAX || b < PY_SSIZE_T_MIN || b > PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_OverflowError, "append_pending: start or stop out of range");
        return -1;
    }
    *start = (Py_ssize_t)a, *stop = (Py_ssize_t)b;
    *ratio = PyFloat_CheckExact(args[14]) ? PyFloat_AS_DOUBLE(args[14]) : PyFloat_AsDouble(args[14]);
    return *ratio == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* (next, size, base_ts, max_ts, max_rec, produced, switch_due): new reference, NULL with an exception. */
static PyObject *sb_append_result(Py_ssize_t i, int64_t size, int64_t base_ts, int64_t max_ts, int64_t max_rec,
                                  int64_t produced, int due)
{
    PyObject *t = PyTuple_New(7);
    if (t == NULL)
        return NULL;
    PyObject *v[6] = {PyLong_FromSsize_t(i), PyLong_FromLongLong(size), PyLong_FromLongLong(base_ts),
                      PyLong_FromLongLong(max_ts), PyLong_FromLongLong(max_rec), PyLong_FromLongLong(produced)};
    for (int k = 0; k < 6; k++) {
        if (v[k] == NULL) {
            for (int j = k; j < 6; j++)
                Py_XDECREF(v[j]);
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, v[k]);
    }
    PyTuple_SET_ITEM(t, 6, Py_NewRef(due ? Py_True : Py_False));
    return t;
}

/* bytes of a varint by the index of its value's highest set bit */
static const uint8_t sb_varint_bytes[64] = {
    1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10,
};

/* varint_size without its loop, of an unsigned (zigzagged) value */
static inline Py_ssize_t sb_uvarint_size(uint64_t u)
{
    return sb_varint_bytes[63 - __builtin_clzll(u | 1)];
}

/* varint_size without its loop */
static inline Py_ssize_t sb_varint_size(int64_t v)
{
    return sb_uvarint_size(zigzag(v));
}

/* wr_varint of an already zigzagged value, its one- and two-byte cases (nearly every size, count and delta of a
 * record) without the loop */
static inline __attribute__((always_inline)) uint8_t *sb_put_uvarint(uint8_t *q, uint64_t u)
{
    if (u < 0x80) {
        *q = (uint8_t)u;
        return q + 1;
    }
    if (u < 0x4000) {
        q[0] = (uint8_t)(u | 0x80);
        q[1] = (uint8_t)(u >> 7);
        return q + 2;
    }
    while (u >= 0x80) {
        *q++ = (uint8_t)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    *q++ = (uint8_t)u;
    return q;
}

/* A nullable bytes field (length varint, then the bytes; -1 for null) at q; returns the end. */
static inline __attribute__((always_inline)) uint8_t *sb_put_bytes(uint8_t *q, PyObject *o, Py_ssize_t n)
{
    if (n < 0) {
        *q++ = 1; /* zigzag(-1) */
        return q;
    }
    q = sb_put_uvarint(q, (uint64_t)n << 1);
    memcpy(q, PyBytes_AS_STRING(o), (size_t)n);
    return q + n;
}

/* A record's size in a batch's records section, its length varint included (record_body_size and varint_size
 * without their loops); *body: the size after that varint. td: its timestamp delta, count its offset delta (>= 0),
 * kn and vn its key's and value's sizes (-1: null), hs its headers' (headers_size). */
static inline __attribute__((always_inline)) int64_t sb_record_size(int64_t td, int64_t count, Py_ssize_t kn,
                                                                    Py_ssize_t vn, Py_ssize_t hs, int64_t *body)
{
    /* (non-negative sizes and count: their zigzag is twice the value) */
    int64_t b = 1 + sb_varint_size(td) + sb_uvarint_size((uint64_t)count << 1) +
                (kn < 0 ? 1 : sb_uvarint_size((uint64_t)kn << 1) + kn) +
                (vn < 0 ? 1 : sb_uvarint_size((uint64_t)vn << 1) + vn) + hs;
    *body = b;
    return sb_uvarint_size((uint64_t)b << 1) + b;
}

/* pending_write's common case: the record sized by sb_record_size (rs, body, its timestamp delta td: 0 for p's
 * first record) appended to a PendingRecords in buffer mode that keeps no callbacks, its buffer grown (and the
 * record and byte limits checked) only when the record does not fit the room already there. 0; 1 when p cannot
 * take it (too many records or bytes: nothing changed); -1 with an exception (nothing changed). The last record's
 * timestamp (last_ts, last_ts_obj) is the caller's to set. */
static inline __attribute__((always_inline)) int sb_pending_put(PendingObject *p, int64_t rs, int64_t body,
                                                                int64_t ts, int64_t td, PyObject *k, Py_ssize_t kn,
                                                                PyObject *v, Py_ssize_t vn, PyObject *headers,
                                                                Py_ssize_t hs, int note)
{
    if (p->len + rs > p->cap || Py_REFCNT(p->data) > 1) {
        /* (within the room already there, neither limit can be reached: cap <= PENDING_MAX_BYTES, and every
         * record takes at least 7 bytes of it) */
        if (p->count >= INT32_MAX - 1 || rs > PENDING_MAX_BYTES - p->len)
            return 1;
        if (pending_reserve(p, rs) < 0)
            return -1;
    }
    if (p->count == 0) {
        p->base_ts = ts;
        p->max_ts = ts;
    }
    uint8_t *q = p->buf + p->len;
    q = sb_put_uvarint(q, (uint64_t)body << 1);
    *q++ = 0;
    q = sb_put_uvarint(q, zigzag(td));
    q = sb_put_uvarint(q, (uint64_t)p->count << 1);
    q = sb_put_bytes(q, k, kn);
    q = sb_put_bytes(q, v, vn);
    if (hs == 1)
        *q = 0; /* no headers */
    else
        wr_headers(q, headers);
    if (note || p->count == 0) /* (a batch's first record, whoever writes it: send_batch opens its batches so) */
        pending_note_columns(p, td, kn, vn);
    else
        p->col_mixed |= PCOL_UNKNOWN; /* (send()'s one record a call: pending_columns walks the records) */
    p->len += rs;
    p->count++;
    if (ts > p->max_ts)
        p->max_ts = ts;
    return 0;
}

/* A record of rs bytes and timestamp ts appended: the batch's size, largest timestamp and record, and the sticky
 * partitioner's produced bytes (estimated, when switch_bytes > 0) updated. 1 when a partition switch is now due
 * (Java's rules: switch_bytes produced, or sticky_bytes and the batch full), else 0. */
static inline __attribute__((always_inline)) int sb_account(int64_t rs, int64_t ts, int64_t *size, int64_t *max_ts,
                                                            int64_t *max_rec, int64_t *produced, double ratio,
                                                            int64_t limit, int64_t switch_bytes, int64_t sticky_bytes)
{
    int64_t before = *size;
    *size += rs;
    if (ts > *max_ts)
        *max_ts = ts;
    if (rs > *max_rec)
        *max_rec = rs;
    if (switch_bytes <= 0)
        return 0;
    *produced += ratio == 1.0 ? rs : estimated_size(*size, ratio) - estimated_size(before, ratio);
    return *produced >= switch_bytes || (*size >= limit && *produced >= sticky_bytes);
}

typedef struct {
    int64_t size, limit, base_ts, max_ts, max_rec, produced, switch_bytes, sticky_bytes;
    double ratio;
    int due;
} sb_run;

/* append_pending's loop for a PendingRecords in buffer mode when no delivery callback is in play (the batch has none
 * and the call brings none): from record *i on, each record's size (as record_size_in_bytes) and bytes (as
 * pending_write) without per-record calls, the state kept in locals and stored once (the last timestamp object
 * included). Returns 0 having stopped where append_pending stops (the end, a record the batch has no room for, a
 * sticky switch due: r->due), 1 at a record it leaves to the general loop (not bytes or None, a timestamp it does
 * not take, over what a batch can hold), -1 with an exception; *i is the next record either way, r the state. */
static inline __attribute__((always_inline)) int sb_append_loop(PendingObject *p, PyObject *const *keys,
                                                                 PyObject *const *values, PyObject *const *tss,
                                                                 Py_ssize_t *i_io, Py_ssize_t stop, int64_t ts_default,
                                                                 PyObject *ts_default_obj, PyObject *headers,
                                                                 Py_ssize_t hs, sb_run *r)
{
    if (ts_default < 0 || ts_default > ((int64_t)1 << 62))
        return 1;
    int64_t size = r->size, base_ts = r->base_ts, max_ts = r->max_ts, max_rec = r->max_rec, produced = r->produced;
    const int64_t limit = r->limit, switch_bytes = r->switch_bytes, sticky_bytes = r->sticky_bytes;
    const double ratio = r->ratio;
    Py_ssize_t i = *i_io, count = p->count;
    PyObject *last_obj = NULL;
    int64_t last_ts = 0;
    int rc = 0;
    for (; i < stop; i++) {
        PyObject *v = values[i], *k = keys == NULL ? Py_None : keys[i];
        Py_ssize_t vn, kn;
        if (producer_bytes(v, &vn) < 0 || producer_bytes(k, &kn) < 0) {
            rc = 1;
            break;
        }
        int64_t ts = ts_default;
        PyObject *ts_obj = ts_default_obj;
        if (tss != NULL && tss[i] != Py_None) {
            ts_obj = tss[i];
            if (producer_timestamp(ts_obj, 0, &ts) < 0) {
                rc = 1;
                break;
            }
        }
        if (count == 0)
            base_ts = ts;
        int64_t td = ts - base_ts, body, rs = sb_record_size(td, count, kn, vn, hs, &body);
        if (count > 0 && size + rs > limit)
            break;
        if ((rc = sb_pending_put(p, rs, body, ts, td, k, kn, v, vn, headers, hs, 1)) != 0)
            break;
        count = p->count;
        last_obj = ts_obj;
        last_ts = ts;
        if (sb_account(rs, ts, &size, &max_ts, &max_rec, &produced, ratio, limit, switch_bytes, sticky_bytes)) {
            r->due = 1;
            i++;
            break;
        }
    }
    if (last_obj != NULL) {
        p->last_ts = last_ts;
        Py_INCREF(last_obj);
        Py_XSETREF(p->last_ts_obj, last_obj);
    }
    r->size = size, r->base_ts = base_ts, r->max_ts = max_ts, r->max_rec = max_rec, r->produced = produced;
    *i_io = i;
    return rc;
}

/* sb_append_loop compiled apart for the common shapes (no keys, no timestamps, no headers: their tests folded) */
static int sb_append_run(PendingObject *p, PyObject *const *keys, PyObject *const *values, PyObject *const *tss,
                         Py_ssize_t *i_io, Py_ssize_t stop, int64_t ts_default, PyObject *ts_default_obj,
                         PyObject *headers, Py_ssize_t hs, sb_run *r)
{
    if (tss == NULL && hs == 1) {
        if (keys == NULL)
            return sb_append_loop(p, NULL, values, NULL, i_io, stop, ts_default, ts_default_obj, headers, 1, r);
        return sb_append_loop(p, keys, values, NULL, i_io, stop, ts_default, ts_default_obj, headers, 1, r);
    }
    return sb_append_loop(p, keys, values, tss, i_io, stop, ts_default, ts_default_obj, headers, hs, r);
}

/* ==== end of h/sbcaller's send_batch append region ============================================================== */

PyDoc_STRVAR(append_pending_doc,
    "append_pending(pending, keys, values, start, stop, timestamps, timestamp, headers, callback, size, limit,\n"
    "               base_ts, max_ts, max_rec, ratio, produced, switch_bytes, sticky_bytes)\n"
    "    -> (next, size, base_ts, max_ts, max_rec, produced, switch_due) | None\n\n"
    "producer.batch_append.append_pending_reference compiled: appends (timestamp, key, value, headers, callback)\n"
    "for records start.. of the lists onto a batch's pending list while they fit (the first record of an empty\n"
    "batch always does), accounting sticky-partitioner bytes when switch_bytes > 0 and stopping after the\n"
    "record that makes a switch due. None, with nothing appended, on input the reference must handle.");

static PyObject *k_append_pending(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *pending, *keys, *values, *timestamps, *headers, *callback;
    Py_ssize_t start, stop;
    long long ts_default, size0, limit, base_ts0, max_ts0, max_rec0, produced0, switch_bytes, sticky_bytes;
    double ratio;
    if (sb_append_args(args, nargs, &start, &stop, &ts_default, &size0, &limit, &base_ts0, &max_ts0, &max_rec0, &ratio,
                       &produced0, &switch_bytes, &sticky_bytes) < 0)
        return NULL;
    pending = args[0], keys = args[1], values = args[2], timestamps = args[5], headers = args[7], callback = args[8];
    /* a PendingRecords takes the records' bytes; in list mode, its list takes their tuples */
    PendingObject *buffered = NULL;
    if (is_pending(pending)) {
        if (((PendingObject *)pending)->items != NULL)
            pending = ((PendingObject *)pending)->items;
        else
            buffered = (PendingObject *)pending;
    } else if (!PyList_Check(pending)) {
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (start < 0 || stop > n || start > stop || (keys != Py_None && (!PyList_Check(keys) || PyList_GET_SIZE(keys) != n)) ||
        (timestamps != Py_None && (!PyList_Check(timestamps) || PyList_GET_SIZE(timestamps) != n)))
        Py_RETURN_NONE;
    Py_ssize_t hs = headers_size(headers);
    if (hs < 0)
        Py_RETURN_NONE;
    int64_t size = size0, base_ts = base_ts0, max_ts = max_ts0, max_rec = max_rec0, produced = produced0;
    int switch_due = 0;
    /* one int object shared by every record without a timestamp of its own */
    PyObject *ts_default_obj = PyLong_FromLongLong(ts_default);
    if (ts_default_obj == NULL)
        return NULL;
    /* The record tuples hold ints, bytes, None, the headers and the callback: with untracked headers and no
     * callback they can never be part of a cycle, and a batch's thousands of them are not left to the garbage
     * collector to visit (and untrack) one by one. */
    int untrack = callback == Py_None && !PyObject_GC_IsTracked(headers);
    Py_ssize_t i = start;
    if (buffered != NULL && callback == Py_None && buffered->callbacks == NULL) {
        /* the common case in a tight loop; it leaves a record it does not take to the loop below */
        sb_run r = {size, limit, base_ts, max_ts, max_rec, produced, switch_bytes, sticky_bytes, ratio, 0};
        int rc = sb_append_run(buffered, keys == Py_None ? NULL : PySequence_Fast_ITEMS(keys), PySequence_Fast_ITEMS(values),
                               timestamps == Py_None ? NULL : PySequence_Fast_ITEMS(timestamps), &i, stop, ts_default,
                               ts_default_obj, headers, hs, &r);
        if (rc < 0)
            goto error;
        size = r.size, base_ts = r.base_ts, max_ts = r.max_ts, max_rec = r.max_rec, produced = r.produced;
        switch_due = r.due;
        if (rc == 0)
            stop = i; /* done: stopped at the end, a full batch or a switch due */
    }
    for (; i < stop; i++) {
        PyObject *key = keys == Py_None ? Py_None : PyList_GET_ITEM(keys, i);
        PyObject *value = PyList_GET_ITEM(values, i);
        Py_ssize_t kn, vn;
        int64_t ts;
        if (producer_bytes(key, &kn) < 0 || producer_bytes(value, &vn) < 0 ||
            (timestamps != Py_None && producer_timestamp(PyList_GET_ITEM(timestamps, i), ts_default, &ts) < 0)) {
            if (i == start) {
                Py_DECREF(ts_default_obj);
                Py_RETURN_NONE;
            }
            break; /* what was appended stays; the caller goes on from i */
        }
        if (timestamps == Py_None)
            ts = ts_default;
        Py_ssize_t count = buffered != NULL ? buffered->count : PyList_GET_SIZE(pending);
        if (count == 0)
            base_ts = ts;
        int64_t body = 1 + varint_size(ts - base_ts) + varint_size(count) + nullable_size(kn) + nullable_size(vn) + hs;
        int64_t rs = varint_size(body) + body;
        if (count > 0 && size + rs > limit)
            break;
        PyObject *ts_obj = timestamps == Py_None ? Py_None : PyList_GET_ITEM(timestamps, i);
        if (ts_obj == Py_None)
            ts_obj = ts_default_obj;
        if (buffered != NULL) {
            if (pending_record_size(buffered, ts, kn, vn, hs) != rs) { /* over what a batch can hold: the reference */
                if (i == start) {
                    Py_DECREF(ts_default_obj);
                    Py_RETURN_NONE;
                }
                break;
            }
            if (pending_write(buffered, rs, ts, ts_obj, kn < 0 ? NULL : PyBytes_AS_STRING(key), kn,
                              vn < 0 ? NULL : PyBytes_AS_STRING(value), vn, headers, hs, callback) < 0)
                goto error;
        } else {
            PyObject *rec = PyTuple_Pack(5, ts_obj, key, value, headers, callback);
            if (rec == NULL)
                goto error;
            if (untrack)
                PyObject_GC_UnTrack(rec); /* only atoms inside: what the collector does at its first pass, done now */
            int rc = PyList_Append(pending, rec);
            Py_DECREF(rec);
            if (rc < 0)
                goto error;
        }
        if (sb_account(rs, ts, &size, &max_ts, &max_rec, &produced, ratio, limit, switch_bytes, sticky_bytes)) {
            switch_due = 1;
            i++;
            break;
        }
    }
    Py_DECREF(ts_default_obj);
    return sb_append_result(i, size, base_ts, max_ts, max_rec, produced, switch_due);
error:
    Py_DECREF(ts_default_obj);
    return NULL;
}

/* ---- producer: one record into a batch (ProducerBatch.try_append) ------------------------------------- */

static PyTypeObject *future_type = NULL; /* FutureRecordMetadata, set by producer_setup() */
enum { A_CLOSED, A_PENDING, A_BASE_TS, A_SIZE, A_LIMIT, A_MAX_TS, A_MAX_REC, A_OUTCOME, A_LAST_APPEND, A_HAS_CB,
       A_F_OUTCOME, A_F_INDEX, A_COUNT };
static const char *const attr_names[A_COUNT] = {
    "closed", "pending", "base_timestamp", "size_bytes", "size_limit", "max_timestamp", "max_record_size", "outcome",
    "last_append_ms", "has_callbacks", "outcome", "index",
};
static PyObject *attr[A_COUNT];

PyDoc_STRVAR(producer_setup_doc, "producer_setup(FutureRecordMetadata): the type batch_try_append makes futures of.");

static PyObject *k_producer_setup(PyObject *self, PyObject *arg)
{
    if (!PyType_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "producer_setup expects the FutureRecordMetadata type");
        return NULL;
    }
    for (int i = 0; i < A_COUNT; i++) {
        if (attr[i] == NULL && (attr[i] = PyUnicode_InternFromString(attr_names[i])) == NULL)
            return NULL;
    }
    Py_INCREF(arg);
    Py_XSETREF(future_type, (PyTypeObject *)arg);
    Py_RETURN_NONE;
}

/* Attribute access by a fixed offset. The producer's hot objects (ProducerBatch, FutureRecordMetadata, the
 * accumulator's queues and topic entries, the sticky partition info) keep their state in __slots__; reading or
 * writing one by name costs a type lookup and a descriptor call (~40 ns), by offset a load. Each call site has
 * a cache: the type it last saw, that type's version tag (changed by any change to the class) and the slot's
 * offset. Anything else (an attribute that is not a writable object slot of a plain class: a property, a
 * subclass overriding it, a class with its own __getattribute__/__setattr__, an unset slot) goes by name, as
 * Python would. */
typedef struct {
    PyTypeObject *type; /* borrowed: compared, never dereferenced unless it is the object's type */
    unsigned int tag;
    Py_ssize_t offset;
} slot_cache;

static slot_cache acache[A_COUNT]; /* per attr[] name: its call sites read one kind of object */

static Py_ssize_t slot_offset_lookup(PyObject *obj, PyObject *name, slot_cache *c);

/* Whether a version tag remembered of type t (only ever a valid one, never 0: type_tag_valid) is still t's: any
 * change to the class sets its tag to 0, invalid, until a new one (never one given before) is assigned. */
static inline __attribute__((always_inline)) int type_tag_current(PyTypeObject *t, unsigned int tag)
{
    return tag == t->tp_version_tag;
}

/* Whether t's version tag may be remembered: valid (not 0) */
static inline int type_tag_valid(PyTypeObject *t)
{
    return (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && t->tp_version_tag != 0;
}

/* The offset of obj's object slot `name`, or -1: go by name (also remembered per type and version). Inline: a
 * send reads some thirty slots, nearly always of the type the call site saw last. */
static inline __attribute__((always_inline)) Py_ssize_t slot_offset(PyObject *obj, PyObject *name, slot_cache *c)
{
    PyTypeObject *t = Py_TYPE(obj);
    if (c->type == t && type_tag_current(t, c->tag))
        return c->offset;
    return slot_offset_lookup(obj, name, c);
}

/* The class attribute `name` of t found along its MRO with the public API (borrowed), or NULL: not found, or not
 * knowable here (a base without a dict; an error, cleared: reading by name raises it again). */
static PyObject *mro_lookup(PyTypeObject *t, PyObject *name)
{
    PyObject *mro = t->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *dict = ((PyTypeObject *)PyTuple_GET_ITEM(mro, i))->tp_dict;
        if (dict == NULL)
            return NULL;
        PyObject *d = PyDict_GetItemWithError(dict, name);
        if (d != NULL)
            return d;
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return NULL;
        }
    }
    return NULL;
}

static Py_ssize_t slot_offset_lookup(PyObject *obj, PyObject *name, slot_cache *c)
{
    PyTypeObject *t = Py_TYPE(obj);
    c->type = NULL;
    Py_ssize_t offset = -1;
    if (!type_tag_valid(t)) {
        /* the class's attribute read once by name: CPython gives the type a version tag when it can */
        PyObject *probe = PyObject_GetAttr((PyObject *)t, name);
        if (probe == NULL)
            PyErr_Clear();
        Py_XDECREF(probe);
    }
    PyObject *d = mro_lookup(t, name);
    if (t->tp_getattro == PyObject_GenericGetAttr && t->tp_setattro == PyObject_GenericSetAttr && d != NULL &&
        Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
        !(((PyMemberDescrObject *)d)->d_member->flags & READONLY))
        offset = ((PyMemberDescrObject *)d)->d_member->offset;
    if (type_tag_valid(t)) {
        c->type = t;
        c->tag = t->tp_version_tag;
        c->offset = offset;
    }
    return offset;
}

/* obj.name (new reference, NULL with an exception), by offset when the cache allows. Always inline: a send
 * makes some twenty of these reads, each a few loads once inlined and a call's frame and spills otherwise. */
static inline __attribute__((always_inline)) PyObject *cached_get(PyObject *obj, PyObject *name, slot_cache *c)
{
    Py_ssize_t off = slot_offset(obj, name, c);
    if (off >= 0) {
        PyObject *v = *(PyObject **)((char *)obj + off);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(obj, name);
}

/* obj.name = v (0, or -1 with an exception), by offset when the cache allows. */
static inline __attribute__((always_inline)) int cached_set(PyObject *obj, PyObject *name, slot_cache *c, PyObject *v)
{
    Py_ssize_t off = slot_offset(obj, name, c);
    if (off < 0)
        return PyObject_SetAttr(obj, name, v);
    PyObject **p = (PyObject **)((char *)obj + off);
    PyObject *old = *p;
    *p = Py_NewRef(v);
    Py_XDECREF(old);
    return 0;
}

/* v (borrowed) into *out when it is a plain int of at most two internal digits (|v| < 2**60: sizes, offsets,
 * millisecond timestamps), read without a call: 1; 0 for anything else (PyLong_AsLongLongAndOverflow decides). */
static inline __attribute__((always_inline)) int compact_int(PyObject *v, int64_t *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)v)) {
        *out = (int64_t)PyUnstable_Long_CompactValue((PyLongObject *)v);
        return 1;
    }
    return 0;
#else
    /* tests in the order of the values read per send (sizes and counts: one digit; ms timestamps: two), not a
     * switch's jump through a table */
    const digit *d = ((PyLongObject *)v)->ob_digit;
    Py_ssize_t n = Py_SIZE(v);
    if (n == 1) {
        *out = (int64_t)d[0];
        return 1;
    }
    if (n == 2) {
        *out = ((int64_t)d[1] << PyLong_SHIFT) | (int64_t)d[0];
        return 1;
    }
    switch (n) {
    case 0: *out = 0; return 1;
    case -1: *out = -(int64_t)d[0]; return 1;
    case -2: *out = -(((int64_t)d[1] << PyLong_SHIFT) | (int64_t)d[0]); return 1;
    default: return 0;
    }
#endif
}

/* A value that must be a plain int fitting 64 bits into *out: 0, 1 (not such an int) or -1 (exception).
 * Steals v (NULL: the exception of the read that made it). */
static int take_int(PyObject *v, int64_t *out)
{
    if (v == NULL)
        return -1;
    if (compact_int(v, out)) {
        Py_DECREF(v);
        return 0;
    }
    int overflow = 0;
    long long x = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
    int bad = !PyLong_CheckExact(v) || overflow;
    Py_DECREF(v);
    if (bad)
        return 1;
    if (x == -1 && PyErr_Occurred())
        return -1;
    *out = x;
    return 0;
}

/* bool(v): 1, 0 or -1 (exception). Steals v (NULL: the exception of the call that made it). */
static int take_truth(PyObject *v)
{
    if (v == NULL)
        return -1;
    int truth = PyObject_IsTrue(v);
    Py_DECREF(v);
    return truth;
}

static int get_int_attr_slow(PyObject *obj, PyObject *name, slot_cache *c, int64_t *out)
{
    return take_int(cached_get(obj, name, c), out);
}

/* An attribute that must be a plain int fitting 64 bits into *out: 0, 1 (not such an int) or -1 (exception).
 * Inline, as cached_get: the common case (a slot holding a small int) is a few loads. */
static inline __attribute__((always_inline)) int get_int_attr(PyObject *obj, PyObject *name, slot_cache *c, int64_t *out)
{
    Py_ssize_t off = slot_offset(obj, name, c);
    if (off >= 0) {
        PyObject *v = *(PyObject **)((char *)obj + off);
        if (v != NULL && compact_int(v, out))
            return 0;
    }
    return get_int_attr_slow(obj, name, c, out);
}

/* get_int_attr of one of the batch's attributes (inline: five per append) */
static inline __attribute__((always_inline)) int get_int(PyObject *obj, int a, int64_t *out)
{
    return get_int_attr(obj, attr[a], &acache[a], out);
}

/* The ints of the byte counters the send path moves on every record (a batch's size_bytes, the sticky partition's
 * produced_bytes) and of its futures' record indexes: made once per value below COUNTER_INTS and kept, as CPython
 * keeps its small ints (32 B an int, at most 1 MiB, and this table's 256 KiB of pointers, touched as used), so a
 * record costs no int allocation and no int deallocation (the replaced value stays here). New reference, NULL with
 * an exception. */
enum { COUNTER_INTS = 1 << 15 };
static PyObject *counter_ints[COUNTER_INTS];

static inline __attribute__((always_inline)) PyObject *counter_int(int64_t x)
{
    if (x < 0 || x >= COUNTER_INTS)
        return PyLong_FromLongLong(x);
    PyObject *v = counter_ints[x];
    if (v == NULL && (v = counter_ints[x] = PyLong_FromLongLong(x)) == NULL)
        return NULL;
    return Py_NewRef(v);
}

/* obj.name = x for a counter slot the send path moves on every record (a batch's size_bytes, the sticky partition's
 * produced_bytes), through its slot cache: 0, or -1 with an exception. */
static inline __attribute__((always_inline)) int set_counter(PyObject *obj, PyObject *name, slot_cache *c, int64_t x)
{
    PyObject *v = counter_int(x);
    if (v == NULL)
        return -1;
    int rc = cached_set(obj, name, c, v);
    Py_DECREF(v);
    return rc;
}

static inline __attribute__((always_inline)) int set_int(PyObject *obj, int a, int64_t x)
{
    return set_counter(obj, attr[a], &acache[a], x);
}

/* The attributes an append reads and writes on its batch (attr[] before A_F_OUTCOME), resolved together: when the
 * batch's type is the one all of them were found object slots of, unchanged since (its version tag), the append
 * reads and writes them at these offsets after one type check, not one per attribute (slot_offset's). */
static struct {
    PyTypeObject *type; /* borrowed: compared, never dereferenced unless it is the batch's type */
    unsigned int tag;
    Py_ssize_t off[A_F_OUTCOME];
} batch_layout;

static int batch_layout_lookup(PyObject *batch)
{
    PyTypeObject *t = Py_TYPE(batch);
    Py_ssize_t off[A_F_OUTCOME];
    batch_layout.type = NULL;
    for (int a = 0; a < A_F_OUTCOME; a++) {
        if ((off[a] = slot_offset(batch, attr[a], &acache[a])) < 0)
            return 0;
    }
    if (!type_tag_valid(t))
        return 0;
    memcpy(batch_layout.off, off, sizeof off);
    batch_layout.tag = t->tp_version_tag;
    batch_layout.type = t;
    return 1;
}

/* 1 when the batch's attributes are at batch_layout's offsets (BATCH_SLOT), else 0: go through the slot caches */
static inline __attribute__((always_inline)) int batch_layout_of(PyObject *batch)
{
    PyTypeObject *t = Py_TYPE(batch);
    if (batch_layout.type == t && type_tag_current(t, batch_layout.tag))
        return 1;
    return batch_layout_lookup(batch);
}

#define BATCH_SLOT(batch, a) (*(PyObject **)((char *)(batch) + batch_layout.off[a]))

/* batch.attr[a] (new reference, NULL with an exception); ``fast``: batch_layout_of(batch) */
static inline __attribute__((always_inline)) PyObject *batch_get(PyObject *batch, int fast, int a)
{
    PyObject *v = fast ? BATCH_SLOT(batch, a) : NULL;
    return v != NULL ? Py_NewRef(v) : cached_get(batch, attr[a], &acache[a]);
}

/* get_int of batch.attr[a]; ``fast``: batch_layout_of(batch) */
static inline __attribute__((always_inline)) int batch_get_int(PyObject *batch, int fast, int a, int64_t *out)
{
    PyObject *v = fast ? BATCH_SLOT(batch, a) : NULL;
    if (v != NULL && compact_int(v, out))
        return 0;
    return get_int(batch, a, out);
}

/* batch.attr[a] = v (a reference it takes over) at batch_layout's offset (batch_layout_of(batch) holds), its old
 * value into *old (the caller releases it once every write is done: no deallocation between the writes) */
static inline __attribute__((always_inline)) void batch_put(PyObject *batch, int a, PyObject *v, PyObject **old)
{
    *old = BATCH_SLOT(batch, a);
    BATCH_SLOT(batch, a) = v;
}

PyDoc_STRVAR(batch_try_append_doc,
    "batch_try_append(batch, timestamp, key, value, headers, callback, now_ms) -> future | None | NotImplemented\n\n"
    "ProducerBatch.try_append compiled: appends the record and returns its FutureRecordMetadata, None when the batch\n"
    "is closed or has no room, NotImplemented (nothing changed) on input the Python method must handle.");

/* headers_size with its common cases (None, no headers: the one byte of a zero count) inline */
static inline __attribute__((always_inline)) Py_ssize_t send_headers_size(PyObject *headers)
{
    if (headers == Py_None || (PyTuple_CheckExact(headers) && PyTuple_GET_SIZE(headers) == 0))
        return 1;
    return headers_size(headers);
}

/* ProducerBatch.try_append: the future, None (closed or no room), NotImplemented (nothing changed: input the
 * Python method must handle) or NULL with an exception. On a future, *size_before and *size_after are the
 * batch's size_bytes around the append and *limit its size_limit. */
static PyObject *batch_append_one(PyObject *batch, PyObject *ts_obj, PyObject *key, PyObject *value, PyObject *headers,
                                  PyObject *callback, PyObject *now_obj, int64_t *size_before, int64_t *size_after,
                                  int64_t *limit_out)
{
    Py_ssize_t kn, vn, hs;
    int overflow = 0;
    if (future_type == NULL || !PyLong_CheckExact(ts_obj) || producer_bytes(key, &kn) < 0 ||
        producer_bytes(value, &vn) < 0 || !PyLong_CheckExact(now_obj) || (hs = send_headers_size(headers)) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    int64_t ts;
    if (!compact_int(ts_obj, &ts))
        ts = PyLong_AsLongLongAndOverflow(ts_obj, &overflow);
    if (overflow || ts < 0 || ts > ((int64_t)1 << 62)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    int fast = batch_layout_of(batch);
    PyObject *closed = fast ? BATCH_SLOT(batch, A_CLOSED) : NULL;
    int is_closed = closed == Py_False ? 0 : closed == Py_True ? 1 : take_truth(batch_get(batch, fast, A_CLOSED));
    if (is_closed < 0)
        return NULL;
    if (is_closed)
        Py_RETURN_NONE;
    int64_t base_ts = 0, size, limit, max_ts, max_rec;
    int rc;
    if ((rc = batch_get_int(batch, fast, A_SIZE, &size)) != 0 || (rc = batch_get_int(batch, fast, A_LIMIT, &limit)) != 0 ||
        (rc = batch_get_int(batch, fast, A_MAX_TS, &max_ts)) != 0 ||
        (rc = batch_get_int(batch, fast, A_MAX_REC, &max_rec)) != 0) {
        if (rc < 0)
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *pending = batch_get(batch, fast, A_PENDING);
    if (pending == NULL)
        return NULL;
    PyObject *result = NULL, *future = NULL, *outcome = NULL, *index = NULL;
    /* a PendingRecords (its records as bytes), else a list of record tuples (a PendingRecords in list mode: its
     * list) */
    PendingObject *buffered = NULL;
    if (is_pending(pending)) {
        PyObject *items = ((PendingObject *)pending)->items;
        if (items == NULL)
            buffered = (PendingObject *)pending;
        else
            Py_SETREF(pending, Py_NewRef(items));
    }
    if (buffered == NULL && !PyList_CheckExact(pending)) {
        result = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    Py_ssize_t count = buffered != NULL ? buffered->count : PyList_GET_SIZE(pending);
    if (count > 0) {
        if ((rc = batch_get_int(batch, fast, A_BASE_TS, &base_ts)) != 0) {
            result = rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
            goto done;
        }
    } else {
        base_ts = ts;
    }
    int64_t td = ts - base_ts, body, rs = sb_record_size(td, count, kn, vn, hs, &body);
    if (count > 0 && size + rs > limit) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* the common case: no callback in play, the batch's base timestamp its records' (the limits of what a batch
     * can hold checked by sb_pending_put, only when its buffer must grow) */
    int quick = buffered != NULL && callback == Py_None && buffered->callbacks == NULL &&
                (count == 0 || buffered->base_ts == base_ts);
    if (buffered != NULL && !quick && pending_record_size(buffered, ts, kn, vn, hs) != rs) { /* over what a batch can hold */
        result = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    /* everything that can fail comes before the first change to the batch */
    outcome = batch_get(batch, fast, A_OUTCOME);
    if (outcome == NULL || (index = counter_int(count)) == NULL)
        goto done;
    future = future_type->tp_alloc(future_type, 0);
    if (future == NULL || cached_set(future, attr[A_F_OUTCOME], &acache[A_F_OUTCOME], outcome) < 0 ||
        cached_set(future, attr[A_F_INDEX], &acache[A_F_INDEX], index) < 0)
        goto done;
    if (quick) {
        /* (nothing changed unless it returns 0: the record is written last) */
        int put = sb_pending_put(buffered, rs, body, ts, td, key, kn, value, vn, headers, hs, 0);
        if (put != 0) {
            if (put > 0) /* over what a batch can hold */
                result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        buffered->last_ts = ts;
        if (buffered->last_ts_obj != ts_obj) {
            Py_INCREF(ts_obj);
            Py_XSETREF(buffered->last_ts_obj, ts_obj);
        }
        goto appended;
    }
    if (buffered != NULL) {
        /* (a failure here changes nothing: the record is written last) */
        if (pending_write(buffered, rs, ts, ts_obj, kn < 0 ? NULL : PyBytes_AS_STRING(key), kn,
                          vn < 0 ? NULL : PyBytes_AS_STRING(value), vn, headers, hs, callback) < 0)
            goto done;
        goto appended;
    }
    /* Records appended in the same millisecond share one timestamp object (the previous record's): a pending
     * record then costs its tuple only, not a 32-byte int of its own too, while its batch waits. */
    PyObject *ts_shared = ts_obj;
    if (count > 0) {
        PyObject *prev = PyList_GET_ITEM(pending, count - 1);
        if (PyTuple_CheckExact(prev) && PyTuple_GET_SIZE(prev) > 0) {
            PyObject *prev_ts = PyTuple_GET_ITEM(prev, 0);
            int prev_overflow = 0;
            if (prev_ts != ts_obj && PyLong_CheckExact(prev_ts) &&
                PyLong_AsLongLongAndOverflow(prev_ts, &prev_overflow) == ts && !prev_overflow)
                ts_shared = prev_ts;
        }
    }
    PyObject *rec = PyTuple_New(5);
    if (rec == NULL)
        goto done;
    PyTuple_SET_ITEM(rec, 0, Py_NewRef(ts_shared));
    PyTuple_SET_ITEM(rec, 1, Py_NewRef(key));
    PyTuple_SET_ITEM(rec, 2, Py_NewRef(value));
    PyTuple_SET_ITEM(rec, 3, Py_NewRef(headers));
    PyTuple_SET_ITEM(rec, 4, Py_NewRef(callback));
    if (callback == Py_None && !PyObject_GC_IsTracked(headers))
        PyObject_GC_UnTrack(rec);
    rc = PyList_Append(pending, rec);
    Py_DECREF(rec);
    if (rc < 0)
        goto done;
appended:
    if (batch_layout_of(batch)) { /* (checked again: the future's allocation may have run a collection) */
        PyObject *size_obj = counter_int(size + rs), *rec_obj = rs > max_rec ? counter_int(rs) : NULL;
        if (size_obj == NULL || (rs > max_rec && rec_obj == NULL)) {
            Py_XDECREF(size_obj);
            goto done;
        }
        PyObject *old_size, *old_last, *old[4] = {NULL, NULL, NULL, NULL};
        if (count == 0)
            batch_put(batch, A_BASE_TS, Py_NewRef(ts_obj), &old[0]);
        batch_put(batch, A_SIZE, size_obj, &old_size);
        if (ts > max_ts)
            batch_put(batch, A_MAX_TS, Py_NewRef(ts_obj), &old[1]);
        if (rec_obj != NULL)
            batch_put(batch, A_MAX_REC, rec_obj, &old[2]);
        batch_put(batch, A_LAST_APPEND, Py_NewRef(now_obj), &old_last);
        if (callback != Py_None)
            batch_put(batch, A_HAS_CB, Py_NewRef(Py_True), &old[3]);
        /* (the usual append replaces only the size and the append time; the rest at a batch's first record, a
         * new largest timestamp or record, a first callback) */
        Py_XDECREF(old_size);
        Py_XDECREF(old_last);
        if (count == 0 || ts > max_ts || rec_obj != NULL || callback != Py_None) {
            for (int i = 0; i < 4; i++)
                Py_XDECREF(old[i]);
        }
    } else if ((count == 0 && cached_set(batch, attr[A_BASE_TS], &acache[A_BASE_TS], ts_obj) < 0) || set_int(batch, A_SIZE, size + rs) < 0 ||
        (ts > max_ts && cached_set(batch, attr[A_MAX_TS], &acache[A_MAX_TS], ts_obj) < 0) ||
        (rs > max_rec && set_int(batch, A_MAX_REC, rs) < 0) || cached_set(batch, attr[A_LAST_APPEND], &acache[A_LAST_APPEND], now_obj) < 0 ||
        (callback != Py_None && cached_set(batch, attr[A_HAS_CB], &acache[A_HAS_CB], Py_True) < 0))
        goto done;
    *size_before = size;
    *size_after = size + rs;
    *limit_out = limit;
    result = Py_NewRef(future);
done:
    Py_XDECREF(future);
    Py_XDECREF(outcome);
    Py_XDECREF(index);
    Py_DECREF(pending);
    return result;
}

static PyObject *k_batch_try_append(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7)
        Py_RETURN_NOTIMPLEMENTED;
    int64_t before, after, limit;
    return batch_append_one(args[0], args[1], args[2], args[3], args[4], args[5], args[6], &before, &after, &limit);
}

/* ---- producer: handing the GIL to the I/O thread (GilHandoff: the Selector's wait, send()'s batch boundary) ---- */

/* The I/O thread (the Sender's) and the application thread that calls send() share the GIL. When the I/O thread's
 * wait in the Selector returns (a response, or send()'s wake-up), it asks for the GIL; the interpreter makes the
 * thread that holds it drop it only after the switch interval (5 ms), and all that time the broker idles. A
 * GilHandoff is the I/O thread's wait (epoll with the GIL released) with its state published: WANTS from the
 * wait's return until the thread holds the GIL again. send()'s path reads that state at a batch boundary (one
 * atomic load) and, when the rule says so (the request the I/O thread would build is already as large as it can
 * be, or the broker has nothing in flight), releases the GIL and waits (bounded) until the I/O thread enters its
 * next wait: the I/O thread's whole iteration runs then, not just its part before its first socket call (each
 * such call releases the GIL, and a send thread waiting for the GIL would take it back there). Linux only (epoll
 * and futex); elsewhere the type does not exist and the Selector keeps the selectors module's wait. */
#if defined(__linux__) && defined(__GNUC__)
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#define GIL_HANDOFF 1

enum { HO_RUNNING = 0, HO_WAITING = 1, HO_WANTS = 2 };

typedef struct {
    PyObject_HEAD
    int state;            /* HO_*: the I/O thread's (atomic) */
    uint32_t generation;  /* +1 each time the I/O thread enters a blocking wait (atomic; the futex word) */
    int waiters;          /* threads waiting in handoff_yield (atomic) */
    int idle;             /* the broker had nothing in flight when the wait returned (atomic) */
    long long max_wait_us; /* the longest handoff_yield waits for the I/O thread's iteration */
    long long yields;     /* handoffs made (under the GIL) */
} HandoffObject;

static PyTypeObject HandoffType;

static inline int64_t ho_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

PyDoc_STRVAR(handoff_select_doc,
    "select(epoll_fd, fd_to_key, timeout_ms, wakeup_fd, in_flight) -> [(key, events)]\n\n"
    "selectors.EpollSelector.select over its epoll descriptor and its fd -> SelectorKey map (the same result),\n"
    "waiting up to ``timeout_ms`` (0: a look that keeps the GIL). A blocking wait publishes the I/O thread's state\n"
    "(waiting, then wanting the GIL from its return until it holds the GIL) and whether the broker is idle: the\n"
    "``in_flight`` requests sent and not answered are no more than the connections that became readable (the\n"
    "descriptor ``wakeup_fd`` aside).");

static PyObject *handoff_select(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    HandoffObject *h = (HandoffObject *)op;
    if (nargs != 5 || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "select(epoll_fd, fd_to_key: dict, timeout_ms, wakeup_fd, in_flight)");
        return NULL;
    }
    PyObject *fd_to_key = args[1];
    long epfd = PyLong_AsLong(args[0]), wake_fd = PyLong_AsLong(args[3]);
    long long timeout_ms = PyLong_AsLongLong(args[2]), in_flight = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t size = PyDict_GET_SIZE(fd_to_key);
    int maxevents = size < 1 ? 1 : size > 4096 ? 4096 : (int)size;
    struct epoll_event stack[64];
    struct epoll_event *ev = maxevents <= 64 ? stack : PyMem_Malloc(sizeof(struct epoll_event) * (size_t)maxevents);
    if (ev == NULL)
        return PyErr_NoMemory();
    int n, err = 0;
    if (timeout_ms <= 0) {
        do {
            n = epoll_wait((int)epfd, ev, maxevents, 0); /* a look: nothing to wait for, the GIL kept */
        } while (n < 0 && errno == EINTR);
        err = errno;
    } else {
        int64_t deadline = ho_now_ns() + (timeout_ms > INT_MAX ? INT_MAX : timeout_ms) * 1000000;
        for (;;) {
            int wait_ms = timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
            Py_BEGIN_ALLOW_THREADS
            __atomic_store_n(&h->state, HO_WAITING, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&h->generation, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&h->waiters, __ATOMIC_SEQ_CST) > 0)
                syscall(SYS_futex, &h->generation, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
            n = epoll_wait((int)epfd, ev, maxevents, wait_ms);
            err = errno;
            long long readable = 0;
            for (int i = 0; i < n; i++) {
                if (ev[i].data.fd != (int)wake_fd && (ev[i].events & ~(uint32_t)EPOLLOUT))
                    readable++;
            }
            __atomic_store_n(&h->idle, in_flight <= readable, __ATOMIC_SEQ_CST);
            __atomic_store_n(&h->state, HO_WANTS, __ATOMIC_SEQ_CST);
            Py_END_ALLOW_THREADS
            __atomic_store_n(&h->state, HO_RUNNING, __ATOMIC_SEQ_CST);
            if (n >= 0 || err != EINTR)
                break;
            if (PyErr_CheckSignals() < 0)
                goto fail;
            timeout_ms = (deadline - ho_now_ns()) / 1000000;
            if (timeout_ms <= 0) {
                n = 0;
                break;
            }
        }
    }
    if (n < 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL)
        goto fail;
    for (int i = 0; i < n; i++) {
        PyObject *fd = PyLong_FromLong(ev[i].data.fd);
        if (fd == NULL)
            goto fail_out;
        PyObject *key = PyDict_GetItemWithError(fd_to_key, fd); /* borrowed */
        Py_DECREF(fd);
        if (key == NULL) {
            if (PyErr_Occurred())
                goto fail_out;
            continue; /* unregistered meanwhile */
        }
        /* as EpollSelector.select: anything but EPOLLIN counts as writable, anything but EPOLLOUT as readable */
        long mask = ((ev[i].events & ~(uint32_t)EPOLLIN) ? 2 : 0) | ((ev[i].events & ~(uint32_t)EPOLLOUT) ? 1 : 0);
        PyObject *events = PyTuple_Check(key) && PyTuple_GET_SIZE(key) >= 3 ? PyTuple_GET_ITEM(key, 2) : NULL;
        long have = events != NULL ? PyLong_AsLong(events) : -1;
        if (have == -1 && PyErr_Occurred())
            goto fail_out;
        PyObject *pair = Py_BuildValue("(Ol)", key, mask & have);
        if (pair == NULL || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            goto fail_out;
        }
        Py_DECREF(pair);
    }
    if (ev != stack)
        PyMem_Free(ev);
    return out;
fail_out:
    Py_DECREF(out);
fail:
    if (ev != stack)
        PyMem_Free(ev);
    return NULL;
}

/* Release the GIL until the I/O thread enters its next blocking wait (or max_wait_us passed), then take it again.
 * Called with the GIL held while the I/O thread waits for it (HO_WANTS): it cannot enter a wait before it ran. */
static void handoff_yield(HandoffObject *h)
{
    uint32_t gen0 = __atomic_load_n(&h->generation, __ATOMIC_SEQ_CST);
    long long max_wait_us = h->max_wait_us;
    h->yields++;
    Py_BEGIN_ALLOW_THREADS
    __atomic_add_fetch(&h->waiters, 1, __ATOMIC_SEQ_CST);
    int64_t deadline = ho_now_ns() + max_wait_us * 1000;
    while (__atomic_load_n(&h->generation, __ATOMIC_SEQ_CST) == gen0) {
        int64_t left = deadline - ho_now_ns();
        if (left <= 0)
            break;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        syscall(SYS_futex, &h->generation, FUTEX_WAIT_PRIVATE, gen0, &ts, NULL, 0);
    }
    __atomic_sub_fetch(&h->waiters, 1, __ATOMIC_SEQ_CST);
    Py_END_ALLOW_THREADS
}

/* The rule, at a batch boundary of send()'s path (a new batch opened): hand the GIL over only when the I/O thread
 * waits for it and the broker has nothing in flight or the request it would build cannot grow
 * (``request_full(topic, partition)``: a Python check, called only then). ``handoff``: a GilHandoff, else never.
 * 1 when it holds, 0 when not, -1 with an exception. */
static int handoff_rule(PyObject *handoff, PyObject *request_full, PyObject *topic, PyObject *partition)
{
    if (!Py_IS_TYPE(handoff, &HandoffType))
        return 0;
    HandoffObject *h = (HandoffObject *)handoff;
    if (__atomic_load_n(&h->state, __ATOMIC_SEQ_CST) != HO_WANTS)
        return 0;
    if (__atomic_load_n(&h->idle, __ATOMIC_SEQ_CST))
        return 1;
    PyObject *r = PyObject_CallFunctionObjArgs(request_full, topic, partition, NULL);
    if (r == NULL)
        return -1;
    int full = r == Py_True;
    Py_DECREF(r);
    return full;
}

/* The rule, and the hand-off when it holds: 1 when it handed over, 0 when not, -1 with an exception. */
static int handoff_at_boundary(PyObject *handoff, PyObject *request_full, PyObject *topic, PyObject *partition)
{
    int r = handoff_rule(handoff, request_full, topic, partition);
    if (r > 0)
        handoff_yield((HandoffObject *)handoff);
    return r;
}

PyDoc_STRVAR(handoff_decide_doc,
    "decide(request_full, topic, partition) -> bool\n\n"
    "The rule send()'s path applies at a batch boundary, without the hand-off itself: True when the I/O thread\n"
    "waits for the GIL and either the broker had nothing in flight when its wait returned or\n"
    "``request_full(topic, partition)`` is True (called only when the broker is busy).");

static PyObject *handoff_decide(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decide(request_full, topic, partition)");
        return NULL;
    }
    int r = handoff_rule(op, args[0], args[1], args[2]);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

PyDoc_STRVAR(handoff_offer_doc,
    "offer(request_full, topic, partition) -> bool\n\n"
    "At a batch boundary of a caller other than send()'s kernel path (send_batch's new batch): :meth:`decide`'s\n"
    "rule, and when it holds, the hand-off itself (the GIL released until the I/O thread's next wait, or\n"
    "max_wait_us). Returns whether it handed over.");

static PyObject *handoff_offer(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "offer(request_full, topic, partition)");
        return NULL;
    }
    int r = handoff_at_boundary(op, args[0], args[1], args[2]);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

PyDoc_STRVAR(handoff_wake_doc,
    "wake(sock) -> None\n\n"
    "Selector.wakeup's write of one byte to its wake-up socket (non-blocking), keeping the GIL: a thread that wakes\n"
    "the I/O thread does not hand it the GIL at that point (only the rule does, at a batch boundary). A full socket\n"
    "(a wake-up already pending) or a closed one is ignored, as Selector.wakeup does.");

static PyObject *handoff_wake(PyObject *op, PyObject *arg)
{
    /* the descriptor read here, under the GIL through to the write: a socket closed meanwhile has none (-1) */
    int fd = PyObject_AsFileDescriptor(arg);
    if (fd < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    static const char one = 1;
    ssize_t n;
    do {
        n = send(fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(handoff_set_state_doc,
    "_set_state(state, idle): sets the published I/O thread state (0 running, 1 waiting, 2 wanting the GIL) and\n"
    "the broker's idleness, as the wait does (for tests of the rule).");

static PyObject *handoff_set_state(PyObject *op, PyObject *args)
{
    HandoffObject *h = (HandoffObject *)op;
    int state, idle;
    if (!PyArg_ParseTuple(args, "ip", &state, &idle))
        return NULL;
    if (state < HO_RUNNING || state > HO_WANTS) {
        PyErr_SetString(PyExc_ValueError, "state is 0, 1 or 2");
        return NULL;
    }
    __atomic_store_n(&h->idle, idle, __ATOMIC_SEQ_CST);
    __atomic_store_n(&h->state, state, __ATOMIC_SEQ_CST);
    Py_RETURN_NONE;
}

static PyObject *handoff_get_state(PyObject *op, void *closure)
{
    return PyLong_FromLong(__atomic_load_n(&((HandoffObject *)op)->state, __ATOMIC_SEQ_CST));
}

static PyObject *handoff_get_idle(PyObject *op, void *closure)
{
    return PyBool_FromLong(__atomic_load_n(&((HandoffObject *)op)->idle, __ATOMIC_SEQ_CST));
}

static PyObject *handoff_get_generation(PyObject *op, void *closure)
{
    return PyLong_FromUnsignedLong(__atomic_load_n(&((HandoffObject *)op)->generation, __ATOMIC_SEQ_CST));
}

static PyObject *handoff_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"max_wait_us", NULL};
    long long max_wait_us = 1000;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|L", kwlist, &max_wait_us))
        return NULL;
    if (max_wait_us < 0) {
        PyErr_SetString(PyExc_ValueError, "max_wait_us must be >= 0");
        return NULL;
    }
    HandoffObject *h = (HandoffObject *)type->tp_alloc(type, 0);
    if (h != NULL)
        h->max_wait_us = max_wait_us;
    return (PyObject *)h;
}

static PyMethodDef handoff_methods[] = {
    {"select", (PyCFunction)(void (*)(void))handoff_select, METH_FASTCALL, handoff_select_doc},
    {"decide", (PyCFunction)(void (*)(void))handoff_decide, METH_FASTCALL, handoff_decide_doc},
    {"offer", (PyCFunction)(void (*)(void))handoff_offer, METH_FASTCALL, handoff_offer_doc},
    {"wake", handoff_wake, METH_O, handoff_wake_doc},
    {"_set_state", handoff_set_state, METH_VARARGS, handoff_set_state_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef handoff_members[] = {
    {"yields", T_LONGLONG, offsetof(HandoffObject, yields), READONLY, "hand-offs made at send()'s batch boundaries"},
    {"max_wait_us", T_LONGLONG, offsetof(HandoffObject, max_wait_us), READONLY, "the longest wait of a hand-off"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef handoff_getset[] = {
    {"state", handoff_get_state, NULL, "the I/O thread's: 0 running, 1 waiting, 2 wanting the GIL", NULL},
    {"idle", handoff_get_idle, NULL, "the broker had nothing in flight when the last wait returned", NULL},
    {"generation", handoff_get_generation, NULL, "blocking waits entered", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HandoffType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.GilHandoff",
    .tp_basicsize = sizeof(HandoffObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GilHandoff(max_wait_us=1000): the producer I/O thread's wait, and send()'s hand-off of the GIL to it.",
    .tp_new = handoff_new,
    .tp_methods = handoff_methods,
    .tp_members = handoff_members,
    .tp_getset = handoff_getset,
};
#endif

/* ---- producer: send()'s common case in one call (RecordAccumulator.try_append_fast + the partition) ------- */

enum { S_PARTITIONER, S_QUEUES, S_STICKY, S_PARTITION, S_PRODUCED, S_SWITCH, S_STICKY_SIZE, S_LOCK, S_BATCHES,
       S_ACQUIRE, S_RELEASE, S_CLOSED, S_RATIO, S_UPDATE, S_OPEN_BATCH, S_ESTIMATED, S_COUNT };
static const char *const send_attr_names[S_COUNT] = {
    "partitioner", "queues", "sticky", "partition", "produced_bytes", "switch_bytes", "sticky_batch_size", "lock",
    "batches", "acquire", "release", "closed", "compression_ratio", "update_partition_info", "open_batch",
    "estimated_size_in_bytes",
};
static PyObject *sattr[S_COUNT];
static slot_cache scache[S_COUNT];

/* The partition queue's lock is a _thread.lock. Its acquire() parses (blocking, timeout) by keyword and its
 * methods are found by name: about a third of an append. On the CPython versions whose lock object has this
 * layout (3.10 to 3.12: the OS lock, the weakref list, the "locked" flag release() checks), a lock of exactly
 * that type is taken without blocking and released directly, keeping the flag as the lock's own methods do;
 * a lock that is held (the I/O thread drains the queue) is waited for through acquire(), which releases the
 * GIL while it waits. Any other lock, or another CPython, goes through the methods. */
#if PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030D0000
typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock_lock;
    PyObject *in_weakreflist;
    char locked;
} thread_lock_layout;
#define THREAD_LOCK_LAYOUT 1
static PyTypeObject *thread_lock_type = NULL; /* type(_thread.allocate_lock()) when its layout is known */
#if defined(__linux__)
#include <semaphore.h>
/* On Linux CPython's lock is a POSIX semaphore (sys.thread_info.lock == "semaphore": PyThread_allocate_lock's lock
 * is a sem_t). PyThread_acquire_lock without waiting reads the monotonic clock for a deadline it never uses before
 * its sem_trywait: when this is set, the lock is tried with sem_trywait itself and released with sem_post. */
static int thread_lock_is_semaphore = 0;
#endif
#endif

static int thread_lock_setup(void)
{
#ifdef THREAD_LOCK_LAYOUT
    PyObject *mod = PyImport_ImportModule("_thread");
    if (mod == NULL)
        return -1;
    PyObject *lock = PyObject_CallMethod(mod, "allocate_lock", NULL);
    Py_DECREF(mod);
    if (lock == NULL)
        return -1;
    if (Py_TYPE(lock)->tp_basicsize == (Py_ssize_t)sizeof(thread_lock_layout))
        thread_lock_type = (PyTypeObject *)Py_NewRef(Py_TYPE(lock));
    Py_DECREF(lock);
#if defined(__linux__)
    PyObject *info = PySys_GetObject("thread_info"); /* borrowed */
    PyObject *name = info != NULL ? PyObject_GetAttrString(info, "name") : NULL;
    PyObject *kind = info != NULL ? PyObject_GetAttrString(info, "lock") : NULL;
    thread_lock_is_semaphore = name != NULL && kind != NULL && PyUnicode_Check(name) && PyUnicode_Check(kind) &&
                               PyUnicode_CompareWithASCIIString(name, "pthread") == 0 &&
                               PyUnicode_CompareWithASCIIString(kind, "semaphore") == 0;
    Py_XDECREF(name);
    Py_XDECREF(kind);
    PyErr_Clear();
#endif
#endif
    return 0;
}

/* The names send_append reads and the lock type (interned / looked up on first use): 0, or -1 with an exception */
static int sattr_init(void)
{
    if (sattr[S_COUNT - 1] != NULL)
        return 0;
    for (int i = 0; i < S_COUNT; i++) {
        if (sattr[i] == NULL && (sattr[i] = PyUnicode_InternFromString(send_attr_names[i])) == NULL)
            return -1;
    }
    return thread_lock_setup();
}

/* lock.acquire(): 0, or -1 with an exception */
static int queue_lock_acquire(PyObject *lock)
{
#ifdef THREAD_LOCK_LAYOUT
    if (Py_TYPE(lock) == thread_lock_type) {
        thread_lock_layout *l = (thread_lock_layout *)lock;
#if defined(__linux__)
        if (thread_lock_is_semaphore ? sem_trywait((sem_t *)l->lock_lock) == 0 : PyThread_acquire_lock(l->lock_lock, NOWAIT_LOCK)) {
#else
        if (PyThread_acquire_lock(l->lock_lock, NOWAIT_LOCK)) {
#endif
            l->locked = 1;
            return 0;
        }
    }
#endif
    PyObject *got = PyObject_CallMethodNoArgs(lock, sattr[S_ACQUIRE]);
    if (got == NULL)
        return -1;
    Py_DECREF(got);
    return 0;
}

/* lock.release(): 0, or -1 with an exception */
static int queue_lock_release(PyObject *lock)
{
#ifdef THREAD_LOCK_LAYOUT
    if (Py_TYPE(lock) == thread_lock_type && ((thread_lock_layout *)lock)->locked) {
        thread_lock_layout *l = (thread_lock_layout *)lock;
        l->locked = 0; /* (as the lock's release(): the flag, then the lock) */
#if defined(__linux__)
        if (thread_lock_is_semaphore)
            sem_post((sem_t *)l->lock_lock);
        else
#endif
            PyThread_release_lock(l->lock_lock);
        return 0;
    }
#endif
    PyObject *r = PyObject_CallMethodNoArgs(lock, sattr[S_RELEASE]);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

PyDoc_STRVAR(send_append_doc,
    "send_append(topics, accumulator, clock, headers, cluster, max_payload, ignore_keys, wakeup,\n"
    "            topic, partition, count, timestamp, key, value, callback) -> future | None | NotImplemented\n\n"
    "KafkaProducer.send's common case after its checks and the metadata lookup, compiled: the partition\n"
    "(``partition``, else murmur2 of a bytes key over ``count`` partitions unless ``ignore_keys``, else the\n"
    "topic's sticky partition), RecordAccumulator.try_append_fast under the partition queue's lock (with the\n"
    "sticky accounting and its partitioner's update_partition_info), and ``wakeup()`` when a batch is ready\n"
    "(``wakeup`` (holder, attribute, callable): the call is skipped while ``getattr(holder, attribute) is True``).\n"
    "``topics`` maps topic -> (queues: {partition: queue with .lock and .batches}, partitioner); ``timestamp``\n"
    "None takes the time from ``clock()``, or the system clock when ``clock`` is None. Returns the record's\n"
    "future; None or NotImplemented when nothing changed and the Python path must do it (None: no open batch\n"
    "with room; NotImplemented: input it does not handle: another key or value type, a record over\n"
    "``max_payload`` bytes of key and value, a compressed sticky batch, an unknown topic or partition).\n"
    "It never opens a batch (SendRecord does, through ``accumulator.open_batch``).");

/* The Sender's wake-up. ``wakeup``: a callable, or (holder, attribute, callable): the call is skipped while
 * ``getattr(holder, attribute) is True`` (a wake-up is already pending: Sender.wakeup would do nothing), which
 * spares a Python frame per record while a partition's deque holds more than one batch. 0, or -1 with an
 * exception. */
static int wake_sender(PyObject *wakeup)
{
    static slot_cache pending_cache;
    if (PyTuple_CheckExact(wakeup) && PyTuple_GET_SIZE(wakeup) >= 3 && PyUnicode_CheckExact(PyTuple_GET_ITEM(wakeup, 1))) {
        PyObject *pending = cached_get(PyTuple_GET_ITEM(wakeup, 0), PyTuple_GET_ITEM(wakeup, 1), &pending_cache);
        if (pending == NULL)
            return -1;
        Py_DECREF(pending);
        if (pending == Py_True)
            return 0;
        wakeup = PyTuple_GET_ITEM(wakeup, 2);
    }
    PyObject *r = PyObject_CallNoArgs(wakeup);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Whether the batch's compression_ratio is 1.0 (its size_bytes are what the sticky partitioner counts): 1, 0, or -1
 * with an exception. */
static inline __attribute__((always_inline)) int batch_is_plain(PyObject *batch)
{
    PyObject *ratio = cached_get(batch, sattr[S_RATIO], &scache[S_RATIO]);
    if (ratio == NULL)
        return -1;
    int plain = PyFloat_CheckExact(ratio) && PyFloat_AS_DOUBLE(ratio) == 1.0;
    Py_DECREF(ratio);
    return plain;
}

/* ``ms`` as an int object: the batch's last pending record's timestamp object when it is that value, else a new
 * int. New reference, NULL with an exception. */
static PyObject *last_record_timestamp(PyObject *batch, int64_t ms)
{
    PyObject *pending = cached_get(batch, attr[A_PENDING], &acache[A_PENDING]);
    if (pending == NULL)
        return NULL;
    PyObject *ts = NULL;
    Py_ssize_t n;
    if (is_pending(pending)) {
        PendingObject *p = (PendingObject *)pending;
        if (p->items == NULL) {
            if (p->count > 0 && p->last_ts == ms && p->last_ts_obj != NULL)
                ts = Py_NewRef(p->last_ts_obj);
        } else
            Py_SETREF(pending, Py_NewRef(p->items));
    }
    if (ts == NULL && PyList_CheckExact(pending) && (n = PyList_GET_SIZE(pending)) > 0) {
        PyObject *prev = PyList_GET_ITEM(pending, n - 1);
        int64_t prev_ms;
        if (PyTuple_CheckExact(prev) && PyTuple_GET_SIZE(prev) > 0 && compact_int(PyTuple_GET_ITEM(prev, 0), &prev_ms) &&
            prev_ms == ms)
            ts = Py_NewRef(PyTuple_GET_ITEM(prev, 0));
    }
    Py_DECREF(pending);
    return ts != NULL ? ts : PyLong_FromLongLong(ms);
}

/* What a SendRecord remembers of its last send, read again only when the send names another one (under the GIL;
 * strong references, so no remembered address is reused): the accumulator's entry of the topic and the queue of
 * the partition (neither is ever replaced or removed once made: RecordAccumulator's ``_topics``), with the
 * entry's partitioner, its switch_bytes and sticky_batch_size, and the queue's lock and deque (each set once, when
 * its holder is made), and the topic's partition count in the metadata index (an index is never changed once
 * built: an update replaces it whole), and until when the topic's metadata expiry is fresh (an expiry only grows, and is removed only once
 * the monotonic clock has passed it: ProducerMetadata.retain_topics; a refresh is due only after idle // 2 more
 * ms, at fresh_until, when it is read again). A str topic equal to the remembered one but another object is looked up (and then remembered). */
typedef struct {
    PyObject *topic, *info, *partitioner;        /* info = topics[topic], partitioner = info.partitioner */
    int64_t switch_bytes, sticky_size;           /* the partitioner's (once sizes_known) */
    int sizes_known;
    PyObject *q_info, *queue, *lock, *batches;   /* queue = q_info.queues[q_partition]: its .lock and .batches */
    int64_t q_partition;
    PyObject *index, *count_topic;               /* count = len(index.by_topic[count_topic]) */
    Py_ssize_t count;
    PyObject *expiries, *fresh_topic;            /* expiries[fresh_topic] - now > idle // 2 while now < fresh_until */
    int64_t fresh_until, fresh_idle;
} send_cache;

static void send_cache_clear(send_cache *c)
{
    Py_CLEAR(c->topic);
    Py_CLEAR(c->info);
    Py_CLEAR(c->partitioner);
    Py_CLEAR(c->q_info);
    Py_CLEAR(c->queue);
    Py_CLEAR(c->lock);
    Py_CLEAR(c->batches);
    Py_CLEAR(c->index);
    Py_CLEAR(c->count_topic);
    Py_CLEAR(c->expiries);
    Py_CLEAR(c->fresh_topic);
}

/* The partition's int object, made on first use (*slot, borrowed; NULL with an exception): most sends name the
 * partition only by number (the queue comes from the SendRecord's cache). */
static PyObject *partition_int(PyObject **slot, int64_t partition)
{
    if (*slot == NULL)
        *slot = PyLong_FromLongLong(partition);
    return *slot;
}

/* send_append's 15 arguments (its doc), but the partition count (args[10], unread) as a number: ``count``;
 * ``cache``: the calling SendRecord's, or NULL. ``may_open``: a new batch may be opened when no open batch has room
 * (SendRecord: never for a transactional producer, whose send adds a new batch's partition to the transaction
 * after the append); else None, nothing changed (send_append). */
static PyObject *send_append_core(PyObject *const *args, int64_t count, send_cache *cache, int may_open)
{
    PyObject *topics = args[0], *accumulator = args[1], *clock = args[2], *headers = args[3], *cluster = args[4],
             *max_payload_obj = args[5], *ignore_keys = args[6], *wakeup = args[7], *topic = args[8],
             *partition_obj = args[9], *ts_arg = args[11], *key = args[12], *value = args[13], *callback = args[14];
    Py_ssize_t kn, vn;
    if (!PyDict_CheckExact(topics) || producer_bytes(key, &kn) < 0 || producer_bytes(value, &vn) < 0 ||
        !PyLong_CheckExact(max_payload_obj))
        Py_RETURN_NOTIMPLEMENTED;
    int64_t max_payload;
    if (!compact_int(max_payload_obj, &max_payload))
        max_payload = PyLong_AsLongLong(max_payload_obj);
    if (max_payload == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if ((kn < 0 ? 0 : kn) + (vn < 0 ? 0 : vn) > max_payload || count <= 0)
        Py_RETURN_NOTIMPLEMENTED;
    /* the partition: requested, by key, or sticky (-1) */
    long long partition = -1;
    if (partition_obj != Py_None) {
        if (!PyLong_CheckExact(partition_obj))
            Py_RETURN_NOTIMPLEMENTED;
        partition = PyLong_AsLongLong(partition_obj);
        if (partition < 0 || partition >= count) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
    } else if (key != Py_None && ignore_keys != Py_True) {
        partition = (long long)(((uint32_t)murmur2_of((const uint8_t *)PyBytes_AS_STRING(key), kn) & 0x7FFFFFFFu) %
                                (uint64_t)count);
    }
    if (sattr_init() < 0)
        return NULL;
    PyObject *info, *partitioner; /* info borrowed (held by topics, and by the cache) */
    if (cache != NULL && cache->topic == topic) {
        info = cache->info;
        partitioner = Py_NewRef(cache->partitioner);
    } else {
        info = PyDict_GetItemWithError(topics, topic);
        if (info == NULL) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NOTIMPLEMENTED;
        }
        if ((partitioner = cached_get(info, sattr[S_PARTITIONER], &scache[S_PARTITIONER])) == NULL)
            return NULL;
        if (cache != NULL) {
            Py_INCREF(info);
            Py_XSETREF(cache->info, info);
            Py_INCREF(partitioner);
            Py_XSETREF(cache->partitioner, partitioner);
            cache->sizes_known = 0;
            Py_INCREF(topic);
            Py_XSETREF(cache->topic, topic);
        }
    }
    PyObject *result = NULL, *sticky = NULL, *queues = NULL, *q = NULL, *lock = NULL, *batches = NULL, *last = NULL,
             *future = NULL, *ts_obj = NULL, *effective_obj = NULL;
    int locked = 0, wake = 0, opened = 0;
    int64_t effective = partition;
    if (partition == -1) {
        if ((sticky = cached_get(partitioner, sattr[S_STICKY], &scache[S_STICKY])) == NULL)
            goto done;
        int rc;
        if (sticky == Py_None || (rc = get_int_attr(sticky, sattr[S_PARTITION], &scache[S_PARTITION], &effective)) > 0) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (rc < 0)
            goto done;
    }
    if (cache != NULL && cache->q_info == info && cache->q_partition == effective) {
        q = Py_NewRef(cache->queue);
        lock = Py_NewRef(cache->lock);
        batches = Py_NewRef(cache->batches);
    } else {
        if ((queues = cached_get(info, sattr[S_QUEUES], &scache[S_QUEUES])) == NULL)
            goto done;
        if (!PyDict_CheckExact(queues)) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (partition_int(&effective_obj, effective) == NULL)
            goto done;
        q = PyDict_GetItemWithError(queues, effective_obj);
        if (q == NULL) {
            if (!PyErr_Occurred())
                result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        Py_INCREF(q);
        if ((lock = cached_get(q, sattr[S_LOCK], &scache[S_LOCK])) == NULL ||
            (batches = cached_get(q, sattr[S_BATCHES], &scache[S_BATCHES])) == NULL)
            goto done;
        if (cache != NULL) {
            Py_INCREF(info);
            Py_XSETREF(cache->q_info, info);
            Py_INCREF(q);
            Py_XSETREF(cache->queue, q);
            Py_INCREF(lock);
            Py_XSETREF(cache->lock, lock);
            Py_INCREF(batches);
            Py_XSETREF(cache->batches, batches);
            cache->q_partition = effective;
        }
    }
    /* the timestamp, as send() takes it before the append; the system clock's as a number (clock_ms >= 0), its
     * int object made at the append (the last record's when it is the same millisecond: no int per record) */
    int64_t clock_ms = -1;
    if (ts_arg != Py_None) {
        ts_obj = Py_NewRef(ts_arg);
    } else if (clock == Py_None) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        clock_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    } else {
        ts_obj = PyObject_CallNoArgs(clock);
    }
    if (ts_obj == NULL && clock_ms < 0)
        goto done;
    if (queue_lock_acquire(lock) < 0)
        goto done;
    locked = 1;
    /* under the queue's lock, as RecordAccumulator.try_append_fast */
    Py_ssize_t nbatches = PyObject_Size(batches);
    if (nbatches < 0)
        goto done;
    int is_closed = take_truth(cached_get(accumulator, sattr[S_CLOSED], &scache[S_CLOSED]));
    if (is_closed < 0)
        goto done;
    if (is_closed) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (sticky != NULL) {
        PyObject *now_sticky = cached_get(partitioner, sattr[S_STICKY], &scache[S_STICKY]);
        if (now_sticky == NULL)
            goto done;
        Py_DECREF(now_sticky);
        if (now_sticky != sticky) { /* another thread switched the sticky partition */
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    int64_t produced = 0, switch_bytes = 0, sticky_size = 0;
    if (sticky != NULL) {
        int rc;
        int known = cache != NULL && cache->sizes_known;
        if (known) {
            switch_bytes = cache->switch_bytes;
            sticky_size = cache->sticky_size;
        }
        if ((rc = get_int_attr(sticky, sattr[S_PRODUCED], &scache[S_PRODUCED], &produced)) > 0 ||
            (!known && (rc = get_int_attr(partitioner, sattr[S_SWITCH], &scache[S_SWITCH], &switch_bytes)) > 0) ||
            (!known && (rc = get_int_attr(partitioner, sattr[S_STICKY_SIZE], &scache[S_STICKY_SIZE], &sticky_size)) > 0)) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (rc < 0)
            goto done;
        if (!known && cache != NULL) {
            cache->switch_bytes = switch_bytes;
            cache->sticky_size = sticky_size;
            cache->sizes_known = 1;
        }
    }
    if (nbatches > 0 && (last = PySequence_GetItem(batches, nbatches - 1)) == NULL)
        goto done;
    if (last != NULL && sticky != NULL) {
        /* the sticky accounting counts estimated bytes of a compressed batch: the Python path does that */
        int plain = batch_is_plain(last);
        if (plain <= 0) {
            result = plain < 0 ? NULL : Py_NewRef(Py_NotImplemented);
            goto done;
        }
    }
    int64_t before = 0, after = 0, limit = 0;
    static PyObject *zero = NULL;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        goto done;
    if (ts_obj == NULL && (ts_obj = last == NULL ? PyLong_FromLongLong(clock_ms) : last_record_timestamp(last, clock_ms)) == NULL)
        goto done;
    if (last != NULL) {
        future = batch_append_one(last, ts_obj, key, value, headers, callback, zero, &before, &after, &limit);
        if (future == NULL || future == Py_NotImplemented || (future == Py_None && !may_open)) {
            result = future;
            future = NULL;
            goto done;
        }
    } else if (!may_open) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (last == NULL || future == Py_None) {
        /* no open batch with room: RecordAccumulator.append's new batch, opened by its open_batch (still under the
         * queue's lock: one round), when the input is what batch_append_one takes (checked before any change) */
        Py_CLEAR(future);
        int64_t ts_check;
        int ts_overflow = 0;
        if (!PyLong_CheckExact(ts_obj) || headers_size(headers) < 0) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (!compact_int(ts_obj, &ts_check))
            ts_check = PyLong_AsLongLongAndOverflow(ts_obj, &ts_overflow);
        if (ts_overflow || ts_check < 0 || ts_check > ((int64_t)1 << 62)) {
            PyErr_Clear();
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        /* append() closes the full last batch before it looks for memory */
        if (last != NULL && cached_set(last, attr[A_CLOSED], &acache[A_CLOSED], Py_True) < 0)
            goto done;
        if (partition_int(&effective_obj, effective) == NULL)
            goto done;
        PyObject *fresh = PyObject_CallMethodObjArgs(accumulator, sattr[S_OPEN_BATCH], batches, topic, effective_obj, key,
                                                     value, headers, NULL);
        if (fresh == NULL)
            goto done;
        if (fresh == Py_None) { /* memory not free at once, or closed: append() waits (or raises) */
            result = fresh;
            goto done;
        }
        Py_XSETREF(last, fresh);
        opened = 1;
        PyObject *created = cached_get(last, attr[A_LAST_APPEND], &acache[A_LAST_APPEND]);
        if (created == NULL)
            goto done;
        future = batch_append_one(last, ts_obj, key, value, headers, callback, created, &before, &after, &limit);
        Py_DECREF(created);
        if (future == NULL || future == Py_None || future == Py_NotImplemented) {
            /* cannot happen (a first record always fits, the input was checked): the Python path takes the
             * record into the new, empty batch */
            result = future == Py_None ? Py_NewRef(Py_NotImplemented) : future;
            if (future == Py_None)
                Py_DECREF(future);
            future = NULL;
            goto done;
        }
        before = 0; /* append() counts a new batch's whole size to the sticky partition */
        if (sticky != NULL) {
            int plain = batch_is_plain(last);
            if (plain < 0)
                goto done;
            if (!plain && take_int(PyObject_CallMethodNoArgs(last, sattr[S_ESTIMATED]), &after) != 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "estimated_size_in_bytes() is not an int");
                goto done;
            }
        }
    }
    int last_full = after >= limit;
    if (sticky != NULL) {
        produced += after - before;
        if (set_counter(sticky, sattr[S_PRODUCED], &scache[S_PRODUCED], produced) < 0)
            goto done;
        if (produced >= switch_bytes || (last_full && produced >= sticky_size)) {
            if (partition_int(&effective_obj, effective) == NULL)
                goto done;
            PyObject *r = PyObject_CallMethodObjArgs(partitioner, sattr[S_UPDATE], effective_obj, zero, cluster,
                                                     last_full ? Py_True : Py_False, NULL);
            if (r == NULL)
                goto done;
            Py_DECREF(r);
        }
    }
    wake = opened || last_full || nbatches > 1;
    result = Py_NewRef(future);
done:
    if (locked) {
        PyObject *et = NULL, *ev = NULL, *tb = NULL;
        int had_error = PyErr_Occurred() != NULL;
        if (had_error)
            PyErr_Fetch(&et, &ev, &tb);
        if (queue_lock_release(lock) < 0) {
            Py_CLEAR(result);
            Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
        } else if (had_error) {
            PyErr_Restore(et, ev, tb);
        }
    }
    if (result != NULL && wake && wake_sender(wakeup) < 0)
        Py_CLEAR(result);
#ifdef GIL_HANDOFF
    /* a new batch: the I/O thread may take the GIL now (no lock held here); ``wakeup``'s 4th and 5th items */
    if (result != NULL && wake && opened && effective_obj != NULL && PyTuple_CheckExact(wakeup) && PyTuple_GET_SIZE(wakeup) == 5 &&
        handoff_at_boundary(PyTuple_GET_ITEM(wakeup, 3), PyTuple_GET_ITEM(wakeup, 4), topic, effective_obj) < 0)
        Py_CLEAR(result);
#endif
    Py_XDECREF(partitioner);
    Py_XDECREF(sticky);
    Py_XDECREF(queues);
    Py_XDECREF(q);
    Py_XDECREF(lock);
    Py_XDECREF(batches);
    Py_XDECREF(last);
    Py_XDECREF(future);
    Py_XDECREF(ts_obj);
    Py_XDECREF(effective_obj);
    return result;
}

static PyObject *k_send_append(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 15 || future_type == NULL || !PyLong_CheckExact(args[10]))
        Py_RETURN_NOTIMPLEMENTED;
    int64_t count;
    if (!compact_int(args[10], &count))
        count = PyLong_AsLongLong(args[10]);
    if (count == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    return send_append_core(args, count, NULL, 0);
}

/* ---- producer: the whole of send()'s common case (KafkaProducer.send's checks, the metadata, send_append) -- */

enum { M_TOPIC_EXPIRY, M_IDLE, M_ADD, M_INDEX, M_FETCH, M_CLUSTER, M_BY_TOPIC, M_COUNT };
static const char *const md_attr_names[M_COUNT] = {
    "topic_expiry", "metadata_idle_ms", "add", "index", "fetch", "cluster", "by_topic",
};
static PyObject *mattr[M_COUNT];
static slot_cache mcache[M_COUNT];

/* ProducerMetadata.add_and_count(topic, now) without its Python frames: the topic's partition count (0 when it
 * is unknown), -2 when the metadata's index is not that of its current cluster (the Python method rebuilds it),
 * -1 with an exception. ``mono_clock`` None: now is CLOCK_MONOTONIC in ms (time.monotonic_ns() // 10**6).
 * ``cluster_at`` gives ``metadata.fetch()`` without its Python frame (cluster_now(); None: fetch() is called). */
static PyObject *cluster_now(PyObject *cluster_at);

static long long metadata_add_and_count(PyObject *metadata, PyObject *topic, PyObject *mono_clock, PyObject *cluster_at,
                                        send_cache *cache)
{
    /* now as an int object only when a call needs it (the topic's expiry is refreshed: rarely) */
    PyObject *now_obj = NULL;
    long long count = -1;
    PyObject *expiries = NULL, *idx = NULL, *cluster = NULL, *idx_cluster = NULL, *by_topic = NULL;
    int64_t now, idle;
    int rc;
    if (mono_clock == Py_None) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    } else {
        if ((now_obj = PyObject_CallNoArgs(mono_clock)) == NULL)
            return -1;
        rc = take_int(Py_NewRef(now_obj), &now);
        if (rc != 0) {
            count = rc < 0 ? -1 : -2;
            goto done;
        }
    }
    if ((expiries = cached_get(metadata, mattr[M_TOPIC_EXPIRY], &mcache[M_TOPIC_EXPIRY])) == NULL)
        goto done;
    if (!PyDict_CheckExact(expiries)) {
        count = -2;
        goto done;
    }
    if ((rc = get_int_attr(metadata, mattr[M_IDLE], &mcache[M_IDLE], &idle)) != 0) {
        count = rc < 0 ? -1 : -2;
        goto done;
    }
    int fresh = cache != NULL && cache->expiries == expiries && cache->fresh_topic == topic && cache->fresh_idle == idle &&
                now < cache->fresh_until;
    if (!fresh) {
        PyObject *expiry = PyDict_GetItemWithError(expiries, topic); /* borrowed */
        if (expiry == NULL && PyErr_Occurred())
            goto done;
        if (expiry != NULL) {
            int64_t exp, until;
            if ((rc = take_int(Py_NewRef(expiry), &exp)) != 0) {
                count = rc < 0 ? -1 : -2;
                goto done;
            }
            /* Python's floor division, for any sign */
            int64_t half = idle / 2 - ((idle % 2 != 0) && (idle < 0));
            fresh = exp - now > half;
            if (fresh && cache != NULL && !__builtin_sub_overflow(exp, half, &until)) {
                Py_INCREF(expiries);
                Py_XSETREF(cache->expiries, expiries);
                Py_INCREF(topic);
                Py_XSETREF(cache->fresh_topic, topic);
                cache->fresh_idle = idle;
                cache->fresh_until = until;
            }
        }
    }
    if (!fresh) {
        if (now_obj == NULL && (now_obj = PyLong_FromLongLong(now)) == NULL)
            goto done;
        PyObject *r = PyObject_CallMethodObjArgs(metadata, mattr[M_ADD], topic, now_obj, NULL);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    if ((idx = cached_get(metadata, mattr[M_INDEX], &mcache[M_INDEX])) == NULL ||
        (cluster = cluster_at == Py_None ? PyObject_CallMethodNoArgs(metadata, mattr[M_FETCH])
                                         : cluster_now(cluster_at)) == NULL ||
        (idx_cluster = cached_get(idx, mattr[M_CLUSTER], &mcache[M_CLUSTER])) == NULL)
        goto done;
    if (idx_cluster != cluster) {
        count = -2;
        goto done;
    }
    if (cache != NULL && cache->index == idx && cache->count_topic == topic) {
        count = cache->count;
        goto done;
    }
    if ((by_topic = cached_get(idx, mattr[M_BY_TOPIC], &mcache[M_BY_TOPIC])) == NULL)
        goto done;
    if (!PyDict_CheckExact(by_topic)) {
        count = -2;
        goto done;
    }
    PyObject *infos = PyDict_GetItemWithError(by_topic, topic); /* borrowed */
    if (infos == NULL) {
        count = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    count = PyList_CheckExact(infos) ? PyList_GET_SIZE(infos) : -2;
    if (cache != NULL && count > 0) {
        Py_INCREF(idx);
        Py_XSETREF(cache->index, idx);
        Py_INCREF(topic);
        Py_XSETREF(cache->count_topic, topic);
        cache->count = count;
    }
done:
    Py_XDECREF(now_obj);
    Py_XDECREF(expiries);
    Py_XDECREF(idx);
    Py_XDECREF(cluster);
    Py_XDECREF(idx_cluster);
    Py_XDECREF(by_topic);
    return count;
}

/* 1 when v is a plain int (not a bool or another subclass) >= 0, of any size */
static int nonnegative_int(PyObject *v)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    return overflow > 0 || (overflow == 0 && x >= 0);
}

/* fatal_check: None (never fatal), (holder, attribute, fatal_state): fatal when getattr(holder, attribute) is
 * fatal_state (read at the slot's offset when it is one), else a callable whose truth is the answer. 1, 0, or
 * -1 with an exception. */
static int fatal_now(PyObject *fatal_check)
{
    static slot_cache state_cache;
    if (fatal_check == Py_None)
        return 0;
    if (PyTuple_CheckExact(fatal_check) && PyTuple_GET_SIZE(fatal_check) == 3 &&
        PyUnicode_CheckExact(PyTuple_GET_ITEM(fatal_check, 1))) {
        PyObject *state = cached_get(PyTuple_GET_ITEM(fatal_check, 0), PyTuple_GET_ITEM(fatal_check, 1), &state_cache);
        if (state == NULL)
            return -1;
        Py_DECREF(state);
        return state == PyTuple_GET_ITEM(fatal_check, 2);
    }
    return take_truth(PyObject_CallNoArgs(fatal_check));
}

/* cluster_at: (holder, attribute): getattr(holder, attribute), read at the slot's offset when it is one; else a
 * callable giving the cluster. New reference, NULL with an exception. */
static PyObject *cluster_now(PyObject *cluster_at)
{
    static slot_cache cluster_cache;
    if (PyTuple_CheckExact(cluster_at) && PyTuple_GET_SIZE(cluster_at) == 2 &&
        PyUnicode_CheckExact(PyTuple_GET_ITEM(cluster_at, 1)))
        return cached_get(PyTuple_GET_ITEM(cluster_at, 0), PyTuple_GET_ITEM(cluster_at, 1), &cluster_cache);
    return PyObject_CallNoArgs(cluster_at);
}

/* SendRecord's call: ``fixed`` its 11 fixed arguments, ``rec`` the call's 6. NotImplemented when it declines; then
 * *no_room is 1 when the record passed every check and the metadata (the topic and partition known) and only
 * found no open batch with room and no buffer memory free at once for a new one (or the accumulator closed), 0
 * otherwise. */
static PyObject *send_record_core(PyObject *const *fixed, PyObject *const *rec, int *no_room, send_cache *cache)
{
    *no_room = 0;
    if (future_type == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *metadata = fixed[4], *mono_clock = fixed[8], *fatal_check = fixed[9], *cluster_at = fixed[10],
             *topic = rec[0], *partition = rec[1], *timestamp = rec[2];
    if (!PyUnicode_CheckExact(topic) || PyUnicode_GET_LENGTH(topic) == 0)
        Py_RETURN_NOTIMPLEMENTED;
    if ((partition != Py_None && !nonnegative_int(partition)) || (timestamp != Py_None && !nonnegative_int(timestamp)))
        Py_RETURN_NOTIMPLEMENTED;
    if (mattr[0] == NULL) {
        for (int i = 0; i < M_COUNT; i++) {
            if ((mattr[i] = PyUnicode_InternFromString(md_attr_names[i])) == NULL)
                return NULL;
        }
    }
    int fatal = fatal_now(fatal_check);
    if (fatal < 0)
        return NULL;
    if (fatal)
        Py_RETURN_NOTIMPLEMENTED;
    long long count = metadata_add_and_count(metadata, topic, mono_clock, cluster_at, cache);
    if (count == -1)
        return NULL;
    if (count <= 0)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *call[15] = {fixed[0], fixed[1], fixed[2], fixed[3], fixed[4], fixed[5], fixed[6], fixed[7], topic,
                          partition, NULL /* the count, passed as a number */, timestamp, rec[3], rec[4], rec[5]};
    PyObject *future = send_append_core(call, count, cache, 1);
    if (future == Py_None) {
        Py_DECREF(future);
        *no_room = 1;
        Py_RETURN_NOTIMPLEMENTED;
    }
    return future;
}

/* The producer's fixed arguments of send_record, bound once: a call passes only the record's six (no partial
 * object copying sixteen arguments into a fresh array per send). */
enum { SR_FIXED = 11, SR_CALL = 6 };
typedef struct {
    PyObject_HEAD
    PyObject *fixed[SR_FIXED];
    vectorcallfunc vectorcall;
    send_cache cache;
} SendRecordObject;

static PyObject *send_record_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != SR_CALL || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
        PyErr_Format(PyExc_TypeError, "SendRecord() takes %d positional arguments (topic, partition, timestamp, key, "
                     "value, callback), got %zd", SR_CALL, nargs);
        return NULL;
    }
    int no_room;
    Py_INCREF(self); /* its cache is used during the call */
    PyObject *r = send_record_core(((SendRecordObject *)self)->fixed, args, &no_room, &((SendRecordObject *)self)->cache);
    Py_DECREF(self);
    return r;
}

static PyObject *send_record_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) || PyTuple_GET_SIZE(args) != SR_FIXED) {
        PyErr_Format(PyExc_TypeError, "SendRecord() takes %d positional arguments", SR_FIXED);
        return NULL;
    }
    SendRecordObject *self = (SendRecordObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    for (int i = 0; i < SR_FIXED; i++)
        self->fixed[i] = Py_NewRef(PyTuple_GET_ITEM(args, i));
    self->vectorcall = send_record_vectorcall;
    return (PyObject *)self;
}

static int send_record_traverse(PyObject *self, visitproc visit, void *arg)
{
    SendRecordObject *sr = (SendRecordObject *)self;
    for (int i = 0; i < SR_FIXED; i++)
        Py_VISIT(sr->fixed[i]);
    Py_VISIT(sr->cache.info);
    Py_VISIT(sr->cache.partitioner);
    Py_VISIT(sr->cache.q_info);
    Py_VISIT(sr->cache.queue);
    Py_VISIT(sr->cache.lock);
    Py_VISIT(sr->cache.batches);
    Py_VISIT(sr->cache.index);
    Py_VISIT(sr->cache.expiries);
    return 0;
}

static int send_record_clear(PyObject *self)
{
    for (int i = 0; i < SR_FIXED; i++)
        Py_CLEAR(((SendRecordObject *)self)->fixed[i]);
    send_cache_clear(&((SendRecordObject *)self)->cache);
    return 0;
}

static void send_record_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    send_record_clear(self);
    Py_TYPE(self)->tp_free(self);
}

PyDoc_STRVAR(send_record_doc,
    "SendRecord(topics, accumulator, clock, headers, metadata, max_payload, ignore_keys, wakeup, mono_clock,\n"
    "           fatal_check, cluster_at)(topic, partition, timestamp, key, value, callback)\n"
    "    -> future | NotImplemented\n\n"
    "KafkaProducer.send's common case whole, compiled: the checks send() makes before the append (a non-empty\n"
    "str topic, a partition and a timestamp that are None or non-negative ints, not a fatal error: ``fatal_check``\n"
    "None, (holder, attribute, fatal_state) fatal when ``getattr(holder, attribute) is fatal_state``, or a callable\n"
    "whose truth says it), ProducerMetadata.add_and_count on ``metadata`` (``mono_clock`` None: the monotonic\n"
    "clock, else its ms; ``cluster_at``: (holder, attribute) or a callable giving ``metadata.fetch()`` without\n"
    "its frame, None calls fetch()), then send_append (the first eight arguments are send_append's), which\n"
    "here also closes a full last batch and opens a new one by ``accumulator.open_batch`` when buffer.memory\n"
    "has its room at once (not for a transactional producer: its send adds a new batch's partition to the\n"
    "transaction). NotImplemented whenever that gives no future, or a check or the metadata needs the Python\n"
    "path (which then does it all again and raises as before); a record is appended only when a future is\n"
    "returned.");

static PyTypeObject SendRecordType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SendRecord",
    .tp_basicsize = sizeof(SendRecordObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = send_record_doc,
    .tp_new = send_record_new,
    .tp_traverse = send_record_traverse,
    .tp_clear = send_record_clear,
    .tp_dealloc = send_record_dealloc,
    .tp_vectorcall_offset = offsetof(SendRecordObject, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* ---- producer: KafkaProducer.send without its Python frame (SendMethod) ------------------------------------ */

/* KafkaProducer.send as a descriptor: on the class it gives the Python function itself; on a producer a bound
 * object (like a bound method: __self__, __func__, equal for the same producer) whose call reads the producer's
 * ``_send_record`` slot and, with no headers, calls that SendRecord directly: a future returned is send()'s
 * result, no Python frame run. Anything else goes through Python: NotImplemented (nothing appended) to
 * ``declined(producer, topic, value, key, partition, timestamp, headers, on_delivery, no_room)``, the rest of send()
 * (``no_room``: whether SendRecord found only no open batch with room and no memory free at once for a new one,
 * its checks and the metadata passed);
 * arguments it does not parse (too many, an unknown keyword: the TypeError), a producer without a SendRecord
 * (closed, transactional, no kernel) or whose ``_send_record`` is not a slot, to the function itself. */
enum { SEND_NARGS = 7 }; /* topic, value, key, partition, timestamp, headers, on_delivery */
static const char *const send_arg_names[SEND_NARGS] = {
    "topic", "value", "key", "partition", "timestamp", "headers", "on_delivery",
};
static PyObject *send_arg_str[SEND_NARGS];
static PyObject *send_record_name;
static slot_cache send_record_cache;

typedef struct {
    PyObject_HEAD
    PyObject *func;     /* the Python send() */
    PyObject *declined; /* its part after SendRecord declined */
} SendMethodObject;

typedef struct {
    PyObject_HEAD
    PyObject *func, *declined, *self;
    vectorcallfunc vectorcall;
} BoundSendObject;

static PyTypeObject BoundSendType;

/* the function called with the producer first and the call's own arguments (the TypeError of bad arguments) */
static PyObject *bound_send_python(BoundSendObject *b, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *m = PyMethod_New(b->func, b->self);
    if (m == NULL)
        return NULL;
    PyObject *r = PyObject_Vectorcall(m, args, nargsf, kwnames);
    Py_DECREF(m);
    return r;
}

static PyObject *bound_send_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    BoundSendObject *b = (BoundSendObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > SEND_NARGS || send_record_name == NULL)
        return bound_send_python(b, args, nargsf, kwnames);
    /* the arguments by position, None where not given (``given``: a bit per position) */
    PyObject *v[SEND_NARGS] = {Py_None, Py_None, Py_None, Py_None, Py_None, Py_None, Py_None};
    unsigned int given = (1u << nargs) - 1;
    for (Py_ssize_t i = 0; i < nargs; i++)
        v[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int at = -1;
        for (int j = 0; j < SEND_NARGS && at < 0; j++) {
            if (name == send_arg_str[j])
                at = j;
        }
        for (int j = 0; j < SEND_NARGS && at < 0; j++) {
            if (PyUnicode_Check(name) && PyUnicode_Compare(name, send_arg_str[j]) == 0)
                at = j;
        }
        if (at < 0 || (given & (1u << at))) /* unknown or given twice: Python's TypeError */
            return bound_send_python(b, args, nargsf, kwnames);
        v[at] = args[nargs + k];
        given |= 1u << at;
    }
    if (!(given & 1u)) /* no topic */
        return bound_send_python(b, args, nargsf, kwnames);
    Py_ssize_t off = slot_offset(b->self, send_record_name, &send_record_cache);
    PyObject *sr = off >= 0 ? *(PyObject **)((char *)b->self + off) : NULL; /* borrowed */
    if (sr == NULL || !Py_IS_TYPE(sr, &SendRecordType))
        return bound_send_python(b, args, nargsf, kwnames);
    int no_room = 0;
    if (v[5] == Py_None) {
        Py_INCREF(sr); /* another thread may close the producer (its slot set to None) during the call */
        /* (topic, partition, timestamp, key, value, on_delivery) */
        PyObject *rec[SR_CALL] = {v[0], v[3], v[4], v[2], v[1], v[6]};
        PyObject *future = send_record_core(((SendRecordObject *)sr)->fixed, rec, &no_room, &((SendRecordObject *)sr)->cache);
        Py_DECREF(sr);
        if (future != Py_NotImplemented)
            return future;
        Py_DECREF(future);
    }
    PyObject *call[2 + SEND_NARGS] = {b->self, v[0], v[1], v[2], v[3], v[4], v[5], v[6], no_room ? Py_True : Py_False};
    return PyObject_Vectorcall(b->declined, call, 2 + SEND_NARGS, NULL);
}

static int bound_send_traverse(PyObject *op, visitproc visit, void *arg)
{
    BoundSendObject *b = (BoundSendObject *)op;
    Py_VISIT(b->func);
    Py_VISIT(b->declined);
    Py_VISIT(b->self);
    return 0;
}

static void bound_send_dealloc(PyObject *op)
{
    BoundSendObject *b = (BoundSendObject *)op;
    PyObject_GC_UnTrack(op);
    Py_XDECREF(b->func);
    Py_XDECREF(b->declined);
    Py_XDECREF(b->self);
    PyObject_GC_Del(op);
}

static PyObject *bound_send_richcompare(PyObject *a, PyObject *o, int op)
{
    if ((op != Py_EQ && op != Py_NE) || !Py_IS_TYPE(o, &BoundSendType))
        Py_RETURN_NOTIMPLEMENTED;
    BoundSendObject *x = (BoundSendObject *)a, *y = (BoundSendObject *)o;
    int eq = x->func == y->func && x->self == y->self;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t bound_send_hash(PyObject *op)
{
    BoundSendObject *b = (BoundSendObject *)op;
    Py_hash_t h = PyObject_Hash(b->func);
    if (h == -1)
        return -1;
    h ^= (Py_hash_t)((uintptr_t)b->self >> 4);
    return h == -1 ? -2 : h;
}

static PyObject *bound_send_repr(PyObject *op)
{
    BoundSendObject *b = (BoundSendObject *)op;
    return PyUnicode_FromFormat("<bound method KafkaProducer.send of %R>", b->self);
}

/* __doc__, __name__, __qualname__, __module__, __annotations__...: the function's */
static PyObject *bound_send_getattro(PyObject *op, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr(op, name);
    if (r != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return r;
    PyErr_Clear();
    return PyObject_GetAttr(((BoundSendObject *)op)->func, name);
}

static PyObject *bound_send_wrapped(PyObject *op, void *closure)
{
    BoundSendObject *b = (BoundSendObject *)op;
    return PyMethod_New(b->func, b->self); /* inspect.signature(producer.send) follows it */
}

static PyMemberDef bound_send_members[] = {
    {"__func__", T_OBJECT, offsetof(BoundSendObject, func), READONLY, NULL},
    {"__self__", T_OBJECT, offsetof(BoundSendObject, self), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *bound_send_doc(PyObject *op, void *closure)
{
    return PyObject_GetAttrString(((BoundSendObject *)op)->func, "__doc__");
}

static PyGetSetDef bound_send_getset[] = {
    {"__wrapped__", bound_send_wrapped, NULL, NULL, NULL},
    {"__doc__", bound_send_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BoundSendType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.BoundSend",
    .tp_basicsize = sizeof(BoundSendObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "KafkaProducer.send bound to a producer (SendMethod's).",
    .tp_traverse = bound_send_traverse,
    .tp_dealloc = bound_send_dealloc,
    .tp_richcompare = bound_send_richcompare,
    .tp_hash = bound_send_hash,
    .tp_repr = bound_send_repr,
    .tp_getattro = bound_send_getattro,
    .tp_members = bound_send_members,
    .tp_getset = bound_send_getset,
    .tp_vectorcall_offset = offsetof(BoundSendObject, vectorcall),
    .tp_call = PyVectorcall_Call,
};

static PyObject *send_method_get(PyObject *op, PyObject *obj, PyObject *type)
{
    SendMethodObject *m = (SendMethodObject *)op;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(m->func);
    BoundSendObject *b = PyObject_GC_New(BoundSendObject, &BoundSendType);
    if (b == NULL)
        return NULL;
    b->func = Py_NewRef(m->func);
    b->declined = Py_NewRef(m->declined);
    b->self = Py_NewRef(obj);
    b->vectorcall = bound_send_vectorcall;
    PyObject_GC_Track((PyObject *)b);
    return (PyObject *)b;
}

static PyObject *send_method_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *func, *declined;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) || !PyArg_ParseTuple(args, "OO:SendMethod", &func, &declined))
        return NULL;
    if (send_record_name == NULL) {
        for (int i = 0; i < SEND_NARGS; i++) {
            if ((send_arg_str[i] = PyUnicode_InternFromString(send_arg_names[i])) == NULL)
                return NULL;
        }
        if ((send_record_name = PyUnicode_InternFromString("_send_record")) == NULL)
            return NULL;
    }
    SendMethodObject *self = (SendMethodObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->func = Py_NewRef(func);
    self->declined = Py_NewRef(declined);
    return (PyObject *)self;
}

static int send_method_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((SendMethodObject *)op)->func);
    Py_VISIT(((SendMethodObject *)op)->declined);
    return 0;
}

static void send_method_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    Py_XDECREF(((SendMethodObject *)op)->func);
    Py_XDECREF(((SendMethodObject *)op)->declined);
    Py_TYPE(op)->tp_free(op);
}

static PyMemberDef send_method_members[] = {
    {"__func__", T_OBJECT, offsetof(SendMethodObject, func), READONLY, NULL},
    {"__wrapped__", T_OBJECT, offsetof(SendMethodObject, func), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(send_method_doc,
    "SendMethod(send, declined): KafkaProducer.send's descriptor. On the class it is ``send`` itself; on a\n"
    "producer a bound callable with send's arguments that calls the producer's ``_send_record`` (a SendRecord)\n"
    "without a Python frame when there are no headers, and returns its future; when it declines (NotImplemented,\n"
    "nothing appended) it returns ``declined(producer, topic, value, key, partition, timestamp, headers,\n"
    "on_delivery, no_room)`` (``no_room`` True: the record passed send()'s checks and the metadata and only found\n"
    "no open batch with room and no memory free at once for a new one); without a SendRecord, or for arguments\n"
    "it does not parse, ``send(producer, ...)``.");

static PyTypeObject SendMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SendMethod",
    .tp_basicsize = sizeof(SendMethodObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = send_method_doc,
    .tp_new = send_method_new,
    .tp_traverse = send_method_traverse,
    .tp_dealloc = send_method_dealloc,
    .tp_descr_get = send_method_get,
    .tp_members = send_method_members,
};

PyDoc_STRVAR(arrow_binary_items_doc,
    "arrow_binary_items(validity, offsets, data, offset, length, large) -> list[bytes | None] | None\n\n"
    "producer.batch_append.arrow_binary_items_reference compiled: the items of one Arrow binary or string array\n"
    "(large: 64-bit offsets) read from its buffers (validity bitmap or None, offsets, data or None), items\n"
    "offset..offset+length, a null as None. None, with nothing built, when a buffer is too short or an offset\n"
    "is out of order or outside the data (the reference reports it).");

static PyObject *k_arrow_binary_items(PyObject *self, PyObject *args)
{
    PyObject *validity, *offsets, *data;
    Py_ssize_t offset, length;
    int large;
    if (!PyArg_ParseTuple(args, "OOOnnp", &validity, &offsets, &data, &offset, &length, &large))
        return NULL;
    if (offset < 0 || length < 0)
        Py_RETURN_NONE;
    Py_buffer vb = {0}, ob = {0}, db = {0};
    int have_v = 0, have_o = 0, have_d = 0;
    PyObject *out = NULL;
    if (validity != Py_None) {
        if (PyObject_GetBuffer(validity, &vb, PyBUF_SIMPLE) < 0)
            goto decline;
        have_v = 1;
    }
    if (PyObject_GetBuffer(offsets, &ob, PyBUF_SIMPLE) < 0)
        goto decline;
    have_o = 1;
    if (data != Py_None) {
        if (PyObject_GetBuffer(data, &db, PyBUF_SIMPLE) < 0)
            goto decline;
        have_d = 1;
    }
    const Py_ssize_t width = large ? 8 : 4;
    /* every bound is checked before a read: offsets offset..offset+length, bits offset..offset+length-1 */
    if (offset > (PY_SSIZE_T_MAX / width) - length - 1 || ob.len < (offset + length + 1) * width)
        goto decline;
    if (have_v && length > 0 && vb.len < (offset + length + 7) / 8)
        goto decline;
    const uint8_t *bits = have_v ? (const uint8_t *)vb.buf : NULL;
    const uint8_t *ob8 = (const uint8_t *)ob.buf;
    const uint8_t *dp = have_d ? (const uint8_t *)db.buf : NULL;
    const int64_t dlen = have_d ? (int64_t)db.len : 0;
    out = PyList_New(length);
    if (out == NULL)
        goto fail;
    int64_t start;
    if (large) {
        memcpy(&start, ob8 + offset * 8, 8);
    } else {
        int32_t s32;
        memcpy(&s32, ob8 + offset * 4, 4);
        start = s32;
    }
    for (Py_ssize_t i = 0; i < length; i++) {
        int64_t end;
        if (large) {
            memcpy(&end, ob8 + (offset + i + 1) * 8, 8);
        } else {
            int32_t e32;
            memcpy(&e32, ob8 + (offset + i + 1) * 4, 4);
            end = e32;
        }
        if (start < 0 || end < start || end > dlen) {
            Py_CLEAR(out);
            goto decline;
        }
        PyObject *item;
        Py_ssize_t j = offset + i;
        if (bits != NULL && !((bits[j >> 3] >> (j & 7)) & 1)) {
            item = Py_None;
            Py_INCREF(item);
        } else {
            item = PyBytes_FromStringAndSize(end > start ? (const char *)dp + start : "", (Py_ssize_t)(end - start));
            if (item == NULL) {
                Py_CLEAR(out);
                goto fail;
            }
        }
        PyList_SET_ITEM(out, i, item);
        start = end;
    }
    goto done;
decline:
    PyErr_Clear();
    out = Py_None;
    Py_INCREF(out);
    goto done;
fail:
    out = NULL;
done:
    if (have_v)
        PyBuffer_Release(&vb);
    if (have_o)
        PyBuffer_Release(&ob);
    if (have_d)
        PyBuffer_Release(&db);
    return out;
}

PyDoc_STRVAR(pending_columns_doc,
    "pending_columns(pending, with_timestamps) -> (timestamps | None, key_sizes, value_sizes) | None\n\n"
    "The per-record columns ProducerBatch.complete_records collects, compiled: each record's timestamp (when\n"
    "asked) and key/value size (-1 for None); a column whose records all have the same value (a batch of at least\n"
    "one record) is that int, not a list. None when a record is not a (timestamp, key, value, ...) tuple of\n"
    "bytes or None.");

/* A new reference to the int n: last (the int of *last_n, or NULL) when it has that value, else a new one. */
static inline PyObject *size_int(PyObject *last, Py_ssize_t *last_n, Py_ssize_t n)
{
    if (last != NULL && n == *last_n)
        return Py_NewRef(last);
    *last_n = n;
    return PyLong_FromSsize_t(n);
}

/* ==== I/O thread (h/iosend): a completed batch's per-record columns read without the full record parse ======= */

/* A varint of one or two bytes (a size or delta under 8192: most of them) without rd_varint's loop; longer ones
 * through it. */
static inline int skim_varint(const uint8_t **pp, const uint8_t *end, int max_bytes, int64_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && !(p[0] & 0x80)) {
        uint64_t u = p[0];
        *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
        *pp = p + 1;
        return 0;
    }
    if (end - p >= 2 && !(p[1] & 0x80)) {
        uint64_t u = (uint64_t)(p[0] & 0x7F) | ((uint64_t)p[1] << 7);
        *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
        *pp = p + 2;
        return 0;
    }
    return rd_varint(pp, end, max_bytes, out);
}

/* What pending_columns reads of a record of a PendingRecords' buffer (its timestamp delta, key and value sizes),
 * the record then skipped whole by its length: parse_record without the offset delta's, the key's and value's
 * pointers and the headers' walk. The buffer is append's own encoding (every record parse_record accepts), so the
 * columns are parse_record's; bounds are checked all the same (-1: not a record). */
static inline int skim_record(const uint8_t **pp, const uint8_t *end, rec_t *r)
{
    const uint8_t *p = *pp;
    int64_t length, offset_delta;
    if (skim_varint(&p, end, 5, &length) < 0 || length < MIN_RECORD_SIZE - 1 || length > end - p)
        return -1;
    const uint8_t *rec_end = p + length;
    p++; /* attributes */
    if (skim_varint(&p, rec_end, 10, &r->ts_delta) < 0 || skim_varint(&p, rec_end, 5, &offset_delta) < 0
        || skim_varint(&p, rec_end, 5, &r->key_len) < 0 || r->key_len < -1 || r->key_len > rec_end - p)
        return -1;
    if (r->key_len > 0)
        p += r->key_len;
    if (skim_varint(&p, rec_end, 5, &r->value_len) < 0 || r->value_len < -1 || r->value_len > rec_end - p)
        return -1;
    *pp = rec_end;
    return 0;
}

/* ==== end of h/iosend's columns region ========================================================================= */

/* pending_columns of a PendingRecords in buffer mode: read from its records' bytes */
static PyObject *pending_columns_encoded(PendingObject *p, int with_ts)
{
    Py_ssize_t n = p->count;
    int same_k = n > 0, same_v = n > 0, same_ts = with_ts && n > 0;
    int64_t kn0 = 0, vn0 = 0, ts0 = 0;
    const uint8_t *q = p->buf, *end = p->buf + p->len;
    rec_t r;
    if (n > 0 && !(p->col_mixed & (PCOL_KEY | PCOL_VALUE | PCOL_UNKNOWN)) && (!with_ts || !(p->col_mixed & PCOL_TS))) {
        /* (h/sender6) every record's columns are the first's (noted as they were written): no walk */
        PyObject *ts = with_ts ? PyLong_FromLongLong(p->base_ts + p->col_td) : Py_NewRef(Py_None);
        PyObject *ks = PyLong_FromLongLong(p->col_kn), *vs = PyLong_FromLongLong(p->col_vn);
        PyObject *out = ts == NULL || ks == NULL || vs == NULL ? NULL : PyTuple_Pack(3, ts, ks, vs);
        Py_XDECREF(ts);
        Py_XDECREF(ks);
        Py_XDECREF(vs);
        return out;
    }
    /* (h/sender6) which columns are one value, and that value, as noted when the records were written: one walk,
     * for the columns that are not */
    if (n > 0 && (p->col_mixed & PCOL_UNKNOWN)) {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (skim_record(&q, end, &r) < 0)
                Py_RETURN_NONE; /* (cannot happen: our own bytes) */
            if (i == 0) {
                kn0 = r.key_len;
                vn0 = r.value_len;
                ts0 = r.ts_delta;
                continue;
            }
            same_k = same_k && r.key_len == kn0;
            same_v = same_v && r.value_len == vn0;
            same_ts = same_ts && r.ts_delta == ts0;
        }
    } else if (n > 0) {
        same_k = !(p->col_mixed & PCOL_KEY);
        same_v = !(p->col_mixed & PCOL_VALUE);
        same_ts = with_ts && !(p->col_mixed & PCOL_TS);
        kn0 = p->col_kn;
        vn0 = p->col_vn;
        ts0 = p->col_td;
    }
    PyObject *ts = !with_ts ? Py_NewRef(Py_None) : same_ts ? PyLong_FromLongLong(p->base_ts + ts0) : PyList_New(n);
    PyObject *ks = same_k ? PyLong_FromLongLong(kn0) : PyList_New(n), *vs = same_v ? PyLong_FromLongLong(vn0) : PyList_New(n);
    if (ts == NULL || ks == NULL || vs == NULL)
        goto fail;
    if (same_k && same_v && (!with_ts || same_ts))
        return Py_BuildValue("(NNN)", ts, ks, vs);
    /* the records of a batch mostly have the sizes and timestamp of the one before: its int is shared, not made */
    PyObject *k = NULL, *v = NULL, *t = NULL;
    Py_ssize_t last_kn = 0, last_vn = 0;
    int64_t last_ts = 0;
    q = p->buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (skim_record(&q, end, &r) < 0) { /* (cannot happen: our own bytes) */
            Py_DECREF(ts);
            Py_DECREF(ks);
            Py_DECREF(vs);
            Py_RETURN_NONE;
        }
        if (!same_k) {
            if ((k = size_int(k, &last_kn, (Py_ssize_t)r.key_len)) == NULL)
                goto fail;
            PyList_SET_ITEM(ks, i, k); /* (the lists keep k, v and t alive for the next record) */
        }
        if (!same_v) {
            if ((v = size_int(v, &last_vn, (Py_ssize_t)r.value_len)) == NULL)
                goto fail;
            PyList_SET_ITEM(vs, i, v);
        }
        if (with_ts && !same_ts) {
            if (t == NULL || r.ts_delta != last_ts) {
                last_ts = r.ts_delta;
                if ((t = PyLong_FromLongLong(p->base_ts + r.ts_delta)) == NULL)
                    goto fail;
            } else
                Py_INCREF(t);
            PyList_SET_ITEM(ts, i, t);
        }
    }
    return Py_BuildValue("(NNN)", ts, ks, vs);
fail:
    Py_XDECREF(ts);
    Py_XDECREF(ks);
    Py_XDECREF(vs);
    return NULL;
}

static PyObject *k_pending_columns(PyObject *self, PyObject *args)
{
    PyObject *pending;
    int with_ts;
    if (!PyArg_ParseTuple(args, "Op", &pending, &with_ts))
        return NULL;
    if (is_pending(pending)) {
        if (((PendingObject *)pending)->items == NULL)
            return pending_columns_encoded((PendingObject *)pending, with_ts);
        pending = ((PendingObject *)pending)->items;
    }
    if (!PyList_Check(pending)) {
        PyErr_SetString(PyExc_TypeError, "pending_columns: pending must be a list or a PendingRecords");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(pending);
    /* first pass, allocating nothing: a column of one value (the usual send_batch batch: no key, one value size,
     * one millisecond) is kept as that int */
    int same_k = n > 0, same_v = n > 0, same_ts = with_ts && n > 0;
    Py_ssize_t kn0 = 0, vn0 = 0;
    PyObject *ts0 = NULL;
    int64_t tv0 = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PyList_GET_ITEM(pending, i);
        const char *d;
        Py_ssize_t kn, vn;
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) < 3 || bytes_like(PyTuple_GET_ITEM(rec, 1), &d, &kn) < 0 ||
            bytes_like(PyTuple_GET_ITEM(rec, 2), &d, &vn) < 0)
            Py_RETURN_NONE;
        if (i == 0) {
            kn0 = kn;
            vn0 = vn;
            ts0 = PyTuple_GET_ITEM(rec, 0);
            same_ts = same_ts && PyLong_CheckExact(ts0);
            if (same_ts && !compact_int(ts0, &tv0)) {
                int overflow = 0;
                tv0 = (int64_t)PyLong_AsLongLongAndOverflow(ts0, &overflow);
                same_ts = !overflow; /* (an int over 64 bits: a list) */
            }
            continue;
        }
        same_k = same_k && kn == kn0;
        same_v = same_v && vn == vn0;
        if (same_ts) {
            /* (equal ints of a batch are often distinct objects: compared by value) */
            PyObject *t = PyTuple_GET_ITEM(rec, 0);
            int64_t tv;
            if (t != ts0 && compact_int(t, &tv))
                same_ts = tv == tv0;
            else if (t != ts0) {
                int overflow = 0;
                same_ts = PyLong_CheckExact(t) && (int64_t)PyLong_AsLongLongAndOverflow(t, &overflow) == tv0 && !overflow;
            }
        }
    }
    PyObject *ts = !with_ts ? Py_NewRef(Py_None) : same_ts ? Py_NewRef(ts0) : PyList_New(n);
    PyObject *ks = same_k ? PyLong_FromSsize_t(kn0) : PyList_New(n), *vs = same_v ? PyLong_FromSsize_t(vn0) : PyList_New(n);
    PyObject *out = NULL;
    if (ts == NULL || ks == NULL || vs == NULL)
        goto done;
    if (same_k && same_v && (!with_ts || same_ts))
        return Py_BuildValue("(NNN)", ts, ks, vs);
    /* one pass; the records of a batch mostly have the sizes of the one before: its int is shared, not made */
    PyObject *k = NULL, *v = NULL;
    Py_ssize_t last_kn = 0, last_vn = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PyList_GET_ITEM(pending, i);
        const char *d;
        Py_ssize_t kn, vn;
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) < 3 || bytes_like(PyTuple_GET_ITEM(rec, 1), &d, &kn) < 0 ||
            bytes_like(PyTuple_GET_ITEM(rec, 2), &d, &vn) < 0) {
            out = Py_NewRef(Py_None); /* (the lists, partly filled, are dropped) */
            goto done;
        }
        if (!same_k) {
            if ((k = size_int(k, &last_kn, kn)) == NULL)
                goto done;
            PyList_SET_ITEM(ks, i, k); /* (the lists keep k and v alive for the next record) */
        }
        if (!same_v) {
            if ((v = size_int(v, &last_vn, vn)) == NULL)
                goto done;
            PyList_SET_ITEM(vs, i, v);
        }
        if (with_ts && !same_ts)
            PyList_SET_ITEM(ts, i, Py_NewRef(PyTuple_GET_ITEM(rec, 0)));
    }
    return Py_BuildValue("(NNN)", ts, ks, vs);
done:
    Py_XDECREF(ts);
    Py_XDECREF(ks);
    Py_XDECREF(vs);
    return out;
}

/* ---- varint entry points -------------------------------------------------------------------------- */

PyDoc_STRVAR(read_varint_doc, "read_varint(buf, pos, max_bytes=10) -> (value, pos): varint.read_varint compiled.");

static PyObject *k_read_varint(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3 || py_read_varint == NULL)
        goto reference;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long maxb = nargs == 3 ? PyLong_AsLong(args[2]) : 10;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        goto reference;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        goto reference;
    }
    if (pos < 0 || pos > view.len || maxb < 1 || maxb > 10) {
        PyBuffer_Release(&view);
        goto reference;
    }
    const uint8_t *p = (const uint8_t *)view.buf + pos;
    int64_t v;
    int rc = rd_varint(&p, (const uint8_t *)view.buf + view.len, (int)maxb, &v);
    Py_ssize_t after = p - (const uint8_t *)view.buf;
    PyBuffer_Release(&view);
    if (rc < 0)
        goto reference;
    return Py_BuildValue("(Ln)", (long long)v, after);
reference: /* errors, negative positions and values over 64 bits: the reference answers */
    return PyObject_Vectorcall(py_read_varint, args, (size_t)nargs, NULL);
}

/* ---- produce request frames ------------------------------------------------------------------------ */

/* A growing output of chunks: ``cur`` is the bytearray being written; a large records payload is its own
 * chunk (the object itself, not copied), as the reference Writer does. */
typedef struct {
    PyObject *chunks;  /* list */
    PyObject *cur;     /* bytearray */
} frame_out;

static int fo_put(frame_out *o, const void *p, Py_ssize_t n)
{
    Py_ssize_t len = PyByteArray_GET_SIZE(o->cur);
    if (PyByteArray_Resize(o->cur, len + n) < 0)
        return -1;
    memcpy(PyByteArray_AS_STRING(o->cur) + len, p, (size_t)n);
    return 0;
}

static int fo_be(frame_out *o, uint64_t v, int bytes)
{
    uint8_t b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    return fo_put(o, b, bytes);
}

static int fo_uvarint(frame_out *o, uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return fo_put(o, b, n);
}

/* 1: written, 0: not handled (None, over 32767 bytes, not a str: the reference decides), -1: error */
static int fo_string(frame_out *o, PyObject *s, int compact, int nullable)
{
    if (s == Py_None) {
        if (!nullable)
            return 0;
        return (compact ? fo_put(o, "\0", 1) : fo_put(o, "\xff\xff", 2)) < 0 ? -1 : 1;
    }
    if (!PyUnicode_CheckExact(s))
        return 0;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (n > 0x7FFF)
        return 0;
    if ((compact ? fo_uvarint(o, (uint64_t)n + 1) : fo_be(o, (uint64_t)n, 2)) < 0 || fo_put(o, u, n) < 0)
        return -1;
    return 1;
}

/* an int attribute of obj within [lo, hi]; 1 ok, 0 not handled, -1 error */
static int int_attr(PyObject *obj, const char *name, long long lo, long long hi, long long *out)
{
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (v == NULL)
        return -1;
    if (!PyLong_CheckExact(v)) {
        Py_DECREF(v);
        return 0;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (overflow || x < lo || x > hi)
        return 0;
    *out = x;
    return 1;
}

/* 1 when obj's _unknown_tagged_fields is None or empty, 0 otherwise, -1 on error */
static int no_unknown_tags(PyObject *obj)
{
    PyObject *t = PyObject_GetAttrString(obj, "_unknown_tagged_fields");
    if (t == NULL)
        return -1;
    int empty = t == Py_None || (PyList_CheckExact(t) && PyList_GET_SIZE(t) == 0);
    Py_DECREF(t);
    return empty;
}

#define INLINE_RECORDS_MAX 512

/* ---- producer: a produce request's body straight from the drained batches (Sender._send_produce_request) -------- */

/* The Sender's request type (a ProduceRequest whose topic_data is built only when read), set by
 * produce_request_setup(); its ``parts`` slot is the [(TopicPartition, records bytes)] drained, or None once
 * topic_data was built (then the attribute path of produce_frame encodes it). */
static PyTypeObject *parts_request_type = NULL;
static PyObject *s_parts = NULL, *s_tid = NULL, *s_acks = NULL, *s_timeout = NULL;

/* BatchOutcome and the FINISHED state (complete_produce_response's outcomes), set by sender_setup() */
static PyTypeObject *outcome_type = NULL;
static PyObject *finished_state = NULL;

PyDoc_STRVAR(sender_setup_doc,
"sender_setup(request_type, BatchOutcome, FINISHED): the ProduceRequest subclass whose ``parts``\n"
"encode_produce_request writes directly, and the outcome type and state complete_produce_response completes.");

static PyObject *k_sender_setup(PyObject *self, PyObject *args)
{
    PyObject *arg, *otype, *finished;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &arg, &PyType_Type, &otype, &finished))
        return NULL;
    if (s_parts == NULL) {
        if ((s_parts = PyUnicode_InternFromString("parts")) == NULL
            || (s_tid = PyUnicode_InternFromString("transactional_id")) == NULL
            || (s_acks = PyUnicode_InternFromString("acks")) == NULL
            || (s_timeout = PyUnicode_InternFromString("timeout_ms")) == NULL)
            return NULL;
    }
    Py_INCREF(arg);
    Py_XSETREF(parts_request_type, (PyTypeObject *)arg);
    Py_INCREF(otype);
    Py_XSETREF(outcome_type, (PyTypeObject *)otype);
    Py_INCREF(finished);
    Py_XSETREF(finished_state, finished);
    Py_RETURN_NONE;
}

/* A records field of bytes ``rec`` (its length, then the payload; a payload of INLINE_RECORDS_MAX bytes or more is
 * its own chunk, the object itself, and a fresh bytearray goes on after it): 0, or -1 on error. */
static int fo_records(frame_out *o, PyObject *rec, int flexible)
{
    Py_ssize_t n = PyBytes_GET_SIZE(rec);
    if ((flexible ? fo_uvarint(o, (uint64_t)n + 1) : fo_be(o, (uint64_t)n, 4)) < 0)
        return -1;
    if (n < INLINE_RECORDS_MAX)
        return fo_put(o, PyBytes_AS_STRING(rec), n);
    PyObject *next = PyByteArray_FromStringAndSize(NULL, 0);
    if (next == NULL || PyList_Append(o->chunks, o->cur) < 0 || PyList_Append(o->chunks, rec) < 0) {
        Py_XDECREF(next);
        return -1;
    }
    Py_SETREF(o->cur, next);
    return 0;
}

/* an exact int within [lo, hi]: 1 (in *out), 0 otherwise */
static inline int int_in(PyObject *v, long long lo, long long hi, long long *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || x < lo || x > hi)
        return 0;
    *out = x;
    return 1;
}

/* The body of a ProduceRequest at a version 3-11: transactional id, acks, timeout, then ``parts``
 * ([(TopicPartition, records bytes)]) grouped by topic in first-seen order, partitions in their order, as
 * Sender._send_produce_request groups them; large records payloads are their own chunks, as produce_frame.
 * 1 written, 0 not handled (a value the reference must judge), -1 error. */
static int produce_request_data(frame_out *o, PyObject *tid, PyObject *acks_o, PyObject *timeout_o, PyObject *parts,
                                int flexible)
{
    long long acks, timeout_ms;
    int rc;
    if (!PyList_CheckExact(parts) || !int_in(acks_o, -32768, 32767, &acks) || !int_in(timeout_o, INT32_MIN, INT32_MAX, &timeout_ms))
        return 0;
    if ((rc = fo_string(o, tid, flexible, 1)) <= 0)
        return rc;
    if (fo_be(o, (uint64_t)(uint16_t)(int16_t)acks, 2) < 0 || fo_be(o, (uint64_t)(uint32_t)(int32_t)timeout_ms, 4) < 0)
        return -1;
    PyObject *by_topic = PyDict_New();
    if (by_topic == NULL)
        return -1;
    rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++) {
        PyObject *part = PyList_GET_ITEM(parts, i), *tp;
        if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) != 2 || !PyTuple_Check(tp = PyTuple_GET_ITEM(part, 0))
            || PyTuple_GET_SIZE(tp) != 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(tp, 0))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(tp, 1)) || !PyBytes_CheckExact(PyTuple_GET_ITEM(part, 1)))
            goto done;
        PyObject *topic = PyTuple_GET_ITEM(tp, 0);
        PyObject *lst = PyDict_GetItemWithError(by_topic, topic);
        if (lst == NULL) {
            if (PyErr_Occurred() || (lst = PyList_New(0)) == NULL)
                goto fail;
            int set = PyDict_SetItem(by_topic, topic, lst);
            Py_DECREF(lst); /* the dict holds it */
            if (set < 0)
                goto fail;
        }
        if (PyList_Append(lst, part) < 0)
            goto fail;
    }
    if ((flexible ? fo_uvarint(o, (uint64_t)PyDict_GET_SIZE(by_topic) + 1) : fo_be(o, (uint64_t)PyDict_GET_SIZE(by_topic), 4)) < 0)
        goto fail;
    Py_ssize_t pos = 0;
    PyObject *topic, *lst;
    while (PyDict_Next(by_topic, &pos, &topic, &lst)) {
        if ((rc = fo_string(o, topic, flexible, 0)) < 0)
            goto fail;
        if (rc == 0)
            goto done;
        rc = 0;
        Py_ssize_t np = PyList_GET_SIZE(lst);
        if ((flexible ? fo_uvarint(o, (uint64_t)np + 1) : fo_be(o, (uint64_t)np, 4)) < 0)
            goto fail;
        for (Py_ssize_t j = 0; j < np; j++) {
            PyObject *part = PyList_GET_ITEM(lst, j), *rec = PyTuple_GET_ITEM(part, 1);
            long long index;
            if (!int_in(PyTuple_GET_ITEM(PyTuple_GET_ITEM(part, 0), 1), INT32_MIN, INT32_MAX, &index))
                goto done;
            if (fo_be(o, (uint64_t)(uint32_t)(int32_t)index, 4) < 0 || fo_records(o, rec, flexible) < 0)
                goto fail;
            if (flexible && fo_put(o, "\0", 1) < 0)
                goto fail;
        }
        if (flexible && fo_put(o, "\0", 1) < 0)
            goto fail;
    }
    if (flexible && fo_put(o, "\0", 1) < 0)
        goto fail;
    rc = 1;
done:
    Py_DECREF(by_topic);
    return rc;
fail:
    Py_DECREF(by_topic);
    return -1;
}

/* produce_frame's body for the Sender's request type while its ``parts`` are set: 1 written, 0 not handled, -1
 * error, 2 not such a body (produce_frame goes on with the attributes). */
static int produce_parts_body(frame_out *o, PyObject *body, int flexible)
{
    if (parts_request_type == NULL || Py_TYPE(body) != parts_request_type)
        return 2;
    PyObject *parts = PyObject_GetAttr(body, s_parts);
    if (parts == NULL)
        return -1;
    if (parts == Py_None) {
        Py_DECREF(parts);
        return 2;
    }
    PyObject *tid = PyObject_GetAttr(body, s_tid), *acks = NULL, *timeout = NULL;
    int rc = -1;
    if (tid != NULL && (acks = PyObject_GetAttr(body, s_acks)) != NULL && (timeout = PyObject_GetAttr(body, s_timeout)) != NULL)
        rc = produce_request_data(o, tid, acks, timeout, parts, flexible);
    Py_DECREF(parts);
    Py_XDECREF(tid);
    Py_XDECREF(acks);
    Py_XDECREF(timeout);
    return rc;
}

PyDoc_STRVAR(produce_request_data_doc,
"produce_request_data(transactional_id, acks, timeout_ms, parts, version) -> bytes or None\n\n"
"Reference: ProduceRequest(transactional_id, acks, timeout_ms, topic_data).encode(version) where topic_data\n"
"groups ``parts`` ([(TopicPartition, records bytes)]) by topic in first-seen order, as\n"
"Sender._send_produce_request does (the body encode_produce_request writes for the Sender's request type).\n"
"None for a version outside 3-11 or a value the reference must judge.");

static PyObject *k_produce_request_data(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "produce_request_data takes 5 arguments");
        return NULL;
    }
    long long version;
    if (!int_in(args[4], 3, 11, &version))
        Py_RETURN_NONE;
    frame_out o;
    o.chunks = PyList_New(0);
    o.cur = PyByteArray_FromStringAndSize(NULL, 0);
    PyObject *out = NULL;
    if (o.chunks == NULL || o.cur == NULL)
        goto done;
    int rc = produce_request_data(&o, args[0], args[1], args[2], args[3], version >= 9);
    if (rc < 0)
        goto done;
    if (rc == 0) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (PyList_Append(o.chunks, o.cur) < 0)
        goto done;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o.chunks); i++)
        total += Py_SIZE(PyList_GET_ITEM(o.chunks, i));
    if ((out = PyBytes_FromStringAndSize(NULL, total)) == NULL)
        goto done;
    char *w = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o.chunks); i++) {
        PyObject *c = PyList_GET_ITEM(o.chunks, i);
        Py_ssize_t n = Py_SIZE(c);
        memcpy(w, PyBytes_Check(c) ? PyBytes_AS_STRING(c) : PyByteArray_AS_STRING(c), (size_t)n);
        w += n;
    }
done:
    Py_XDECREF(o.chunks);
    Py_XDECREF(o.cur);
    return out;
}


/* the body of encode_produce_request; 1 written, 0 not handled, -1 error */
static int produce_frame(frame_out *o, PyObject *body, int version, long long correlation_id, PyObject *client_id)
{
    int flexible = version >= 9, rc;
    long long acks, timeout_ms;
    /* size prefix (patched at the end), then the request header (v2 when flexible, else v1) */
    if (fo_put(o, "\0\0\0\0", 4) < 0 || fo_be(o, 0, 2) < 0 || fo_be(o, (uint64_t)version, 2) < 0
        || fo_be(o, (uint64_t)(uint32_t)(int32_t)correlation_id, 4) < 0)
        return -1;
    if ((rc = fo_string(o, client_id, 0, 1)) <= 0)
        return rc;
    if (flexible && fo_put(o, "\0", 1) < 0)
        return -1;
    if ((rc = produce_parts_body(o, body, flexible)) != 2)
        return rc;
    if ((rc = no_unknown_tags(body)) <= 0)
        return rc;
    PyObject *tid = PyObject_GetAttrString(body, "transactional_id");
    if (tid == NULL)
        return -1;
    rc = fo_string(o, tid, flexible, 1);
    Py_DECREF(tid);
    if (rc <= 0)
        return rc;
    if ((rc = int_attr(body, "acks", -32768, 32767, &acks)) <= 0
        || (rc = int_attr(body, "timeout_ms", INT32_MIN, INT32_MAX, &timeout_ms)) <= 0)
        return rc;
    if (fo_be(o, (uint64_t)(uint16_t)(int16_t)acks, 2) < 0 || fo_be(o, (uint64_t)(uint32_t)(int32_t)timeout_ms, 4) < 0)
        return -1;
    PyObject *topics = PyObject_GetAttrString(body, "topic_data");
    if (topics == NULL)
        return -1;
    rc = 0;
    if (!PyList_CheckExact(topics))
        goto done;
    Py_ssize_t nt = PyList_GET_SIZE(topics);
    if ((flexible ? fo_uvarint(o, (uint64_t)nt + 1) : fo_be(o, (uint64_t)nt, 4)) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topics); i++) {
        PyObject *t = PyList_GET_ITEM(topics, i);
        if ((rc = no_unknown_tags(t)) <= 0)
            goto done;
        PyObject *name = PyObject_GetAttrString(t, "name");
        if (name == NULL)
            goto fail;
        rc = fo_string(o, name, flexible, 0);
        Py_DECREF(name);
        if (rc <= 0)
            goto done;
        PyObject *parts = PyObject_GetAttrString(t, "partition_data");
        if (parts == NULL)
            goto fail;
        rc = 0;
        if (!PyList_CheckExact(parts)) {
            Py_DECREF(parts);
            goto done;
        }
        Py_ssize_t np = PyList_GET_SIZE(parts);
        if ((flexible ? fo_uvarint(o, (uint64_t)np + 1) : fo_be(o, (uint64_t)np, 4)) < 0) {
            Py_DECREF(parts);
            goto fail;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(parts); j++) {
            PyObject *pd = PyList_GET_ITEM(parts, j);
            long long index;
            if ((rc = no_unknown_tags(pd)) <= 0 || (rc = int_attr(pd, "index", INT32_MIN, INT32_MAX, &index)) <= 0) {
                Py_DECREF(parts);
                goto done;
            }
            if (fo_be(o, (uint64_t)(uint32_t)(int32_t)index, 4) < 0) {
                Py_DECREF(parts);
                goto fail;
            }
            PyObject *rec = PyObject_GetAttrString(pd, "records");
            if (rec == NULL) {
                Py_DECREF(parts);
                goto fail;
            }
            int ok;
            if (rec == Py_None) {
                ok = flexible ? fo_put(o, "\0", 1) : fo_put(o, "\xff\xff\xff\xff", 4);
            } else if (!PyBytes_CheckExact(rec)) {
                Py_DECREF(rec);
                Py_DECREF(parts);
                rc = 0;
                goto done;
            } else {
                ok = fo_records(o, rec, flexible);
            }
            Py_DECREF(rec);
            if (ok < 0) {
                Py_DECREF(parts);
                goto fail;
            }
            if (flexible && fo_put(o, "\0", 1) < 0) {
                Py_DECREF(parts);
                goto fail;
            }
        }
        Py_DECREF(parts);
        if (flexible && fo_put(o, "\0", 1) < 0)
            goto fail;
    }
    if (flexible && fo_put(o, "\0", 1) < 0)
        goto fail;
    rc = 1;
done:
    Py_DECREF(topics);
    return rc;
fail:
    Py_DECREF(topics);
    return -1;
}

/* The (version, correlation id) arguments of the produce frame functions: 1 when the version is one they handle
 * (3-11) and the id fits int32, 0 otherwise (the reference decides), -1 on a wrong argument count. */
static int produce_frame_args(const char *fn, PyObject *const *args, Py_ssize_t nargs, int *version, long long *cid)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "%s takes 4 arguments", fn);
        return -1;
    }
    long v = PyLong_AsLong(args[1]);
    long long c = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (v < 3 || v > 11 || c < INT32_MIN || c > INT32_MAX)
        return 0;
    *version = (int)v;
    *cid = c;
    return 1;
}

PyDoc_STRVAR(encode_produce_request_doc,
"encode_produce_request(body, version, correlation_id, client_id) -> list of chunks or None\n\n"
"Reference: protocol.headers.encode_request for a ProduceRequest at versions 3-11: the same chunks (bytearrays,\n"
"with a records payload of 512 bytes or more as its own chunk). None for anything else (other versions,\n"
"tagged fields, a records payload that is not bytes, a value out of range): the reference decides.");

static PyObject *k_encode_produce_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int version;
    long long correlation_id;
    int ok = produce_frame_args("encode_produce_request", args, nargs, &version, &correlation_id);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    frame_out o;
    o.chunks = PyList_New(0);
    o.cur = PyByteArray_FromStringAndSize(NULL, 0);
    if (o.chunks == NULL || o.cur == NULL)
        goto fail;
    int rc = produce_frame(&o, args[0], version, correlation_id, args[3]);
    if (rc < 0)
        goto fail;
    if (rc == 0) {
        Py_DECREF(o.chunks);
        Py_DECREF(o.cur);
        Py_RETURN_NONE;
    }
    if (PyByteArray_GET_SIZE(o.cur) > 0 && PyList_Append(o.chunks, o.cur) < 0)
        goto fail;
    Py_CLEAR(o.cur);
    /* the size prefix: every byte after it */
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o.chunks); i++)
        total += Py_SIZE(PyList_GET_ITEM(o.chunks, i));
    total -= 4;
    if (total > INT32_MAX) {
        Py_DECREF(o.chunks);
        Py_RETURN_NONE;
    }
    uint8_t *first = (uint8_t *)PyByteArray_AS_STRING(PyList_GET_ITEM(o.chunks, 0));
    for (int i = 0; i < 4; i++)
        first[i] = (uint8_t)((uint64_t)total >> (8 * (3 - i)));
    return o.chunks;
fail:
    Py_XDECREF(o.chunks);
    Py_XDECREF(o.cur);
    return NULL;
}

/* ---- produce responses ----------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
} rd_t;

static int rd_be(rd_t *r, int bytes, int64_t *out)
{
    if (r->end - r->p < bytes)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | r->p[i];
    r->p += bytes;
    /* sign-extend */
    if (bytes < 8 && (v >> (8 * bytes - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * bytes);
    *out = (int64_t)v;
    return 0;
}

static int rd_uvarint32(rd_t *r, uint32_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (r->p >= r->end)
            return -1;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            if (v > 0xFFFFFFFFu)
                return -1;
            *out = (uint32_t)v;
            return 0;
        }
    }
    return -1;
}

/* an array length (int32, or compact: unsigned varint - 1); -1 on anything the reference must judge (null, a
 * count larger than the bytes left could hold at min_size bytes each) */
static Py_ssize_t rd_count(rd_t *r, int compact, int min_size)
{
    int64_t n;
    if (compact) {
        uint32_t u;
        if (rd_uvarint32(r, &u) < 0 || u == 0)
            return -1;
        n = (int64_t)u - 1;
    } else if (rd_be(r, 4, &n) < 0 || n < 0) {
        return -1;
    }
    if (n * min_size > r->end - r->p)
        return -1;
    return (Py_ssize_t)n;
}

/* a string (nullable or not); NULL with no error set: decline */
static PyObject *rd_string(rd_t *r, int compact, int nullable)
{
    int64_t n;
    if (compact) {
        uint32_t u;
        if (rd_uvarint32(r, &u) < 0)
            return NULL;
        n = (int64_t)u - 1;
    } else if (rd_be(r, 2, &n) < 0) {
        return NULL;
    }
    if (n < 0) {
        if (!nullable || (!compact && n != -1))
            return NULL;
        Py_RETURN_NONE;
    }
    if (n > 0x7FFF || n > r->end - r->p)
        return NULL;
    PyObject *out = PyUnicode_DecodeUTF8((const char *)r->p, (Py_ssize_t)n, NULL);
    if (out == NULL) {
        PyErr_Clear();
        return NULL;
    }
    r->p += n;
    return out;
}

/* an empty tag section (one zero byte); anything else is left to the reference */
static int rd_no_tags(rd_t *r)
{
    if (r->p >= r->end || *r->p != 0)
        return -1;
    r->p++;
    return 0;
}

/* The body at versions 3-11 (NULL with no error set: decline): with ``cls`` (ProduceResponse) the reference
 * decoder's dataclasses, record errors, tagged fields and node endpoints declined; without (NULL) the results
 * decode_produce_results hands out, [(topic, [(index, base offset, log append time, log start offset)])] in response
 * order, ``*throttle`` set, declining also any partition with an error or an error message. */
static PyObject *produce_response_read(rd_t *r, int version, PyObject *cls, int64_t *throttle)
{
    int flexible = version >= 9;
    PyObject *topic_cls = NULL, *part_cls = NULL, *leader_cls = NULL, *responses = NULL, *out = NULL;
    if (cls != NULL) {
        topic_cls = PyObject_GetAttrString(cls, "TopicProduceResponse");
        part_cls = topic_cls ? PyObject_GetAttrString(cls, "PartitionProduceResponse") : NULL;
        leader_cls = part_cls ? PyObject_GetAttrString(cls, "LeaderIdAndEpoch") : NULL;
        if (leader_cls == NULL)
            goto done;
    }
    Py_ssize_t nt = rd_count(r, flexible, flexible ? 3 : 6);
    if (nt < 0 || (responses = PyList_New(0)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < nt; i++) {
        PyObject *name = rd_string(r, flexible, 0);
        if (name == NULL)
            goto done;
        Py_ssize_t np = rd_count(r, flexible, flexible ? 33 : (version >= 8 ? 36 : version >= 5 ? 30 : 22));
        PyObject *parts = np < 0 ? NULL : PyList_New(0);
        if (parts == NULL) {
            Py_DECREF(name);
            goto done;
        }
        int ok = 1;
        for (Py_ssize_t j = 0; j < np && ok; j++) {
            int64_t index, error_code, base_offset, log_append_time = -1, log_start_offset = -1;
            PyObject *error_message = Py_None;
            ok = 0;
            if (rd_be(r, 4, &index) < 0 || rd_be(r, 2, &error_code) < 0 || rd_be(r, 8, &base_offset) < 0
                || rd_be(r, 8, &log_append_time) < 0 || (version >= 5 && rd_be(r, 8, &log_start_offset) < 0))
                break;
            Py_INCREF(error_message);
            if (version >= 8) {
                /* record errors: only an empty list here (a batch with invalid records goes to the reference) */
                if (rd_count(r, flexible, 5) != 0)
                    goto part_end;
                Py_DECREF(error_message);
                error_message = rd_string(r, flexible, 1);
                if (error_message == NULL)
                    break;
            }
            if ((flexible && rd_no_tags(r) < 0) || (cls == NULL && (error_code != 0 || error_message != Py_None)))
                goto part_end;
            {
                PyObject *pr = NULL;
                if (cls == NULL)
                    pr = Py_BuildValue("(lLLL)", (long)index, (long long)base_offset, (long long)log_append_time,
                                       (long long)log_start_offset);
                else {
                    PyObject *leader = PyObject_CallNoArgs(leader_cls);
                    PyObject *errors = leader ? PyList_New(0) : NULL;
                    pr = errors ? PyObject_CallFunction(part_cls, "lhLLLOOOO", (long)index, (short)error_code,
                        (long long)base_offset, (long long)log_append_time, (long long)log_start_offset, errors,
                        error_message, leader, Py_None) : NULL;
                    Py_XDECREF(leader);
                    Py_XDECREF(errors);
                }
                if (pr != NULL) {
                    ok = PyList_Append(parts, pr) == 0;
                    Py_DECREF(pr);
                }
            }
        part_end:
            Py_DECREF(error_message);
        }
        if (ok && flexible && rd_no_tags(r) < 0)
            ok = 0;
        PyObject *tr = !ok ? NULL : cls == NULL ? PyTuple_Pack(2, name, parts) : PyObject_CallFunction(topic_cls, "OOO", name, parts, Py_None);
        Py_DECREF(name);
        Py_DECREF(parts);
        if (tr == NULL)
            goto done;
        int rc = PyList_Append(responses, tr);
        Py_DECREF(tr);
        if (rc < 0)
            goto done;
    }
    if (rd_be(r, 4, throttle) < 0 || (flexible && rd_no_tags(r) < 0))
        goto done;
    if (cls == NULL)
        out = Py_NewRef(responses);
    else {
        PyObject *endpoints = PyList_New(0);
        if (endpoints == NULL)
            goto done;
        out = PyObject_CallFunction(cls, "OlOO", responses, (long)*throttle, endpoints, Py_None);
        Py_DECREF(endpoints);
    }
done:
    Py_XDECREF(topic_cls);
    Py_XDECREF(part_cls);
    Py_XDECREF(leader_cls);
    Py_XDECREF(responses);
    return out;
}

/* A Produce response frame's payload at a version 3-11 (correlation id ``cid``): the header checked, the body read by
 * produce_response_read (``cls``, ``*throttle``: see there), no trailing bytes. NULL with no error set: decline. */
static PyObject *produce_response_frame(PyObject *payload, int version, long long cid, PyObject *cls, int64_t *throttle)
{
    Py_buffer view;
    if (PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return NULL;
    }
    rd_t r = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    PyObject *out = NULL;
    int64_t got;
    if (rd_be(&r, 4, &got) == 0 && got == cid && (version < 9 || rd_no_tags(&r) == 0)) {
        out = produce_response_read(&r, version, cls, throttle);
        if (out != NULL && r.p != r.end)
            Py_CLEAR(out); /* trailing bytes: the reference's error */
    }
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(decode_produce_response_doc,
"decode_produce_response(payload, version, correlation_id, ProduceResponse) -> ProduceResponse or None\n\n"
"Reference: protocol.headers.decode_response of a Produce response at versions 3-11 (header and body, no\n"
"trailing bytes). None for anything else: other versions, a correlation id that does not match, record\n"
"errors, tagged fields, bad or truncated input (the reference decides and raises).");

static PyObject *k_decode_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int version;
    long long correlation_id;
    int ok = produce_frame_args("decode_produce_response", args, nargs, &version, &correlation_id);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    int64_t throttle;
    PyObject *out = produce_response_frame(args[0], version, correlation_id, args[3], &throttle);
    return out != NULL || PyErr_Occurred() ? out : Py_NewRef(Py_None);
}

/* ---- producer: a produce response straight into the results the Sender's completion reads ------------------ */

/* The Sender's response type (a ProduceResponse whose ``responses`` are built from ``results`` only when read), set
 * by produce_results_setup(); the names of the slots decode_produce_results fills. */
static PyTypeObject *results_type = NULL;
static PyObject *s_results = NULL, *s_throttle = NULL, *s_endpoints = NULL, *s_unknown_tags = NULL;

PyDoc_STRVAR(produce_results_setup_doc,
"produce_results_setup(response_type): the ProduceResponse subclass decode_produce_results makes and\n"
"complete_produce_response reads the ``results`` of.");

static PyObject *k_produce_results_setup(PyObject *self, PyObject *arg)
{
    if (!PyType_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "produce_results_setup takes a type");
        return NULL;
    }
    if (s_results == NULL) {
        if ((s_results = PyUnicode_InternFromString("results")) == NULL
            || (s_throttle = PyUnicode_InternFromString("throttle_time_ms")) == NULL
            || (s_endpoints = PyUnicode_InternFromString("node_endpoints")) == NULL
            || (s_unknown_tags = PyUnicode_InternFromString("_unknown_tagged_fields")) == NULL)
            return NULL;
    }
    Py_INCREF(arg);
    Py_XSETREF(results_type, (PyTypeObject *)arg);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(decode_produce_results_doc,
"decode_produce_results(cls, payload, version, correlation_id) -> cls instance or None\n\n"
"Reference: protocol.headers.decode_response of a Produce response at versions 3-11 whose partitions all\n"
"succeeded (error NONE, no record errors, no error message, no tagged fields, no node endpoints): an instance\n"
"of ``cls`` (the type given to produce_results_setup, a ProduceResponse subclass) with ``results`` set to\n"
"[(topic, [(index, base_offset, log_append_time_ms, log_start_offset)])] in response order, throttle_time_ms,\n"
"node_endpoints [] and no unknown tagged fields, without calling its __init__. None for anything else (errors,\n"
"other versions, a correlation id that does not match, bad, truncated or trailing input): the reference decides.");

static PyObject *k_decode_produce_results(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int version;
    long long correlation_id;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode_produce_results takes 4 arguments");
        return NULL;
    }
    if (results_type == NULL || args[0] != (PyObject *)results_type)
        Py_RETURN_NONE;
    /* (payload, version, correlation id) as the other produce frame functions take them */
    int ok = produce_frame_args("decode_produce_results", args + 1, nargs, &version, &correlation_id);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    int64_t throttle = 0;
    PyObject *results = produce_response_frame(args[1], version, correlation_id, NULL, &throttle), *out = NULL;
    if (results == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *empty = PyTuple_New(0), *t = NULL, *endpoints = NULL;
    if (empty != NULL)
        out = PyBaseObject_Type.tp_new(results_type, empty, NULL);
    if (out == NULL || (t = PyLong_FromLongLong(throttle)) == NULL || (endpoints = PyList_New(0)) == NULL
        || PyObject_SetAttr(out, s_results, results) < 0 || PyObject_SetAttr(out, s_throttle, t) < 0
        || PyObject_SetAttr(out, s_endpoints, endpoints) < 0 || PyObject_SetAttr(out, s_unknown_tags, Py_None) < 0)
        Py_CLEAR(out);
    Py_XDECREF(empty);
    Py_XDECREF(t);
    Py_XDECREF(endpoints);
    Py_DECREF(results);
    return out;
}

/* ---- producer: a produce response whose partitions all succeeded (Sender._handle_produce_response) --------- */

/* Attribute names this region reads (interned on first use). */
enum {
    P_TM, P_GMO, P_IN_FLIGHT, P_ACC, P_RESPONSES, P_NAME, P_PARTS, P_INDEX, P_ERROR, P_RECORD_ERRORS, P_BASE, P_LAT,
    P_FINAL, P_SPLIT, P_HAS_CB, P_TP, P_PENDING, P_OUTCOME, P_HANDLE, P_COMPLETE, P_DEALLOC, P_UNMUTE, P_INVOKE,
    P_CONDITION, P_ACQUIRE, P_RELEASE, P_WATCHED, P_STATE, P_O_LAT, P_TIMESTAMPS, P_KEY_SIZES, P_VALUE_SIZES,
    P_COMPLETE_RECORDS, P_CALLS, P_WAITING, P_LOCK, P_SB_COUNT, P_COUNT
};
static const char *const pr_attr_names[P_COUNT] = {
    "transaction_manager", "guarantee_message_order", "in_flight_batches", "accumulator", "responses", "name",
    "partition_responses", "index", "error_code", "record_errors", "base_offset", "log_append_time_ms", "final_state",
    "split", "has_callbacks", "topic_partition", "pending", "outcome", "handle_completed_batch", "complete_success",
    "deallocate", "unmute_partition", "_invoke_callbacks", "condition", "acquire", "release", "watched", "state",
    "log_append_time", "timestamps", "key_sizes", "value_sizes", "complete_records", "calls", "waiting", "lock",
    "count",
};
static PyObject *pattr[P_COUNT];

static int pattr_init(void)
{
    if (pattr[0] != NULL)
        return 0;
    for (int i = 0; i < P_COUNT; i++) {
        PyObject *s = PyUnicode_InternFromString(pr_attr_names[i]);
        if (s == NULL)
            return -1;
        pattr[i] = s;
    }
    return 0;
}

/* 1 when v is the int 0 (an exact int), 0 otherwise */
static inline int is_int_zero(PyObject *v)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long x = PyLong_AsLongAndOverflow(v, &overflow);
    return !overflow && x == 0;
}

/* 1 when ``outcome`` is a BatchOutcome (exactly) that nothing but ``holders`` references hold, nothing watches and
 * that is not complete yet: no reader can ever look at its per-record columns. */
static int outcome_unread(PyObject *outcome, Py_ssize_t holders)
{
    return outcome_type != NULL && Py_TYPE(outcome) == outcome_type && Py_REFCNT(outcome) == holders;
}

/* Slot caches (see cached_get) of the completion's reads and writes of a ProducerBatch's and a BatchOutcome's
 * attributes, per name */
static slot_cache bcache[P_COUNT], ocache[P_COUNT];

/* One partition of the plan (see produce_response_plan): ``name`` and ``index`` name it, the other three were read
 * from the response (error_code must be 0, record_errors None or empty). 1: planned, 0: not the common case, -1:
 * error. */
static int plan_partition(PyObject *batches, PyObject *seen, PyObject *plan, PyObject *name, PyObject *error_code,
                          PyObject *record_errors, PyObject *index, PyObject *base, PyObject *lat)
{
    if (!(is_int_zero(error_code) && (record_errors == Py_None || (PyList_CheckExact(record_errors) && PyList_GET_SIZE(record_errors) == 0))
          && PyLong_CheckExact(index) && PyLong_CheckExact(base) && PyLong_CheckExact(lat)))
        return 0;
    /* a plain tuple finds (and equals) the TopicPartition key */
    PyObject *key = PyTuple_Pack(2, name, index);
    if (key == NULL)
        return -1;
    PyObject *batch = PyDict_GetItemWithError(batches, key);
    Py_DECREF(key);
    if (batch == NULL)
        return PyErr_Occurred() ? -1 : 0; /* a partition the request did not have: the reference */
    int ok, dup = PySet_Contains(seen, batch);
    ok = dup < 0 ? -1 : dup ? 0 : PySet_Add(seen, batch) < 0 ? -1 : 1;
    PyObject *f[4] = {NULL, NULL, NULL, NULL}; /* final_state, split, has_callbacks, pending */
    static const int bwhich[4] = {P_FINAL, P_SPLIT, P_HAS_CB, P_PENDING};
    for (int k = 0; k < 4 && ok > 0; k++)
        if ((f[k] = cached_get(batch, pattr[bwhich[k]], &bcache[bwhich[k]])) == NULL)
            ok = -1;
    if (ok > 0)
        ok = f[0] == Py_None && f[1] == Py_False && f[2] == Py_False && (PyList_CheckExact(f[3]) || is_pending(f[3]));
    PyObject *columns = NULL;
    if (ok > 0) {
        /* An outcome only its batch refers to (our reference and the batch's) can never be read: every
         * future of a batch, and a send_batch future's segment, holds its outcome, and a drained batch is
         * closed, so no future of it is made any more. Its per-record columns are not collected (None
         * here): succeed_batch completes it without them. */
        PyObject *outcome = cached_get(batch, pattr[P_OUTCOME], &bcache[P_OUTCOME]);
        if (outcome == NULL)
            ok = -1;
        else if (outcome_unread(outcome, 2))
            columns = Py_NewRef(Py_None);
        Py_XDECREF(outcome);
    }
    if (ok > 0 && columns == NULL) {
        /* the columns complete_records collects: timestamps only without a log append time */
        int overflow = 0;
        long long lat_ms = PyLong_AsLongLongAndOverflow(lat, &overflow);
        PyObject *cargs = Py_BuildValue("(OO)", f[3], (overflow || lat_ms != -1) ? Py_False : Py_True);
        columns = cargs == NULL ? NULL : k_pending_columns(NULL, cargs);
        Py_XDECREF(cargs);
        if (columns == NULL)
            ok = -1;
        else if (columns == Py_None)
            ok = 0;
    }
    if (ok > 0) {
        PyObject *entry = PyTuple_Pack(4, batch, base, lat, columns);
        if (entry == NULL || PyList_Append(plan, entry) < 0)
            ok = -1;
        Py_XDECREF(entry);
    }
    Py_XDECREF(columns);
    for (int k = 0; k < 4; k++)
        Py_XDECREF(f[k]);
    return ok;
}

/* The plan of a response decode_produce_results made (its ``results``, see there): as produce_response_plan. */
static int produce_results_plan(PyObject *batches, PyObject *results, PyObject *seen, PyObject *plan)
{
    static PyObject *zero = NULL;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        return -1;
    if (!PyList_CheckExact(results))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(results); i++) {
        PyObject *t = PyList_GET_ITEM(results, i), *parts;
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 2 || !PyList_CheckExact(parts = PyTuple_GET_ITEM(t, 1)))
            return 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(parts); j++) {
            PyObject *p = PyList_GET_ITEM(parts, j);
            if (!PyTuple_CheckExact(p) || PyTuple_GET_SIZE(p) != 4)
                return 0;
            int ok = plan_partition(batches, seen, plan, PyTuple_GET_ITEM(t, 0), zero, Py_None, PyTuple_GET_ITEM(p, 0),
                                    PyTuple_GET_ITEM(p, 1), PyTuple_GET_ITEM(p, 2));
            if (ok <= 0)
                return ok;
        }
    }
    return 1;
}

/* The checks of the common case, before anything changes: every partition of the response answers one batch of the
 * request (each batch once), with error NONE and no record errors, int offsets; every batch is still incomplete, not
 * split, without delivery callbacks, its records' columns computable (or its outcome unread: columns None). Fills
 * ``plan`` with one (batch, base offset, log append time, columns) tuple per partition in response order. A response
 * decode_produce_results made is read from its ``results`` while its ``responses`` were not built. 1: the common
 * case, 0: not, -1: error. */
static int produce_response_plan(PyObject *batches, PyObject *body, PyObject *plan)
{
    PyObject *seen = PySet_New(NULL), *responses = NULL;
    int rc = -1;
    if (seen == NULL)
        return -1;
    if (results_type != NULL && Py_TYPE(body) == results_type) {
        PyObject *results = PyObject_GetAttr(body, s_results);
        if (results == NULL)
            goto done;
        if (results != Py_None) {
            rc = produce_results_plan(batches, results, seen, plan);
            Py_DECREF(results);
            goto check;
        }
        Py_DECREF(results);
    }
    if ((responses = PyObject_GetAttr(body, pattr[P_RESPONSES])) == NULL)
        goto done;
    if (!PyList_CheckExact(responses)) {
        rc = 0;
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(responses); i++) {
        PyObject *t = PyList_GET_ITEM(responses, i);
        PyObject *name = PyObject_GetAttr(t, pattr[P_NAME]);
        if (name == NULL)
            goto done;
        PyObject *parts = PyObject_GetAttr(t, pattr[P_PARTS]);
        if (parts == NULL) {
            Py_DECREF(name);
            goto done;
        }
        int ok = PyList_CheckExact(parts);
        for (Py_ssize_t j = 0; ok > 0 && j < PyList_GET_SIZE(parts); j++) {
            PyObject *p = PyList_GET_ITEM(parts, j);
            PyObject *v[5] = {NULL, NULL, NULL, NULL, NULL}; /* error_code, record_errors, index, base, lat */
            static const int which[5] = {P_ERROR, P_RECORD_ERRORS, P_INDEX, P_BASE, P_LAT};
            for (int k = 0; k < 5 && ok > 0; k++)
                if ((v[k] = PyObject_GetAttr(p, pattr[which[k]])) == NULL)
                    ok = -1;
            if (ok > 0)
                ok = plan_partition(batches, seen, plan, name, v[0], v[1], v[2], v[3], v[4]);
            for (int k = 0; k < 5; k++)
                Py_XDECREF(v[k]);
        }
        Py_DECREF(name);
        Py_DECREF(parts);
        if (ok <= 0) {
            rc = ok;
            goto done;
        }
    }
    rc = 1;
check:
    /* every batch answered (a missing one fails in the reference) */
    if (rc > 0)
        rc = PySet_GET_SIZE(seen) == PyDict_GET_SIZE(batches);
done:
    Py_DECREF(seen);
    Py_XDECREF(responses);
    return rc;
}

/* Sender._remove_from_in_flight: ``batch`` out of in_flight_batches[tp] (by identity, as list.remove finds a
 * ProducerBatch), the entry dropped once empty. */
static int remove_in_flight(PyObject *in_flight, PyObject *tp, PyObject *batch)
{
    PyObject *lst = PyDict_GetItemWithError(in_flight, tp);
    if (lst == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(lst);
    int rc = 0;
    if (PyList_CheckExact(lst)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lst); i++)
            if (PyList_GET_ITEM(lst, i) == batch) {
                rc = PyList_SetSlice(lst, i, i + 1, NULL);
                break;
            }
    } else {
        PyObject *r = PyObject_CallMethod(lst, "remove", "O", batch);
        if (r == NULL) {
            if (PyErr_ExceptionMatches(PyExc_ValueError))
                PyErr_Clear();
            else
                rc = -1;
        }
        Py_XDECREF(r);
    }
    if (rc == 0) {
        Py_ssize_t n = PyObject_Length(lst);
        if (n < 0)
            rc = -1;
        else if (n == 0)
            rc = PyDict_DelItem(in_flight, tp);
    }
    Py_DECREF(lst);
    return rc;
}

/* A send_batch segment (future_record_metadata.CallSegment) of a completed outcome, as its release(): its call's
 * ``waiting.count`` lowered under ``waiting.lock`` when other segments still wait; for the last one (or anything
 * unexpected) release() itself, which completes the SendBatchFuture. 0, or -1 with an exception. */
/* lock.acquire() / lock.release() of a send_batch call's WaitingSegments.lock (a _thread.lock) (directly when its layout is known, see
 * queue_lock_acquire): 0, or -1 with an exception */
static int sb_lock(PyObject *lock, int acquire)
{
#ifdef THREAD_LOCK_LAYOUT
    if (sattr_init() < 0)
        return -1;
    if (thread_lock_type != NULL && Py_TYPE(lock) == thread_lock_type)
        return acquire ? queue_lock_acquire(lock) : queue_lock_release(lock);
#endif
    PyObject *r = PyObject_CallMethodNoArgs(lock, pattr[acquire ? P_ACQUIRE : P_RELEASE]);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* ``lock`` released (sb_lock) keeping a pending exception: ``rc``, or -1 when the release failed */
static int unlock_keeping_error(PyObject *lock, int rc)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (sb_lock(lock, 0) < 0) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        return -1;
    }
    PyErr_Restore(et, ev, tb);
    return rc;
}

static int segment_done(PyObject *seg)
{
    PyObject *fut = PyObject_GetAttr(seg, pattr[P_WAITING]), *lock = NULL, *pending = NULL, *r;
    int rc = -1;
    if (fut == NULL || (lock = PyObject_GetAttr(fut, pattr[P_LOCK])) == NULL || sb_lock(lock, 1) < 0)
        goto done;
    int ok = 0; /* 1: decremented here, 0: the method decides, -1: error */
    if ((pending = PyObject_GetAttr(fut, pattr[P_SB_COUNT])) == NULL)
        ok = -1;
    else if (PyLong_CheckExact(pending)) {
        int overflow = 0;
        long n = PyLong_AsLongAndOverflow(pending, &overflow);
        if (!overflow && n > 1) {
            PyObject *left = PyLong_FromLong(n - 1);
            ok = left == NULL || PyObject_SetAttr(fut, pattr[P_SB_COUNT], left) < 0 ? -1 : 1;
            Py_XDECREF(left);
        }
    }
    if (unlock_keeping_error(lock, ok) < 0)
        goto done;
    if (ok == 0) {
        if ((r = PyObject_CallMethodNoArgs(seg, pattr[P_RELEASE])) == NULL)
            goto done;
        Py_DECREF(r);
    }
    rc = 0;
done:
    Py_XDECREF(fut);
    Py_XDECREF(lock);
    Py_XDECREF(pending);
    return rc;
}

/* BatchOutcome.complete_success(base, lat, timestamps, key_sizes, value_sizes) (``cargs``: the outcome then those):
 * when no future is watched (nobody waits, no done-callback), its fields set under the condition's lock here, and
 * the futures to call back are none; else the method itself. The futures whose done-callbacks must run, or NULL.
 * ``*segments`` is set to 1 when the list returned holds the send_batch segments (``calls``, taken from the outcome
 * under the lock, as BatchOutcome._finish) for segment_done, 0 when it holds what _invoke_callbacks must run on. */
static PyObject *complete_outcome(PyObject *const *cargs, int *segments)
{
    *segments = 0;
    PyObject *outcome = cargs[0];
    if (outcome_type == NULL || Py_TYPE(outcome) != outcome_type)
        return PyObject_VectorcallMethod(pattr[P_COMPLETE], cargs, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    PyObject *cond = cached_get(outcome, pattr[P_CONDITION], &ocache[P_CONDITION]), *r;
    if (cond == NULL)
        return NULL;
    if ((r = PyObject_CallMethodNoArgs(cond, pattr[P_ACQUIRE])) == NULL) {
        Py_DECREF(cond);
        return NULL;
    }
    Py_DECREF(r);
    PyObject *out = NULL, *watched = cached_get(outcome, pattr[P_WATCHED], &ocache[P_WATCHED]), *state = NULL, *calls = NULL;
    int use_method = 0;
    if (watched == NULL || (calls = cached_get(outcome, pattr[P_CALLS], &ocache[P_CALLS])) == NULL)
        goto release;
    /* nothing watched: watched is the empty tuple (or an empty list); calls: none (the empty tuple), a list of
     * segments, or one segment kept alone (BatchOutcome.calls) */
    int lone = !PyList_CheckExact(calls) && !PyTuple_CheckExact(calls);
    if (!(PyList_CheckExact(watched) || PyTuple_CheckExact(watched)) || Py_SIZE(watched) != 0
        || !(lone || PyList_CheckExact(calls) || PyTuple_GET_SIZE(calls) == 0)) {
        use_method = 1;
        goto release;
    }
    if ((state = cached_get(outcome, pattr[P_STATE], &ocache[P_STATE])) == NULL)
        goto release;
    int finished = PyObject_RichCompareBool(state, finished_state, Py_EQ);
    if (finished < 0)
        goto release;
    /* timestamps is None with a log append time (pending_columns was not asked for them) */
    if (!finished
        && (cached_set(outcome, pattr[P_BASE], &ocache[P_BASE], cargs[1]) < 0 || cached_set(outcome, pattr[P_O_LAT], &ocache[P_O_LAT], cargs[2]) < 0
            || cached_set(outcome, pattr[P_TIMESTAMPS], &ocache[P_TIMESTAMPS], cargs[3]) < 0
            || cached_set(outcome, pattr[P_KEY_SIZES], &ocache[P_KEY_SIZES], cargs[4]) < 0
            || cached_set(outcome, pattr[P_VALUE_SIZES], &ocache[P_VALUE_SIZES], cargs[5]) < 0
            || cached_set(outcome, pattr[P_STATE], &ocache[P_STATE], finished_state) < 0))
        goto release;
    if (!finished && (lone || PyList_CheckExact(calls))) {
        /* the segments are released once, outside the lock; the outcome lets go of them (no cycle) */
        PyObject *none = PyTuple_New(0);
        if (none == NULL || cached_set(outcome, pattr[P_CALLS], &ocache[P_CALLS], none) < 0) {
            Py_XDECREF(none);
            goto release;
        }
        Py_DECREF(none);
        out = lone ? PyTuple_Pack(1, calls) : Py_NewRef(calls);
        *segments = out != NULL;
    } else
        out = PyList_New(0);
release:;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    r = PyObject_CallMethodNoArgs(cond, pattr[P_RELEASE]);
    if (r == NULL) {
        Py_CLEAR(out);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
    } else {
        Py_DECREF(r);
        PyErr_Restore(et, ev, tb);
    }
    Py_DECREF(cond);
    Py_XDECREF(watched);
    Py_XDECREF(calls);
    Py_XDECREF(state);
    if (use_method && r != NULL && !PyErr_Occurred())
        return PyObject_VectorcallMethod(pattr[P_COMPLETE], cargs, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    return out;
}

/* BatchOutcome.complete_success for an outcome produce_response_plan found unread: its offset, log append time and
 * state set (the per-record columns only a future could read are not collected). Should a reference to it have
 * appeared meanwhile, the batch's own ProducerBatch.complete_records completes it instead (columns, lock, done-
 * callbacks), as ProducerBatch.done would. 0, or -1 with an exception. */
static int complete_unread(PyObject *batch, PyObject *outcome, PyObject *base, PyObject *lat)
{
    if (!outcome_unread(outcome, 2)) {
        PyObject *r = PyObject_CallMethodObjArgs(batch, pattr[P_COMPLETE_RECORDS], base, lat, Py_None, Py_None, NULL);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    PyObject *state = cached_get(outcome, pattr[P_STATE], &ocache[P_STATE]);
    if (state == NULL)
        return -1;
    int finished = PyObject_RichCompareBool(state, finished_state, Py_EQ);
    Py_DECREF(state);
    if (finished != 0)
        return finished < 0 ? -1 : 0;
    if (cached_set(outcome, pattr[P_BASE], &ocache[P_BASE], base) < 0 || cached_set(outcome, pattr[P_O_LAT], &ocache[P_O_LAT], lat) < 0
        || cached_set(outcome, pattr[P_STATE], &ocache[P_STATE], finished_state) < 0)
        return -1;
    return 0;
}

/* RecordAccumulator.deallocate(batch): through the accumulator's public method. 0, or -1 with an exception. */
static PyObject *deallocate_name;

static int accumulator_deallocate(PyObject *acc, PyObject *batch)
{
    if (deallocate_name == NULL && (deallocate_name = PyUnicode_InternFromString("deallocate")) == NULL)
        return -1;
    PyObject *r = PyObject_CallMethodOneArg(acc, deallocate_name, batch);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* One planned batch's success, as Sender._succeed_batch then the unmute of _handle_produce_response. */
static int succeed_batch(PyObject *entry, PyObject *tm, int gmo, PyObject *in_flight, PyObject *acc, PyObject *succeeded)
{
    PyObject *batch = PyTuple_GET_ITEM(entry, 0), *base = PyTuple_GET_ITEM(entry, 1), *lat = PyTuple_GET_ITEM(entry, 2);
    PyObject *columns = PyTuple_GET_ITEM(entry, 3);
    PyObject *r, *tp = NULL, *outcome = NULL, *fs = NULL;
    int rc = -1;
    if (tm != Py_None) {
        if ((r = PyObject_CallMethodObjArgs(tm, pattr[P_HANDLE], batch, base, NULL)) == NULL)
            return -1;
        Py_DECREF(r);
    }
    if ((tp = cached_get(batch, pattr[P_TP], &bcache[P_TP])) == NULL)
        return -1;
    /* ProducerBatch.done: nothing when the batch completed or was split meanwhile */
    PyObject *final_state = cached_get(batch, pattr[P_FINAL], &bcache[P_FINAL]), *split = NULL;
    if (final_state == NULL || (split = cached_get(batch, pattr[P_SPLIT], &bcache[P_SPLIT])) == NULL)
        goto done_final;
    int truth = PyObject_IsTrue(split);
    if (truth < 0)
        goto done_final;
    if (final_state == Py_None && !truth) {
        if (cached_set(batch, pattr[P_FINAL], &bcache[P_FINAL], succeeded) < 0 || (outcome = cached_get(batch, pattr[P_OUTCOME], &bcache[P_OUTCOME])) == NULL)
            goto done_final;
        if (columns == Py_None) {
            /* unread when planned (see produce_response_plan): still held by the batch and by us only, nobody can
             * read it, so no lock and no columns (a reader could only appear with a reference of its own) */
            if (complete_unread(batch, outcome, base, lat) < 0)
                goto done_final;
        } else {
            PyObject *cargs[6] = {outcome, base, lat, PyTuple_GET_ITEM(columns, 0), PyTuple_GET_ITEM(columns, 1),
                                  PyTuple_GET_ITEM(columns, 2)};
            int segments;
            PyObject *with_callbacks = complete_outcome(cargs, &segments);
            if (with_callbacks == NULL)
                goto done_final;
            /* the futures' done-callbacks (or the send_batch segments), outside the lock */
            fs = PySequence_Fast(with_callbacks, "complete_success returns a list");
            Py_DECREF(with_callbacks);
            if (fs == NULL)
                goto done_final;
            for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fs); i++) {
                PyObject *item = PySequence_Fast_GET_ITEM(fs, i);
                if (segments) {
                    if (segment_done(item) < 0)
                        goto done_final;
                } else {
                    if ((r = PyObject_CallMethodNoArgs(item, pattr[P_INVOKE])) == NULL)
                        goto done_final;
                    Py_DECREF(r);
                }
            }
        }
        if (remove_in_flight(in_flight, tp, batch) < 0)
            goto done_final;
        if (accumulator_deallocate(acc, batch) < 0)
            goto done_final;
    }
    if (gmo) {
        if ((r = PyObject_CallMethodOneArg(acc, pattr[P_UNMUTE], tp)) == NULL)
            goto done_final;
        Py_DECREF(r);
    }
    rc = 0;
done_final:
    Py_XDECREF(final_state);
    Py_XDECREF(split);
    Py_XDECREF(outcome);
    Py_XDECREF(fs);
    Py_DECREF(tp);
    return rc;
}

PyDoc_STRVAR(complete_produce_response_doc,
"complete_produce_response(sender, batches, body, SUCCEEDED) -> bool\n\n"
"Reference: Sender._handle_produce_response_reference for a decoded ProduceResponse ``body`` answering the\n"
"request of ``batches`` ({TopicPartition: ProducerBatch}) when every partition succeeded (error NONE, no record\n"
"errors) and no batch has delivery callbacks, is complete or split: each batch completes as\n"
"Sender._succeed_batch does (the transaction manager's handle_completed_batch, the outcome's complete_success and\n"
"its futures' done-callbacks, out of in-flight, deallocate; the unmute when ordering is guaranteed), in response\n"
"order (the send_batch segments waiting on an outcome released as their release() would: the call's\n"
"count of waiting segments decremented, the method itself for its last one); an outcome nothing but its batch refers to (every future of it dropped) gets no per-record columns, which\n"
"nothing could read. False, with nothing done, for anything else: the reference decides.");

static PyObject *k_complete_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "complete_produce_response takes 4 arguments");
        return NULL;
    }
    if (pattr_init() < 0)
        return NULL;
    PyObject *sender = args[0], *batches = args[1], *body = args[2], *succeeded = args[3];
    if (!PyDict_CheckExact(batches))
        Py_RETURN_FALSE;
    PyObject *plan = PyList_New(0), *tm = NULL, *gmo = NULL, *in_flight = NULL, *acc = NULL, *out = NULL;
    if (plan == NULL)
        return NULL;
    int rc = produce_response_plan(batches, body, plan);
    if (rc <= 0) {
        out = rc < 0 ? NULL : Py_NewRef(Py_False);
        goto done;
    }
    if ((tm = PyObject_GetAttr(sender, pattr[P_TM])) == NULL || (gmo = PyObject_GetAttr(sender, pattr[P_GMO])) == NULL
        || (in_flight = PyObject_GetAttr(sender, pattr[P_IN_FLIGHT])) == NULL
        || (acc = PyObject_GetAttr(sender, pattr[P_ACC])) == NULL)
        goto done;
    if (!PyDict_CheckExact(in_flight)) {
        out = Py_NewRef(Py_False);
        goto done;
    }
    int order = PyObject_IsTrue(gmo);
    if (order < 0)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(plan); i++)
        if (succeed_batch(PyList_GET_ITEM(plan, i), tm, order, in_flight, acc, succeeded) < 0)
            goto done;
    out = Py_NewRef(Py_True);
done:
    Py_DECREF(plan);
    Py_XDECREF(tm);
    Py_XDECREF(gmo);
    Py_XDECREF(in_flight);
    Py_XDECREF(acc);
    return out;
}

/* ---- producer I/O thread: a produce response's completion callback (h/iocomplete) -------------------------- */

static PyObject *s_response_body = NULL, *s_was_disconnected = NULL, *s_version_mismatch = NULL;

PyDoc_STRVAR(handle_produce_response_doc,
"handle_produce_response(reference, SUCCEEDED, sender, batches, response) -> bool\n\n"
"Reference: Sender._handle_produce_response, the completion callback of a produce request (``batches``:\n"
"{TopicPartition: ProducerBatch}; ``response``: its ClientResponse). When the response was not disconnected, has\n"
"no version mismatch and its ``response_body`` is exactly a ProduceResponse or the ProduceResponse subclass given\n"
"to produce_results_setup: complete_produce_response(sender, batches, body, SUCCEEDED). Whenever that declines,\n"
"and for any other response, ``reference(sender, batches, response)`` (Sender._handle_produce_response_reference)\n"
"decides. True if the kernel completed the response, False if the reference was called.");

static PyObject *k_handle_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "handle_produce_response takes 5 arguments");
        return NULL;
    }
    PyObject *reference = args[0], *succeeded = args[1], *sender = args[2], *batches = args[3], *response = args[4];
    if (s_response_body == NULL) {
        if ((s_response_body = PyUnicode_InternFromString("response_body")) == NULL
            || (s_was_disconnected = PyUnicode_InternFromString("was_disconnected")) == NULL
            || (s_version_mismatch = PyUnicode_InternFromString("version_mismatch")) == NULL)
            return NULL;
    }
    PyObject *body = PyObject_GetAttr(response, s_response_body);
    if (body == NULL)
        return NULL;
    int common = 0;
    /* the results type is a direct subclass of ProduceResponse (its tp_base) */
    if (results_type != NULL && (Py_TYPE(body) == results_type || Py_TYPE(body) == results_type->tp_base)) {
        PyObject *v = PyObject_GetAttr(response, s_was_disconnected);
        if (v == NULL)
            goto fail;
        int disconnected = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (disconnected < 0)
            goto fail;
        if (!disconnected) {
            if ((v = PyObject_GetAttr(response, s_version_mismatch)) == NULL)
                goto fail;
            common = v == Py_None;
            Py_DECREF(v);
        }
    }
    if (common) {
        PyObject *cargs[4] = {sender, batches, body, succeeded};
        PyObject *done = k_complete_produce_response(self, cargs, 4);
        if (done == NULL)
            goto fail;
        int completed = done == Py_True;
        Py_DECREF(done);
        if (completed) {
            Py_DECREF(body);
            Py_RETURN_TRUE;
        }
    }
    Py_DECREF(body);
    PyObject *rargs[3] = {sender, batches, response};
    PyObject *r = PyObject_Vectorcall(reference, rargs, 3, NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
fail:
    Py_DECREF(body);
    return NULL;
}

/* ---- broker: a Produce request frame (mini_broker's produce_wire._read) ----------------------------------- */

/* A class built through its __slots__ without calling __init__ (a slotted dataclass of the generated protocol
 * code): the offsets of its slots, looked up once per class from their member descriptors. */
typedef struct {
    PyTypeObject *type;
    int n;
    const char *const *names;
    Py_ssize_t offsets[5];
} slot_class_t;

static const char *const preq_slot_names[] = {
    "transactional_id", "acks", "timeout_ms", "topic_data", "_unknown_tagged_fields",
};
static const char *const ptopic_slot_names[] = {"name", "partition_data", "_unknown_tagged_fields"};
static const char *const ppart_slot_names[] = {"index", "records", "_unknown_tagged_fields"};
static slot_class_t preq_class = {NULL, 5, preq_slot_names, {0}};
static slot_class_t ptopic_class = {NULL, 3, ptopic_slot_names, {0}};
static slot_class_t ppart_class = {NULL, 3, ppart_slot_names, {0}};

/* 0 when ``type`` has exactly these slots of its own (as T_OBJECT_EX members) and no __dict__; -1 with TypeError */
static int slot_class_setup(slot_class_t *c, PyObject *type_obj)
{
    if (!PyType_Check(type_obj)) {
        PyErr_SetString(PyExc_TypeError, "a class is expected");
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)type_obj;
    if (type == c->type)
        return 0;
    Py_ssize_t offsets[5];
    int ok = type->tp_dictoffset == 0;
    for (int i = 0; ok && i < c->n; i++) {
        PyObject *d = PyObject_GetAttrString(type_obj, c->names[i]);
        if (d == NULL)
            PyErr_Clear();
        ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
             ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
             ((PyMemberDescrObject *)d)->d_common.d_type == type;
        if (ok)
            offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s is not a slotted class with the expected fields", type->tp_name);
        return -1;
    }
    memcpy(c->offsets, offsets, sizeof offsets);
    Py_INCREF(type);
    Py_XSETREF(c->type, type);
    return 0;
}

/* An instance of the class with its slots set to ``values`` (references stolen, also on failure). */
static PyObject *slot_class_new(slot_class_t *c, PyObject **values)
{
    PyObject *o = c->type->tp_alloc(c->type, 0);
    for (int i = 0; i < c->n; i++) {
        if (o == NULL)
            Py_DECREF(values[i]);
        else
            *(PyObject **)((char *)o + c->offsets[i]) = values[i];
    }
    return o;
}

/* produce_wire._Cursor: ``pos`` never passes ``end``. The readers return 0, or -1 where the reference declines
 * (its _NotTaken, a struct.error of a field past the end, a UnicodeDecodeError), or -2 with an exception set. */
typedef struct {
    const uint8_t *buf;
    Py_ssize_t pos, end;
    int flexible;
} pq_t;

/* a big-endian int32 at pos (struct ">i") */
static int pq_int32(pq_t *r, int64_t *out)
{
    if (r->end - r->pos < 4)
        return -1;
    const uint8_t *p = r->buf + r->pos;
    *out = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
    r->pos += 4;
    return 0;
}

/* _Cursor.length(): an int32 (non-flexible), else an unsigned varint of at most 4 bytes minus 1 */
static int pq_length(pq_t *r, int64_t *out)
{
    const uint8_t *buf = r->buf;
    if (!r->flexible)
        return pq_int32(r, out);
    if (r->pos >= r->end)
        return -1;
    uint8_t b = buf[r->pos];
    if (b < 0x80) {
        r->pos++;
        *out = (int64_t)b - 1;
        return 0;
    }
    int64_t value = b & 0x7F;
    int shift = 7;
    Py_ssize_t stop = r->end - r->pos > 4 ? r->pos + 4 : r->end;
    for (Py_ssize_t i = r->pos + 1; i < stop; i++) {
        b = buf[i];
        value |= (int64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            r->pos = i + 1;
            *out = value - 1;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* _Cursor.string(nullable): *out a new reference (None for a null) */
static int pq_string(pq_t *r, int nullable, PyObject **out)
{
    int64_t n;
    if (r->flexible) {
        if (pq_length(r, &n) < 0)
            return -1;
    } else {
        if (r->end - r->pos < 2)
            return -1;
        n = (int16_t)(((uint16_t)r->buf[r->pos] << 8) | r->buf[r->pos + 1]);
        r->pos += 2;
    }
    if (n < 0) {
        if (n == -1 && nullable) {
            *out = Py_NewRef(Py_None);
            return 0;
        }
        return -1;
    }
    if (n > r->end - r->pos)
        return -1;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)r->buf + r->pos, (Py_ssize_t)n, NULL);
    if (s == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return -2;
        PyErr_Clear();
        return -1;
    }
    r->pos += (Py_ssize_t)n;
    *out = s;
    return 0;
}

/* _Cursor.no_tags(): an empty tag section (flexible versions only) */
static int pq_no_tags(pq_t *r)
{
    if (!r->flexible)
        return 0;
    if (r->pos >= r->end || r->buf[r->pos] != 0)
        return -1;
    r->pos++;
    return 0;
}

/* an array's count, checked against the bytes left as _read checks it, and an empty list for its items */
static int pq_array(pq_t *r, int64_t *count, PyObject **list)
{
    int rc = pq_length(r, count);
    if (rc < 0)
        return rc;
    if (*count < 0 || *count > r->end - r->pos)
        return -1;
    return (*list = PyList_New(0)) == NULL ? -2 : 0;
}

/* a new instance of ``c`` from ``values`` (stolen) appended to ``list``; -2 when that fails */
static int pq_append_new(slot_class_t *c, PyObject **values, PyObject *list)
{
    PyObject *o = slot_class_new(c, values);
    int rc = o == NULL || PyList_Append(list, o) < 0 ? -2 : 0;
    Py_XDECREF(o);
    return rc;
}

/* one topic's partitions: a list of PartitionProduceData whose records are slices of ``payload`` */
static int pq_partitions(pq_t *r, PyObject *payload, PyObject **out)
{
    int64_t count, index, n;
    PyObject *list;
    int rc = pq_array(r, &count, &list);
    if (rc < 0)
        return rc;
    for (int64_t i = 0; i < count; i++) {
        PyObject *values[3] = {NULL, NULL, NULL};
        if ((rc = pq_int32(r, &index)) < 0 || (rc = pq_length(r, &n)) < 0) {
            Py_DECREF(list);
            return rc;
        }
        if (n < -1 || n > r->end - r->pos) {
            Py_DECREF(list);
            return -1;
        }
        if (n == -1) {
            values[1] = Py_NewRef(Py_None);
        } else {
            PyObject *start = PyLong_FromSsize_t(r->pos), *stop = start ? PyLong_FromSsize_t(r->pos + (Py_ssize_t)n) : NULL;
            PyObject *slice = stop ? PySlice_New(start, stop, NULL) : NULL;
            Py_XDECREF(start);
            Py_XDECREF(stop);
            values[1] = slice ? PyObject_GetItem(payload, slice) : NULL;
            Py_XDECREF(slice);
            if (values[1] == NULL) {
                Py_DECREF(list);
                return -2;
            }
            r->pos += (Py_ssize_t)n;
        }
        if (pq_no_tags(r) < 0) {
            Py_DECREF(values[1]);
            Py_DECREF(list);
            return -1;
        }
        values[0] = PyLong_FromLongLong(index);
        if (values[0] == NULL) {
            Py_DECREF(values[1]);
            Py_DECREF(list);
            return -2;
        }
        values[2] = Py_NewRef(Py_None);
        if (pq_append_new(&ppart_class, values, list) < 0) {
            Py_DECREF(list);
            return -2;
        }
    }
    *out = list;
    return 0;
}

/* the topics, then the body's tags and the frame's end */
static int pq_topics(pq_t *r, PyObject *payload, PyObject **out)
{
    int64_t count;
    PyObject *list;
    int rc = pq_array(r, &count, &list);
    if (rc < 0)
        return rc;
    for (int64_t i = 0; i < count; i++) {
        PyObject *values[3] = {NULL, NULL, NULL};
        if ((rc = pq_string(r, 0, &values[0])) < 0 || (rc = pq_partitions(r, payload, &values[1])) < 0) {
            Py_XDECREF(values[0]);
            Py_DECREF(list);
            return rc;
        }
        if (pq_no_tags(r) < 0) {
            Py_DECREF(values[0]);
            Py_DECREF(values[1]);
            Py_DECREF(list);
            return -1;
        }
        values[2] = Py_NewRef(Py_None);
        if (pq_append_new(&ptopic_class, values, list) < 0) {
            Py_DECREF(list);
            return -2;
        }
    }
    if (pq_no_tags(r) < 0 || r->pos != r->end) {
        Py_DECREF(list);
        return -1;
    }
    *out = list;
    return 0;
}

PyDoc_STRVAR(read_produce_request_doc,
"read_produce_request(payload, version, ProduceRequest) -> (client_id, ProduceRequest) | None\n\n"
"Reference: mini_broker.server.apis.produce_wire._read of a whole Produce request frame (header and body, the\n"
"size prefix excluded) at versions 3-11: the same objects (the three classes built through their slots, the\n"
"records slices of ``payload``). None where the reference declines (tagged fields, a length past the end,\n"
"bad UTF-8, trailing bytes...), and for a payload that is not a C-contiguous unsigned-byte memoryview.");

static PyObject *k_read_produce_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "read_produce_request takes 3 arguments");
        return NULL;
    }
    PyObject *payload = args[0];
    long version = PyLong_AsLong(args[1]);
    if (version == -1 && PyErr_Occurred())
        return NULL;
    if (slot_class_setup(&preq_class, args[2]) < 0)
        return NULL;
    if (ptopic_class.type == NULL || preq_class.type != (PyTypeObject *)args[2]) {
        PyObject *t = PyObject_GetAttrString(args[2], "TopicProduceData");
        PyObject *p = t ? PyObject_GetAttrString(args[2], "PartitionProduceData") : NULL;
        int rc = p ? slot_class_setup(&ptopic_class, t) : -1;
        if (rc == 0)
            rc = slot_class_setup(&ppart_class, p);
        Py_XDECREF(t);
        Py_XDECREF(p);
        if (rc < 0)
            return NULL;
    }
    if (version < 3 || version > 11 || !PyMemoryView_Check(payload))
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(payload, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *out = NULL, *client_id = NULL;
    PyObject *values[5] = {NULL, NULL, NULL, NULL, NULL};
    int rc = -1;
    if (view.ndim != 1 || view.itemsize != 1 || (view.format != NULL && strcmp(view.format, "B") != 0))
        goto done;
    pq_t r = {(const uint8_t *)view.buf, 8, view.len, 0};
    if (r.pos > r.end || (rc = pq_string(&r, 1, &client_id)) < 0)
        goto done;
    r.flexible = version >= 9;
    if ((rc = pq_no_tags(&r)) < 0 || (rc = pq_string(&r, 1, &values[0])) < 0)
        goto done;
    if (r.end - r.pos < 6) {
        rc = -1;
        goto done;
    }
    const uint8_t *p = r.buf + r.pos;
    int16_t acks = (int16_t)(((uint16_t)p[0] << 8) | p[1]);
    int32_t timeout = (int32_t)(((uint32_t)p[2] << 24) | ((uint32_t)p[3] << 16) | ((uint32_t)p[4] << 8) | p[5]);
    r.pos += 6;
    if ((rc = pq_topics(&r, payload, &values[3])) < 0)
        goto done;
    rc = -2;
    if ((values[1] = PyLong_FromLong(acks)) == NULL || (values[2] = PyLong_FromLong(timeout)) == NULL)
        goto done;
    values[4] = Py_NewRef(Py_None);
    PyObject *body = slot_class_new(&preq_class, values);
    for (int i = 0; i < 5; i++)
        values[i] = NULL; /* stolen */
    if (body == NULL)
        goto done;
    out = PyTuple_New(2);
    if (out == NULL) {
        Py_DECREF(body);
        goto done;
    }
    PyTuple_SET_ITEM(out, 0, client_id);
    PyTuple_SET_ITEM(out, 1, body);
    client_id = NULL;
    rc = 0;
done:
    PyBuffer_Release(&view);
    Py_XDECREF(client_id);
    for (int i = 0; i < 5; i++)
        Py_XDECREF(values[i]);
    if (rc == -1)
        Py_RETURN_NONE;
    return out;
}

PyDoc_STRVAR(frame_buffer_doc,
"frame_buffer(size) -> bytearray\n\n"
"Reference: bytearray(size), but its bytes are left as the allocator gives them (not zeroed): for a buffer that\n"
"is filled whole before anyone reads it (a received frame's payload).");

static PyObject *k_frame_buffer(PyObject *self, PyObject *arg)
{
    Py_ssize_t size = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (size == -1 && PyErr_Occurred())
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "negative count");
        return NULL;
    }
    return PyByteArray_FromStringAndSize(NULL, size);
}

/* ---- broker: a completed request's times (mini_broker.metrics.request_times_ms and observe_each) ---------- */

static const char *const hist_slot_names[] = {"count", "min", "max", "sum"};
static const char *const counter_slot_names[] = {"value"};
static slot_class_t hist_class = {NULL, 4, hist_slot_names, {0}};
static slot_class_t counter_class = {NULL, 1, counter_slot_names, {0}};
static PyObject *s_acquire = NULL, *s_release = NULL;

#define SLOT(obj, c, i) (*(PyObject **)((char *)(obj) + (c).offsets[i]))
#define REQUEST_TIMES 6

/* max(0.0, d / 1e6) as Python computes it for an int d (a NaN cannot come from an int) */
static double ms_of(int64_t d)
{
    double v = (double)d / 1e6;
    return v > 0.0 ? v : 0.0;
}

PyDoc_STRVAR(observe_request_times_doc,
"observe_request_times(lock, requests, histograms, now, start, dequeued, local_end, remote_end, completed,\n"
"                      response_dequeued, sent) -> bool\n\n"
"Reference: mini_broker.metrics.observe_request_times_reference: under ``lock``, the Counter ``requests`` counts\n"
"one more request and each of the six Histograms observes its time of request_times_ms(...). False, with nothing\n"
"changed, where the reference must run (a value that is not an int of 64 bits, a count that is not an int, a sum\n"
"or bound that is not a float, a slot not set).");

static PyObject *k_observe_request_times(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "observe_request_times takes 11 arguments");
        return NULL;
    }
    PyObject *lock = args[0], *requests = args[1], *histograms = args[2];
    if (!PyTuple_CheckExact(histograms) || PyTuple_GET_SIZE(histograms) != REQUEST_TIMES)
        Py_RETURN_FALSE;
    if (slot_class_setup(&counter_class, (PyObject *)Py_TYPE(requests)) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    PyTypeObject *htype = Py_TYPE(PyTuple_GET_ITEM(histograms, 0));
    if (slot_class_setup(&hist_class, (PyObject *)htype) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    int64_t ns[8];
    for (int i = 0; i < 8; i++) {
        PyObject *o = args[3 + i];
        if (!PyLong_CheckExact(o))
            Py_RETURN_FALSE;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        ns[i] = v;
    }
    int64_t now = ns[0], start = ns[1], dequeued = ns[2], local_end = ns[3], completed = ns[5];
    int64_t response_dequeued = ns[6], sent = ns[7];
    int64_t remote_end = ns[4] >= 0 ? ns[4] : local_end;
    double t[REQUEST_TIMES] = {
        start >= 0 && now >= 0 ? ms_of(now - start) : 0.0,
        start >= 0 && dequeued >= 0 ? ms_of(dequeued - start) : 0.0,
        dequeued >= 0 && local_end >= 0 ? ms_of(local_end - dequeued) : 0.0,
        local_end >= 0 && remote_end >= 0 ? ms_of(remote_end - local_end) : 0.0,
        completed >= 0 && response_dequeued >= 0 ? ms_of(response_dequeued - completed) : 0.0,
        response_dequeued >= 0 && sent >= 0 ? ms_of(sent - response_dequeued) : 0.0,
    };
    if (s_acquire == NULL && ((s_acquire = PyUnicode_InternFromString("acquire")) == NULL
                              || (s_release = PyUnicode_InternFromString("release")) == NULL))
        return NULL;
    PyObject *r = PyObject_CallMethodNoArgs(lock, s_acquire);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    /* everything checked before anything changes */
    long long counts[REQUEST_TIMES], total = 0;
    int ok = 1;
    PyObject *value = SLOT(requests, counter_class, 0);
    if (value == NULL || !PyLong_CheckExact(value) || (total = PyLong_AsLongLong(value)) == -1 || total == LLONG_MAX)
        ok = 0;
    for (int i = 0; ok && i < REQUEST_TIMES; i++) {
        PyObject *h = PyTuple_GET_ITEM(histograms, i);
        PyObject *count = Py_TYPE(h) == htype ? SLOT(h, hist_class, 0) : NULL;
        ok = count != NULL && PyLong_CheckExact(count) && SLOT(h, hist_class, 1) != NULL
             && PyFloat_CheckExact(SLOT(h, hist_class, 1)) && SLOT(h, hist_class, 2) != NULL
             && PyFloat_CheckExact(SLOT(h, hist_class, 2)) && SLOT(h, hist_class, 3) != NULL
             && PyFloat_CheckExact(SLOT(h, hist_class, 3));
        if (ok && ((counts[i] = PyLong_AsLongLong(count)) == -1 || counts[i] == LLONG_MAX))
            ok = 0;
    }
    PyErr_Clear();
    int failed = 0;
    if (ok) {
        PyObject *o = PyLong_FromLongLong(total + 1);
        if (o == NULL)
            failed = 1;
        else
            Py_SETREF(SLOT(requests, counter_class, 0), o);
        for (int i = 0; !failed && i < REQUEST_TIMES; i++) {
            PyObject *h = PyTuple_GET_ITEM(histograms, i);
            double v = t[i];
            PyObject *nv = PyFloat_FromDouble(v);
            if (nv == NULL) {
                failed = 1;
                break;
            }
            if (counts[i] == 0 || v < PyFloat_AS_DOUBLE(SLOT(h, hist_class, 1))) {
                Py_INCREF(nv);
                Py_SETREF(SLOT(h, hist_class, 1), nv);
            }
            if (counts[i] == 0 || v > PyFloat_AS_DOUBLE(SLOT(h, hist_class, 2))) {
                Py_INCREF(nv);
                Py_SETREF(SLOT(h, hist_class, 2), nv);
            }
            Py_DECREF(nv);
            PyObject *c = PyLong_FromLongLong(counts[i] + 1);
            PyObject *s = c ? PyFloat_FromDouble(PyFloat_AS_DOUBLE(SLOT(h, hist_class, 3)) + v) : NULL;
            if (s == NULL) {
                Py_XDECREF(c);
                failed = 1;
                break;
            }
            Py_SETREF(SLOT(h, hist_class, 0), c);
            Py_SETREF(SLOT(h, hist_class, 3), s);
        }
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    r = PyObject_CallMethodNoArgs(lock, s_release);
    if (r == NULL) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        return NULL;
    }
    Py_DECREF(r);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    if (failed)
        return NULL;
    return Py_NewRef(ok ? Py_True : Py_False);
}

/* ---- module ---------------------------------------------------------------------------------------- */

static PyObject *k_setup(PyObject *self, PyObject *args)
{
    PyObject *rt, *ct, *lt, *rv;
    if (!PyArg_ParseTuple(args, "O!OOO", &PyType_Type, &rt, &ct, &lt, &rv))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)rt, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "the record type must be a tuple subclass");
        return NULL;
    }
    Py_INCREF(rt); Py_INCREF(ct); Py_INCREF(lt); Py_INCREF(rv);
    Py_XSETREF(record_type, rt);
    Py_XSETREF(create_time, ct);
    Py_XSETREF(log_append_time_type, lt);
    Py_XSETREF(py_read_varint, rv);
    Py_RETURN_NONE;
}

/* ---- broker: the ProduceResponse frame of the usual answer (mini_broker/server/apis/produce_wire.py) --------- */

enum { PR_CURRENT_LEADER, PR_LEADER_ID, PR_LEADER_EPOCH, PR_INDEX, PR_ERROR_CODE, PR_BASE_OFFSET, PR_LOG_APPEND_TIME_MS, PR_LOG_START_OFFSET, PR_RECORD_ERRORS, PR_ERROR_MESSAGE, PR_NODE_ENDPOINTS, PR_RESPONSES, PR_NAME, PR_PARTITION_RESPONSES, PR_THROTTLE_TIME_MS, PR_NAMES };
static PyObject *pr_names[PR_NAMES];

/* the attribute names, interned once (PyObject_GetAttrString would make and hash each name on every call) */
static int pr_setup_names(void)
{
    static const char *const spelled[PR_NAMES] = {"current_leader", "leader_id", "leader_epoch", "index", "error_code", "base_offset", "log_append_time_ms", "log_start_offset", "record_errors", "error_message", "node_endpoints", "responses", "name", "partition_responses", "throttle_time_ms"};
    if (pr_names[0] != NULL)
        return 0;
    for (int i = 0; i < PR_NAMES; i++) {
        PyObject *n = PyUnicode_InternFromString(spelled[i]);
        if (n == NULL)
            return -1;
        pr_names[i] = n;
    }
    return 0;
}

typedef struct {
    uint8_t *buf;
    Py_ssize_t len, cap;
} pr_out;

static int pr_reserve(pr_out *o, Py_ssize_t n)
{
    if (o->len + n <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2 > o->len + n ? o->cap * 2 : o->len + n + 64;
    uint8_t *b = PyMem_Realloc(o->buf, (size_t)cap);
    if (b == NULL)
        return -1;
    o->buf = b;
    o->cap = cap;
    return 0;
}

static int pr_be(pr_out *o, uint64_t v, int n)
{
    if (pr_reserve(o, n) < 0)
        return -1;
    wr_be(o->buf + o->len, v, n);
    o->len += n;
    return 0;
}

/* an unsigned varint (compact lengths and counts, n + 1) */
static int pr_uvarint(pr_out *o, uint64_t v)
{
    if (pr_reserve(o, 10) < 0)
        return -1;
    do {
        uint8_t b = v & 0x7F;
        v >>= 7;
        o->buf[o->len++] = (uint8_t)(v ? (b | 0x80) : b);
    } while (v);
    return 0;
}

/* attribute ``name`` of ``obj`` as an int in [lo, hi]; 0 ok, 1 not such an int (declined), -1 error */
static int pr_int_attr(PyObject *obj, int name, long long lo, long long hi, long long *out)
{
    PyObject *v = PyObject_GetAttr(obj, pr_names[name]);
    if (v == NULL)
        return -1;
    if (!PyLong_Check(v)) {
        Py_DECREF(v);
        return 1;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow || x < lo || x > hi)
        return 1;
    *out = x;
    return 0;
}

/* whether ``p`` (a partition's response or result) has no record errors (an empty list) and no error message: 0 yes,
   1 not (declined), -1 error */
static int pr_no_messages(PyObject *p)
{
    PyObject *errors = PyObject_GetAttr(p, pr_names[PR_RECORD_ERRORS]);
    if (errors == NULL)
        return -1;
    int plain = PyList_CheckExact(errors) && PyList_GET_SIZE(errors) == 0;
    Py_DECREF(errors);
    PyObject *message = plain ? PyObject_GetAttr(p, pr_names[PR_ERROR_MESSAGE]) : NULL;
    if (plain && message == NULL)
        return -1;
    plain = plain && message == Py_None;
    Py_XDECREF(message);
    return plain ? 0 : 1;
}

/* a partition's fields at ``version`` when it has no record errors and no error message; 0 written, -1 error */
static int pr_plain_partition(pr_out *o, long version, long long index, long long error_code, long long base_offset,
                              long long log_append_time, long long log_start_offset)
{
    if (pr_be(o, (uint64_t)index, 4) < 0 || pr_be(o, (uint64_t)error_code, 2) < 0 || pr_be(o, (uint64_t)base_offset, 8) < 0 ||
        pr_be(o, (uint64_t)log_append_time, 8) < 0 || (version >= 5 && pr_be(o, (uint64_t)log_start_offset, 8) < 0))
        return -1;
    if (version >= 9) {
        /* no record errors (compact array of 0), a null message, no tags */
        if (pr_reserve(o, 3) < 0)
            return -1;
        o->buf[o->len++] = 1;
        o->buf[o->len++] = 0;
        o->buf[o->len++] = 0;
    } else if (version == 8) {
        if (pr_be(o, 0, 4) < 0 || pr_be(o, 0xFFFF, 2) < 0)
            return -1;
    }
    return 0;
}

/* 0 written, 1 declined, -1 error */
static int pr_partition(pr_out *o, PyObject *p, long version, PyObject *leader_class)
{
    PyObject *leader = PyObject_GetAttr(p, pr_names[PR_CURRENT_LEADER]);
    if (leader == NULL)
        return -1;
    long long leader_id = 0, leader_epoch = 0;
    int r = Py_TYPE(leader) != (PyTypeObject *)leader_class ? 1 : pr_int_attr(leader, PR_LEADER_ID, -1, -1, &leader_id);
    if (r == 0)
        r = pr_int_attr(leader, PR_LEADER_EPOCH, -1, -1, &leader_epoch);
    Py_DECREF(leader);
    if (r != 0)
        return r;
    long long index, error_code, base_offset, log_append_time, log_start_offset = 0;
    if ((r = pr_int_attr(p, PR_INDEX, INT32_MIN, INT32_MAX, &index)) != 0 ||
        (r = pr_int_attr(p, PR_ERROR_CODE, INT16_MIN, INT16_MAX, &error_code)) != 0 ||
        (r = pr_int_attr(p, PR_BASE_OFFSET, INT64_MIN, INT64_MAX, &base_offset)) != 0 ||
        (r = pr_int_attr(p, PR_LOG_APPEND_TIME_MS, INT64_MIN, INT64_MAX, &log_append_time)) != 0 ||
        (version >= 5 && (r = pr_int_attr(p, PR_LOG_START_OFFSET, INT64_MIN, INT64_MAX, &log_start_offset)) != 0))
        return r;
    /* no record errors and no error message: anything else is the Python encoder's */
    if (version >= 8 && (r = pr_no_messages(p)) != 0)
        return r;
    return pr_plain_partition(o, version, index, error_code, base_offset, log_append_time, log_start_offset);
}

/* 0 written, 1 declined, -1 error */
static int pr_count(pr_out *o, Py_ssize_t n, int flexible)
{
    if (n > INT32_MAX - 1)
        return 1;
    return flexible ? pr_uvarint(o, (uint64_t)n + 1) : pr_be(o, (uint64_t)n, 4);
}

static int pr_body(pr_out *o, PyObject *body, long version, PyObject *leader_class)
{
    int flexible = version >= 9, r;
    PyObject *endpoints = PyObject_GetAttr(body, pr_names[PR_NODE_ENDPOINTS]);
    if (endpoints == NULL)
        return -1;
    int no_endpoints = PyList_CheckExact(endpoints) && PyList_GET_SIZE(endpoints) == 0;
    Py_DECREF(endpoints);
    if (!no_endpoints)
        return 1;
    PyObject *responses = PyObject_GetAttr(body, pr_names[PR_RESPONSES]);
    if (responses == NULL)
        return -1;
    r = PyList_CheckExact(responses) ? pr_count(o, PyList_GET_SIZE(responses), flexible) : 1;
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(responses); i++) {
        PyObject *topic = PyList_GET_ITEM(responses, i);
        PyObject *name = PyObject_GetAttr(topic, pr_names[PR_NAME]);
        if (name == NULL) {
            r = -1;
            break;
        }
        Py_ssize_t n = 0;
        const char *utf8 = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
        if (utf8 == NULL) {
            PyErr_Clear();
            r = 1;
        } else if (n > 0x7FFF) {
            r = 1;
        } else if ((flexible ? pr_uvarint(o, (uint64_t)n + 1) : pr_be(o, (uint64_t)n, 2)) < 0 || pr_reserve(o, n) < 0) {
            r = -1;
        } else {
            memcpy(o->buf + o->len, utf8, (size_t)n);
            o->len += n;
        }
        Py_DECREF(name);
        if (r != 0)
            break;
        PyObject *parts = PyObject_GetAttr(topic, pr_names[PR_PARTITION_RESPONSES]);
        if (parts == NULL) {
            r = -1;
            break;
        }
        r = PyList_CheckExact(parts) ? pr_count(o, PyList_GET_SIZE(parts), flexible) : 1;
        for (Py_ssize_t j = 0; r == 0 && j < PyList_GET_SIZE(parts); j++)
            r = pr_partition(o, PyList_GET_ITEM(parts, j), version, leader_class);
        Py_DECREF(parts);
        if (r == 0 && flexible)
            r = pr_uvarint(o, 0); /* the topic's tags */
    }
    Py_DECREF(responses);
    if (r != 0)
        return r;
    long long throttle;
    if ((r = pr_int_attr(body, PR_THROTTLE_TIME_MS, INT32_MIN, INT32_MAX, &throttle)) != 0)
        return r;
    if (pr_be(o, (uint64_t)throttle, 4) < 0 || (flexible && pr_uvarint(o, 0) < 0))
        return -1;
    return 0;
}

PyDoc_STRVAR(encode_produce_response_doc,
    "encode_produce_response(body, version, correlation_id, leader_class) -> bytes | None\n\n"
    "The whole frame (size prefix, header, body) of a ProduceResponse at v3-v11 whose partitions have no record\n"
    "errors, no error message and a current leader of exactly ``leader_class`` at (-1, -1), without node endpoints;\n"
    "None for anything else. Reference: produce_wire's Python encoder (the same bytes).");

static PyObject *k_encode_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "encode_produce_response takes 4 arguments");
        return NULL;
    }
    long version = PyLong_AsLong(args[1]);
    long long correlation_id = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (version < 3 || version > 11 || correlation_id < INT32_MIN || correlation_id > INT32_MAX ||
        !PyType_Check(args[3]))
        Py_RETURN_NONE;
    int flexible = version >= 9;
    if (pr_setup_names() < 0)
        return NULL;
    pr_out o = {NULL, 0, 0};
    if (pr_reserve(&o, 256) < 0)
        return PyErr_NoMemory();
    o.len = flexible ? 9 : 8; /* size, correlation id (and the header's tags), written below */
    int r = pr_body(&o, args[0], version, args[3]);
    PyObject *out = NULL;
    if (r == 0 && o.len - 4 <= INT32_MAX) {
        wr_be(o.buf, (uint64_t)(o.len - 4), 4);
        wr_be(o.buf + 4, (uint64_t)correlation_id, 4);
        if (flexible)
            o.buf[8] = 0;
        out = PyBytes_FromStringAndSize((const char *)o.buf, o.len);
    } else {
        PyErr_Clear(); /* declined, or an error the Python encoder meets (and judges) too */
        out = Py_None;
        Py_INCREF(out);
    }
    PyMem_Free(o.buf);
    return out;
}

/* ==== network: the NetworkClient's per-request objects built without their __init__ (h/iothread4) ==========
 * slots_constructor(cls, names) -> a callable that makes an instance of ``cls`` (a slotted class: a dataclass with
 * slots=True and no __post_init__, network.transport.positional_new checks that) from one value per name,
 * positional, in the order of ``names``: what ``cls(*values)`` makes when ``names`` are its fields in order, without
 * the Python frame of the generated __init__ (a produce request's ClientRequest, NetworkSend, InFlightRequest and
 * ClientResponse, and each frame's NetworkReceive). */

#define SLOTS_MAKER_MAX 16

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *type;
    Py_ssize_t n;
    Py_ssize_t offsets[SLOTS_MAKER_MAX];
} SlotsMakerObject;

static PyObject *slots_maker_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SlotsMakerObject *m = (SlotsMakerObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != m->n || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd positional arguments (%zd given)", m->type->tp_name, m->n, nargs);
        return NULL;
    }
    PyObject *o = m->type->tp_alloc(m->type, 0);
    if (o == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        *(PyObject **)((char *)o + m->offsets[i]) = Py_NewRef(args[i]);
    return o;
}

static int slots_maker_traverse(SlotsMakerObject *m, visitproc visit, void *arg)
{
    Py_VISIT(m->type);
    return 0;
}

static int slots_maker_clear(SlotsMakerObject *m)
{
    Py_CLEAR(m->type);
    return 0;
}

static void slots_maker_dealloc(SlotsMakerObject *m)
{
    PyObject_GC_UnTrack(m);
    slots_maker_clear(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyObject *slots_maker_repr(SlotsMakerObject *m)
{
    return PyUnicode_FromFormat("<slots constructor of %s>", m->type->tp_name);
}

static PyTypeObject SlotsMakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SlotsConstructor",
    .tp_basicsize = sizeof(SlotsMakerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "An instance of a slotted class from one positional value per slot (kernel.slots_constructor).",
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(SlotsMakerObject, vectorcall),
    .tp_traverse = (traverseproc)slots_maker_traverse,
    .tp_clear = (inquiry)slots_maker_clear,
    .tp_dealloc = (destructor)slots_maker_dealloc,
    .tp_repr = (reprfunc)slots_maker_repr,
};

PyDoc_STRVAR(slots_constructor_doc,
"slots_constructor(cls, names) -> callable\n\n"
"Reference: ``cls(*values)`` of a slotted dataclass whose fields are ``names`` in order (no __post_init__): a\n"
"callable taking exactly one positional value per name that makes an instance of ``cls`` with each slot set to\n"
"its value, without calling __init__. TypeError unless ``cls`` has no __dict__ and each name is a slot (an\n"
"object member) defined by ``cls`` itself, all distinct, at most 16.");

static PyObject *k_slots_constructor(PyObject *self, PyObject *args)
{
    PyObject *type_obj, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &type_obj, &PyTuple_Type, &names))
        return NULL;
    if (PyType_Ready(&SlotsMakerType) < 0)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)type_obj;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n > SLOTS_MAKER_MAX || type->tp_dictoffset != 0 || type->tp_alloc == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: not a slotted class of at most %d slots", type->tp_name, SLOTS_MAKER_MAX);
        return NULL;
    }
    SlotsMakerObject *m = PyObject_GC_New(SlotsMakerObject, &SlotsMakerType);
    if (m == NULL)
        return NULL;
    m->vectorcall = slots_maker_vectorcall;
    m->type = (PyTypeObject *)Py_NewRef(type_obj);
    m->n = n;
    PyObject_GC_Track(m);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *d = PyUnicode_Check(name) ? PyDict_GetItemWithError(type->tp_dict, name) : NULL;
        int ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 ((PyMemberDescrObject *)d)->d_common.d_type == type;
        if (ok) {
            m->offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
            for (Py_ssize_t j = 0; j < i; j++)
                ok = ok && m->offsets[j] != m->offsets[i];
        }
        if (!ok) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s: %R is not a slot of its own (or is named twice)", type->tp_name, name);
            Py_DECREF(m);
            return NULL;
        }
    }
    return (PyObject *)m;
}

/* ==== end of h/iothread4's region ============================================================================== */

/* ==== broker: a client's one v2 batch checked and its header read in one call (h/brokerproduce) =============== */

PyDoc_STRVAR(client_batch_header_doc,
    "client_batch_header(buf, now, before_max_ms, after_max_ms, require_keys, max_message_bytes, crc32c)\n"
    "    -> tuple[int, int, int, int, int, int, int, int] | None\n\n"
    "When buf is exactly one v2 batch that log_validator.analyze_and_validate would accept from a client (its size\n"
    "at most max_message_bytes, and check_batch(buf, 0, True, True, now, ...) accepts it): its (size, producer id,\n"
    "producer epoch, base sequence, last offset delta, max timestamp, attributes, records count). None otherwise:\n"
    "the reference decides (it raises, or it takes several batches, or a compressed one).");

static PyObject *k_client_batch_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "client_batch_header takes 7 arguments");
        return NULL;
    }
    /* check_batch(buf, 0, True, True, now, before, after, require_keys, crc32c) on the one view (h/prodappend: no
     * boxed arguments, one buffer, the tuple built from its items) */
    /* (..AndOverflow: on 3.11 PyLong_AsLongLong reads an int of two digits or more through _PyLong_AsByteArray,
     * ~150 instructions; a clock in ms and LONG_MAX are such ints) */
    int o1 = 0, o2 = 0, o3 = 0, o4 = 0;
    long long max_message_bytes = PyLong_AsLongLongAndOverflow(args[5], &o1);
    long long now = PyLong_AsLongLongAndOverflow(args[1], &o2);
    long long before = PyLong_AsLongLongAndOverflow(args[2], &o3);
    long long after = PyLong_AsLongLongAndOverflow(args[3], &o4);
    int require_keys = PyObject_IsTrue(args[4]);
    if (PyErr_Occurred() || o1 || o2 || o3 || o4 || require_keys < 0) {
        PyErr_Clear(); /* a value the reference judges */
        Py_RETURN_NONE;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    long long size = check_batch_view((const uint8_t *)view.buf, view.len, 0, 1, 1, now, before, after, require_keys,
                                      args[6]);
    PyObject *out = NULL;
    if (size >= 0 && size == view.len && size <= max_message_bytes) {
        const uint8_t *h = (const uint8_t *)view.buf;
        long long fields[8] = {size, (long long)(int64_t)be_field(h + 43, 8), (int16_t)be_field(h + 51, 2),
                               (int32_t)be_field(h + 53, 4), (int32_t)be_field(h + LAST_OFFSET_DELTA_AT, 4),
                               (long long)(int64_t)be_field(h + 35, 8), (int16_t)be_field(h + ATTRIBUTES_AT, 2),
                               (int32_t)be_field(h + RECORDS_COUNT_AT, 4)};
        out = PyTuple_New(8);
        for (int i = 0; out != NULL && i < 8; i++) {
            PyObject *v = PyLong_FromLongLong(fields[i]);
            if (v == NULL)
                Py_CLEAR(out);
            else
                PyTuple_SET_ITEM(out, i, v);
        }
    } else {
        out = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&view);
    return out;
}

/* ==== end of h/brokerproduce's region ========================================================================== */

/* ==== broker append (h/brkappend) =============================================================================== */

/* A varint of one or two bytes in [*pp, lim) (lim - *pp >= 2 checked by the caller) in its zig-zag form (not decoded):
 * 0 and *pp advanced; -1 for a longer one (the caller defers). (h/prodappend) */
static inline __attribute__((always_inline)) int brk_raw12(const uint8_t **pp, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t u = p[0];
    if (u >= 0x80) {
        uint64_t b1 = p[1];
        if (b1 >= 0x80)
            return -1;
        u = (u & 0x7F) | (b1 << 7);
        *pp = p + 2;
    } else {
        *pp = p + 1;
    }
    *out = u;
    return 0;
}

/* validate_scan's i-th record when it has the usual shape (length, timestamp delta, offset delta, key and value
 * lengths in one or two bytes each, no headers): the end of the record when every check of validate_scan passes on
 * it (well formed as parse_record reads it, offset delta i, the timestamp in bounds, a key when required); NULL
 * otherwise, never a verdict: validate_scan then runs parse_record and its checks on the same bytes, which accept
 * or refuse. Reads nothing past the record's end nor past end. */
static inline __attribute__((always_inline)) const uint8_t *brk_quick_record(const uint8_t *p, const uint8_t *end,
                                                                             long long i, const batch_args *a,
                                                                             const checks_t *k, int ts_all_ok)
{
    /* (h/prodappend: the varints compared in their zig-zag form, brk_raw12, rather than decoded: a length, key or value
     * length is even when not negative (-1 is 1), the offset delta i is 2i; a record of 7 bytes or more holds the
     * attributes and the first three varints of up to two bytes each, read without a bound each; a shorter one goes
     * through parse_record) */
    uint64_t length, ts_raw, offset_raw, key_raw, value_raw;
    if (end - p < 2 || brk_raw12(&p, &length) < 0 || (length & 1) || (length >>= 1) < 7 || (int64_t)length > end - p)
        return NULL;
    const uint8_t *rec_end = p + length;
    p++; /* attributes */
    if (brk_raw12(&p, &ts_raw) < 0 || brk_raw12(&p, &offset_raw) < 0 || offset_raw != 2 * (uint64_t)i ||
        brk_raw12(&p, &key_raw) < 0)
        return NULL;
    if (key_raw == 1) { /* -1: a null key */
        if (k->require_keys)
            return NULL;
    } else if ((key_raw & 1) || (int64_t)(key_raw >> 1) > rec_end - p) {
        return NULL;
    } else {
        p += key_raw >> 1;
    }
    if (rec_end - p < 2 || brk_raw12(&p, &value_raw) < 0)
        return NULL;
    if (value_raw != 1) { /* not a null value */
        if ((value_raw & 1) || (int64_t)(value_raw >> 1) > rec_end - p)
            return NULL;
        p += value_raw >> 1;
    }
    /* no headers: the count 0 is the record's last byte */
    if (rec_end - p != 1 || *p != 0)
        return NULL;
    if (ts_all_ok) /* every timestamp a two-byte delta reaches passes (brk_quick_ts_all_ok) */
        return rec_end;
    int64_t ts, ts_delta = (int64_t)((ts_raw >> 1) ^ (0 - (ts_raw & 1)));
    if (add_overflows(a->base_timestamp, ts_delta, &ts))
        return NULL;
    if (k->check_ts && ts >= 0) {
        int64_t before, after;
        if (__builtin_sub_overflow(k->now, ts, &before) || __builtin_sub_overflow(ts, k->now, &after) ||
            before > k->before_max || after > k->after_max)
            return NULL;
    }
    return rec_end;
}

/* ==== end of h/brkappend's region ================================================================================ */

/* ==== broker append (h/prodappend) ============================================================================== */

/* Whether every timestamp base_timestamp + d, for the deltas d a varint of one or two bytes holds ([-8192, 8191]),
 * passes validate_scan's checks (no overflow; without check_ts any; else each negative, or each within before_max
 * before and after_max after now): brk_quick_record then skips the per-record check. 0 when some might not (each
 * record is then checked as before). */
static int brk_quick_ts_all_ok(const batch_args *a, const checks_t *k)
{
    int64_t lo, hi, before, after;
    if (add_overflows(a->base_timestamp, -8192, &lo) || add_overflows(a->base_timestamp, 8191, &hi))
        return 0;
    if (!k->check_ts || hi < 0)
        return 1;
    if (lo < 0)
        return 0;
    /* (now - ts and ts - now are monotonic in ts: without an overflow at both ends, none between) */
    int64_t unused;
    return !__builtin_sub_overflow(k->now, lo, &before) && !__builtin_sub_overflow(k->now, hi, &unused) &&
           !__builtin_sub_overflow(hi, k->now, &after) && !__builtin_sub_overflow(lo, k->now, &unused) &&
           before <= k->before_max && after <= k->after_max;
}

/* ==== end of h/prodappend's region ============================================================================== */

/* ==== producer: a produce request's parts from the drained batches in one call (h/drain) ======================== */

/* The attributes of a ProducerBatch drained_request reads and writes (interned at first use). */
enum { D_TP, D_COMPRESSED, D_PENDING, D_PID, D_EPOCH, D_SEQ, D_TXN, D_BUILT, D_BUILT_STATE, D_RATIO, D_STAMP,
       D_UNKNOWN_TAGS, D_COUNT };
static PyObject *dattr[D_COUNT];
static PyObject *one_float = NULL;

static int drained_names(void)
{
    static const char *const names[D_COUNT] = {
        "topic_partition", "is_compressed", "pending", "producer_id", "producer_epoch", "base_sequence",
        "is_transactional", "encoded", "encoded_state", "actual_compression_ratio", "sent_stamp",
        "_unknown_tagged_fields"};
    if (dattr[0] != NULL)
        return 0;
    for (int i = 0; i < D_COUNT; i++)
        if ((dattr[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    return (one_float = PyFloat_FromDouble(1.0)) == NULL ? -1 : 0;
}

/* One batch of drained_request: ProducerBatch.records() (its cached bytes, or encode_batch's uncompressed kernel
 * path, the cache updated as records() updates it) then mark_sent(); appended to parts and by_tp. 1 done, 0 declined
 * (the kernel's encode_batch declined: the reference must encode; the batch left as records() would leave it only
 * for the batches before), -1 error. */
static int drained_one(PyObject *b, PyObject *crc32c, PyObject *parts, PyObject *by_tp, long long *records,
                       long long *size)
{
    PyObject *v[D_COUNT] = {NULL};
    PyObject *state = NULL, *stamp = NULL, *part = NULL, *data = NULL;
    int rc = -1, i;
    for (i = 0; i <= D_BUILT_STATE; i++)
        if ((v[i] = PyObject_GetAttr(b, dattr[i])) == NULL)
            goto out;
    if (v[D_COMPRESSED] != Py_False) {
        rc = 0; /* (a compressed batch moves the compression estimate: Sender's loop does it) */
        goto out;
    }
    if ((state = PyTuple_Pack(4, v[D_PID], v[D_EPOCH], v[D_SEQ], v[D_TXN])) == NULL)
        goto out;
    int same = 0;
    if (v[D_BUILT] != Py_None && (same = PyObject_RichCompareBool(v[D_BUILT_STATE], state, Py_EQ)) < 0)
        goto out;
    if (same) {
        if (!PyBytes_Check(v[D_BUILT])) {
            rc = 0; /* (cached bytes of another type: the reference judges them) */
            goto out;
        }
        data = v[D_BUILT];
        Py_INCREF(data);
    } else {
        PyObject *args[6] = {v[D_PENDING], v[D_PID], v[D_EPOCH], v[D_SEQ], v[D_TXN], crc32c};
        if ((data = k_encode_batch(NULL, args, 6)) == NULL)
            goto out;
        if (data == Py_None) {
            rc = 0;
            goto out;
        }
        if (PyObject_SetAttr(b, dattr[D_BUILT], data) < 0 || PyObject_SetAttr(b, dattr[D_RATIO], one_float) < 0
            || PyObject_SetAttr(b, dattr[D_BUILT_STATE], state) < 0)
            goto out;
    }
    if ((stamp = PyTuple_Pack(3, v[D_PID], v[D_EPOCH], v[D_SEQ])) == NULL || PyObject_SetAttr(b, dattr[D_STAMP], stamp) < 0)
        goto out;
    Py_ssize_t n = PyObject_Size(v[D_PENDING]);
    if (n < 0)
        goto out;
    *records += n;
    *size += PyBytes_GET_SIZE(data);
    if ((part = PyTuple_Pack(2, v[D_TP], data)) == NULL || PyDict_SetItem(by_tp, v[D_TP], b) < 0
        || PyList_Append(parts, part) < 0)
        goto out;
    rc = 1;
out:
    for (i = 0; i < D_COUNT; i++)
        Py_XDECREF(v[i]);
    Py_XDECREF(state);
    Py_XDECREF(stamp);
    Py_XDECREF(part);
    Py_XDECREF(data);
    return rc;
}

PyDoc_STRVAR(drained_request_doc,
"drained_request(batches, crc32c, transactional_id, acks, timeout_ms) -> (request, by_tp, records, size) or None\n\n"
"Sender._send_produce_request_reference's loop over the drained ``batches`` compiled, for uncompressed batches:\n"
"each batch's ProducerBatch.records() (its bytes built as encode_batch's kernel path builds them, cached as\n"
"records() caches them) and mark_sent(); the request is the sender_setup request type (DrainedProduceRequest.of)\n"
"of the [(topic_partition, bytes)] parts, by_tp {topic_partition: batch}, records and size the sums of the\n"
"batches' record counts and byte sizes. None where the reference must do it (a compressed batch, a batch the\n"
"kernel's encode_batch declines, no request type set up): what was done before is what the reference redoes.");

static PyObject *k_drained_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "drained_request takes 5 arguments");
        return NULL;
    }
    PyObject *batches = args[0];
    if (parts_request_type == NULL || !PyList_CheckExact(batches))
        Py_RETURN_NONE;
    if (drained_names() < 0)
        return NULL;
    PyObject *parts = PyList_New(0), *by_tp = PyDict_New(), *req = NULL;
    long long records = 0, size = 0;
    if (parts == NULL || by_tp == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(batches); i++) {
        int rc = drained_one(PyList_GET_ITEM(batches, i), args[1], parts, by_tp, &records, &size);
        if (rc < 0)
            goto fail;
        if (rc == 0) {
            Py_DECREF(parts);
            Py_DECREF(by_tp);
            Py_RETURN_NONE;
        }
    }
    /* DrainedProduceRequest.of: no __init__, topic_data left unbuilt */
    if ((req = parts_request_type->tp_alloc(parts_request_type, 0)) == NULL
        || PyObject_SetAttr(req, s_tid, args[2]) < 0 || PyObject_SetAttr(req, s_acks, args[3]) < 0
        || PyObject_SetAttr(req, s_timeout, args[4]) < 0 || PyObject_SetAttr(req, dattr[D_UNKNOWN_TAGS], Py_None) < 0
        || PyObject_SetAttr(req, s_parts, parts) < 0)
        goto fail;
    Py_DECREF(parts);
    return Py_BuildValue("(NNLL)", req, by_tp, records, size);
fail:
    Py_XDECREF(parts);
    Py_XDECREF(by_tp);
    Py_XDECREF(req);
    return NULL;
}

/* ==== end of h/drain's region ================================================================================== */

/* ==== broker: the per-request named tuples built without their Python __new__ (h/brokerreq) =================
 * tuple_constructor(cls, n) -> a callable that makes an instance of ``cls`` (a tuple subclass without a __dict__: a
 * named tuple, mini_broker.utils.positional_tuple checks that it is one whose __new__ is the generated one) from
 * exactly n positional values: what ``tuple.__new__(cls, values)`` makes (and the generated ``cls(*values)``),
 * without the args tuple, tuple.__new__'s checks and the intermediate tuple (a produce append makes about seven:
 * the log's append info, offsets and end offset, the producer state's batch and pending append, ...). */

#define TUPLE_MAKER_MAX 64

/* (an instance of h/iothread4's SlotsConstructor type, its type and n used, its slot offsets not: the same object
 * layout, traversal and deallocation, another vectorcall) */
static PyObject *tuple_maker_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SlotsMakerObject *m = (SlotsMakerObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != m->n || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd positional arguments (%zd given)", m->type->tp_name, m->n, nargs);
        return NULL;
    }
    /* (as tuple.__new__ on a subclass: the type's allocation, the items, and tracked by the collector) */
    PyObject *o = m->type->tp_alloc(m->type, nargs);
    if (o == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(o, i, Py_NewRef(args[i]));
    if (!PyObject_GC_IsTracked(o))
        PyObject_GC_Track(o);
    return o;
}

PyDoc_STRVAR(tuple_constructor_doc,
"tuple_constructor(cls, n) -> callable\n\n"
"Reference: ``tuple.__new__(cls, values)`` of a tuple subclass ``cls``: a callable taking exactly ``n`` positional\n"
"values that makes an instance of ``cls`` holding them, in order. TypeError unless ``cls`` is a proper subclass\n"
"of tuple without a __dict__ and 0 <= n <= 64.");

static PyObject *k_tuple_constructor(PyObject *self, PyObject *args)
{
    PyObject *type_obj;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!n", &PyType_Type, &type_obj, &n))
        return NULL;
    if (PyType_Ready(&SlotsMakerType) < 0)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)type_obj;
    if (type == &PyTuple_Type || !PyType_IsSubtype(type, &PyTuple_Type) || type->tp_dictoffset != 0 ||
        type->tp_alloc == NULL || !PyType_IS_GC(type) || n < 0 || n > TUPLE_MAKER_MAX) {
        PyErr_Format(PyExc_TypeError, "%s: not a tuple subclass without a __dict__ (or %zd items)", type->tp_name, n);
        return NULL;
    }
    SlotsMakerObject *m = PyObject_GC_New(SlotsMakerObject, &SlotsMakerType);
    if (m == NULL)
        return NULL;
    m->vectorcall = tuple_maker_vectorcall;
    m->type = (PyTypeObject *)Py_NewRef(type_obj);
    m->n = n;
    PyObject_GC_Track(m);
    return (PyObject *)m;
}

/* ==== end of h/brokerreq's region ============================================================================== */

/* ==== I/O thread (h/iosend): a client connection's frames read and split in one call ======================== */

enum { RF_SOURCE, RF_MAX, RF_BUF, RF_START, RF_END, RF_PAYLOAD, RF_PREAD, RF_COUNT };
static const char *const rf_names[RF_COUNT] = {"source", "max_size", "buf", "start", "end", "payload", "payload_read"};
static PyObject *rf_attr[RF_COUNT];
static slot_cache rf_cache[RF_COUNT];

static int rf_init(void)
{
    if (rf_attr[RF_COUNT - 1] != NULL)
        return 0;
    for (int i = 0; i < RF_COUNT; i++)
        if (rf_attr[i] == NULL && (rf_attr[i] = PyUnicode_InternFromString(rf_names[i])) == NULL)
            return -1;
    return 0;
}

static int rf_get(PyObject *reader, int i, Py_ssize_t *out)
{
    PyObject *v = cached_get(reader, rf_attr[i], &rf_cache[i]);
    if (v == NULL)
        return -1;
    *out = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int rf_set(PyObject *reader, int i, Py_ssize_t v)
{
    PyObject *x = PyLong_FromSsize_t(v);
    if (x == NULL)
        return -1;
    int rc = cached_set(reader, rf_attr[i], &rf_cache[i], x);
    Py_DECREF(x);
    return rc;
}

/* ``recv_into(view) or -1`` of a view of n bytes at mem (network_receive._read_into with a socket's recv_into): the
 * bytes read, -1 at the end of the stream, 0 when the socket would block (BlockingIOError, InterruptedError); -2
 * with an exception. The view is released after the call should the callee have kept it. */
static Py_ssize_t rf_recv(PyObject *recv_into, char *mem, Py_ssize_t n)
{
    PyObject *mv = PyMemoryView_FromMemory(mem, n, PyBUF_WRITE);
    if (mv == NULL)
        return -2;
    PyObject *r = PyObject_CallOneArg(recv_into, mv);
    if (Py_REFCNT(mv) > 1) { /* kept: no access to the reader's memory past this call */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *x = PyObject_CallMethod(mv, "release", NULL);
        Py_XDECREF(x);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    Py_DECREF(mv);
    if (r == NULL) {
        if (PyErr_ExceptionMatches(PyExc_BlockingIOError) || PyErr_ExceptionMatches(PyExc_InterruptedError)) {
            PyErr_Clear();
            return 0;
        }
        return -2;
    }
    int truth = PyObject_IsTrue(r);
    Py_ssize_t got = truth > 0 ? PyLong_AsSsize_t(r) : truth == 0 ? -1 : -2;
    Py_DECREF(r);
    if (truth > 0 && got == -1 && PyErr_Occurred())
        return -2;
    return got;
}

PyDoc_STRVAR(read_frames_doc,
"read_frames(reader, recv_into, max_receives, max_bytes, new_receive, check_receive_size, empty)\n"
"    -> (receives, bytes_read, ended)\n\n"
"Reference: BufferedFrameReader.read_frames(transport, max_receives, max_bytes, recv_into) of ``reader`` (a\n"
"BufferedFrameReader) with the plaintext socket's ``recv_into``: the same reads, frames (each made by\n"
"``new_receive(source, payload, None)``, ``empty`` the payload of an empty frame), state and exceptions\n"
"(``check_receive_size(size, max_size)`` raises for a bad size).");

static PyObject *k_read_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "read_frames takes 7 arguments");
        return NULL;
    }
    if (rf_init() < 0)
        return NULL;
    PyObject *reader = args[0], *recv_into = args[1], *new_receive = args[4], *check = args[5], *empty = args[6];
    Py_ssize_t max_receives = PyLong_AsSsize_t(args[2]), max_bytes = PyLong_AsSsize_t(args[3]), max_size;
    if ((max_receives == -1 || max_bytes == -1) && PyErr_Occurred())
        return NULL;
    PyObject *buf = cached_get(reader, rf_attr[RF_BUF], &rf_cache[RF_BUF]), *source = NULL, *receives = NULL;
    PyObject *payload = NULL, *out = NULL;
    if (buf == NULL)
        return NULL;
    if (!PyByteArray_CheckExact(buf)) {
        PyErr_SetString(PyExc_TypeError, "read_frames: the reader's buffer is not a bytearray");
        goto done;
    }
    if ((source = cached_get(reader, rf_attr[RF_SOURCE], &rf_cache[RF_SOURCE])) == NULL || rf_get(reader, RF_MAX, &max_size) < 0
        || (receives = PyList_New(0)) == NULL)
        goto done;
    Py_ssize_t total = 0, start, end, blen = PyByteArray_GET_SIZE(buf);
    int drained = 0, ended = 0;
    for (;;) {
        if ((payload = cached_get(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD])) == NULL
            || rf_get(reader, RF_START, &start) < 0 || rf_get(reader, RF_END, &end) < 0)
            goto done;
        if (payload == Py_None && end - start >= 4) {
            /* the whole frames in the buffer (up to max_receives); the start of a frame larger than the buffer to a
             * payload buffer of its own */
            char *b = PyByteArray_AS_STRING(buf);
            while (PyList_GET_SIZE(receives) < max_receives && end - start >= 4) {
                const uint8_t *s = (const uint8_t *)b + start;
                int32_t size = (int32_t)((uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | (uint32_t)s[3]);
                if (size < 0 || (max_size != -1 && size > max_size)) {
                    if (rf_set(reader, RF_START, start) < 0)
                        goto done;
                    PyObject *r = PyObject_CallFunction(check, "in", (int)size, max_size);
                    if (r == NULL)
                        goto done;
                    Py_DECREF(r);
                }
                Py_ssize_t frame_end = start + 4 + (Py_ssize_t)size;
                if (frame_end > end) {
                    if (4 + (Py_ssize_t)size > blen) {
                        Py_ssize_t have = end - start - 4;
                        PyObject *large = PyByteArray_FromStringAndSize(NULL, size);
                        if (large == NULL)
                            goto done;
                        memcpy(PyByteArray_AS_STRING(large), b + start + 4, (size_t)have);
                        memset(PyByteArray_AS_STRING(large) + have, 0, (size_t)(size - have));
                        int rc = cached_set(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD], large);
                        Py_DECREF(large);
                        if (rc < 0 || rf_set(reader, RF_PREAD, have) < 0)
                            goto done;
                        start = end = 0;
                    }
                    break;
                }
                PyObject *mv;
                if (size) {
                    PyObject *copy = PyByteArray_FromStringAndSize(b + start + 4, size);
                    mv = copy == NULL ? NULL : PyMemoryView_FromObject(copy);
                    Py_XDECREF(copy);
                    if (mv == NULL)
                        goto done;
                } else
                    mv = Py_NewRef(empty);
                PyObject *rargs[3] = {source, mv, Py_None};
                PyObject *rec = PyObject_Vectorcall(new_receive, rargs, 3, NULL);
                Py_DECREF(mv);
                if (rec == NULL || PyList_Append(receives, rec) < 0) {
                    Py_XDECREF(rec);
                    goto done;
                }
                Py_DECREF(rec);
                start = frame_end;
            }
            if (start == end)
                start = end = 0;
            if (rf_set(reader, RF_START, start) < 0 || rf_set(reader, RF_END, end) < 0)
                goto done;
        }
        Py_CLEAR(payload);
        if (drained || PyList_GET_SIZE(receives) >= max_receives || total >= max_bytes)
            break;
        if ((payload = cached_get(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD])) == NULL)
            goto done;
        if (payload != Py_None) { /* a frame larger than the buffer: the rest straight into its own buffer */
            Py_ssize_t pread;
            if (!PyByteArray_CheckExact(payload)) {
                PyErr_SetString(PyExc_TypeError, "read_frames: the reader's payload is not a bytearray");
                goto done;
            }
            if (rf_get(reader, RF_PREAD, &pread) < 0)
                goto done;
            Py_ssize_t want = PyByteArray_GET_SIZE(payload) - pread;
            Py_ssize_t n = rf_recv(recv_into, PyByteArray_AS_STRING(payload) + pread, want);
            if (n == -2)
                goto done;
            if (n < 0) {
                ended = 1;
                break;
            }
            total += n;
            if (rf_set(reader, RF_PREAD, pread + n) < 0)
                goto done;
            if (n < want)
                break;
            PyObject *mv = PyMemoryView_FromObject(payload);
            if (mv == NULL)
                goto done;
            PyObject *rargs[3] = {source, mv, Py_None};
            PyObject *rec = PyObject_Vectorcall(new_receive, rargs, 3, NULL);
            Py_DECREF(mv);
            if (rec == NULL || PyList_Append(receives, rec) < 0) {
                Py_XDECREF(rec);
                goto done;
            }
            Py_DECREF(rec);
            if (cached_set(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD], Py_None) < 0 || rf_set(reader, RF_PREAD, 0) < 0)
                goto done;
            Py_CLEAR(payload);
            continue;
        }
        Py_CLEAR(payload);
        if (rf_get(reader, RF_START, &start) < 0 || rf_get(reader, RF_END, &end) < 0)
            goto done;
        char *b = PyByteArray_AS_STRING(buf);
        if (start > 0) { /* the start of a frame is left: to the front */
            memmove(b, b + start, (size_t)(end - start));
            end -= start;
            if (rf_set(reader, RF_START, 0) < 0)
                goto done;
        }
        Py_ssize_t want = blen - end;
        Py_ssize_t n = rf_recv(recv_into, b + end, want);
        if (n == -2)
            goto done;
        if (n < 0) {
            if (rf_set(reader, RF_END, end) < 0)
                goto done;
            ended = 1;
            break;
        }
        total += n;
        if (rf_set(reader, RF_END, end + n) < 0)
            goto done;
        drained = n < want;
    }
    out = Py_BuildValue("(OnO)", receives, total, ended ? Py_True : Py_False);
done:
    Py_DECREF(buf);
    Py_XDECREF(source);
    Py_XDECREF(receives);
    Py_XDECREF(payload);
    return out;
}

/* ==== end of h/iosend's region ================================================================================= */

/* ==== broker: a Produce answer's frame straight from the partitions' results (h/brkresp) ======================= */

PyDoc_STRVAR(produce_results_frame_doc,
    "produce_results_frame(order, results, version, correlation_id, hint_codes) -> bytes | None\n\n"
    "The whole frame (size prefix, header, body) of the ProduceResponse mini_broker's produce handler builds from\n"
    "``order`` (its TopicPartition tuples, each topic's partitions next to each other) and ``results`` (tp ->\n"
    "PartitionResponse) at v3-v11, without building it: no throttle, no node endpoints. None where it declines: a\n"
    "partition with record errors or an error message at v8+, an error code in ``hint_codes`` at v10+ (a leader\n"
    "hint), a topic whose partitions are not together, a value the wire cannot hold. Reference: produce._build then\n"
    "produce_wire.encode_produce_response (the same bytes).");

/* 0 written, 1 declined, -1 error */
static int rf_partition(pr_out *o, PyObject *partition, PyObject *r, long version, PyObject *hint_codes)
{
    long long index, error_code, base_offset, log_append_time, log_start_offset = 0;
    int rc;
    if (!PyLong_Check(partition))
        return 1;
    int overflow = 0;
    index = PyLong_AsLongLongAndOverflow(partition, &overflow);
    if (index == -1 && PyErr_Occurred())
        return -1;
    if (overflow || index < INT32_MIN || index > INT32_MAX)
        return 1;
    if ((rc = pr_int_attr(r, PR_ERROR_CODE, INT16_MIN, INT16_MAX, &error_code)) != 0 ||
        (rc = pr_int_attr(r, PR_BASE_OFFSET, INT64_MIN, INT64_MAX, &base_offset)) != 0 ||
        (rc = pr_int_attr(r, PR_LOG_APPEND_TIME_MS, INT64_MIN, INT64_MAX, &log_append_time)) != 0 ||
        (version >= 5 && (rc = pr_int_attr(r, PR_LOG_START_OFFSET, INT64_MIN, INT64_MAX, &log_start_offset)) != 0))
        return rc;
    if (error_code != 0 && version >= 10) {
        PyObject *code = PyLong_FromLongLong(error_code);
        if (code == NULL)
            return -1;
        int hinted = PySequence_Contains(hint_codes, code);
        Py_DECREF(code);
        if (hinted != 0)
            return hinted < 0 ? -1 : 1;
    }
    /* no record errors and no error message (below v8 neither is on the wire) */
    if (version >= 8 && (rc = pr_no_messages(r)) != 0)
        return rc;
    return pr_plain_partition(o, version, index, error_code, base_offset, log_append_time, log_start_offset);
}

/* a topic name as the response writes it; 0 written, 1 declined, -1 error */
static int rf_name(pr_out *o, PyObject *name, int flexible)
{
    Py_ssize_t n = 0;
    const char *utf8 = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
    if (utf8 == NULL) {
        PyErr_Clear();
        return 1;
    }
    if (n > 0x7FFF)
        return 1;
    if ((flexible ? pr_uvarint(o, (uint64_t)n + 1) : pr_be(o, (uint64_t)n, 2)) < 0 || pr_reserve(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, utf8, (size_t)n);
    o->len += n;
    return 0;
}

/* the body; ``starts`` holds each topic's first index in ``order`` and then the order's length; 0, 1, -1 */
static int rf_body(pr_out *o, PyObject *order, PyObject *results, long version, PyObject *hint_codes,
                   const Py_ssize_t *starts, Py_ssize_t topics)
{
    int flexible = version >= 9, r = pr_count(o, topics, flexible);
    for (Py_ssize_t t = 0; r == 0 && t < topics; t++) {
        PyObject *first = PyList_GET_ITEM(order, starts[t]);
        r = rf_name(o, PyTuple_GET_ITEM(first, 0), flexible);
        if (r == 0)
            r = pr_count(o, starts[t + 1] - starts[t], flexible);
        for (Py_ssize_t i = starts[t]; r == 0 && i < starts[t + 1]; i++) {
            PyObject *tp = PyList_GET_ITEM(order, i);
            PyObject *result = PyDict_GetItemWithError(results, tp); /* borrowed */
            if (result == NULL)
                return PyErr_Occurred() ? -1 : 1;
            r = rf_partition(o, PyTuple_GET_ITEM(tp, 1), result, version, hint_codes);
        }
        if (r == 0 && flexible)
            r = pr_uvarint(o, 0); /* the topic's tags */
    }
    if (r != 0)
        return r;
    /* no throttle time (and the body's tags: no node endpoints) */
    return pr_be(o, 0, 4) < 0 || (flexible && pr_uvarint(o, 0) < 0) ? -1 : 0;
}

/* each topic's first index in ``order`` (then its length) into ``starts`` (room for n + 1); the number of topics,
   0 where a topic's partitions are not next to each other (declined), -1 on error */
static Py_ssize_t rf_topic_starts(PyObject *order, Py_ssize_t *starts)
{
    Py_ssize_t n = PyList_GET_SIZE(order), topics = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tp = PyList_GET_ITEM(order, i);
        if (!PyTuple_Check(tp) || PyTuple_GET_SIZE(tp) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(tp, 0)))
            return 0;
        PyObject *topic = PyTuple_GET_ITEM(tp, 0);
        if (topics > 0) {
            PyObject *current = PyTuple_GET_ITEM(PyList_GET_ITEM(order, starts[topics - 1]), 0);
            int same = current == topic ? 1 : PyUnicode_Compare(current, topic) == 0;
            if (same)
                continue;
            for (Py_ssize_t t = 0; t < topics - 1; t++) {
                int seen = PyUnicode_Compare(PyTuple_GET_ITEM(PyList_GET_ITEM(order, starts[t]), 0), topic);
                if (seen == -1 && PyErr_Occurred())
                    return -1;
                if (seen == 0)
                    return 0; /* a topic again after another: the handler groups it (the Python path) */
            }
        }
        starts[topics++] = i;
    }
    starts[topics] = n;
    return topics;
}

static PyObject *k_produce_results_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "produce_results_frame takes 5 arguments");
        return NULL;
    }
    PyObject *order = args[0], *results = args[1];
    long version = PyLong_AsLong(args[2]);
    long long correlation_id = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (version < 3 || version > 11 || correlation_id < INT32_MIN || correlation_id > INT32_MAX ||
        !PyList_CheckExact(order) || !PyDict_Check(results) || PyList_GET_SIZE(order) > INT32_MAX - 1)
        Py_RETURN_NONE;
    if (pr_setup_names() < 0)
        return NULL;
    Py_ssize_t local[9], *starts = local, n = PyList_GET_SIZE(order);
    if (n + 1 > (Py_ssize_t)(sizeof(local) / sizeof(local[0]))) {
        starts = PyMem_New(Py_ssize_t, (size_t)n + 1);
        if (starts == NULL)
            return PyErr_NoMemory();
    }
    PyObject *out = NULL;
    pr_out o = {NULL, 0, 0};
    Py_ssize_t topics = rf_topic_starts(order, starts);
    int r = topics < 0 ? -1 : topics == 0 && n > 0 ? 1 : 0;
    int flexible = version >= 9;
    if (r == 0 && pr_reserve(&o, 64 + 48 * n) < 0)
        r = -1;
    if (r == 0) {
        o.len = flexible ? 9 : 8; /* size, correlation id (and the header's tags), written below */
        r = rf_body(&o, order, results, version, args[4], starts, topics);
    }
    if (r == 0 && o.len - 4 > INT32_MAX)
        r = 1;
    if (r == 0) {
        wr_be(o.buf, (uint64_t)(o.len - 4), 4);
        wr_be(o.buf + 4, (uint64_t)correlation_id, 4);
        if (flexible)
            o.buf[8] = 0;
        out = PyBytes_FromStringAndSize((const char *)o.buf, o.len);
    } else if (r == 1) {
        out = Py_None;
        Py_INCREF(out);
    }
    PyMem_Free(o.buf);
    if (starts != local)
        PyMem_Free(starts);
    return out;
}

PyDoc_STRVAR(any_transactional_doc,
    "any_transactional(entries) -> bool | None\n\n"
    "Whether the first batch of any entry's records (``entries``: a list of (tp, records) pairs) is a v2 batch with\n"
    "the transactional bit: its magic byte (16) is 2 and bit 4 of its attributes' low byte (22) is set; records\n"
    "that are not bytes, or shorter than that, count as not. None where it declines: a memoryview other than a\n"
    "C-contiguous one of unsigned bytes, an entry that is not a pair. Reference: mini_broker's\n"
    "produce._any_transactional.");

static PyObject *k_any_transactional(PyObject *self, PyObject *entries)
{
    if (!PyList_Check(entries))
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *entry = PyList_GET_ITEM(entries, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2)
            Py_RETURN_NONE;
        PyObject *records = PyTuple_GET_ITEM(entry, 1);
        const uint8_t *p;
        Py_ssize_t n;
        if (PyMemoryView_Check(records)) {
            Py_buffer view;
            if (PyObject_GetBuffer(records, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
                PyErr_Clear(); /* released, or not contiguous: the reference judges it */
                Py_RETURN_NONE;
            }
            int plain = view.ndim == 1 && view.itemsize == 1 && (view.format == NULL || strcmp(view.format, "B") == 0);
            int transactional = plain && view.len >= 23 && ((const uint8_t *)view.buf)[16] == 2 &&
                                (((const uint8_t *)view.buf)[22] & 0x10);
            PyBuffer_Release(&view);
            if (!plain)
                Py_RETURN_NONE;
            if (transactional)
                Py_RETURN_TRUE;
            continue;
        } else if (PyBytes_Check(records)) {
            p = (const uint8_t *)PyBytes_AS_STRING(records);
            n = PyBytes_GET_SIZE(records);
        } else if (PyByteArray_Check(records)) {
            p = (const uint8_t *)PyByteArray_AS_STRING(records);
            n = PyByteArray_GET_SIZE(records);
        } else {
            continue; /* not in memory: the log refuses it */
        }
        if (n >= 23 && p[16] == 2 && (p[22] & 0x10))
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

/* ==== end of h/brkresp's region ================================================================================= */

/* ==== producer (h/iothread5): the incomplete batches, a set the kernel type owns ============================= */

/* Reference: producer/incomplete_batches.py's IncompleteBatches (the class the accumulator uses without the kernel).
 * The batches the producer has not completed yet, each with the ticket it was added with; ``condition`` (the
 * threading.Condition given at construction, read-only) is notified, under its lock, whenever a removal leaves the
 * set empty. Each method is one step under the GIL (a ProducerBatch hashes by identity: no Python code runs
 * inside a dict operation), so none takes the condition's lock but the notification: a waiter checks under that
 * lock and waits on the condition, and the notify takes the lock, so it reaches every waiter that saw the set
 * non-empty. await_completion (incomplete_batches.await_completion) waits on it. */
typedef struct {
    PyObject_HEAD
    PyObject *incomplete; /* dict: batch -> ticket */
    PyObject *condition;
    long long next_ticket;
} IncompleteObject;

static PyObject *ib_acquire, *ib_release, *ib_notify_all, *acct_notify;

/* the method names this region calls, interned once: 0, or -1 with an exception */
static int iothread5_names(void)
{
    if (acct_notify != NULL)
        return 0;
    if ((ib_acquire = PyUnicode_InternFromString("acquire")) == NULL ||
        (ib_release = PyUnicode_InternFromString("release")) == NULL ||
        (ib_notify_all = PyUnicode_InternFromString("notify_all")) == NULL ||
        (acct_notify = PyUnicode_InternFromString("notify")) == NULL)
        return -1;
    return 0;
}

/* lock.acquire(), then step(arg), then lock.release() whatever step's outcome (a blocking acquire lets other threads
 * run meanwhile, so step reads what it needs with the lock held): 0, or -1 with an exception */
static int with_lock(PyObject *lock, int (*step)(PyObject *), PyObject *arg)
{
    PyObject *r = PyObject_CallMethodNoArgs(lock, ib_acquire);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    int rc = step(arg);
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    r = PyObject_CallMethodNoArgs(lock, ib_release);
    if (r == NULL) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        return -1;
    }
    Py_DECREF(r);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return rc;
}

/* obj.<name>() for a method taking no argument and returning nothing of interest: 0, or -1 with an exception */
static int call_method_noargs(PyObject *obj, PyObject *name)
{
    PyObject *r = PyObject_CallMethodNoArgs(obj, name);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *ib_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *condition;
    static char *kwlist[] = {"condition", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:IncompleteBatches", kwlist, &condition))
        return NULL;
    if (iothread5_names() < 0)
        return NULL;
    IncompleteObject *self = (IncompleteObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if ((self->incomplete = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->condition = Py_NewRef(condition);
    self->next_ticket = 0;
    return (PyObject *)self;
}

static int ib_traverse(IncompleteObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->incomplete);
    Py_VISIT(self->condition);
    return 0;
}

static int ib_clear(IncompleteObject *self)
{
    Py_CLEAR(self->incomplete);
    Py_CLEAR(self->condition);
    return 0;
}

static void ib_dealloc(IncompleteObject *self)
{
    PyObject_GC_UnTrack(self);
    ib_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the next ticket (consumed), a new reference */
static PyObject *ib_take_ticket(IncompleteObject *self)
{
    return PyLong_FromLongLong(self->next_ticket++);
}

/* d.setdefault(batch, ticket): 0, or -1 with an exception */
static int ib_setdefault(IncompleteObject *self, PyObject *batch, PyObject *ticket)
{
    PyObject *r = PyDict_SetDefault(self->incomplete, batch, ticket);
    return r == NULL ? -1 : 0;
}

PyDoc_STRVAR(ib_add_doc, "add(batch)\n\nCounts ``batch`` incomplete with the next ticket (a ticket is taken even when it is already).");

static PyObject *ib_add(IncompleteObject *self, PyObject *batch)
{
    PyObject *ticket = ib_take_ticket(self);
    if (ticket == NULL)
        return NULL;
    int rc = ib_setdefault(self, batch, ticket);
    Py_DECREF(ticket);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(ib_add_pieces_doc,
"add_pieces(big, pieces)\n\nThe pieces of ``big`` split for being too large, counted incomplete with its ticket (a new\n"
"ticket each when ``big`` is not incomplete).");

static PyObject *ib_add_pieces(IncompleteObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add_pieces takes 2 arguments");
        return NULL;
    }
    PyObject *ticket = PyDict_GetItemWithError(self->incomplete, args[0]);
    if (ticket == NULL && PyErr_Occurred())
        return NULL;
    Py_XINCREF(ticket);
    PyObject *it = PyObject_GetIter(args[1]), *batch;
    if (it == NULL) {
        Py_XDECREF(ticket);
        return NULL;
    }
    int rc = 0;
    while (rc == 0 && (batch = PyIter_Next(it)) != NULL) {
        PyObject *t = ticket != NULL ? Py_NewRef(ticket) : ib_take_ticket(self);
        rc = t == NULL ? -1 : ib_setdefault(self, batch, t);
        Py_XDECREF(t);
        Py_DECREF(batch);
    }
    Py_DECREF(it);
    Py_XDECREF(ticket);
    if (rc < 0 || PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* condition.notify_all() (with its lock held) */
static int ib_notify_step(PyObject *condition)
{
    return call_method_noargs(condition, ib_notify_all);
}

PyDoc_STRVAR(ib_remove_doc, "remove(batch)\n\nForgets ``batch`` (nothing if it is not incomplete); the condition is notified when none is left.");

static PyObject *ib_remove(IncompleteObject *self, PyObject *batch)
{
    int rc = PyDict_DelItem(self->incomplete, batch);
    if (rc < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            return NULL;
        PyErr_Clear();
    }
    if (PyDict_GET_SIZE(self->incomplete) == 0 && with_lock(self->condition, ib_notify_step, self->condition) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(ib_is_empty_doc, "is_empty() -> bool");

static PyObject *ib_is_empty(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(PyDict_GET_SIZE(self->incomplete) == 0);
}

PyDoc_STRVAR(ib_copy_all_doc, "copy_all() -> list\n\nThe incomplete batches, in the order they were added.");

static PyObject *ib_copy_all(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyDict_Keys(self->incomplete);
}

PyDoc_STRVAR(ib_mark_doc,
"mark() -> int\n\nThe ticket the next added batch gets (taken: the next one gets mark + 1): await_completion of it\n"
"waits for every batch incomplete now, and for none added later.");

static PyObject *ib_mark(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    return ib_take_ticket(self);
}

PyDoc_STRVAR(ib_oldest_ticket_doc,
"oldest_ticket() -> int | None\n\nThe smallest ticket still incomplete (the pieces of a split batch carry its older\n"
"ticket, so insertion order is not ticket order); None when none is.");

static PyObject *ib_oldest_ticket(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t pos = 0;
    PyObject *key, *value, *best = NULL;
    long long best_v = 0;
    while (PyDict_Next(self->incomplete, &pos, &key, &value)) {
        long long v = PyLong_AsLongLong(value);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        if (best == NULL || v < best_v) {
            best = value;
            best_v = v;
        }
    }
    if (best == NULL)
        Py_RETURN_NONE;
    return Py_NewRef(best);
}

static PyMethodDef ib_methods[] = {
    {"add", (PyCFunction)ib_add, METH_O, ib_add_doc},
    {"add_pieces", (PyCFunction)(void (*)(void))ib_add_pieces, METH_FASTCALL, ib_add_pieces_doc},
    {"remove", (PyCFunction)ib_remove, METH_O, ib_remove_doc},
    {"is_empty", (PyCFunction)ib_is_empty, METH_NOARGS, ib_is_empty_doc},
    {"copy_all", (PyCFunction)ib_copy_all, METH_NOARGS, ib_copy_all_doc},
    {"mark", (PyCFunction)ib_mark, METH_NOARGS, ib_mark_doc},
    {"oldest_ticket", (PyCFunction)ib_oldest_ticket, METH_NOARGS, ib_oldest_ticket_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef ib_members[] = {
    {"condition", T_OBJECT_EX, offsetof(IncompleteObject, condition), READONLY,
     "the threading.Condition notified (its lock held) when a removal leaves no batch incomplete"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject IncompleteType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.IncompleteBatches",
    .tp_basicsize = sizeof(IncompleteObject),
    .tp_dealloc = (destructor)ib_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("IncompleteBatches(condition): the producer's incomplete batches (reference: "
                        "producer.incomplete_batches.IncompleteBatches)"),
    .tp_traverse = (traverseproc)ib_traverse,
    .tp_clear = (inquiry)ib_clear,
    .tp_methods = ib_methods,
    .tp_members = ib_members,
    .tp_new = ib_new,
};

/* Reference: producer/buffer_pool.py's MemoryAccount (the class a BufferPool uses without the kernel). The free
 * bytes of a producer's ``buffer.memory`` and the queue of the threads waiting for them (``waiters``, a deque of
 * threading.Conditions over the pool's ``lock``, read-only: the pool appends and removes its waiters, with the lock
 * held). take and take_first are called with the lock held; give without it: each is one step under the GIL, and
 * give takes the lock only to notify the first waiter (a waiter joins the queue and checks under the lock, then
 * waits, so the notification, made with the lock held, reaches it). */
typedef struct {
    PyObject_HEAD
    PyObject *lock;
    PyObject *waiters;
    long long total;
    long long available;
} AccountObject;

static PyObject *acct_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    long long total;
    PyObject *lock, *waiters;
    static char *kwlist[] = {"total", "lock", "waiters", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LOO:MemoryAccount", kwlist, &total, &lock, &waiters))
        return NULL;
    if (iothread5_names() < 0)
        return NULL;
    AccountObject *self = (AccountObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = Py_NewRef(lock);
    self->waiters = Py_NewRef(waiters);
    self->total = total;
    self->available = total;
    return (PyObject *)self;
}

static int acct_traverse(AccountObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lock);
    Py_VISIT(self->waiters);
    return 0;
}

static int acct_clear(AccountObject *self)
{
    Py_CLEAR(self->lock);
    Py_CLEAR(self->waiters);
    return 0;
}

static void acct_dealloc(AccountObject *self)
{
    PyObject_GC_UnTrack(self);
    acct_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* a size argument: 0, or -1 with an exception */
static int acct_size(PyObject *arg, long long *size)
{
    *size = PyLong_AsLongLong(arg);
    return *size == -1 && PyErr_Occurred() ? -1 : 0;
}

PyDoc_STRVAR(acct_take_doc,
"take(size) -> bool\n\nTakes ``size`` bytes when no thread waits and that many are free (the lock held); False, having\n"
"taken nothing, otherwise.");

static PyObject *acct_take(AccountObject *self, PyObject *arg)
{
    long long size;
    if (acct_size(arg, &size) < 0)
        return NULL;
    Py_ssize_t waiting = PyObject_Size(self->waiters);
    if (waiting < 0)
        return NULL;
    if (waiting || self->available < size)
        Py_RETURN_FALSE;
    self->available -= size;
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(acct_take_first_doc,
"take_first(waiter, size) -> bool\n\nTakes ``size`` bytes for ``waiter`` when it is the first waiter and that many are\n"
"free (the lock held); False, having taken nothing, otherwise.");

static PyObject *acct_take_first(AccountObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "take_first takes 2 arguments");
        return NULL;
    }
    long long size;
    if (acct_size(args[1], &size) < 0)
        return NULL;
    Py_ssize_t waiting = PyObject_Size(self->waiters);
    if (waiting < 0)
        return NULL;
    if (waiting == 0)
        Py_RETURN_FALSE;
    PyObject *first = PySequence_GetItem(self->waiters, 0);
    if (first == NULL)
        return NULL;
    int is_first = first == args[0];
    Py_DECREF(first);
    if (!is_first || self->available < size)
        Py_RETURN_FALSE;
    self->available -= size;
    Py_RETURN_TRUE;
}

/* the first of ``waiters`` notified, if any is left (with the lock held) */
static int acct_notify_first(PyObject *waiters)
{
    Py_ssize_t waiting = PyObject_Size(waiters);
    if (waiting <= 0)
        return waiting < 0 ? -1 : 0;
    PyObject *first = PySequence_GetItem(waiters, 0);
    if (first == NULL)
        return -1;
    int rc = call_method_noargs(first, acct_notify);
    Py_DECREF(first);
    return rc;
}

PyDoc_STRVAR(acct_give_doc,
"give(size)\n\nReturns ``size`` bytes (at most up to the total) and notifies the first waiter, under the lock\n"
"(called without it: BufferPool.deallocate).");

static PyObject *acct_give(AccountObject *self, PyObject *arg)
{
    long long size;
    if (acct_size(arg, &size) < 0)
        return NULL;
    long long available = self->available + size;
    self->available = available < self->total ? available : self->total;
    Py_ssize_t waiting = PyObject_Size(self->waiters);
    if (waiting < 0)
        return NULL;
    if (waiting == 0)
        Py_RETURN_NONE;
    if (with_lock(self->lock, acct_notify_first, self->waiters) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(acct_available_doc, "available() -> int\n\nThe bytes free now.");

static PyObject *acct_available(AccountObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLongLong(self->available);
}

static PyMethodDef acct_methods[] = {
    {"take", (PyCFunction)acct_take, METH_O, acct_take_doc},
    {"take_first", (PyCFunction)(void (*)(void))acct_take_first, METH_FASTCALL, acct_take_first_doc},
    {"give", (PyCFunction)acct_give, METH_O, acct_give_doc},
    {"available", (PyCFunction)acct_available, METH_NOARGS, acct_available_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef acct_members[] = {
    {"lock", T_OBJECT_EX, offsetof(AccountObject, lock), READONLY, "the pool's lock (its waiters' conditions')"},
    {"waiters", T_OBJECT_EX, offsetof(AccountObject, waiters), READONLY,
     "the threads waiting for memory, first come first served: their threading.Conditions"},
    {"total", T_LONGLONG, offsetof(AccountObject, total), READONLY, "buffer.memory"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject AccountType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.MemoryAccount",
    .tp_basicsize = sizeof(AccountObject),
    .tp_dealloc = (destructor)acct_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("MemoryAccount(total, lock, waiters): a producer's free buffer.memory (reference: "
                        "producer.buffer_pool.MemoryAccount)"),
    .tp_traverse = (traverseproc)acct_traverse,
    .tp_clear = (inquiry)acct_clear,
    .tp_methods = acct_methods,
    .tp_members = acct_members,
    .tp_new = acct_new,
};

/* ==== end of h/iothread5's region ============================================================================== */

/* ==== broker log: a segment index's two columns of entries, owned by a C type (h/logappend) ===================== */

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

/* ==== end of h/logappend's region ============================================================================== */

/* ==== h/procround's region: a received frame's pool release ===================================================== */

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

/* ==== end of h/procround's region =============================================================================== */

#include "kernel/log_append.c.h"

static PyMethodDef kernel_methods[] = {
    {"setup", k_setup, METH_VARARGS, "setup(Record, CREATE_TIME, LOG_APPEND_TIME, read_varint): the reference's types."},
    {"decode_records", k_decode_records, METH_VARARGS, decode_records_doc},
    {"decode_consumer_records", k_decode_consumer_records, METH_VARARGS, decode_consumer_records_doc},
    {"decode_columns", k_decode_columns, METH_VARARGS, decode_columns_doc},
    {"validate_records", k_validate_records, METH_VARARGS, validate_records_doc},
    {"check_batch", (PyCFunction)(void (*)(void))k_check_batch, METH_FASTCALL, check_batch_doc},
    {"append_records", k_append_records, METH_VARARGS, append_records_doc},
    {"encode_batch", (PyCFunction)(void (*)(void))k_encode_batch, METH_FASTCALL, encode_batch_doc},
    {"read_varint", (PyCFunction)(void (*)(void))k_read_varint, METH_FASTCALL, read_varint_doc},
    {"scan_records", k_scan_records, METH_VARARGS, scan_records_doc},
    {"murmur2", k_murmur2, METH_O, murmur2_doc},
    {"key_partitions", k_key_partitions, METH_VARARGS, key_partitions_doc},
    {"append_pending", (PyCFunction)(void (*)(void))k_append_pending, METH_FASTCALL, append_pending_doc},
    {"producer_setup", k_producer_setup, METH_O, producer_setup_doc},
    {"pending_columns", k_pending_columns, METH_VARARGS, pending_columns_doc},
    {"arrow_binary_items", k_arrow_binary_items, METH_VARARGS, arrow_binary_items_doc},
    {"batch_try_append", (PyCFunction)(void (*)(void))k_batch_try_append, METH_FASTCALL, batch_try_append_doc},
    {"send_append", (PyCFunction)(void (*)(void))k_send_append, METH_FASTCALL, send_append_doc},
    {"encode_produce_request", (PyCFunction)(void (*)(void))k_encode_produce_request, METH_FASTCALL,
     encode_produce_request_doc},
    {"decode_produce_response", (PyCFunction)(void (*)(void))k_decode_produce_response, METH_FASTCALL,
     decode_produce_response_doc},
    {"complete_produce_response", (PyCFunction)(void (*)(void))k_complete_produce_response, METH_FASTCALL,
     complete_produce_response_doc},
    /* h/iocomplete */
    {"handle_produce_response", (PyCFunction)(void (*)(void))k_handle_produce_response, METH_FASTCALL,
     handle_produce_response_doc},
    {"sender_setup", k_sender_setup, METH_VARARGS, sender_setup_doc},
    {"produce_request_data", (PyCFunction)(void (*)(void))k_produce_request_data, METH_FASTCALL, produce_request_data_doc},
    {"read_produce_request", (PyCFunction)(void (*)(void))k_read_produce_request, METH_FASTCALL,
     read_produce_request_doc},
    {"frame_buffer", k_frame_buffer, METH_O, frame_buffer_doc},
    {"observe_request_times", (PyCFunction)(void (*)(void))k_observe_request_times, METH_FASTCALL,
     observe_request_times_doc},
    {"produce_results_setup", k_produce_results_setup, METH_O, produce_results_setup_doc},
    {"decode_produce_results", (PyCFunction)(void (*)(void))k_decode_produce_results, METH_FASTCALL,
     decode_produce_results_doc},
    {"encode_produce_response", (PyCFunction)(void (*)(void))k_encode_produce_response, METH_FASTCALL,
     encode_produce_response_doc},
    {"slots_constructor", k_slots_constructor, METH_VARARGS, slots_constructor_doc},
    /* h/brokerproduce */
    {"client_batch_header", (PyCFunction)(void (*)(void))k_client_batch_header, METH_FASTCALL,
     client_batch_header_doc},
    /* h/drain */
    {"drained_request", (PyCFunction)(void (*)(void))k_drained_request, METH_FASTCALL, drained_request_doc},
    /* h/brokerreq */
    {"tuple_constructor", k_tuple_constructor, METH_VARARGS, tuple_constructor_doc},
    /* h/iosend */
    {"read_frames", (PyCFunction)(void (*)(void))k_read_frames, METH_FASTCALL, read_frames_doc},
    /* h/brkresp */
    {"produce_results_frame", (PyCFunction)(void (*)(void))k_produce_results_frame, METH_FASTCALL,
     produce_results_frame_doc},
    {"any_transactional", k_any_transactional, METH_O, any_transactional_doc},
    /* h/logappend */
    {"index_columns", k_index_columns, METH_VARARGS, index_columns_doc},
    {"release_once", (PyCFunction)(void (*)(void))k_release_once, METH_FASTCALL, release_once_doc},
    {"memory_counter", (PyCFunction)(void (*)(void))k_memory_counter, METH_FASTCALL, memory_counter_doc},
    /* h/logcommon */
    {"segment_tail", (PyCFunction)(void (*)(void))k_segment_tail, METH_FASTCALL, segment_tail_doc},
    {"producer_next_entry", (PyCFunction)(void (*)(void))k_producer_next_entry, METH_FASTCALL,
     producer_next_entry_doc},
    {"producer_add_next", (PyCFunction)(void (*)(void))k_producer_add_next, METH_FASTCALL, producer_add_next_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "_kernel", "The compiled record fast path (see records/_native.py).", -1, kernel_methods,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    if (PyType_Ready(&SendRecordType) < 0 || PyType_Ready(&BoundSendType) < 0 || PyType_Ready(&SendMethodType) < 0 ||
        PyType_Ready(&PendingType) < 0)
        return NULL;
#ifdef GIL_HANDOFF
    if (PyType_Ready(&HandoffType) < 0)
        return NULL;
#endif
    PyObject *m = PyModule_Create(&kernel_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SendRecordType);
    if (PyModule_AddObject(m, "SendRecord", (PyObject *)&SendRecordType) < 0) {
        Py_DECREF(&SendRecordType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SendMethodType);
    if (PyModule_AddObject(m, "SendMethod", (PyObject *)&SendMethodType) < 0) {
        Py_DECREF(&SendMethodType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PendingType);
    if (PyModule_AddObject(m, "PendingRecords", (PyObject *)&PendingType) < 0) {
        Py_DECREF(&PendingType);
        Py_DECREF(m);
        return NULL;
    }
    /* h/iothread5 */
    if (PyType_Ready(&IncompleteType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&IncompleteType);
    if (PyModule_AddObject(m, "IncompleteBatches", (PyObject *)&IncompleteType) < 0) {
        Py_DECREF(&IncompleteType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyType_Ready(&AccountType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&AccountType);
    if (PyModule_AddObject(m, "MemoryAccount", (PyObject *)&AccountType) < 0) {
        Py_DECREF(&AccountType);
        Py_DECREF(m);
        return NULL;
    }
#ifdef GIL_HANDOFF
    Py_INCREF(&HandoffType);
    if (PyModule_AddObject(m, "GilHandoff", (PyObject *)&HandoffType) < 0) {
        Py_DECREF(&HandoffType);
        Py_DECREF(m);
        return NULL;
    }
#endif
    return m;
}
