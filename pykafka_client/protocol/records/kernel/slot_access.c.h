/* kernel/slot_access.c.h
 *
 * Attributes of slotted Python objects read and written at an offset cached per call site (slot_cache,
 * cached_get, cached_read: borrowed, cached_set, get_int_attr), plain ints read without a call (compact_int,
 * take_int), a node id's string (id_string), the kept ints of the send path's counters (set_counter), and an owner held by a weak reference
 * (weak_referent). The producer's and the network's hot objects go through these.
 * Uses: none of the other parts.
 */

/* ---- attributes of slotted objects by a cached offset (the producer's hot objects, the network's objects) ------- */

/* Attribute access by a fixed offset. The producer's hot objects (ProducerBatch, FutureRecordMetadata, the
 * accumulator's queues and topic entries, the sticky partition info) keep their state in __slots__; reading or
 * writing one by name costs a type lookup and a descriptor call (~40 ns), by offset a load. Each call site has
 * a cache: the type it last saw, that type's version tag (changed by any change to the class) and the slot's
 * offset. Anything else (an attribute that is not a writable object slot of a plain class: a property, a
 * subclass overriding it, a class with its own __getattribute__/__setattr__, an unset slot) goes by name, as
 * Python would. */
typedef struct {
    PyTypeObject *type; /* borrowed: compared, never dereferenced unless it is the object's type */
    unsigned int tag;
    Py_ssize_t offset;
} slot_cache;

static Py_ssize_t slot_offset_lookup(PyObject *obj, PyObject *name, slot_cache *c);

/* Whether a version tag remembered of type t (only ever a valid one, never 0: type_tag_valid) is still t's: any
 * change to the class sets its tag to 0, invalid, until a new one (never one given before) is assigned. */
static inline __attribute__((always_inline)) int type_tag_current(PyTypeObject *t, unsigned int tag)
{
    return tag == t->tp_version_tag;
}

/* Whether t's version tag may be remembered: valid (not 0) */
static inline int type_tag_valid(PyTypeObject *t)
{
    return (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && t->tp_version_tag != 0;
}

/* The offset of obj's object slot `name`, or -1: go by name (also remembered per type and version). Inline: a
 * send reads some thirty slots, nearly always of the type the call site saw last. */
static inline __attribute__((always_inline)) Py_ssize_t slot_offset(PyObject *obj, PyObject *name, slot_cache *c)
{
    PyTypeObject *t = Py_TYPE(obj);
    if (c->type == t && type_tag_current(t, c->tag))
        return c->offset;
    return slot_offset_lookup(obj, name, c);
}

/* The class attribute `name` of t found along its MRO with the public API (borrowed), or NULL: not found, or not
 * knowable here (a base without a dict; an error, cleared: reading by name raises it again). */
static PyObject *mro_lookup(PyTypeObject *t, PyObject *name)
{
    PyObject *mro = t->tp_mro;
    if (mro == NULL || !PyTuple_Check(mro))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *dict = ((PyTypeObject *)PyTuple_GET_ITEM(mro, i))->tp_dict;
        if (dict == NULL)
            return NULL;
        PyObject *d = PyDict_GetItemWithError(dict, name);
        if (d != NULL)
            return d;
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return NULL;
        }
    }
    return NULL;
}

static Py_ssize_t slot_offset_lookup_for(PyObject *obj, PyObject *name, slot_cache *c, int read_only);

static Py_ssize_t slot_offset_lookup(PyObject *obj, PyObject *name, slot_cache *c)
{
    return slot_offset_lookup_for(obj, name, c, 0);
}

/* The offset of obj's object slot `name` for reading only (a call site that never writes through its cache): also a
 * read-only slot or one of a class whose __setattr__ is its own (a frozen dataclass's: Node, ProducerIdAndEpoch), whose
 * reads are the slot's all the same; or -1. */
static inline __attribute__((always_inline)) Py_ssize_t read_offset(PyObject *obj, PyObject *name, slot_cache *c)
{
    PyTypeObject *t = Py_TYPE(obj);
    if (c->type == t && type_tag_current(t, c->tag))
        return c->offset;
    return slot_offset_lookup_for(obj, name, c, 1);
}


static Py_ssize_t slot_offset_lookup_for(PyObject *obj, PyObject *name, slot_cache *c, int read_only)
{
    PyTypeObject *t = Py_TYPE(obj);
    c->type = NULL;
    Py_ssize_t offset = -1;
    if (!type_tag_valid(t)) {
        /* the class's attribute read once by name: CPython gives the type a version tag when it can */
        PyObject *probe = PyObject_GetAttr((PyObject *)t, name);
        if (probe == NULL)
            PyErr_Clear();
        Py_XDECREF(probe);
    }
    PyObject *d = mro_lookup(t, name);
    if (t->tp_getattro == PyObject_GenericGetAttr && (read_only || t->tp_setattro == PyObject_GenericSetAttr) &&
        d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
        (read_only || !(((PyMemberDescrObject *)d)->d_member->flags & READONLY)))
        offset = ((PyMemberDescrObject *)d)->d_member->offset;
    if (type_tag_valid(t)) {
        c->type = t;
        c->tag = t->tp_version_tag;
        c->offset = offset;
    }
    return offset;
}

