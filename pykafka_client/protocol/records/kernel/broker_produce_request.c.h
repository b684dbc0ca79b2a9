/* kernel/broker_produce_request.c.h
 *
 * mini_broker's Produce request: the request frame read into the generated protocol classes
 * (read_produce_request), frame_buffer, and the per-request named tuples built without their __new__
 * (tuple_constructor).
 * Uses: network.c.h (the SlotsConstructor type).
 */

/* ---- broker: a Produce request frame (mini_broker's produce_wire._read) ----------------------------------- */

/* A class built through its __slots__ without calling __init__ (a slotted dataclass of the generated protocol
 * code): the offsets of its slots, looked up once per class from their member descriptors. */
typedef struct {
    PyTypeObject *type;
    int n;
    const char *const *names;
    Py_ssize_t offsets[5];
} slot_class_t;

static const char *const preq_slot_names[] = {
    "transactional_id", "acks", "timeout_ms", "topic_data", "unknown_tagged_fields",
};
static const char *const ptopic_slot_names[] = {"name", "partition_data", "unknown_tagged_fields"};
static const char *const ppart_slot_names[] = {"index", "records", "unknown_tagged_fields"};
static slot_class_t preq_class = {NULL, 5, preq_slot_names, {0}};
static slot_class_t ptopic_class = {NULL, 3, ptopic_slot_names, {0}};
static slot_class_t ppart_class = {NULL, 3, ppart_slot_names, {0}};

/* 0 when ``type`` has exactly these slots of its own (as T_OBJECT_EX members) and no __dict__; -1 with TypeError */
static int slot_class_setup(slot_class_t *c, PyObject *type_obj)
{
    if (!PyType_Check(type_obj)) {
        PyErr_SetString(PyExc_TypeError, "a class is expected");
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)type_obj;
    if (type == c->type)
        return 0;
    Py_ssize_t offsets[5];
    int ok = type->tp_dictoffset == 0;
    for (int i = 0; ok && i < c->n; i++) {
        PyObject *d = PyObject_GetAttrString(type_obj, c->names[i]);
        if (d == NULL)
            PyErr_Clear();
        ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
             ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
             ((PyMemberDescrObject *)d)->d_common.d_type == type;
        if (ok)
            offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s is not a slotted class with the expected fields", type->tp_name);
        return -1;
    }
    memcpy(c->offsets, offsets, sizeof offsets);
    Py_INCREF(type);
    Py_XSETREF(c->type, type);
    return 0;
}

/* An instance of the class with its slots set to ``values`` (references stolen, also on failure). */
static PyObject *slot_class_new(slot_class_t *c, PyObject **values)
{
    PyObject *o = c->type->tp_alloc(c->type, 0);
    for (int i = 0; i < c->n; i++) {
        if (o == NULL)
            Py_DECREF(values[i]);
        else
            *(PyObject **)((char *)o + c->offsets[i]) = values[i];
    }
    return o;
}

/* produce_wire._Cursor: ``pos`` never passes ``end``. The readers return 0, or -1 where the reference declines
 * (its _NotTaken, a struct.error of a field past the end, a UnicodeDecodeError), or -2 with an exception set. */
typedef struct {
    const uint8_t *buf;
    Py_ssize_t pos, end;
    int flexible;
} pq_t;

/* a big-endian int32 at pos (struct ">i") */
static int pq_int32(pq_t *r, int64_t *out)
{
    if (r->end - r->pos < 4)
        return -1;
    const uint8_t *p = r->buf + r->pos;
    *out = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
    r->pos += 4;
    return 0;
}

