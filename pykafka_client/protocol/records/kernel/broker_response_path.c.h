/* broker_response_path.c.h: a broker Processor's common response in C (ProcessorResponsePath) (included by _kernel.c
 * after server_channel_path.c.h).
 *
 * ProcessorResponsePath(processor, parser, responses, conns, inflight, ready, open_channels, steps, clock_ns,
 * send_response_type, request_log, instruments), made by Processor._compiled_response_path
 * (mini_broker/network/processor.py: its _process_new_responses and _response_sent are the reference). The processor
 * and the parser are held by weak references; the rest is lent by the processor: its response queue (deque),
 * connections (dict), in-flight responses (dict), ready connection ids (deque), the selector's open channels (dict), the
 * selector's ServerChannelPath, its clock and the SendResponse class; and by the parser (KafkaApis.response_metrics_parts,
 * or None, None: its complete_response_metrics is always called) its request logger and its instruments by api key.
 *
 * send_responses(): while the queue's head is exactly a SendResponse whose connection is in `conns`: popped, its
 * request's response_dequeue_time_ns set, written by steps.send_completing; not whole: inflight[cid] = it; whole: the
 * parser's complete_response_metrics(response, now), its on_complete(), the connection's in-flight frame released,
 * and where the channel is open its unmute after RESPONSE_SENT, then the ready append (frames pending) or, within the
 * processor's read_ahead_budget, a frame read ahead. A step that raises an Exception goes to the processor's
 * response_step_failed(step, cid, error) as the reference's handlers (step 0: the send, 1: the completion, 2: the
 * unmute). Any other head (another response kind, a subclass, a closed connection) is left where it is: the reference
 * handles it. Reads and writes only public attributes.
 *
 * Uses slot_access (cached_get, cached_set, take_truth, weak_referent) and server_channel_path (sp_send_completing,
 * sp_unmute_channel, sp_read_buffered, ServerChannelPathType). */

enum {
    RP_REQUEST, RP_CONTEXT, RP_CONNECTION_ID, RP_RESPONSE_DEQUEUE_TIME_NS, RP_ON_COMPLETE, RP_INFLIGHT_RELEASE,
    RP_PENDING, RP_READ_AHEAD_BUDGET, RP_POPLEFT, RP_APPEND, RP_COMPLETE_RESPONSE_METRICS, RP_RESPONSE_STEP_FAILED,
    RP_IS_ENABLED_FOR, RP_METRICS, RP_API_KEY, RP_RECORD_NS, RP_START_TIME_NS, RP_REQUEST_DEQUEUE_TIME_NS,
    RP_API_LOCAL_COMPLETE_TIME_NS, RP_API_REMOTE_COMPLETE_TIME_NS, RP_RESPONSE_COMPLETE_TIME_NS, RP_COUNT
};
static const char *const rp_attr_names[RP_COUNT] = {
    "request", "context", "connection_id", "response_dequeue_time_ns", "on_complete", "inflight_release", "pending",
    "read_ahead_budget", "popleft", "append", "complete_response_metrics", "response_step_failed", "isEnabledFor",
    "metrics", "api_key", "record_ns", "start_time_ns", "request_dequeue_time_ns", "api_local_complete_time_ns",
    "api_remote_complete_time_ns", "response_complete_time_ns",
};
static PyObject *rp_attr[RP_COUNT];
static slot_cache rp_cache[RP_COUNT];

enum { RP_STEP_SEND, RP_STEP_COMPLETION, RP_STEP_UNMUTE };

typedef struct {
    PyObject_HEAD
    PyObject *processor, *parser; /* weakrefs */
    PyObject *responses, *conns, *inflight, *ready, *open_channels, *clock_ns, *send_response_type;
    PyObject *request_log, *instruments, *debug; /* the parser's request logger and instruments by api key, or None */
    ServerChannelPathObject *steps;
} ResponsePathObject;

static inline PyObject *rp_get(PyObject *obj, int a)
{
    return cached_get(obj, rp_attr[a], &rp_cache[a]);
}

/* obj.<method a>(*args) (args[0] is obj): a new reference, NULL with an exception */
static PyObject *rp_call(int a, PyObject **args, size_t nargs)
{
    return PyObject_VectorcallMethod(rp_attr[a], args, nargs, NULL);
}

