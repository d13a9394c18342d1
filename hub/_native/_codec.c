/*
 * hub._native._codec: the per-node work of the Chakra ET codec (hub/chakra), compiled.
 *
 * Three routines, each the only implementation of its job:
 *   encode_rank  one rank graph's columns -> its delimited Node messages (bytes, or into a
 *                caller's reusable buffer: a writer then touches no fresh memory per file)
 *   frame_files  many delimited streams laid end to end -> the span of every message
 *   decode_nodes node spans -> id, type, duration, known attribute values, dependency ids
 *
 * The wire layout is protobuf's encoding of et_def.proto (hub/chakra/et_def.proto); the rules
 * of what is written (which attributes, when) are the collhub profile's
 * (docs/spec/collective-profile.md), and the attribute names come from Python
 * (hub/chakra/_profile.py) through configure(), so they are defined once.
 *
 * The decoder never raises on bad input: a node it does not fully understand (a foreign
 * attribute, a non-integer value, IOInfo, ctrl_deps, a malformed field) is listed as "slow",
 * and hub/chakra/_ranks.py decodes it with the general codec, which reports the precise
 * problem. Only the CPython C API and the buffer protocol are used (no numpy headers). Both
 * heavy loops run without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Chakra NodeType values (et_def.proto) that the encoder's rules name. */
#define NODE_COMP 4
#define NODE_SEND 5
#define NODE_RECV 6

/* The known node attributes, in the order of hub.chakra._ranks.KNOWN:
 * comm_size, comm_src, comm_dst, comm_tag, then the profile's semantic ones. */
#define MAX_KNOWN 16
#define MAX_NAME 64
enum { A_SIZE, A_SRC, A_DST, A_TAG, A_CNT, A_FIRST_SEMANTIC = A_CNT };

static int n_known = 0;
static uint8_t known_name[MAX_KNOWN][MAX_NAME];
static int known_len[MAX_KNOWN];
static int64_t known_default[MAX_KNOWN];
/* RankGraph column (index into the columns tuple) of each semantic attribute; -1 for the four comm_* */
static int known_column[MAX_KNOWN];
/* the values the decoder accepts for each known attribute; others go to the general path, which
 * reports them (hub/chakra/_validate.py ATTR_RANGES) */
static int64_t known_lo[MAX_KNOWN], known_hi[MAX_KNOWN];

/* Columns of a RankGraph in hub.chakra._model.COLUMN_NAMES order and their item sizes. */
enum { C_IDS, C_KIND, C_PEER, C_TAG, C_COUNT, C_SRC_BUF, C_SRC_OFF, C_DST_BUF, C_DST_OFF, C_OP, C_SIZE,
       C_DURATION, C_TB, C_CHAN, N_COLUMNS };
static const int column_itemsize[N_COLUMNS] = {8, 1, 4, 4, 4, 1, 4, 1, 4, 1, 8, 8, 4, 4};

