/* dtr/sim/graph.c — reads static training graphs as node-link JSON into a
 * simulator program. Two layouts (../shared/data/checkmate-graphs/README.md):
 *   Checkmate: nodes {id, name, cost_cpu, cost_ram, backward},
 *              links {source, target} over ids;
 *   layered:   nodes {name (the id), duration, out_cost, param_cost}, links
 *              {"0": source, "1": target}; the graph object may rename the
 *              cost keys in its *_tag fields and give a topological `order`.
 * Each node is one call with one output; a node's parameters (param_cost)
 * are a constant it reads. Nodes run in topological order (the graph's
 * `order` when it has a valid one, else smallest position first); every
 * value is released right after its last reader runs; sinks stay live. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"

struct gnode {
    int64_t id;
    double cost;
    uint64_t bytes;
    uint64_t param_bytes;
    uint32_t n_pred, n_succ;
    uint32_t pred_at;        /* into preds */
    uint32_t value;          /* its output, once run */
    uint32_t param_value;
    uint32_t last_reader;    /* position in the order of its last reader */
    uint32_t order_pos;
};

static int find_node(const struct gnode *nodes, uint32_t n, const uint32_t *by_id, int64_t id, uint32_t *out)
{
    /* by_id: node indices sorted by id (binary search) */
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (nodes[by_id[mid]].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && nodes[by_id[lo]].id == id) {
        *out = by_id[lo];
        return 0;
    }
    return -1;
}

static const struct gnode *sort_nodes;
static int cmp_by_id(const void *a, const void *b)
{
    int64_t x = sort_nodes[*(const uint32_t *)a].id, y = sort_nodes[*(const uint32_t *)b].id;
    return x < y ? -1 : x > y;
}

static const char *tag(const struct json_value *graph, const char *key, const char *def)
{
    const char *s = json_string(json_get(graph, key));
    return s ? s : def;
}

static int num_field(const struct json_value *node, const char *key, double *out, int required)
{
    const struct json_value *v = json_get(node, key);
    if (!v) {
        *out = 0;
        return required ? -1 : 0;
    }
    return json_as_double(v, out);
}

