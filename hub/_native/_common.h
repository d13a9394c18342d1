/* What every extension of hub._native shares: the Chakra node kinds and the buffer arguments.
 *
 * One home for both (they used to be written out in _codec.h, _simbuf.h, _sim.c, _sim_prep.c and
 * _verify.c). Only the CPython C API and the buffer protocol (no numpy headers). Everything here is
 * static inline: each extension gets its own copy, and no symbol leaves the extension.
 */
#ifndef HUB_COMMON_H
#define HUB_COMMON_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Chakra NodeType values (et_def.proto; hub.chakra.NodeType) that the extensions' rules name. */
enum { NODE_COMP = 4, NODE_SEND = 5, NODE_RECV = 6, NODE_COLL = 7 };

/* A C-contiguous view of o, writable on request (the flags every extension asks with). */
static inline int view_of(PyObject *o, Py_buffer *v, int writable) {
    return PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0));
}

/* -- the views of one call, released together ------------------------------------------------- */
#define BUFS_MAX 40

typedef struct {
    Py_buffer v[BUFS_MAX];
    int nv;
} Bufs;

/* The items of o, itemsize bytes each, or NULL with a ValueError naming the argument. count >= 0:
 * exactly that many (a count below zero, e.g. read from a damaged table, matches no buffer);
 * count == BUF_ANY: any number (buf_items tells). The view is kept in bs until release_bufs. */
#define BUF_ANY PY_SSIZE_T_MIN

static inline void *get_buf(Bufs *bs, PyObject *o, Py_ssize_t itemsize, Py_ssize_t count, int writable,
                            const char *name) {
    if (bs->nv >= BUFS_MAX) {
        PyErr_SetString(PyExc_RuntimeError, "too many buffers");
        return NULL;
    }
    Py_buffer *v = &bs->v[bs->nv];
    if (view_of(o, v, writable) < 0) return NULL;
    bs->nv++;
    /* (a count whose byte size would overflow can match no buffer) */
    if (v->itemsize != itemsize ||
        (count != BUF_ANY && (count < 0 || count > PY_SSIZE_T_MAX / itemsize || v->len != itemsize * count))) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes, got %zd bytes of items of %zd", name,
                     count == BUF_ANY ? (Py_ssize_t)-1 : count, itemsize, v->len, v->itemsize);
        return NULL;
    }
    return v->buf;
}

/* The item count of the view get_buf took last. */
static inline Py_ssize_t buf_items(Bufs *bs) { return bs->v[bs->nv - 1].len / bs->v[bs->nv - 1].itemsize; }

static inline void release_bufs(Bufs *bs) {
    for (int i = 0; i < bs->nv; i++) PyBuffer_Release(&bs->v[i]);
    bs->nv = 0;
}

#endif
