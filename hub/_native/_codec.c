/*
 * hub._native._codec: the per-node work of the Chakra ET codec (hub/chakra), compiled.
 *
 * Seven routines, each the only implementation of its job, in the part of the extension named:
 *   encode_rank     one rank graph's columns -> its delimited Node messages (bytes, or into a
 *                   caller's reusable buffer: a writer then touches no fresh memory per file)
 *                   (_codec_write.c, the write half)
 *   frame_files     many delimited streams laid end to end -> the span of every message
 *                   (_codec_frame.c)
 *   decode_batch    node spans of consecutive ranks -> their RankGraph columns and dependencies
 *                   (_codec_read.c)
 *   decode_metadata GlobalMetadata spans -> (version, attributes) of the usual kinds
 *                   (_codec_frame.c)
 *   scan_workload_file  a workload rank file framed and checked as decode_workload checks
 *                   it, no objects made: its spans, ids, dependencies (_codec_workload_scan.c)
 *   decode_workload the Node messages of a workload rank file -> WorkloadNode objects
 *                   (_codec_workload.c)
 *   node_types      the node types of a file, each node's type field alone (_codec_frame.c)
 *   encode_workload a rank's WorkloadNode objects -> their delimited Node messages
 *                   (_codec_workload_write.c)
 * This file holds the module, configure() and the tables it fills, and the buffer helpers;
 * _codec.h declares what the parts share.
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
#include "_codec.h"

/* The known node attributes, in the order of hub.chakra._ranks.KNOWN:
 * comm_size, comm_src, comm_dst, comm_tag, then the profile's semantic ones (set by configure). */
int n_known = 0;
uint8_t known_name[MAX_KNOWN][MAX_NAME];
int known_len[MAX_KNOWN];
int64_t known_default[MAX_KNOWN];
int known_column[MAX_KNOWN];
int64_t known_lo[MAX_KNOWN], known_hi[MAX_KNOWN];

/* -- buffers ------------------------------------------------------------------------------- */
int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *what) {
    if (view_of(obj, view, writable) < 0) {
        return -1;
    }
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes, expected %zd", what, view->itemsize, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

void release_all(Py_buffer *views, int count) {
    for (int k = 0; k < count; k++) {
        if (views[k].obj != NULL) {
            PyBuffer_Release(&views[k]);
        }
    }
}

/* -- configure ------------------------------------------------------------------------------ */
static PyObject *configure(PyObject *self, PyObject *args) {
    (void)self;
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

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(names, defaults, columns, lo, hi): the known node attributes (bytes), their defaults,"
     " their RankGraph column and the values the decoder accepts"},
    {"encode_rank", codec_encode_rank, METH_VARARGS,
     "encode_rank(astrasim, rank, columns, dep_ptr, dep_pos, names, names_off, extra, extra_off, out=None) -> bytes, "
     "or with a writable out buffer the bytes written into it (-(size needed) when it is too small)"},
    {"frame_files", codec_frame_files, METH_VARARGS,
     "frame_files(data, bases, sizes, every=True) -> (starts, ends, counts, bad file or -1), int64 bytearrays;"
     " every=False: only each file's first message"},
    {"decode_batch", codec_decode_batch, METH_VARARGS,
     "decode_batch(data, bases, sizes, counts, columns, dep_ptr) -> (dependency ids, slow (node, start, end),"
     " name spans, clean ranks, columns the same as the previous rank's): the nodes of framed rank files"
     " into the batch's RankGraph columns"},
    {"decode_workload", codec_decode_workload, METH_VARARGS,
     "decode_workload(data, starts, ends, ranks, node_cls, types) -> (nodes, ids, deps, deps per node) or None:"
     " the Node messages of one workload rank file as WorkloadNode objects (None: the general decoder reads"
     " the rank)"},
    {"scan_workload_file", codec_scan_workload_file, METH_VARARGS,
     "scan_workload_file(data, ranks) -> (starts, ends, ids, deps, deps per node, types, COMM_COLL names, dangling)"
     " or None: one workload rank file framed and checked as decode_workload checks it, without its objects"
     " (None: it refuses the file)"},
    {"encode_workload", codec_encode_workload, METH_VARARGS,
     "encode_workload(nodes, typing) -> the delimited Node messages of one rank's WorkloadNode list (bytes), or"
     " None where a value is not of the plain kinds (the Python encoder then writes the rank)"},
    {"node_types", codec_node_types, METH_VARARGS,
     "node_types(data, starts, ends) -> bit t set when a node has type t, -1 when a node is malformed"},
    {"decode_metadata", codec_decode_metadata, METH_VARARGS,
     "decode_metadata(data, starts, ends) -> [(version, ((name, field, value), ...)) or None]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hub._native._codec",
                                    "The per-node work of the Chakra ET codec (see hub/chakra).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__codec(void) { return PyModule_Create(&module); }