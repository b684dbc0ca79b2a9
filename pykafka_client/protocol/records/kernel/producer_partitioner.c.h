/* kernel/producer_partitioner.c.h
 *
 * The default partitioner's hash: murmur2 (partitioner.murmur2) and key_partitions
 * (batch_append.key_partitions_reference).
 * Uses: none of the other parts.
 */

/* ---- producer: the default partitioner's murmur2 (partitioner.murmur2, batch_append.key_partitions_reference) ---- */

static int32_t murmur2_of(const uint8_t *d, Py_ssize_t len)
{
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    Py_ssize_t end = len & ~(Py_ssize_t)3;
    for (Py_ssize_t i = 0; i < end; i += 4) {
        uint32_t k = (uint32_t)d[i] | ((uint32_t)d[i + 1] << 8) | ((uint32_t)d[i + 2] << 16) | ((uint32_t)d[i + 3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (len & 3) {
    case 3:
        h ^= (uint32_t)d[end + 2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)d[end + 1] << 8;
        /* fall through */
    case 1:
        h ^= d[end];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

PyDoc_STRVAR(murmur2_doc, "murmur2(data) -> int: partitioner.murmur2 compiled (bytes only; None otherwise).");

static PyObject *k_murmur2(PyObject *self, PyObject *arg)
{
    if (!PyBytes_Check(arg))
        Py_RETURN_NONE;
    return PyLong_FromLong(murmur2_of((const uint8_t *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)));
}

PyDoc_STRVAR(key_partitions_doc,
    "key_partitions(keys, num_partitions) -> list[int] | None\n\n"
    "producer.batch_append.key_partitions_reference compiled: to_positive(murmur2(key)) % num_partitions per key,\n"
    "-1 for a None key; None when a key is not bytes or None.");

static PyObject *k_key_partitions(PyObject *self, PyObject *args)
{
    PyObject *keys;
    Py_ssize_t parts;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &keys, &parts))
        return NULL;
    if (parts < 1) {
        PyErr_SetString(PyExc_ValueError, "key_partitions: num_partitions must be at least 1");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(keys);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        if (k != Py_None && !PyBytes_CheckExact(k))
            Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        long p = k == Py_None ? -1
                              : (long)(((uint32_t)murmur2_of((const uint8_t *)PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k)) &
                                        0x7fffffffu) % (uint32_t)parts);
        PyObject *v = PyLong_FromLong(p);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}
