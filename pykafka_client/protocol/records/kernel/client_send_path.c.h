/* client_send_path.c.h: a NetworkClient's send-side state and its ready(), poll_delay_ms(), new_client_request() and
 * send() in one call each (included by _kernel.c).
 *
 * ClientSendPath(client, ready_reference, send_reference, can_send, channel_send, encoders, general_encoder,
 * reference_encoder, new_network_send, new_in_flight_request, header_type, new_request_reference, correlation_ids,
 * new_client_request, poll_delay_reference, max_delay_ms) owns what NetworkClient.ready and
 * NetworkClient.send (its _do_send) keep between them: the ready cache (ready_node, ready_at_ms: the node and time
 * ready() last found ready to take a request, ready_node set to None wherever anything changes what it read),
 * the versions chosen (versions_chosen: (node id, body type, oldest, latest allowed version) -> (the node's
 * NodeApiVersions it was chosen for, the version)) and whether the client is active (active). Its reference is
 * network/client_send_state.py's ClientSendState (the same attributes, no methods), which the client uses without
 * the kernel. ``client`` is a weak reference to the NetworkClient (the path is the client's; the client holds the
 * path's bound methods as instance attributes: no reference cycle).
 *
 * ready(node, now_ms): NetworkClient.ready's common case: a node with a host and a port >= 0, now_ms before the
 * client's metadata_updater.update_deadline.no_update_before_ms, and can_send(client.in_flight_requests,
 * str(node.id), now_ms) True: the ready cache set, True; False when can_send (a SendReadiness's) says no for a node
 * whose connection state is READY (it cannot connect: nothing else to do). Anything else (and any other arguments)
 * is ready_reference(client, node, now_ms) (NetworkClient.ready itself), nothing changed before it.
 *
 * poll_delay_ms(node, now_ms): NetworkClient.poll_delay_ms for a node whose connection state (its SendReadiness's
 * node_states) is READY: the time to the end of its throttle if any, else max_delay_ms; anything else is
 * poll_delay_reference(client, node, now_ms).
 *
 * send(request, now_ms): NetworkClient.send's (_do_send's) common case: the client active, the request expecting a
 * response, the ready cache holding its destination at now_ms, the version chosen before for its node's current
 * versions (client.api_versions.by_node), its frame encoded by the body type's compiled encoder (encoders; declining
 * with None: reference_encoder) or, for another body type, general_encoder: the ready cache forgotten, the
 * NetworkSend and the InFlightRequest built as the reference builds them (header_type: RequestHeaderInfo) and handed
 * to channel_send(client.in_flight_requests, in_flight_request, network_send) (ChannelSend.send). Anything else
 * (other arguments, a version not chosen yet, an encoder's Exception: the encoders are pure, the reference encodes
 * again and fails the request) is send_reference(client, request, now_ms) (NetworkClient._do_send), nothing changed
 * before it.
 *
 * new_client_request(node_id, body, created_time_ms[, expect_response[, request_timeout_ms[, callback]]][,
 * oldest_allowed_version=..., latest_allowed_version=...]): NetworkClient.new_client_request's common case: the id
 * drawn from correlation_ids.next_or_none() (not None), the client's client_id and, for a request_timeout_ms None,
 * its default_request_timeout_ms, the ClientRequest built by new_client_request (every field, positional). Other
 * arguments, and a draw of None (the counter at the reserved range: its next() wraps it), are
 * new_request_reference(client, ...) (NetworkClient.new_client_request).
 *
 * Reads and writes only public attributes. Uses slot_access (cached_get, compact_int, weak_referent) and
 * client_channel_send (SendReadinessType, SendReadinessObject, sr_can_send). */

