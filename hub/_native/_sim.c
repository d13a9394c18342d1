/* hub._native._sim: the event loop of hub.simulate (ASTRA-sim's custom-collective walker).
 *
 * Boundary: Python (hub/sim/_engine/layout.py, hub/sim/_engine/loop.py) builds every table with numpy and
 * passes them here as buffers (the buffer protocol; no numpy C API); this module walks the
 * events and writes per-node times into caller-owned arrays. The semantics are documented in
 * docs/simulator.md ("Rules and where they come from") and in hub/sim/_engine/loop.py; the one rule
 * that needs libstdc++'s hash-set order (three or more nodes released by one completion) is
 * not repeated here: it calls back into hub.sim._engine.feeder, its only implementation.
 *
 * Events run in (time, scheduling order), as in ASTRA-sim's event queue (a FIFO list per distinct
 * time): a FIFO bucket per pending time and a min-heap of the pending times (ev_push, ev_pop).
 * The tables are built by _sim_prep.c (channels, layout), exported by this module too.
 */
#include "_simbuf.h"
#include "_simqueue.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { K_COMP = NODE_COMP, K_SEND = NODE_SEND, K_RECV = NODE_RECV }; /* _common.h */
/* resource classes per NPU: 1-3 the workload's (one node each; taken at issue, and a release
 * lets every waiting node compete again), QCLS.. the native collectives' per-dimension queues
 * (cap streams each; hub/sim/_astrasim/streams.py): a node takes a slot when it becomes ready, or
 * waits in arrival order, and a release hands the slot to the first waiting node, as ASTRA-sim's
 * scheduler inits the first waiting stream of a queue when a running one leaves it */
enum { NCLS = 16, QCLS = 4 };


typedef struct { /* COMPs of one NPU ending at one time: one event for the batch */
    int64_t tt;
    int32_t rank, first, tail, used;
} Batch;

typedef struct {
    /* inputs */
    int32_t n, nranks, feeder;
    const int8_t *kind;
    const int32_t *chan, *succ_idx, *rank;
    const int64_t *dur, *chan_delay, *succ_ptr;
    const int32_t *perm;
    const int64_t *ids; /* the feeder's hash key of engine node e: ids[perm[e]] (program order) */
    int32_t *indeg;
    PyObject *reorder_cb;
    /* gated joins (quorum nodes armed by one predecessor; see gate()) and sequencers (tick()) */
    const int32_t *arm;
    uint8_t *armed; /* 0 not armed, 1 armed, 2 released */
    const int32_t *seqw; /* > 0: a sequencer releasing this many successors per tick */
    int64_t *seqcur;     /* per sequencer: successors released so far */
    /* aware */
    int aware;
    const int32_t *route_of, *rlinks; /* route_of: per message channel (a channel fixes src and dst) */
    const int64_t *rptr, *size; /* size: per message channel */
    const double *bp, *lat;
    int64_t *lbytes, *lbusyt;
    uint8_t *lbusy;
    int32_t *lq_head, *lq_tail, *mhop;
    /* workload resources: per NPU NCLS classes, class c holds at most cap[c] nodes at once */
    int use_res;
    const int8_t *acq, *rel, *wlev;
    const int32_t *cap;
    int32_t *busy;
    int32_t *wq_head, *wq_tail, *wnext;
    /* outputs */
    int64_t *start, *fin, *rank_finish;
    int32_t *cause;
    int32_t *order; /* optional: per node, its place in the completion sequence */
    const int32_t *fkey; /* optional: per node, its feeder (-1: none; default: its rank) */
    const int64_t *fstate; /* optional: per rank its free set's (buckets, next resize), kept by the callback */
    int32_t nseq;
    Py_ssize_t t0; /* events at t = 0 after the start: ASTRA-sim's EventQueue::proceed asserts on them */
    int32_t last;
    /* state */
    int32_t *qnext; /* intrusive FIFO links: posted/arrived queues, link queues, COMP batches */
    int32_t *ph, *pt, *ah, *at; /* per channel: posted RECVs, arrived SENDs */
    int32_t *ready;
    Py_ssize_t nready, cready;
    Queue q;
    Batch *bt;
    Py_ssize_t nbt, cbt;
} St;

static inline int64_t key_of(const St *s, int32_t e) { return e < s->n ? s->ids[s->perm[e]] : 0; }

