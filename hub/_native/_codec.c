/*
 * hub._native._codec: the per-node work of the Chakra ET codec (hub/chakra), compiled.
 *
 * Four routines, each the only implementation of its job:
 *   encode_rank     one rank graph's columns -> its delimited Node messages (bytes, or into a
 *                   caller's reusable buffer: a writer then touches no fresh memory per file)
 *   frame_files     many delimited streams laid end to end -> the span of every message
 *   decode_batch    node spans of consecutive ranks -> their RankGraph columns and dependencies
 *   decode_metadata GlobalMetadata spans -> (version, attributes) of the usual kinds
 *
 * The wire layout is protobuf's encoding of et_def.proto (hub/chakra/et_def.proto); the rules
 * of what is written (which attributes, when) are the collhub profile's
 * (docs/spec/collective-profile.md), and the attribute names come from Python
 * (hub/chakra/_profile.py) through configure(), so they are defined once.
 *
 * The decoders never raise on bad input: a node it does not fully understand (a foreign
 * attribute, a non-integer value, IOInfo, ctrl_deps, a malformed field) is listed as "slow"
 * (a GlobalMetadata comes back as None),
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
    Py_ssize_t p = *pos;
    if (p < end && buf[p] < 0x80) { /* the common case: one byte */
        *out = buf[p];
        *pos = p + 1;
        return 1;
    }
    uint64_t v = 0;
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
    int every = 1; /* 0: only each file's first message (its GlobalMetadata) */
    if (!PyArg_ParseTuple(args, "OOO|p", &data_o, &bases_o, &sizes_o, &every)) {
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
    Py_ssize_t kept = every ? total : nf;
    starts = PyByteArray_FromStringAndSize(NULL, kept * 8);
    ends = PyByteArray_FromStringAndSize(NULL, kept * 8);
    if (starts == NULL || ends == NULL) {
        goto done;
    }
    int64_t *st = (int64_t *)PyByteArray_AS_STRING(starts), *en = (int64_t *)PyByteArray_AS_STRING(ends);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t at = 0;
    for (Py_ssize_t f = 0; f < nf; f++) {
        if (every) {
            at += frame_one(buf, bases[f], bases[f] + sizes[f], st + at, en + at);
        } else if (cnt[f] == 0) {
            st[f] = en[f] = bases[f];
        } else { /* framed above: the first length is sound */
            Py_ssize_t pos = bases[f];
            uint64_t len = 0;
            get_varint(buf, &pos, bases[f] + sizes[f], &len);
            st[f] = pos;
            en[f] = pos + (Py_ssize_t)len;
        }
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
/* decode_batch: the node messages of consecutive rank files (framed by frame_files first; each
 * file's GlobalMetadata is skipped, decode_metadata takes it) -> the final RankGraph columns of the
 * batch (flat, node order), each rank's CSR dependency index, its dependency ids, the spans of
 * node names, the nodes left to the general path ("slow") and, per rank, whether it is "clean":
 * every node fast, ids equal to positions and every dependency naming a node of the rank, so
 * that Python cuts its graph out of the columns with no further work. A fast node has passed
 * every per-node check of the reader (node type, peers present, id < 2^63, attribute ranges);
 * any node that would fail one is slow, and the general decoder reports the precise problem. */
typedef struct {
    const uint8_t *buf;
    Py_ssize_t len;                /* bytes in buf */
    const int64_t *bases, *sizes, *counts; /* each file's span in buf, its node count */
    Py_ssize_t n, n_ranks;
    int64_t *ids, *size, *duration;
    int8_t *kind, *src_buf, *dst_buf, *op;
    int32_t *peer, *tag, *count, *src_off, *dst_off, *tb, *chan;
    int64_t *dep_ptr;              /* n + n_ranks: each rank's n_r + 1 entries, from 0 */
    uint64_t *deps;                /* grown with realloc */
    Py_ssize_t n_deps, cap_deps;
    int64_t *names;                /* (node, start, length) triples, grown with realloc */
    Py_ssize_t n_names, cap_names;
    int64_t *slow;                 /* (node, start, end) triples */
    Py_ssize_t n_slow;
    uint8_t *clean;
    uint32_t *same;                /* per rank: bit c = column c equals the previous rank's (bit 14
                                    * dep_ptr, 15 the dependencies), both ranks clean */
    uint8_t *colbase[N_COLUMNS];
    int guess;                     /* the known attribute expected next (writers keep one order) */
    int out_of_memory;
    int misframed;                 /* a file does not hold its count of messages (it changed) */
} DecodeJob;

/* each column's value before any attribute is seen: the KNOWN default of the attribute stored there */
static int64_t column_default[N_COLUMNS];
/* the known names zero-padded to 16 bytes and the masks of their length, for a compare of two
 * words (names of up to 16 bytes, read where 16 bytes lie inside the data) */
static uint64_t known_word[MAX_KNOWN][2], known_mask[MAX_KNOWN][2];

static void prepare_names(void) {
    for (int k = 0; k < n_known; k++) {
        uint8_t pad[16] = {0}, mask[16] = {0};
        int len = known_len[k] < 16 ? known_len[k] : 16;
        memcpy(pad, known_name[k], (size_t)len);
        memset(mask, 0xFF, (size_t)len);
        memcpy(known_word[k], pad, 16);
        memcpy(known_mask[k], mask, 16);
    }
}

/* Whether buf[at:at+len] is known name k (the data holds at least 16 bytes from at when fast). */
static inline int is_name(const uint8_t *buf, Py_ssize_t at, uint64_t len, int k, int fast) {
    if ((uint64_t)known_len[k] != len) {
        return 0;
    }
    if (fast && len <= 16) {
        uint64_t w[2];
        memcpy(w, buf + at, 16);
        return ((w[0] & known_mask[k][0]) == known_word[k][0]) & ((w[1] & known_mask[k][1]) == known_word[k][1]);
    }
    return memcmp(buf + at, known_name[k], (size_t)len) == 0;
}

static int grow(void **items, Py_ssize_t *cap, Py_ssize_t need, size_t item, int *oom) {
    if (need <= *cap) {
        return 1;
    }
    Py_ssize_t cap2 = *cap ? *cap : 1024;
    while (cap2 < need) {
        cap2 *= 2;
    }
    void *grown = realloc(*items, (size_t)cap2 * item);
    if (grown == NULL) {
        *oom = 1;
        return 0;
    }
    *items = grown;
    *cap = cap2;
    return 1;
}

static inline int push_dep(DecodeJob *job, uint64_t v) {
    if (job->n_deps == job->cap_deps
        && !grow((void **)&job->deps, &job->cap_deps, job->n_deps + 1, sizeof(uint64_t), &job->out_of_memory)) {
        return 0;
    }
    job->deps[job->n_deps++] = v;
    return 1;
}

static int push_name(DecodeJob *job, Py_ssize_t i, Py_ssize_t a, Py_ssize_t b) {
    if (!grow((void **)&job->names, &job->cap_names, 3 * (job->n_names + 1), sizeof(int64_t), &job->out_of_memory)) {
        return 0;
    }
    int64_t *t = job->names + 3 * job->n_names++;
    t[0] = i;
    t[1] = a;
    t[2] = b - a;
    return 1;
}

/* A feeder converts any integer oneof to the column's integer (as hub.chakra's general path does). */
static inline int int_of_field(uint64_t field, uint64_t raw, int64_t *out) {
    if (field == 7) { /* int32_val, what writers use for all but comm_size: no jump table */
        *out = (int32_t)(uint32_t)raw;
        return 1;
    }
    switch (field) {
    case 7: *out = (int32_t)(uint32_t)raw; return 1;                        /* int32_val */
    case 9: case 13: *out = (int64_t)raw; return 1;                         /* int64_val, uint64_val */
    case 11: *out = (int64_t)(raw & 0xFFFFFFFFu); return 1;                 /* uint32_val */
    case 15: case 17: *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1); return 1; /* sint32/sint64 */
    default: return 0;
    }
}

/* One attribute in buf[a:b] of the usual layout (name, then one integer value) with a known name:
 * (its index in KNOWN, its value) through *k and *value; 0 for anything else (the general path). */
static int decode_attr(DecodeJob *job, Py_ssize_t a, Py_ssize_t b, int *k_out, int64_t *value) {
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
    if (!get_varint(buf, &a, b, &key) || (key & 7) != 0 || !get_varint(buf, &a, b, &raw) || a != b
        || !int_of_field(key >> 3, raw, value)) {
        return 0;
    }
    int fast = name_at + 16 <= job->len, nk = n_known, k = job->guess;
    if (!is_name(buf, name_at, name_len, k, fast)) { /* writers keep one order: rarely a miss */
        int j = 1;
        for (k = k + 1 == nk ? 0 : k + 1; j < nk && !is_name(buf, name_at, name_len, k, fast); j++) {
            k = k + 1 == nk ? 0 : k + 1;
        }
        if (j == nk) {
            return 0;
        }
    }
    if (*value < known_lo[k] || *value > known_hi[k]) {
        return 0; /* out of range: the general path reports it */
    }
    job->guess = k + 1 == nk ? 0 : k + 1;
    *k_out = k;
    return 1;
}

/* Decode node i into the columns; 0 when the general path must take it (its dependencies and
 * name are then taken back by the caller). Absent fields are proto3 zeros, absent attributes
 * their KNOWN default. *id_out is the node's id. */
static int decode_node(DecodeJob *job, Py_ssize_t i, Py_ssize_t pos, Py_ssize_t end, uint64_t *id_out) {
    const uint8_t *buf = job->buf;
    uint64_t id = 0, kind = 0, duration = 0;
    int64_t col[N_COLUMNS], peer_of[2] = {-1, -1}; /* comm_src, comm_dst */
    uint32_t seen = 0;
    memcpy(col, column_default, sizeof col);
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
                id = v;
            } else if (field == 3) {
                kind = v;
            } else if (field == 7) {
                duration = v;
            } else if (field != 6) { /* start_time_micros means nothing to an algorithm */
                return 0;            /* unpacked deps, unknown fields */
            }
        } else if (wt == 2) {
            if (!get_varint(buf, &pos, end, &v) || v > (uint64_t)(end - pos)) {
                return 0;
            }
            Py_ssize_t a = pos, b = pos + (Py_ssize_t)v;
            pos = b;
            if (field == 10) {
                int k;
                int64_t value;
                if (!decode_attr(job, a, b, &k, &value)) {
                    return 0; /* foreign attributes, other typings */
                }
                seen |= 1u << k;
                if (k == A_SRC || k == A_DST) {
                    peer_of[k - A_SRC] = value;
                } else {
                    col[known_column[k]] = value;
                }
            } else if (field == 5) {
                while (a < b) {
                    uint64_t d;
                    if (!get_varint(buf, &a, b, &d) || !push_dep(job, d)) {
                        return 0;
                    }
                }
            } else if (field != 2 || (b > a && !push_name(job, i, a, b))) {
                return 0; /* ctrl_deps (ordered after data_deps), IOInfo */
            }
        } else {
            return 0;
        }
    }
    /* the reader's per-node checks: what fails one goes to the general path, which reports it */
    int send = kind == NODE_SEND, recv = kind == NODE_RECV;
    if (kind < 1 || kind > 7 || id >= (uint64_t)1 << 63 || (send && !(seen & (1u << A_DST)))
        || (recv && !(seen & (1u << A_SRC)))) {
        return 0;
    }
    if (!(seen & (1u << A_CNT))) {
        col[C_COUNT] = send || recv; /* one chunk per message unless stated */
    }
    job->ids[i] = (int64_t)id;
    job->kind[i] = (int8_t)kind;
    job->peer[i] = (int32_t)(send ? peer_of[1] : recv ? peer_of[0] : -1);
    job->duration[i] = duration > 0 ? (int64_t)duration : -1;
    job->tag[i] = (int32_t)col[C_TAG];
    job->count[i] = (int32_t)col[C_COUNT];
    job->src_buf[i] = (int8_t)col[C_SRC_BUF];
    job->src_off[i] = (int32_t)col[C_SRC_OFF];
    job->dst_buf[i] = (int8_t)col[C_DST_BUF];
    job->dst_off[i] = (int32_t)col[C_DST_OFF];
    job->op[i] = (int8_t)col[C_OP];
    job->size[i] = col[C_SIZE];
    job->tb[i] = (int32_t)col[C_TB];
    job->chan[i] = (int32_t)col[C_CHAN];
    *id_out = id;
    return 1;
}

