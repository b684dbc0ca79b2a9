/* kernel/producer_send_append.c.h
 *
 * send_append: send()'s common case in one call (RecordAccumulator.try_append_fast and the partition),
 * with the accumulator queue lock's direct acquire and release; sticky_switch: the sticky partitioner's switch
 * (BuiltInPartitioner.update_partition_info), which it and send_batch's ManyAppender run.
 * Uses: record_encode.c.h, slot_access.c.h, producer_pending.c.h, producer_partitioner.c.h,
 * producer_try_append.c.h, producer_handoff.c.h.
 */

/* ---- producer: send()'s common case in one call (RecordAccumulator.try_append_fast + the partition) ------- */

enum { S_PARTITIONER, S_QUEUES, S_STICKY, S_PARTITION, S_PRODUCED, S_SWITCH, S_STICKY_SIZE, S_LOCK, S_BATCHES,
       S_ACQUIRE, S_RELEASE, S_CLOSED, S_RATIO, S_UPDATE, S_OPEN_BATCH, S_ESTIMATED, S_COUNT };
static const char *const send_attr_names[S_COUNT] = {
    "partitioner", "queues", "sticky", "partition", "produced_bytes", "switch_bytes", "sticky_batch_size", "lock",
    "batches", "acquire", "release", "closed", "compression_ratio", "update_partition_info", "open_batch",
    "estimated_size_in_bytes",
};
static PyObject *sattr[S_COUNT];
static slot_cache scache[S_COUNT];

/* The partition queue's lock is a _thread.lock. Its acquire() parses (blocking, timeout) by keyword and its
 * methods are found by name: about a third of an append. On the CPython versions whose lock object has this
 * layout (3.10 to 3.12: the OS lock, the weakref list, the "locked" flag release() checks), a lock of exactly
 * that type is taken without blocking and released directly, keeping the flag as the lock's own methods do;
 * a lock that is held (the I/O thread drains the queue) is waited for through acquire(), which releases the
 * GIL while it waits. Any other lock, or another CPython, goes through the methods. */
#if PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030D0000
typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock_lock;
    PyObject *in_weakreflist;
    char locked;
} thread_lock_layout;
#define THREAD_LOCK_LAYOUT 1
static PyTypeObject *thread_lock_type = NULL; /* type(_thread.allocate_lock()) when its layout is known */
#if defined(__linux__)
#include <semaphore.h>
/* On Linux CPython's lock is a POSIX semaphore (sys.thread_info.lock == "semaphore": PyThread_allocate_lock's lock
 * is a sem_t). PyThread_acquire_lock without waiting reads the monotonic clock for a deadline it never uses before
 * its sem_trywait: when this is set, the lock is tried with sem_trywait itself and released with sem_post. */
static int thread_lock_is_semaphore = 0;
#endif
#endif

static int thread_lock_setup(void)
{
#ifdef THREAD_LOCK_LAYOUT
    PyObject *mod = PyImport_ImportModule("_thread");
    if (mod == NULL)
        return -1;
    PyObject *lock = PyObject_CallMethod(mod, "allocate_lock", NULL);
    Py_DECREF(mod);
    if (lock == NULL)
        return -1;
    if (Py_TYPE(lock)->tp_basicsize == (Py_ssize_t)sizeof(thread_lock_layout))
        thread_lock_type = (PyTypeObject *)Py_NewRef(Py_TYPE(lock));
    Py_DECREF(lock);
#if defined(__linux__)
    PyObject *info = PySys_GetObject("thread_info"); /* borrowed */
    PyObject *name = info != NULL ? PyObject_GetAttrString(info, "name") : NULL;
    PyObject *kind = info != NULL ? PyObject_GetAttrString(info, "lock") : NULL;
    thread_lock_is_semaphore = name != NULL && kind != NULL && PyUnicode_Check(name) && PyUnicode_Check(kind) &&
                               PyUnicode_CompareWithASCIIString(name, "pthread") == 0 &&
                               PyUnicode_CompareWithASCIIString(kind, "semaphore") == 0;
    Py_XDECREF(name);
    Py_XDECREF(kind);
    PyErr_Clear();
#endif
#endif
    return 0;
}

/* The names send_append reads and the lock type (interned / looked up on first use): 0, or -1 with an exception */
static int sattr_init(void)
{
    if (sattr[S_COUNT - 1] != NULL)
        return 0;
    for (int i = 0; i < S_COUNT; i++) {
        if (sattr[i] == NULL && (sattr[i] = PyUnicode_InternFromString(send_attr_names[i])) == NULL)
            return -1;
    }
    return thread_lock_setup();
}

