/* kernel/broker_produce_response.c.h
 *
 * mini_broker's Produce response: the ProduceResponse frame of the usual answer
 * (encode_produce_response) and the frame straight from the partitions' results (produce_results_frame,
 * any_transactional).
 * Uses: producer_batch_encode.c.h (wr_be).
 */

/* ---- broker: the ProduceResponse frame of the usual answer (mini_broker/server/apis/produce_wire.py) --------- */

enum { PR_CURRENT_LEADER, PR_LEADER_ID, PR_LEADER_EPOCH, PR_INDEX, PR_ERROR_CODE, PR_BASE_OFFSET, PR_LOG_APPEND_TIME_MS, PR_LOG_START_OFFSET, PR_RECORD_ERRORS, PR_ERROR_MESSAGE, PR_NODE_ENDPOINTS, PR_RESPONSES, PR_NAME, PR_PARTITION_RESPONSES, PR_THROTTLE_TIME_MS, PR_NAMES };
static PyObject *pr_names[PR_NAMES];

/* the attribute names, interned once (PyObject_GetAttrString would make and hash each name on every call) */
static int pr_setup_names(void)
{
    static const char *const spelled[PR_NAMES] = {"current_leader", "leader_id", "leader_epoch", "index", "error_code", "base_offset", "log_append_time_ms", "log_start_offset", "record_errors", "error_message", "node_endpoints", "responses", "name", "partition_responses", "throttle_time_ms"};
    if (pr_names[0] != NULL)
        return 0;
    for (int i = 0; i < PR_NAMES; i++) {
        PyObject *n = PyUnicode_InternFromString(spelled[i]);
        if (n == NULL)
            return -1;
        pr_names[i] = n;
    }
    return 0;
}

typedef struct {
    uint8_t *buf;
    Py_ssize_t len, cap;
} pr_out;

