/* kernel/producer_batch_release.c.h
 *
 * The Sender's produce completion state, a kernel type made once with the Sender (SenderCompletion), and a completed
 * batch's bookkeeping done with it without Python frames: the batch's release (RecordAccumulator.deallocate: the
 * batch out of the kernel's IncompleteBatches, its memory back to the kernel's MemoryAccount, its allocated_bytes
 * zeroed) and the idempotent producer's acknowledged sequence and offset (IdempotenceManager.handle_completed_batch,
 * under the manager's lock). What the type holds was lent by the accumulator's release_parts() and the manager's
 * sequence_parts() when the Sender was built (None from them: the methods are not the reference's, and the
 * completion calls them); it holds nothing that refers to the Sender (no cycle).
 * Uses: slot_access.c.h (the batch's and the partition entry's slots), producer_incomplete.c.h (IncompleteBatches'
 * remove, MemoryAccount's give), producer_response.c.h (completion_ctx, accumulator_deallocate, few_keys_get, the
 * attribute names; its complete_produce_response calls completion_ctx_init, batch_release and sequences_completed,
 * declared there).
 */

/* ---- producer: the Sender's completion state (SenderCompletion) -------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *in_flight;     /* the Sender's in_flight_batches (a dict, the same object) */
    int order;               /* guarantee_message_order */
    int has_manager;         /* the Sender has a transaction manager */
    PyObject *incomplete;    /* the kernel's IncompleteBatches, or NULL: RecordAccumulator.deallocate is called */
    PyObject *account;       /* the kernel's MemoryAccount (with incomplete) */
    PyObject *entries;       /* the manager's partition entries (a dict), or NULL: handle_completed_batch is called */
    PyObject *lock_acquire;  /* the manager's lock's bound acquire and release (with entries) */
    PyObject *lock_release;
    PyObject *condition;     /* the last outcome condition seen (the accumulator's, shared by its batches) and its */
    PyObject *cond_acquire;  /* bound acquire and release, looked up once, or NULL */
    PyObject *cond_release;
} CompletionObject;

static PyTypeObject CompletionType;

static PyObject *s_release_allocated, *release_zero, *s_release_pending, *s_release_base_sequence,
    *s_release_last_seq, *s_release_last_offset, *s_release_in_flight, *s_release_acquire, *s_release_release,
    *s_release_completion;
static slot_cache release_alloc_cache, release_seq_cache, release_pending_cache, release_tp_cache, release_ecache[3],
    release_sender_cache;

static int release_names(void)
{
    if (s_release_completion != NULL)
        return 0;
    if ((s_release_allocated = PyUnicode_InternFromString("allocated_bytes")) == NULL
        || (release_zero = PyLong_FromLong(0)) == NULL
        || (s_release_pending = PyUnicode_InternFromString("pending")) == NULL
        || (s_release_base_sequence = PyUnicode_InternFromString("base_sequence")) == NULL
        || (s_release_last_seq = PyUnicode_InternFromString("last_acked_sequence")) == NULL
        || (s_release_last_offset = PyUnicode_InternFromString("last_acked_offset")) == NULL
        || (s_release_in_flight = PyUnicode_InternFromString("in_flight")) == NULL
        || (s_release_acquire = PyUnicode_InternFromString("acquire")) == NULL
        || (s_release_release = PyUnicode_InternFromString("release")) == NULL
        || (s_release_completion = PyUnicode_InternFromString("completion")) == NULL)
        return -1;
    return 0;
}

PyDoc_STRVAR(completion_doc,
"SenderCompletion(in_flight_batches, guarantee_message_order, has_manager, release_parts, sequence_parts)\n\n"
"A Sender's produce completion state, made once with the Sender (its ``completion``): its in-flight batches (the\n"
"dict itself), whether ordering is guaranteed, whether it has a transaction manager, what\n"
"RecordAccumulator.release_parts() lent ((incomplete batches, memory account): used when both are the kernel's types)\n"
"and what IdempotenceManager.sequence_parts() lent ((partition entries, lock)), each None when the method it stands\n"
"for is not the reference's. The kernel's handle_produce_response completes the common response with it: the\n"
"batches released and their sequences acknowledged as deallocate and handle_completed_batch do, without their\n"
"frames; without a part, the method is called.");