/* -- buffers ------------------------------------------------------------------------------- */
static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *what) {
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

static void release_all(Py_buffer *views, int count) {
    for (int k = 0; k < count; k++) {
        if (views[k].obj != NULL) {
            PyBuffer_Release(&views[k]);
        }
    }
}

static int64_t column_value(const Py_buffer *col, Py_ssize_t i) {
    switch (col->itemsize) {
    case 1: return ((const int8_t *)col->buf)[i];
    case 4: return ((const int32_t *)col->buf)[i];
    default: return ((const int64_t *)col->buf)[i];
    }
}

/* -- configure ------------------------------------------------------------------------------ */
static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *names;
    PyObject *defaults;
    PyObject *columns;
    PyObject *lo;
    PyObject *hi;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!", &PyTuple_Type, &names, &PyTuple_Type, &defaults, &PyTuple_Type,
                          &columns, &PyTuple_Type, &lo, &PyTuple_Type, &hi)) {
        return NULL;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(names);
    if (k > MAX_KNOWN || k < A_FIRST_SEMANTIC || PyTuple_GET_SIZE(defaults) != k || PyTuple_GET_SIZE(columns) != k
        || PyTuple_GET_SIZE(lo) != k || PyTuple_GET_SIZE(hi) != k) {
        PyErr_SetString(PyExc_ValueError, "configure: names, defaults, columns and ranges must have one length");
        return NULL;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        char *s;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PyTuple_GET_ITEM(names, j), &s, &len) < 0) {
            return NULL;
        }
        long long dflt = PyLong_AsLongLong(PyTuple_GET_ITEM(defaults, j));
        long col = PyLong_AsLong(PyTuple_GET_ITEM(columns, j));
        long long low = PyLong_AsLongLong(PyTuple_GET_ITEM(lo, j));
        long long high = PyLong_AsLongLong(PyTuple_GET_ITEM(hi, j));
        if (PyErr_Occurred()) {
            return NULL;
        }
        /* an attribute body (0a len name key varint) must stay under 128 bytes: one length byte */
        if (len < 1 || len > MAX_NAME || col < -1 || col >= N_COLUMNS) {
            PyErr_SetString(PyExc_ValueError, "configure: attribute name of 1..64 bytes and a column index");
            return NULL;
        }
        memcpy(known_name[j], s, (size_t)len);
        known_len[j] = (int)len;
        known_default[j] = dflt;
        known_column[j] = (int)col;
        known_lo[j] = low;
        known_hi[j] = high;
    }
    n_known = (int)k;
    Py_RETURN_NONE;
}