static int pr_reserve(pr_out *o, Py_ssize_t n)
{
    if (o->len + n <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2 > o->len + n ? o->cap * 2 : o->len + n + 64;
    uint8_t *b = PyMem_Realloc(o->buf, (size_t)cap);
    if (b == NULL)
        return -1;
    o->buf = b;
    o->cap = cap;
    return 0;
}

static int pr_be(pr_out *o, uint64_t v, int n)
{
    if (pr_reserve(o, n) < 0)
        return -1;
    wr_be(o->buf + o->len, v, n);
    o->len += n;
    return 0;
}

/* an unsigned varint (compact lengths and counts, n + 1) */
static int pr_uvarint(pr_out *o, uint64_t v)
{
    if (pr_reserve(o, 10) < 0)
        return -1;
    do {
        uint8_t b = v & 0x7F;
        v >>= 7;
        o->buf[o->len++] = (uint8_t)(v ? (b | 0x80) : b);
    } while (v);
    return 0;
}

/* attribute ``name`` of ``obj`` as an int in [lo, hi]; 0 ok, 1 not such an int (declined), -1 error */
static int pr_int_attr(PyObject *obj, int name, long long lo, long long hi, long long *out)
{
    PyObject *v = PyObject_GetAttr(obj, pr_names[name]);
    if (v == NULL)
        return -1;
    if (!PyLong_Check(v)) {
        Py_DECREF(v);
        return 1;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow || x < lo || x > hi)
        return 1;
    *out = x;
    return 0;
}

/* whether ``p`` (a partition's response or result) has no record errors (an empty list) and no error message: 0 yes,
   1 not (declined), -1 error */
static int pr_no_messages(PyObject *p)
{
    PyObject *errors = PyObject_GetAttr(p, pr_names[PR_RECORD_ERRORS]);
    if (errors == NULL)
        return -1;
    int plain = PyList_CheckExact(errors) && PyList_GET_SIZE(errors) == 0;
    Py_DECREF(errors);
    PyObject *message = plain ? PyObject_GetAttr(p, pr_names[PR_ERROR_MESSAGE]) : NULL;
    if (plain && message == NULL)
        return -1;
    plain = plain && message == Py_None;
    Py_XDECREF(message);
    return plain ? 0 : 1;
}

/* a partition's fields at ``version`` when it has no record errors and no error message; 0 written, -1 error */
static int pr_plain_partition(pr_out *o, long version, long long index, long long error_code, long long base_offset,
                              long long log_append_time, long long log_start_offset)
{
    if (pr_be(o, (uint64_t)index, 4) < 0 || pr_be(o, (uint64_t)error_code, 2) < 0 || pr_be(o, (uint64_t)base_offset, 8) < 0 ||
        pr_be(o, (uint64_t)log_append_time, 8) < 0 || (version >= 5 && pr_be(o, (uint64_t)log_start_offset, 8) < 0))
        return -1;
    if (version >= 9) {
        /* no record errors (compact array of 0), a null message, no tags */
        if (pr_reserve(o, 3) < 0)
            return -1;
        o->buf[o->len++] = 1;
        o->buf[o->len++] = 0;
        o->buf[o->len++] = 0;
    } else if (version == 8) {
        if (pr_be(o, 0, 4) < 0 || pr_be(o, 0xFFFF, 2) < 0)
            return -1;
    }
    return 0;
}

/* 0 written, 1 declined, -1 error */
static int pr_partition(pr_out *o, PyObject *p, long version, PyObject *leader_class)
{
    PyObject *leader = PyObject_GetAttr(p, pr_names[PR_CURRENT_LEADER]);
    if (leader == NULL)
        return -1;
    long long leader_id = 0, leader_epoch = 0;
    int r = Py_TYPE(leader) != (PyTypeObject *)leader_class ? 1 : pr_int_attr(leader, PR_LEADER_ID, -1, -1, &leader_id);
    if (r == 0)
        r = pr_int_attr(leader, PR_LEADER_EPOCH, -1, -1, &leader_epoch);
    Py_DECREF(leader);
    if (r != 0)
        return r;
    long long index, error_code, base_offset, log_append_time, log_start_offset = 0;
    if ((r = pr_int_attr(p, PR_INDEX, INT32_MIN, INT32_MAX, &index)) != 0 ||
        (r = pr_int_attr(p, PR_ERROR_CODE, INT16_MIN, INT16_MAX, &error_code)) != 0 ||
        (r = pr_int_attr(p, PR_BASE_OFFSET, INT64_MIN, INT64_MAX, &base_offset)) != 0 ||
        (r = pr_int_attr(p, PR_LOG_APPEND_TIME_MS, INT64_MIN, INT64_MAX, &log_append_time)) != 0 ||
        (version >= 5 && (r = pr_int_attr(p, PR_LOG_START_OFFSET, INT64_MIN, INT64_MAX, &log_start_offset)) != 0))
        return r;
    /* no record errors and no error message: anything else is the Python encoder's */
    if (version >= 8 && (r = pr_no_messages(p)) != 0)
        return r;
    return pr_plain_partition(o, version, index, error_code, base_offset, log_append_time, log_start_offset);
}

/* 0 written, 1 declined, -1 error */
static int pr_count(pr_out *o, Py_ssize_t n, int flexible)
{
    if (n > INT32_MAX - 1)
        return 1;
    return flexible ? pr_uvarint(o, (uint64_t)n + 1) : pr_be(o, (uint64_t)n, 4);
}

static int pr_body(pr_out *o, PyObject *body, long version, PyObject *leader_class)
{
    int flexible = version >= 9, r;
    PyObject *endpoints = PyObject_GetAttr(body, pr_names[PR_NODE_ENDPOINTS]);
    if (endpoints == NULL)
        return -1;
    int no_endpoints = PyList_CheckExact(endpoints) && PyList_GET_SIZE(endpoints) == 0;
    Py_DECREF(endpoints);
    if (!no_endpoints)
        return 1;
    PyObject *responses = PyObject_GetAttr(body, pr_names[PR_RESPONSES]);
    if (responses == NULL)
        return -1;
    r = PyList_CheckExact(responses) ? pr_count(o, PyList_GET_SIZE(responses), flexible) : 1;
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(responses); i++) {
        PyObject *topic = PyList_GET_ITEM(responses, i);
        PyObject *name = PyObject_GetAttr(topic, pr_names[PR_NAME]);
        if (name == NULL) {
            r = -1;
            break;
        }
        Py_ssize_t n = 0;
        const char *utf8 = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
        if (utf8 == NULL) {
            PyErr_Clear();
            r = 1;
        } else if (n > 0x7FFF) {
            r = 1;
        } else if ((flexible ? pr_uvarint(o, (uint64_t)n + 1) : pr_be(o, (uint64_t)n, 2)) < 0 || pr_reserve(o, n) < 0) {
            r = -1;
        } else {
            memcpy(o->buf + o->len, utf8, (size_t)n);
            o->len += n;
        }
        Py_DECREF(name);
        if (r != 0)
            break;
        PyObject *parts = PyObject_GetAttr(topic, pr_names[PR_PARTITION_RESPONSES]);
        if (parts == NULL) {
            r = -1;
            break;
        }
        r = PyList_CheckExact(parts) ? pr_count(o, PyList_GET_SIZE(parts), flexible) : 1;
        for (Py_ssize_t j = 0; r == 0 && j < PyList_GET_SIZE(parts); j++)
            r = pr_partition(o, PyList_GET_ITEM(parts, j), version, leader_class);
        Py_DECREF(parts);
        if (r == 0 && flexible)
            r = pr_uvarint(o, 0); /* the topic's tags */
    }
    Py_DECREF(responses);
    if (r != 0)
        return r;
    long long throttle;
    if ((r = pr_int_attr(body, PR_THROTTLE_TIME_MS, INT32_MIN, INT32_MAX, &throttle)) != 0)
        return r;
    if (pr_be(o, (uint64_t)throttle, 4) < 0 || (flexible && pr_uvarint(o, 0) < 0))
        return -1;
    return 0;
}