/* The length-delimited message at *pos (< end): its body [*a, *b); 0 when it does not fit. */
static inline int next_message(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, Py_ssize_t *a, Py_ssize_t *b) {
    uint64_t len;
    if (!get_varint(buf, pos, end, &len) || len > (uint64_t)(end - *pos)) {
        return 0;
    }
    *a = *pos;
    *b = *pos + (Py_ssize_t)len;
    *pos = *b;
    return 1;
}

/* Which columns of the rank at nodes a.. (nr of them) hold the same bytes as the previous rank's
 * (regular algorithms repeat most columns on every rank: Python shares them, frozen). */
static uint32_t same_as_previous(const DecodeJob *job, Py_ssize_t a, int64_t nr, Py_ssize_t r, Py_ssize_t dep0,
                                 Py_ssize_t prev_dep0) {
    uint32_t same = 0;
    for (int c = 0; c < N_COLUMNS; c++) {
        size_t w = (size_t)column_itemsize[c];
        const uint8_t *col = job->colbase[c];
        same |= (uint32_t)(memcmp(col + (size_t)a * w, col + (size_t)(a - nr) * w, (size_t)nr * w) == 0) << c;
    }
    const int64_t *ptr = job->dep_ptr + a + r, *prev = ptr - (nr + 1);
    same |= (uint32_t)(memcmp(ptr, prev, (size_t)(nr + 1) * 8) == 0) << N_COLUMNS;
    Py_ssize_t k = job->n_deps - dep0;
    same |= (uint32_t)(dep0 - prev_dep0 == k && memcmp(job->deps + dep0, job->deps + prev_dep0, (size_t)k * 8) == 0)
            << (N_COLUMNS + 1);
    return same;
}