/* -- encoding -------------------------------------------------------------------------------- */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline int varint_len(uint64_t v) {
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Node.attr (field 10): 52 <len> 0a <name len> name <value key> varint(value). Negative values
 * are 64-bit two's complement (10 bytes), as protobuf writes int32/int64. */
static inline uint8_t *put_attr(uint8_t *p, int k, uint8_t value_key, int64_t value) {
    uint8_t *start = p;
    p[0] = 0x52;
    p[2] = 0x0A;
    p[3] = (uint8_t)known_len[k];
    memcpy(p + 4, known_name[k], (size_t)known_len[k]);
    p += 4 + known_len[k];
    *p++ = value_key;
    p = put_varint(p, (uint64_t)value);
    start[1] = (uint8_t)(p - start - 2);
    return p;
}

#define KEY_INT32 0x38 /* AttributeProto.int32_val (7), varint */
#define KEY_INT64 0x48 /* AttributeProto.int64_val (9), varint */

typedef struct {
    int astrasim;
    int64_t rank;
    Py_ssize_t n;
    Py_buffer cols[N_COLUMNS];
    const int64_t *dep_ptr;
    const int32_t *dep_pos;
    const uint8_t *names;
    const int64_t *names_off;
    const uint8_t *extra;
    const int64_t *extra_off;
} EncodeJob;

/* Encode every node of the job at out; return the end, or NULL when a dependency is out of range. */
static uint8_t *encode_nodes(const EncodeJob *job, uint8_t *out) {
    const int64_t *ids = (const int64_t *)job->cols[C_IDS].buf;
    const int8_t *kind = (const int8_t *)job->cols[C_KIND].buf;
    const int32_t *peer = (const int32_t *)job->cols[C_PEER].buf;
    const int32_t *tag = (const int32_t *)job->cols[C_TAG].buf;
    const int64_t *size = (const int64_t *)job->cols[C_SIZE].buf;
    const int64_t *duration = (const int64_t *)job->cols[C_DURATION].buf;
    uint8_t *p = out;
    for (Py_ssize_t i = 0; i < job->n; i++) {
        uint8_t *len_at = p++;
        uint8_t *body = p;
        int k8 = kind[i];
        int send = k8 == NODE_SEND, recv = k8 == NODE_RECV, comm = send || recv;
        /* fields in field-number order, proto3 defaults omitted: what protobuf's serializer writes */
        if (ids[i] != 0) {
            *p++ = 0x08;
            p = put_varint(p, (uint64_t)ids[i]);
        }
        if (job->names != NULL && job->names_off[i + 1] > job->names_off[i]) {
            size_t len = (size_t)(job->names_off[i + 1] - job->names_off[i]);
            memcpy(p, job->names + job->names_off[i], len);
            p += len;
        }
        if (k8 != 0) {
            *p++ = 0x18;
            p = put_varint(p, (uint64_t)(int64_t)k8);
        }
        int64_t a = job->dep_ptr[i], b = job->dep_ptr[i + 1];
        if (b > a) {
            uint64_t bytes = 0;
            for (int64_t j = a; j < b; j++) {
                int32_t d = job->dep_pos[j];
                if (d < 0 || d >= job->n) {
                    return NULL;
                }
                bytes += (uint64_t)varint_len((uint64_t)ids[d]);
            }
            *p++ = 0x2A; /* data_deps, packed */
            p = put_varint(p, bytes);
            for (int64_t j = a; j < b; j++) {
                p = put_varint(p, (uint64_t)ids[job->dep_pos[j]]);
            }
        }
        if (duration[i] > 0 && (!job->astrasim || k8 == NODE_COMP)) {
            *p++ = 0x38;
            p = put_varint(p, (uint64_t)duration[i]);
        }
        if (job->astrasim) {
            /* exactly what ASTRA-sim's custom-collective walker reads, in the reference converter's order */
            if (comm) {
                p = put_attr(p, A_SIZE, KEY_INT64, size[i]);
                p = put_attr(p, send ? A_DST : A_SRC, KEY_INT32, peer[i]);
                p = put_attr(p, A_TAG, KEY_INT32, tag[i]);
            }
        } else {
            if (size[i] >= 0) {
                p = put_attr(p, A_SIZE, KEY_INT64, size[i]);
            }
            if (comm) {
                p = put_attr(p, A_SRC, KEY_INT32, send ? job->rank : peer[i]);
                p = put_attr(p, A_DST, KEY_INT32, send ? peer[i] : job->rank);
            }
            if (comm || tag[i] != 0) {
                p = put_attr(p, A_TAG, KEY_INT32, tag[i]);
            }
            for (int k = A_FIRST_SEMANTIC; k < n_known; k++) {
                int64_t v = column_value(&job->cols[known_column[k]], i);
                int64_t dflt = k == A_CNT ? comm : known_default[k]; /* cnt: one chunk for SEND/RECV */
                if (v != dflt) {
                    p = put_attr(p, k, KEY_INT32, v);
                }
            }
            if (job->extra != NULL && job->extra_off[i + 1] > job->extra_off[i]) {
                size_t len = (size_t)(job->extra_off[i + 1] - job->extra_off[i]);
                memcpy(p, job->extra + job->extra_off[i], len);
                p += len;
            }
        }
        /* the length prefix: one byte reserved; a longer body moves up (rare: names, extras) */
        uint64_t len = (uint64_t)(p - body);
        int ll = varint_len(len);
        if (ll > 1) {
            memmove(body + ll - 1, body, (size_t)len);
            p += ll - 1;
        }
        put_varint(len_at, len);
    }
    return p;
}

static int optional_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (obj == Py_None) {
        view->obj = NULL;
        view->buf = NULL;
        view->len = 0;
        return 0;
    }
    return get_buffer(obj, view, itemsize, 0, what);
}

