/* kernel/producer_request.c.h
 *
 * The Sender's produce requests: the request frame (encode_produce_request), its body from the drained
 * batches (produce_request_data, sender_setup) and a request's parts from the drained batches in one call
 * (drained_request).
 * Uses: producer_batch_encode.c.h (encode_batch), slot_access (cached_get and cached_set: the batches' and the
 * request's slots at their offsets).
 */

/* ---- produce request frames ------------------------------------------------------------------------ */

/* A growing output of chunks: ``cur`` is the bytearray being written; a large records payload is its own
 * chunk (the object itself, not copied), as the reference Writer does. */
typedef struct {
    PyObject *chunks;  /* list */
    PyObject *cur;     /* bytearray */
} frame_out;

static int fo_put(frame_out *o, const void *p, Py_ssize_t n)
{
    Py_ssize_t len = PyByteArray_GET_SIZE(o->cur);
    if (PyByteArray_Resize(o->cur, len + n) < 0)
        return -1;
    memcpy(PyByteArray_AS_STRING(o->cur) + len, p, (size_t)n);
    return 0;
}

static int fo_be(frame_out *o, uint64_t v, int bytes)
{
    uint8_t b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    return fo_put(o, b, bytes);
}

static int fo_uvarint(frame_out *o, uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return fo_put(o, b, n);
}

/* 1: written, 0: not handled (None, over 32767 bytes, not a str: the reference decides), -1: error */
static int fo_string(frame_out *o, PyObject *s, int compact, int nullable)
{
    if (s == Py_None) {
        if (!nullable)
            return 0;
        return (compact ? fo_put(o, "\0", 1) : fo_put(o, "\xff\xff", 2)) < 0 ? -1 : 1;
    }
    if (!PyUnicode_CheckExact(s))
        return 0;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (n > 0x7FFF)
        return 0;
    if ((compact ? fo_uvarint(o, (uint64_t)n + 1) : fo_be(o, (uint64_t)n, 2)) < 0 || fo_put(o, u, n) < 0)
        return -1;
    return 1;
}

/* an int attribute of obj within [lo, hi]; 1 ok, 0 not handled, -1 error */
static int int_attr(PyObject *obj, const char *name, long long lo, long long hi, long long *out)
{
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (v == NULL)
        return -1;
    if (!PyLong_CheckExact(v)) {
        Py_DECREF(v);
        return 0;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (overflow || x < lo || x > hi)
        return 0;
    *out = x;
    return 1;
}

/* 1 when obj's unknown_tagged_fields is None or empty, 0 otherwise, -1 on error */
static int no_unknown_tags(PyObject *obj)
{
    PyObject *t = PyObject_GetAttrString(obj, "unknown_tagged_fields");
    if (t == NULL)
        return -1;
    int empty = t == Py_None || (PyList_CheckExact(t) && PyList_GET_SIZE(t) == 0);
    Py_DECREF(t);
    return empty;
}

#define INLINE_RECORDS_MAX 512

/* ---- producer: a produce request's body straight from the drained batches (Sender.send_produce_request) -------- */

/* The Sender's request type (a ProduceRequest whose topic_data is built only when read), set by
 * produce_request_setup(); its ``parts`` slot is the [(TopicPartition, records bytes)] drained, or None once
 * topic_data was built (then the attribute path of produce_frame encodes it). */
static PyTypeObject *parts_request_type = NULL;
static PyObject *s_parts = NULL, *s_tid = NULL, *s_acks = NULL, *s_timeout = NULL;
/* the slot caches of the request's transactional_id, acks, timeout_ms, unknown_tagged_fields and parts (the Sender's
 * DrainedProduceRequest: a slotted dataclass) */
enum { RQ_TID, RQ_ACKS, RQ_TIMEOUT, RQ_TAGS, RQ_PARTS, RQ_COUNT };
static slot_cache req_cache[RQ_COUNT];

/* BatchOutcome and the FINISHED state (complete_produce_response's outcomes), set by sender_setup() */
static PyTypeObject *outcome_type = NULL;
static PyObject *finished_state = NULL;

PyDoc_STRVAR(sender_setup_doc,
"sender_setup(request_type, BatchOutcome, FINISHED): the ProduceRequest subclass whose ``parts``\n"
"encode_produce_request writes directly, and the outcome type and state complete_produce_response completes.");

static PyObject *k_sender_setup(PyObject *self, PyObject *args)
{
    PyObject *arg, *otype, *finished;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyType_Type, &arg, &PyType_Type, &otype, &finished))
        return NULL;
    if (s_parts == NULL) {
        if ((s_parts = PyUnicode_InternFromString("parts")) == NULL
            || (s_tid = PyUnicode_InternFromString("transactional_id")) == NULL
            || (s_acks = PyUnicode_InternFromString("acks")) == NULL
            || (s_timeout = PyUnicode_InternFromString("timeout_ms")) == NULL)
            return NULL;
    }
    Py_INCREF(arg);
    Py_XSETREF(parts_request_type, (PyTypeObject *)arg);
    Py_INCREF(otype);
    Py_XSETREF(outcome_type, (PyTypeObject *)otype);
    Py_INCREF(finished);
    Py_XSETREF(finished_state, finished);
    Py_RETURN_NONE;
}