/* _Cursor.length(): an int32 (non-flexible), else an unsigned varint of at most 4 bytes minus 1 */
static int pq_length(pq_t *r, int64_t *out)
{
    const uint8_t *buf = r->buf;
    if (!r->flexible)
        return pq_int32(r, out);
    if (r->pos >= r->end)
        return -1;
    uint8_t b = buf[r->pos];
    if (b < 0x80) {
        r->pos++;
        *out = (int64_t)b - 1;
        return 0;
    }
    int64_t value = b & 0x7F;
    int shift = 7;
    Py_ssize_t stop = r->end - r->pos > 4 ? r->pos + 4 : r->end;
    for (Py_ssize_t i = r->pos + 1; i < stop; i++) {
        b = buf[i];
        value |= (int64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            r->pos = i + 1;
            *out = value - 1;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* _Cursor.string(nullable): *out a new reference (None for a null) */
static int pq_string(pq_t *r, int nullable, PyObject **out)
{
    int64_t n;
    if (r->flexible) {
        if (pq_length(r, &n) < 0)
            return -1;
    } else {
        if (r->end - r->pos < 2)
            return -1;
        n = (int16_t)(((uint16_t)r->buf[r->pos] << 8) | r->buf[r->pos + 1]);
        r->pos += 2;
    }
    if (n < 0) {
        if (n == -1 && nullable) {
            *out = Py_NewRef(Py_None);
            return 0;
        }
        return -1;
    }
    if (n > r->end - r->pos)
        return -1;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)r->buf + r->pos, (Py_ssize_t)n, NULL);
    if (s == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return -2;
        PyErr_Clear();
        return -1;
    }
    r->pos += (Py_ssize_t)n;
    *out = s;
    return 0;
}

/* _Cursor.no_tags(): an empty tag section (flexible versions only) */
static int pq_no_tags(pq_t *r)
{
    if (!r->flexible)
        return 0;
    if (r->pos >= r->end || r->buf[r->pos] != 0)
        return -1;
    r->pos++;
    return 0;
}

/* an array's count, checked against the bytes left as _read checks it, and an empty list for its items */
static int pq_array(pq_t *r, int64_t *count, PyObject **list)
{
    int rc = pq_length(r, count);
    if (rc < 0)
        return rc;
    if (*count < 0 || *count > r->end - r->pos)
        return -1;
    return (*list = PyList_New(0)) == NULL ? -2 : 0;
}

/* a new instance of ``c`` from ``values`` (stolen) appended to ``list``; -2 when that fails */
static int pq_append_new(slot_class_t *c, PyObject **values, PyObject *list)
{
    PyObject *o = slot_class_new(c, values);
    int rc = o == NULL || PyList_Append(list, o) < 0 ? -2 : 0;
    Py_XDECREF(o);
    return rc;
}

/* one topic's partitions: a list of PartitionProduceData whose records are slices of ``payload`` */
static int pq_partitions(pq_t *r, PyObject *payload, PyObject **out)
{
    int64_t count, index, n;
    PyObject *list;
    int rc = pq_array(r, &count, &list);
    if (rc < 0)
        return rc;
    for (int64_t i = 0; i < count; i++) {
        PyObject *values[3] = {NULL, NULL, NULL};
        if ((rc = pq_int32(r, &index)) < 0 || (rc = pq_length(r, &n)) < 0) {
            Py_DECREF(list);
            return rc;
        }
        if (n < -1 || n > r->end - r->pos) {
            Py_DECREF(list);
            return -1;
        }
        if (n == -1) {
            values[1] = Py_NewRef(Py_None);
        } else {
            PyObject *start = PyLong_FromSsize_t(r->pos), *stop = start ? PyLong_FromSsize_t(r->pos + (Py_ssize_t)n) : NULL;
            PyObject *slice = stop ? PySlice_New(start, stop, NULL) : NULL;
            Py_XDECREF(start);
            Py_XDECREF(stop);
            values[1] = slice ? PyObject_GetItem(payload, slice) : NULL;
            Py_XDECREF(slice);
            if (values[1] == NULL) {
                Py_DECREF(list);
                return -2;
            }
            r->pos += (Py_ssize_t)n;
        }
        if (pq_no_tags(r) < 0) {
            Py_DECREF(values[1]);
            Py_DECREF(list);
            return -1;
        }
        values[0] = PyLong_FromLongLong(index);
        if (values[0] == NULL) {
            Py_DECREF(values[1]);
            Py_DECREF(list);
            return -2;
        }
        values[2] = Py_NewRef(Py_None);
        if (pq_append_new(&ppart_class, values, list) < 0) {
            Py_DECREF(list);
            return -2;
        }
    }
    *out = list;
    return 0;
}

/* the topics, then the body's tags and the frame's end */
static int pq_topics(pq_t *r, PyObject *payload, PyObject **out)
{
    int64_t count;
    PyObject *list;
    int rc = pq_array(r, &count, &list);
    if (rc < 0)
        return rc;
    for (int64_t i = 0; i < count; i++) {
        PyObject *values[3] = {NULL, NULL, NULL};
        if ((rc = pq_string(r, 0, &values[0])) < 0 || (rc = pq_partitions(r, payload, &values[1])) < 0) {
            Py_XDECREF(values[0]);
            Py_DECREF(list);
            return rc;
        }
        if (pq_no_tags(r) < 0) {
            Py_DECREF(values[0]);
            Py_DECREF(values[1]);
            Py_DECREF(list);
            return -1;
        }
        values[2] = Py_NewRef(Py_None);
        if (pq_append_new(&ptopic_class, values, list) < 0) {
            Py_DECREF(list);
            return -2;
        }
    }
    if (pq_no_tags(r) < 0 || r->pos != r->end) {
        Py_DECREF(list);
        return -1;
    }
    *out = list;
    return 0;
}

PyDoc_STRVAR(read_produce_request_doc,
"read_produce_request(payload, version, ProduceRequest) -> (client_id, ProduceRequest) | None\n\n"
"Reference: mini_broker.server.apis.produce_wire._read of a whole Produce request frame (header and body, the\n"
"size prefix excluded) at versions 3-11: the same objects (the three classes built through their slots, the\n"
"records slices of ``payload``). None where the reference declines (tagged fields, a length past the end,\n"
"bad UTF-8, trailing bytes...), and for a payload that is not a C-contiguous unsigned-byte memoryview.");

static PyObject *k_read_produce_request(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "read_produce_request takes 3 arguments");
        return NULL;
    }
    PyObject *payload = args[0];
    long version = PyLong_AsLong(args[1]);
    if (version == -1 && PyErr_Occurred())
        return NULL;
    if (slot_class_setup(&preq_class, args[2]) < 0)
        return NULL;
    if (ptopic_class.type == NULL || preq_class.type != (PyTypeObject *)args[2]) {
        PyObject *t = PyObject_GetAttrString(args[2], "TopicProduceData");
        PyObject *p = t ? PyObject_GetAttrString(args[2], "PartitionProduceData") : NULL;
        int rc = p ? slot_class_setup(&ptopic_class, t) : -1;
        if (rc == 0)
            rc = slot_class_setup(&ppart_class, p);
        Py_XDECREF(t);
        Py_XDECREF(p);
        if (rc < 0)
            return NULL;
    }
    if (version < 3 || version > 11 || !PyMemoryView_Check(payload))
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(payload, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *out = NULL, *client_id = NULL;
    PyObject *values[5] = {NULL, NULL, NULL, NULL, NULL};
    int rc = -1;
    if (view.ndim != 1 || view.itemsize != 1 || (view.format != NULL && strcmp(view.format, "B") != 0))
        goto done;
    pq_t r = {(const uint8_t *)view.buf, 8, view.len, 0};
    if (r.pos > r.end || (rc = pq_string(&r, 1, &client_id)) < 0)
        goto done;
    r.flexible = version >= 9;
    if ((rc = pq_no_tags(&r)) < 0 || (rc = pq_string(&r, 1, &values[0])) < 0)
        goto done;
    if (r.end - r.pos < 6) {
        rc = -1;
        goto done;
    }
    const uint8_t *p = r.buf + r.pos;
    int16_t acks = (int16_t)(((uint16_t)p[0] << 8) | p[1]);
    int32_t timeout = (int32_t)(((uint32_t)p[2] << 24) | ((uint32_t)p[3] << 16) | ((uint32_t)p[4] << 8) | p[5]);
    r.pos += 6;
    if ((rc = pq_topics(&r, payload, &values[3])) < 0)
        goto done;
    rc = -2;
    if ((values[1] = PyLong_FromLong(acks)) == NULL || (values[2] = PyLong_FromLong(timeout)) == NULL)
        goto done;
    values[4] = Py_NewRef(Py_None);
    PyObject *body = slot_class_new(&preq_class, values);
    for (int i = 0; i < 5; i++)
        values[i] = NULL; /* stolen */
    if (body == NULL)
        goto done;
    out = PyTuple_New(2);
    if (out == NULL) {
        Py_DECREF(body);
        goto done;
    }
    PyTuple_SET_ITEM(out, 0, client_id);
    PyTuple_SET_ITEM(out, 1, body);
    client_id = NULL;
    rc = 0;
done:
    PyBuffer_Release(&view);
    Py_XDECREF(client_id);
    for (int i = 0; i < 5; i++)
        Py_XDECREF(values[i]);
    if (rc == -1)
        Py_RETURN_NONE;
    return out;
}