int sim_program_load_graph(const char *path, struct sim_program *p, char *err, size_t err_size)
{
    memset(p, 0, sizeof *p);
    struct json_value root;
    if (json_parse_file(path, &root, err, err_size))
        return -1;
    int rc = -1;
    struct gnode *nodes = NULL;
    uint32_t *by_id = NULL, *preds = NULL, *order = NULL, *indeg = NULL, *heap = NULL, *inputs = NULL;
    const struct json_value *jn = json_get(&root, "nodes"), *jl = json_get(&root, "links");
    const struct json_value *graph = json_get(&root, "graph");
    if (!jn || jn->type != JSON_ARRAY || !jn->u.array.n || !jl || jl->type != JSON_ARRAY) {
        snprintf(err, err_size, "%s: not a node-link graph (\"nodes\" and \"links\" lists expected)", path);
        goto out;
    }
    uint32_t n = (uint32_t)jn->u.array.n;
    nodes = calloc(n, sizeof *nodes);
    by_id = malloc(n * sizeof *by_id);
    if (!nodes || !by_id) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    int checkmate = json_get(&jn->u.array.items[0], "id") != NULL;
    const char *k_cost = checkmate ? "cost_cpu" : tag(graph, "node_duration_tag", "duration");
    const char *k_bytes = checkmate ? "cost_ram" : tag(graph, "node_output_cost_tag", "out_cost");
    const char *k_param = checkmate ? "param_cost" : tag(graph, "node_param_cost_tag", "param_cost");
    const char *k_id = checkmate ? "id" : "name";
    for (uint32_t i = 0; i < n; i++) {
        const struct json_value *o = &jn->u.array.items[i];
        double cost, bytes, param;
        if (o->type != JSON_OBJECT || json_as_int64(json_get(o, k_id), &nodes[i].id)) {
            snprintf(err, err_size, "%s: node %u has no integer \"%s\"", path, i, k_id);
            goto out;
        }
        if (num_field(o, k_cost, &cost, 1) || num_field(o, k_bytes, &bytes, 1) || num_field(o, k_param, &param, 0) ||
            !(cost >= 0) || !(bytes >= 0) || !(param >= 0) || !isfinite(cost) || bytes > 9e18 || param > 9e18) {
            snprintf(err, err_size, "%s: node %lld needs finite non-negative \"%s\" and \"%s\" (sizes up to 9e18 bytes)",
                     path, (long long)nodes[i].id, k_cost, k_bytes);
            goto out;
        }
        nodes[i].cost = cost;
        nodes[i].bytes = (uint64_t)llround(bytes);
        nodes[i].param_bytes = (uint64_t)llround(param);
        by_id[i] = i;
    }
    sort_nodes = nodes;
    qsort(by_id, n, sizeof *by_id, cmp_by_id);
    for (uint32_t i = 1; i < n; i++)
        if (nodes[by_id[i]].id == nodes[by_id[i - 1]].id) {
            snprintf(err, err_size, "%s: two nodes have the id %lld", path, (long long)nodes[by_id[i]].id);
            goto out;
        }

    /* links: count predecessors, then fill them in link order */
    uint32_t m = (uint32_t)jl->u.array.n;
    uint32_t *src = malloc((m + 1) * sizeof *src), *dst = malloc((m + 1) * sizeof *dst);
    if (!src || !dst) {
        free(src);
        free(dst);
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    for (uint32_t e = 0; e < m; e++) {
        const struct json_value *l = &jl->u.array.items[e];
        int64_t a, b;
        const struct json_value *ja = json_get(l, "source"), *jb = json_get(l, "target");
        if (!ja && !jb) {
            ja = json_get(l, "0");
            jb = json_get(l, "1");
        }
        if (json_as_int64(ja, &a) || json_as_int64(jb, &b) || find_node(nodes, n, by_id, a, &src[e]) ||
            find_node(nodes, n, by_id, b, &dst[e])) {
            snprintf(err, err_size, "%s: link %u does not join two known node ids", path, e);
            free(src);
            free(dst);
            goto out;
        }
        if (src[e] == dst[e]) {
            snprintf(err, err_size, "%s: link %u is a self-loop on node %lld", path, e, (long long)a);
            free(src);
            free(dst);
            goto out;
        }
        nodes[dst[e]].n_pred++;
        nodes[src[e]].n_succ++;
    }
    preds = malloc((m + 1) * sizeof *preds);
    indeg = calloc(n, sizeof *indeg);
    if (!preds || !indeg) {
        free(src);
        free(dst);
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    for (uint32_t i = 0, at = 0; i < n; i++) {
        nodes[i].pred_at = at;
        at += nodes[i].n_pred;
    }
    for (uint32_t e = 0; e < m; e++)
        preds[nodes[dst[e]].pred_at + indeg[dst[e]]++] = src[e];
    free(src);
    free(dst);

    /* topological order: the graph's own, when it is one */
    order = malloc(n * sizeof *order);
    heap = malloc(n * sizeof *heap);
    if (!order || !heap) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    int have_order = 0;
    const struct json_value *jo = json_get(graph, "order");
    if (jo && jo->type == JSON_ARRAY && jo->u.array.n == n) {
        have_order = 1;
        for (uint32_t i = 0; i < n; i++)
            nodes[i].order_pos = UINT32_MAX;
        for (uint32_t k = 0; k < n && have_order; k++) {
            int64_t id;
            uint32_t i;
            if (json_as_int64(&jo->u.array.items[k], &id) || find_node(nodes, n, by_id, id, &i) ||
                nodes[i].order_pos != UINT32_MAX) {
                have_order = 0;
                break;
            }
            nodes[i].order_pos = k;
            order[k] = i;
        }
        for (uint32_t i = 0; i < n && have_order; i++)
            for (uint32_t q = 0; q < nodes[i].n_pred; q++)
                if (nodes[preds[nodes[i].pred_at + q]].order_pos >= nodes[i].order_pos)
                    have_order = 0;
    }
    if (!have_order) {
        /* Kahn's algorithm, smallest node position first (a binary heap) */
        uint32_t hn = 0, done = 0;
        for (uint32_t i = 0; i < n; i++)
            indeg[i] = nodes[i].n_pred;
        uint32_t *succ_at = calloc(n + 1, sizeof *succ_at), *succ = malloc((m + 1) * sizeof *succ);
        if (!succ_at || !succ) {
            free(succ_at);
            free(succ);
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        for (uint32_t i = 0; i < n; i++)
            succ_at[i + 1] = succ_at[i] + nodes[i].n_succ;
        uint32_t *fill = calloc(n, sizeof *fill);
        if (!fill) {
            free(succ_at);
            free(succ);
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t q = 0; q < nodes[i].n_pred; q++) {
                uint32_t s = preds[nodes[i].pred_at + q];
                succ[succ_at[s] + fill[s]++] = i;
            }
        free(fill);
#define HEAP_PUSH(x)                                                                           \
    do {                                                                                       \
        uint32_t c_ = hn++;                                                                    \
        heap[c_] = (x);                                                                        \
        while (c_ && heap[(c_ - 1) / 2] > heap[c_]) {                                          \
            uint32_t t_ = heap[c_];                                                            \
            heap[c_] = heap[(c_ - 1) / 2];                                                     \
            heap[(c_ - 1) / 2] = t_;                                                           \
            c_ = (c_ - 1) / 2;                                                                 \
        }                                                                                      \
    } while (0)
        for (uint32_t i = 0; i < n; i++)
            if (!indeg[i])
                HEAP_PUSH(i);
        while (hn) {
            uint32_t top = heap[0];
            heap[0] = heap[--hn];
            for (uint32_t c = 0;;) {
                uint32_t l = 2 * c + 1, r = l + 1, s = c;
                if (l < hn && heap[l] < heap[s])
                    s = l;
                if (r < hn && heap[r] < heap[s])
                    s = r;
                if (s == c)
                    break;
                uint32_t t = heap[c];
                heap[c] = heap[s];
                heap[s] = t;
                c = s;
            }
            nodes[top].order_pos = done;
            order[done++] = top;
            for (uint32_t q = succ_at[top]; q < succ_at[top + 1]; q++)
                if (--indeg[succ[q]] == 0)
                    HEAP_PUSH(succ[q]);
        }
#undef HEAP_PUSH
        free(succ_at);
        free(succ);
        if (done != n) {
            snprintf(err, err_size, "%s: the graph has a cycle (%u of %u nodes ordered)", path, done, n);
            goto out;
        }
    }

    /* the position of each value's last reader */
    for (uint32_t i = 0; i < n; i++)
        nodes[i].last_reader = UINT32_MAX;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k];
        for (uint32_t q = 0; q < nodes[i].n_pred; q++)
            nodes[preds[nodes[i].pred_at + q]].last_reader = k;
    }

    inputs = malloc((m + n + 1) * sizeof *inputs);
    if (!inputs) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    /* parameters live for the whole step: constants first */
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k];
        nodes[i].param_value = UINT32_MAX;
        if (nodes[i].param_bytes) {
            nodes[i].param_value = sim_program_constant(p, nodes[i].param_bytes, i);
            if (nodes[i].param_value == UINT32_MAX) {
                snprintf(err, err_size, "%s: out of memory", path);
                goto out;
            }
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k], ni = 0;
        for (uint32_t q = 0; q < nodes[i].n_pred; q++)
            inputs[ni++] = nodes[preds[nodes[i].pred_at + q]].value;
        if (nodes[i].param_value != UINT32_MAX)
            inputs[ni++] = nodes[i].param_value;
        nodes[i].value = sim_program_call(p, inputs, ni, &nodes[i].bytes, NULL, 1, nodes[i].cost, i);
        if (nodes[i].value == UINT32_MAX) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        for (uint32_t q = 0; q < nodes[i].n_pred; q++) {
            uint32_t s = preds[nodes[i].pred_at + q];
            /* released once, even when linked twice */
            if (nodes[s].last_reader == k) {
                nodes[s].last_reader = UINT32_MAX - 1;
                if (sim_program_ref(p, SIM_STEP_RELEASE, nodes[s].value, i)) {
                    snprintf(err, err_size, "%s: out of memory", path);
                    goto out;
                }
            }
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k];
        if (!nodes[i].n_succ && sim_program_ref(p, SIM_STEP_PIN, nodes[i].value, i)) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
    }
    const char *base = strrchr(path, '/');
    p->name = strdup(base ? base + 1 : path);
    rc = p->name ? 0 : -1;
    if (rc)
        snprintf(err, err_size, "%s: out of memory", path);
out:
    json_free(&root);
    free(nodes);
    free(by_id);
    free(preds);
    free(order);
    free(indeg);
    free(heap);
    free(inputs);
    if (rc)
        sim_program_free(p);
    return rc;
}
