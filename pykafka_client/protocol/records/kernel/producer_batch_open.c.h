/* kernel/producer_batch_open.c.h
 *
 * BatchOpener: RecordAccumulator.open_batch compiled, the new batch's opening on the caller's thread (the kernel's
 * send path calls it under the partition's deque lock when the open batch has no room): the accumulator's closed
 * check, buffer.memory's allocation (BufferPool.try_allocate: the pool's lock, its closed flag, the account's take),
 * the new ProducerBatch and its BatchOutcome, the deque's append and the incomplete set's add, in one call.
 * The batch is a copy of a prototype that ProducerBatch's own __init__ built (every slot, so __init__ stays the one
 * definition of a fresh batch's state), with the fields a batch's partition and creation time set.
 * Uses: slot_access.c.h (cached_get, cached_set), producer_pending.c.h (PendingType, pending_make),
 * producer_send_append.c.h (queue_lock_acquire, queue_lock_release, sattr_init).
 */

/* ---- producer: a new batch opened in one call (RecordAccumulator.open_batch) ----------------------------------- */

enum { BO_TP, BO_CREATED, BO_LAST_ATTEMPT, BO_DRAINED, BO_LAST_APPEND, BO_PENDING, BO_OUTCOME, BO_ALLOCATED,
       BO_O_TOPIC, BO_O_PARTITION, BO_CLOSED, BO_POOL_CLOSED, BO_QUEUES, BO_TP_OF_QUEUE, BO_APPEND, BO_ADD, BO_TAKE,
       BO_COUNT };
/* the batch's fields that depend on its partition and creation time (ProducerBatch.__init__'s tp and created_ms;
 * tests/unit/producer/test_batch_opener_native.py checks these are all that differ between two batches), the
 * outcome's, and the other objects' names */
static const char *const bo_attr_names[BO_COUNT] = {
    "topic_partition", "created_ms", "last_attempt_ms", "drained_ms", "last_append_ms", "pending", "outcome",
    "allocated_bytes", "topic", "partition", "closed", "closed", "queues", "tp", "append", "add", "take",
};
static PyObject *bo_attr[BO_COUNT];
static slot_cache bo_cache[BO_COUNT];

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *topics;      /* the accumulator's topic entries (dict: topic -> its queues), lent */
    PyObject *prototype;   /* a ProducerBatch of batch.size made by __init__, never queued */
    PyObject *proto_outcome;
    PyObject *pool;        /* the BufferPool: its public ``closed`` */
    PyObject *account;     /* the pool's account and its lock */
    PyObject *pool_lock;
    PyObject *incomplete;  /* the accumulator's incomplete batches */
    PyObject *clock;       /* the accumulator's Time's hi_res_clock_ms, or None: CLOCK_MONOTONIC in ms */
    PyObject *appending;   /* the accumulator's appends in progress (a list: one None each) */
    PyObject *owner;       /* a weak reference to the accumulator (no cycle: the accumulator holds this opener) */
    PyObject *reference;   /* RecordAccumulator.open_batch (the function): what the unusual goes to */
    PyObject *size_obj;    /* batch.size as an int */
    int64_t batch_size, small; /* key + value bytes up to ``small``: the batch is batch.size bytes */
    Py_ssize_t hint;       /* the prototype's PendingRecords' first allocation */
    unsigned int batch_tag, outcome_tag; /* the classes' version tags when the prototype was made */
} OpenerObject;

/* Whether ``t`` is a plain slotted class whose every slot a copy can take: a heap type straight from object, no
 * __dict__, no __weakref__, only writable object slots. */
static int plain_slotted(PyTypeObject *t)
{
    if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || t->tp_base != &PyBaseObject_Type || t->tp_dictoffset != 0 ||
        t->tp_weaklistoffset != 0 || t->tp_members == NULL)
        return 0;
    for (PyMemberDef *m = t->tp_members; m->name != NULL; m++) {
        if (m->type != T_OBJECT_EX || (m->flags & READONLY))
            return 0;
    }
    return 1;
}

/* A new object of proto's (plain_slotted) class with every slot proto's (new reference, NULL with an exception) */
static PyObject *copy_slots(PyObject *proto)
{
    PyTypeObject *t = Py_TYPE(proto);
    PyObject *o = t->tp_alloc(t, 0);
    if (o == NULL)
        return NULL;
    for (PyMemberDef *m = t->tp_members; m->name != NULL; m++) {
        PyObject *v = *(PyObject **)((char *)proto + m->offset);
        *(PyObject **)((char *)o + m->offset) = Py_XNewRef(v);
    }
    return o;
}

static int bo_attr_init(void)
{
    if (bo_attr[0] != NULL)
        return 0;
    for (int i = 0; i < BO_COUNT; i++) {
        if ((bo_attr[i] = PyUnicode_InternFromString(bo_attr_names[i])) == NULL)
            return -1;
    }
    return 0;
}

