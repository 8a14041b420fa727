/* dtr/score.c — eviction scores: the heuristics, the union-find classes of
 * dtr-eq and the cached evicted regions of dtr and msps, and the choice of
 * the next storage to evict.
 *
 * Tie-breaking follows the DTR authors' simulator (simrd), whose results we
 * are validated against: candidates are scored in the order they joined the
 * pool, the last one with the lowest score wins, and a score of exactly 0
 * stops the scan. */
#include <math.h>
#include <stdlib.h>

#include "dtr/dtr-impl.h"

/* Past this many queued state changes, dropping every region cache is
 * cheaper than walking out from each change to find the stale ones. */
#define REGION_SYNC_MAX_CHANGES 4096

uint32_t dtr_stamp_next(struct dtr *d)
{
    if (++d->stamp == 0) {
        /* wrapped: clear every mark so that old marks cannot match */
        for (uint32_t i = 0; i < d->n_storages; i++)
            d->mark[i] = 0;
        for (uint32_t i = 0; i < d->n_uf; i++)
            d->uf_stamp[i] = 0;
        d->stamp = 1;
    }
    return d->stamp;
}

/* ---- union-find (dtr-eq) ---- */

int dtr_uf_new(struct dtr *d, double value, uint32_t *node)
{
    uint32_t old_cap = d->cap_uf;
    if (DTR_GROW(d, d->uf, d->cap_uf, d->n_uf + 1))
        return -1;
    if (d->cap_uf != old_cap || !d->uf_stamp) {
        /* the stamps share the nodes' capacity */
        void *s = realloc(d->uf_stamp, (size_t)d->cap_uf * sizeof *d->uf_stamp);
        if (!s)
            return -1;
        d->uf_stamp = s;
    }
    uint32_t n = d->n_uf++;
    d->uf[n].parent = DTR_NONE;
    d->uf[n].value = value;
    d->uf[n].size = 1;
    d->uf_stamp[n] = 0;
    *node = n;
    return 0;
}

static uint32_t uf_find(struct dtr *d, uint32_t x)
{
    struct uf_node *uf = d->uf;
    uint32_t r = x;
    d->st.metadata_accesses++;
    while (uf[r].parent != DTR_NONE) {
        r = uf[r].parent;
        d->st.metadata_accesses++;
    }
    while (x != r) {   /* path compression */
        uint32_t next = uf[x].parent;
        uf[x].parent = r;
        x = next;
    }
    return r;
}

/* The smaller class goes under the larger, so that the root of a large
 * class stays put while single evicted storages join it (dtr-eq's caches
 * name roots). Which one becomes the root changes no value: the sum is the
 * same pair of doubles either way (simrd puts a under b). */
void dtr_uf_merge(struct dtr *d, uint32_t a, uint32_t b)
{
    uint32_t l = uf_find(d, a), r = uf_find(d, b);
    if (l == r)
        return;
    if (d->uf[l].size > d->uf[r].size) {
        uint32_t t = l;
        l = r;
        r = t;
    }
    d->uf[l].parent = r;
    d->uf[r].size += d->uf[l].size;
    d->uf[r].value += d->uf[l].value;
}

void dtr_uf_add(struct dtr *d, uint32_t node, double delta)
{
    d->uf[uf_find(d, node)].value += delta;
}

/* Calls body(us) for every storage `us` adjacent to storage s: its children
 * (storages of the outputs of calls reading s's tensors) when forward, else
 * its parents (storages of the inputs of the calls that made s's tensors). */
#define FOR_NEIGHBOURS(d, s, forward, us, body)                                  \
    do {                                                                         \
        const struct storage_rec *r_ = &(d)->storages[s];                        \
        const uint32_t *a_ = r_->adj[(forward) ? 1 : 0];                         \
        uint32_t n_ = r_->n_adj[(forward) ? 1 : 0];                              \
        for (uint32_t k_ = 0; k_ < n_; k_++) {                                   \
            uint32_t us = a_[k_];                                                \
            body;                                                                \
        }                                                                        \
    } while (0)

int dtr_eq_on_evict(struct dtr *d, uint32_t s)
{
    uint32_t node;
    if (dtr_uf_new(d, d->storages[s].compute, &node))
        return -1;
    d->storages[s].ecn = node;
    /* Merge with the classes of every non-resident neighbour, both
     * directions; classes never split again (the approximation). Storages
     * of a call still being prepared count too, with their empty class, as
     * in the authors' simulator. */
    for (int dir = 0; dir < 2; dir++) {
        FOR_NEIGHBOURS(d, s, dir, us, {
            d->st.metadata_accesses++;
            if (us != s && (d->state[us] == ST_EVICTED || d->state[us] == ST_PENDING) &&
                d->storages[us].ecn != DTR_NONE)
                dtr_uf_merge(d, d->storages[us].ecn, node);
        });
    }
    return 0;
}