static PyObject *encode_rank(PyObject *self, PyObject *args) {
    int astrasim;
    long long rank;
    PyObject *columns, *dep_ptr_o, *dep_pos_o, *names_o, *names_off_o, *extra_o, *extra_off_o;
    PyObject *out_o = Py_None;
    if (!PyArg_ParseTuple(args, "pLO!OOOOOO|O", &astrasim, &rank, &PyTuple_Type, &columns, &dep_ptr_o, &dep_pos_o,
                          &names_o, &names_off_o, &extra_o, &extra_off_o, &out_o)) {
        return NULL;
    }
    if (n_known < A_FIRST_SEMANTIC) {
        PyErr_SetString(PyExc_RuntimeError, "encode_rank: configure() was not called");
        return NULL;
    }
    if (PyTuple_GET_SIZE(columns) != N_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "encode_rank: expected the 14 RankGraph columns");
        return NULL;
    }
    EncodeJob job;
    memset(&job, 0, sizeof job);
    /* views: 14 columns, dep_ptr, dep_pos, names, names_off, extra, extra_off */
    Py_buffer more[6];
    memset(more, 0, sizeof more);
    Py_buffer target; /* the caller's out buffer, when given */
    memset(&target, 0, sizeof target);
    PyObject *result = NULL;
    job.astrasim = astrasim;
    job.rank = rank;
    for (int c = 0; c < N_COLUMNS; c++) {
        if (get_buffer(PyTuple_GET_ITEM(columns, c), &job.cols[c], column_itemsize[c], 0, "column") < 0) {
            goto done;
        }
    }
    job.n = job.cols[C_IDS].len / 8;
    for (int c = 1; c < N_COLUMNS; c++) {
        if (job.cols[c].len / column_itemsize[c] != job.n) {
            PyErr_SetString(PyExc_ValueError, "encode_rank: columns of different lengths");
            goto done;
        }
    }
    if (get_buffer(dep_ptr_o, &more[0], 8, 0, "dep_ptr") < 0 || get_buffer(dep_pos_o, &more[1], 4, 0, "dep_pos") < 0
        || optional_buffer(names_o, &more[2], 1, "names") < 0
        || optional_buffer(names_off_o, &more[3], 8, "names_off") < 0
        || optional_buffer(extra_o, &more[4], 1, "extra") < 0
        || optional_buffer(extra_off_o, &more[5], 8, "extra_off") < 0) {
        goto done;
    }
    if (more[0].len / 8 != job.n + 1 || (more[2].obj && more[3].len / 8 != job.n + 1)
        || (more[4].obj && more[5].len / 8 != job.n + 1)) {
        PyErr_SetString(PyExc_ValueError, "encode_rank: dep_ptr/names_off/extra_off need n+1 entries");
        goto done;
    }
    job.dep_ptr = (const int64_t *)more[0].buf;
    job.dep_pos = (const int32_t *)more[1].buf;
    Py_ssize_t n_deps = more[1].len / 4;
    if (job.dep_ptr[0] != 0 || job.dep_ptr[job.n] > n_deps) {
        PyErr_SetString(PyExc_ValueError, "encode_rank: dep_ptr does not index dep_pos");
        goto done;
    }
    for (Py_ssize_t i = 0; i < job.n; i++) {
        if (job.dep_ptr[i + 1] < job.dep_ptr[i]) {
            PyErr_SetString(PyExc_ValueError, "encode_rank: dep_ptr decreases");
            goto done;
        }
    }
    if (more[2].obj) {
        const int64_t *off = (const int64_t *)more[3].buf;
        for (Py_ssize_t i = 0; i < job.n; i++) {
            if (off[i] < 0 || off[i + 1] < off[i] || off[i + 1] > more[2].len) {
                PyErr_SetString(PyExc_ValueError, "encode_rank: names_off does not index names");
                goto done;
            }
        }
        job.names = (const uint8_t *)more[2].buf;
        job.names_off = off;
    }
    if (more[4].obj) {
        const int64_t *off = (const int64_t *)more[5].buf;
        for (Py_ssize_t i = 0; i < job.n; i++) {
            if (off[i] < 0 || off[i + 1] < off[i] || off[i + 1] > more[4].len) {
                PyErr_SetString(PyExc_ValueError, "encode_rank: extra_off does not index extra");
                goto done;
            }
        }
        job.extra = (const uint8_t *)more[4].buf;
        job.extra_off = off;
    }
    /* an upper bound of the output: per node its fixed fields and every attribute at full width */
    Py_ssize_t per_node = 5 + 11 + 11 + 11 + 11;
    for (int k = 0; k < n_known; k++) {
        per_node += 4 + known_len[k] + 1 + 10;
    }
    Py_ssize_t bound = job.n * per_node + n_deps * 10 + more[2].len + more[4].len;
    uint8_t *out;
    if (out_o != Py_None) {
        /* into the caller's buffer: too small, and the answer is -(the size it needs) */
        if (get_buffer(out_o, &target, 1, 1, "out") < 0) {
            goto done;
        }
        if (target.len < bound) {
            result = PyLong_FromSsize_t(-bound);
            goto done;
        }
        out = (uint8_t *)target.buf;
    } else {
        result = PyBytes_FromStringAndSize(NULL, bound);
        if (result == NULL) {
            goto done;
        }
        out = (uint8_t *)PyBytes_AS_STRING(result);
    }
    uint8_t *end;
    Py_BEGIN_ALLOW_THREADS
    end = encode_nodes(&job, out);
    Py_END_ALLOW_THREADS
    if (end == NULL) {
        Py_CLEAR(result);
        PyErr_SetString(PyExc_ValueError, "encode_rank: a dependency position is out of range");
        goto done;
    }
    if (target.obj) {
        result = PyLong_FromSsize_t((Py_ssize_t)(end - out));
    } else {
        _PyBytes_Resize(&result, (Py_ssize_t)(end - out));
    }