static void decode_all(DecodeJob *job) {
    Py_ssize_t i = 0, prev_dep0 = 0;
    for (Py_ssize_t r = 0; r < job->n_ranks && !job->out_of_memory && !job->misframed; r++) {
        int64_t nr = job->counts[r];
        int64_t *ptr = job->dep_ptr + i + r;
        Py_ssize_t dep0 = job->n_deps, pos = job->bases[r], end = pos + job->sizes[r], a, b;
        int clean = 1;
        ptr[0] = 0;
        if (!next_message(job->buf, &pos, end, &a, &b)) { /* the GlobalMetadata, decoded apart */
            job->misframed = 1;
            return;
        }
        for (int64_t loc = 0; loc < nr; loc++, i++) {
            if (!next_message(job->buf, &pos, end, &a, &b)) {
                job->misframed = 1;
                return;
            }
            Py_ssize_t mark = job->n_deps, name_mark = job->n_names;
            uint64_t id;
            if (decode_node(job, i, a, b, &id)) {
                clean &= id == (uint64_t)loc;
            } else {
                job->n_deps = mark;
                job->n_names = name_mark;
                int64_t *t = job->slow + 3 * job->n_slow++;
                t[0] = i;
                t[1] = a;
                t[2] = b;
                clean = 0;
            }
            ptr[loc + 1] = job->n_deps - dep0;
        }
        if (pos != end) {
            job->misframed = 1;
            return;
        }
        for (Py_ssize_t d = dep0; clean && d < job->n_deps; d++) {
            clean = job->deps[d] < (uint64_t)nr;
        }
        job->clean[r] = (uint8_t)clean;
        job->same[r] = clean && r > 0 && job->clean[r - 1] && job->counts[r - 1] == nr
                           ? same_as_previous(job, i - nr, nr, r, dep0, prev_dep0)
                           : 0;
        prev_dep0 = dep0;
    }
}