/* ---- evicted regions (dtr, msps) ----
 * The forward region of a resident storage is the set of evicted storages
 * reachable from it through evicted children, the backward region the same
 * through parents; e*(s) is their union. Each resident storage caches the
 * cost sums of both; a state change of storage X makes stale exactly the
 * caches of the resident storages that reach X through evicted storages,
 * which a walk out from X finds. Changes are queued and applied in a batch
 * before the next scoring, so that runs that never evict pay nothing. */

/* Every storage is pushed at most once per walk (it is marked first). */
static int work_reserve(struct dtr *d)
{
    d->n_work = 0;
    return DTR_GROW(d, d->work, d->cap_work, (size_t)d->n_storages + 1);
}

static double region_cost(struct dtr *d, uint32_t base, int forward)
{
    uint32_t mark = dtr_stamp_next(d);
    if (work_reserve(d))
        return NAN;
    const uint8_t *state = d->state;
    uint32_t *marks = d->mark, *work = d->work, n_work = 0;
    uint64_t accesses = 0;
    double cost = 0;
    marks[base] = mark;
    work[n_work++] = base;
    while (n_work) {
        uint32_t s = work[--n_work];
        const struct storage_rec *r = &d->storages[s];
        const uint32_t *adj = r->adj[forward ? 1 : 0];
        uint32_t n = r->n_adj[forward ? 1 : 0];
        accesses += n;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t us = adj[k];
            if (state[us] == ST_EVICTED && marks[us] != mark) {
                marks[us] = mark;
                cost += d->storages[us].compute;
                work[n_work++] = us;
            }
        }
    }
    d->st.metadata_accesses += accesses;
    return cost;
}

static double region_get(struct dtr *d, uint32_t s, int forward)
{
    struct storage_rec *r = &d->storages[s];
    if (forward) {
        if (!(r->fwd_valid && r->fwd_epoch == d->region_epoch)) {
            double c = region_cost(d, s, 1);
            r = &d->storages[s];
            r->fwd_cost = c;
            r->fwd_valid = r->fwd_lower = 1;
            r->fwd_epoch = d->region_epoch;
        }
        return r->fwd_cost;
    }
    if (!(r->bwd_valid && r->bwd_epoch == d->region_epoch)) {
        double c = region_cost(d, s, 0);
        r = &d->storages[s];
        r->bwd_cost = c;
        r->bwd_valid = r->bwd_lower = 1;
        r->bwd_epoch = d->region_epoch;
    }
    return r->bwd_cost;
}

int dtr_region_changed(struct dtr *d, uint32_t s, int grows)
{
    if (!dtr_heuristic_uses_regions(d->cfg.heuristic))
        return 0;
    uint8_t kind = grows ? 1 : 2;
    if (d->storages[s].changed) {
        if (d->storages[s].changed < kind)
            d->storages[s].changed = kind;
        return 0;
    }
    if (d->n_changed >= REGION_SYNC_MAX_CHANGES) {
        /* too many to walk: everything will be recomputed anyway */
        d->storages[s].changed = 0;
        d->n_changed = REGION_SYNC_MAX_CHANGES + 1;
        return 0;
    }
    if (DTR_GROW(d, d->changed, d->cap_changed, d->n_changed + 1))
        return -1;
    d->storages[s].changed = kind;
    d->changed[d->n_changed++] = s;
    return 0;
}

/* Walks out from x through evicted storages (children when forward) and
 * marks stale the caches of the resident storages at the edge. Returns 1
 * when the walk took more than *steps (then nothing is known to be fresh). */
