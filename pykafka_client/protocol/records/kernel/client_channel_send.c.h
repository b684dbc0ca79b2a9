/* client_channel_send.c.h: a client's send of a request on its channel in one call (included by _kernel.c).
 *
 * ChannelSend(selector, channels, metrics, ready_state, max_iov, blocking_errors).send(in_flight_requests, request,
 * network_send): what NetworkClient._do_send's end does without the kernel (its reference), in one step under the
 * GIL: in_flight_requests.add(request), then selector.send(network_send) (Selector._send with
 * KafkaChannel.write_new_send, network/transport/), undoing the add with complete_last_sent(request.destination)
 * when that raises. The common case is written here: the send's channel (channels[destination]) READY with no send
 * in progress (its send_writer None) and a plaintext socket (its plain_sendmsg), the send's buffers a list of 1 to
 * max_iov bytes/bytearray pieces of send.size bytes in all: one sendmsg of the pieces as they are. What follows the
 * write is the reference's: the whole frame written counts the bytes (the channel's bytes_sent, the metrics'
 * bytes_sent_total and requests_sent_total), sets send.written and appends the send to the selector's
 * pending_completed_sends; part of it (a blocking error: none) goes on through selector.continue_send(channel, send,
 * written); an error of the write (an Exception) closes the channel through selector.fail_send(channel, error).
 * Anything else goes through selector.send(network_send) itself. Reads and writes only public attributes.
 *
 * SendReadiness(node_states, connection_ready, channels, channel_ready).can_send(in_flight_requests, node_id, now_ms):
 * NetworkClient.can_send_request (its reference) in one call: the node's connection state (node_states[node_id], a
 * ClusterConnectionStates' NodeConnectionState) READY and not throttled past now_ms, its channel (channels[node_id])
 * READY, and in_flight_requests.can_send_more(node_id), asked in that order.
 *
 * The common write (cs_write) takes its selector and whether a whole write is reported by the next poll: a broker's
 * ServerChannelPath (server_channel_path.c.h) writes its responses with it, unreported (send_completing).
 *
 * Uses slot_access (cached_get, cached_set, get_int_attr) and client_in_flight (InFlightType, ifq_add,
 * ifq_can_send_more). */

typedef struct {
    PyObject_HEAD
    PyObject *selector;
    PyObject *channels;  /* dict: connection id -> KafkaChannel (the selector's open channels, read-only here) */
    PyObject *metrics;
    PyObject *ready_state;
    PyObject *blocking_errors;  /* the write errors that mean "nothing written": a tuple of exception types */
    Py_ssize_t max_iov;
} ChannelSendObject;

enum {
    CS_DESTINATION, CS_BUFFERS, CS_SIZE, CS_WRITTEN, CS_STATE, CS_SEND_WRITER, CS_PLAIN_SENDMSG, CS_BYTES_SENT,
    CS_BYTES_SENT_TOTAL, CS_REQUESTS_SENT_TOTAL, CS_PENDING_COMPLETED_SENDS, CS_SEND, CS_FAIL_SEND, CS_CONTINUE_SEND,
    CS_ADD, CS_COMPLETE_LAST_SENT, CS_THROTTLE_UNTIL_TIME_MS, CS_CAN_SEND_MORE, CS_COUNT
};
static const char *const cs_attr_names[CS_COUNT] = {
    "destination", "buffers", "size", "written", "state", "send_writer", "plain_sendmsg", "bytes_sent",
    "bytes_sent_total", "requests_sent_total", "pending_completed_sends", "send", "fail_send", "continue_send", "add",
    "complete_last_sent", "throttle_until_time_ms", "can_send_more",
};
static PyObject *cs_attr[CS_COUNT];
static slot_cache cs_cache[CS_COUNT];

/* 0, or -1 with an exception */
static int cs_names(void)
{
    if (cs_attr[CS_COUNT - 1] != NULL)
        return 0;
    for (int i = 0; i < CS_COUNT; i++)
        if ((cs_attr[i] = PyUnicode_InternFromString(cs_attr_names[i])) == NULL)
            return -1;
    return 0;
}

