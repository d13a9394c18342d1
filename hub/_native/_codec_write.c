/*
 * hub._native._codec, the write half: encode_rank, one rank graph's columns -> its delimited Node
 * messages, the collhub profile's rules of what is written (docs/spec/collective-profile.md).
 */
#include "_codec.h"

static int64_t column_value(const Py_buffer *col, Py_ssize_t i) {
    switch (col->itemsize) {
    case 1: return ((const int8_t *)col->buf)[i];
    case 4: return ((const int32_t *)col->buf)[i];
    default: return ((const int64_t *)col->buf)[i];
    }
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

/* The RankGraph columns into job->cols, each of its item size, all of one length (job->n); -1 with
 * an exception (the views taken so far stay in job->cols, for the caller to release). */
static int get_columns(EncodeJob *job, PyObject *columns) {
    for (int c = 0; c < N_COLUMNS; c++) {
        if (get_buffer(PyTuple_GET_ITEM(columns, c), &job->cols[c], column_itemsize[c], 0, "column") < 0) {
            return -1;
        }
    }
    job->n = job->cols[C_IDS].len / 8;
    for (int c = 1; c < N_COLUMNS; c++) {
        if (job->cols[c].len / column_itemsize[c] != job->n) {
            PyErr_SetString(PyExc_ValueError, "encode_rank: columns of different lengths");
            return -1;
        }
    }
    return 0;
}

/* dep_ptr indexes dep_pos: from 0, never decreasing, within its n_deps entries; -1 with a ValueError. */
static int check_dep_ptr(const EncodeJob *job, Py_ssize_t n_deps) {
    if (job->dep_ptr[0] != 0 || job->dep_ptr[job->n] > n_deps) {
        PyErr_SetString(PyExc_ValueError, "encode_rank: dep_ptr does not index dep_pos");
        return -1;
    }
    for (Py_ssize_t i = 0; i < job->n; i++) {
        if (job->dep_ptr[i + 1] < job->dep_ptr[i]) {
            PyErr_SetString(PyExc_ValueError, "encode_rank: dep_ptr decreases");
            return -1;
        }
    }
    return 0;
}

/* The per-node byte spans of an optional buffer (names, extras): off_v's n+1 offsets must index
 * data_v, else -1 with the ValueError `bad`; nothing is set when the buffer was not given. */
static int spans_of(const Py_buffer *data_v, const Py_buffer *off_v, Py_ssize_t n, const char *bad,
                    const uint8_t **data, const int64_t **off_out) {
    if (!data_v->obj) {
        return 0;
    }
    const int64_t *off = (const int64_t *)off_v->buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i] < 0 || off[i + 1] < off[i] || off[i + 1] > data_v->len) {
            PyErr_SetString(PyExc_ValueError, bad);
            return -1;
        }
    }
    *data = (const uint8_t *)data_v->buf;
    *off_out = off;
    return 0;
}

PyObject *codec_encode_rank(PyObject *self, PyObject *args) {
    (void)self;
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
    if (get_columns(&job, columns) < 0) {
        goto done;
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
    if (check_dep_ptr(&job, n_deps) < 0
        || spans_of(&more[2], &more[3], job.n, "encode_rank: names_off does not index names", &job.names,
                    &job.names_off) < 0
        || spans_of(&more[4], &more[5], job.n, "encode_rank: extra_off does not index extra", &job.extra,
                    &job.extra_off) < 0) {
        goto done;
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
