/* hub._native._verify: the verifier's per-node loops (hub/verify/).
 *
 * Boundary: Python (hub/verify/_flat.py, _fast.py, _races.py, _pairing.py) builds every column
 * with numpy and passes it here as a buffer (the buffer protocol; no numpy C API); these routines
 * fill caller-owned arrays. Each is the only implementation of its algorithm, except `walk`, whose
 * reference is the Python walk of hub/verify/_walk.py (which also words every problem):
 *
 *   csr          a stable counting sort of edges by owner (CSR adjacency);
 *   levels       longest-path levels of a DAG (Kahn), -1 on nodes behind a cycle;
 *   chain_parents the greedy chain matching of hub/verify/_races.py, in rounds;
 *   chain_heads  the head of each node's chain;
 *   reach        happens-before queries by a bounded search (the clocks answer the rest);
 *   pairing      the static message pairing per (src, dst, tag) and the FIFO keys, by hashing;
 *   walk         one execution under ASTRA-sim's custom-collective semantics (eager SENDs, FIFO
 *                RECVs per key, lowest ready index first) that also moves symbolic chunk values
 *                (input chunk index + bitset of contributing ranks) and stops at the first data
 *                error, so that the Python walk can name it.
 */
#include "_common.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { K_COMP = NODE_COMP, K_SEND = NODE_SEND, K_RECV = NODE_RECV }; /* _common.h */
enum { OP_COPY = 1, OP_REDUCE = 2 };
enum { WALK_OK = 0, WALK_DATA = 1 }; /* WALK_DATA: a data error or an unusual node; rerun in Python */

/* -- csr ---------------------------------------------------------------------------------------- */
PyDoc_STRVAR(csr_doc,
"csr(owner, other, n, ptr, out)\n\n"
"Edges (owner[i], other[i]) (int32 node indices) grouped by owner, each group in input order: ptr\n"
"(int64, n + 1) and out (int32, len(other)) are written (what a stable argsort of owner would give).");

static PyObject *csr(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    Py_ssize_t n;
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    if (!PyArg_ParseTuple(args, "OOnOO", &o[0], &o[1], &n, &o[2], &o[3])) return NULL;
    if (n < 0) { PyErr_SetString(PyExc_ValueError, "n: a node count below zero"); return NULL; }
    const int32_t *owner = get_buf(&bs, o[0], 4, BUF_ANY, 0, "owner");
    if (!owner) goto done;
    Py_ssize_t e = buf_items(&bs);
    const int32_t *other = get_buf(&bs, o[1], 4, e, 0, "other");
    int64_t *ptr = other ? get_buf(&bs, o[2], 8, n + 1, 1, "ptr") : NULL;
    int32_t *out = ptr ? get_buf(&bs, o[3], 4, e, 1, "out") : NULL;
    if (!out) goto done;
    memset(ptr, 0, (size_t)(n + 1) * 8);
    for (Py_ssize_t i = 0; i < e; i++) {
        if (owner[i] < 0 || owner[i] >= n) { PyErr_SetString(PyExc_ValueError, "owner out of range"); goto done; }
        ptr[owner[i] + 1]++;
    }
    for (Py_ssize_t v = 0; v < n; v++) ptr[v + 1] += ptr[v];
    int64_t *fill = malloc((size_t)(n > 0 ? n : 1) * 8);
    if (!fill) { PyErr_NoMemory(); goto done; }
    memcpy(fill, ptr, (size_t)n * 8);
    for (Py_ssize_t i = 0; i < e; i++) out[fill[owner[i]]++] = other[i];
    free(fill);
    ret = Py_None;
    Py_INCREF(ret);
done:
    release_bufs(&bs);
    return ret;
}

/* -- levels ------------------------------------------------------------------------------------- */
PyDoc_STRVAR(levels_doc,
"levels(pred_ptr, succ_ptr, succ, level) -> int\n\n"
"(pointers int64, succ int32, level int64.) "
"Longest-path level of each node (roots 0) written to level (int64); nodes on or behind a cycle\n"
"keep -1. Returns the number of levelled nodes.");