/* The pending exception, if an Exception, to processor.response_step_failed(step, cid, error): 0 (handled), or -1 with
 * an exception (not an Exception, or the handler raised: the reference's loop would not go on either). */
static int rp_failed(PyObject *processor, int step, PyObject *cid)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *code = PyLong_FromLong(step);
    PyObject *r = NULL;
    if (code != NULL) {
        PyObject *call[4] = {processor, code, cid, value};
        r = rp_call(RP_RESPONSE_STEP_FAILED, call, 4);
        Py_DECREF(code);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* KafkaApis.complete_response_metrics(sent, now) of `parser` for a SendResponse `sent` where its request logger is not
 * on at DEBUG and its instruments for the request's api key are those of its metrics: the eight times to the
 * instruments' observer (their record_ns where it declines or is None). 1 (done), 0 (the parser's own method is to run:
 * nothing done) or -1 with an exception. */
static int rp_metrics(ResponsePathObject *self, PyObject *parser, PyObject *sent, PyObject *now)
{
    if (self->instruments == Py_None)
        return 0;
    PyObject *call[2] = {self->request_log, self->debug};
    int logged = take_truth(rp_call(RP_IS_ENABLED_FOR, call, 2));
    if (logged != 0)
        return logged < 0 ? -1 : 0;
    PyObject *metrics = PyObject_GetAttr(parser, rp_attr[RP_METRICS]);
    if (metrics == NULL)
        return -1;
    if (metrics == Py_None) {
        Py_DECREF(metrics);
        return 1;
    }
    PyObject *request = rp_get(sent, RP_REQUEST), *context = NULL, *key = NULL;
    if (request == NULL || (context = rp_get(request, RP_CONTEXT)) == NULL
        || (key = rp_get(context, RP_API_KEY)) == NULL) {
        Py_XDECREF(request);
        Py_XDECREF(context);
        Py_DECREF(metrics);
        return -1;
    }
    PyObject *made = PyDict_GetItemWithError(self->instruments, key);  /* (metrics, instruments, observer) */
    Py_DECREF(context);
    Py_DECREF(key);
    int rc = made == NULL ? (PyErr_Occurred() ? -1 : 0)
             : PyTuple_CheckExact(made) && PyTuple_GET_SIZE(made) == 3 && PyTuple_GET_ITEM(made, 0) == metrics;
    Py_DECREF(metrics);
    if (rc <= 0) {
        Py_DECREF(request);
        return rc;
    }
    Py_INCREF(made);
    /* now, start, dequeued, local end, remote end, completed, response dequeued, sent (a SendResponse: now) */
    static const int slots[6] = {RP_START_TIME_NS, RP_REQUEST_DEQUEUE_TIME_NS, RP_API_LOCAL_COMPLETE_TIME_NS,
                                 RP_API_REMOTE_COMPLETE_TIME_NS, RP_RESPONSE_COMPLETE_TIME_NS,
                                 RP_RESPONSE_DEQUEUE_TIME_NS};
    PyObject *times[9] = {NULL, now, NULL, NULL, NULL, NULL, NULL, NULL, now};
    for (int i = 0; i < 6 && rc > 0; i++)
        if ((times[2 + i] = rp_get(request, slots[i])) == NULL)
            rc = -1;
    Py_DECREF(request);
    PyObject *observe = PyTuple_GET_ITEM(made, 2);
    int observed = 0;
    if (rc > 0 && observe != Py_None)
        observed = take_truth(PyObject_Vectorcall(observe, times + 1, 8, NULL));
    if (rc > 0 && observed == 0) {
        times[0] = PyTuple_GET_ITEM(made, 1);
        PyObject *r = PyObject_VectorcallMethod(rp_attr[RP_RECORD_NS], times, 9, NULL);
        if (r == NULL)
            rc = -1;
        Py_XDECREF(r);
    }
    else if (observed < 0)
        rc = -1;
    for (int i = 2; i < 8; i++)
        Py_XDECREF(times[i]);
    Py_DECREF(made);
    return rc;
}