/* The end of a response frame built in o after its size and correlation id (and, flexible, the header's tags):
 * those written, the bytes made and o's buffer freed. r is the build's outcome: 0 done, 1 declined (also where the
 * frame is too long for its size field), -1 an error set. Bytes; None where it declines; NULL on error. */
static PyObject *pr_frame_done(pr_out *o, int r, long long correlation_id, int flexible)
{
    PyObject *out = NULL;
    if (r == 0 && o->len - 4 > INT32_MAX)
        r = 1;
    if (r == 0) {
        wr_be(o->buf, (uint64_t)(o->len - 4), 4);
        wr_be(o->buf + 4, (uint64_t)correlation_id, 4);
        if (flexible)
            o->buf[8] = 0;
        out = PyBytes_FromStringAndSize((const char *)o->buf, o->len);
    } else if (r == 1) {
        out = Py_NewRef(Py_None);
    }
    PyMem_Free(o->buf);
    return out;
}

PyDoc_STRVAR(encode_produce_response_doc,
    "encode_produce_response(body, version, correlation_id, leader_class) -> bytes | None\n\n"
    "The whole frame (size prefix, header, body) of a ProduceResponse at v3-v11 whose partitions have no record\n"
    "errors, no error message and a current leader of exactly ``leader_class`` at (-1, -1), without node endpoints;\n"
    "None for anything else. Reference: produce_wire's Python encoder (the same bytes).");

static PyObject *k_encode_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "encode_produce_response takes 4 arguments");
        return NULL;
    }
    long version = PyLong_AsLong(args[1]);
    long long correlation_id = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (version < 3 || version > 11 || correlation_id < INT32_MIN || correlation_id > INT32_MAX ||
        !PyType_Check(args[3]))
        Py_RETURN_NONE;
    int flexible = version >= 9;
    if (pr_setup_names() < 0)
        return NULL;
    pr_out o = {NULL, 0, 0};
    if (pr_reserve(&o, 256) < 0)
        return PyErr_NoMemory();
    o.len = flexible ? 9 : 8; /* size, correlation id (and the header's tags), written below */
    int r = pr_body(&o, args[0], version, args[3]);
    if (r != 0) {
        PyErr_Clear(); /* declined, or an error the Python encoder meets (and judges) too */
        r = 1;
    }
    return pr_frame_done(&o, r, correlation_id, flexible);
}

