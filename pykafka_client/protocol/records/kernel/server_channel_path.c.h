/* server_channel_path.c.h: a broker Processor's per-request channel steps in C (ServerChannelPath) (included by
 * _kernel.c).
 *
 * ServerChannelPath(selector, channels, buffered, interest_stale, activity_order, metrics, clock_ns, channel_type,
 * ready_state, mute_states, invalid_receive, max_iov, blocking_errors), made by Selector.compiled_server_path (the
 * Selector's methods of the same names are the reference; network/transport/server_channel_path.py types it). The
 * selector is held by a weak reference; the rest is lent by it: its open channels (dict), the channels with bytes
 * buffered and those whose registration is stale (sets), its idle expiry's activity order (dict, or None), its
 * metrics, its clock, the KafkaChannel class, ChannelState.READY, the five ChannelMuteState members in their order,
 * InvalidReceiveError, MAX_IOV and the errors of a write that mean "nothing written".
 *
 * send_completing(send): the send's channel (channels[send.destination], a KafkaChannel) written by client_channel_send's
 * common write without reporting the completion: True when all of it went out. mute_channel(channel, request_received)
 * and unmute_channel(channel, response_sent): the mute state machine's common transitions (NOT_MUTED/MUTED to
 * MUTED_AND_RESPONSE_PENDING, MUTED_AND_RESPONSE_PENDING to NOT_MUTED, ...) and the stale set. read_buffered(channel):
 * the checks, the channel's take_buffered_frame() and, for a frame taken, the idle order's move, the append to
 * selector.polled_receives, metrics.responses_received_total and the buffered set; anything else (no frame taken) goes
 * on in selector.read_buffered_taken(channel, taken, now_ns). Any other case (a channel not exactly a KafkaChannel, a
 * transition that raises, an unmute whose registration changes, a send the common write does not take) is the
 * selector's own method, called with nothing changed. Reads and writes only public attributes.
 *
 * Uses slot_access (cached_get, cached_set, take_truth, weak_referent) and client_channel_send (cs_names, cs_get, cs_write)
 * and network (idle_touch). */

enum {
    SP_ID, SP_MUTE_STATE, SP_TAKE_BUFFERED_FRAME, SP_HAS_BYTES_BUFFERED, SP_POLLED_RECEIVES,
    SP_RESPONSES_RECEIVED_TOTAL, SP_READ_BUFFERED_TAKEN, SP_SEND_COMPLETING, SP_MUTE_CHANNEL, SP_UNMUTE_CHANNEL,
    SP_READ_BUFFERED, SP_COUNT
};
static const char *const sp_attr_names[SP_COUNT] = {
    "id", "mute_state", "take_buffered_frame", "has_bytes_buffered", "polled_receives", "responses_received_total",
    "read_buffered_taken", "send_completing", "mute_channel", "unmute_channel", "read_buffered",
};
static PyObject *sp_attr[SP_COUNT];
static slot_cache sp_cache[SP_COUNT];

enum { SP_NOT_MUTED, SP_MUTED, SP_MUTED_RP, SP_MUTED_T, SP_MUTED_T_RP, SP_STATES };

typedef struct {
    PyObject_HEAD
    PyObject *selector; /* weakref to the Selector */
    PyObject *channels, *buffered, *interest_stale, *activity_order, *metrics, *clock_ns, *channel_type;
    PyObject *ready_state, *invalid_receive, *blocking_errors;
    PyObject *mute[SP_STATES];
    Py_ssize_t max_iov;
} ServerChannelPathObject;

static inline PyObject *sp_get(PyObject *obj, int a)
{
    return cached_get(obj, sp_attr[a], &sp_cache[a]);
}

/* the selector (new reference), or NULL with ReferenceError once it is gone */
static PyObject *sp_selector(ServerChannelPathObject *self)
{
    return weak_referent(self->selector, "ServerChannelPath: its selector is gone");
}