/* The completion of `sent`, written whole: its metrics and callback (failures: step 1, the rest goes on). 0 or -1. */
static int rp_complete(ResponsePathObject *self, PyObject *processor, PyObject *sent, PyObject *cid)
{
    PyObject *parser = weak_referent(self->parser, "ProcessorResponsePath: its parser is gone");
    if (parser == NULL)
        return -1;
    PyObject *now = PyObject_CallNoArgs(self->clock_ns);
    PyObject *r = NULL;
    if (now != NULL) {
        int done = rp_metrics(self, parser, sent, now);
        if (done == 0) {
            PyObject *call[3] = {parser, sent, now};
            r = rp_call(RP_COMPLETE_RESPONSE_METRICS, call, 3);
        }
        else if (done > 0)
            r = Py_NewRef(Py_None);
        Py_DECREF(now);
    }
    Py_DECREF(parser);
    if (r != NULL) {
        Py_DECREF(r);
        PyObject *on_complete = rp_get(sent, RP_ON_COMPLETE);
        if (on_complete == NULL)
            r = NULL;
        else if (on_complete == Py_None)
            r = Py_NewRef(Py_None);
        else
            r = PyObject_CallNoArgs(on_complete);
        Py_XDECREF(on_complete);
    }
    if (r == NULL)
        return rp_failed(processor, RP_STEP_COMPLETION, cid);
    Py_DECREF(r);
    return 0;
}

/* The channel's unmute after RESPONSE_SENT and what follows it (failures: step 2). 0 or -1. */
static int rp_unmute(ResponsePathObject *self, PyObject *processor, PyObject *conn, PyObject *cid, PyObject *channel)
{
    PyObject *args[2] = {channel, Py_True};
    int unmuted = take_truth(sp_unmute_channel(self->steps, args, 2));
    if (unmuted <= 0)
        return unmuted < 0 ? rp_failed(processor, RP_STEP_UNMUTE, cid) : 0;
    PyObject *pending = rp_get(conn, RP_PENDING);
    int waiting = pending == NULL ? -1 : PyObject_IsTrue(pending);
    Py_XDECREF(pending);
    if (waiting > 0) {
        PyObject *call[2] = {self->ready, cid};
        PyObject *r = rp_call(RP_APPEND, call, 2);
        if (r == NULL)
            return rp_failed(processor, RP_STEP_UNMUTE, cid);
        Py_DECREF(r);
        return 0;
    }
    if (waiting < 0)
        return rp_failed(processor, RP_STEP_UNMUTE, cid);
    PyObject *budget = PyObject_GetAttr(processor, rp_attr[RP_READ_AHEAD_BUDGET]);
    if (budget == NULL)
        return rp_failed(processor, RP_STEP_UNMUTE, cid);
    PyObject *zero = PyLong_FromLong(0);
    int left = zero == NULL ? -1 : PyObject_RichCompareBool(budget, zero, Py_GT);
    Py_XDECREF(zero);
    if (left <= 0) {
        Py_DECREF(budget);
        return left < 0 ? rp_failed(processor, RP_STEP_UNMUTE, cid) : 0;
    }
    int read = take_truth(sp_read_buffered(self->steps, &channel, 1));
    int rc = 0;
    if (read > 0) {
        PyObject *one = PyLong_FromLong(1);
        PyObject *less = one == NULL ? NULL : PyNumber_Subtract(budget, one);
        Py_XDECREF(one);
        rc = less == NULL ? -1 : PyObject_SetAttr(processor, rp_attr[RP_READ_AHEAD_BUDGET], less);
        Py_XDECREF(less);
    }
    Py_DECREF(budget);
    return read < 0 || rc < 0 ? rp_failed(processor, RP_STEP_UNMUTE, cid) : 0;
}

/* The response `sent`, written whole, completed (Processor._response_sent): 0 or -1. */
static int rp_sent(ResponsePathObject *self, PyObject *processor, PyObject *conn, PyObject *sent, PyObject *cid)
{
    if (rp_complete(self, processor, sent, cid) < 0)
        return -1;
    PyObject *release = rp_get(conn, RP_INFLIGHT_RELEASE);
    if (release == NULL)
        return rp_failed(processor, RP_STEP_SEND, cid);
    if (cached_set(conn, rp_attr[RP_INFLIGHT_RELEASE], &rp_cache[RP_INFLIGHT_RELEASE], Py_None) < 0) {
        Py_DECREF(release);
        return rp_failed(processor, RP_STEP_SEND, cid);
    }
    if (release != Py_None) {
        PyObject *r = PyObject_CallNoArgs(release);
        Py_DECREF(release);
        if (r == NULL)
            return rp_failed(processor, RP_STEP_SEND, cid);
        Py_DECREF(r);
    }
    else
        Py_DECREF(release);
    PyObject *channel = PyDict_GetItemWithError(self->open_channels, cid);
    if (channel == NULL)
        return PyErr_Occurred() ? rp_failed(processor, RP_STEP_SEND, cid) : 0;
    Py_INCREF(channel);
    int rc = rp_unmute(self, processor, conn, cid, channel);
    Py_DECREF(channel);
    return rc;
}

