/* A single broker's common Produce request above the log in one call, ProduceAppender (made by
 * mini_broker/server/produce_append.py; the reference is the Python path it skips: mini_broker/server/apis/produce.py's
 * handle and ReplicaManager.append_records / _append_to_local_log with the single broker's append_as_leader). It takes,
 * on a replica manager whose replication is the single broker's, a request without a transactional id, acks 1 or -1,
 * one topic with one partition whose records are one memoryview of a non-transactional v2 batch, on a topic a client
 * append found valid before and a partition the metadata cache knows and the log manager holds, not compacted. It
 * reads the request's fields, looks the partition and its log up in the maps it is lent (the metadata cache's topics,
 * the log manager's logs, the replica manager's valid client topic names), appends (the single broker's
 * append_as_leader) through the log end's common append (logend_append_core) under the log's lock with the parts the
 * log lends (Log.client_append_parts), or through the log's public append where it lends none or the end declines,
 * counts BytesIn / MessagesIn (metrics.inc_pair), builds the PartitionResponse, wakes the purgatories' operations
 * watching the partition, for acks=-1 reads the high watermark from the log's end (the single broker's
 * check_enough_replicas: no followers), and where the answer goes now encodes its frame (pr_appended_frame). It
 * declines (None, nothing done) before the append for anything else; from its ask for the log's parts on, an
 * Exception raised (by the parts' ask, the append checks' read, the append: the reference's try) is answered by the
 * replica manager's append_failed (the reference's except branch). A closed log's end declines (LogEnd.close), so
 * its append goes to Log.append, which raises.
 * Uses broker_log_end (LogEnd, logend_append_core), broker_produce_response (pr_appended_frame) and
 * producer_send_append's lock helpers (queue_lock_acquire, queue_lock_release_keeping_error); its look at the batch
 * header reads the two bytes any_transactional reads. */

typedef struct {
    PyObject_HEAD
    /* lent maps: topic name -> TopicMetadata, (topic, partition) -> Log, the valid client topic names */
    PyObject *topics, *logs, *client_topics;
    /* the purgatories whose operations an append wakes */
    PyObject *fetch_purgatory, *produce_purgatory;
    /* constructors: TopicPartition, TopicPartitionOperationKey (from a TopicPartition), PartitionResponse (positional) */
    PyObject *make_tp, *make_key, *make_response;
    /* Log.append's keyword values: the client origin, the leader epoch, True (raise the high watermark) */
    PyObject *origin, *leader_epoch;
    /* the replica manager's BytesIn / MessagesIn counter pair, once asked (append_counters), and the lock they share
     * (read with them: None where each has its own) */
    PyObject *counters, *counters_lock;
    /* CorruptRecordError and its message for an append that found no batch */
    PyObject *no_batches_error, *no_batches_message;
    /* the single broker's replication strategy's class (another replica manager's strategy: declined) */
    PyObject *single_broker;
} ProduceAppenderObject;

static PyObject *pa_str_transactional_id, *pa_str_acks, *pa_str_topic_data, *pa_str_name, *pa_str_partition_data,
    *pa_str_index, *pa_str_records, *pa_str_num_partitions, *pa_str_append_checks, *pa_str_compacted, *pa_str_append,
    *pa_str_append_failed, *pa_str_has_watched, *pa_str_check_and_complete, *pa_str_high_watermark, *pa_str_lock,
    *pa_str_value, *pa_str_inc, *pa_str_replication, *pa_str_metrics, *pa_str_append_counters,
    *pa_str_client_append_parts, *pa_str_log_start_offset, *pa_str_recovery_point,
    *pa_kwnames;

#define PA_OBJECTS(X)                                                                                                  \
    X(topics) X(logs) X(client_topics) X(fetch_purgatory) X(produce_purgatory) X(make_tp) X(make_key)                \
    X(make_response) X(origin) X(leader_epoch) X(counters) X(counters_lock) X(no_batches_error)                  \
    X(no_batches_message) X(single_broker)

static int pa_traverse(ProduceAppenderObject *self, visitproc visit, void *arg)
{
#define PA_VISIT(f) Py_VISIT(self->f);
    PA_OBJECTS(PA_VISIT)
#undef PA_VISIT
    return 0;
}

