/* kernel/producer_send.c.h
 *
 * The whole of send()'s common case: SendRecord (KafkaProducer.send's checks, the metadata, send_append)
 * and SendMethod/BoundSend (KafkaProducer.send without its Python frame).
 * Uses: slot_access.c.h, producer_try_append.c.h, producer_send_append.c.h.
 */

/* ---- producer: the whole of send()'s common case (KafkaProducer.send's checks, the metadata, send_append) -- */

enum { M_TOPIC_EXPIRY, M_IDLE, M_ADD, M_INDEX, M_FETCH, M_CLUSTER, M_BY_TOPIC, M_COUNT };
static const char *const md_attr_names[M_COUNT] = {
    "topic_expiry", "metadata_idle_ms", "add", "index", "fetch", "cluster", "by_topic",
};
static PyObject *mattr[M_COUNT];
static slot_cache mcache[M_COUNT];

/* ProducerMetadata.add_and_count(topic, now) without its Python frames: the topic's partition count (0 when it
 * is unknown), -2 when the metadata's index is not that of its current cluster (the Python method rebuilds it),
 * -1 with an exception. ``mono_clock`` None: now is CLOCK_MONOTONIC in ms (time.monotonic_ns() // 10**6).
 * ``cluster_at`` gives ``metadata.fetch()`` without its Python frame (cluster_now(); None: fetch() is called). */
static PyObject *cluster_now(PyObject *cluster_at);

static long long metadata_add_and_count(PyObject *metadata, PyObject *topic, PyObject *mono_clock, PyObject *cluster_at,
                                        send_cache *cache)
{
    /* now as an int object only when a call needs it (the topic's expiry is refreshed: rarely) */
    PyObject *now_obj = NULL;
    long long count = -1;
    PyObject *expiries = NULL, *idx = NULL, *cluster = NULL, *idx_cluster = NULL, *by_topic = NULL;
    int64_t now, idle;
    int rc;
    if (mono_clock == Py_None) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    } else {
        if ((now_obj = PyObject_CallNoArgs(mono_clock)) == NULL)
            return -1;
        rc = take_int(Py_NewRef(now_obj), &now);
        if (rc != 0) {
            count = rc < 0 ? -1 : -2;
            goto done;
        }
    }
    if ((expiries = cached_get(metadata, mattr[M_TOPIC_EXPIRY], &mcache[M_TOPIC_EXPIRY])) == NULL)
        goto done;
    if (!PyDict_CheckExact(expiries)) {
        count = -2;
        goto done;
    }
    if ((rc = get_int_attr(metadata, mattr[M_IDLE], &mcache[M_IDLE], &idle)) != 0) {
        count = rc < 0 ? -1 : -2;
        goto done;
    }
    int fresh = cache != NULL && cache->expiries == expiries && cache->fresh_topic == topic && cache->fresh_idle == idle &&
                now < cache->fresh_until;
    if (!fresh) {
        PyObject *expiry = PyDict_GetItemWithError(expiries, topic); /* borrowed */
        if (expiry == NULL && PyErr_Occurred())
            goto done;
        if (expiry != NULL) {
            int64_t exp, until;
            if ((rc = take_int(Py_NewRef(expiry), &exp)) != 0) {
                count = rc < 0 ? -1 : -2;
                goto done;
            }
            /* Python's floor division, for any sign */
            int64_t half = idle / 2 - ((idle % 2 != 0) && (idle < 0));
            fresh = exp - now > half;
            if (fresh && cache != NULL && !__builtin_sub_overflow(exp, half, &until)) {
                Py_INCREF(expiries);
                Py_XSETREF(cache->expiries, expiries);
                Py_INCREF(topic);
                Py_XSETREF(cache->fresh_topic, topic);
                cache->fresh_idle = idle;
                cache->fresh_until = until;
            }
        }
    }
    if (!fresh) {
        if (now_obj == NULL && (now_obj = PyLong_FromLongLong(now)) == NULL)
            goto done;
        PyObject *r = PyObject_CallMethodObjArgs(metadata, mattr[M_ADD], topic, now_obj, NULL);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    if ((idx = cached_get(metadata, mattr[M_INDEX], &mcache[M_INDEX])) == NULL ||
        (cluster = cluster_at == Py_None ? PyObject_CallMethodNoArgs(metadata, mattr[M_FETCH])
                                         : cluster_now(cluster_at)) == NULL ||
        (idx_cluster = cached_get(idx, mattr[M_CLUSTER], &mcache[M_CLUSTER])) == NULL)
        goto done;
    if (idx_cluster != cluster) {
        count = -2;
        goto done;
    }
    if (cache != NULL && cache->index == idx && cache->count_topic == topic) {
        count = cache->count;
        goto done;
    }
    if ((by_topic = cached_get(idx, mattr[M_BY_TOPIC], &mcache[M_BY_TOPIC])) == NULL)
        goto done;
    if (!PyDict_CheckExact(by_topic)) {
        count = -2;
        goto done;
    }
    PyObject *infos = PyDict_GetItemWithError(by_topic, topic); /* borrowed */
    if (infos == NULL) {
        count = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    count = PyList_CheckExact(infos) ? PyList_GET_SIZE(infos) : -2;
    if (cache != NULL && count > 0) {
        Py_INCREF(idx);
        Py_XSETREF(cache->index, idx);
        Py_INCREF(topic);
        Py_XSETREF(cache->count_topic, topic);
        cache->count = count;
    }
done:
    Py_XDECREF(now_obj);
    Py_XDECREF(expiries);
    Py_XDECREF(idx);
    Py_XDECREF(cluster);
    Py_XDECREF(idx_cluster);
    Py_XDECREF(by_topic);
    return count;
}

/* 1 when v is a plain int (not a bool or another subclass) >= 0, of any size */
static int nonnegative_int(PyObject *v)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    return overflow > 0 || (overflow == 0 && x >= 0);
}