/* -- small containers -------------------------------------------------------------------- */
static int ready_push(St *s, int32_t g) {
    if (s->nready == s->cready) {
        Py_ssize_t c = s->cready ? 2 * s->cready : 1024;
        int32_t *p = realloc(s->ready, (size_t)c * sizeof(int32_t));
        if (!p) return -1;
        s->ready = p;
        s->cready = c;
    }
    s->ready[s->nready++] = g;
    return 0;
}

static inline Py_ssize_t bt_slot(const St *s, int64_t tt, int32_t r) {
    return (Py_ssize_t)(mix64((uint64_t)tt * 0x9e3779b97f4a7c15ULL + (uint64_t)r) & (uint64_t)(s->cbt - 1));
}

static Batch *bt_find(St *s, int64_t tt, int32_t r) {
    if (!s->cbt) return NULL;
    for (Py_ssize_t i = bt_slot(s, tt, r);; i = (i + 1) & (s->cbt - 1)) {
        Batch *b = &s->bt[i];
        if (!b->used) return NULL;
        if (b->tt == tt && b->rank == r) return b;
    }
}

static int bt_insert(St *s, int64_t tt, int32_t r, int32_t g) {
    if (2 * (s->nbt + 1) > s->cbt) { /* grow: re-insert every entry */
        Py_ssize_t oc = s->cbt, c = oc ? 2 * oc : 64;
        Batch *old = s->bt, *p = calloc((size_t)c, sizeof(Batch));
        if (!p) return -1;
        s->bt = p;
        s->cbt = c;
        for (Py_ssize_t j = 0; j < oc; j++) {
            if (!old[j].used) continue;
            Py_ssize_t i = bt_slot(s, old[j].tt, old[j].rank);
            while (s->bt[i].used) i = (i + 1) & (c - 1);
            s->bt[i] = old[j];
        }
        free(old);
    }
    Py_ssize_t i = bt_slot(s, tt, r);
    while (s->bt[i].used) i = (i + 1) & (s->cbt - 1);
    s->bt[i] = (Batch){tt, r, g, g, 1};
    s->nbt++;
    return 0;
}

static void bt_remove(St *s, Batch *b) { /* linear probing: backward-shift deletion */
    Py_ssize_t mask = s->cbt - 1, i = b - s->bt, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->bt[j].used) break;
        Py_ssize_t home = bt_slot(s, s->bt[j].tt, s->bt[j].rank);
        /* move j back to i when its home is not cyclically within (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            s->bt[i] = s->bt[j];
            i = j;
        }
    }
    s->bt[i].used = 0;
    s->nbt--;
}

/* -- the feeder's issue order for >= 3 released nodes (hub.sim._engine.feeder via the callback) ---- */
static int reorder(St *s, Py_ssize_t m0, int32_t r) {
    Py_ssize_t m = s->nready - m0;
    PyObject *keys = PyList_New(m);
    if (!keys) return -1;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *k = PyLong_FromLongLong(key_of(s, s->ready[m0 + i]));
        if (!k) { Py_DECREF(keys); return -1; }
        PyList_SET_ITEM(keys, i, k);
    }
    PyObject *out = PyObject_CallFunction(s->reorder_cb, "iO", (int)r, keys);
    Py_DECREF(keys);
    if (!out) return -1;
    PyObject *seq = PySequence_Fast(out, "reorder must return a sequence");
    Py_DECREF(out);
    if (!seq) return -1;
    int32_t *tmp = malloc((size_t)m * sizeof(int32_t));
    if (!tmp || PySequence_Fast_GET_SIZE(seq) != m) {
        free(tmp);
        Py_DECREF(seq);
        if (tmp) PyErr_SetString(PyExc_RuntimeError, "reorder returned the wrong number of indices");
        else PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        long long j = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (j < 0 || j >= m) {
            free(tmp);
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "reorder returned an index out of range");
            return -1;
        }
        tmp[i] = s->ready[m0 + j];
    }
    memcpy(s->ready + m0, tmp, (size_t)m * sizeof(int32_t));
    free(tmp);
    Py_DECREF(seq);
    return 0;
}

/* The feeder's order without the callback, where the free set does not grow (m keys, at most its
 * next resize): hub.sim._engine.feeder._rule_idx, the reference. Keys are grouped by the first use of
 * their bucket (key mod buckets, Python's non-negative remainder), groups newest first, and
 * newest first inside a group. */
