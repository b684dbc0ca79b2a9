/* The log's common append (a client's one batch, mini_broker/log/unified_log.py's Log._append_client_batch), compiled
 * where it owns or checks state in one call:
 *  - SegmentTail (segment_tail below), the append state of a segment and its append of one batch;
 *  - producer_next_entry, the producer state's check that a batch is the next one of its known producer.
 * Included by _kernel.c (it uses the IndexColumns type).
 *
 * SegmentTail: the append state of one log segment (its size, the bytes since its last index entry, its max
 * timestamp and that timestamp's offset, the index room left, the timestamp its age is counted from) and the
 * segment's common append of one batch in one call: the roll check, the write, the index entries.
 * mini_broker/log/segment_tail.py is the reference of the state; mini_broker/log/log_segment.py's should_roll,
 * append and _index_batch are the reference of append_one, which declines (returns -1, nothing done) whenever they
 * could do anything else than write and index the batch: a roll, a full index, an age not yet known. */

typedef struct {
    PyObject_HEAD
    int fd;
    int has_rolling_base;
    long long base_offset;
    long long size;
    long long bytes_since_last_index_entry;
    long long max_timestamp_so_far;
    long long offset_of_max_timestamp_so_far;
    long long index_room;
    long long rolling_based_timestamp;
    /* the config's values (configure) */
    long long segment_bytes;
    long long roll_ms; /* segment.ms less the segment's jitter */
    long long index_interval_bytes;
    /* the segment's indexes (OffsetIndex, TimeIndex) and their entries */
    PyObject *offset_index, *time_index;
    IdxColsObject *offset_cols, *time_cols;
    Py_ssize_t offset_max_entries, time_max_entries;
} SegTailObject;

static PyObject *segtail_str_write_at, *segtail_str_write_pending, *segtail_str_append, *segtail_str_maybe_append;

static void segtail_dealloc(SegTailObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->offset_index);
    Py_CLEAR(self->time_index);
    Py_CLEAR(self->offset_cols);
    Py_CLEAR(self->time_cols);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int segtail_traverse(SegTailObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->offset_index);
    Py_VISIT(self->time_index);
    Py_VISIT(self->offset_cols);
    Py_VISIT(self->time_cols);
    return 0;
}

static int segtail_clear(SegTailObject *self)
{
    Py_CLEAR(self->offset_index);
    Py_CLEAR(self->time_index);
    Py_CLEAR(self->offset_cols);
    Py_CLEAR(self->time_cols);
    return 0;
}

/* the index's write_at attribute (the entry count at which its pending entries are written); -1 with an error */
static Py_ssize_t segtail_write_at(PyObject *index)
{
    PyObject *v = PyObject_GetAttr(index, segtail_str_write_at);
    if (v == NULL)
        return -1;
    Py_ssize_t n = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return n;
}

