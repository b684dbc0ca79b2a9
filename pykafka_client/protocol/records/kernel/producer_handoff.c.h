/* kernel/producer_handoff.c.h
 *
 * GilHandoff: the I/O thread's Selector wait with its state published, and send()'s hand-off of the GIL
 * to the I/O thread at a batch boundary (Linux only: GIL_HANDOFF is defined here when it exists).
 * Uses: none of the other parts.
 */

/* ---- producer: handing the GIL to the I/O thread (GilHandoff: the Selector's wait, send()'s batch boundary) ---- */

/* The I/O thread (the Sender's) and the application thread that calls send() share the GIL. When the I/O thread's
 * wait in the Selector returns (a response, or send()'s wake-up), it asks for the GIL; the interpreter makes the
 * thread that holds it drop it only after the switch interval (5 ms), and all that time the broker idles. A
 * GilHandoff is the I/O thread's wait (epoll with the GIL released) with its state published: WANTS from the
 * wait's return until the thread holds the GIL again. send()'s path reads that state at a batch boundary (one
 * atomic load) and, when the rule says so (the request the I/O thread would build is already as large as it can
 * be, or the broker has nothing in flight), releases the GIL and waits (bounded) until the I/O thread enters its
 * next wait: the I/O thread's whole iteration runs then, not just its part before its first socket call (each
 * such call releases the GIL, and a send thread waiting for the GIL would take it back there). Linux only (epoll
 * and futex); elsewhere the type does not exist and the Selector keeps the selectors module's wait. */
#if defined(__linux__) && defined(__GNUC__)
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#define GIL_HANDOFF 1

enum { HO_RUNNING = 0, HO_WAITING = 1, HO_WANTS = 2 };

typedef struct {
    PyObject_HEAD
    int state;            /* HO_*: the I/O thread's (atomic) */
    uint32_t generation;  /* +1 each time the I/O thread enters a blocking wait (atomic; the futex word) */
    int waiters;          /* threads waiting in handoff_yield (atomic) */
    int idle;             /* the broker had nothing in flight when the wait returned (atomic) */
    long long max_wait_us; /* the longest handoff_yield waits for the I/O thread's iteration */
    long long yields;     /* handoffs made (under the GIL) */
} HandoffObject;

static PyTypeObject HandoffType;

static inline int64_t ho_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

PyDoc_STRVAR(handoff_select_doc,
    "select(epoll_fd, fd_to_key, timeout_ms, wakeup_fd, in_flight) -> [(key, events)]\n\n"
    "selectors.EpollSelector.select over its epoll descriptor and its fd -> SelectorKey map (the same result),\n"
    "waiting up to ``timeout_ms`` (0: a look that keeps the GIL). A blocking wait publishes the I/O thread's state\n"
    "(waiting, then wanting the GIL from its return until it holds the GIL) and whether the broker is idle: the\n"
    "``in_flight`` requests sent and not answered are no more than the connections that became readable (the\n"
    "descriptor ``wakeup_fd`` aside).");

static PyObject *handoff_select(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    HandoffObject *h = (HandoffObject *)op;
    if (nargs != 5 || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "select(epoll_fd, fd_to_key: dict, timeout_ms, wakeup_fd, in_flight)");
        return NULL;
    }
    PyObject *fd_to_key = args[1];
    long epfd = PyLong_AsLong(args[0]), wake_fd = PyLong_AsLong(args[3]);
    long long timeout_ms = PyLong_AsLongLong(args[2]), in_flight = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t size = PyDict_GET_SIZE(fd_to_key);
    int maxevents = size < 1 ? 1 : size > 4096 ? 4096 : (int)size;
    struct epoll_event stack[64];
    struct epoll_event *ev = maxevents <= 64 ? stack : PyMem_Malloc(sizeof(struct epoll_event) * (size_t)maxevents);
    if (ev == NULL)
        return PyErr_NoMemory();
    int n, err = 0;
    if (timeout_ms <= 0) {
        do {
            n = epoll_wait((int)epfd, ev, maxevents, 0); /* a look: nothing to wait for, the GIL kept */
        } while (n < 0 && errno == EINTR);
        err = errno;
    } else {
        int64_t deadline = ho_now_ns() + (timeout_ms > INT_MAX ? INT_MAX : timeout_ms) * 1000000;
        for (;;) {
            int wait_ms = timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
            Py_BEGIN_ALLOW_THREADS
            __atomic_store_n(&h->state, HO_WAITING, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&h->generation, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&h->waiters, __ATOMIC_SEQ_CST) > 0)
                syscall(SYS_futex, &h->generation, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
            n = epoll_wait((int)epfd, ev, maxevents, wait_ms);
            err = errno;
            long long readable = 0;
            for (int i = 0; i < n; i++) {
                if (ev[i].data.fd != (int)wake_fd && (ev[i].events & ~(uint32_t)EPOLLOUT))
                    readable++;
            }
            __atomic_store_n(&h->idle, in_flight <= readable, __ATOMIC_SEQ_CST);
            __atomic_store_n(&h->state, HO_WANTS, __ATOMIC_SEQ_CST);
            Py_END_ALLOW_THREADS
            __atomic_store_n(&h->state, HO_RUNNING, __ATOMIC_SEQ_CST);
            if (n >= 0 || err != EINTR)
                break;
            if (PyErr_CheckSignals() < 0)
                goto fail;
            timeout_ms = (deadline - ho_now_ns()) / 1000000;
            if (timeout_ms <= 0) {
                n = 0;
                break;
            }
        }
    }
    if (n < 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL)
        goto fail;
    for (int i = 0; i < n; i++) {
        PyObject *fd = PyLong_FromLong(ev[i].data.fd);
        if (fd == NULL)
            goto fail_out;
        PyObject *key = PyDict_GetItemWithError(fd_to_key, fd); /* borrowed */
        Py_DECREF(fd);
        if (key == NULL) {
            if (PyErr_Occurred())
                goto fail_out;
            continue; /* unregistered meanwhile */
        }
        /* as EpollSelector.select: anything but EPOLLIN counts as writable, anything but EPOLLOUT as readable */
        long mask = ((ev[i].events & ~(uint32_t)EPOLLIN) ? 2 : 0) | ((ev[i].events & ~(uint32_t)EPOLLOUT) ? 1 : 0);
        PyObject *events = PyTuple_Check(key) && PyTuple_GET_SIZE(key) >= 3 ? PyTuple_GET_ITEM(key, 2) : NULL;
        long have = events != NULL ? PyLong_AsLong(events) : -1;
        if (have == -1 && PyErr_Occurred())
            goto fail_out;
        PyObject *pair = Py_BuildValue("(Ol)", key, mask & have);
        if (pair == NULL || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            goto fail_out;
        }
        Py_DECREF(pair);
    }
    if (ev != stack)
        PyMem_Free(ev);
    return out;
