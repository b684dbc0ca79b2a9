/* The end of a partition log as a kernel type that owns it, LogEnd (mini_broker/log/log_end.py's LogEnd is the
 * reference of the state; mini_broker/log/unified_log.py's Log.append, the reference of append_client): the log end
 * offset's metadata, the high watermark and its cached metadata, the active segment's SegmentTail, the log's append
 * checks, and what the producer state lends it (its producers map, its lock, its unreplicated transactions). Its
 * append_client does a client's common append of one batch in one call: the check (check_batch_view), the producer's
 * next-batch check (pne_next_entry), the offsets (the header's base offset and leader epoch), the write and the index
 * entries (segtail_accepts, segtail_write_one), the LEO, the producer state's completion (pne_add_next, the map end
 * offset), the high watermark's raise, and the LogAppendInfo. It declines (None, nothing done; or the batch's header
 * fields when only the check was done) whenever the reference could do anything else.
 * Uses record_validate (check_batch_view, be_field, client_batch_tuple and the header's places) and
 * broker_log_append (SegmentTail and the producer-state helpers). */

typedef struct {
    PyObject_HEAD
    PyObject *end_metadata;  /* the LEO's LogOffsetMetadata */
    long long high_watermark;
    PyObject *hw_metadata;   /* the high watermark's cached LogOffsetMetadata, or None */
    SegTailObject *tail;     /* the active segment's append state (NULL: none, or the reference's) */
    /* the append checks (configure) */
    int configured, log_append_time, compacted;
    int closed; /* the log is closed (close): no tail is kept from then on */
    long long max_message_bytes, before_max_ms, after_max_ms, flush_interval_messages;
    /* the producer state's (bind_producer_state): the manager, its producers, its lock, its unreplicated txns */
    PyObject *producer_state, *producers, *producer_lock, *unreplicated;
    /* constructors: LogOffsetMetadata, LogAppendInfo, BatchMetadata; the CRC-32C function */
    PyObject *make_metadata, *make_info, *make_batch, *crc32c;
} LogEndObject;

static PyObject *logend_str_acquire, *logend_str_release, *logend_str_map_end_offset, *logend_str_update_map_end_offset;

#define LOGEND_OBJECTS(X)                                                                                              \
    X(end_metadata) X(hw_metadata) X(tail) X(producer_state) X(producers) X(producer_lock) X(unreplicated)           \
    X(make_metadata) X(make_info) X(make_batch) X(crc32c)

static int logend_traverse(LogEndObject *self, visitproc visit, void *arg)
{
#define LOGEND_VISIT(f) Py_VISIT(self->f);
    LOGEND_OBJECTS(LOGEND_VISIT)
#undef LOGEND_VISIT
    return 0;
}

static int logend_clear(LogEndObject *self)
{
#define LOGEND_CLEAR(f) Py_CLEAR(self->f);
    LOGEND_OBJECTS(LOGEND_CLEAR)
#undef LOGEND_CLEAR
    return 0;
}