static int pa_clear(ProduceAppenderObject *self)
{
#define PA_CLEAR(f) Py_CLEAR(self->f);
    PA_OBJECTS(PA_CLEAR)
#undef PA_CLEAR
    return 0;
}

static void pa_dealloc(ProduceAppenderObject *self)
{
    PyObject_GC_UnTrack(self);
    pa_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The only item of a list attribute, borrowed from the new reference *holder (NULL, no error: not a one-item list). */
static PyObject *pa_only_item(PyObject *obj, PyObject *name, PyObject **holder)
{
    PyObject *list = PyObject_GetAttr(obj, name);
    *holder = list;
    if (list == NULL)
        return NULL;
    if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) != 1)
        return NULL;
    return PyList_GET_ITEM(list, 0);
}

/* Whether ``records`` is a C-contiguous one-dimensional memoryview of unsigned bytes holding at least a v2 batch
 * header whose magic is 2 and whose transactional bit is clear: 1; 0 otherwise (no error). */
static int pa_plain_records(PyObject *records, Py_ssize_t *size)
{
    if (!PyMemoryView_Check(records))
        return 0;
    Py_buffer view;
    if (PyObject_GetBuffer(records, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = view.ndim == 1 && view.itemsize == 1 && (view.format == NULL || strcmp(view.format, "B") == 0) &&
             view.len >= 61 && ((const uint8_t *)view.buf)[16] == 2 && !(((const uint8_t *)view.buf)[22] & 0x10);
    *size = view.len;
    PyBuffer_Release(&view);
    return ok;
}

/* metrics.inc_pair(bytes_in, nbytes, messages_in, count) on the replica manager's pair (asked once: its
 * append_counters(), with the lock the two share, read once too: counters made together keep theirs), where it has
 * metrics. */
static int pa_count(ProduceAppenderObject *self, PyObject *rm, Py_ssize_t nbytes, long long count)
{
    PyObject *metrics = PyObject_GetAttr(rm, pa_str_metrics);
    if (metrics == NULL)
        return -1;
    Py_DECREF(metrics);
    if (metrics == Py_None)
        return 0;
    if (self->counters == NULL) {
        PyObject *pair = PyObject_CallMethodNoArgs(rm, pa_str_append_counters);
        if (pair == NULL)
            return -1;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_TypeError, "append_counters must return a pair");
            return -1;
        }
        PyObject *lock = PyObject_GetAttr(PyTuple_GET_ITEM(pair, 0), pa_str_lock);
        PyObject *other = lock == NULL ? NULL : PyObject_GetAttr(PyTuple_GET_ITEM(pair, 1), pa_str_lock);
        if (other == NULL) {
            Py_XDECREF(lock);
            Py_DECREF(pair);
            return -1;
        }
        Py_DECREF(other);
        if (lock != other)
            Py_SETREF(lock, Py_NewRef(Py_None));
        if (self->counters == NULL) {
            self->counters = pair;
            Py_XSETREF(self->counters_lock, lock);
        } else {
            Py_DECREF(pair); /* another thread asked meanwhile: the same pair */
            Py_DECREF(lock);
        }
    }
    PyObject *first = PyTuple_GET_ITEM(self->counters, 0), *second = PyTuple_GET_ITEM(self->counters, 1);
    PyObject *lock = self->counters_lock;
    PyObject *n = PyLong_FromSsize_t(nbytes), *m = PyLong_FromLongLong(count);
    int rc = -1;
    if (n == NULL || m == NULL)
        goto done;
    if (lock == Py_None) {
        /* counters made apart: first.inc(n), then second.inc(m) */
        PyObject *r = PyObject_CallMethodOneArg(first, pa_str_inc, n);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
        r = PyObject_CallMethodOneArg(second, pa_str_inc, m);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
        rc = 0;
        goto done;
    }
    if (queue_lock_acquire(lock) < 0)
        goto done;
    PyObject *pairs[2][2] = {{first, n}, {second, m}};
    int failed = 0;
    for (int i = 0; i < 2 && !failed; i++) {
        PyObject *value = PyObject_GetAttr(pairs[i][0], pa_str_value);
        PyObject *sum = value == NULL ? NULL : PyNumber_Add(value, pairs[i][1]);
        Py_XDECREF(value);
        if (sum == NULL || PyObject_SetAttr(pairs[i][0], pa_str_value, sum) < 0)
            failed = 1;
        Py_XDECREF(sum);
    }
    /* the release (the counters' update cannot raise but on memory: its error kept) */
    if (failed) {
        PyObject *none = NULL;
        queue_lock_release_keeping_error(lock, &none);
        goto done;
    }
    if (queue_lock_release(lock) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(n);
    Py_XDECREF(m);
    return rc;
}

/* The purgatories' check_and_complete(key) for the partition appended, when either watched an operation. */
static int pa_wake(ProduceAppenderObject *self, PyObject *tp)
{
    int watched = 0;
    PyObject *purgatories[2] = {self->fetch_purgatory, self->produce_purgatory};
    for (int i = 0; i < 2 && !watched; i++) {
        PyObject *flag = PyObject_GetAttr(purgatories[i], pa_str_has_watched);
        if (flag == NULL)
            return -1;
        watched = PyObject_IsTrue(flag);
        Py_DECREF(flag);
        if (watched < 0)
            return -1;
    }
    if (!watched)
        return 0;
    PyObject *key = PyObject_CallOneArg(self->make_key, tp);
    if (key == NULL)
        return -1;
    for (int i = 0; i < 2; i++) {
        PyObject *r = PyObject_CallMethodOneArg(purgatories[i], pa_str_check_and_complete, key);
        if (r == NULL) {
            Py_DECREF(key);
            return -1;
        }
        Py_DECREF(r);
    }
    Py_DECREF(key);
    return 0;
}

/* The end's common append under the log's lock, with the parts the log lends (Log.client_append_parts: its lock, its
 * end, the clock's now) and its log start offset and recovery point read under the lock: the LogAppendInfo (a new
 * reference) when done; None when the end declined (nothing done: the caller runs Log.append); NULL with the append's
 * exception. */
static PyObject *pa_end_append(ProduceAppenderObject *self, PyObject *lg, PyObject *parts, PyObject *records)
{
    PyObject *lock = PyTuple_GET_ITEM(parts, 0);
    LogEndObject *end = (LogEndObject *)PyTuple_GET_ITEM(parts, 1);
    if (queue_lock_acquire(lock) < 0)
        return NULL;
    PyObject *info = NULL, *recovery = NULL, *start = PyObject_GetAttr(lg, pa_str_log_start_offset);
    if (start != NULL)
        recovery = PyObject_GetAttr(lg, pa_str_recovery_point);
    int appended = 0;
    if (recovery != NULL) {
        PyObject *args[6] = {records, PyTuple_GET_ITEM(parts, 2), self->leader_epoch, Py_True, start, recovery};
        info = logend_append_core(end, args, &appended);
    }
    Py_XDECREF(start);
    Py_XDECREF(recovery);
    queue_lock_release_keeping_error(lock, &info); /* (the append's exception kept) */
    if (info != NULL && !appended)
        Py_SETREF(info, Py_NewRef(Py_None));
    return info;
}

/* The single broker's append_as_leader of ``records`` to the log ``lg``: the end's common append (pa_end_append)
 * with the ``parts`` the log lent (pa_parts; NULL: none), else or where it declines the log's public append (the
 * reference). The LogAppendInfo (new reference), NULL with the append's exception. */
static PyObject *pa_log_append(ProduceAppenderObject *self, PyObject *lg, PyObject *records, PyObject *parts)
{
    if (parts != NULL) {
        PyObject *info = pa_end_append(self, lg, parts, records);
        if (info != Py_None)
            return info;
        Py_DECREF(info);
    }
    PyObject *call[5] = {lg, records, self->origin, self->leader_epoch, Py_True};
    return PyObject_VectorcallMethod(pa_str_append, call, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, pa_kwnames);
}

/* The log's Log.client_append_parts() where they hold the kernel's LogEnd, configured: 1 with *parts (a new
 * reference) and *end (borrowed from it); 0, nothing kept, where the log lends none or of another kind; -1 on error. */
static int pa_parts(PyObject *lg, PyObject **parts, LogEndObject **end)
{
    PyObject *got = PyObject_CallMethodNoArgs(lg, pa_str_client_append_parts);
    if (got == NULL)
        return -1;
    if (PyTuple_CheckExact(got) && PyTuple_GET_SIZE(got) == 3 && Py_TYPE(PyTuple_GET_ITEM(got, 1)) == &LogEndType &&
        ((LogEndObject *)PyTuple_GET_ITEM(got, 1))->configured) {
        *parts = got;
        *end = (LogEndObject *)PyTuple_GET_ITEM(got, 1);
        return 1;
    }
    Py_DECREF(got);
    return 0;
}

/* Whether the log's append checks say compacted (the reference's read, where the log lends no parts): 1 or 0; -1 with
 * the read's exception. ``raised``: an exception is pending (asking for the parts raised): kept across the read and
 * restored where the answer is 0 (the append is then that exception's), dropped otherwise (compacted: the caller
 * declines, nothing done; the read raised: its exception is the reference's). */
static int pa_compacted(PyObject *lg, int raised)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    if (raised)
        PyErr_Fetch(&type, &value, &tb);
    int is_compacted = -1;
    PyObject *checks = PyObject_GetAttr(lg, pa_str_append_checks);
    if (checks != NULL) {
        PyObject *compacted = PyObject_GetAttr(checks, pa_str_compacted);
        Py_DECREF(checks);
        if (compacted != NULL) {
            is_compacted = PyObject_IsTrue(compacted);
            Py_DECREF(compacted);
        }
    }
    if (raised) {
        if (is_compacted == 0) {
            PyErr_Restore(type, value, tb);
        } else {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
    }
    return is_compacted;
}

PyDoc_STRVAR(pa_append_doc,
"append(body, replica_manager, version, correlation_id, /) -> tuple | None\n\n"
"A single broker's common Produce request (``body``, a ProduceRequest) appended and answered up to its results:\n"
"(order, results, pending, frame) with order [tp], results {tp: PartitionResponse}, pending None when the answer may\n"
"go now, else the Log appended to (acks=-1, the high watermark, read from the log's end, not past the append yet: the\n"
"replica manager delays the answer), and frame the whole answer at ``version`` for ``correlation_id`` (bytes: the\n"
"append done and answered now) or None (the handler builds the answer from the results). None, nothing done, for\n"
"any other request (see the part's opening comment). ``replica_manager``: its\n"
"replication (declined unless the single broker's), its metrics and append_counters() (BytesIn / MessagesIn, asked\n"
"once) and append_failed(tp, error), which answers an append that raised (not kept).");

static PyObject *pa_append(ProduceAppenderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "append takes 4 arguments");
        return NULL;
    }
    PyObject *body = args[0], *rm = args[1];
    long version = PyLong_AsLong(args[2]);
    if (version == -1 && PyErr_Occurred())
        return NULL;
    long long correlation_id = PyLong_AsLongLong(args[3]);
    if (correlation_id == -1 && PyErr_Occurred())
        return NULL;
    LogEndObject *end = NULL; /* the log's end (borrowed from parts) where the log lends its parts */
    PyObject *parts = NULL;
    PyObject *out = NULL, *v = NULL, *topic_data = NULL, *partition_data = NULL, *name = NULL, *index = NULL;
    PyObject *records = NULL, *md = NULL, *tp = NULL, *lg = NULL, *info = NULL, *result = NULL;

    /* ---- the checks: nothing changes before the append ---- */
    v = PyObject_GetAttr(rm, pa_str_replication);
    if (v == NULL)
        goto error;
    if ((PyObject *)Py_TYPE(v) != self->single_broker)
        goto decline;
    Py_DECREF(v);
    v = PyObject_GetAttr(body, pa_str_transactional_id);
    if (v == NULL)
        goto error;
    if (v != Py_None)
        goto decline;
    Py_DECREF(v);
    v = PyObject_GetAttr(body, pa_str_acks);
    if (v == NULL)
        goto error;
    if (!PyLong_CheckExact(v))
        goto decline;
    long acks = PyLong_AsLong(v);
    if (acks == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        goto decline;
    }
    if (acks != 1 && acks != -1)
        goto decline;
    Py_CLEAR(v);
    PyObject *t = pa_only_item(body, pa_str_topic_data, &topic_data);
    if (t == NULL)
        goto check_error;
    name = PyObject_GetAttr(t, pa_str_name);
    if (name == NULL)
        goto error;
    if (!PyUnicode_CheckExact(name))
        goto decline;
    PyObject *p = pa_only_item(t, pa_str_partition_data, &partition_data);
    if (p == NULL)
        goto check_error;
    index = PyObject_GetAttr(p, pa_str_index);
    if (index == NULL)
        goto error;
    if (!PyLong_CheckExact(index))
        goto decline;
    long partition = PyLong_AsLong(index);
    if (partition == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        goto decline;
    }
    records = PyObject_GetAttr(p, pa_str_records);
    if (records == NULL)
        goto error;
    Py_ssize_t nbytes = 0;
    if (!pa_plain_records(records, &nbytes))
        goto decline;
    int valid = PySet_Contains(self->client_topics, name);
    if (valid < 0)
        goto error;
    if (!valid)
        goto decline;
    md = PyDict_GetItemWithError(self->topics, name);
    if (md == NULL) {
        if (PyErr_Occurred())
            goto error;
        goto decline;
    }
    Py_INCREF(md);
    v = PyObject_GetAttr(md, pa_str_num_partitions);
    if (v == NULL)
        goto error;
    if (!PyLong_CheckExact(v))
        goto decline;
    long num_partitions = PyLong_AsLong(v);
    if (num_partitions == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        goto decline;
    }
    Py_CLEAR(v);
    if (partition < 0 || partition >= num_partitions)
        goto decline;
    {
        PyObject *pair[2] = {name, index};
        tp = PyObject_Vectorcall(self->make_tp, pair, 2, NULL);
    }
    if (tp == NULL)
        goto error;
    lg = PyDict_GetItemWithError(self->logs, tp);
    if (lg == NULL) {
        if (PyErr_Occurred())
            goto error;
        goto decline;
    }
    Py_INCREF(lg);
    /* the log's parts (nothing changes: the clock is read), whose end knows the log's append checks. From here on an
     * exception (an Exception) is the append's, as in the reference's try: the partition is answered by append_failed */
    int lent = pa_parts(lg, &parts, &end);
    if (lent < 0 && !PyErr_ExceptionMatches(PyExc_Exception))
        goto error;
    int is_compacted = lent > 0 ? end->compacted : pa_compacted(lg, lent < 0);
    if (is_compacted > 0)
        goto decline; /* (the reference's keyless check comes first; where asking for the parts raised, nothing done) */

    /* ---- the append (the single broker's append_as_leader) and its result ---- */
    info = is_compacted < 0 || lent < 0 ? NULL : pa_log_append(self, lg, records, parts);
    long long first = -1, last = -1;
    int appended = 0;
    if (info == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            goto error;
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        PyErr_NormalizeException(&exc_type, &exc_value, &exc_tb);
        if (exc_tb != NULL)
            PyException_SetTraceback(exc_value, exc_tb);
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_tb);
        result = PyObject_CallMethodObjArgs(rm, pa_str_append_failed, tp, exc_value, NULL);
        Py_XDECREF(exc_value);
        if (result == NULL)
            goto error;
    } else {
        if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 9) {
            PyErr_SetString(PyExc_TypeError, "Log.append must return a LogAppendInfo");
            goto error;
        }
        first = PyLong_AsLongLong(PyTuple_GET_ITEM(info, 0));
        if (first == -1 && PyErr_Occurred())
            goto error;
        last = PyLong_AsLongLong(PyTuple_GET_ITEM(info, 1));
        if (last == -1 && PyErr_Occurred())
            goto error;
        if (first < 0) {
            PyObject *err = PyObject_CallOneArg(self->no_batches_error, self->no_batches_message);
            if (err == NULL)
                goto error;
            result = PyObject_CallMethodObjArgs(rm, pa_str_append_failed, tp, err, NULL);
            Py_DECREF(err);
            if (result == NULL)
                goto error;
        } else {
            appended = 1;
            if (pa_count(self, rm, nbytes, last - first + 1) < 0)
                goto error;
            PyObject *empty = PyList_New(0), *zero = PyLong_FromLong(0);
            if (empty == NULL || zero == NULL) {
                Py_XDECREF(empty);
                Py_XDECREF(zero);
                goto error;
            }
            /* error code, base offset, log append time, log start offset, record errors, error message, last offset */
            PyObject *fields[7] = {zero, PyTuple_GET_ITEM(info, 0), PyTuple_GET_ITEM(info, 4),
                                   PyTuple_GET_ITEM(info, 5), empty, Py_None, PyTuple_GET_ITEM(info, 1)};
            result = PyObject_Vectorcall(self->make_response, fields, 7, NULL);
            Py_DECREF(empty);
            Py_DECREF(zero);
            if (result == NULL)
                goto error;
        }
    }
    PyObject *order = PyList_New(1);
    if (order == NULL)
        goto error;
    PyList_SET_ITEM(order, 0, Py_NewRef(tp));
    PyObject *results = PyDict_New();
    if (results == NULL || PyDict_SetItem(results, tp, result) < 0) {
        Py_DECREF(order);
        Py_XDECREF(results);
        goto error;
    }
    PyObject *pending = Py_None;
    if (appended) {
        if (pa_wake(self, tp) < 0) {
            Py_DECREF(order);
            Py_DECREF(results);
            goto error;
        }
        if (acks == -1) {
            /* the single broker's check_enough_replicas (no followers): the high watermark at or past the append's
             * end, read from the log's end where it is the kernel's (Log.high_watermark's value) */
            long long mark;
            if (end != NULL) {
                mark = end->high_watermark;
            } else {
                PyObject *hw = PyObject_GetAttr(lg, pa_str_high_watermark);
                mark = hw == NULL ? -1 : PyLong_AsLongLong(hw);
                Py_XDECREF(hw);
            }
            if (mark == -1 && PyErr_Occurred()) {
                Py_DECREF(order);
                Py_DECREF(results);
                goto error;
            }
            if (mark < last + 1)
                pending = lg;
        }
    }
    /* the answer's frame where the append was done and the answer goes now */
    PyObject *frame = Py_None;
    if (appended && pending == Py_None) {
        long long append_time = PyLong_AsLongLong(PyTuple_GET_ITEM(info, 4));
        long long log_start = append_time == -1 && PyErr_Occurred() ? -1 : PyLong_AsLongLong(PyTuple_GET_ITEM(info, 5));
        frame = PyErr_Occurred() ? NULL :
                pr_appended_frame(version, correlation_id, name, partition, first, append_time, log_start);
    } else {
        Py_INCREF(frame);
    }
    if (frame == NULL) {
        Py_DECREF(order);
        Py_DECREF(results);
        goto error;
    }
    out = PyTuple_Pack(4, order, results, pending, frame);
    Py_DECREF(frame);
    Py_DECREF(order);
    Py_DECREF(results);
    goto done;