static PyObject *opener_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject *opener_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"topics", "prototype", "pool", "incomplete", "clock", "appending", "owner", "reference",
                             "small", NULL};
    PyObject *topics, *prototype, *pool, *incomplete, *clock, *appending, *owner, *reference;
    long long small;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OOOOO!OOL:BatchOpener", kwlist, &PyDict_Type, &topics,
                                     &prototype, &pool, &incomplete, &clock, &PyList_Type, &appending,
                                     &owner, &reference, &small))
        return NULL;
    if (!PyWeakref_CheckRefExact(owner)) {
        PyErr_SetString(PyExc_TypeError, "BatchOpener: owner is not a weak reference");
        return NULL;
    }
    if (bo_attr_init() < 0 || sattr_init() < 0)
        return NULL;
    PyObject *outcome = NULL, *pending = NULL, *account = NULL, *lock = NULL, *size_obj = NULL;
    if ((outcome = PyObject_GetAttr(prototype, bo_attr[BO_OUTCOME])) == NULL ||
        (pending = PyObject_GetAttr(prototype, bo_attr[BO_PENDING])) == NULL ||
        (size_obj = PyObject_GetAttrString(prototype, "write_limit")) == NULL ||
        (account = PyObject_GetAttrString(pool, "account")) == NULL ||
        (lock = PyObject_GetAttrString(account, "lock")) == NULL)
        goto fail;
    int64_t batch_size;
    if (!PyLong_CheckExact(size_obj) || (batch_size = PyLong_AsLongLong(size_obj)) < 0 || Py_TYPE(pending) != &PendingType ||
        ((PendingObject *)pending)->count != 0 || !plain_slotted(Py_TYPE(prototype)) || !plain_slotted(Py_TYPE(outcome))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "BatchOpener: the prototype is not a fresh ProducerBatch of plain slots");
        goto fail;
    }
    OpenerObject *self = (OpenerObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        goto fail;
    self->vectorcall = opener_vectorcall;
    self->topics = Py_NewRef(topics);
    self->prototype = Py_NewRef(prototype);
    self->proto_outcome = outcome;
    self->pool = Py_NewRef(pool);
    self->account = account;
    self->pool_lock = lock;
    self->incomplete = Py_NewRef(incomplete);
    self->clock = Py_NewRef(clock);
    self->appending = Py_NewRef(appending);
    self->owner = Py_NewRef(owner);
    self->reference = Py_NewRef(reference);
    self->size_obj = size_obj;
    self->batch_size = batch_size;
    self->small = small;
    self->hint = ((PendingObject *)pending)->hint;
    /* (0 when a class has no valid tag now: every call then goes to the reference) */
    self->batch_tag = type_tag_valid(Py_TYPE(prototype)) ? Py_TYPE(prototype)->tp_version_tag : 0;
    self->outcome_tag = type_tag_valid(Py_TYPE(outcome)) ? Py_TYPE(outcome)->tp_version_tag : 0;
    Py_DECREF(pending);
    return (PyObject *)self;
fail:
    Py_XDECREF(outcome);
    Py_XDECREF(pending);
    Py_XDECREF(size_obj);
    Py_XDECREF(account);
    Py_XDECREF(lock);
    return NULL;
}

/* BufferPool.try_allocate(size) (the opener's size: batch.size): 1 taken, 0 not (nothing taken), -1 error */
static int opener_try_allocate(OpenerObject *self)
{
    if (queue_lock_acquire(self->pool_lock) < 0)
        return -1;
    int closed = take_truth(cached_get(self->pool, bo_attr[BO_POOL_CLOSED], &bo_cache[BO_POOL_CLOSED]));
    int taken = closed != 0 ? (closed < 0 ? -1 : 0)
                            : take_truth(PyObject_CallMethodOneArg(self->account, bo_attr[BO_TAKE], self->size_obj));
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (queue_lock_release(self->pool_lock) < 0) {
        Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
        return -1;
    }
    PyErr_Restore(et, ev, tb);
    return taken;
}

/* ProducerBatch(tp, batch.size, created_ms, ...) as the accumulator's _add_batch makes it, from the prototype:
 * new reference, NULL with an exception */
