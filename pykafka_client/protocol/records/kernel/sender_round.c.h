/* sender_round.c.h: the Sender's steady-state round over the RecordAccumulator's per-partition queues,
 * compiled: ``accumulator_ready`` (per partition: the first batch's readiness by fullness, linger, retry backoff,
 * mute, and its leader; the adaptive partitioner's queue statistics), ``accumulator_drain`` (per node, its
 * partitions in rotation from the node's drain index, up to max.request.size with the first batch always taken,
 * the idempotence step per batch) and ``accumulator_expired`` (the queued batches past delivery.timeout.ms).
 *
 * The reference is record_accumulator.py (RecordAccumulator.ready_reference, drain_reference and
 * expired_batches_reference); tests/unit/producer/test_accumulator_round_native.py drives both with the same
 * random operations. Also the Sender's bookkeeping of the drained batches (``sender_track_in_flight``: its
 * in-flight batches per partition, the muting under max.in.flight=1, the next in-flight expiry; the reference is
 * Sender.track_in_flight_reference). Each queue is read and changed under its lock (queue_lock_acquire, as the send path takes
 * it); nothing here runs a Python callback under a queue's lock except what the reference calls there too
 * (a retried batch's leader epoch update and backoff, the transaction manager's prepare_for_drain, an estimated
 * size of a compressed batch, a batch's close_for_appends). The metadata lookups are MetadataSnapshot's (its
 * leaders, seen_epochs and by_node), read as its leader_and_epoch and partitions_for_node read them; the
 * Python side calls these only with a MetadataSnapshot. */

enum { R_QUEUE_ITEMS, R_PARTITIONER, R_LOCK, R_BATCHES, R_CREATED, R_LAST_ATTEMPT, R_ATTEMPTS, R_CURRENT_EPOCH,
       R_WHEN_CHANGED, R_CLOSED, R_SIZE, R_LIMIT, R_ID, R_LOAD_STATS, R_UPDATE_LOAD, R_AVAILABLE, R_MAYBE_UPDATE,
       R_IS_COMPRESSED, R_ESTIMATED, R_POPLEFT, R_DRAINED, R_QUEUES, R_CLOSE_FOR_APPENDS, R_LEADERS, R_SEEN,
       R_BY_NODE, R_TOPIC_PARTITION, R_COUNT };
static const char *const round_attr_names[R_COUNT] = {
    "queue_items", "partitioner", "lock", "batches", "created_ms", "last_attempt_ms", "attempts",
    "current_leader_epoch", "attempts_when_leader_last_changed", "closed", "size_bytes", "size_limit", "id",
    "load_stats", "update_partition_load_stats", "available_partitions_for_topic", "maybe_update_leader_epoch",
    "is_compressed", "estimated_size_in_bytes", "popleft", "drained_ms", "queues", "close_for_appends", "leaders",
    "seen_epochs", "by_node", "topic_partition",
};
static PyObject *rattr[R_COUNT];
static slot_cache rcache[R_COUNT];
static PyObject *round_empty_tuple = NULL;

/* the names interned and the lock type known (sattr_init: queue_lock_acquire's): 0, or -1 with an exception */
static int round_init(void)
{
    if (round_empty_tuple != NULL)
        return 0;
    for (int i = 0; i < R_COUNT; i++) {
        if (rattr[i] == NULL && (rattr[i] = PyUnicode_InternFromString(round_attr_names[i])) == NULL)
            return -1;
    }
    if (sattr_init() < 0)
        return -1;
    round_empty_tuple = PyTuple_New(0);
    return round_empty_tuple == NULL ? -1 : 0;
}

static inline PyObject *round_get(PyObject *obj, int a)
{
    return cached_get(obj, rattr[a], &rcache[a]);
}

static inline int round_set(PyObject *obj, int a, PyObject *v)
{
    return cached_set(obj, rattr[a], &rcache[a], v);
}

/* obj.attr[a] as a 64-bit int: 0, or -1 with an exception (TypeError when it is not a plain int that fits) */
static inline int round_int(PyObject *obj, int a, int64_t *out)
{
    int rc = get_int_attr(obj, rattr[a], &rcache[a], out);
    if (rc == 1) {
        PyErr_Format(PyExc_TypeError, "%s is not an int of 64 bits", round_attr_names[a]);
        return -1;
    }
    return rc;
}

/* A queue's lock and batches, the lock taken (as the send path takes it): 0 with both new references, or -1 with an
 * exception and neither */
static int queue_lock_batches(PyObject *q, PyObject **lock, PyObject **batches)
{
    *lock = round_get(q, R_LOCK);
    if (*lock == NULL)
        return -1;
    *batches = round_get(q, R_BATCHES);
    if (*batches == NULL || queue_lock_acquire(*lock) < 0) {
        Py_CLEAR(*lock);
        Py_CLEAR(*batches);
        return -1;
    }
    return 0;
}

