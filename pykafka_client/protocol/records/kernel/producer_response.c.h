/* kernel/producer_response.c.h
 *
 * The Sender's produce responses: decode_produce_response and decode_produce_results, the completion of a
 * response whose partitions all succeeded (complete_produce_response) and the I/O thread's completion callback
 * (handle_produce_response).
 * Uses: slot_access.c.h, producer_pending.c.h, producer_pending_columns.c.h, producer_send_append.c.h (the queue
 * lock), producer_request.c.h.
 */

/* ---- produce responses ----------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
} rd_t;

static int rd_be(rd_t *r, int bytes, int64_t *out)
{
    if (r->end - r->p < bytes)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | r->p[i];
    r->p += bytes;
    /* sign-extend */
    if (bytes < 8 && (v >> (8 * bytes - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * bytes);
    *out = (int64_t)v;
    return 0;
}

static int rd_uvarint32(rd_t *r, uint32_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (r->p >= r->end)
            return -1;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            if (v > 0xFFFFFFFFu)
                return -1;
            *out = (uint32_t)v;
            return 0;
        }
    }
    return -1;
}

/* an array length (int32, or compact: unsigned varint - 1); -1 on anything the reference must judge (null, a
 * count larger than the bytes left could hold at min_size bytes each) */
static Py_ssize_t rd_count(rd_t *r, int compact, int min_size)
{
    int64_t n;
    if (compact) {
        uint32_t u;
        if (rd_uvarint32(r, &u) < 0 || u == 0)
            return -1;
        n = (int64_t)u - 1;
    } else if (rd_be(r, 4, &n) < 0 || n < 0) {
        return -1;
    }
    if (n * min_size > r->end - r->p)
        return -1;
    return (Py_ssize_t)n;
}

/* a string (nullable or not); NULL with no error set: decline */
static PyObject *rd_string(rd_t *r, int compact, int nullable)
{
    int64_t n;
    if (compact) {
        uint32_t u;
        if (rd_uvarint32(r, &u) < 0)
            return NULL;
        n = (int64_t)u - 1;
    } else if (rd_be(r, 2, &n) < 0) {
        return NULL;
    }
    if (n < 0) {
        if (!nullable || (!compact && n != -1))
            return NULL;
        Py_RETURN_NONE;
    }
    if (n > 0x7FFF || n > r->end - r->p)
        return NULL;
    PyObject *out = PyUnicode_DecodeUTF8((const char *)r->p, (Py_ssize_t)n, NULL);
    if (out == NULL) {
        PyErr_Clear();
        return NULL;
    }
    r->p += n;
    return out;
}

/* an empty tag section (one zero byte); anything else is left to the reference */
static int rd_no_tags(rd_t *r)
{
    if (r->p >= r->end || *r->p != 0)
        return -1;
    r->p++;
    return 0;
}

/* The body at versions 3-11 (NULL with no error set: decline): with ``cls`` (ProduceResponse) the reference
 * decoder's dataclasses, record errors, tagged fields and node endpoints declined; without (NULL) the results
 * decode_produce_results hands out, [(topic, [(index, base offset, log append time, log start offset)])] in response
 * order, ``*throttle`` set, declining also any partition with an error or an error message. */
