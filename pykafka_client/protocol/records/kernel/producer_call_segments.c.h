/* kernel/producer_call_segments.c.h
 *
 * CallSegments: the segments of one send_batch call (producer/call_segments.py's CallSegments, the reference), a
 * type owning them: the open segment grown while the records follow on in one batch's outcome, and its watch when
 * the next batch's begins (the call's segment lists, its count of waiting segments under their lock, a new
 * CallSegment registered in the outcome's ``calls`` under its condition, or released at once when the outcome
 * completed or was split) in one call, without Python frames. It holds no reference to its SendBatchFuture (an
 * argument of each call): the future holds it.
 * Uses: slot_access.c.h (cached_get, cached_set, compact_int), producer_send_append.c.h (sattr_init,
 * queue_lock_acquire, queue_lock_release: the waiting count's lock).
 */

/* ---- producer: a send_batch call's segments (SendBatchFuture's bookkeeping) ------------------------------------ */

enum { CSG_CONDITION, CSG_STATE, CSG_MOVED_TO, CSG_CALLS, CSG_COUNT_ATTR, CSG_ACQUIRE, CSG_RELEASE, CSG_ATTRS };
static const char *const csg_attr_names[CSG_ATTRS] = {
    "condition", "state", "moved_to", "calls", "count", "acquire", "release",
};
static PyObject *csg_attr[CSG_ATTRS];
static slot_cache csg_cache[CSG_ATTRS];

typedef struct {
    PyObject_HEAD
    PyObject *starts, *outcomes, *indexes; /* the call's segment lists (lists, shared with its _CallRecords) */
    PyObject *waiting;                     /* WaitingSegments: count under lock */
    PyObject *waiting_lock;
    PyObject *segment_type;                /* CallSegment: an outcome's lone segment is one */
    PyObject *new_segment;                 /* what makes one: new_segment(future, waiting, outcome, index, count) */
    PyObject *finished;                    /* concurrent.futures' FINISHED */
    PyObject *open_outcome;                /* the open segment's outcome, NULL: none */
    int64_t open_position, open_count, open_index;
} CallSegmentsObject;

static int csg_attr_init(void)
{
    if (csg_attr[CSG_ATTRS - 1] != NULL)
        return 0;
    for (int i = 0; i < CSG_ATTRS; i++) {
        if (csg_attr[i] == NULL && (csg_attr[i] = PyUnicode_InternFromString(csg_attr_names[i])) == NULL)
            return -1;
    }
    return 0;
}

static PyObject *csg_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *starts, *outcomes, *indexes, *waiting, *segment_type, *new_segment, *finished;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "CallSegments() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!OO!OO:CallSegments", &PyList_Type, &starts, &PyList_Type, &outcomes, &PyList_Type,
                          &indexes, &waiting, &PyType_Type, &segment_type, &new_segment, &finished))
        return NULL;
    if (csg_attr_init() < 0 || sattr_init() < 0)
        return NULL;
    PyObject *lock = PyObject_GetAttrString(waiting, "lock");
    if (lock == NULL)
        return NULL;
    CallSegmentsObject *self = (CallSegmentsObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(lock);
        return NULL;
    }
    self->starts = Py_NewRef(starts);
    self->outcomes = Py_NewRef(outcomes);
    self->indexes = Py_NewRef(indexes);
    self->waiting = Py_NewRef(waiting);
    self->waiting_lock = lock;
    self->segment_type = Py_NewRef(segment_type);
    self->new_segment = Py_NewRef(new_segment);
    self->finished = Py_NewRef(finished);
    return (PyObject *)self;
}