/* an argument that must be an int of 64 bits: 0, or -1 with an exception */
static int round_arg_int(PyObject *v, int64_t *out)
{
    if (compact_int(v, out))
        return 0;
    int rc = take_int(Py_NewRef(v), out);
    if (rc == 1) {
        PyErr_SetString(PyExc_TypeError, "expected an int of 64 bits");
        return -1;
    }
    return rc;
}

/* MetadataSnapshot.leader_and_epoch(tp) over its ``leaders`` and ``seen_epochs``: *leader and *epoch (new
 * references, None when unknown); 0, or -1 with an exception */
static int round_leader_and_epoch(PyObject *leaders, PyObject *seen_epochs, PyObject *tp, PyObject **leader,
                                  PyObject **epoch)
{
    *leader = Py_NewRef(Py_None);
    *epoch = Py_NewRef(Py_None);
    PyObject *found = PyDict_GetItemWithError(leaders, tp); /* borrowed: the snapshot's dict is never changed */
    if (found == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(found) || PyTuple_GET_SIZE(found) != 2) {
        PyErr_SetString(PyExc_TypeError, "a snapshot's leader is not a (leader, epoch) pair");
        return -1;
    }
    PyObject *seen = PyDict_GetItemWithError(seen_epochs, tp);
    if (seen == NULL && PyErr_Occurred())
        return -1;
    if (seen != NULL && seen != Py_None && PyTuple_GET_ITEM(found, 1) != Py_None) {
        Py_INCREF(seen);
        int newer = PyObject_RichCompareBool(seen, PyTuple_GET_ITEM(found, 1), Py_GT);
        if (newer != 0) {
            if (newer > 0)
                Py_SETREF(*epoch, seen);
            else
                Py_DECREF(seen);
            return newer < 0 ? -1 : 0;
        }
        Py_DECREF(seen);
    }
    Py_SETREF(*leader, Py_NewRef(PyTuple_GET_ITEM(found, 0)));
    Py_SETREF(*epoch, Py_NewRef(PyTuple_GET_ITEM(found, 1)));
    return 0;
}

/* The first batch's leader epoch and backoff, as ready and drain read them (under the queue's lock): *leader_changed
 * (maybe_update_leader_epoch's answer: its call only for a retried batch; for a batch never attempted its effect,
 * inline: the epoch recorded when newer, False), and for a retried batch should_backoff(batch, waited,
 * leader_changed) -> (*backing_off, *retry_wait). 0, or -1 with an exception. */
static int round_epoch_and_backoff(PyObject *batch, PyObject *epoch, int64_t attempts, int64_t waited,
                                   PyObject *should_backoff, int *backing_off, int64_t *retry_wait)
{
    int leader_changed = 0;
    *backing_off = 0;
    *retry_wait = 0;
    if (attempts) {
        leader_changed = take_truth(PyObject_CallMethodOneArg(batch, rattr[R_MAYBE_UPDATE], epoch));
        if (leader_changed < 0)
            return -1;
    }
    else if (epoch != Py_None) {
        PyObject *current = round_get(batch, R_CURRENT_EPOCH);
        if (current == NULL)
            return -1;
        int newer = current == Py_None ? 1 : PyObject_RichCompareBool(current, epoch, Py_LT);
        Py_DECREF(current);
        if (newer < 0)
            return -1;
        if (newer) {
            PyObject *zero = PyLong_FromLong(0);
            if (zero == NULL)
                return -1;
            int rc = round_set(batch, R_WHEN_CHANGED, zero);
            Py_DECREF(zero);
            if (rc < 0 || round_set(batch, R_CURRENT_EPOCH, epoch) < 0)
                return -1;
        }
    }
    if (attempts > 0) {
        PyObject *w = PyLong_FromLongLong(waited);
        if (w == NULL)
            return -1;
        PyObject *args[3] = {batch, w, leader_changed ? Py_True : Py_False};
        PyObject *got = PyObject_Vectorcall(should_backoff, args, 3, NULL);
        Py_DECREF(w);
        if (got == NULL)
            return -1;
        int ok = PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 2;
        int truth = ok ? PyObject_IsTrue(PyTuple_GET_ITEM(got, 0)) : -1;
        int rc = truth < 0 ? -1 : round_arg_int(PyTuple_GET_ITEM(got, 1), retry_wait);
        Py_DECREF(got);
        if (!ok && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "should_backoff did not return a (bool, int) pair");
        if (truth < 0 || rc < 0)
            return -1;
        *backing_off = truth;
    }
    return 0;
}

/* created_ms and last_attempt_ms, the later */
static int round_since(PyObject *batch, int64_t *since)
{
    int64_t created, attempted;
    if (round_int(batch, R_CREATED, &created) < 0 || round_int(batch, R_LAST_ATTEMPT, &attempted) < 0)
        return -1;
    *since = created > attempted ? created : attempted;
    return 0;
}

