/* kernel/producer_append_run.c.h
 *
 * send_batch's run of records on the caller's thread, per batch in one call each, without Python frames:
 * - ManyAppender: RecordAccumulator.try_append_many compiled (its reference): the topic's queue and sticky partition,
 *   under the partition's deque lock the open batch's append of a run of records (append_pending, ProducerBatch.
 *   append_many's step), the sticky accounting and its switch (when one is due: the kernel's sticky_switch for the
 *   built-in partitioner, else the partitioner's update_partition_info), the close of a batch that has no room for the next record. An accumulator with the kernel holds
 *   it as its instance attribute ``try_append_many`` (the method is its reference, called with the accumulator for
 *   input it does not take, before any change); it holds the accumulator weakly (no cycle);
 * - CallSegments: the segments of one send_batch call (producer/call_segments.py's CallSegments, the reference), a
 *   type owning them: the open segment grown while the records follow on in one batch's outcome, and its watch when
 *   the next batch's begins (the call's segment lists, its count of waiting segments under their lock, a new
 *   CallSegment registered in the outcome's ``calls`` under its condition, or released at once when the outcome
 *   completed or was split). It holds no reference to its SendBatchFuture (an argument of each call): the future
 *   holds it.
 * Uses: producer_binary_column.c.h (kv_source: keys and values lists or BinaryColumns), slot_access.c.h (cached_get, cached_set, get_int_attr, compact_int, take_int, take_truth, set_counter),
 * producer_send_batch.c.h (k_append_pending), producer_send_append.c.h (sattr_init, queue_lock_acquire,
 * queue_lock_release, queue_lock_release_keeping_error: a queue's lock, the waiting count's lock; sticky_switch_core).
 */

/* ---- producer: send_batch's bulk append in one call (RecordAccumulator.try_append_many) ------------------------ */

enum { MA_PARTITIONER, MA_QUEUES, MA_STICKY, MA_PARTITION, MA_PRODUCED, MA_SWITCH, MA_STICKY_SIZE, MA_LOCK, MA_BATCHES,
       MA_CLOSED, MA_B_CLOSED, MA_PENDING, MA_SIZE, MA_LIMIT, MA_BASE_TS, MA_MAX_TS, MA_MAX_REC, MA_RATIO,
       MA_LAST_APPEND, MA_HAS_CB, MA_OUTCOME, MA_UPDATE, MA_HAS_ROOM, MA_APPEND_MANY, MA_COUNT };
static const char *const ma_attr_names[MA_COUNT] = {
    "partitioner", "queues", "sticky", "partition", "produced_bytes", "switch_bytes", "sticky_batch_size", "lock",
    "batches", "closed", "closed", "pending", "size_bytes", "size_limit", "base_timestamp", "max_timestamp",
    "max_record_size", "compression_ratio", "last_append_ms", "has_callbacks", "outcome", "update_partition_info",
    "has_room_for", "append_many",
};
static PyObject *ma_attr[MA_COUNT];
static slot_cache ma_cache[MA_COUNT];

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *topics;    /* the accumulator's topic entries (dict: topic -> its queues and partitioner), lent */
    PyObject *owner;     /* a weak reference to the accumulator (no cycle: the accumulator holds this appender) */
    PyObject *reference; /* RecordAccumulator.try_append_many (the function): what the unusual goes to */
} ManyAppenderObject;

static int ma_attr_init(void)
{
    if (ma_attr[MA_COUNT - 1] != NULL)
        return 0;
    for (int i = 0; i < MA_COUNT; i++) {
        if (ma_attr[i] == NULL && (ma_attr[i] = PyUnicode_InternFromString(ma_attr_names[i])) == NULL)
            return -1;
    }
    return sattr_init();
}

static inline PyObject *ma_get(PyObject *obj, int a)
{
    return cached_get(obj, ma_attr[a], &ma_cache[a]);
}

static inline int ma_set(PyObject *obj, int a, PyObject *v)
{
    return cached_set(obj, ma_attr[a], &ma_cache[a], v);
}

/* obj.attr as an int64: 0, 1 (not an int that fits), or -1 with an exception */
static inline int ma_int(PyObject *obj, int a, int64_t *out)
{
    return get_int_attr(obj, ma_attr[a], &ma_cache[a], out);
}

/* The batch's last_append_ms and has_callbacks after records were appended (as ProducerBatch.append_many): 0, or -1
 * with an exception */
static int ma_appended(PyObject *batch, PyObject *callback)
{
    static PyObject *zero = NULL;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        return -1;
    if (ma_set(batch, MA_LAST_APPEND, zero) < 0) /* as the accumulator's fast path (try_append with now 0) */
        return -1;
    if (callback != Py_None && ma_set(batch, MA_HAS_CB, Py_True) < 0)
        return -1;
    return 0;
}

/* ma_append's common case: the batch's numbers plain ints (and its compression ratio a float), read and written as C
 * numbers around the kernel's append_pending step (append_pending_core), no Python int or tuple in between. 0 done,
 * -1 with an exception, 1 not taken (another kind of field, or the step declined: nothing changed; ma_append's
 * general way then). */
