/* sender_send_round.c.h: the Sender's whole round of produce data in one compiled call, ``sender_send_round``
 * (Sender.send_producer_data: the metadata step, then send_producer_data_reference, its reference in Python):
 * the snapshot, ready, the unknown leaders' metadata requests, the client's readiness of each ready node (its public
 * ``ready`` and ``poll_delay_ms``), drain, the in-flight tracking, the expiry of queued and in-flight batches, the
 * poll timeout, then per node the produce request built and handed to the client's public ``new_client_request`` and
 * ``send``, in the reference's order. Anything unusual is the reference's: a snapshot that is not a MetadataSnapshot
 * or an accumulator whose instance replaces ready, drain, expired_batches or next_expiry_time_ms (a test's wrapper:
 * send_producer_data_reference runs the whole round), expired batches (Sender.fail_expired_batches), an in-flight
 * batch due (Sender.expired_in_flight_batches), a node's batches the kernel does not encode (Sender.send_produce_request).
 *
 * The metadata step is sr_snapshot (ProducerMetadata.retain_topics_and_fetch_snapshot's work, when that is the
 * metadata's method), a request's completion callback a ProduceCallback, and SenderIteration (below) is Sender.run_once
 * around the round.
 *
 * Uses sender_round (accumulator_ready, accumulator_drain, sender_track_in_flight, accumulator_expired: called
 * as C functions, the same calls RecordAccumulator.ready / drain / expired_batches make), producer_request
 * (drained_request) and slot_access (cached attribute reads, plain ints). Reads only public attributes of the Sender,
 * its accumulator, its metrics and its transaction manager. */

enum { SR_METADATA, SR_ACCUMULATOR, SR_CLIENT, SR_METRICS, SR_TM, SR_ACKS, SR_REQUEST_TIMEOUT, SR_MAX_REQUEST,
       SR_ORDER, SR_IN_FLIGHT, SR_TOPIC_ITEMS, SR_LINGER, SR_ADAPTIVE, SR_DELIVERY_TIMEOUT, SR_NEXT_EXPIRY,
       SR_RETAIN, SR_REFERENCE, SR_ADD, SR_UPDATE_FOR_TOPIC, SR_READY, SR_POLL_DELAY, SR_PREPARE, SR_MUTE,
       SR_EXPIRED_IN_FLIGHT, SR_FAIL_EXPIRED, SR_TID, SR_SEND_PRODUCE, SR_NEW_REQUEST, SR_SEND, SR_REQUESTS_SENT,
       SR_BATCHES_SENT, SR_RECORDS_SENT, SR_BYTES_SENT, SR_OLDEST, SR_DRAIN, SR_EXPIRED_BATCHES, SR_NEXT_EXPIRY_TIME,
       SR_KERNEL, SR_HANDLE, SR_RETAIN_TOPICS, SR_INDEX, SR_CLUSTER, SR_FETCH_SNAPSHOT, SR_COUNT };
static const char *const send_round_names[SR_COUNT] = {
    "metadata", "accumulator", "client", "metrics", "transaction_manager", "acks", "request_timeout_ms",
    "max_request_size", "guarantee_message_order", "in_flight_batches", "topic_items", "linger_ms",
    "adaptive_partitioning", "delivery_timeout_ms", "next_batch_expiry_ms", "retain_topics_and_fetch_snapshot",
    "send_producer_data_reference", "add", "request_update_for_topic", "ready", "poll_delay_ms", "prepare_for_drain",
    "mute_partition", "expired_in_flight_batches", "fail_expired_batches", "transactional_id", "send_produce_request",
    "new_client_request", "send", "requests_sent", "batches_sent", "records_sent", "bytes_sent",
    "oldest_allowed_version", "drain", "expired_batches", "next_expiry_time_ms", "kernel", "handle_produce_response",
    "retain_topics", "index", "cluster", "fetch_metadata_snapshot",
};
static PyObject *srattr[SR_COUNT];

/* ---- a produce request's completion callback: partial(handle_produce_response, reference, SUCCEEDED, sender,
 * batches) without functools.partial's (its keyword dict, its argument array on each call): ProduceCallback. Made by
 * the round below when _native.kernel.handle_produce_response is this kernel's own function; called with the
 * ClientResponse, it is that function's call with the four values first. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *values[4]; /* reference, SUCCEEDED, the Sender, the batches by partition */
} ProduceCallbackObject;

static PyObject *produce_callback_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ProduceCallbackObject *self = (ProduceCallbackObject *)op;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "a produce request's callback takes the response alone");
        return NULL;
    }
    PyObject *call[5] = {self->values[0], self->values[1], self->values[2], self->values[3], args[0]};
    return k_handle_produce_response(NULL, call, 5);
}

static int produce_callback_traverse(ProduceCallbackObject *self, visitproc visit, void *arg)
{
    for (int i = 0; i < 4; i++)
        Py_VISIT(self->values[i]);
    return 0;
}

static int produce_callback_clear(ProduceCallbackObject *self)
{
    for (int i = 0; i < 4; i++)
        Py_CLEAR(self->values[i]);
    return 0;
}

static void produce_callback_dealloc(ProduceCallbackObject *self)
{
    PyObject_GC_UnTrack(self);
    produce_callback_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ProduceCallbackType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ProduceCallback",
    .tp_basicsize = sizeof(ProduceCallbackObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A produce request's completion callback: handle_produce_response(reference, SUCCEEDED, sender, batches, "
              "response) (reference: functools.partial of it).",
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ProduceCallbackObject, vectorcall),
    .tp_traverse = (traverseproc)produce_callback_traverse,
    .tp_clear = (inquiry)produce_callback_clear,
    .tp_dealloc = (destructor)produce_callback_dealloc,
};

