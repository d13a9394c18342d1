/* Buffer arguments of hub._native._sim (shared by _sim.c and _sim_prep.c): each column is checked
 * for its item size and length, and a wrong one is a ValueError naming it. */
#ifndef HUB_SIMBUF_H
#define HUB_SIMBUF_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define SIMBUF_MAX 40

typedef struct {
    Py_buffer v[SIMBUF_MAX];
    int nv;
} Bufs;

static inline void *get_buf(Bufs *bs, PyObject *o, Py_ssize_t itemsize, Py_ssize_t count, int writable,
                            const char *name) {
    if (bs->nv >= SIMBUF_MAX) { PyErr_SetString(PyExc_RuntimeError, "too many buffers"); return NULL; }
    Py_buffer *v = &bs->v[bs->nv];
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) return NULL;
    bs->nv++;
    if (v->itemsize != itemsize || v->len != itemsize * count) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes, got %zd bytes of items of %zd",
                     name, count, itemsize, v->len, v->itemsize);
        return NULL;
    }
    return v->buf;
}

static inline void release_bufs(Bufs *bs) {
    for (int i = 0; i < bs->nv; i++) PyBuffer_Release(&bs->v[i]);
    bs->nv = 0;
}

static inline uint64_t mix64(uint64_t x) { /* splitmix64 finaliser */
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* the table-building functions of _sim_prep.c */
PyObject *sim_channels(PyObject *self, PyObject *args);
PyObject *sim_layout(PyObject *self, PyObject *args);
PyObject *sim_successors(PyObject *self, PyObject *args);
PyObject *sim_pair_loads(PyObject *self, PyObject *args);
extern const char sim_channels_doc[], sim_layout_doc[], sim_successors_doc[], sim_pair_loads_doc[];

#endif
