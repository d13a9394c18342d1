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
 * The packed state's calls (claim, take_packed, land) and the packed event loop's (deliver_packed,
 * match_packed) are described where they are defined.
 *
 * Only the CPython C API and the buffer protocol (no numpy headers), like hub/_native.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

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

/*
 * The packed state (_greedy.py, "packed" mode: sparse networks with under 64 in-links per NPU and
 * uniform link speeds, the compiled path). One byte per (NPU, column), P = claimed << 7 | has << 6 |
 * supply (supply < 64), and two bitsets of the same matrix, HB (has) and CB (claimed), one bit per
 * column, 64 columns a word (bit c & 63 of word c >> 6; bits past the last column are 0). Link
 * u -> v's candidates are HB[u] & ~CB[v], so a row without one costs 2 words per 64 columns instead
 * of 2 bytes per column, and the supply bytes are read only where a word holds a candidate. The
 * choice is the same first minimum as first_min_u8 over the keys P[v, c] | (0x80 unless c is a
 * candidate): a candidate is not claimed at v, so its byte is its supply.
 */

/* EXPAND[b]: 8 key bytes, byte i = 0 where bit i of b is set (a candidate), else 0x80. */
static uint64_t EXPAND[256];

static void fill_expand(void) {
    for (unsigned b = 0; b < 256; b++) {
        uint8_t bytes[8];
        for (unsigned i = 0; i < 8; i++) {
            bytes[i] = (b >> i) & 1u ? 0 : 0x80;
        }
        memcpy(&EXPAND[b], bytes, 8);
    }
}

/* The bits (b >> shift) & 1 of 8 bytes, as one byte (bit i from byte i). */
static inline unsigned gather_bit(const uint8_t *p, unsigned shift, Py_ssize_t n) {
    unsigned out = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        /* byte i's bit at bit 8i, then one multiply moves bit 8i to bit 56 + i */
        w = (w >> shift) & 0x0101010101010101ULL;
        return (unsigned)((w * 0x0102040810204080ULL) >> 56);
    }
#endif
    for (Py_ssize_t i = 0; i < n; i++) {
        out |= ((unsigned)(p[i] >> shift) & 1u) << i;
    }
    return out;
}

/* The summaries (optional) of the packed state's bitsets, one bit per word, 64 words a summary word:
 * HS[r] has the bit of word w where HB[r, w] != 0 (row r holds a column there) and NS[r] where
 * CB[r, w] is not full (row r still lacks a claim there), so a link's scan visits only the words of
 * HS[u] & NS[v]: late in a run, when most destinations have claimed everything, and early, when
 * sources hold little, a row costs a few summary words instead of every word. */
typedef struct {
    uint64_t *hs, *ns; /* (rows, swords) each, or both NULL */
    Py_ssize_t swords;
} summary_t;

static inline int ctz64(uint64_t m) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(m);
#else
    int n = 0;
    while (!(m & 1u)) {
        m >>= 1;
        n++;
    }
    return n;
#endif
}

/* Word w of a row's claimed bitset when every column of it is claimed. */
static inline uint64_t full_word(Py_ssize_t w, Py_ssize_t cols) {
    Py_ssize_t last = (cols - 1) >> 6, tail = cols & 63;
    return (w == last && tail) ? (((uint64_t)1 << tail) - 1) : ~(uint64_t)0;
}

/* Rebuild row r's summaries from its bitsets. */
static void summarize_row(const summary_t *sm, const uint64_t *h, const uint64_t *c, Py_ssize_t r, Py_ssize_t cols,
                          Py_ssize_t words) {
    uint64_t *hs = sm->hs + r * sm->swords, *ns = sm->ns + r * sm->swords;
    memset(hs, 0, (size_t)sm->swords * 8);
    memset(ns, 0, (size_t)sm->swords * 8);
    for (Py_ssize_t w = 0; w < words; w++) {
        hs[w >> 6] |= (uint64_t)(h[w] != 0) << (w & 63);
        ns[w >> 6] |= (uint64_t)(c[w] != full_word(w, cols)) << (w & 63);
    }
}

