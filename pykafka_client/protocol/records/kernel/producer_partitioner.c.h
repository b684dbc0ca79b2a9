/* kernel/producer_partitioner.c.h
 *
 * The default partitioner's hash: murmur2 (partitioner.murmur2) and key_partitions
 * (batch_append.key_partitions_reference).
 * Uses: producer_binary_column.c.h (kv_source: the keys a list or a BinaryColumn).
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
    "-1 for a None key (keys a list or a BinaryColumn); None when a key is not bytes or None.");

static PyObject *k_key_partitions(PyObject *self, PyObject *args)
{
    PyObject *keys;
    Py_ssize_t parts;
    if (!PyArg_ParseTuple(args, "On", &keys, &parts))
        return NULL;
    kv_source ks;
    if (kv_source_init(&ks, keys) != 0) {
        PyErr_Format(PyExc_TypeError, "key_partitions: keys must be a list or BinaryColumn, not %.100s",
                     Py_TYPE(keys)->tp_name);
        return NULL;
    }
    if (parts < 1) {
        PyErr_SetString(PyExc_ValueError, "key_partitions: num_partitions must be at least 1");
        return NULL;
    }
    Py_ssize_t n = ks.length;
    const char *d;
    Py_ssize_t kn;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kv_item(KV_ANY, &ks, i, &d, &kn) < 0)
            Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        kv_item(KV_ANY, &ks, i, &d, &kn);
        long p = kn < 0 ? -1 : (long)(((uint32_t)murmur2_of((const uint8_t *)d, kn) & 0x7fffffffu) % (uint32_t)parts);
        PyObject *v = PyLong_FromLong(p);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}