enum { RULE_MAX = 64 };
static void rule_native(St *s, Py_ssize_t m0, Py_ssize_t m, int64_t buckets) {
    int32_t *rd = s->ready + m0, f[RULE_MAX], idx[RULE_MAX], tmp[RULE_MAX];
    int64_t bk[RULE_MAX];
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t b = key_of(s, rd[i]) % buckets;
        if (b < 0) b += buckets;
        bk[i] = b;
        f[i] = (int32_t)i;
        for (Py_ssize_t j = 0; j < i; j++)
            if (bk[j] == b) { f[i] = f[j]; break; }
    }
    for (Py_ssize_t i = 0; i < m; i++) { /* insertion sort by (first use, index), both descending */
        int32_t x = (int32_t)i;
        Py_ssize_t j = i;
        while (j > 0 && (f[idx[j - 1]] < f[x] || (f[idx[j - 1]] == f[x] && idx[j - 1] < x))) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = x;
    }
    for (Py_ssize_t i = 0; i < m; i++) tmp[i] = rd[idx[i]];
    memcpy(rd, tmp, (size_t)m * sizeof(int32_t));
}

/* -- quorum and gated joins ------------------------------------------------------------------
 * A node's indeg is the number of predecessor completions that release it, which may be fewer
 * than its predecessors (a quorum: "the k-th of these to finish", in event order); the later
 * ones count it below zero and release nothing. A gated node (arm[g] >= 0) also has one arming
 * predecessor, which counts nothing: g is released at the first completion of one of its other
 * predecessors that finds both the quorum reached and the gate armed (ASTRA-sim's direct
 * all-reduce: its second half starts at the first bus transfer to end after its last receipt). */
static inline int gate(St *s, int32_t g, int32_t c) {
    if (s->arm[g] == c) {
        if (!s->armed[g]) s->armed[g] = 1;
        return 0;
    }
    if (--s->indeg[g] > 0 || s->armed[g] != 1) return 0;
    s->armed[g] = 2;
    return 1;
}

/* does completion c (a predecessor of g) release g? */
static inline int counts(St *s, int32_t g, int32_t c) {
    return s->arm && s->arm[g] >= 0 ? gate(s, g, c) : --s->indeg[g] == 0;
}

/* -- sequencers -------------------------------------------------------------------------------
 * A sequencer (seqw[q] = w > 0) counts its predecessors' completions in event order; the k-th
 * releases its k-th group of w successors (in successor-list order), as if that completion were
 * their own predecessor (their cause is c). ASTRA-sim's direct issues its i-th send at the i-th
 * packet to finish and starts a packet at each receipt, whichever they are: one sequencer each
 * keeps that linear in the packets. The sequencer itself is done at its last tick; its
 * successors are never sequencers. */
static int tick(St *s, int32_t q, int32_t c, int64_t t, Py_ssize_t *freed) {
    int64_t lo = s->succ_ptr[q] + s->seqcur[q], hi = s->succ_ptr[q + 1];
    if (hi - lo > s->seqw[q]) hi = lo + s->seqw[q];
    s->seqcur[q] += hi - lo;
    for (int64_t x = lo; x < hi; x++) {
        int32_t g = s->succ_idx[x];
        if (!counts(s, g, c)) continue;
        s->cause[g] = c;
        if (ready_push(s, g)) return -1;
        (*freed)++;
    }
    if (--s->indeg[q] == 0) s->start[q] = s->fin[q] = t;
    return 0;
}