done:
    if (target.obj) {
        PyBuffer_Release(&target);
    }
    release_all(job.cols, N_COLUMNS);
    release_all(more, 6);
    return result;
}

/* -- framing --------------------------------------------------------------------------------- */
/* Read a varint at *pos (< end); 0 when it is cut off or longer than 10 bytes. */
static inline int get_varint(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, uint64_t *out) {
    uint64_t v = 0;
    Py_ssize_t p = *pos;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= end) {
            return 0;
        }
        uint8_t b = buf[p++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *pos = p;
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Walk one file's delimited stream; store spans when starts != NULL. Return the count, or -1. */
static Py_ssize_t frame_one(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, int64_t *starts, int64_t *ends) {
    Py_ssize_t count = 0;
    while (pos < end) {
        uint64_t len;
        if (!get_varint(buf, &pos, end, &len) || len > (uint64_t)(end - pos)) {
            return -1;
        }
        if (len == 0 && count > 0) {
            return -1; /* an empty Node (type 0) after the GlobalMetadata: no reader accepts it */
        }
        if (starts != NULL) {
            starts[count] = pos;
            ends[count] = pos + (Py_ssize_t)len;
        }
        pos += (Py_ssize_t)len;
        count++;
    }
    return count;
}

static PyObject *frame_files(PyObject *self, PyObject *args) {
    PyObject *data_o, *bases_o, *sizes_o;
    if (!PyArg_ParseTuple(args, "OOO", &data_o, &bases_o, &sizes_o)) {
        return NULL;
    }
    Py_buffer v[3];
    memset(v, 0, sizeof v);
    PyObject *result = NULL, *starts = NULL, *ends = NULL, *counts = NULL;
    if (get_buffer(data_o, &v[0], 1, 0, "data") < 0 || get_buffer(bases_o, &v[1], 8, 0, "bases") < 0
        || get_buffer(sizes_o, &v[2], 8, 0, "sizes") < 0) {
        goto done;
    }
    Py_ssize_t nf = v[1].len / 8;
    const int64_t *bases = (const int64_t *)v[1].buf, *sizes = (const int64_t *)v[2].buf;
    const uint8_t *buf = (const uint8_t *)v[0].buf;
    if (v[2].len / 8 != nf) {
        PyErr_SetString(PyExc_ValueError, "frame_files: bases and sizes differ in length");
        goto done;
    }
    for (Py_ssize_t f = 0; f < nf; f++) {
        if (bases[f] < 0 || sizes[f] < 0 || bases[f] + sizes[f] > v[0].len) {
            PyErr_SetString(PyExc_ValueError, "frame_files: a file span lies outside the data");
            goto done;
        }
    }
    counts = PyByteArray_FromStringAndSize(NULL, nf * 8);
    if (counts == NULL) {
        goto done;
    }
    int64_t *cnt = (int64_t *)PyByteArray_AS_STRING(counts);
    Py_ssize_t total = 0, bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t f = 0; f < nf; f++) {
        cnt[f] = frame_one(buf, bases[f], bases[f] + sizes[f], NULL, NULL);
        if (cnt[f] < 0) {
            bad = f;
            break;
        }
        total += cnt[f];
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        result = Py_BuildValue("(OOOn)", Py_None, Py_None, Py_None, bad);
        goto done;
    }
    starts = PyByteArray_FromStringAndSize(NULL, total * 8);
    ends = PyByteArray_FromStringAndSize(NULL, total * 8);
    if (starts == NULL || ends == NULL) {
        goto done;
    }
    int64_t *st = (int64_t *)PyByteArray_AS_STRING(starts), *en = (int64_t *)PyByteArray_AS_STRING(ends);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t at = 0;
    for (Py_ssize_t f = 0; f < nf; f++) {
        at += frame_one(buf, bases[f], bases[f] + sizes[f], st + at, en + at);
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(OOOn)", starts, ends, counts, (Py_ssize_t)-1);
done:
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    Py_XDECREF(counts);
    release_all(v, 3);
    return result;
}

/* -- decoding -------------------------------------------------------------------------------- */
typedef struct {
    const uint8_t *buf;
    const int64_t *starts, *ends;
    Py_ssize_t n;
    uint64_t *ids, *duration;
    int64_t *kind, *colmat, *per_node, *name_pos, *name_len;
    uint8_t *seen;  /* colmat and seen are node-major: (n, known attributes) */
    uint64_t *deps; /* grown with realloc */
    Py_ssize_t n_deps, cap_deps;
    int64_t *slow;
    Py_ssize_t n_slow;
    int any_name;
    int out_of_memory;
} DecodeJob;

static int push_dep(DecodeJob *job, uint64_t v) {
    if (job->n_deps == job->cap_deps) {
        Py_ssize_t cap = job->cap_deps ? job->cap_deps * 2 : 1024;
        uint64_t *grown = realloc(job->deps, (size_t)cap * sizeof(uint64_t));
        if (grown == NULL) {
            job->out_of_memory = 1;
            return 0;
        }
        job->deps = grown;
        job->cap_deps = cap;
    }
    job->deps[job->n_deps++] = v;
    return 1;
}

/* A feeder converts any integer oneof to the column's integer (as hub.chakra's general path does). */
static int int_of_field(uint64_t field, uint64_t raw, int64_t *out) {
    switch (field) {
    case 7: *out = (int32_t)(uint32_t)raw; return 1;                        /* int32_val */
    case 9: case 13: *out = (int64_t)raw; return 1;                         /* int64_val, uint64_val */
    case 11: *out = (int64_t)(raw & 0xFFFFFFFFu); return 1;                 /* uint32_val */
    case 15: case 17: *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1); return 1; /* sint32/sint64 */
    default: return 0;
    }
}

