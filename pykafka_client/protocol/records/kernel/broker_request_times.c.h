/* kernel/broker_request_times.c.h
 *
 * observe_request_times: a completed request's times into mini_broker's metrics.
 * Uses: broker_produce_request.c.h (slot_class_t).
 */

/* ---- broker: a completed request's times (mini_broker.metrics.request_times_ms and observe_each) ---------- */

static const char *const hist_slot_names[] = {"count", "min", "max", "sum"};
static const char *const counter_slot_names[] = {"value"};
static slot_class_t hist_class = {NULL, 4, hist_slot_names, {0}};
static slot_class_t counter_class = {NULL, 1, counter_slot_names, {0}};
static PyObject *s_acquire = NULL, *s_release = NULL;

#define SLOT(obj, c, i) (*(PyObject **)((char *)(obj) + (c).offsets[i]))
#define REQUEST_TIMES 6

/* max(0.0, d / 1e6) as Python computes it for an int d (a NaN cannot come from an int) */
static double ms_of(int64_t d)
{
    double v = (double)d / 1e6;
    return v > 0.0 ? v : 0.0;
}

PyDoc_STRVAR(observe_request_times_doc,
"observe_request_times(lock, requests, histograms, now, start, dequeued, local_end, remote_end, completed,\n"
"                      response_dequeued, sent) -> bool\n\n"
"Reference: mini_broker.metrics.observe_request_times_reference: under ``lock``, the Counter ``requests`` counts\n"
"one more request and each of the six Histograms observes its time of request_times_ms(...). False, with nothing\n"
"changed, where the reference must run (a value that is not an int of 64 bits, a count that is not an int, a sum\n"
"or bound that is not a float, a slot not set).");

static PyObject *k_observe_request_times(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "observe_request_times takes 11 arguments");
        return NULL;
    }
    PyObject *lock = args[0], *requests = args[1], *histograms = args[2];
    if (!PyTuple_CheckExact(histograms) || PyTuple_GET_SIZE(histograms) != REQUEST_TIMES)
        Py_RETURN_FALSE;
    if (slot_class_setup(&counter_class, (PyObject *)Py_TYPE(requests)) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    PyTypeObject *htype = Py_TYPE(PyTuple_GET_ITEM(histograms, 0));
    if (slot_class_setup(&hist_class, (PyObject *)htype) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    int64_t ns[8];
    for (int i = 0; i < 8; i++) {
        PyObject *o = args[3 + i];
        if (!PyLong_CheckExact(o))
            Py_RETURN_FALSE;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        ns[i] = v;
    }
    int64_t now = ns[0], start = ns[1], dequeued = ns[2], local_end = ns[3], completed = ns[5];
    int64_t response_dequeued = ns[6], sent = ns[7];
    int64_t remote_end = ns[4] >= 0 ? ns[4] : local_end;
    double t[REQUEST_TIMES] = {
        start >= 0 && now >= 0 ? ms_of(now - start) : 0.0,
        start >= 0 && dequeued >= 0 ? ms_of(dequeued - start) : 0.0,
        dequeued >= 0 && local_end >= 0 ? ms_of(local_end - dequeued) : 0.0,
        local_end >= 0 && remote_end >= 0 ? ms_of(remote_end - local_end) : 0.0,
        completed >= 0 && response_dequeued >= 0 ? ms_of(response_dequeued - completed) : 0.0,
        response_dequeued >= 0 && sent >= 0 ? ms_of(sent - response_dequeued) : 0.0,
    };
    if (s_acquire == NULL && ((s_acquire = PyUnicode_InternFromString("acquire")) == NULL
                              || (s_release = PyUnicode_InternFromString("release")) == NULL))
        return NULL;
    PyObject *r = PyObject_VectorcallMethod(s_acquire, &lock, 1, NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    /* everything checked before anything changes */
    long long counts[REQUEST_TIMES], total = 0;
    int ok = 1;
    PyObject *value = SLOT(requests, counter_class, 0);
    if (value == NULL || !PyLong_CheckExact(value) || (total = PyLong_AsLongLong(value)) == -1 || total == LLONG_MAX)
        ok = 0;
    for (int i = 0; ok && i < REQUEST_TIMES; i++) {
        PyObject *h = PyTuple_GET_ITEM(histograms, i);
        PyObject *count = Py_TYPE(h) == htype ? SLOT(h, hist_class, 0) : NULL;
        ok = count != NULL && PyLong_CheckExact(count) && SLOT(h, hist_class, 1) != NULL
             && PyFloat_CheckExact(SLOT(h, hist_class, 1)) && SLOT(h, hist_class, 2) != NULL
             && PyFloat_CheckExact(SLOT(h, hist_class, 2)) && SLOT(h, hist_class, 3) != NULL
             && PyFloat_CheckExact(SLOT(h, hist_class, 3));
        if (ok && ((counts[i] = PyLong_AsLongLong(count)) == -1 || counts[i] == LLONG_MAX))
            ok = 0;
    }
    PyErr_Clear();
    int failed = 0;
    if (ok) {
        PyObject *o = PyLong_FromLongLong(total + 1);
        if (o == NULL)
            failed = 1;
        else
            Py_SETREF(SLOT(requests, counter_class, 0), o);
        for (int i = 0; !failed && i < REQUEST_TIMES; i++) {
            PyObject *h = PyTuple_GET_ITEM(histograms, i);
            double v = t[i];
            /* the new bound made only where one moves (most requests move none: no float to make and free) */
            int lower = counts[i] == 0 || v < PyFloat_AS_DOUBLE(SLOT(h, hist_class, 1));
            int higher = counts[i] == 0 || v > PyFloat_AS_DOUBLE(SLOT(h, hist_class, 2));
            if (lower || higher) {
                PyObject *nv = PyFloat_FromDouble(v);
                if (nv == NULL) {
                    failed = 1;
                    break;
                }
                if (lower) {
                    Py_INCREF(nv);
                    Py_SETREF(SLOT(h, hist_class, 1), nv);
                }
                if (higher) {
                    Py_INCREF(nv);
                    Py_SETREF(SLOT(h, hist_class, 2), nv);
                }
                Py_DECREF(nv);
            }
            PyObject *c = PyLong_FromLongLong(counts[i] + 1);
            PyObject *s = c ? PyFloat_FromDouble(PyFloat_AS_DOUBLE(SLOT(h, hist_class, 3)) + v) : NULL;
            if (s == NULL) {
                Py_XDECREF(c);
                failed = 1;
                break;
            }
            Py_SETREF(SLOT(h, hist_class, 0), c);
            Py_SETREF(SLOT(h, hist_class, 3), s);
        }
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    r = PyObject_VectorcallMethod(s_release, &lock, 1, NULL);
    if (r == NULL) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        return NULL;
    }
    Py_DECREF(r);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    if (failed)
        return NULL;
    return Py_NewRef(ok ? Py_True : Py_False);
}