static PyObject *produce_response_read(rd_t *r, int version, PyObject *cls, int64_t *throttle)
{
    int flexible = version >= 9;
    PyObject *topic_cls = NULL, *part_cls = NULL, *leader_cls = NULL, *responses = NULL, *out = NULL;
    if (cls != NULL) {
        topic_cls = PyObject_GetAttrString(cls, "TopicProduceResponse");
        part_cls = topic_cls ? PyObject_GetAttrString(cls, "PartitionProduceResponse") : NULL;
        leader_cls = part_cls ? PyObject_GetAttrString(cls, "LeaderIdAndEpoch") : NULL;
        if (leader_cls == NULL)
            goto done;
    }
    Py_ssize_t nt = rd_count(r, flexible, flexible ? 3 : 6);
    if (nt < 0 || (responses = PyList_New(0)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < nt; i++) {
        PyObject *name = rd_string(r, flexible, 0);
        if (name == NULL)
            goto done;
        Py_ssize_t np = rd_count(r, flexible, flexible ? 33 : (version >= 8 ? 36 : version >= 5 ? 30 : 22));
        PyObject *parts = np < 0 ? NULL : PyList_New(0);
        if (parts == NULL) {
            Py_DECREF(name);
            goto done;
        }
        int ok = 1;
        for (Py_ssize_t j = 0; j < np && ok; j++) {
            int64_t index, error_code, base_offset, log_append_time = -1, log_start_offset = -1;
            PyObject *error_message = Py_None;
            ok = 0;
            if (rd_be(r, 4, &index) < 0 || rd_be(r, 2, &error_code) < 0 || rd_be(r, 8, &base_offset) < 0
                || rd_be(r, 8, &log_append_time) < 0 || (version >= 5 && rd_be(r, 8, &log_start_offset) < 0))
                break;
            Py_INCREF(error_message);
            if (version >= 8) {
                /* record errors: only an empty list here (a batch with invalid records goes to the reference) */
                if (rd_count(r, flexible, 5) != 0)
                    goto part_end;
                Py_DECREF(error_message);
                error_message = rd_string(r, flexible, 1);
                if (error_message == NULL)
                    break;
            }
            if ((flexible && rd_no_tags(r) < 0) || (cls == NULL && (error_code != 0 || error_message != Py_None)))
                goto part_end;
            {
                PyObject *pr = NULL;
                if (cls == NULL) {
                    /* (index, base offset, log append time, log start offset) */
                    const long long vals[4] = {index, base_offset, log_append_time, log_start_offset};
                    pr = PyTuple_New(4);
                    for (int k = 0; k < 4 && pr != NULL; k++) {
                        PyObject *v = PyLong_FromLongLong(vals[k]);
                        if (v == NULL)
                            Py_CLEAR(pr);
                        else
                            PyTuple_SET_ITEM(pr, k, v);
                    }
                } else {
                    PyObject *leader = PyObject_CallNoArgs(leader_cls);
                    PyObject *errors = leader ? PyList_New(0) : NULL;
                    pr = errors ? PyObject_CallFunction(part_cls, "lhLLLOOOO", (long)index, (short)error_code,
                        (long long)base_offset, (long long)log_append_time, (long long)log_start_offset, errors,
                        error_message, leader, Py_None) : NULL;
                    Py_XDECREF(leader);
                    Py_XDECREF(errors);
                }
                if (pr != NULL) {
                    ok = PyList_Append(parts, pr) == 0;
                    Py_DECREF(pr);
                }
            }
        part_end:
            Py_DECREF(error_message);
        }
        if (ok && flexible && rd_no_tags(r) < 0)
            ok = 0;
        PyObject *tr = !ok ? NULL : cls == NULL ? PyTuple_Pack(2, name, parts) : PyObject_CallFunction(topic_cls, "OOO", name, parts, Py_None);
        Py_DECREF(name);
        Py_DECREF(parts);
        if (tr == NULL)
            goto done;
        int rc = PyList_Append(responses, tr);
        Py_DECREF(tr);
        if (rc < 0)
            goto done;
    }
    if (rd_be(r, 4, throttle) < 0 || (flexible && rd_no_tags(r) < 0))
        goto done;
    if (cls == NULL)
        out = Py_NewRef(responses);
    else {
        PyObject *endpoints = PyList_New(0);
        if (endpoints == NULL)
            goto done;
        out = PyObject_CallFunction(cls, "OlOO", responses, (long)*throttle, endpoints, Py_None);
        Py_DECREF(endpoints);
    }
done:
    Py_XDECREF(topic_cls);
    Py_XDECREF(part_cls);
    Py_XDECREF(leader_cls);
    Py_XDECREF(responses);
    return out;
}

/* A Produce response frame's payload at a version 3-11 (correlation id ``cid``): the header checked, the body read by
 * produce_response_read (``cls``, ``*throttle``: see there), no trailing bytes. NULL with no error set: decline. */
static PyObject *produce_response_frame(PyObject *payload, int version, long long cid, PyObject *cls, int64_t *throttle)
{
    Py_buffer view;
    if (PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return NULL;
    }
    rd_t r = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    PyObject *out = NULL;
    int64_t got;
    if (rd_be(&r, 4, &got) == 0 && got == cid && (version < 9 || rd_no_tags(&r) == 0)) {
        out = produce_response_read(&r, version, cls, throttle);
        if (out != NULL && r.p != r.end)
            Py_CLEAR(out); /* trailing bytes: the reference's error */
    }
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(decode_produce_response_doc,
"decode_produce_response(payload, version, correlation_id, ProduceResponse) -> ProduceResponse or None\n\n"
"Reference: protocol.headers.decode_response of a Produce response at versions 3-11 (header and body, no\n"
"trailing bytes). None for anything else: other versions, a correlation id that does not match, record\n"
"errors, tagged fields, bad or truncated input (the reference decides and raises).");

static PyObject *k_decode_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int version;
    long long correlation_id;
    int ok = produce_frame_args("decode_produce_response", args, nargs, &version, &correlation_id);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    int64_t throttle;
    PyObject *out = produce_response_frame(args[0], version, correlation_id, args[3], &throttle);
    return out != NULL || PyErr_Occurred() ? out : Py_NewRef(Py_None);
}

/* ---- producer: a produce response straight into the results the Sender's completion reads ------------------ */

/* The Sender's response type (a ProduceResponse whose ``responses`` are built from ``results`` only when read), set
 * by produce_results_setup(); the names of the slots decode_produce_results fills. */
static PyTypeObject *results_type = NULL;
static PyObject *s_results = NULL, *s_throttle = NULL, *s_endpoints = NULL, *s_unknown_tags = NULL;
static slot_cache results_cache[4];

PyDoc_STRVAR(produce_results_setup_doc,
"produce_results_setup(response_type): the ProduceResponse subclass decode_produce_results makes and\n"
"complete_produce_response reads the ``results`` of.");

static PyObject *k_produce_results_setup(PyObject *self, PyObject *arg)
{
    if (!PyType_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "produce_results_setup takes a type");
        return NULL;
    }
    if (s_results == NULL) {
        if ((s_results = PyUnicode_InternFromString("results")) == NULL
            || (s_throttle = PyUnicode_InternFromString("throttle_time_ms")) == NULL
            || (s_endpoints = PyUnicode_InternFromString("node_endpoints")) == NULL
            || (s_unknown_tags = PyUnicode_InternFromString("unknown_tagged_fields")) == NULL)
            return NULL;
    }
    Py_INCREF(arg);
    Py_XSETREF(results_type, (PyTypeObject *)arg);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(decode_produce_results_doc,
"decode_produce_results(cls, payload, version, correlation_id) -> cls instance or None\n\n"
"Reference: protocol.headers.decode_response of a Produce response at versions 3-11 whose partitions all\n"
"succeeded (error NONE, no record errors, no error message, no tagged fields, no node endpoints): an instance\n"
"of ``cls`` (the type given to produce_results_setup, a ProduceResponse subclass) with ``results`` set to\n"
"[(topic, [(index, base_offset, log_append_time_ms, log_start_offset)])] in response order, throttle_time_ms,\n"
"node_endpoints [] and no unknown tagged fields, without calling its __init__. None for anything else (errors,\n"
"other versions, a correlation id that does not match, bad, truncated or trailing input): the reference decides.");

static PyObject *k_decode_produce_results(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int version;
    long long correlation_id;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode_produce_results takes 4 arguments");
        return NULL;
    }
    if (results_type == NULL || args[0] != (PyObject *)results_type)
        Py_RETURN_NONE;
    /* (payload, version, correlation id) as the other produce frame functions take them */
    int ok = produce_frame_args("decode_produce_results", args + 1, nargs, &version, &correlation_id);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    int64_t throttle = 0;
    PyObject *results = produce_response_frame(args[1], version, correlation_id, NULL, &throttle), *out = NULL;
    if (results == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    static PyObject *empty = NULL;
    PyObject *t = NULL, *endpoints = NULL;
    if (empty == NULL && (empty = PyTuple_New(0)) == NULL) {
        Py_DECREF(results);
        return NULL;
    }
    /* the slots set at their offsets (results_cache: the response type's slots) */
    out = PyBaseObject_Type.tp_new(results_type, empty, NULL);
    if (out == NULL || (t = PyLong_FromLongLong(throttle)) == NULL || (endpoints = PyList_New(0)) == NULL
        || cached_set(out, s_results, &results_cache[0], results) < 0 || cached_set(out, s_throttle, &results_cache[1], t) < 0
        || cached_set(out, s_endpoints, &results_cache[2], endpoints) < 0
        || cached_set(out, s_unknown_tags, &results_cache[3], Py_None) < 0)
        Py_CLEAR(out);
    Py_XDECREF(t);
    Py_XDECREF(endpoints);
    Py_DECREF(results);
    return out;
}

/* ---- producer: a produce response whose partitions all succeeded (Sender._handle_produce_response) --------- */

/* Attribute names this region reads (interned on first use). */
enum {
    P_TM, P_GMO, P_IN_FLIGHT, P_ACC, P_RESPONSES, P_NAME, P_PARTS, P_INDEX, P_ERROR, P_RECORD_ERRORS, P_BASE, P_LAT,
    P_FINAL, P_SPLIT, P_HAS_CB, P_TP, P_PENDING, P_OUTCOME, P_HANDLE, P_COMPLETE, P_DEALLOC, P_UNMUTE, P_INVOKE,
    P_CONDITION, P_ACQUIRE, P_RELEASE, P_WATCHED, P_STATE, P_O_LAT, P_TIMESTAMPS, P_KEY_SIZES, P_VALUE_SIZES,
    P_COMPLETE_RECORDS, P_CALLS, P_WAITING, P_LOCK, P_SB_COUNT, P_COUNT
};
static const char *const pr_attr_names[P_COUNT] = {
    "transaction_manager", "guarantee_message_order", "in_flight_batches", "accumulator", "responses", "name",
    "partition_responses", "index", "error_code", "record_errors", "base_offset", "log_append_time_ms", "final_state",
    "split", "has_callbacks", "topic_partition", "pending", "outcome", "handle_completed_batch", "complete_success",
    "deallocate", "unmute_partition", "_invoke_callbacks", "condition", "acquire", "release", "watched", "state",
    "log_append_time", "timestamps", "key_sizes", "value_sizes", "complete_records", "calls", "waiting", "lock",
    "count",
};
static PyObject *pattr[P_COUNT];

static int pattr_init(void)
{
    if (pattr[0] != NULL)
        return 0;
    for (int i = 0; i < P_COUNT; i++) {
        PyObject *s = PyUnicode_InternFromString(pr_attr_names[i]);
        if (s == NULL)
            return -1;
        pattr[i] = s;
    }
    return 0;
}

/* 1 when v is the int 0 (an exact int), 0 otherwise */
static inline int is_int_zero(PyObject *v)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long x = PyLong_AsLongAndOverflow(v, &overflow);
    return !overflow && x == 0;
}

