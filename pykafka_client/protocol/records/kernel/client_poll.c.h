/* client_poll.c.h: a NetworkClient's poll state and its poll() in one call (ClientPollPath), and a client Selector's
 * common poll in one call (SelectorPoll, below) (included by _kernel.c).
 *
 * ClientPollPath(client, poll_reference, complete_reference, receives_reference, clock_ns, decoders,
 * new_client_response, completed_sends_bit, completed_receives_bit, all_bits, rebootstrap, report_poll_error,
 * report_callback_error, select) owns what NetworkClient.poll reads to skip the work a poll has not got:
 * aborted_sends (the requests completed without the network, handed back by the next poll), fire_and_forget_sent,
 * handshakes_may_be_due and may_be_connecting. Its reference is network/client_poll_state.py's ClientPollState (the same attributes, no
 * methods), which the client uses without the kernel. ``client`` is held by a weak reference (the client holds the
 * path's bound poll as an instance attribute: no reference cycle).
 *
 * poll(timeout_ms, now_ms): NetworkClient.poll's common case: the client active (client.send_state.active), no aborted
 * sends, now_ms before client.metadata_updater.update_deadline.no_update_before_ms, no re-authentication scheduled
 * (client.selector.reauthentications_scheduled empty) and plain ints: the selector polled (select(timeout), its
 * SelectorPoll's poll, when not None, else client.selector.poll(timeout)) for timeout_ms bounded by the
 * time to that deadline and client.default_request_timeout_ms (at least 0; an OSError reported by
 * report_poll_error(error) and the poll's results all_bits, as the reference), the time read (clock_ns() // 10**6),
 * then what the reference's complete_poll does: when the results ask for no look at the completed sends (the
 * completed_sends_bit clear, or no fire-and-forget request sent), the completed receives (the selector's
 * polled_receives when the select is a SelectorPoll's, whose selector's completed_receives() returns them, else
 * completed_receives()) through
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
 * Reads and writes only public attributes, and of the kernel's own types (the client's ClientSendPath and
 * InFlightRequests) their fields. Uses slot_access (cached_get, cached_read, cached_set, compact_int, take_truth,
 * weak_referent),
 * client_in_flight (InFlightType, ifq_complete_receives), client_send_path (ClientSendPathType) and producer_handoff
 * (HandoffType, handoff_select: SelectorPoll's wait with a GilHandoff). */

enum {
    CPP_SEND_STATE, CPP_ACTIVE, CPP_METADATA_UPDATER, CPP_UPDATE_DEADLINE, CPP_NO_UPDATE_BEFORE_MS, CPP_SELECTOR,
    CPP_REAUTHENTICATIONS_SCHEDULED, CPP_DEFAULT_TIMEOUT, CPP_POLL, CPP_COMPLETED_RECEIVES, CPP_IN_FLIGHT_REQUESTS,
    CPP_COMPLETE_RECEIVES, CPP_NO_TIMEOUT_UNTIL_MS, CPP_RECOVERY_STRATEGY, CPP_READY_NODE, CPP_CALLBACK,
    CPP_POLLED_RECEIVES, CPP_COUNT
};
static const char *const cpp_attr_names[CPP_COUNT] = {
    "send_state", "active", "metadata_updater", "update_deadline", "no_update_before_ms", "selector",
    "reauthentications_scheduled", "default_request_timeout_ms", "poll", "completed_receives", "in_flight_requests",
    "complete_receives", "no_timeout_until_ms", "metadata_recovery_strategy", "ready_node", "callback",
    "polled_receives",
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
    PyObject *select; /* the selector's compiled poll (SelectorPoll.poll), or None: its poll method */
    long sends_bit, receives_bit, all_bits;
} ClientPollPathObject;

static PyTypeObject ClientPollPathType;
static PyTypeObject SelectorPollType;

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

/* obj.a borrowed from its slot, or read by name into *owned (cached_read): NULL with an exception */
static inline PyObject *cpp_read(PyObject *obj, int a, PyObject **owned)
{
    return cached_read(obj, cpp_attr[a], &cpp_cache[a], owned);
}

/* v (borrowed) as a plain int fitting 64 bits into *out: 1, or 0 (not such an int; no exception) */
/* A reference method called with its instance first: reference(instance, *args, **kwargs) (the vectorcall's
 * arguments as given, kwnames' values after the positional ones). */
static PyObject *cpl_call_reference(PyObject *reference, PyObject *instance, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *small[4], **call = small;
    if (1 + nargs + nkw > 4 && (call = PyMem_Malloc((size_t)(1 + nargs + nkw) * sizeof(PyObject *))) == NULL)
        return PyErr_NoMemory();
    call[0] = instance;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        call[1 + i] = args[i];
    PyObject *r = PyObject_Vectorcall(reference, call, (size_t)(1 + nargs), kwnames);
    if (call != small)
        PyMem_Free(call);
    return r;
}

/* The exception being raised taken (normalized, its traceback on it) and handed to handler(*lead, error): the
 * handler's result (new reference), NULL with its exception. (A poll's OSError, a callback's error, a channel's.) */
static PyObject *cpl_hand_error(PyObject *handler, PyObject *const *lead, Py_ssize_t nlead)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyObject *call[3] = {NULL, NULL, NULL};
    for (Py_ssize_t i = 0; i < nlead && i < 2; i++)
        call[i] = lead[i];
    call[nlead < 2 ? nlead : 2] = value != NULL ? value : Py_None;
    PyObject *r = PyObject_Vectorcall(handler, call, (size_t)(nlead < 2 ? nlead : 2) + 1, NULL);
    Py_XDECREF(value);
    return r;
}

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

