/*
 * hub._native._codec, the workload scan: the Node messages of one workload rank file checked as
 * decode_workload (_codec_workload.c) checks them, without making a Python object per node.
 *
 * A workload read is lazy (hub/chakra/_workload_io.py): the read frames every file, runs this
 * scan and keeps the bytes; the WorkloadNode objects are made by decode_workload when the nodes
 * are first used. So that a read that succeeds can never fail later, this scan refuses exactly
 * the ranks decode_workload refuses (tests/chakra/test_workload_lazy.py compares the two on the
 * real traces and on fuzzed input), by the same rules:
 *   - a malformed field, a node type outside 1..7, an id or dependency above INT64_MAX;
 *   - an attribute list value, a value field of the wrong wire type or width;
 *   - a string (node name, attribute name or doc, IOInfo field, string value) that is not UTF-8
 *     as Python's strict decoder takes it;
 *   - a comm_* attribute whose (last) value is not an exact int; comm_size outside 0..1 TiB;
 *   - a SEND/RECV without its peer (comm_dst/comm_src) or with a peer outside the set.
 * What it gives back are the columns the read needs at once: the ids, the dependencies (data
 * then ctrl, per node, as WorkloadNode.deps lists them), their count per node, the node types,
 * the distinct names of the COMM_COLL nodes (a workload's name when its metadata has none) and the
 * dependencies on ids the rank does not hold (which the read drops and reports); a rank that
 * uses an id twice is refused, as the read refuses it to the general decoder, which names it.
 * No hashing: files list their ids in increasing order (else a sorted copy); a dependency is
 * looked up in a bitmap of the id range (or by binary search where the range is sparse).
 */
#include "_codec.h"

enum { OK = 0, REFUSED = 1, ERROR = -1 };

/* -- Python's strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF ----------- */
static int utf8_slow(const uint8_t *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t b = p[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        Py_ssize_t more;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) {
            more = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            more = 2;
            if (b == 0xE0) {
                lo = 0xA0; /* overlong */
            } else if (b == 0xED) {
                hi = 0x9F; /* surrogates */
            }
        } else if (b >= 0xF0 && b <= 0xF4) {
            more = 3;
            if (b == 0xF0) {
                lo = 0x90; /* overlong */
            } else if (b == 0xF4) {
                hi = 0x8F; /* above U+10FFFF */
            }
        } else {
            return 0;
        }
        if (i + more >= n) {
            return 0; /* cut off */
        }
        if (p[i + 1] < lo || p[i + 1] > hi) {
            return 0;
        }
        for (Py_ssize_t k = 2; k <= more; k++) {
            if ((p[i + k] & 0xC0) != 0x80) {
                return 0;
            }
        }
        i += more + 1;
    }
    return 1;
}

/* The usual case first: all ASCII, found eight bytes at a time without a branch per byte. */
static inline int utf8_ok(const uint8_t *p, Py_ssize_t n) {
    uint64_t acc = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; i++) {
        acc |= p[i];
    }
    return (acc & 0x8080808080808080ULL) == 0 ? 1 : utf8_slow(p, n);
}

static int str_ok(const uint8_t *buf, const field_t *f) { return utf8_ok(buf + f->s, f->e - f->s); }

/* -- growing int64 arrays --------------------------------------------------------------------- */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} lvec;