/* fatal_check: None (never fatal), (holder, attribute, fatal_state): fatal when getattr(holder, attribute) is
 * fatal_state (read at the slot's offset when it is one), else a callable whose truth is the answer. 1, 0, or
 * -1 with an exception. */
static int fatal_now(PyObject *fatal_check)
{
    static slot_cache state_cache;
    if (fatal_check == Py_None)
        return 0;
    if (PyTuple_CheckExact(fatal_check) && PyTuple_GET_SIZE(fatal_check) == 3 &&
        PyUnicode_CheckExact(PyTuple_GET_ITEM(fatal_check, 1))) {
        PyObject *state = cached_get(PyTuple_GET_ITEM(fatal_check, 0), PyTuple_GET_ITEM(fatal_check, 1), &state_cache);
        if (state == NULL)
            return -1;
        Py_DECREF(state);
        return state == PyTuple_GET_ITEM(fatal_check, 2);
    }
    return take_truth(PyObject_CallNoArgs(fatal_check));
}

/* cluster_at: (holder, attribute): getattr(holder, attribute), read at the slot's offset when it is one; else a
 * callable giving the cluster. New reference, NULL with an exception. */
static PyObject *cluster_now(PyObject *cluster_at)
{
    static slot_cache cluster_cache;
    if (PyTuple_CheckExact(cluster_at) && PyTuple_GET_SIZE(cluster_at) == 2 &&
        PyUnicode_CheckExact(PyTuple_GET_ITEM(cluster_at, 1)))
        return cached_get(PyTuple_GET_ITEM(cluster_at, 0), PyTuple_GET_ITEM(cluster_at, 1), &cluster_cache);
    return PyObject_CallNoArgs(cluster_at);
}

/* SendRecord's call: ``fixed`` its 11 fixed arguments, ``rec`` the call's 6. NotImplemented when it declines; then
 * *no_room is 1 when the record passed every check and the metadata (the topic and partition known) and only
 * found no open batch with room and no buffer memory free at once for a new one (or the accumulator closed), 0
 * otherwise. */
