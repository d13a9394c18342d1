/* What _sim.c and _sim_prep.c share (hub._native._sim): the buffer arguments (get_buf of _common.h:
 * each column is checked for its item size and length, a wrong one is a ValueError naming it), a
 * hash finaliser and the table-building functions of _sim_prep.c. */
#ifndef HUB_SIMBUF_H
#define HUB_SIMBUF_H
#include "_common.h"

static inline uint64_t mix64(uint64_t x) { /* splitmix64 finaliser */
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* the table-building functions of _sim_prep.c */
PyObject *sim_channels(PyObject *self, PyObject *args);
PyObject *sim_layout(PyObject *self, PyObject *args);
PyObject *sim_successors(PyObject *self, PyObject *args);
PyObject *sim_pair_loads(PyObject *self, PyObject *args);
extern const char sim_channels_doc[], sim_layout_doc[], sim_successors_doc[], sim_pair_loads_doc[];

#endif
