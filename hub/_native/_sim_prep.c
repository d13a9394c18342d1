/* hub._native._sim, table building: the message channels and the engine's node layout.
 *
 * Both run once per simulation over every node, so numpy's many passes (and their temporaries)
 * cost more than the walk itself at 4M nodes; here each is one pass. Callers: hub/sim/_engine/program.py
 * (channels) and hub/sim/_engine/layout.py (layout), which document what the tables mean. Buffers only
 * (no numpy C API): outputs are caller-allocated arrays this code fills.
 */
#include "_simbuf.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { P_COMP = NODE_COMP, P_SEND = NODE_SEND, P_RECV = NODE_RECV }; /* _common.h */
/* ASTRA-sim maps a custom collective's tags into [0, 5e8) (Sys::front_end_sim_send, NATIVE range) */
static const int64_t NATIVE_TAGS = 500000000;

typedef struct {
    int64_t tag, size;
    int32_t src, dst;
} Key;

typedef struct {
    Key *keys;      /* per channel: its (tag, size, src, dst) */
    int32_t *first; /* per channel: the first node on it (program order) */
    int32_t *slot;  /* open addressing: channel id, -1 = empty */
    Py_ssize_t nchan, cap, nslot;
} Chans;

static inline uint64_t key_hash(const Key *k) {
    uint64_t h = mix64((uint64_t)k->tag * 0x9e3779b97f4a7c15ULL ^ (uint64_t)k->size);
    return mix64(h ^ (((uint64_t)(uint32_t)k->src << 32) | (uint32_t)k->dst));
}

static inline int key_eq(const Key *a, const Key *b) {
    return a->tag == b->tag && a->size == b->size && a->src == b->src && a->dst == b->dst;
}

static int chans_grow(Chans *c) {
    Py_ssize_t ns = c->nslot ? 2 * c->nslot : 1024;
    int32_t *slot = malloc((size_t)ns * sizeof(int32_t));
    if (!slot) return -1;
    memset(slot, 0xff, (size_t)ns * sizeof(int32_t));
    for (Py_ssize_t id = 0; id < c->nchan; id++) {
        Py_ssize_t i = (Py_ssize_t)(key_hash(&c->keys[id]) & (uint64_t)(ns - 1));
        while (slot[i] >= 0) i = (i + 1) & (ns - 1);
        slot[i] = (int32_t)id;
    }
    free(c->slot);
    c->slot = slot;
    c->nslot = ns;
    return 0;
}

/* the channel id of key k (a new one when unseen; node g is then its first node), -1 on no memory */
static int32_t chans_id(Chans *c, const Key *k, int32_t g) {
    if (2 * (c->nchan + 1) > c->nslot && chans_grow(c)) return -1;
    Py_ssize_t mask = c->nslot - 1, i = (Py_ssize_t)(key_hash(k) & (uint64_t)mask);
    for (; c->slot[i] >= 0; i = (i + 1) & mask)
        if (key_eq(&c->keys[c->slot[i]], k)) return c->slot[i];
    if (c->nchan == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 1024;
        Key *keys = realloc(c->keys, (size_t)cap * sizeof(Key));
        if (!keys) return -1;
        c->keys = keys;
        int32_t *first = realloc(c->first, (size_t)cap * sizeof(int32_t));
        if (!first) return -1;
        c->first = first;
        c->cap = cap;
    }
    c->keys[c->nchan] = *k;
    c->first[c->nchan] = g;
    c->slot[i] = (int32_t)c->nchan;
    return (int32_t)c->nchan++;
}

const char sim_channels_doc[] =
    "channels(kind, rank, peer, tagx, size, chan) -> (nchan, first)\n\n"
    "Dense message-channel ids, written into chan (int32, -1 for nodes that are not SEND/RECV): SENDs and\n"
    "RECVs of the same (tag folded into ASTRA-sim's native range, src, dst, size) share one id, numbered\n"
    "in order of first appearance. first: bytes of int32, the first node of each channel.";