enum {
    CSP_HOST, CSP_PORT, CSP_ID, CSP_METADATA_UPDATER, CSP_UPDATE_DEADLINE, CSP_NO_UPDATE_BEFORE_MS,
    CSP_IN_FLIGHT_REQUESTS, CSP_DESTINATION, CSP_BODY, CSP_CORRELATION_ID, CSP_CLIENT_ID, CSP_CREATED_TIME_MS,
    CSP_EXPECT_RESPONSE, CSP_REQUEST_TIMEOUT_MS, CSP_CALLBACK, CSP_OLDEST, CSP_LATEST, CSP_API_VERSIONS, CSP_BY_NODE,
    CSP_API_KEY, CSP_NEXT_OR_NONE, CSP_CLIENT_ID_OF_CLIENT, CSP_DEFAULT_TIMEOUT, CSP_STATE, CSP_THROTTLE_UNTIL,
    CSP_COUNT
};
static const char *const csp_attr_names[CSP_COUNT] = {
    "host", "port", "id", "metadata_updater", "update_deadline", "no_update_before_ms", "in_flight_requests",
    "destination", "body", "correlation_id", "client_id", "created_time_ms", "expect_response", "request_timeout_ms",
    "callback", "oldest_allowed_version", "latest_allowed_version", "api_versions", "by_node", "API_KEY",
    "next_or_none", "client_id", "default_request_timeout_ms", "state", "throttle_until_time_ms",
};
static PyObject *csp_attr[CSP_COUNT];
static slot_cache csp_cache[CSP_COUNT];
static PyObject *csp_zero;

typedef struct {
    PyObject_HEAD
    /* the state (ClientSendState's) */
    PyObject *ready_node;      /* the node id, or NULL: none */
    PyObject *ready_at_ms;
    PyObject *versions_chosen; /* dict */
    char active;
    /* fixed */
    PyObject *client;          /* weakref to the NetworkClient */
    PyObject *ready_reference, *send_reference;
    PyObject *can_send;        /* SendReadiness */
    PyObject *channel_send;    /* ChannelSend.send (bound) */
    PyObject *encoders;        /* dict: body type -> compiled encoder */
    PyObject *general_encoder, *reference_encoder, *new_network_send, *new_in_flight_request, *header_type;
    PyObject *new_request_reference, *correlation_ids, *new_client_request, *poll_delay_reference, *max_delay_ms;
    SendReadinessObject *readiness; /* can_send's SendReadiness, or NULL (borrowed from can_send) */
} ClientSendPathObject;

static PyTypeObject ClientSendPathType;

/* 0, or -1 with an exception */
static int csp_names(void)
{
    if (csp_zero != NULL)
        return 0;
    for (int i = 0; i < CSP_COUNT; i++)
        if ((csp_attr[i] = PyUnicode_InternFromString(csp_attr_names[i])) == NULL)
            return -1;
    return (csp_zero = PyLong_FromLong(0)) == NULL ? -1 : 0;
}

static inline PyObject *csp_get(PyObject *obj, int a)
{
    return cached_get_read_only(obj, csp_attr[a], &csp_cache[a]); /* (the path only reads through its caches) */
}

/* The client (new reference), or NULL with ReferenceError once it is gone */
static PyObject *csp_client(ClientSendPathObject *self)
{
    return weak_referent(self->client, "the NetworkClient of this ClientSendPath is gone");
}

/* reference(client, *args, **kw): what the path declines */
static PyObject *csp_decline(ClientSendPathObject *self, PyObject *reference, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    PyObject *client = csp_client(self);
    if (client == NULL)
        return NULL;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *small[8], **call = small;
    if (1 + nargs + nkw > 8 && (call = PyMem_Malloc((size_t)(1 + nargs + nkw) * sizeof(PyObject *))) == NULL) {
        Py_DECREF(client);
        return PyErr_NoMemory();
    }
    call[0] = client;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        call[1 + i] = args[i];
    PyObject *r = PyObject_Vectorcall(reference, call, (size_t)(1 + nargs), kwnames);
    if (call != small)
        PyMem_Free(call);
    Py_DECREF(client);
    return r;
}

/* a < b as Python compares them: 1, 0, or -1 with an exception */
static int csp_less(PyObject *a, PyObject *b)
{
    int64_t x, y;
    if (compact_int(a, &x) && compact_int(b, &y))
        return x < y;
    return PyObject_RichCompareBool(a, b, Py_LT);
}