static int ma_append_fast(PyObject *batch, PyObject *const *args, int64_t start, int64_t *produced, int64_t switch_bytes,
                          int64_t sticky_size, int64_t *next, int *due)
{
    PyObject *keys = args[2], *values = args[3], *stop = args[5], *timestamps = args[6], *timestamp = args[7],
             *headers = args[8], *callback = args[9];
    int64_t stop_n, ts_default, size, limit, base_ts, max_ts, max_rec;
    if (!compact_int(stop, &stop_n) || !compact_int(timestamp, &ts_default))
        return 1;
    PyObject *pending = ma_get(batch, MA_PENDING);
    if (pending == NULL)
        return -1;
    int rc;
    PyObject *ratio_obj = NULL;
    if ((rc = ma_int(batch, MA_SIZE, &size)) != 0 || (rc = ma_int(batch, MA_LIMIT, &limit)) != 0 ||
        (rc = ma_int(batch, MA_BASE_TS, &base_ts)) != 0 || (rc = ma_int(batch, MA_MAX_TS, &max_ts)) != 0 ||
        (rc = ma_int(batch, MA_MAX_REC, &max_rec)) != 0)
        goto done;
    if ((ratio_obj = ma_get(batch, MA_RATIO)) == NULL) {
        rc = -1;
        goto done;
    }
    if (!PyFloat_CheckExact(ratio_obj)) {
        rc = 1;
        goto done;
    }
    sb_state st = {size, limit, base_ts, max_ts, max_rec, switch_bytes > 0 ? *produced : 0,
                   switch_bytes > 0 ? switch_bytes : 0, switch_bytes > 0 ? sticky_size : 0,
                   PyFloat_AS_DOUBLE(ratio_obj), 0, 0};
    if ((rc = append_pending_core(pending, keys, values, (Py_ssize_t)start, (Py_ssize_t)stop_n, timestamps, ts_default,
                                  timestamp, headers, callback, &st)) != 0)
        goto done;
    rc = -1;
    if (st.size != size && set_counter(batch, ma_attr[MA_SIZE], &ma_cache[MA_SIZE], st.size) < 0)
        goto done;
    if (st.base_ts != base_ts) {
        PyObject *v = PyLong_FromLongLong(st.base_ts);
        int bad = v == NULL || ma_set(batch, MA_BASE_TS, v) < 0;
        Py_XDECREF(v);
        if (bad)
            goto done;
    }
    if (st.max_ts != max_ts) {
        PyObject *v = PyLong_FromLongLong(st.max_ts);
        int bad = v == NULL || ma_set(batch, MA_MAX_TS, v) < 0;
        Py_XDECREF(v);
        if (bad)
            goto done;
    }
    if (st.max_rec != max_rec && set_counter(batch, ma_attr[MA_MAX_REC], &ma_cache[MA_MAX_REC], st.max_rec) < 0)
        goto done;
    *next = st.next;
    *produced = switch_bytes > 0 ? st.produced : 0;
    *due = st.due;
    if (st.next > start && ma_appended(batch, callback) < 0)
        goto done;
    rc = 0;
done:
    Py_DECREF(pending);
    Py_XDECREF(ratio_obj);
    return rc;
}

/* ProducerBatch.append_many(keys, values, start, stop, timestamps, timestamp, headers, callback, sticky) of ``batch``
 * (``sticky``: switch_bytes > 0, the produced bytes in *produced): *next and *due set, *produced updated. The kernel's
 * append_pending with the batch's fields, written back as the method does; the method itself when append_pending
 * declines (it changed nothing then). 0, or -1 with an exception. */