/* The first minimum over word w's candidates m (columns 64w + bit) of row pv, into *bv / *bc;
 * 1 when a key <= low ends the row's scan. */
static inline int scan_word(const uint8_t *pv, uint64_t m, Py_ssize_t w, Py_ssize_t cols, unsigned low, unsigned *bv,
                            Py_ssize_t *bc) {
    const uint64_t ones = 0x0101010101010101ULL, top = 0x8080808080808080ULL;
    Py_ssize_t base = w * 64;
    for (; m != 0; m >>= 8, base += 8) {
        unsigned b = (unsigned)(m & 0xffu);
        if (b == 0) {
            continue;
        }
        if (base + 8 <= cols) {
            uint64_t k;
            memcpy(&k, pv + base, 8);
            k |= EXPAND[b];
            if (((k - ones * *bv) & ~k & top) == 0) {
                continue; /* no candidate here below the best so far */
            }
        }
        for (unsigned j = 0; j < 8 && base + (Py_ssize_t)j < cols; j++) {
            if (((b >> j) & 1u) && pv[base + j] < *bv) {
                *bv = pv[base + j];
                *bc = base + j;
                if (*bv <= low) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* Per link i (u[i] -> v[i]): best[i] = the first column with the smallest key, val[i] = that key
 * (0x80 = none); a found column is claimed at once (P's top bit and CB, and NS when given): the
 * links of one slot go into distinct destinations, so a claim never changes another link's answer
 * in the call. With summaries only the words they name are read (the others hold no candidate). */
static void claim_rows(uint8_t *P, const uint64_t *HB, uint64_t *CB, Py_ssize_t cols, Py_ssize_t words,
                       const int64_t *v, const int64_t *u, Py_ssize_t links, unsigned low, int64_t *best,
                       uint8_t *val, const summary_t *sm) {
    for (Py_ssize_t i = 0; i < links; i++) {
        uint8_t *pv = P + v[i] * cols;
        const uint64_t *hu = HB + u[i] * words;
        uint64_t *cv = CB + v[i] * words;
        unsigned bv = 0x80;
        Py_ssize_t bc = 0;
        if (sm != NULL) {
            const uint64_t *hs = sm->hs + u[i] * sm->swords, *ns = sm->ns + v[i] * sm->swords;
            int done = 0;
            for (Py_ssize_t s = 0; s < sm->swords && !done; s++) {
                for (uint64_t sw = hs[s] & ns[s]; sw != 0 && !done; sw &= sw - 1) {
                    Py_ssize_t w = s * 64 + ctz64(sw);
                    done = scan_word(pv, hu[w] & ~cv[w], w, cols, low, &bv, &bc);
                }
            }
        } else {
            for (Py_ssize_t w = 0; w < words; w++) {
                if (scan_word(pv, hu[w] & ~cv[w], w, cols, low, &bv, &bc)) {
                    break;
                }
            }
        }
        best[i] = bc;
        val[i] = (uint8_t)bv;
        if (bv < 0x80) {
            Py_ssize_t w = bc >> 6;
            pv[bc] |= 0x80;
            cv[w] |= (uint64_t)1 << (bc & 63);
            if (sm != NULL && cv[w] == full_word(w, cols)) {
                sm->ns[v[i] * sm->swords + (w >> 6)] &= ~((uint64_t)1 << (w & 63));
            }
        }
    }
}

/* Views of P (rows * cols bytes) and two bitsets (rows * words uint64) for the packed calls. */
static int packed_views(PyObject *po, PyObject *hbo, PyObject *cbo, Py_ssize_t rows, Py_ssize_t cols, int writable,
                        Py_buffer *p, Py_buffer *hb, Py_buffer *cb) {
    Py_ssize_t words = (cols + 63) / 64;
    if (view_of(po, p, 1, writable, "P") < 0) {
        return -1;
    }
    if (view_of(hbo, hb, 8, writable, "HB") < 0) {
        PyBuffer_Release(p);
        return -1;
    }
    if (view_of(cbo, cb, 8, writable, "CB") < 0) {
        PyBuffer_Release(p);
        PyBuffer_Release(hb);
        return -1;
    }
    if (rows < 0 || cols < 1 || p->len != rows * cols || hb->len != rows * words * 8 || cb->len != hb->len) {
        PyErr_SetString(PyExc_ValueError, "packed state: P is (rows, cols) bytes, HB and CB (rows, ceil(cols/64)) words");
        PyBuffer_Release(p);
        PyBuffer_Release(hb);
        PyBuffer_Release(cb);
        return -1;
    }
    return 0;
}

static PyObject *claim(PyObject *self, PyObject *args) {
    PyObject *po, *hbo, *cbo, *vo, *uo, *bo, *valo;
    Py_ssize_t rows, cols;
    int low;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOnnOOiOO", &po, &hbo, &cbo, &rows, &cols, &vo, &uo, &low, &bo, &valo)) {
        return NULL;
    }
    Py_buffer p = {0}, hb = {0}, cb = {0}, v = {0}, u = {0}, best = {0}, val = {0};
    PyObject *ret = NULL;
    if (packed_views(po, hbo, cbo, rows, cols, 1, &p, &hb, &cb) < 0) {
        return NULL;
    }
    if (view_of(vo, &v, 8, 0, "v") < 0 || view_of(uo, &u, 8, 0, "u") < 0 || view_of(bo, &best, 8, 1, "best") < 0
        || view_of(valo, &val, 1, 1, "val") < 0) {
        goto done;
    }
    Py_ssize_t links = v.len / 8;
    if (u.len != v.len || best.len != v.len || val.len != links || low < 0 || low > 0x80) {
        PyErr_SetString(PyExc_ValueError, "claim: v, u, best, val one per link; 0 <= low <= 128");
        goto done;
    }
    const int64_t *vv = (const int64_t *)v.buf, *uu = (const int64_t *)u.buf;
    for (Py_ssize_t i = 0; i < links; i++) {
        if (vv[i] < 0 || vv[i] >= rows || uu[i] < 0 || uu[i] >= rows) {
            PyErr_SetString(PyExc_IndexError, "claim: an NPU index is out of range");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS;
    claim_rows((uint8_t *)p.buf, (const uint64_t *)hb.buf, (uint64_t *)cb.buf, cols, (cols + 63) / 64, vv, uu, links,
               (unsigned)low, (int64_t *)best.buf, (uint8_t *)val.buf, NULL);
    Py_END_ALLOW_THREADS;
    ret = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&p);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&cb);
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

/* out = np.take(P, order, axis=1), and the bitsets HB (bit 6) and CB (bit 7) of out. */
static PyObject *take_packed(PyObject *self, PyObject *args) {
    PyObject *ao, *oo, *po, *hbo, *cbo, *hso = NULL, *nso = NULL;
    Py_ssize_t rows, cols;
    (void)self;
    if (!PyArg_ParseTuple(args, "OnnOOOO|OO", &ao, &rows, &cols, &oo, &po, &hbo, &cbo, &hso, &nso)) {
        return NULL;
    }
    Py_buffer a = {0}, order = {0}, p = {0}, hb = {0}, cb = {0}, hs = {0}, ns = {0};
    summary_t sm = {NULL, NULL, 0};
    PyObject *ret = NULL;
    if (packed_views(po, hbo, cbo, rows, cols, 1, &p, &hb, &cb) < 0) {
        return NULL;
    }
    if (view_of(ao, &a, 1, 0, "a") < 0 || view_of(oo, &order, 4, 0, "order") < 0) {
        goto done;
    }
    if (a.len != p.len || order.len != cols * 4) {
        PyErr_SetString(PyExc_ValueError, "take_packed: a is (rows, cols), order (int32) has cols entries");
        goto done;
    }
    if (hso != NULL) {
        sm.swords = ((cols + 63) / 64 + 63) / 64;
        if (nso == NULL || view_of(hso, &hs, 8, 1, "HS") < 0 || view_of(nso, &ns, 8, 1, "NS") < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "take_packed: HS and NS come together");
            }
            goto done;
        }
        if (hs.len != rows * sm.swords * 8 || ns.len != hs.len) {
            PyErr_SetString(PyExc_ValueError, "take_packed: HS and NS are (rows, ceil(words/64))");
            goto done;
        }
        sm.hs = (uint64_t *)hs.buf;
        sm.ns = (uint64_t *)ns.buf;
    }
    const int32_t *ord = (const int32_t *)order.buf;
    for (Py_ssize_t j = 0; j < cols; j++) {
        if (ord[j] < 0 || ord[j] >= cols) {
            PyErr_SetString(PyExc_IndexError, "take_packed: a column index is out of range");
            goto done;
        }
    }
    Py_ssize_t words = (cols + 63) / 64;
    Py_BEGIN_ALLOW_THREADS;
    Py_ssize_t r4 = rows - rows % 4;
    for (Py_ssize_t r = 0; r < r4; r += 4) { /* four rows per pass: one load of each order entry */
        const uint8_t *s0 = (const uint8_t *)a.buf + r * cols, *s1 = s0 + cols, *s2 = s1 + cols, *s3 = s2 + cols;
        uint8_t *d0 = (uint8_t *)p.buf + r * cols, *d1 = d0 + cols, *d2 = d1 + cols, *d3 = d2 + cols;
        for (Py_ssize_t j = 0; j < cols; j++) {
            int32_t o = ord[j];
            d0[j] = s0[o];
            d1[j] = s1[o];
            d2[j] = s2[o];
            d3[j] = s3[o];
        }
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        const uint8_t *src = (const uint8_t *)a.buf + r * cols;
        uint8_t *dst = (uint8_t *)p.buf + r * cols;
        for (Py_ssize_t j = 0; r >= r4 && j < cols; j++) {
            dst[j] = src[ord[j]];
        }
        uint64_t *h = (uint64_t *)hb.buf + r * words, *c = (uint64_t *)cb.buf + r * words;
        memset(h, 0, (size_t)words * 8);
        memset(c, 0, (size_t)words * 8);
        for (Py_ssize_t j = 0; j < cols; j += 8) {
            Py_ssize_t n = cols - j < 8 ? cols - j : 8;
            h[j >> 6] |= (uint64_t)gather_bit(dst + j, 6, n) << (j & 63);
            c[j >> 6] |= (uint64_t)gather_bit(dst + j, 7, n) << (j & 63);
        }
        if (sm.hs != NULL) {
            summarize_row(&sm, h, c, r, cols, words);
        }
    }
    Py_END_ALLOW_THREADS;
    ret = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&p);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&cb);
    if (a.obj != NULL) {
        PyBuffer_Release(&a);
    }
    if (order.obj != NULL) {
        PyBuffer_Release(&order);
    }
    if (hs.obj != NULL) {
        PyBuffer_Release(&hs);
    }
    if (ns.obj != NULL) {
        PyBuffer_Release(&ns);
    }
    return ret;
}

/* Chunks c[i] landed at NPUs v[i]: P[v, c] |= has (bit 6) and HB's bit; then, when flat is given,
 * the supply bumps (as bump). */
static PyObject *land(PyObject *self, PyObject *args) {
    PyObject *po, *hbo, *vo, *co;
    Py_ssize_t rows, cols;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOnnOO", &po, &hbo, &rows, &cols, &vo, &co)) {
        return NULL;
    }
    Py_buffer p = {0}, hb = {0}, v = {0}, c = {0};
    PyObject *ret = NULL;
    Py_ssize_t words = (cols + 63) / 64;
    if (view_of(po, &p, 1, 1, "P") < 0) {
        return NULL;
    }
    if (view_of(hbo, &hb, 8, 1, "HB") < 0 || view_of(vo, &v, 8, 0, "v") < 0 || view_of(co, &c, 8, 0, "c") < 0) {
        goto done;
    }
    if (rows < 0 || cols < 1 || p.len != rows * cols || hb.len != rows * words * 8 || c.len != v.len) {
        PyErr_SetString(PyExc_ValueError, "land: P is (rows, cols), HB (rows, ceil(cols/64)); v, c alike");
        goto done;
    }
    const int64_t *vv = (const int64_t *)v.buf, *cc = (const int64_t *)c.buf;
    Py_ssize_t n = v.len / 8;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (vv[i] < 0 || vv[i] >= rows || cc[i] < 0 || cc[i] >= cols) {
            PyErr_SetString(PyExc_IndexError, "land: an index is out of range");
            goto done;
        }
    }
    uint8_t *P = (uint8_t *)p.buf;
    uint64_t *H = (uint64_t *)hb.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        P[vv[i] * cols + cc[i]] |= 0x40;
        H[vv[i] * words + (cc[i] >> 6)] |= (uint64_t)1 << (cc[i] & 63);
    }
    ret = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&p);
    if (hb.obj != NULL) {
        PyBuffer_Release(&hb);
    }
    if (v.obj != NULL) {
        PyBuffer_Release(&v);
    }
    if (c.obj != NULL) {
        PyBuffer_Release(&c);
    }
    return ret;
}