static PyObject *send_record_core(PyObject *const *fixed, PyObject *const *rec, int *no_room, send_cache *cache)
{
    *no_room = 0;
    if (future_type == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *metadata = fixed[4], *mono_clock = fixed[8], *fatal_check = fixed[9], *cluster_at = fixed[10],
             *topic = rec[0], *partition = rec[1], *timestamp = rec[2];
    if (!PyUnicode_CheckExact(topic) || PyUnicode_GET_LENGTH(topic) == 0)
        Py_RETURN_NOTIMPLEMENTED;
    if ((partition != Py_None && !nonnegative_int(partition)) || (timestamp != Py_None && !nonnegative_int(timestamp)))
        Py_RETURN_NOTIMPLEMENTED;
    if (mattr[0] == NULL) {
        for (int i = 0; i < M_COUNT; i++) {
            if ((mattr[i] = PyUnicode_InternFromString(md_attr_names[i])) == NULL)
                return NULL;
        }
    }
    int fatal = fatal_now(fatal_check);
    if (fatal < 0)
        return NULL;
    if (fatal)
        Py_RETURN_NOTIMPLEMENTED;
    long long count = metadata_add_and_count(metadata, topic, mono_clock, cluster_at, cache);
    if (count == -1)
        return NULL;
    if (count <= 0)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *call[15] = {fixed[0], fixed[1], fixed[2], fixed[3], fixed[4], fixed[5], fixed[6], fixed[7], topic,
                          partition, NULL /* the count, passed as a number */, timestamp, rec[3], rec[4], rec[5]};
    PyObject *future = send_append_core(call, count, cache, 1);
    if (future == Py_None) {
        Py_DECREF(future);
        *no_room = 1;
        Py_RETURN_NOTIMPLEMENTED;
    }
    return future;
}

/* The producer's fixed arguments of send_record, bound once: a call passes only the record's six (no partial
 * object copying sixteen arguments into a fresh array per send). */
enum { SR_FIXED = 11, SR_CALL = 6 };
typedef struct {
    PyObject_HEAD
    PyObject *fixed[SR_FIXED];
    vectorcallfunc vectorcall;
    send_cache cache;
} SendRecordObject;

static PyObject *send_record_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != SR_CALL || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
        PyErr_Format(PyExc_TypeError, "SendRecord() takes %d positional arguments (topic, partition, timestamp, key, "
                     "value, callback), got %zd", SR_CALL, nargs);
        return NULL;
    }
    int no_room;
    Py_INCREF(self); /* its cache is used during the call */
    PyObject *r = send_record_core(((SendRecordObject *)self)->fixed, args, &no_room, &((SendRecordObject *)self)->cache);
    Py_DECREF(self);
    return r;
}

static PyObject *send_record_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) || PyTuple_GET_SIZE(args) != SR_FIXED) {
        PyErr_Format(PyExc_TypeError, "SendRecord() takes %d positional arguments", SR_FIXED);
        return NULL;
    }
    SendRecordObject *self = (SendRecordObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    for (int i = 0; i < SR_FIXED; i++)
        self->fixed[i] = Py_NewRef(PyTuple_GET_ITEM(args, i));
    self->vectorcall = send_record_vectorcall;
    return (PyObject *)self;
}

static int send_record_traverse(PyObject *self, visitproc visit, void *arg)
{
    SendRecordObject *sr = (SendRecordObject *)self;
    for (int i = 0; i < SR_FIXED; i++)
        Py_VISIT(sr->fixed[i]);
    Py_VISIT(sr->cache.info);
    Py_VISIT(sr->cache.partitioner);
    Py_VISIT(sr->cache.q_info);
    Py_VISIT(sr->cache.queue);
    Py_VISIT(sr->cache.lock);
    Py_VISIT(sr->cache.batches);
    Py_VISIT(sr->cache.index);
    Py_VISIT(sr->cache.expiries);
    return 0;
}

static int send_record_clear(PyObject *self)
{
    for (int i = 0; i < SR_FIXED; i++)
        Py_CLEAR(((SendRecordObject *)self)->fixed[i]);
    send_cache_clear(&((SendRecordObject *)self)->cache);
    return 0;
}

static void send_record_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    send_record_clear(self);
    Py_TYPE(self)->tp_free(self);
}