PyDoc_STRVAR(frame_buffer_doc,
"frame_buffer(size) -> bytearray\n\n"
"Reference: bytearray(size), but its bytes are left as the allocator gives them (not zeroed): for a buffer that\n"
"is filled whole before anyone reads it (a received frame's payload).");

static PyObject *k_frame_buffer(PyObject *self, PyObject *arg)
{
    Py_ssize_t size = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (size == -1 && PyErr_Occurred())
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "negative count");
        return NULL;
    }
    return PyByteArray_FromStringAndSize(NULL, size);
}

/* ---- broker: the per-request named tuples built without their Python __new__ -------------------------------
 * tuple_constructor(cls, n) -> a callable that makes an instance of ``cls`` (a tuple subclass without a __dict__: a
 * named tuple, mini_broker.utils.positional_tuple checks that it is one whose __new__ is the generated one) from
 * exactly n positional values: what ``tuple.__new__(cls, values)`` makes (and the generated ``cls(*values)``),
 * without the args tuple, tuple.__new__'s checks and the intermediate tuple (a produce append makes about seven:
 * the log's append info, offsets and end offset, the producer state's batch and pending append, ...). */

#define TUPLE_MAKER_MAX 64

/* (an instance of network.c.h's SlotsConstructor type, its type and n used, its slot offsets not: the same object
 * layout, traversal and deallocation, another vectorcall) */