/*
 * The packed event loop's two halves (_greedy.py, _State.deliver / _match_packed with the packed
 * state): the per-event index work numpy did in Python, each call one event. The rarest-first
 * re-sort and the random draws stay in Python (numpy's generator), so a seed gives the same
 * schedule as the numpy path. Arrays come as a tuple of buffers checked by view_all.
 */

typedef struct {
    Py_ssize_t itemsize;
    int writable;
    const char *name;
} spec_t;

/* Views of objs[i] per spec[i]; on failure the views taken so far are released and -1 returned. */
static int view_all(PyObject *tuple, const spec_t *spec, Py_ssize_t n, Py_buffer *bufs) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != n) {
        PyErr_Format(PyExc_TypeError, "expected a tuple of %zd arrays", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (view_of(PyTuple_GET_ITEM(tuple, i), &bufs[i], spec[i].itemsize, spec[i].writable, spec[i].name) < 0) {
            for (Py_ssize_t j = 0; j < i; j++) {
                PyBuffer_Release(&bufs[j]);
            }
            return -1;
        }
    }
    return 0;
}

static void release_all(Py_buffer *bufs, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyBuffer_Release(&bufs[i]);
    }
}

/* (P, HB, land_at, carry, dst, out_ptr, out_idx, holders, HS): see deliver_packed's doc. */
static const spec_t DELIVER_SPEC[] = {{1, 1, "P"},        {8, 1, "HB"},      {8, 1, "land_at"}, {8, 1, "carry"},
                                      {8, 0, "dst"},      {8, 0, "out_ptr"}, {8, 0, "out_idx"}, {8, 1, "holders"},
                                      {8, 1, "HS"}};