/* An int argument as int64 (0), or -1 with an exception */
static int csg_int(PyObject *v, int64_t *out)
{
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "CallSegments: an int expected, got %.100s", Py_TYPE(v)->tp_name);
        return -1;
    }
    if (compact_int(v, out))
        return 0;
    *out = PyLong_AsLongLong(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* waiting.count += 1 under waiting.lock: 0, or -1 with an exception */
static int csg_count_up(CallSegmentsObject *self)
{
    static PyObject *one = NULL;
    if (one == NULL && (one = PyLong_FromLong(1)) == NULL)
        return -1;
    if (queue_lock_acquire(self->waiting_lock) < 0)
        return -1;
    int rc = -1;
    PyObject *count = cached_get(self->waiting, csg_attr[CSG_COUNT_ATTR], &csg_cache[CSG_COUNT_ATTR]), *more = NULL;
    if (count != NULL && (more = PyNumber_Add(count, one)) != NULL)
        rc = cached_set(self->waiting, csg_attr[CSG_COUNT_ATTR], &csg_cache[CSG_COUNT_ATTR], more);
    Py_XDECREF(count);
    Py_XDECREF(more);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (queue_lock_release(self->waiting_lock) < 0) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        return -1;
    }
    PyErr_Restore(et, ev, tb);
    return rc;
}

/* The open segment watched (CallSegments._watch): its place in the lists, the waiting count, a new segment in the
 * outcome's calls (or released at once). Steals nothing; 0, or -1 with an exception. */
static int csg_watch(CallSegmentsObject *self, PyObject *future, int64_t position, int64_t count, PyObject *outcome,
                    int64_t index)
{
    PyObject *pos = PyLong_FromLongLong(position), *idx = PyLong_FromLongLong(index), *cnt = PyLong_FromLongLong(count);
    PyObject *seg = NULL, *cond = NULL, *r;
    int rc = -1;
    if (pos == NULL || idx == NULL || cnt == NULL || PyList_Append(self->starts, pos) < 0 ||
        PyList_Append(self->outcomes, outcome) < 0 || PyList_Append(self->indexes, idx) < 0 || csg_count_up(self) < 0)
        goto done;
    PyObject *seg_args[5] = {future, self->waiting, outcome, idx, cnt};
    if ((seg = PyObject_Vectorcall(self->new_segment, seg_args, 5, NULL)) == NULL)
        goto done;
    if ((cond = cached_get(outcome, csg_attr[CSG_CONDITION], &csg_cache[CSG_CONDITION])) == NULL)
        goto done;
    if ((r = PyObject_CallMethodNoArgs(cond, csg_attr[CSG_ACQUIRE])) == NULL)
        goto done;
    Py_DECREF(r);
    int registered = 0, failed = 0;
    PyObject *state = cached_get(outcome, csg_attr[CSG_STATE], &csg_cache[CSG_STATE]), *moved = NULL, *calls = NULL;
    int finished = state == NULL ? -1 : PyObject_RichCompareBool(state, self->finished, Py_EQ);
    if (finished < 0 || (!finished && (moved = cached_get(outcome, csg_attr[CSG_MOVED_TO], &csg_cache[CSG_MOVED_TO])) == NULL))
        failed = 1;
    else if (!finished && moved == Py_None) {
        if ((calls = cached_get(outcome, csg_attr[CSG_CALLS], &csg_cache[CSG_CALLS])) == NULL)
            failed = 1;
        else if (PyList_Check(calls))
            failed = PyList_Append(calls, seg) < 0;
        else {
            int lone = PyObject_IsInstance(calls, self->segment_type);
            PyObject *both = lone > 0 ? PyList_New(2) : NULL;
            if (lone < 0 || (lone > 0 && both == NULL))
                failed = 1;
            else {
                if (both != NULL) {
                    PyList_SET_ITEM(both, 0, Py_NewRef(calls));
                    PyList_SET_ITEM(both, 1, Py_NewRef(seg));
                }
                failed = cached_set(outcome, csg_attr[CSG_CALLS], &csg_cache[CSG_CALLS], both != NULL ? both : seg) < 0;
                Py_XDECREF(both);
            }
        }
        registered = 1;
    }
    Py_XDECREF(state);
    Py_XDECREF(moved);
    Py_XDECREF(calls);
    /* cond.release(), keeping an exception of the above */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    r = PyObject_CallMethodNoArgs(cond, csg_attr[CSG_RELEASE]);
    if (r == NULL) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        goto done;
    }
    Py_DECREF(r);
    PyErr_Restore(et, ev, tb);
    if (failed)
        goto done;
    if (!registered) { /* already complete, or split: as a done-callback added now would */
        if ((r = PyObject_CallMethodNoArgs(seg, csg_attr[CSG_RELEASE])) == NULL)
            goto done;
        Py_DECREF(r);
    }
    rc = 0;
