/*
 * hub._native._codec, the workload write half: the WorkloadNode objects of one rank -> their
 * delimited Node messages (hub/chakra/_workload_io.py, write_workload).
 *
 * The Python encoder (_workload_io.encode_workload_node, then _wire.encode_node) is the
 * reference and states the rules: the named attributes first (is_cpu_op, then the node type's
 * comm_* that are set, then pg_name when set) unless the node's attrs already hold them, the
 * attrs in their order with the named fields' current values, ASTRA-sim's typing of the names it
 * reads (WORKLOAD_TYPING, passed in), the others typed by their Python value (bool, int as int64,
 * float as double, str, bytes), dependencies read as ctrl_deps written as ctrl_deps when they
 * still match deps, proto3 defaults omitted. This pass writes the same bytes for every node whose
 * values are of those plain kinds and returns None for a rank with anything else (a list, a
 * TypedValue, a numpy scalar, a negative id, an int beyond 64 bits, a str subclass...): the
 * caller then encodes that rank with the Python encoder, which also raises its errors.
 */
#include "_codec.h"

typedef struct {
    uint8_t *p;
    Py_ssize_t n, cap;
} obuf;

static int ob_reserve(obuf *b, Py_ssize_t more) {
    if (b->n + more <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) {
        cap *= 2;
    }
    uint8_t *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static int ob_varint(obuf *b, uint64_t v) {
    if (ob_reserve(b, 10) < 0) {
        return -1;
    }
    while (v > 0x7F) {
        b->p[b->n++] = (uint8_t)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
    return 0;
}

static int ob_bytes(obuf *b, const void *s, Py_ssize_t n) {
    if (ob_reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->p + b->n, s, (size_t)n);
    b->n += n;
    return 0;
}

/* key, length, payload */
static int ob_len_field(obuf *b, unsigned field, const void *s, Py_ssize_t n) {
    return ob_varint(b, (uint64_t)field << 3 | 2) < 0 || ob_varint(b, (uint64_t)n) < 0 || ob_bytes(b, s, n) < 0 ? -1 : 0;
}

enum { WR_OK = 0, WR_REFUSED = 1, WR_ERROR = -1 };

/* The UTF-8 of an exact str (a subclass: refused). */
static int utf8_of(PyObject *o, const char **s, Py_ssize_t *n) {
    if (!PyUnicode_CheckExact(o)) {
        return WR_REFUSED;
    }
    *s = PyUnicode_AsUTF8AndSize(o, n);
    if (*s == NULL) {
        PyErr_Clear(); /* lone surrogates: the Python encoder raises its own error */
        return WR_REFUSED;
    }
    return WR_OK;
}

/* An exact int (or a bool when bools are taken as ints) in [-2^63, 2^64) as its 64-bit varint
 * value (protobuf's two's complement for negatives), as encode_varint(int(v)) writes it. */
static int u64_of(PyObject *o, int bools, uint64_t *out) {
    if (PyBool_Check(o)) {
        if (!bools) {
            return WR_REFUSED;
        }
        *out = o == Py_True;
        return WR_OK;
    }
    if (!PyLong_CheckExact(o)) {
        return WR_REFUSED;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return WR_ERROR;
    }
    if (overflow == 0) {
        *out = (uint64_t)v;
        return WR_OK;
    }
    if (overflow < 0) {
        return WR_REFUSED;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return WR_REFUSED;
    }
    *out = (uint64_t)u;
    return WR_OK;
}

/* What the rank's nodes share: the typing table and one attribute's scratch body. */
typedef struct {
    PyObject *typing; /* dict: name -> oneof field name (WORKLOAD_TYPING) */
    obuf attr;        /* one attribute's body */
} wctx;

/* One AttributeProto (field 10 of the node) into node: name and value as encode_attr writes it.
 * A value of None is left out. */
static int put_attr(wctx *c, obuf *node, PyObject *name, PyObject *value) {
    if (value == Py_None) {
        return WR_OK;
    }
    if (PyTuple_Check(value)) {
        return WR_REFUSED; /* a TypedValue keeps its own typing: the Python encoder */
    }
    const char *ns;
    Py_ssize_t nn;
    int rc = utf8_of(name, &ns, &nn);
    if (rc != WR_OK) {
        return rc;
    }
    c->attr.n = 0;
    if (nn && ob_len_field(&c->attr, 1, ns, nn) < 0) {
        return WR_ERROR;
    }
    PyObject *field = PyDict_GetItemWithError(c->typing, name);
    if (field == NULL && PyErr_Occurred()) {
        return WR_ERROR;
    }
    const char *f = field == NULL ? NULL : PyUnicode_AsUTF8(field);
    if (field != NULL && f == NULL) {
        return WR_ERROR;
    }
    int is_bool, num;
    uint64_t u = 0;
    if (f != NULL) { /* ASTRA-sim's typing of the name */
        if (strcmp(f, "bool_val") == 0) {
            int t = PyObject_IsTrue(value);
            if (t < 0) {
                return WR_ERROR;
            }
            return ob_varint(&c->attr, 27 << 3) < 0 || ob_varint(&c->attr, (uint64_t)t) < 0
                           || ob_len_field(node, 10, c->attr.p, c->attr.n) < 0
                       ? WR_ERROR
                       : WR_OK;
        }
        if (strcmp(f, "string_val") == 0) {
            const char *s;
            Py_ssize_t n;
            if ((rc = utf8_of(value, &s, &n)) != WR_OK) {
                return rc;
            }
            return ob_len_field(&c->attr, 29, s, n) < 0 || ob_len_field(node, 10, c->attr.p, c->attr.n) < 0 ? WR_ERROR
                                                                                                               : WR_OK;
        }
        if (strcmp(f, "int64_val") == 0) {
            num = 9;
        } else if (strcmp(f, "int32_val") == 0) {
            num = 7;
        } else if (strcmp(f, "uint64_val") == 0) {
            num = 13;
        } else {
            return WR_REFUSED; /* bool_list */
        }
        if ((rc = u64_of(value, 1, &u)) != WR_OK) {
            return rc;
        }
        return ob_varint(&c->attr, (uint64_t)num << 3) < 0 || ob_varint(&c->attr, u) < 0
                       || ob_len_field(node, 10, c->attr.p, c->attr.n) < 0
                   ? WR_ERROR
                   : WR_OK;
    }
    /* typed by the value (_wire.infer_typed) */
    is_bool = PyBool_Check(value);
    if (is_bool || PyLong_CheckExact(value)) {
        if (is_bool) {
            num = 27;
            u = value == Py_True;
        } else {
            num = 9;
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (v == -1 && PyErr_Occurred()) {
                return WR_ERROR;
            }
            if (overflow) {
                return WR_REFUSED;
            }
            u = (uint64_t)v;
        }
        return ob_varint(&c->attr, (uint64_t)num << 3) < 0 || ob_varint(&c->attr, u) < 0
                       || ob_len_field(node, 10, c->attr.p, c->attr.n) < 0
                   ? WR_ERROR
                   : WR_OK;
    }
    if (PyFloat_CheckExact(value)) {
        double d = PyFloat_AS_DOUBLE(value);
        uint64_t raw;
        uint8_t le[8];
        memcpy(&raw, &d, 8);
        for (int i = 0; i < 8; i++) {
            le[i] = (uint8_t)(raw >> (8 * i));
        }
        return ob_varint(&c->attr, 3 << 3 | 1) < 0 || ob_bytes(&c->attr, le, 8) < 0
                       || ob_len_field(node, 10, c->attr.p, c->attr.n) < 0
                   ? WR_ERROR
                   : WR_OK;
    }
    if (PyUnicode_CheckExact(value)) {
        const char *s;
        Py_ssize_t n;
        if ((rc = utf8_of(value, &s, &n)) != WR_OK) {
            return rc;
        }
        return ob_len_field(&c->attr, 29, s, n) < 0 || ob_len_field(node, 10, c->attr.p, c->attr.n) < 0 ? WR_ERROR : WR_OK;
    }
    if (PyBytes_CheckExact(value)) {
        return ob_len_field(&c->attr, 31, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value)) < 0
                       || ob_len_field(node, 10, c->attr.p, c->attr.n) < 0
                   ? WR_ERROR
                   : WR_OK;
    }
    return WR_REFUSED;
}

/* The ids of an exact list of exact non-negative ints (< 2^63) into out[0:n]. */
static int ids_of(PyObject *list, int64_t **out, Py_ssize_t *n) {
    if (!PyList_CheckExact(list)) {
        return WR_REFUSED;
    }
    *n = PyList_GET_SIZE(list);
    *out = PyMem_Malloc((size_t)(*n ? *n : 1) * sizeof(int64_t));
    if (*out == NULL) {
        PyErr_NoMemory();
        return WR_ERROR;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        int overflow = 0;
        long long v = PyLong_CheckExact(o) ? PyLong_AsLongLongAndOverflow(o, &overflow) : -1;
        if (v == -1 && PyErr_Occurred()) {
            return WR_ERROR;
        }
        if (!PyLong_CheckExact(o) || overflow || v < 0) {
            return WR_REFUSED;
        }
        (*out)[i] = v;
    }
    return WR_OK;
}

static int put_packed(obuf *node, obuf *tmp, unsigned field, const int64_t *v, Py_ssize_t n, const uint8_t *skip) {
    tmp->n = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((skip == NULL || !skip[i]) && ob_varint(tmp, (uint64_t)v[i]) < 0) {
            return WR_ERROR;
        }
    }
    return tmp->n == 0 || ob_len_field(node, field, tmp->p, tmp->n) >= 0 ? WR_OK : WR_ERROR;
}