PyDoc_STRVAR(send_record_doc,
    "SendRecord(topics, accumulator, clock, headers, metadata, max_payload, ignore_keys, wakeup, mono_clock,\n"
    "           fatal_check, cluster_at)(topic, partition, timestamp, key, value, callback)\n"
    "    -> future | NotImplemented\n\n"
    "KafkaProducer.send's common case whole, compiled: the checks send() makes before the append (a non-empty\n"
    "str topic, a partition and a timestamp that are None or non-negative ints, not a fatal error: ``fatal_check``\n"
    "None, (holder, attribute, fatal_state) fatal when ``getattr(holder, attribute) is fatal_state``, or a callable\n"
    "whose truth says it), ProducerMetadata.add_and_count on ``metadata`` (``mono_clock`` None: the monotonic\n"
    "clock, else its ms; ``cluster_at``: (holder, attribute) or a callable giving ``metadata.fetch()`` without\n"
    "its frame, None calls fetch()), then send_append (the first eight arguments are send_append's), which\n"
    "here also closes a full last batch and opens a new one by ``accumulator.open_batch`` when buffer.memory\n"
    "has its room at once (not for a transactional producer: its send adds a new batch's partition to the\n"
    "transaction). NotImplemented whenever that gives no future, or a check or the metadata needs the Python\n"
    "path (which then does it all again and raises as before); a record is appended only when a future is\n"
    "returned.");

