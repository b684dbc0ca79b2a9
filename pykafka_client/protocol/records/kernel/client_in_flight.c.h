/* client_in_flight.c.h: the client's in-flight requests per node, as a type that owns them (included by _kernel.c).
 *
 * Reference: pykafka_client/network/in_flight_requests.py's InFlightRequests (the class a NetworkClient uses without
 * the kernel; Java: clients.InFlightRequests). Per node, a list of the requests sent (or being sent) and not yet
 * answered, oldest first; the total count; and no_timeout_until_ms, a lower bound of every request's deadline
 * (send_time_ms + request_timeout_ms) that a poll reads instead of scanning. The requests are the reference's
 * InFlightRequest objects: this type reads their public fields (destination, send, send_time_ms, request_timeout_ms,
 * throttle_time_ms) and the send's written and size; times are Java longs (an int outside 64 bits raises
 * OverflowError where the reference would compute with it). Every method is one step under the GIL; the nodes are
 * kept in a dict in the reference's order (first added, kept while empty, removed by clear_all), so a scan reports
 * them in the same order. complete_receives takes the receives a request type's decoder (registered by the module
 * that defines the type, e.g. the producer's) takes, with no knowledge of any type. Uses slot_access (cached_get,
 * get_int_attr, cached_set). */

#define IFQ_NEVER LLONG_MAX
#define IFQ_ALWAYS LLONG_MIN

typedef struct {
    PyObject_HEAD
    PyObject *requests;  /* dict: node -> list of InFlightRequest, oldest first */
    PyObject *illegal_state;  /* the exception type raised for a node with nothing in flight */
    Py_ssize_t count;
    long long max_in_flight;
    long long no_timeout_until_ms;
} InFlightObject;

/* the attribute names this type reads, interned once, each with its slot cache (cached_get: one kind of object per
 * name) */
enum {
    IFQ_DESTINATION, IFQ_SEND, IFQ_WRITTEN, IFQ_SIZE, IFQ_SEND_TIME_MS, IFQ_REQUEST_TIMEOUT_MS, IFQ_THROTTLE_TIME_MS,
    IFQ_SOURCE, IFQ_PAYLOAD, IFQ_BODY, IFQ_HEADER, IFQ_CALLBACK, IFQ_CREATED_TIME_MS, IFQ_RESPONSE_THROTTLE, IFQ_COUNT
};
static const char *const ifq_attr_names[IFQ_COUNT] = {
    "destination", "send", "written", "size", "send_time_ms", "request_timeout_ms", "throttle_time_ms", "source",
    "payload", "body", "header", "callback", "created_time_ms", "throttle_time_ms",
};
static PyObject *ifq_attr[IFQ_COUNT];
static slot_cache ifq_cache[IFQ_COUNT];

/* 0, or -1 with an exception */
static int ifq_names(void)
{
    if (ifq_attr[IFQ_COUNT - 1] != NULL)
        return 0;
    for (int i = 0; i < IFQ_COUNT; i++)
        if ((ifq_attr[i] = PyUnicode_InternFromString(ifq_attr_names[i])) == NULL)
            return -1;
    return 0;
}

/* obj.<attribute a> (a new reference, NULL with an exception) */
static inline PyObject *ifq_get(PyObject *obj, int a)
{
    return cached_get(obj, ifq_attr[a], &ifq_cache[a]);
}

/* obj.<attribute a> as a 64-bit int: 0, or -1 with an exception (OverflowError past 64 bits, TypeError for what is
 * not an int) */
static int ifq_long_attr(PyObject *obj, int a, long long *out)
{
    int64_t v;
    if (get_int_attr(obj, ifq_attr[a], &ifq_cache[a], &v) == 0) {
        *out = (long long)v;
        return 0;
    }
    if (PyErr_Occurred())
        return -1;
    PyObject *o = ifq_get(obj, a);
    if (o == NULL)
        return -1;
    long long x = PyLong_AsLongLong(o);
    Py_DECREF(o);
    if (x == -1 && PyErr_Occurred())
        return -1;
    *out = x;
    return 0;
}

/* a request's deadline (send_time_ms + request_timeout_ms; IFQ_ALWAYS for a negative timeout, IFQ_NEVER past the
 * 64-bit range): 0, or -1 with an exception */
