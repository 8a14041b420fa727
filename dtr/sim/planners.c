/* dtr/sim/planners.c — the classic static checkpointing planners on graphs:
 * checkpoint-all; Chen et al. 2016 ("Training Deep Nets with Sublinear
 * Memory Cost") with sqrt(n) or greedy segments over the articulation
 * points of the forward part; Griewank & Walther's binomial checkpointing
 * (revolve) on the chain of those articulation points; and Checkmate's
 * lowering of a stage matrix S to a schedule (used by the MILP/LP, milp.c).
 *
 * Every planner here only decides which nodes run and in which order; the
 * frees come from schedule_insert_frees (each value freed after its last
 * read before it is recomputed), and the schedule is then replayed by
 * schedule_simulate, so what a planner reports is what a user replays. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtr/sim/sim.h"

static const char *const solver_names[PLAN_SOLVER_COUNT] = {
    "checkpoint-all", "chen-sqrtn", "chen-greedy", "griewank", "checkmate", "checkmate-lp",
};

const char *plan_solver_name(enum plan_solver s)
{
    return (unsigned)s < PLAN_SOLVER_COUNT ? solver_names[s] : "?";
}

int plan_solver_parse(const char *name, enum plan_solver *out)
{
    for (int i = 0; i < PLAN_SOLVER_COUNT; i++)
        if (!strcmp(name, solver_names[i])) {
            *out = (enum plan_solver)i;
            return 0;
        }
    if (!strcmp(name, "checkmate-milp") || !strcmp(name, "milp")) {
        *out = PLAN_CHECKMATE_MILP;
        return 0;
    }
    if (!strcmp(name, "lp") || !strcmp(name, "checkmate-approx")) {
        *out = PLAN_CHECKMATE_LP;
        return 0;
    }
    return -1;
}

void plan_options_default(struct plan_options *o)
{
    memset(o, 0, sizeof *o);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- building run lists ---- */

/* A run list under construction: `avail` says which values the planner
 * regards as present; ensure() recomputes a missing value from whatever is
 * present, parents first.
 *
 * First computations keep the graph's order (node k is computed for the
 * first time after nodes 0..k-1): an exported graph's order is the order
 * in which the runtime's training step issues its calls, which `--plan`
 * follows, so a schedule may only insert recomputations into it (as
 * Checkmate's formulation does, stage t computing node t). ensure() first
 * computes every node before v that has not run yet. */
struct builder {
    const struct fmt_graph *g;
    struct schedule *s;
    uint8_t *avail;
    uint8_t *ran;            /* computed at least once */
    uint32_t next_first;     /* nodes below it have all run */
    int failed;
};

static int builder_init(struct builder *b, const struct fmt_graph *g, struct schedule *s)
{
    *b = (struct builder){ .g = g, .s = s, .avail = calloc(g->n + 1, 1), .ran = calloc(g->n + 1, 1) };
    return b->avail && b->ran ? 0 : -1;
}

static void builder_reset(struct builder *b, struct schedule *s)
{
    b->s = s;
    b->failed = 0;
    b->next_first = 0;
    memset(b->avail, 0, b->g->n);
    memset(b->ran, 0, b->g->n);
}

static void builder_free(struct builder *b)
{
    free(b->avail);
    free(b->ran);
}

static void run_node(struct builder *b, uint32_t v)
{
    if (schedule_push(b->s, SCHEDULE_RUN, v, 0))
        b->failed = 1;
    b->avail[v] = 1;
    b->ran[v] = 1;
}

static void ensure(struct builder *b, uint32_t v)
{
    if (b->avail[v] || b->failed)
        return;
    const struct fmt_graph *g = b->g;
    if (!b->ran[v])
        for (; b->next_first < v; b->next_first++)
            if (!b->ran[b->next_first])
                ensure(b, b->next_first);
    for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++)
        ensure(b, g->preds[q]);
    run_node(b, v);
}