static PyObject *levels(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    int64_t *indeg = NULL, *queue = NULL;
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3])) return NULL;
    const int64_t *pred_ptr = get_buf(&bs, o[0], 8, BUF_ANY, 0, "pred_ptr");
    if (!pred_ptr) goto done;
    Py_ssize_t n = buf_items(&bs) - 1;
    const int64_t *succ_ptr = get_buf(&bs, o[1], 8, n + 1, 0, "succ_ptr");
    const int32_t *succ = succ_ptr ? get_buf(&bs, o[2], 4, succ_ptr[n], 0, "succ") : NULL;
    int64_t *level = succ ? get_buf(&bs, o[3], 8, n, 1, "level") : NULL;
    if (!level) goto done;
    indeg = malloc((size_t)(n > 0 ? n : 1) * 8);
    queue = malloc((size_t)(n > 0 ? n : 1) * 8);
    if (!indeg || !queue) { PyErr_NoMemory(); goto done; }
    Py_ssize_t qh = 0, qt = 0;
    for (Py_ssize_t v = 0; v < n; v++) {
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v];
        level[v] = -1;
        if (!indeg[v]) { queue[qt++] = v; level[v] = 0; }
    }
    while (qh < qt) {
        int64_t u = queue[qh++], lu = level[u] + 1;
        for (int64_t k = succ_ptr[u]; k < succ_ptr[u + 1]; k++) {
            int64_t s = succ[k];
            if (level[s] < lu) level[s] = lu;
            if (--indeg[s] == 0) queue[qt++] = s;
        }
    }
    /* nodes never dequeued may carry a partial maximum: reset them */
    for (Py_ssize_t v = 0; v < n; v++) if (indeg[v] > 0) level[v] = -1;
    ret = PyLong_FromSsize_t(qt);
done:
    free(indeg);
    free(queue);
    release_bufs(&bs);
    return ret;
}

/* -- chain parents ------------------------------------------------------------------------------ */
PyDoc_STRVAR(chain_parents_doc,
"chain_parents(pred_ptr, pred, succ_ptr, level, rounds, par)\n\n"
"(pointers int64, pred int32, level and par int64.) "
"The greedy chain matching of hub/verify/_races.py: in each of at most `rounds` rounds every node\n"
"without a parent claims its first predecessor one level below that no node has taken yet, and\n"
"each claimed node takes one claimant, the one with most successors, then the lowest index.\n"
"par (int64) must be -1 on entry; it receives each node's chain parent.");

static PyObject *chain_parents(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[5];
    int rounds;
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    int64_t *claim = NULL, *best = NULL;
    uint8_t *taken = NULL;
    if (!PyArg_ParseTuple(args, "OOOOiO", &o[0], &o[1], &o[2], &o[3], &rounds, &o[4])) return NULL;
    const int64_t *pred_ptr = get_buf(&bs, o[0], 8, BUF_ANY, 0, "pred_ptr");
    if (!pred_ptr) goto done;
    Py_ssize_t n = buf_items(&bs) - 1;
    const int32_t *pred = get_buf(&bs, o[1], 4, pred_ptr[n], 0, "pred");
    const int64_t *succ_ptr = pred ? get_buf(&bs, o[2], 8, n + 1, 0, "succ_ptr") : NULL;
    const int64_t *level = succ_ptr ? get_buf(&bs, o[3], 8, n, 0, "level") : NULL;
    int64_t *par = level ? get_buf(&bs, o[4], 8, n, 1, "par") : NULL;
    if (!par) goto done;
    size_t m = (size_t)(n > 0 ? n : 1);
    claim = malloc(m * 8);
    best = malloc(m * 8);
    taken = calloc(m, 1);
    if (!claim || !best || !taken) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t v = 0; v < n; v++) best[v] = -1;
    for (int r = 0; r < rounds; r++) {
        Py_ssize_t claims = 0;
        for (Py_ssize_t v = 0; v < n; v++) {
            claim[v] = -1;
            if (par[v] >= 0 || pred_ptr[v + 1] == pred_ptr[v]) continue;
            int64_t mx = -1;
            for (int64_t k = pred_ptr[v]; k < pred_ptr[v + 1]; k++)
                if (level[pred[k]] > mx) mx = level[pred[k]];
            for (int64_t k = pred_ptr[v]; k < pred_ptr[v + 1]; k++) {
                int64_t p = pred[k];
                if (level[p] == mx && !taken[p]) { claim[v] = p; break; }
            }
            if (claim[v] < 0) continue;
            claims++;
            int64_t p = claim[v], b = best[p];
            if (b < 0 || succ_ptr[v + 1] - succ_ptr[v] > succ_ptr[b + 1] - succ_ptr[b]) best[p] = v;
        }
        if (!claims) break;
        for (Py_ssize_t v = 0; v < n; v++) {
            int64_t p = claim[v];
            if (p >= 0 && best[p] == v) { par[v] = p; taken[p] = 1; }
        }
        for (Py_ssize_t v = 0; v < n; v++) if (claim[v] >= 0) best[claim[v]] = -1;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    free(claim);
    free(best);
    free(taken);
    release_bufs(&bs);
    return ret;
}