/* a == b as Python compares them: 1, 0, or -1 with an exception */
static int csp_equal(PyObject *a, PyObject *b)
{
    int64_t x, y;
    if (compact_int(a, &x) && compact_int(b, &y))
        return x == y;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* obj.a.b (new reference), NULL with an exception */
static PyObject *csp_get2(PyObject *obj, int a, int b)
{
    PyObject *x = csp_get(obj, a);
    if (x == NULL)
        return NULL;
    PyObject *y = csp_get(x, b);
    Py_DECREF(x);
    return y;
}

/* The connection state (its `state`) of node_id in the SendReadiness's node states (new reference), NULL: none
 * (with an exception or not) */
static PyObject *csp_node_state(ClientSendPathObject *self, PyObject *node_id)
{
    PyObject *entry = PyDict_GetItemWithError(self->readiness->node_states, node_id); /* borrowed */
    return entry == NULL ? NULL : csp_get(entry, CSP_STATE);
}

/* The common case of ready(): 1 (ready, the cache set), 2 (not ready, nothing to do), 0 (the reference's), or -1
 * with an exception */
static int csp_ready_common(ClientSendPathObject *self, PyObject *client, PyObject *node, PyObject *now)
{
    PyObject *host = csp_get(node, CSP_HOST);
    if (host == NULL)
        return -1;
    int ok = PyObject_IsTrue(host);
    Py_DECREF(host);
    if (ok <= 0)
        return ok;
    PyObject *port = csp_get(node, CSP_PORT);
    if (port == NULL)
        return -1;
    int64_t p;
    ok = compact_int(port, &p) && p >= 0;
    Py_DECREF(port);
    if (!ok)
        return 0;
    PyObject *deadline = csp_get2(client, CSP_METADATA_UPDATER, CSP_UPDATE_DEADLINE);
    if (deadline == NULL)
        return -1;
    PyObject *no_update_before = csp_get(deadline, CSP_NO_UPDATE_BEFORE_MS);
    Py_DECREF(deadline);
    if (no_update_before == NULL)
        return -1;
    ok = csp_less(now, no_update_before);
    Py_DECREF(no_update_before);
    if (ok <= 0)
        return ok;
    PyObject *id = csp_get(node, CSP_ID);
    if (id == NULL)
        return -1;
    PyObject *node_id = id_string(id);
    Py_DECREF(id);
    if (node_id == NULL)
        return -1;
    PyObject *in_flight = csp_get(client, CSP_IN_FLIGHT_REQUESTS);
    if (in_flight == NULL) {
        Py_DECREF(node_id);
        return -1;
    }
    PyObject *args[3] = {in_flight, node_id, now};
    PyObject *r = Py_IS_TYPE(self->can_send, &SendReadinessType)
                      ? sr_can_send((SendReadinessObject *)self->can_send, args, 3)
                      : PyObject_Vectorcall(self->can_send, args, 3, NULL);
    Py_DECREF(in_flight);
    if (r == NULL) {
        Py_DECREF(node_id);
        return -1;
    }
    ok = r == Py_True;
    Py_DECREF(r);
    if (!ok) {
        /* a node whose connection is READY cannot connect (can_connect: never seen, or disconnected): False */
        PyObject *state = self->readiness == NULL ? NULL : csp_node_state(self, node_id);
        Py_DECREF(node_id);
        if (state == NULL)
            return PyErr_Occurred() ? -1 : 0;
        ok = state == self->readiness->connection_ready;
        Py_DECREF(state);
        return ok ? 2 : 0;
    }
    Py_XSETREF(self->ready_node, node_id);
    Py_XSETREF(self->ready_at_ms, Py_NewRef(now));
    return 1;
}

static PyObject *csp_ready(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ClientSendPathObject *self = (ClientSendPathObject *)op;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        PyObject *client = csp_client(self);
        if (client == NULL)
            return NULL;
        int ok = csp_ready_common(self, client, args[0], args[1]);
        Py_DECREF(client);
        if (ok < 0)
            return NULL;
        if (ok)
            return Py_NewRef(ok == 1 ? Py_True : Py_False);
    }
    return csp_decline(self, self->ready_reference, args, nargsf, kwnames);
}

