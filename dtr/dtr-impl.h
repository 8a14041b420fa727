/* dtr/dtr-impl.h — the DTR core's records, shared by dtr.c (graph, eviction,
 * rematerialization) and score.c (heuristics, union-find, regions). Not part
 * of the interface: users see only dtr.h. */
#ifndef DTRX_DTR_IMPL_H
#define DTRX_DTR_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "dtr/dtr.h"

enum storage_state {
    ST_PENDING = 0,  /* created by a call that has not run yet */
    ST_RESIDENT,
    ST_EVICTED,
    ST_BANISHED,     /* freed for good, detached from the graph */
};

struct tensor_rec {
    uint32_t storage;
    uint32_t op;
    uint32_t next_in_storage;       /* list of the tensors sharing a storage */
    uint32_t first_use, last_use;   /* calls that read this tensor (children) */
    uint32_t ref_ext;               /* program references to this tensor */
    uint64_t bytes;                 /* the call's output size; 0 for views */
    uint8_t defined;
    uint8_t is_alias;
};

struct use_rec {
    uint32_t op;
    uint32_t next;
};

struct op_rec {
    uint32_t in_begin, n_in;        /* into dtr.op_inputs */
    uint32_t out_begin, n_out;      /* outputs are consecutive tensor ids */
    double cost;
    void *closure;
};

/* dtr-eq caches, per storage, the classes of its non-resident neighbours in
 * the order eq_cost meets them (at most this many). */
#define DTR_EQ_ROOTS 6

/* What scoring reads is the first cache line of the record (the records
 * are 128 bytes, 64-aligned): the window search of the runtime scores every
 * block of the arena on each eviction, and dtr_choose walks the pool by
 * pool_next, so a score costs one line here plus, for dtr-eq, one per class
 * root (struct uf_node). dtr and msps use the region caches, dtr-eq the
 * class roots, never both (the heuristic is fixed per instance). */
struct storage_rec {
    uint64_t bytes;
    double compute;                 /* cost of the distinct calls of its tensors */
    double last_access;
    uint8_t pinned;
    uint8_t changed;                /* queued in dtr.changed: 1 growing the regions, 2 maybe not */
    uint8_t fwd_valid, bwd_valid;
    uint8_t eq_valid;
    uint8_t eq_n;
    uint8_t fwd_lower, bwd_lower;   /* a stale region cache still bounds the region from below */
    uint32_t pool_prev, pool_next;  /* evictable pool, in the order storages joined it */
    union {
        struct {
            uint32_t fwd_epoch, bwd_epoch;  /* region caches valid when == dtr.region_epoch ... */
            double fwd_cost, bwd_cost;      /* ... and the flag above is set */
        };
        uint32_t eq_roots[DTR_EQ_ROOTS]; /* dtr-eq: valid while eq_valid is set and each is a root */
    };
    /* second line: the graph */
    uint32_t ecn;                   /* union-find node (dtr-eq), DTR_NONE when resident */
    uint32_t first_tensor, last_tensor;
    uint32_t ref_ext;               /* program references, all its tensors together */
    uint32_t ref_int;               /* locks (pins hold one for good) */
    /* storage-level edges, [0] parents and [1] children, for the walks of
     * the heuristics (no self-edges; duplicates are harmless) */
    uint32_t *adj[2];
    uint32_t n_adj[2], cap_adj[2];
    /* computed from a tensor the program has since changed in place
     * (dtr_tensor_mutate): locked for good, freed when released */
    uint8_t frozen;
} __attribute__((aligned(64)));

/* A union-find node: what eq_cost reads of a root, in one 16-byte record. */
struct uf_node {
    double value;
    uint32_t parent;                /* DTR_NONE for a root */
    uint32_t size;
};

struct frame {
    uint32_t t;
    uint32_t arg_begin, arg_end, i;
    uint8_t phase;
    uint8_t remat;
};

struct dtr {
    struct dtr_config cfg;
    struct dtr_memory_ops mem;
    struct dtr_compute_ops comp;