/* -- chain heads ------------------------------------------------------------------------------- */
PyDoc_STRVAR(chain_heads_doc,
"chain_heads(par, top)\n\n"
"The head of each node's chain (follow par, int64, -1 at a head) written to top (int64), O(n):\n"
"each path is followed once up to a node whose head is known.");

static PyObject *chain_heads(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2];
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    int64_t *path = NULL;
    if (!PyArg_ParseTuple(args, "OO", &o[0], &o[1])) return NULL;
    const int64_t *par = get_buf(&bs, o[0], 8, BUF_ANY, 0, "par");
    if (!par) goto done;
    Py_ssize_t n = buf_items(&bs);
    int64_t *top = get_buf(&bs, o[1], 8, n, 1, "top");
    if (!top) goto done;
    for (Py_ssize_t v = 0; v < n; v++) {
        if (par[v] >= n) { PyErr_SetString(PyExc_ValueError, "parent out of range"); goto done; }
        top[v] = -1;
    }
    path = malloc((size_t)(n > 0 ? n : 1) * 8);
    if (!path) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t v = 0; v < n; v++) {
        Py_ssize_t k = 0;
        int64_t u = v;
        while (top[u] < 0 && par[u] >= 0) {
            if (k >= n) { PyErr_SetString(PyExc_ValueError, "parents form a cycle"); goto done; }
            path[k++] = u;
            u = par[u];
        }
        int64_t h = top[u] >= 0 ? top[u] : u;
        top[u] = h;
        while (k) top[path[--k]] = h;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    free(path);
    release_bufs(&bs);
    return ret;
}

/* -- reachability by bounded search ---------------------------------------------------------- */
PyDoc_STRVAR(reach_doc,
"reach(succ_ptr, succ, level, top, index, qa, qb, budget, out)\n\n"
"For each query i, whether node qa[i] happens before node qb[i], by a depth-first search along the\n"
"successors (succ_ptr int64, succ int32) that skips nodes at or above qb's level (levels strictly\n"
"grow along edges) and stops on reaching qb or a node of qb's chain at or before it (top/index:\n"
"the chain cover; a chain is ordered). level, qa, qb int64, top, index int32. out (int8): 1 reached,\n"
"0 unreachable, -1 undecided (more than budget nodes visited; the caller uses its clocks).");

static PyObject *reach(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[8];
    Py_ssize_t budget;
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    uint32_t *mark = NULL;
    int32_t *stack = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOnO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &budget, &o[7]))
        return NULL;
    const int64_t *succ_ptr = get_buf(&bs, o[0], 8, BUF_ANY, 0, "succ_ptr");
    if (!succ_ptr) goto done;
    Py_ssize_t n = buf_items(&bs) - 1;
    const int32_t *succ = get_buf(&bs, o[1], 4, succ_ptr[n], 0, "succ");
    const int64_t *level = succ ? get_buf(&bs, o[2], 8, n, 0, "level") : NULL;
    const int32_t *top = level ? get_buf(&bs, o[3], 4, n, 0, "top") : NULL;
    const int32_t *index = top ? get_buf(&bs, o[4], 4, n, 0, "index") : NULL;
    const int64_t *qa = index ? get_buf(&bs, o[5], 8, BUF_ANY, 0, "qa") : NULL;
    Py_ssize_t q = qa ? buf_items(&bs) : 0;
    const int64_t *qb = qa ? get_buf(&bs, o[6], 8, q, 0, "qb") : NULL;
    int8_t *out = qb ? get_buf(&bs, o[7], 1, q, 1, "out") : NULL;
    if (!out) goto done;
    for (Py_ssize_t i = 0; i < q; i++)
        if (qa[i] < 0 || qa[i] >= n || qb[i] < 0 || qb[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "query out of range");
            goto done;
        }
    mark = calloc((size_t)(n > 0 ? n : 1), 4);
    stack = malloc((size_t)(n > 0 ? n : 1) * 4);
    if (!mark || !stack) { PyErr_NoMemory(); goto done; }
    uint32_t stamp = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < q; i++) {
        if (++stamp == 0) { memset(mark, 0, (size_t)n * 4); stamp = 1; }
        int64_t b = qb[i], lb = level[b], tb = top[b], ib = index[b];
        Py_ssize_t sp = 0, seen = 0;
        int8_t res = 0;
        stack[sp++] = (int32_t)qa[i];
        mark[qa[i]] = stamp;
        while (sp && !res) {
            int32_t x = stack[--sp];
            for (int64_t k = succ_ptr[x]; k < succ_ptr[x + 1]; k++) {
                int32_t y = succ[k];
                if (y == b || (top[y] == tb && index[y] <= ib)) { res = 1; break; }
                if (level[y] >= lb || mark[y] == stamp) continue;
                if (++seen > budget) { res = -1; break; }
                mark[y] = stamp;
                stack[sp++] = y;
            }
        }
        out[i] = res;
    }
    Py_END_ALLOW_THREADS
    ret = Py_None;
    Py_INCREF(ret);