/* The callback (new reference), NULL with an exception */
static PyObject *produce_callback_new(PyObject *reference, PyObject *succeeded, PyObject *sender, PyObject *batches)
{
    ProduceCallbackObject *self = PyObject_GC_New(ProduceCallbackObject, &ProduceCallbackType);
    if (self == NULL)
        return NULL;
    self->vectorcall = produce_callback_vectorcall;
    self->values[0] = Py_NewRef(reference);
    self->values[1] = Py_NewRef(succeeded);
    self->values[2] = Py_NewRef(sender);
    self->values[3] = Py_NewRef(batches);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static slot_cache srcache[SR_COUNT];
static PyObject *send_round_kwnames = NULL; /* ("oldest_allowed_version",) */
static PyObject *send_round_three = NULL;   /* 3: the oldest version of a transactional produce request */

static int send_round_init(void)
{
    if (send_round_kwnames != NULL)
        return 0;
    for (int i = 0; i < SR_COUNT; i++) {
        if (srattr[i] == NULL && (srattr[i] = PyUnicode_InternFromString(send_round_names[i])) == NULL)
            return -1;
    }
    if (PyType_Ready(&ProduceCallbackType) < 0)
        return -1;
    if (round_init() < 0)
        return -1;
    if (send_round_three == NULL && (send_round_three = PyLong_FromLong(3)) == NULL)
        return -1;
    send_round_kwnames = PyTuple_Pack(1, srattr[SR_OLDEST]);
    return send_round_kwnames == NULL ? -1 : 0;
}

static inline PyObject *sr_get(PyObject *obj, int a)
{
    return cached_get(obj, srattr[a], &srcache[a]);
}

/* module.attr (new reference), NULL with an exception: from a plain module's dict (no attribute of the module type
 * has these names), else by name (a module's __getattr__, another object) */
static PyObject *sr_module_get_name(PyObject *module, PyObject *name);

static PyObject *sr_module_get(PyObject *module, int a)
{
    return sr_module_get_name(module, srattr[a]);
}

/* module.name (new reference) as sr_module_get, for a name of another table */
static PyObject *sr_module_get_name(PyObject *module, PyObject *name)
{
    if (PyModule_CheckExact(module)) {
        PyObject *v = PyDict_GetItemWithError(PyModule_GetDict(module), name);
        if (v != NULL)
            return Py_NewRef(v);
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(module, name);
}

/* obj.attr as an int of 64 bits: 0, or -1 with an exception */
static int sr_int(PyObject *obj, int a, int64_t *out)
{
    int rc = get_int_attr(obj, srattr[a], &srcache[a], out);
    if (rc == 1) {
        PyErr_Format(PyExc_TypeError, "%s is not an int of 64 bits", send_round_names[a]);
        return -1;
    }
    return rc;
}

/* obj.method(*args) for a method named by srattr[a], the result dropped: 0, or -1 with an exception */
static int sr_call(PyObject *obj, int a, PyObject *arg1, PyObject *arg2)
{
    PyObject *args[3] = {obj, arg1, arg2};
    PyObject *got = PyObject_VectorcallMethod(srattr[a], args, (arg1 == NULL ? 1 : arg2 == NULL ? 2 : 3) |
                                              PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_XDECREF(got);
    return got == NULL ? -1 : 0;
}

/* metrics.<counter> += by: 0, or -1 with an exception */
static int sr_count(PyObject *metrics, int a, int64_t by)
{
    int64_t v;
    if (sr_int(metrics, a, &v) < 0)
        return -1;
    PyObject *n = PyLong_FromLongLong(v + by);
    if (n == NULL)
        return -1;
    int rc = cached_set(metrics, srattr[a], &srcache[a], n);
    Py_DECREF(n);
    return rc;
}

/* One node's produce request (Sender.send_produce_request's common case): 0, or -1 with an exception */
static int send_round_request(PyObject *sender, PyObject *client, PyObject *metrics, PyObject *tm, PyObject *crc,
                              PyObject *completion, PyObject *acks, PyObject *timeout, int64_t acks_value,
                              PyObject *node_id, PyObject *batches, PyObject *now)
{
    PyObject *tid = tm == Py_None ? Py_NewRef(Py_None) : sr_get(tm, SR_TID);
    if (tid == NULL)
        return -1;
    PyObject *dargs[5] = {batches, crc, tid, acks, timeout};
    PyObject *drained = k_drained_request(NULL, dargs, 5);
    Py_DECREF(tid);
    if (drained == NULL)
        return -1;
    if (drained == Py_None) { /* a batch the kernel does not encode: the reference builds the request */
        Py_DECREF(drained);
        PyObject *args[4] = {sender, node_id, batches, now};
        PyObject *got = PyObject_VectorcallMethod(srattr[SR_SEND_PRODUCE], args, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                  NULL);
        Py_XDECREF(got);
        return got == NULL ? -1 : 0;
    }
    /* (body, by_tp, records, size), as drained_request builds it */
    PyObject *body = PyTuple_GET_ITEM(drained, 0), *by_tp = PyTuple_GET_ITEM(drained, 1);
    int64_t records = 0, size = 0;
    PyObject *node_str = NULL, *callback = NULL, *request = NULL, *body_tid = NULL;
    int rc = -1;
    if (!compact_int(PyTuple_GET_ITEM(drained, 2), &records) &&
        take_int(Py_NewRef(PyTuple_GET_ITEM(drained, 2)), &records) != 0)
        goto done;
    if (!compact_int(PyTuple_GET_ITEM(drained, 3), &size) &&
        take_int(Py_NewRef(PyTuple_GET_ITEM(drained, 3)), &size) != 0)
        goto done;
    if ((node_str = id_string(node_id)) == NULL)
        goto done;
    /* partial(_native.kernel.handle_produce_response, reference, SUCCEEDED, sender, by_tp): the kernel as of now */
    {
        PyObject *kernel = sr_module_get(PyTuple_GET_ITEM(completion, 0), SR_KERNEL);
        PyObject *handle = kernel == NULL ? NULL : sr_module_get(kernel, SR_HANDLE);
        Py_XDECREF(kernel);
        if (handle == NULL)
            goto done;
        PyObject *pargs[5] = {handle, PyTuple_GET_ITEM(completion, 2), PyTuple_GET_ITEM(completion, 3), sender, by_tp};
        /* this kernel's own function (not a test's spy): its callback without functools.partial */
        callback = PyCFunction_Check(handle) && PyCFunction_GET_FUNCTION(handle) == (PyCFunction)(void (*)(void))k_handle_produce_response
                   ? produce_callback_new(pargs[1], pargs[2], pargs[3], pargs[4])
                   : PyObject_Vectorcall(PyTuple_GET_ITEM(completion, 1), pargs, 5, NULL);
        Py_DECREF(handle);
    }
    if (callback == NULL)
        goto done;
    /* the transactional id is a field from v3 (the first version of magic v2 batches) */
    static slot_cache body_tid_cache; /* (the body's, not the transaction manager's: a call site of its own) */
    if ((body_tid = cached_get(body, srattr[SR_TID], &body_tid_cache)) == NULL)
        goto done;
    {
        PyObject *args[8] = {client, node_str, body, now, acks_value != 0 ? Py_True : Py_False, timeout, callback,
                             body_tid != Py_None ? send_round_three : Py_None};
        request = PyObject_VectorcallMethod(srattr[SR_NEW_REQUEST], args, 7 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                            send_round_kwnames);
    }
    if (request == NULL)
        goto done;
    if (sr_count(metrics, SR_REQUESTS_SENT, 1) < 0 ||
        sr_count(metrics, SR_BATCHES_SENT, (int64_t)PyList_GET_SIZE(batches)) < 0 ||
        sr_count(metrics, SR_RECORDS_SENT, records) < 0 || sr_count(metrics, SR_BYTES_SENT, size) < 0)
        goto done;
    rc = sr_call(client, SR_SEND, request, now);
done:
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "drained_request's counts are not ints of 64 bits");
    Py_XDECREF(node_str);
    Py_XDECREF(callback);
    Py_XDECREF(request);
    Py_XDECREF(body_tid);
    Py_DECREF(drained);
    return rc;
}

/* Whether obj's instance dict holds `name` (an instance's replacement of a method): 1, 0, or -1 with an exception */
static int sr_instance_has(PyObject *obj, PyObject *name)
{
    PyObject *dict = PyObject_GenericGetDict(obj, NULL);
    if (dict == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int found = PyDict_Check(dict) && PyDict_GET_SIZE(dict) > 0 ? PyDict_Contains(dict, name) : 0;
    Py_DECREF(dict);
    return found;
}

/* The round's metadata step, metadata.retain_topics_and_fetch_snapshot(now) (new reference), NULL with an exception.
 * ``parts``: (ProducerMetadata.retain_topics_and_fetch_snapshot, CLUSTER_ATTRIBUTE, RETAIN_AT_ATTRIBUTE). When that is
 * the metadata's method (its class's, not replaced on the instance), what it does: retain_topics(now) once now has
 * reached the retain-at time (an int slot), the index when its cluster is the current one, else
 * fetch_metadata_snapshot(); else the method's call. */
/* Whether obj's method `name` is `reference` (its class's, found along the MRO, not replaced on the instance), the
 * type last found so remembered in *type and *tag: 1, 0, or -1 with an exception */
static int sr_is_reference(PyObject *obj, PyObject *name, PyObject *reference, PyTypeObject **type, unsigned int *tag)
{
    PyTypeObject *t = Py_TYPE(obj);
    if (*type != t || !type_tag_current(t, *tag)) {
        if (!type_tag_valid(t) || mro_lookup(t, name) != reference)
            return 0;
        *type = t;
        *tag = t->tp_version_tag;
    }
    int replaced = sr_instance_has(obj, name);
    return replaced < 0 ? -1 : !replaced;
}

/* The attribute names given (str: n of them from given[0]) interned into names[] (their caches started anew when a
 * name changes): 0, or -1 with an exception */
static int sr_names_from(PyObject *const *given, PyObject **names, slot_cache *caches, int n)
{
    for (int i = 0; i < n; i++) {
        if (names[i] != NULL && (names[i] == given[i] || PyUnicode_Compare(names[i], given[i]) == 0))
            continue;
        if (PyErr_Occurred())
            return -1;
        PyObject *name = Py_NewRef(given[i]);
        PyUnicode_InternInPlace(&name);
        Py_XSETREF(names[i], name);
        caches[i].type = NULL;
    }
    return 0;
}

static PyObject *sr_snapshot(PyObject *metadata, PyObject *now, int64_t now_ms, PyObject *parts)
{
    static PyObject *names[2];            /* the two attributes' names, interned */
    static slot_cache caches[2];
    static PyTypeObject *reference_type;  /* the type last found to have the reference method, and its tag */
    static unsigned int reference_tag;
    int reference = sr_is_reference(metadata, srattr[SR_RETAIN], PyTuple_GET_ITEM(parts, 0), &reference_type,
                                    &reference_tag);
    if (reference < 0)
        return NULL;
    if (!reference) {
        PyObject *margs[2] = {metadata, now};
        return PyObject_VectorcallMethod(srattr[SR_RETAIN], margs, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    if (sr_names_from(&PyTuple_GET_ITEM(parts, 1), names, caches, 2) < 0)
        return NULL;
    int64_t retain_at;
    int rc = get_int_attr(metadata, names[1], &caches[1], &retain_at);
    if (rc < 0)
        return NULL;
    if (rc == 1 || now_ms >= retain_at) { /* (not a plain int: retain_topics compares it) */
        PyObject *margs[2] = {metadata, now};
        PyObject *r = PyObject_VectorcallMethod(srattr[SR_RETAIN_TOPICS], margs, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    PyObject *index = sr_get(metadata, SR_INDEX);
    if (index == NULL)
        return NULL;
    PyObject *owned;
    PyObject *cluster = cached_read(metadata, names[0], &caches[0], &owned);
    PyObject *of_index = cluster == NULL ? NULL : sr_get(index, SR_CLUSTER);
    int current = of_index == NULL ? -1 : of_index == cluster;
    Py_XDECREF(of_index);
    Py_XDECREF(owned);
    if (current > 0)
        return index;
    Py_DECREF(index);
    if (current < 0)
        return NULL;
    PyObject *margs[1] = {metadata};
    return PyObject_VectorcallMethod(srattr[SR_FETCH_SNAPSHOT], margs, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* Whether the accumulator's instance replaces a method the reference's round calls (a test's wrapper): 1 (then the
 * reference runs the round, calling it), 0, or -1 with an exception */
static int send_round_replaced(PyObject *acc)
{
    PyObject *dict = PyObject_GenericGetDict(acc, NULL);
    if (dict == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int found = 0;
    if (PyDict_Check(dict) && PyDict_GET_SIZE(dict) > 0) {
        const int names[4] = {SR_READY, SR_DRAIN, SR_EXPIRED_BATCHES, SR_NEXT_EXPIRY_TIME};
        for (int i = 0; i < 4 && !found; i++) {
            found = PyDict_Contains(dict, srattr[names[i]]);
            if (found < 0)
                break;
        }
    }
    Py_DECREF(dict);
    return found;
}

/* ---- DrainStamp: IdempotenceManager.prepare_for_drain's common case without its frames ------------------------------
 * DrainStamp(manager, reference, parts): called (batch, tp) by the drain (accumulator_drain's ``prepare``), it is
 * reference(manager, batch, tp) (IdempotenceManager.prepare_for_drain), whose common case it does itself under the
 * manager's lock: a manager that is not transactional, a batch without a sequence, a partition with its entry on the
 * current producer id and epoch and no unresolved sequence, a sequence that does not wrap, and the batch to go last in
 * flight: False for no valid producer id (or a state without one) and for an unresolved partition; else the batch
 * stamped (producer id, epoch, the partition's next sequence, not transactional), the sequence moved on by its record
 * count and the batch tracked in flight (appended unless there), True. Anything else is the reference's, called
 * under the lock (an RLock: it takes it again), nothing changed before. ``parts`` is the manager's drain_parts():
 * (partition entries, unresolved sequences, lock, the producer id and epoch's attribute, the state's attribute, the
 * states without a valid id, NO_PRODUCER_ID, NO_SEQUENCE, INT_MAX). */

enum { DS_TRANSACTIONAL_ID, DS_PRODUCER_ID, DS_EPOCH, DS_BASE_SEQUENCE, DS_PENDING, DS_PRODUCER_ID_AND_EPOCH,
       DS_NEXT_SEQUENCE, DS_IN_FLIGHT, DS_PRODUCER_EPOCH, DS_IS_TRANSACTIONAL, DS_ACQUIRE, DS_RELEASE, DS_COUNT };
static const char *const ds_names[DS_COUNT] = {
    "transactional_id", "producer_id", "epoch", "base_sequence", "pending", "producer_id_and_epoch", "next_sequence",
    "in_flight", "producer_epoch", "is_transactional", "acquire", "release",
};
static PyObject *dsattr[DS_COUNT];

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *manager, *reference, *partitions, *unresolved, *lock, *pid_epoch_name, *state_name, *without_valid_id;
    int64_t no_producer_id, no_sequence, int_max;
    /* the call sites' caches (each reads one type: the manager, a ProducerIdAndEpoch, a batch, an entry) */
    slot_cache c_tid, c_pid_epoch, c_state, c_pid, c_epoch, c_base, c_pending, c_entry_pid_epoch, c_next, c_in_flight,
        c_last_base, c_set_pid, c_set_epoch, c_set_base, c_set_txn, c_set_next;
} DrainStampObject;

/* The common case: 1 (True), 0 (False), 2 (the reference's), or -1 with an exception. Under the lock. */
static int ds_common(DrainStampObject *self, PyObject *batch, PyObject *tp)
{
    PyObject *v = cached_get(self->manager, dsattr[DS_TRANSACTIONAL_ID], &self->c_tid);
    if (v == NULL)
        return -1;
    int transactional = v != Py_None;
    Py_DECREF(v);
    if (transactional)
        return 2;
    int rc = -1;
    int64_t pid, epoch, base, seq;
    PyObject *pid_epoch = cached_get(self->manager, self->pid_epoch_name, &self->c_pid_epoch), *state = NULL;
    PyObject *entry = NULL, *in_flight = NULL;
    if (pid_epoch == NULL)
        return -1;
    if ((rc = get_int_attr(pid_epoch, dsattr[DS_PRODUCER_ID], &self->c_pid, &pid)) != 0
        || (rc = get_int_attr(pid_epoch, dsattr[DS_EPOCH], &self->c_epoch, &epoch)) != 0) {
        rc = rc < 0 ? -1 : 2;
        goto done;
    }
    if ((state = cached_get(self->manager, self->state_name, &self->c_state)) == NULL)
        goto done;
    int invalid = pid == self->no_producer_id ? 1 : PySequence_Contains(self->without_valid_id, state);
    if (invalid != 0) {
        rc = invalid < 0 ? -1 : 0;
        goto done;
    }
    if ((rc = get_int_attr(batch, dsattr[DS_BASE_SEQUENCE], &self->c_base, &base)) != 0 || base != self->no_sequence) {
        rc = rc < 0 ? -1 : 2;
        goto done;
    }
    int unresolved = PyDict_CheckExact(self->unresolved) ? PyDict_Contains(self->unresolved, tp) : -2;
    if (unresolved != 0) {
        rc = unresolved == 1 ? 0 : unresolved == -1 ? -1 : 2;
        goto done;
    }
    entry = PyDict_CheckExact(self->partitions) ? PyDict_GetItemWithError(self->partitions, tp) : NULL;
    if (entry == NULL) {
        rc = PyErr_Occurred() ? -1 : 2;
        goto done;
    }
    Py_INCREF(entry);
    PyObject *of_entry = cached_get(entry, dsattr[DS_PRODUCER_ID_AND_EPOCH], &self->c_entry_pid_epoch);
    if (of_entry == NULL)
        goto done;
    Py_DECREF(of_entry); /* (compared by identity only) */
    if (of_entry != pid_epoch || (rc = get_int_attr(entry, dsattr[DS_NEXT_SEQUENCE], &self->c_next, &seq)) != 0) {
        rc = rc < 0 ? -1 : 2;
        goto done;
    }
    PyObject *pending = cached_get(batch, dsattr[DS_PENDING], &self->c_pending);
    Py_ssize_t count = pending == NULL ? -1 : PyObject_Size(pending);
    Py_XDECREF(pending);
    if (count < 0)
        goto done;
    if (seq > self->int_max - (int64_t)count) { /* (the sequence wraps: increment_sequence, the reference's) */
        rc = 2;
        goto done;
    }
    /* add_in_flight's common case: the batch goes last (nothing in flight, or the last's base sequence <= seq) */
    if ((in_flight = cached_get(entry, dsattr[DS_IN_FLIGHT], &self->c_in_flight)) == NULL)
        goto done;
    if (!PyList_CheckExact(in_flight)) {
        rc = 2;
        goto done;
    }
    Py_ssize_t n = PyList_GET_SIZE(in_flight);
    if (n > 0) {
        int64_t last;
        if ((rc = get_int_attr(PyList_GET_ITEM(in_flight, n - 1), dsattr[DS_BASE_SEQUENCE], &self->c_last_base,
                               &last)) != 0 || last > seq) {
            rc = rc < 0 ? -1 : 2;
            goto done;
        }
    }
    int tracked = n > 0 ? PySequence_Contains(in_flight, batch) : 0;
    if (tracked < 0) {
        rc = -1;
        goto done;
    }
    /* the stamp: batch.producer_id, producer_epoch, base_sequence, is_transactional; the entry's next sequence */
    PyObject *values[5] = {PyLong_FromLongLong(pid), PyLong_FromLongLong(epoch), PyLong_FromLongLong(seq),
                           PyLong_FromLongLong(seq + count), NULL};
    rc = values[0] == NULL || values[1] == NULL || values[2] == NULL || values[3] == NULL
         || cached_set(batch, dsattr[DS_PRODUCER_ID], &self->c_set_pid, values[0]) < 0
         || cached_set(batch, dsattr[DS_PRODUCER_EPOCH], &self->c_set_epoch, values[1]) < 0
         || cached_set(batch, dsattr[DS_BASE_SEQUENCE], &self->c_set_base, values[2]) < 0
         || cached_set(batch, dsattr[DS_IS_TRANSACTIONAL], &self->c_set_txn, Py_False) < 0
         || cached_set(entry, dsattr[DS_NEXT_SEQUENCE], &self->c_set_next, values[3]) < 0
         || (!tracked && PyList_Append(in_flight, batch) < 0) ? -1 : 1;
    for (int i = 0; i < 4; i++)
        Py_XDECREF(values[i]);
done:
    Py_DECREF(pid_epoch);
    Py_XDECREF(state);
    Py_XDECREF(entry);
    Py_XDECREF(in_flight);
    return rc;
}

static PyObject *ds_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    DrainStampObject *self = (DrainStampObject *)op;
    if (PyVectorcall_NARGS(nargsf) != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "prepare_for_drain(batch, tp)");
        return NULL;
    }
    PyObject *got = PyObject_CallMethodNoArgs(self->lock, dsattr[DS_ACQUIRE]);
    if (got == NULL)
        return NULL;
    Py_DECREF(got);
    int rc = ds_common(self, args[0], args[1]);
    PyObject *out;
    if (rc == 2) { /* the reference (it takes the lock again: an RLock) */
        PyObject *call[3] = {self->manager, args[0], args[1]};
        out = PyObject_Vectorcall(self->reference, call, 3, NULL);
    }
    else
        out = rc < 0 ? NULL : Py_NewRef(rc ? Py_True : Py_False);
    /* the lock released whatever happened (the exception kept across the call) */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *released = PyObject_CallMethodNoArgs(self->lock, dsattr[DS_RELEASE]);
    if (released == NULL) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        Py_XDECREF(out);
        return NULL;
    }
    Py_DECREF(released);
    PyErr_Restore(et, ev, tb);
    return out;
}

static PyObject *ds_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *manager, *reference, *parts;
    static char *kwlist[] = {"manager", "reference", "parts", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!:DrainStamp", kwlist, &manager, &reference, &PyTuple_Type, &parts))
        return NULL;
    int64_t ints[3];
    if (PyTuple_GET_SIZE(parts) != 9 || !PyUnicode_Check(PyTuple_GET_ITEM(parts, 3))
        || !PyUnicode_Check(PyTuple_GET_ITEM(parts, 4))) {
        PyErr_SetString(PyExc_TypeError, "DrainStamp: the parts are not an IdempotenceManager's drain_parts()");
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        if (take_int(Py_NewRef(PyTuple_GET_ITEM(parts, 6 + i)), &ints[i]) != 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "DrainStamp: NO_PRODUCER_ID, NO_SEQUENCE and INT_MAX are ints");
            return NULL;
        }
    for (int i = 0; i < DS_COUNT; i++)
        if (dsattr[i] == NULL && (dsattr[i] = PyUnicode_InternFromString(ds_names[i])) == NULL)
            return NULL;
    DrainStampObject *self = (DrainStampObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = ds_call;
    self->manager = Py_NewRef(manager);
    self->reference = Py_NewRef(reference);
    self->partitions = Py_NewRef(PyTuple_GET_ITEM(parts, 0));
    self->unresolved = Py_NewRef(PyTuple_GET_ITEM(parts, 1));
    self->lock = Py_NewRef(PyTuple_GET_ITEM(parts, 2));
    PyObject *names[2] = {Py_NewRef(PyTuple_GET_ITEM(parts, 3)), Py_NewRef(PyTuple_GET_ITEM(parts, 4))};
    PyUnicode_InternInPlace(&names[0]);
    PyUnicode_InternInPlace(&names[1]);
    self->pid_epoch_name = names[0];
    self->state_name = names[1];
    self->without_valid_id = Py_NewRef(PyTuple_GET_ITEM(parts, 5));
    self->no_producer_id = ints[0];
    self->no_sequence = ints[1];
    self->int_max = ints[2];
    return (PyObject *)self;
}

#define DS_FIELDS(X) X(manager) X(reference) X(partitions) X(unresolved) X(lock) X(pid_epoch_name) X(state_name) \
    X(without_valid_id)

static int ds_traverse(DrainStampObject *self, visitproc visit, void *arg)
{
#define DS_VISIT(f) Py_VISIT(self->f);
    DS_FIELDS(DS_VISIT)
#undef DS_VISIT
    return 0;
}

static int ds_clear(DrainStampObject *self)
{
#define DS_CLEAR(f) Py_CLEAR(self->f);
    DS_FIELDS(DS_CLEAR)
#undef DS_CLEAR
    return 0;
}

static void ds_dealloc(DrainStampObject *self)
{
    PyObject_GC_UnTrack(self);
    ds_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject DrainStampType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.DrainStamp",
    .tp_basicsize = sizeof(DrainStampObject),
    .tp_dealloc = (destructor)ds_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = PyDoc_STR("DrainStamp(manager, reference, parts): (batch, tp) -> IdempotenceManager.prepare_for_drain "
                        "(reference), its common case without its frames"),
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(DrainStampObject, vectorcall),
    .tp_traverse = (traverseproc)ds_traverse,
    .tp_clear = (inquiry)ds_clear,
    .tp_new = ds_new,
};

PyDoc_STRVAR(sender_send_round_doc,
"sender_send_round(sender, setup, now_ms) -> poll timeout\n\n"
"Sender.send_producer_data compiled: the metadata step (retain_topics_and_fetch_snapshot), then what\n"
"send_producer_data_reference does with the snapshot, calling it instead for a snapshot that is not the setup's\n"
"MetadataSnapshot type. ``setup`` is (the accumulator's round_state(), the MetadataSnapshot type, crc32c,\n"
"(the _native module, functools.partial, the reference completion, SUCCEEDED), (ProducerMetadata's\n"
"retain_topics_and_fetch_snapshot, CLUSTER_ATTRIBUTE, RETAIN_AT_ATTRIBUTE)): each request's completion callback\n"
"is partial(_native.kernel.handle_produce_response, reference, SUCCEEDED, sender, batches by partition) (the\n"
"kernel's ProduceCallback when that function is this kernel's); the metadata step is done here when the metadata's\n"
"retain_topics_and_fetch_snapshot is ProducerMetadata's.");

static PyObject *k_sender_send_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "sender_send_round expects 3 arguments");
        return NULL;
    }
    PyObject *sender = args[0], *setup = args[1], *now = args[2];
    int64_t now_ms;
    if (send_round_init() < 0 || round_arg_int(now, &now_ms) < 0)
        return NULL;
    if (!PyTuple_Check(setup) || PyTuple_GET_SIZE(setup) != 6 || !PyTuple_Check(PyTuple_GET_ITEM(setup, 0)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(setup, 0)) != 6 || !PyType_Check(PyTuple_GET_ITEM(setup, 1)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(setup, 3)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(setup, 3)) != 4 ||
        !PyTuple_Check(PyTuple_GET_ITEM(setup, 4)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(setup, 4)) != 3 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(PyTuple_GET_ITEM(setup, 4), 1)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(PyTuple_GET_ITEM(setup, 4), 2))) {
        PyErr_SetString(PyExc_TypeError, "sender_send_round: the setup is not the Sender's");
        return NULL;
    }
    PyObject *state = PyTuple_GET_ITEM(setup, 0), *snapshot_type = PyTuple_GET_ITEM(setup, 1);
    PyObject *crc = PyTuple_GET_ITEM(setup, 2), *completion = PyTuple_GET_ITEM(setup, 3);
    PyObject *topics = PyTuple_GET_ITEM(state, 0), *muted = PyTuple_GET_ITEM(state, 1);
    PyObject *node_sets = PyTuple_GET_ITEM(state, 2), *drain_index = PyTuple_GET_ITEM(state, 3);
    PyObject *sendable = PyTuple_GET_ITEM(state, 4), *should_backoff = PyTuple_GET_ITEM(state, 5);

    PyObject *metadata = NULL, *acc = NULL, *client = NULL, *snapshot = NULL, *result = NULL, *ready = NULL;
    PyObject *ready_list = NULL, *tm = NULL, *prepare = NULL, *mute = NULL, *drained = NULL, *next = NULL;
    PyObject *expired = NULL, *metrics = NULL, *acks = NULL, *timeout = NULL, *out = NULL, *topic_items = NULL;
    PyObject *linger = NULL, *adaptive = NULL, *delivery = NULL, *max_size = NULL, *in_flight = NULL;
    PyObject *iter = NULL, *item = NULL;

    if ((metadata = sr_get(sender, SR_METADATA)) == NULL ||
        (snapshot = sr_snapshot(metadata, now, now_ms, PyTuple_GET_ITEM(setup, 4))) == NULL)
        goto done;
    if ((acc = sr_get(sender, SR_ACCUMULATOR)) == NULL)
        goto done;
    int replaced = (PyObject *)Py_TYPE(snapshot) != snapshot_type ? 1 : send_round_replaced(acc);
    if (replaced < 0)
        goto done;
    if (replaced) { /* the tests' fakes and wrappers: the reference's whole round */
        PyObject *rargs[3] = {sender, snapshot, now};
        out = PyObject_VectorcallMethod(srattr[SR_REFERENCE], rargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        goto done;
    }
    if ((client = sr_get(sender, SR_CLIENT)) == NULL ||
        (topic_items = sr_get(acc, SR_TOPIC_ITEMS)) == NULL || (linger = sr_get(acc, SR_LINGER)) == NULL ||
        (adaptive = sr_get(acc, SR_ADAPTIVE)) == NULL)
        goto done;
    /* RecordAccumulator.ready */
    {
        PyObject *rargs[9] = {topic_items, snapshot, muted, node_sets, linger, adaptive, now, sendable, should_backoff};
        result = k_accumulator_ready(NULL, rargs, 9);
    }
    if (result == NULL)
        goto done;
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 3) {
        PyErr_SetString(PyExc_TypeError, "sender_send_round: ready's result is not a triple");
        goto done;
    }
    ready = PyTuple_GET_ITEM(result, 0);
    PyObject *unknown = PyTuple_GET_ITEM(result, 2);
    int64_t next_check;
    if (!PyAnySet_Check(unknown)) {
        PyErr_SetString(PyExc_TypeError, "sender_send_round: ready's unknown leader topics are not a set");
        goto done;
    }
    if (round_arg_int(PyTuple_GET_ITEM(result, 1), &next_check) < 0)
        goto done;
    if (PySet_GET_SIZE(unknown) > 0) {
        if ((iter = PyObject_GetIter(unknown)) == NULL)
            goto done;
        while ((item = PyIter_Next(iter)) != NULL) {
            if (sr_call(metadata, SR_ADD, item, now) < 0 || sr_call(metadata, SR_UPDATE_FOR_TOPIC, item, NULL) < 0)
                goto done;
            Py_CLEAR(item);
        }
        Py_CLEAR(iter);
        if (PyErr_Occurred())
            goto done;
    }
    /* the nodes the client can send to now; the least delay of the others */
    int64_t not_ready = INT64_MAX;
    if ((ready_list = PyList_New(0)) == NULL || (iter = PyObject_GetIter(ready)) == NULL)
        goto done;
    while ((item = PyIter_Next(iter)) != NULL) {
        PyObject *cargs[3] = {client, item, now};
        int ok = take_truth(PyObject_VectorcallMethod(srattr[SR_READY], cargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL));
        if (ok < 0)
            goto done;
        if (ok) {
            if (PyList_Append(ready_list, item) < 0)
                goto done;
        }
        else {
            int64_t delay;
            PyObject *d = PyObject_VectorcallMethod(srattr[SR_POLL_DELAY], cargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                    NULL);
            if (d == NULL)
                goto done;
            int rc = round_arg_int(d, &delay);
            Py_DECREF(d);
            if (rc < 0)
                goto done;
            if (delay < not_ready)
                not_ready = delay;
        }
        Py_CLEAR(item);
    }
    Py_CLEAR(iter);
    if (PyErr_Occurred())
        goto done;
    /* RecordAccumulator.drain */
    if ((tm = sr_get(sender, SR_TM)) == NULL || (max_size = sr_get(sender, SR_MAX_REQUEST)) == NULL)
        goto done;
    if (tm == Py_None)
        prepare = Py_NewRef(Py_None);
    else {
        /* the setup's DrainStamp (prepare_for_drain's common case in C) unless the instance replaces the method */
        PyObject *stamp = PyTuple_GET_ITEM(setup, 5);
        int replaced = Py_IS_TYPE(stamp, &DrainStampType) && ((DrainStampObject *)stamp)->manager == tm
                       ? sr_instance_has(tm, srattr[SR_PREPARE]) : 1;
        if (replaced < 0)
            goto done;
        if (!replaced)
            prepare = Py_NewRef(stamp);
        else if ((prepare = PyObject_GetAttr(tm, srattr[SR_PREPARE])) == NULL)
            goto done;
    }
    {
        PyObject *dargs[9] = {topics, snapshot, ready_list, max_size, now, drain_index, muted, prepare, should_backoff};
        drained = k_accumulator_drain(NULL, dargs, 9);
    }
    if (drained == NULL)
        goto done;
    /* Sender.track_in_flight_reference */
    int order = take_truth(sr_get(sender, SR_ORDER));
    if (order < 0)
        goto done;
    if (order == 0)
        mute = Py_NewRef(Py_None);
    else if ((mute = PyObject_GetAttr(acc, srattr[SR_MUTE])) == NULL)
        goto done;
    if ((in_flight = sr_get(sender, SR_IN_FLIGHT)) == NULL || (delivery = sr_get(acc, SR_DELIVERY_TIMEOUT)) == NULL)
        goto done;
    {
        PyObject *targs[5] = {drained, in_flight, mute, delivery, now};
        next = k_sender_track_in_flight(NULL, targs, 5);
    }
    if (next == NULL)
        goto done;
    PyObject *in_flight_expired = NULL;
    if (next == Py_None) { /* an in-flight batch is due: the reference takes the expired ones out */
        PyObject *eargs[2] = {sender, now};
        PyObject *pair = PyObject_VectorcallMethod(srattr[SR_EXPIRED_IN_FLIGHT], eargs, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                   NULL);
        if (pair == NULL)
            goto done;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyList_Check(PyTuple_GET_ITEM(pair, 0))) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_TypeError, "expired_in_flight_batches did not return a (list, int) pair");
            goto done;
        }
        in_flight_expired = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
        Py_SETREF(next, Py_NewRef(PyTuple_GET_ITEM(pair, 1)));
        Py_DECREF(pair);
    }
    /* RecordAccumulator.expired_batches(now, next): the queued ones, then the in-flight ones */
    Py_SETREF(topic_items, sr_get(acc, SR_TOPIC_ITEMS));
    if (topic_items == NULL) {
        Py_XDECREF(in_flight_expired);
        goto done;
    }
    {
        PyObject *xargs[4] = {topic_items, delivery, now, next};
        expired = k_accumulator_expired(NULL, xargs, 4);
    }
    if (expired == NULL || cached_set(acc, srattr[SR_NEXT_EXPIRY], &srcache[SR_NEXT_EXPIRY],
                                      PyTuple_GET_ITEM(expired, 1)) < 0) {
        Py_XDECREF(in_flight_expired);
        goto done;
    }
    PyObject *all = PyTuple_GET_ITEM(expired, 0);
    if (in_flight_expired != NULL) {
        int rc = PyList_SetSlice(all, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, in_flight_expired);
        Py_DECREF(in_flight_expired);
        if (rc < 0)
            goto done;
    }
    if (PyList_GET_SIZE(all) > 0 && sr_call(sender, SR_FAIL_EXPIRED, all, now) < 0)
        goto done;
    /* the poll timeout */
    int64_t poll_timeout = 0;
    if (PyList_GET_SIZE(ready_list) == 0) {
        int64_t expiry;
        poll_timeout = next_check;
        if (not_ready < poll_timeout)
            poll_timeout = not_ready;
        if (sr_int(acc, SR_NEXT_EXPIRY, &expiry) < 0)
            goto done;
        if (expiry - now_ms < poll_timeout) /* (|now| < 2**62: no overflow) */
            poll_timeout = expiry - now_ms;
        if (poll_timeout < 0)
            poll_timeout = 0;
    }
    /* one produce request per node with batches, in drain's order */
    int64_t acks_value;
    if (!PyDict_Check(drained)) {
        PyErr_SetString(PyExc_TypeError, "sender_send_round: drain's result is not a dict");
        goto done;
    }
    if (PyDict_GET_SIZE(drained) > 0) {
        if ((metrics = sr_get(sender, SR_METRICS)) == NULL || (acks = sr_get(sender, SR_ACKS)) == NULL ||
            (timeout = sr_get(sender, SR_REQUEST_TIMEOUT)) == NULL || round_arg_int(acks, &acks_value) < 0)
            goto done;
        Py_ssize_t pos = 0;
        PyObject *node_id, *node_batches;
        while (PyDict_Next(drained, &pos, &node_id, &node_batches)) {
            if (!PyList_Check(node_batches) || PyList_GET_SIZE(node_batches) == 0)
                continue;
            Py_INCREF(node_id);
            Py_INCREF(node_batches);
            int rc = send_round_request(sender, client, metrics, tm, crc, completion, acks, timeout, acks_value,
                                        node_id, node_batches, now);
            Py_DECREF(node_id);
            Py_DECREF(node_batches);
            if (rc < 0)
                goto done;
        }
    }
    out = PyLong_FromLongLong(poll_timeout);
done:
    Py_XDECREF(metadata);
    Py_XDECREF(acc);
    Py_XDECREF(client);
    Py_XDECREF(snapshot);
    Py_XDECREF(result);
    Py_XDECREF(ready_list);
    Py_XDECREF(tm);
    Py_XDECREF(prepare);
    Py_XDECREF(mute);
    Py_XDECREF(drained);
    Py_XDECREF(next);
    Py_XDECREF(expired);
    Py_XDECREF(metrics);
    Py_XDECREF(acks);
    Py_XDECREF(timeout);
    Py_XDECREF(topic_items);
    Py_XDECREF(linger);
    Py_XDECREF(adaptive);
    Py_XDECREF(delivery);
    Py_XDECREF(max_size);
    Py_XDECREF(in_flight);
    Py_XDECREF(iter);
    Py_XDECREF(item);
    return out;
}