/* A records field of bytes ``rec`` (its length, then the payload; a payload of INLINE_RECORDS_MAX bytes or more is
 * its own chunk, the object itself, and a fresh bytearray goes on after it): 0, or -1 on error. */
static int fo_records(frame_out *o, PyObject *rec, int flexible)
{
    Py_ssize_t n = PyBytes_GET_SIZE(rec);
    if ((flexible ? fo_uvarint(o, (uint64_t)n + 1) : fo_be(o, (uint64_t)n, 4)) < 0)
        return -1;
    if (n < INLINE_RECORDS_MAX)
        return fo_put(o, PyBytes_AS_STRING(rec), n);
    PyObject *next = PyByteArray_FromStringAndSize(NULL, 0);
    if (next == NULL || PyList_Append(o->chunks, o->cur) < 0 || PyList_Append(o->chunks, rec) < 0) {
        Py_XDECREF(next);
        return -1;
    }
    Py_SETREF(o->cur, next);
    return 0;
}

/* an exact int within [lo, hi]: 1 (in *out), 0 otherwise */
static inline int int_in(PyObject *v, long long lo, long long hi, long long *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || x < lo || x > hi)
        return 0;
    *out = x;
    return 1;
}

/* The body of a ProduceRequest at a version 3-11: transactional id, acks, timeout, then ``parts``
 * ([(TopicPartition, records bytes)]) grouped by topic in first-seen order, partitions in their order, as
 * Sender.send_produce_request groups them; large records payloads are their own chunks, as produce_frame.
 * 1 written, 0 not handled (a value the reference must judge), -1 error. */
