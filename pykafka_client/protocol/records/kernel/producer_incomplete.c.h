/* kernel/producer_incomplete.c.h
 *
 * IncompleteBatches (the batches the producer has not completed, a set the kernel type owns) and
 * MemoryAccount (the free bytes of a producer's buffer.memory and its waiters).
 * Uses: none of the other parts.
 */

/* ---- producer: the incomplete batches, a set the kernel type owns; the memory account --------------------------- */

/* Reference: producer/incomplete_batches.py's IncompleteBatches (the class the accumulator uses without the kernel).
 * The batches the producer has not completed yet, each with the ticket it was added with; ``condition`` (the
 * threading.Condition given at construction, read-only) is notified, under its lock, whenever a removal leaves the
 * set empty. Each method is one step under the GIL (a ProducerBatch hashes by identity: no Python code runs
 * inside a dict operation), so none takes the condition's lock but the notification: a waiter checks under that
 * lock and waits on the condition, and the notify takes the lock, so it reaches every waiter that saw the set
 * non-empty. await_completion (incomplete_batches.await_completion) waits on it. */
typedef struct {
    PyObject_HEAD
    PyObject *incomplete; /* dict: batch -> ticket */
    PyObject *condition;
    long long next_ticket;
} IncompleteObject;

static PyObject *ib_acquire, *ib_release, *ib_notify_all, *acct_notify;

/* the method names this part calls, interned once: 0, or -1 with an exception */
static int incomplete_method_names(void)
{
    if (acct_notify != NULL)
        return 0;
    if ((ib_acquire = PyUnicode_InternFromString("acquire")) == NULL ||
        (ib_release = PyUnicode_InternFromString("release")) == NULL ||
        (ib_notify_all = PyUnicode_InternFromString("notify_all")) == NULL ||
        (acct_notify = PyUnicode_InternFromString("notify")) == NULL)
        return -1;
    return 0;
}

/* lock.acquire(), then step(arg), then lock.release() whatever step's outcome (a blocking acquire lets other threads
 * run meanwhile, so step reads what it needs with the lock held): 0, or -1 with an exception */
static int with_lock(PyObject *lock, int (*step)(PyObject *), PyObject *arg)
{
    PyObject *r = PyObject_CallMethodNoArgs(lock, ib_acquire);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    int rc = step(arg);
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    r = PyObject_CallMethodNoArgs(lock, ib_release);
    if (r == NULL) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        return -1;
    }
    Py_DECREF(r);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return rc;
}