/* The node fields and attribute names read, made once (interned: their hashes are kept). */
static PyObject *interned[32];
static int n_interned = 0;

static PyObject *name_of(const char *s) {
    for (int i = 0; i < n_interned; i++) {
        if (strcmp(PyUnicode_AsUTF8(interned[i]), s) == 0) {
            return interned[i];
        }
    }
    if (n_interned == 32) {
        return NULL; /* not reached: fewer names exist */
    }
    PyObject *o = PyUnicode_InternFromString(s);
    if (o != NULL) {
        interned[n_interned++] = o;
    }
    return o;
}

/* An attribute of the node object (a new reference), or NULL. */
static PyObject *attr(PyObject *node, PyObject *name) { return name == NULL ? NULL : PyObject_GetAttr(node, name); }

/* int(v or 0), clamped at 0 (max(int(x or 0), 0)), for an exact int or None. */
static int micros_of(PyObject *o, uint64_t *out) {
    if (o == Py_None) {
        *out = 0;
        return WR_OK;
    }
    if (!PyLong_CheckExact(o)) {
        return WR_REFUSED;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return WR_ERROR;
    }
    if (overflow > 0) {
        return WR_REFUSED;
    }
    *out = overflow < 0 || v < 0 ? 0 : (uint64_t)v;
    return WR_OK;
}