static inline PyObject *cs_get(PyObject *obj, int a)
{
    return cached_get(obj, cs_attr[a], &cs_cache[a]);
}

/* obj.<attribute a> += n: 0, or -1 with an exception */
static int cs_add_to(PyObject *obj, int a, Py_ssize_t n)
{
    PyObject *v = cs_get(obj, a);
    if (v == NULL)
        return -1;
    PyObject *delta = PyLong_FromSsize_t(n);
    PyObject *sum = delta == NULL ? NULL : PyNumber_InPlaceAdd(v, delta);
    Py_DECREF(v);
    Py_XDECREF(delta);
    if (sum == NULL)
        return -1;
    int rc = cached_set(obj, cs_attr[a], &cs_cache[a], sum);
    Py_DECREF(sum);
    return rc;
}

/* the total length of a list of 1 to max_iov bytes/bytearray pieces, -1 for any other buffers */
static Py_ssize_t cs_pieces_size(PyObject *pieces, Py_ssize_t max_iov)
{
    if (!PyList_CheckExact(pieces))
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(pieces), total = 0;
    if (n == 0 || n > max_iov)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *piece = PyList_GET_ITEM(pieces, i);
        if (PyBytes_CheckExact(piece))
            total += PyBytes_GET_SIZE(piece);
        else if (PyByteArray_CheckExact(piece))
            total += PyByteArray_GET_SIZE(piece);
        else
            return -1;
    }
    return total;
}

/* The whole frame went out: the reference's counting and, with `report`, its completion reported by the next poll
 * (the send appended to selector.pending_completed_sends). 0, or -1 with an exception. */
static int cs_completed(PyObject *selector, PyObject *metrics, PyObject *channel, PyObject *send, Py_ssize_t n,
                        PyObject *written, int report)
{
    if (cs_add_to(channel, CS_BYTES_SENT, n) < 0 ||
        cached_set(send, cs_attr[CS_WRITTEN], &cs_cache[CS_WRITTEN], written) < 0 ||
        cs_add_to(metrics, CS_BYTES_SENT_TOTAL, n) < 0 ||
        cs_add_to(metrics, CS_REQUESTS_SENT_TOTAL, 1) < 0)
        return -1;
    if (!report)
        return 0;
    PyObject *pending = cs_get(selector, CS_PENDING_COMPLETED_SENDS);
    if (pending == NULL)
        return -1;
    int rc = PyList_Check(pending) ? PyList_Append(pending, send) : -1;
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "the selector's pending_completed_sends is not a list");
    Py_DECREF(pending);
    return rc;
}

/* The write of the common case on `selector`'s channel, or 1 when the send is not one (nothing done). 0: written
 * (whole, and reported by the next poll as `report` asks; or in part, or failed: as the reference goes on), 2: written
 * whole and not reported (`report` 0: the caller completes it), 1, or -1 with an exception. The selector's metrics,
 * its READY state, the errors that mean "nothing written" and the most pieces a write gathers are the caller's. */