/* One attribute in buf[a:b] of the usual layout (name, then one integer value) with a known
 * name: store it in the node's column; 0 for anything else (the general path takes the node). */
static int decode_attr(DecodeJob *job, Py_ssize_t i, Py_ssize_t a, Py_ssize_t b) {
    const uint8_t *buf = job->buf;
    uint64_t name_len, key, raw;
    if (a >= b || buf[a] != 0x0A) {
        return 0;
    }
    a++;
    if (!get_varint(buf, &a, b, &name_len) || name_len > (uint64_t)(b - a)) {
        return 0;
    }
    Py_ssize_t name_at = a;
    a += (Py_ssize_t)name_len;
    if (!get_varint(buf, &a, b, &key) || (key & 7) != 0 || !get_varint(buf, &a, b, &raw) || a != b) {
        return 0;
    }
    int64_t value;
    if (!int_of_field(key >> 3, raw, &value)) {
        return 0;
    }
    for (int k = 0; k < n_known; k++) {
        if ((uint64_t)known_len[k] == name_len && memcmp(buf + name_at, known_name[k], (size_t)name_len) == 0) {
            if (value < known_lo[k] || value > known_hi[k]) {
                return 0; /* out of range: the general path reports it */
            }
            job->colmat[i * n_known + k] = value;
            job->seen[i * n_known + k] = 1;
            return 1;
        }
    }
    return 0;
}