#define DELIVER_N 9

static PyObject *deliver_packed(PyObject *self, PyObject *args) {
    PyObject *arrays;
    Py_ssize_t rows, cols, links, depth;
    int scarce;
    double until;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onnnnpd", &arrays, &rows, &cols, &links, &depth, &scarce, &until)) {
        return NULL;
    }
    Py_buffer b[DELIVER_N];
    if (view_all(arrays, DELIVER_SPEC, DELIVER_N, b) < 0) {
        return NULL;
    }
    PyObject *ret = NULL;
    Py_ssize_t words = (cols + 63) / 64;
    if (rows < 1 || cols < 1 || depth < 1 || links < 0 || b[0].len != rows * cols || b[1].len != rows * words * 8
        || b[2].len != links * depth * 8 || b[3].len != b[2].len || b[4].len != links * 8
        || b[5].len != (rows + 1) * 8 || b[7].len != cols * 8 || b[8].len != rows * ((words + 63) / 64) * 8) {
        PyErr_SetString(PyExc_ValueError, "deliver_packed: the state's shapes disagree");
        goto done;
    }
    uint8_t *P = (uint8_t *)b[0].buf;
    uint64_t *HB = (uint64_t *)b[1].buf;
    double *land_at = (double *)b[2].buf;
    int64_t *carry = (int64_t *)b[3].buf, *holders = (int64_t *)b[7].buf;
    uint64_t *HS = (uint64_t *)b[8].buf;
    Py_ssize_t swords = (words + 63) / 64;
    const int64_t *dst = (const int64_t *)b[4].buf, *optr = (const int64_t *)b[5].buf, *oidx = (const int64_t *)b[6].buf;
    Py_ssize_t n_out = b[6].len / 8;
    /* every index that the loop below follows, checked once */
    for (Py_ssize_t i = 0; i < links; i++) {
        if (dst[i] < 0 || dst[i] >= rows) {
            PyErr_SetString(PyExc_IndexError, "deliver_packed: a link's destination is out of range");
            goto done;
        }
    }
    for (Py_ssize_t r = 0; r <= rows; r++) {
        if (optr[r] < 0 || optr[r] > n_out || (r > 0 && optr[r] < optr[r - 1])) {
            PyErr_SetString(PyExc_ValueError, "deliver_packed: out_ptr is not a CSR pointer over out_idx");
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n_out; i++) {
        if (oidx[i] < 0 || oidx[i] >= links) {
            PyErr_SetString(PyExc_IndexError, "deliver_packed: an out-link is out of range");
            goto done;
        }
    }
    Py_ssize_t landed = 0;
    for (Py_ssize_t e = 0; e < links * depth; e++) {
        if (!(land_at[e] <= until)) {
            continue;
        }
        int64_t c = carry[e];
        if (c < 0 || c >= cols) {
            PyErr_SetString(PyExc_IndexError, "deliver_packed: a landing carries no chunk");
            goto done;
        }
        int64_t v = dst[e / depth];
        holders[c] += 1;
        if (scarce) { /* supply < 64: the count never reaches the has bit */
            for (int64_t o = optr[v]; o < optr[v + 1]; o++) {
                P[dst[oidx[o]] * cols + c] += 1;
            }
        }
        P[v * cols + c] |= 0x40;
        HB[v * words + (c >> 6)] |= (uint64_t)1 << (c & 63);
        HS[v * swords + (c >> 12)] |= (uint64_t)1 << ((c >> 6) & 63);
        land_at[e] = HUGE_VAL;
        carry[e] = -1;
        landed++;
    }
    ret = PyLong_FromSsize_t(landed);
done:
    release_all(b, DELIVER_N);
    return ret;
}