enum { SI_IS_SETTLED, SI_TIME, SI_HI_RES_CLOCK_MS, SI_SENDER_SEND_ROUND, SI_POLL, SI_COUNT };
static const char *const si_names_[SI_COUNT] = {"is_settled", "time", "hi_res_clock_ms", "sender_send_round", "poll"};
static PyObject *siattr[SI_COUNT];
static slot_cache sicache[SI_COUNT];
static slot_cache si_wakeup_cache;
static PyObject *si_million;

/* 0, or -1 with an exception */
static int si_names(void)
{
    for (int i = 0; i < SI_COUNT; i++)
        if (siattr[i] == NULL && (siattr[i] = PyUnicode_InternFromString(si_names_[i])) == NULL)
            return -1;
    if (si_million == NULL && (si_million = PyLong_FromLong(1000000)) == NULL)
        return -1;
    return 0;
}

/* ---- idempotence_settled: IdempotenceManager.is_settled without its frame -------------------------------------- */

enum { SETTLED_NAMES = 7 };

/* tm.is_settled() (parts: SETTLED_PARTS, (the reference method, the seven attribute names, READY, the producer id
 * that is not valid)): 1, 0, or -1 with an exception. The reference's expression read at the slots when is_settled
 * is the reference method, else its call. */
static int settled_check(PyObject *tm, PyObject *parts)
{
    static PyObject *names[SETTLED_NAMES], *producer_id_name;
    static slot_cache caches[SETTLED_NAMES], producer_id_cache;
    static PyTypeObject *reference_type;
    static unsigned int reference_tag;
    if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != 4 || !PyTuple_Check(PyTuple_GET_ITEM(parts, 1))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(parts, 1)) != SETTLED_NAMES) {
        PyErr_SetString(PyExc_TypeError, "idempotence_settled: the parts are not SETTLED_PARTS");
        return -1;
    }
    PyObject *given = PyTuple_GET_ITEM(parts, 1);
    for (int i = 0; i < SETTLED_NAMES; i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(given, i))) {
            PyErr_SetString(PyExc_TypeError, "idempotence_settled: an attribute name is not a str");
            return -1;
        }
    if (send_round_init() < 0 || si_names() < 0
        || sr_names_from(&PyTuple_GET_ITEM(given, 0), names, caches, SETTLED_NAMES) < 0)
        return -1;
    if (producer_id_name == NULL && (producer_id_name = PyUnicode_InternFromString("producer_id")) == NULL)
        return -1;
    PyObject *is_settled_name = siattr[SI_IS_SETTLED];
    int reference = sr_is_reference(tm, is_settled_name, PyTuple_GET_ITEM(parts, 0), &reference_type, &reference_tag);
    if (reference <= 0) {
        if (reference < 0)
            return -1;
        PyObject *call[1] = {tm};
        return take_truth(PyObject_VectorcallMethod(is_settled_name, call, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL));
    }
    /* state is READY and transactional_id is None and not unresolved and not the two flags and not in flight */
    PyObject *v = cached_get(tm, names[0], &caches[0]);
    if (v == NULL)
        return -1;
    int settled = v == PyTuple_GET_ITEM(parts, 2);
    Py_DECREF(v);
    if (settled) {
        if ((v = cached_get(tm, names[1], &caches[1])) == NULL)
            return -1;
        settled = v == Py_None;
        Py_DECREF(v);
    }
    for (int i = 2; i < 6 && settled > 0; i++) {
        int truth = take_truth(cached_get(tm, names[i], &caches[i]));
        settled = truth < 0 ? -1 : !truth;
    }
    if (settled <= 0)
        return settled;
    /* and the producer id and epoch's is_valid(): its producer_id != NO_PRODUCER_ID */
    PyObject *pid_epoch = cached_get(tm, names[6], &caches[6]);
    if (pid_epoch == NULL)
        return -1;
    PyObject *pid = cached_get_read_only(pid_epoch, producer_id_name, &producer_id_cache); /* (a frozen dataclass) */
    Py_DECREF(pid_epoch);
    if (pid == NULL)
        return -1;
    settled = PyObject_RichCompareBool(pid, PyTuple_GET_ITEM(parts, 3), Py_NE);
    Py_DECREF(pid);
    return settled;
}

