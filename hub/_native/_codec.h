/*
 * What the parts of hub._native._codec share (see _codec.c for the module): the Chakra constants,
 * the tables configure() fills, the buffer helpers and the varint reading of both decoders.
 * Only the CPython C API and the buffer protocol (no numpy headers).
 */
#ifndef HUB_CODEC_H
#define HUB_CODEC_H
#include "_common.h"
#include <stdint.h>
#include <string.h>

/* the names below are the extension's own, not an API: kept out of its dynamic symbol table */
#if defined(__GNUC__) && !defined(_WIN32)
#define CODEC_INTERNAL __attribute__((visibility("hidden")))
#else
#define CODEC_INTERNAL
#endif

/* the Chakra NodeType values the encoder's rules name (NODE_COMP ...) are _common.h's */

/* The known node attributes, in the order of hub.chakra._ranks.KNOWN:
 * comm_size, comm_src, comm_dst, comm_tag, then the profile's semantic ones. */
#define MAX_KNOWN 16
/* hub._units.MAX_BYTES (1 TiB): the largest byte count a node may claim; a larger comm_size is
   refused to the general decoder, which words the error (tests/chakra/test_workload_compiled.py) */
#define HUB_MAX_BYTES (1LL << 40)
#define MAX_NAME 64
enum { A_SIZE, A_SRC, A_DST, A_TAG, A_CNT, A_FIRST_SEMANTIC = A_CNT };

/* the tables of configure() (_codec.c), read by the encoder and the decoder */
CODEC_INTERNAL extern int n_known;
CODEC_INTERNAL extern uint8_t known_name[MAX_KNOWN][MAX_NAME];
CODEC_INTERNAL extern int known_len[MAX_KNOWN];
CODEC_INTERNAL extern int64_t known_default[MAX_KNOWN];
/* RankGraph column (index into the columns tuple) of each semantic attribute; -1 for the four comm_* */
CODEC_INTERNAL extern int known_column[MAX_KNOWN];
/* the values the decoder accepts for each known attribute; others go to the general path, which
 * reports them (hub/chakra/_validate.py ATTR_RANGES) */
CODEC_INTERNAL extern int64_t known_lo[MAX_KNOWN], known_hi[MAX_KNOWN];

/* Columns of a RankGraph in hub.chakra._model.COLUMN_NAMES order and their item sizes. */
enum { C_IDS, C_KIND, C_PEER, C_TAG, C_COUNT, C_SRC_BUF, C_SRC_OFF, C_DST_BUF, C_DST_OFF, C_OP, C_SIZE,
       C_DURATION, C_TB, C_CHAN, N_COLUMNS };
/* a constant in every part, so that the compiler folds it (as it did in the one-file module) */
static const int column_itemsize[N_COLUMNS] = {8, 1, 4, 4, 4, 1, 4, 1, 4, 1, 8, 8, 4, 4};

/* -- buffers (_codec.c) --------------------------------------------------------------------- */
/* A C-contiguous view of obj with items of itemsize bytes (writable on request); -1 with a
 * TypeError naming `what` otherwise. */
CODEC_INTERNAL int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *what);
/* Release the views that were taken (obj != NULL) of views[0:count]. */
CODEC_INTERNAL void release_all(Py_buffer *views, int count);

/* -- reading varints (both decoders: _codec_read.c, _codec_frame.c) ------------------------- */
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

/* -- the module's functions, one part each ---------------------------------------------------- */
CODEC_INTERNAL PyObject *codec_encode_rank(PyObject *self, PyObject *args);     /* _codec_write.c */
CODEC_INTERNAL PyObject *codec_frame_files(PyObject *self, PyObject *args);     /* _codec_frame.c */
/* -- one field of a message (both workload parts, node_types) ---------------------------------------------------------------------------------- */
/* The next field of buf[*pos:end]: number, wire type and (varint value | start of the payload and
 * its end). 0 when malformed (as _decode._fields would raise). */
typedef struct {
    uint64_t num;
    int wt;
    uint64_t v;
    Py_ssize_t s, e;
} field_t;

static inline int next_field(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, field_t *f) {
    uint64_t key = 0;
    f->v = 0; /* every member set on every path: callers read only what the wire type gives */
    f->s = f->e = *pos;
    if (!get_varint(buf, pos, end, &key)) {
        return 0;
    }
    f->num = key >> 3;
    f->wt = (int)(key & 7);
    if (f->num == 0) {
        return 0;
    }
    switch (f->wt) {
    case 0: return get_varint(buf, pos, end, &f->v);
    case 2: {
        uint64_t ln;
        if (!get_varint(buf, pos, end, &ln) || ln > (uint64_t)(end - *pos)) {
            return 0;
        }
        f->s = *pos;
        f->e = *pos + (Py_ssize_t)ln;
        *pos = f->e;
        return 1;
    }
    case 1:
    case 5: {
        Py_ssize_t w = f->wt == 1 ? 8 : 4;
        if (end - *pos < w) {
            return 0;
        }
        f->s = *pos;
        f->e = *pos + w;
        *pos = f->e;
        return 1;
    }
    default: return 0; /* groups (3/4), 6/7 */
    }
}


CODEC_INTERNAL PyObject *codec_decode_metadata(PyObject *self, PyObject *args); /* _codec_frame.c */
CODEC_INTERNAL PyObject *codec_decode_workload(PyObject *self, PyObject *args); /* _codec_workload.c */
CODEC_INTERNAL PyObject *codec_scan_workload_file(PyObject *self, PyObject *args); /* _codec_workload_scan.c */
CODEC_INTERNAL PyObject *codec_node_types(PyObject *self, PyObject *args);      /* _codec_frame.c */
CODEC_INTERNAL PyObject *codec_encode_workload(PyObject *self, PyObject *args); /* _codec_workload_write.c */
CODEC_INTERNAL PyObject *codec_decode_batch(PyObject *self, PyObject *args);    /* _codec_read.c */

#endif