/* What ready found of one queue, under its lock: n (its batches), and for n > 0 the first batch's waited time,
 * backoff and fullness. 0, or -1 with an exception (the lock released). */
static int ready_queue(PyObject *q, PyObject *epoch, int64_t now_ms, PyObject *should_backoff, Py_ssize_t *n,
                       int64_t *waited, int *backing_off, int64_t *retry_wait, int *full)
{
    PyObject *lock, *batches;
    if (queue_lock_batches(q, &lock, &batches) < 0)
        return -1;
    PyObject *batch = NULL;
    int rc = -1;
    *n = PyObject_Size(batches);
    if (*n < 0)
        goto done;
    if (*n == 0) {
        rc = 0;
        goto done;
    }
    batch = PySequence_GetItem(batches, 0);
    int64_t since, attempts, size, limit;
    if (batch == NULL || round_since(batch, &since) < 0 || round_int(batch, R_ATTEMPTS, &attempts) < 0)
        goto done;
    *waited = now_ms - since;
    if (round_epoch_and_backoff(batch, epoch, attempts, *waited, should_backoff, backing_off, retry_wait) < 0)
        goto done;
    if (*n > 1)
        *full = 1;
    else {
        int closed = take_truth(round_get(batch, R_CLOSED));
        if (closed < 0)
            goto done;
        if (closed)
            *full = 1;
        else {
            if (round_int(batch, R_SIZE, &size) < 0 || round_int(batch, R_LIMIT, &limit) < 0)
                goto done;
            *full = size >= limit;
        }
    }
    rc = 0;
done:
    Py_XDECREF(batch);
    if (queue_lock_release(lock) < 0)
        rc = -1;
    Py_DECREF(lock);
    Py_DECREF(batches);
    return rc;
}

/* The adaptive partitioner's statistics of one topic after ready looked at its queues (the reference's end of a
 * topic's round): 0, or -1 with an exception */