/* 1 when ``outcome`` is a BatchOutcome (exactly) that nothing but ``holders`` references hold, nothing watches and
 * that is not complete yet: no reader can ever look at its per-record columns. */
static int outcome_unread(PyObject *outcome, Py_ssize_t holders)
{
    return outcome_type != NULL && Py_TYPE(outcome) == outcome_type && Py_REFCNT(outcome) == holders;
}

/* Slot caches (see cached_get) of the completion's reads and writes of a ProducerBatch's and a BatchOutcome's
 * attributes, per name */
static slot_cache bcache[P_COUNT], ocache[P_COUNT];

/* A dict's few keys are walked rather than hashed (a TopicPartition's hash is a tuple's, computed on each lookup) */
#define FEW_KEYS 8

/* d[(name, index)] found by a walk (borrowed): the value, or NULL with *decided 1 (not there, or an error) or 0 (a key
 * that is not a pair of an exact str and an exact int: the walk cannot tell, the dict's lookup must). For a dict of
 * TopicPartition keys this finds what the dict's lookup of the plain tuple finds (the one key equal to it: its two
 * fields equal), without hashing one. */
static PyObject *pair_walk(PyObject *d, PyObject *name, PyObject *index, int *decided)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    *decided = 0;
    if (!PyUnicode_CheckExact(name) || !PyLong_CheckExact(index))
        return NULL;
    while (PyDict_Next(d, &pos, &key, &value)) {
        if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(key, 0))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(key, 1)))
            return NULL;
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 1), index, Py_EQ);
        if (eq > 0)
            eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(key, 0), name, Py_EQ);
        if (eq != 0) {
            *decided = 1;
            return eq < 0 ? NULL : value;
        }
    }
    *decided = 1;
    return NULL;
}

/* batches[(name, index)] (borrowed; NULL: not there, or an error): of a request of a few partitions, by pair_walk;
 * else by the dict's lookup of the plain tuple. */