static PyObject *opener_make_batch(OpenerObject *self, PyObject *tp)
{
    PyObject *created, *batch = NULL, *outcome = NULL, *pending = NULL;
    if (self->clock == Py_None) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        created = PyLong_FromLongLong((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    } else {
        created = PyObject_CallNoArgs(self->clock);
    }
    if (created == NULL)
        return NULL;
    if ((outcome = copy_slots(self->proto_outcome)) == NULL ||
        cached_set(outcome, bo_attr[BO_O_TOPIC], &bo_cache[BO_O_TOPIC], PyTuple_GET_ITEM(tp, 0)) < 0 ||
        cached_set(outcome, bo_attr[BO_O_PARTITION], &bo_cache[BO_O_PARTITION], PyTuple_GET_ITEM(tp, 1)) < 0 ||
        (pending = pending_make(&PendingType, self->hint)) == NULL || (batch = copy_slots(self->prototype)) == NULL)
        goto fail;
    if (cached_set(batch, bo_attr[BO_TP], &bo_cache[BO_TP], tp) < 0 ||
        cached_set(batch, bo_attr[BO_CREATED], &bo_cache[BO_CREATED], created) < 0 ||
        cached_set(batch, bo_attr[BO_LAST_ATTEMPT], &bo_cache[BO_LAST_ATTEMPT], created) < 0 ||
        cached_set(batch, bo_attr[BO_DRAINED], &bo_cache[BO_DRAINED], created) < 0 ||
        cached_set(batch, bo_attr[BO_LAST_APPEND], &bo_cache[BO_LAST_APPEND], created) < 0 ||
        cached_set(batch, bo_attr[BO_PENDING], &bo_cache[BO_PENDING], pending) < 0 ||
        cached_set(batch, bo_attr[BO_OUTCOME], &bo_cache[BO_OUTCOME], outcome) < 0 ||
        cached_set(batch, bo_attr[BO_ALLOCATED], &bo_cache[BO_ALLOCATED], self->size_obj) < 0)
        goto fail;
    Py_DECREF(created);
    Py_DECREF(outcome);
    Py_DECREF(pending);
    return batch;
fail:
    Py_DECREF(created);
    Py_XDECREF(outcome);
    Py_XDECREF(pending);
    Py_XDECREF(batch);
    return NULL;
}

/* open_batch(batches, topic, partition, key, value, headers): RecordAccumulator.open_batch's result. The common
 * case here (no headers, a record whose upper bound fits batch.size, the classes unchanged since the prototype,
 * the topic's queue found); anything else goes to the reference with the same arguments, before any change. */
static PyObject *opener_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    OpenerObject *self = (OpenerObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *owner = PyWeakref_GetObject(self->owner); /* borrowed */
    if (owner == NULL)
        return NULL;
    if (owner == Py_None) /* the accumulator is gone: nothing to open for */
        Py_RETURN_NONE;
    Py_INCREF(owner);
    PyObject *result = NULL, *q = NULL, *tp = NULL;
    Py_ssize_t kn, vn;
    if (kwnames != NULL || nargs != 6 || producer_bytes(args[3], &kn) < 0 || producer_bytes(args[4], &vn) < 0 ||
        !((PyTuple_CheckExact(args[5]) && PyTuple_GET_SIZE(args[5]) == 0) ||
          (PyList_CheckExact(args[5]) && PyList_GET_SIZE(args[5]) == 0)) ||
        (kn < 0 ? 0 : kn) + (vn < 0 ? 0 : vn) > self->small ||
        self->batch_tag == 0 || !type_tag_current(Py_TYPE(self->prototype), self->batch_tag) ||
        self->outcome_tag == 0 || !type_tag_current(Py_TYPE(self->proto_outcome), self->outcome_tag))
        goto reference;
    /* self._topics[topic].queues[partition].tp */
    PyObject *info = PyDict_GetItemWithError(self->topics, args[1]); /* borrowed */
    if (info == NULL) {
        if (PyErr_Occurred())
            goto done;
        goto reference;
    }
    PyObject *queues = cached_get(info, bo_attr[BO_QUEUES], &bo_cache[BO_QUEUES]);
    if (queues == NULL)
        goto done;
    q = PyDict_CheckExact(queues) ? PyDict_GetItemWithError(queues, args[2]) : NULL;
    Py_DECREF(queues); /* (q is held by the dict the accumulator holds, under the deque lock its caller holds) */
    if (q == NULL) {
        if (PyErr_Occurred())
            goto done;
        goto reference;
    }
    Py_INCREF(q);
    if ((tp = cached_get(q, bo_attr[BO_TP_OF_QUEUE], &bo_cache[BO_TP_OF_QUEUE])) == NULL)
        goto done;
    if (!PyTuple_Check(tp) || PyTuple_GET_SIZE(tp) != 2)
        goto reference;
    /* from here as the reference: counted as an append in progress from before the closed check until the batch
     * is incomplete */
    Py_ssize_t depth = PyList_GET_SIZE(self->appending);
    if (PyList_Append(self->appending, Py_None) < 0)
        goto done;
    int closed = take_truth(cached_get(owner, bo_attr[BO_CLOSED], &bo_cache[BO_CLOSED]));
    int taken = closed != 0 ? (closed < 0 ? -1 : 0) : opener_try_allocate(self);
    if (taken > 0) {
        PyObject *batch = opener_make_batch(self, tp);
        if (batch != NULL) {
            PyObject *r = PyObject_CallMethodOneArg(args[0], bo_attr[BO_APPEND], batch);
            if (r != NULL) {
                Py_DECREF(r);
                r = PyObject_CallMethodOneArg(self->incomplete, bo_attr[BO_ADD], batch);
            }
            if (r != NULL) {
                Py_DECREF(r);
                result = batch;
            } else {
                Py_DECREF(batch);
            }
        }
    } else if (taken == 0) {
        result = Py_NewRef(Py_None);
    }
    /* appending.pop() */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Py_ssize_t n = PyList_GET_SIZE(self->appending);
    if (PyList_SetSlice(self->appending, n > depth ? n - 1 : depth, n > depth ? n : depth, NULL) < 0) {
        Py_CLEAR(result);
        Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
    } else {
        PyErr_Restore(et, ev, tb);
    }
    goto done;
reference: {
        PyObject *full[7] = {owner, args[0], args[1], args[2], args[3], args[4], args[5]};
        if (kwnames == NULL && nargs == 6) {
            result = PyObject_Vectorcall(self->reference, full, 7, NULL);
        } else {
            PyObject *tuple = PyTuple_New(nargs + 1);
            if (tuple != NULL) {
                PyTuple_SET_ITEM(tuple, 0, Py_NewRef(owner));
                for (Py_ssize_t i = 0; i < nargs; i++)
                    PyTuple_SET_ITEM(tuple, i + 1, Py_NewRef(args[i]));
                PyObject *kw = NULL;
                if (kwnames != NULL && (kw = PyDict_New()) != NULL) {
                    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++)
                        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                            Py_CLEAR(kw);
                            break;
                        }
                }
                if (kwnames == NULL || kw != NULL)
                    result = PyObject_Call(self->reference, tuple, kw);
                Py_DECREF(tuple);
                Py_XDECREF(kw);
            }
        }
    }