PyObject *sim_channels(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5])) return NULL;
    Py_ssize_t n = PyObject_Length(o[0]);
    if (n < 0) return NULL;
    if (n >= INT32_MAX) { PyErr_SetString(PyExc_ValueError, "too many nodes"); return NULL; }
    Bufs bs = {.nv = 0};
    Chans c = {0};
    PyObject *ret = NULL;
    const int32_t *kind, *rank, *peer;
    const int64_t *tagx, *size;
    int32_t *chan;
    if (!(kind = get_buf(&bs, o[0], 4, n, 0, "kind")) || !(rank = get_buf(&bs, o[1], 4, n, 0, "rank")) ||
        !(peer = get_buf(&bs, o[2], 4, n, 0, "peer")) || !(tagx = get_buf(&bs, o[3], 8, n, 0, "tagx")) ||
        !(size = get_buf(&bs, o[4], 8, n, 0, "size")) || !(chan = get_buf(&bs, o[5], 4, n, 1, "chan")))
        goto done;
    for (Py_ssize_t g = 0; g < n; g++) {
        int32_t k = kind[g];
        if (k != P_SEND && k != P_RECV) {
            chan[g] = -1;
            continue;
        }
        /* tagx = tag + instance * 2^32: the tag (low 32 bits) is folded, the instance kept */
        int64_t low = tagx[g] & 0xFFFFFFFFLL;
        Key key = {tagx[g] - low + low % NATIVE_TAGS, size[g], k == P_SEND ? rank[g] : peer[g],
                   k == P_SEND ? peer[g] : rank[g]};
        int32_t id = chans_id(&c, &key, (int32_t)g);
        if (id < 0) { PyErr_NoMemory(); goto done; }
        chan[g] = id;
    }
    PyObject *first = PyBytes_FromStringAndSize((const char *)c.first, (Py_ssize_t)(c.nchan * sizeof(int32_t)));
    if (first) ret = Py_BuildValue("nN", c.nchan, first);
done:
    release_bufs(&bs);
    free(c.keys);
    free(c.first);
    free(c.slot);
    return ret;
}

const char sim_layout_doc[] =
    "layout(offsets, inv, kind, chan, dur, rank, succ_ptr, succ_idx, indeg, roots,\n"
    "       kind_e, chan_e, dur_e, rank_e, indeg_e, succ_ptr_e, succ_idx_e, swap2) -> None\n\n"
    "Renumber a rank-major program (rank r's nodes are offsets[r]..offsets[r+1]-1) into engine order:\n"
    "program node g is engine node inv[g]; engine node n is the virtual start node, whose successors\n"
    "are the roots (program nodes, in issue order; their indeg becomes 1). Successor lists keep their\n"
    "order, except that swap2 (the feeder's order: two keys in a fresh hash set iterate newest first)\n"
    "reverses every list of exactly two. dur_e must come zero-filled: only COMP nodes' durations are written (and read), so the pages\n"
    "of a program without COMPs are never touched.";

/* Rank blocks: the engine order interleaves ranks, so a pass in either order touches one page per
 * rank per column (a TLB miss per node at a thousand ranks). Walking RB ranks position by position
 * reads RB sequential streams and writes runs of RB consecutive engine nodes. */
enum { RB = 32 };

typedef struct {
    Py_ssize_t n, nr, ne;
    int swap2; /* lists of exactly two children are written reversed (the feeder's child-set order) */
    const int64_t *off, *dur, *sp;
    const int32_t *inv, *kind, *chan, *rank, *si, *indeg;
    int8_t *kind_e;
    int32_t *chan_e, *rank_e, *indeg_e, *si_e;
    int64_t *dur_e, *sp_e;
} Lay;