done:
    Py_XDECREF(pos);
    Py_XDECREF(idx);
    Py_XDECREF(cnt);
    Py_XDECREF(seg);
    Py_XDECREF(cond);
    return rc;
}

PyDoc_STRVAR(csg_add_doc, "add(future, position, count, outcome, index): CallSegments.add (the reference's doc).");

static PyObject *csg_add(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    int64_t position, count, index;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "add() takes exactly 5 arguments");
        return NULL;
    }
    if (csg_int(args[1], &position) < 0 || csg_int(args[2], &count) < 0 || csg_int(args[4], &index) < 0)
        return NULL;
    PyObject *future = args[0], *outcome = args[3];
    PyObject *open = self->open_outcome;
    if (open != NULL) {
        if (open == outcome && self->open_index + self->open_count == index &&
            self->open_position + self->open_count == position) {
            self->open_count += count;
            Py_RETURN_NONE;
        }
        /* watched, then replaced by the new one (as the reference: a watch that raises leaves it open) */
        Py_INCREF(open);
        int rc = csg_watch(self, future, self->open_position, self->open_count, open, self->open_index);
        Py_DECREF(open);
        if (rc < 0)
            return NULL;
        Py_CLEAR(self->open_outcome);
    }
    self->open_outcome = Py_NewRef(outcome);
    self->open_position = position;
    self->open_count = count;
    self->open_index = index;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(csg_flush_doc, "flush(future): CallSegments.flush (the reference's doc).");

static PyObject *csg_flush(PyObject *op, PyObject *future)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    PyObject *open = self->open_outcome;
    if (open == NULL)
        Py_RETURN_NONE;
    self->open_outcome = NULL;
    int rc = csg_watch(self, future, self->open_position, self->open_count, open, self->open_index);
    Py_DECREF(open);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *csg_get_open(PyObject *op, void *closure)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    if (self->open_outcome == NULL)
        Py_RETURN_NONE;
    return Py_BuildValue("(LLOL)", (long long)self->open_position, (long long)self->open_count, self->open_outcome,
                         (long long)self->open_index);
}

static int csg_traverse(PyObject *op, visitproc visit, void *arg)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    Py_VISIT(self->starts);
    Py_VISIT(self->outcomes);
    Py_VISIT(self->indexes);
    Py_VISIT(self->waiting);
    Py_VISIT(self->waiting_lock);
    Py_VISIT(self->segment_type);
    Py_VISIT(self->new_segment);
    Py_VISIT(self->finished);
    Py_VISIT(self->open_outcome);
    return 0;
}

static int csg_clear(PyObject *op)
{
    CallSegmentsObject *self = (CallSegmentsObject *)op;
    Py_CLEAR(self->starts);
    Py_CLEAR(self->outcomes);
    Py_CLEAR(self->indexes);
    Py_CLEAR(self->waiting);
    Py_CLEAR(self->waiting_lock);
    Py_CLEAR(self->segment_type);
    Py_CLEAR(self->new_segment);
    Py_CLEAR(self->finished);
    Py_CLEAR(self->open_outcome);
    return 0;
}

static void csg_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    csg_clear(op);
    Py_TYPE(op)->tp_free(op);
}

static PyMethodDef csg_methods[] = {
    {"add", (PyCFunction)(void (*)(void))csg_add, METH_FASTCALL, csg_add_doc},
    {"flush", csg_flush, METH_O, csg_flush_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef csg_getset[] = {
    {"open_segment", csg_get_open, NULL,
     PyDoc_STR("the open segment (position, count, outcome, index), or None (the reference's open_* fields)"), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CallSegmentsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.CallSegments",
    .tp_basicsize = sizeof(CallSegmentsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR(
        "CallSegments(starts, outcomes, indexes, waiting, segment_type, new_segment, finished)\n\n"
        "Reference: producer.call_segments.CallSegments (same arguments but ``finished``, concurrent.futures'\n"
        "FINISHED): a send_batch call's segments, add(future, position, count, outcome, index) and flush(future)."),
    .tp_new = csg_new,
    .tp_methods = csg_methods,
    .tp_getset = csg_getset,
    .tp_traverse = csg_traverse,
    .tp_clear = csg_clear,
    .tp_dealloc = csg_dealloc,
};