static int ma_append(PyObject *batch, PyObject *const *args, int64_t start, int64_t *produced, int64_t switch_bytes,
                     int64_t sticky_size, int64_t *next, int *due)
{
    PyObject *keys = args[2], *values = args[3], *stop = args[5], *timestamps = args[6], *timestamp = args[7],
             *headers = args[8], *callback = args[9];
    int closed = take_truth(ma_get(batch, MA_B_CLOSED));
    if (closed != 0) {
        *next = start, *due = 0;
        return closed < 0 ? -1 : 0;
    }
    int fast = ma_append_fast(batch, args, start, produced, switch_bytes, sticky_size, next, due);
    if (fast <= 0)
        return fast;
    PyObject *fields[7] = {NULL}; /* pending, size, limit, base_ts, max_ts, max_rec, ratio */
    static const int names[7] = {MA_PENDING, MA_SIZE, MA_LIMIT, MA_BASE_TS, MA_MAX_TS, MA_MAX_REC, MA_RATIO};
    PyObject *start_obj = PyLong_FromLongLong(start), *produced_obj = PyLong_FromLongLong(switch_bytes > 0 ? *produced : 0),
             *switch_obj = PyLong_FromLongLong(switch_bytes > 0 ? switch_bytes : 0),
             *sticky_obj = PyLong_FromLongLong(switch_bytes > 0 ? sticky_size : 0), *out = NULL;
    int rc = -1;
    if (start_obj == NULL || produced_obj == NULL || switch_obj == NULL || sticky_obj == NULL)
        goto done;
    for (int k = 0; k < 7; k++) {
        if ((fields[k] = ma_get(batch, names[k])) == NULL)
            goto done;
    }
    PyObject *call[18] = {fields[0], keys, values, start_obj, stop, timestamps, timestamp, headers, callback, fields[1],
                          fields[2], fields[3], fields[4], fields[5], fields[6], produced_obj, switch_obj, sticky_obj};
    if ((out = k_append_pending(NULL, call, 18)) == NULL)
        goto done;
    if (out == Py_None) {
        /* declined, nothing appended: the method (the kernel's step again, then its reference) */
        Py_DECREF(out);
        PyObject *sticky_arg = Py_None;
        if (switch_bytes > 0 && (sticky_arg = PyTuple_Pack(3, produced_obj, switch_obj, sticky_obj)) == NULL) {
            out = NULL;
            goto done;
        }
        PyObject *margs[10] = {batch, keys, values, start_obj, stop, timestamps, timestamp, headers, callback, sticky_arg};
        out = PyObject_VectorcallMethod(ma_attr[MA_APPEND_MANY], margs, 10 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (sticky_arg != Py_None)
            Py_DECREF(sticky_arg);
        if (out == NULL)
            goto done;
        if (!PyTuple_CheckExact(out) || PyTuple_GET_SIZE(out) != 3 || take_int(Py_NewRef(PyTuple_GET_ITEM(out, 0)), next) != 0 ||
            take_int(Py_NewRef(PyTuple_GET_ITEM(out, 1)), produced) != 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "append_many() did not return (next, produced, due)");
            goto done;
        }
        if ((*due = PyObject_IsTrue(PyTuple_GET_ITEM(out, 2))) < 0)
            goto done;
        rc = 0;
        goto done;
    }
    /* (next, size, base_ts, max_ts, max_rec, produced, due) */
    if (!PyTuple_CheckExact(out) || PyTuple_GET_SIZE(out) != 7 || take_int(Py_NewRef(PyTuple_GET_ITEM(out, 0)), next) != 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "append_pending() returned an unexpected result");
        goto done;
    }
    if (ma_set(batch, MA_SIZE, PyTuple_GET_ITEM(out, 1)) < 0 || ma_set(batch, MA_BASE_TS, PyTuple_GET_ITEM(out, 2)) < 0 ||
        ma_set(batch, MA_MAX_TS, PyTuple_GET_ITEM(out, 3)) < 0 || ma_set(batch, MA_MAX_REC, PyTuple_GET_ITEM(out, 4)) < 0)
        goto done;
    int64_t p;
    if (take_int(Py_NewRef(PyTuple_GET_ITEM(out, 5)), &p) != 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "append_pending() returned an unexpected result");
        goto done;
    }
    *produced = switch_bytes > 0 ? p : 0;
    *due = PyTuple_GET_ITEM(out, 6) == Py_True;
    if (*next > start && ma_appended(batch, callback) < 0)
        goto done;
    rc = 0;
done:
    for (int k = 0; k < 7; k++)
        Py_XDECREF(fields[k]);
    Py_XDECREF(start_obj);
    Py_XDECREF(produced_obj);
    Py_XDECREF(switch_obj);
    Py_XDECREF(sticky_obj);
    Py_XDECREF(out);
    return rc;
}

/* The length of a send_batch key or value column ManyAppender takes (a list or a BinaryColumn), else -1 */
static inline Py_ssize_t ma_column_length(PyObject *o)
{
    if (PyList_CheckExact(o))
        return PyList_GET_SIZE(o);
    return is_binary_column(o) ? ((BinaryColumnObject *)o)->length : -1;
}

/* len(o) of a bytes or None key or value (None: 0); -1 with an exception */
static Py_ssize_t ma_len(PyObject *o)
{
    if (o == Py_None)
        return 0;
    if (PyBytes_CheckExact(o))
        return PyBytes_GET_SIZE(o);
    return PyObject_Size(o);
}

/* Whether the batch has no room for record ``i`` (try_append_many's close check, see the reference): 1, 0, or -1 with
 * an exception */
