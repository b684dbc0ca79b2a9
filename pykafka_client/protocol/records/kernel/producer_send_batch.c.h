/* kernel/producer_send_batch.c.h
 *
 * KafkaProducer.send_batch's compiled steps (producer/batch_append.py): scan_records (its record checks) and
 * append_pending (records appended onto a batch's PendingRecords while they fit), their keys and values lists or
 * BinaryColumns.
 * Uses: varint.c.h, record_encode.c.h, producer_pending.c.h, producer_binary_column.c.h (kv_source).
 */

/* ---- producer: send_batch's record checks (batch_append.scan_records_reference) --------------------------------- */

PyDoc_STRVAR(scan_records_doc,
    "scan_records(keys, values, timestamps) -> int\n\n"
    "producer.batch_append.scan_records_reference compiled: the largest len(key) + len(value) of the records\n"
    "(None counts 0), -1 when a key or value is not bytes or None, -2 when a timestamp is not None or an int in\n"
    "[0, 2**62]. keys and values are lists or BinaryColumns, keys and timestamps may be None; all have the length\n"
    "of values.");

static PyObject *k_scan_records(PyObject *self, PyObject *args)
{
    PyObject *keys, *values, *timestamps;
    if (!PyArg_ParseTuple(args, "OOO", &keys, &values, &timestamps))
        return NULL;
    kv_source ks = {0}, vs;
    if (kv_source_init(&vs, values) != 0 || (keys != Py_None && (kv_source_init(&ks, keys) != 0 || ks.length != vs.length)) ||
        (timestamps != Py_None && (!PyList_Check(timestamps) || PyList_GET_SIZE(timestamps) != vs.length))) {
        PyErr_SetString(PyExc_ValueError,
                        "scan_records: values must be a list or BinaryColumn, keys and timestamps None or as long");
        return NULL;
    }
    Py_ssize_t n = vs.length, best = 0;
    if (keys == Py_None && vs.column != NULL) {
        best = vs.column->largest; /* (a column's items are bytes or None, its largest known) */
        n = 0;
    } else if (keys == Py_None) {
        /* no keys (send_batch's common call): each value's type and size only */
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = vs.items[i];
            if (PyBytes_CheckExact(v)) {
                if (PyBytes_GET_SIZE(v) > best)
                    best = PyBytes_GET_SIZE(v);
            } else if (v != Py_None) {
                return PyLong_FromLong(-1);
            }
        }
        n = 0; /* (the general loop below has nothing left) */
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *d;
        Py_ssize_t kn, vn;
        if (kv_item(KV_ANY, &ks, i, &d, &kn) < 0 || kv_item(KV_ANY, &vs, i, &d, &vn) < 0)
            return PyLong_FromLong(-1);
        Py_ssize_t total = (kn < 0 ? 0 : kn) + (vn < 0 ? 0 : vn);
        if (total > best)
            best = total;
    }
    if (timestamps != Py_None) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(timestamps); i++) {
            int64_t ts;
            if (producer_timestamp(PyList_GET_ITEM(timestamps, i), 0, &ts) < 0)
                return PyLong_FromLong(-2);
        }
    }
    return PyLong_FromSsize_t(best);
}