static PyObject *batch_of_partition(PyObject *batches, PyObject *name, PyObject *index)
{
    if (PyDict_GET_SIZE(batches) <= FEW_KEYS) {
        int decided;
        PyObject *batch = pair_walk(batches, name, index, &decided);
        if (decided)
            return batch;
    }
    /* a plain tuple finds (and equals) the TopicPartition key */
    PyObject *key = PyTuple_Pack(2, name, index);
    if (key == NULL)
        return NULL;
    PyObject *batch = PyDict_GetItemWithError(batches, key);
    Py_DECREF(key);
    return batch;
}

/* d[key] (borrowed; NULL: not there, or an error): in a dict of a few keys, the key identical to ``key`` found by a
 * walk (a dict's lookup finds that one too: it is the only key equal to it), else for a pair ``key`` (a
 * TopicPartition) the key equal to it by pair_walk; else the dict's lookup. */
static PyObject *few_keys_get(PyObject *d, PyObject *key)
{
    if (PyDict_GET_SIZE(d) <= FEW_KEYS) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(d, &pos, &k, &v))
            if (k == key)
                return v;
        if (PyTuple_Check(key) && PyTuple_GET_SIZE(key) == 2) {
            int decided;
            v = pair_walk(d, PyTuple_GET_ITEM(key, 0), PyTuple_GET_ITEM(key, 1), &decided);
            if (decided)
                return v;
        }
    }
    return PyDict_GetItemWithError(d, key);
}

/* One partition of the plan (see produce_response_plan): ``name`` and ``index`` name it, the other three were read
 * from the response (error_code must be 0, record_errors None or empty). 1: planned, 0: not the common case, -1:
 * error. */
static int plan_partition(PyObject *batches, PyObject *plan, PyObject *name, PyObject *error_code,
                          PyObject *record_errors, PyObject *index, PyObject *base, PyObject *lat)
{
    if (!(is_int_zero(error_code) && (record_errors == Py_None || (PyList_CheckExact(record_errors) && PyList_GET_SIZE(record_errors) == 0))
          && PyLong_CheckExact(index) && PyLong_CheckExact(base) && PyLong_CheckExact(lat)))
        return 0;
    PyObject *batch = batch_of_partition(batches, name, index);
    if (batch == NULL)
        return PyErr_Occurred() ? -1 : 0; /* a partition the request did not have: the reference */
    /* a batch answered twice: the reference (the plan holds each batch once) */
    int ok = 1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(plan) && ok; i++)
        if (PyTuple_GET_ITEM(PyList_GET_ITEM(plan, i), 0) == batch)
            ok = 0;
    PyObject *f[4] = {NULL, NULL, NULL, NULL}; /* final_state, split, has_callbacks, pending */
    static const int bwhich[4] = {P_FINAL, P_SPLIT, P_HAS_CB, P_PENDING};
    for (int k = 0; k < 4 && ok > 0; k++)
        if ((f[k] = cached_get(batch, pattr[bwhich[k]], &bcache[bwhich[k]])) == NULL)
            ok = -1;
    if (ok > 0)
        ok = f[0] == Py_None && f[1] == Py_False && f[2] == Py_False && (PyList_CheckExact(f[3]) || is_pending(f[3]));
    PyObject *columns = NULL;
    if (ok > 0) {
        /* An outcome only its batch refers to (our reference and the batch's) can never be read: every
         * future of a batch, and a send_batch future's segment, holds its outcome, and a drained batch is
         * closed, so no future of it is made any more. Its per-record columns are not collected (None
         * here): succeed_batch completes it without them. */
        PyObject *outcome = cached_get(batch, pattr[P_OUTCOME], &bcache[P_OUTCOME]);
        if (outcome == NULL)
            ok = -1;
        else if (outcome_unread(outcome, 2))
            columns = Py_NewRef(Py_None);
        Py_XDECREF(outcome);
    }
    if (ok > 0 && columns == NULL) {
        /* the columns complete_records collects: timestamps only without a log append time */
        int overflow = 0;
        long long lat_ms = PyLong_AsLongLongAndOverflow(lat, &overflow);
        int with_ts = !(overflow || lat_ms != -1);
        if (is_pending(f[3]) && ((PendingObject *)f[3])->items == NULL)
            columns = pending_columns_encoded((PendingObject *)f[3], with_ts); /* (k_pending_columns' first case) */
        else {
            PyObject *cargs = PyTuple_Pack(2, f[3], with_ts ? Py_True : Py_False);
            columns = cargs == NULL ? NULL : k_pending_columns(NULL, cargs);
            Py_XDECREF(cargs);
        }
        if (columns == NULL)
            ok = -1;
        else if (columns == Py_None)
            ok = 0;
    }
    if (ok > 0) {
        PyObject *entry = PyTuple_Pack(4, batch, base, lat, columns);
        if (entry == NULL || PyList_Append(plan, entry) < 0)
            ok = -1;
        Py_XDECREF(entry);
    }
    Py_XDECREF(columns);
    for (int k = 0; k < 4; k++)
        Py_XDECREF(f[k]);
    return ok;
}

/* The plan of a response decode_produce_results made (its ``results``, see there): as produce_response_plan. */
static int produce_results_plan(PyObject *batches, PyObject *results, PyObject *plan)
{
    static PyObject *zero = NULL;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        return -1;
    if (!PyList_CheckExact(results))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(results); i++) {
        PyObject *t = PyList_GET_ITEM(results, i), *parts;
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 2 || !PyList_CheckExact(parts = PyTuple_GET_ITEM(t, 1)))
            return 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(parts); j++) {
            PyObject *p = PyList_GET_ITEM(parts, j);
            if (!PyTuple_CheckExact(p) || PyTuple_GET_SIZE(p) != 4)
                return 0;
            int ok = plan_partition(batches, plan, PyTuple_GET_ITEM(t, 0), zero, Py_None, PyTuple_GET_ITEM(p, 0),
                                    PyTuple_GET_ITEM(p, 1), PyTuple_GET_ITEM(p, 2));
            if (ok <= 0)
                return ok;
        }
    }
    return 1;
}