static int ma_no_room(PyObject *batch, PyObject *const *args, Py_ssize_t i)
{
    PyObject *keys = args[2], *values = args[3], *timestamps = args[6], *headers = args[8];
    kv_source ks = {0}, vs = {0};
    kv_source_init(&vs, values); /* (both checked by ma_vectorcall) */
    if (keys != Py_None)
        kv_source_init(&ks, keys);
    PyObject *key = keys == Py_None ? Py_NewRef(Py_None) : kv_object(&ks, i), *value = key == NULL ? NULL : kv_object(&vs, i);
    Py_ssize_t kn, vn, count;
    int yes = -1;
    if (value == NULL || (kn = ma_len(key)) < 0 || (vn = ma_len(value)) < 0)
        goto done;
    PyObject *pending = ma_get(batch, MA_PENDING);
    if (pending == NULL)
        goto done;
    count = PyObject_Size(pending);
    Py_DECREF(pending);
    if (count < 0)
        goto done;
    int64_t size, limit;
    int rc;
    if ((rc = ma_int(batch, MA_SIZE, &size)) != 0 || (rc = ma_int(batch, MA_LIMIT, &limit)) != 0) {
        if (rc > 0)
            PyErr_SetString(PyExc_TypeError, "a batch's size_bytes and size_limit must be ints");
        goto done;
    }
    int64_t body = 6 + kn + vn + (kn > 63) + (vn > 63) + (count > 63);
    if (size + body + 1 + (body > 63) > limit) {
        yes = 1;
        goto done;
    }
    PyObject *ts = timestamps == Py_None ? Py_None : PyList_GET_ITEM(timestamps, i);
    if (ts == Py_None)
        ts = args[7];
    PyObject *hargs[5] = {batch, ts, key, value, headers};
    PyObject *room = PyObject_VectorcallMethod(ma_attr[MA_HAS_ROOM], hargs, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (room == NULL)
        goto done;
    int has = PyObject_IsTrue(room);
    Py_DECREF(room);
    yes = has < 0 ? -1 : !has;
done:
    Py_XDECREF(key);
    Py_XDECREF(value);
    return yes;
}

/* reference(owner, *args, **kwargs): the method with the accumulator, as a call of the bound method would */
static PyObject *ma_reference(ManyAppenderObject *self, PyObject *owner, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject **stack = PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
    if (stack == NULL)
        return PyErr_NoMemory();
    stack[0] = owner;
    for (Py_ssize_t k = 0; k < total; k++)
        stack[k + 1] = args[k];
    PyObject *r = PyObject_Vectorcall(self->reference, stack, nargs + 1, kwnames);
    PyMem_Free(stack);
    return r;
}

static PyObject *ma_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ManyAppenderObject *self = (ManyAppenderObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *owner = PyWeakref_GetObject(self->owner); /* borrowed */
    if (owner == NULL)
        return NULL;
    if (owner == Py_None) {
        PyErr_SetString(PyExc_ReferenceError, "the accumulator of this try_append_many is gone");
        return NULL;
    }
    Py_INCREF(owner);
    PyObject *result = NULL;
    if (ma_attr_init() < 0)
        goto out;
    int64_t partition, start, stop;
    /* (topic, partition, keys, values, start, stop, timestamps, timestamp, headers, callback, cluster): lists of
     * records (keys and values lists or BinaryColumns) and plain ints, else the reference */
    Py_ssize_t n = ma_column_length(args[3]);
    if (kwnames != NULL || nargs != 11 || !PyDict_CheckExact(self->topics) || !PyLong_CheckExact(args[1]) ||
        !compact_int(args[1], &partition) || n < 0 || (args[2] != Py_None && ma_column_length(args[2]) != n) ||
        (args[6] != Py_None && (!PyList_CheckExact(args[6]) || PyList_GET_SIZE(args[6]) != n)) ||
        !PyLong_CheckExact(args[4]) || !compact_int(args[4], &start) || !PyLong_CheckExact(args[5]) ||
        !compact_int(args[5], &stop) || start < 0 || stop > n || start >= stop) {
        result = ma_reference(self, owner, args, nargs, kwnames);
        goto out;
    }
    PyObject *topic = args[0], *cluster = args[10];
    PyObject *info = PyDict_GetItemWithError(self->topics, topic); /* borrowed */
    if (info == NULL) {
        if (!PyErr_Occurred())
            result = Py_NewRef(Py_None);
        goto out;
    }
    PyObject *partitioner = NULL, *sticky = NULL, *queues = NULL, *q = NULL, *lock = NULL, *batches = NULL, *last = NULL,
             *effective_obj = NULL, *now_sticky = NULL;
    int locked = 0;
    int64_t effective = partition, produced = 0, switch_bytes = 0, sticky_size = 0;
    if ((partitioner = ma_get(info, MA_PARTITIONER)) == NULL)
        goto done;
    if (partition == -1) { /* UNKNOWN_PARTITION: the topic's sticky partition */
        if ((sticky = ma_get(partitioner, MA_STICKY)) == NULL)
            goto done;
        if (sticky == Py_None) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        int rc = ma_int(sticky, MA_PARTITION, &effective);
        if (rc != 0) {
            if (rc > 0)
                result = ma_reference(self, owner, args, nargs, kwnames);
            goto done;
        }
    }
    if ((queues = ma_get(info, MA_QUEUES)) == NULL || (effective_obj = PyLong_FromLongLong(effective)) == NULL)
        goto done;
    if (!PyDict_CheckExact(queues)) {
        result = ma_reference(self, owner, args, nargs, kwnames);
        goto done;
    }
    q = PyDict_GetItemWithError(queues, effective_obj);
    if (q == NULL) {
        if (!PyErr_Occurred())
            result = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(q);
    if ((lock = ma_get(q, MA_LOCK)) == NULL || (batches = ma_get(q, MA_BATCHES)) == NULL)
        goto done;
    if (queue_lock_acquire(lock) < 0)
        goto done;
    locked = 1;
    /* under the queue's lock, as the reference */
    Py_ssize_t nbatches = PyObject_Size(batches);
    if (nbatches < 0)
        goto done;
    int is_closed = nbatches == 0 ? 0 : take_truth(ma_get(owner, MA_CLOSED));
    if (is_closed < 0)
        goto done;
    if (nbatches == 0 || is_closed) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (sticky != NULL) {
        if ((now_sticky = ma_get(partitioner, MA_STICKY)) == NULL)
            goto done;
        if (now_sticky != sticky) { /* another thread switched the sticky partition */
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    if ((last = PySequence_GetItem(batches, nbatches - 1)) == NULL)
        goto done;
    PyObject *pending = ma_get(last, MA_PENDING);
    if (pending == NULL)
        goto done;
    Py_ssize_t first = PyObject_Size(pending); /* record_count without the property's frame */
    Py_DECREF(pending);
    if (first < 0)
        goto done;
    int64_t nxt;
    int due = 0, rc;
    if (sticky != NULL && ((rc = ma_int(sticky, MA_PRODUCED, &produced)) != 0 ||
                           (rc = ma_int(partitioner, MA_SWITCH, &switch_bytes)) != 0 ||
                           (rc = ma_int(partitioner, MA_STICKY_SIZE, &sticky_size)) != 0)) {
        if (rc > 0)
            PyErr_SetString(PyExc_TypeError, "the sticky partitioner's byte counts must be ints");
        goto done;
    }
    if (ma_append(last, args, start, &produced, sticky != NULL ? switch_bytes : 0, sticky_size, &nxt, &due) < 0)
        goto done;
    if (sticky != NULL) {
        if (set_counter(sticky, ma_attr[MA_PRODUCED], &ma_cache[MA_PRODUCED], produced) < 0)
            goto done;
        while (due) {
            int64_t size, limit;
            if ((rc = ma_int(last, MA_SIZE, &size)) != 0 || (rc = ma_int(last, MA_LIMIT, &limit)) != 0) {
                if (rc > 0)
                    PyErr_SetString(PyExc_TypeError, "a batch's size_bytes and size_limit must be ints");
                goto done;
            }
            static PyObject *zero = NULL;
            if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
                goto done;
            /* the partitioner's update_partition_info: the kernel's switch for the built-in one, else the method */
            int switched = sticky_switch_core(partitioner, effective, 0, cluster, size >= limit);
            if (switched < 0)
                goto done;
            if (switched > 0) {
                PyObject *uargs[5] = {partitioner, effective_obj, zero, cluster, size >= limit ? Py_True : Py_False};
                PyObject *r = PyObject_VectorcallMethod(ma_attr[MA_UPDATE], uargs, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
                if (r == NULL)
                    goto done;
                Py_DECREF(r);
            }
            Py_CLEAR(now_sticky);
            if ((now_sticky = ma_get(partitioner, MA_STICKY)) == NULL)
                goto done;
            int64_t switched_partition = -1;
            if (nxt == stop || now_sticky == Py_None)
                break;
            if ((rc = ma_int(now_sticky, MA_PARTITION, &switched_partition)) < 0)
                goto done;
            if (rc > 0 || switched_partition != effective)
                break;
            /* the switch picked this partition again (e.g. the only one available): the records go on into the same
             * batch in this lock round, as the next call would put them */
            Py_SETREF(sticky, Py_NewRef(now_sticky));
            if ((rc = ma_int(sticky, MA_PRODUCED, &produced)) != 0) {
                if (rc > 0)
                    PyErr_SetString(PyExc_TypeError, "the sticky partitioner's byte counts must be ints");
                goto done;
            }
            if (ma_append(last, args, nxt, &produced, switch_bytes, sticky_size, &nxt, &due) < 0 ||
                set_counter(sticky, ma_attr[MA_PRODUCED], &ma_cache[MA_PRODUCED], produced) < 0)
                goto done;
        }
    }
    int closed = 0;
    if (nxt < stop && !due) {
        /* stopped at record nxt: when the batch has no room for it, closed now, as append's try of the same record
         * under this lock would */
        if ((closed = ma_no_room(last, args, (Py_ssize_t)nxt)) < 0)
            goto done;
        if (closed && ma_set(last, MA_B_CLOSED, Py_True) < 0) /* close_for_appends(), as append() closes a full batch */
            goto done;
    }
    if (nxt == start) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    int64_t size, limit;
    if ((rc = ma_int(last, MA_SIZE, &size)) != 0 || (rc = ma_int(last, MA_LIMIT, &limit)) != 0) {
        if (rc > 0)
            PyErr_SetString(PyExc_TypeError, "a batch's size_bytes and size_limit must be ints");
        goto done;
    }
    if ((nbatches = PyObject_Size(batches)) < 0)
        goto done;
    PyObject *outcome = ma_get(last, MA_OUTCOME);
    if (outcome == NULL)
        goto done;
    result = Py_BuildValue("(LNnOO)", (long long)nxt, outcome, first, size >= limit || nbatches > 1 ? Py_True : Py_False,
                           closed ? Py_True : Py_False);
done:
    if (locked)
        queue_lock_release_keeping_error(lock, &result);
    Py_XDECREF(partitioner);
    Py_XDECREF(sticky);
    Py_XDECREF(now_sticky);
    Py_XDECREF(queues);
    Py_XDECREF(q);
    Py_XDECREF(lock);
    Py_XDECREF(batches);
    Py_XDECREF(last);
    Py_XDECREF(effective_obj);
out:
    Py_DECREF(owner);
    return result;
}

static PyObject *ma_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *topics, *owner, *reference;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "ManyAppender() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OO:ManyAppender", &PyDict_Type, &topics, &owner, &reference))
        return NULL;
    if (!PyWeakref_CheckRefExact(owner)) {
        PyErr_SetString(PyExc_TypeError, "ManyAppender: owner must be a weak reference to the accumulator");
        return NULL;
    }
    ManyAppenderObject *self = (ManyAppenderObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = ma_vectorcall;
    self->topics = Py_NewRef(topics);
    self->owner = Py_NewRef(owner);
    self->reference = Py_NewRef(reference);
    return (PyObject *)self;
}

static PyObject *ma_call(PyObject *op, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(op, args, kwargs);
}

static int ma_traverse(PyObject *op, visitproc visit, void *arg)
{
    ManyAppenderObject *self = (ManyAppenderObject *)op;
    Py_VISIT(self->topics);
    Py_VISIT(self->owner);
    Py_VISIT(self->reference);
    return 0;
}

static int ma_clear(PyObject *op)
{
    ManyAppenderObject *self = (ManyAppenderObject *)op;
    Py_CLEAR(self->topics);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->reference);
    return 0;
}

static void ma_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    ma_clear(op);
    Py_TYPE(op)->tp_free(op);
}

static PyTypeObject ManyAppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ManyAppender",
    .tp_basicsize = sizeof(ManyAppenderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = PyDoc_STR(
        "ManyAppender(topics, owner, reference)\n\n"
        "Reference: RecordAccumulator.try_append_many (``reference``, called with the accumulator ``owner()`` for\n"
        "input this does not take: not lists of records, not plain ints). Called as try_append_many(topic, partition,\n"
        "keys, values, start, stop, timestamps, timestamp, headers, callback, cluster) over ``topics`` (the\n"
        "accumulator's topic entries): its result, (next, outcome, first index, wake the Sender, closed) or None."),
    .tp_new = ma_new,
    .tp_call = ma_call,
    .tp_vectorcall_offset = offsetof(ManyAppenderObject, vectorcall),
    .tp_traverse = ma_traverse,
    .tp_clear = ma_clear,
    .tp_dealloc = ma_dealloc,
};

/* ---- producer: a send_batch call's segments (SendBatchFuture's bookkeeping) ------------------------------------ */

enum { CSG_CONDITION, CSG_STATE, CSG_MOVED_TO, CSG_CALLS, CSG_COUNT_ATTR, CSG_ACQUIRE, CSG_RELEASE, CSG_ATTRS };
static const char *const csg_attr_names[CSG_ATTRS] = {
    "condition", "state", "moved_to", "calls", "count", "acquire", "release",
};
static PyObject *csg_attr[CSG_ATTRS];
static slot_cache csg_cache[CSG_ATTRS];

typedef struct {
    PyObject_HEAD
    PyObject *starts, *outcomes, *indexes; /* the call's segment lists (lists, shared with its _CallRecords) */
    PyObject *waiting;                     /* WaitingSegments: count under lock */
    PyObject *waiting_lock;
    PyObject *segment_type;                /* CallSegment: an outcome's lone segment is one */
    PyObject *new_segment;                 /* what makes one: new_segment(future, waiting, outcome, index, count) */
    PyObject *finished;                    /* concurrent.futures' FINISHED */
    PyObject *open_outcome;                /* the open segment's outcome, NULL: none */
    int64_t open_position, open_count, open_index;
} CallSegmentsObject;

static int csg_attr_init(void)
{
    if (csg_attr[CSG_ATTRS - 1] != NULL)
        return 0;
    for (int i = 0; i < CSG_ATTRS; i++) {
        if (csg_attr[i] == NULL && (csg_attr[i] = PyUnicode_InternFromString(csg_attr_names[i])) == NULL)
            return -1;
    }
    return 0;
}

static PyObject *csg_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *starts, *outcomes, *indexes, *waiting, *segment_type, *new_segment, *finished;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "CallSegments() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!OO!OO:CallSegments", &PyList_Type, &starts, &PyList_Type, &outcomes, &PyList_Type,
                          &indexes, &waiting, &PyType_Type, &segment_type, &new_segment, &finished))
        return NULL;
    if (csg_attr_init() < 0 || sattr_init() < 0)
        return NULL;
    PyObject *lock = PyObject_GetAttrString(waiting, "lock");
    if (lock == NULL)
        return NULL;
    CallSegmentsObject *self = (CallSegmentsObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(lock);
        return NULL;
    }
    self->starts = Py_NewRef(starts);
    self->outcomes = Py_NewRef(outcomes);
    self->indexes = Py_NewRef(indexes);
    self->waiting = Py_NewRef(waiting);
    self->waiting_lock = lock;
    self->segment_type = Py_NewRef(segment_type);
    self->new_segment = Py_NewRef(new_segment);
    self->finished = Py_NewRef(finished);
    return (PyObject *)self;
}

