/* kernel/network.c.h
 *
 * The network client's per-request objects built without their __init__ (slots_constructor) and a
 * connection's frames read and split in one call (read_frames).
 * Uses: slot_access.c.h (mro_lookup, ...).
 */

/* ---- network: the NetworkClient's per-request objects built without their __init__ -------------------------
 * slots_constructor(cls, names) -> a callable that makes an instance of ``cls`` (a slotted class: a dataclass with
 * slots=True and no __post_init__, network.transport.positional_new checks that; or a slotted subclass of one, whose
 * slots may be its bases': mini_broker's SendResponse) from one value per name,
 * positional, in the order of ``names``: what ``cls(*values)`` makes when ``names`` are its fields in order, without
 * the Python frame of the generated __init__ (a produce request's ClientRequest, NetworkSend, InFlightRequest and
 * ClientResponse, and each frame's NetworkReceive). */

#define SLOTS_MAKER_MAX 16

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *type;
    Py_ssize_t n;
    Py_ssize_t offsets[SLOTS_MAKER_MAX];
} SlotsMakerObject;

static PyObject *slots_maker_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SlotsMakerObject *m = (SlotsMakerObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != m->n || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd positional arguments (%zd given)", m->type->tp_name, m->n, nargs);
        return NULL;
    }
    PyObject *o = m->type->tp_alloc(m->type, 0);
    if (o == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        *(PyObject **)((char *)o + m->offsets[i]) = Py_NewRef(args[i]);
    return o;
}

static int slots_maker_traverse(SlotsMakerObject *m, visitproc visit, void *arg)
{
    Py_VISIT(m->type);
    return 0;
}

static int slots_maker_clear(SlotsMakerObject *m)
{
    Py_CLEAR(m->type);
    return 0;
}

static void slots_maker_dealloc(SlotsMakerObject *m)
{
    PyObject_GC_UnTrack(m);
    slots_maker_clear(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyObject *slots_maker_repr(SlotsMakerObject *m)
{
    return PyUnicode_FromFormat("<slots constructor of %s>", m->type->tp_name);
}

static PyTypeObject SlotsMakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SlotsConstructor",
    .tp_basicsize = sizeof(SlotsMakerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "An instance of a slotted class from one positional value per slot (kernel.slots_constructor).",
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(SlotsMakerObject, vectorcall),
    .tp_traverse = (traverseproc)slots_maker_traverse,
    .tp_clear = (inquiry)slots_maker_clear,
    .tp_dealloc = (destructor)slots_maker_dealloc,
    .tp_repr = (reprfunc)slots_maker_repr,
};

PyDoc_STRVAR(slots_constructor_doc,
"slots_constructor(cls, names) -> callable\n\n"
"Reference: ``cls(*values)`` of a slotted dataclass whose fields are ``names`` in order (no __post_init__): a\n"
"callable taking exactly one positional value per name that makes an instance of ``cls`` with each slot set to\n"
"its value, without calling __init__. TypeError unless ``cls`` has no __dict__ and each name is a slot (an\n"
"object member) of ``cls`` (defined by it or by a base), all distinct, at most 16.");

static PyObject *k_slots_constructor(PyObject *self, PyObject *args)
{
    PyObject *type_obj, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &type_obj, &PyTuple_Type, &names))
        return NULL;
    if (PyType_Ready(&SlotsMakerType) < 0)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)type_obj;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n > SLOTS_MAKER_MAX || type->tp_dictoffset != 0 || type->tp_alloc == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: not a slotted class of at most %d slots", type->tp_name, SLOTS_MAKER_MAX);
        return NULL;
    }
    SlotsMakerObject *m = PyObject_GC_New(SlotsMakerObject, &SlotsMakerType);
    if (m == NULL)
        return NULL;
    m->vectorcall = slots_maker_vectorcall;
    m->type = (PyTypeObject *)Py_NewRef(type_obj);
    m->n = n;
    PyObject_GC_Track(m);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        /* the slot's member descriptor as the class sees it (its own or a base's: the subclass's instances have the
         * base's layout), never one a subclass's __dict__ would hide */
        PyObject *d = PyUnicode_Check(name) ? mro_lookup(type, name) : NULL;
        int ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 PyType_IsSubtype(type, ((PyMemberDescrObject *)d)->d_common.d_type);
        if (ok) {
            m->offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
            for (Py_ssize_t j = 0; j < i; j++)
                ok = ok && m->offsets[j] != m->offsets[i];
        }
        if (!ok) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s: %R is not a slot of its own (or is named twice)", type->tp_name, name);
            Py_DECREF(m);
            return NULL;
        }
    }
    return (PyObject *)m;
}