static PyTypeObject SendRecordType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SendRecord",
    .tp_basicsize = sizeof(SendRecordObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = send_record_doc,
    .tp_new = send_record_new,
    .tp_traverse = send_record_traverse,
    .tp_clear = send_record_clear,
    .tp_dealloc = send_record_dealloc,
    .tp_vectorcall_offset = offsetof(SendRecordObject, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* ---- producer: KafkaProducer.send without its Python frame (SendMethod) ------------------------------------ */

/* KafkaProducer.send as a descriptor: on the class it gives the Python function itself; on a producer a bound
 * object (like a bound method: __self__, __func__, equal for the same producer) whose call reads the producer's
 * ``_send_record`` slot and, with no headers, calls that SendRecord directly: a future returned is send()'s
 * result, no Python frame run. Anything else goes through Python: NotImplemented (nothing appended) to
 * ``declined(producer, topic, value, key, partition, timestamp, headers, on_delivery, no_room)``, the rest of send()
 * (``no_room``: whether SendRecord found only no open batch with room and no memory free at once for a new one,
 * its checks and the metadata passed);
 * arguments it does not parse (too many, an unknown keyword: the TypeError), a producer without a SendRecord
 * (closed, transactional, no kernel) or whose ``_send_record`` is not a slot, to the function itself. */
enum { SEND_NARGS = 7 }; /* topic, value, key, partition, timestamp, headers, on_delivery */
static const char *const send_arg_names[SEND_NARGS] = {
    "topic", "value", "key", "partition", "timestamp", "headers", "on_delivery",
};
static PyObject *send_arg_str[SEND_NARGS];
static PyObject *send_record_name;
static slot_cache send_record_cache;

typedef struct {
    PyObject_HEAD
    PyObject *func;     /* the Python send() */
    PyObject *declined; /* its part after SendRecord declined */
} SendMethodObject;

typedef struct {
    PyObject_HEAD
    PyObject *func, *declined, *self;
    vectorcallfunc vectorcall;
} BoundSendObject;

static PyTypeObject BoundSendType;

/* the function called with the producer first and the call's own arguments (the TypeError of bad arguments) */
static PyObject *bound_send_python(BoundSendObject *b, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *m = PyMethod_New(b->func, b->self);
    if (m == NULL)
        return NULL;
    PyObject *r = PyObject_Vectorcall(m, args, nargsf, kwnames);
    Py_DECREF(m);
    return r;
}

static PyObject *bound_send_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    BoundSendObject *b = (BoundSendObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > SEND_NARGS || send_record_name == NULL)
        return bound_send_python(b, args, nargsf, kwnames);
    /* the arguments by position, None where not given (``given``: a bit per position) */
    PyObject *v[SEND_NARGS] = {Py_None, Py_None, Py_None, Py_None, Py_None, Py_None, Py_None};
    unsigned int given = (1u << nargs) - 1;
    for (Py_ssize_t i = 0; i < nargs; i++)
        v[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int at = -1;
        for (int j = 0; j < SEND_NARGS && at < 0; j++) {
            if (name == send_arg_str[j])
                at = j;
        }
        for (int j = 0; j < SEND_NARGS && at < 0; j++) {
            if (PyUnicode_Check(name) && PyUnicode_Compare(name, send_arg_str[j]) == 0)
                at = j;
        }
        if (at < 0 || (given & (1u << at))) /* unknown or given twice: Python's TypeError */
            return bound_send_python(b, args, nargsf, kwnames);
        v[at] = args[nargs + k];
        given |= 1u << at;
    }
    if (!(given & 1u)) /* no topic */
        return bound_send_python(b, args, nargsf, kwnames);
    Py_ssize_t off = slot_offset(b->self, send_record_name, &send_record_cache);
    PyObject *sr = off >= 0 ? *(PyObject **)((char *)b->self + off) : NULL; /* borrowed */
    if (sr == NULL || !Py_IS_TYPE(sr, &SendRecordType))
        return bound_send_python(b, args, nargsf, kwnames);
    int no_room = 0;
    if (v[5] == Py_None) {
        Py_INCREF(sr); /* another thread may close the producer (its slot set to None) during the call */
        /* (topic, partition, timestamp, key, value, on_delivery) */
        PyObject *rec[SR_CALL] = {v[0], v[3], v[4], v[2], v[1], v[6]};
        PyObject *future = send_record_core(((SendRecordObject *)sr)->fixed, rec, &no_room, &((SendRecordObject *)sr)->cache);
        Py_DECREF(sr);
        if (future != Py_NotImplemented)
            return future;
        Py_DECREF(future);
    }
    PyObject *call[2 + SEND_NARGS] = {b->self, v[0], v[1], v[2], v[3], v[4], v[5], v[6], no_room ? Py_True : Py_False};
    return PyObject_Vectorcall(b->declined, call, 2 + SEND_NARGS, NULL);
}

static int bound_send_traverse(PyObject *op, visitproc visit, void *arg)
{
    BoundSendObject *b = (BoundSendObject *)op;
    Py_VISIT(b->func);
    Py_VISIT(b->declined);
    Py_VISIT(b->self);
    return 0;
}

static void bound_send_dealloc(PyObject *op)
{
    BoundSendObject *b = (BoundSendObject *)op;
    PyObject_GC_UnTrack(op);
    Py_XDECREF(b->func);
    Py_XDECREF(b->declined);
    Py_XDECREF(b->self);
    PyObject_GC_Del(op);
}

static PyObject *bound_send_richcompare(PyObject *a, PyObject *o, int op)
{
    if ((op != Py_EQ && op != Py_NE) || !Py_IS_TYPE(o, &BoundSendType))
        Py_RETURN_NOTIMPLEMENTED;
    BoundSendObject *x = (BoundSendObject *)a, *y = (BoundSendObject *)o;
    int eq = x->func == y->func && x->self == y->self;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t bound_send_hash(PyObject *op)
{
    BoundSendObject *b = (BoundSendObject *)op;
    Py_hash_t h = PyObject_Hash(b->func);
    if (h == -1)
        return -1;
    h ^= (Py_hash_t)((uintptr_t)b->self >> 4);
    return h == -1 ? -2 : h;
}

static PyObject *bound_send_repr(PyObject *op)
{
    BoundSendObject *b = (BoundSendObject *)op;
    return PyUnicode_FromFormat("<bound method KafkaProducer.send of %R>", b->self);
}

/* __doc__, __name__, __qualname__, __module__, __annotations__...: the function's */
static PyObject *bound_send_getattro(PyObject *op, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr(op, name);
    if (r != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return r;
    PyErr_Clear();
    return PyObject_GetAttr(((BoundSendObject *)op)->func, name);
}

static PyObject *bound_send_wrapped(PyObject *op, void *closure)
{
    BoundSendObject *b = (BoundSendObject *)op;
    return PyMethod_New(b->func, b->self); /* inspect.signature(producer.send) follows it */
}

static PyMemberDef bound_send_members[] = {
    {"__func__", T_OBJECT, offsetof(BoundSendObject, func), READONLY, NULL},
    {"__self__", T_OBJECT, offsetof(BoundSendObject, self), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *bound_send_doc(PyObject *op, void *closure)
{
    return PyObject_GetAttrString(((BoundSendObject *)op)->func, "__doc__");
}

static PyGetSetDef bound_send_getset[] = {
    {"__wrapped__", bound_send_wrapped, NULL, NULL, NULL},
    {"__doc__", bound_send_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BoundSendType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.BoundSend",
    .tp_basicsize = sizeof(BoundSendObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "KafkaProducer.send bound to a producer (SendMethod's).",
    .tp_traverse = bound_send_traverse,
    .tp_dealloc = bound_send_dealloc,
    .tp_richcompare = bound_send_richcompare,
    .tp_hash = bound_send_hash,
    .tp_repr = bound_send_repr,
    .tp_getattro = bound_send_getattro,
    .tp_members = bound_send_members,
    .tp_getset = bound_send_getset,
    .tp_vectorcall_offset = offsetof(BoundSendObject, vectorcall),
    .tp_call = PyVectorcall_Call,
};

static PyObject *send_method_get(PyObject *op, PyObject *obj, PyObject *type)
{
    SendMethodObject *m = (SendMethodObject *)op;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(m->func);
    BoundSendObject *b = PyObject_GC_New(BoundSendObject, &BoundSendType);
    if (b == NULL)
        return NULL;
    b->func = Py_NewRef(m->func);
    b->declined = Py_NewRef(m->declined);
    b->self = Py_NewRef(obj);
    b->vectorcall = bound_send_vectorcall;
    PyObject_GC_Track((PyObject *)b);
    return (PyObject *)b;
}

static PyObject *send_method_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *func, *declined;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) || !PyArg_ParseTuple(args, "OO:SendMethod", &func, &declined))
        return NULL;
    if (send_record_name == NULL) {
        for (int i = 0; i < SEND_NARGS; i++) {
            if ((send_arg_str[i] = PyUnicode_InternFromString(send_arg_names[i])) == NULL)
                return NULL;
        }
        if ((send_record_name = PyUnicode_InternFromString("_send_record")) == NULL)
            return NULL;
    }
    SendMethodObject *self = (SendMethodObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->func = Py_NewRef(func);
    self->declined = Py_NewRef(declined);
    return (PyObject *)self;
}

static int send_method_traverse(PyObject *op, visitproc visit, void *arg)
{
    Py_VISIT(((SendMethodObject *)op)->func);
    Py_VISIT(((SendMethodObject *)op)->declined);
    return 0;
}

static void send_method_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    Py_XDECREF(((SendMethodObject *)op)->func);
    Py_XDECREF(((SendMethodObject *)op)->declined);
    Py_TYPE(op)->tp_free(op);
}

static PyMemberDef send_method_members[] = {
    {"__func__", T_OBJECT, offsetof(SendMethodObject, func), READONLY, NULL},
    {"__wrapped__", T_OBJECT, offsetof(SendMethodObject, func), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(send_method_doc,
    "SendMethod(send, declined): KafkaProducer.send's descriptor. On the class it is ``send`` itself; on a\n"
    "producer a bound callable with send's arguments that calls the producer's ``_send_record`` (a SendRecord)\n"
    "without a Python frame when there are no headers, and returns its future; when it declines (NotImplemented,\n"
    "nothing appended) it returns ``declined(producer, topic, value, key, partition, timestamp, headers,\n"
    "on_delivery, no_room)`` (``no_room`` True: the record passed send()'s checks and the metadata and only found\n"
    "no open batch with room and no memory free at once for a new one); without a SendRecord, or for arguments\n"
    "it does not parse, ``send(producer, ...)``.");

static PyTypeObject SendMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SendMethod",
    .tp_basicsize = sizeof(SendMethodObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = send_method_doc,
    .tp_new = send_method_new,
    .tp_traverse = send_method_traverse,
    .tp_dealloc = send_method_dealloc,
    .tp_descr_get = send_method_get,
    .tp_members = send_method_members,
};