static void logend_dealloc(LogEndObject *self)
{
    PyObject_GC_UnTrack(self);
    logend_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyDoc_STRVAR(logend_set_tail_doc,
"set_tail(tail, /) -> None\n\n"
"The active segment's append state (its SegmentTail; the reference's, or any after close: append_client declines).");

static PyObject *logend_set_tail(LogEndObject *self, PyObject *tail)
{
    Py_CLEAR(self->tail);
    if (Py_TYPE(tail) == &SegTailType && !self->closed) {
        Py_INCREF(tail);
        self->tail = (SegTailObject *)tail;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(logend_close_doc,
"close() -> None\n\n"
"The log is closed (Log.close, under the log's lock): the segment's tail is forgotten and no other kept (set_tail),\n"
"so append_client declines from now on (the caller's Log.append then raises), even where the close failed before the\n"
"segments' files were closed or a segment is set after it.");

static PyObject *logend_close(LogEndObject *self, PyObject *Py_UNUSED(ignored))
{
    self->closed = 1;
    Py_CLEAR(self->tail);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(logend_configure_doc,
"configure(checks, /) -> None\n\n"
"The log's AppendChecks (log_append_time, compacted, max_message_bytes, before_max_ms, after_max_ms,\n"
"flush_interval_messages).");

static PyObject *logend_configure(LogEndObject *self, PyObject *checks)
{
    if (!PyTuple_Check(checks) || PyTuple_GET_SIZE(checks) != 6) {
        PyErr_SetString(PyExc_TypeError, "configure: checks is an AppendChecks");
        return NULL;
    }
    self->configured = 0;
    int flags[2];
    for (int i = 0; i < 2; i++)
        if ((flags[i] = PyObject_IsTrue(PyTuple_GET_ITEM(checks, i))) < 0)
            return NULL;
    long long v[4];
    for (int i = 0; i < 4; i++) {
        int overflow = 0;
        v[i] = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(checks, i + 2), &overflow);
        if (v[i] == -1 && PyErr_Occurred())
            return NULL;
        if (overflow) /* a value the reference judges: every append goes to it */
            Py_RETURN_NONE;
    }
    self->log_append_time = flags[0];
    self->compacted = flags[1];
    self->max_message_bytes = v[0];
    self->before_max_ms = v[1];
    self->after_max_ms = v[2];
    self->flush_interval_messages = v[3];
    self->configured = 1;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(logend_bind_doc,
"bind_producer_state(manager, producers, lock, unreplicated, /) -> None\n\n"
"What the producer state lends the log's append: the manager (its map_end_offset, update_map_end_offset), its\n"
"producers (producer id -> ProducerStateEntry), the lock its completions take, its unreplicated transactions.");

static PyObject *logend_bind(LogEndObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "bind_producer_state(manager, producers: dict, lock, unreplicated)");
        return NULL;
    }
    PyObject **fields[4] = {&self->producer_state, &self->producers, &self->producer_lock, &self->unreplicated};
    for (int i = 0; i < 4; i++) {
        Py_INCREF(args[i]);
        Py_XSETREF(*fields[i], args[i]);
    }
    Py_RETURN_NONE;
}

/* an int argument as a long long; 0 with *ok cleared when it does not fit (the reference judges it) */
static long long logend_int(PyObject *v, int *ok)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if ((x == -1 && PyErr_Occurred()) || overflow) {
        PyErr_Clear();
        *ok = 0;
    }
    return x;
}

/* the producer state's completion under its lock: pne_add_next, then map_end_offset raised to end_offset */
static int logend_complete_producer(LogEndObject *self, PyObject *entry, long long first_seq, long long delta,
                                    PyObject *delta_obj, PyObject *max_timestamp, long long last_offset,
                                    long long end_offset)
{
    PyObject *r = PyObject_CallMethodNoArgs(self->producer_lock, logend_str_acquire);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    int rc = -1;
    PyObject *last = PyLong_FromLongLong(last_offset), *map_end = NULL, *end = NULL;
    if (last == NULL || pne_add_next(self->producers, entry, first_seq, delta, delta_obj, max_timestamp, last,
                                     self->make_batch) < 0)
        goto done;
    if ((map_end = PyObject_GetAttr(self->producer_state, logend_str_map_end_offset)) == NULL ||
        (end = PyLong_FromLongLong(end_offset)) == NULL)
        goto done;
    int above = PyObject_RichCompareBool(end, map_end, Py_GT);
    if (above < 0 || (above && PyObject_SetAttr(self->producer_state, logend_str_map_end_offset, end) < 0))
        goto done;
    rc = 0;
done:
    Py_XDECREF(last);
    Py_XDECREF(map_end);
    Py_XDECREF(end);
    {
        /* the lock released whatever happened, an error of the completion kept */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *u = PyObject_CallMethodNoArgs(self->producer_lock, logend_str_release);
        if (u == NULL) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return -1;
        }
        Py_DECREF(u);
        PyErr_Restore(type, value, tb);
    }
    return rc;
}

#define LOGEND_TRANSACTIONAL 0x10
#define LOGEND_LEADER_EPOCH_AT 12

