/* dtr — the Dynamic Tensor Rematerialization core (Kirisame et al., ICLR 2021).
 *
 * It keeps the metadata of every storage (size, compute cost, last access,
 * the operator call that produced it, parents and children, pin and lock
 * counts, state resident / evicted / banished) and decides, under a memory
 * budget, what to evict and what to recompute. It knows nothing of ONNX,
 * operators, kernels, JSON or files: it reaches memory and compute only
 * through the two small interfaces below, which its user passes in. The
 * simulator (bench/) implements them with a byte counter and a clock; the
 * runtime implements them with the arena and real kernels, so simulated and
 * real runs make the same decisions.
 *
 * Vocabulary. A *tensor* is a value the program holds; a *storage* is the
 * memory behind it. Operator outputs are new storages, except outputs that
 * alias one of the call's inputs (views), which share that input's storage.
 * An operator call with several outputs recomputes all of them together.
 * Constants (weights, graph inputs) are pinned: never evicted.
 *
 * How a user drives it:
 *   d = dtr_create(&config, &memory_ops, &compute_ops);
 *   dtr_constant_add(d, bytes, closure, &w);         a weight, pinned
 *   dtr_call(d, &call, outs, &op);                    run an operator call
 *       inputs are made resident first (recomputing evicted ones, their
 *       parents locked while a child is recomputed); each output buffer is
 *       requested with memory.alloc, and while it does not fit the core
 *       evicts the resident, unlocked storage with the lowest score and
 *       retries; then compute.compute runs (or replays) the call. Every
 *       output starts with one reference held by the program.
 *   dtr_tensor_retain / dtr_tensor_release           program references;
 *       dropping the last one applies the dealloc policy (eager eviction,
 *       banishing, or nothing).
 *   dtr_tensor_acquire / dtr_tensor_unacquire        make a tensor resident
 *       and lock it while the user reads it (e.g. to copy it to the host).
 *   dtr_tensor_pin                                    resident for good
 *       (outputs the program keeps at the end).
 *   dtr_tensor_mutate                                 before the program
 *       writes a tensor in place (an optimizer step inside the backward
 *       pass): what it still holds that was computed from it is made
 *       resident and frozen, as are later calls' outputs that read a frozen
 *       storage, so that no recomputation reads the new contents.
 *   dtr_stats_get, dtr_error                          statistics, last error.
 *
 * Memory interface. memory.alloc(ctx, s, bytes, flags) reserves the buffer
 * of storage s and returns 0, or > 0 when it does not fit (the core then
 * evicts and retries; when nothing is evictable the call fails with
 * DTR_ERR_OOM), or < 0 for a hard error. With flags & DTR_ALLOC_SCRATCH the
 * request is for a temporary output buffer of a storage that is already
 * resident (a multi-output call recomputed for another output writes it
 * there); the core frees it with the same flag after the call, or, if s was
 * evicted meanwhile, calls memory.adopt(ctx, s) to make the scratch s's
 * buffer. memory.free(ctx, s, flags) releases a buffer. The allocator may
 * call dtr_storage_score / dtr_storage_evict from inside alloc (e.g. to free
 * a window of adjacent storages in a fragmented arena); dtr_storage_evict
 * calls memory.free re-entrantly.
 *
 * Compute interface. compute.compute(ctx, op, closure, rematerialize) runs
 * the call `op` whose inputs are resident and whose output buffers are
 * reserved; 0 on success. The core's clock then advances by the call's cost
 * (the unit is the user's: nanoseconds, FLOPs...). compute may be NULL.
 *
 * Scores (lower is evicted first), for storage s with cost c, size m and
 * staleness = clock - last access: dtr (c + cost of the evicted
 * neighbourhood e*(s)) / (m * staleness); dtr-eq the same with e*
 * approximated by union-find classes; dtr-local c / (m * staleness); lru
 * last access; size 1 / m; msps (c + evicted ancestors) / m; random.
 *
 * Errors. Functions return enum dtr_status; dtr_error(d) says what failed.
 * After DTR_ERR_OOM, DTR_ERR_REMAT_LIMIT or DTR_ERR_COMPUTE the instance is
 * spent: later calls return the same status (destroy it). Nothing here
 * aborts or exits.
 */
#ifndef DTRX_DTR_H
#define DTRX_DTR_H

#include <stdint.h>

