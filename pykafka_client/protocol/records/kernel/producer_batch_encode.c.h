/* kernel/producer_batch_encode.c.h
 *
 * The producer's whole uncompressed batch in one call: encode_batch of a list of (timestamp, key, value,
 * headers, ...) tuples, and the batch header and CRC every whole-batch path writes (batch_header_finish).
 * encode_batch of a PendingRecords is encode_pending_batch (producer_pending.c.h), declared here: it encodes a
 * PendingRecords in list mode through encode_batch, a real cycle.
 * Uses: varint.c.h, record_encode.c.h.
 */

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