check_error:
    if (PyErr_Occurred())
        goto error;
decline:
    Py_INCREF(Py_None);
    out = Py_None;
    goto done;
error:
    out = NULL;
done:
    Py_XDECREF(v);
    Py_XDECREF(topic_data);
    Py_XDECREF(partition_data);
    Py_XDECREF(name);
    Py_XDECREF(index);
    Py_XDECREF(records);
    Py_XDECREF(md);
    Py_XDECREF(tp);
    Py_XDECREF(lg);
    Py_XDECREF(info);
    Py_XDECREF(result);
    Py_XDECREF(parts);
    return out;
}

static PyMethodDef pa_methods[] = {
    {"append", (PyCFunction)(void (*)(void))pa_append, METH_FASTCALL, pa_append_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProduceAppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ProduceAppender",
    .tp_basicsize = sizeof(ProduceAppenderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A single broker's common Produce request above the log in one call (see produce_appender).",
    .tp_traverse = (traverseproc)pa_traverse,
    .tp_clear = (inquiry)pa_clear,
    .tp_dealloc = (destructor)pa_dealloc,
    .tp_methods = pa_methods,
};

static int pa_strings(void)
{
    if (pa_kwnames != NULL)
        return 0;
    if (sattr_init() < 0) /* (queue_lock_acquire / queue_lock_release's names and lock type) */
        return -1;
#define PA_STR(var, text)                                                                                              \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                                              \
        return -1;
    PA_STR(pa_str_transactional_id, "transactional_id")
    PA_STR(pa_str_acks, "acks")
    PA_STR(pa_str_topic_data, "topic_data")
    PA_STR(pa_str_name, "name")
    PA_STR(pa_str_partition_data, "partition_data")
    PA_STR(pa_str_index, "index")
    PA_STR(pa_str_records, "records")
    PA_STR(pa_str_num_partitions, "num_partitions")
    PA_STR(pa_str_append_checks, "append_checks")
    PA_STR(pa_str_compacted, "compacted")
    PA_STR(pa_str_append, "append")
    PA_STR(pa_str_append_failed, "append_failed")
    PA_STR(pa_str_has_watched, "has_watched")
    PA_STR(pa_str_check_and_complete, "check_and_complete")
    PA_STR(pa_str_high_watermark, "high_watermark")
    PA_STR(pa_str_lock, "lock")
    PA_STR(pa_str_value, "value")
    PA_STR(pa_str_inc, "inc")
    PA_STR(pa_str_replication, "replication")
    PA_STR(pa_str_metrics, "metrics")
    PA_STR(pa_str_append_counters, "append_counters")
    PA_STR(pa_str_client_append_parts, "client_append_parts")
    PA_STR(pa_str_log_start_offset, "log_start_offset")
    PA_STR(pa_str_recovery_point, "recovery_point")
#undef PA_STR
    pa_kwnames = Py_BuildValue("(sss)", "origin", "leader_epoch", "raise_high_watermark");
    return pa_kwnames == NULL ? -1 : 0;
}

PyDoc_STRVAR(produce_appender_doc,
"produce_appender(topics, logs, client_topics, fetch_purgatory, produce_purgatory, make_tp, make_key,\n"
"                 make_response, origin, leader_epoch, no_batches_error, no_batches_message,\n"
"                 single_broker, /)\n"
"    -> ProduceAppender\n\n"
"Reference: mini_broker/server/apis/produce.py's handle down to ReplicaManager._append_to_local_log on a single\n"
"broker. Lent: the metadata cache's topics by name, the log manager's logs by (topic, partition), the replica\n"
"manager's valid client topic names, its purgatories; the constructors of TopicPartition, of an operation key from\n"
"one, of PartitionResponse (positional, in field order); Log.append's origin and leader epoch; CorruptRecordError\n"
"and its no-batch message; the single broker's replication strategy's class (a replica manager whose strategy is of\n"
"another class: declined). Nothing that refers to the replica manager: each append is passed it.");

static PyObject *k_produce_appender(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "produce_appender takes 13 arguments");
        return NULL;
    }
    if (!PyDict_CheckExact(args[0]) || !PyDict_CheckExact(args[1]) || !PySet_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "produce_appender: topics and logs must be dicts, client_topics a set");
        return NULL;
    }
    if (pa_strings() < 0)
        return NULL;
    ProduceAppenderObject *o = PyObject_GC_New(ProduceAppenderObject, &ProduceAppenderType);
    if (o == NULL)
        return NULL;
    o->topics = Py_NewRef(args[0]);
    o->logs = Py_NewRef(args[1]);
    o->client_topics = Py_NewRef(args[2]);
    o->fetch_purgatory = Py_NewRef(args[3]);
    o->produce_purgatory = Py_NewRef(args[4]);
    o->make_tp = Py_NewRef(args[5]);
    o->make_key = Py_NewRef(args[6]);
    o->make_response = Py_NewRef(args[7]);
    o->origin = Py_NewRef(args[8]);
    o->leader_epoch = Py_NewRef(args[9]);
    o->counters = NULL;
    o->counters_lock = NULL;
    o->no_batches_error = Py_NewRef(args[10]);
    o->no_batches_message = Py_NewRef(args[11]);
    o->single_broker = Py_NewRef(args[12]);
    PyObject_GC_Track(o);
    return (PyObject *)o;
}