/* The tables the decoder derives from configure(): each column's default, the padded names. */
static int prepare_tables(void) {
    for (int c = 0; c < N_COLUMNS; c++) {
        column_default[c] = 0;
    }
    for (int k = 0; k < n_known; k++) {
        if (k != A_SRC && k != A_DST) {
            if (known_column[k] < 0) {
                PyErr_SetString(PyExc_ValueError, "decode_batch: a known attribute has no column");
                return -1;
            }
            column_default[known_column[k]] = known_default[k];
        }
    }
    prepare_names();
    return 0;
}

static void job_columns(DecodeJob *job, const Py_buffer *cols, const Py_buffer *ptr_v) {
    job->ids = (int64_t *)cols[C_IDS].buf;
    job->kind = (int8_t *)cols[C_KIND].buf;
    job->peer = (int32_t *)cols[C_PEER].buf;
    job->tag = (int32_t *)cols[C_TAG].buf;
    job->count = (int32_t *)cols[C_COUNT].buf;
    job->src_buf = (int8_t *)cols[C_SRC_BUF].buf;
    job->src_off = (int32_t *)cols[C_SRC_OFF].buf;
    job->dst_buf = (int8_t *)cols[C_DST_BUF].buf;
    job->dst_off = (int32_t *)cols[C_DST_OFF].buf;
    job->op = (int8_t *)cols[C_OP].buf;
    job->size = (int64_t *)cols[C_SIZE].buf;
    job->duration = (int64_t *)cols[C_DURATION].buf;
    job->tb = (int32_t *)cols[C_TB].buf;
    job->chan = (int32_t *)cols[C_CHAN].buf;
    job->dep_ptr = (int64_t *)ptr_v->buf;
    for (int c = 0; c < N_COLUMNS; c++) {
        job->colbase[c] = (uint8_t *)cols[c].buf;
    }
}