done:
    free(mark);
    free(stack);
    release_bufs(&bs);
    return ret;
}

/* -- pairing ---------------------------------------------------------------------------------- */
static inline uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

typedef struct { /* one distinct tuple (src, dst, tag, size) and its id, inline: one cache line a probe */
    int64_t size;
    int32_t src, dst, tag, id; /* id -1: an empty slot */
} Entry;

typedef struct { /* dense ids of distinct tuples, open addressing, grown at 3/4 load (at half load
                  * the two tables of the 42M-node 8192-rank all-reduce took 3.2 GB, now 1.6) */
    Entry *e;
    size_t cap;
    int32_t n;
} Ids;

static inline size_t entry_hash(int64_t a, int64_t b, int64_t c, int64_t d) {
    return (size_t)mix(mix(mix(mix(0, (uint64_t)a), (uint64_t)b), (uint64_t)c), (uint64_t)d);
}

static int ids_grow(Ids *t) {
    size_t cap = t->cap ? 2 * t->cap : 1024;
    Entry *e = malloc(cap * sizeof(Entry));
    if (!e) return -1;
    for (size_t j = 0; j < cap; j++) e[j].id = -1;
    for (size_t i = 0; i < t->cap; i++) {
        Entry x = t->e[i];
        if (x.id < 0) continue;
        size_t j = entry_hash(x.src, x.dst, x.tag, x.size) & (cap - 1);
        while (e[j].id >= 0) j = (j + 1) & (cap - 1);
        e[j] = x;
    }
    free(t->e);
    t->e = e;
    t->cap = cap;
    return 0;
}

/* the id of (a, b, c, d), a new one if unseen; -1 on a memory error */
static int32_t ids_of(Ids *t, int32_t a, int32_t b, int32_t c, int64_t d) {
    if ((size_t)(t->n + 1) * 4 > t->cap * 3 && ids_grow(t)) return -1;
    size_t j = entry_hash(a, b, c, d) & (t->cap - 1);
    for (;;) {
        Entry *x = &t->e[j];
        if (x->id < 0) break;
        if (x->src == a && x->dst == b && x->tag == c && x->size == d) return x->id;
        j = (j + 1) & (t->cap - 1);
    }
    Entry *x = &t->e[j];
    x->src = a, x->dst = b, x->tag = c, x->size = d, x->id = t->n;
    return t->n++;
}

static void ids_free(Ids *t) { free(t->e); }

static int grow_i32(int32_t **a, int32_t *cap) {
    int32_t c = *cap ? 2 * *cap : 1024;
    int32_t *p = realloc(*a, (size_t)c * 4);
    if (!p) return -1;
    *a = p;
    *cap = c;
    return 0;
}

PyDoc_STRVAR(pairing_doc,
"pairing(kind, rank, peer, tag, size, seq, conn, side, key, match, spairs, rpairs) -> (nconn, nkeys, ns, nr)\n\n"
"The static message pairing. kind int8, rank int64, peer/tag int32, size int64 per node; seq (int64)\n"
"lists the nodes in issue order (rank by rank). Written per node (int32, -1 for non-messages): conn =\n"
"a dense id of (src, dst, tag); side = how many SENDs (RECVs) of its connection precede it in issue\n"
"order; key = a dense id of (src, dst, tag, size) (the walk's FIFO); match = for a RECV, the SEND\n"
"with the same side index on its connection, if any. spairs/rpairs (int64, 2 x capacity) receive\n"
"the consecutive SENDs (RECVs) of one key in issue order, ns/nr of them.");

