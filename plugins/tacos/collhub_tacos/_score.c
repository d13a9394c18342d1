/*
 * collhub_tacos._score: the greedy matcher's scoring (collhub_tacos/_greedy.py, _State._first_min),
 * compiled.
 *
 * For every link u -> v of a slot, the matcher takes the first column c with the smallest key
 * S[v, c] | H[u, c] (S: the destination's score with the "claimed" flag in the top bit, H: the
 * "source lacks it" flag in the same bit). numpy builds the whole (links, chunks) key matrix and
 * takes argmin of every row: at 4096 NPUs that is a 16 MiB gather and scan per slot, most of the
 * synthesis time. Here each row is scanned once, without the matrix, and stops at the first key
 * equal to `low` (no candidate's key is below it, see _greedy.py), so the answer is the same
 * first minimum. Keys with the flag (claimed, or the source lacks the chunk) are no candidates:
 * only whether a row has none matters (val = the flag). Words of 8 keys none of which is below
 * the best key so far are skipped at once (the classic "has a byte less than" bit test, exact
 * for bounds up to 0x80).
 *
 * Two helpers of the same loop, each the numpy operation it replaces, exactly: take_columns (the
 * rarest-first re-sort's np.take of the key matrices along their chunk axis, into a reused
 * matrix) and bump (np.add.at of one to the supply counts of the chunks that landed).
 *
 * Only the CPython C API and the buffer protocol (no numpy headers), like hub/_native.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* A C-contiguous view with items of `itemsize` bytes (writable on request); -1 with a TypeError. */
static int view_of(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        return -1;
    }
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes, expected %zd", what, view->itemsize, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* First minimum of s[c] | h[c] over c in [0, n) for uint8 keys below the flag 0x80 (the
 * candidates), stopping at `low`; no candidate: *out = 0x80 and 0. */
static Py_ssize_t first_min_u8(const uint8_t *s, const uint8_t *h, Py_ssize_t n, unsigned low, unsigned *out) {
    Py_ssize_t best = 0;
    unsigned val = 0x80;
    Py_ssize_t c = 0;
    const uint64_t ones = 0x0101010101010101ULL, top = 0x8080808080808080ULL;
    while (c < n) {
        if (c + 8 <= n) {
            uint64_t w, wh;
            memcpy(&w, s + c, 8);
            memcpy(&wh, h + c, 8);
            w |= wh;
            /* no byte of w below val (<= 0x80): nothing here beats the best so far */
            if (((w - ones * val) & ~w & top) == 0) {
                c += 8;
                continue;
            }
        }
        unsigned k = (unsigned)(s[c] | h[c]);
        if (k < val) {
            val = k;
            best = c;
            if (k <= low) {
                break;
            }
        }
        c++;
    }
    *out = val;
    return best;
}

/* The same for int16 keys (flag 1 << 14; scores below it). */
static Py_ssize_t first_min_i16(const int16_t *s, const int16_t *h, Py_ssize_t n, int low, int *out) {
    Py_ssize_t best = 0;
    int val = 1 << 14;
    for (Py_ssize_t c = 0; c < n; c++) {
        int k = (int)(int16_t)(s[c] | h[c]);
        if (k < val) {
            val = k;
            best = c;
            if (k <= low) {
                break;
            }
        }
    }
    *out = val;
    return best;
}

static PyObject *first_min(PyObject *self, PyObject *args) {
    PyObject *so, *ho, *vo, *uo, *bo, *valo;
    Py_ssize_t rows, cols;
    int low;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOnnOOiOO", &so, &ho, &rows, &cols, &vo, &uo, &low, &bo, &valo)) {
        return NULL;
    }
    Py_buffer s = {0}, h = {0}, v = {0}, u = {0}, best = {0}, val = {0};
    Py_ssize_t isz;
    if (PyObject_GetBuffer(so, &s, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return NULL;
    }
    isz = s.itemsize;
    PyObject *ret = NULL;
    if ((isz != 1 && isz != 2) || view_of(ho, &h, isz, 0, "H") < 0 || view_of(vo, &v, 8, 0, "v") < 0
        || view_of(uo, &u, 8, 0, "u") < 0 || view_of(bo, &best, 8, 1, "best") < 0
        || view_of(valo, &val, isz, 1, "val") < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "S: items of 1 or 2 bytes expected");
        }
        goto done;
    }
    Py_ssize_t links = v.len / 8;
    if (s.len != rows * cols * isz || h.len != s.len || u.len != v.len || best.len != v.len
        || val.len != links * isz || rows < 0 || cols < 1) {
        PyErr_SetString(PyExc_ValueError, "first_min: S and H are (rows, cols); v, u, best, val one per link");
        goto done;
    }
    const int64_t *vv = (const int64_t *)v.buf, *uu = (const int64_t *)u.buf;
    for (Py_ssize_t i = 0; i < links; i++) {
        if (vv[i] < 0 || vv[i] >= rows || uu[i] < 0 || uu[i] >= rows) {
            PyErr_SetString(PyExc_IndexError, "first_min: an NPU index is out of range");
            goto done;
        }
    }
    int64_t *bb = (int64_t *)best.buf;
    Py_BEGIN_ALLOW_THREADS;
    if (isz == 1) {
        const uint8_t *S = (const uint8_t *)s.buf, *H = (const uint8_t *)h.buf;
        uint8_t *out = (uint8_t *)val.buf;
        for (Py_ssize_t i = 0; i < links; i++) {
            unsigned k;
            bb[i] = first_min_u8(S + vv[i] * cols, H + uu[i] * cols, cols, (unsigned)low, &k);
            out[i] = (uint8_t)k;
        }
    } else {
        const int16_t *S = (const int16_t *)s.buf, *H = (const int16_t *)h.buf;
        int16_t *out = (int16_t *)val.buf;
        for (Py_ssize_t i = 0; i < links; i++) {
            int k;
            bb[i] = first_min_i16(S + vv[i] * cols, H + uu[i] * cols, cols, low, &k);
            out[i] = (int16_t)k;
        }
    }
    Py_END_ALLOW_THREADS;
    ret = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&s);
    if (h.obj != NULL) {
        PyBuffer_Release(&h);
    }
    if (v.obj != NULL) {
        PyBuffer_Release(&v);
    }
    if (u.obj != NULL) {
        PyBuffer_Release(&u);
    }
    if (best.obj != NULL) {
        PyBuffer_Release(&best);
    }
    if (val.obj != NULL) {
        PyBuffer_Release(&val);
    }
    return ret;
}