static int produce_request_data(frame_out *o, PyObject *tid, PyObject *acks_o, PyObject *timeout_o, PyObject *parts,
                                int flexible)
{
    long long acks, timeout_ms;
    int rc;
    if (!PyList_CheckExact(parts) || !int_in(acks_o, -32768, 32767, &acks) || !int_in(timeout_o, INT32_MIN, INT32_MAX, &timeout_ms))
        return 0;
    if ((rc = fo_string(o, tid, flexible, 1)) <= 0)
        return rc;
    if (fo_be(o, (uint64_t)(uint16_t)(int16_t)acks, 2) < 0 || fo_be(o, (uint64_t)(uint32_t)(int32_t)timeout_ms, 4) < 0)
        return -1;
    PyObject *by_topic = PyDict_New();
    if (by_topic == NULL)
        return -1;
    rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++) {
        PyObject *part = PyList_GET_ITEM(parts, i), *tp;
        if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) != 2 || !PyTuple_Check(tp = PyTuple_GET_ITEM(part, 0))
            || PyTuple_GET_SIZE(tp) != 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(tp, 0))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(tp, 1)) || !PyBytes_CheckExact(PyTuple_GET_ITEM(part, 1)))
            goto done;
        PyObject *topic = PyTuple_GET_ITEM(tp, 0);
        PyObject *lst = PyDict_GetItemWithError(by_topic, topic);
        if (lst == NULL) {
            if (PyErr_Occurred() || (lst = PyList_New(0)) == NULL)
                goto fail;
            int set = PyDict_SetItem(by_topic, topic, lst);
            Py_DECREF(lst); /* the dict holds it */
            if (set < 0)
                goto fail;
        }
        if (PyList_Append(lst, part) < 0)
            goto fail;
    }
    if ((flexible ? fo_uvarint(o, (uint64_t)PyDict_GET_SIZE(by_topic) + 1) : fo_be(o, (uint64_t)PyDict_GET_SIZE(by_topic), 4)) < 0)
        goto fail;
    Py_ssize_t pos = 0;
    PyObject *topic, *lst;
    while (PyDict_Next(by_topic, &pos, &topic, &lst)) {
        if ((rc = fo_string(o, topic, flexible, 0)) < 0)
            goto fail;
        if (rc == 0)
            goto done;
        rc = 0;
        Py_ssize_t np = PyList_GET_SIZE(lst);
        if ((flexible ? fo_uvarint(o, (uint64_t)np + 1) : fo_be(o, (uint64_t)np, 4)) < 0)
            goto fail;
        for (Py_ssize_t j = 0; j < np; j++) {
            PyObject *part = PyList_GET_ITEM(lst, j), *rec = PyTuple_GET_ITEM(part, 1);
            long long index;
            if (!int_in(PyTuple_GET_ITEM(PyTuple_GET_ITEM(part, 0), 1), INT32_MIN, INT32_MAX, &index))
                goto done;
            if (fo_be(o, (uint64_t)(uint32_t)(int32_t)index, 4) < 0 || fo_records(o, rec, flexible) < 0)
                goto fail;
            if (flexible && fo_put(o, "\0", 1) < 0)
                goto fail;
        }
        if (flexible && fo_put(o, "\0", 1) < 0)
            goto fail;
    }
    if (flexible && fo_put(o, "\0", 1) < 0)
        goto fail;
    rc = 1;
done:
    Py_DECREF(by_topic);
    return rc;
fail:
    Py_DECREF(by_topic);
    return -1;
}

/* produce_frame's body for the Sender's request type while its ``parts`` are set: 1 written, 0 not handled, -1
 * error, 2 not such a body (produce_frame goes on with the attributes). */
static int produce_parts_body(frame_out *o, PyObject *body, int flexible)
{
    if (parts_request_type == NULL || Py_TYPE(body) != parts_request_type)
        return 2;
    PyObject *parts = cached_get(body, s_parts, &req_cache[RQ_PARTS]);
    if (parts == NULL)
        return -1;
    if (parts == Py_None) {
        Py_DECREF(parts);
        return 2;
    }
    PyObject *tid = cached_get(body, s_tid, &req_cache[RQ_TID]), *acks = NULL, *timeout = NULL;
    int rc = -1;
    if (tid != NULL && (acks = cached_get(body, s_acks, &req_cache[RQ_ACKS])) != NULL
        && (timeout = cached_get(body, s_timeout, &req_cache[RQ_TIMEOUT])) != NULL)
        rc = produce_request_data(o, tid, acks, timeout, parts, flexible);
    Py_DECREF(parts);
    Py_XDECREF(tid);
    Py_XDECREF(acks);
    Py_XDECREF(timeout);
    return rc;
}

PyDoc_STRVAR(produce_request_data_doc,
"produce_request_data(transactional_id, acks, timeout_ms, parts, version) -> bytes or None\n\n"
"Reference: ProduceRequest(transactional_id, acks, timeout_ms, topic_data).encode(version) where topic_data\n"
"groups ``parts`` ([(TopicPartition, records bytes)]) by topic in first-seen order, as\n"
"Sender.send_produce_request does (the body encode_produce_request writes for the Sender's request type).\n"
"None for a version outside 3-11 or a value the reference must judge.");