/* An int argument as int64 (0), or -1 with an exception */
static int csg_int(PyObject *v, int64_t *out)
{
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "CallSegments: an int expected, got %.100s", Py_TYPE(v)->tp_name);
        return -1;
    }
    if (compact_int(v, out))
        return 0;
    *out = PyLong_AsLongLong(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* waiting.count += 1 under waiting.lock: 0, or -1 with an exception */
static int csg_count_up(CallSegmentsObject *self)
{
    static PyObject *one = NULL;
    if (one == NULL && (one = PyLong_FromLong(1)) == NULL)
        return -1;
    if (queue_lock_acquire(self->waiting_lock) < 0)
        return -1;
    int rc = -1;
    PyObject *count = cached_get(self->waiting, csg_attr[CSG_COUNT_ATTR], &csg_cache[CSG_COUNT_ATTR]), *more = NULL;
    if (count != NULL && (more = PyNumber_Add(count, one)) != NULL)
        rc = cached_set(self->waiting, csg_attr[CSG_COUNT_ATTR], &csg_cache[CSG_COUNT_ATTR], more);
    Py_XDECREF(count);
    Py_XDECREF(more);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (queue_lock_release(self->waiting_lock) < 0) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        return -1;
    }
    PyErr_Restore(et, ev, tb);
    return rc;
}