/* -- completion of one node at time t ------------------------------------------------------ */
static int complete(St *s, int32_t c, int64_t t) {
    s->fin[c] = t;
    s->last = c;
    if (s->order) s->order[c] = s->nseq++;
    if (c < s->n) s->rank_finish[s->rank[c]] = t; /* times never decrease: the last one is the max */
    if (s->use_res && s->rel[c] >= QCLS) { /* a queue slot: to its first waiting node */
        int32_t key = s->rank[c] * NCLS + s->rel[c], g = s->wq_head[key];
        s->busy[key]--;
        if (g >= 0) {
            s->wq_head[key] = s->wnext[g];
            s->busy[key]++;
            if (ready_push(s, g)) return -1;
        }
    } else if (s->use_res && s->rel[c]) { /* free the NPU resource; its waiting nodes compete again */
        int32_t key = s->rank[c] * NCLS + s->rel[c];
        s->busy[key]--;
        for (int32_t g = s->wq_head[key]; g >= 0; g = s->wnext[g])
            if (ready_push(s, g)) return -1;
        s->wq_head[key] = s->wq_tail[key] = -1;
    }
    Py_ssize_t freed = 0;
    const int counted = s->seqw || s->arm; /* (programs without counted joins keep the plain loop) */
    for (int64_t x = s->succ_ptr[c]; x < s->succ_ptr[c + 1]; x++) {
        int32_t g = s->succ_idx[x];
        if (counted && s->seqw && s->seqw[g] > 0) {
            if (tick(s, g, c, t, &freed)) return -1;
            continue;
        }
        if (counted ? counts(s, g, c) : --s->indeg[g] == 0) {
            s->cause[g] = c;
            if (s->use_res && s->acq[g] >= QCLS) { /* joins its queue now */
                int32_t key = s->rank[g] * NCLS + s->acq[g];
                if (s->busy[key] >= s->cap[s->acq[g]]) {
                    s->wnext[g] = -1;
                    if (s->wq_head[key] < 0) s->wq_head[key] = g;
                    else s->wnext[s->wq_tail[key]] = g;
                    s->wq_tail[key] = g;
                    continue;
                }
                s->busy[key]++;
            }
            if (ready_push(s, g)) return -1;
            freed++;
        }
    }
    if (freed > 1 && s->feeder && c != s->n && (!s->fkey || s->fkey[c] >= 0)) {
        if (freed == 2) { /* two keys into a drained set: newest first */
            int32_t tmp = s->ready[s->nready - 1];
            s->ready[s->nready - 1] = s->ready[s->nready - 2];
            s->ready[s->nready - 2] = tmp;
        } else if (!s->fkey && s->fstate && freed <= RULE_MAX && freed <= s->fstate[2 * s->rank[c] + 1]) {
            rule_native(s, s->nready - freed, freed, s->fstate[2 * s->rank[c]]);
        } else if (reorder(s, s->nready - freed, s->fkey ? s->fkey[c] : s->rank[c])) {
            return -1;
        }
    }
    return 0;
}

/* -- aware links ---------------------------------------------------------------------------- */
static int transmit(St *s, int32_t li, int32_t g, int32_t h, int64_t t) {
    s->lbusy[li] = 1;
    int64_t sz = s->size[s->chan[g]]; /* per channel: a channel fixes the size */
    double x = (double)sz / s->bp[li];
    /* arrival first, then link free (Link::send); each delay truncated on its own */
    if (ev_push(&s->q, t + (int64_t)(s->lat[li] + x), g, h) || ev_push(&s->q, t + (int64_t)x, li, EV_FREE)) return -1;
    s->lbytes[li] += sz;
    s->lbusyt[li] += (int64_t)x;
    return 0;
}

static int want_link(St *s, int32_t li, int32_t g, int32_t h, int64_t t) {
    if (!s->lbusy[li]) return transmit(s, li, g, h, t);
    s->mhop[g] = h;
    s->qnext[g] = -1; /* a message waits at one link at a time, and is in no other queue then */
    if (s->lq_head[li] < 0) s->lq_head[li] = g;
    else s->qnext[s->lq_tail[li]] = g;
    s->lq_tail[li] = g;
    return 0;
}

/* -- workload issue order: per NPU (first come first), ascending node id; collective nodes first */
typedef struct { int32_t pos; int32_t idx; int64_t key; int32_t g; } Outer;

static int outer_cmp(const void *a, const void *b) {
    const Outer *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx); /* stable */
}

static int by_node_id(St *s, int32_t *rankpos, Py_ssize_t m0) { /* sorts ready[m0:] */
    Py_ssize_t m = s->nready, ni = m0, no = 0;
    Outer *o = malloc((size_t)(m - m0) * sizeof(Outer));
    if (!o) return -1;
    int32_t npos = 0;
    for (Py_ssize_t i = m0; i < m; i++) {
        int32_t g = s->ready[i];
        if (!s->wlev[g]) { s->ready[ni++] = g; continue; }
        int32_t r = s->rank[g];
        if (rankpos[r] < 0) rankpos[r] = npos++;
        o[no] = (Outer){rankpos[r], (int32_t)no, key_of(s, g), g};
        no++;
    }
    qsort(o, (size_t)no, sizeof(Outer), outer_cmp);
    for (Py_ssize_t i = 0; i < no; i++) {
        s->ready[ni + i] = o[i].g;
        rankpos[s->rank[o[i].g]] = -1;
    }
    free(o);
    return 0;
}

