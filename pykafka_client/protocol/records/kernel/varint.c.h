/* kernel/varint.c.h
 *
 * Zig-zag varints: the reader every parser here uses (rd_varint), their size and writer (varint_size,
 * wr_varint), and read_varint (varint.read_varint compiled).
 * Uses: _kernel.c's globals (py_read_varint).
 */

/* ---- varints ------------------------------------------------------------------------------------ */

/* Zig-zag varint of at most maxb bytes in [*pp, end). 0 and *pp advanced on success; -1 when truncated,
 * too long, or wider than 64 bits (the reference keeps such values as Python ints; we decline). */
static inline int rd_varint(const uint8_t **pp, const uint8_t *end, int maxb, int64_t *out)
{
    const uint8_t *p = *pp;
    /* one and two bytes (values up to +-8191: record lengths, deltas and sizes of small records) without the loop */
    if (end - p >= 2) {
        uint64_t b0 = p[0];
        if (!(b0 & 0x80)) {
            *pp = p + 1;
            *out = (int64_t)((b0 >> 1) ^ (0 - (b0 & 1)));
            return 0;
        }
        uint64_t b1 = p[1];
        if (!(b1 & 0x80) && maxb >= 2) {
            uint64_t r2 = (b0 & 0x7F) | (b1 << 7);
            *pp = p + 2;
            *out = (int64_t)((r2 >> 1) ^ (0 - (r2 & 1)));
            return 0;
        }
    }
    uint64_t r = 0;
    int shift = 0;
    for (int i = 0; i < maxb; i++) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        if (shift == 63 && (b & 0x7E))
            return -1;
        r |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = (int64_t)((r >> 1) ^ (0 - (r & 1)));
            return 0;
        }
        shift += 7;
    }
    return -1;
}

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline Py_ssize_t varint_size(int64_t v)
{
    uint64_t u = zigzag(v);
    Py_ssize_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *wr_varint(uint8_t *p, int64_t v)
{
    uint64_t u = zigzag(v);
    while (u >= 0x80) {
        *p++ = (uint8_t)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    *p++ = (uint8_t)u;
    return p;
}

/* ---- varint entry points -------------------------------------------------------------------------- */

PyDoc_STRVAR(read_varint_doc, "read_varint(buf, pos, max_bytes=10) -> (value, pos): varint.read_varint compiled.");

static PyObject *k_read_varint(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3 || py_read_varint == NULL)
        goto reference;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long maxb = nargs == 3 ? PyLong_AsLong(args[2]) : 10;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        goto reference;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        goto reference;
    }
    if (pos < 0 || pos > view.len || maxb < 1 || maxb > 10) {
        PyBuffer_Release(&view);
        goto reference;
    }
    const uint8_t *p = (const uint8_t *)view.buf + pos;
    int64_t v;
    int rc = rd_varint(&p, (const uint8_t *)view.buf + view.len, (int)maxb, &v);
    Py_ssize_t after = p - (const uint8_t *)view.buf;
    PyBuffer_Release(&view);
    if (rc < 0)
        goto reference;
    return Py_BuildValue("(Ln)", (long long)v, after);
reference: /* errors, negative positions and values over 64 bits: the reference answers */
    return PyObject_Vectorcall(py_read_varint, args, (size_t)nargs, NULL);
}