/* The version chosen before for this request (new reference), NULL: none (with an exception or not) */
static PyObject *csp_chosen_version(ClientSendPathObject *self, PyObject *client, PyObject *request,
                                    PyObject *node_id, PyObject *body_type)
{
    PyObject *by_node = csp_get2(client, CSP_API_VERSIONS, CSP_BY_NODE);
    if (by_node == NULL)
        return NULL;
    PyObject *node_versions = PyObject_GetItem(by_node, node_id);
    Py_DECREF(by_node);
    if (node_versions == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            return NULL;
        PyErr_Clear();
        node_versions = Py_NewRef(Py_None);
    }
    PyObject *oldest = csp_get(request, CSP_OLDEST), *latest = oldest == NULL ? NULL : csp_get(request, CSP_LATEST);
    PyObject *key = latest == NULL ? NULL : PyTuple_Pack(4, node_id, body_type, oldest, latest);
    Py_XDECREF(oldest);
    Py_XDECREF(latest);
    PyObject *version = NULL;
    if (key != NULL) {
        PyObject *chosen = PyDict_GetItemWithError(self->versions_chosen, key); /* borrowed */
        if (chosen != NULL && PyTuple_CheckExact(chosen) && PyTuple_GET_SIZE(chosen) == 2 &&
            PyTuple_GET_ITEM(chosen, 0) == node_versions)
            version = Py_NewRef(PyTuple_GET_ITEM(chosen, 1));
        Py_DECREF(key);
    }
    Py_DECREF(node_versions);
    return version;
}

/* The request's frame pieces (new reference), NULL: declined (no exception: an encoder's Exception cleared) or an
 * exception to raise (a BaseException that is no Exception) */
static PyObject *csp_encode(ClientSendPathObject *self, PyObject *body, PyObject *body_type, PyObject *version,
                            PyObject *correlation_id, PyObject *client_id)
{
    PyObject *args[4] = {body, version, correlation_id, client_id};
    PyObject *encoder = PyDict_GetItemWithError(self->encoders, body_type); /* borrowed */
    PyObject *pieces;
    if (encoder == NULL) {
        if (PyErr_Occurred())
            return NULL;
        pieces = PyObject_Vectorcall(self->general_encoder, args, 4, NULL);
    }
    else {
        Py_INCREF(encoder);
        pieces = PyObject_Vectorcall(encoder, args, 4, NULL);
        Py_DECREF(encoder);
        if (pieces == Py_None) {
            Py_DECREF(pieces);
            pieces = PyObject_Vectorcall(self->reference_encoder, args, 4, NULL);
        }
    }
    if (pieces == NULL && PyErr_ExceptionMatches(PyExc_Exception))
        PyErr_Clear(); /* the reference fails the request */
    return pieces;
}

/* the frame's size: sum(map(len, pieces)) (new reference), NULL with an exception */
static PyObject *csp_size(PyObject *pieces)
{
    PyObject *seq = PySequence_Fast(pieces, "the encoded pieces are not iterable");
    if (seq == NULL)
        return NULL;
    Py_ssize_t total = 0, n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t k = PyObject_Size(items[i]);
        if (k < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        total += k;
    }
    Py_DECREF(seq);
    return PyLong_FromSsize_t(total);
}

/* int(body.API_KEY) (new reference), NULL with an exception: the value kept for the body type it was last read of
 * while that type is unchanged (its version tag), when it is a plain class attribute (no descriptor) of a type whose
 * instances have no __dict__ (nothing can shadow it); else read by name. */
static PyObject *csp_api_key(PyObject *body)
{
    static PyTypeObject *type;
    static unsigned int tag;
    static PyObject *value;
    PyTypeObject *t = Py_TYPE(body);
    if (value != NULL && t == type && type_tag_current(t, tag))
        return Py_NewRef(value);
    PyObject *api = PyObject_GetAttr(body, csp_attr[CSP_API_KEY]);
    PyObject *key = api == NULL ? NULL : PyNumber_Long(api);
    Py_XDECREF(api);
    if (key == NULL)
        return NULL;
    PyObject *found = t->tp_dictoffset == 0 && type_tag_valid(t) ? mro_lookup(t, csp_attr[CSP_API_KEY]) : NULL;
    if (found != NULL && Py_TYPE(found)->tp_descr_get == NULL && PyLong_CheckExact(found)) {
        Py_XSETREF(value, Py_NewRef(key));
        type = t;
        tag = t->tp_version_tag;
    }
    return key;
}

