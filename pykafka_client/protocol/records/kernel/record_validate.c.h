/* kernel/record_validate.c.h
 *
 * The broker's checks of the batches it receives: validate_records (every record, with a fast path for
 * records of the usual shape), check_batch (a batch's header, CRC and records) and client_batch_header (a client's
 * one batch checked and its header read in one call).
 * Uses: record_decode.c.h (parse_record, batch_args).
 */

/* ---- broker validation ------------------------------------------------------------------------------ */

typedef struct {
    int check_ts, require_keys;
    int64_t now, before_max, after_max;
} checks_t;

/* ---- broker validation: a record of the usual shape checked on its raw varints (validate_scan's fast path) ------ */

/* A varint of one or two bytes in [*pp, lim) (lim - *pp >= 2 checked by the caller) in its zig-zag form (not decoded):
 * 0 and *pp advanced; -1 for a longer one (the caller defers). */
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
    /* (the varints compared in their zig-zag form, brk_raw12, rather than decoded: a length, key or value
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

/* ---- broker validation: whether every timestamp a two-byte delta reaches passes (no per-record check then) ------ */

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

/* ---- broker: a client's one v2 batch checked and its header read in one call ------------------------------------ */

/* the ClientBatch tuple (size, producer id, epoch, base sequence, last offset delta, max timestamp, attributes,
 * records count) of a checked batch, from those fields (client_batch_header's result; broker_log_end's too) */
static PyObject *client_batch_tuple(const long long fields[8])
{
    PyObject *out = PyTuple_New(8);
    for (int i = 0; out != NULL && i < 8; i++) {
        PyObject *v = PyLong_FromLongLong(fields[i]);
        if (v == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

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
    /* check_batch(buf, 0, True, True, now, before, after, require_keys, crc32c) on the one view (no
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
        out = client_batch_tuple(fields);
    } else {
        out = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&view);
    return out;
}
