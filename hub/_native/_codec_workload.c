/*
 * hub._native._codec, the workload half: the Node messages of one workload rank file -> their
 * hub.chakra.WorkloadNode objects (hub/chakra/_workload_io.py).
 *
 * The general decoder (hub/chakra/_decode.py decode_node, then _workload_io._workload_node) is
 * the reference: this pass makes the same objects (same values, same types, same attribute order)
 * for every node it fully understands and gives up on the rest. It never raises on bad input:
 * anything it does not take (an attribute list, a malformed field, a node type outside 1..7, a
 * comm_* value the reader's checks would refuse, a SEND/RECV without its peer or with a peer
 * outside the set) makes the whole rank "refused", and the caller decodes that rank with the
 * general decoder, which reports the precise error (error for error, by construction). The ids
 * and dependencies come back as int64 arrays, so that the duplicate-id and dangling-dependency
 * rules are applied by numpy over the whole rank.
 *
 * Strings repeat (operator names, IOInfo "[]", attribute names): each distinct one is made once
 * per call and shared (str is immutable, so no caller can tell).
 */
#include "_codec.h"

/* -- a per-call cache of the str objects made from byte spans -------------------------------- */
#define SCACHE_SIZE 4096 /* a power of two */
#define SCACHE_MAX_LEN 256

typedef struct {
    const uint8_t *ptr; /* into the caller's data: valid for the call */
    Py_ssize_t len;
    PyObject *str;
} scache_entry;

typedef struct {
    scache_entry *slots;
} scache;

static uint64_t span_hash(const uint8_t *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211ULL;
    }
    return h;
}

/* A new reference to the str of p[0:n] (UTF-8), or NULL with no exception set when it is not
 * valid UTF-8 (the node is refused) or NULL with MemoryError. */
static PyObject *span_str(scache *c, const uint8_t *p, Py_ssize_t n) {
    scache_entry *e = NULL;
    if (n <= SCACHE_MAX_LEN) {
        uint64_t h = span_hash(p, n);
        for (int probe = 0; probe < 8; probe++) {
            scache_entry *s = &c->slots[(h + (uint64_t)probe) & (SCACHE_SIZE - 1)];
            if (s->str == NULL) {
                e = s;
                break;
            }
            if (s->len == n && memcmp(s->ptr, p, (size_t)n) == 0) {
                return Py_NewRef(s->str);
            }
        }
    }
    PyObject *str = PyUnicode_DecodeUTF8((const char *)p, n, NULL);
    if (str == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
        }
        return NULL;
    }
    if (e != NULL) {
        e->ptr = p;
        e->len = n;
        e->str = Py_NewRef(str);
    }
    return str;
}

static void scache_clear(scache *c) {
    for (int i = 0; i < SCACHE_SIZE; i++) {
        Py_XDECREF(c->slots[i].str);
    }
    PyMem_Free(c->slots);
}

/* -- growing int64 arrays (ids, dependencies) ------------------------------------------------- */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} ivec;

