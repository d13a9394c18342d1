/*
 * hub._native._codec, the read half's framing: frame_files (many delimited streams -> the span of
 * every message) and decode_metadata (a file's GlobalMetadata of the usual kinds, else None).
 */
#include "_codec.h"

/* -- framing --------------------------------------------------------------------------------- */
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

PyObject *codec_frame_files(PyObject *self, PyObject *args) {
    (void)self;
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
        if (bases[f] < 0 || sizes[f] < 0 || bases[f] > v[0].len || sizes[f] > v[0].len - bases[f]) {
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
        int64_t iv = 0; /* int_of_field sets it for every integer field; 0 keeps -O3 sure of it */
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

PyObject *codec_decode_metadata(PyObject *self, PyObject *args) {
    (void)self;
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

/* node_types(data, starts, ends) -> int: bit t set when some node has type t (0..63), or -1 when a
 * node is malformed or its type is outside 0..63 (the general decoder then decides or reports).
 * Only field 3 is read; the rest of each message is walked, not decoded. */
PyObject *codec_node_types(PyObject *self, PyObject *args) {
    PyObject *data_o, *starts_o, *ends_o;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &data_o, &starts_o, &ends_o)) {
        return NULL;
    }
    Py_buffer views[3] = {{0}};
    if (get_buffer(data_o, &views[0], 1, 0, "data") < 0 || get_buffer(starts_o, &views[1], 8, 0, "starts") < 0
        || get_buffer(ends_o, &views[2], 8, 0, "ends") < 0 || views[1].len != views[2].len) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "node_types: one end per start");
        }
        release_all(views, 3);
        return NULL;
    }
    const uint8_t *buf = views[0].buf;
    const int64_t *st = views[1].buf, *en = views[2].buf;
    Py_ssize_t count = views[1].len / 8;
    uint64_t bits = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < count && !bad; i++) {
        if (st[i] < 0 || en[i] < st[i] || en[i] > views[0].len) {
            bad = 1;
            break;
        }
        Py_ssize_t pos = (Py_ssize_t)st[i], end = (Py_ssize_t)en[i];
        uint64_t type = 0;
        field_t f;
        while (pos < end) {
            if (!next_field(buf, &pos, end, &f)) {
                bad = 1;
                break;
            }
            if ((f.num == 1 || f.num == 3 || f.num == 6 || f.num == 7) && f.wt != 0) {
                bad = 1; /* the general decoder raises on these */
                break;
            }
            if (f.num == 3) {
                type = f.v; /* the last occurrence wins, as in the general decoder */
            }
        }
        if (type > 63) {
            bad = 1;
        } else {
            bits |= (uint64_t)1 << type;
        }
    }
    Py_END_ALLOW_THREADS;
    release_all(views, 3);
    return bad ? PyLong_FromLong(-1) : PyLong_FromUnsignedLongLong((unsigned long long)bits);
}