/* The checks of the common case, before anything changes: every partition of the response answers one batch of the
 * request (each batch once), with error NONE and no record errors, int offsets; every batch is still incomplete, not
 * split, without delivery callbacks, its records' columns computable (or its outcome unread: columns None). Fills
 * ``plan`` with one (batch, base offset, log append time, columns) tuple per partition in response order. A response
 * decode_produce_results made is read from its ``results`` while its ``responses`` were not built. 1: the common
 * case, 0: not, -1: error. */
static int produce_response_plan(PyObject *batches, PyObject *body, PyObject *plan)
{
    PyObject *responses = NULL;
    int rc = -1;
    if (results_type != NULL && Py_TYPE(body) == results_type) {
        PyObject *results = PyObject_GetAttr(body, s_results);
        if (results == NULL)
            goto done;
        if (results != Py_None) {
            rc = produce_results_plan(batches, results, plan);
            Py_DECREF(results);
            goto check;
        }
        Py_DECREF(results);
    }
    if ((responses = PyObject_GetAttr(body, pattr[P_RESPONSES])) == NULL)
        goto done;
    if (!PyList_CheckExact(responses)) {
        rc = 0;
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(responses); i++) {
        PyObject *t = PyList_GET_ITEM(responses, i);
        PyObject *name = PyObject_GetAttr(t, pattr[P_NAME]);
        if (name == NULL)
            goto done;
        PyObject *parts = PyObject_GetAttr(t, pattr[P_PARTS]);
        if (parts == NULL) {
            Py_DECREF(name);
            goto done;
        }
        int ok = PyList_CheckExact(parts);
        for (Py_ssize_t j = 0; ok > 0 && j < PyList_GET_SIZE(parts); j++) {
            PyObject *p = PyList_GET_ITEM(parts, j);
            PyObject *v[5] = {NULL, NULL, NULL, NULL, NULL}; /* error_code, record_errors, index, base, lat */
            static const int which[5] = {P_ERROR, P_RECORD_ERRORS, P_INDEX, P_BASE, P_LAT};
            for (int k = 0; k < 5 && ok > 0; k++)
                if ((v[k] = PyObject_GetAttr(p, pattr[which[k]])) == NULL)
                    ok = -1;
            if (ok > 0)
                ok = plan_partition(batches, plan, name, v[0], v[1], v[2], v[3], v[4]);
            for (int k = 0; k < 5; k++)
                Py_XDECREF(v[k]);
        }
        Py_DECREF(name);
        Py_DECREF(parts);
        if (ok <= 0) {
            rc = ok;
            goto done;
        }
    }
    rc = 1;
check:
    /* every batch answered (a missing one fails in the reference) */
    if (rc > 0)
        rc = PyList_GET_SIZE(plan) == PyDict_GET_SIZE(batches);
done:
    Py_XDECREF(responses);
    return rc;
}

/* Sender._remove_from_in_flight: ``batch`` out of in_flight_batches[tp] (by identity, as list.remove finds a
 * ProducerBatch), the entry dropped once empty. */
static int remove_in_flight(PyObject *in_flight, PyObject *tp, PyObject *batch)
{
    PyObject *lst = few_keys_get(in_flight, tp);
    if (lst == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(lst);
    int rc = 0;
    if (PyList_CheckExact(lst)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lst); i++)
            if (PyList_GET_ITEM(lst, i) == batch) {
                rc = PyList_SetSlice(lst, i, i + 1, NULL);
                break;
            }
    } else {
        PyObject *r = PyObject_CallMethod(lst, "remove", "O", batch);
        if (r == NULL) {
            if (PyErr_ExceptionMatches(PyExc_ValueError))
                PyErr_Clear();
            else
                rc = -1;
        }
        Py_XDECREF(r);
    }
    if (rc == 0) {
        Py_ssize_t n = PyObject_Length(lst);
        if (n < 0)
            rc = -1;
        else if (n == 0)
            rc = PyDict_DelItem(in_flight, tp);
    }
    Py_DECREF(lst);
    return rc;
}

/* A send_batch segment (future_record_metadata.CallSegment) of a completed outcome, as its release(): its call's
 * ``waiting.count`` lowered under ``waiting.lock`` when other segments still wait; for the last one (or anything
 * unexpected) release() itself, which completes the SendBatchFuture. 0, or -1 with an exception. */
/* lock.acquire() / lock.release() of a send_batch call's WaitingSegments.lock (a _thread.lock) (directly when its layout is known, see
 * queue_lock_acquire): 0, or -1 with an exception */
static int sb_lock(PyObject *lock, int acquire)
{
#ifdef THREAD_LOCK_LAYOUT
    if (sattr_init() < 0)
        return -1;
    if (thread_lock_type != NULL && Py_TYPE(lock) == thread_lock_type)
        return acquire ? queue_lock_acquire(lock) : queue_lock_release(lock);
#endif
    PyObject *r = PyObject_CallMethodNoArgs(lock, pattr[acquire ? P_ACQUIRE : P_RELEASE]);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* ``lock`` released (sb_lock) keeping a pending exception: ``rc``, or -1 when the release failed */
static int unlock_keeping_error(PyObject *lock, int rc)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (sb_lock(lock, 0) < 0) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        return -1;
    }
    PyErr_Restore(et, ev, tb);
    return rc;
}

/* the slots segment_done reads (a CallSegment's and a WaitingSegments' slots, at their offsets) */
static slot_cache seg_cache[3];