/* (P, HB, CB, free, perm, src, dst, busy, delay, free_at, land_at, start_at, carry, rec_id, chunk_of,
 * rec_chunk, rec_link, rec_start, rec_end, HS, NS): see match_packed's doc. */
static const spec_t MATCH_SPEC[] = {
    {1, 1, "P"},        {8, 0, "HB"},       {8, 1, "CB"},        {8, 0, "free"},      {8, 0, "perm"},
    {8, 0, "src"},      {8, 0, "dst"},      {8, 0, "busy"},      {8, 0, "delay"},     {8, 1, "free_at"},
    {8, 1, "land_at"},  {8, 1, "start_at"}, {8, 1, "carry"},     {8, 1, "rec_id"},    {8, 0, "chunk_of"},
    {4, 1, "rec_chunk"}, {4, 1, "rec_link"}, {8, 1, "rec_start"}, {8, 1, "rec_end"}, {8, 0, "HS"},
    {8, 1, "NS"}};
#define MATCH_N 21

static PyObject *match_packed(PyObject *self, PyObject *args) {
    PyObject *arrays;
    Py_ssize_t rows, cols, links, depth, n_recs;
    int low;
    double t, until;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onnnnindd", &arrays, &rows, &cols, &links, &depth, &low, &n_recs, &t, &until)) {
        return NULL;
    }
    Py_buffer b[MATCH_N];
    if (view_all(arrays, MATCH_SPEC, MATCH_N, b) < 0) {
        return NULL;
    }
    PyObject *ret = NULL;
    int64_t *g = NULL, *vv = NULL, *uu = NULL, *best = NULL, *pos = NULL;
    int32_t *slot = NULL;
    uint8_t *val = NULL;
    Py_ssize_t words = (cols + 63) / 64, nf = b[3].len / 8, cap = b[15].len / 4;
    if (rows < 1 || cols < 1 || depth < 1 || links < 0 || low < 0 || low > 0x80 || b[0].len != rows * cols
        || b[1].len != rows * words * 8 || b[2].len != b[1].len || b[4].len != b[3].len || b[5].len != links * 8
        || b[6].len != links * 8 || b[7].len != links * 8 || b[8].len != links * 8 || b[9].len != links * 8
        || b[10].len != links * depth * 8 || b[11].len != b[10].len || b[12].len != b[10].len
        || b[13].len != b[10].len || b[14].len != cols * 8 || b[16].len != cap * 4 || b[17].len != cap * 8
        || b[18].len != cap * 8 || b[19].len != rows * ((words + 63) / 64) * 8 || b[20].len != b[19].len
        || n_recs < 0 || n_recs > cap) {
        PyErr_SetString(PyExc_ValueError, "match_packed: the state's shapes disagree");
        goto done;
    }
    const int64_t *fr = (const int64_t *)b[3].buf, *perm = (const int64_t *)b[4].buf;
    const int64_t *src = (const int64_t *)b[5].buf, *dst = (const int64_t *)b[6].buf;
    const int64_t *chunk_of = (const int64_t *)b[14].buf;
    const double *busy = (const double *)b[7].buf, *delay = (const double *)b[8].buf;
    double *free_at = (double *)b[9].buf, *land_at = (double *)b[10].buf, *start_at = (double *)b[11].buf;
    int64_t *carry = (int64_t *)b[12].buf, *rec_id = (int64_t *)b[13].buf;
    int32_t *rec_chunk = (int32_t *)b[15].buf, *rec_link = (int32_t *)b[16].buf;
    double *rec_start = (double *)b[17].buf, *rec_end = (double *)b[18].buf;
    summary_t sm = {(uint64_t *)b[19].buf, (uint64_t *)b[20].buf, (words + 63) / 64};
    for (Py_ssize_t i = 0; i < nf; i++) {
        if (perm[i] < 0 || perm[i] >= nf || fr[perm[i]] < 0 || fr[perm[i]] >= links) {
            PyErr_SetString(PyExc_IndexError, "match_packed: a free link or its permutation is out of range");
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < links; i++) {
        if (src[i] < 0 || src[i] >= rows || dst[i] < 0 || dst[i] >= rows) {
            PyErr_SetString(PyExc_IndexError, "match_packed: a link's end is out of range");
            goto done;
        }
    }
    for (Py_ssize_t c = 0; c < cols; c++) {
        if (chunk_of[c] < 0 || chunk_of[c] > INT32_MAX) {
            PyErr_SetString(PyExc_IndexError, "match_packed: chunk_of is out of range");
            goto done;
        }
    }
    size_t m = (size_t)(nf > 0 ? nf : 1);
    g = PyMem_Malloc(m * 8);
    vv = PyMem_Malloc(m * 8);
    uu = PyMem_Malloc(m * 8);
    best = PyMem_Malloc(m * 8);
    pos = PyMem_Calloc((size_t)rows + 2 > m + 1 ? (size_t)rows + 2 : m + 1, 8);
    slot = PyMem_Malloc(m * 4);
    val = PyMem_Malloc(m);
    if (!g || !vv || !uu || !best || !pos || !slot || !val) {
        PyErr_NoMemory();
        goto done;
    }
    /* _deal: the shuffled free links, stably grouped by destination (a counting sort), and each
     * link's slot = its rank in its destination's group */
    for (Py_ssize_t i = 0; i < nf; i++) {
        pos[dst[fr[perm[i]]] + 1]++;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        pos[r + 1] += pos[r];
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        int64_t f = fr[perm[i]];
        g[pos[dst[f]]++] = f;
    }
    Py_ssize_t max_slot = 0;
    for (Py_ssize_t i = 0; i < nf; i++) {
        vv[i] = dst[g[i]];
        uu[i] = src[g[i]];
        slot[i] = (i > 0 && vv[i] == vv[i - 1]) ? slot[i - 1] + 1 : 0;
        if (slot[i] > max_slot) {
            max_slot = slot[i];
        }
    }
    claim_rows((uint8_t *)b[0].buf, (const uint64_t *)b[1].buf, (uint64_t *)b[2].buf, cols, words, vv, uu, nf,
               (unsigned)low, best, val, &sm);
    /* _start, in slot order (stable: slot 0's links in dealt order, then slot 1's, ...), by a
     * counting sort of the slots into vv (free after the claims) */
    memset(pos, 0, ((size_t)max_slot + 2) * 8);
    for (Py_ssize_t i = 0; i < nf; i++) {
        pos[slot[i] + 1]++;
    }
    for (Py_ssize_t s = 0; s <= max_slot; s++) {
        pos[s + 1] += pos[s];
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        vv[pos[slot[i]]++] = i;
    }
    for (Py_ssize_t j = 0; j < nf; j++) {
        Py_ssize_t i = (Py_ssize_t)vv[j];
        if (val[i] >= 0x80) {
            continue;
        }
        if (n_recs >= cap) {
            PyErr_SetString(PyExc_RuntimeError, "match_packed: more transfers than deliveries to record");
            goto done;
        }
        int64_t ln = g[i];
        Py_ssize_t d = 0; /* the first free flight slot (np.argmax of carry < 0: 0 when none) */
        for (Py_ssize_t k = 0; k < depth; k++) {
            if (carry[ln * depth + k] < 0) {
                d = k;
                break;
            }
        }
        free_at[ln] = t + busy[ln];
        land_at[ln * depth + d] = t + delay[ln];
        start_at[ln * depth + d] = t;
        carry[ln * depth + d] = best[i];
        rec_id[ln * depth + d] = n_recs;
        rec_chunk[n_recs] = (int32_t)chunk_of[best[i]];
        rec_link[n_recs] = (int32_t)ln;
        rec_start[n_recs] = t;
        rec_end[n_recs] = t + delay[ln];
        n_recs++;
    }
    /* next_time: the next landing or the next time a busy link frees */
    double nxt = HUGE_VAL;
    for (Py_ssize_t e = 0; e < links * depth; e++) {
        if (land_at[e] < nxt) {
            nxt = land_at[e];
        }
    }
    for (Py_ssize_t i = 0; i < links; i++) {
        if (free_at[i] > until && free_at[i] < nxt) {
            nxt = free_at[i];
        }
    }
    ret = Py_BuildValue("nd", n_recs, nxt);
done:
    PyMem_Free(g);
    PyMem_Free(vv);
    PyMem_Free(uu);
    PyMem_Free(best);
    PyMem_Free(pos);
    PyMem_Free(slot);
    PyMem_Free(val);
    release_all(b, MATCH_N);
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
    {"claim", claim, METH_VARARGS,
     "claim(P, HB, CB, rows, cols, v, u, low, best, val): the packed state's first_min (uint8 keys), each found"
     " column claimed at once (P's top bit and CB's bit)"},
    {"take_packed", take_packed, METH_VARARGS,
     "take_packed(a, rows, cols, order, P, HB, CB[, HS, NS]): P = np.take(a, order, axis=1) (order int32), HB and"
     " CB its bit-6 and bit-7 bitsets, HS and NS (optional) their summaries (one bit per word: HB's word not"
     " zero, CB's word not full)"},
    {"land", land, METH_VARARGS, "land(P, HB, rows, cols, v, c): P[v, c] |= 0x40 and HB's bit, per landing"},
    {"deliver_packed", deliver_packed, METH_VARARGS,
     "deliver_packed((P, HB, land_at, carry, dst, out_ptr, out_idx, holders, HS), rows, cols, links, depth, scarce,"
     " until) -> landed: every flight with land_at <= until lands (holders, the out-neighbours' supply when"
     " scarce, the has bit, HB and HS), its flight slot emptied (land_at inf, carry -1)"},
    {"match_packed", match_packed, METH_VARARGS,
     "match_packed((P, HB, CB, free, perm, src, dst, busy, delay, free_at, land_at, start_at, carry, rec_id,"
     " chunk_of, rec_chunk, rec_link, rec_start, rec_end, HS, NS), rows, cols, links, depth, low, n_recs, t, until) -> (n_recs,"
     " next_time): one event's matching: free[perm] dealt into slots by destination, claimed, the transfers"
     " started in slot order and recorded from n_recs on; next_time = the next landing or link freeing after"
     " until"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "collhub_tacos._score",
                                    "The greedy matcher's scoring (see collhub_tacos/_greedy.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__score(void) {
    fill_expand();
    return PyModule_Create(&module);
}