static int ivec_push(ivec *a, int64_t x) {
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

static PyObject *ivec_bytes(ivec *a) {
    return PyByteArray_FromStringAndSize((const char *)a->v, a->n * (Py_ssize_t)sizeof(int64_t));
}

/* -- the objects of one node -------------------------------------------------------------------- */
/* What a call shares: the interned names and the cache. */
typedef struct {
    scache cache;
    PyObject *node_cls;   /* WorkloadNode */
    PyObject *types;      /* tuple: NodeType member by value (index 0 unused) */
    PyObject *empty;      /* () for tp_new */
    PyObject *k_values, *k_shapes, *k_types, *empty_str;
    int64_t ranks;
} ctx_t;

/* Node attribute names collhub interprets (_workload_io._WORKLOAD_INTS, is_cpu_op, pg_name) and
 * the WorkloadNode fields, in the dataclass's order. */
enum { K_TYPE, K_SIZE, K_SRC, K_DST, K_TAG, N_COMM };
static const char *comm_keys[N_COMM] = {"comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag"};
enum { F_ID, F_NAME, F_TYPE, F_DEPS, F_DUR, F_CTYPE, F_CSIZE, F_CSRC, F_CDST, F_CTAG, F_CPU, F_PG, F_ATTRS,
       F_CTRL, F_IN, F_OUT, F_START, N_FIELDS };
static const char *field_names[N_FIELDS] = {
    "id",       "name",     "type",      "deps",    "duration_micros", "comm_type", "comm_size", "comm_src", "comm_dst",
    "comm_tag", "is_cpu_op", "pg_name", "attrs", "ctrl_deps",        "inputs",    "outputs",   "start_time_micros"};
static PyObject *comm_key_str[N_COMM];
static PyObject *field_str[N_FIELDS];
static PyObject *k_is_cpu_op, *k_pg_name;

static int intern_names(void) {
    if (field_str[0] != NULL) {
        return 0;
    }
    for (int i = 0; i < N_COMM; i++) {
        if ((comm_key_str[i] = PyUnicode_InternFromString(comm_keys[i])) == NULL) {
            return -1;
        }
    }
    for (int i = 0; i < N_FIELDS; i++) {
        if ((field_str[i] = PyUnicode_InternFromString(field_names[i])) == NULL) {
            return -1;
        }
    }
    k_is_cpu_op = PyUnicode_InternFromString("is_cpu_op");
    k_pg_name = PyUnicode_InternFromString("pg_name");
    return k_is_cpu_op != NULL && k_pg_name != NULL ? 0 : -1;
}

/* Result of a step: OK, REFUSED (the general decoder takes the rank), ERROR (a Python exception). */
enum { OK = 0, REFUSED = 1, ERROR = -1 };

static int str_of(ctx_t *c, const uint8_t *buf, const field_t *f, PyObject **out) {
    PyObject *s = span_str(&c->cache, buf + f->s, f->e - f->s);
    if (s == NULL) {
        return PyErr_Occurred() ? ERROR : REFUSED;
    }
    Py_XSETREF(*out, s);
    return OK;
}

/* The value of one AttributeProto oneof field, as _decode.decode_attr makes it. */
static int attr_value(ctx_t *c, const uint8_t *buf, const field_t *f, PyObject **out) {
    uint64_t n = f->num;
    PyObject *v = NULL;
    if (n >= 3 && n <= 32 && n % 2 == 0) {
        return REFUSED; /* a list: the general decoder */
    }
    if (n == 7 || n == 9 || n == 11 || n == 13 || n == 15 || n == 17 || n == 27) { /* varint kinds */
        if (f->wt != 0) {
            return REFUSED;
        }
        uint64_t r = f->v;
        switch (n) {
        case 7: v = PyLong_FromLong((long)(int32_t)(uint32_t)r); break;             /* int32 */
        case 9: v = PyLong_FromLongLong((long long)(int64_t)r); break;              /* int64 */
        case 11: v = PyLong_FromUnsignedLong((unsigned long)(uint32_t)r); break;    /* uint32 */
        case 13: v = PyLong_FromUnsignedLongLong((unsigned long long)r); break;     /* uint64 */
        case 27: v = Py_NewRef(r != 0 ? Py_True : Py_False); break;                 /* bool */
        default: v = PyLong_FromLongLong((long long)((int64_t)(r >> 1) ^ -(int64_t)(r & 1))); /* sint */
        }
    } else if (n == 3 || n == 5 || n == 19 || n == 21 || n == 23 || n == 25) { /* fixed kinds */
        Py_ssize_t want = (n == 3 || n == 21 || n == 25) ? 8 : 4;
        if ((f->wt != 1 && f->wt != 5) || f->e - f->s != want) {
            return REFUSED;
        }
        const uint8_t *p = buf + f->s;
        uint64_t raw = 0;
        for (Py_ssize_t i = want - 1; i >= 0; i--) {
            raw = (raw << 8) | p[i]; /* little-endian */
        }
        if (n == 3) {
            double d;
            memcpy(&d, &raw, 8);
            v = PyFloat_FromDouble(d);
        } else if (n == 5) {
            uint32_t r32 = (uint32_t)raw;
            float x;
            memcpy(&x, &r32, 4);
            v = PyFloat_FromDouble((double)x);
        } else if (n == 19 || n == 21) {
            v = PyLong_FromUnsignedLongLong((unsigned long long)raw);
        } else if (n == 23) {
            v = PyLong_FromLong((long)(int32_t)(uint32_t)raw);
        } else {
            v = PyLong_FromLongLong((long long)(int64_t)raw);
        }
    } else if (n == 29 || n == 31) { /* string, bytes */
        if (f->wt != 2) {
            return REFUSED;
        }
        if (n == 29) {
            v = span_str(&c->cache, buf + f->s, f->e - f->s);
            if (v == NULL) {
                return PyErr_Occurred() ? ERROR : REFUSED;
            }
        } else {
            v = PyBytes_FromStringAndSize((const char *)buf + f->s, f->e - f->s);
        }
    } else {
        return OK; /* not a value field: skipped */
    }
    if (v == NULL) {
        return ERROR;
    }
    Py_XSETREF(*out, v);
    return OK;
}

/* One AttributeProto into attrs (name -> value; an attribute without a value is left out). */
static int add_attr(ctx_t *c, const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, PyObject *attrs) {
    PyObject *name = NULL, *value = NULL;
    int rc = OK;
    field_t f;
    while (pos < end && rc == OK) {
        if (!next_field(buf, &pos, end, &f)) {
            rc = REFUSED;
        } else if (f.num == 1 || f.num == 2) {
            if (f.wt == 2) {
                PyObject *tmp = NULL;
                rc = str_of(c, buf, &f, &tmp); /* the doc string must be valid UTF-8 too */
                if (rc == OK && f.num == 1) {
                    Py_XSETREF(name, tmp);
                } else {
                    Py_XDECREF(tmp);
                }
            }
        } else {
            rc = attr_value(c, buf, &f, &value);
        }
    }
    if (rc == OK && value != NULL) {
        if (name == NULL) {
            name = Py_NewRef(c->empty_str);
        }
        rc = PyDict_SetItem(attrs, name, value) < 0 ? ERROR : OK;
    }
    Py_XDECREF(name);
    Py_XDECREF(value);
    return rc;
}

/* An IOInfo message -> {"values", "shapes", "types"} (absent ones ""). */
static int io_info(ctx_t *c, const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, PyObject **out) {
    PyObject *vals[3] = {Py_NewRef(c->empty_str), Py_NewRef(c->empty_str), Py_NewRef(c->empty_str)};
    int rc = OK;
    field_t f;
    while (pos < end && rc == OK) {
        if (!next_field(buf, &pos, end, &f)) {
            rc = REFUSED;
        } else if (f.num >= 1 && f.num <= 3 && f.wt == 2) {
            rc = str_of(c, buf, &f, &vals[f.num - 1]);
        }
    }
    if (rc == OK) {
        PyObject *d = PyDict_New();
        if (d == NULL || PyDict_SetItem(d, c->k_values, vals[0]) < 0 || PyDict_SetItem(d, c->k_shapes, vals[1]) < 0
            || PyDict_SetItem(d, c->k_types, vals[2]) < 0) {
            Py_XDECREF(d);
            rc = ERROR;
        } else {
            PyObject_GC_UnTrack(d); /* str values only: what the collector itself does on its first pass */
            Py_XSETREF(*out, d);
        }
    }
    for (int i = 0; i < 3; i++) {
        Py_DECREF(vals[i]);
    }
    return rc;
}

/* Dependencies of field 4/5 (one varint, or packed) onto list. */
static int add_deps(const uint8_t *buf, const field_t *f, PyObject *list) {
    if (f->wt == 0) {
        PyObject *x = PyLong_FromUnsignedLongLong((unsigned long long)f->v);
        int bad = x == NULL || PyList_Append(list, x) < 0;
        Py_XDECREF(x);
        return bad ? ERROR : OK;
    }
    if (f->wt != 2) {
        return OK; /* skipped, as the general decoder does */
    }
    Py_ssize_t p = f->s;
    while (p < f->e) {
        uint64_t d;
        if (!get_varint(buf, &p, f->e, &d)) {
            return REFUSED;
        }
        PyObject *x = PyLong_FromUnsignedLongLong((unsigned long long)d);
        int bad = x == NULL || PyList_Append(list, x) < 0;
        Py_XDECREF(x);
        if (bad) {
            return ERROR;
        }
    }
    return OK;
}

/* The reader's value checks on an int attribute (_workload_io._check_workload_node): an exact int
 * (not a bool) or absent. 1 when acceptable, with *val set if present. */
static int comm_value(PyObject *attrs, int k, PyObject **val) {
    PyObject *v = PyDict_GetItemWithError(attrs, comm_key_str[k]);
    *val = v;
    return v == NULL || PyLong_CheckExact(v);
}

/* Decode the node at buf[s:e] into a WorkloadNode (*out), its id and its deps (appended). */
static int decode_one(ctx_t *c, const uint8_t *buf, Py_ssize_t s, Py_ssize_t e, PyObject **out, ivec *ids,
                      ivec *deps) {
    PyObject *fv[N_FIELDS] = {NULL};
    PyObject *data_deps = PyList_New(0), *ctrl = PyList_New(0), *attrs = PyDict_New();
    uint64_t id = 0, start = 0, dur = 0;
    int64_t type = 0;
    int rc = (data_deps && ctrl && attrs) ? OK : ERROR;
    Py_ssize_t pos = s;
    field_t f;
    fv[F_NAME] = Py_NewRef(c->empty_str);
    fv[F_IN] = Py_NewRef(Py_None);
    fv[F_OUT] = Py_NewRef(Py_None);
    while (pos < e && rc == OK) {
        if (!next_field(buf, &pos, e, &f)) {
            rc = REFUSED;
            break;
        }
        switch (f.num) {
        case 1:
        case 3:
        case 6:
        case 7:
            if (f.wt != 0) {
                rc = REFUSED;
            } else if (f.num == 1) {
                id = f.v;
            } else if (f.num == 3) {
                type = (int64_t)f.v;
            } else if (f.num == 6) {
                start = f.v;
            } else {
                dur = f.v;
            }
            break;
        case 2:
            if (f.wt == 2) {
                rc = str_of(c, buf, &f, &fv[F_NAME]);
            }
            break;
        case 4: rc = add_deps(buf, &f, ctrl); break;
        case 5: rc = add_deps(buf, &f, data_deps); break;
        case 8:
        case 9:
            if (f.wt == 2) {
                rc = io_info(c, buf, f.s, f.e, &fv[f.num == 8 ? F_IN : F_OUT]);
            }
            break;
        case 10:
            if (f.wt == 2) {
                rc = add_attr(c, buf, f.s, f.e, attrs);
            }
            break;
        default: break; /* unknown field: skipped */
        }
    }
    if (rc == OK && (type < 1 || type > 7 || id > (uint64_t)INT64_MAX)) {
        rc = REFUSED;
    }
    /* deps = data_deps + ctrl_deps */
    if (rc == OK) {
        fv[F_DEPS] = PySequence_Concat(data_deps, ctrl);
        fv[F_CTRL] = PyList_GetSlice(ctrl, 0, PyList_GET_SIZE(ctrl)); /* list(nd["ctrl_deps"]) */
        if (fv[F_DEPS] == NULL || fv[F_CTRL] == NULL) {
            rc = ERROR;
        }
    }
    if (rc == OK) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(fv[F_DEPS]) && rc == OK; i++) {
            unsigned long long d = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(fv[F_DEPS], i));
            if (d > (unsigned long long)INT64_MAX) {
                rc = REFUSED; /* not an id the numpy checks can hold: the general path */
            } else if (ivec_push(deps, (int64_t)d) < 0) {
                rc = ERROR;
            }
        }
        if (rc == OK && ivec_push(ids, (int64_t)id) < 0) {
            rc = ERROR;
        }
    }
    /* the comm_* fields and the reader's checks of them */
    PyObject *comm[N_COMM] = {NULL};
    for (int k = 0; k < N_COMM && rc == OK; k++) {
        if (!comm_value(attrs, k, &comm[k])) {
            rc = PyErr_Occurred() ? ERROR : REFUSED;
        }
    }
    if (rc == OK && comm[K_SIZE] != NULL) {
        int overflow = 0;
        long long size = PyLong_AsLongLongAndOverflow(comm[K_SIZE], &overflow);
        if (size == -1 && PyErr_Occurred()) {
            rc = ERROR;
        } else if (overflow != 0 || size < 0 || size > HUB_MAX_BYTES) {
            rc = REFUSED;
        }
    }
    if (rc == OK && (type == NODE_SEND || type == NODE_RECV)) {
        PyObject *peer = comm[type == NODE_SEND ? K_DST : K_SRC];
        long long p = peer == NULL ? -1 : PyLong_AsLongLong(peer);
        if (p == -1 && PyErr_Occurred()) {
            PyErr_Clear();
        }
        if (peer == NULL || p < 0 || p >= c->ranks) {
            rc = REFUSED;
        }
    }
    if (rc == OK) {
        fv[F_ID] = PyLong_FromUnsignedLongLong((unsigned long long)id);
        fv[F_TYPE] = Py_NewRef(PyTuple_GET_ITEM(c->types, type));
        fv[F_DUR] = PyLong_FromUnsignedLongLong((unsigned long long)dur);
        fv[F_START] = PyLong_FromUnsignedLongLong((unsigned long long)start);
        for (int k = 0; k < N_COMM; k++) {
            fv[F_CTYPE + k] = Py_NewRef(comm[k] != NULL ? comm[k] : Py_None);
        }
        PyObject *cpu = PyDict_GetItemWithError(attrs, k_is_cpu_op);
        int truth = cpu == NULL ? 0 : PyObject_IsTrue(cpu);
        fv[F_CPU] = truth < 0 ? NULL : Py_NewRef(truth ? Py_True : Py_False);
        PyObject *pg = PyDict_GetItemWithError(attrs, k_pg_name);
        fv[F_PG] = pg == NULL ? Py_NewRef(c->empty_str) : PyObject_Str(pg);
        /* every value is an int, float, str, bytes or bool (lists are refused): such a dict holds
         * no reference cycle, and the collector would untrack it on its first pass anyway (a
         * container stored in it later tracks it again) */
        PyObject_GC_UnTrack(attrs);
        fv[F_ATTRS] = Py_NewRef(attrs);
        for (int k = 0; k < N_FIELDS; k++) {
            if (fv[k] == NULL) {
                rc = ERROR;
            }
        }
    }
    if (rc == OK) {
        PyObject *obj = ((PyTypeObject *)c->node_cls)->tp_new((PyTypeObject *)c->node_cls, c->empty, NULL);
        for (int k = 0; k < N_FIELDS && obj != NULL; k++) {
            if (PyObject_GenericSetAttr(obj, field_str[k], fv[k]) < 0) {
                Py_CLEAR(obj);
            }
        }
        if (obj == NULL) {
            rc = ERROR;
        }
        *out = obj;
    }
    for (int k = 0; k < N_FIELDS; k++) {
        Py_XDECREF(fv[k]);
    }
    Py_XDECREF(data_deps);
    Py_XDECREF(ctrl);
    Py_XDECREF(attrs);
    return rc;
}