static int segment_done(PyObject *seg)
{
    PyObject *fut = cached_get(seg, pattr[P_WAITING], &seg_cache[0]), *lock = NULL, *pending = NULL, *r;
    int rc = -1;
    if (fut == NULL || (lock = cached_get(fut, pattr[P_LOCK], &seg_cache[1])) == NULL || sb_lock(lock, 1) < 0)
        goto done;
    int ok = 0; /* 1: decremented here, 0: the method decides, -1: error */
    if ((pending = cached_get(fut, pattr[P_SB_COUNT], &seg_cache[2])) == NULL)
        ok = -1;
    else if (PyLong_CheckExact(pending)) {
        int overflow = 0;
        long n = PyLong_AsLongAndOverflow(pending, &overflow);
        if (!overflow && n > 1) {
            PyObject *left = PyLong_FromLong(n - 1);
            ok = left == NULL || cached_set(fut, pattr[P_SB_COUNT], &seg_cache[2], left) < 0 ? -1 : 1;
            Py_XDECREF(left);
        }
    }
    if (unlock_keeping_error(lock, ok) < 0)
        goto done;
    if (ok == 0) {
        if ((r = PyObject_CallMethodNoArgs(seg, pattr[P_RELEASE])) == NULL)
            goto done;
        Py_DECREF(r);
    }
    rc = 0;
done:
    Py_XDECREF(fut);
    Py_XDECREF(lock);
    Py_XDECREF(pending);
    return rc;
}

/* What one response's batches are completed with: the Sender's SenderCompletion's state (its ``completion``, made
 * once with the Sender: the later part producer_batch_release.c.h), else the Sender's attributes read per response.
 * tm and acc are read only when needed; incomplete, account, entries and the lock's methods are borrowed from the
 * completion (NULL: the methods are called). completion_ctx_init, batch_release (RecordAccumulator.deallocate),
 * sequences_completed (IdempotenceManager.handle_completed_batch) and outcome_condition (an outcome's condition's
 * acquire() or release()) are defined in producer_batch_release.c.h. */
typedef struct {
    PyObject *sender, *completion, *tm, *acc, *in_flight;
    int order, has_tm;
    PyObject *incomplete, *account, *entries, *lock_acquire, *lock_release;
} completion_ctx;
static int completion_ctx_init(completion_ctx *ctx, PyObject *sender);
static void completion_ctx_clear(completion_ctx *ctx);
static int batch_release(completion_ctx *ctx, PyObject *batch);
static int sequences_completed(completion_ctx *ctx, PyObject *batch, PyObject *base);
static PyObject *ctx_accumulator(completion_ctx *ctx);
static int outcome_condition(completion_ctx *ctx, PyObject *cond, int acquire);

/* BatchOutcome.complete_success(base, lat, timestamps, key_sizes, value_sizes) (``cargs``: the outcome then those):
 * when no future is watched (nobody waits, no done-callback), its fields set under the condition's lock here, and
 * the futures to call back are none; else the method itself. The futures whose done-callbacks must run, or NULL.
 * ``*segments`` is set to 1 when the list returned holds the send_batch segments (``calls``, taken from the outcome
 * under the lock, as BatchOutcome._finish) for segment_done, 0 when it holds what _invoke_callbacks must run on. */