    struct tensor_rec *tensors;
    uint32_t n_tensors, cap_tensors;
    struct storage_rec *storages;
    /* beside the records, so that the walks over neighbours and the
     * runtime's evictability checks read 6 bytes per storage rather than a
     * record: state (enum storage_state), membership of the evictable pool
     * and traversal marks */
    uint8_t *state;
    uint8_t *in_pool;
    uint32_t *mark;
    uint32_t n_storages, cap_storages;
    struct op_rec *ops;
    uint32_t n_ops, cap_ops;
    uint32_t *op_inputs;
    uint32_t n_op_inputs, cap_op_inputs;
    struct use_rec *uses;
    uint32_t n_uses, cap_uses;

    /* union-find over evicted storages (dtr-eq), union by size */
    struct uf_node *uf;
    uint32_t *uf_stamp;
    uint32_t n_uf, cap_uf;

    uint32_t pool_head, pool_tail, pool_count;

    /* storages whose state changed since the region caches were last checked */
    uint32_t *changed;
    uint32_t n_changed, cap_changed;
    uint32_t region_epoch;
    /* Region sums are exact in any order while every cost is an integer and
     * all storages' costs together stay below 2^53 (FLOPs, simrd's logs):
     * then the stale caches of the pool are recomputed together, 64 at a
     * time, one bit per storage in reach[] (see region_refresh). */
    uint8_t costs_exact;
    uint8_t stale_all;              /* the epoch moved: every cache is stale */
    uint8_t refresh_pending;        /* stale caches of the pool may be left */
    double compute_total;
    uint64_t *reach;
    uint64_t *keys;                 /* region_refresh: (source, stale storage) pairs */
    uint32_t cap_reach, cap_keys;
    uint32_t *stale[2];             /* residents whose [0] backward / [1] forward cache was dropped */
    uint32_t n_stale[2], cap_stale[2];

    /* dtr_choose: the candidates in scan order, their scores, and those
     * whose stale caches it recomputes */
    uint32_t *cand, *stale_list;
    double *cand_score;
    uint32_t cap_cand, cap_stale_list, cap_cand_score;

    /* explicit stacks: rematerialization never recurses on the C stack */
    struct frame *frames;
    uint32_t n_frames, cap_frames;
    uint32_t *args;
    uint32_t n_args, cap_args;
    uint32_t *work;                 /* traversal stack */
    uint32_t n_work, cap_work;
    uint32_t stamp;

    double clock;
    uint64_t rng;
    struct dtr_stats st;
    enum dtr_status failed;
    char err[320];
};

int dtr_grow(void **p, uint32_t *cap, size_t need, size_t elem);
#define DTR_GROW(d, arr, cap, need) dtr_grow((void **)&(arr), &(cap), (need), sizeof *(arr))

void dtr_set_error(struct dtr *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* score.c */
uint32_t dtr_stamp_next(struct dtr *d);
int dtr_uf_new(struct dtr *d, double value, uint32_t *node);
void dtr_uf_merge(struct dtr *d, uint32_t a, uint32_t b);
void dtr_uf_add(struct dtr *d, uint32_t node, double delta);
/* Evicted storage s gets its own class merged with the classes of its
 * non-resident neighbours. */
int dtr_eq_on_evict(struct dtr *d, uint32_t s);
/* The neighbours of s (and s) changed state or edges: their dtr-eq caches
 * are stale. */
void dtr_eq_changed(struct dtr *d, uint32_t s);
/* Queue a state change of s for the region caches; `grows` when it can
 * only enlarge the regions through s (an eviction). */
int dtr_region_changed(struct dtr *d, uint32_t s, int grows);
/* Bring the region caches up to date with the queued changes. */
int dtr_region_sync(struct dtr *d);
double dtr_score(struct dtr *d, uint32_t s);
/* The numerator of s's score: see dtr_storage_eviction_cost. */
double dtr_eviction_cost(struct dtr *d, uint32_t s);
/* For tests: the score of s computed afresh, every cache ignored (and the
 * statistics left as they were). */
double dtr_score_reference(struct dtr *d, uint32_t s);
/* The storage to evict next, or DTR_NONE when the pool is empty. */
uint32_t dtr_choose(struct dtr *d);

static inline int dtr_heuristic_uses_regions(enum dtr_heuristic h)
{
    return h == DTR_HEURISTIC_DTR || h == DTR_HEURISTIC_MSPS;
}

#endif
