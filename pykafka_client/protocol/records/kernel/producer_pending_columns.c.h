/* kernel/producer_pending_columns.c.h
 *
 * pending_columns: a completed batch's per-record timestamps and key and value sizes
 * (ProducerBatch.complete_records), from the columns summary or a skim of the records' bytes.
 * Uses: varint.c.h, record_decode.c.h (rec_t), record_encode.c.h (bytes_like), slot_access.c.h (compact_int),
 * producer_pending.c.h.
 */

/* ---- producer: a completed batch's per-record columns (ProducerBatch.complete_records) -------------------------- */

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

/* ---- producer: a completed batch's records read without the full record parse ----------------------------------- */

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

/* pending_columns of a PendingRecords in buffer mode: read from its records' bytes */
static PyObject *pending_columns_encoded(PendingObject *p, int with_ts)
{
    Py_ssize_t n = p->count;
    int same_k = n > 0, same_v = n > 0, same_ts = with_ts && n > 0;
    int64_t kn0 = 0, vn0 = 0, ts0 = 0;
    const uint8_t *q = p->buf, *end = p->buf + p->len;
    rec_t r;
    if (n > 0 && !(p->col_mixed & (PCOL_KEY | PCOL_VALUE | PCOL_UNKNOWN)) && (!with_ts || !(p->col_mixed & PCOL_TS))) {
        /* every record's columns are the first's (noted as they were written): no walk */
        PyObject *ts = with_ts ? PyLong_FromLongLong(p->base_ts + p->col_td) : Py_NewRef(Py_None);
        PyObject *ks = PyLong_FromLongLong(p->col_kn), *vs = PyLong_FromLongLong(p->col_vn);
        PyObject *out = ts == NULL || ks == NULL || vs == NULL ? NULL : PyTuple_Pack(3, ts, ks, vs);
        Py_XDECREF(ts);
        Py_XDECREF(ks);
        Py_XDECREF(vs);
        return out;
    }
    /* which columns are one value, and that value, as noted when the records were written: one walk,
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