/* Decode node i; 0 when the general path must take it. Every output starts at its default
 * (absent fields are proto3 zeros, absent attributes their KNOWN default, unseen). */
static int decode_node(DecodeJob *job, Py_ssize_t i) {
    const uint8_t *buf = job->buf;
    Py_ssize_t pos = job->starts[i], end = job->ends[i];
    job->ids[i] = 0;
    job->kind[i] = 0;
    job->duration[i] = 0;
    job->name_len[i] = 0;
    int64_t *values = job->colmat + i * n_known;
    uint8_t *seen = job->seen + i * n_known;
    for (int k = 0; k < n_known; k++) {
        values[k] = known_default[k];
        seen[k] = 0;
    }
    while (pos < end) {
        uint64_t key, v;
        if (!get_varint(buf, &pos, end, &key)) {
            return 0;
        }
        uint64_t field = key >> 3;
        int wt = (int)(key & 7);
        if (wt == 0) {
            if (!get_varint(buf, &pos, end, &v)) {
                return 0;
            }
            if (field == 1) {
                job->ids[i] = v;
            } else if (field == 3) {
                job->kind[i] = (int64_t)v;
            } else if (field == 7) {
                job->duration[i] = v;
            } else if (field != 6) { /* start_time_micros means nothing to an algorithm */
                return 0;            /* unpacked deps, unknown fields */
            }
        } else if (wt == 2) {
            if (!get_varint(buf, &pos, end, &v) || v > (uint64_t)(end - pos)) {
                return 0;
            }
            Py_ssize_t a = pos, b = pos + (Py_ssize_t)v;
            pos = b;
            if (field == 2) {
                job->name_pos[i] = a;
                job->name_len[i] = b - a;
                job->any_name = 1;
            } else if (field == 5) {
                while (a < b) {
                    uint64_t d;
                    if (!get_varint(buf, &a, b, &d) || !push_dep(job, d)) {
                        return 0;
                    }
                }
            } else if (field != 10 || !decode_attr(job, i, a, b)) {
                return 0; /* ctrl_deps (ordered after data_deps), IOInfo, foreign attributes */
            }
        } else {
            return 0;
        }
    }
    return 1;
}

static void decode_all(DecodeJob *job) {
    for (Py_ssize_t i = 0; i < job->n && !job->out_of_memory; i++) {
        Py_ssize_t mark = job->n_deps;
        if (decode_node(job, i)) {
            job->per_node[i] = job->n_deps - mark;
        } else {
            job->n_deps = mark;
            job->per_node[i] = 0;
            job->slow[job->n_slow++] = i;
        }
    }
}