/* Frees, then the replay that checks the schedule and measures it. */
static int finish(const struct fmt_graph *g, struct schedule *s, uint64_t budget, struct schedule_result *r,
                  char *err, size_t err_size)
{
    if (schedule_insert_frees(g, s, err, err_size))
        return PLAN_ERROR;
    char e[400];
    if (schedule_simulate(g, s, 0, r, e, sizeof e)) {
        snprintf(err, err_size, "internal: the planner made an invalid schedule: %.240s", e);
        return PLAN_ERROR;
    }
    if (budget && r->peak_bytes > budget) {
        snprintf(err, err_size, "peak %llu bytes above the budget of %llu bytes", (unsigned long long)r->peak_bytes,
                 (unsigned long long)budget);
        return PLAN_INFEASIBLE;
    }
    return PLAN_OK;
}

static int checkpoint_all(const struct fmt_graph *g, struct schedule *s)
{
    for (uint32_t v = 0; v < g->n; v++)
        if (schedule_push(s, SCHEDULE_RUN, v, 0))
            return -1;
    return 0;
}

/* ---- articulation points of the forward part ---- */

/* Forward nodes are those not marked backward (every node when the graph
 * has no marks). A virtual source joins the forward sources and a virtual
 * sink the forward sinks, so that the chain's ends count too (as
 * Checkmate's DFGraph does). Returns the points in topological order. */
static uint32_t *articulation_points(const struct fmt_graph *g, uint32_t *count)
{
    uint32_t n = g->n, N = n + 2, vs = n, ve = n + 1;
    *count = 0;
    /* undirected adjacency over forward nodes + the two virtual ones */
    uint32_t *deg = calloc(N + 1, sizeof *deg), *adj = NULL, *at = NULL, *disc = NULL, *low = NULL, *parent = NULL,
             *it = NULL, *stack = NULL, *out = NULL;
    uint8_t *ap = calloc(N, 1);
    if (!deg || !ap)
        goto fail;
    uint32_t m = 0;
    for (uint32_t v = 0; v < n; v++) {
        if (g->backward[v])
            continue;
        int fpred = 0, fsucc = 0;
        for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++)
            if (!g->backward[g->preds[q]]) {
                fpred = 1;
                deg[v]++;
                deg[g->preds[q]]++;
                m++;
            }
        for (uint32_t q = g->succ_at[v]; q < g->succ_at[v + 1]; q++)
            fsucc |= !g->backward[g->succs[q]];
        if (!fpred) {
            deg[v]++;
            deg[vs]++;
            m++;
        }
        if (!fsucc) {
            deg[v]++;
            deg[ve]++;
            m++;
        }
    }
    at = calloc(N + 1, sizeof *at);
    adj = malloc((2 * m + 1) * sizeof *adj);
    disc = calloc(N, sizeof *disc);
    low = calloc(N, sizeof *low);
    parent = malloc(N * sizeof *parent);
    it = calloc(N, sizeof *it);
    stack = malloc((N + 1) * sizeof *stack);
    out = malloc((n + 1) * sizeof *out);
    if (!at || !adj || !disc || !low || !parent || !it || !stack || !out)
        goto fail;
    for (uint32_t v = 0; v < N; v++)
        at[v + 1] = at[v] + deg[v];
    memset(deg, 0, (N + 1) * sizeof *deg);
#define LINK(a, b)                              \
    do {                                        \
        adj[at[a] + deg[a]++] = (b);            \
        adj[at[b] + deg[b]++] = (a);            \
    } while (0)
    for (uint32_t v = 0; v < n; v++) {
        if (g->backward[v])
            continue;
        int fpred = 0, fsucc = 0;
        for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++)
            if (!g->backward[g->preds[q]]) {
                fpred = 1;
                LINK(g->preds[q], v);
            }
        for (uint32_t q = g->succ_at[v]; q < g->succ_at[v + 1]; q++)
            fsucc |= !g->backward[g->succs[q]];
        if (!fpred)
            LINK(vs, v);
        if (!fsucc)
            LINK(v, ve);
    }