static PyObject *completion_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *in_flight, *release, *sequences;
    int order, has_manager;
    static char *kwlist[] = {"in_flight_batches", "guarantee_message_order", "has_manager", "release_parts",
                             "sequence_parts", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!ppOO:SenderCompletion", kwlist, &PyDict_Type, &in_flight, &order,
                                     &has_manager, &release, &sequences))
        return NULL;
    if (release_names() < 0)
        return NULL;
    CompletionObject *self = (CompletionObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->in_flight = Py_NewRef(in_flight);
    self->order = order;
    self->has_manager = has_manager;
    /* (incomplete, account): only the kernel's own types are released here */
    if (PyTuple_Check(release) && PyTuple_GET_SIZE(release) == 2
        && Py_TYPE(PyTuple_GET_ITEM(release, 0)) == &IncompleteType && Py_TYPE(PyTuple_GET_ITEM(release, 1)) == &AccountType) {
        self->incomplete = Py_NewRef(PyTuple_GET_ITEM(release, 0));
        self->account = Py_NewRef(PyTuple_GET_ITEM(release, 1));
    }
    /* (entries, lock) */
    if (has_manager && PyTuple_Check(sequences) && PyTuple_GET_SIZE(sequences) == 2
        && PyDict_CheckExact(PyTuple_GET_ITEM(sequences, 0))) {
        PyObject *lock = PyTuple_GET_ITEM(sequences, 1);
        if ((self->lock_acquire = PyObject_GetAttr(lock, s_release_acquire)) == NULL
            || (self->lock_release = PyObject_GetAttr(lock, s_release_release)) == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        self->entries = Py_NewRef(PyTuple_GET_ITEM(sequences, 0));
    }
    return (PyObject *)self;
}

static int completion_traverse(CompletionObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->in_flight);
    Py_VISIT(self->incomplete);
    Py_VISIT(self->account);
    Py_VISIT(self->entries);
    Py_VISIT(self->lock_acquire);
    Py_VISIT(self->lock_release);
    Py_VISIT(self->condition);
    Py_VISIT(self->cond_acquire);
    Py_VISIT(self->cond_release);
    return 0;
}

static int completion_clear(CompletionObject *self)
{
    Py_CLEAR(self->in_flight);
    Py_CLEAR(self->incomplete);
    Py_CLEAR(self->account);
    Py_CLEAR(self->entries);
    Py_CLEAR(self->lock_acquire);
    Py_CLEAR(self->lock_release);
    Py_CLEAR(self->condition);
    Py_CLEAR(self->cond_acquire);
    Py_CLEAR(self->cond_release);
    return 0;
}