/* decode_workload(data, starts, ends, ranks, node_cls, types) -> (nodes, ids, deps, deps_per_node)
 * or None when the rank is refused (the general decoder then reads it). starts/ends: int64 spans
 * of the rank's Node messages (the GlobalMetadata left out). */
PyObject *codec_decode_workload(PyObject *self, PyObject *args) {
    PyObject *data_o, *starts_o, *ends_o, *node_cls, *types;
    long long ranks;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOLOO!", &data_o, &starts_o, &ends_o, &ranks, &node_cls, &PyTuple_Type, &types)) {
        return NULL;
    }
    if (!PyType_Check(node_cls) || PyTuple_GET_SIZE(types) != 8) {
        PyErr_SetString(PyExc_TypeError, "decode_workload: a class and the 8 NodeType members by value");
        return NULL;
    }
    if (intern_names() < 0) {
        return NULL;
    }
    Py_buffer views[3] = {{0}};
    if (get_buffer(data_o, &views[0], 1, 0, "data") < 0 || get_buffer(starts_o, &views[1], 8, 0, "starts") < 0
        || get_buffer(ends_o, &views[2], 8, 0, "ends") < 0 || views[1].len != views[2].len) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "decode_workload: one end per start");
        }
        release_all(views, 3);
        return NULL;
    }
    const uint8_t *buf = views[0].buf;
    const int64_t *st = views[1].buf, *en = views[2].buf;
    Py_ssize_t count = views[1].len / 8;
    ctx_t c = {{NULL}, node_cls, types, NULL, NULL, NULL, NULL, NULL, ranks};
    ivec ids = {NULL, 0, 0}, deps = {NULL, 0, 0}, per = {NULL, 0, 0};
    PyObject *nodes = PyList_New(count), *ret = NULL;
    c.cache.slots = PyMem_Calloc(SCACHE_SIZE, sizeof(scache_entry));
    c.empty = PyTuple_New(0);
    c.k_values = PyUnicode_InternFromString("values");
    c.k_shapes = PyUnicode_InternFromString("shapes");
    c.k_types = PyUnicode_InternFromString("types");
    c.empty_str = PyUnicode_FromStringAndSize("", 0);
    int rc = (nodes && c.cache.slots && c.empty && c.k_values && c.k_shapes && c.k_types && c.empty_str) ? OK : ERROR;
    if (rc == ERROR && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count && rc == OK; i++) {
        if (st[i] < 0 || en[i] < st[i] || en[i] > views[0].len) {
            rc = REFUSED;
            break;
        }
        PyObject *obj = NULL;
        Py_ssize_t before = deps.n;
        rc = decode_one(&c, buf, (Py_ssize_t)st[i], (Py_ssize_t)en[i], &obj, &ids, &deps);
        if (rc == OK) {
            PyList_SET_ITEM(nodes, i, obj);
            if (ivec_push(&per, (int64_t)(deps.n - before)) < 0) {
                rc = ERROR;
            }
        }
    }
    if (rc == OK) {
        PyObject *a = ivec_bytes(&ids), *b = ivec_bytes(&deps), *d = ivec_bytes(&per);
        if (a && b && d) {
            ret = PyTuple_Pack(4, nodes, a, b, d);
        }
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(d);
    } else if (rc == REFUSED) {
        ret = Py_NewRef(Py_None);
    }
    Py_XDECREF(nodes);
    if (c.cache.slots != NULL) {
        scache_clear(&c.cache);
    }
    Py_XDECREF(c.empty);
    Py_XDECREF(c.k_values);
    Py_XDECREF(c.k_shapes);
    Py_XDECREF(c.k_types);
    Py_XDECREF(c.empty_str);
    PyMem_Free(ids.v);
    PyMem_Free(deps.v);
    PyMem_Free(per.v);
    release_all(views, 3);
    return ret;
}