static int segtail_call_void(PyObject *index, PyObject *name, PyObject *a, PyObject *b)
{
    PyObject *r = a == NULL ? PyObject_CallMethodNoArgs(index, name) : PyObject_CallMethodObjArgs(index, name, a, b, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* OffsetIndex.append(offset, position) / TimeIndex.maybe_append(timestamp, offset): the rule on the columns, the
 * pending entries written when the index says so; the index's own method (which raises) when the entry goes backwards */
static int segtail_index_entry(PyObject *index, IdxColsObject *cols, Py_ssize_t max_entries, int newer, long long base,
                               long long first, long long second_abs, PyObject *method)
{
    long long second = newer ? second_abs - base : second_abs;
    long long key = newer ? first : first - base; /* the offset index's first column is relative */
    Py_ssize_t len = cols->len;
    if (newer) {
        if (key <= (len ? idxcols_get(cols, 0, len - 1) : -1) || len >= max_entries)
            return 0;
        if (len && second < idxcols_get(cols, 1, len - 1))
            goto reference;
    } else {
        if (len && key <= idxcols_get(cols, 0, len - 1))
            goto reference;
        if (len >= max_entries)
            return 0;
    }
    if ((cols->w[0] == 4 && (key < INT32_MIN || key > INT32_MAX)) ||
        (cols->w[1] == 4 && (second < INT32_MIN || second > INT32_MAX)))
        goto reference;
    Py_ssize_t write_at = segtail_write_at(index);
    if (write_at == -1 && PyErr_Occurred())
        return -1;
    if (idxcols_push(cols, key, second) < 0)
        return -1;
    if (cols->len >= write_at)
        return segtail_call_void(index, segtail_str_write_pending, NULL, NULL);
    return 0;
reference: {
    PyObject *a = PyLong_FromLongLong(first), *b = PyLong_FromLongLong(second_abs);
    int rc = a == NULL || b == NULL ? -1 : segtail_call_void(index, method, a, b);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return rc;
}
}

/* LogSegment._index_batch */
static int segtail_index_batch(SegTailObject *self, long long position, long long last_offset, long long max_timestamp,
                               long long size)
{
    if (max_timestamp > self->max_timestamp_so_far) {
        self->max_timestamp_so_far = max_timestamp;
        self->offset_of_max_timestamp_so_far = last_offset;
    }
    if (self->bytes_since_last_index_entry > self->index_interval_bytes) {
        if (segtail_index_entry(self->offset_index, self->offset_cols, self->offset_max_entries, 0, self->base_offset,
                                last_offset, position, segtail_str_append) < 0)
            return -1;
        if (segtail_index_entry(self->time_index, self->time_cols, self->time_max_entries, 1, self->base_offset,
                                self->max_timestamp_so_far, self->offset_of_max_timestamp_so_far,
                                segtail_str_maybe_append) < 0)
            return -1;
        self->index_room -= 1;
        self->bytes_since_last_index_entry = 0;
    }
    self->bytes_since_last_index_entry += size;
    return 0;
}

PyDoc_STRVAR(segtail_append_one_doc,
"append_one(data, last_offset, max_timestamp, roll_max_timestamp, /) -> int\n\n"
"The append of one batch (data: its bytes, offsets assigned; its last offset and max timestamp; the append's max\n"
"timestamp for the roll check) when LogSegment.should_roll would not roll and nothing unusual is due: written and\n"
"indexed as LogSegment.append does, the new size returned. -1, nothing done, otherwise (the caller runs the\n"
"reference: should_roll, the roll, LogSegment.append).");

/* should_roll's rules for an append of size bytes whose last offset and max timestamp are given: 1 when none would
 * roll and the segment or the indexes need not be asked (append_one may write), 0 when append_one declines */
static int segtail_accepts(SegTailObject *self, long long size, long long last_offset, long long roll_max_timestamp)
{
    long long physical = self->size;
    if (physical > self->segment_bytes - size || self->index_room <= 0 || self->fd < 0 ||
        !(last_offset - self->base_offset >= 0 && last_offset - self->base_offset <= INT32_MAX))
        return 0;
    if (physical > 0) {
        if (!self->has_rolling_base || self->rolling_based_timestamp < 0)
            return 0;
        if (roll_max_timestamp - self->rolling_based_timestamp > self->roll_ms)
            return 0;
    }
    return 1;
}

/* LogSegment.append of one batch that segtail_accepts accepted: written (GIL released, as os.write) and indexed; the
 * new size, -1 with an error (an OSError from the write; the file cut back to its last whole batch) */
static long long segtail_write_one(SegTailObject *self, const char *p, Py_ssize_t len, long long last_offset,
                                   long long max_timestamp)
{
    long long size = (long long)len, physical = self->size;
    if (physical == 0) {
        self->has_rolling_base = 1;
        self->rolling_based_timestamp = max_timestamp;
    }
    Py_ssize_t left = len;
    while (left > 0) {
        ssize_t n;
        Py_BEGIN_ALLOW_THREADS
        n = write(self->fd, p, (size_t)left);
        Py_END_ALLOW_THREADS
        if (n < 0) {
            if (errno == EINTR && PyErr_CheckSignals() == 0)
                continue;
            if (!PyErr_Occurred())
                PyErr_SetFromErrno(PyExc_OSError);
            /* as LogSegment.discard_partial_write: no byte of the failed batch stays behind */
            (void)ftruncate(self->fd, (off_t)physical);
            return -1;
        }
        p += n;
        left -= n;
    }
    if (segtail_index_batch(self, physical, last_offset, max_timestamp, size) < 0)
        return -1;
    self->size = physical + size;
    return self->size;
}

static PyObject *segtail_append_one(SegTailObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "append_one takes 4 arguments");
        return NULL;
    }
    long long last_offset = PyLong_AsLongLong(args[1]);
    if (last_offset == -1 && PyErr_Occurred())
        return NULL;
    long long max_timestamp = PyLong_AsLongLong(args[2]);
    if (max_timestamp == -1 && PyErr_Occurred())
        return NULL;
    long long roll_max_timestamp = PyLong_AsLongLong(args[3]);
    if (roll_max_timestamp == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    long long size = -1;
    /* should_roll's rules: declined when any would roll, or when it would ask the segment or the indexes */
    if (segtail_accepts(self, (long long)view.len, last_offset, roll_max_timestamp))
        size = segtail_write_one(self, (const char *)view.buf, view.len, last_offset, max_timestamp);
    PyBuffer_Release(&view);
    if (size < 0 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLongLong(size);
}

PyDoc_STRVAR(segtail_configure_doc,
"configure(segment_bytes, roll_ms, index_interval_bytes, /) -> None\n\n"
"The config's values the append reads: segment.bytes, segment.ms less the segment's jitter, index.interval.bytes.");

static PyObject *segtail_configure(SegTailObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "configure takes 3 arguments");
        return NULL;
    }
    long long v[3];
    for (int i = 0; i < 3; i++) {
        v[i] = PyLong_AsLongLong(args[i]);
        if (v[i] == -1 && PyErr_Occurred())
            return NULL;
    }
    self->segment_bytes = v[0];
    self->roll_ms = v[1];
    self->index_interval_bytes = v[2];
    Py_RETURN_NONE;
}