PyDoc_STRVAR(idempotence_settled_doc,
"idempotence_settled(manager, parts) -> bool\n\n"
"Reference: manager.is_settled() (IdempotenceManager.is_settled), ``parts`` its SETTLED_PARTS: the reference's\n"
"expression read at the manager's slots when is_settled is the reference method, else its call.");

static PyObject *k_idempotence_settled(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "idempotence_settled(manager, parts)");
        return NULL;
    }
    int settled = settled_check(args[0], args[1]);
    return settled < 0 ? NULL : Py_NewRef(settled ? Py_True : Py_False);
}

/* ---- SenderIteration: Sender.run_once in one call -------------------------------------------------------------------
 * SenderIteration(sender, setup, reference, unsettled, wakeup_attribute, system_time, monotonic_ns, settled_parts):
 * ``run_once()`` is Sender.run_once (``reference``, called for the Sender as it is when _native.kernel is None) without
 * its frame: the wake-up flag (the Sender's ``wakeup_attribute``) cleared; a transaction manager not settled (its
 * is_settled() as idempotence_settled(tm, settled_parts) answers it)
 * through unsettled(sender, tm) (Sender.run_unsettled), which ends the iteration when it returns True; the time
 * (monotonic_ns() // 10**6 for a time of exactly the system_time type, else time.hi_res_clock_ms()); the round
 * (sender_send_round(sender, setup, now): the kernel's own function called as C, another kernel's by name); the
 * client's poll(timeout, now). ``sender`` is held by a weak reference (the Sender holds the bound run_once as an
 * instance attribute: no cycle). */