static PyObject *pairing(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[12];
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    Ids conns = {0}, keys = {0};
    int32_t *kconn = NULL; /* the connection of each key */
    int32_t kcap = 0;
    int64_t *cnt = NULL, *last = NULL, *off = NULL, *slist = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9],
                          &o[10], &o[11]))
        return NULL;
    const int8_t *kind = get_buf(&bs, o[0], 1, BUF_ANY, 0, "kind");
    if (!kind) goto done;
    Py_ssize_t n = buf_items(&bs);
    const int64_t *rank = get_buf(&bs, o[1], 8, n, 0, "rank");
    const int32_t *peer = rank ? get_buf(&bs, o[2], 4, n, 0, "peer") : NULL;
    const int32_t *tag = peer ? get_buf(&bs, o[3], 4, n, 0, "tag") : NULL;
    const int64_t *size = tag ? get_buf(&bs, o[4], 8, n, 0, "size") : NULL;
    const int64_t *seq = size ? get_buf(&bs, o[5], 8, n, 0, "seq") : NULL;
    int32_t *conn = seq ? get_buf(&bs, o[6], 4, n, 1, "conn") : NULL;
    int32_t *side = conn ? get_buf(&bs, o[7], 4, n, 1, "side") : NULL;
    int32_t *key = side ? get_buf(&bs, o[8], 4, n, 1, "key") : NULL;
    int32_t *match = key ? get_buf(&bs, o[9], 4, n, 1, "match") : NULL;
    int64_t *sp = match ? get_buf(&bs, o[10], 8, BUF_ANY, 1, "spairs") : NULL;
    Py_ssize_t scap = sp ? buf_items(&bs) / 2 : 0;
    int64_t *rp = sp ? get_buf(&bs, o[11], 8, BUF_ANY, 1, "rpairs") : NULL;
    Py_ssize_t rcap = rp ? buf_items(&bs) / 2 : 0;
    if (!rp) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t v = seq[i];
        if (v < 0 || v >= n) { PyErr_SetString(PyExc_ValueError, "seq out of range"); goto done; }
        conn[v] = side[v] = key[v] = match[v] = -1;
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        int k = kind[v];
        if (k != K_SEND && k != K_RECV) continue;
        int32_t src = (int32_t)(k == K_SEND ? rank[v] : peer[v]), dst = (int32_t)(k == K_SEND ? peer[v] : rank[v]);
        int32_t id = ids_of(&keys, src, dst, tag[v], size[v]);
        if (id < 0) { PyErr_NoMemory(); goto done; }
        if (id == keys.n - 1) { /* a new key: its connection, once per key */
            int32_t c = ids_of(&conns, src, dst, tag[v], 0);
            if (c < 0 || (id >= kcap && grow_i32(&kconn, &kcap))) { PyErr_NoMemory(); goto done; }
            kconn[id] = c;
        }
        key[v] = id;
        conn[v] = kconn[id];
    }
    int64_t C = conns.n, K = keys.n;
    cnt = calloc((size_t)(2 * C + 1), 8);       /* SENDs, RECVs so far per connection */
    last = malloc((size_t)(2 * K + 1) * 8);     /* last SEND, RECV per key */
    off = malloc((size_t)(C + 1) * 8);
    if (!cnt || !last || !off) { PyErr_NoMemory(); goto done; }
    memset(last, 0xff, (size_t)(2 * K + 1) * 8);
    Py_ssize_t ns = 0, nr = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t v = seq[i];
        if (conn[v] < 0) continue;
        int r = kind[v] == K_RECV;
        side[v] = (int32_t)cnt[2 * conn[v] + r]++;
        int64_t *l = &last[2 * key[v] + r];
        if (*l >= 0) {
            if (r) {
                if (nr >= rcap) { PyErr_SetString(PyExc_ValueError, "rpairs too small"); goto done; }
                rp[nr] = *l, rp[rcap + nr] = v, nr++;
            } else {
                if (ns >= scap) { PyErr_SetString(PyExc_ValueError, "spairs too small"); goto done; }
                sp[ns] = *l, sp[scap + ns] = v, ns++;
            }
        }
        *l = v;
    }
    /* the k-th SEND of each connection, then each RECV's match */
    off[0] = 0;
    for (int64_t c = 0; c < C; c++) off[c + 1] = off[c] + cnt[2 * c];
    slist = malloc((size_t)(off[C] > 0 ? off[C] : 1) * 8);
    if (!slist) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t v = 0; v < n; v++)
        if (conn[v] >= 0 && kind[v] == K_SEND) slist[off[conn[v]] + side[v]] = v;
    for (Py_ssize_t v = 0; v < n; v++)
        if (conn[v] >= 0 && kind[v] == K_RECV && side[v] < cnt[2 * conn[v]])
            match[v] = (int32_t)slist[off[conn[v]] + side[v]];
    ret = Py_BuildValue("LLnn", (long long)C, (long long)K, ns, nr);