static int lvec_push(lvec *a, int64_t x) {
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? 2 * a->cap : 1024;
        int64_t *v = PyMem_Realloc(a->v, (size_t)cap * sizeof(int64_t));
        if (v == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* -- the comm_* attributes: what the dict of decode_workload would hold for them ---------------- */
enum { K_TYPE, K_SIZE, K_SRC, K_DST, K_TAG, N_COMM };
static const char *comm_keys[N_COMM] = {"comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag"};
enum { V_ABSENT, V_INT, V_BIG, V_OTHER }; /* V_BIG: an int above INT64_MAX */

typedef struct {
    int kind;
    int64_t v;
} value_t;

static int comm_key(const uint8_t *p, Py_ssize_t n) {
    if (n < 8 || n > 9 || memcmp(p, "comm_", 5) != 0) {
        return -1;
    }
    for (int k = 0; k < N_COMM; k++) {
        if ((Py_ssize_t)strlen(comm_keys[k]) == n && memcmp(p, comm_keys[k], (size_t)n) == 0) {
            return k;
        }
    }
    return -1;
}

/* One AttributeProto oneof value field (as _codec_workload.c attr_value takes it): *out set when
 * it is a value field; OK with *out untouched when the field is not one. */
static int scan_value(const uint8_t *buf, const field_t *f, value_t *out) {
    uint64_t n = f->num;
    if (n >= 3 && n <= 32 && n % 2 == 0) {
        return REFUSED; /* a list */
    }
    if (n == 7 || n == 9 || n == 11 || n == 13 || n == 15 || n == 17 || n == 27) {
        if (f->wt != 0) {
            return REFUSED;
        }
        uint64_t r = f->v;
        switch (n) {
        case 7: *out = (value_t){V_INT, (int64_t)(int32_t)(uint32_t)r}; break;
        case 9: *out = (value_t){V_INT, (int64_t)r}; break;
        case 11: *out = (value_t){V_INT, (int64_t)(uint32_t)r}; break;
        case 13: *out = r > (uint64_t)INT64_MAX ? (value_t){V_BIG, 0} : (value_t){V_INT, (int64_t)r}; break;
        case 27: *out = (value_t){V_OTHER, 0}; break; /* a bool is not an exact int */
        default: *out = (value_t){V_INT, (int64_t)(r >> 1) ^ -(int64_t)(r & 1)};
        }
        return OK;
    }
    if (n == 3 || n == 5 || n == 19 || n == 21 || n == 23 || n == 25) {
        Py_ssize_t want = (n == 3 || n == 21 || n == 25) ? 8 : 4;
        if ((f->wt != 1 && f->wt != 5) || f->e - f->s != want) {
            return REFUSED;
        }
        const uint8_t *p = buf + f->s;
        uint64_t raw = 0;
        for (Py_ssize_t i = want - 1; i >= 0; i--) {
            raw = (raw << 8) | p[i];
        }
        if (n == 3 || n == 5) {
            *out = (value_t){V_OTHER, 0};
        } else if (n == 19) {
            *out = (value_t){V_INT, (int64_t)raw};
        } else if (n == 21) {
            *out = raw > (uint64_t)INT64_MAX ? (value_t){V_BIG, 0} : (value_t){V_INT, (int64_t)raw};
        } else if (n == 23) {
            *out = (value_t){V_INT, (int64_t)(int32_t)(uint32_t)raw};
        } else {
            *out = (value_t){V_INT, (int64_t)raw};
        }
        return OK;
    }
    if (n == 29 || n == 31) {
        if (f->wt != 2 || (n == 29 && !str_ok(buf, f))) {
            return REFUSED;
        }
        *out = (value_t){V_OTHER, 0};
    }
    return OK;
}

/* One AttributeProto: the comm_* values it sets (the last value field wins; no value: no entry). */
static int scan_attr(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, value_t comm[N_COMM]) {
    field_t f;
    value_t value = {V_ABSENT, 0};
    const uint8_t *name = NULL;
    Py_ssize_t name_len = 0;
    while (pos < end) {
        if (!next_field(buf, &pos, end, &f)) {
            return REFUSED;
        }
        if (f.num == 1 || f.num == 2) {
            if (f.wt == 2) {
                if (!str_ok(buf, &f)) {
                    return REFUSED;
                }
                if (f.num == 1) {
                    name = buf + f.s;
                    name_len = f.e - f.s;
                }
            }
        } else if (scan_value(buf, &f, &value) != OK) {
            return REFUSED;
        }
    }
    if (value.kind != V_ABSENT && name != NULL) {
        int k = comm_key(name, name_len);
        if (k >= 0) {
            comm[k] = value;
        }
    }
    return OK;
}

static int scan_io(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end) {
    field_t f;
    while (pos < end) {
        if (!next_field(buf, &pos, end, &f)) {
            return REFUSED;
        }
        if (f.num >= 1 && f.num <= 3 && f.wt == 2 && !str_ok(buf, &f)) {
            return REFUSED;
        }
    }
    return OK;
}

static int scan_deps(const uint8_t *buf, const field_t *f, lvec *out) {
    if (f->wt == 0) {
        return f->v > (uint64_t)INT64_MAX ? REFUSED : (lvec_push(out, (int64_t)f->v) < 0 ? ERROR : OK);
    }
    if (f->wt != 2) {
        return OK;
    }
    Py_ssize_t p = f->s;
    while (p < f->e) {
        uint64_t d;
        if (!get_varint(buf, &p, f->e, &d) || d > (uint64_t)INT64_MAX) {
            return REFUSED;
        }
        if (lvec_push(out, (int64_t)d) < 0) {
            return ERROR;
        }
    }
    return OK;
}

typedef struct {
    lvec ids, deps, per, ctrl;
    lvec types;
    PyObject *coll_names; /* set */
    int64_t ranks;
} scan_t;

/* Check the node at buf[s:e]; its id, type and dependencies appended to the columns. */
static int scan_one(scan_t *c, const uint8_t *buf, Py_ssize_t s, Py_ssize_t e) {
    uint64_t id = 0;
    int64_t type = 0;
    value_t comm[N_COMM] = {{V_ABSENT, 0}};
    const uint8_t *name = (const uint8_t *)"";
    Py_ssize_t name_len = 0, first_dep = c->deps.n, pos = s;
    int rc = OK;
    field_t f;
    c->ctrl.n = 0;
    while (pos < e && rc == OK) {
        if (!next_field(buf, &pos, e, &f)) {
            return REFUSED;
        }
        switch (f.num) {
        case 1:
        case 3:
        case 6:
        case 7:
            if (f.wt != 0) {
                return REFUSED;
            }
            if (f.num == 1) {
                id = f.v;
            } else if (f.num == 3) {
                type = (int64_t)f.v;
            }
            break;
        case 2:
            if (f.wt == 2) {
                if (!str_ok(buf, &f)) {
                    return REFUSED;
                }
                name = buf + f.s;
                name_len = f.e - f.s;
            }
            break;
        case 4: rc = scan_deps(buf, &f, &c->ctrl); break;
        case 5: rc = scan_deps(buf, &f, &c->deps); break;
        case 8:
        case 9: rc = f.wt == 2 ? scan_io(buf, f.s, f.e) : OK; break;
        case 10: rc = f.wt == 2 ? scan_attr(buf, f.s, f.e, comm) : OK; break;
        default: break;
        }
    }
    if (rc != OK) {
        return rc;
    }
    if (type < 1 || type > 7 || id > (uint64_t)INT64_MAX) {
        return REFUSED;
    }
    for (int k = 0; k < N_COMM; k++) {
        if (comm[k].kind == V_OTHER) {
            return REFUSED; /* present and not an exact int */
        }
    }
    if (comm[K_SIZE].kind == V_BIG
        || (comm[K_SIZE].kind == V_INT && (comm[K_SIZE].v < 0 || comm[K_SIZE].v > HUB_MAX_BYTES))) {
        return REFUSED;
    }
    if (type == NODE_SEND || type == NODE_RECV) {
        value_t peer = comm[type == NODE_SEND ? K_DST : K_SRC];
        if (peer.kind != V_INT || peer.v < 0 || peer.v >= c->ranks) {
            return REFUSED;
        }
    }
    for (Py_ssize_t k = 0; k < c->ctrl.n; k++) { /* deps = data_deps + ctrl_deps */
        if (lvec_push(&c->deps, c->ctrl.v[k]) < 0) {
            return ERROR;
        }
    }
    if (lvec_push(&c->ids, (int64_t)id) < 0 || lvec_push(&c->per, (int64_t)(c->deps.n - first_dep)) < 0) {
        return ERROR;
    }
    if (lvec_push(&c->types, type) < 0) {
        return ERROR;
    }
    if (type == NODE_COLL) {
        PyObject *str = PyUnicode_DecodeUTF8((const char *)name, name_len, NULL);
        int bad = str == NULL || PySet_Add(c->coll_names, str) < 0;
        Py_XDECREF(str);
        if (bad) {
            return ERROR;
        }
    }
    return OK;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int has(const int64_t *sorted, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && sorted[lo] == x;
}

/* The rank's id rules, over its columns: REFUSED when an id is used twice (the general decoder
 * names it); else every dependency on an id the rank does not hold, as (node id, missing id)
 * pairs in node order, appended to dangling. */
static int check_ids(scan_t *c, lvec *dangling) {
    Py_ssize_t n = c->ids.n;
    const int64_t *sorted = c->ids.v;
    int64_t *copy = NULL;
    for (Py_ssize_t i = 1; i < n && sorted == c->ids.v; i++) {
        if (c->ids.v[i] <= c->ids.v[i - 1]) { /* not in increasing order (files usually are): sort a copy */
            copy = PyMem_Malloc((size_t)n * sizeof(int64_t));
            if (copy == NULL) {
                PyErr_NoMemory();
                return ERROR;
            }
            memcpy(copy, c->ids.v, (size_t)n * sizeof(int64_t));
            qsort(copy, (size_t)n, sizeof(int64_t), cmp_i64);
            sorted = copy;
        }
    }
    int rc = OK;
    for (Py_ssize_t i = 1; i < n && rc == OK; i++) {
        if (sorted[i] == sorted[i - 1]) {
            rc = REFUSED;
        }
    }
    /* membership by a bitmap of the id range where it is no larger than the ids themselves
     * (a branchy binary search was a fifth of the scan), else by binary search */
    uint64_t *bits = NULL;
    int64_t lo = n ? sorted[0] : 0;
    uint64_t range = n ? (uint64_t)sorted[n - 1] - (uint64_t)lo + 1 : 0;
    if (rc == OK && n && range <= 64 * (uint64_t)n) {
        bits = PyMem_Calloc((size_t)(range / 64 + 1), sizeof(uint64_t));
        if (bits == NULL) {
            PyErr_NoMemory();
            rc = ERROR;
        }
        for (Py_ssize_t i = 0; i < n && bits != NULL; i++) {
            uint64_t at = (uint64_t)sorted[i] - (uint64_t)lo;
            bits[at / 64] |= 1ULL << (at % 64);
        }
    }
    Py_ssize_t d = 0;
    for (Py_ssize_t i = 0; i < n && rc == OK; i++) {
        for (int64_t k = 0; k < c->per.v[i] && rc == OK; k++, d++) {
            int64_t x = c->deps.v[d];
            uint64_t at = (uint64_t)x - (uint64_t)lo;
            int present = bits != NULL ? (x >= lo && at < range && ((bits[at / 64] >> (at % 64)) & 1))
                                       : has(sorted, n, x);
            if (!present && (lvec_push(dangling, c->ids.v[i]) < 0 || lvec_push(dangling, x) < 0)) {
                rc = ERROR;
            }
        }
    }
    PyMem_Free(bits);
    PyMem_Free(copy);
    return rc;
}

static PyObject *lvec_bytes(lvec *a) {
    return PyByteArray_FromStringAndSize((const char *)a->v, a->n * (Py_ssize_t)sizeof(int64_t));
}

/* The spans of a delimited stream, as frame_files takes them (hub/_native/_codec_frame.c): a
 * cut-off length, or an empty message after the first, refuses the file (the general framing
 * then reports it). */
static int next_message(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, int first, Py_ssize_t *s, Py_ssize_t *e) {
    uint64_t len;
    if (!get_varint(buf, pos, end, &len) || len > (uint64_t)(end - *pos) || (len == 0 && !first)) {
        return REFUSED;
    }
    *s = *pos;
    *e = *pos + (Py_ssize_t)len;
    *pos = *e;
    return OK;
}

/* The result tuple of both entry points (see scan_workload_file). */
static PyObject *scan_result(scan_t *c, lvec *starts, lvec *ends) {
    lvec dangling = {NULL, 0, 0};
    PyObject *ret = NULL, *types = PyByteArray_FromStringAndSize(NULL, c->types.n);
    int rc = types == NULL ? ERROR : check_ids(c, &dangling);
    if (rc == OK) {
        uint8_t *t = (uint8_t *)PyByteArray_AS_STRING(types);
        for (Py_ssize_t i = 0; i < c->types.n; i++) {
            t[i] = (uint8_t)c->types.v[i];
        }
        PyObject *col[7] = {lvec_bytes(starts), lvec_bytes(ends), lvec_bytes(&c->ids), lvec_bytes(&c->deps),
                            lvec_bytes(&c->per), lvec_bytes(&dangling), NULL};
        if (col[0] && col[1] && col[2] && col[3] && col[4] && col[5]) {
            ret = Py_BuildValue("(OOOOOOOO)", col[0], col[1], col[2], col[3], col[4], types, c->coll_names, col[5]);
        }
        for (int k = 0; k < 6; k++) {
            Py_XDECREF(col[k]);
        }
    } else if (rc == REFUSED) {
        ret = Py_NewRef(Py_None);
    }
    Py_XDECREF(types);
    PyMem_Free(dangling.v);
    return ret;
}

static void scan_free(scan_t *c) {
    Py_XDECREF(c->coll_names);
    PyMem_Free(c->ids.v);
    PyMem_Free(c->deps.v);
    PyMem_Free(c->per.v);
    PyMem_Free(c->ctrl.v);
    PyMem_Free(c->types.v);
}

/* scan_workload_file(data, ranks) -> (message starts, message ends (the GlobalMetadata's first, as
 * frame_files gives them), ids, deps, deps per node, types,
 * COMM_COLL names, dangling (node id, missing id) pairs), int64 bytearrays but types (uint8) and
 * the names (a set); or None when the file is refused: its framing (frame_files would refuse
 * it), a node decode_workload would refuse, an id used twice. One pass: each message is framed
 * and scanned as it is reached (the bytes are read once). The GlobalMetadata (the first
 * message) is left to the caller. */
PyObject *codec_scan_workload_file(PyObject *self, PyObject *args) {
    PyObject *data_o;
    long long ranks;
    (void)self;
    if (!PyArg_ParseTuple(args, "OL", &data_o, &ranks)) {
        return NULL;
    }
    Py_buffer view = {0};
    if (get_buffer(data_o, &view, 1, 0, "data") < 0) {
        return NULL;
    }
    const uint8_t *buf = view.buf;
    Py_ssize_t end = view.len, pos = 0, s, e;
    scan_t c = {{NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}, PySet_New(NULL), ranks};
    lvec starts = {NULL, 0, 0}, ends = {NULL, 0, 0};
    int rc = c.coll_names == NULL ? ERROR : (end == 0 ? REFUSED : next_message(buf, &pos, end, 1, &s, &e));
    if (rc == OK && (lvec_push(&starts, s) < 0 || lvec_push(&ends, e) < 0)) {
        rc = ERROR;
    }
    while (rc == OK && pos < end) {
        rc = next_message(buf, &pos, end, 0, &s, &e);
        if (rc == OK) {
            rc = (lvec_push(&starts, s) < 0 || lvec_push(&ends, e) < 0) ? ERROR : scan_one(&c, buf, s, e);
        }
    }
    PyObject *ret = rc == OK ? scan_result(&c, &starts, &ends) : (rc == REFUSED ? Py_NewRef(Py_None) : NULL);
    scan_free(&c);
    PyMem_Free(starts.v);
    PyMem_Free(ends.v);
    PyBuffer_Release(&view);
    return ret;
}