static void completion_dealloc(CompletionObject *self)
{
    PyObject_GC_UnTrack(self);
    completion_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *completion_releases(CompletionObject *self, void *closure)
{
    return PyBool_FromLong(self->incomplete != NULL);
}

static PyObject *completion_acknowledges(CompletionObject *self, void *closure)
{
    return PyBool_FromLong(self->entries != NULL);
}

static PyGetSetDef completion_getset[] = {
    {"releases", (getter)completion_releases, NULL, "the batches are released here (else deallocate is called)", NULL},
    {"acknowledges", (getter)completion_acknowledges, NULL,
     "the sequences are acknowledged here (else handle_completed_batch is called)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CompletionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.SenderCompletion",
    .tp_basicsize = sizeof(CompletionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = completion_doc,
    .tp_new = completion_new,
    .tp_traverse = (traverseproc)completion_traverse,
    .tp_clear = (inquiry)completion_clear,
    .tp_dealloc = (destructor)completion_dealloc,
    .tp_getset = completion_getset,
};

/* ---- a response's completion context ---------------------------------------------------------------------------- */

/* The context of one response's completion: from the Sender's SenderCompletion (its ``completion`` slot) when it has
 * one, else read from the Sender's attributes as before (a Sender built without the kernel, answered with it). 1,
 * 0: not the common case (the reference decides), -1 with an exception (the ctx is cleared by completion_ctx_clear
 * either way). */
static int completion_ctx_init(completion_ctx *ctx, PyObject *sender)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->sender = sender;
    if (release_names() < 0)
        return -1;
    PyObject *c = cached_get(sender, s_release_completion, &release_sender_cache);
    if (c == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
    } else if (Py_TYPE(c) == &CompletionType) {
        CompletionObject *co = (CompletionObject *)c;
        ctx->completion = c;
        ctx->in_flight = Py_NewRef(co->in_flight);
        ctx->order = co->order;
        ctx->has_tm = co->has_manager;
        ctx->incomplete = co->incomplete;
        ctx->account = co->account;
        ctx->entries = co->entries;
        ctx->lock_acquire = co->lock_acquire;
        ctx->lock_release = co->lock_release;
        return 1;
    } else
        Py_DECREF(c);
    PyObject *gmo;
    if ((ctx->tm = PyObject_GetAttr(sender, pattr[P_TM])) == NULL || (gmo = PyObject_GetAttr(sender, pattr[P_GMO])) == NULL)
        return -1;
    ctx->order = PyObject_IsTrue(gmo);
    Py_DECREF(gmo);
    if (ctx->order < 0 || (ctx->in_flight = PyObject_GetAttr(sender, pattr[P_IN_FLIGHT])) == NULL
        || (ctx->acc = PyObject_GetAttr(sender, pattr[P_ACC])) == NULL)
        return -1;
    ctx->has_tm = ctx->tm != Py_None;
    return PyDict_CheckExact(ctx->in_flight);
}

static void completion_ctx_clear(completion_ctx *ctx)
{
    Py_CLEAR(ctx->completion);
    Py_CLEAR(ctx->tm);
    Py_CLEAR(ctx->acc);
    Py_CLEAR(ctx->in_flight);
}

/* the Sender's accumulator (read once a response, when needed): borrowed from the ctx, or NULL with an exception */
static PyObject *ctx_accumulator(completion_ctx *ctx)
{
    if (ctx->acc == NULL)
        ctx->acc = PyObject_GetAttr(ctx->sender, pattr[P_ACC]);
    return ctx->acc;
}

/* RecordAccumulator.deallocate(batch): with the lent set and account, its body (``incomplete.remove(batch)``; when
 * ``batch.allocated_bytes``: ``account.give(it)``, then 0); else the method. 0, or -1 with an exception. */
static int batch_release(completion_ctx *ctx, PyObject *batch)
{
    if (ctx->incomplete == NULL) {
        PyObject *acc = ctx_accumulator(ctx);
        return acc == NULL ? -1 : accumulator_deallocate(acc, batch);
    }
    PyObject *r = ib_remove((IncompleteObject *)ctx->incomplete, batch);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    PyObject *size = cached_get(batch, s_release_allocated, &release_alloc_cache);
    if (size == NULL)
        return -1;
    int truth = PyObject_IsTrue(size);
    if (truth > 0) {
        r = acct_give((AccountObject *)ctx->account, size);
        truth = r == NULL ? -1 : cached_set(batch, s_release_allocated, &release_alloc_cache, release_zero);
        Py_XDECREF(r);
    }
    Py_DECREF(size);
    return truth < 0 ? -1 : 0;
}

/* increment_sequence(sequence, increment) of producer_batch.py (wrapping from Int.MAX_VALUE to 0) */
static long long release_increment_sequence(long long sequence, long long increment)
{
    const long long int_max = 2147483647LL;
    if (sequence > int_max - increment)
        return increment - (int_max - sequence) - 1;
    return sequence + increment;
}

/* handle_completed_batch's body under the manager's lock, for a partition with an entry: 1 done, 0 not the common
 * case (nothing changed: the method decides), -1 with an exception. */
static int sequences_step(PyObject *entries, PyObject *batch, PyObject *base)
{
    PyObject *tp = NULL, *entry = NULL, *pending = NULL, *seq = NULL, *v[2] = {NULL, NULL}, *in_flight = NULL;
    int rc = -1;
    long long base_offset, sequence, acked[2];
    int overflow = 0;
    if ((tp = cached_get(batch, pattr[P_TP], &release_tp_cache)) == NULL)
        goto done;
    entry = few_keys_get(entries, tp);
    if (entry == NULL) {
        rc = PyErr_Occurred() ? -1 : 0; /* a partition without an entry yet: the method makes it */
        goto done;
    }
    Py_INCREF(entry);
    if ((pending = cached_get(batch, s_release_pending, &release_pending_cache)) == NULL
        || (seq = cached_get(batch, s_release_base_sequence, &release_seq_cache)) == NULL
        || (v[0] = cached_get(entry, s_release_last_seq, &release_ecache[0])) == NULL
        || (v[1] = cached_get(entry, s_release_last_offset, &release_ecache[1])) == NULL
        || (in_flight = cached_get(entry, s_release_in_flight, &release_ecache[2])) == NULL)
        goto done;
    Py_ssize_t count = PyObject_Size(pending);
    if (count < 0)
        goto done;
    rc = 0;
    /* plain ints of 64 bits and a list of in-flight batches, or the method */
    if (!PyLong_CheckExact(base) || !PyLong_CheckExact(seq) || !PyLong_CheckExact(v[0]) || !PyLong_CheckExact(v[1])
        || !PyList_CheckExact(in_flight))
        goto done;
    base_offset = PyLong_AsLongLongAndOverflow(base, &overflow);
    if (overflow || (sequence = PyLong_AsLongLongAndOverflow(seq, &overflow), overflow))
        goto done;
    for (int k = 0; k < 2; k++)
        if ((acked[k] = PyLong_AsLongLongAndOverflow(v[k], &overflow), overflow))
            goto done;
    if (count == 0 || base_offset > (1LL << 62) || sequence < -1 || sequence > 2147483647LL)
        goto done;
    rc = -1;
    if (sequence != -1) {
        long long last = release_increment_sequence(sequence, (long long)count - 1);
        if (last > acked[0]) {
            PyObject *n = PyLong_FromLongLong(last);
            int set = n == NULL ? -1 : cached_set(entry, s_release_last_seq, &release_ecache[0], n);
            Py_XDECREF(n);
            if (set < 0)
                goto done;
        }
    }
    if (base_offset >= 0 && base_offset + (long long)count - 1 > acked[1]) {
        PyObject *n = PyLong_FromLongLong(base_offset + (long long)count - 1);
        int set = n == NULL ? -1 : cached_set(entry, s_release_last_offset, &release_ecache[1], n);
        Py_XDECREF(n);
        if (set < 0)
            goto done;
    }
    /* out of the in-flight batches (by identity: a ProducerBatch compares by identity), nearly always the first */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(in_flight); i++)
        if (PyList_GET_ITEM(in_flight, i) == batch) {
            if (PyList_SetSlice(in_flight, i, i + 1, NULL) < 0)
                goto done;
            break;
        }
    rc = 1;
done:
    Py_XDECREF(tp);
    Py_XDECREF(entry);
    Py_XDECREF(pending);
    Py_XDECREF(seq);
    Py_XDECREF(v[0]);
    Py_XDECREF(v[1]);
    Py_XDECREF(in_flight);
    return rc;
}

/* tm.handle_completed_batch(batch, base) for a Sender with a transaction manager: with the lent entries and lock, its
 * body under the lock; the method itself when they were not lent or the step declines (no entry yet, a value that is
 * not a plain int). 0, or -1 with an exception. */
static int sequences_completed(completion_ctx *ctx, PyObject *batch, PyObject *base)
{
    if (ctx->entries != NULL) {
        PyObject *r = PyObject_CallNoArgs(ctx->lock_acquire);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        int rc = sequences_step(ctx->entries, batch, base);
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        r = PyObject_CallNoArgs(ctx->lock_release);
        if (r == NULL) {
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            return -1;
        }
        Py_DECREF(r);
        PyErr_Restore(et, ev, tb);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    if (ctx->tm == NULL && (ctx->tm = PyObject_GetAttr(ctx->sender, pattr[P_TM])) == NULL)
        return -1;
    PyObject *r = PyObject_CallMethodObjArgs(ctx->tm, pattr[P_HANDLE], batch, base, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* An outcome's condition's acquire() (``acquire`` 1) or release() (0): 0, or -1 with an exception. With the Sender's
 * completion, through the bound methods it looked up once for the condition (the accumulator's, which all its
 * batches' outcomes share: another is looked up and kept in its place); else by name. */
static int outcome_condition(completion_ctx *ctx, PyObject *cond, int acquire)
{
    PyObject *r;
    if (ctx->completion == NULL)
        r = PyObject_CallMethodNoArgs(cond, acquire ? s_release_acquire : s_release_release);
    else {
        CompletionObject *co = (CompletionObject *)ctx->completion;
        if (co->condition != cond) {
            PyObject *a = PyObject_GetAttr(cond, s_release_acquire), *b = a == NULL ? NULL : PyObject_GetAttr(cond, s_release_release);
            if (b == NULL) {
                Py_XDECREF(a);
                return -1;
            }
            Py_XSETREF(co->cond_acquire, a);
            Py_XSETREF(co->cond_release, b);
            Py_XSETREF(co->condition, Py_NewRef(cond));
        }
        r = PyObject_CallNoArgs(acquire ? co->cond_acquire : co->cond_release);
    }
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}