static int ready_load_stats(PyObject *info, PyObject *snapshot, PyObject *topic, PyObject *sizes, PyObject *ids,
                            int64_t smallest, int64_t largest)
{
    PyObject *partitioner = round_get(info, R_PARTITIONER);
    if (partitioner == NULL)
        return -1;
    int rc = -1;
    PyObject *got = NULL;
    if (smallest == largest) {
        PyObject *stats = round_get(partitioner, R_LOAD_STATS);
        if (stats == NULL)
            goto done;
        int none = stats == Py_None;
        Py_DECREF(stats);
        if (!none) {
            PyObject *zero = PyLong_FromLong(0);
            if (zero == NULL)
                goto done;
            PyObject *args[4] = {partitioner, round_empty_tuple, round_empty_tuple, zero};
            got = PyObject_VectorcallMethod(rattr[R_UPDATE_LOAD], args, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            Py_DECREF(zero);
            if (got == NULL)
                goto done;
        }
        rc = 0;
        goto done;
    }
    PyObject *available = PyObject_CallMethodOneArg(snapshot, rattr[R_AVAILABLE], topic);
    if (available == NULL)
        goto done;
    Py_ssize_t count = PyObject_Size(available);
    Py_DECREF(available);
    if (count < 0)
        goto done;
    PyObject *max = PyLong_FromLongLong(count == PyList_GET_SIZE(sizes) ? largest : 0);
    if (max == NULL)
        goto done;
    PyObject *args[4] = {partitioner, sizes, ids, max};
    if (count != PyList_GET_SIZE(sizes))
        args[1] = args[2] = round_empty_tuple;
    got = PyObject_VectorcallMethod(rattr[R_UPDATE_LOAD], args, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(max);
    rc = got == NULL ? -1 : 0;
done:
    Py_XDECREF(got);
    Py_DECREF(partitioner);
    return rc;
}

PyDoc_STRVAR(accumulator_ready_doc,
"accumulator_ready(topic_items, snapshot, muted, node_sets, linger_ms, adaptive, now_ms, others, should_backoff)\n"
"-> (ready_nodes, next_ready_check_delay_ms, unknown_leader_topics)\n\n"
"RecordAccumulator.ready_reference compiled, over the accumulator's topic items ((topic, info) with each info's\n"
"queue_items), a MetadataSnapshot, the muted partitions, the per-node one-node sets (node id -> (Node,\n"
"frozenset((Node,))), filled as the reference fills them), linger.ms, adaptive partitioning, the time;\n"
"``others()`` says whether a batch neither full nor lingered is sendable (asked at most once), and\n"
"``should_backoff(batch, waited, leader_changed)`` is asked for a retried batch.");

static PyObject *k_accumulator_ready(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "accumulator_ready expects 9 arguments");
        return NULL;
    }
    PyObject *topic_items = args[0], *snapshot = args[1], *muted = args[2], *node_sets = args[3];
    PyObject *others_fn = args[7], *should_backoff = args[8];
    int64_t linger_ms, now_ms;
    if (round_init() < 0 || round_arg_int(args[4], &linger_ms) < 0 || round_arg_int(args[6], &now_ms) < 0)
        return NULL;
    int adaptive = PyObject_IsTrue(args[5]);
    if (adaptive < 0)
        return NULL;
    if (!PyTuple_Check(topic_items) || !PyDict_Check(node_sets) || !PyAnySet_Check(muted)) {
        PyErr_SetString(PyExc_TypeError, "accumulator_ready: topic items, node sets or muted of the wrong type");
        return NULL;
    }
    PyObject *leaders = round_get(snapshot, R_LEADERS);
    PyObject *seen = leaders == NULL ? NULL : round_get(snapshot, R_SEEN);
    PyObject *ready_nodes = PySet_New(NULL), *ready_ids = PySet_New(NULL), *unknown = PySet_New(NULL);
    PyObject *sizes = NULL, *ids = NULL, *leader = NULL, *epoch = NULL, *result = NULL;
    if (seen == NULL || ready_nodes == NULL || ready_ids == NULL || unknown == NULL)
        goto done;
    if (!PyDict_Check(leaders) || !PyDict_Check(seen)) {
        PyErr_SetString(PyExc_TypeError, "accumulator_ready: the snapshot's leaders or seen epochs are not dicts");
        goto done;
    }
    int64_t next_delay = INT64_MAX;
    int others = -1; /* not asked yet */
    for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(topic_items); t++) {
        PyObject *item = PyTuple_GET_ITEM(topic_items, t);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "accumulator_ready: a topic item is not a pair");
            goto done;
        }
        PyObject *topic = PyTuple_GET_ITEM(item, 0), *info = PyTuple_GET_ITEM(item, 1);
        PyObject *queue_items = round_get(info, R_QUEUE_ITEMS);
        if (queue_items == NULL)
            goto done;
        if (!PyTuple_Check(queue_items)) {
            Py_DECREF(queue_items);
            PyErr_SetString(PyExc_TypeError, "accumulator_ready: queue items are not a tuple");
            goto done;
        }
        if (adaptive && ((sizes = PyList_New(0)) == NULL || (ids = PyList_New(0)) == NULL)) {
            Py_DECREF(queue_items);
            goto done;
        }
        int64_t largest = 0, smallest = INT64_MAX;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(queue_items); k++) {
            PyObject *qitem = PyTuple_GET_ITEM(queue_items, k);
            if (!PyTuple_Check(qitem) || PyTuple_GET_SIZE(qitem) != 2) {
                PyErr_SetString(PyExc_TypeError, "accumulator_ready: a queue item is not a pair");
                goto topic_fail;
            }
            PyObject *partition = PyTuple_GET_ITEM(qitem, 0), *q = PyTuple_GET_ITEM(qitem, 1);
            PyObject *tp = PyTuple_Pack(2, topic, partition);
            if (tp == NULL)
                goto topic_fail;
            Py_CLEAR(leader);
            Py_CLEAR(epoch);
            if (round_leader_and_epoch(leaders, seen, tp, &leader, &epoch) < 0) {
                Py_DECREF(tp);
                goto topic_fail;
            }
            Py_ssize_t n = 0;
            int64_t waited = 0, retry_wait = 0;
            int backing_off = 0, full = 0;
            if (ready_queue(q, epoch, now_ms, should_backoff, &n, &waited, &backing_off, &retry_wait, &full) < 0) {
                Py_DECREF(tp);
                goto topic_fail;
            }
            if (leader != Py_None && adaptive) {
                PyObject *size_obj = PyLong_FromSsize_t(n);
                int rc = size_obj == NULL ? -1 : PyList_Append(sizes, size_obj);
                Py_XDECREF(size_obj);
                if (rc < 0 || PyList_Append(ids, partition) < 0) {
                    Py_DECREF(tp);
                    goto topic_fail;
                }
                if (n > largest)
                    largest = n;
                if (n < smallest)
                    smallest = n;
            }
            if (n == 0) {
                Py_DECREF(tp);
                continue;
            }
            if (leader == Py_None) {
                Py_DECREF(tp);
                if (PySet_Add(unknown, topic) < 0)
                    goto topic_fail;
                continue;
            }
            PyObject *leader_id = round_get(leader, R_ID);
            if (leader_id == NULL) {
                Py_DECREF(tp);
                goto topic_fail;
            }
            int skip = PySet_Contains(ready_ids, leader_id);
            if (skip == 0 && PySet_GET_SIZE(muted) > 0)
                skip = PySet_Contains(muted, tp);
            Py_DECREF(tp);
            if (skip != 0) {
                Py_DECREF(leader_id);
                if (skip < 0)
                    goto topic_fail;
                continue;
            }
            int64_t time_to_wait = backing_off ? retry_wait : linger_ms;
            int sendable = full || waited >= time_to_wait;
            if (!sendable) {
                if (others < 0 && (others = take_truth(PyObject_CallNoArgs(others_fn))) < 0) {
                    Py_DECREF(leader_id);
                    goto topic_fail;
                }
                sendable = others;
            }
            if (sendable && !backing_off) {
                /* the one-node set kept per node: a set's merge reuses its stored hash (no Node __hash__ call) */
                PyObject *one = PyDict_GetItemWithError(node_sets, leader_id);
                if (one == NULL && PyErr_Occurred()) {
                    Py_DECREF(leader_id);
                    goto topic_fail;
                }
                if (one == NULL || !PyTuple_Check(one) || PyTuple_GET_SIZE(one) != 2 || PyTuple_GET_ITEM(one, 0) != leader) {
                    PyObject *alone = PyTuple_Pack(1, leader);
                    PyObject *frozen = alone == NULL ? NULL : PyFrozenSet_New(alone);
                    Py_XDECREF(alone);
                    PyObject *made = frozen == NULL ? NULL : PyTuple_Pack(2, leader, frozen);
                    Py_XDECREF(frozen);
                    int rc = made == NULL ? -1 : PyDict_SetItem(node_sets, leader_id, made);
                    Py_XDECREF(made);
                    if (rc < 0) {
                        Py_DECREF(leader_id);
                        goto topic_fail;
                    }
                    one = made; /* held by node_sets */
                }
                PyObject *merged = PyNumber_InPlaceOr(ready_nodes, PyTuple_GET_ITEM(one, 1));
                int rc = merged == NULL ? -1 : PySet_Add(ready_ids, leader_id);
                Py_XDECREF(merged);
                Py_DECREF(leader_id);
                if (rc < 0)
                    goto topic_fail;
            }
            else {
                Py_DECREF(leader_id);
                int64_t left = time_to_wait - waited;
                if (left < 0)
                    left = 0;
                if (left < next_delay)
                    next_delay = left;
            }
        }
        Py_DECREF(queue_items);
        if (adaptive && PyList_GET_SIZE(sizes) > 0 &&
            ready_load_stats(info, snapshot, topic, sizes, ids, smallest, largest) < 0)
            goto done;
        Py_CLEAR(sizes);
        Py_CLEAR(ids);
        continue;
    topic_fail:
        Py_DECREF(queue_items);
        goto done;
    }
    PyObject *delay = PyLong_FromLongLong(next_delay);
    if (delay != NULL)
        result = PyTuple_Pack(3, ready_nodes, delay, unknown);
    Py_XDECREF(delay);