/* pass 1: the node columns, and each node's successor count in sp_e[e + 1] */
static int lay_columns(Lay *L) {
    for (Py_ssize_t r0 = 0; r0 < L->nr; r0 += RB) {
        Py_ssize_t r1 = r0 + RB < L->nr ? r0 + RB : L->nr, most = 0;
        for (Py_ssize_t r = r0; r < r1; r++)
            if (L->off[r + 1] - L->off[r] > most) most = L->off[r + 1] - L->off[r];
        for (Py_ssize_t p = 0; p < most; p++)
            for (Py_ssize_t r = r0; r < r1; r++) {
                int64_t g = L->off[r] + p;
                if (g >= L->off[r + 1]) continue;
                int32_t e = L->inv[g], k = L->kind[g];
                if (e < 0 || e >= L->n) {
                    PyErr_Format(PyExc_ValueError, "inv: node %lld maps outside the %zd nodes", (long long)g, L->n);
                    return -1;
                }
                L->kind_e[e] = (int8_t)k;
                L->chan_e[e] = L->chan[g];
                if (k == P_COMP) L->dur_e[e] = L->dur[g]; /* others stay 0: dur_e comes zero-filled */
                L->rank_e[e] = L->rank[g];
                L->indeg_e[e] = L->indeg[g];
                if (L->sp[g] > L->sp[g + 1] || L->sp[g + 1] > L->ne) {
                    PyErr_Format(PyExc_ValueError, "succ_ptr: node %lld's list is outside the %zd edges",
                                 (long long)g, L->ne);
                    return -1;
                }
                L->sp_e[e + 1] = L->sp[g + 1] - L->sp[g];
            }
    }
    return 0;
}

/* pass 2 (after the prefix sum): the successor lists, renumbered */
static int lay_edges(Lay *L) {
    for (Py_ssize_t r0 = 0; r0 < L->nr; r0 += RB) {
        Py_ssize_t r1 = r0 + RB < L->nr ? r0 + RB : L->nr, most = 0;
        for (Py_ssize_t r = r0; r < r1; r++)
            if (L->off[r + 1] - L->off[r] > most) most = L->off[r + 1] - L->off[r];
        for (Py_ssize_t p = 0; p < most; p++)
            for (Py_ssize_t r = r0; r < r1; r++) {
                int64_t g = L->off[r] + p;
                if (g >= L->off[r + 1]) continue;
                int64_t at = L->sp_e[L->inv[g]];
                if (at + (L->sp[g + 1] - L->sp[g]) > L->sp_e[L->inv[g] + 1]) { /* inv is no permutation */
                    PyErr_Format(PyExc_ValueError, "inv: node %lld shares its engine node", (long long)g);
                    return -1;
                }
                int64_t lo = L->sp[g], hi = L->sp[g + 1];
                for (int64_t x = lo; x < hi; x++) {
                    int32_t c = L->si[x];
                    if (c < 0 || c >= L->n) {
                        PyErr_Format(PyExc_ValueError, "succ_idx: edge %lld names node %d of %zd", (long long)x,
                                     (int)c, L->n);
                        return -1;
                    }
                    L->si_e[at++] = L->inv[c];
                }
                if (L->swap2 && hi - lo == 2) { /* two keys put into a fresh hash set iterate newest first */
                    int32_t tmp = L->si_e[at - 1];
                    L->si_e[at - 1] = L->si_e[at - 2];
                    L->si_e[at - 2] = tmp;
                }
            }
    }
    return 0;
}