static PyObject *decode_batch(PyObject *self, PyObject *args) {
    PyObject *o[4], *columns, *dep_ptr_o;
    if (!PyArg_ParseTuple(args, "OOOOO!O", &o[0], &o[1], &o[2], &o[3], &PyTuple_Type, &columns, &dep_ptr_o)) {
        return NULL;
    }
    /* data, bases, sizes, counts, then the columns, then dep_ptr */
    static const Py_ssize_t itemsize[4] = {1, 8, 8, 8};
    static const char *what[4] = {"data", "bases", "sizes", "counts"};
    Py_buffer v[4 + N_COLUMNS + 1];
    memset(v, 0, sizeof v);
    Py_buffer *cols = v + 4, *ptr_v = v + 4 + N_COLUMNS;
    PyObject *result = NULL, *deps = NULL, *slow = NULL, *names = NULL, *clean = NULL, *same = NULL;
    DecodeJob job;
    memset(&job, 0, sizeof job);
    for (int k = 0; k < 4; k++) {
        if (get_buffer(o[k], &v[k], itemsize[k], 0, what[k]) < 0) {
            goto done;
        }
    }
    if (PyTuple_GET_SIZE(columns) != N_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "decode_batch: one buffer per RankGraph column expected");
        goto done;
    }
    job.n_ranks = v[3].len / 8;
    job.counts = (const int64_t *)v[3].buf;
    for (Py_ssize_t r = 0; r < job.n_ranks; r++) {
        if (job.counts[r] < 0) {
            PyErr_SetString(PyExc_ValueError, "decode_batch: a negative node count");
            goto done;
        }
        job.n += job.counts[r];
    }
    for (int c = 0; c < N_COLUMNS; c++) {
        if (get_buffer(PyTuple_GET_ITEM(columns, c), &cols[c], column_itemsize[c], 1, "column") < 0) {
            goto done;
        }
        if (cols[c].len / column_itemsize[c] != job.n) {
            PyErr_SetString(PyExc_ValueError, "decode_batch: a column's length is not the node count");
            goto done;
        }
    }
    if (get_buffer(dep_ptr_o, ptr_v, 8, 1, "dep_ptr") < 0) {
        goto done;
    }
    job.buf = (const uint8_t *)v[0].buf;
    job.len = v[0].len;
    job.bases = (const int64_t *)v[1].buf;
    job.sizes = (const int64_t *)v[2].buf;
    if (v[1].len != v[3].len || v[2].len != v[3].len || ptr_v->len / 8 != job.n + job.n_ranks) {
        PyErr_SetString(PyExc_ValueError, "decode_batch: bases, sizes, counts and dep_ptr do not agree");
        goto done;
    }
    for (Py_ssize_t r = 0; r < job.n_ranks; r++) {
        if (job.bases[r] < 0 || job.sizes[r] < 0 || job.bases[r] + job.sizes[r] > v[0].len) {
            PyErr_SetString(PyExc_ValueError, "decode_batch: a file span lies outside the data");
            goto done;
        }
    }
    if (prepare_tables() < 0) {
        goto done;
    }
    job_columns(&job, cols, ptr_v);
    slow = PyByteArray_FromStringAndSize(NULL, job.n * 24);
    clean = PyByteArray_FromStringAndSize(NULL, job.n_ranks);
    same = PyByteArray_FromStringAndSize(NULL, job.n_ranks * 4);
    if (slow == NULL || clean == NULL || same == NULL) {
        goto done;
    }
    job.slow = (int64_t *)PyByteArray_AS_STRING(slow);
    job.clean = (uint8_t *)PyByteArray_AS_STRING(clean);
    job.same = (uint32_t *)PyByteArray_AS_STRING(same);
    Py_BEGIN_ALLOW_THREADS
    decode_all(&job);
    Py_END_ALLOW_THREADS
    if (job.out_of_memory) {
        PyErr_NoMemory();
        goto done;
    }
    if (job.misframed) {
        PyErr_SetString(PyExc_ValueError, "decode_batch: a file does not hold the messages it was framed with");
        goto done;
    }
    if (PyByteArray_Resize(slow, job.n_slow * 24) < 0) {
        goto done;
    }
    deps = PyByteArray_FromStringAndSize((const char *)job.deps, job.n_deps * 8);
    names = PyByteArray_FromStringAndSize((const char *)job.names, job.n_names * 24);
    if (deps == NULL || names == NULL) {
        goto done;
    }
    result = Py_BuildValue("(OOOOO)", deps, slow, names, clean, same);