done:
    Py_XDECREF(leaders);
    Py_XDECREF(seen);
    Py_XDECREF(ready_nodes);
    Py_XDECREF(ready_ids);
    Py_XDECREF(unknown);
    Py_XDECREF(sizes);
    Py_XDECREF(ids);
    Py_XDECREF(leader);
    Py_XDECREF(epoch);
    return result;
}

/* One partition of a node's drain, under its queue's lock: its first batch appended to ``ready`` unless it backs off
 * (*stop set where the reference's loop breaks: the request is full, or prepare_for_drain says wait).
 * 0, or -1 with an exception (the lock released). */
static int drain_queue(PyObject *q, PyObject *tp, PyObject *epoch, int64_t now_ms, PyObject *now_obj, int64_t max_size,
                       int64_t *size, PyObject *ready, PyObject *prepare, PyObject *should_backoff, int *stop)
{
    PyObject *lock, *batches;
    if (queue_lock_batches(q, &lock, &batches) < 0)
        return -1;
    PyObject *first = NULL, *taken = NULL;
    int rc = -1;
    Py_ssize_t n = PyObject_Size(batches);
    if (n < 0)
        goto done;
    if (n == 0) {
        rc = 0;
        goto done;
    }
    first = PySequence_GetItem(batches, 0);
    int64_t since, attempts, estimated, drained;
    if (first == NULL || round_int(first, R_ATTEMPTS, &attempts) < 0)
        goto done;
    int backing_off = 0;
    int64_t retry_wait = 0;
    if (attempts || epoch != Py_None) {
        /* (ready's same step: the epoch recorded when newer; for a retried batch its call, and the backoff) */
        if (round_since(first, &since) < 0 ||
            round_epoch_and_backoff(first, epoch, attempts, now_ms - since, should_backoff, &backing_off, &retry_wait) < 0)
            goto done;
    }
    if (backing_off) {
        rc = 0;
        goto done;
    }
    int compressed = take_truth(round_get(first, R_IS_COMPRESSED));
    if (compressed < 0)
        goto done;
    if (compressed ? take_int(PyObject_CallMethodNoArgs(first, rattr[R_ESTIMATED]), &estimated) != 0
                   : round_int(first, R_SIZE, &estimated) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "estimated_size_in_bytes is not an int of 64 bits");
        goto done;
    }
    if (*size + estimated > max_size && PyList_GET_SIZE(ready) > 0) {
        *stop = 1;
        rc = 0;
        goto done;
    }
    if (prepare != Py_None) {
        PyObject *pargs[2] = {first, tp};
        int ok = take_truth(PyObject_Vectorcall(prepare, pargs, 2, NULL));
        if (ok < 0)
            goto done;
        if (!ok) {
            *stop = 1;
            rc = 0;
            goto done;
        }
    }
    taken = PyObject_CallMethodNoArgs(batches, rattr[R_POPLEFT]);
    if (taken == NULL || round_set(taken, R_CLOSED, Py_True) < 0)
        goto done;
    *size += estimated;
    if (PyList_Append(ready, taken) < 0 || round_int(taken, R_DRAINED, &drained) < 0)
        goto done;
    if (drained < now_ms && round_set(taken, R_DRAINED, now_obj) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(first);
    Py_XDECREF(taken);
    if (queue_lock_release(lock) < 0)
        rc = -1;
    Py_DECREF(lock);
    Py_DECREF(batches);
    return rc;
}