/* selector.<method a>(*args): the reference, nothing done here */
static PyObject *sp_reference(ServerChannelPathObject *self, int a, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *selector = sp_selector(self);
    if (selector == NULL)
        return NULL;
    PyObject *call[3] = {selector, nargs > 0 ? args[0] : NULL, nargs > 1 ? args[1] : NULL};
    PyObject *r = PyObject_VectorcallMethod(sp_attr[a], call, 1 + (size_t)nargs, NULL);
    Py_DECREF(selector);
    return r;
}

/* the index of `state` among the mute states, -1 for none of them */
static int sp_mute_index(ServerChannelPathObject *self, PyObject *state)
{
    for (int i = 0; i < SP_STATES; i++)
        if (state == self->mute[i])
            return i;
    return -1;
}

/* the boolean argument i of a call (absent: False): 1, 0, or -1 with an exception */
static int sp_flag(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t i)
{
    return nargs > i ? PyObject_IsTrue(args[i]) : 0;
}

/* send_completing(send) */
static PyObject *sp_send_completing(ServerChannelPathObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "send_completing(send)");
        return NULL;
    }
    PyObject *send = args[0];
    PyObject *destination = cs_get(send, CS_DESTINATION);
    if (destination == NULL)
        return NULL;
    PyObject *channel = PyDict_GetItemWithError(self->channels, destination);
    Py_DECREF(destination);
    if (channel == NULL && PyErr_Occurred())
        return NULL;
    if (channel == NULL || Py_TYPE(channel) != (PyTypeObject *)self->channel_type)
        return sp_reference(self, SP_SEND_COMPLETING, args, nargs);
    PyObject *selector = sp_selector(self);
    if (selector == NULL)
        return NULL;
    Py_INCREF(channel);
    int rc = cs_write(selector, self->metrics, self->ready_state, self->blocking_errors, self->max_iov, channel, send, 0);
    Py_DECREF(channel);
    Py_DECREF(selector);
    if (rc < 0)
        return NULL;
    if (rc == 1)
        return sp_reference(self, SP_SEND_COMPLETING, args, nargs);
    return Py_NewRef(rc == 2 ? Py_True : Py_False);
}

/* mute_channel(channel, request_received=False) */
static PyObject *sp_mute_channel(ServerChannelPathObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "mute_channel(channel, request_received=False)");
        return NULL;
    }
    PyObject *channel = args[0];
    int request_received = sp_flag(args, nargs, 1);
    if (request_received < 0)
        return NULL;
    if (Py_TYPE(channel) != (PyTypeObject *)self->channel_type)
        return sp_reference(self, SP_MUTE_CHANNEL, args, nargs);
    PyObject *state = sp_get(channel, SP_MUTE_STATE);
    if (state == NULL)
        return NULL;
    int i = sp_mute_index(self, state);
    Py_DECREF(state);
    int was_reading = i == SP_NOT_MUTED;
    PyObject *next;
    if (request_received) {
        if (i != SP_NOT_MUTED && i != SP_MUTED)  /* (the reference raises) */
            return sp_reference(self, SP_MUTE_CHANNEL, args, nargs);
        next = self->mute[SP_MUTED_RP];
    }
    else {
        if (!was_reading)
            Py_RETURN_NONE;
        next = self->mute[SP_MUTED];
    }
    if (cached_set(channel, sp_attr[SP_MUTE_STATE], &sp_cache[SP_MUTE_STATE], next) < 0)
        return NULL;
    if (was_reading) {
        PyObject *cid = sp_get(channel, SP_ID);
        int rc = cid == NULL ? -1 : PySet_Add(self->interest_stale, cid);
        Py_XDECREF(cid);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* unmute_channel(channel, response_sent=False) */
static PyObject *sp_unmute_channel(ServerChannelPathObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "unmute_channel(channel, response_sent=False)");
        return NULL;
    }
    PyObject *channel = args[0];
    int response_sent = sp_flag(args, nargs, 1);
    if (response_sent < 0)
        return NULL;
    if (Py_TYPE(channel) != (PyTypeObject *)self->channel_type)
        return sp_reference(self, SP_UNMUTE_CHANNEL, args, nargs);
    PyObject *state = sp_get(channel, SP_MUTE_STATE);
    if (state == NULL)
        return NULL;
    int i = sp_mute_index(self, state);
    Py_DECREF(state);
    /* only an unmute whose registration stays as it is is done here: the channel unmuted now and in the stale set */
    int unmuted = response_sent ? i == SP_MUTED_RP : i == SP_MUTED || i == SP_NOT_MUTED;
    if (!unmuted)
        return sp_reference(self, SP_UNMUTE_CHANNEL, args, nargs);
    PyObject *cid = sp_get(channel, SP_ID);
    if (cid == NULL)
        return NULL;
    int stale = PySet_Contains(self->interest_stale, cid);
    if (stale <= 0) {
        Py_DECREF(cid);
        return stale < 0 ? NULL : sp_reference(self, SP_UNMUTE_CHANNEL, args, nargs);
    }
    int rc = cached_set(channel, sp_attr[SP_MUTE_STATE], &sp_cache[SP_MUTE_STATE], self->mute[SP_NOT_MUTED]);
    if (rc == 0)
        rc = PySet_Discard(self->interest_stale, cid) < 0 ? -1 : 0;
    Py_DECREF(cid);
    if (rc < 0)
        return NULL;
    Py_RETURN_TRUE;
}