static int invalidate_from(struct dtr *d, uint32_t x, int forward, int grows, uint64_t *steps)
{
    uint32_t mark = dtr_stamp_next(d);
    if (work_reserve(d))
        return -1;
    const uint8_t *state = d->state;
    uint32_t *marks = d->mark, *work = d->work, n_work = 0;
    marks[x] = mark;
    work[n_work++] = x;
    while (n_work) {
        uint32_t s = work[--n_work];
        const struct storage_rec *r = &d->storages[s];
        const uint32_t *adj = r->adj[forward ? 1 : 0];
        uint32_t n = r->n_adj[forward ? 1 : 0];
        if (*steps < n)
            return 1;
        *steps -= n;
        d->st.metadata_accesses += n;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t us = adj[k];
            if (marks[us] == mark)
                continue;
            marks[us] = mark;
            if (state[us] == ST_RESIDENT) {
                /* reached forward: its backward region changed */
                uint8_t *valid = forward ? &d->storages[us].bwd_valid : &d->storages[us].fwd_valid;
                if (!grows)
                    *(forward ? &d->storages[us].bwd_lower : &d->storages[us].fwd_lower) = 0;
                int which = forward ? 0 : 1;
                if (*valid && d->costs_exact) {
                    if (DTR_GROW(d, d->stale[which], d->cap_stale[which], d->n_stale[which] + 1))
                        return -1;
                    d->stale[which][d->n_stale[which]++] = us;
                }
                *valid = 0;
            } else if (state[us] == ST_EVICTED) {
                work[n_work++] = us;
            }
        }
    }
    return 0;
}

static int region_stale(const struct dtr *d, uint32_t s, int forward)
{
    const struct storage_rec *r = &d->storages[s];
    return forward ? !(r->fwd_valid && r->fwd_epoch == d->region_epoch)
                   : !(r->bwd_valid && r->bwd_epoch == d->region_epoch);
}

static int by_id_up(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int by_id_down(const void *a, const void *b) { return by_id_up(b, a); }

/* A source of region_batch: a resident storage, or (SRC_SELF) an evicted
 * one whose region counts itself: the region of a storage whose one evicted
 * neighbour in that direction is x is x's. */
#define SRC_SELF (1ull << 32)

/* The regions of up to 64 sources in one direction, together: the union u
 * of their regions is collected once, then each evicted storage gets in
 * reach[] the bits of the sources that reach it, passed along the edges in
 * id order (calls make their outputs after their inputs, so one pass
 * usually settles it; views can point back, hence the repeat), and each
 * source's cost is the sum over its bits. Sums in another order than
 * region_cost's walk: only for exact costs. */
static int region_batch(struct dtr *d, const uint64_t *src, uint32_t n_src, int forward, double *cost)
{
    if (DTR_GROW(d, d->reach, d->cap_reach, d->n_storages) || work_reserve(d))
        return -1;
    int dir = forward ? 1 : 0;
    const uint8_t *state = d->state;
    uint32_t mark = dtr_stamp_next(d), *marks = d->mark, *u = d->work, n_u = 0;
    uint64_t *reach = d->reach, accesses = 0;
    for (uint32_t i = 0; i < n_src; i++) {
        cost[i] = 0;
        uint32_t x = (uint32_t)src[i];
        const uint32_t *seeds = &x;
        uint32_t n_seeds = 1;
        if (!(src[i] & SRC_SELF)) {
            seeds = d->storages[x].adj[dir];
            n_seeds = d->storages[x].n_adj[dir];
            accesses += n_seeds;
        }
        for (uint32_t k = 0; k < n_seeds; k++) {
            uint32_t us = seeds[k];
            if (state[us] != ST_EVICTED)
                continue;
            if (marks[us] != mark) {
                marks[us] = mark;
                reach[us] = 0;
                u[n_u++] = us;
            }
            reach[us] |= 1ull << i;
        }
    }
    for (uint32_t j = 0; j < n_u; j++) {
        const struct storage_rec *r = &d->storages[u[j]];
        accesses += r->n_adj[dir];
        for (uint32_t k = 0; k < r->n_adj[dir]; k++) {
            uint32_t us = r->adj[dir][k];
            if (state[us] == ST_EVICTED && marks[us] != mark) {
                marks[us] = mark;
                reach[us] = 0;
                u[n_u++] = us;
            }
        }
    }
    /* in id order: by a pass over the ids in range when u fills it densely */
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t j = 0; j < n_u; j++) {
        lo = u[j] < lo ? u[j] : lo;
        hi = u[j] > hi ? u[j] : hi;
    }
    if (n_u && hi - lo < 8 * n_u) {
        uint32_t j = 0;
        if (forward) {
            for (uint32_t x = lo; x <= hi; x++)
                if (marks[x] == mark && state[x] == ST_EVICTED)
                    u[j++] = x;
        } else {
            for (uint32_t x = hi + 1; x-- > lo;)
                if (marks[x] == mark && state[x] == ST_EVICTED)
                    u[j++] = x;
        }
    } else {
        qsort(u, n_u, sizeof *u, forward ? by_id_up : by_id_down);
    }
    for (int again = 1; again;) {
        again = 0;
        for (uint32_t j = 0; j < n_u; j++) {
            uint64_t m = reach[u[j]];
            const struct storage_rec *r = &d->storages[u[j]];
            accesses += r->n_adj[dir];
            for (uint32_t k = 0; k < r->n_adj[dir]; k++) {
                uint32_t us = r->adj[dir][k];
                if (state[us] == ST_EVICTED && (reach[us] | m) != reach[us]) {
                    reach[us] |= m;
                    if (forward ? us < u[j] : us > u[j])
                        again = 1;   /* already passed on in this round */
                }
            }
        }
    }
    for (uint32_t j = 0; j < n_u; j++) {
        double c = d->storages[u[j]].compute;
        for (uint64_t m = reach[u[j]]; m; m &= m - 1)
            cost[__builtin_ctzll(m)] += c;
    }
    d->st.metadata_accesses += accesses;
    return 0;
}