/* ---- broker: a Produce answer's frame straight from the partitions' results ------------------------------------- */

PyDoc_STRVAR(produce_results_frame_doc,
    "produce_results_frame(order, results, version, correlation_id, hint_codes) -> bytes | None\n\n"
    "The whole frame (size prefix, header, body) of the ProduceResponse mini_broker's produce handler builds from\n"
    "``order`` (its TopicPartition tuples, each topic's partitions next to each other) and ``results`` (tp ->\n"
    "PartitionResponse) at v3-v11, without building it: no throttle, no node endpoints. None where it declines: a\n"
    "partition with record errors or an error message at v8+, an error code in ``hint_codes`` at v10+ (a leader\n"
    "hint), a topic whose partitions are not together, a value the wire cannot hold. Reference: produce._build then\n"
    "produce_wire.encode_produce_response (the same bytes).");

/* 0 written, 1 declined, -1 error */
static int rf_partition(pr_out *o, PyObject *partition, PyObject *r, long version, PyObject *hint_codes)
{
    long long index, error_code, base_offset, log_append_time, log_start_offset = 0;
    int rc;
    if (!PyLong_Check(partition))
        return 1;
    int overflow = 0;
    index = PyLong_AsLongLongAndOverflow(partition, &overflow);
    if (index == -1 && PyErr_Occurred())
        return -1;
    if (overflow || index < INT32_MIN || index > INT32_MAX)
        return 1;
    if ((rc = pr_int_attr(r, PR_ERROR_CODE, INT16_MIN, INT16_MAX, &error_code)) != 0 ||
        (rc = pr_int_attr(r, PR_BASE_OFFSET, INT64_MIN, INT64_MAX, &base_offset)) != 0 ||
        (rc = pr_int_attr(r, PR_LOG_APPEND_TIME_MS, INT64_MIN, INT64_MAX, &log_append_time)) != 0 ||
        (version >= 5 && (rc = pr_int_attr(r, PR_LOG_START_OFFSET, INT64_MIN, INT64_MAX, &log_start_offset)) != 0))
        return rc;
    if (error_code != 0 && version >= 10) {
        PyObject *code = PyLong_FromLongLong(error_code);
        if (code == NULL)
            return -1;
        int hinted = PySequence_Contains(hint_codes, code);
        Py_DECREF(code);
        if (hinted != 0)
            return hinted < 0 ? -1 : 1;
    }
    /* no record errors and no error message (below v8 neither is on the wire) */
    if (version >= 8 && (rc = pr_no_messages(r)) != 0)
        return rc;
    return pr_plain_partition(o, version, index, error_code, base_offset, log_append_time, log_start_offset);
}