static int cs_write(PyObject *selector, PyObject *metrics, PyObject *ready_state, PyObject *blocking_errors,
                    Py_ssize_t max_iov, PyObject *channel, PyObject *send, int report)
{
    PyObject *v = cs_get(channel, CS_STATE);
    if (v == NULL)
        return -1;
    int ready = v == ready_state;
    Py_DECREF(v);
    if (!ready)
        return 1;
    if ((v = cs_get(channel, CS_SEND_WRITER)) == NULL)
        return -1;
    int idle = v == Py_None;
    Py_DECREF(v);
    if (!idle)
        return 1;
    PyObject *pieces = cs_get(send, CS_BUFFERS);
    if (pieces == NULL)
        return -1;
    Py_ssize_t total = cs_pieces_size(pieces, max_iov);
    int64_t size;
    int rc = total < 0 ? 1 : get_int_attr(send, cs_attr[CS_SIZE], &cs_cache[CS_SIZE], &size);
    if (rc != 0 || total != (Py_ssize_t)size) {
        Py_DECREF(pieces);
        if (rc < 0 && PyErr_ExceptionMatches(PyExc_OverflowError))  /* (not a size the pieces can have) */
            PyErr_Clear();
        return PyErr_Occurred() ? -1 : 1;
    }
    PyObject *sendmsg = cs_get(channel, CS_PLAIN_SENDMSG);
    if (sendmsg == NULL || sendmsg == Py_None) {
        Py_DECREF(pieces);
        Py_XDECREF(sendmsg);
        return sendmsg == NULL ? -1 : 1;
    }
    PyObject *written = PyObject_CallOneArg(sendmsg, pieces);
    Py_DECREF(sendmsg);
    Py_DECREF(pieces);
    if (written == NULL) {
        if (PyErr_ExceptionMatches(blocking_errors)) {  /* (nothing written) */
            PyErr_Clear();
            written = PyLong_FromLong(0);
            if (written == NULL)
                return -1;
        }
        else if (PyErr_ExceptionMatches(PyExc_Exception)) {  /* the channel fails, as the reference's */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (tb != NULL)
                PyException_SetTraceback(value, tb);
            PyObject *r = PyObject_CallMethodObjArgs(selector, cs_attr[CS_FAIL_SEND], channel, value, NULL);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            if (r == NULL)
                return -1;
            Py_DECREF(r);
            return 0;
        }
        else
            return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(written);
    if (n == -1 && PyErr_Occurred()) {
        Py_DECREF(written);
        return -1;
    }
    if (n == total) {
        rc = cs_completed(selector, metrics, channel, send, n, written, report);
        if (rc == 0 && !report)
            rc = 2;
    }
    else {  /* the rest when the socket takes it */
        PyObject *r = PyObject_CallMethodObjArgs(selector, cs_attr[CS_CONTINUE_SEND], channel, send, written, NULL);
        rc = r == NULL ? -1 : 0;
        Py_XDECREF(r);
    }
    Py_DECREF(written);
    return rc;
}

/* selector.send(send), in the common case written here: 0, or -1 with an exception */
static int cs_send(ChannelSendObject *self, PyObject *send)
{
    PyObject *destination = cs_get(send, CS_DESTINATION);
    if (destination == NULL)
        return -1;
    PyObject *channel = PyDict_GetItemWithError(self->channels, destination);
    Py_DECREF(destination);
    int rc = 1;
    if (channel != NULL) {
        Py_INCREF(channel);
        rc = cs_write(self->selector, self->metrics, self->ready_state, self->blocking_errors, self->max_iov, channel,
                      send, 1);
        Py_DECREF(channel);
    }
    else if (PyErr_Occurred())
        return -1;
    if (rc <= 0)
        return rc;
    PyObject *r = PyObject_CallMethodOneArg(self->selector, cs_attr[CS_SEND], send);  /* (the general case) */
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* send(in_flight_requests, request, network_send) */
static PyObject *cs_send_request(ChannelSendObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "send(in_flight_requests, request, network_send)");
        return NULL;
    }
    PyObject *in_flight = args[0], *request = args[1];
    PyObject *r = Py_TYPE(in_flight) == &InFlightType ? ifq_add((InFlightObject *)in_flight, request)
                                                      : PyObject_CallMethodOneArg(in_flight, cs_attr[CS_ADD], request);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    if (cs_send(self, args[2]) == 0)
        Py_RETURN_NONE;
    /* the transport refused the send: no request left in flight that never went out (the error propagates) */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *node = cs_get(request, CS_DESTINATION);
    PyObject *undone = node == NULL ? NULL : PyObject_CallMethodOneArg(in_flight, cs_attr[CS_COMPLETE_LAST_SENT], node);
    Py_XDECREF(node);
    if (undone == NULL) {  /* (its error propagates, the send's as its context) */
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL)
            PyException_SetTraceback(value, tb);
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        PyErr_NormalizeException(&t2, &v2, &tb2);
        PyException_SetContext(v2, value);  /* (steals value) */
        Py_XDECREF(type);
        Py_XDECREF(tb);
        PyErr_Restore(t2, v2, tb2);
        return NULL;
    }
    Py_DECREF(undone);
    PyErr_Restore(type, value, tb);
    return NULL;
}