static PyObject *segtail_close(SegTailObject *self, PyObject *Py_UNUSED(ignored))
{
    self->fd = -1;
    Py_RETURN_NONE;
}

static PyMethodDef segtail_methods[] = {
    {"append_one", (PyCFunction)(void (*)(void))segtail_append_one, METH_FASTCALL, segtail_append_one_doc},
    {"configure", (PyCFunction)(void (*)(void))segtail_configure, METH_FASTCALL, segtail_configure_doc},
    {"close", (PyCFunction)segtail_close, METH_NOARGS, "close() -> None\n\nThe file is closed: append_one declines."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef segtail_members[] = {
    {"size", T_LONGLONG, offsetof(SegTailObject, size), 0, NULL},
    {"bytes_since_last_index_entry", T_LONGLONG, offsetof(SegTailObject, bytes_since_last_index_entry), 0, NULL},
    {"max_timestamp_so_far", T_LONGLONG, offsetof(SegTailObject, max_timestamp_so_far), 0, NULL},
    {"offset_of_max_timestamp_so_far", T_LONGLONG, offsetof(SegTailObject, offset_of_max_timestamp_so_far), 0, NULL},
    {"index_room", T_LONGLONG, offsetof(SegTailObject, index_room), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *segtail_get_rolling(SegTailObject *self, void *closure)
{
    if (!self->has_rolling_base)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(self->rolling_based_timestamp);
}

static int segtail_set_rolling(SegTailObject *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "rolling_based_timestamp cannot be deleted");
        return -1;
    }
    if (value == Py_None) {
        self->has_rolling_base = 0;
        self->rolling_based_timestamp = 0;
        return 0;
    }
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred())
        return -1;
    self->has_rolling_base = 1;
    self->rolling_based_timestamp = v;
    return 0;
}

static PyGetSetDef segtail_getset[] = {
    {"rolling_based_timestamp", (getter)segtail_get_rolling, (setter)segtail_set_rolling, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SegTailType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_kernel.SegmentTail",
    .tp_basicsize = sizeof(SegTailObject),
    .tp_dealloc = (destructor)segtail_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)segtail_traverse,
    .tp_clear = (inquiry)segtail_clear,
    .tp_doc = "A log segment's append state and its common append (mini_broker/log/segment_tail.py's SegmentTail, "
              "compiled).",
    .tp_methods = segtail_methods,
    .tp_members = segtail_members,
    .tp_getset = segtail_getset,
};

PyDoc_STRVAR(segment_tail_doc,
"segment_tail(fd, base_offset, offset_index, offset_columns, time_index, time_columns, /) -> SegmentTail\n\n"
"Reference: mini_broker.log.segment_tail.SegmentTail: the append state of the segment at base_offset whose .log file\n"
"is fd, empty (size 0, no timestamp), with its offset and time indexes and their entries (the kernel's IndexColumns).");

static PyObject *k_segment_tail(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "segment_tail takes 6 arguments");
        return NULL;
    }
    if (Py_TYPE(args[3]) != &IdxColsType || Py_TYPE(args[5]) != &IdxColsType) {
        PyErr_SetString(PyExc_TypeError, "segment_tail: the indexes' entries are the kernel's IndexColumns");
        return NULL;
    }
    long fd = PyLong_AsLong(args[0]);
    if (fd == -1 && PyErr_Occurred())
        return NULL;
    long long base = PyLong_AsLongLong(args[1]);
    if (base == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t max_entries[2];
    for (int i = 0; i < 2; i++) {
        PyObject *v = PyObject_GetAttrString(args[2 + 2 * i], "max_entries");
        if (v == NULL)
            return NULL;
        max_entries[i] = PyLong_AsSsize_t(v);
        Py_DECREF(v);
        if (max_entries[i] == -1 && PyErr_Occurred())
            return NULL;
    }
    if (segtail_str_write_at == NULL) {
        segtail_str_write_at = PyUnicode_InternFromString("write_at");
        segtail_str_write_pending = PyUnicode_InternFromString("write_pending");
        segtail_str_append = PyUnicode_InternFromString("append");
        segtail_str_maybe_append = PyUnicode_InternFromString("maybe_append");
        if (segtail_str_write_at == NULL || segtail_str_write_pending == NULL || segtail_str_append == NULL ||
            segtail_str_maybe_append == NULL)
            return NULL;
    }
    if (PyType_Ready(&SegTailType) < 0)
        return NULL;
    SegTailObject *o = PyObject_GC_New(SegTailObject, &SegTailType);
    if (o == NULL)
        return NULL;
    o->fd = (int)fd;
    o->has_rolling_base = 0;
    o->base_offset = base;
    o->size = 0;
    o->bytes_since_last_index_entry = 0;
    o->max_timestamp_so_far = -1;
    o->offset_of_max_timestamp_so_far = base;
    o->index_room = 0;
    o->rolling_based_timestamp = 0;
    o->segment_bytes = o->roll_ms = o->index_interval_bytes = 0;
    Py_INCREF(args[2]);
    o->offset_index = args[2];
    Py_INCREF(args[4]);
    o->time_index = args[4];
    Py_INCREF(args[3]);
    o->offset_cols = (IdxColsObject *)args[3];
    Py_INCREF(args[5]);
    o->time_cols = (IdxColsObject *)args[5];
    o->offset_max_entries = max_entries[0];
    o->time_max_entries = max_entries[1];
    PyObject_GC_Track(o);
    return (PyObject *)o;
}