/* a topic name as the response writes it; 0 written, 1 declined, -1 error */
static int rf_name(pr_out *o, PyObject *name, int flexible)
{
    Py_ssize_t n = 0;
    const char *utf8 = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
    if (utf8 == NULL) {
        PyErr_Clear();
        return 1;
    }
    if (n > 0x7FFF)
        return 1;
    if ((flexible ? pr_uvarint(o, (uint64_t)n + 1) : pr_be(o, (uint64_t)n, 2)) < 0 || pr_reserve(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, utf8, (size_t)n);
    o->len += n;
    return 0;
}

/* the body; ``starts`` holds each topic's first index in ``order`` and then the order's length; 0, 1, -1 */
static int rf_body(pr_out *o, PyObject *order, PyObject *results, long version, PyObject *hint_codes,
                   const Py_ssize_t *starts, Py_ssize_t topics)
{
    int flexible = version >= 9, r = pr_count(o, topics, flexible);
    for (Py_ssize_t t = 0; r == 0 && t < topics; t++) {
        PyObject *first = PyList_GET_ITEM(order, starts[t]);
        r = rf_name(o, PyTuple_GET_ITEM(first, 0), flexible);
        if (r == 0)
            r = pr_count(o, starts[t + 1] - starts[t], flexible);
        for (Py_ssize_t i = starts[t]; r == 0 && i < starts[t + 1]; i++) {
            PyObject *tp = PyList_GET_ITEM(order, i);
            PyObject *result = PyDict_GetItemWithError(results, tp); /* borrowed */
            if (result == NULL)
                return PyErr_Occurred() ? -1 : 1;
            r = rf_partition(o, PyTuple_GET_ITEM(tp, 1), result, version, hint_codes);
        }
        if (r == 0 && flexible)
            r = pr_uvarint(o, 0); /* the topic's tags */
    }
    if (r != 0)
        return r;
    /* no throttle time (and the body's tags: no node endpoints) */
    return pr_be(o, 0, 4) < 0 || (flexible && pr_uvarint(o, 0) < 0) ? -1 : 0;
}

/* each topic's first index in ``order`` (then its length) into ``starts`` (room for n + 1); the number of topics,
   0 where a topic's partitions are not next to each other (declined), -1 on error */
static Py_ssize_t rf_topic_starts(PyObject *order, Py_ssize_t *starts)
{
    Py_ssize_t n = PyList_GET_SIZE(order), topics = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tp = PyList_GET_ITEM(order, i);
        if (!PyTuple_Check(tp) || PyTuple_GET_SIZE(tp) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(tp, 0)))
            return 0;
        PyObject *topic = PyTuple_GET_ITEM(tp, 0);
        if (topics > 0) {
            PyObject *current = PyTuple_GET_ITEM(PyList_GET_ITEM(order, starts[topics - 1]), 0);
            int same = current == topic ? 1 : PyUnicode_Compare(current, topic) == 0;
            if (same)
                continue;
            for (Py_ssize_t t = 0; t < topics - 1; t++) {
                int seen = PyUnicode_Compare(PyTuple_GET_ITEM(PyList_GET_ITEM(order, starts[t]), 0), topic);
                if (seen == -1 && PyErr_Occurred())
                    return -1;
                if (seen == 0)
                    return 0; /* a topic again after another: the handler groups it (the Python path) */
            }
        }
        starts[topics++] = i;
    }
    starts[topics] = n;
    return topics;
}

static PyObject *k_produce_results_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "produce_results_frame takes 5 arguments");
        return NULL;
    }
    PyObject *order = args[0], *results = args[1];
    long version = PyLong_AsLong(args[2]);
    long long correlation_id = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (version < 3 || version > 11 || correlation_id < INT32_MIN || correlation_id > INT32_MAX ||
        !PyList_CheckExact(order) || !PyDict_Check(results) || PyList_GET_SIZE(order) > INT32_MAX - 1)
        Py_RETURN_NONE;
    if (pr_setup_names() < 0)
        return NULL;
    Py_ssize_t local[9], *starts = local, n = PyList_GET_SIZE(order);
    if (n + 1 > (Py_ssize_t)(sizeof(local) / sizeof(local[0]))) {
        starts = PyMem_New(Py_ssize_t, (size_t)n + 1);
        if (starts == NULL)
            return PyErr_NoMemory();
    }
    PyObject *out = NULL;
    pr_out o = {NULL, 0, 0};
    Py_ssize_t topics = rf_topic_starts(order, starts);
    int r = topics < 0 ? -1 : topics == 0 && n > 0 ? 1 : 0;
    int flexible = version >= 9;
    if (r == 0 && pr_reserve(&o, 64 + 48 * n) < 0)
        r = -1;
    if (r == 0) {
        o.len = flexible ? 9 : 8; /* size, correlation id (and the header's tags), written below */
        r = rf_body(&o, order, results, version, args[4], starts, topics);
    }
    out = pr_frame_done(&o, r, correlation_id, flexible);
    if (starts != local)
        PyMem_Free(starts);
    return out;
}