done:
    ids_free(&conns);
    ids_free(&keys);
    free(kconn);
    free(cnt); free(last); free(off); free(slist);
    release_bufs(&bs);
    return ret;
}

/* -- walk --------------------------------------------------------------------------------------- */
typedef struct {
    /* structure */
    Py_ssize_t n;
    const int8_t *kind;
    const int32_t *key;
    const int64_t *succ_ptr;
    const int32_t *succ;
    /* data (NULL index: control only) */
    const int8_t *op;
    const int32_t *cnt;
    const int64_t *saddr, *daddr, *rank; /* addresses within the rank's memory of M slots */
    int64_t M;
    int32_t *index;
    uint64_t *mask;
    Py_ssize_t words;
    /* state */
    int64_t *indeg, *next, *mh, *mt, *wh, *wt, *heap;
    Py_ssize_t nheap;
    void **pay; /* each SEND's snapshot until its RECV consumes it */
} W;

static void heap_push(W *w, int64_t v) {
    Py_ssize_t i = w->nheap++;
    while (i > 0) {
        Py_ssize_t p = (i - 1) >> 1;
        if (w->heap[p] <= v) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = v;
}

static int64_t heap_pop(W *w) {
    int64_t top = w->heap[0], last = w->heap[--w->nheap];
    Py_ssize_t i = 0, m = w->nheap;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && w->heap[c + 1] < w->heap[c]) c++;
        if (w->heap[c] >= last) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (m) w->heap[i] = last;
    return top;
}

static void release_succ(W *w, int64_t v) {
    for (int64_t k = w->succ_ptr[v]; k < w->succ_ptr[v + 1]; k++)
        if (--w->indeg[w->succ[k]] == 0) heap_push(w, w->succ[k]);
}

/* the addresses [a, a + c) lie inside node v's rank memory */
static inline int inside(const W *w, int64_t a, int64_t c) { return a >= 0 && c >= 0 && a + c <= w->M; }

/* the global slot of address a of node v's rank */
static inline int64_t slot(const W *w, int64_t v, int64_t a) { return w->rank[v] * w->M + a; }

/* copy c values from slots [a, a + c) into (idx, msk); 0 if one is uninitialised */
static int gather(const W *w, int64_t a, int64_t c, int32_t *idx, uint64_t *msk) {
    Py_ssize_t W_ = w->words;
    for (int64_t e = 0; e < c; e++) if (w->index[a + e] < 0) return 0;
    memcpy(idx, w->index + a, (size_t)c * 4);
    memcpy(msk, w->mask + a * W_, (size_t)(c * W_) * 8);
    return 1;
}

/* write (COPY) or combine (REDUCE) c values into slots [a, a + c); 0 on an invalid combination
 * (an uninitialised destination, a different chunk index or a shared contributor) */
static int put(const W *w, int op, int64_t a, int64_t c, const int32_t *idx, const uint64_t *msk) {
    Py_ssize_t W_ = w->words;
    if (op == OP_COPY) {
        memcpy(w->index + a, idx, (size_t)c * 4);
        memcpy(w->mask + a * W_, msk, (size_t)(c * W_) * 8);
        return 1;
    }
    for (int64_t e = 0; e < c; e++) {
        if (w->index[a + e] < 0 || w->index[a + e] != idx[e]) return 0;
        const uint64_t *d = w->mask + (a + e) * W_, *x = msk + e * W_;
        for (Py_ssize_t k = 0; k < W_; k++) if (d[k] & x[k]) return 0;
    }
    for (int64_t e = 0; e < c; e++) {
        uint64_t *d = w->mask + (a + e) * W_;
        const uint64_t *x = msk + e * W_;
        for (Py_ssize_t k = 0; k < W_; k++) d[k] |= x[k];
    }
    return 1;
}

/* SEND v's snapshot of its source chunks (masks, then indexes); NULL sets *bad or memory error */
static void *snapshot(W *w, int64_t v, int *bad) {
    int64_t c = w->cnt[v], a = w->saddr[v];
    if (!inside(w, a, c)) { *bad = 1; return NULL; }
    a = slot(w, v, a);
    void *p = malloc((size_t)c * (8 * (size_t)w->words + 4) + 1);
    if (!p) return NULL;
    if (!gather(w, a, c, (int32_t *)((uint64_t *)p + c * w->words), (uint64_t *)p)) { free(p); *bad = 1; return NULL; }
    return p;
}