done:
    free(job.deps);
    free(job.names);
    Py_XDECREF(deps);
    Py_XDECREF(slow);
    Py_XDECREF(names);
    Py_XDECREF(clean);
    Py_XDECREF(same);
    release_all(v, 4 + N_COLUMNS + 1);
    return result;
}

/* -- GlobalMetadata -------------------------------------------------------------------------- */
/* One AttributeProto of buf[a:b] with a name and one scalar of the usual kinds (an integer
 * typing, bool_val or a UTF-8 string_val) -> (name, oneof field number, value); NULL without an
 * exception set for anything else (doc_string, lists, floats, bytes, repeated values), which the
 * general decoder takes. */
static PyObject *metadata_attr(const uint8_t *buf, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t name_a = -1, name_b = -1, val_a = 0, val_b = 0;
    uint64_t field = 0, raw = 0;
    int64_t dummy;
    int values = 0;
    while (a < b) {
        uint64_t key, v;
        if (!get_varint(buf, &a, b, &key)) {
            return NULL;
        }
        uint64_t f = key >> 3;
        int wt = (int)(key & 7);
        if (wt == 0 && int_of_field(f, 0, &dummy)) {
            if (!get_varint(buf, &a, b, &raw)) {
                return NULL;
            }
            field = f;
            values++;
        } else if (wt == 0 && f == 27) {
            if (!get_varint(buf, &a, b, &raw)) {
                return NULL;
            }
            field = f;
            values++;
        } else if (wt == 2 && (f == 1 || f == 29)) {
            if (!get_varint(buf, &a, b, &v) || v > (uint64_t)(b - a)) {
                return NULL;
            }
            if (f == 1) {
                name_a = a;
                name_b = a + (Py_ssize_t)v;
            } else {
                val_a = a;
                val_b = a + (Py_ssize_t)v;
                field = f;
                values++;
            }
            a += (Py_ssize_t)v;
        } else {
            return NULL;
        }
    }
    if (name_a < 0 || values != 1) {
        return NULL;
    }
    PyObject *name = PyUnicode_DecodeUTF8((const char *)buf + name_a, name_b - name_a, NULL);
    PyObject *value = NULL;
    if (name != NULL) {
        int64_t iv;
        if (field == 29) {
            value = PyUnicode_DecodeUTF8((const char *)buf + val_a, val_b - val_a, NULL);
        } else if (field == 27) {
            value = PyBool_FromLong(raw != 0);
        } else if (field == 13) {
            value = PyLong_FromUnsignedLongLong(raw);
        } else {
            int_of_field(field, raw, &iv);
            value = PyLong_FromLongLong(iv);
        }
    }
    PyObject *t = value != NULL ? Py_BuildValue("(NKN)", name, (unsigned long long)field, value) : NULL;
    if (t == NULL) {
        if (value == NULL) {
            Py_XDECREF(name);
        }
        PyErr_Clear(); /* invalid UTF-8: the general decoder says where */
    }
    return t;
}