static PyObject *complete_outcome(PyObject *const *cargs, int *segments, completion_ctx *ctx)
{
    *segments = 0;
    PyObject *outcome = cargs[0];
    if (outcome_type == NULL || Py_TYPE(outcome) != outcome_type)
        return PyObject_VectorcallMethod(pattr[P_COMPLETE], cargs, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    PyObject *cond = cached_get(outcome, pattr[P_CONDITION], &ocache[P_CONDITION]);
    if (cond == NULL)
        return NULL;
    if (outcome_condition(ctx, cond, 1) < 0) {
        Py_DECREF(cond);
        return NULL;
    }
    PyObject *out = NULL, *watched = cached_get(outcome, pattr[P_WATCHED], &ocache[P_WATCHED]), *state = NULL, *calls = NULL;
    int use_method = 0;
    if (watched == NULL || (calls = cached_get(outcome, pattr[P_CALLS], &ocache[P_CALLS])) == NULL)
        goto release;
    /* nothing watched: watched is the empty tuple (or an empty list); calls: none (the empty tuple), a list of
     * segments, or one segment kept alone (BatchOutcome.calls) */
    int lone = !PyList_CheckExact(calls) && !PyTuple_CheckExact(calls);
    if (!(PyList_CheckExact(watched) || PyTuple_CheckExact(watched)) || Py_SIZE(watched) != 0
        || !(lone || PyList_CheckExact(calls) || PyTuple_GET_SIZE(calls) == 0)) {
        use_method = 1;
        goto release;
    }
    if ((state = cached_get(outcome, pattr[P_STATE], &ocache[P_STATE])) == NULL)
        goto release;
    int finished = PyObject_RichCompareBool(state, finished_state, Py_EQ);
    if (finished < 0)
        goto release;
    /* timestamps is None with a log append time (pending_columns was not asked for them) */
    if (!finished
        && (cached_set(outcome, pattr[P_BASE], &ocache[P_BASE], cargs[1]) < 0 || cached_set(outcome, pattr[P_O_LAT], &ocache[P_O_LAT], cargs[2]) < 0
            || cached_set(outcome, pattr[P_TIMESTAMPS], &ocache[P_TIMESTAMPS], cargs[3]) < 0
            || cached_set(outcome, pattr[P_KEY_SIZES], &ocache[P_KEY_SIZES], cargs[4]) < 0
            || cached_set(outcome, pattr[P_VALUE_SIZES], &ocache[P_VALUE_SIZES], cargs[5]) < 0
            || cached_set(outcome, pattr[P_STATE], &ocache[P_STATE], finished_state) < 0))
        goto release;
    if (!finished && (lone || PyList_CheckExact(calls))) {
        /* the segments are released once, outside the lock; the outcome lets go of them (no cycle) */
        PyObject *none = PyTuple_New(0);
        if (none == NULL || cached_set(outcome, pattr[P_CALLS], &ocache[P_CALLS], none) < 0) {
            Py_XDECREF(none);
            goto release;
        }
        Py_DECREF(none);
        out = lone ? PyTuple_Pack(1, calls) : Py_NewRef(calls);
        *segments = out != NULL;
    } else
        out = PyList_New(0);
release:;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int released = outcome_condition(ctx, cond, 0);
    if (released < 0) {
        Py_CLEAR(out);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
    } else
        PyErr_Restore(et, ev, tb);
    Py_DECREF(cond);
    Py_XDECREF(watched);
    Py_XDECREF(calls);
    Py_XDECREF(state);
    if (use_method && released == 0 && !PyErr_Occurred())
        return PyObject_VectorcallMethod(pattr[P_COMPLETE], cargs, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    return out;
}

/* BatchOutcome.complete_success for an outcome produce_response_plan found unread: its offset, log append time and
 * state set (the per-record columns only a future could read are not collected). Should a reference to it have
 * appeared meanwhile, the batch's own ProducerBatch.complete_records completes it instead (columns, lock, done-
 * callbacks), as ProducerBatch.done would. 0, or -1 with an exception. */
static int complete_unread(PyObject *batch, PyObject *outcome, PyObject *base, PyObject *lat)
{
    if (!outcome_unread(outcome, 2)) {
        PyObject *r = PyObject_CallMethodObjArgs(batch, pattr[P_COMPLETE_RECORDS], base, lat, Py_None, Py_None, NULL);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    PyObject *state = cached_get(outcome, pattr[P_STATE], &ocache[P_STATE]);
    if (state == NULL)
        return -1;
    int finished = PyObject_RichCompareBool(state, finished_state, Py_EQ);
    Py_DECREF(state);
    if (finished != 0)
        return finished < 0 ? -1 : 0;
    if (cached_set(outcome, pattr[P_BASE], &ocache[P_BASE], base) < 0 || cached_set(outcome, pattr[P_O_LAT], &ocache[P_O_LAT], lat) < 0
        || cached_set(outcome, pattr[P_STATE], &ocache[P_STATE], finished_state) < 0)
        return -1;
    return 0;
}

/* RecordAccumulator.deallocate(batch): through the accumulator's public method. 0, or -1 with an exception. */
static PyObject *deallocate_name;

static int accumulator_deallocate(PyObject *acc, PyObject *batch)
{
    if (deallocate_name == NULL && (deallocate_name = PyUnicode_InternFromString("deallocate")) == NULL)
        return -1;
    PyObject *r = PyObject_CallMethodOneArg(acc, deallocate_name, batch);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* One planned batch's success, as Sender._succeed_batch then the unmute of _handle_produce_response. */
static int succeed_batch(PyObject *entry, completion_ctx *ctx, PyObject *succeeded)
{
    PyObject *batch = PyTuple_GET_ITEM(entry, 0), *base = PyTuple_GET_ITEM(entry, 1), *lat = PyTuple_GET_ITEM(entry, 2);
    PyObject *columns = PyTuple_GET_ITEM(entry, 3);
    PyObject *r, *tp = NULL, *outcome = NULL, *fs = NULL;
    int rc = -1;
    if (ctx->has_tm && sequences_completed(ctx, batch, base) < 0)
        return -1;
    if ((tp = cached_get(batch, pattr[P_TP], &bcache[P_TP])) == NULL)
        return -1;
    /* ProducerBatch.done: nothing when the batch completed or was split meanwhile */
    PyObject *final_state = cached_get(batch, pattr[P_FINAL], &bcache[P_FINAL]), *split = NULL;
    if (final_state == NULL || (split = cached_get(batch, pattr[P_SPLIT], &bcache[P_SPLIT])) == NULL)
        goto done_final;
    int truth = PyObject_IsTrue(split);
    if (truth < 0)
        goto done_final;
    if (final_state == Py_None && !truth) {
        if (cached_set(batch, pattr[P_FINAL], &bcache[P_FINAL], succeeded) < 0 || (outcome = cached_get(batch, pattr[P_OUTCOME], &bcache[P_OUTCOME])) == NULL)
            goto done_final;
        if (columns == Py_None) {
            /* unread when planned (see produce_response_plan): still held by the batch and by us only, nobody can
             * read it, so no lock and no columns (a reader could only appear with a reference of its own) */
            if (complete_unread(batch, outcome, base, lat) < 0)
                goto done_final;
        } else {
            PyObject *cargs[6] = {outcome, base, lat, PyTuple_GET_ITEM(columns, 0), PyTuple_GET_ITEM(columns, 1),
                                  PyTuple_GET_ITEM(columns, 2)};
            int segments;
            PyObject *with_callbacks = complete_outcome(cargs, &segments, ctx);
            if (with_callbacks == NULL)
                goto done_final;
            /* the futures' done-callbacks (or the send_batch segments), outside the lock */
            fs = PySequence_Fast(with_callbacks, "complete_success returns a list");
            Py_DECREF(with_callbacks);
            if (fs == NULL)
                goto done_final;
            for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fs); i++) {
                PyObject *item = PySequence_Fast_GET_ITEM(fs, i);
                if (segments) {
                    if (segment_done(item) < 0)
                        goto done_final;
                } else {
                    if ((r = PyObject_CallMethodNoArgs(item, pattr[P_INVOKE])) == NULL)
                        goto done_final;
                    Py_DECREF(r);
                }
            }
        }
        if (remove_in_flight(ctx->in_flight, tp, batch) < 0)
            goto done_final;
        if (batch_release(ctx, batch) < 0)
            goto done_final;
    }
    if (ctx->order) {
        PyObject *acc = ctx_accumulator(ctx);
        if (acc == NULL || (r = PyObject_CallMethodOneArg(acc, pattr[P_UNMUTE], tp)) == NULL)
            goto done_final;
        Py_DECREF(r);
    }
    rc = 0;
done_final:
    Py_XDECREF(final_state);
    Py_XDECREF(split);
    Py_XDECREF(outcome);
    Py_XDECREF(fs);
    Py_DECREF(tp);
    return rc;
}

PyDoc_STRVAR(complete_produce_response_doc,
"complete_produce_response(sender, batches, body, SUCCEEDED) -> bool\n\n"
"Reference: Sender._handle_produce_response_reference for a decoded ProduceResponse ``body`` answering the\n"
"request of ``batches`` ({TopicPartition: ProducerBatch}) when every partition succeeded (error NONE, no record\n"
"errors) and no batch has delivery callbacks, is complete or split: each batch completes as\n"
"Sender._succeed_batch does (the transaction manager's handle_completed_batch, the outcome's complete_success and\n"
"its futures' done-callbacks, out of in-flight, deallocate; the unmute when ordering is guaranteed), in response\n"
"order (the send_batch segments waiting on an outcome released as their release() would: the call's\n"
"count of waiting segments decremented, the method itself for its last one); an outcome nothing but its batch refers to (every future of it dropped) gets no per-record columns, which\n"
"nothing could read. False, with nothing done, for anything else: the reference decides.");

static PyObject *k_complete_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "complete_produce_response takes 4 arguments");
        return NULL;
    }
    if (pattr_init() < 0)
        return NULL;
    PyObject *sender = args[0], *batches = args[1], *body = args[2], *succeeded = args[3];
    if (!PyDict_CheckExact(batches))
        Py_RETURN_FALSE;
    PyObject *plan = PyList_New(0), *out = NULL;
    completion_ctx ctx = {NULL};
    if (plan == NULL)
        return NULL;
    int rc = produce_response_plan(batches, body, plan);
    if (rc <= 0) {
        out = rc < 0 ? NULL : Py_NewRef(Py_False);
        goto done;
    }
    if ((rc = completion_ctx_init(&ctx, sender)) <= 0) {
        out = rc < 0 ? NULL : Py_NewRef(Py_False);
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(plan); i++)
        if (succeed_batch(PyList_GET_ITEM(plan, i), &ctx, succeeded) < 0)
            goto done;
    out = Py_NewRef(Py_True);