/* out[r, j] = a[r, order[j]] for every row (np.take(a, order, axis=1), 1- or 2-byte items). */
static PyObject *take_columns(PyObject *self, PyObject *args) {
    PyObject *ao, *oo, *outo;
    Py_ssize_t rows, cols;
    (void)self;
    if (!PyArg_ParseTuple(args, "OnnOO", &ao, &rows, &cols, &oo, &outo)) {
        return NULL;
    }
    Py_buffer a = {0}, order = {0}, out = {0};
    PyObject *ret = NULL;
    if (PyObject_GetBuffer(ao, &a, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return NULL;
    }
    Py_ssize_t isz = a.itemsize;
    if ((isz != 1 && isz != 2) || view_of(oo, &order, 8, 0, "order") < 0 || view_of(outo, &out, isz, 1, "out") < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "take_columns: items of 1 or 2 bytes expected");
        }
        goto done;
    }
    if (rows < 0 || cols < 0 || a.len != rows * cols * isz || out.len != a.len || order.len != cols * 8) {
        PyErr_SetString(PyExc_ValueError, "take_columns: a and out are (rows, cols), order has cols entries");
        goto done;
    }
    const int64_t *ord = (const int64_t *)order.buf;
    for (Py_ssize_t j = 0; j < cols; j++) {
        if (ord[j] < 0 || ord[j] >= cols) {
            PyErr_SetString(PyExc_IndexError, "take_columns: a column index is out of range");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS;
    if (isz == 1) {
        for (Py_ssize_t r = 0; r < rows; r++) {
            const uint8_t *src = (const uint8_t *)a.buf + r * cols;
            uint8_t *dst = (uint8_t *)out.buf + r * cols;
            for (Py_ssize_t j = 0; j < cols; j++) {
                dst[j] = src[ord[j]];
            }
        }
    } else {
        for (Py_ssize_t r = 0; r < rows; r++) {
            const int16_t *src = (const int16_t *)a.buf + r * cols;
            int16_t *dst = (int16_t *)out.buf + r * cols;
            for (Py_ssize_t j = 0; j < cols; j++) {
                dst[j] = src[ord[j]];
            }
        }
    }
    Py_END_ALLOW_THREADS;
    ret = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&a);
    if (order.obj != NULL) {
        PyBuffer_Release(&order);
    }
    if (out.obj != NULL) {
        PyBuffer_Release(&out);
    }
    return ret;
}

/* a.flat[i] += 1 for every i of flat, repeats counted (np.add.at(a.ravel(), flat, 1)). */
static PyObject *bump(PyObject *self, PyObject *args) {
    PyObject *ao, *fo;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &ao, &fo)) {
        return NULL;
    }
    Py_buffer a = {0}, flat = {0};
    PyObject *ret = NULL;
    if (PyObject_GetBuffer(ao, &a, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    Py_ssize_t isz = a.itemsize, n = a.len / (a.itemsize ? a.itemsize : 1);
    if ((isz != 1 && isz != 2) || view_of(fo, &flat, 8, 0, "flat") < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "bump: items of 1 or 2 bytes expected");
        }
        goto done;
    }
    const int64_t *f = (const int64_t *)flat.buf;
    Py_ssize_t count = flat.len / 8;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (f[i] < 0 || f[i] >= n) {
            PyErr_SetString(PyExc_IndexError, "bump: an index is out of range");
            goto done;
        }
    }
    if (isz == 1) {
        uint8_t *p = (uint8_t *)a.buf;
        for (Py_ssize_t i = 0; i < count; i++) {
            p[f[i]] = (uint8_t)(p[f[i]] + 1u);
        }
    } else {
        int16_t *p = (int16_t *)a.buf;
        for (Py_ssize_t i = 0; i < count; i++) {
            p[f[i]] = (int16_t)(p[f[i]] + 1);
        }
    }
    ret = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&a);
    if (flat.obj != NULL) {
        PyBuffer_Release(&flat);
    }
    return ret;
}

static PyMethodDef methods[] = {
    {"first_min", first_min, METH_VARARGS,
     "first_min(S, H, rows, cols, v, u, low, best, val): per link i, best[i] = the first column c with the"
     " smallest S[v[i], c] | H[u[i], c] and val[i] that key, for keys below the flag (1 << 7 for uint8, 1 << 14"
     " for int16); none below it: val[i] = the flag, best[i] = 0 (S, H: (rows, cols); v, u, best: int64;"
     " a key <= low ends the row's scan)"},
    {"take_columns", take_columns, METH_VARARGS,
     "take_columns(a, rows, cols, order, out): out = np.take(a, order, axis=1) for (rows, cols) uint8 or int16"},
    {"bump", bump, METH_VARARGS, "bump(a, flat): np.add.at(a.ravel(), flat, 1) for a C-contiguous uint8 or int16 a"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "collhub_tacos._score",
                                    "The greedy matcher's scoring (see collhub_tacos/_greedy.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__score(void) { return PyModule_Create(&module); }
