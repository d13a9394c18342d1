/* The event queue of hub._native._sim (included by _sim.c only).
 *
 * ASTRA-sim's event queue is a FIFO list per distinct time: here a bucket per pending time (found
 * by hashing the time) holds a FIFO of events, and a small min-heap orders the pending times. An
 * event therefore costs O(1) plus a heap step per distinct time, not per event (in a collective many
 * events share a time). Popping gives the events in (time, push order), which is ASTRA-sim's order.
 */
#ifndef HUB_SIMQUEUE_H
#define HUB_SIMQUEUE_H
#include "_simbuf.h"
#include <stdint.h>
#include <stdlib.h>

enum { EV_NODE = -1, EV_FREE = -2 }; /* Ev.b; b >= 0: a message finished hop b (aware) */

typedef struct {
    int32_t a; /* node, message (SEND node) or link */
    int32_t b;
    int32_t next; /* the next event of the same time (FIFO), or the free list */
} Ev;

typedef struct { /* the events of one pending time: a FIFO over Ev.next; t = -1: empty slot */
    int64_t t;
    int32_t head, tail;
} TBucket;

typedef struct {
    Ev *ev; /* event pool */
    Py_ssize_t nev, cev;
    int32_t evfree; /* -1 when empty: set before the first push */
    TBucket *tb; /* pending times -> their FIFO (open addressing, a power of two slots) */
    Py_ssize_t ntb, ctb;
    int64_t *tq; /* min-heap of the pending times */
    Py_ssize_t ntq, ctq;
} Queue;

static int tq_push(Queue *s, int64_t t) {
    if (s->ntq == s->ctq) {
        Py_ssize_t c = s->ctq ? 2 * s->ctq : 256;
        int64_t *p = realloc(s->tq, (size_t)c * sizeof(int64_t));
        if (!p) return -1;
        s->tq = p;
        s->ctq = c;
    }
    Py_ssize_t i = s->ntq++;
    while (i > 0 && s->tq[(i - 1) / 2] > t) {
        s->tq[i] = s->tq[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->tq[i] = t;
    return 0;
}

static void tq_pop(Queue *s) {
    int64_t t = s->tq[--s->ntq];
    Py_ssize_t i = 0, m = s->ntq;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && s->tq[c + 1] < s->tq[c]) c++;
        if (s->tq[c] >= t) break;
        s->tq[i] = s->tq[c];
        i = c;
    }
    if (m) s->tq[i] = t;
}

static inline Py_ssize_t tb_home(const Queue *s, int64_t t) {
    return (Py_ssize_t)(mix64((uint64_t)t) & (uint64_t)(s->ctb - 1));
}

static Py_ssize_t tb_find(const Queue *s, int64_t t) { /* the bucket of time t, or -1 */
    for (Py_ssize_t i = tb_home(s, t);; i = (i + 1) & (s->ctb - 1)) {
        if (s->tb[i].t < 0) return -1;
        if (s->tb[i].t == t) return i;
    }
}

static int tb_grow(Queue *s) {
    Py_ssize_t oc = s->ctb, c = oc ? 2 * oc : 256;
    TBucket *old = s->tb, *p = malloc((size_t)c * sizeof(TBucket));
    if (!p) return -1;
    for (Py_ssize_t j = 0; j < c; j++) p[j].t = -1;
    s->tb = p;
    s->ctb = c;
    for (Py_ssize_t j = 0; j < oc; j++) {
        if (old[j].t < 0) continue;
        Py_ssize_t i = tb_home(s, old[j].t);
        while (s->tb[i].t >= 0) i = (i + 1) & (c - 1);
        s->tb[i] = old[j];
    }
    free(old);
    return 0;
}

static void tb_remove(Queue *s, Py_ssize_t i) { /* linear probing: backward-shift deletion */
    Py_ssize_t mask = s->ctb - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (s->tb[j].t < 0) break;
        Py_ssize_t home = tb_home(s, s->tb[j].t);
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            s->tb[i] = s->tb[j];
            i = j;
        }
    }
    s->tb[i].t = -1;
    s->ntb--;
}

static int ev_push(Queue *s, int64_t t, int32_t a, int32_t b) {
    int32_t x = s->evfree;
    if (x >= 0) {
        s->evfree = s->ev[x].next;
    } else {
        if (s->nev == s->cev) {
            Py_ssize_t c = s->cev ? 2 * s->cev : 4096;
            if (c >= INT32_MAX) return -1;
            Ev *p = realloc(s->ev, (size_t)c * sizeof(Ev));
            if (!p) return -1;
            s->ev = p;
            s->cev = c;
        }
        x = (int32_t)s->nev++;
    }
    s->ev[x] = (Ev){a, b, -1};
    Py_ssize_t i = s->ctb ? tb_find(s, t) : -1;
    if (i >= 0) { /* the time already has events: this one goes last */
        s->ev[s->tb[i].tail].next = x;
        s->tb[i].tail = x;
        return 0;
    }
    if (2 * (s->ntb + 1) > s->ctb && tb_grow(s)) return -1;
    i = tb_home(s, t);
    while (s->tb[i].t >= 0) i = (i + 1) & (s->ctb - 1);
    s->tb[i] = (TBucket){t, x, x};
    s->ntb++;
    return tq_push(s, t);
}

/* the next event (time in *t): the oldest of the earliest time */
static Ev ev_pop(Queue *s, int64_t *t) {
    *t = s->tq[0];
    Py_ssize_t i = tb_find(s, *t);
    int32_t x = s->tb[i].head;
    Ev e = s->ev[x];
    s->ev[x].next = s->evfree;
    s->evfree = x;
    if (e.next >= 0) {
        s->tb[i].head = e.next;
    } else {
        tb_remove(s, i);
        tq_pop(s);
    }
    return e;
}

static void queue_free(Queue *s) {
    free(s->ev);
    free(s->tb);
    free(s->tq);
}

#endif
