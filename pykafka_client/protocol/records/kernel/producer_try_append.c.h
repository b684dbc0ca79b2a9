/* kernel/producer_try_append.c.h
 *
 * ProducerBatch.try_append compiled (batch_try_append, batch_append_one, used by send()'s path too) and
 * producer_setup (the FutureRecordMetadata type, the batch's attribute names).
 * Uses: record_encode.c.h, slot_access.c.h, producer_pending.c.h, producer_send_batch.c.h (sb_record_size,
 * sb_pending_put).
 */

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

static slot_cache acache[A_COUNT]; /* per attr[] name: its call sites read one kind of object */

/* get_int_attr of one of the batch's attributes (inline: five per append) */
static inline __attribute__((always_inline)) int get_int(PyObject *obj, int a, int64_t *out)
{
    return get_int_attr(obj, attr[a], &acache[a], out);
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
        int put = sb_pending_put(buffered, rs, body, ts, td, producer_bytes_at(key), kn, producer_bytes_at(value), vn, headers, hs,
                                 SB_NO_NOTE);
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