/* ---- the producer state's next batch -------------------------------------------------------------------------- */

static PyObject *pne_str_batch_metadata, *pne_str_producer_epoch, *pne_str_current_txn_first_offset;
static PyObject *pne_str_append, *pne_str_last_timestamp, *pne_str_producer_id;

/* the attribute names the producer-state functions read, interned once; -1 with an error */
static int pne_strings(void)
{
    if (pne_str_producer_id != NULL)
        return 0;
    pne_str_batch_metadata = PyUnicode_InternFromString("batch_metadata");
    pne_str_producer_epoch = PyUnicode_InternFromString("producer_epoch");
    pne_str_current_txn_first_offset = PyUnicode_InternFromString("current_txn_first_offset");
    pne_str_append = PyUnicode_InternFromString("append");
    pne_str_last_timestamp = PyUnicode_InternFromString("last_timestamp");
    pne_str_producer_id = PyUnicode_InternFromString("producer_id");
    return pne_str_batch_metadata == NULL || pne_str_producer_epoch == NULL || pne_str_current_txn_first_offset == NULL ||
           pne_str_append == NULL || pne_str_last_timestamp == NULL || pne_str_producer_id == NULL ? -1 : 0;
}

/* a field of a BatchMetadata (a tuple: last_seq, last_offset, offset_delta, timestamp); -1 with an error */
static int pne_field(PyObject *batch, Py_ssize_t i, long long *out)
{
    if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) <= i) {
        PyErr_SetString(PyExc_TypeError, "producer_next_entry: a cached batch is a BatchMetadata");
        return -1;
    }
    *out = PyLong_AsLongLong(PyTuple_GET_ITEM(batch, i));
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