static PyObject *cs_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *selector, *channels, *metrics, *ready_state, *blocking_errors;
    Py_ssize_t max_iov;
    static char *kwlist[] = {"selector", "channels", "metrics", "ready_state", "max_iov", "blocking_errors", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOnO!:ChannelSend", kwlist, &selector, &PyDict_Type, &channels,
                                     &metrics, &ready_state, &max_iov, &PyTuple_Type, &blocking_errors))
        return NULL;
    if (cs_names() < 0)
        return NULL;
    ChannelSendObject *self = (ChannelSendObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->selector = Py_NewRef(selector);
    self->channels = Py_NewRef(channels);
    self->metrics = Py_NewRef(metrics);
    self->ready_state = Py_NewRef(ready_state);
    self->blocking_errors = Py_NewRef(blocking_errors);
    self->max_iov = max_iov;
    return (PyObject *)self;
}

static int cs_traverse(ChannelSendObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->selector);
    Py_VISIT(self->channels);
    Py_VISIT(self->metrics);
    Py_VISIT(self->ready_state);
    Py_VISIT(self->blocking_errors);
    return 0;
}

static int cs_clear(ChannelSendObject *self)
{
    Py_CLEAR(self->selector);
    Py_CLEAR(self->channels);
    Py_CLEAR(self->metrics);
    Py_CLEAR(self->ready_state);
    Py_CLEAR(self->blocking_errors);
    return 0;
}

static void cs_dealloc(ChannelSendObject *self)
{
    PyObject_GC_UnTrack(self);
    cs_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef cs_methods[] = {
    {"send", (PyCFunction)(void (*)(void))cs_send_request, METH_FASTCALL,
     "send(in_flight_requests, request, network_send): in_flight_requests.add(request), then the selector's send of "
     "network_send (the add undone if that raises)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ChannelSendType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ChannelSend",
    .tp_basicsize = sizeof(ChannelSendObject),
    .tp_dealloc = (destructor)cs_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("ChannelSend(selector, channels, metrics, ready_state, max_iov, blocking_errors): a client's "
                        "send of a request on its channel (reference: NetworkClient._do_send's end, Selector.send)"),
    .tp_traverse = (traverseproc)cs_traverse,
    .tp_clear = (inquiry)cs_clear,
    .tp_methods = cs_methods,
    .tp_new = cs_new,
};

/* ---- SendReadiness ----------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *node_states;  /* dict: node id -> NodeConnectionState (the connection states' own, read-only here) */
    PyObject *connection_ready;
    PyObject *channels;  /* dict: connection id -> KafkaChannel (the selector's open channels, read-only here) */
    PyObject *channel_ready;
} SendReadinessObject;

/* whether obj.state is `ready`: 1, 0, or -1 with an exception */
static int sr_state_is(PyObject *obj, PyObject *ready, slot_cache *cache)
{
    PyObject *v = cached_get(obj, cs_attr[CS_STATE], cache);
    if (v == NULL)
        return -1;
    int is = v == ready;
    Py_DECREF(v);
    return is;
}

/* can_send(in_flight_requests, node_id, now_ms) */
static PyObject *sr_can_send(SendReadinessObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "can_send(in_flight_requests, node_id, now_ms)");
        return NULL;
    }
    PyObject *in_flight = args[0], *node = args[1], *now = args[2];
    /* ClusterConnectionStates.is_ready */
    PyObject *state = PyDict_GetItemWithError(self->node_states, node);
    if (state == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_FALSE;
    }
    Py_INCREF(state);
    static slot_cache node_state_cache; /* (a connection state's, not a channel's: a call site of its own) */
    int ok = sr_state_is(state, self->connection_ready, &node_state_cache);
    if (ok > 0) {
        int64_t until, now_v;
        if (get_int_attr(state, cs_attr[CS_THROTTLE_UNTIL_TIME_MS], &cs_cache[CS_THROTTLE_UNTIL_TIME_MS], &until) == 0 &&
            compact_int(now, &now_v))
            ok = until <= now_v;
        else if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_OverflowError))
            ok = -1;
        else {  /* (any other int, or not an int: compared as Python would) */
            PyErr_Clear();
            PyObject *t = cs_get(state, CS_THROTTLE_UNTIL_TIME_MS);
            ok = t == NULL ? -1 : PyObject_RichCompareBool(t, now, Py_LE);
            Py_XDECREF(t);
        }
    }
    Py_DECREF(state);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_False);
    /* Selector.is_channel_ready */
    PyObject *channel = PyDict_GetItemWithError(self->channels, node);
    if (channel == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_FALSE;
    }
    Py_INCREF(channel);
    ok = sr_state_is(channel, self->channel_ready, &cs_cache[CS_STATE]);
    Py_DECREF(channel);
    if (ok <= 0)
        return ok < 0 ? NULL : Py_NewRef(Py_False);
    /* InFlightRequests.can_send_more */
    if (Py_TYPE(in_flight) == &InFlightType)
        return ifq_can_send_more((InFlightObject *)in_flight, node);
    return PyObject_CallMethodOneArg(in_flight, cs_attr[CS_CAN_SEND_MORE], node);
}