/* obj's slot at off (a new reference) when off >= 0 and the slot is set, else obj.name read by name */
static inline __attribute__((always_inline)) PyObject *get_at(PyObject *obj, PyObject *name, Py_ssize_t off)
{
    if (off >= 0) {
        PyObject *v = *(PyObject **)((char *)obj + off);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(obj, name);
}

/* obj.name (new reference, NULL with an exception), by offset when the cache allows. Always inline: a send
 * makes some twenty of these reads, each a few loads once inlined and a call's frame and spills otherwise. */
static inline __attribute__((always_inline)) PyObject *cached_get(PyObject *obj, PyObject *name, slot_cache *c)
{
    return get_at(obj, name, slot_offset(obj, name, c));
}

/* obj.name (new reference, NULL with an exception) as cached_get, for a call site that only reads (read_offset) */
static inline __attribute__((always_inline)) PyObject *cached_get_read_only(PyObject *obj, PyObject *name, slot_cache *c)
{
    return get_at(obj, name, read_offset(obj, name, c));
}

/* obj.name borrowed when its slot holds it (*owned then NULL), else read by name: the new reference is returned and
 * also put in *owned, for the caller to drop (Py_XDECREF(*owned)) once done; NULL with an exception. For a read used
 * before any Python code can run (a borrowed value lives only while obj keeps it in that slot): no reference count
 * moved on the common case. */
static inline __attribute__((always_inline)) PyObject *cached_read(PyObject *obj, PyObject *name, slot_cache *c,
                                                                   PyObject **owned)
{
    Py_ssize_t off = slot_offset(obj, name, c);
    if (off >= 0) {
        PyObject *v = *(PyObject **)((char *)obj + off);
        if (v != NULL) {
            *owned = NULL;
            return v;
        }
    }
    return *owned = PyObject_GetAttr(obj, name);
}

/* read_slot(obj, name): cached_read at a call site of its own, as Python sees it (the tests'
 * tests/unit/network/test_kernel_read_slots.py compare it with getattr across class changes and overrides) */
static slot_cache read_slot_cache;
static PyObject *read_slot_name; /* the name read_slot_cache is for: another name starts it anew */

PyDoc_STRVAR(read_slot_doc,
"read_slot(obj, name) -> (value, by_offset)\n\n"
"obj.name as the kernel's cached reads read it (reference: getattr(obj, name)), and whether it was read at its\n"
"slot's offset (else by name: a property, an override, an unset slot, a class without the slot).");

static PyObject *k_read_slot(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "read_slot(obj, name: str)");
        return NULL;
    }
    PyObject *obj = args[0], *name = args[1];
    if (read_slot_name == NULL || PyUnicode_Compare(read_slot_name, name) != 0) {
        if (PyErr_Occurred())
            return NULL;
        Py_XSETREF(read_slot_name, Py_NewRef(name));
        read_slot_cache.type = NULL;
    }
    Py_ssize_t off = slot_offset(obj, name, &read_slot_cache);
    PyObject *owned;
    PyObject *v = cached_read(obj, name, &read_slot_cache, &owned);
    if (v == NULL)
        return NULL;
    PyObject *r = PyTuple_Pack(2, v, off >= 0 && owned == NULL ? Py_True : Py_False);
    Py_XDECREF(owned);
    return r;
}

/* obj.name = v (0, or -1 with an exception), by offset when the cache allows. */
static inline __attribute__((always_inline)) int cached_set(PyObject *obj, PyObject *name, slot_cache *c, PyObject *v)
{
    Py_ssize_t off = slot_offset(obj, name, c);
    if (off < 0)
        return PyObject_SetAttr(obj, name, v);
    PyObject **p = (PyObject **)((char *)obj + off);
    PyObject *old = *p;
    *p = Py_NewRef(v);
    Py_XDECREF(old);
    return 0;
}

/* v (borrowed) into *out when it is a plain int of at most two internal digits (|v| < 2**60: sizes, offsets,
 * millisecond timestamps), read without a call: 1; 0 for anything else (PyLong_AsLongLongAndOverflow decides). */
static inline __attribute__((always_inline)) int compact_int(PyObject *v, int64_t *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)v)) {
        *out = (int64_t)PyUnstable_Long_CompactValue((PyLongObject *)v);
        return 1;
    }
    return 0;