PyObject *sim_layout(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[17];
    int swap2;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOp", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &swap2))
        return NULL;
    Py_ssize_t nr = PyObject_Length(o[0]) - 1, n = PyObject_Length(o[1]), nroots = PyObject_Length(o[9]);
    if (nr < 0 || n < 0 || nroots < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "offsets: at least one entry");
        return NULL;
    }
    if (n >= INT32_MAX - 1) { PyErr_SetString(PyExc_ValueError, "too many nodes"); return NULL; }
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    Lay L = {.n = n, .nr = nr, .swap2 = swap2};
    if (!(L.off = get_buf(&bs, o[0], 8, nr + 1, 0, "offsets")) || !(L.inv = get_buf(&bs, o[1], 4, n, 0, "inv")) ||
        !(L.kind = get_buf(&bs, o[2], 4, n, 0, "kind")) || !(L.chan = get_buf(&bs, o[3], 4, n, 0, "chan")) ||
        !(L.dur = get_buf(&bs, o[4], 8, n, 0, "dur")) || !(L.rank = get_buf(&bs, o[5], 4, n, 0, "rank")) ||
        !(L.sp = get_buf(&bs, o[6], 8, n + 1, 0, "succ_ptr")))
        goto done;
    L.ne = (Py_ssize_t)L.sp[n];
    if (L.sp[0] != 0 || L.ne < 0 || L.ne + nroots >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "succ_ptr: malformed or too many edges");
        goto done;
    }
    for (Py_ssize_t r = 0; r < nr; r++)
        if (L.off[r] > L.off[r + 1] || L.off[0] != 0 || L.off[nr] != n) {
            PyErr_SetString(PyExc_ValueError, "offsets: not the rank boundaries of the nodes");
            goto done;
        }
    if (!(L.si = get_buf(&bs, o[7], 4, L.ne, 0, "succ_idx")) || !(L.indeg = get_buf(&bs, o[8], 4, n, 0, "indeg")) ||
        !(L.kind_e = get_buf(&bs, o[10], 1, n + 1, 1, "kind_e")) ||
        !(L.chan_e = get_buf(&bs, o[11], 4, n + 1, 1, "chan_e")) ||
        !(L.dur_e = get_buf(&bs, o[12], 8, n + 1, 1, "dur_e")) ||
        !(L.rank_e = get_buf(&bs, o[13], 4, n + 1, 1, "rank_e")) ||
        !(L.indeg_e = get_buf(&bs, o[14], 4, n + 1, 1, "indeg_e")) ||
        !(L.sp_e = get_buf(&bs, o[15], 8, n + 2, 1, "succ_ptr_e")) ||
        !(L.si_e = get_buf(&bs, o[16], 4, L.ne + nroots, 1, "succ_idx_e")))
        goto done;
    const int64_t *roots = get_buf(&bs, o[9], 8, nroots, 0, "roots");
    if (!roots) goto done;
    memset(L.sp_e, 0, (size_t)(n + 2) * sizeof(int64_t));
    if (lay_columns(&L)) goto done;
    L.sp_e[0] = 0;
    for (Py_ssize_t e = 0; e < n; e++) L.sp_e[e + 1] += L.sp_e[e];
    if (lay_edges(&L)) goto done;
    L.kind_e[n] = 0; /* the start node: a zero-time no-op */
    L.chan_e[n] = -1;
    L.rank_e[n] = 0;
    L.indeg_e[n] = 0;
    for (Py_ssize_t i = 0; i < nroots; i++) {
        int64_t g = roots[i];
        if (g < 0 || g >= n) {
            PyErr_Format(PyExc_ValueError, "roots: entry %zd names node %lld of %zd", i, (long long)g, n);
            goto done;
        }
        L.si_e[L.ne + i] = L.inv[g];
        L.indeg_e[L.inv[g]] = 1; /* each waits for the start node */
    }
    L.sp_e[n + 1] = L.ne + nroots;
    ret = Py_NewRef(Py_None);
done:
    release_bufs(&bs);
    return ret;
}

const char sim_successors_doc[] =
    "successors(parents, indeg, succ_ptr, succ_idx) -> forward\n\n"
    "Transpose the dependencies: node c's parents are parents[sum(indeg[:c]) : ...] (int32); writes each\n"
    "node's children, ascending (a stable counting sort), as succ_ptr (int64, n+1) and succ_idx (int32).\n"
    "forward: whether some node names a later node as its parent.";