/* The open segment watched (CallSegments._watch): its place in the lists, the waiting count, a new segment in the
 * outcome's calls (or released at once). Steals nothing; 0, or -1 with an exception. */
static int csg_watch(CallSegmentsObject *self, PyObject *future, int64_t position, int64_t count, PyObject *outcome,
                    int64_t index)
{
    PyObject *pos = PyLong_FromLongLong(position), *idx = PyLong_FromLongLong(index), *cnt = PyLong_FromLongLong(count);
    PyObject *seg = NULL, *cond = NULL, *r;
    int rc = -1;
    if (pos == NULL || idx == NULL || cnt == NULL || PyList_Append(self->starts, pos) < 0 ||
        PyList_Append(self->outcomes, outcome) < 0 || PyList_Append(self->indexes, idx) < 0 || csg_count_up(self) < 0)
        goto done;
    PyObject *seg_args[5] = {future, self->waiting, outcome, idx, cnt};
    if ((seg = PyObject_Vectorcall(self->new_segment, seg_args, 5, NULL)) == NULL)
        goto done;
    if ((cond = cached_get(outcome, csg_attr[CSG_CONDITION], &csg_cache[CSG_CONDITION])) == NULL)
        goto done;
    if ((r = PyObject_CallMethodNoArgs(cond, csg_attr[CSG_ACQUIRE])) == NULL)
        goto done;
    Py_DECREF(r);
    int registered = 0, failed = 0;
    PyObject *state = cached_get(outcome, csg_attr[CSG_STATE], &csg_cache[CSG_STATE]), *moved = NULL, *calls = NULL;
    int finished = state == NULL ? -1 : PyObject_RichCompareBool(state, self->finished, Py_EQ);
    if (finished < 0 || (!finished && (moved = cached_get(outcome, csg_attr[CSG_MOVED_TO], &csg_cache[CSG_MOVED_TO])) == NULL))
        failed = 1;
    else if (!finished && moved == Py_None) {
        if ((calls = cached_get(outcome, csg_attr[CSG_CALLS], &csg_cache[CSG_CALLS])) == NULL)
            failed = 1;
        else if (PyList_Check(calls))
            failed = PyList_Append(calls, seg) < 0;
        else {
            int lone = PyObject_IsInstance(calls, self->segment_type);
            PyObject *both = lone > 0 ? PyList_New(2) : NULL;
            if (lone < 0 || (lone > 0 && both == NULL))
                failed = 1;
            else {
                if (both != NULL) {
                    PyList_SET_ITEM(both, 0, Py_NewRef(calls));
                    PyList_SET_ITEM(both, 1, Py_NewRef(seg));
                }
                failed = cached_set(outcome, csg_attr[CSG_CALLS], &csg_cache[CSG_CALLS], both != NULL ? both : seg) < 0;
                Py_XDECREF(both);
            }
        }
        registered = 1;
    }
    Py_XDECREF(state);
    Py_XDECREF(moved);
    Py_XDECREF(calls);
    /* cond.release(), keeping an exception of the above */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    r = PyObject_CallMethodNoArgs(cond, csg_attr[CSG_RELEASE]);
    if (r == NULL) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        goto done;
    }
    Py_DECREF(r);
    PyErr_Restore(et, ev, tb);
    if (failed)
        goto done;
    if (!registered) { /* already complete, or split: as a done-callback added now would */
        if ((r = PyObject_CallMethodNoArgs(seg, csg_attr[CSG_RELEASE])) == NULL)
            goto done;
        Py_DECREF(r);
    }
    rc = 0;