static void region_set(struct dtr *d, uint32_t s, int forward, double cost)
{
    struct storage_rec *r = &d->storages[s];
    if (forward) {
        r->fwd_cost = cost;
        r->fwd_valid = r->fwd_lower = 1;
        r->fwd_epoch = d->region_epoch;
    } else {
        r->bwd_cost = cost;
        r->bwd_valid = r->bwd_lower = 1;
        r->bwd_epoch = d->region_epoch;
    }
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Queues stale storage s of the pool as two entries of keys[]: its source
 * (s itself, or its one evicted neighbour with SRC_SELF), then s. A storage
 * with no evicted neighbour in that direction costs 0 at once. */
static int refresh_add(struct dtr *d, uint32_t *n, uint32_t s, int forward)
{
    if (!d->in_pool[s] || !region_stale(d, s, forward))
        return 0;
    const struct storage_rec *r = &d->storages[s];
    const uint32_t *adj = r->adj[forward ? 1 : 0];
    uint32_t n_adj = r->n_adj[forward ? 1 : 0], first = DTR_NONE;
    int many = 0;
    for (uint32_t k = 0; k < n_adj && !many; k++)
        if (d->state[adj[k]] == ST_EVICTED) {
            if (first == DTR_NONE)
                first = adj[k];
            else if (adj[k] != first)
                many = 1;
        }
    d->st.metadata_accesses += n_adj;
    if (first == DTR_NONE) {
        region_set(d, s, forward, 0);
        return 0;
    }
    if (DTR_GROW(d, d->keys, d->cap_keys, (size_t)*n + 2))
        return -1;
    d->keys[(*n)++] = many ? s : (SRC_SELF | first);
    d->keys[(*n)++] = s;
    return 0;
}

static int by_pair(const void *a, const void *b) { return by_key(a, b); }

/* Recomputes the caches of the storages queued in keys[0..n) in one
 * direction: storages sharing their one evicted neighbour share a source;
 * the sources go through region_batch 64 at a time. */
static int refresh_keys(struct dtr *d, uint32_t n, int forward)
{
    if (n)
        qsort(d->keys, n / 2, 2 * sizeof *d->keys, by_pair);
    uint64_t src[64];
    double cost[64];
    uint32_t group_begin[64], n_src = 0, i = 0;
    while (i < n) {
        /* one chunk: up to 64 distinct sources */
        uint32_t begin = i;
        n_src = 0;
        for (; i < n; i += 2) {
            if (!n_src || d->keys[i] != src[n_src - 1]) {
                if (n_src == 64)
                    break;
                group_begin[n_src] = i;
                src[n_src++] = d->keys[i];
            }
        }
        if (region_batch(d, src, n_src, forward, cost))
            return -1;
        for (uint32_t g = 0, j = begin; j < i; j += 2) {
            while (g + 1 < n_src && j >= group_begin[g + 1])
                g++;
            region_set(d, (uint32_t)d->keys[j + 1], forward, cost[g]);
        }
    }
    return 0;
}

static int region_dir_used(const struct dtr *d, int forward)
{
    return !(forward && d->cfg.heuristic == DTR_HEURISTIC_MSPS);   /* msps: backward only */
}

/* Recomputes the region caches of the pool that the last changes made
 * stale (all of them after the epoch moved): the runtime's window search
 * scores every block, so none of this work is wasted. Storages that join
 * the pool later fill theirs by region_get. */
static int region_refresh(struct dtr *d)
{
    for (int forward = 0; forward < 2; forward++) {
        uint32_t n = 0;
        if (region_dir_used(d, forward)) {
            if (d->stale_all) {
                for (uint32_t s = d->pool_head; s != DTR_NONE; s = d->storages[s].pool_next)
                    if (refresh_add(d, &n, s, forward))
                        return -1;
            } else {
                for (uint32_t i = 0; i < d->n_stale[forward]; i++)
                    if (refresh_add(d, &n, d->stale[forward][i], forward))
                        return -1;
            }
            if (refresh_keys(d, n, forward))
                return -1;
        }
        d->n_stale[forward] = 0;
    }
    d->stale_all = 0;
    d->refresh_pending = 0;
    return 0;
}

/* Recomputes the stale caches of the pool storages list[0..n) only (the
 * candidates dtr_choose could not rule out); the others stay queued for
 * region_refresh or region_get. The queues are compacted when they hold
 * far more than the pool (entries refreshed meanwhile, repeats). */
static int region_refresh_some(struct dtr *d, const uint32_t *list, uint32_t n_list)
{
    for (int forward = 0; forward < 2; forward++) {
        if (!region_dir_used(d, forward))
            continue;
        uint32_t n = 0;
        for (uint32_t i = 0; i < n_list; i++)
            if (refresh_add(d, &n, list[i], forward))
                return -1;
        if (refresh_keys(d, n, forward))
            return -1;
        if (!d->stale_all && d->n_stale[forward] > 2 * (uint64_t)d->pool_count + 1024) {
            uint32_t mark = dtr_stamp_next(d), k = 0;
            for (uint32_t i = 0; i < d->n_stale[forward]; i++) {
                uint32_t x = d->stale[forward][i];
                if (d->in_pool[x] && region_stale(d, x, forward) && d->mark[x] != mark) {
                    d->mark[x] = mark;
                    d->stale[forward][k++] = x;
                }
            }
            d->n_stale[forward] = k;
        }
    }
    d->refresh_pending = 1;
    return 0;
}

/* Marks stale the caches the queued state changes reach (see
 * invalidate_from); recomputes nothing. */
static int region_invalidate(struct dtr *d)
{
    if (!d->n_changed)
        return 0;
    if (d->n_changed > REGION_SYNC_MAX_CHANGES) {
        for (uint32_t i = 0; i < d->n_changed && i < REGION_SYNC_MAX_CHANGES; i++)
            d->storages[d->changed[i]].changed = 0;
        d->region_epoch++;
        d->stale_all = 1;
        d->n_changed = 0;
        d->refresh_pending = 1;
        return 0;
    }
    /* A walk through a huge evicted component (a long chain evicted
     * behind a rematerialization) may cost more than recomputing the few
     * caches that will be asked for: past this many steps, drop them all. */
    uint64_t steps = 4096 + 4 * (uint64_t)d->pool_count;
    for (uint32_t i = 0; i < d->n_changed; i++) {
        uint32_t x = d->changed[i];
        int grows = d->storages[x].changed == 1;
        d->storages[x].changed = 0;
        d->storages[x].fwd_valid = d->storages[x].bwd_valid = 0;
        d->storages[x].fwd_lower = d->storages[x].bwd_lower = 0;
        int rc = invalidate_from(d, x, 0, grows, &steps);
        if (rc == 0)
            rc = invalidate_from(d, x, 1, grows, &steps);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            for (uint32_t j = i + 1; j < d->n_changed; j++)
                d->storages[d->changed[j]].changed = 0;
            d->region_epoch++;
            d->stale_all = 1;
            break;
        }
    }
    d->n_changed = 0;
    d->refresh_pending = 1;
    return 0;
}