PyDoc_STRVAR(logend_append_client_doc,
"append_client(records, now, leader_epoch, raise_high_watermark, log_start_offset, recovery_point, /)\n"
"    -> LogAppendInfo | ClientBatch | None\n\n"
"Reference: mini_broker.log.unified_log.Log.append of a client's records under the log's lock (the log open, no\n"
"leader epoch cache): when records is a writable byte memoryview holding one batch the checks accept, of a known\n"
"producer's next batch (or of no producer), that neither rolls the segment nor fills an index nor makes the log\n"
"flush, on a log that appends with CreateTime and has no unreplicated transaction to forget: the batch is\n"
"checked, given its offsets (its header rewritten in records), written and indexed, the producer state completed,\n"
"the high watermark raised (when raise_high_watermark), and the LogAppendInfo returned. Otherwise nothing is done:\n"
"the header fields (the ClientBatch single_client_batch gives) when the batch was checked and accepted, else None.");

/* append_client's work on its six arguments; *appended set to 1 when the batch was appended (the result is then the
 * LogAppendInfo), left alone otherwise. The produce appender calls it under the log's lock too (pa_log_append). */
static PyObject *logend_append_core(LogEndObject *self, PyObject *const *args, int *appended)
{
    SegTailObject *tail = self->tail;
    if (tail == NULL || !self->configured || self->log_append_time || !PyMemoryView_Check(args[0]) ||
        self->end_metadata == NULL || !PyTuple_Check(self->end_metadata) || PyTuple_GET_SIZE(self->end_metadata) < 1)
        Py_RETURN_NONE;
    int ok = 1;
    long long now = logend_int(args[1], &ok), leader_epoch = logend_int(args[2], &ok);
    long long log_start = logend_int(args[4], &ok), recovery_point = logend_int(args[5], &ok);
    long long first_offset = logend_int(PyTuple_GET_ITEM(self->end_metadata, 0), &ok);
    int raise_hw = PyObject_IsTrue(args[3]);
    if (raise_hw < 0)
        return NULL;
    if (!ok || leader_epoch < INT32_MIN || leader_epoch > INT32_MAX)
        Py_RETURN_NONE;
    /* Log.append's buffer rule: a writable one-dimensional contiguous byte memoryview is rewritten in place */
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_FULL_RO) < 0) {
        PyErr_Clear(); /* (a released view: the reference raises) */
        Py_RETURN_NONE;
    }
    PyObject *result = Py_None, *entry = NULL, *key = NULL;
    if (view.readonly || view.ndim != 1 || (view.format != NULL && strcmp(view.format, "B") != 0) ||
        !PyBuffer_IsContiguous(&view, 'C'))
        goto done;
    /* single_client_batch */
    uint8_t *h = (uint8_t *)view.buf;
    long long size = check_batch_view(h, view.len, 0, 1, 1, now, self->before_max_ms, self->after_max_ms,
                                      self->compacted, self->crc32c);
    if (size < 0 || size != view.len || size > self->max_message_bytes)
        goto done;
    long long fields[8] = {size, (long long)(int64_t)be_field(h + 43, 8), (int16_t)be_field(h + 51, 2),
                           (int32_t)be_field(h + 53, 4), (int32_t)be_field(h + LAST_OFFSET_DELTA_AT, 4),
                           (long long)(int64_t)be_field(h + 35, 8), (int16_t)be_field(h + ATTRIBUTES_AT, 2),
                           (int32_t)be_field(h + RECORDS_COUNT_AT, 4)};
    long long producer_id = fields[1], delta = fields[4], batch_max_ts = fields[5];
    long long last = first_offset + delta, next = last + 1;
    long long max_timestamp = batch_max_ts > -1 ? batch_max_ts : -1, offset_of_max = batch_max_ts > -1 ? last : -1;
    /* everything that would take the reference elsewhere, judged before anything changes */
    if ((raise_hw && self->unreplicated != NULL && PyObject_IsTrue(self->unreplicated) != 0) ||
        next - recovery_point >= self->flush_interval_messages || !segtail_accepts(tail, size, last, max_timestamp))
        goto checked;
    if (producer_id >= 0) {
        if (self->producers == NULL || (key = PyLong_FromLongLong(producer_id)) == NULL)
            goto checked;
        entry = pne_next_entry(self->producers, key, producer_id, fields[2], fields[3], delta,
                               (fields[6] & LOGEND_TRANSACTIONAL) != 0, 0);
        if (entry == NULL)
            goto error;
        if (entry == Py_None)
            goto checked;
    }
    if (PyErr_Occurred())
        goto error;
    /* assign_client_batch: the base offset and the partition leader epoch (outside the CRC) */
    for (int i = 0; i < 8; i++)
        h[i] = (uint8_t)((unsigned long long)first_offset >> (56 - 8 * i));
    for (int i = 0; i < 4; i++)
        h[LOGEND_LEADER_EPOCH_AT + i] = (uint8_t)((uint32_t)(int32_t)leader_epoch >> (24 - 8 * i));
    /* the segment's write and index entries */
    long long new_size = segtail_write_one(tail, (const char *)h, view.len, last, batch_max_ts);
    if (new_size < 0)
        goto error;
    {
        PyObject *items[3] = {PyLong_FromLongLong(next), PyLong_FromLongLong(tail->base_offset),
                              PyLong_FromLongLong(new_size)};
        PyObject *metadata = items[0] && items[1] && items[2] ?
                             PyObject_Vectorcall(self->make_metadata, items, 3, NULL) : NULL;
        for (int i = 0; i < 3; i++)
            Py_XDECREF(items[i]);
        if (metadata == NULL)
            goto error;
        Py_XSETREF(self->end_metadata, metadata);
    }
    /* the producer state moves once the batch is in the log */
    if (producer_id >= 0) {
        PyObject *delta_obj = PyLong_FromLongLong(delta), *ts = PyLong_FromLongLong(batch_max_ts);
        int rc = delta_obj == NULL || ts == NULL ? -1 :
                 logend_complete_producer(self, entry, fields[3], delta, delta_obj, ts, last, next);
        Py_XDECREF(delta_obj);
        Py_XDECREF(ts);
        if (rc < 0)
            goto error;
    } else {
        PyObject *end = PyLong_FromLongLong(next);
        PyObject *r = end == NULL ? NULL :
                      PyObject_CallMethodOneArg(self->producer_state, logend_str_update_map_end_offset, end);
        Py_XDECREF(end);
        if (r == NULL)
            goto error;
        Py_DECREF(r);
    }
    /* Log._increment_high_watermark_locked(next) (the LEO is next): clamped to [log start, LEO], never lowered; the
     * producer state's on_high_watermark_updated has no unreplicated transaction to forget */
    if (raise_hw && next > self->high_watermark) {
        long long hw = next > log_start ? next : log_start;
        if (hw > next)
            hw = next;
        if (hw != self->high_watermark) {
            self->high_watermark = hw;
            Py_INCREF(Py_None);
            Py_XSETREF(self->hw_metadata, Py_None);
        }
    }
    {
        long long info[9] = {first_offset, last, max_timestamp, offset_of_max, -1, log_start, fields[7], 1, size};
        PyObject *items[9];
        int made = 1;
        for (int i = 0; i < 9; i++)
            if ((items[i] = PyLong_FromLongLong(info[i])) == NULL)
                made = 0;
        result = made ? PyObject_Vectorcall(self->make_info, items, 9, NULL) : NULL;
        for (int i = 0; i < 9; i++)
            Py_XDECREF(items[i]);
        if (result == NULL)
            goto error;
    }
    *appended = 1;
    goto out;
