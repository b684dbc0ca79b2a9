/* client_poll.c.h: a NetworkClient's poll state and its poll() in one call (included by _kernel.c).
 *
 * ClientPollPath(client, poll_reference, complete_reference, receives_reference, clock_ns, decoders,
 * new_client_response, completed_sends_bit, completed_receives_bit, all_bits, rebootstrap, report_poll_error,
 * report_callback_error) owns what NetworkClient.poll reads to skip the work a poll has not got: aborted_sends (the
 * requests completed without the network, handed back by the next poll), fire_and_forget_sent, handshakes_may_be_due
 * and may_be_connecting. Its reference is network/client_poll_state.py's ClientPollState (the same attributes, no
 * methods), which the client uses without the kernel. ``client`` is held by a weak reference (the client holds the
 * path's bound poll as an instance attribute: no reference cycle).
 *
 * poll(timeout_ms, now_ms): NetworkClient.poll's common case: the client active (client.send_state.active), no aborted
 * sends, now_ms before client.metadata_updater.update_deadline.no_update_before_ms, no re-authentication scheduled
 * (client.selector.reauthentications_scheduled empty) and plain ints: the selector polled for timeout_ms bounded by the
 * time to that deadline and client.default_request_timeout_ms (at least 0; an OSError reported by
 * report_poll_error(error) and the poll's results all_bits, as the reference), the time read (clock_ns() // 10**6),
 * then what the reference's complete_poll does: when the results ask for no look at the completed sends (the
 * completed_sends_bit clear, or no fire-and-forget request sent), the completed receives through
 * client.in_flight_requests.complete_receives(receives, responses, now, decoders, new_client_response) and, for those
 * it leaves, receives_reference(client, receives, responses, now, left) (NetworkClient._handle_completed_receives);
 * the rest (other bits, a handshake or connection to look at, a request that may have timed out, a rebootstrap that
 * may be due) through complete_reference(client, results without the two bits, responses, now); when the completed
 * sends are to be looked at, all of it through complete_reference(client, results, responses, now). Then
 * client.send_state.ready_node = None and each response's callback, in order (an Exception reported by
 * report_callback_error(error), the next callback run). Anything else (other arguments, a client not active, aborted
 * sends, the metadata deadline reached, a re-authentication scheduled, a value not a plain int) is
 * poll_reference(client, timeout_ms, now_ms) (NetworkClient.poll itself), nothing changed before it.
 *
 * Reads and writes only public attributes. Uses slot_access (cached_get, cached_set, compact_int). */

enum {
    CPP_SEND_STATE, CPP_ACTIVE, CPP_METADATA_UPDATER, CPP_UPDATE_DEADLINE, CPP_NO_UPDATE_BEFORE_MS, CPP_SELECTOR,
    CPP_REAUTHENTICATIONS_SCHEDULED, CPP_DEFAULT_TIMEOUT, CPP_POLL, CPP_COMPLETED_RECEIVES, CPP_IN_FLIGHT_REQUESTS,
    CPP_COMPLETE_RECEIVES, CPP_NO_TIMEOUT_UNTIL_MS, CPP_RECOVERY_STRATEGY, CPP_READY_NODE, CPP_CALLBACK,
    CPP_COUNT
};
static const char *const cpp_attr_names[CPP_COUNT] = {
    "send_state", "active", "metadata_updater", "update_deadline", "no_update_before_ms", "selector",
    "reauthentications_scheduled", "default_request_timeout_ms", "poll", "completed_receives", "in_flight_requests",
    "complete_receives", "no_timeout_until_ms", "metadata_recovery_strategy", "ready_node", "callback",
};
static PyObject *cpp_attr[CPP_COUNT];
static slot_cache cpp_cache[CPP_COUNT];
static PyObject *cpp_million;

typedef struct {
    PyObject_HEAD
    /* the state (ClientPollState's) */
    PyObject *aborted_sends; /* list */
    char fire_and_forget_sent, handshakes_may_be_due, may_be_connecting;
    /* fixed */
    PyObject *client; /* weakref to the NetworkClient */
    PyObject *poll_reference, *complete_reference, *receives_reference, *clock_ns, *decoders, *new_client_response;
    PyObject *rebootstrap, *report_poll_error, *report_callback_error;
    long sends_bit, receives_bit, all_bits;
} ClientPollPathObject;

static PyTypeObject ClientPollPathType;