typedef uint32_t dtr_tensor;
typedef uint32_t dtr_storage;
typedef uint32_t dtr_op;
#define DTR_NONE UINT32_MAX

enum dtr_status {
    DTR_OK = 0,
    DTR_ERR_OOM,            /* nothing left to evict and the buffer does not fit */
    DTR_ERR_REMAT_LIMIT,    /* recomputation exceeded config.remat_limit */
    DTR_ERR_INVALID,        /* bad argument: unknown tensor, no references left... */
    DTR_ERR_COMPUTE,        /* compute.compute or memory.alloc reported an error */
    DTR_ERR_NOMEM,          /* the host ran out of memory for metadata */
};

enum dtr_heuristic {
    DTR_HEURISTIC_DTR = 0,  /* exact evicted neighbourhood */
    DTR_HEURISTIC_EQ,       /* union-find approximation */
    DTR_HEURISTIC_LOCAL,
    DTR_HEURISTIC_LRU,
    DTR_HEURISTIC_SIZE,     /* largest first */
    DTR_HEURISTIC_MSPS,
    DTR_HEURISTIC_RANDOM,
    DTR_HEURISTIC_COUNT
};

enum dtr_dealloc {
    DTR_DEALLOC_EAGER = 0,  /* last reference dropped: evict (metadata kept for children) */
    DTR_DEALLOC_BANISH,     /* free for good once no evicted child needs it; pins children */
    DTR_DEALLOC_IGNORE,     /* nothing: the storage stays until the heuristic evicts it */
    DTR_DEALLOC_COUNT
};

/* "dtr", "dtr-eq", "dtr-local", "lru", "size", "msps", "random". */
const char *dtr_heuristic_name(enum dtr_heuristic h);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int dtr_heuristic_parse(const char *name, enum dtr_heuristic *out);
/* "eager", "banish", "ignore". */
const char *dtr_dealloc_name(enum dtr_dealloc p);
int dtr_dealloc_parse(const char *name, enum dtr_dealloc *out);
const char *dtr_status_name(enum dtr_status s);

#define DTR_ALLOC_SCRATCH 1u

struct dtr_memory_ops {
    void *ctx;
    int (*alloc)(void *ctx, dtr_storage s, uint64_t bytes, unsigned flags);
    void (*free)(void *ctx, dtr_storage s, unsigned flags);
    void (*adopt)(void *ctx, dtr_storage s);   /* optional */
};

struct dtr_compute_ops {
    void *ctx;
    int (*compute)(void *ctx, dtr_op op, void *closure, int rematerialize);
};

struct dtr_config {
    enum dtr_heuristic heuristic;
    enum dtr_dealloc dealloc;
    /* The call fails with DTR_ERR_REMAT_LIMIT once the total recomputed cost
     * exceeds this; < 0 means no limit. */
    double remat_limit;
    /* Overhead controls: storages smaller than this are not scored (unless
     * nothing else is evictable); with sample_sqrt only about sqrt(n) random
     * candidates are scored per eviction. */
    uint64_t min_evict_bytes;
    int sample_sqrt;
    uint64_t seed;          /* random heuristic and sampling */
};

/* dtr heuristic, eager eviction, no limit, no overhead controls, seed 1. */
void dtr_config_default(struct dtr_config *config);

/* One operator call. output_alias[i] is the index of the input whose storage
 * output i shares (a view; its bytes are then ignored), or -1. */
struct dtr_call_desc {
    const dtr_tensor *inputs;
    uint32_t n_inputs;
    const uint64_t *output_bytes;
    const int32_t *output_alias;   /* NULL: no aliases */
    uint32_t n_outputs;
    double cost;
    void *closure;                 /* handed back to compute.compute */
};

struct dtr;

/* NULL when the host is out of memory or an argument is invalid. */
struct dtr *dtr_create(const struct dtr_config *config, const struct dtr_memory_ops *memory,
                       const struct dtr_compute_ops *compute);
void dtr_destroy(struct dtr *d);

/* A constant of `bytes` (allocated like any output, possibly evicting, then
 * pinned). compute.compute is called once with rematerialize 0 so the user
 * can fill it. */
enum dtr_status dtr_constant_add(struct dtr *d, uint64_t bytes, void *closure, dtr_tensor *out);
/* Runs one call; writes its n_outputs tensors to outputs (and the call's id
 * to *op when op is not NULL). */
enum dtr_status dtr_call(struct dtr *d, const struct dtr_call_desc *call, dtr_tensor *outputs, dtr_op *op);