/* The common case of send(): 1 (sent), 0 (the reference's), or -1 with an exception (the channel send's too) */
static int csp_send_common(ClientSendPathObject *self, PyObject *client, PyObject *request, PyObject *now)
{
    if (!self->active || self->ready_node == NULL || self->ready_node == Py_None)
        return 0;
    PyObject *expect = csp_get(request, CSP_EXPECT_RESPONSE);
    if (expect == NULL)
        return -1;
    Py_DECREF(expect);
    if (expect != Py_True)
        return 0;
    int rc = -1, ok;
    PyObject *node_id = NULL, *body = NULL, *version = NULL, *correlation_id = NULL, *client_id = NULL;
    PyObject *pieces = NULL, *size = NULL, *send = NULL, *api_key = NULL, *header = NULL, *in_flight_request = NULL;
    PyObject *timeout = NULL, *created = NULL, *callback = NULL, *in_flight = NULL;
    if ((node_id = csp_get(request, CSP_DESTINATION)) == NULL)
        goto done;
    /* unless ready() found the node ready at this time and nothing changed since: the reference asks */
    if ((ok = csp_equal(node_id, self->ready_node)) <= 0 || (ok = csp_equal(now, self->ready_at_ms)) <= 0) {
        rc = ok;
        goto done;
    }
    if ((body = csp_get(request, CSP_BODY)) == NULL)
        goto done;
    version = csp_chosen_version(self, client, request, node_id, (PyObject *)Py_TYPE(body));
    if (version == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if ((correlation_id = csp_get(request, CSP_CORRELATION_ID)) == NULL ||
        (client_id = csp_get(request, CSP_CLIENT_ID)) == NULL)
        goto done;
    if ((api_key = csp_api_key(body)) == NULL) {
        rc = PyErr_ExceptionMatches(PyExc_Exception) ? 0 : -1; /* (the reference's error) */
        if (rc == 0)
            PyErr_Clear();
        goto done;
    }
    pieces = csp_encode(self, body, (PyObject *)Py_TYPE(body), version, correlation_id, client_id);
    if (pieces == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if ((size = csp_size(pieces)) == NULL) {
        rc = PyErr_ExceptionMatches(PyExc_Exception) ? 0 : -1;
        if (rc == 0)
            PyErr_Clear();
        goto done;
    }
    /* from here on the reference's send: the ready cache forgotten (the send changes what ready() found) */
    Py_CLEAR(self->ready_node);
    PyObject *send_args[5] = {node_id, pieces, size, csp_zero, Py_None};
    if ((send = PyObject_Vectorcall(self->new_network_send, send_args, 5, NULL)) == NULL)
        goto done;
    /* tuple.__new__(header_type, (api_key, version, client_id, correlation_id)): a tuple of the type, its items */
    if ((header = ((PyTypeObject *)self->header_type)->tp_alloc((PyTypeObject *)self->header_type, 4)) == NULL)
        goto done;
    PyObject *items[4] = {api_key, version, client_id, correlation_id};
    for (int i = 0; i < 4; i++)
        PyTuple_SET_ITEM(header, i, Py_NewRef(items[i]));
    if ((timeout = csp_get(request, CSP_REQUEST_TIMEOUT_MS)) == NULL ||
        (created = csp_get(request, CSP_CREATED_TIME_MS)) == NULL || (callback = csp_get(request, CSP_CALLBACK)) == NULL)
        goto done;
    PyObject *ifr_args[11] = {header, timeout, created, node_id, callback, Py_True, Py_False, body, send, now, csp_zero};
    if ((in_flight_request = PyObject_Vectorcall(self->new_in_flight_request, ifr_args, 11, NULL)) == NULL ||
        (in_flight = csp_get(client, CSP_IN_FLIGHT_REQUESTS)) == NULL)
        goto done;
    PyObject *cs_args[3] = {in_flight, in_flight_request, send};
    PyObject *r = PyObject_Vectorcall(self->channel_send, cs_args, 3, NULL);
    if (r == NULL)
        goto done;
    Py_DECREF(r);
    rc = 1;
done:
    Py_XDECREF(node_id);
    Py_XDECREF(body);
    Py_XDECREF(version);
    Py_XDECREF(correlation_id);
    Py_XDECREF(client_id);
    Py_XDECREF(pieces);
    Py_XDECREF(size);
    Py_XDECREF(send);
    Py_XDECREF(api_key);
    Py_XDECREF(header);
    Py_XDECREF(in_flight_request);
    Py_XDECREF(timeout);
    Py_XDECREF(created);
    Py_XDECREF(callback);
    Py_XDECREF(in_flight);
    return rc;
}

static PyObject *csp_send(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ClientSendPathObject *self = (ClientSendPathObject *)op;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        PyObject *client = csp_client(self);
        if (client == NULL)
            return NULL;
        int ok = csp_send_common(self, client, args[0], args[1]);
        Py_DECREF(client);
        if (ok < 0)
            return NULL;
        if (ok)
            Py_RETURN_NONE;
    }
    return csp_decline(self, self->send_reference, args, nargsf, kwnames);
}

/* the common case of poll_delay_ms(): the delay (new reference), NULL: the reference's (with an exception or not) */
static PyObject *csp_poll_delay_common(ClientSendPathObject *self, PyObject *node, PyObject *now)
{
    int64_t until, now_v;
    if (self->readiness == NULL || !compact_int(now, &now_v))
        return NULL;
    PyObject *id = csp_get(node, CSP_ID);
    PyObject *node_id = id == NULL ? NULL : id_string(id);
    Py_XDECREF(id);
    if (node_id == NULL)
        return NULL;
    PyObject *entry = PyDict_GetItemWithError(self->readiness->node_states, node_id); /* borrowed */
    Py_DECREF(node_id);
    if (entry == NULL)
        return NULL;
    Py_INCREF(entry);
    PyObject *state = csp_get(entry, CSP_STATE), *r = NULL;
    if (state != NULL && state == self->readiness->connection_ready) {
        PyObject *t = csp_get(entry, CSP_THROTTLE_UNTIL);
        if (t != NULL && compact_int(t, &until))
            r = until > now_v ? PyLong_FromLongLong(until - now_v) : Py_NewRef(self->max_delay_ms);
        Py_XDECREF(t);
    }
    Py_XDECREF(state);
    Py_DECREF(entry);
    return r;
}

static PyObject *csp_poll_delay_ms(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ClientSendPathObject *self = (ClientSendPathObject *)op;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL) {
        PyObject *r = csp_poll_delay_common(self, args[0], args[1]);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    return csp_decline(self, self->poll_delay_reference, args, nargsf, kwnames);
}

static PyObject *csp_new_client_request(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ClientSendPathObject *self = (ClientSendPathObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *oldest = Py_None, *latest = Py_None;
    int common = nargs >= 3 && nargs <= 6;
    for (Py_ssize_t k = 0; k < nkw && common; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        if (name == csp_attr[CSP_OLDEST] && oldest == Py_None)
            oldest = args[nargs + k];
        else if (name == csp_attr[CSP_LATEST] && latest == Py_None)
            latest = args[nargs + k];
        else
            common = 0; /* (another name, one not interned, or one given twice: the reference's) */
    }
    if (!common)
        return csp_decline(self, self->new_request_reference, args, nargsf, kwnames);
    PyObject *client = csp_client(self);
    if (client == NULL)
        return NULL;
    PyObject *draw = csp_get(self->correlation_ids, CSP_NEXT_OR_NONE);
    PyObject *cid = draw == NULL ? NULL : PyObject_CallNoArgs(draw);
    Py_XDECREF(draw);
    if (cid == NULL) {
        Py_DECREF(client);
        return NULL;
    }
    if (cid == Py_None) { /* the counter reached the reserved range: the reference wraps it */
        Py_DECREF(cid);
        Py_DECREF(client);
        return csp_decline(self, self->new_request_reference, args, nargsf, kwnames);
    }
    PyObject *client_id = csp_get(client, CSP_CLIENT_ID_OF_CLIENT);
    PyObject *timeout = nargs > 4 && args[4] != Py_None ? Py_NewRef(args[4])
                        : client_id == NULL ? NULL : csp_get(client, CSP_DEFAULT_TIMEOUT);
    PyObject *r = NULL;
    if (client_id != NULL && timeout != NULL) {
        PyObject *fields[10] = {args[0], args[1], cid, client_id, args[2], nargs > 3 ? args[3] : Py_True, timeout,
                                nargs > 5 ? args[5] : Py_None, oldest, latest};
        r = PyObject_Vectorcall(self->new_client_request, fields, 10, NULL);
    }
    Py_XDECREF(timeout);
    Py_XDECREF(client_id);
    Py_DECREF(cid);
    Py_DECREF(client);
    return r;
}

static PyObject *csp_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *client, *ready_reference, *send_reference, *can_send, *channel_send, *encoders, *general_encoder;
    PyObject *reference_encoder, *new_network_send, *new_in_flight_request, *header_type;
    PyObject *new_request_reference, *correlation_ids, *new_client_request, *poll_delay_reference, *max_delay_ms;
    static char *kwlist[] = {"client", "ready_reference", "send_reference", "can_send", "channel_send", "encoders",
                             "general_encoder", "reference_encoder", "new_network_send", "new_in_flight_request",
                             "header_type", "new_request_reference", "correlation_ids", "new_client_request",
                             "poll_delay_reference", "max_delay_ms", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOO!OOOOO!OOOOO:ClientSendPath", kwlist, &client, &ready_reference,
                                     &send_reference, &can_send, &channel_send, &PyDict_Type, &encoders,
                                     &general_encoder, &reference_encoder, &new_network_send, &new_in_flight_request,
                                     &PyType_Type, &header_type, &new_request_reference, &correlation_ids,
                                     &new_client_request, &poll_delay_reference, &max_delay_ms))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)header_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "ClientSendPath: header_type is not a tuple type");
        return NULL;
    }
    if (csp_names() < 0)
        return NULL;
    PyObject *weak = PyWeakref_NewRef(client, NULL);
    if (weak == NULL)
        return NULL;
    PyObject *chosen = PyDict_New();
    ClientSendPathObject *self = chosen == NULL ? NULL : (ClientSendPathObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(weak);
        Py_XDECREF(chosen);
        return NULL;
    }
    self->ready_node = NULL;
    self->ready_at_ms = Py_NewRef(csp_zero);
    self->versions_chosen = chosen;
    self->active = 1;
    self->client = weak;
    self->ready_reference = Py_NewRef(ready_reference);
    self->send_reference = Py_NewRef(send_reference);
    self->can_send = Py_NewRef(can_send);
    self->channel_send = Py_NewRef(channel_send);
    self->encoders = Py_NewRef(encoders);
    self->general_encoder = Py_NewRef(general_encoder);
    self->reference_encoder = Py_NewRef(reference_encoder);
    self->new_network_send = Py_NewRef(new_network_send);
    self->new_in_flight_request = Py_NewRef(new_in_flight_request);
    self->header_type = Py_NewRef(header_type);
    self->new_request_reference = Py_NewRef(new_request_reference);
    self->correlation_ids = Py_NewRef(correlation_ids);
    self->new_client_request = Py_NewRef(new_client_request);
    self->poll_delay_reference = Py_NewRef(poll_delay_reference);
    self->max_delay_ms = Py_NewRef(max_delay_ms);
    /* (a SendReadiness's bound can_send: its node states and READY, for the answers of a READY node) */
    PyObject *bound = PyCFunction_Check(can_send) ? PyCFunction_GET_SELF(can_send) : NULL;
    self->readiness = bound != NULL && Py_IS_TYPE(bound, &SendReadinessType) ? (SendReadinessObject *)bound : NULL;
    return (PyObject *)self;
}