PyObject *sim_successors(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3])) return NULL;
    Py_ssize_t nd = PyObject_Length(o[0]), n = PyObject_Length(o[1]);
    if (nd < 0 || n < 0) return NULL;
    if (n >= INT32_MAX || nd >= INT32_MAX) { PyErr_SetString(PyExc_ValueError, "too many nodes or edges"); return NULL; }
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    int64_t *cur = NULL;
    const int32_t *parents, *indeg;
    int64_t *sp;
    int32_t *si;
    if (!(parents = get_buf(&bs, o[0], 4, nd, 0, "parents")) || !(indeg = get_buf(&bs, o[1], 4, n, 0, "indeg")) ||
        !(sp = get_buf(&bs, o[2], 8, n + 1, 1, "succ_ptr")) || !(si = get_buf(&bs, o[3], 4, nd, 1, "succ_idx")))
        goto done;
    memset(sp, 0, (size_t)(n + 1) * sizeof(int64_t));
    Py_ssize_t x = 0;
    int forward = 0;
    for (Py_ssize_t c = 0; c < n; c++) { /* count each parent's children; check the lists fit */
        if (indeg[c] < 0 || indeg[c] > nd - x) {
            PyErr_Format(PyExc_ValueError, "indeg: node %zd's parents run past the %zd given", c, nd);
            goto done;
        }
        for (Py_ssize_t end = x + indeg[c]; x < end; x++) {
            int32_t p = parents[x];
            if (p < 0 || p >= n) {
                PyErr_Format(PyExc_ValueError, "parents: entry %zd names node %d of %zd", x, (int)p, n);
                goto done;
            }
            forward |= p > c;
            sp[p + 1]++;
        }
    }
    if (x != nd) {
        PyErr_Format(PyExc_ValueError, "indeg: %zd parents given, %zd counted", nd, x);
        goto done;
    }
    for (Py_ssize_t g = 0; g < n; g++) sp[g + 1] += sp[g];
    cur = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!cur) { PyErr_NoMemory(); goto done; }
    memcpy(cur, sp, (size_t)n * sizeof(int64_t));
    x = 0;
    for (Py_ssize_t c = 0; c < n; c++) /* children in ascending order: each list comes out sorted */
        for (Py_ssize_t end = x + indeg[c]; x < end; x++) si[cur[parents[x]]++] = (int32_t)c;
    ret = PyBool_FromLong(forward);
done:
    free(cur);
    release_bufs(&bs);
    return ret;
}

const char sim_pair_loads_doc[] =
    "pair_loads(kind, rank, peer, size, npus, send, bytes, msgs) -> None\n\n"
    "Per (src, dst) NPU pair, the bytes (float64, summed in node order, as numpy's bincount with\n"
    "weights) and the number of messages (int64) of the nodes whose kind is send: pair src * npus + dst\n"
    "of node g is rank[g] * npus + peer[g]. bytes and msgs (npus * npus items) come zero-filled and\n"
    "are added to. One pass over the nodes, for the link-load bound (hub/sim/_bounds/linkload.py), instead of\n"
    "numpy's mask, gathers, casts and two bincounts over every SEND.";

PyObject *sim_pair_loads(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4], *ob, *om;
    Py_ssize_t npus;
    int send;
    if (!PyArg_ParseTuple(args, "OOOOniOO", &o[0], &o[1], &o[2], &o[3], &npus, &send, &ob, &om)) return NULL;
    Py_ssize_t n = PyObject_Length(o[0]);
    if (n < 0) return NULL;
    if (npus <= 0 || npus > (1 << 15)) {
        PyErr_SetString(PyExc_ValueError, "npus: 1..32768");
        return NULL;
    }
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    const int32_t *kind, *rank, *peer;
    const int64_t *size;
    double *bytes;
    int64_t *msgs;
    if (!(kind = get_buf(&bs, o[0], 4, n, 0, "kind")) || !(rank = get_buf(&bs, o[1], 4, n, 0, "rank")) ||
        !(peer = get_buf(&bs, o[2], 4, n, 0, "peer")) || !(size = get_buf(&bs, o[3], 8, n, 0, "size")) ||
        !(bytes = get_buf(&bs, ob, 8, npus * npus, 1, "bytes")) || !(msgs = get_buf(&bs, om, 8, npus * npus, 1, "msgs")))
        goto done;
    for (Py_ssize_t g = 0; g < n; g++) {
        if (kind[g] != send) continue;
        int32_t s = rank[g], d = peer[g];
        if (s < 0 || s >= npus || d < 0 || d >= npus) {
            PyErr_Format(PyExc_ValueError, "node %zd: pair %d->%d outside %zd NPUs", g, (int)s, (int)d, npus);
            goto done;
        }
        Py_ssize_t k = (Py_ssize_t)s * npus + d;
        bytes[k] += (double)size[g];
        msgs[k]++;
    }
    ret = Py_NewRef(Py_None);
done:
    release_bufs(&bs);
    return ret;
}