checked:
    if (PyErr_Occurred())
        goto error;
    result = client_batch_tuple(fields);
    if (result == NULL)
        goto error;
    goto out;
done:
    Py_INCREF(result);
out:
    Py_XDECREF(entry);
    Py_XDECREF(key);
    PyBuffer_Release(&view);
    return result;
error:
    Py_XDECREF(entry);
    Py_XDECREF(key);
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *logend_append_client(LogEndObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "append_client takes 6 arguments");
        return NULL;
    }
    int appended = 0;
    return logend_append_core(self, args, &appended);
}

static PyMethodDef logend_methods[] = {
    {"append_client", (PyCFunction)(void (*)(void))logend_append_client, METH_FASTCALL, logend_append_client_doc},
    {"set_tail", (PyCFunction)logend_set_tail, METH_O, logend_set_tail_doc},
    {"close", (PyCFunction)logend_close, METH_NOARGS, logend_close_doc},
    {"configure", (PyCFunction)logend_configure, METH_O, logend_configure_doc},
    {"bind_producer_state", (PyCFunction)(void (*)(void))logend_bind, METH_FASTCALL, logend_bind_doc},
    {NULL, NULL, 0, NULL},
};

static PyObject *logend_get_end_metadata(LogEndObject *self, void *closure)
{
    if (self->end_metadata == NULL)
        Py_RETURN_NONE;
    return Py_NewRef(self->end_metadata);
}