/* The rest of read_buffered for a frame taken: 0, or -1 with an exception. */
static int sp_taken(ServerChannelPathObject *self, PyObject *selector, PyObject *channel, PyObject *cid,
                    PyObject *taken, PyObject *now)
{
    if (self->activity_order != Py_None && idle_touch(self->activity_order, cid, now) < 0) /* IdleExpiryManager.update */
        return -1;
    PyObject *receives = sp_get(selector, SP_POLLED_RECEIVES);
    if (receives == NULL)
        return -1;
    int rc = PyList_Check(receives) ? PyList_Append(receives, taken) : -1;
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "the selector's polled_receives is not a list");
    Py_DECREF(receives);
    if (rc < 0)
        return -1;
    PyObject *count = sp_get(self->metrics, SP_RESPONSES_RECEIVED_TOTAL);
    PyObject *one = PyLong_FromLong(1);
    PyObject *sum = count == NULL || one == NULL ? NULL : PyNumber_InPlaceAdd(count, one);
    Py_XDECREF(count);
    Py_XDECREF(one);
    rc = sum == NULL ? -1 : cached_set(self->metrics, sp_attr[SP_RESPONSES_RECEIVED_TOTAL],
                                       &sp_cache[SP_RESPONSES_RECEIVED_TOTAL], sum);
    Py_XDECREF(sum);
    if (rc < 0)
        return -1;
    int more = take_truth(PyObject_CallMethodNoArgs(channel, sp_attr[SP_HAS_BYTES_BUFFERED]));
    if (more < 0)
        return -1;
    return more ? 0 : PySet_Discard(self->buffered, cid) < 0 ? -1 : 0;
}