static PyObject *sr_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *node_states, *connection_ready, *channels, *channel_ready;
    static char *kwlist[] = {"node_states", "connection_ready", "channels", "channel_ready", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OO!O:SendReadiness", kwlist, &PyDict_Type, &node_states,
                                     &connection_ready, &PyDict_Type, &channels, &channel_ready))
        return NULL;
    if (cs_names() < 0)
        return NULL;
    SendReadinessObject *self = (SendReadinessObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->node_states = Py_NewRef(node_states);
    self->connection_ready = Py_NewRef(connection_ready);
    self->channels = Py_NewRef(channels);
    self->channel_ready = Py_NewRef(channel_ready);
    return (PyObject *)self;
}

static int sr_traverse(SendReadinessObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->node_states);
    Py_VISIT(self->connection_ready);
    Py_VISIT(self->channels);
    Py_VISIT(self->channel_ready);
    return 0;
}

static int sr_clear(SendReadinessObject *self)
{
    Py_CLEAR(self->node_states);
    Py_CLEAR(self->connection_ready);
    Py_CLEAR(self->channels);
    Py_CLEAR(self->channel_ready);
    return 0;
}

static void sr_dealloc(SendReadinessObject *self)
{
    PyObject_GC_UnTrack(self);
    sr_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef sr_methods[] = {
    {"can_send", (PyCFunction)(void (*)(void))sr_can_send, METH_FASTCALL,
     "can_send(in_flight_requests, node_id, now_ms): the node's connection READY and not throttled, its channel READY, "
     "and in_flight_requests.can_send_more(node_id)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SendReadinessType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SendReadiness",
    .tp_basicsize = sizeof(SendReadinessObject),
    .tp_dealloc = (destructor)sr_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("SendReadiness(node_states, connection_ready, channels, channel_ready): whether a client can "
                        "send a request to a node now (reference: NetworkClient.can_send_request)"),
    .tp_traverse = (traverseproc)sr_traverse,
    .tp_clear = (inquiry)sr_clear,
    .tp_methods = sr_methods,
    .tp_new = sr_new,
};