/* 0, or -1 with an exception */
static int cpp_names(void)
{
    if (cpp_million != NULL)
        return 0;
    for (int i = 0; i < CPP_COUNT; i++)
        if ((cpp_attr[i] = PyUnicode_InternFromString(cpp_attr_names[i])) == NULL)
            return -1;
    return (cpp_million = PyLong_FromLong(1000000)) == NULL ? -1 : 0;
}

static inline PyObject *cpp_get(PyObject *obj, int a)
{
    return cached_get(obj, cpp_attr[a], &cpp_cache[a]);
}

/* v (borrowed) as a plain int fitting 64 bits into *out: 1, or 0 (not such an int; no exception) */
static int cpp_int(PyObject *v, int64_t *out)
{
    if (compact_int(v, out))
        return 1;
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0 || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = x;
    return 1;
}

/* obj.a as a plain int fitting 64 bits into *out: 1, 0 (not such an int), or -1 with an exception */
static int cpp_get_int(PyObject *obj, int a, int64_t *out)
{
    PyObject *v = cpp_get(obj, a);
    if (v == NULL)
        return -1;
    int ok = cpp_int(v, out);
    Py_DECREF(v);
    return ok;
}

/* obj.a.b.c (new reference), NULL with an exception */
static PyObject *cpp_get3(PyObject *obj, int a, int b, int c)
{
    PyObject *x = cpp_get(obj, a);
    if (x == NULL)
        return NULL;
    PyObject *y = cpp_get(x, b);
    Py_DECREF(x);
    if (y == NULL)
        return NULL;
    PyObject *z = cpp_get(y, c);
    Py_DECREF(y);
    return z;
}

/* The metadata deadline, client.metadata_updater.update_deadline.no_update_before_ms, into *out: 1, 0 (not a plain
 * int), or -1 with an exception */
static int cpp_deadline(PyObject *client, int64_t *out)
{
    PyObject *v = cpp_get3(client, CPP_METADATA_UPDATER, CPP_UPDATE_DEADLINE, CPP_NO_UPDATE_BEFORE_MS);
    if (v == NULL)
        return -1;
    int ok = cpp_int(v, out);
    Py_DECREF(v);
    return ok;
}

/* Whether poll(timeout_ms, now_ms) is the common case, its select's timeout into *timeout: 1, 0 (the reference's),
 * or -1 with an exception. Changes nothing. */
static int cpp_common(ClientPollPathObject *self, PyObject *client, PyObject *timeout_ms, PyObject *now_ms,
                      PyObject **selector, int64_t *timeout)
{
    int64_t t, now, no_update_before, request_timeout, to_deadline;
    if (!cpp_int(timeout_ms, &t) || !cpp_int(now_ms, &now) || PyList_GET_SIZE(self->aborted_sends) != 0)
        return 0;
    PyObject *state = cpp_get(client, CPP_SEND_STATE);
    if (state == NULL)
        return -1;
    int active = take_truth(cpp_get(state, CPP_ACTIVE));
    Py_DECREF(state);
    if (active <= 0)
        return active;
    int ok = cpp_deadline(client, &no_update_before);
    if (ok <= 0 || !(now < no_update_before) || __builtin_sub_overflow(no_update_before, now, &to_deadline))
        return ok < 0 ? -1 : 0;
    if ((ok = cpp_get_int(client, CPP_DEFAULT_TIMEOUT, &request_timeout)) <= 0)
        return ok;
    PyObject *sel = cpp_get(client, CPP_SELECTOR);
    if (sel == NULL)
        return -1;
    int scheduled = take_truth(cpp_get(sel, CPP_REAUTHENTICATIONS_SCHEDULED));
    if (scheduled != 0) {
        Py_DECREF(sel);
        return scheduled < 0 ? -1 : 0;
    }
    /* at most the time to the metadata deadline and request.timeout.ms, at least 0 */
    if (to_deadline < t)
        t = to_deadline;
    if (request_timeout < t)
        t = request_timeout;
    *timeout = t > 0 ? t : 0;
    *selector = sel;
    return 1;
}