/* The metadata deadline, client.metadata_updater.update_deadline.no_update_before_ms, into *out: 1, 0 (not a plain
 * int), or -1 with an exception. Slotted all three (NetworkClient, DefaultMetadataUpdater, Metadata): three loads,
 * no reference count moved. */
static int cpp_deadline(PyObject *client, int64_t *out)
{
    PyObject *o1, *o2 = NULL, *o3 = NULL, *v = NULL;
    PyObject *updater = cpp_read(client, CPP_METADATA_UPDATER, &o1);
    PyObject *deadline = updater == NULL ? NULL : cpp_read(updater, CPP_UPDATE_DEADLINE, &o2);
    if (deadline != NULL)
        v = cpp_read(deadline, CPP_NO_UPDATE_BEFORE_MS, &o3);
    int ok = v == NULL ? -1 : cpp_int(v, out);
    Py_XDECREF(o3);
    Py_XDECREF(o2);
    Py_XDECREF(o1);
    return ok;
}

/* Whether the client's send state (its ClientSendPath: the field read; another state: its ``active``) is active: 1,
 * 0, or -1 with an exception */
static int cpp_active(PyObject *client)
{
    PyObject *owned;
    PyObject *state = cpp_read(client, CPP_SEND_STATE, &owned);
    if (state == NULL)
        return -1;
    int active = Py_IS_TYPE(state, &ClientSendPathType) ? ((ClientSendPathObject *)state)->active
                                                         : take_truth(cpp_get(state, CPP_ACTIVE));
    Py_XDECREF(owned);
    return active;
}

/* Whether poll(timeout_ms, now_ms) is the common case, its select's timeout into *timeout: 1, 0 (the reference's),
 * or -1 with an exception. Changes nothing. */