int dtr_region_sync(struct dtr *d)
{
    if (region_invalidate(d))
        return -1;
    return d->refresh_pending && d->costs_exact ? region_refresh(d) : 0;
}

/* ---- scores ---- */

/* cost / (size * staleness), as the authors' simulator computes it in
 * Python from integers: the product is exact here in long double (64-bit
 * mantissa) for every size and clock the logs produce, so the quotient
 * rounds as Python's does (except for one-ulp double-rounding cases, which
 * cannot change a comparison between distinct logged values). Zero size or
 * staleness: infinite (never preferred). */
static double per_byte_time(double cost, uint64_t bytes, double staleness)
{
    if (bytes == 0 || !(staleness > 0))
        return INFINITY;
    if (isinf(staleness))
        return 0.0;
    long double den = (long double)bytes * (long double)staleness;
    return (double)((long double)cost / den);
}

void dtr_eq_changed(struct dtr *d, uint32_t s)
{
    if (d->cfg.heuristic != DTR_HEURISTIC_EQ)
        return;
    d->storages[s].eq_valid = 0;
    for (int dir = 0; dir < 2; dir++)
        FOR_NEIGHBOURS(d, s, dir, us, { d->storages[us].eq_valid = 0; });
}

/* compute(s) + the values of the distinct classes of s's non-resident
 * neighbours, added in the order the neighbours are met. Which classes
 * those are changes only when a neighbour changes state or an edge is added
 * (dtr_eq_changed clears the cache) or when one of those classes is merged
 * under another (its root is no longer a root); their values change with
 * every eviction, so only the roots are cached and the values are summed
 * again, in the same order, which gives the same double. */