static int csp_traverse(ClientSendPathObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->ready_node);
    Py_VISIT(self->ready_at_ms);
    Py_VISIT(self->versions_chosen);
    Py_VISIT(self->client);
    Py_VISIT(self->ready_reference);
    Py_VISIT(self->send_reference);
    Py_VISIT(self->can_send);
    Py_VISIT(self->channel_send);
    Py_VISIT(self->encoders);
    Py_VISIT(self->general_encoder);
    Py_VISIT(self->reference_encoder);
    Py_VISIT(self->new_network_send);
    Py_VISIT(self->new_in_flight_request);
    Py_VISIT(self->header_type);
    Py_VISIT(self->new_request_reference);
    Py_VISIT(self->correlation_ids);
    Py_VISIT(self->new_client_request);
    Py_VISIT(self->poll_delay_reference);
    Py_VISIT(self->max_delay_ms);
    return 0;
}

static int csp_clear(ClientSendPathObject *self)
{
    Py_CLEAR(self->ready_node);
    Py_CLEAR(self->ready_at_ms);
    Py_CLEAR(self->versions_chosen);
    Py_CLEAR(self->client);
    Py_CLEAR(self->ready_reference);
    Py_CLEAR(self->send_reference);
    Py_CLEAR(self->can_send);
    Py_CLEAR(self->channel_send);
    Py_CLEAR(self->encoders);
    Py_CLEAR(self->general_encoder);
    Py_CLEAR(self->reference_encoder);
    Py_CLEAR(self->new_network_send);
    Py_CLEAR(self->new_in_flight_request);
    Py_CLEAR(self->header_type);
    Py_CLEAR(self->new_request_reference);
    Py_CLEAR(self->correlation_ids);
    self->readiness = NULL;
    Py_CLEAR(self->new_client_request);
    Py_CLEAR(self->poll_delay_reference);
    Py_CLEAR(self->max_delay_ms);
    return 0;
}