typedef struct {
    PyObject_HEAD
    PyObject *sender; /* weakref */
    PyObject *setup, *reference, *unsettled, *wakeup_attribute, *system_time, *monotonic_ns, *settled_parts;
} SenderIterationObject;

/* the time in ms as the reference reads it (new reference), NULL with an exception */
static PyObject *si_now(SenderIterationObject *self, PyObject *sender)
{
    PyObject *time = cached_get(sender, siattr[SI_TIME], &sicache[SI_TIME]);
    if (time == NULL)
        return NULL;
    PyObject *now;
    if ((PyObject *)Py_TYPE(time) == self->system_time) { /* SystemTime.hi_res_clock_ms: monotonic_ns() // 10**6 */
        PyObject *ns = PyObject_CallNoArgs(self->monotonic_ns);
        int64_t v;
        if (ns != NULL && compact_int(ns, &v) && v >= 0)
            now = PyLong_FromLongLong(v / 1000000);
        else
            now = ns == NULL ? NULL : PyNumber_FloorDivide(ns, si_million);
        Py_XDECREF(ns);
    }
    else {
        PyObject *call[1] = {time};
        now = PyObject_VectorcallMethod(siattr[SI_HI_RES_CLOCK_MS], call, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_DECREF(time);
    return now;
}

/* The iteration after the wake-up flag and the transaction manager: 0, or -1 with an exception */
static int si_round(SenderIterationObject *self, PyObject *sender, PyObject *kernel)
{
    PyObject *round = sr_module_get_name(kernel, siattr[SI_SENDER_SEND_ROUND]);
    if (round == NULL)
        return -1;
    PyObject *now = si_now(self, sender), *client = NULL, *timeout = NULL;
    int rc = -1;
    if (now == NULL || (client = sr_get(sender, SR_CLIENT)) == NULL)
        goto done;
    PyObject *args[3] = {sender, self->setup, now};
    timeout = PyCFunction_Check(round) && PyCFunction_GET_FUNCTION(round) == (PyCFunction)(void (*)(void))k_sender_send_round
              ? k_sender_send_round(NULL, args, 3) : PyObject_Vectorcall(round, args, 3, NULL);
    if (timeout == NULL)
        goto done;
    PyObject *pargs[3] = {client, timeout, now};
    PyObject *r = PyObject_VectorcallMethod(siattr[SI_POLL], pargs, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (r != NULL) {
        Py_DECREF(r);
        rc = 0;
    }
done:
    Py_DECREF(round);
    Py_XDECREF(now);
    Py_XDECREF(client);
    Py_XDECREF(timeout);
    return rc;
}

static PyObject *si_run_once(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SenderIterationObject *self = (SenderIterationObject *)op;
    if (PyVectorcall_NARGS(nargsf) != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "run_once() takes no arguments");
        return NULL;
    }
    PyObject *sender = weak_referent(self->sender, "the Sender of this SenderIteration is gone");
    if (sender == NULL)
        return NULL;
    PyObject *out = NULL, *tm = NULL;
    PyObject *kernel = sr_module_get(PyTuple_GET_ITEM(PyTuple_GET_ITEM(self->setup, 3), 0), SR_KERNEL);
    if (kernel == NULL)
        goto done;
    if (kernel == Py_None) { /* the kernel turned off: the reference */
        out = PyObject_CallOneArg(self->reference, sender);
        goto done;
    }
    if (cached_set(sender, self->wakeup_attribute, &si_wakeup_cache, Py_False) < 0
        || (tm = sr_get(sender, SR_TM)) == NULL)
        goto done;
    if (tm != Py_None) {
        int settled = settled_check(tm, self->settled_parts);
        if (settled < 0)
            goto done;
        if (!settled) {
            PyObject *uargs[2] = {sender, tm};
            int spent = take_truth(PyObject_Vectorcall(self->unsettled, uargs, 2, NULL));
            if (spent < 0)
                goto done;
            if (spent) {
                out = Py_NewRef(Py_None);
                goto done;
            }
        }
    }
    if (si_round(self, sender, kernel) == 0)
        out = Py_NewRef(Py_None);
done:
    Py_XDECREF(kernel);
    Py_XDECREF(tm);
    Py_DECREF(sender);
    return out;
}

static PyObject *si_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *sender, *setup, *reference, *unsettled, *wakeup_attribute, *system_time, *monotonic_ns, *settled_parts;
    static char *kwlist[] = {"sender", "setup", "reference", "unsettled", "wakeup_attribute", "system_time",
                             "monotonic_ns", "settled_parts", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOUO!OO!:SenderIteration", kwlist, &sender, &PyTuple_Type, &setup,
                                     &reference, &unsettled, &wakeup_attribute, &PyType_Type, &system_time,
                                     &monotonic_ns, &PyTuple_Type, &settled_parts))
        return NULL;
    if (PyTuple_GET_SIZE(setup) != 6 || !PyTuple_Check(PyTuple_GET_ITEM(setup, 3))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(setup, 3)) != 4) {
        PyErr_SetString(PyExc_TypeError, "SenderIteration: the setup is not the Sender's");
        return NULL;
    }
    if (send_round_init() < 0)
        return NULL;
    if (si_names() < 0)
        return NULL;
    PyObject *weak = PyWeakref_NewRef(sender, NULL);
    if (weak == NULL)
        return NULL;
    PyObject *name = PyUnicode_FromObject(wakeup_attribute);
    SenderIterationObject *self = name == NULL ? NULL : (SenderIterationObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(weak);
        Py_XDECREF(name);
        return NULL;
    }
    PyUnicode_InternInPlace(&name);
    self->sender = weak;
    self->setup = Py_NewRef(setup);
    self->reference = Py_NewRef(reference);
    self->unsettled = Py_NewRef(unsettled);
    self->wakeup_attribute = name;
    self->system_time = Py_NewRef(system_time);
    self->monotonic_ns = Py_NewRef(monotonic_ns);
    self->settled_parts = Py_NewRef(settled_parts);
    return (PyObject *)self;
}