/* The frame of the answer to a request of one topic's one partition whose append was done: error code 0, no record
 * errors, no error message, no leader hint, no throttle, no node endpoints (produce_results_frame's bytes for such a
 * result, without the PartitionResponse read back). The produce appender's (broker_produce_append.c.h). Bytes; None
 * where it declines (a version outside v3-v11, a value the wire cannot hold); NULL on error. */
static PyObject *pr_appended_frame(long version, long long correlation_id, PyObject *topic, long long index,
                                   long long base_offset, long long log_append_time, long long log_start_offset)
{
    if (version < 3 || version > 11 || correlation_id < INT32_MIN || correlation_id > INT32_MAX ||
        index < INT32_MIN || index > INT32_MAX)
        Py_RETURN_NONE;
    int flexible = version >= 9;
    pr_out o = {NULL, 0, 0};
    int r = pr_reserve(&o, 128) < 0 ? -1 : 0;
    if (r == 0) {
        o.len = flexible ? 9 : 8; /* size, correlation id (and the header's tags), written below */
        r = pr_count(&o, 1, flexible);
    }
    if (r == 0)
        r = rf_name(&o, topic, flexible);
    if (r == 0)
        r = pr_count(&o, 1, flexible);
    if (r == 0)
        r = pr_plain_partition(&o, version, index, 0, base_offset, log_append_time, log_start_offset);
    if (r == 0 && flexible)
        r = pr_uvarint(&o, 0); /* the topic's tags */
    if (r == 0)
        r = pr_be(&o, 0, 4) < 0 || (flexible && pr_uvarint(&o, 0) < 0) ? -1 : 0; /* no throttle time, the tags */
    return pr_frame_done(&o, r, correlation_id, flexible);
}

PyDoc_STRVAR(any_transactional_doc,
    "any_transactional(entries) -> bool | None\n\n"
    "Whether the first batch of any entry's records (``entries``: a list of (tp, records) pairs) is a v2 batch with\n"
    "the transactional bit: its magic byte (16) is 2 and bit 4 of its attributes' low byte (22) is set; records\n"
    "that are not bytes, or shorter than that, count as not. None where it declines: a memoryview other than a\n"
    "C-contiguous one of unsigned bytes, an entry that is not a pair. Reference: mini_broker's\n"
    "produce._any_transactional.");

static PyObject *k_any_transactional(PyObject *self, PyObject *entries)
{
    if (!PyList_Check(entries))
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *entry = PyList_GET_ITEM(entries, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2)
            Py_RETURN_NONE;
        PyObject *records = PyTuple_GET_ITEM(entry, 1);
        const uint8_t *p;
        Py_ssize_t n;
        if (PyMemoryView_Check(records)) {
            Py_buffer view;
            if (PyObject_GetBuffer(records, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
                PyErr_Clear(); /* released, or not contiguous: the reference judges it */
                Py_RETURN_NONE;
            }
            int plain = view.ndim == 1 && view.itemsize == 1 && (view.format == NULL || strcmp(view.format, "B") == 0);
            int transactional = plain && view.len >= 23 && ((const uint8_t *)view.buf)[16] == 2 &&
                                (((const uint8_t *)view.buf)[22] & 0x10);
            PyBuffer_Release(&view);
            if (!plain)
                Py_RETURN_NONE;
            if (transactional)
                Py_RETURN_TRUE;
            continue;
        } else if (PyBytes_Check(records)) {
            p = (const uint8_t *)PyBytes_AS_STRING(records);
            n = PyBytes_GET_SIZE(records);
        } else if (PyByteArray_Check(records)) {
            p = (const uint8_t *)PyByteArray_AS_STRING(records);
            n = PyByteArray_GET_SIZE(records);
        } else {
            continue; /* not in memory: the log refuses it */
        }
        if (n >= 23 && p[16] == 2 && (p[22] & 0x10))
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}