/* One response at the queue's head, `head` (borrowed, exactly a SendResponse), for the open connection `conn` of `cid`:
 * popped and sent (Processor._process_new_responses' body). 0 or -1. */
static int rp_one(ResponsePathObject *self, PyObject *processor, PyObject *head, PyObject *conn, PyObject *cid)
{
    PyObject *call[1] = {self->responses};
    PyObject *popped = rp_call(RP_POPLEFT, call, 1);
    if (popped == NULL)
        return -1;
    /* (the head: nothing else pops this queue, only this thread) */
    PyObject *request = rp_get(popped, RP_REQUEST), *now = NULL;
    int rc = request == NULL || (now = PyObject_CallNoArgs(self->clock_ns)) == NULL ? -1
             : cached_set(request, rp_attr[RP_RESPONSE_DEQUEUE_TIME_NS], &rp_cache[RP_RESPONSE_DEQUEUE_TIME_NS], now);
    Py_XDECREF(request);
    Py_XDECREF(now);
    int whole = rc < 0 ? -1 : take_truth(sp_send_completing(self->steps, &popped, 1));
    if (whole == 0)
        rc = PyDict_SetItem(self->inflight, cid, popped);
    else if (whole > 0) {
        rc = rp_sent(self, processor, conn, popped, cid);
        Py_DECREF(popped);
        return rc;
    }
    Py_DECREF(popped);
    return whole < 0 || rc < 0 ? rp_failed(processor, RP_STEP_SEND, cid) : 0;
}

/* send_responses() */
static PyObject *rp_send_responses(ResponsePathObject *self, PyObject *unused)
{
    PyObject *processor = weak_referent(self->processor, "ProcessorResponsePath: its processor is gone");
    if (processor == NULL)
        return NULL;
    int rc = 0;
    while (rc == 0) {
        Py_ssize_t n = PyObject_Size(self->responses);
        if (n <= 0) {
            rc = n < 0 ? -1 : 1;
            break;
        }
        PyObject *head = PySequence_GetItem(self->responses, 0);
        if (head == NULL) {
            rc = -1;
            break;
        }
        if (Py_TYPE(head) != (PyTypeObject *)self->send_response_type) {
            Py_DECREF(head);
            break;
        }
        PyObject *request = rp_get(head, RP_REQUEST), *context = NULL, *cid = NULL, *conn = NULL;
        if (request != NULL && (context = rp_get(request, RP_CONTEXT)) != NULL
            && (cid = rp_get(context, RP_CONNECTION_ID)) != NULL) {
            conn = PyDict_GetItemWithError(self->conns, cid);
            if (conn != NULL) {
                Py_INCREF(conn);
                rc = rp_one(self, processor, head, conn, cid);
                Py_DECREF(conn);
            }
            else
                rc = PyErr_Occurred() ? -1 : 1; /* (a closed connection: the reference drops it) */
        }
        else
            rc = -1;
        Py_XDECREF(request);
        Py_XDECREF(context);
        Py_XDECREF(cid);
        Py_DECREF(head);
    }
    Py_DECREF(processor);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *rp_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *processor, *parser, *responses, *conns, *inflight, *ready, *open_channels, *steps, *clock_ns, *send_type;
    PyObject *request_log, *instruments;
    static char *kwlist[] = {"processor", "parser", "responses", "conns", "inflight", "ready", "open_channels", "steps",
                             "clock_ns", "send_response_type", "request_log", "instruments", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO!O!OO!O!OO!OO:ProcessorResponsePath", kwlist, &processor,
                                     &parser, &responses, &PyDict_Type, &conns, &PyDict_Type, &inflight, &ready,
                                     &PyDict_Type, &open_channels, &ServerChannelPathType, &steps, &clock_ns,
                                     &PyType_Type, &send_type, &request_log, &instruments))
        return NULL;
    if (instruments != Py_None && !PyDict_CheckExact(instruments)) {
        PyErr_SetString(PyExc_TypeError, "ProcessorResponsePath: instruments is a dict or None");
        return NULL;
    }
    PyObject *debug = PyLong_FromLong(10); /* logging.DEBUG */
    if (debug == NULL)
        return NULL;
    if (!PySequence_Check(responses) || !PySequence_Check(ready)) {
        PyErr_SetString(PyExc_TypeError, "ProcessorResponsePath: responses and ready are deques");
        return NULL;
    }
    if (rp_attr[RP_COUNT - 1] == NULL)
        for (int i = 0; i < RP_COUNT; i++)
            if ((rp_attr[i] = PyUnicode_InternFromString(rp_attr_names[i])) == NULL)
                return NULL;
    PyObject *weak_processor = PyWeakref_NewRef(processor, NULL);
    PyObject *weak_parser = weak_processor == NULL ? NULL : PyWeakref_NewRef(parser, NULL);
    if (weak_parser == NULL) {
        Py_XDECREF(weak_processor);
        Py_DECREF(debug);
        return NULL;
    }
    ResponsePathObject *self = (ResponsePathObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(weak_processor);
        Py_DECREF(weak_parser);
        Py_DECREF(debug);
        return NULL;
    }
    self->request_log = Py_NewRef(request_log);
    self->instruments = Py_NewRef(instruments);
    self->debug = debug;
    self->processor = weak_processor;
    self->parser = weak_parser;
    self->responses = Py_NewRef(responses);
    self->conns = Py_NewRef(conns);
    self->inflight = Py_NewRef(inflight);
    self->ready = Py_NewRef(ready);
    self->open_channels = Py_NewRef(open_channels);
    self->steps = (ServerChannelPathObject *)Py_NewRef(steps);
    self->clock_ns = Py_NewRef(clock_ns);
    self->send_response_type = Py_NewRef(send_type);
    return (PyObject *)self;
}