#define SI_FIELDS(X) X(sender) X(setup) X(reference) X(unsettled) X(wakeup_attribute) X(system_time) X(monotonic_ns) \
    X(settled_parts)

static int si_traverse(SenderIterationObject *self, visitproc visit, void *arg)
{
#define SI_VISIT(f) Py_VISIT(self->f);
    SI_FIELDS(SI_VISIT)
#undef SI_VISIT
    return 0;
}

static int si_clear(SenderIterationObject *self)
{
#define SI_CLEAR(f) Py_CLEAR(self->f);
    SI_FIELDS(SI_CLEAR)
#undef SI_CLEAR
    return 0;
}

static void si_dealloc(SenderIterationObject *self)
{
    PyObject_GC_UnTrack(self);
    si_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef si_methods[] = {
    {"run_once", (PyCFunction)(void (*)(void))si_run_once, METH_FASTCALL | METH_KEYWORDS,
     "run_once(): Sender.run_once (the reference) without its frame"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SenderIterationType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SenderIteration",
    .tp_basicsize = sizeof(SenderIterationObject),
    .tp_dealloc = (destructor)si_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("SenderIteration(sender, setup, reference, unsettled, wakeup_attribute, system_time, "
                        "monotonic_ns, settled_parts): Sender.run_once in one call (reference: Sender.run_once)"),
    .tp_traverse = (traverseproc)si_traverse,
    .tp_clear = (inquiry)si_clear,
    .tp_methods = si_methods,
    .tp_new = si_new,
};