static void csp_dealloc(ClientSendPathObject *self)
{
    PyObject_GC_UnTrack(self);
    csp_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef csp_methods[] = {
    {"ready", (PyCFunction)(void (*)(void))csp_ready, METH_FASTCALL | METH_KEYWORDS,
     "ready(node, now_ms): NetworkClient.ready (its common case here, the rest through ready_reference)"},
    {"send", (PyCFunction)(void (*)(void))csp_send, METH_FASTCALL | METH_KEYWORDS,
     "send(request, now_ms): NetworkClient.send (its common case here, the rest through send_reference)"},
    {"poll_delay_ms", (PyCFunction)(void (*)(void))csp_poll_delay_ms, METH_FASTCALL | METH_KEYWORDS,
     "poll_delay_ms(node, now_ms): NetworkClient.poll_delay_ms (a READY node's here, the rest through "
     "poll_delay_reference)"},
    {"new_client_request", (PyCFunction)(void (*)(void))csp_new_client_request, METH_FASTCALL | METH_KEYWORDS,
     "new_client_request(node_id, body, created_time_ms, ...): NetworkClient.new_client_request (its common case "
     "here, the rest through new_request_reference)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef csp_members[] = {
    {"ready_node", T_OBJECT, offsetof(ClientSendPathObject, ready_node), 0,
     "the node ready() last found ready to take a request (None: none, or something changed since)"},
    {"ready_at_ms", T_OBJECT_EX, offsetof(ClientSendPathObject, ready_at_ms), 0, "the time it found it ready"},
    {"versions_chosen", T_OBJECT_EX, offsetof(ClientSendPathObject, versions_chosen), READONLY,
     "(node id, body type, oldest, latest allowed version) -> (the node's NodeApiVersions, the version)"},
    {"active", T_BOOL, offsetof(ClientSendPathObject, active), 0, "whether the client is active (not closing)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ClientSendPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ClientSendPath",
    .tp_basicsize = sizeof(ClientSendPathObject),
    .tp_dealloc = (destructor)csp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("ClientSendPath(client, ready_reference, send_reference, can_send, channel_send, encoders, "
                        "general_encoder, reference_encoder, new_network_send, new_in_flight_request, header_type, "
                        "new_request_reference, correlation_ids, new_client_request, poll_delay_reference, max_delay_ms): a "
                        "NetworkClient's send-side state with its ready(), poll_delay_ms(), new_client_request() and "
                        "send() (reference: ClientSendState and NetworkClient's methods)"),
    .tp_traverse = (traverseproc)csp_traverse,
    .tp_clear = (inquiry)csp_clear,
    .tp_methods = csp_methods,
    .tp_members = csp_members,
    .tp_new = csp_new,
};