#define PNE_INT_MAX 2147483647LL

/* ProducerStateManager.next_append_entry on producers (the key: the producer id as an int): a new reference to the
 * entry, or to None; NULL with an error */
static PyObject *pne_next_entry(PyObject *producers, PyObject *key, long long producer_id, long long epoch,
                                long long first_seq, long long delta, int is_transactional, int is_control)
{
    PyObject *entry = PyDict_GetItemWithError(producers, key); /* borrowed */
    if (entry == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if (producer_id < 0)
        Py_RETURN_NONE;
    PyObject *cached = NULL, *v = NULL, *it = NULL, *b = NULL;
    PyObject *result = Py_None;
    long long entry_epoch;
    if ((cached = PyObject_GetAttr(entry, pne_str_batch_metadata)) == NULL ||
        (v = PyObject_GetAttr(entry, pne_str_producer_epoch)) == NULL)
        goto error;
    entry_epoch = PyLong_AsLongLong(v);
    Py_CLEAR(v);
    if (entry_epoch == -1 && PyErr_Occurred())
        goto error;
    Py_ssize_t n = PyObject_Size(cached);
    if (n < 0)
        goto error;
    if (epoch != entry_epoch || n == 0 || is_control)
        goto done;
    if ((v = PyObject_GetAttr(entry, pne_str_current_txn_first_offset)) == NULL)
        goto error;
    int in_txn = v != Py_None;
    Py_CLEAR(v);
    if (in_txn != is_transactional)
        goto done; /* starts a transaction, or a non-transactional batch inside one */
    long long last_seq;
    if ((b = PySequence_GetItem(cached, n - 1)) == NULL || pne_field(b, 0, &last_seq) < 0)
        goto error;
    Py_CLEAR(b);
    /* in_sequence */
    if (!(first_seq == last_seq + 1 || (first_seq == 0 && last_seq == PNE_INT_MAX)))
        goto done;
    /* find_duplicate_batch(epoch, first_seq, next_last_sequence(first_seq, delta)) (the epoch is the entry's) */
    long long new_last = first_seq < 0 ? -1 : ((first_seq + delta) & PNE_INT_MAX);
    if ((it = PyObject_GetIter(cached)) == NULL)
        goto error;
    while ((b = PyIter_Next(it)) != NULL) {
        long long b_last, b_delta;
        if (pne_field(b, 0, &b_last) < 0 || pne_field(b, 2, &b_delta) < 0)
            goto error;
        Py_CLEAR(b);
        /* BatchMetadata.first_seq: decrement_sequence(last_seq, offset_delta) */
        long long b_first = b_last < b_delta ? PNE_INT_MAX - (b_delta - b_last) + 1 : b_last - b_delta;
        if (b_last == new_last && b_first == first_seq)
            goto done; /* a duplicate */
    }
    if (PyErr_Occurred())
        goto error;
    result = entry;
done:
    Py_XDECREF(it);
    Py_XDECREF(cached);
    Py_INCREF(result);
    return result;
error:
    Py_XDECREF(b);
    Py_XDECREF(v);
    Py_XDECREF(it);
    Py_XDECREF(cached);
    return NULL;
}

PyDoc_STRVAR(producer_next_entry_doc,
"producer_next_entry(producers, producer_id, epoch, first_seq, delta, is_transactional, is_control, /) -> entry | None\n\n"
"Reference: mini_broker.producer_state.producer_state_manager.ProducerStateManager.next_append_entry on its producers\n"
"(producer id -> ProducerStateEntry): the entry of the batch's producer when the batch is its next one (same epoch,\n"
"the sequence right after its last batch, not a duplicate of a cached one, the transaction state unchanged); None\n"
"otherwise. Changes nothing.");

static PyObject *k_producer_next_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "producer_next_entry takes 7 arguments");
        return NULL;
    }
    if (!PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "producer_next_entry: producers is a dict");
        return NULL;
    }
    if (pne_strings() < 0)
        return NULL;
    long long producer_id = PyLong_AsLongLong(args[1]), epoch, first_seq, delta;
    if (producer_id == -1 && PyErr_Occurred())
        return NULL;
    if ((epoch = PyLong_AsLongLong(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if ((first_seq = PyLong_AsLongLong(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    if ((delta = PyLong_AsLongLong(args[4])) == -1 && PyErr_Occurred())
        return NULL;
    int is_transactional = PyObject_IsTrue(args[5]);
    if (is_transactional < 0)
        return NULL;
    int is_control = PyObject_IsTrue(args[6]);
    if (is_control < 0)
        return NULL;
    return pne_next_entry(args[0], args[1], producer_id, epoch, first_seq, delta, is_transactional, is_control);
}

static int pne_add_next(PyObject *producers, PyObject *entry, long long first_seq, long long delta,
                        PyObject *delta_obj, PyObject *max_timestamp, PyObject *last_offset, PyObject *make_batch);

PyDoc_STRVAR(producer_add_next_doc,
"producer_add_next(producers, entry, first_seq, delta, max_timestamp, last_offset, make_batch, /) -> None\n\n"
"Reference: the body of mini_broker.producer_state.producer_state_manager.ProducerStateManager.complete_next_append\n"
"under its lock, but for the map end offset: entry.add_batch(entry.producer_epoch, next_last_sequence(first_seq,\n"
"delta), last_offset, delta, max_timestamp) (make_batch builds the BatchMetadata), then producers[entry.producer_id]\n"
"= entry.");

static PyObject *k_producer_add_next(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "producer_add_next takes 7 arguments");
        return NULL;
    }
    if (!PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "producer_add_next: producers is a dict");
        return NULL;
    }
    if (pne_strings() < 0)
        return NULL;
    long long first_seq = PyLong_AsLongLong(args[2]), delta;
    if (first_seq == -1 && PyErr_Occurred())
        return NULL;
    if ((delta = PyLong_AsLongLong(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    if (pne_add_next(args[0], args[1], first_seq, delta, args[3], args[4], args[5], args[6]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* k_producer_add_next's body (delta_obj: delta as an int); 0, or -1 with an error */
static int pne_add_next(PyObject *producers, PyObject *entry, long long first_seq, long long delta,
                        PyObject *delta_obj, PyObject *max_timestamp, PyObject *last_offset, PyObject *make_batch)
{
    /* next_last_sequence */
    PyObject *last_seq = PyLong_FromLongLong(first_seq < 0 ? -1 : ((first_seq + delta) & PNE_INT_MAX));
    if (last_seq == NULL)
        return -1;
    PyObject *fields[4] = {last_seq, last_offset, delta_obj, max_timestamp};
    PyObject *batch = PyObject_Vectorcall(make_batch, fields, 4, NULL);
    Py_DECREF(last_seq);
    if (batch == NULL)
        return -1;
    PyObject *cached = PyObject_GetAttr(entry, pne_str_batch_metadata), *r = NULL, *pid = NULL;
    if (cached == NULL)
        goto error;
    /* (the deque's bound evicts the oldest of more than NUM_BATCHES_TO_RETAIN) */
    if ((r = PyObject_CallMethodOneArg(cached, pne_str_append, batch)) == NULL)
        goto error;
    if (PyObject_SetAttr(entry, pne_str_last_timestamp, max_timestamp) < 0)
        goto error;
    if ((pid = PyObject_GetAttr(entry, pne_str_producer_id)) == NULL || PyDict_SetItem(producers, pid, entry) < 0)
        goto error;
    Py_DECREF(pid);
    Py_DECREF(r);
    Py_DECREF(cached);
    Py_DECREF(batch);
    return 0;
error:
    Py_XDECREF(pid);
    Py_XDECREF(r);
    Py_XDECREF(cached);
    Py_DECREF(batch);
    return -1;
}