/* ---- network: a connection's activity in its selector's idle expiry order ------------------------------------- */

/* IdleExpiryManager.update(cid, now) on its activity_order() dict (the live map, oldest first): cid's entry moved to
 * the end with now: 0, or -1 with an exception. (The client's SelectorPoll and the broker's ServerChannelPath.) */
static int idle_touch(PyObject *activity_order, PyObject *cid, PyObject *now)
{
    if (PyDict_DelItem(activity_order, cid) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            return -1;
        PyErr_Clear();
    }
    return PyDict_SetItem(activity_order, cid, now);
}

/* ---- network: a client connection's frames read and split in one call (the I/O thread's reads) ------------------ */

enum { RF_SOURCE, RF_MAX, RF_BUF, RF_START, RF_END, RF_PAYLOAD, RF_PREAD, RF_COUNT };
static const char *const rf_names[RF_COUNT] = {"source", "max_size", "buf", "start", "end", "payload", "payload_read"};
static PyObject *rf_attr[RF_COUNT];
static slot_cache rf_cache[RF_COUNT];

static int rf_init(void)
{
    if (rf_attr[RF_COUNT - 1] != NULL)
        return 0;
    for (int i = 0; i < RF_COUNT; i++)
        if (rf_attr[i] == NULL && (rf_attr[i] = PyUnicode_InternFromString(rf_names[i])) == NULL)
            return -1;
    return 0;
}