/* -- the walk -------------------------------------------------------------------------------- */
static int walk(St *s, int32_t *rankpos) {
    if (ev_push(&s->q, 0, s->n, EV_NODE)) return -1; /* the virtual start node "completes" at t = 0 */
    while (s->q.ntq) {
        int64_t t;
        Ev e = ev_pop(&s->q, &t);
        int32_t ev = e.a;
        if (t == 0 && !(ev == s->n && e.b == EV_NODE)) s->t0++;
        if (e.b >= 0) { /* aware: message ev finished hop e.b */
            const int32_t ro = s->route_of[s->chan[ev]];
            const int64_t lo = s->rptr[ro], len = s->rptr[ro + 1] - lo;
            if (e.b + 1 < len) {
                if (want_link(s, s->rlinks[lo + e.b + 1], ev, e.b + 1, t)) return -1;
                continue;
            }
        } else if (e.b == EV_FREE) { /* aware: link ev became free; its queue's head starts */
            int32_t g = s->lq_head[ev];
            if (g >= 0) {
                s->lq_head[ev] = s->qnext[g];
                if (transmit(s, ev, g, s->mhop[g], t)) return -1;
            } else {
                s->lbusy[ev] = 0;
            }
            continue;
        }
        int8_t k = s->kind[ev];
        int32_t one = -1, chain = -1; /* nodes this event completes after ev, in ASTRA-sim's order */
        if (k == K_SEND) { /* the data arrived: the SEND completes, then its RECV if posted */
            int32_t c = s->chan[ev], r = s->ph[c];
            if (r >= 0) {
                s->ph[c] = s->qnext[r];
                s->cause[r] = ev;
                one = r;
            } else {
                s->qnext[ev] = -1;
                if (s->ah[c] < 0) s->ah[c] = ev;
                else s->qnext[s->at[c]] = ev;
                s->at[c] = ev;
            }
        } else if (k == K_COMP) { /* the NPU's batch for this time: every COMP ending now */
            Batch *b = bt_find(s, t, s->rank[ev]);
            if (b) bt_remove(s, b);
            chain = s->qnext[ev];
        }
        if (complete(s, ev, t)) return -1;
        if (one >= 0 && complete(s, one, t)) return -1;
        while (chain >= 0) {
            int32_t nx = s->qnext[chain];
            if (complete(s, chain, t)) return -1;
            chain = nx;
        }
        if (!s->nready) continue;
        if (s->use_res && s->nready > 1 && by_node_id(s, rankpos, 0)) return -1;
        /* issue every ready node (issuing can complete nodes and so append more) */
        for (Py_ssize_t i = 0; i < s->nready; i++) {
            int32_t g = s->ready[i];
            if (s->use_res && s->acq[g] && s->acq[g] < QCLS) {
                int32_t key = s->rank[g] * NCLS + s->acq[g];
                if (s->busy[key] >= s->cap[s->acq[g]]) { /* waits, in arrival order */
                    s->wnext[g] = -1;
                    if (s->wq_head[key] < 0) s->wq_head[key] = g;
                    else s->wnext[s->wq_tail[key]] = g;
                    s->wq_tail[key] = g;
                    continue;
                }
                s->busy[key]++;
            }
            s->start[g] = t;
            int8_t kg = s->kind[g];
            int64_t tt;
            if (kg == K_SEND) {
                if (s->aware) {
                    if (want_link(s, s->rlinks[s->rptr[s->route_of[s->chan[g]]]], g, 0, t)) return -1;
                    continue;
                }
                tt = t + s->chan_delay[s->chan[g]]; /* unaware: the arrival time is known now */
            } else if (kg == K_RECV) {
                int32_t c = s->chan[g], a = s->ah[c];
                if (a < 0) {
                    s->qnext[g] = -1;
                    if (s->ph[c] < 0) s->ph[c] = g;
                    else s->qnext[s->pt[c]] = g;
                    s->pt[c] = g;
                    continue;
                }
                s->ah[c] = s->qnext[a]; /* the data was already there: complete by an event now */
                if (ev_push(&s->q, t, g, EV_NODE)) return -1;
                continue;
            } else if (kg == K_COMP) {
                tt = t + s->dur[g];
                Batch *b = bt_find(s, tt, s->rank[g]);
                if (b) { /* joins the NPU's batch for tt: no event of its own */
                    s->qnext[b->tail] = g;
                    s->qnext[g] = -1;
                    b->tail = g;
                    continue;
                }
                if (bt_insert(s, tt, s->rank[g], g)) return -1;
                s->qnext[g] = -1;
            } else {
                tt = -1; /* no-op kinds and the workload's collective start/end markers */
            }
            if (tt >= 0) {
                if (ev_push(&s->q, tt, g, EV_NODE)) return -1;
                continue;
            }
            Py_ssize_t m0 = s->nready;
            if (complete(s, g, t)) return -1;
            /* a collective's end inside the loop: ASTRA-sim's Workload::call issues what it frees
             * (its successors and the nodes waiting for its resource) in ascending node id */
            if (s->use_res && s->rel[g] && s->nready - m0 > 1 && by_node_id(s, rankpos, m0)) return -1;
        }
        s->nready = 0;
    }
    return 0;
}