done:
    Py_XDECREF(pos);
    Py_XDECREF(idx);
    Py_XDECREF(cnt);
    Py_XDECREF(seg);
    Py_XDECREF(cond);
    return rc;
}

PyDoc_STRVAR(csg_add_doc, "add(future, position, count, outcome, index): CallSegments.add (the reference's doc).");

static PyObject *csg_add(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    int64_t position, count, index;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "add() takes exactly 5 arguments");
        return NULL;
    }
    if (csg_int(args[1], &position) < 0 || csg_int(args[2], &count) < 0 || csg_int(args[4], &index) < 0)
        return NULL;
    PyObject *future = args[0], *outcome = args[3];
    PyObject *open = self->open_outcome;
    if (open != NULL) {
        if (open == outcome && self->open_index + self->open_count == index &&
            self->open_position + self->open_count == position) {
            self->open_count += count;
            Py_RETURN_NONE;
        }
        /* watched, then replaced by the new one (as the reference: a watch that raises leaves it open) */
        Py_INCREF(open);
        int rc = csg_watch(self, future, self->open_position, self->open_count, open, self->open_index);
        Py_DECREF(open);
        if (rc < 0)
            return NULL;
        Py_CLEAR(self->open_outcome);
    }
    self->open_outcome = Py_NewRef(outcome);
    self->open_position = position;
    self->open_count = count;
    self->open_index = index;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(csg_flush_doc, "flush(future): CallSegments.flush (the reference's doc).");