/* read_buffered(channel) */
static PyObject *sp_read_buffered(ServerChannelPathObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "read_buffered(channel)");
        return NULL;
    }
    PyObject *channel = args[0];
    if (Py_TYPE(channel) != (PyTypeObject *)self->channel_type)
        return sp_reference(self, SP_READ_BUFFERED, args, nargs);
    PyObject *cid = sp_get(channel, SP_ID), *state = NULL, *now = NULL, *taken = NULL, *selector = NULL, *out = NULL;
    if (cid == NULL)
        return NULL;
    int in = PySet_Contains(self->buffered, cid);
    if (in <= 0) {
        out = in < 0 ? NULL : Py_NewRef(Py_False);
        goto done;
    }
    PyObject *open = PyDict_GetItemWithError(self->channels, cid);
    if (open != channel) {
        out = open == NULL && PyErr_Occurred() ? NULL : Py_NewRef(Py_False);
        goto done;
    }
    if ((state = sp_get(channel, SP_MUTE_STATE)) == NULL)
        goto done;
    if (state != self->mute[SP_NOT_MUTED]) {
        out = Py_NewRef(Py_False);
        goto done;
    }
    Py_CLEAR(state);
    if ((now = PyObject_CallNoArgs(self->clock_ns)) == NULL || (state = cs_get(channel, CS_STATE)) == NULL)
        goto done;
    if (state == self->ready_state) {
        PyObject *take = sp_get(channel, SP_TAKE_BUFFERED_FRAME);
        taken = take == NULL ? NULL : PyObject_CallNoArgs(take);
        Py_XDECREF(take);
        if (taken == NULL) {
            if (take == NULL || !PyErr_ExceptionMatches(self->invalid_receive))
                goto done;
            PyErr_Clear();  /* (a bad size, nothing taken: the read fails the same way and closes it) */
        }
    }
    if (taken == NULL)
        taken = Py_NewRef(Py_None);
    if ((selector = sp_selector(self)) == NULL)
        goto done;
    if (taken != Py_None && taken != Py_False) {
        if (sp_taken(self, selector, channel, cid, taken, now) == 0)
            out = Py_NewRef(Py_True);
        goto done;
    }
    PyObject *call[4] = {selector, channel, taken, now};
    PyObject *r = PyObject_VectorcallMethod(sp_attr[SP_READ_BUFFERED_TAKEN], call, 4, NULL);
    if (r != NULL) {
        Py_DECREF(r);
        out = Py_NewRef(Py_True);
    }
done:
    Py_DECREF(cid);
    Py_XDECREF(state);
    Py_XDECREF(now);
    Py_XDECREF(taken);
    Py_XDECREF(selector);
    return out;
}

static PyObject *sp_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *selector, *channels, *buffered, *interest_stale, *activity_order, *metrics, *clock_ns, *channel_type;
    PyObject *ready_state, *mute_states, *invalid_receive, *blocking_errors;
    Py_ssize_t max_iov;
    static char *kwlist[] = {"selector", "channels", "buffered", "interest_stale", "activity_order", "metrics",
                             "clock_ns", "channel_type", "ready_state", "mute_states", "invalid_receive", "max_iov",
                             "blocking_errors", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!O!OOOO!OO!OnO!:ServerChannelPath", kwlist, &selector,
                                     &PyDict_Type, &channels, &PySet_Type, &buffered, &PySet_Type, &interest_stale,
                                     &activity_order, &metrics, &clock_ns, &PyType_Type, &channel_type, &ready_state,
                                     &PyTuple_Type, &mute_states, &invalid_receive, &max_iov, &PyTuple_Type,
                                     &blocking_errors))
        return NULL;
    if (activity_order != Py_None && !PyDict_Check(activity_order)) {
        PyErr_SetString(PyExc_TypeError, "ServerChannelPath: activity_order is a dict or None");
        return NULL;
    }
    if (PyTuple_GET_SIZE(mute_states) != SP_STATES) {
        PyErr_SetString(PyExc_TypeError, "ServerChannelPath: mute_states are the 5 ChannelMuteState members in order");
        return NULL;
    }
    if (cs_names() < 0)
        return NULL;
    if (sp_attr[SP_COUNT - 1] == NULL)
        for (int i = 0; i < SP_COUNT; i++)
            if ((sp_attr[i] = PyUnicode_InternFromString(sp_attr_names[i])) == NULL)
                return NULL;
    PyObject *weak = PyWeakref_NewRef(selector, NULL);
    if (weak == NULL)
        return NULL;
    ServerChannelPathObject *self = (ServerChannelPathObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(weak);
        return NULL;
    }
    self->selector = weak;
    self->channels = Py_NewRef(channels);
    self->buffered = Py_NewRef(buffered);
    self->interest_stale = Py_NewRef(interest_stale);
    self->activity_order = Py_NewRef(activity_order);
    self->metrics = Py_NewRef(metrics);
    self->clock_ns = Py_NewRef(clock_ns);
    self->channel_type = Py_NewRef(channel_type);
    self->ready_state = Py_NewRef(ready_state);
    self->invalid_receive = Py_NewRef(invalid_receive);
    self->blocking_errors = Py_NewRef(blocking_errors);
    for (int i = 0; i < SP_STATES; i++)
        self->mute[i] = Py_NewRef(PyTuple_GET_ITEM(mute_states, i));
    self->max_iov = max_iov;
    return (PyObject *)self;
}