static PyObject *decode_nodes(PyObject *self, PyObject *args) {
    PyObject *o[11];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9],
                          &o[10])) {
        return NULL;
    }
    /* data, starts, ends, ids, kind, duration, colmat, seen, per_node, name_pos, name_len */
    static const Py_ssize_t itemsize[11] = {1, 8, 8, 8, 8, 8, 8, 1, 8, 8, 8};
    static const int writable[11] = {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static const char *what[11] = {"data", "starts", "ends", "ids", "kind", "duration", "colmat", "seen",
                                   "per_node", "name_pos", "name_len"};
    Py_buffer v[11];
    memset(v, 0, sizeof v);
    PyObject *result = NULL, *deps = NULL, *slow = NULL;
    DecodeJob job;
    memset(&job, 0, sizeof job);
    for (int k = 0; k < 11; k++) {
        if (get_buffer(o[k], &v[k], itemsize[k], writable[k], what[k]) < 0) {
            goto done;
        }
    }
    job.n = v[1].len / 8;
    Py_ssize_t need[11] = {0, job.n, job.n, job.n, job.n, job.n, job.n * n_known, job.n * n_known, job.n, job.n, job.n};
    for (int k = 1; k < 11; k++) {
        if (v[k].len / itemsize[k] != need[k]) {
            PyErr_Format(PyExc_ValueError, "decode_nodes: %s has %zd items, expected %zd", what[k],
                         v[k].len / itemsize[k], need[k]);
            goto done;
        }
    }
    job.buf = (const uint8_t *)v[0].buf;
    job.starts = (const int64_t *)v[1].buf;
    job.ends = (const int64_t *)v[2].buf;
    for (Py_ssize_t i = 0; i < job.n; i++) {
        if (job.starts[i] < 0 || job.ends[i] < job.starts[i] || job.ends[i] > v[0].len) {
            PyErr_SetString(PyExc_ValueError, "decode_nodes: a node span lies outside the data");
            goto done;
        }
    }
    job.ids = (uint64_t *)v[3].buf;
    job.kind = (int64_t *)v[4].buf;
    job.duration = (uint64_t *)v[5].buf;
    job.colmat = (int64_t *)v[6].buf;
    job.seen = (uint8_t *)v[7].buf;
    job.per_node = (int64_t *)v[8].buf;
    job.name_pos = (int64_t *)v[9].buf;
    job.name_len = (int64_t *)v[10].buf;
    slow = PyByteArray_FromStringAndSize(NULL, job.n * 8);
    if (slow == NULL) {
        goto done;
    }
    job.slow = (int64_t *)PyByteArray_AS_STRING(slow);
    Py_BEGIN_ALLOW_THREADS
    decode_all(&job);
    Py_END_ALLOW_THREADS
    if (job.out_of_memory) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyByteArray_Resize(slow, job.n_slow * 8) < 0) {
        goto done;
    }
    deps = PyByteArray_FromStringAndSize((const char *)job.deps, job.n_deps * 8);
    if (deps == NULL) {
        goto done;
    }
    result = Py_BuildValue("(OOO)", deps, slow, job.any_name ? Py_True : Py_False);
done:
    free(job.deps);
    Py_XDECREF(deps);
    Py_XDECREF(slow);
    release_all(v, 11);
    return result;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(names, defaults, columns, lo, hi): the known node attributes (bytes), their defaults,"
     " their RankGraph column and the values the decoder accepts"},
    {"encode_rank", encode_rank, METH_VARARGS,
     "encode_rank(astrasim, rank, columns, dep_ptr, dep_pos, names, names_off, extra, extra_off, out=None) -> bytes, "
     "or with a writable out buffer the bytes written into it (-(size needed) when it is too small)"},
    {"frame_files", frame_files, METH_VARARGS,
     "frame_files(data, bases, sizes) -> (starts, ends, counts, bad file or -1), int64 bytearrays"},
    {"decode_nodes", decode_nodes, METH_VARARGS,
     "decode_nodes(data, starts, ends, ids, kind, duration, colmat, seen, per_node, name_pos, name_len)"
     " -> (dependency ids, slow node indices, any name)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hub._native._codec",
                                    "The per-node work of the Chakra ET codec (see hub/chakra).", -1, methods};

PyMODINIT_FUNC PyInit__codec(void) { return PyModule_Create(&module); }