/* lock.acquire(): 0, or -1 with an exception */
static int queue_lock_acquire(PyObject *lock)
{
#ifdef THREAD_LOCK_LAYOUT
    if (Py_TYPE(lock) == thread_lock_type) {
        thread_lock_layout *l = (thread_lock_layout *)lock;
#if defined(__linux__)
        if (thread_lock_is_semaphore ? sem_trywait((sem_t *)l->lock_lock) == 0 : PyThread_acquire_lock(l->lock_lock, NOWAIT_LOCK)) {
#else
        if (PyThread_acquire_lock(l->lock_lock, NOWAIT_LOCK)) {
#endif
            l->locked = 1;
            return 0;
        }
    }
#endif
    PyObject *got = PyObject_CallMethodNoArgs(lock, sattr[S_ACQUIRE]);
    if (got == NULL)
        return -1;
    Py_DECREF(got);
    return 0;
}

/* lock.release(): 0, or -1 with an exception */
static int queue_lock_release(PyObject *lock)
{
#ifdef THREAD_LOCK_LAYOUT
    if (Py_TYPE(lock) == thread_lock_type && ((thread_lock_layout *)lock)->locked) {
        thread_lock_layout *l = (thread_lock_layout *)lock;
        l->locked = 0; /* (as the lock's release(): the flag, then the lock) */
#if defined(__linux__)
        if (thread_lock_is_semaphore)
            sem_post((sem_t *)l->lock_lock);
        else
#endif
            PyThread_release_lock(l->lock_lock);
        return 0;
    }
#endif
    PyObject *r = PyObject_CallMethodNoArgs(lock, sattr[S_RELEASE]);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* lock.release() at the end of a call whose result is *result (NULL with an exception set when it failed): an
 * exception pending from the call is kept across the release; a release that fails drops *result (its exception
 * then stands in place of the call's) */
static void queue_lock_release_keeping_error(PyObject *lock, PyObject **result)
{
    PyObject *et = NULL, *ev = NULL, *tb = NULL;
    int had_error = PyErr_Occurred() != NULL;
    if (had_error)
        PyErr_Fetch(&et, &ev, &tb);
    if (queue_lock_release(lock) < 0) {
        Py_CLEAR(*result);
        Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
    } else if (had_error) {
        PyErr_Restore(et, ev, tb);
    }
}

/* ---- producer: the sticky partitioner's switch (BuiltInPartitioner.update_partition_info) ---------------------- */

enum { SW_LOCK, SW_STICKY, SW_PARTITION, SW_PRODUCED, SW_STICKY_SIZE, SW_LOAD_STATS, SW_TOPIC, SW_AVAILABLE, SW_PICK,
       SW_NEXT, SW_COUNT };
static const char *const sw_attr_names[SW_COUNT] = {
    "lock", "sticky", "partition", "produced_bytes", "sticky_batch_size", "load_stats", "topic",
    "available_partitions_for_topic", "pick", "next_partition",
};
static PyObject *sw_attr[SW_COUNT];
static slot_cache sw_cache[SW_COUNT];
/* set by sticky_setup: the partitioner type whose update_partition_info sticky_switch is, and its StickyInfo type */
static PyTypeObject *sticky_partitioner_type = NULL;
static PyObject *sticky_info_type = NULL;

PyDoc_STRVAR(sticky_setup_doc,
    "sticky_setup(BuiltInPartitioner, StickyInfo): the partitioner type sticky_switch stands in for (its\n"
    "update_partition_info) and the type of its sticky state.");

static PyObject *k_sticky_setup(PyObject *self, PyObject *args)
{
    PyObject *partitioner_type, *info_type;
    if (!PyArg_ParseTuple(args, "O!O!:sticky_setup", &PyType_Type, &partitioner_type, &PyType_Type, &info_type))
        return NULL;
    for (int i = 0; i < SW_COUNT; i++) {
        if (sw_attr[i] == NULL && (sw_attr[i] = PyUnicode_InternFromString(sw_attr_names[i])) == NULL)
            return NULL;
    }
    if (sattr_init() < 0)
        return NULL;
    Py_INCREF(partitioner_type);
    Py_XSETREF(sticky_partitioner_type, (PyTypeObject *)partitioner_type);
    Py_INCREF(info_type);
    Py_XSETREF(sticky_info_type, info_type);
    Py_RETURN_NONE;
}

static inline PyObject *sw_get(PyObject *obj, int a)
{
    return cached_get(obj, sw_attr[a], &sw_cache[a]);
}

static inline int sw_int(PyObject *obj, int a, int64_t *out)
{
    return get_int_attr(obj, sw_attr[a], &sw_cache[a], out);
}

/* BuiltInPartitioner.update_partition_info(partition, appended, cluster, enable_switch) of ``partitioner`` (its
 * reference), without its frame: under the partitioner's ``lock``, the bytes accounted to the sticky partition when it
 * is still ``partition``, and once a switch is due (Java's rules: twice sticky_batch_size produced, or
 * sticky_batch_size and ``enable_switch``) the next partition as the reference picks it: the only available
 * partition being this one again, its count starts over in place; else a new StickyInfo of the partitioner's
 * public ``pick`` (no load stats) or ``next_partition`` (weighted), the same calls and random draws, the available
 * partitions from the cluster's public ``available_partitions_for_topic``. 0 done; 1 declined, nothing changed (not
 * a partitioner of the type sticky_setup gave, or a count that is not an int: the caller calls the method); -1
 * with an exception (raised where the reference raises, the lock released). Not inlined: once a batch, and its
 * callers' per-record paths keep their registers. */
static __attribute__((noinline)) int sticky_switch_core(PyObject *partitioner, int64_t partition, int64_t appended,
                                                       PyObject *cluster, int enable_switch)
{
    if (sticky_partitioner_type == NULL || Py_TYPE(partitioner) != sticky_partitioner_type)
        return 1;
    PyObject *lock = sw_get(partitioner, SW_LOCK);
    if (lock == NULL)
        return -1;
    if (queue_lock_acquire(lock) < 0) {
        Py_DECREF(lock);
        return -1;
    }
    int rc = -1, r;
    PyObject *info = NULL, *load = NULL, *topic = NULL, *available = NULL, *first = NULL, *partition_obj = NULL,
             *picked = NULL, *fresh = NULL;
    int64_t at, produced, sticky_size;
    if ((info = sw_get(partitioner, SW_STICKY)) == NULL)
        goto done;
    if (info == Py_None) {
        rc = 0;
        goto done;
    }
    if ((r = sw_int(info, SW_PARTITION, &at)) != 0) {
        rc = r < 0 ? -1 : 1;
        goto done;
    }
    if (at != partition) {
        rc = 0;
        goto done;
    }
    if ((r = sw_int(info, SW_PRODUCED, &produced)) != 0 || (r = sw_int(partitioner, SW_STICKY_SIZE, &sticky_size)) != 0 ||
        (r = __builtin_add_overflow(produced, appended, &produced)) != 0 || (r = sticky_size > (INT64_MAX >> 1)) != 0) {
        rc = r < 0 ? -1 : 1;
        goto done;
    }
    if ((load = sw_get(partitioner, SW_LOAD_STATS)) == NULL || set_counter(info, sw_attr[SW_PRODUCED], &sw_cache[SW_PRODUCED], produced) < 0)
        goto done;
    if (produced < sticky_size * 2 && !(enable_switch && produced >= sticky_size)) {
        rc = 0;
        goto done;
    }
    if ((partition_obj = PyLong_FromLongLong(partition)) == NULL)
        goto done;
    if (load == Py_None) {
        if ((topic = sw_get(partitioner, SW_TOPIC)) == NULL ||
            (available = PyObject_CallMethodOneArg(cluster, sw_attr[SW_AVAILABLE], topic)) == NULL)
            goto done;
        Py_ssize_t n = PyObject_Size(available);
        if (n < 0)
            goto done;
        if (n == 1) {
            static PyObject *zero = NULL;
            if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
                goto done;
            if ((first = PyObject_GetItem(available, zero)) == NULL)
                goto done;
            int same = PyObject_RichCompareBool(first, partition_obj, Py_EQ);
            if (same < 0)
                goto done;
            if (same) { /* the only available partition again: its count starts over, no draw */
                rc = set_counter(info, sw_attr[SW_PRODUCED], &sw_cache[SW_PRODUCED], 0);
                goto done;
            }
        }
        picked = PyObject_CallMethodObjArgs(partitioner, sw_attr[SW_PICK], cluster, available, NULL);
    } else {
        picked = PyObject_CallMethodObjArgs(partitioner, sw_attr[SW_NEXT], cluster, partition_obj, NULL);
    }
    if (picked == NULL || (fresh = PyObject_CallOneArg(sticky_info_type, picked)) == NULL ||
        cached_set(partitioner, sw_attr[SW_STICKY], &sw_cache[SW_STICKY], fresh) < 0)
        goto done;
    rc = 0;
done:
    {
        PyObject *et = NULL, *ev = NULL, *tb = NULL;
        PyErr_Fetch(&et, &ev, &tb);
        if (queue_lock_release(lock) < 0) {
            Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
            rc = -1;
        } else {
            PyErr_Restore(et, ev, tb);
        }
    }
    Py_DECREF(lock);
    Py_XDECREF(info);
    Py_XDECREF(load);
    Py_XDECREF(topic);
    Py_XDECREF(available);
    Py_XDECREF(first);
    Py_XDECREF(partition_obj);
    Py_XDECREF(picked);
    Py_XDECREF(fresh);
    return rc;
}

PyDoc_STRVAR(sticky_switch_doc,
    "sticky_switch(partitioner, partition, appended_bytes, cluster, enable_switch) -> None | NotImplemented\n\n"
    "BuiltInPartitioner.update_partition_info(partition, appended_bytes, cluster, enable_switch) compiled (the\n"
    "compiled send paths' switch): None when done (as the method), NotImplemented having changed nothing when the\n"
    "partitioner is not of the type sticky_setup gave or holds counts that are not ints (the method does it then).");

static PyObject *k_sticky_switch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t partition, appended;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "sticky_switch() takes exactly 5 arguments");
        return NULL;
    }
    if (!compact_int(args[1], &partition) || !compact_int(args[2], &appended))
        Py_RETURN_NOTIMPLEMENTED;
    int enable = PyObject_IsTrue(args[4]);
    if (enable < 0)
        return NULL;
    int rc = sticky_switch_core(args[0], partition, appended, args[3], enable);
    if (rc < 0)
        return NULL;
    if (rc > 0)
        Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(send_append_doc,
    "send_append(topics, accumulator, clock, headers, cluster, max_payload, ignore_keys, wakeup,\n"
    "            topic, partition, count, timestamp, key, value, callback) -> future | None | NotImplemented\n\n"
    "KafkaProducer.send's common case after its checks and the metadata lookup, compiled: the partition\n"
    "(``partition``, else murmur2 of a bytes key over ``count`` partitions unless ``ignore_keys``, else the\n"
    "topic's sticky partition), RecordAccumulator.try_append_fast under the partition queue's lock (with the\n"
    "sticky accounting and its partitioner's update_partition_info), and ``wakeup()`` when a batch is ready\n"
    "(``wakeup`` (holder, attribute, callable): the call is skipped while ``getattr(holder, attribute) is True``).\n"
    "``topics`` maps topic -> (queues: {partition: queue with .lock and .batches}, partitioner); ``timestamp``\n"
    "None takes the time from ``clock()``, or the system clock when ``clock`` is None. Returns the record's\n"
    "future; None or NotImplemented when nothing changed and the Python path must do it (None: no open batch\n"
    "with room; NotImplemented: input it does not handle: another key or value type, a record over\n"
    "``max_payload`` bytes of key and value, a compressed sticky batch, an unknown topic or partition).\n"
    "It never opens a batch (SendRecord does, through ``accumulator.open_batch``).");

/* The Sender's wake-up. ``wakeup``: a callable, or (holder, attribute, callable): the call is skipped while
 * ``getattr(holder, attribute) is True`` (a wake-up is already pending: Sender.wakeup would do nothing), which
 * spares a Python frame per record while a partition's deque holds more than one batch. 0, or -1 with an
 * exception. */
static int wake_sender(PyObject *wakeup)
{
    static slot_cache pending_cache;
    if (PyTuple_CheckExact(wakeup) && PyTuple_GET_SIZE(wakeup) >= 3 && PyUnicode_CheckExact(PyTuple_GET_ITEM(wakeup, 1))) {
        PyObject *pending = cached_get(PyTuple_GET_ITEM(wakeup, 0), PyTuple_GET_ITEM(wakeup, 1), &pending_cache);
        if (pending == NULL)
            return -1;
        Py_DECREF(pending);
        if (pending == Py_True)
            return 0;
        wakeup = PyTuple_GET_ITEM(wakeup, 2);
    }
    PyObject *r = PyObject_CallNoArgs(wakeup);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Whether the batch's compression_ratio is 1.0 (its size_bytes are what the sticky partitioner counts): 1, 0, or -1
 * with an exception. */
static inline __attribute__((always_inline)) int batch_is_plain(PyObject *batch)
{
    PyObject *ratio = cached_get(batch, sattr[S_RATIO], &scache[S_RATIO]);
    if (ratio == NULL)
        return -1;
    int plain = PyFloat_CheckExact(ratio) && PyFloat_AS_DOUBLE(ratio) == 1.0;
    Py_DECREF(ratio);
    return plain;
}

/* ``ms`` as an int object: the batch's last pending record's timestamp object when it is that value, else a new
 * int. New reference, NULL with an exception. */
static PyObject *last_record_timestamp(PyObject *batch, int64_t ms)
{
    PyObject *pending = cached_get(batch, attr[A_PENDING], &acache[A_PENDING]);
    if (pending == NULL)
        return NULL;
    PyObject *ts = NULL;
    Py_ssize_t n;
    if (is_pending(pending)) {
        PendingObject *p = (PendingObject *)pending;
        if (p->items == NULL) {
            if (p->count > 0 && p->last_ts == ms && p->last_ts_obj != NULL)
                ts = Py_NewRef(p->last_ts_obj);
        } else
            Py_SETREF(pending, Py_NewRef(p->items));
    }
    if (ts == NULL && PyList_CheckExact(pending) && (n = PyList_GET_SIZE(pending)) > 0) {
        PyObject *prev = PyList_GET_ITEM(pending, n - 1);
        int64_t prev_ms;
        if (PyTuple_CheckExact(prev) && PyTuple_GET_SIZE(prev) > 0 && compact_int(PyTuple_GET_ITEM(prev, 0), &prev_ms) &&
            prev_ms == ms)
            ts = Py_NewRef(PyTuple_GET_ITEM(prev, 0));
    }
    Py_DECREF(pending);
    return ts != NULL ? ts : PyLong_FromLongLong(ms);
}

/* What a SendRecord remembers of its last send, read again only when the send names another one (under the GIL;
 * strong references, so no remembered address is reused): the accumulator's entry of the topic and the queue of
 * the partition (neither is ever replaced or removed once made: RecordAccumulator's ``_topics``), with the
 * entry's partitioner, its switch_bytes and sticky_batch_size, and the queue's lock and deque (each set once, when
 * its holder is made), and the topic's partition count in the metadata index (an index is never changed once
 * built: an update replaces it whole), and until when the topic's metadata expiry is fresh (an expiry only grows, and is removed only once
 * the monotonic clock has passed it: ProducerMetadata.retain_topics; a refresh is due only after idle // 2 more
 * ms, at fresh_until, when it is read again). A str topic equal to the remembered one but another object is looked up (and then remembered). */
typedef struct {
    PyObject *topic, *info, *partitioner;        /* info = topics[topic], partitioner = info.partitioner */
    int64_t switch_bytes, sticky_size;           /* the partitioner's (once sizes_known) */
    int sizes_known;
    PyObject *q_info, *queue, *lock, *batches;   /* queue = q_info.queues[q_partition]: its .lock and .batches */
    int64_t q_partition;
    PyObject *index, *count_topic;               /* count = len(index.by_topic[count_topic]) */
    Py_ssize_t count;
    PyObject *expiries, *fresh_topic;            /* expiries[fresh_topic] - now > idle // 2 while now < fresh_until */
    int64_t fresh_until, fresh_idle;
} send_cache;

static void send_cache_clear(send_cache *c)
{
    Py_CLEAR(c->topic);
    Py_CLEAR(c->info);
    Py_CLEAR(c->partitioner);
    Py_CLEAR(c->q_info);
    Py_CLEAR(c->queue);
    Py_CLEAR(c->lock);
    Py_CLEAR(c->batches);
    Py_CLEAR(c->index);
    Py_CLEAR(c->count_topic);
    Py_CLEAR(c->expiries);
    Py_CLEAR(c->fresh_topic);
}

/* The partition's int object, made on first use (*slot, borrowed; NULL with an exception): most sends name the
 * partition only by number (the queue comes from the SendRecord's cache). */
static PyObject *partition_int(PyObject **slot, int64_t partition)
{
    if (*slot == NULL)
        *slot = PyLong_FromLongLong(partition);
    return *slot;
}

/* send_append's 15 arguments (its doc), but the partition count (args[10], unread) as a number: ``count``;
 * ``cache``: the calling SendRecord's, or NULL. ``may_open``: a new batch may be opened when no open batch has room
 * (SendRecord: never for a transactional producer, whose send adds a new batch's partition to the transaction
 * after the append); else None, nothing changed (send_append). */
static PyObject *send_append_core(PyObject *const *args, int64_t count, send_cache *cache, int may_open)
{
    PyObject *topics = args[0], *accumulator = args[1], *clock = args[2], *headers = args[3], *cluster = args[4],
             *max_payload_obj = args[5], *ignore_keys = args[6], *wakeup = args[7], *topic = args[8],
             *partition_obj = args[9], *ts_arg = args[11], *key = args[12], *value = args[13], *callback = args[14];
    Py_ssize_t kn, vn;
    if (!PyDict_CheckExact(topics) || producer_bytes(key, &kn) < 0 || producer_bytes(value, &vn) < 0 ||
        !PyLong_CheckExact(max_payload_obj))
        Py_RETURN_NOTIMPLEMENTED;
    int64_t max_payload;
    if (!compact_int(max_payload_obj, &max_payload))
        max_payload = PyLong_AsLongLong(max_payload_obj);
    if (max_payload == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if ((kn < 0 ? 0 : kn) + (vn < 0 ? 0 : vn) > max_payload || count <= 0)
        Py_RETURN_NOTIMPLEMENTED;
    /* the partition: requested, by key, or sticky (-1) */
    long long partition = -1;
    if (partition_obj != Py_None) {
        if (!PyLong_CheckExact(partition_obj))
            Py_RETURN_NOTIMPLEMENTED;
        partition = PyLong_AsLongLong(partition_obj);
        if (partition < 0 || partition >= count) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
    } else if (key != Py_None && ignore_keys != Py_True) {
        partition = (long long)(((uint32_t)murmur2_of((const uint8_t *)PyBytes_AS_STRING(key), kn) & 0x7FFFFFFFu) %
                                (uint64_t)count);
    }
    if (sattr_init() < 0)
        return NULL;
    PyObject *info, *partitioner; /* info borrowed (held by topics, and by the cache) */
    if (cache != NULL && cache->topic == topic) {
        info = cache->info;
        partitioner = Py_NewRef(cache->partitioner);
    } else {
        info = PyDict_GetItemWithError(topics, topic);
        if (info == NULL) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NOTIMPLEMENTED;
        }
        if ((partitioner = cached_get(info, sattr[S_PARTITIONER], &scache[S_PARTITIONER])) == NULL)
            return NULL;
        if (cache != NULL) {
            Py_INCREF(info);
            Py_XSETREF(cache->info, info);
            Py_INCREF(partitioner);
            Py_XSETREF(cache->partitioner, partitioner);
            cache->sizes_known = 0;
            Py_INCREF(topic);
            Py_XSETREF(cache->topic, topic);
        }
    }
    PyObject *result = NULL, *sticky = NULL, *queues = NULL, *q = NULL, *lock = NULL, *batches = NULL, *last = NULL,
             *future = NULL, *ts_obj = NULL, *effective_obj = NULL;
    int locked = 0, wake = 0, opened = 0;
    int64_t effective = partition;
    if (partition == -1) {
        if ((sticky = cached_get(partitioner, sattr[S_STICKY], &scache[S_STICKY])) == NULL)
            goto done;
        int rc;
        if (sticky == Py_None || (rc = get_int_attr(sticky, sattr[S_PARTITION], &scache[S_PARTITION], &effective)) > 0) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (rc < 0)
            goto done;
    }
    if (cache != NULL && cache->q_info == info && cache->q_partition == effective) {
        q = Py_NewRef(cache->queue);
        lock = Py_NewRef(cache->lock);
        batches = Py_NewRef(cache->batches);
    } else {
        if ((queues = cached_get(info, sattr[S_QUEUES], &scache[S_QUEUES])) == NULL)
            goto done;
        if (!PyDict_CheckExact(queues)) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (partition_int(&effective_obj, effective) == NULL)
            goto done;
        q = PyDict_GetItemWithError(queues, effective_obj);
        if (q == NULL) {
            if (!PyErr_Occurred())
                result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        Py_INCREF(q);
        if ((lock = cached_get(q, sattr[S_LOCK], &scache[S_LOCK])) == NULL ||
            (batches = cached_get(q, sattr[S_BATCHES], &scache[S_BATCHES])) == NULL)
            goto done;
        if (cache != NULL) {
            Py_INCREF(info);
            Py_XSETREF(cache->q_info, info);
            Py_INCREF(q);
            Py_XSETREF(cache->queue, q);
            Py_INCREF(lock);
            Py_XSETREF(cache->lock, lock);
            Py_INCREF(batches);
            Py_XSETREF(cache->batches, batches);
            cache->q_partition = effective;
        }
    }
    /* the timestamp, as send() takes it before the append; the system clock's as a number (clock_ms >= 0), its
     * int object made at the append (the last record's when it is the same millisecond: no int per record) */
    int64_t clock_ms = -1;
    if (ts_arg != Py_None) {
        ts_obj = Py_NewRef(ts_arg);
    } else if (clock == Py_None) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        clock_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    } else {
        ts_obj = PyObject_CallNoArgs(clock);
    }
    if (ts_obj == NULL && clock_ms < 0)
        goto done;
    if (queue_lock_acquire(lock) < 0)
        goto done;
    locked = 1;
    /* under the queue's lock, as RecordAccumulator.try_append_fast */
    Py_ssize_t nbatches = PyObject_Size(batches);
    if (nbatches < 0)
        goto done;
    int is_closed = take_truth(cached_get(accumulator, sattr[S_CLOSED], &scache[S_CLOSED]));
    if (is_closed < 0)
        goto done;
    if (is_closed) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (sticky != NULL) {
        PyObject *now_sticky = cached_get(partitioner, sattr[S_STICKY], &scache[S_STICKY]);
        if (now_sticky == NULL)
            goto done;
        Py_DECREF(now_sticky);
        if (now_sticky != sticky) { /* another thread switched the sticky partition */
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    int64_t produced = 0, switch_bytes = 0, sticky_size = 0;
    if (sticky != NULL) {
        int rc;
        int known = cache != NULL && cache->sizes_known;
        if (known) {
            switch_bytes = cache->switch_bytes;
            sticky_size = cache->sticky_size;
        }
        if ((rc = get_int_attr(sticky, sattr[S_PRODUCED], &scache[S_PRODUCED], &produced)) > 0 ||
            (!known && (rc = get_int_attr(partitioner, sattr[S_SWITCH], &scache[S_SWITCH], &switch_bytes)) > 0) ||
            (!known && (rc = get_int_attr(partitioner, sattr[S_STICKY_SIZE], &scache[S_STICKY_SIZE], &sticky_size)) > 0)) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (rc < 0)
            goto done;
        if (!known && cache != NULL) {
            cache->switch_bytes = switch_bytes;
            cache->sticky_size = sticky_size;
            cache->sizes_known = 1;
        }
    }
    if (nbatches > 0 && (last = PySequence_GetItem(batches, nbatches - 1)) == NULL)
        goto done;
    if (last != NULL && sticky != NULL) {
        /* the sticky accounting counts estimated bytes of a compressed batch: the Python path does that */
        int plain = batch_is_plain(last);
        if (plain <= 0) {
            result = plain < 0 ? NULL : Py_NewRef(Py_NotImplemented);
            goto done;
        }
    }
    int64_t before = 0, after = 0, limit = 0;
    static PyObject *zero = NULL;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        goto done;
    if (ts_obj == NULL && (ts_obj = last == NULL ? PyLong_FromLongLong(clock_ms) : last_record_timestamp(last, clock_ms)) == NULL)
        goto done;
    if (last != NULL) {
        future = batch_append_one(last, ts_obj, key, value, headers, callback, zero, &before, &after, &limit);
        if (future == NULL || future == Py_NotImplemented || (future == Py_None && !may_open)) {
            result = future;
            future = NULL;
            goto done;
        }
    } else if (!may_open) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (last == NULL || future == Py_None) {
        /* no open batch with room: RecordAccumulator.append's new batch, opened by its open_batch (still under the
         * queue's lock: one round), when the input is what batch_append_one takes (checked before any change) */
        Py_CLEAR(future);
        int64_t ts_check;
        int ts_overflow = 0;
        if (!PyLong_CheckExact(ts_obj) || headers_size(headers) < 0) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (!compact_int(ts_obj, &ts_check))
            ts_check = PyLong_AsLongLongAndOverflow(ts_obj, &ts_overflow);
        if (ts_overflow || ts_check < 0 || ts_check > ((int64_t)1 << 62)) {
            PyErr_Clear();
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        /* append() closes the full last batch before it looks for memory */
        if (last != NULL && cached_set(last, attr[A_CLOSED], &acache[A_CLOSED], Py_True) < 0)
            goto done;
        if (partition_int(&effective_obj, effective) == NULL)
            goto done;
        PyObject *fresh = PyObject_CallMethodObjArgs(accumulator, sattr[S_OPEN_BATCH], batches, topic, effective_obj, key,
                                                     value, headers, NULL);
        if (fresh == NULL)
            goto done;
        if (fresh == Py_None) { /* memory not free at once, or closed: append() waits (or raises) */
            result = fresh;
            goto done;
        }
        Py_XSETREF(last, fresh);
        opened = 1;
        PyObject *created = cached_get(last, attr[A_LAST_APPEND], &acache[A_LAST_APPEND]);
        if (created == NULL)
            goto done;
        future = batch_append_one(last, ts_obj, key, value, headers, callback, created, &before, &after, &limit);
        Py_DECREF(created);
        if (future == NULL || future == Py_None || future == Py_NotImplemented) {
            /* cannot happen (a first record always fits, the input was checked): the Python path takes the
             * record into the new, empty batch */
            result = future == Py_None ? Py_NewRef(Py_NotImplemented) : future;
            if (future == Py_None)
                Py_DECREF(future);
            future = NULL;
            goto done;
        }
        before = 0; /* append() counts a new batch's whole size to the sticky partition */
        if (sticky != NULL) {
            int plain = batch_is_plain(last);
            if (plain < 0)
                goto done;
            if (!plain && take_int(PyObject_CallMethodNoArgs(last, sattr[S_ESTIMATED]), &after) != 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "estimated_size_in_bytes() is not an int");
                goto done;
            }
        }
    }
    int last_full = after >= limit;
    if (sticky != NULL) {
        produced += after - before;
        if (set_counter(sticky, sattr[S_PRODUCED], &scache[S_PRODUCED], produced) < 0)
            goto done;
        if (produced >= switch_bytes || (last_full && produced >= sticky_size)) {
            int switched = sticky_switch_core(partitioner, effective, 0, cluster, last_full);
            if (switched < 0)
                goto done;
            if (switched > 0) { /* another partitioner: its own method */
                if (partition_int(&effective_obj, effective) == NULL)
                    goto done;
                PyObject *r = PyObject_CallMethodObjArgs(partitioner, sattr[S_UPDATE], effective_obj, zero, cluster,
                                                         last_full ? Py_True : Py_False, NULL);
                if (r == NULL)
                    goto done;
                Py_DECREF(r);
            }
        }
    }
    wake = opened || last_full || nbatches > 1;
    result = Py_NewRef(future);
done:
    if (locked)
        queue_lock_release_keeping_error(lock, &result);
    if (result != NULL && wake && wake_sender(wakeup) < 0)
        Py_CLEAR(result);
#ifdef GIL_HANDOFF
    /* a new batch: the I/O thread may take the GIL now (no lock held here); ``wakeup``'s 4th and 5th items */
    if (result != NULL && wake && opened && effective_obj != NULL && PyTuple_CheckExact(wakeup) && PyTuple_GET_SIZE(wakeup) == 5 &&
        handoff_at_boundary(PyTuple_GET_ITEM(wakeup, 3), PyTuple_GET_ITEM(wakeup, 4), topic, effective_obj) < 0)
        Py_CLEAR(result);
#endif
    Py_XDECREF(partitioner);
    Py_XDECREF(sticky);
    Py_XDECREF(queues);
    Py_XDECREF(q);
    Py_XDECREF(lock);
    Py_XDECREF(batches);
    Py_XDECREF(last);
    Py_XDECREF(future);
    Py_XDECREF(ts_obj);
    Py_XDECREF(effective_obj);
    return result;
}

static PyObject *k_send_append(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 15 || future_type == NULL || !PyLong_CheckExact(args[10]))
        Py_RETURN_NOTIMPLEMENTED;
    int64_t count;
    if (!compact_int(args[10], &count))
        count = PyLong_AsLongLong(args[10]);
    if (count == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    return send_append_core(args, count, NULL, 0);
}