fail_out:
    Py_DECREF(out);
fail:
    if (ev != stack)
        PyMem_Free(ev);
    return NULL;
}

/* Release the GIL until the I/O thread enters its next blocking wait (or max_wait_us passed), then take it again.
 * Called with the GIL held while the I/O thread waits for it (HO_WANTS): it cannot enter a wait before it ran. */
static void handoff_yield(HandoffObject *h)
{
    uint32_t gen0 = __atomic_load_n(&h->generation, __ATOMIC_SEQ_CST);
    long long max_wait_us = h->max_wait_us;
    h->yields++;
    Py_BEGIN_ALLOW_THREADS
    __atomic_add_fetch(&h->waiters, 1, __ATOMIC_SEQ_CST);
    int64_t deadline = ho_now_ns() + max_wait_us * 1000;
    while (__atomic_load_n(&h->generation, __ATOMIC_SEQ_CST) == gen0) {
        int64_t left = deadline - ho_now_ns();
        if (left <= 0)
            break;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        syscall(SYS_futex, &h->generation, FUTEX_WAIT_PRIVATE, gen0, &ts, NULL, 0);
    }
    __atomic_sub_fetch(&h->waiters, 1, __ATOMIC_SEQ_CST);
    Py_END_ALLOW_THREADS
}

/* The rule, at a batch boundary of send()'s path (a new batch opened): hand the GIL over only when the I/O thread
 * waits for it and the broker has nothing in flight or the request it would build cannot grow
 * (``request_full(topic, partition)``: a Python check, called only then). ``handoff``: a GilHandoff, else never.
 * 1 when it holds, 0 when not, -1 with an exception. */
static int handoff_rule(PyObject *handoff, PyObject *request_full, PyObject *topic, PyObject *partition)
{
    if (!Py_IS_TYPE(handoff, &HandoffType))
        return 0;
    HandoffObject *h = (HandoffObject *)handoff;
    if (__atomic_load_n(&h->state, __ATOMIC_SEQ_CST) != HO_WANTS)
        return 0;
    if (__atomic_load_n(&h->idle, __ATOMIC_SEQ_CST))
        return 1;
    PyObject *r = PyObject_CallFunctionObjArgs(request_full, topic, partition, NULL);
    if (r == NULL)
        return -1;
    int full = r == Py_True;
    Py_DECREF(r);
    return full;
}

/* The rule, and the hand-off when it holds: 1 when it handed over, 0 when not, -1 with an exception. */
static int handoff_at_boundary(PyObject *handoff, PyObject *request_full, PyObject *topic, PyObject *partition)
{
    int r = handoff_rule(handoff, request_full, topic, partition);
    if (r > 0)
        handoff_yield((HandoffObject *)handoff);
    return r;
}

PyDoc_STRVAR(handoff_decide_doc,
    "decide(request_full, topic, partition) -> bool\n\n"
    "The rule send()'s path applies at a batch boundary, without the hand-off itself: True when the I/O thread\n"
    "waits for the GIL and either the broker had nothing in flight when its wait returned or\n"
    "``request_full(topic, partition)`` is True (called only when the broker is busy).");

static PyObject *handoff_decide(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decide(request_full, topic, partition)");
        return NULL;
    }
    int r = handoff_rule(op, args[0], args[1], args[2]);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