PyDoc_STRVAR(accumulator_drain_doc,
"accumulator_drain(topics, snapshot, nodes, max_size, now_ms, drain_index, muted, prepare, should_backoff)\n"
"-> {node id: [batch]}\n\n"
"RecordAccumulator.drain_reference compiled, over the accumulator's topics (topic -> info with its queues), a\n"
"MetadataSnapshot, the nodes to drain, max.request.size, the time, the per-node drain index (read and moved as\n"
"the reference moves it), the muted partitions, the transaction manager's prepare_for_drain (None without one)\n"
"and ``should_backoff(batch, waited, leader_changed)`` for a retried batch.");

static PyObject *k_accumulator_drain(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "accumulator_drain expects 9 arguments");
        return NULL;
    }
    PyObject *topics = args[0], *snapshot = args[1], *nodes = args[2], *now_obj = args[4], *drain_index = args[5];
    PyObject *muted = args[6], *prepare = args[7], *should_backoff = args[8];
    int64_t max_size, now_ms;
    if (round_init() < 0 || round_arg_int(args[3], &max_size) < 0 || round_arg_int(now_obj, &now_ms) < 0)
        return NULL;
    if (!PyDict_Check(topics) || !PyDict_Check(drain_index) || !PyAnySet_Check(muted)) {
        PyErr_SetString(PyExc_TypeError, "accumulator_drain: topics, drain index or muted of the wrong type");
        return NULL;
    }
    PyObject *leaders = round_get(snapshot, R_LEADERS);
    PyObject *seen = leaders == NULL ? NULL : round_get(snapshot, R_SEEN);
    PyObject *by_node = seen == NULL ? NULL : round_get(snapshot, R_BY_NODE);
    PyObject *out = PyDict_New(), *iter = NULL, *node = NULL, *node_id = NULL, *ready = NULL, *parts = NULL;
    PyObject *result = NULL;
    if (by_node == NULL || out == NULL)
        goto done;
    if (!PyDict_Check(leaders) || !PyDict_Check(seen) || !PyDict_Check(by_node)) {
        PyErr_SetString(PyExc_TypeError, "accumulator_drain: the snapshot's lookups are not dicts");
        goto done;
    }
    if ((iter = PyObject_GetIter(nodes)) == NULL)
        goto done;
    while ((node = PyIter_Next(iter)) != NULL) {
        int64_t size = 0;
        if ((node_id = round_get(node, R_ID)) == NULL || (ready = PyList_New(0)) == NULL ||
            PyDict_SetItem(out, node_id, ready) < 0)
            goto done;
        parts = PyDict_GetItemWithError(by_node, node_id);
        if (parts == NULL && PyErr_Occurred())
            goto done;
        Py_XINCREF(parts);
        Py_ssize_t n = parts == NULL ? 0 : PyObject_Size(parts);
        if (n < 0)
            goto done;
        if (n > 0) {
            if (!PyList_Check(parts) && !PyTuple_Check(parts)) {
                PyErr_SetString(PyExc_TypeError, "accumulator_drain: a node's partitions are not a list");
                goto done;
            }
            PyObject *index = PyDict_GetItemWithError(drain_index, node_id);
            int64_t start = 0;
            if (index == NULL && PyErr_Occurred())
                goto done;
            if (index != NULL && round_arg_int(index, &start) < 0)
                goto done;
            start %= n;
            if (start < 0)
                start += n;
            int64_t i = start;
            for (;;) {
                if (i >= PySequence_Fast_GET_SIZE(parts))
                    break; /* (the list is the snapshot's, never changed) */
                PyObject *tp = PySequence_Fast_GET_ITEM(parts, i);
                i = (i + 1) % n;
                PyObject *next = PyLong_FromLongLong(i);
                int rc = next == NULL ? -1 : PyDict_SetItem(drain_index, node_id, next);
                Py_XDECREF(next);
                if (rc < 0)
                    goto done;
                if (!PyTuple_Check(tp) || PyTuple_GET_SIZE(tp) != 2) {
                    PyErr_SetString(PyExc_TypeError, "accumulator_drain: a partition is not a TopicPartition");
                    goto done;
                }
                Py_INCREF(tp);
                PyObject *q = NULL;
                PyObject *info = PyDict_GetItemWithError(topics, PyTuple_GET_ITEM(tp, 0));
                if (info != NULL) {
                    PyObject *queues = round_get(info, R_QUEUES);
                    if (queues == NULL) {
                        Py_DECREF(tp);
                        goto done;
                    }
                    q = PyDict_Check(queues) ? PyDict_GetItemWithError(queues, PyTuple_GET_ITEM(tp, 1)) : NULL;
                    Py_XINCREF(q);
                    Py_DECREF(queues);
                }
                if (PyErr_Occurred()) {
                    Py_DECREF(tp);
                    Py_XDECREF(q);
                    goto done;
                }
                int skip = q == NULL;
                if (!skip && PySet_GET_SIZE(muted) > 0)
                    skip = PySet_Contains(muted, tp);
                int stop = 0;
                if (skip == 0) {
                    PyObject *leader = NULL, *epoch = NULL;
                    rc = round_leader_and_epoch(leaders, seen, tp, &leader, &epoch);
                    if (rc == 0)
                        rc = drain_queue(q, tp, epoch, now_ms, now_obj, max_size, &size, ready, prepare,
                                         should_backoff, &stop);
                    Py_XDECREF(leader);
                    Py_XDECREF(epoch);
                    if (rc < 0)
                        skip = -1;
                }
                Py_DECREF(tp);
                Py_XDECREF(q);
                if (skip < 0)
                    goto done;
                if (stop || i == start)
                    break;
            }
        }
        Py_CLEAR(parts);
        Py_CLEAR(ready);
        Py_CLEAR(node_id);
        Py_CLEAR(node);
    }
    if (!PyErr_Occurred())
        result = Py_NewRef(out);