static int cpp_common(ClientPollPathObject *self, PyObject *client, PyObject *timeout_ms, PyObject *now_ms,
                      PyObject **selector, int64_t *timeout)
{
    int64_t t, now, no_update_before, request_timeout, to_deadline;
    if (!cpp_int(timeout_ms, &t) || !cpp_int(now_ms, &now) || PyList_GET_SIZE(self->aborted_sends) != 0)
        return 0;
    int active = cpp_active(client);
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
    PyObject *owned;
    PyObject *reauth = cpp_read(sel, CPP_REAUTHENTICATIONS_SCHEDULED, &owned);
    int scheduled = -1;
    if (reauth != NULL && PyDict_CheckExact(reauth))
        scheduled = PyDict_GET_SIZE(reauth) != 0;
    else if (reauth != NULL) { /* (another mapping's __len__ may run Python code: held while it does) */
        if (owned == NULL)
            owned = Py_NewRef(reauth);
        scheduled = PyObject_IsTrue(reauth);
    }
    Py_XDECREF(owned);
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
    PyObject *results = self->select != Py_None
                        ? PyObject_Vectorcall(self->select, call + 1, 1, NULL)
                        : PyObject_VectorcallMethod(cpp_attr[CPP_POLL], call, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(t);
    if (results != NULL || !PyErr_ExceptionMatches(PyExc_OSError))
        return results;
    PyObject *r = cpl_hand_error(self->report_poll_error, NULL, 0);
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

/* The kernel's SelectorPoll whose poll is the select (borrowed), or NULL: another select, or none */
static PyObject *cpp_selector_poll(ClientPollPathObject *self)
{
    PyObject *owner = PyCFunction_Check(self->select) ? PyCFunction_GET_SELF(self->select) : NULL;
    return owner != NULL && Py_IS_TYPE(owner, &SelectorPollType) ? owner : NULL;
}

/* The completed receives of a poll whose completed sends need no look: 0, or -1 with an exception */
static int cpp_receives(ClientPollPathObject *self, PyObject *client, PyObject *selector, PyObject *responses,
                        PyObject *now)
{
    PyObject *call[6];
    call[0] = selector;
    /* a selector with the kernel's SelectorPoll (its completed_receives() is Selector's): its polled_receives read */
    PyObject *receives = cpp_selector_poll(self) != NULL
                         ? cpp_get(selector, CPP_POLLED_RECEIVES)
                         : PyObject_VectorcallMethod(cpp_attr[CPP_COMPLETED_RECEIVES], call,
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
    /* the kernel's InFlightRequests (not subclassable): its complete_receives called as the C function it is */
    PyObject *left = Py_IS_TYPE(in_flight, &InFlightType)
                     ? ifq_complete_receives((InFlightObject *)in_flight, call + 1, 5)
                     : PyObject_VectorcallMethod(cpp_attr[CPP_COMPLETE_RECEIVES], call,
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
    PyObject *owned;
    PyObject *in_flight = cpp_read(client, CPP_IN_FLIGHT_REQUESTS, &owned);
    if (in_flight == NULL)
        return -1;
    int64_t no_timeout_until;
    int ok = 1;
    if (Py_IS_TYPE(in_flight, &InFlightType)) /* the kernel's InFlightRequests: its field */
        no_timeout_until = ((InFlightObject *)in_flight)->no_timeout_until_ms;
    else
        ok = cpp_get_int(in_flight, CPP_NO_TIMEOUT_UNTIL_MS, &no_timeout_until);
    Py_XDECREF(owned);
    if (ok <= 0 || now > no_timeout_until)
        return ok < 0 ? -1 : 1;
    PyObject *strategy = cpp_read(client, CPP_RECOVERY_STRATEGY, &owned);
    if (strategy == NULL)
        return -1;
    Py_XDECREF(owned); /* (compared by identity only) */
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
        r = cpl_hand_error(self->report_callback_error, NULL, 0);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

static PyObject *cpp_poll(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ClientPollPathObject *self = (ClientPollPathObject *)op;
    PyObject *client = weak_referent(self->client, "the NetworkClient of this ClientPollPath is gone");
    if (client == NULL)
        return NULL;
    PyObject *selector = NULL;
    int64_t timeout = 0;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int common = nargs == 2 && kwnames == NULL ? cpp_common(self, client, args[0], args[1], &selector, &timeout) : 0;
    if (common <= 0) {
        PyObject *r = NULL;
        if (common == 0) {
            /* the reference: NetworkClient.poll(client, *args, **kwargs) */
            r = cpl_call_reference(self->poll_reference, client, args, nargs, kwnames);
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
    int set = 0;
    if (Py_IS_TYPE(state, &ClientSendPathType)) /* the kernel's ClientSendPath: its field (NULL is None) */
        Py_CLEAR(((ClientSendPathObject *)state)->ready_node);
    else
        set = cached_set(state, cpp_attr[CPP_READY_NODE], &cpp_cache[CPP_READY_NODE], Py_None);
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
    PyObject *new_client_response, *rebootstrap, *report_poll_error, *report_callback_error, *select;
    long sends_bit, receives_bit, all_bits;
    static char *kwlist[] = {"client", "poll_reference", "complete_reference", "receives_reference", "clock_ns",
                             "decoders", "new_client_response", "completed_sends_bit", "completed_receives_bit",
                             "all_bits", "rebootstrap", "report_poll_error", "report_callback_error", "select",
                             NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOO!OlllOOOO:ClientPollPath", kwlist, &client, &poll_reference,
                                     &complete_reference, &receives_reference, &clock_ns, &PyDict_Type, &decoders,
                                     &new_client_response, &sends_bit, &receives_bit, &all_bits, &rebootstrap,
                                     &report_poll_error, &report_callback_error, &select))
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
    self->select = Py_NewRef(select);
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
    Py_VISIT(self->select);
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
    Py_CLEAR(self->select);
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
                        "rebootstrap, report_poll_error, report_callback_error, select): a NetworkClient's poll state with its "
                        "poll() (reference: ClientPollState and NetworkClient.poll)"),
    .tp_traverse = (traverseproc)cpp_traverse,
    .tp_clear = (inquiry)cpp_clear,
    .tp_methods = cpp_methods,
    .tp_members = cpp_members,
    .tp_getset = cpp_getset,
    .tp_new = cpp_new,
};

/* ---- SelectorPoll: a client Selector's common poll in one call ---------------------------------------------------
 * SelectorPoll(selector, poll_reference, channels, keys, pending_disconnects, interest_stale, memory_muted, buffered,
 * reauth_at_ms, metrics, idle, now_ns, os_selector, epoll_fd, wakeup_fd, poll_channel, drain_wakeup,
 * close_oldest, max_select_timeout_ms), made by the Selector itself (Selector.compiled_poll) with the containers it
 * keeps for its life (never replaced: read here, changed only by the Selector's methods); ``selector`` is held by a
 * weak reference (the Selector holds the path: no cycle). handoff: the selector's GilHandoff or None.
 *
 * poll(timeout_ms): Selector.poll (poll_reference) for a plain int timeout_ms >= 0 on a selector not closed, with no
 * pending disconnects, no channel whose interest is stale, none muted for memory, none with bytes buffered and not
 * nonblocking: the last poll's results replaced by new containers where they have entries (the pending completed
 * sends become the completed sends), the wait (handoff.select(epoll_fd, keys, timeout, wakeup_fd, requests sent -
 * responses received) with a GilHandoff, else os_selector.select(timeout / 1000.0 or 0)) for timeout_ms, 0 when sends
 * completed at send time, at most max_select_timeout_ms; the metrics' select count and times from now_ns(); each
 * event's channel, still open, through poll_channel(selector, channel, mask, end_select_ns) and the wake-up's through
 * drain_wakeup(selector); close_oldest(selector, end_io_ns) once the idle expiry's next_check_ns has come; the
 * POLL_* bits of the results (1 sends, 2 receives, 4 disconnects, 8 connects, 16 re-authentications scheduled).
 * Anything else is poll_reference(selector, timeout_ms), nothing changed before it.
 *
 * read: None, or (channel_type, READY, NOT_MUTED, max_receives, max_read_bytes, reader_type, new_receive,
 * check_receive_size, empty_payload, peer_closed, channel_failed, activity_order), given by a selector without a
 * memory pool: then a read event alone (mask EVENT_READ) of a channel of exactly channel_type (KafkaChannel) not
 * connecting, READY, NOT_MUTED and reading a plaintext socket (its plain_recv_into) through a reader of exactly
 * reader_type (BufferedFrameReader) is Selector._poll_channel's common case here, without its frame: the idle order's
 * move (activity_order, the IdleExpiryManager's live map, or None), the read (KafkaChannel.read_frames: network.c.h's
 * read_frames_into, the channel's bytes_received, peer_closed("connection <id> closed by the peer") at the end of the
 * stream, the reader's has_buffered_frame() after max_receives frames), the metrics' bytes_received_total and
 * responses_received_total, the frames onto the selector's polled_receives and the channel's id into or out of
 * buffered; an Exception in the read through channel_failed(selector, channel, error) (Selector._channel_failed, the
 * reference's except clauses). Any other event goes through poll_channel. */

enum {
    SPL_CLOSED, SPL_NONBLOCKING, SPL_PENDING_COMPLETED_SENDS, SPL_POLLED_SENDS, SPL_POLLED_RECEIVES,
    SPL_POLLED_DISCONNECTS, SPL_POLLED_CONNECTS, SPL_REQUESTS_SENT_TOTAL, SPL_RESPONSES_RECEIVED_TOTAL,
    SPL_SELECT_TOTAL, SPL_SELECT_TIME_NS_TOTAL, SPL_IO_TIME_NS_TOTAL, SPL_NEXT_CHECK_NS, SPL_SELECT, SPL_ID, SPL_DATA,
    SPL_CONNECTING, SPL_STATE, SPL_MUTE_STATE, SPL_BUFFERED_READER, SPL_PLAIN_RECV_INTO, SPL_BYTES_RECEIVED,
    SPL_BYTES_RECEIVED_TOTAL, SPL_HAS_BUFFERED_FRAME, SPL_COUNT
};
static const char *const spl_attr_names[SPL_COUNT] = {
    "closed", "nonblocking", "pending_completed_sends", "polled_sends", "polled_receives", "polled_disconnects",
    "polled_connects", "requests_sent_total", "responses_received_total", "select_total", "select_time_ns_total",
    "io_time_ns_total", "next_check_ns", "select", "id", "data", "connecting", "state", "mute_state", "buffered_reader",
    "plain_recv_into", "bytes_received", "bytes_received_total", "has_buffered_frame",
};
static PyObject *spl_attr[SPL_COUNT];
static slot_cache spl_cache[SPL_COUNT];
static PyObject *spl_thousand, *spl_one;

typedef struct {
    PyObject_HEAD
    PyObject *selector; /* weakref to the Selector */
    PyObject *poll_reference, *channels, *keys, *pending_disconnects, *interest_stale, *memory_muted, *buffered;
    PyObject *reauth_at_ms, *metrics, *idle, *now_ns, *os_selector, *epoll_fd, *wakeup_fd, *poll_channel;
    PyObject *drain_wakeup, *close_oldest, *handoff;
    long long max_select_timeout_ms;
    /* a channel's read event (the read given: all set; None: all NULL, each event through poll_channel) */
    PyObject *channel_type, *ready_state, *not_muted, *reader_type, *new_receive, *check_receive_size, *empty_payload;
    PyObject *peer_closed, *channel_failed, *activity_order;
    Py_ssize_t max_receives, max_read_bytes;
} SelectorPollObject;

static PyTypeObject SelectorPollType;

/* 0, or -1 with an exception */
static int spl_names(void)
{
    if (spl_thousand != NULL)
        return 0;
    for (int i = 0; i < SPL_COUNT; i++)
        if ((spl_attr[i] = PyUnicode_InternFromString(spl_attr_names[i])) == NULL)
            return -1;
    if ((spl_one = PyLong_FromLong(1)) == NULL)
        return -1;
    return (spl_thousand = PyFloat_FromDouble(1000.0)) == NULL ? -1 : 0;
}

static inline PyObject *spl_get(PyObject *obj, int a)
{
    return cached_get(obj, spl_attr[a], &spl_cache[a]);
}

static inline int spl_set(PyObject *obj, int a, PyObject *v)
{
    return cached_set(obj, spl_attr[a], &spl_cache[a], v);
}

/* bool(obj.a), read from its slot without a reference when it has one (cached_read): 1, 0, or -1 with an exception */
static int spl_truth(PyObject *obj, int a)
{
    PyObject *owned;
    PyObject *v = cached_read(obj, spl_attr[a], &spl_cache[a], &owned);
    if (v == NULL)
        return -1;
    if (v == Py_False || v == Py_True) {
        Py_XDECREF(owned);
        return v == Py_True;
    }
    if (owned == NULL) /* (its __bool__ may run Python code: held while it does) */
        owned = Py_NewRef(v);
    int truth = PyObject_IsTrue(v);
    Py_DECREF(owned);
    return truth;
}

/* len(obj.a) != 0 for a list or dict attribute: 1, 0, or -1 with an exception (another type: its truth) */
static int spl_has_entries(PyObject *obj, int a)
{
    PyObject *owned;
    PyObject *v = cached_read(obj, spl_attr[a], &spl_cache[a], &owned);
    if (v == NULL)
        return -1;
    if (PyList_CheckExact(v) || PyDict_CheckExact(v)) {
        int has = PyList_CheckExact(v) ? PyList_GET_SIZE(v) != 0 : PyDict_GET_SIZE(v) != 0;
        Py_XDECREF(owned);
        return has;
    }
    if (owned == NULL) /* (its __len__ may run Python code: held while it does) */
        owned = Py_NewRef(v);
    int has = PyObject_IsTrue(v);
    Py_DECREF(owned);
    return has;
}

/* obj.a = obj.a + delta for an int attribute (the metrics): 0, or -1 with an exception */
static int spl_add(PyObject *obj, int a, PyObject *delta)
{
    PyObject *v = spl_get(obj, a);
    if (v == NULL)
        return -1;
    PyObject *sum = PyNumber_Add(v, delta);
    Py_DECREF(v);
    if (sum == NULL)
        return -1;
    int r = spl_set(obj, a, sum);
    Py_DECREF(sum);
    return r;
}

/* now_ns() (new reference), NULL with an exception */
static inline PyObject *spl_now(SelectorPollObject *self)
{
    return PyObject_CallNoArgs(self->now_ns);
}

/* obj.a replaced by a new empty container (``make``: PyList_New-like) when it has entries: 0, or -1 */
static int spl_renew(PyObject *obj, int a, int dict)
{
    int has = spl_has_entries(obj, a);
    if (has <= 0)
        return has;
    PyObject *fresh = dict ? PyDict_New() : PyList_New(0);
    if (fresh == NULL)
        return -1;
    int r = spl_set(obj, a, fresh);
    Py_DECREF(fresh);
    return r;
}

/* Whether poll(timeout_ms) is the common case: 1, 0 (the reference's), or -1 with an exception. Changes nothing. */
static int spl_common(SelectorPollObject *self, PyObject *selector, PyObject *timeout_ms, int64_t *timeout)
{
    if (!compact_int(timeout_ms, timeout) || *timeout < 0)
        return 0;
    if (PyDict_GET_SIZE(self->pending_disconnects) != 0 || PySet_GET_SIZE(self->interest_stale) != 0
        || PyDict_GET_SIZE(self->memory_muted) != 0 || PySet_GET_SIZE(self->buffered) != 0)
        return 0;
    int closed = spl_truth(selector, SPL_CLOSED);
    if (closed != 0)
        return closed < 0 ? -1 : 0;
    int nonblocking = spl_truth(selector, SPL_NONBLOCKING);
    return nonblocking < 0 ? -1 : !nonblocking;
}

/* The wait: the (key, mask) events (new reference), NULL with an exception */
static PyObject *spl_wait(SelectorPollObject *self, int64_t timeout)
{
    if (self->handoff != Py_None) {
        PyObject *sent = spl_get(self->metrics, SPL_REQUESTS_SENT_TOTAL);
        PyObject *received = sent == NULL ? NULL : spl_get(self->metrics, SPL_RESPONSES_RECEIVED_TOTAL);
        PyObject *in_flight = received == NULL ? NULL : PyNumber_Subtract(sent, received);
        Py_XDECREF(sent);
        Py_XDECREF(received);
        PyObject *t = in_flight == NULL ? NULL : PyLong_FromLongLong(timeout);
        if (t == NULL) {
            Py_XDECREF(in_flight);
            return NULL;
        }
        PyObject *call[6] = {self->handoff, self->epoll_fd, self->keys, t, self->wakeup_fd, in_flight};
        PyObject *events;
#ifdef GIL_HANDOFF
        if (Py_IS_TYPE(self->handoff, &HandoffType))
            events = handoff_select(self->handoff, call + 1, 5);
        else
#endif
            events = PyObject_VectorcallMethod(spl_attr[SPL_SELECT], call, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(t);
        Py_DECREF(in_flight);
        return events;
    }
    PyObject *seconds;
    if (timeout > 0) {
        PyObject *t = PyLong_FromLongLong(timeout);
        seconds = t == NULL ? NULL : PyNumber_TrueDivide(t, spl_thousand);
        Py_XDECREF(t);
    } else
        seconds = PyLong_FromLong(0);
    if (seconds == NULL)
        return NULL;
    PyObject *call[2] = {self->os_selector, seconds};
    PyObject *events = PyObject_VectorcallMethod(spl_attr[SPL_SELECT], call, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(seconds);
    return events;
}

/* obj.a = obj.a + by for a plain int attribute (the counters): 0, or -1 with an exception */
static int spl_count(PyObject *obj, int a, int64_t by)
{
    int64_t v;
    int rc = get_int_attr(obj, spl_attr[a], &spl_cache[a], &v);
    if (rc < 0)
        return -1;
    PyObject *n = PyLong_FromLongLong(rc == 0 ? v + by : by);
    if (n == NULL)
        return -1;
    rc = rc == 0 ? spl_set(obj, a, n) : spl_add(obj, a, n); /* (not a plain int: its + as the reference's +=) */
    Py_DECREF(n);
    return rc;
}

/* obj.a += end - start (the metrics' times): 0, or -1 with an exception */
static int spl_add_difference(PyObject *obj, int a, PyObject *end, PyObject *start)
{
    int64_t e, b;
    if (compact_int(end, &e) && compact_int(start, &b))
        return spl_count(obj, a, e - b);
    PyObject *d = PyNumber_Subtract(end, start);
    if (d == NULL)
        return -1;
    int rc = spl_add(obj, a, d);
    Py_DECREF(d);
    return rc;
}

/* What KafkaChannel.read_frames does after its read of a plaintext socket, and what _poll_channel does with the
 * frames: 0, or -1 with an exception (to go through channel_failed when an Exception). */
static int spl_read(SelectorPollObject *self, PyObject *selector, PyObject *channel, PyObject *cid, PyObject *reader,
                    PyObject *recv_into)
{
    PyObject *receives;
    Py_ssize_t n;
    int ended, more = 0, rc = -1;
    if (read_frames_into(reader, recv_into, self->max_receives, self->max_read_bytes, self->new_receive,
                         self->check_receive_size, self->empty_payload, &receives, &n, &ended) < 0)
        return -1;
    if (spl_count(channel, SPL_BYTES_RECEIVED, n) < 0)
        goto done;
    if (ended) {
        PyObject *error = PyUnicode_FromFormat("connection %S closed by the peer", cid);
        if (error != NULL) {
            PyErr_SetObject(self->peer_closed, error);
            Py_DECREF(error);
        }
        goto done;
    }
    Py_ssize_t got = PyList_GET_SIZE(receives);
    if (got >= self->max_receives) {
        PyObject *call[1] = {reader};
        if ((more = take_truth(PyObject_VectorcallMethod(spl_attr[SPL_HAS_BUFFERED_FRAME], call,
                                                         1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL))) < 0)
            goto done;
    }
    if (spl_count(self->metrics, SPL_BYTES_RECEIVED_TOTAL, n) < 0)
        goto done;
    if (got > 0) {
        PyObject *polled = spl_get(selector, SPL_POLLED_RECEIVES);
        if (polled == NULL)
            goto done;
        int ext = PyList_CheckExact(polled) ? PyList_SetSlice(polled, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, receives)
                                             : take_truth(PyObject_CallMethod(polled, "extend", "O", receives));
        Py_DECREF(polled);
        if (ext < 0 || spl_count(self->metrics, SPL_RESPONSES_RECEIVED_TOTAL, got) < 0)
            goto done;
    }
    rc = more ? PySet_Add(self->buffered, cid) : PySet_Discard(self->buffered, cid) < 0 ? -1 : 0;
done:
    Py_DECREF(receives);
    return rc;
}

/* A channel's event as Selector._poll_channel's common case (the read given, see above): 1 (done), 0 (not the common
 * case: nothing changed, poll_channel's), or -1 with an exception */
static int spl_read_event(SelectorPollObject *self, PyObject *selector, PyObject *channel, PyObject *mask,
                          PyObject *end_select)
{
    int64_t m;
    if (self->channel_type == NULL || (PyObject *)Py_TYPE(channel) != self->channel_type || !compact_int(mask, &m)
        || m != 1 /* selectors.EVENT_READ alone */)
        return 0;
    static const int which[6] = {SPL_ID, SPL_CONNECTING, SPL_STATE, SPL_MUTE_STATE, SPL_BUFFERED_READER,
                                 SPL_PLAIN_RECV_INTO};
    PyObject *v[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int rc = -1;
    for (int i = 0; i < 6; i++)
        if ((v[i] = spl_get(channel, which[i])) == NULL)
            goto done;
    PyObject *cid = v[0], *reader = v[4], *recv_into = v[5];
    if (v[1] != Py_False || v[2] != self->ready_state || v[3] != self->not_muted
        || (PyObject *)Py_TYPE(reader) != self->reader_type || recv_into == Py_None) {
        rc = 0;
        goto done;
    }
    if (self->activity_order != Py_None && idle_touch(self->activity_order, cid, end_select) < 0)
        goto done;
    if (spl_read(self, selector, channel, cid, reader, recv_into) == 0)
        rc = 1;
    else if (PyErr_ExceptionMatches(PyExc_Exception)) { /* the reference's except clauses */
        PyObject *lead[2] = {selector, channel};
        PyObject *r = cpl_hand_error(self->channel_failed, lead, 2);
        if (r != NULL) {
            Py_DECREF(r);
            rc = 1;
        }
    }
done:
    for (int i = 0; i < 6; i++)
        Py_XDECREF(v[i]);
    return rc;
}

/* Each event's channel through poll_channel, the wake-up's through drain_wakeup: 0, or -1 with an exception */
static int spl_events(SelectorPollObject *self, PyObject *selector, PyObject *events, PyObject *end_select)
{
    PyObject *seq = PySequence_Fast(events, "the selector's events are not a sequence");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *event = PySequence_Fast_GET_ITEM(seq, i), *key, *mask;
        if (PyTuple_CheckExact(event) && PyTuple_GET_SIZE(event) == 2) {
            key = PyTuple_GET_ITEM(event, 0);
            mask = PyTuple_GET_ITEM(event, 1);
        } else {
            PyErr_SetString(PyExc_TypeError, "a selector event is not a (key, mask) pair");
            goto fail;
        }
        /* key.data (a SelectorKey: a named tuple, data its fourth field) */
        PyObject *channel = PyTuple_CheckExact(key) || !PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 4
                            ? spl_get(key, SPL_DATA) : Py_NewRef(PyTuple_GET_ITEM(key, 3));
        if (channel == NULL)
            goto fail;
        PyObject *r;
        if (channel == Py_None) {
            Py_DECREF(channel);
            r = PyObject_CallOneArg(self->drain_wakeup, selector);
        } else {
            PyObject *id = spl_get(channel, SPL_ID);
            if (id == NULL) {
                Py_DECREF(channel);
                goto fail;
            }
            PyObject *open = PyDict_GetItemWithError(self->channels, id); /* borrowed */
            Py_DECREF(id);
            if (open != channel) { /* closed (or replaced) by an earlier event's handling */
                Py_DECREF(channel);
                if (PyErr_Occurred())
                    goto fail;
                continue;
            }
            int done = spl_read_event(self, selector, channel, mask, end_select);
            if (done != 0) {
                Py_DECREF(channel);
                if (done < 0)
                    goto fail;
                continue;
            }
            PyObject *call[4] = {selector, channel, mask, end_select};
            r = PyObject_Vectorcall(self->poll_channel, call, 4, NULL);
            Py_DECREF(channel);
        }
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

/* The POLL_* bits of the results (new reference), NULL with an exception */
static PyObject *spl_bits(SelectorPollObject *self, PyObject *selector)
{
    static const int which[4] = {SPL_POLLED_SENDS, SPL_POLLED_RECEIVES, SPL_POLLED_DISCONNECTS, SPL_POLLED_CONNECTS};
    long bits = 0;
    for (int i = 0; i < 4; i++) {
        int has = spl_has_entries(selector, which[i]);
        if (has < 0)
            return NULL;
        if (has)
            bits |= 1L << i;
    }
    int scheduled = PyObject_IsTrue(self->reauth_at_ms);
    if (scheduled < 0)
        return NULL;
    return PyLong_FromLong(bits | (scheduled ? 16 : 0));
}

/* The common poll after its checks: the bits (new reference), NULL with an exception */
static PyObject *spl_poll_common(SelectorPollObject *self, PyObject *selector, int64_t timeout)
{
    /* this poll's results in new containers where the last poll's has entries */
    PyObject *pending = spl_get(selector, SPL_PENDING_COMPLETED_SENDS);
    if (pending == NULL)
        return NULL;
    int has = PyObject_IsTrue(pending);
    if (has > 0) {
        PyObject *fresh = PyList_New(0);
        has = fresh == NULL || spl_set(selector, SPL_POLLED_SENDS, pending) < 0
              || spl_set(selector, SPL_PENDING_COMPLETED_SENDS, fresh) < 0 ? -1 : 1;
        Py_XDECREF(fresh);
    } else if (has == 0)
        has = spl_renew(selector, SPL_POLLED_SENDS, 0) < 0 ? -1 : 0;
    Py_DECREF(pending);
    if (has < 0 || spl_renew(selector, SPL_POLLED_RECEIVES, 0) < 0 || spl_renew(selector, SPL_POLLED_DISCONNECTS, 1) < 0
        || spl_renew(selector, SPL_POLLED_CONNECTS, 0) < 0)
        return NULL;
    if (has) /* (the disconnects are none: no pending ones, and the last poll's were replaced) */
        timeout = 0;
    PyObject *start = spl_now(self), *events = NULL, *end_select = NULL, *end_io = NULL, *d = NULL;
    if (start == NULL)
        return NULL;
    if (timeout > self->max_select_timeout_ms)
        timeout = self->max_select_timeout_ms;
    if ((events = spl_wait(self, timeout)) == NULL || (end_select = spl_now(self)) == NULL)
        goto fail;
    if (spl_count(self->metrics, SPL_SELECT_TOTAL, 1) < 0
        || spl_add_difference(self->metrics, SPL_SELECT_TIME_NS_TOTAL, end_select, start) < 0)
        goto fail;
    if (spl_events(self, selector, events, end_select) < 0 || (end_io = spl_now(self)) == NULL
        || spl_add_difference(self->metrics, SPL_IO_TIME_NS_TOTAL, end_io, end_select) < 0)
        goto fail;
    if (self->idle != Py_None) { /* (no call before a connection may have expired) */
        PyObject *next_check = spl_get(self->idle, SPL_NEXT_CHECK_NS);
        int due = next_check == NULL ? -1 : PyObject_RichCompareBool(end_io, next_check, Py_GE);
        Py_XDECREF(next_check);
        if (due < 0)
            goto fail;
        if (due) {
            PyObject *call[2] = {selector, end_io};
            PyObject *r = PyObject_Vectorcall(self->close_oldest, call, 2, NULL);
            if (r == NULL)
                goto fail;
            Py_DECREF(r);
        }
    }
    Py_DECREF(start);
    Py_DECREF(events);
    Py_DECREF(end_select);
    Py_DECREF(end_io);
    return spl_bits(self, selector);
fail:
    Py_XDECREF(start);
    Py_XDECREF(events);
    Py_XDECREF(end_select);
    Py_XDECREF(end_io);
    Py_XDECREF(d);
    return NULL;
}

static PyObject *spl_poll(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SelectorPollObject *self = (SelectorPollObject *)op;
    PyObject *selector = weak_referent(self->selector, "the Selector of this SelectorPoll is gone");
    if (selector == NULL)
        return NULL;
    int64_t timeout = 0;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int common = nargs == 1 && kwnames == NULL ? spl_common(self, selector, args[0], &timeout) : 0;
    PyObject *r = NULL;
    if (common > 0)
        r = spl_poll_common(self, selector, timeout);
    else if (common == 0) {
        /* the reference: Selector.poll(selector, *args, **kwargs) */
        r = cpl_call_reference(self->poll_reference, selector, args, nargs, kwnames);
    }
    Py_DECREF(selector);
    return r;
}

static PyObject *spl_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *selector, *poll_reference, *channels, *keys, *pending_disconnects, *interest_stale, *memory_muted;
    PyObject *buffered, *reauth_at_ms, *metrics, *idle, *now_ns, *os_selector, *epoll_fd, *wakeup_fd, *poll_channel;
    PyObject *drain_wakeup, *close_oldest, *read;
    long long max_select_timeout_ms;
    static char *kwlist[] = {"selector", "poll_reference", "channels", "keys", "pending_disconnects", "interest_stale",
                             "memory_muted", "buffered", "reauth_at_ms", "metrics", "idle", "now_ns", "os_selector",
                             "epoll_fd", "wakeup_fd", "poll_channel", "drain_wakeup", "close_oldest",
                             "max_select_timeout_ms", "read", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!O!O!O!O!O!OOOOOOOOOOLO:SelectorPoll", kwlist, &selector,
                                     &poll_reference, &PyDict_Type, &channels, &PyDict_Type, &keys, &PyDict_Type,
                                     &pending_disconnects, &PySet_Type, &interest_stale, &PyDict_Type, &memory_muted,
                                     &PySet_Type, &buffered, &reauth_at_ms, &metrics, &idle, &now_ns, &os_selector,
                                     &epoll_fd, &wakeup_fd, &poll_channel, &drain_wakeup, &close_oldest,
                                     &max_select_timeout_ms, &read))
        return NULL;
    Py_ssize_t max_receives = 0, max_read_bytes = 0;
    if (read != Py_None) {
        if (!PyTuple_Check(read) || PyTuple_GET_SIZE(read) != 12 || !PyType_Check(PyTuple_GET_ITEM(read, 0))
            || !PyType_Check(PyTuple_GET_ITEM(read, 5))
            || (PyTuple_GET_ITEM(read, 11) != Py_None && !PyDict_Check(PyTuple_GET_ITEM(read, 11)))) {
            PyErr_SetString(PyExc_TypeError, "SelectorPoll: read is None or (channel_type, READY, NOT_MUTED, "
                            "max_receives, max_read_bytes, reader_type, new_receive, check_receive_size, empty_payload, "
                            "peer_closed, channel_failed, activity_order: a dict or None)");
            return NULL;
        }
        max_receives = PyLong_AsSsize_t(PyTuple_GET_ITEM(read, 3));
        max_read_bytes = max_receives == -1 ? -1 : PyLong_AsSsize_t(PyTuple_GET_ITEM(read, 4));
        if (max_read_bytes == -1 && PyErr_Occurred())
            return NULL;
    }
    if (spl_names() < 0)
        return NULL;
    PyObject *weak = PyWeakref_NewRef(selector, NULL);
    if (weak == NULL)
        return NULL;
    SelectorPollObject *self = (SelectorPollObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(weak);
        return NULL;
    }
    self->selector = weak;
    self->poll_reference = Py_NewRef(poll_reference);
    self->channels = Py_NewRef(channels);
    self->keys = Py_NewRef(keys);
    self->pending_disconnects = Py_NewRef(pending_disconnects);
    self->interest_stale = Py_NewRef(interest_stale);
    self->memory_muted = Py_NewRef(memory_muted);
    self->buffered = Py_NewRef(buffered);
    self->reauth_at_ms = Py_NewRef(reauth_at_ms);
    self->metrics = Py_NewRef(metrics);
    self->idle = Py_NewRef(idle);
    self->now_ns = Py_NewRef(now_ns);
    self->os_selector = Py_NewRef(os_selector);
    self->epoll_fd = Py_NewRef(epoll_fd);
    self->wakeup_fd = Py_NewRef(wakeup_fd);
    self->poll_channel = Py_NewRef(poll_channel);
    self->drain_wakeup = Py_NewRef(drain_wakeup);
    self->close_oldest = Py_NewRef(close_oldest);
    self->handoff = Py_NewRef(Py_None);
    self->max_select_timeout_ms = max_select_timeout_ms;
    if (read != Py_None) {
        PyObject **fields[10] = {&self->channel_type, &self->ready_state, &self->not_muted, &self->reader_type,
                                 &self->new_receive, &self->check_receive_size, &self->empty_payload,
                                 &self->peer_closed, &self->channel_failed, &self->activity_order};
        static const int at[10] = {0, 1, 2, 5, 6, 7, 8, 9, 10, 11};
        for (int i = 0; i < 10; i++)
            *fields[i] = Py_NewRef(PyTuple_GET_ITEM(read, at[i]));
        self->max_receives = max_receives;
        self->max_read_bytes = max_read_bytes;
    }
    return (PyObject *)self;
}

#define SPL_FIELDS(X) X(selector) X(poll_reference) X(channels) X(keys) X(pending_disconnects) X(interest_stale) \
    X(memory_muted) X(buffered) X(reauth_at_ms) X(metrics) X(idle) X(now_ns) X(os_selector) X(epoll_fd) X(wakeup_fd) \
    X(poll_channel) X(drain_wakeup) X(close_oldest) X(handoff) X(channel_type) X(ready_state) X(not_muted) \
    X(reader_type) X(new_receive) X(check_receive_size) X(empty_payload) X(peer_closed) X(channel_failed) X(activity_order)

static int spl_traverse(SelectorPollObject *self, visitproc visit, void *arg)
{
#define SPL_VISIT(f) Py_VISIT(self->f);
    SPL_FIELDS(SPL_VISIT)
#undef SPL_VISIT
    return 0;
}

static int spl_clear(SelectorPollObject *self)
{
#define SPL_CLEAR(f) Py_CLEAR(self->f);
    SPL_FIELDS(SPL_CLEAR)
#undef SPL_CLEAR
    return 0;
}

static void spl_dealloc(SelectorPollObject *self)
{
    PyObject_GC_UnTrack(self);
    spl_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *spl_get_handoff(SelectorPollObject *self, void *closure)
{
    return Py_NewRef(self->handoff != NULL ? self->handoff : Py_None);
}

static int spl_set_handoff(SelectorPollObject *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "handoff cannot be deleted");
        return -1;
    }
    Py_XSETREF(self->handoff, Py_NewRef(value));
    return 0;
}

static PyMethodDef spl_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))spl_poll, METH_FASTCALL | METH_KEYWORDS,
     "poll(timeout_ms): Selector.poll (its common case here, the rest through poll_reference)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef spl_getset[] = {
    {"handoff", (getter)spl_get_handoff, (setter)spl_set_handoff,
     "the selector's GilHandoff, whose select is the wait (None: the OS selector's select)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SelectorPollType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SelectorPoll",
    .tp_basicsize = sizeof(SelectorPollObject),
    .tp_dealloc = (destructor)spl_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("SelectorPoll(selector, poll_reference, channels, keys, pending_disconnects, interest_stale, "
                        "memory_muted, buffered, reauth_at_ms, metrics, idle, now_ns, os_selector, epoll_fd, "
                        "wakeup_fd, poll_channel, drain_wakeup, close_oldest, max_select_timeout_ms, read): a client "
                        "Selector's common poll in one call (reference: Selector.poll)"),
    .tp_traverse = (traverseproc)spl_traverse,
    .tp_clear = (inquiry)spl_clear,
    .tp_methods = spl_methods,
    .tp_getset = spl_getset,
    .tp_new = spl_new,
};