/* The GlobalMetadata of buf[a:b] -> (version, ((name, field, value), ...)); None for anything but
 * a version and attributes of the usual kinds. */
static PyObject *metadata_one(const uint8_t *buf, Py_ssize_t a, Py_ssize_t b) {
    PyObject *attrs = PyList_New(0), *version = NULL;
    if (attrs == NULL) {
        return NULL;
    }
    while (a < b) {
        uint64_t key, len;
        if (!get_varint(buf, &a, b, &key) || (key & 7) != 2 || !get_varint(buf, &a, b, &len)
            || len > (uint64_t)(b - a) || (key >> 3 != 1 && key >> 3 != 2)) {
            goto fallback;
        }
        Py_ssize_t end = a + (Py_ssize_t)len;
        if (key >> 3 == 1) {
            Py_XDECREF(version);
            version = PyUnicode_DecodeUTF8((const char *)buf + a, end - a, NULL);
            if (version == NULL) {
                PyErr_Clear();
                goto fallback;
            }
        } else {
            PyObject *t = metadata_attr(buf, a, end);
            if (t == NULL || PyList_Append(attrs, t) < 0) {
                Py_XDECREF(t);
                if (PyErr_Occurred()) {
                    Py_XDECREF(version);
                    Py_DECREF(attrs);
                    return NULL;
                }
                goto fallback;
            }
            Py_DECREF(t);
        }
        a = end;
    }
    if (version == NULL) {
        version = PyUnicode_FromString("");
        if (version == NULL) {
            Py_DECREF(attrs);
            return NULL;
        }
    }
    PyObject *tuple = PyList_AsTuple(attrs);
    Py_DECREF(attrs);
    if (tuple == NULL) {
        Py_DECREF(version);
        return NULL;
    }
    return Py_BuildValue("(NN)", version, tuple);
fallback:
    Py_XDECREF(version);
    Py_DECREF(attrs);
    Py_RETURN_NONE;
}

static PyObject *decode_metadata(PyObject *self, PyObject *args) {
    PyObject *data_o, *starts_o, *ends_o;
    if (!PyArg_ParseTuple(args, "OOO", &data_o, &starts_o, &ends_o)) {
        return NULL;
    }
    Py_buffer v[3];
    memset(v, 0, sizeof v);
    PyObject *result = NULL;
    if (get_buffer(data_o, &v[0], 1, 0, "data") < 0 || get_buffer(starts_o, &v[1], 8, 0, "starts") < 0
        || get_buffer(ends_o, &v[2], 8, 0, "ends") < 0) {
        goto done;
    }
    Py_ssize_t n = v[1].len / 8;
    const int64_t *starts = (const int64_t *)v[1].buf, *ends = (const int64_t *)v[2].buf;
    if (v[2].len != v[1].len) {
        PyErr_SetString(PyExc_ValueError, "decode_metadata: starts and ends differ in length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (starts[i] < 0 || ends[i] < starts[i] || ends[i] > v[0].len) {
            PyErr_SetString(PyExc_ValueError, "decode_metadata: a span lies outside the data");
            goto done;
        }
    }
    result = PyList_New(n);
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        PyObject *one = metadata_one((const uint8_t *)v[0].buf, starts[i], ends[i]);
        if (one == NULL) {
            Py_CLEAR(result);
        } else {
            PyList_SET_ITEM(result, i, one);
        }
    }
done:
    release_all(v, 3);
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
     "frame_files(data, bases, sizes, every=True) -> (starts, ends, counts, bad file or -1), int64 bytearrays;"
     " every=False: only each file's first message"},
    {"decode_batch", decode_batch, METH_VARARGS,
     "decode_batch(data, bases, sizes, counts, columns, dep_ptr) -> (dependency ids, slow (node, start, end),"
     " name spans, clean ranks, columns the same as the previous rank's): the nodes of framed rank files"
     " into the batch's RankGraph columns"},
    {"decode_metadata", decode_metadata, METH_VARARGS,
     "decode_metadata(data, starts, ends) -> [(version, ((name, field, value), ...)) or None]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hub._native._codec",
                                    "The per-node work of the Chakra ET codec (see hub/chakra).", -1, methods};

PyMODINIT_FUNC PyInit__codec(void) { return PyModule_Create(&module); }