#undef LINK
    /* Tarjan's low-link, iteratively (graphs from export can be deep) */
    uint32_t time = 0;
    for (uint32_t root = 0; root < N; root++) {
        if (disc[root] || (root < n && g->backward[root]))
            continue;
        uint32_t sp = 0, root_children = 0;
        stack[sp++] = root;
        parent[root] = UINT32_MAX;
        disc[root] = low[root] = ++time;
        while (sp) {
            uint32_t v = stack[sp - 1];
            if (it[v] < at[v + 1] - at[v]) {
                uint32_t w = adj[at[v] + it[v]++];
                if (!disc[w]) {
                    parent[w] = v;
                    disc[w] = low[w] = ++time;
                    stack[sp++] = w;
                    if (v == root)
                        root_children++;
                } else if (w != parent[v] && disc[w] < low[v]) {
                    low[v] = disc[w];
                }
            } else {
                sp--;
                uint32_t p = parent[v];
                if (p != UINT32_MAX) {
                    if (low[v] < low[p])
                        low[p] = low[v];
                    if (p != root && low[v] >= disc[p])
                        ap[p] = 1;
                }
            }
        }
        if (root_children > 1)
            ap[root] = 1;
    }
    for (uint32_t v = 0; v < n; v++)
        if (ap[v] && !g->backward[v])
            out[(*count)++] = v;
    free(deg);
    free(ap);
    free(at);
    free(adj);
    free(disc);
    free(low);
    free(parent);
    free(it);
    free(stack);
    return out;
fail:
    free(deg);
    free(ap);
    free(at);
    free(adj);
    free(disc);
    free(low);
    free(parent);
    free(it);
    free(stack);
    free(out);
    return NULL;
}

/* ---- Chen et al. ---- */

/* Forward pass keeping only the checkpoints (and the segment after the
 * last one, which the backward pass needs first); during the backward
 * pass a missing forward value is recomputed from the nearest checkpoint
 * and kept until its last backward use. */
static int chen_runs(const struct fmt_graph *g, const uint8_t *ckpt, struct schedule *s)
{
    struct builder b;
    if (builder_init(&b, g, s)) {
        builder_free(&b);
        return -1;
    }
    uint32_t last_ck = 0;
    int any = 0;
    for (uint32_t v = 0; v < g->n; v++)
        if (!g->backward[v]) {
            ensure(&b, v);
            if (ckpt[v]) {
                last_ck = v;
                any = 1;
            }
        }
    for (uint32_t v = 0; v < g->n; v++)
        if (!g->backward[v] && !ckpt[v] && any && v < last_ck)
            b.avail[v] = 0;
    for (uint32_t v = 0; v < g->n; v++)
        if (g->backward[v])
            ensure(&b, v);
    builder_free(&b);
    return b.failed ? -1 : 0;
}