static int sp_traverse(ServerChannelPathObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->selector);
    Py_VISIT(self->channels);
    Py_VISIT(self->buffered);
    Py_VISIT(self->interest_stale);
    Py_VISIT(self->activity_order);
    Py_VISIT(self->metrics);
    Py_VISIT(self->clock_ns);
    Py_VISIT(self->channel_type);
    Py_VISIT(self->ready_state);
    Py_VISIT(self->invalid_receive);
    Py_VISIT(self->blocking_errors);
    for (int i = 0; i < SP_STATES; i++)
        Py_VISIT(self->mute[i]);
    return 0;
}

static int sp_clear(ServerChannelPathObject *self)
{
    Py_CLEAR(self->selector);
    Py_CLEAR(self->channels);
    Py_CLEAR(self->buffered);
    Py_CLEAR(self->interest_stale);
    Py_CLEAR(self->activity_order);
    Py_CLEAR(self->metrics);
    Py_CLEAR(self->clock_ns);
    Py_CLEAR(self->channel_type);
    Py_CLEAR(self->ready_state);
    Py_CLEAR(self->invalid_receive);
    Py_CLEAR(self->blocking_errors);
    for (int i = 0; i < SP_STATES; i++)
        Py_CLEAR(self->mute[i]);
    return 0;
}

static void sp_dealloc(ServerChannelPathObject *self)
{
    PyObject_GC_UnTrack(self);
    sp_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef sp_methods[] = {
    {"send_completing", (PyCFunction)(void (*)(void))sp_send_completing, METH_FASTCALL,
     "send_completing(send) -> bool: Selector.send_completing (True: written whole now, not reported by a poll)"},
    {"mute_channel", (PyCFunction)(void (*)(void))sp_mute_channel, METH_FASTCALL,
     "mute_channel(channel, request_received=False): Selector.mute_channel"},
    {"unmute_channel", (PyCFunction)(void (*)(void))sp_unmute_channel, METH_FASTCALL,
     "unmute_channel(channel, response_sent=False) -> bool: Selector.unmute_channel"},
    {"read_buffered", (PyCFunction)(void (*)(void))sp_read_buffered, METH_FASTCALL,
     "read_buffered(channel) -> bool: Selector.read_buffered"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ServerChannelPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ServerChannelPath",
    .tp_basicsize = sizeof(ServerChannelPathObject),
    .tp_dealloc = (destructor)sp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("ServerChannelPath(selector, channels, buffered, interest_stale, activity_order, metrics, "
                        "clock_ns, channel_type, ready_state, mute_states, invalid_receive, max_iov, blocking_errors): "
                        "a broker Processor's per-request channel steps (reference: the Selector's send_completing, "
                        "mute_channel, unmute_channel, read_buffered)"),
    .tp_traverse = (traverseproc)sp_traverse,
    .tp_clear = (inquiry)sp_clear,
    .tp_methods = sp_methods,
    .tp_new = sp_new,
};