/* ---- producer: send_batch append: append_pending's argument reading, result and common-case loop ---------------- */

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
    if (!PyList_Check(args[2]) && !is_binary_column(args[2])) {
        PyErr_Format(PyExc_TypeError, "append_pending: values must be a list or BinaryColumn, not %.100s",
                     Py_TYPE(args[2])->tp_name);
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

/* varint_size without its loop, of an unsigned (zigzagged) value: a record's sizes, counts and deltas nearly always
 * take one or two bytes (told by a comparison each), the rest by the table */
static inline __attribute__((always_inline)) Py_ssize_t sb_uvarint_size(uint64_t u)
{
    if (u < 0x80)
        return 1;
    if (u < 0x4000)
        return 2;
    return sb_varint_bytes[63 - __builtin_clzll(u)];
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

/* A nullable bytes field (length varint, then the n bytes at d; n -1 for null) at q; returns the end. */
static inline __attribute__((always_inline)) uint8_t *sb_put_bytes(uint8_t *q, const char *d, Py_ssize_t n)
{
    if (n < 0) {
        *q++ = 1; /* zigzag(-1) */
        return q;
    }
    q = sb_put_uvarint(q, (uint64_t)n << 1);
    memcpy(q, d, (size_t)n);
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

/* How sb_pending_put notes the record's columns (pending_note_columns): not at all (send()'s path, but for a batch's first
 * record), noted, or already noted (the record before, noted, had the same timestamp delta, key size and value size) */
enum { SB_NO_NOTE, SB_NOTE, SB_NOTED };

/* pending_write's common case: the record sized by sb_record_size (rs, body, its timestamp delta td: 0 for p's
 * first record; its key's and value's kn and vn bytes at k and v) appended to a PendingRecords in buffer mode that
 * keeps no callbacks, its buffer grown (and the
 * record and byte limits checked) only when the record does not fit the room already there. 0; 1 when p cannot
 * take it (too many records or bytes: nothing changed); -1 with an exception (nothing changed). The last record's
 * timestamp (last_ts, last_ts_obj) is the caller's to set. */
static inline __attribute__((always_inline)) int sb_pending_put(PendingObject *p, int64_t rs, int64_t body,
                                                                int64_t ts, int64_t td, const char *k, Py_ssize_t kn,
                                                                const char *v, Py_ssize_t vn, PyObject *headers,
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
    if (note == SB_NOTE || p->count == 0) /* (a batch's first record, whoever writes it: send_batch opens its batches so) */
        pending_note_columns(p, td, kn, vn);
    else if (note == SB_NO_NOTE)
        p->col_mixed |= PCOL_UNKNOWN; /* (send()'s one record a call: pending_columns walks the records) */
    /* (SB_NOTED: the record before had this one's columns, already noted) */
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
 * included). ks (NULL: no keys) and vs are the keys and values, of the kinds kk and vk (kv_item). Returns 0 having
 * stopped where append_pending stops (the end, a record the batch has no room for, a sticky switch due: r->due), 1
 * at a record it leaves to the general loop (not bytes or None, a timestamp it does not take, over what a batch can
 * hold), -1 with an exception; *i is the next record either way, r the state. */
static inline __attribute__((always_inline)) int sb_append_loop(PendingObject *p, int kk, const kv_source *ks_arg, int vk,
                                                                 const kv_source *vs_arg, PyObject *const *tss,
                                                                 Py_ssize_t *i_io, Py_ssize_t stop, int64_t ts_default,
                                                                 PyObject *ts_default_obj, PyObject *headers,
                                                                 Py_ssize_t hs, sb_run *r)
{
    if (ts_default < 0 || ts_default > ((int64_t)1 << 62))
        return 1;
    /* the sources copied into locals: a record's write cannot change them, so they are not read again after it */
    kv_source kcopy = {0}, vcopy = *vs_arg;
    if (ks_arg != NULL)
        kcopy = *ks_arg;
    const kv_source *ks = ks_arg == NULL ? NULL : &kcopy, *vs = &vcopy;
    int64_t size = r->size, base_ts = r->base_ts, max_ts = r->max_ts, max_rec = r->max_rec, produced = r->produced;
    const int64_t limit = r->limit, switch_bytes = r->switch_bytes, sticky_bytes = r->sticky_bytes;
    const double ratio = r->ratio;
    Py_ssize_t i = *i_io, count = p->count;
    PyObject *last_obj = NULL;
    int64_t last_ts = 0;
    int rc = 0;
    /* the shape of the record before (its timestamp delta, key and value sizes) and its size and body's, which hold
     * for a record of the same shape while the offset delta's varint keeps its length (below shape_count) */
    int64_t shape_td = -1, shape_rs = 0, shape_body = 0;
    Py_ssize_t shape_kn = -2, shape_vn = -2, shape_count = 0;
    /* and, made at the second record of a shape, the bytes its records open with (the size varint, the attributes,
     * the timestamp delta varint: at most 3 + 1 + 10), stored as one 16-byte copy where the buffer has that slack */
    uint8_t head[16];
    Py_ssize_t head_len = 0; /* (0: not made for this shape) */
    for (; i < stop; i++) {
        const char *vd, *kd = NULL;
        Py_ssize_t vn, kn = -1;
        if (kv_item(vk, vs, i, &vd, &vn) < 0 || (ks != NULL && kv_item(kk, ks, i, &kd, &kn) < 0)) {
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
        int64_t td = ts - base_ts, body, rs;
        int same = kn == shape_kn && vn == shape_vn && td == shape_td && count < shape_count;
        if (same) {
            rs = shape_rs, body = shape_body;
        } else {
            rs = sb_record_size(td, count, kn, vn, hs, &body);
            /* (an offset delta's zigzag varint takes 1 byte below 64, 2 below 8192, 3 below 2**20) */
            shape_count = count < 64 ? 64 : count < 8192 ? 8192 : count < (1 << 20) ? (1 << 20) : count + 1;
        }
        if (count > 0 && size + rs > limit)
            break;
        if (same && p->len + rs + 16 <= p->cap && Py_REFCNT(p->data) == 1) {
            /* a record of the shape of the one before (so of its timestamp: the batch's largest timestamp and
             * record stay): its head copied, then its offset delta, key, value and headers */
            if (head_len == 0) {
                memset(head, 0, sizeof(head));
                uint8_t *h = sb_put_uvarint(head, (uint64_t)body << 1);
                *h++ = 0;
                head_len = sb_put_uvarint(h, zigzag(td)) - head;
            }
            uint8_t *q = p->buf + p->len;
            memcpy(q, head, 16);
            q = sb_put_uvarint(q + head_len, (uint64_t)count << 1);
            q = sb_put_bytes(q, kd, kn);
            q = sb_put_bytes(q, vd, vn);
            if (hs == 1)
                *q = 0; /* no headers */
            else
                wr_headers(q, headers);
            p->len += rs;
            p->count++;
        } else {
            if ((rc = sb_pending_put(p, rs, body, ts, td, kd, kn, vd, vn, headers, hs, same ? SB_NOTED : SB_NOTE)) != 0)
                break;
            if (!same)
                head_len = 0;
        }
        shape_td = td, shape_kn = kn, shape_vn = vn, shape_rs = rs, shape_body = body;
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

/* sb_append_loop compiled apart for the common shapes (no keys, no timestamps, no headers, the values a list or a
 * column: their tests folded) */
static int sb_append_run(PendingObject *p, const kv_source *ks, const kv_source *vs, PyObject *const *tss,
                         Py_ssize_t *i_io, Py_ssize_t stop, int64_t ts_default, PyObject *ts_default_obj,
                         PyObject *headers, Py_ssize_t hs, sb_run *r)
{
    if (tss == NULL && hs == 1 && ks == NULL) {
        if (vs->items != NULL)
            return sb_append_loop(p, KV_LIST, NULL, KV_LIST, vs, NULL, i_io, stop, ts_default, ts_default_obj, headers, 1, r);
        if (vs->bits == NULL && !vs->large)
            return sb_append_loop(p, KV_LIST, NULL, KV_DENSE32, vs, NULL, i_io, stop, ts_default, ts_default_obj, headers, 1, r);
        return sb_append_loop(p, KV_LIST, NULL, KV_COLUMN, vs, NULL, i_io, stop, ts_default, ts_default_obj, headers, 1, r);
    }
    return sb_append_loop(p, KV_ANY, ks, KV_ANY, vs, tss, i_io, stop, ts_default, ts_default_obj, headers, hs, r);
}

PyDoc_STRVAR(append_pending_doc,
    "append_pending(pending, keys, values, start, stop, timestamps, timestamp, headers, callback, size, limit,\n"
    "               base_ts, max_ts, max_rec, ratio, produced, switch_bytes, sticky_bytes)\n"
    "    -> (next, size, base_ts, max_ts, max_rec, produced, switch_due) | None\n\n"
    "producer.batch_append.append_pending_reference compiled: appends (timestamp, key, value, headers, callback)\n"
    "for records start.. of the lists onto a batch's pending list while they fit (the first record of an empty\n"
    "batch always does), accounting sticky-partitioner bytes when switch_bytes > 0 and stopping after the\n"
    "record that makes a switch due. None, with nothing appended, on input the reference must handle.");

/* append_pending's state: the batch's numbers it reads (size .. max_rec, ratio), the sticky partitioner's (produced,
 * switch_bytes, sticky_bytes), and what it returns (next, the numbers again, due) */
typedef struct {
    long long size, limit, base_ts, max_ts, max_rec, produced, switch_bytes, sticky_bytes;
    double ratio;
    Py_ssize_t next;
    int due;
} sb_state;

/* append_pending's work, its arguments read (``values`` a list; ``ts_default_obj``: the int object of ts_default
 * when the caller has it, else NULL: made here): 0 with *st updated, 1 declined (nothing appended: append_pending's
 * None), -1 with an exception. ManyAppender calls it with its batch's numbers as C ints. */
static int append_pending_core(PyObject *pending, PyObject *keys, PyObject *values, Py_ssize_t start, Py_ssize_t stop,
                               PyObject *timestamps, long long ts_default, PyObject *ts_default_obj, PyObject *headers,
                               PyObject *callback, sb_state *st)
{
    const long long limit = st->limit, switch_bytes = st->switch_bytes, sticky_bytes = st->sticky_bytes;
    const double ratio = st->ratio;
    /* a PendingRecords takes the records' bytes; in list mode, its list takes their tuples */
    PendingObject *buffered = NULL;
    if (is_pending(pending)) {
        if (((PendingObject *)pending)->items != NULL)
            pending = ((PendingObject *)pending)->items;
        else
            buffered = (PendingObject *)pending;
    } else if (!PyList_Check(pending)) {
        return 1;
    }
    kv_source ks = {0}, vs = {0};
    if (kv_source_init(&vs, values) != 0 || (keys != Py_None && kv_source_init(&ks, keys) != 0))
        return 1;
    Py_ssize_t n = vs.length;
    if (start < 0 || stop > n || start > stop || (keys != Py_None && ks.length != n) ||
        (timestamps != Py_None && (!PyList_Check(timestamps) || PyList_GET_SIZE(timestamps) != n)))
        return 1;
    Py_ssize_t hs = headers_size(headers);
    if (hs < 0)
        return 1;
    int64_t size = st->size, base_ts = st->base_ts, max_ts = st->max_ts, max_rec = st->max_rec, produced = st->produced;
    int switch_due = 0;
    /* one int object shared by every record without a timestamp of its own */
    if (ts_default_obj != NULL)
        Py_INCREF(ts_default_obj);
    else if ((ts_default_obj = PyLong_FromLongLong(ts_default)) == NULL)
        return -1;
    /* The record tuples hold ints, bytes, None, the headers and the callback: with untracked headers and no
     * callback they can never be part of a cycle, and a batch's thousands of them are not left to the garbage
     * collector to visit (and untrack) one by one. */
    int untrack = callback == Py_None && !PyObject_GC_IsTracked(headers);
    Py_ssize_t i = start;
    if (buffered != NULL && callback == Py_None && buffered->callbacks == NULL) {
        /* the common case in a tight loop; it leaves a record it does not take to the loop below */
        sb_run r = {size, limit, base_ts, max_ts, max_rec, produced, switch_bytes, sticky_bytes, ratio, 0};
        int rc = sb_append_run(buffered, keys == Py_None ? NULL : &ks, &vs,
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
        const char *kd = NULL, *vd;
        Py_ssize_t kn = -1, vn;
        int64_t ts;
        if ((keys != Py_None && kv_item(KV_ANY, &ks, i, &kd, &kn) < 0) || kv_item(KV_ANY, &vs, i, &vd, &vn) < 0 ||
            (timestamps != Py_None && producer_timestamp(PyList_GET_ITEM(timestamps, i), ts_default, &ts) < 0)) {
            if (i == start) {
                Py_DECREF(ts_default_obj);
                return 1;
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
                    return 1;
                }
                break;
            }
            if (pending_write(buffered, rs, ts, ts_obj, kd, kn, vd, vn, headers, hs, callback) < 0)
                goto error;
        } else {
            PyObject *key = keys == Py_None ? Py_NewRef(Py_None) : kv_object(&ks, i), *value = key == NULL ? NULL : kv_object(&vs, i);
            PyObject *rec = value == NULL ? NULL : PyTuple_Pack(5, ts_obj, key, value, headers, callback);
            Py_XDECREF(key);
            Py_XDECREF(value);
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
    st->next = i, st->size = size, st->base_ts = base_ts, st->max_ts = max_ts, st->max_rec = max_rec;
    st->produced = produced, st->due = switch_due;
    return 0;
error:
    Py_DECREF(ts_default_obj);
    return -1;
}

static PyObject *k_append_pending(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start, stop;
    long long ts_default;
    sb_state st;
    if (sb_append_args(args, nargs, &start, &stop, &ts_default, &st.size, &st.limit, &st.base_ts, &st.max_ts, &st.max_rec,
                       &st.ratio, &st.produced, &st.switch_bytes, &st.sticky_bytes) < 0)
        return NULL;
    int rc = append_pending_core(args[0], args[1], args[2], start, stop, args[5], ts_default, NULL, args[7], args[8], &st);
    if (rc < 0)
        return NULL;
    if (rc > 0)
        Py_RETURN_NONE;
    return sb_append_result(st.next, st.size, st.base_ts, st.max_ts, st.max_rec, st.produced, st.due);
}