static int ifq_deadline(PyObject *request, long long *deadline, long long *send_time, long long *timeout)
{
    if (ifq_long_attr(request, IFQ_SEND_TIME_MS, send_time) < 0 ||
        ifq_long_attr(request, IFQ_REQUEST_TIMEOUT_MS, timeout) < 0)
        return -1;
    if (*timeout < 0)
        *deadline = IFQ_ALWAYS;
    else if (__builtin_add_overflow(*send_time, *timeout, deadline))
        *deadline = *send_time > 0 ? IFQ_NEVER : IFQ_ALWAYS;
    return 0;
}

/* the node's list, NULL when the node has none or it is empty (borrowed; check PyErr_Occurred on NULL) */
static PyObject *ifq_nonempty(InFlightObject *self, PyObject *node)
{
    PyObject *q = PyDict_GetItemWithError(self->requests, node);
    if (q == NULL || PyList_GET_SIZE(q) == 0)
        return NULL;
    return q;
}

/* the node's list, created (empty, at the dict's end) when it has none: borrowed, NULL with an exception */
static PyObject *ifq_list_for(InFlightObject *self, PyObject *node)
{
    PyObject *q = PyDict_GetItemWithError(self->requests, node);
    if (q != NULL || PyErr_Occurred())
        return q;
    q = PyList_New(0);
    if (q == NULL)
        return NULL;
    int rc = PyDict_SetItem(self->requests, node, q);
    Py_DECREF(q);
    return rc < 0 ? NULL : q;
}