enum dtr_status dtr_tensor_retain(struct dtr *d, dtr_tensor t);
enum dtr_status dtr_tensor_release(struct dtr *d, dtr_tensor t);
enum dtr_status dtr_tensor_acquire(struct dtr *d, dtr_tensor t);
enum dtr_status dtr_tensor_unacquire(struct dtr *d, dtr_tensor t);
enum dtr_status dtr_tensor_pin(struct dtr *d, dtr_tensor t);
/* The program is about to change tensor t's contents in place. Every
 * storage it still references that was computed, directly or not, from t is
 * made resident (recomputed now, from the old contents, if evicted) and
 * frozen: never evicted, freed for good when its last reference goes. The
 * outputs of every later call that reads a frozen storage are frozen too.
 * Nothing computed from t is therefore ever recomputed from its new
 * contents. DTR_ERR_OOM when those storages do not fit at once. */
enum dtr_status dtr_tensor_mutate(struct dtr *d, dtr_tensor t);
/* 1 when the tensor is computed and its storage resident. */
int dtr_tensor_is_resident(const struct dtr *d, dtr_tensor t);
dtr_storage dtr_tensor_storage(const struct dtr *d, dtr_tensor t);

uint64_t dtr_storage_bytes(const struct dtr *d, dtr_storage s);
/* What recomputing s costs by itself: the cost of the calls that make its
 * tensors (evicted inputs would add theirs). */
double dtr_storage_compute(const struct dtr *d, dtr_storage s);
/* What holds storage s now, for a caller explaining where memory went. */
struct dtr_storage_info {
    uint64_t bytes;
    uint8_t resident;
    uint8_t pinned;                 /* a constant, or pinned by the program or by banishing */
    uint8_t frozen;                 /* dtr_tensor_mutate */
    uint8_t locked;                 /* acquired, or an input of a call being run or recomputed */
    uint8_t evictable;
    uint8_t shared;                 /* more than one tensor (views) on it */
    uint32_t refs;                  /* program references, all its tensors together */
};
/* DTR_ERR_INVALID for an unknown storage. */
enum dtr_status dtr_storage_info(const struct dtr *d, dtr_storage s, struct dtr_storage_info *out);
/* 1 when s is resident, unlocked, unpinned: a candidate for eviction. */
int dtr_storage_is_evictable(const struct dtr *d, dtr_storage s);
/* The heuristic's score of an evictable storage (lower goes first); counts
 * as one heuristic evaluation. DTR_ERR_INVALID if s is not evictable. */
enum dtr_status dtr_storage_score(struct dtr *d, dtr_storage s, double *score);
/* What evicting storage s would cost by the active heuristic's own
 * estimate: its compute plus the evicted neighbourhood its score counts
 * (dtr and msps: e*; dtr-eq: the classes of its evicted neighbours), or its
 * compute alone for the others. For a caller weighing an eviction against
 * another way of finding memory (e.g. moving blocks). */
enum dtr_status dtr_storage_eviction_cost(struct dtr *d, dtr_storage s, double *cost);
/* Evicts an evictable storage now (calls memory.free). */
enum dtr_status dtr_storage_evict(struct dtr *d, dtr_storage s);

struct dtr_stats {
    double clock;                   /* model + remat compute so far */
    double model_compute;           /* first executions */
    double remat_compute;           /* recomputations (the call asked for; collateral outputs are free) */
    uint64_t remats;                /* recomputed calls */
    uint64_t evictions;             /* chosen by the heuristic or dtr_storage_evict */
    uint64_t dealloc_evictions;     /* eager evictions of dropped storages */
    uint64_t banishes;
    uint64_t heuristic_evaluations; /* scores computed */
    uint64_t metadata_accesses;     /* storage/edge/class records read while scoring */
    uint64_t resident_bytes, peak_resident_bytes;
    uint64_t pinned_bytes;          /* resident bytes that can never be evicted */
    uint64_t frozen_bytes;          /* resident bytes frozen by dtr_tensor_mutate (not in pinned_bytes) */
    uint64_t mutations;             /* dtr_tensor_mutate calls */
    uint64_t constant_bytes;
    uint32_t tensors, storages, ops;
};
void dtr_stats_get(const struct dtr *d, struct dtr_stats *out);

/* The message of the last error ("" if none). */
const char *dtr_error(const struct dtr *d);

#endif