static int rf_get(PyObject *reader, int i, Py_ssize_t *out)
{
    PyObject *v = cached_get(reader, rf_attr[i], &rf_cache[i]);
    if (v == NULL)
        return -1;
    *out = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int rf_set(PyObject *reader, int i, Py_ssize_t v)
{
    PyObject *x = PyLong_FromSsize_t(v);
    if (x == NULL)
        return -1;
    int rc = cached_set(reader, rf_attr[i], &rf_cache[i], x);
    Py_DECREF(x);
    return rc;
}

/* ``recv_into(view) or -1`` of a view of n bytes at mem (network_receive._read_into with a socket's recv_into): the
 * bytes read, -1 at the end of the stream, 0 when the socket would block (BlockingIOError, InterruptedError); -2
 * with an exception. The view is released after the call should the callee have kept it. */
static Py_ssize_t rf_recv(PyObject *recv_into, char *mem, Py_ssize_t n)
{
    PyObject *mv = PyMemoryView_FromMemory(mem, n, PyBUF_WRITE);
    if (mv == NULL)
        return -2;
    PyObject *r = PyObject_CallOneArg(recv_into, mv);
    if (Py_REFCNT(mv) > 1) { /* kept: no access to the reader's memory past this call */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *x = PyObject_CallMethod(mv, "release", NULL);
        Py_XDECREF(x);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    Py_DECREF(mv);
    if (r == NULL) {
        if (PyErr_ExceptionMatches(PyExc_BlockingIOError) || PyErr_ExceptionMatches(PyExc_InterruptedError)) {
            PyErr_Clear();
            return 0;
        }
        return -2;
    }
    int truth = PyObject_IsTrue(r);
    Py_ssize_t got = truth > 0 ? PyLong_AsSsize_t(r) : truth == 0 ? -1 : -2;
    Py_DECREF(r);
    if (truth > 0 && got == -1 && PyErr_Occurred())
        return -2;
    return got;
}

PyDoc_STRVAR(read_frames_doc,
"read_frames(reader, recv_into, max_receives, max_bytes, new_receive, check_receive_size, empty)\n"
"    -> (receives, bytes_read, ended)\n\n"
"Reference: BufferedFrameReader.read_frames(transport, max_receives, max_bytes, recv_into) of ``reader`` (a\n"
"BufferedFrameReader) with the plaintext socket's ``recv_into``: the same reads, frames (each made by\n"
"``new_receive(source, payload, None)``, ``empty`` the payload of an empty frame), state and exceptions\n"
"(``check_receive_size(size, max_size)`` raises for a bad size).");

/* read_frames' work: the frames into *receives_out (a new list), the bytes read into *total_out, whether the stream
 * ended into *ended_out: 0, or -1 with an exception (nothing in *receives_out). Also SelectorPoll's read of a channel
 * (client_poll.c.h), without the tuple. */
static int read_frames_into(PyObject *reader, PyObject *recv_into, Py_ssize_t max_receives, Py_ssize_t max_bytes,
                            PyObject *new_receive, PyObject *check, PyObject *empty, PyObject **receives_out,
                            Py_ssize_t *total_out, int *ended_out)
{
    Py_ssize_t max_size;
    *receives_out = NULL;
    if (rf_init() < 0)
        return -1;
    PyObject *buf = cached_get(reader, rf_attr[RF_BUF], &rf_cache[RF_BUF]), *source = NULL, *receives = NULL;
    PyObject *payload = NULL;
    int rc = -1;
    if (buf == NULL)
        return -1;
    if (!PyByteArray_CheckExact(buf)) {
        PyErr_SetString(PyExc_TypeError, "read_frames: the reader's buffer is not a bytearray");
        goto done;
    }
    if ((source = cached_get(reader, rf_attr[RF_SOURCE], &rf_cache[RF_SOURCE])) == NULL || rf_get(reader, RF_MAX, &max_size) < 0
        || (receives = PyList_New(0)) == NULL)
        goto done;
    Py_ssize_t total = 0, start, end, blen = PyByteArray_GET_SIZE(buf);
    int drained = 0, ended = 0;
    for (;;) {
        if ((payload = cached_get(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD])) == NULL
            || rf_get(reader, RF_START, &start) < 0 || rf_get(reader, RF_END, &end) < 0)
            goto done;
        if (payload == Py_None && end - start >= 4) {
            /* the whole frames in the buffer (up to max_receives); the start of a frame larger than the buffer to a
             * payload buffer of its own */
            char *b = PyByteArray_AS_STRING(buf);
            while (PyList_GET_SIZE(receives) < max_receives && end - start >= 4) {
                const uint8_t *s = (const uint8_t *)b + start;
                int32_t size = (int32_t)((uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | (uint32_t)s[3]);
                if (size < 0 || (max_size != -1 && size > max_size)) {
                    if (rf_set(reader, RF_START, start) < 0)
                        goto done;
                    PyObject *r = PyObject_CallFunction(check, "in", (int)size, max_size);
                    if (r == NULL)
                        goto done;
                    Py_DECREF(r);
                }
                Py_ssize_t frame_end = start + 4 + (Py_ssize_t)size;
                if (frame_end > end) {
                    if (4 + (Py_ssize_t)size > blen) {
                        Py_ssize_t have = end - start - 4;
                        PyObject *large = PyByteArray_FromStringAndSize(NULL, size);
                        if (large == NULL)
                            goto done;
                        memcpy(PyByteArray_AS_STRING(large), b + start + 4, (size_t)have);
                        memset(PyByteArray_AS_STRING(large) + have, 0, (size_t)(size - have));
                        int rc = cached_set(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD], large);
                        Py_DECREF(large);
                        if (rc < 0 || rf_set(reader, RF_PREAD, have) < 0)
                            goto done;
                        start = end = 0;
                    }
                    break;
                }
                PyObject *mv;
                if (size) {
                    PyObject *copy = PyByteArray_FromStringAndSize(b + start + 4, size);
                    mv = copy == NULL ? NULL : PyMemoryView_FromObject(copy);
                    Py_XDECREF(copy);
                    if (mv == NULL)
                        goto done;
                } else
                    mv = Py_NewRef(empty);
                PyObject *rargs[3] = {source, mv, Py_None};
                PyObject *rec = PyObject_Vectorcall(new_receive, rargs, 3, NULL);
                Py_DECREF(mv);
                if (rec == NULL || PyList_Append(receives, rec) < 0) {
                    Py_XDECREF(rec);
                    goto done;
                }
                Py_DECREF(rec);
                start = frame_end;
            }
            if (start == end)
                start = end = 0;
            if (rf_set(reader, RF_START, start) < 0 || rf_set(reader, RF_END, end) < 0)
                goto done;
        }
        Py_CLEAR(payload);
        if (drained || PyList_GET_SIZE(receives) >= max_receives || total >= max_bytes)
            break;
        if ((payload = cached_get(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD])) == NULL)
            goto done;
        if (payload != Py_None) { /* a frame larger than the buffer: the rest straight into its own buffer */
            Py_ssize_t pread;
            if (!PyByteArray_CheckExact(payload)) {
                PyErr_SetString(PyExc_TypeError, "read_frames: the reader's payload is not a bytearray");
                goto done;
            }
            if (rf_get(reader, RF_PREAD, &pread) < 0)
                goto done;
            Py_ssize_t want = PyByteArray_GET_SIZE(payload) - pread;
            Py_ssize_t n = rf_recv(recv_into, PyByteArray_AS_STRING(payload) + pread, want);
            if (n == -2)
                goto done;
            if (n < 0) {
                ended = 1;
                break;
            }
            total += n;
            if (rf_set(reader, RF_PREAD, pread + n) < 0)
                goto done;
            if (n < want)
                break;
            PyObject *mv = PyMemoryView_FromObject(payload);
            if (mv == NULL)
                goto done;
            PyObject *rargs[3] = {source, mv, Py_None};
            PyObject *rec = PyObject_Vectorcall(new_receive, rargs, 3, NULL);
            Py_DECREF(mv);
            if (rec == NULL || PyList_Append(receives, rec) < 0) {
                Py_XDECREF(rec);
                goto done;
            }
            Py_DECREF(rec);
            if (cached_set(reader, rf_attr[RF_PAYLOAD], &rf_cache[RF_PAYLOAD], Py_None) < 0 || rf_set(reader, RF_PREAD, 0) < 0)
                goto done;
            Py_CLEAR(payload);
            continue;
        }
        Py_CLEAR(payload);
        if (rf_get(reader, RF_START, &start) < 0 || rf_get(reader, RF_END, &end) < 0)
            goto done;
        char *b = PyByteArray_AS_STRING(buf);
        if (start > 0) { /* the start of a frame is left: to the front */
            memmove(b, b + start, (size_t)(end - start));
            end -= start;
            if (rf_set(reader, RF_START, 0) < 0)
                goto done;
        }
        Py_ssize_t want = blen - end;
        Py_ssize_t n = rf_recv(recv_into, b + end, want);
        if (n == -2)
            goto done;
        if (n < 0) {
            if (rf_set(reader, RF_END, end) < 0)
                goto done;
            ended = 1;
            break;
        }
        total += n;
        if (rf_set(reader, RF_END, end + n) < 0)
            goto done;
        drained = n < want;
    }
    *receives_out = Py_NewRef(receives);
    *total_out = total;
    *ended_out = ended;
    rc = 0;
done:
    Py_DECREF(buf);
    Py_XDECREF(source);
    Py_XDECREF(receives);
    Py_XDECREF(payload);
    return rc;
}

static PyObject *k_read_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "read_frames takes 7 arguments");
        return NULL;
    }
    Py_ssize_t max_receives = PyLong_AsSsize_t(args[2]), max_bytes = PyLong_AsSsize_t(args[3]), total;
    if ((max_receives == -1 || max_bytes == -1) && PyErr_Occurred())
        return NULL;
    PyObject *receives;
    int ended;
    if (read_frames_into(args[0], args[1], max_receives, max_bytes, args[4], args[5], args[6], &receives, &total,
                         &ended) < 0)
        return NULL;
    PyObject *out = Py_BuildValue("(OnO)", receives, total, ended ? Py_True : Py_False);
    Py_DECREF(receives);
    return out;
}