static int receive(W *w, int64_t v, int64_t s) {
    int64_t c = w->cnt[v], a = w->daddr[v];
    void *p = w->pay[s];
    w->pay[s] = NULL;
    int ok = c == w->cnt[s] && inside(w, a, c) && (w->op[v] == OP_COPY || w->op[v] == OP_REDUCE) &&
             put(w, w->op[v], slot(w, v, a), c, (int32_t *)((uint64_t *)p + c * w->words), (uint64_t *)p);
    free(p);
    return ok;
}

static int comp(W *w, int64_t v) {
    int64_t c = w->cnt[v], a = w->saddr[v], d = w->daddr[v];
    int op = w->op[v];
    if ((op != OP_COPY && op != OP_REDUCE) || !inside(w, a, c) || !inside(w, d, c)) return 0;
    a = slot(w, v, a);
    d = slot(w, v, d);
    uint64_t *msk = malloc((size_t)c * (8 * (size_t)w->words + 4) + 1);
    if (!msk) return -1;
    int32_t *idx = (int32_t *)(msk + c * w->words);
    int ok = gather(w, a, c, idx, msk) && put(w, op, d, c, idx, msk);
    free(msk);
    return ok;
}

/* the worklist of hub/verify/_walk.py's _run, step for step; returns completed nodes, or -1 on a
 * data error (*status) and -2 on a memory error */
static Py_ssize_t run_walk(W *w, int *status) {
    Py_ssize_t n = w->n, completed = 0;
    int data = w->index != NULL;
    for (Py_ssize_t v = 0; v < n; v++) if (!w->indeg[v]) w->heap[w->nheap++] = v; /* sorted: a heap */
    while (w->nheap) {
        int64_t v = heap_pop(w), got = -1;
        int k = w->kind[v];
        if (k == K_SEND) {
            int64_t kk = w->key[v];
            if (data) {
                int bad = 0;
                w->pay[v] = snapshot(w, v, &bad);
                if (bad) { *status = WALK_DATA; return -1; }
                if (!w->pay[v]) return -2;
            }
            if (w->wh[kk] >= 0) { /* the SEND completes, then the RECV that waited for it */
                got = v;
                completed++;
                release_succ(w, v);
                v = w->wh[kk];
                w->wh[kk] = w->next[v];
            } else {
                w->next[v] = -1;
                if (w->mh[kk] < 0) w->mh[kk] = v; else w->next[w->mt[kk]] = v;
                w->mt[kk] = v;
            }
        } else if (k == K_RECV) {
            int64_t kk = w->key[v];
            if (w->mh[kk] >= 0) {
                got = w->mh[kk];
                w->mh[kk] = w->next[got];
            } else {
                w->next[v] = -1;
                if (w->wh[kk] < 0) w->wh[kk] = v; else w->next[w->wt[kk]] = v;
                w->wt[kk] = v;
                continue;
            }
        } else if (data && k == K_COMP && w->op[v] && w->cnt[v] > 0) {
            int ok = comp(w, v);
            if (ok < 0) return -2;
            if (!ok) { *status = WALK_DATA; return -1; }
        }
        if (got >= 0 && data && !receive(w, v, got)) { *status = WALK_DATA; return -1; }
        completed++;
        release_succ(w, v);
    }
    return completed;
}

PyDoc_STRVAR(walk_doc,
"walk(kind, key, nkeys, dep_ptr, succ_ptr, succ, data) -> (completed, status)\n\n"
"One execution of hub/verify/_walk.py's walk. kind int8, key int32 (pairing's), dep_ptr/succ_ptr\n"
"int64, succ int32. data: None (control only) or (op int8, cnt int32, saddr, daddr, rank int64 per node, M, index\n"
"int32 per slot, mask uint64 per slot x words, words): addresses are within the node's rank memory, whose\n"
"address a is slot rank * M + a; index and mask are updated in place. status 0: ran (completed < n: a deadlock); 1: a data error or an unusual node stopped it.");