static PyObject *ifq_none_in_flight(InFlightObject *self, PyObject *node)
{
    PyObject *msg = PyUnicode_FromFormat("there are no in-flight requests for node %S", node);
    if (msg != NULL) {
        PyErr_SetObject(self->illegal_state, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

/* the node's non-empty list (borrowed), or NULL with IllegalStateError (or the lookup's error) */
static PyObject *ifq_queue(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_nonempty(self, node);
    if (q == NULL && !PyErr_Occurred())
        ifq_none_in_flight(self, node);
    return q;
}

/* remove and return the list's item i (a new reference) */
static PyObject *ifq_pop_at(PyObject *q, Py_ssize_t i)
{
    PyObject *item = Py_NewRef(PyList_GET_ITEM(q, i));
    if (PyList_SetSlice(q, i, i + 1, NULL) < 0) {
        Py_DECREF(item);
        return NULL;
    }
    return item;
}

static PyObject *ifq_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    long long max_in_flight;
    PyObject *illegal_state;
    static char *kwlist[] = {"max_in_flight_requests_per_connection", "illegal_state_error", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LO:InFlightRequests", kwlist, &max_in_flight, &illegal_state))
        return NULL;
    if (max_in_flight < 1) {
        PyErr_SetString(PyExc_ValueError, "max.in.flight.requests.per.connection must be at least 1");
        return NULL;
    }
    if (ifq_names() < 0)
        return NULL;
    InFlightObject *self = (InFlightObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if ((self->requests = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->illegal_state = Py_NewRef(illegal_state);
    self->count = 0;
    self->max_in_flight = max_in_flight;
    self->no_timeout_until_ms = IFQ_NEVER;
    return (PyObject *)self;
}

static int ifq_traverse(InFlightObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->requests);
    Py_VISIT(self->illegal_state);
    return 0;
}

static int ifq_clear(InFlightObject *self)
{
    Py_CLEAR(self->requests);
    Py_CLEAR(self->illegal_state);
    return 0;
}

static void ifq_dealloc(InFlightObject *self)
{
    PyObject_GC_UnTrack(self);
    ifq_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* add(request): the newest request on its node */
static PyObject *ifq_add(InFlightObject *self, PyObject *request)
{
    long long deadline, send_time, timeout;
    PyObject *node = ifq_get(request, IFQ_DESTINATION);
    if (node == NULL)
        return NULL;
    PyObject *q = ifq_list_for(self, node);
    Py_DECREF(node);
    if (q == NULL || PyList_Append(q, request) < 0)
        return NULL;
    self->count++;
    if (ifq_deadline(request, &deadline, &send_time, &timeout) < 0)
        return NULL;
    if (deadline < self->no_timeout_until_ms)
        self->no_timeout_until_ms = deadline;
    Py_RETURN_NONE;
}

static PyObject *ifq_complete_next(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_queue(self, node);
    if (q == NULL)
        return NULL;
    PyObject *req = ifq_pop_at(q, 0);
    if (req != NULL)
        self->count--;
    return req;
}

static PyObject *ifq_last_sent(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_queue(self, node);
    return q == NULL ? NULL : Py_NewRef(PyList_GET_ITEM(q, PyList_GET_SIZE(q) - 1));
}

static PyObject *ifq_complete_last_sent(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_queue(self, node);
    if (q == NULL)
        return NULL;
    PyObject *req = ifq_pop_at(q, PyList_GET_SIZE(q) - 1);
    if (req != NULL)
        self->count--;
    return req;
}

static PyObject *ifq_oldest(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_queue(self, node);
    return q == NULL ? NULL : Py_NewRef(PyList_GET_ITEM(q, 0));
}

static PyObject *ifq_take_oldest_or_none(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_nonempty(self, node);
    if (q == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *req = ifq_pop_at(q, 0);
    if (req != NULL)
        self->count--;
    return req;
}

static PyObject *ifq_put_back_oldest(InFlightObject *self, PyObject *request)
{
    PyObject *node = ifq_get(request, IFQ_DESTINATION);
    if (node == NULL)
        return NULL;
    PyObject *q = ifq_list_for(self, node);
    Py_DECREF(node);
    if (q == NULL || PyList_Insert(q, 0, request) < 0)
        return NULL;
    self->count++;
    Py_RETURN_NONE;
}

static PyObject *ifq_newest_or_none(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_nonempty(self, node);
    if (q == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_NewRef(PyList_GET_ITEM(q, PyList_GET_SIZE(q) - 1));
}

/* can_send_more(node): nothing in flight, or the newest request fully written and fewer than the maximum in flight */
static PyObject *ifq_can_send_more(InFlightObject *self, PyObject *node)
{
    PyObject *q = ifq_nonempty(self, node);
    if (q == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_TRUE;
    }
    PyObject *send = ifq_get(PyList_GET_ITEM(q, PyList_GET_SIZE(q) - 1), IFQ_SEND);
    if (send == NULL)
        return NULL;
    PyObject *written = ifq_get(send, IFQ_WRITTEN);
    PyObject *size = written == NULL ? NULL : ifq_get(send, IFQ_SIZE);
    Py_DECREF(send);
    if (size == NULL) {
        Py_XDECREF(written);
        return NULL;
    }
    int done = PyObject_RichCompareBool(written, size, Py_GE);
    Py_DECREF(written);
    Py_DECREF(size);
    if (done < 0)
        return NULL;
    return PyBool_FromLong(done && (long long)PyList_GET_SIZE(q) < self->max_in_flight);
}

/* the optional node argument of count() and is_empty(): 0 with *node set (NULL for none), or -1 with an exception */
static int ifq_node_arg(PyObject *args, PyObject *kwds, const char *fmt, PyObject **node)
{
    static char *kwlist[] = {"node", NULL};
    *node = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, fmt, kwlist, node))
        return -1;
    if (*node == Py_None)
        *node = NULL;
    return 0;
}

static PyObject *ifq_count(InFlightObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *node;
    if (ifq_node_arg(args, kwds, "|O:count", &node) < 0)
        return NULL;
    if (node == NULL)
        return PyLong_FromSsize_t(self->count);
    PyObject *q = PyDict_GetItemWithError(self->requests, node);
    if (q == NULL && PyErr_Occurred())
        return NULL;
    return PyLong_FromSsize_t(q == NULL ? 0 : PyList_GET_SIZE(q));
}

static PyObject *ifq_is_empty(InFlightObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *node;
    if (ifq_node_arg(args, kwds, "|O:is_empty", &node) < 0)
        return NULL;
    if (node == NULL)
        return PyBool_FromLong(self->count == 0);
    PyObject *q = ifq_nonempty(self, node);
    if (q == NULL && PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(q == NULL);
}

/* clear_all(node): every request to the node, oldest first, and the node forgotten */
static PyObject *ifq_clear_all(InFlightObject *self, PyObject *node)
{
    PyObject *q = PyDict_GetItemWithError(self->requests, node);
    if (q == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyList_New(0);
    }
    Py_INCREF(q);
    if (PyDict_DelItem(self->requests, node) < 0) {
        Py_DECREF(q);
        return NULL;
    }
    self->count -= PyList_GET_SIZE(q);
    return q;  /* (the dict's list, no longer the dict's: the caller's now) */
}

static PyObject *ifq_increment_throttle_time(InFlightObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "increment_throttle_time(node, throttle_time_ms)");
        return NULL;
    }
    PyObject *q = PyDict_GetItemWithError(self->requests, args[0]);
    if (q == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    Py_INCREF(q);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(q); i++) {
        PyObject *req = PyList_GET_ITEM(q, i);
        PyObject *t = ifq_get(req, IFQ_THROTTLE_TIME_MS);
        PyObject *sum = t == NULL ? NULL : PyNumber_InPlaceAdd(t, args[1]);
        Py_XDECREF(t);
        if (sum == NULL || cached_set(req, ifq_attr[IFQ_THROTTLE_TIME_MS], &ifq_cache[IFQ_THROTTLE_TIME_MS], sum) < 0) {
            Py_XDECREF(sum);
            Py_DECREF(q);
            return NULL;
        }
        Py_DECREF(sum);
    }
    Py_DECREF(q);
    Py_RETURN_NONE;
}

/* nodes_with_timed_out_requests(now_ms): the nodes (in the dict's order) with a request for which
 * max(0, now - send_time) - throttle_time > request_timeout; the scan sets no_timeout_until_ms anew */
static PyObject *ifq_nodes_with_timed_out_requests(InFlightObject *self, PyObject *arg)
{
    long long now = PyLong_AsLongLong(arg);
    if (now == -1 && PyErr_Occurred())
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL || now <= self->no_timeout_until_ms)
        return out;
    long long bound = IFQ_NEVER;
    Py_ssize_t pos = 0;
    PyObject *node, *q;
    while (PyDict_Next(self->requests, &pos, &node, &q)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(q); i++) {
            PyObject *req = PyList_GET_ITEM(q, i);
            long long deadline, send_time, timeout, throttle;
            if (ifq_deadline(req, &deadline, &send_time, &timeout) < 0 ||
                ifq_long_attr(req, IFQ_THROTTLE_TIME_MS, &throttle) < 0) {
                Py_DECREF(out);
                return NULL;
            }
            /* (exact: the operands are 64-bit, their differences fit in 128) */
            __int128 elapsed = (__int128)now - send_time;
            if (elapsed < 0)
                elapsed = 0;
            if (elapsed - throttle > (__int128)timeout) {
                if (PyList_Append(out, node) < 0) {
                    Py_DECREF(out);
                    return NULL;
                }
                bound = IFQ_ALWAYS;
                break;
            }
            if (deadline < bound)
                bound = deadline;
        }
    }
    self->no_timeout_until_ms = bound;
    return out;
}

/* complete_receives(receives, responses, now_ms, decoders, new_client_response): the start of
 * NetworkClient._handle_completed_receives (its reference) in one call, for the receives that answer, in order, the
 * oldest request of their node when that request's body type has a decoder in decoders (a dict: type -> callable)
 * that takes the answer (decoder(payload, api_version, correlation_id) is not None) and the body it gives has no
 * throttle time (getattr(body, "throttle_time_ms", 0) false): each such request is taken and
 * new_client_response(header, callback, destination, created_time_ms, now_ms, False, False, None, None, body, None)
 * appended to responses. Stops at the first receive that is not such an answer, leaving it and its request as they
 * were: returns its index (the reference goes on from there), None when every receive was taken. A decoder must not
 * change the in-flight requests (RuntimeError if the request it decoded for is no longer the oldest). */
static PyObject *ifq_complete_receives(InFlightObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "complete_receives(receives: list, responses: list, now_ms, decoders: dict, "
                        "new_client_response)");
        return NULL;
    }
    PyObject *receives = args[0], *responses = args[1], *now = args[2], *decoders = args[3], *make = args[4];
    Py_ssize_t i;
    for (i = 0; i < PyList_GET_SIZE(receives); i++) {
        PyObject *receive = PyList_GET_ITEM(receives, i);
        PyObject *source = ifq_get(receive, IFQ_SOURCE);
        if (source == NULL)
            return NULL;
        PyObject *q = ifq_nonempty(self, source);
        Py_DECREF(source);
        if (q == NULL) {
            if (PyErr_Occurred())
                return NULL;
            break;  /* (unsolicited: the reference closes the connection) */
        }
        PyObject *req = PyList_GET_ITEM(q, 0);
        PyObject *body = ifq_get(req, IFQ_BODY);
        if (body == NULL)
            return NULL;
        PyObject *decoder = PyDict_GetItemWithError(decoders, (PyObject *)Py_TYPE(body));
        Py_DECREF(body);
        if (decoder == NULL) {
            if (PyErr_Occurred())
                return NULL;
            break;
        }
        PyObject *header = ifq_get(req, IFQ_HEADER);
        if (header == NULL)
            return NULL;
        if (!PyTuple_Check(header) || PyTuple_GET_SIZE(header) != 4) {
            Py_DECREF(header);
            break;
        }
        PyObject *payload = ifq_get(receive, IFQ_PAYLOAD);
        if (payload == NULL) {
            Py_DECREF(header);
            return NULL;
        }
        /* (held across the decoder's call: it may run Python code) */
        Py_INCREF(q);
        Py_INCREF(req);
        Py_INCREF(decoder);
        PyObject *decode_args[3] = {payload, PyTuple_GET_ITEM(header, 1), PyTuple_GET_ITEM(header, 3)};
        PyObject *decoded = PyObject_Vectorcall(decoder, decode_args, 3, NULL);
        Py_DECREF(decoder);
        Py_DECREF(payload);
        int throttled = 0;
        if (decoded == NULL)  /* (as the reference's: the request stays the oldest, the error propagates) */
            throttled = -1;
        else if (decoded != Py_None) {
            PyObject *t = ifq_get(decoded, IFQ_RESPONSE_THROTTLE);
            if (t == NULL && PyErr_ExceptionMatches(PyExc_AttributeError))
                PyErr_Clear();  /* (getattr(body, "throttle_time_ms", 0): none) */
            else
                throttled = t == NULL ? -1 : PyObject_IsTrue(t);
            Py_XDECREF(t);
        }
        if (throttled == 0 && decoded != Py_None &&
            (PyList_GET_SIZE(q) == 0 || PyList_GET_ITEM(q, 0) != req)) {
            PyErr_SetString(PyExc_RuntimeError, "the in-flight requests changed while a response was decoded");
            throttled = -1;
        }
        Py_DECREF(req);
        if (decoded == NULL || decoded == Py_None || throttled != 0) {
            Py_XDECREF(decoded);
            Py_DECREF(header);
            Py_DECREF(q);
            if (throttled < 0)
                return NULL;
            break;
        }
        req = ifq_pop_at(q, 0);
        Py_DECREF(q);
        if (req == NULL) {
            Py_DECREF(decoded);
            Py_DECREF(header);
            return NULL;
        }
        self->count--;
        PyObject *fields[11] = {header, NULL, NULL, NULL, now, Py_False, Py_False, Py_None, Py_None, decoded, Py_None};
        PyObject *response = NULL;
        if ((fields[1] = ifq_get(req, IFQ_CALLBACK)) != NULL &&
            (fields[2] = ifq_get(req, IFQ_DESTINATION)) != NULL &&
            (fields[3] = ifq_get(req, IFQ_CREATED_TIME_MS)) != NULL)
            response = PyObject_Vectorcall(make, fields, 11, NULL);
        Py_XDECREF(fields[1]);
        Py_XDECREF(fields[2]);
        Py_XDECREF(fields[3]);
        Py_DECREF(decoded);
        Py_DECREF(header);
        Py_DECREF(req);
        if (response == NULL)
            return NULL;
        int rc = PyList_Append(responses, response);
        Py_DECREF(response);
        if (rc < 0)
            return NULL;
    }
    if (i == PyList_GET_SIZE(receives))
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(i);
}

static PyObject *ifq_iter(InFlightObject *self)
{
    PyObject *all = PyList_New(0);
    if (all == NULL)
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *node, *q;
    while (PyDict_Next(self->requests, &pos, &node, &q)) {
        Py_ssize_t n = PyList_GET_SIZE(all);
        if (PyList_SetSlice(all, n, n, q) < 0) {
            Py_DECREF(all);
            return NULL;
        }
    }
    PyObject *it = PyObject_GetIter(all);
    Py_DECREF(all);
    return it;
}

static PyObject *ifq_get_max(InFlightObject *self, void *closure)
{
    return PyLong_FromLongLong(self->max_in_flight);
}

static PyObject *ifq_get_no_timeout_until_ms(InFlightObject *self, void *closure)
{
    return PyLong_FromLongLong(self->no_timeout_until_ms);
}

static PyMethodDef ifq_methods[] = {
    {"add", (PyCFunction)ifq_add, METH_O, "add(request): the newest request on its node"},
    {"complete_next", (PyCFunction)ifq_complete_next, METH_O,
     "complete_next(node): remove and return the oldest request (IllegalStateError when none)"},
    {"last_sent", (PyCFunction)ifq_last_sent, METH_O, "last_sent(node): the newest request"},
    {"complete_last_sent", (PyCFunction)ifq_complete_last_sent, METH_O,
     "complete_last_sent(node): remove and return the newest request"},
    {"oldest", (PyCFunction)ifq_oldest, METH_O, "oldest(node): the oldest request"},
    {"take_oldest_or_none", (PyCFunction)ifq_take_oldest_or_none, METH_O,
     "take_oldest_or_none(node): remove and return the oldest request, None when none"},
    {"put_back_oldest", (PyCFunction)ifq_put_back_oldest, METH_O,
     "put_back_oldest(request): undo take_oldest_or_none"},
    {"newest_or_none", (PyCFunction)ifq_newest_or_none, METH_O, "newest_or_none(node): the newest request or None"},
    {"can_send_more", (PyCFunction)ifq_can_send_more, METH_O,
     "can_send_more(node): the newest request fully written and fewer than the maximum in flight"},
    {"count", (PyCFunction)(void (*)(void))ifq_count, METH_VARARGS | METH_KEYWORDS, "count(node=None)"},
    {"is_empty", (PyCFunction)(void (*)(void))ifq_is_empty, METH_VARARGS | METH_KEYWORDS, "is_empty(node=None)"},
    {"clear_all", (PyCFunction)ifq_clear_all, METH_O, "clear_all(node): every request to node, oldest first"},
    {"increment_throttle_time", (PyCFunction)(void (*)(void))ifq_increment_throttle_time, METH_FASTCALL,
     "increment_throttle_time(node, throttle_time_ms)"},
    {"nodes_with_timed_out_requests", (PyCFunction)ifq_nodes_with_timed_out_requests, METH_O,
     "nodes_with_timed_out_requests(now_ms)"},
    {"complete_receives", (PyCFunction)(void (*)(void))ifq_complete_receives, METH_FASTCALL,
     "complete_receives(receives, responses, now_ms, decoders, new_client_response) -> int | None"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ifq_getset[] = {
    {"max_in_flight_requests_per_connection", (getter)ifq_get_max, NULL, NULL, NULL},
    {"no_timeout_until_ms", (getter)ifq_get_no_timeout_until_ms, NULL,
     "no request in flight has timed out while the time is at most this (ms)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject InFlightType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.InFlightRequests",
    .tp_basicsize = sizeof(InFlightObject),
    .tp_dealloc = (destructor)ifq_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("InFlightRequests(max_in_flight_requests_per_connection, illegal_state_error): a client's "
                        "in-flight requests per node (reference: network.in_flight_requests.InFlightRequests)"),
    .tp_traverse = (traverseproc)ifq_traverse,
    .tp_clear = (inquiry)ifq_clear,
    .tp_iter = (getiterfunc)ifq_iter,
    .tp_methods = ifq_methods,
    .tp_getset = ifq_getset,
    .tp_new = ifq_new,
};