#else
    /* tests in the order of the values read per send (sizes and counts: one digit; ms timestamps: two), not a
     * switch's jump through a table */
    const digit *d = ((PyLongObject *)v)->ob_digit;
    Py_ssize_t n = Py_SIZE(v);
    if (n == 1) {
        *out = (int64_t)d[0];
        return 1;
    }
    if (n == 2) {
        *out = ((int64_t)d[1] << PyLong_SHIFT) | (int64_t)d[0];
        return 1;
    }
    switch (n) {
    case 0: *out = 0; return 1;
    case -1: *out = -(int64_t)d[0]; return 1;
    case -2: *out = -(((int64_t)d[1] << PyLong_SHIFT) | (int64_t)d[0]); return 1;
    default: return 0;
    }
#endif
}

/* A value that must be a plain int fitting 64 bits into *out: 0, 1 (not such an int) or -1 (exception).
 * Steals v (NULL: the exception of the read that made it). */
static int take_int(PyObject *v, int64_t *out)
{
    if (v == NULL)
        return -1;
    if (compact_int(v, out)) {
        Py_DECREF(v);
        return 0;
    }
    int overflow = 0;
    long long x = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
    int bad = !PyLong_CheckExact(v) || overflow;
    Py_DECREF(v);
    if (bad)
        return 1;
    if (x == -1 && PyErr_Occurred())
        return -1;
    *out = x;
    return 0;
}

/* bool(v): 1, 0 or -1 (exception). Steals v (NULL: the exception of the call that made it). */
static int take_truth(PyObject *v)
{
    if (v == NULL)
        return -1;
    int truth = PyObject_IsTrue(v);
    Py_DECREF(v);
    return truth;
}

static int get_int_attr_slow(PyObject *obj, PyObject *name, slot_cache *c, int64_t *out)
{
    return take_int(cached_get(obj, name, c), out);
}

/* An attribute that must be a plain int fitting 64 bits into *out: 0, 1 (not such an int) or -1 (exception).
 * Inline, as cached_get: the common case (a slot holding a small int) is a few loads. */
static inline __attribute__((always_inline)) int get_int_attr(PyObject *obj, PyObject *name, slot_cache *c, int64_t *out)
{
    Py_ssize_t off = slot_offset(obj, name, c);
    if (off >= 0) {
        PyObject *v = *(PyObject **)((char *)obj + off);
        if (v != NULL && compact_int(v, out))
            return 0;
    }
    return get_int_attr_slow(obj, name, c, out);
}

/* The ints of the byte counters the send path moves on every record (a batch's size_bytes, the sticky partition's
 * produced_bytes) and of its futures' record indexes: made once per value below COUNTER_INTS and kept, as CPython
 * keeps its small ints (32 B an int, at most 1 MiB, and this table's 256 KiB of pointers, touched as used), so a
 * record costs no int allocation and no int deallocation (the replaced value stays here). New reference, NULL with
 * an exception. */
enum { COUNTER_INTS = 1 << 15 };
static PyObject *counter_ints[COUNTER_INTS];

static inline __attribute__((always_inline)) PyObject *counter_int(int64_t x)
{
    if (x < 0 || x >= COUNTER_INTS)
        return PyLong_FromLongLong(x);
    PyObject *v = counter_ints[x];
    if (v == NULL && (v = counter_ints[x] = PyLong_FromLongLong(x)) == NULL)
        return NULL;
    return Py_NewRef(v);
}

/* obj.name = x for a counter slot the send path moves on every record (a batch's size_bytes, the sticky partition's
 * produced_bytes), through its slot cache: 0, or -1 with an exception. */
static inline __attribute__((always_inline)) int set_counter(PyObject *obj, PyObject *name, slot_cache *c, int64_t x)
{
    PyObject *v = counter_int(x);
    if (v == NULL)
        return -1;
    int rc = cached_set(obj, name, c, v);
    Py_DECREF(v);
    return rc;
}

/* str(v) (new reference, NULL with an exception) of a node id: an exact int's decimal string is kept for the last
 * value asked (the Sender's round and the client's ready ask it of the same node on every request; the reference
 * makes a new equal string each time), any other value's str() made anew. */
static PyObject *id_string(PyObject *v)
{
    static int64_t last_value;
    static PyObject *last_string;
    int64_t x;
    if (!compact_int(v, &x))
        return PyObject_Str(v);
    if (last_string != NULL && x == last_value)
        return Py_NewRef(last_string);
    PyObject *s = PyObject_Str(v);
    if (s != NULL) {
        Py_XSETREF(last_string, Py_NewRef(s));
        last_value = x;
    }
    return s;
}

/* ---- an owner held by a weak reference (the kernel types that must not keep their Python owner alive) ---------- */

/* The object ``ref`` (a weak reference) refers to, as a new reference; NULL with ReferenceError(``gone``) once it is
 * gone, or with the weak reference's own error. */
static PyObject *weak_referent(PyObject *ref, const char *gone)
{
    PyObject *obj = PyWeakref_GetObject(ref); /* borrowed */
    if (obj == NULL)
        return NULL;
    if (obj == Py_None) {
        PyErr_SetString(PyExc_ReferenceError, gone);
        return NULL;
    }
    return Py_NewRef(obj);
}