static double eq_cost(struct dtr *d, uint32_t s, int cached)
{
    struct storage_rec *r = &d->storages[s];
    double cost = r->compute;
    if (cached && r->eq_valid) {
        const struct uf_node *uf = d->uf;
        uint32_t k = 0;
        while (k < r->eq_n && uf[r->eq_roots[k]].parent == DTR_NONE)
            k++;
        d->st.metadata_accesses += k;
        if (k == r->eq_n) {
            for (k = 0; k < r->eq_n; k++)
                cost += uf[r->eq_roots[k]].value;
            return cost;
        }
    }
    uint32_t mark = dtr_stamp_next(d), n_roots = 0;
    for (int dir = 0; dir < 2; dir++) {
        FOR_NEIGHBOURS(d, s, dir, us, {
            d->st.metadata_accesses++;
            if (us != s && (d->state[us] == ST_EVICTED || d->state[us] == ST_PENDING) &&
                d->storages[us].ecn != DTR_NONE) {
                uint32_t root = uf_find(d, d->storages[us].ecn);
                if (d->uf_stamp[root] != mark) {
                    d->uf_stamp[root] = mark;
                    cost += d->uf[root].value;
                    if (cached && n_roots < DTR_EQ_ROOTS)
                        r->eq_roots[n_roots] = root;
                    n_roots++;
                }
            }
        });
    }
    if (cached) {
        r->eq_n = (uint8_t)(n_roots < DTR_EQ_ROOTS ? n_roots : DTR_EQ_ROOTS);
        r->eq_valid = n_roots <= DTR_EQ_ROOTS;
    }
    return cost;
}

static double score_of(struct dtr *d, uint32_t s);

double dtr_score(struct dtr *d, uint32_t s)
{
    d->st.heuristic_evaluations++;
    d->st.metadata_accesses++;
    return score_of(d, s);
}

/* dtr_score without the statistics. */
static double score_of(struct dtr *d, uint32_t s)
{
    const struct storage_rec *r = &d->storages[s];
    double staleness = d->clock - r->last_access;
    switch (d->cfg.heuristic) {
    case DTR_HEURISTIC_DTR: {
        /* the score is infinite whatever e* costs: skip the walks */
        if (r->bytes == 0 || !(staleness > 0))
            return INFINITY;
        double c = r->compute + region_get(d, s, 1) + region_get(d, s, 0);
        r = &d->storages[s];
        return per_byte_time(c, r->bytes, staleness);
    }
    case DTR_HEURISTIC_EQ:
        return per_byte_time(eq_cost(d, s, 1), r->bytes, staleness);
    case DTR_HEURISTIC_LOCAL:
        return per_byte_time(r->compute, r->bytes, staleness);
    case DTR_HEURISTIC_LRU:
        return r->last_access;
    case DTR_HEURISTIC_SIZE:
        return r->bytes ? 1.0 / (double)r->bytes : INFINITY;
    case DTR_HEURISTIC_MSPS: {
        if (r->bytes == 0)
            return INFINITY;
        double c = r->compute + region_get(d, s, 0);
        r = &d->storages[s];
        return r->bytes ? c / (double)r->bytes : INFINITY;
    }
    case DTR_HEURISTIC_RANDOM:
    case DTR_HEURISTIC_COUNT:
        break;
    }
    return (double)(d->rng >> 11);
}

double dtr_eviction_cost(struct dtr *d, uint32_t s)
{
    double c = d->storages[s].compute;
    switch (d->cfg.heuristic) {
    case DTR_HEURISTIC_DTR:
        c += region_get(d, s, 1);
        return c + region_get(d, s, 0);
    case DTR_HEURISTIC_EQ:
        return eq_cost(d, s, 1);
    case DTR_HEURISTIC_MSPS:
        return c + region_get(d, s, 0);
    default:
        return c;
    }
}