done:
    Py_DECREF(plan);
    completion_ctx_clear(&ctx);
    return out;
}

/* ---- producer I/O thread: a produce response's completion callback -------------------------------------- */

static PyObject *s_response_body = NULL, *s_was_disconnected = NULL, *s_version_mismatch = NULL;
/* the ClientResponse's slots (a slotted dataclass: cached_get reads them at their offset) */
static slot_cache response_cache[3];

PyDoc_STRVAR(handle_produce_response_doc,
"handle_produce_response(reference, SUCCEEDED, sender, batches, response) -> bool\n\n"
"Reference: Sender._handle_produce_response, the completion callback of a produce request (``batches``:\n"
"{TopicPartition: ProducerBatch}; ``response``: its ClientResponse). When the response was not disconnected, has\n"
"no version mismatch and its ``response_body`` is exactly a ProduceResponse or the ProduceResponse subclass given\n"
"to produce_results_setup: complete_produce_response(sender, batches, body, SUCCEEDED). Whenever that declines,\n"
"and for any other response, ``reference(sender, batches, response)`` (Sender._handle_produce_response_reference)\n"
"decides. True if the kernel completed the response, False if the reference was called.");

static PyObject *k_handle_produce_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "handle_produce_response takes 5 arguments");
        return NULL;
    }
    PyObject *reference = args[0], *succeeded = args[1], *sender = args[2], *batches = args[3], *response = args[4];
    if (s_response_body == NULL) {
        if ((s_response_body = PyUnicode_InternFromString("response_body")) == NULL
            || (s_was_disconnected = PyUnicode_InternFromString("was_disconnected")) == NULL
            || (s_version_mismatch = PyUnicode_InternFromString("version_mismatch")) == NULL)
            return NULL;
    }
    PyObject *body = cached_get(response, s_response_body, &response_cache[0]);
    if (body == NULL)
        return NULL;
    int common = 0;
    /* the results type is a direct subclass of ProduceResponse (its tp_base) */
    if (results_type != NULL && (Py_TYPE(body) == results_type || Py_TYPE(body) == results_type->tp_base)) {
        PyObject *v = cached_get(response, s_was_disconnected, &response_cache[1]);
        if (v == NULL)
            goto fail;
        int disconnected = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (disconnected < 0)
            goto fail;
        if (!disconnected) {
            if ((v = cached_get(response, s_version_mismatch, &response_cache[2])) == NULL)
                goto fail;
            common = v == Py_None;
            Py_DECREF(v);
        }
    }
    if (common) {
        PyObject *cargs[4] = {sender, batches, body, succeeded};
        PyObject *done = k_complete_produce_response(self, cargs, 4);
        if (done == NULL)
            goto fail;
        int completed = done == Py_True;
        Py_DECREF(done);
        if (completed) {
            Py_DECREF(body);
            Py_RETURN_TRUE;
        }
    }
    Py_DECREF(body);
    PyObject *rargs[3] = {sender, batches, response};
    PyObject *r = PyObject_Vectorcall(reference, rargs, 3, NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
fail:
    Py_DECREF(body);
    return NULL;
}