done:
    Py_XDECREF(leaders);
    Py_XDECREF(seen);
    Py_XDECREF(by_node);
    Py_XDECREF(out);
    Py_XDECREF(iter);
    Py_XDECREF(node);
    Py_XDECREF(node_id);
    Py_XDECREF(ready);
    Py_XDECREF(parts);
    return result;
}

PyDoc_STRVAR(accumulator_expired_doc,
"accumulator_expired(topic_items, delivery_timeout_ms, now_ms, next_expiry_ms) -> (expired, next_expiry_ms)\n\n"
"RecordAccumulator.expired_batches_reference's walk compiled: per queue (the topic items' queue_items), the\n"
"batches past the delivery timeout taken from its front (each closed for appends), and the earliest of\n"
"``next_expiry_ms`` and the first batch left's expiry.");

static PyObject *k_accumulator_expired(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "accumulator_expired expects 4 arguments");
        return NULL;
    }
    PyObject *topic_items = args[0];
    int64_t timeout, now_ms, next_expiry;
    if (round_init() < 0 || round_arg_int(args[1], &timeout) < 0 || round_arg_int(args[2], &now_ms) < 0 ||
        round_arg_int(args[3], &next_expiry) < 0)
        return NULL;
    if (!PyTuple_Check(topic_items)) {
        PyErr_SetString(PyExc_TypeError, "accumulator_expired: the topic items are not a tuple");
        return NULL;
    }
    PyObject *expired = PyList_New(0), *result = NULL;
    if (expired == NULL)
        return NULL;
    for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(topic_items); t++) {
        PyObject *item = PyTuple_GET_ITEM(topic_items, t);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "accumulator_expired: a topic item is not a pair");
            goto done;
        }
        PyObject *queue_items = round_get(PyTuple_GET_ITEM(item, 1), R_QUEUE_ITEMS);
        if (queue_items == NULL)
            goto done;
        if (!PyTuple_Check(queue_items)) {
            Py_DECREF(queue_items);
            PyErr_SetString(PyExc_TypeError, "accumulator_expired: queue items are not a tuple");
            goto done;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(queue_items); k++) {
            PyObject *qitem = PyTuple_GET_ITEM(queue_items, k);
            PyObject *q = PyTuple_Check(qitem) && PyTuple_GET_SIZE(qitem) == 2 ? PyTuple_GET_ITEM(qitem, 1) : NULL;
            PyObject *lock, *batches;
            if (q == NULL || queue_lock_batches(q, &lock, &batches) < 0) {
                if (q == NULL)
                    PyErr_SetString(PyExc_TypeError, "accumulator_expired: a queue item is not a pair");
                Py_DECREF(queue_items);
                goto done;
            }
            int rc = 0;
            for (;;) {
                Py_ssize_t n = PyObject_Size(batches);
                if (n <= 0) {
                    rc = (int)n; /* (-1: an exception) */
                    break;
                }
                PyObject *b = PySequence_GetItem(batches, 0);
                int64_t created;
                if (b == NULL || round_int(b, R_CREATED, &created) < 0) {
                    Py_XDECREF(b);
                    rc = -1;
                    break;
                }
                if (timeout <= now_ms - created) {
                    PyObject *taken = PyObject_CallMethodNoArgs(batches, rattr[R_POPLEFT]);
                    PyObject *closed = taken == NULL ? NULL : PyObject_CallMethodNoArgs(b, rattr[R_CLOSE_FOR_APPENDS]);
                    rc = closed == NULL ? -1 : PyList_Append(expired, b);
                    Py_XDECREF(taken);
                    Py_XDECREF(closed);
                    Py_DECREF(b);
                    if (rc < 0)
                        break;
                }
                else {
                    Py_DECREF(b);
                    if (created + timeout < next_expiry)
                        next_expiry = created + timeout;
                    break;
                }
            }
            if (queue_lock_release(lock) < 0)
                rc = -1;
            Py_DECREF(lock);
            Py_DECREF(batches);
            if (rc < 0) {
                Py_DECREF(queue_items);
                goto done;
            }
        }
        Py_DECREF(queue_items);
    }
    PyObject *next = PyLong_FromLongLong(next_expiry);
    if (next != NULL)
        result = PyTuple_Pack(2, expired, next);
    Py_XDECREF(next);