static enum plan_status chen(const struct fmt_graph *g, int greedy, uint64_t budget, struct schedule *out,
                             char *err, size_t err_size)
{
    uint32_t n_ap = 0;
    uint32_t *ap = articulation_points(g, &n_ap);
    uint8_t *ck = calloc(g->n, 1);
    enum plan_status rc = PLAN_ERROR;
    struct schedule_result r;
    if (!ap || !ck) {
        snprintf(err, err_size, "out of memory");
        goto done;
    }
    if (!greedy) {
        uint32_t k = (uint32_t)sqrt((double)n_ap);
        if (k < 1)
            k = 1;
        for (uint32_t i = 0; i < n_ap; i++)
            if ((i + 1) % k == 0)
                ck[ap[i]] = 1;
        if (chen_runs(g, ck, out)) {
            snprintf(err, err_size, "out of memory");
            goto done;
        }
        rc = finish(g, out, budget, &r, err, err_size);
        goto done;
    }
    /* greedy: Chen's segment-size threshold, swept over a geometric grid of
     * the forward bytes; the cheapest schedule within the budget wins */
    uint8_t *is_ap = calloc(g->n, 1);
    if (!is_ap) {
        snprintf(err, err_size, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n_ap; i++)
        is_ap[ap[i]] = 1;
    double total = 0, smallest = 1e300;
    for (uint32_t v = 0; v < g->n; v++)
        if (!g->backward[v]) {
            total += (double)g->bytes[v];
            if (g->bytes[v] && g->bytes[v] < smallest)
                smallest = (double)g->bytes[v];
        }
    if (smallest > total)
        smallest = total > 0 ? total : 1;
    struct schedule best;
    schedule_init(&best);
    double best_cost = INFINITY;
    uint64_t best_peak = UINT64_MAX, least_peak = UINT64_MAX;
    const int steps = 96;
    for (int k = 0; k <= steps + 1; k++) {
        /* k = steps + 1: no threshold at all (every articulation point) */
        double B = k <= steps ? smallest * pow(total / smallest * 1.01, (double)k / steps) : -1;
        double temp = 0;
        memset(ck, 0, g->n);
        for (uint32_t v = 0; v < g->n; v++)
            if (!g->backward[v]) {
                temp += (double)g->bytes[v];
                if (is_ap[v] && temp > B) {
                    ck[v] = 1;
                    temp = 0;
                }
            }
        struct schedule cand;
        schedule_init(&cand);
        char e[300];
        if (chen_runs(g, ck, &cand)) {
            schedule_free(&cand);
            free(is_ap);
            schedule_free(&best);
            snprintf(err, err_size, "out of memory");
            goto done;
        }
        int frc = finish(g, &cand, 0, &r, e, sizeof e);
        if (frc == PLAN_ERROR) {
            schedule_free(&cand);
            free(is_ap);
            schedule_free(&best);
            snprintf(err, err_size, "%s", e);
            goto done;
        }
        if (r.peak_bytes < least_peak)
            least_peak = r.peak_bytes;
        if ((!budget || r.peak_bytes <= budget) &&
            (r.total_compute < best_cost || (r.total_compute == best_cost && r.peak_bytes < best_peak))) {
            schedule_free(&best);
            best = cand;
            best_cost = r.total_compute;
            best_peak = r.peak_bytes;
        } else {
            schedule_free(&cand);
        }
    }
    free(is_ap);
    if (!best.n_steps) {
        snprintf(err, err_size, "no Chen segmentation fits %llu bytes (the least peak is %llu bytes)",
                 (unsigned long long)budget, (unsigned long long)least_peak);
        rc = PLAN_INFEASIBLE;
        goto done;
    }
    schedule_free(out);
    out->steps = best.steps;
    out->n_steps = best.n_steps;
    out->cap_steps = best.cap_steps;
    rc = PLAN_OK;
done:
    free(ap);
    free(ck);
    return rc;
}

/* ---- Griewank & Walther: binomial checkpointing on the segment chain ---- */

struct revolve {
    struct builder b;
    uint32_t L;              /* segments */
    uint32_t *seg_start;     /* L + 1: segment j = forward nodes with index in [seg_start[j], seg_start[j+1]) */
    uint32_t *bound;         /* L: the node ending segment j (its state for segment j+1) */
    int32_t *bseg;           /* backward node -> the segment whose reversal runs it */
    uint32_t *fwd_seg;       /* node -> segment (forward nodes) */
    uint32_t *split;         /* (L+1) x (S+1): best first advance */
    uint32_t S;
};

static void drop_segments(struct revolve *rv, uint32_t a, uint32_t b, uint32_t except)
{
    const struct fmt_graph *g = rv->b.g;
    for (uint32_t v = 0; v < g->n; v++)
        if (!g->backward[v] && v != except && rv->fwd_seg[v] >= a && rv->fwd_seg[v] < b)
            rv->b.avail[v] = 0;
}

static void reverse_one(struct revolve *rv, uint32_t j, uint32_t a)
{
    const struct fmt_graph *g = rv->b.g;
    for (uint32_t v = 0; v < g->n; v++)
        if (g->backward[v] && rv->bseg[v] == (int32_t)j)
            ensure(&rv->b, v);
    /* everything recomputed since state a is dropped again, and what a
     * backward node of this segment recomputed from later segments (those
     * are reversed already) */
    drop_segments(rv, a, rv->L, UINT32_MAX);
}

static void revolve_rec(struct revolve *rv, uint32_t a, uint32_t b, uint32_t s)
{
    if (rv->b.failed)
        return;
    if (s >= b - a) {
        /* a snapshot for every segment: keep everything, recompute nothing */
        const struct fmt_graph *g = rv->b.g;
        for (uint32_t v = 0; v < g->n; v++)
            if (!g->backward[v] && rv->fwd_seg[v] >= a && rv->fwd_seg[v] < b)
                ensure(&rv->b, v);
        for (uint32_t j = b; j-- > a;)
            reverse_one(rv, j, j);
        return;
    }
    if (b - a == 1 || s == 0) {
        for (uint32_t j = b; j-- > a;)
            reverse_one(rv, j, a);
        return;
    }
    uint32_t m = a + rv->split[(b - a) * (rv->S + 1) + s];
    /* advance to the state after segment m-1 and keep only it */
    ensure(&rv->b, rv->bound[m - 1]);
    drop_segments(rv, a, m, rv->bound[m - 1]);
    revolve_rec(rv, m, b, s - 1);
    revolve_rec(rv, a, m, s);
}

static enum plan_status griewank(const struct fmt_graph *g, uint64_t budget, struct schedule *out, char *err,
                                 size_t err_size)
{
    uint32_t n_ap = 0, n = g->n;
    uint32_t *ap = articulation_points(g, &n_ap);
    struct revolve rv = { 0 };
    double *C = NULL;
    enum plan_status rc = PLAN_ERROR;
    if (!ap) {
        snprintf(err, err_size, "out of memory");
        return PLAN_ERROR;
    }
    int32_t last_fwd = -1;
    for (uint32_t v = 0; v < n; v++)
        if (!g->backward[v])
            last_fwd = (int32_t)v;
    /* segment boundaries: the articulation points and the last forward node */
    rv.bound = malloc((n_ap + 2) * sizeof *rv.bound);
    rv.seg_start = malloc((n_ap + 3) * sizeof *rv.seg_start);
    rv.fwd_seg = malloc((n + 1) * sizeof *rv.fwd_seg);
    rv.bseg = malloc((n + 1) * sizeof *rv.bseg);
    if (builder_init(&rv.b, g, NULL) || !rv.bound || !rv.seg_start || !rv.fwd_seg || !rv.bseg) {
        snprintf(err, err_size, "out of memory");
        goto done;
    }
    rv.L = 0;
    for (uint32_t i = 0; i < n_ap; i++)
        rv.bound[rv.L++] = ap[i];
    if (last_fwd >= 0 && (!rv.L || rv.bound[rv.L - 1] != (uint32_t)last_fwd))
        rv.bound[rv.L++] = (uint32_t)last_fwd;
    for (uint32_t v = 0, j = 0; v < n; v++) {
        rv.fwd_seg[v] = UINT32_MAX;
        if (g->backward[v])
            continue;
        while (j < rv.L && rv.bound[j] < v)
            j++;
        rv.fwd_seg[v] = j < rv.L ? j : rv.L - 1;
    }
    for (uint32_t v = 0; v < n; v++) {
        rv.bseg[v] = -1;
        if (!g->backward[v])
            continue;
        /* run during the reversal of the latest segment it reads, but not
         * before its backward inputs (reversals go from the last segment
         * down) */
        int32_t fmax = -1, bmin = (int32_t)rv.L - 1;
        for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++) {
            uint32_t u = g->preds[q];
            if (g->backward[u]) {
                if (rv.bseg[u] < bmin)
                    bmin = rv.bseg[u];
            } else if ((int32_t)rv.fwd_seg[u] > fmax) {
                fmax = (int32_t)rv.fwd_seg[u];
            }
        }
        int32_t sg = fmax < 0 ? bmin : fmax < bmin ? fmax : bmin;
        rv.bseg[v] = sg < 0 ? 0 : sg;
    }
    /* The runtime issues backward calls in the graph's order, so reversals
     * (last segment first) must meet them in that order: a backward node
     * goes no higher than any backward node before it (what it reads from
     * a later segment is recomputed from the current state). */
    for (uint32_t v = 0, low = rv.L ? rv.L - 1 : 0; v < n; v++)
        if (g->backward[v]) {
            if ((uint32_t)rv.bseg[v] > low)
                rv.bseg[v] = (int32_t)low;
            low = (uint32_t)rv.bseg[v];
        }
    /* C(l, s): segment forwards to reverse l segments with s snapshots
     * (unit costs: Griewank's binomial optimum); split: the best first
     * advance */
    uint32_t L = rv.L, S = L;
    rv.S = S;
    C = malloc((size_t)(L + 1) * (S + 1) * sizeof *C);
    rv.split = malloc((size_t)(L + 1) * (S + 1) * sizeof *rv.split);
    if (!C || !rv.split) {
        snprintf(err, err_size, "out of memory");
        goto done;
    }
    for (uint32_t l = 1; l <= L; l++)
        for (uint32_t s = 0; s <= S; s++) {
            size_t at = (size_t)l * (S + 1) + s;
            rv.split[at] = 1;
            if (l == 1 || s == 0) {
                C[at] = (double)l * (l + 1) / 2;
                continue;
            }
            double best = INFINITY;
            for (uint32_t m = 1; m < l; m++) {
                double c = m + C[(size_t)(l - m) * (S + 1) + s - 1] + C[(size_t)m * (S + 1) + s];
                if (c < best) {
                    best = c;
                    rv.split[at] = m;
                }
            }
            C[at] = best;
        }
    /* the cheapest snapshot count that fits */
    double best_cost = INFINITY;
    uint64_t least_peak = UINT64_MAX;
    struct schedule best;
    schedule_init(&best);
    for (uint32_t s = 0; s <= S && L; s++) {
        struct schedule cand;
        struct schedule_result r;
        char e[300];
        schedule_init(&cand);
        builder_reset(&rv.b, &cand);
        revolve_rec(&rv, 0, L, s);
        /* nodes no reversal reached (backward nodes of no segment) */
        for (uint32_t v = 0; v < n; v++)
            if (g->backward[v] || g->sink[v])
                ensure(&rv.b, v);
        if (rv.b.failed) {
            schedule_free(&cand);
            schedule_free(&best);
            snprintf(err, err_size, "out of memory");
            goto done;
        }
        int frc = finish(g, &cand, 0, &r, e, sizeof e);
        if (frc == PLAN_ERROR) {
            schedule_free(&cand);
            schedule_free(&best);
            snprintf(err, err_size, "%s", e);
            goto done;
        }
        if (r.peak_bytes < least_peak)
            least_peak = r.peak_bytes;
        if ((!budget || r.peak_bytes <= budget) && r.total_compute < best_cost) {
            schedule_free(&best);
            best = cand;
            best_cost = r.total_compute;
        } else {
            schedule_free(&cand);
        }
    }
    if (!best.n_steps) {
        snprintf(err, err_size, "no snapshot count fits %llu bytes (the least peak is %llu bytes)",
                 (unsigned long long)budget, (unsigned long long)least_peak);
        rc = PLAN_INFEASIBLE;
        goto done;
    }
    schedule_free(out);
    out->steps = best.steps;
    out->n_steps = best.n_steps;
    out->cap_steps = best.cap_steps;
    rc = PLAN_OK;
done:
    free(ap);
    free(C);
    free(rv.bound);
    free(rv.seg_start);
    free(rv.fwd_seg);
    free(rv.bseg);
    builder_free(&rv.b);
    free(rv.split);
    return rc;
}