static PyObject *k_produce_request_data(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "produce_request_data takes 5 arguments");
        return NULL;
    }
    long long version;
    if (!int_in(args[4], 3, 11, &version))
        Py_RETURN_NONE;
    frame_out o;
    o.chunks = PyList_New(0);
    o.cur = PyByteArray_FromStringAndSize(NULL, 0);
    PyObject *out = NULL;
    if (o.chunks == NULL || o.cur == NULL)
        goto done;
    int rc = produce_request_data(&o, args[0], args[1], args[2], args[3], version >= 9);
    if (rc < 0)
        goto done;
    if (rc == 0) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (PyList_Append(o.chunks, o.cur) < 0)
        goto done;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o.chunks); i++)
        total += Py_SIZE(PyList_GET_ITEM(o.chunks, i));
    if ((out = PyBytes_FromStringAndSize(NULL, total)) == NULL)
        goto done;
    char *w = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o.chunks); i++) {
        PyObject *c = PyList_GET_ITEM(o.chunks, i);
        Py_ssize_t n = Py_SIZE(c);
        memcpy(w, PyBytes_Check(c) ? PyBytes_AS_STRING(c) : PyByteArray_AS_STRING(c), (size_t)n);
        w += n;
    }
done:
    Py_XDECREF(o.chunks);
    Py_XDECREF(o.cur);
    return out;
}


/* the body of encode_produce_request; 1 written, 0 not handled, -1 error */
static int produce_frame(frame_out *o, PyObject *body, int version, long long correlation_id, PyObject *client_id)
{
    int flexible = version >= 9, rc;
    long long acks, timeout_ms;
    /* size prefix (patched at the end), then the request header (v2 when flexible, else v1) */
    if (fo_put(o, "\0\0\0\0", 4) < 0 || fo_be(o, 0, 2) < 0 || fo_be(o, (uint64_t)version, 2) < 0
        || fo_be(o, (uint64_t)(uint32_t)(int32_t)correlation_id, 4) < 0)
        return -1;
    if ((rc = fo_string(o, client_id, 0, 1)) <= 0)
        return rc;
    if (flexible && fo_put(o, "\0", 1) < 0)
        return -1;
    if ((rc = produce_parts_body(o, body, flexible)) != 2)
        return rc;
    if ((rc = no_unknown_tags(body)) <= 0)
        return rc;
    PyObject *tid = PyObject_GetAttrString(body, "transactional_id");
    if (tid == NULL)
        return -1;
    rc = fo_string(o, tid, flexible, 1);
    Py_DECREF(tid);
    if (rc <= 0)
        return rc;
    if ((rc = int_attr(body, "acks", -32768, 32767, &acks)) <= 0
        || (rc = int_attr(body, "timeout_ms", INT32_MIN, INT32_MAX, &timeout_ms)) <= 0)
        return rc;
    if (fo_be(o, (uint64_t)(uint16_t)(int16_t)acks, 2) < 0 || fo_be(o, (uint64_t)(uint32_t)(int32_t)timeout_ms, 4) < 0)
        return -1;
    PyObject *topics = PyObject_GetAttrString(body, "topic_data");
    if (topics == NULL)
        return -1;
    rc = 0;
    if (!PyList_CheckExact(topics))
        goto done;
    Py_ssize_t nt = PyList_GET_SIZE(topics);
    if ((flexible ? fo_uvarint(o, (uint64_t)nt + 1) : fo_be(o, (uint64_t)nt, 4)) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topics); i++) {
        PyObject *t = PyList_GET_ITEM(topics, i);
        if ((rc = no_unknown_tags(t)) <= 0)
            goto done;
        PyObject *name = PyObject_GetAttrString(t, "name");
        if (name == NULL)
            goto fail;
        rc = fo_string(o, name, flexible, 0);
        Py_DECREF(name);
        if (rc <= 0)
            goto done;
        PyObject *parts = PyObject_GetAttrString(t, "partition_data");
        if (parts == NULL)
            goto fail;
        rc = 0;
        if (!PyList_CheckExact(parts)) {
            Py_DECREF(parts);
            goto done;
        }
        Py_ssize_t np = PyList_GET_SIZE(parts);
        if ((flexible ? fo_uvarint(o, (uint64_t)np + 1) : fo_be(o, (uint64_t)np, 4)) < 0) {
            Py_DECREF(parts);
            goto fail;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(parts); j++) {
            PyObject *pd = PyList_GET_ITEM(parts, j);
            long long index;
            if ((rc = no_unknown_tags(pd)) <= 0 || (rc = int_attr(pd, "index", INT32_MIN, INT32_MAX, &index)) <= 0) {
                Py_DECREF(parts);
                goto done;
            }
            if (fo_be(o, (uint64_t)(uint32_t)(int32_t)index, 4) < 0) {
                Py_DECREF(parts);
                goto fail;
            }
            PyObject *rec = PyObject_GetAttrString(pd, "records");
            if (rec == NULL) {
                Py_DECREF(parts);
                goto fail;
            }
            int ok;
            if (rec == Py_None) {
                ok = flexible ? fo_put(o, "\0", 1) : fo_put(o, "\xff\xff\xff\xff", 4);
            } else if (!PyBytes_CheckExact(rec)) {
                Py_DECREF(rec);
                Py_DECREF(parts);
                rc = 0;
                goto done;
            } else {
                ok = fo_records(o, rec, flexible);
            }
            Py_DECREF(rec);
            if (ok < 0) {
                Py_DECREF(parts);
                goto fail;
            }
            if (flexible && fo_put(o, "\0", 1) < 0) {
                Py_DECREF(parts);
                goto fail;
            }
        }
        Py_DECREF(parts);
        if (flexible && fo_put(o, "\0", 1) < 0)
            goto fail;
    }
    if (flexible && fo_put(o, "\0", 1) < 0)
        goto fail;
    rc = 1;