/* The selector's poll: its results (new reference), all_bits after an OSError reported, NULL with an exception */
static PyObject *cpp_select(ClientPollPathObject *self, PyObject *selector, int64_t timeout)
{
    PyObject *t = PyLong_FromLongLong(timeout);
    if (t == NULL)
        return NULL;
    PyObject *call[2] = {selector, t};
    PyObject *results = PyObject_VectorcallMethod(cpp_attr[CPP_POLL], call, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(t);
    if (results != NULL || !PyErr_ExceptionMatches(PyExc_OSError))
        return results;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyObject *r = PyObject_CallOneArg(self->report_poll_error, value != NULL ? value : Py_None);
    Py_XDECREF(value);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    return PyLong_FromLong(self->all_bits);
}

/* complete_reference(client, results, responses, now): 0, or -1 with an exception */
static int cpp_complete_reference(ClientPollPathObject *self, PyObject *client, PyObject *results, PyObject *responses,
                                  PyObject *now)
{
    PyObject *call[4] = {client, results, responses, now};
    PyObject *r = PyObject_Vectorcall(self->complete_reference, call, 4, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* The completed receives of a poll whose completed sends need no look: 0, or -1 with an exception */
static int cpp_receives(ClientPollPathObject *self, PyObject *client, PyObject *selector, PyObject *responses,
                        PyObject *now)
{
    PyObject *call[6];
    call[0] = selector;
    PyObject *receives = PyObject_VectorcallMethod(cpp_attr[CPP_COMPLETED_RECEIVES], call,
                                                   1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (receives == NULL)
        return -1;
    PyObject *in_flight = cpp_get(client, CPP_IN_FLIGHT_REQUESTS);
    if (in_flight == NULL) {
        Py_DECREF(receives);
        return -1;
    }
    call[0] = in_flight;
    call[1] = receives;
    call[2] = responses;
    call[3] = now;
    call[4] = self->decoders;
    call[5] = self->new_client_response;
    PyObject *left = PyObject_VectorcallMethod(cpp_attr[CPP_COMPLETE_RECEIVES], call,
                                               6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(in_flight);
    if (left == NULL) {
        Py_DECREF(receives);
        return -1;
    }
    if (left != Py_None) {
        PyObject *args[5] = {client, receives, responses, now, left};
        PyObject *r = PyObject_Vectorcall(self->receives_reference, args, 5, NULL);
        Py_DECREF(left);
        Py_DECREF(receives);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        return 0;
    }
    Py_DECREF(left);
    Py_DECREF(receives);
    return 0;
}

/* Whether complete_poll has more to do after the sends and receives (the other bits ``rest``, a handshake or a
 * connection to look at, a request that may have timed out, a rebootstrap that may be due): 1, 0, or -1 with an
 * exception */
static int cpp_more(ClientPollPathObject *self, PyObject *client, long rest, int64_t now)
{
    if (rest != 0 || self->handshakes_may_be_due || self->may_be_connecting)
        return 1;
    PyObject *in_flight = cpp_get(client, CPP_IN_FLIGHT_REQUESTS);
    if (in_flight == NULL)
        return -1;
    int64_t no_timeout_until;
    int ok = cpp_get_int(in_flight, CPP_NO_TIMEOUT_UNTIL_MS, &no_timeout_until);
    Py_DECREF(in_flight);
    if (ok <= 0 || now > no_timeout_until)
        return ok < 0 ? -1 : 1;
    PyObject *strategy = cpp_get(client, CPP_RECOVERY_STRATEGY);
    if (strategy == NULL)
        return -1;
    Py_DECREF(strategy); /* (compared by identity only) */
    if (strategy != self->rebootstrap)
        return 0;
    int64_t no_update_before;
    if ((ok = cpp_deadline(client, &no_update_before)) <= 0)
        return ok < 0 ? -1 : 1;
    return now >= no_update_before;
}

/* What the reference does after the select: 0, or -1 with an exception */
static int cpp_after_select(ClientPollPathObject *self, PyObject *client, PyObject *selector, PyObject *results,
                            PyObject *responses, PyObject *now)
{
    int64_t bits, n;
    if (!cpp_int(results, &bits) || !cpp_int(now, &n) || bits < 0
        || ((bits & self->sends_bit) && self->fire_and_forget_sent))
        return cpp_complete_reference(self, client, results, responses, now);
    if ((bits & self->receives_bit) && cpp_receives(self, client, selector, responses, now) < 0)
        return -1;
    long rest = (long)(bits & ~(int64_t)(self->sends_bit | self->receives_bit));
    int more = cpp_more(self, client, rest, n);
    if (more <= 0)
        return more;
    PyObject *r = PyLong_FromLong(rest);
    if (r == NULL)
        return -1;
    int done = cpp_complete_reference(self, client, r, responses, now);
    Py_DECREF(r);
    return done;
}

/* The callbacks of the responses, in order: 0, or -1 with an exception */
static int cpp_callbacks(ClientPollPathObject *self, PyObject *responses)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(responses); i++) {
        PyObject *response = Py_NewRef(PyList_GET_ITEM(responses, i));
        PyObject *callback = cpp_get(response, CPP_CALLBACK);
        PyObject *r = NULL;
        if (callback != NULL) {
            r = callback == Py_None ? Py_NewRef(Py_None) : PyObject_CallOneArg(callback, response);
            Py_DECREF(callback);
        }
        Py_DECREF(response);
        if (r != NULL) {
            Py_DECREF(r);
            continue;
        }
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return -1;
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL && value != NULL)
            PyException_SetTraceback(value, tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        r = PyObject_CallOneArg(self->report_callback_error, value != NULL ? value : Py_None);
        Py_XDECREF(value);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

static PyObject *cpp_poll(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ClientPollPathObject *self = (ClientPollPathObject *)op;
    PyObject *client = PyWeakref_GetObject(self->client);
    if (client == NULL)
        return NULL;
    if (client == Py_None) {
        PyErr_SetString(PyExc_ReferenceError, "the NetworkClient of this ClientPollPath is gone");
        return NULL;
    }
    Py_INCREF(client);
    PyObject *selector = NULL;
    int64_t timeout = 0;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int common = nargs == 2 && kwnames == NULL ? cpp_common(self, client, args[0], args[1], &selector, &timeout) : 0;
    if (common <= 0) {
        PyObject *r = NULL;
        if (common == 0) {
            /* the reference: NetworkClient.poll(client, *args, **kwargs) */
            Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
            PyObject *small[4], **call = small;
            if (1 + nargs + nkw > 4 && (call = PyMem_Malloc((size_t)(1 + nargs + nkw) * sizeof(PyObject *))) == NULL)
                PyErr_NoMemory();
            else {
                call[0] = client;
                for (Py_ssize_t i = 0; i < nargs + nkw; i++)
                    call[1 + i] = args[i];
                r = PyObject_Vectorcall(self->poll_reference, call, (size_t)(1 + nargs), kwnames);
                if (call != small)
                    PyMem_Free(call);
            }
        }
        Py_DECREF(client);
        return r;
    }
    PyObject *responses = NULL, *now = NULL, *results = cpp_select(self, selector, timeout);
    if (results == NULL)
        goto fail;
    PyObject *ns = PyObject_CallNoArgs(self->clock_ns);
    if (ns == NULL)
        goto fail;
    int64_t ns_value;
    if (compact_int(ns, &ns_value) && ns_value >= 0)
        now = PyLong_FromLongLong(ns_value / 1000000);
    else
        now = PyNumber_FloorDivide(ns, cpp_million);
    Py_DECREF(ns);
    if (now == NULL || (responses = PyList_New(0)) == NULL)
        goto fail;
    if (cpp_after_select(self, client, selector, results, responses, now) < 0)
        goto fail;
    Py_CLEAR(results);
    Py_CLEAR(now);
    Py_CLEAR(selector);
    /* the poll changed what is_ready() found (the callbacks' sends ask again) */
    PyObject *state = cpp_get(client, CPP_SEND_STATE);
    if (state == NULL)
        goto fail;
    int set = cached_set(state, cpp_attr[CPP_READY_NODE], &cpp_cache[CPP_READY_NODE], Py_None);
    Py_DECREF(state);
    if (set < 0 || cpp_callbacks(self, responses) < 0)
        goto fail;
    Py_DECREF(client);
    return responses;
fail:
    Py_XDECREF(results);
    Py_XDECREF(now);
    Py_XDECREF(selector);
    Py_XDECREF(responses);
    Py_DECREF(client);
    return NULL;
}

static PyObject *cpp_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *client, *poll_reference, *complete_reference, *receives_reference, *clock_ns, *decoders;
    PyObject *new_client_response, *rebootstrap, *report_poll_error, *report_callback_error;
    long sends_bit, receives_bit, all_bits;
    static char *kwlist[] = {"client", "poll_reference", "complete_reference", "receives_reference", "clock_ns",
                             "decoders", "new_client_response", "completed_sends_bit", "completed_receives_bit",
                             "all_bits", "rebootstrap", "report_poll_error", "report_callback_error", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOO!OlllOOO:ClientPollPath", kwlist, &client, &poll_reference,
                                     &complete_reference, &receives_reference, &clock_ns, &PyDict_Type, &decoders,
                                     &new_client_response, &sends_bit, &receives_bit, &all_bits, &rebootstrap,
                                     &report_poll_error, &report_callback_error))
        return NULL;
    if (cpp_names() < 0)
        return NULL;
    PyObject *weak = PyWeakref_NewRef(client, NULL);
    if (weak == NULL)
        return NULL;
    PyObject *aborted = PyList_New(0);
    ClientPollPathObject *self = aborted == NULL ? NULL : (ClientPollPathObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(weak);
        Py_XDECREF(aborted);
        return NULL;
    }
    self->aborted_sends = aborted;
    self->fire_and_forget_sent = self->handshakes_may_be_due = self->may_be_connecting = 0;
    self->client = weak;
    self->poll_reference = Py_NewRef(poll_reference);
    self->complete_reference = Py_NewRef(complete_reference);
    self->receives_reference = Py_NewRef(receives_reference);
    self->clock_ns = Py_NewRef(clock_ns);
    self->decoders = Py_NewRef(decoders);
    self->new_client_response = Py_NewRef(new_client_response);
    self->rebootstrap = Py_NewRef(rebootstrap);
    self->report_poll_error = Py_NewRef(report_poll_error);
    self->report_callback_error = Py_NewRef(report_callback_error);
    self->sends_bit = sends_bit;
    self->receives_bit = receives_bit;
    self->all_bits = all_bits;
    return (PyObject *)self;
}

static int cpp_traverse(ClientPollPathObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->aborted_sends);
    Py_VISIT(self->client);
    Py_VISIT(self->poll_reference);
    Py_VISIT(self->complete_reference);
    Py_VISIT(self->receives_reference);
    Py_VISIT(self->clock_ns);
    Py_VISIT(self->decoders);
    Py_VISIT(self->new_client_response);
    Py_VISIT(self->rebootstrap);
    Py_VISIT(self->report_poll_error);
    Py_VISIT(self->report_callback_error);
    return 0;
}

static int cpp_clear(ClientPollPathObject *self)
{
    Py_CLEAR(self->aborted_sends);
    Py_CLEAR(self->client);
    Py_CLEAR(self->poll_reference);
    Py_CLEAR(self->complete_reference);
    Py_CLEAR(self->receives_reference);
    Py_CLEAR(self->clock_ns);
    Py_CLEAR(self->decoders);
    Py_CLEAR(self->new_client_response);
    Py_CLEAR(self->rebootstrap);
    Py_CLEAR(self->report_poll_error);
    Py_CLEAR(self->report_callback_error);
    return 0;
}

static void cpp_dealloc(ClientPollPathObject *self)
{
    PyObject_GC_UnTrack(self);
    cpp_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* aborted_sends: a list (the reference's is; the poll reads its size) */
static PyObject *cpp_get_aborted(ClientPollPathObject *self, void *closure)
{
    return Py_NewRef(self->aborted_sends);
}

static int cpp_set_aborted(ClientPollPathObject *self, PyObject *value, void *closure)
{
    if (value == NULL || !PyList_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "aborted_sends must be a list");
        return -1;
    }
    Py_SETREF(self->aborted_sends, Py_NewRef(value));
    return 0;
}

static PyMethodDef cpp_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))cpp_poll, METH_FASTCALL | METH_KEYWORDS,
     "poll(timeout_ms, now_ms): NetworkClient.poll (its common case here, the rest through poll_reference and "
     "complete_reference)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cpp_getset[] = {
    {"aborted_sends", (getter)cpp_get_aborted, (setter)cpp_set_aborted,
     "the requests completed without the network, handed back by the next poll", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef cpp_members[] = {
    {"fire_and_forget_sent", T_BOOL, offsetof(ClientPollPathObject, fire_and_forget_sent), 0,
     "whether a request expecting no response was sent (a completed send may then complete one)"},
    {"handshakes_may_be_due", T_BOOL, offsetof(ClientPollPathObject, handshakes_may_be_due), 0,
     "whether a connection may wait for its ApiVersions request"},
    {"may_be_connecting", T_BOOL, offsetof(ClientPollPathObject, may_be_connecting), 0,
     "whether a connection may be being set up"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ClientPollPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ClientPollPath",
    .tp_basicsize = sizeof(ClientPollPathObject),
    .tp_dealloc = (destructor)cpp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("ClientPollPath(client, poll_reference, complete_reference, receives_reference, clock_ns, "
                        "decoders, new_client_response, completed_sends_bit, completed_receives_bit, all_bits, "
                        "rebootstrap, report_poll_error, report_callback_error): a NetworkClient's poll state with its "
                        "poll() (reference: ClientPollState and NetworkClient.poll)"),
    .tp_traverse = (traverseproc)cpp_traverse,
    .tp_clear = (inquiry)cpp_clear,
    .tp_methods = cpp_methods,
    .tp_members = cpp_members,
    .tp_getset = cpp_getset,
    .tp_new = cpp_new,
};