/* ---- Checkmate: S to a schedule ---- */

int plan_schedule_from_s(const struct fmt_graph *g, const uint8_t *S, struct schedule *out, char *err,
                         size_t err_size)
{
    uint32_t T = g->n;
    uint8_t *R = malloc((size_t)T + 1);
    if (!R) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    for (uint32_t t = 0; t < T; t++) {
        const uint8_t *St = S + (size_t)t * T, *Sn = t + 1 < T ? S + (size_t)(t + 1) * T : NULL;
        memset(R, 0, T);
        R[t] = 1;
        /* what the next stage keeps but this one does not must be computed now */
        if (Sn)
            for (uint32_t v = 0; v <= t; v++)
                if (Sn[v] && !St[v])
                    R[v] = 1;
        /* and every input of a computed node that is not kept (Checkmate's
         * solve_r_opt), walking down so inputs are seen after their users */
        for (uint32_t v = t + 1; v-- > 0;)
            if (R[v])
                for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++)
                    if (!St[g->preds[q]])
                        R[g->preds[q]] = 1;
        for (uint32_t v = 0; v <= t; v++)
            if (R[v]) {
                if (schedule_push(out, SCHEDULE_RUN, v, 0)) {
                    free(R);
                    snprintf(err, err_size, "out of memory");
                    return -1;
                }
                out->steps[out->n_steps - 1].stage = (int32_t)t;
            }
    }
    free(R);
    return schedule_insert_frees(g, out, err, err_size);
}