double dtr_score_reference(struct dtr *d, uint32_t s)
{
    struct dtr_stats saved = d->st;
    const struct storage_rec *r = &d->storages[s];
    double staleness = d->clock - r->last_access, score;
    switch (d->cfg.heuristic) {
    case DTR_HEURISTIC_DTR:
        if (r->bytes == 0 || !(staleness > 0)) {
            score = INFINITY;
        } else {
            double c = r->compute + region_cost(d, s, 1);
            c += region_cost(d, s, 0);
            score = per_byte_time(c, d->storages[s].bytes, staleness);
        }
        break;
    case DTR_HEURISTIC_EQ:
        score = per_byte_time(eq_cost(d, s, 0), r->bytes, staleness);
        break;
    case DTR_HEURISTIC_MSPS:
        score = r->bytes ? (r->compute + region_cost(d, s, 0)) / (double)d->storages[s].bytes : INFINITY;
        break;
    default:
        score = dtr_score(d, s);
        break;
    }
    d->st = saved;
    return score;
}

static uint64_t rng_next(struct dtr *d)
{
    /* xorshift64*: reproducible from config.seed */
    uint64_t x = d->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    d->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* 1 when s's score is surely above `best` whatever its neighbourhood adds
 * (dtr, dtr-eq and msps add a cost >= 0 to compute(s) in the numerator, and
 * the quotient rounds monotonically): compute(s) alone already loses. The
 * margin of 2^-40 covers the roundings of the product, so a candidate whose
 * score could tie or beat `best` is never ruled out. */
static int cannot_beat(const struct dtr *d, const struct storage_rec *r, double cost, double best)
{
    if (!(best < INFINITY))
        return 0;
    double den;
    switch (d->cfg.heuristic) {
    case DTR_HEURISTIC_DTR:
    case DTR_HEURISTIC_EQ: {
        double staleness = d->clock - r->last_access;
        if (r->bytes == 0 || !(staleness > 0))
            return 1;   /* infinite */
        if (isinf(staleness))
            return 0;   /* 0 */
        den = (double)r->bytes * staleness;
        break;
    }
    case DTR_HEURISTIC_MSPS:
        if (r->bytes == 0)
            return 1;
        den = (double)r->bytes;
        break;
    default:
        return 0;
    }
    return cost > best * den * (1 + 0x1p-40);
}

/* A lower bound of the numerator of s's score (dtr, msps; exact costs):
 * compute(s) plus each region cache that, stale or not, only evictions have
 * touched since it was computed (they can only add to a region). */
static double region_lower(const struct dtr *d, uint32_t s)
{
    const struct storage_rec *r = &d->storages[s];
    double c = r->compute;
    if (r->bwd_lower && r->bwd_epoch == d->region_epoch)
        c += r->bwd_cost;
    if (d->cfg.heuristic != DTR_HEURISTIC_MSPS && r->fwd_lower && r->fwd_epoch == d->region_epoch)
        c += r->fwd_cost;
    return c;
}

/* 1 when scoring s would read a stale region cache. */
static int needs_refresh(const struct dtr *d, uint32_t s)
{
    const struct storage_rec *r = &d->storages[s];
    if (d->cfg.heuristic == DTR_HEURISTIC_MSPS)
        return r->bytes != 0 && region_stale(d, s, 0);
    double staleness = d->clock - r->last_access;
    if (r->bytes == 0 || !(staleness > 0))
        return 0;   /* infinite without the walks */
    return region_stale(d, s, 1) || region_stale(d, s, 0);
}

static int pass_skips(struct dtr *d, uint32_t s, int pass, uint64_t keep)
{
    return pass == 0 && (d->storages[s].bytes < d->cfg.min_evict_bytes ||
                         (keep != UINT64_MAX && rng_next(d) > keep));
}

/* The simrd scan (see the top of this file) over the candidates of `pass`,
 * less the work on candidates that cannot win. With `lazy` (dtr or msps,
 * exact costs, no sampling), a first pass scores the candidates whose region
 * caches are fresh and keeps the stale ones that could beat the lowest of
 * those scores, judged by a lower bound of theirs (compute plus each cache
 * that only evictions made stale: region_lower); only their caches are
 * recomputed, together, and the scan proper passes over the stale ones left
 * (the lowest fresh score beats them, so they are neither the choice nor a
 * 0). Otherwise, for dtr and msps, a candidate whose compute alone loses to
 * the best so far is passed over without its walks. Passed-over candidates
 * count as evaluated: the choice and the statistics are those of scoring
 * every one (except metadata_accesses, the work). */
static uint32_t choose_pass(struct dtr *d, int pass, uint64_t keep, int lazy)
{
    double best = INFINITY;
    uint32_t best_s = DTR_NONE;
    if (lazy) {
        /* first pass: cand[] the candidates in scan order, score[] their
         * score, or NAN (stale, may win), or -1 (stale, cannot win) */
        double bound = INFINITY;
        uint32_t n = 0, n_stale = 0;
        if (DTR_GROW(d, d->cand, d->cap_cand, d->pool_count) ||
            DTR_GROW(d, d->cand_score, d->cap_cand_score, d->pool_count))
            return DTR_NONE;
        for (uint32_t s = d->pool_head; s != DTR_NONE; s = d->storages[s].pool_next) {
            if (pass_skips(d, s, pass, UINT64_MAX))
                continue;
            double c = -1;
            if (!needs_refresh(d, s)) {
                c = score_of(d, s);
                bound = c < bound ? c : bound;
            } else if (!cannot_beat(d, &d->storages[s], region_lower(d, s), bound)) {
                c = NAN;
                n_stale++;
            }
            d->cand[n] = s;
            d->cand_score[n++] = c;
            if (c == 0)
                break;
        }
        /* the stale ones the lowest fresh score leaves are recomputed */
        if (DTR_GROW(d, d->stale_list, d->cap_stale_list, n_stale + 1))
            return DTR_NONE;
        uint32_t k = 0;
        for (uint32_t i = 0; n_stale && i < n; i++)
            if (isnan(d->cand_score[i])) {
                if (cannot_beat(d, &d->storages[d->cand[i]], region_lower(d, d->cand[i]), bound))
                    d->cand_score[i] = -1;
                else
                    d->stale_list[k++] = d->cand[i];
            }
        if (region_refresh_some(d, d->stale_list, k))
            return DTR_NONE;
        for (uint32_t i = 0; i < n; i++) {
            d->st.heuristic_evaluations++;
            d->st.metadata_accesses++;
            double c = d->cand_score[i];
            if (c < 0)
                continue;
            if (isnan(c))
                c = score_of(d, d->cand[i]);
            if (c <= best) {
                best = c;
                best_s = d->cand[i];
            }
            if (c == 0)
                break;
        }
        return best_s;
    }
    int prune = dtr_heuristic_uses_regions(d->cfg.heuristic);
    for (uint32_t s = d->pool_head; s != DTR_NONE; s = d->storages[s].pool_next) {
        if (pass_skips(d, s, pass, keep))
            continue;
        if (prune && cannot_beat(d, &d->storages[s], d->storages[s].compute, best)) {
            d->st.heuristic_evaluations++;
            d->st.metadata_accesses++;
            continue;
        }
        double c = dtr_score(d, s);
        if (c <= best) {
            best = c;
            best_s = s;
        }
        if (c == 0)
            break;
    }
    return best_s;
}

uint32_t dtr_choose(struct dtr *d)
{
    if (!d->pool_count)
        return DTR_NONE;
    /* sampling: each candidate scored with probability ~ sqrt(n)/n */
    uint64_t keep = UINT64_MAX;
    if (d->cfg.sample_sqrt && d->pool_count > 4) {
        double p = sqrt((double)d->pool_count) / d->pool_count;
        keep = (uint64_t)(p * 18446744073709551615.0);
    }
    int lazy = dtr_heuristic_uses_regions(d->cfg.heuristic) && d->costs_exact && keep == UINT64_MAX;
    if (lazy ? region_invalidate(d) : dtr_region_sync(d))
        return DTR_NONE;
    if (d->cfg.heuristic == DTR_HEURISTIC_RANDOM) {
        d->st.heuristic_evaluations++;
        d->st.metadata_accesses++;
        uint32_t k = (uint32_t)(rng_next(d) % d->pool_count);
        uint32_t s = d->pool_head;
        while (k--)
            s = d->storages[s].pool_next;
        return s;
    }
    for (int pass = 0; pass < 2; pass++) {
        uint32_t best_s = choose_pass(d, pass, keep, lazy);
        if (best_s != DTR_NONE || d->failed)
            return best_s;
        /* every candidate was skipped by the overhead controls: score all */
    }
    return DTR_NONE;
}