static PyObject *csg_flush(PyObject *op, PyObject *future)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    PyObject *open = self->open_outcome;
    if (open == NULL)
        Py_RETURN_NONE;
    self->open_outcome = NULL;
    int rc = csg_watch(self, future, self->open_position, self->open_count, open, self->open_index);
    Py_DECREF(open);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *csg_get_open(PyObject *op, void *closure)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    if (self->open_outcome == NULL)
        Py_RETURN_NONE;
    return Py_BuildValue("(LLOL)", (long long)self->open_position, (long long)self->open_count, self->open_outcome,
                         (long long)self->open_index);
}

static int csg_traverse(PyObject *op, visitproc visit, void *arg)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    Py_VISIT(self->starts);
    Py_VISIT(self->outcomes);
    Py_VISIT(self->indexes);
    Py_VISIT(self->waiting);
    Py_VISIT(self->waiting_lock);
    Py_VISIT(self->segment_type);
    Py_VISIT(self->new_segment);
    Py_VISIT(self->finished);
    Py_VISIT(self->open_outcome);
    return 0;
}

static int csg_clear(PyObject *op)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    Py_CLEAR(self->starts);
    Py_CLEAR(self->outcomes);
    Py_CLEAR(self->indexes);
    Py_CLEAR(self->waiting);
    Py_CLEAR(self->waiting_lock);
    Py_CLEAR(self->segment_type);
    Py_CLEAR(self->new_segment);
    Py_CLEAR(self->finished);
    Py_CLEAR(self->open_outcome);
    return 0;
}

static void csg_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    csg_clear(op);
    Py_TYPE(op)->tp_free(op);
}

static PyMethodDef csg_methods[] = {
    {"add", (PyCFunction)(void (*)(void))csg_add, METH_FASTCALL, csg_add_doc},
    {"flush", csg_flush, METH_O, csg_flush_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef csg_getset[] = {
    {"open_segment", csg_get_open, NULL,
     PyDoc_STR("the open segment (position, count, outcome, index), or None (the reference's open_* fields)"), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CallSegmentsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.CallSegments",
    .tp_basicsize = sizeof(CallSegmentsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR(
        "CallSegments(starts, outcomes, indexes, waiting, segment_type, new_segment, finished)\n\n"
        "Reference: producer.call_segments.CallSegments (same arguments but ``finished``, concurrent.futures'\n"
        "FINISHED): a send_batch call's segments, add(future, position, count, outcome, index) and flush(future)."),
    .tp_new = csg_new,
    .tp_methods = csg_methods,
    .tp_getset = csg_getset,
    .tp_traverse = csg_traverse,
    .tp_clear = csg_clear,
    .tp_dealloc = csg_dealloc,
};