done:
    Py_DECREF(topics);
    return rc;
fail:
    Py_DECREF(topics);
    return -1;
}

/* The (version, correlation id) arguments of the produce frame functions: 1 when the version is one they handle
 * (3-11) and the id fits int32, 0 otherwise (the reference decides), -1 on a wrong argument count. */
static int produce_frame_args(const char *fn, PyObject *const *args, Py_ssize_t nargs, int *version, long long *cid)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "%s takes 4 arguments", fn);
        return -1;
    }
    long v = PyLong_AsLong(args[1]);
    long long c = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (v < 3 || v > 11 || c < INT32_MIN || c > INT32_MAX)
        return 0;
    *version = (int)v;
    *cid = c;
    return 1;
}

PyDoc_STRVAR(encode_produce_request_doc,
"encode_produce_request(body, version, correlation_id, client_id) -> list of chunks or None\n\n"
"Reference: protocol.headers.encode_request for a ProduceRequest at versions 3-11: the same chunks (bytearrays,\n"
"with a records payload of 512 bytes or more as its own chunk). None for anything else (other versions,\n"
"tagged fields, a records payload that is not bytes, a value out of range): the reference decides.");

static PyObject *k_encode_produce_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int version;
    long long correlation_id;
    int ok = produce_frame_args("encode_produce_request", args, nargs, &version, &correlation_id);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    frame_out o;
    o.chunks = PyList_New(0);
    o.cur = PyByteArray_FromStringAndSize(NULL, 0);
    if (o.chunks == NULL || o.cur == NULL)
        goto fail;
    int rc = produce_frame(&o, args[0], version, correlation_id, args[3]);
    if (rc < 0)
        goto fail;
    if (rc == 0) {
        Py_DECREF(o.chunks);
        Py_DECREF(o.cur);
        Py_RETURN_NONE;
    }
    if (PyByteArray_GET_SIZE(o.cur) > 0 && PyList_Append(o.chunks, o.cur) < 0)
        goto fail;
    Py_CLEAR(o.cur);
    /* the size prefix: every byte after it */
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o.chunks); i++)
        total += Py_SIZE(PyList_GET_ITEM(o.chunks, i));
    total -= 4;
    if (total > INT32_MAX) {
        Py_DECREF(o.chunks);
        Py_RETURN_NONE;
    }
    uint8_t *first = (uint8_t *)PyByteArray_AS_STRING(PyList_GET_ITEM(o.chunks, 0));
    for (int i = 0; i < 4; i++)
        first[i] = (uint8_t)((uint64_t)total >> (8 * (3 - i)));
    return o.chunks;