/* ---- dispatch ---- */

enum plan_status plan_make(const struct fmt_graph *g, enum plan_solver solver, uint64_t budget_bytes,
                           const struct plan_options *o, struct schedule *out, char *err, size_t err_size)
{
    schedule_init(out);
    double t0 = now_s();
    enum plan_status rc;
    struct schedule_result r;
    uint64_t floor_bytes = plan_graph_min_peak(g);
    if (budget_bytes && budget_bytes < floor_bytes) {
        snprintf(err, err_size, "budget %llu bytes is below what any schedule of %s needs: %llu bytes (parameters "
                 "%llu + the largest node with its inputs, or the outputs)", (unsigned long long)budget_bytes, g->name,
                 (unsigned long long)floor_bytes, (unsigned long long)g->param_bytes);
        return PLAN_INFEASIBLE;
    }
    switch (solver) {
    case PLAN_CHECKPOINT_ALL:
        if (checkpoint_all(g, out)) {
            snprintf(err, err_size, "out of memory");
            rc = PLAN_ERROR;
        } else {
            rc = finish(g, out, budget_bytes, &r, err, err_size);
        }
        snprintf(out->solver.status, sizeof out->solver.status, "heuristic");
        break;
    case PLAN_CHEN_SQRTN:
    case PLAN_CHEN_GREEDY:
        rc = chen(g, solver == PLAN_CHEN_GREEDY, budget_bytes, out, err, err_size);
        snprintf(out->solver.status, sizeof out->solver.status, "heuristic");
        break;
    case PLAN_GRIEWANK:
        rc = griewank(g, budget_bytes, out, err, err_size);
        snprintf(out->solver.status, sizeof out->solver.status, "heuristic");
        break;
    case PLAN_CHECKMATE_MILP:
    case PLAN_CHECKMATE_LP: {
        struct plan_options def;
        plan_options_default(&def);
        rc = plan_checkmate(g, budget_bytes, solver == PLAN_CHECKMATE_LP, o ? o : &def, out, err, err_size);
        break;
    }
    default:
        snprintf(err, err_size, "unknown solver %d", (int)solver);
        return PLAN_ERROR;
    }
    if (rc != PLAN_OK) {
        schedule_free(out);
        return rc;
    }
    out->budget_bytes = budget_bytes;
    snprintf(out->solver.name, sizeof out->solver.name, "%s", plan_solver_name(solver));
    out->solver.seconds = now_s() - t0;
    return PLAN_OK;
}