done:
    Py_XDECREF(tp);
    Py_XDECREF(q);
    Py_DECREF(owner);
    return result;
}

static PyObject *opener_call(PyObject *op, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(op, args, kwargs);
}

static int opener_traverse(PyObject *op, visitproc visit, void *arg)
{
    OpenerObject *self = (OpenerObject *)op;
    Py_VISIT(self->topics);
    Py_VISIT(self->prototype);
    Py_VISIT(self->proto_outcome);
    Py_VISIT(self->pool);
    Py_VISIT(self->account);
    Py_VISIT(self->pool_lock);
    Py_VISIT(self->incomplete);
    Py_VISIT(self->clock);
    Py_VISIT(self->appending);
    Py_VISIT(self->owner);
    Py_VISIT(self->reference);
    Py_VISIT(self->size_obj);
    return 0;
}

static int opener_clear(PyObject *op)
{
    OpenerObject *self = (OpenerObject *)op;
    Py_CLEAR(self->topics);
    Py_CLEAR(self->prototype);
    Py_CLEAR(self->proto_outcome);
    Py_CLEAR(self->pool);
    Py_CLEAR(self->account);
    Py_CLEAR(self->pool_lock);
    Py_CLEAR(self->incomplete);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->appending);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->reference);
    Py_CLEAR(self->size_obj);
    return 0;
}

static void opener_dealloc(PyObject *op)
{
    PyObject_GC_UnTrack(op);
    opener_clear(op);
    Py_TYPE(op)->tp_free(op);
}

static PyTypeObject OpenerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.BatchOpener",
    .tp_basicsize = sizeof(OpenerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = PyDoc_STR(
        "BatchOpener(topics, prototype, pool, incomplete, clock, appending, owner, reference, small)\n\n"
        "Reference: RecordAccumulator.open_batch (``reference``, called with the accumulator ``owner()`` for what this\n"
        "declines). Called as open_batch(batches, topic, partition, key, value, headers): the new batch of\n"
        "batch.size (``prototype``'s write_limit; a record with headers or over ``small`` key and value bytes goes to\n"
        "the reference) copied from ``prototype`` (a fresh uncompressed ProducerBatch made by __init__) with its\n"
        "partition, creation time (``clock()``, None: the monotonic clock in ms), records and outcome its own,\n"
        "appended to ``batches`` and added to ``incomplete`` when the accumulator is open and ``pool`` has the memory\n"
        "at once; else None, having changed nothing."),
    .tp_new = opener_new,
    .tp_call = opener_call,
    .tp_vectorcall_offset = offsetof(OpenerObject, vectorcall),
    .tp_traverse = opener_traverse,
    .tp_clear = opener_clear,
    .tp_dealloc = opener_dealloc,
};