/* -- argument handling ------------------------------------------------------------------------ */
static PyObject *queues(const int32_t *head, const int32_t *qnext, Py_ssize_t nchan) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (Py_ssize_t c = 0; c < nchan; c++) {
        if (head[c] < 0) continue;
        PyObject *q = PyList_New(0);
        if (!q) { Py_DECREF(out); return NULL; }
        for (int32_t g = head[c]; g >= 0; g = qnext[g]) {
            PyObject *x = PyLong_FromLong(g);
            if (!x || PyList_Append(q, x)) { Py_XDECREF(x); Py_DECREF(q); Py_DECREF(out); return NULL; }
            Py_DECREF(x);
        }
        if (PyList_Append(out, q)) { Py_DECREF(q); Py_DECREF(out); return NULL; }
        Py_DECREF(q);
    }
    return out;
}

PyDoc_STRVAR(run_doc,
"run(n, nranks, nchan, feeder, reorder, kind, chan, dur, chan_delay, succ_ptr, succ_idx, indeg, rank, perm, ids,\n"
"    aware, res, start, fin, cause, rank_finish, arm=None, seqw=None, order=None, fkey=None, fstate=None)\n"
"    -> (last, posted, arrived, waiting, t0)\n\n"
"Walk the program (engine node order, start node n last). aware: None or (route_of (per channel), rptr,\n"
"rlinks, size, bp, lat, link_bytes, link_busy); res: None or (acq, rel, wlev, cap); arm: None or the arming predecessor\n"
"per node (-1: none; a gated join); seqw: None or per node the successors a sequencer releases per tick\n"
"(0: not one). indeg may be below a node's predecessor count (a quorum). Writes\n"
"start/fin/cause/rank_finish and indeg (> 0: never released); posted/arrived: the non-empty message\n"
"queues (engine nodes), waiting: nodes held for a resource; order: None or an int32 buffer that gets each\n"
"node's place in the completion sequence (-1 stays: never completed); t0: the events that ran at t = 0\n"
"after the start (ASTRA-sim's event queue asserts a strictly later time, so it aborts on any); fkey: None\n"
"(a node's feeder is its rank) or per node the feeder whose hash set orders what it releases (-1: none,\n"
"the release keeps the successor-list order): a workload's custom-collective instances; fstate: None or\n"
"per rank (int64 pairs) its free set's bucket count and next resize, which reorder keeps up to date: a\n"
"release that does not grow the set (at most 64 nodes) is then ordered here, without the callback.");