static PyObject *tuple_maker_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SlotsMakerObject *m = (SlotsMakerObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != m->n || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd positional arguments (%zd given)", m->type->tp_name, m->n, nargs);
        return NULL;
    }
    /* (as tuple.__new__ on a subclass: the type's allocation, the items, and tracked by the collector) */
    PyObject *o = m->type->tp_alloc(m->type, nargs);
    if (o == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(o, i, Py_NewRef(args[i]));
    if (!PyObject_GC_IsTracked(o))
        PyObject_GC_Track(o);
    return o;
}

PyDoc_STRVAR(tuple_constructor_doc,
"tuple_constructor(cls, n) -> callable\n\n"
"Reference: ``tuple.__new__(cls, values)`` of a tuple subclass ``cls``: a callable taking exactly ``n`` positional\n"
"values that makes an instance of ``cls`` holding them, in order. TypeError unless ``cls`` is a proper subclass\n"
"of tuple without a __dict__ and 0 <= n <= 64.");

static PyObject *k_tuple_constructor(PyObject *self, PyObject *args)
{
    PyObject *type_obj;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!n", &PyType_Type, &type_obj, &n))
        return NULL;
    if (PyType_Ready(&SlotsMakerType) < 0)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)type_obj;
    if (type == &PyTuple_Type || !PyType_IsSubtype(type, &PyTuple_Type) || type->tp_dictoffset != 0 ||
        type->tp_alloc == NULL || !PyType_IS_GC(type) || n < 0 || n > TUPLE_MAKER_MAX) {
        PyErr_Format(PyExc_TypeError, "%s: not a tuple subclass without a __dict__ (or %zd items)", type->tp_name, n);
        return NULL;
    }
    SlotsMakerObject *m = PyObject_GC_New(SlotsMakerObject, &SlotsMakerType);
    if (m == NULL)
        return NULL;
    m->vectorcall = tuple_maker_vectorcall;
    m->type = (PyTypeObject *)Py_NewRef(type_obj);
    m->n = n;
    PyObject_GC_Track(m);
    return (PyObject *)m;
}