done:
    Py_DECREF(expired);
    return result;
}

PyDoc_STRVAR(sender_track_in_flight_doc,
"sender_track_in_flight(drained, in_flight, mute, delivery_timeout_ms, now_ms) -> next expiry | None\n\n"
"Sender.track_in_flight_reference compiled: each drained batch ({node id: [batch]}) appended to its partition's\n"
"list in ``in_flight`` (partition -> [batch]) and, with ``mute`` (the accumulator's mute_partition, or None),\n"
"its partition muted; then the earliest expiry of the in-flight batches, or None when some partition's list is\n"
"empty or its first batch is past the delivery timeout (the caller then takes the expired ones out).");

static PyObject *k_sender_track_in_flight(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "sender_track_in_flight expects 5 arguments");
        return NULL;
    }
    PyObject *drained = args[0], *in_flight = args[1], *mute = args[2];
    int64_t timeout, now_ms;
    if (round_init() < 0 || round_arg_int(args[3], &timeout) < 0 || round_arg_int(args[4], &now_ms) < 0)
        return NULL;
    if (!PyDict_Check(drained) || !PyDict_Check(in_flight)) {
        PyErr_SetString(PyExc_TypeError, "sender_track_in_flight: drained or in_flight is not a dict");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *batches;
    while (PyDict_Next(drained, &pos, &key, &batches)) {
        if (!PyList_Check(batches)) {
            PyErr_SetString(PyExc_TypeError, "sender_track_in_flight: a node's batches are not a list");
            return NULL;
        }
        Py_INCREF(batches);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(batches); i++) {
            PyObject *b = PyList_GET_ITEM(batches, i);
            Py_INCREF(b);
            PyObject *tp = round_get(b, R_TOPIC_PARTITION);
            int rc = -1;
            if (tp != NULL) {
                PyObject *lst = PyDict_GetItemWithError(in_flight, tp);
                if (lst != NULL)
                    rc = PyList_Check(lst) ? PyList_Append(lst, b) : -2;
                else if (!PyErr_Occurred()) {
                    PyObject *one = PyList_New(1);
                    if (one != NULL) {
                        PyList_SET_ITEM(one, 0, Py_NewRef(b));
                        rc = PyDict_SetItem(in_flight, tp, one);
                        Py_DECREF(one);
                    }
                }
                if (rc == -2) {
                    PyErr_SetString(PyExc_TypeError, "sender_track_in_flight: an in-flight entry is not a list");
                    rc = -1;
                }
                if (rc == 0 && mute != Py_None) {
                    PyObject *got = PyObject_CallOneArg(mute, tp);
                    rc = got == NULL ? -1 : 0;
                    Py_XDECREF(got);
                }
            }
            Py_XDECREF(tp);
            Py_DECREF(b);
            if (rc < 0) {
                Py_DECREF(batches);
                return NULL;
            }
        }
        Py_DECREF(batches);
    }
    int64_t next_expiry = INT64_MAX;
    pos = 0;
    PyObject *lst;
    while (PyDict_Next(in_flight, &pos, &key, &lst)) {
        if (!PyList_Check(lst) || PyList_GET_SIZE(lst) == 0)
            Py_RETURN_NONE;
        int64_t created;
        if (round_int(PyList_GET_ITEM(lst, 0), R_CREATED, &created) < 0)
            return NULL;
        if (created + timeout <= now_ms)
            Py_RETURN_NONE;
        if (created + timeout < next_expiry)
            next_expiry = created + timeout;
    }
    return PyLong_FromLongLong(next_expiry);
}
