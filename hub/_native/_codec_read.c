/*
 * hub._native._codec, the read half's node decoder: decode_batch, framed rank files -> their
 * RankGraph columns and dependencies (the nodes it does not fully understand listed as "slow").
 */
#include "_codec.h"
#include <stdlib.h>

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

/* Each rank's node count (job->counts) and their sum (job->n); -1 with a ValueError for a negative one. */
static int count_nodes(DecodeJob *job, const Py_buffer *counts_v) {
    job->n_ranks = counts_v->len / 8;
    job->counts = (const int64_t *)counts_v->buf;
    for (Py_ssize_t r = 0; r < job->n_ranks; r++) {
        if (job->counts[r] < 0) {
            PyErr_SetString(PyExc_ValueError, "decode_batch: a negative node count");
            return -1;
        }
        job->n += job->counts[r];
    }
    return 0;
}

PyObject *codec_decode_batch(PyObject *self, PyObject *args) {
    (void)self;
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
    if (count_nodes(&job, &v[3]) < 0) {
        goto done;
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