static int logend_set_object(PyObject **field, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "the attribute cannot be deleted");
        return -1;
    }
    Py_INCREF(value);
    Py_XSETREF(*field, value);
    return 0;
}

static int logend_set_end_metadata(LogEndObject *self, PyObject *value, void *closure)
{
    return logend_set_object(&self->end_metadata, value);
}

static PyObject *logend_get_hw_metadata(LogEndObject *self, void *closure)
{
    if (self->hw_metadata == NULL)
        Py_RETURN_NONE;
    return Py_NewRef(self->hw_metadata);
}

static int logend_set_hw_metadata(LogEndObject *self, PyObject *value, void *closure)
{
    return logend_set_object(&self->hw_metadata, value);
}

static PyGetSetDef logend_getset[] = {
    {"end_metadata", (getter)logend_get_end_metadata, (setter)logend_set_end_metadata,
     "the log end offset's LogOffsetMetadata", NULL},
    {"hw_metadata", (getter)logend_get_hw_metadata, (setter)logend_set_hw_metadata,
     "the high watermark's cached LogOffsetMetadata, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef logend_members[] = {
    {"high_watermark", T_LONGLONG, offsetof(LogEndObject, high_watermark), 0, "the high watermark"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject LogEndType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_kernel.LogEnd",
    .tp_basicsize = sizeof(LogEndObject),
    .tp_dealloc = (destructor)logend_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)logend_traverse,
    .tp_clear = (inquiry)logend_clear,
    .tp_doc = "The end of a partition log and its common client append (mini_broker/log/log_end.py's LogEnd, "
              "compiled).",
    .tp_methods = logend_methods,
    .tp_members = logend_members,
    .tp_getset = logend_getset,
};

PyDoc_STRVAR(log_end_doc,
"log_end(make_metadata, make_info, make_batch, crc32c, /) -> LogEnd\n\n"
"Reference: mini_broker.log.log_end.LogEnd: a log's end, empty (no metadata, high watermark 0, no tail, not\n"
"configured, no producer state), with the constructors of LogOffsetMetadata, LogAppendInfo and BatchMetadata\n"
"(positional, in field order) and the CRC-32C function the batch check calls.");

static PyObject *k_log_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "log_end takes 4 arguments");
        return NULL;
    }
    if (pne_strings() < 0)
        return NULL;
    if (logend_str_acquire == NULL) {
        logend_str_acquire = PyUnicode_InternFromString("acquire");
        logend_str_release = PyUnicode_InternFromString("release");
        logend_str_map_end_offset = PyUnicode_InternFromString("map_end_offset");
        logend_str_update_map_end_offset = PyUnicode_InternFromString("update_map_end_offset");
        if (logend_str_acquire == NULL || logend_str_release == NULL || logend_str_map_end_offset == NULL ||
            logend_str_update_map_end_offset == NULL)
            return NULL;
    }
    LogEndObject *o = PyObject_GC_New(LogEndObject, &LogEndType);
    if (o == NULL)
        return NULL;
#define LOGEND_NULL(f) o->f = NULL;
    LOGEND_OBJECTS(LOGEND_NULL)
#undef LOGEND_NULL
    o->high_watermark = 0;
    o->configured = o->log_append_time = o->compacted = o->closed = 0;
    o->max_message_bytes = o->before_max_ms = o->after_max_ms = o->flush_interval_messages = 0;
    o->make_metadata = Py_NewRef(args[0]);
    o->make_info = Py_NewRef(args[1]);
    o->make_batch = Py_NewRef(args[2]);
    o->crc32c = Py_NewRef(args[3]);
    o->hw_metadata = Py_NewRef(Py_None);
    PyObject_GC_Track(o);
    return (PyObject *)o;
}