PyDoc_STRVAR(handoff_offer_doc,
    "offer(request_full, topic, partition) -> bool\n\n"
    "At a batch boundary of a caller other than send()'s kernel path (send_batch's new batch): :meth:`decide`'s\n"
    "rule, and when it holds, the hand-off itself (the GIL released until the I/O thread's next wait, or\n"
    "max_wait_us). Returns whether it handed over.");

static PyObject *handoff_offer(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "offer(request_full, topic, partition)");
        return NULL;
    }
    int r = handoff_at_boundary(op, args[0], args[1], args[2]);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

PyDoc_STRVAR(handoff_wake_doc,
    "wake(sock) -> None\n\n"
    "Selector.wakeup's write of one byte to its wake-up socket (non-blocking), keeping the GIL: a thread that wakes\n"
    "the I/O thread does not hand it the GIL at that point (only the rule does, at a batch boundary). A full socket\n"
    "(a wake-up already pending) or a closed one is ignored, as Selector.wakeup does.");

static PyObject *handoff_wake(PyObject *op, PyObject *arg)
{
    /* the descriptor read here, under the GIL through to the write: a socket closed meanwhile has none (-1) */
    int fd = PyObject_AsFileDescriptor(arg);
    if (fd < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    static const char one = 1;
    ssize_t n;
    do {
        n = send(fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(handoff_set_state_doc,
    "_set_state(state, idle): sets the published I/O thread state (0 running, 1 waiting, 2 wanting the GIL) and\n"
    "the broker's idleness, as the wait does (for tests of the rule).");

static PyObject *handoff_set_state(PyObject *op, PyObject *args)
{
    HandoffObject *h = (HandoffObject *)op;
    int state, idle;
    if (!PyArg_ParseTuple(args, "ip", &state, &idle))
        return NULL;
    if (state < HO_RUNNING || state > HO_WANTS) {
        PyErr_SetString(PyExc_ValueError, "state is 0, 1 or 2");
        return NULL;
    }
    __atomic_store_n(&h->idle, idle, __ATOMIC_SEQ_CST);
    __atomic_store_n(&h->state, state, __ATOMIC_SEQ_CST);
    Py_RETURN_NONE;
}

static PyObject *handoff_get_state(PyObject *op, void *closure)
{
    return PyLong_FromLong(__atomic_load_n(&((HandoffObject *)op)->state, __ATOMIC_SEQ_CST));
}

static PyObject *handoff_get_idle(PyObject *op, void *closure)
{
    return PyBool_FromLong(__atomic_load_n(&((HandoffObject *)op)->idle, __ATOMIC_SEQ_CST));
}

static PyObject *handoff_get_generation(PyObject *op, void *closure)
{
    return PyLong_FromUnsignedLong(__atomic_load_n(&((HandoffObject *)op)->generation, __ATOMIC_SEQ_CST));
}

static PyObject *handoff_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"max_wait_us", NULL};
    long long max_wait_us = 1000;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|L", kwlist, &max_wait_us))
        return NULL;
    if (max_wait_us < 0) {
        PyErr_SetString(PyExc_ValueError, "max_wait_us must be >= 0");
        return NULL;
    }
    HandoffObject *h = (HandoffObject *)type->tp_alloc(type, 0);
    if (h != NULL)
        h->max_wait_us = max_wait_us;
    return (PyObject *)h;
}

static PyMethodDef handoff_methods[] = {
    {"select", (PyCFunction)(void (*)(void))handoff_select, METH_FASTCALL, handoff_select_doc},
    {"decide", (PyCFunction)(void (*)(void))handoff_decide, METH_FASTCALL, handoff_decide_doc},
    {"offer", (PyCFunction)(void (*)(void))handoff_offer, METH_FASTCALL, handoff_offer_doc},
    {"wake", handoff_wake, METH_O, handoff_wake_doc},
    {"_set_state", handoff_set_state, METH_VARARGS, handoff_set_state_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef handoff_members[] = {
    {"yields", T_LONGLONG, offsetof(HandoffObject, yields), READONLY, "hand-offs made at send()'s batch boundaries"},
    {"max_wait_us", T_LONGLONG, offsetof(HandoffObject, max_wait_us), READONLY, "the longest wait of a hand-off"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef handoff_getset[] = {
    {"state", handoff_get_state, NULL, "the I/O thread's: 0 running, 1 waiting, 2 wanting the GIL", NULL},
    {"idle", handoff_get_idle, NULL, "the broker had nothing in flight when the last wait returned", NULL},
    {"generation", handoff_get_generation, NULL, "blocking waits entered", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HandoffType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pykafka_client.protocol.records._kernel.GilHandoff",
    .tp_basicsize = sizeof(HandoffObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GilHandoff(max_wait_us=1000): the producer I/O thread's wait, and send()'s hand-off of the GIL to it.",
    .tp_new = handoff_new,
    .tp_methods = handoff_methods,
    .tp_members = handoff_members,
    .tp_getset = handoff_getset,
};
#endif