static PyObject *run(PyObject *self, PyObject *args) {
    (void)self;
    int n, nranks, feeder;
    Py_ssize_t nchan;
    PyObject *cb, *o[10], *aware, *res, *out[4], *arm = Py_None, *seqw = Py_None, *order = Py_None, *fkey = Py_None,
                  *fstate = Py_None;
    if (!PyArg_ParseTuple(args, "iinpOOOOOOOOOOOOOOOOO|OOOOO", &n, &nranks, &nchan, &feeder, &cb, &o[0], &o[1], &o[2],
                          &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &aware, &res, &out[0], &out[1], &out[2],
                          &out[3], &arm, &seqw, &order, &fkey, &fstate))
        return NULL;
    if (n < 0 || n >= INT32_MAX - 1 || nranks < 1 || nchan < 0) {
        PyErr_SetString(PyExc_ValueError, "node, rank or channel count out of range");
        return NULL;
    }
    Bufs bs = {.nv = 0};
    St s;
    memset(&s, 0, sizeof s);
    s.q.evfree = -1;
    PyObject *ret = NULL;
    int32_t *rankpos = NULL;
    Py_ssize_t n1 = (Py_ssize_t)n + 1, nl = 0;
    s.n = n;
    s.nranks = nranks;
    s.feeder = feeder;
    s.reorder_cb = cb;
    if (!(s.kind = get_buf(&bs, o[0], 1, n1, 0, "kind")) || !(s.chan = get_buf(&bs, o[1], 4, n1, 0, "chan")) ||
        !(s.dur = get_buf(&bs, o[2], 8, n1, 0, "dur")) ||
        !(s.chan_delay = get_buf(&bs, o[3], 8, nchan, 0, "chan_delay")) ||
        !(s.succ_ptr = get_buf(&bs, o[4], 8, n1 + 1, 0, "succ_ptr")))
        goto done;
    if (!(s.succ_idx = get_buf(&bs, o[5], 4, (Py_ssize_t)s.succ_ptr[n1], 0, "succ_idx")) ||
        !(s.indeg = get_buf(&bs, o[6], 4, n1, 1, "indeg")) || !(s.rank = get_buf(&bs, o[7], 4, n1, 0, "rank")) ||
        !(s.perm = get_buf(&bs, o[8], 4, n, 0, "perm")) || !(s.ids = get_buf(&bs, o[9], 8, n, 0, "ids")) || !(s.start = get_buf(&bs, out[0], 8, n1, 1, "start")) ||
        !(s.fin = get_buf(&bs, out[1], 8, n1, 1, "fin")) || !(s.cause = get_buf(&bs, out[2], 4, n1, 1, "cause")) ||
        !(s.rank_finish = get_buf(&bs, out[3], 8, nranks, 1, "rank_finish")))
        goto done;
    if (aware != Py_None) {
        PyObject *a[8];
        if (!PyArg_ParseTuple(aware, "OOOOOOOO", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7])) goto done;
        nl = PyObject_Length(a[4]);
        if (nl < 0) goto done;
        Py_ssize_t nroutes = PyObject_Length(a[1]) - 1;
        if (nroutes < 0) goto done;
        s.aware = 1;
        if (!(s.route_of = get_buf(&bs, a[0], 4, nchan, 0, "route_of")) ||
            !(s.rptr = get_buf(&bs, a[1], 8, nroutes + 1, 0, "rptr")))
            goto done;
        if (!(s.rlinks = get_buf(&bs, a[2], 4, (Py_ssize_t)s.rptr[nroutes], 0, "rlinks")) ||
            !(s.size = get_buf(&bs, a[3], 8, nchan, 0, "size")) || !(s.bp = get_buf(&bs, a[4], 8, nl, 0, "bp")) ||
            !(s.lat = get_buf(&bs, a[5], 8, nl, 0, "lat")) ||
            !(s.lbytes = get_buf(&bs, a[6], 8, nl, 1, "link_bytes")) ||
            !(s.lbusyt = get_buf(&bs, a[7], 8, nl, 1, "link_busy")))
            goto done;
    }
    if (res != Py_None) {
        PyObject *a[4];
        if (!PyArg_ParseTuple(res, "OOOO", &a[0], &a[1], &a[2], &a[3])) goto done;
        s.use_res = 1;
        if (!(s.acq = get_buf(&bs, a[0], 1, n1, 0, "acq")) || !(s.rel = get_buf(&bs, a[1], 1, n1, 0, "rel")) ||
            !(s.wlev = get_buf(&bs, a[2], 1, n1, 0, "wlev")) || !(s.cap = get_buf(&bs, a[3], 4, NCLS, 0, "cap")))
            goto done;
    }
    if (arm != Py_None) {
        if (!(s.arm = get_buf(&bs, arm, 4, n1, 0, "arm"))) goto done;
        if (!(s.armed = calloc((size_t)n1, 1))) { PyErr_NoMemory(); goto done; }
    }
    if (order != Py_None && !(s.order = get_buf(&bs, order, 4, n1, 1, "order"))) goto done;
    if (fkey != Py_None && !(s.fkey = get_buf(&bs, fkey, 4, n1, 0, "fkey"))) goto done;
    if (fstate != Py_None && !(s.fstate = get_buf(&bs, fstate, 8, 2 * (Py_ssize_t)nranks, 0, "fstate"))) goto done;
    if (seqw != Py_None) {
        if (!(s.seqw = get_buf(&bs, seqw, 4, n1, 0, "seqw"))) goto done;
        if (!(s.seqcur = calloc((size_t)n1, sizeof(int64_t)))) { PyErr_NoMemory(); goto done; }
    }
    /* state: -1 = empty (0xff bytes) */
    size_t q = (size_t)(nchan ? nchan : 1) * sizeof(int32_t);
    s.qnext = malloc((size_t)n1 * sizeof(int32_t));
    s.ph = malloc(q); s.pt = malloc(q); s.ah = malloc(q); s.at = malloc(q);
    if (!s.qnext || !s.ph || !s.pt || !s.ah || !s.at) { PyErr_NoMemory(); goto done; }
    memset(s.ph, 0xff, q); memset(s.ah, 0xff, q);
    if (s.aware) {
        size_t lq = (size_t)(nl ? nl : 1) * sizeof(int32_t);
        s.lbusy = calloc((size_t)(nl ? nl : 1), 1);
        s.lq_head = malloc(lq); s.lq_tail = malloc(lq);
        s.mhop = malloc((size_t)n1 * sizeof(int32_t));
        if (!s.lbusy || !s.lq_head || !s.lq_tail || !s.mhop) { PyErr_NoMemory(); goto done; }
        memset(s.lq_head, 0xff, lq);
    }
    if (s.use_res) {
        size_t nk = (size_t)nranks * NCLS;
        s.busy = calloc(nk, sizeof(int32_t));
        s.wq_head = malloc(nk * sizeof(int32_t)); s.wq_tail = malloc(nk * sizeof(int32_t));
        s.wnext = malloc((size_t)n1 * sizeof(int32_t));
        rankpos = malloc((size_t)nranks * sizeof(int32_t));
        if (!s.busy || !s.wq_head || !s.wq_tail || !s.wnext || !rankpos) { PyErr_NoMemory(); goto done; }
        memset(s.wq_head, 0xff, nk * sizeof(int32_t));
        memset(rankpos, 0xff, (size_t)nranks * sizeof(int32_t));
    }
    s.last = -1;
    if (walk(&s, rankpos)) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    if (s.arm) /* a gated node never released reads as one still waiting (indeg > 0) */
        for (Py_ssize_t g = 0; g < n1; g++)
            if (s.arm[g] >= 0 && s.armed[g] != 2 && s.indeg[g] < 1) s.indeg[g] = 1;
    Py_ssize_t waiting = 0;
    if (s.use_res)
        for (Py_ssize_t k = 0; k < (Py_ssize_t)nranks * NCLS; k++)
            for (int32_t g = s.wq_head[k]; g >= 0; g = s.wnext[g]) waiting++;
    PyObject *posted = queues(s.ph, s.qnext, nchan);
    PyObject *arrived = posted ? queues(s.ah, s.qnext, nchan) : NULL;
    if (posted && arrived) ret = Py_BuildValue("iOOnn", (int)s.last, posted, arrived, waiting, s.t0);
    Py_XDECREF(posted);
    Py_XDECREF(arrived);
done:
    release_bufs(&bs);
    free(s.qnext); free(s.ph); free(s.pt); free(s.ah); free(s.at);
    free(s.lbusy); free(s.lq_head); free(s.lq_tail); free(s.mhop);
    free(s.busy); free(s.wq_head); free(s.wq_tail); free(s.wnext); free(rankpos);
    free(s.ready); queue_free(&s.q); free(s.bt); free(s.armed); free(s.seqcur);
    return ret;
}

static PyMethodDef methods[] = {{"run", run, METH_VARARGS, run_doc},
                                {"channels", sim_channels, METH_VARARGS, sim_channels_doc},
                                {"layout", sim_layout, METH_VARARGS, sim_layout_doc},
                                {"successors", sim_successors, METH_VARARGS, sim_successors_doc},
                                {"pair_loads", sim_pair_loads, METH_VARARGS, sim_pair_loads_doc},
                                {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sim",
                                    "The event loop of hub.simulate (see hub/sim/_engine/loop.py).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sim(void) { return PyModule_Create(&module); }