static const char *comm_names[5] = {"comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag"};

/* One node's body into body (tmp: scratch). */
static int encode_one(wctx *c, PyObject *nd, obuf *body, obuf *tmp) {
    PyObject *o[12] = {NULL};
    enum { O_ID, O_NAME, O_TYPE, O_DEPS, O_CTRL, O_DUR, O_START, O_CPU, O_PG, O_ATTRS, O_IN, O_OUT };
    static const char *names[12] = {"id",        "name",      "type",    "deps",  "ctrl_deps", "duration_micros",
                                    "start_time_micros", "is_cpu_op", "pg_name", "attrs", "inputs",    "outputs"};
    PyObject *comm[5] = {NULL};
    static PyObject *onames[12], *cnames[5], *k_cpu;
    if (k_cpu == NULL) {
        for (int k = 0; k < 12; k++) {
            onames[k] = name_of(names[k]);
        }
        for (int k = 0; k < 5; k++) {
            cnames[k] = name_of(comm_names[k]);
        }
        k_cpu = name_of("is_cpu_op");
        if (k_cpu == NULL) {
            return WR_ERROR;
        }
    }
    /* the named attributes, in order: borrowed keys and values */
    PyObject *nkey[7], *nval[7];
    int nn = 0;
    int64_t *deps = NULL, *ctrl = NULL;
    uint8_t *removed = NULL;
    Py_ssize_t nd_deps = 0, nc = 0;
    int rc = WR_OK;
    for (int k = 0; k < 12 && rc == WR_OK; k++) {
        if ((o[k] = attr(nd, onames[k])) == NULL) {
            rc = WR_ERROR;
        }
    }
    for (int k = 0; k < 5 && rc == WR_OK; k++) {
        if ((comm[k] = attr(nd, cnames[k])) == NULL) {
            rc = WR_ERROR;
        }
    }
    uint64_t id = 0, type = 0, dur = 0, start = 0;
    if (rc == WR_OK) {
        rc = u64_of(o[O_ID], 0, &id);
        if (rc == WR_OK && (int64_t)id < 0) {
            rc = WR_REFUSED;
        }
    }
    if (rc == WR_OK) {
        long t = PyLong_Check(o[O_TYPE]) ? PyLong_AsLong(o[O_TYPE]) : -1; /* NodeType is an IntEnum */
        if (t == -1 && PyErr_Occurred()) {
            rc = WR_ERROR;
        } else if (t < 0) {
            rc = WR_REFUSED;
        }
        type = (uint64_t)t;
    }
    if (rc == WR_OK && ((rc = micros_of(o[O_DUR], &dur)) == WR_OK)) {
        rc = micros_of(o[O_START], &start);
    }
    if (rc == WR_OK && (rc = ids_of(o[O_DEPS], &deps, &nd_deps)) == WR_OK) {
        rc = ids_of(o[O_CTRL], &ctrl, &nc);
    }
    /* deps = data_deps + ctrl_deps as read: each ctrl dep removes its first match among the data
     * deps; a ctrl dep without one writes everything as data_deps */
    if (rc == WR_OK) {
        removed = PyMem_Calloc((size_t)(nd_deps ? nd_deps : 1), 1);
        if (removed == NULL) {
            PyErr_NoMemory();
            rc = WR_ERROR;
        }
    }
    int split = 1;
    for (Py_ssize_t j = 0; j < nc && rc == WR_OK && split; j++) {
        Py_ssize_t i = 0;
        while (i < nd_deps && (removed[i] || deps[i] != ctrl[j])) {
            i++;
        }
        if (i == nd_deps) {
            split = 0;
        } else {
            removed[i] = 1;
        }
    }
    /* the named attributes (is_cpu_op, the type's comm_*, pg_name) */
    if (rc == WR_OK) {
        int cpu = PyObject_IsTrue(o[O_CPU]);
        if (cpu < 0) {
            rc = WR_ERROR;
        } else {
            nkey[nn] = k_cpu;
            nval[nn++] = cpu ? Py_True : Py_False;
        }
        static const int coll_order[2] = {0, 1}, p2p_order[4] = {2, 3, 1, 4}, all_order[5] = {0, 1, 2, 3, 4};
        const int *ord = type == 7 ? coll_order : (type == NODE_SEND || type == NODE_RECV) ? p2p_order : all_order;
        int cnt = type == 7 ? 2 : (type == NODE_SEND || type == NODE_RECV) ? 4 : 5;
        for (int k = 0; k < cnt && rc == WR_OK; k++) {
            if (comm[ord[k]] != Py_None) {
                nkey[nn] = cnames[ord[k]];
                nval[nn++] = comm[ord[k]];
            }
        }
        int pg = rc == WR_OK ? PyObject_IsTrue(o[O_PG]) : 0;
        if (pg < 0) {
            rc = WR_ERROR;
        } else if (pg) {
            nkey[nn] = onames[O_PG];
            nval[nn++] = o[O_PG];
        }
        if (rc == WR_OK && !PyDict_CheckExact(o[O_ATTRS])) {
            rc = WR_REFUSED;
        }
    }
    /* the Node's fields in field-number order, defaults left out */
    if (rc == WR_OK) {
        body->n = 0;
        const char *s;
        Py_ssize_t n;
        if (id && (ob_varint(body, 1 << 3) < 0 || ob_varint(body, id) < 0)) {
            rc = WR_ERROR;
        }
        if (rc == WR_OK && (rc = utf8_of(o[O_NAME], &s, &n)) == WR_OK && n && ob_len_field(body, 2, s, n) < 0) {
            rc = WR_ERROR;
        }
        if (rc == WR_OK && type && (ob_varint(body, 3 << 3) < 0 || ob_varint(body, type) < 0)) {
            rc = WR_ERROR;
        }
        if (rc == WR_OK) {
            rc = split ? put_packed(body, tmp, 4, ctrl, nc, NULL) : WR_OK;
        }
        if (rc == WR_OK) {
            rc = put_packed(body, tmp, 5, deps, nd_deps, split ? removed : NULL);
        }
        if (rc == WR_OK && start && (ob_varint(body, 6 << 3) < 0 || ob_varint(body, start) < 0)) {
            rc = WR_ERROR;
        }
        if (rc == WR_OK && dur && (ob_varint(body, 7 << 3) < 0 || ob_varint(body, dur) < 0)) {
            rc = WR_ERROR;
        }
        for (int k = 0; k < 2 && rc == WR_OK; k++) {
            PyObject *io = o[k == 0 ? O_IN : O_OUT];
            if (io == Py_None) {
                continue;
            }
            if (!PyDict_CheckExact(io)) {
                rc = WR_REFUSED;
                break;
            }
            static const char *keys[3] = {"values", "shapes", "types"};
            tmp->n = 0;
            for (int j = 0; j < 3 && rc == WR_OK; j++) {
                PyObject *v = PyDict_GetItemString(io, keys[j]); /* io.get(k) */
                if (v == NULL) {
                    continue;
                }
                int t = PyObject_IsTrue(v);
                if (t < 0) {
                    rc = WR_ERROR;
                } else if (t) {
                    rc = utf8_of(v, &s, &n);
                    if (rc == WR_OK && ob_len_field(tmp, (unsigned)j + 1, s, n) < 0) {
                        rc = WR_ERROR;
                    }
                }
            }
            if (rc == WR_OK && ob_len_field(body, k == 0 ? 8 : 9, tmp->p, tmp->n) < 0) {
                rc = WR_ERROR;
            }
        }
        /* named ones the attrs do not hold, then the attrs with the named values */
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        for (int k = 0; k < nn && rc == WR_OK; k++) {
            int has = PyDict_Contains(o[O_ATTRS], nkey[k]);
            rc = has < 0 ? WR_ERROR : has ? WR_OK : put_attr(c, body, nkey[k], nval[k]);
        }
        while (rc == WR_OK && PyDict_Next(o[O_ATTRS], &pos, &key, &value)) {
            PyObject *over = NULL; /* values.get(key, value): a named field's current value */
            for (int k = 0; k < nn && over == NULL; k++) {
                int eq = key == nkey[k] ? 1 : PyUnicode_Check(key) ? PyUnicode_Compare(key, nkey[k]) == 0 : 0;
                if (eq && !PyErr_Occurred()) {
                    over = nval[k];
                }
            }
            if (PyErr_Occurred()) {
                rc = WR_ERROR;
                break;
            }
            rc = put_attr(c, body, key, over != NULL ? over : value);
        }
    }
    for (int k = 0; k < 12; k++) {
        Py_XDECREF(o[k]);
    }
    for (int k = 0; k < 5; k++) {
        Py_XDECREF(comm[k]);
    }
    PyMem_Free(deps);
    PyMem_Free(ctrl);
    PyMem_Free(removed);
    return rc;
}

/* encode_workload(nodes, typing) -> bytes of the delimited Node messages, or None (refused). */
PyObject *codec_encode_workload(PyObject *self, PyObject *args) {
    PyObject *nodes, *typing;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &nodes, &PyDict_Type, &typing)) {
        return NULL;
    }
    wctx c = {typing, {NULL, 0, 0}};
    obuf out = {NULL, 0, 0}, body = {NULL, 0, 0}, tmp = {NULL, 0, 0};
    int rc = WR_OK;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes) && rc == WR_OK; i++) {
        rc = encode_one(&c, PyList_GET_ITEM(nodes, i), &body, &tmp);
        if (rc == WR_OK && (ob_varint(&out, (uint64_t)body.n) < 0 || ob_bytes(&out, body.p, body.n) < 0)) {
            rc = WR_ERROR;
        }
    }
    PyObject *ret = rc == WR_OK ? PyBytes_FromStringAndSize((const char *)out.p, out.n)
                               : rc == WR_REFUSED ? Py_NewRef(Py_None) : NULL;
    PyMem_Free(out.p);
    PyMem_Free(body.p);
    PyMem_Free(tmp.p);
    PyMem_Free(c.attr.p);
    return ret;
}