fail:
    Py_XDECREF(o.chunks);
    Py_XDECREF(o.cur);
    return NULL;
}

/* ---- producer: a produce request's parts from the drained batches in one call ----------------------------------- */

/* The attributes of a ProducerBatch drained_request reads and writes (interned at first use). */
enum { D_TP, D_COMPRESSED, D_PENDING, D_PID, D_EPOCH, D_SEQ, D_TXN, D_BUILT, D_BUILT_STATE, D_RATIO, D_STAMP,
       D_UNKNOWN_TAGS, D_COUNT };
static PyObject *dattr[D_COUNT];
/* their slot caches (ProducerBatch is slotted; cached_get and cached_set go by name otherwise) */
static slot_cache dcache[D_COUNT];
static PyObject *one_float = NULL;

static int drained_names(void)
{
    static const char *const names[D_COUNT] = {
        "topic_partition", "is_compressed", "pending", "producer_id", "producer_epoch", "base_sequence",
        "is_transactional", "encoded", "encoded_state", "actual_compression_ratio", "sent_stamp",
        "unknown_tagged_fields"};
    if (dattr[0] != NULL)
        return 0;
    for (int i = 0; i < D_COUNT; i++)
        if ((dattr[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    return (one_float = PyFloat_FromDouble(1.0)) == NULL ? -1 : 0;
}

/* One batch of drained_request: ProducerBatch.records() (its cached bytes, or encode_batch's uncompressed kernel
 * path, the cache updated as records() updates it) then mark_sent(); appended to parts and by_tp. 1 done, 0 declined
 * (the kernel's encode_batch declined: the reference must encode; the batch left as records() would leave it only
 * for the batches before), -1 error. */
static int drained_one(PyObject *b, PyObject *crc32c, PyObject *parts, PyObject *by_tp, long long *records,
                       long long *size)
{
    PyObject *v[D_COUNT] = {NULL};
    PyObject *state = NULL, *stamp = NULL, *part = NULL, *data = NULL;
    int rc = -1, i;
    for (i = 0; i <= D_BUILT_STATE; i++)
        if ((v[i] = cached_get(b, dattr[i], &dcache[i])) == NULL)
            goto out;
    if (v[D_COMPRESSED] != Py_False) {
        rc = 0; /* (a compressed batch moves the compression estimate: Sender's loop does it) */
        goto out;
    }
    if ((state = PyTuple_Pack(4, v[D_PID], v[D_EPOCH], v[D_SEQ], v[D_TXN])) == NULL)
        goto out;
    int same = 0;
    if (v[D_BUILT] != Py_None && (same = PyObject_RichCompareBool(v[D_BUILT_STATE], state, Py_EQ)) < 0)
        goto out;
    if (same) {
        if (!PyBytes_Check(v[D_BUILT])) {
            rc = 0; /* (cached bytes of another type: the reference judges them) */
            goto out;
        }
        data = v[D_BUILT];
        Py_INCREF(data);
    } else {
        PyObject *args[6] = {v[D_PENDING], v[D_PID], v[D_EPOCH], v[D_SEQ], v[D_TXN], crc32c};
        if ((data = k_encode_batch(NULL, args, 6)) == NULL)
            goto out;
        if (data == Py_None) {
            rc = 0;
            goto out;
        }
        if (cached_set(b, dattr[D_BUILT], &dcache[D_BUILT], data) < 0
            || cached_set(b, dattr[D_RATIO], &dcache[D_RATIO], one_float) < 0
            || cached_set(b, dattr[D_BUILT_STATE], &dcache[D_BUILT_STATE], state) < 0)
            goto out;
    }
    if ((stamp = PyTuple_Pack(3, v[D_PID], v[D_EPOCH], v[D_SEQ])) == NULL
        || cached_set(b, dattr[D_STAMP], &dcache[D_STAMP], stamp) < 0)
        goto out;
    Py_ssize_t n = PyObject_Size(v[D_PENDING]);
    if (n < 0)
        goto out;
    *records += n;
    *size += PyBytes_GET_SIZE(data);
    if ((part = PyTuple_Pack(2, v[D_TP], data)) == NULL || PyDict_SetItem(by_tp, v[D_TP], b) < 0
        || PyList_Append(parts, part) < 0)
        goto out;
    rc = 1;
out:
    for (i = 0; i < D_COUNT; i++)
        Py_XDECREF(v[i]);
    Py_XDECREF(state);
    Py_XDECREF(stamp);
    Py_XDECREF(part);
    Py_XDECREF(data);
    return rc;
}

PyDoc_STRVAR(drained_request_doc,
"drained_request(batches, crc32c, transactional_id, acks, timeout_ms) -> (request, by_tp, records, size) or None\n\n"
"Sender._drained_request's loop over the drained ``batches`` compiled, for uncompressed batches:\n"
"each batch's ProducerBatch.records() (its bytes built as encode_batch's kernel path builds them, cached as\n"
"records() caches them) and mark_sent(); the request is the sender_setup request type (DrainedProduceRequest.of)\n"
"of the [(topic_partition, bytes)] parts, by_tp {topic_partition: batch}, records and size the sums of the\n"
"batches' record counts and byte sizes. None where the reference must do it (a compressed batch, a batch the\n"
"kernel's encode_batch declines, no request type set up): what was done before is what the reference redoes.");

static PyObject *k_drained_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "drained_request takes 5 arguments");
        return NULL;
    }
    PyObject *batches = args[0];
    if (parts_request_type == NULL || !PyList_CheckExact(batches))
        Py_RETURN_NONE;
    if (drained_names() < 0)
        return NULL;
    PyObject *parts = PyList_New(0), *by_tp = PyDict_New(), *req = NULL;
    long long records = 0, size = 0;
    if (parts == NULL || by_tp == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(batches); i++) {
        int rc = drained_one(PyList_GET_ITEM(batches, i), args[1], parts, by_tp, &records, &size);
        if (rc < 0)
            goto fail;
        if (rc == 0) {
            Py_DECREF(parts);
            Py_DECREF(by_tp);
            Py_RETURN_NONE;
        }
    }
    /* DrainedProduceRequest.of: no __init__, topic_data left unbuilt */
    if ((req = parts_request_type->tp_alloc(parts_request_type, 0)) == NULL
        || cached_set(req, s_tid, &req_cache[RQ_TID], args[2]) < 0
        || cached_set(req, s_acks, &req_cache[RQ_ACKS], args[3]) < 0
        || cached_set(req, s_timeout, &req_cache[RQ_TIMEOUT], args[4]) < 0
        || cached_set(req, dattr[D_UNKNOWN_TAGS], &req_cache[RQ_TAGS], Py_None) < 0
        || cached_set(req, s_parts, &req_cache[RQ_PARTS], parts) < 0)
        goto fail;
    Py_DECREF(parts);
    return Py_BuildValue("(NNLL)", req, by_tp, records, size);
fail:
    Py_XDECREF(parts);
    Py_XDECREF(by_tp);
    Py_XDECREF(req);
    return NULL;
}