/* obj.<name>() for a method taking no argument and returning nothing of interest: 0, or -1 with an exception */
static int call_method_noargs(PyObject *obj, PyObject *name)
{
    PyObject *r = PyObject_CallMethodNoArgs(obj, name);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *ib_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *condition;
    static char *kwlist[] = {"condition", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:IncompleteBatches", kwlist, &condition))
        return NULL;
    if (incomplete_method_names() < 0)
        return NULL;
    IncompleteObject *self = (IncompleteObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if ((self->incomplete = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->condition = Py_NewRef(condition);
    self->next_ticket = 0;
    return (PyObject *)self;
}

static int ib_traverse(IncompleteObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->incomplete);
    Py_VISIT(self->condition);
    return 0;
}

static int ib_clear(IncompleteObject *self)
{
    Py_CLEAR(self->incomplete);
    Py_CLEAR(self->condition);
    return 0;
}

static void ib_dealloc(IncompleteObject *self)
{
    PyObject_GC_UnTrack(self);
    ib_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the next ticket (consumed), a new reference */
static PyObject *ib_take_ticket(IncompleteObject *self)
{
    return PyLong_FromLongLong(self->next_ticket++);
}

/* d.setdefault(batch, ticket): 0, or -1 with an exception */
static int ib_setdefault(IncompleteObject *self, PyObject *batch, PyObject *ticket)
{
    PyObject *r = PyDict_SetDefault(self->incomplete, batch, ticket);
    return r == NULL ? -1 : 0;
}

PyDoc_STRVAR(ib_add_doc, "add(batch)\n\nCounts ``batch`` incomplete with the next ticket (a ticket is taken even when it is already).");

static PyObject *ib_add(IncompleteObject *self, PyObject *batch)
{
    PyObject *ticket = ib_take_ticket(self);
    if (ticket == NULL)
        return NULL;
    int rc = ib_setdefault(self, batch, ticket);
    Py_DECREF(ticket);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(ib_add_pieces_doc,
"add_pieces(big, pieces)\n\nThe pieces of ``big`` split for being too large, counted incomplete with its ticket (a new\n"
"ticket each when ``big`` is not incomplete).");

static PyObject *ib_add_pieces(IncompleteObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add_pieces takes 2 arguments");
        return NULL;
    }
    PyObject *ticket = PyDict_GetItemWithError(self->incomplete, args[0]);
    if (ticket == NULL && PyErr_Occurred())
        return NULL;
    Py_XINCREF(ticket);
    PyObject *it = PyObject_GetIter(args[1]), *batch;
    if (it == NULL) {
        Py_XDECREF(ticket);
        return NULL;
    }
    int rc = 0;
    while (rc == 0 && (batch = PyIter_Next(it)) != NULL) {
        PyObject *t = ticket != NULL ? Py_NewRef(ticket) : ib_take_ticket(self);
        rc = t == NULL ? -1 : ib_setdefault(self, batch, t);
        Py_XDECREF(t);
        Py_DECREF(batch);
    }
    Py_DECREF(it);
    Py_XDECREF(ticket);
    if (rc < 0 || PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* condition.notify_all() (with its lock held) */
static int ib_notify_step(PyObject *condition)
{
    return call_method_noargs(condition, ib_notify_all);
}

PyDoc_STRVAR(ib_remove_doc, "remove(batch)\n\nForgets ``batch`` (nothing if it is not incomplete); the condition is notified when none is left.");

static PyObject *ib_remove(IncompleteObject *self, PyObject *batch)
{
    int rc = PyDict_DelItem(self->incomplete, batch);
    if (rc < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            return NULL;
        PyErr_Clear();
    }
    if (PyDict_GET_SIZE(self->incomplete) == 0 && with_lock(self->condition, ib_notify_step, self->condition) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(ib_is_empty_doc, "is_empty() -> bool");

static PyObject *ib_is_empty(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(PyDict_GET_SIZE(self->incomplete) == 0);
}

PyDoc_STRVAR(ib_copy_all_doc, "copy_all() -> list\n\nThe incomplete batches, in the order they were added.");

static PyObject *ib_copy_all(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyDict_Keys(self->incomplete);
}

PyDoc_STRVAR(ib_mark_doc,
"mark() -> int\n\nThe ticket the next added batch gets (taken: the next one gets mark + 1): await_completion of it\n"
"waits for every batch incomplete now, and for none added later.");

static PyObject *ib_mark(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    return ib_take_ticket(self);
}

PyDoc_STRVAR(ib_oldest_ticket_doc,
"oldest_ticket() -> int | None\n\nThe smallest ticket still incomplete (the pieces of a split batch carry its older\n"
"ticket, so insertion order is not ticket order); None when none is.");

static PyObject *ib_oldest_ticket(IncompleteObject *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t pos = 0;
    PyObject *key, *value, *best = NULL;
    long long best_v = 0;
    while (PyDict_Next(self->incomplete, &pos, &key, &value)) {
        long long v = PyLong_AsLongLong(value);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        if (best == NULL || v < best_v) {
            best = value;
            best_v = v;
        }
    }
    if (best == NULL)
        Py_RETURN_NONE;
    return Py_NewRef(best);
}

static PyMethodDef ib_methods[] = {
    {"add", (PyCFunction)ib_add, METH_O, ib_add_doc},
    {"add_pieces", (PyCFunction)(void (*)(void))ib_add_pieces, METH_FASTCALL, ib_add_pieces_doc},
    {"remove", (PyCFunction)ib_remove, METH_O, ib_remove_doc},
    {"is_empty", (PyCFunction)ib_is_empty, METH_NOARGS, ib_is_empty_doc},
    {"copy_all", (PyCFunction)ib_copy_all, METH_NOARGS, ib_copy_all_doc},
    {"mark", (PyCFunction)ib_mark, METH_NOARGS, ib_mark_doc},
    {"oldest_ticket", (PyCFunction)ib_oldest_ticket, METH_NOARGS, ib_oldest_ticket_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef ib_members[] = {
    {"condition", T_OBJECT_EX, offsetof(IncompleteObject, condition), READONLY,
     "the threading.Condition notified (its lock held) when a removal leaves no batch incomplete"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject IncompleteType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.IncompleteBatches",
    .tp_basicsize = sizeof(IncompleteObject),
    .tp_dealloc = (destructor)ib_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("IncompleteBatches(condition): the producer's incomplete batches (reference: "
                        "producer.incomplete_batches.IncompleteBatches)"),
    .tp_traverse = (traverseproc)ib_traverse,
    .tp_clear = (inquiry)ib_clear,
    .tp_methods = ib_methods,
    .tp_members = ib_members,
    .tp_new = ib_new,
};

/* Reference: producer/buffer_pool.py's MemoryAccount (the class a BufferPool uses without the kernel). The free
 * bytes of a producer's ``buffer.memory`` and the queue of the threads waiting for them (``waiters``, a deque of
 * threading.Conditions over the pool's ``lock``, read-only: the pool appends and removes its waiters, with the lock
 * held). take and take_first are called with the lock held; give without it: each is one step under the GIL, and
 * give takes the lock only to notify the first waiter (a waiter joins the queue and checks under the lock, then
 * waits, so the notification, made with the lock held, reaches it). */
typedef struct {
    PyObject_HEAD
    PyObject *lock;
    PyObject *waiters;
    long long total;
    long long available;
} AccountObject;

static PyObject *acct_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    long long total;
    PyObject *lock, *waiters;
    static char *kwlist[] = {"total", "lock", "waiters", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LOO:MemoryAccount", kwlist, &total, &lock, &waiters))
        return NULL;
    if (incomplete_method_names() < 0)
        return NULL;
    AccountObject *self = (AccountObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = Py_NewRef(lock);
    self->waiters = Py_NewRef(waiters);
    self->total = total;
    self->available = total;
    return (PyObject *)self;
}

static int acct_traverse(AccountObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lock);
    Py_VISIT(self->waiters);
    return 0;
}

static int acct_clear(AccountObject *self)
{
    Py_CLEAR(self->lock);
    Py_CLEAR(self->waiters);
    return 0;
}

static void acct_dealloc(AccountObject *self)
{
    PyObject_GC_UnTrack(self);
    acct_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* a size argument: 0, or -1 with an exception */
static int acct_size(PyObject *arg, long long *size)
{
    *size = PyLong_AsLongLong(arg);
    return *size == -1 && PyErr_Occurred() ? -1 : 0;
}

PyDoc_STRVAR(acct_take_doc,
"take(size) -> bool\n\nTakes ``size`` bytes when no thread waits and that many are free (the lock held); False, having\n"
"taken nothing, otherwise.");

static PyObject *acct_take(AccountObject *self, PyObject *arg)
{
    long long size;
    if (acct_size(arg, &size) < 0)
        return NULL;
    Py_ssize_t waiting = PyObject_Size(self->waiters);
    if (waiting < 0)
        return NULL;
    if (waiting || self->available < size)
        Py_RETURN_FALSE;
    self->available -= size;
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(acct_take_first_doc,
"take_first(waiter, size) -> bool\n\nTakes ``size`` bytes for ``waiter`` when it is the first waiter and that many are\n"
"free (the lock held); False, having taken nothing, otherwise.");

static PyObject *acct_take_first(AccountObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "take_first takes 2 arguments");
        return NULL;
    }
    long long size;
    if (acct_size(args[1], &size) < 0)
        return NULL;
    Py_ssize_t waiting = PyObject_Size(self->waiters);
    if (waiting < 0)
        return NULL;
    if (waiting == 0)
        Py_RETURN_FALSE;
    PyObject *first = PySequence_GetItem(self->waiters, 0);
    if (first == NULL)
        return NULL;
    int is_first = first == args[0];
    Py_DECREF(first);
    if (!is_first || self->available < size)
        Py_RETURN_FALSE;
    self->available -= size;
    Py_RETURN_TRUE;
}

/* the first of ``waiters`` notified, if any is left (with the lock held) */
static int acct_notify_first(PyObject *waiters)
{
    Py_ssize_t waiting = PyObject_Size(waiters);
    if (waiting <= 0)
        return waiting < 0 ? -1 : 0;
    PyObject *first = PySequence_GetItem(waiters, 0);
    if (first == NULL)
        return -1;
    int rc = call_method_noargs(first, acct_notify);
    Py_DECREF(first);
    return rc;
}

PyDoc_STRVAR(acct_give_doc,
"give(size)\n\nReturns ``size`` bytes (at most up to the total) and notifies the first waiter, under the lock\n"
"(called without it: BufferPool.deallocate).");

static PyObject *acct_give(AccountObject *self, PyObject *arg)
{
    long long size;
    if (acct_size(arg, &size) < 0)
        return NULL;
    long long available = self->available + size;
    self->available = available < self->total ? available : self->total;
    Py_ssize_t waiting = PyObject_Size(self->waiters);
    if (waiting < 0)
        return NULL;
    if (waiting == 0)
        Py_RETURN_NONE;
    if (with_lock(self->lock, acct_notify_first, self->waiters) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(acct_available_doc, "available() -> int\n\nThe bytes free now.");

static PyObject *acct_available(AccountObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLongLong(self->available);
}

static PyMethodDef acct_methods[] = {
    {"take", (PyCFunction)acct_take, METH_O, acct_take_doc},
    {"take_first", (PyCFunction)(void (*)(void))acct_take_first, METH_FASTCALL, acct_take_first_doc},
    {"give", (PyCFunction)acct_give, METH_O, acct_give_doc},
    {"available", (PyCFunction)acct_available, METH_NOARGS, acct_available_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef acct_members[] = {
    {"lock", T_OBJECT_EX, offsetof(AccountObject, lock), READONLY, "the pool's lock (its waiters' conditions')"},
    {"waiters", T_OBJECT_EX, offsetof(AccountObject, waiters), READONLY,
     "the threads waiting for memory, first come first served: their threading.Conditions"},
    {"total", T_LONGLONG, offsetof(AccountObject, total), READONLY, "buffer.memory"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject AccountType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.MemoryAccount",
    .tp_basicsize = sizeof(AccountObject),
    .tp_dealloc = (destructor)acct_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("MemoryAccount(total, lock, waiters): a producer's free buffer.memory (reference: "
                        "producer.buffer_pool.MemoryAccount)"),
    .tp_traverse = (traverseproc)acct_traverse,
    .tp_clear = (inquiry)acct_clear,
    .tp_methods = acct_methods,
    .tp_members = acct_members,
    .tp_new = acct_new,
};