static int rp_traverse(ResponsePathObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->processor);
    Py_VISIT(self->parser);
    Py_VISIT(self->responses);
    Py_VISIT(self->conns);
    Py_VISIT(self->inflight);
    Py_VISIT(self->ready);
    Py_VISIT(self->open_channels);
    Py_VISIT(self->steps);
    Py_VISIT(self->clock_ns);
    Py_VISIT(self->send_response_type);
    Py_VISIT(self->request_log);
    Py_VISIT(self->instruments);
    Py_VISIT(self->debug);
    return 0;
}

static int rp_clear(ResponsePathObject *self)
{
    Py_CLEAR(self->processor);
    Py_CLEAR(self->parser);
    Py_CLEAR(self->responses);
    Py_CLEAR(self->conns);
    Py_CLEAR(self->inflight);
    Py_CLEAR(self->ready);
    Py_CLEAR(self->open_channels);
    Py_CLEAR(self->steps);
    Py_CLEAR(self->clock_ns);
    Py_CLEAR(self->send_response_type);
    Py_CLEAR(self->request_log);
    Py_CLEAR(self->instruments);
    Py_CLEAR(self->debug);
    return 0;
}

static void rp_dealloc(ResponsePathObject *self)
{
    PyObject_GC_UnTrack(self);
    rp_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef rp_methods[] = {
    {"send_responses", (PyCFunction)rp_send_responses, METH_NOARGS,
     "send_responses(): the queue's leading common SendResponses sent and completed (Processor._process_new_responses "
     "and _response_sent); stops at the first other response, left at the head"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ResponsePathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.ProcessorResponsePath",
    .tp_basicsize = sizeof(ResponsePathObject),
    .tp_dealloc = (destructor)rp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("ProcessorResponsePath(processor, parser, responses, conns, inflight, ready, open_channels, "
                        "steps, clock_ns, send_response_type, request_log, instruments): a broker Processor's common response sent and completed "
                        "(reference: Processor._process_new_responses and _response_sent)"),
    .tp_traverse = (traverseproc)rp_traverse,
    .tp_clear = (inquiry)rp_clear,
    .tp_methods = rp_methods,
    .tp_new = rp_new,
};