static PyObject *walk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[5], *data;
    Py_ssize_t nkeys;
    Bufs bs = {.nv = 0};
    PyObject *ret = NULL;
    W w;
    memset(&w, 0, sizeof w);
    if (!PyArg_ParseTuple(args, "OOnOOOO", &o[0], &o[1], &nkeys, &o[2], &o[3], &o[4], &data)) return NULL;
    w.kind = get_buf(&bs, o[0], 1, BUF_ANY, 0, "kind");
    if (!w.kind) goto done;
    Py_ssize_t n = w.n = buf_items(&bs);
    w.key = get_buf(&bs, o[1], 4, n, 0, "key");
    const int64_t *dep_ptr = w.key ? get_buf(&bs, o[2], 8, n + 1, 0, "dep_ptr") : NULL;
    w.succ_ptr = dep_ptr ? get_buf(&bs, o[3], 8, n + 1, 0, "succ_ptr") : NULL;
    w.succ = w.succ_ptr ? get_buf(&bs, o[4], 4, w.succ_ptr[n], 0, "succ") : NULL;
    if (!w.succ) goto done;
    for (Py_ssize_t v = 0; v < n; v++) {
        int k = w.kind[v];
        if ((k == K_SEND || k == K_RECV) && (w.key[v] < 0 || w.key[v] >= nkeys)) {
            PyErr_SetString(PyExc_ValueError, "key out of range");
            goto done;
        }
    }
    if (data != Py_None) {
        PyObject *d[7];
        long long M;
        if (!PyArg_ParseTuple(data, "OOOOOLOOn", &d[0], &d[1], &d[2], &d[3], &d[4], &M, &d[5], &d[6], &w.words))
            goto done;
        w.M = M;
        w.op = get_buf(&bs, d[0], 1, n, 0, "op");
        w.cnt = w.op ? get_buf(&bs, d[1], 4, n, 0, "cnt") : NULL;
        w.saddr = w.cnt ? get_buf(&bs, d[2], 8, n, 0, "saddr") : NULL;
        w.daddr = w.saddr ? get_buf(&bs, d[3], 8, n, 0, "daddr") : NULL;
        w.rank = w.daddr ? get_buf(&bs, d[4], 8, n, 0, "rank") : NULL;
        w.index = w.rank ? get_buf(&bs, d[5], 4, BUF_ANY, 1, "index") : NULL;
        if (!w.index) goto done;
        Py_ssize_t slots = buf_items(&bs);
        w.mask = get_buf(&bs, d[6], 8, slots * w.words, 1, "mask");
        if (!w.mask) goto done;
        for (Py_ssize_t v = 0; v < n; v++)
            if (w.rank[v] < 0 || (w.rank[v] + 1) * w.M > slots) {
                PyErr_SetString(PyExc_ValueError, "rank memory out of range");
                goto done;
            }
    }
    size_t m = (size_t)(n > 0 ? n : 1), mk = (size_t)(nkeys > 0 ? nkeys : 1);
    w.indeg = malloc(m * 8);
    w.next = malloc(m * 8);
    w.heap = malloc(m * 8);
    w.mh = malloc(mk * 8);
    w.mt = malloc(mk * 8);
    w.wh = malloc(mk * 8);
    w.wt = malloc(mk * 8);
    w.pay = w.index ? calloc(m, sizeof(void *)) : NULL;
    if (!w.indeg || !w.next || !w.heap || !w.mh || !w.mt || !w.wh || !w.wt || (w.index && !w.pay)) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t v = 0; v < n; v++) w.indeg[v] = dep_ptr[v + 1] - dep_ptr[v];
    memset(w.mh, 0xff, mk * 8);
    memset(w.wh, 0xff, mk * 8);
    int status = WALK_OK;
    Py_ssize_t completed;
    Py_BEGIN_ALLOW_THREADS
    completed = run_walk(&w, &status);
    Py_END_ALLOW_THREADS
    if (completed == -2) { PyErr_NoMemory(); goto done; }
    ret = Py_BuildValue("ni", completed < 0 ? (Py_ssize_t)0 : completed, status);
done:
    if (w.pay) for (Py_ssize_t v = 0; v < w.n; v++) free(w.pay[v]);
    free(w.pay);
    free(w.indeg); free(w.next); free(w.heap);
    free(w.mh); free(w.mt); free(w.wh); free(w.wt);
    release_bufs(&bs);
    return ret;
}

static PyMethodDef methods[] = {
    {"csr", csr, METH_VARARGS, csr_doc},
    {"levels", levels, METH_VARARGS, levels_doc},
    {"chain_parents", chain_parents, METH_VARARGS, chain_parents_doc},
    {"chain_heads", chain_heads, METH_VARARGS, chain_heads_doc},
    {"reach", reach, METH_VARARGS, reach_doc},
    {"pairing", pairing, METH_VARARGS, pairing_doc},
    {"walk", walk, METH_VARARGS, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_verify",
                                    "The verifier's per-node loops (see hub/verify/).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__verify(void) { return PyModule_Create(&module); }
