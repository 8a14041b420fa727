/* dtr/format/graph.c — the graph JSON's one reader and one writer
 * (dtr/format/graph.h). Reading: the nodes' fields by file position, the
 * links, a topological order, then everything renumbered in that order. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/format/graph.h"
#include "dtr/format/json.h"

#define MAX_BYTES 9e18

struct rd {
    const char *path;
    char *err;
    size_t err_size;
    const struct json_value *jn, *jl, *graph;
    uint32_t n, m;
    int checkmate;
    const char *k_id, *k_cost, *k_bytes, *k_param;
    struct id_pos *by_id;    /* sorted by id */
    uint32_t *src, *dst;     /* per link, file positions */
    uint32_t *order;         /* order[k]: file position of the k-th node */
    uint32_t *pos_of;        /* file position -> k */
};

struct id_pos {
    int64_t id;
    uint32_t file_pos;
};

__attribute__((format(printf, 2, 3))) static int fail(struct rd *r, const char *fmt, ...)
{
    int k = snprintf(r->err, r->err_size, "%s: ", r->path);
    if (k >= 0 && (size_t)k < r->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + k, r->err_size - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int oom(struct rd *r)
{
    return fail(r, "out of memory");
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = ((const struct id_pos *)a)->id, y = ((const struct id_pos *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* file position of the node with this id, or -1 */
static int64_t pos_of_id(const struct rd *r, int64_t id)
{
    uint32_t lo = 0, hi = r->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->by_id[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->by_id[lo].id == id ? (int64_t)r->by_id[lo].file_pos : -1;
}

static const char *tag(const struct json_value *graph, const char *key, const char *def)
{
    const char *s = json_string(json_get(graph, key));
    return s ? s : def;
}

/* An optional size field: absent 0; else a finite number in [0, 9e18]. */
static int size_field(const struct json_value *o, const char *key, uint64_t *out)
{
    const struct json_value *v = json_get(o, key);
    double x = 0;
    if (v && (json_as_double(v, &x) || !(x >= 0) || x > MAX_BYTES))
        return -1;
    *out = (uint64_t)llround(x);
    return 0;
}

static int alloc_nodes(struct fmt_graph *g, uint32_t n)
{
    g->n = n;
    g->names = calloc(n, sizeof *g->names);
    g->cost = calloc(n, sizeof *g->cost);
    g->flops = calloc(n, sizeof *g->flops);
    g->bytes = calloc(n, sizeof *g->bytes);
    g->param = calloc(n, sizeof *g->param);
    g->workspace = calloc(n, sizeof *g->workspace);
    g->kept = calloc(n, sizeof *g->kept);
    g->backward = calloc(n, 1);
    g->view = calloc(n, 1);
    g->file_pos = calloc(n, sizeof *g->file_pos);
    return g->names && g->cost && g->flops && g->bytes && g->param && g->workspace && g->kept && g->backward &&
                   g->view && g->file_pos
               ? 0
               : -1;
}

/* Node i of the file into g's arrays at i (renumbered later). */
static int read_node(struct rd *r, struct fmt_graph *g, uint32_t i)
{
    const struct json_value *o = &r->jn->u.array.items[i];
    int64_t id;
    if (o->type != JSON_OBJECT || json_as_int64(json_get(o, r->k_id), &id))
        return fail(r, "node %u has no integer \"%s\"", i, r->k_id);
    double cost = 0, bytes = 0;
    if (json_as_double(json_get(o, r->k_cost), &cost) || json_as_double(json_get(o, r->k_bytes), &bytes) ||
        size_field(o, r->k_param, &g->param[i]) || !(cost >= 0) || !isfinite(cost) || !(bytes >= 0) ||
        bytes > MAX_BYTES)
        return fail(r, "node %lld needs finite non-negative \"%s\" and \"%s\" (sizes up to 9e18 bytes)",
                    (long long)id, r->k_cost, r->k_bytes);
    if (size_field(o, "workspace_ram", &g->workspace[i]) || size_field(o, "kept_ram", &g->kept[i]))
        return fail(r, "node %lld: \"workspace_ram\" and \"kept_ram\" must be non-negative numbers",
                    (long long)id);
    const struct json_value *jf = json_get(o, "cost_flops");
    g->flops[i] = NAN;
    if (jf && (json_as_double(jf, &g->flops[i]) || !(g->flops[i] >= 0) || !isfinite(g->flops[i])))
        return fail(r, "node %lld: \"cost_flops\" must be a finite non-negative number", (long long)id);
    g->cost[i] = cost;
    g->bytes[i] = (uint64_t)llround(bytes);
    g->param_bytes += g->param[i];
    const struct json_value *jb = json_get(o, "backward"), *jv = json_get(o, "view");
    g->backward[i] = jb && jb->type == JSON_TRUE;
    g->view[i] = jv && jv->type == JSON_TRUE;
    const char *nm = r->checkmate ? json_string(json_get(o, "name")) : NULL;
    char idtext[32];
    snprintf(idtext, sizeof idtext, "%lld", (long long)id);
    if (!(g->names[i] = strdup(nm && *nm ? nm : idtext)))
        return oom(r);
    g->file_pos[i] = i;
    r->by_id[i].id = id;
    r->by_id[i].file_pos = i;
    return 0;
}

static int read_nodes(struct rd *r, struct fmt_graph *g)
{
    r->checkmate = json_get(&r->jn->u.array.items[0], "id") != NULL;
    r->k_id = r->checkmate ? "id" : "name";
    r->k_cost = r->checkmate ? "cost_cpu" : tag(r->graph, "node_duration_tag", "duration");
    r->k_bytes = r->checkmate ? "cost_ram" : tag(r->graph, "node_output_cost_tag", "out_cost");
    r->k_param = r->checkmate ? "param_cost" : tag(r->graph, "node_param_cost_tag", "param_cost");
    if (alloc_nodes(g, r->n) || !(r->by_id = malloc(r->n * sizeof *r->by_id)))
        return oom(r);
    for (uint32_t i = 0; i < r->n; i++)
        if (read_node(r, g, i))
            return -1;
    qsort(r->by_id, r->n, sizeof *r->by_id, cmp_id);
    for (uint32_t i = 1; i < r->n; i++)
        if (r->by_id[i].id == r->by_id[i - 1].id)
            return fail(r, "two nodes have the id %lld", (long long)r->by_id[i].id);
    return 0;
}

static int read_links(struct rd *r)
{
    r->src = malloc((r->m + 1) * sizeof *r->src);
    r->dst = malloc((r->m + 1) * sizeof *r->dst);
    if (!r->src || !r->dst)
        return oom(r);
    for (uint32_t e = 0; e < r->m; e++) {
        const struct json_value *l = &r->jl->u.array.items[e];
        const struct json_value *ja = json_get(l, "source"), *jb = json_get(l, "target");
        int64_t a, b, pa, pb;
        if (!ja && !jb) {
            ja = json_get(l, "0");
            jb = json_get(l, "1");
        }
        if (json_as_int64(ja, &a) || json_as_int64(jb, &b) || (pa = pos_of_id(r, a)) < 0 || (pb = pos_of_id(r, b)) < 0)
            return fail(r, "link %u does not join two known node ids", e);
        if (pa == pb)
            return fail(r, "link %u is a self-loop on node %lld", e, (long long)a);
        r->src[e] = (uint32_t)pa;
        r->dst[e] = (uint32_t)pb;
    }
    return 0;
}

/* The graph's own `order` into r->order / r->pos_of when it is a valid
 * topological order; 0 when it is not (or absent). */
static int own_order(struct rd *r)
{
    const struct json_value *jo = json_get(r->graph, "order");
    if (!jo || jo->type != JSON_ARRAY || jo->u.array.n != r->n)
        return 0;
    for (uint32_t i = 0; i < r->n; i++)
        r->pos_of[i] = UINT32_MAX;
    for (uint32_t k = 0; k < r->n; k++) {
        int64_t id, p;
        if (json_as_int64(&jo->u.array.items[k], &id) || (p = pos_of_id(r, id)) < 0 || r->pos_of[p] != UINT32_MAX)
            return 0;
        r->pos_of[p] = k;
        r->order[k] = (uint32_t)p;
    }
    for (uint32_t e = 0; e < r->m; e++)
        if (r->pos_of[r->src[e]] >= r->pos_of[r->dst[e]])
            return 0;
    return 1;
}

/* Kahn's algorithm, smallest file position first (a binary heap). */
static int kahn_order(struct rd *r)
{
    uint32_t n = r->n, m = r->m, hn = 0, done = 0;
    uint32_t *succ_at = calloc(n + 1, sizeof *succ_at), *succ = malloc((m + 1) * sizeof *succ);
    uint32_t *indeg = calloc(n + 1, sizeof *indeg), *fill = calloc(n + 1, sizeof *fill);
    uint32_t *heap = malloc((n + 1) * sizeof *heap);
    int rc = -1;
    if (!succ_at || !succ || !indeg || !fill || !heap) {
        oom(r);
        goto out;
    }
    for (uint32_t e = 0; e < m; e++) {
        succ_at[r->src[e] + 1]++;
        indeg[r->dst[e]]++;
    }
    for (uint32_t i = 0; i < n; i++)
        succ_at[i + 1] += succ_at[i];
    for (uint32_t e = 0; e < m; e++)
        succ[succ_at[r->src[e]] + fill[r->src[e]]++] = r->dst[e];
    for (uint32_t i = 0; i < n; i++)
        if (!indeg[i])
            heap[hn++] = i;   /* increasing: already a heap */
    while (hn) {
        uint32_t top = heap[0];
        heap[0] = heap[--hn];
        for (uint32_t c = 0;;) {
            uint32_t l = 2 * c + 1, rr = l + 1, s = c;
            if (l < hn && heap[l] < heap[s])
                s = l;
            if (rr < hn && heap[rr] < heap[s])
                s = rr;
            if (s == c)
                break;
            uint32_t t = heap[c];
            heap[c] = heap[s];
            heap[s] = t;
            c = s;
        }
        r->pos_of[top] = done;
        r->order[done++] = top;
        for (uint32_t q = succ_at[top]; q < succ_at[top + 1]; q++)
            if (--indeg[succ[q]] == 0) {
                uint32_t c = hn++;
                heap[c] = succ[q];
                while (c && heap[(c - 1) / 2] > heap[c]) {
                    uint32_t t = heap[c];
                    heap[c] = heap[(c - 1) / 2];
                    heap[(c - 1) / 2] = t;
                    c = (c - 1) / 2;
                }
            }
    }
    rc = done == n ? 0 : fail(r, "the graph has a cycle (%u of %u nodes ordered)", done, n);
out:
    free(succ_at);
    free(succ);
    free(indeg);
    free(fill);
    free(heap);
    return rc;
}

#define PERMUTE(field, type)                                                  \
    do {                                                                      \
        type *t_ = malloc((size_t)n * sizeof *t_ + 1);                        \
        if (!t_)                                                              \
            return -1;                                                        \
        for (uint32_t k_ = 0; k_ < n; k_++)                                   \
            t_[k_] = g->field[order[k_]];                                     \
        free(g->field);                                                       \
        g->field = t_;                                                        \
    } while (0)

/* Node k becomes file node order[k]. */
static int permute(struct fmt_graph *g, const uint32_t *order)
{
    uint32_t n = g->n;
    PERMUTE(names, char *);
    PERMUTE(cost, double);
    PERMUTE(flops, double);
    PERMUTE(bytes, uint64_t);
    PERMUTE(param, uint64_t);
    PERMUTE(workspace, uint64_t);
    PERMUTE(kept, uint64_t);
    PERMUTE(backward, uint8_t);
    PERMUTE(view, uint8_t);
    PERMUTE(file_pos, uint32_t);
    return 0;
}
#undef PERMUTE

/* link_at/links (link order, duplicates kept) and the distinct, sorted
 * pred/succ lists, in the new numbering. */
static int build_edges(struct rd *r, struct fmt_graph *g)
{
    uint32_t n = r->n, m = r->m;
    g->link_at = calloc(n + 1, sizeof *g->link_at);
    g->links = malloc((m + 1) * sizeof *g->links);
    g->pred_at = calloc(n + 1, sizeof *g->pred_at);
    g->succ_at = calloc(n + 1, sizeof *g->succ_at);
    g->preds = malloc((m + 1) * sizeof *g->preds);
    g->succs = malloc((m + 1) * sizeof *g->succs);
    g->sink = calloc(n + 1, 1);
    uint64_t *pairs = malloc((m + 1) * sizeof *pairs);
    uint32_t *fill = calloc(n + 1, sizeof *fill);
    int rc = -1;
    if (!g->link_at || !g->links || !g->pred_at || !g->succ_at || !g->preds || !g->succs || !g->sink || !pairs ||
        !fill) {
        oom(r);
        goto out;
    }
    for (uint32_t e = 0; e < m; e++) {
        r->src[e] = r->pos_of[r->src[e]];
        r->dst[e] = r->pos_of[r->dst[e]];
        g->link_at[r->dst[e] + 1]++;
        pairs[e] = (uint64_t)r->dst[e] << 32 | r->src[e];
    }
    for (uint32_t i = 0; i < n; i++)
        g->link_at[i + 1] += g->link_at[i];
    for (uint32_t e = 0; e < m; e++)
        g->links[g->link_at[r->dst[e]] + fill[r->dst[e]]++] = r->src[e];
    /* (dst, src) sorted: by consumer, then producer; duplicates dropped */
    qsort(pairs, m, sizeof *pairs, cmp_u64);
    uint32_t ne = 0;
    for (uint32_t e = 0; e < m; e++) {
        if (e && pairs[e] == pairs[e - 1])
            continue;
        uint32_t d = (uint32_t)(pairs[e] >> 32), s = (uint32_t)pairs[e];
        g->preds[ne++] = s;
        g->pred_at[d + 1]++;
        g->succ_at[s + 1]++;
    }
    g->n_edges = ne;
    for (uint32_t i = 0; i < n; i++) {
        g->pred_at[i + 1] += g->pred_at[i];
        g->succ_at[i + 1] += g->succ_at[i];
    }
    memset(fill, 0, (n + 1) * sizeof *fill);
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t q = g->pred_at[d]; q < g->pred_at[d + 1]; q++)
            g->succs[g->succ_at[g->preds[q]] + fill[g->preds[q]]++] = d;
    for (uint32_t i = 0; i < n; i++)
        g->sink[i] = g->succ_at[i + 1] == g->succ_at[i];
    rc = 0;
out:
    free(pairs);
    free(fill);
    return rc;
}

static int read_graph(struct rd *r, const struct json_value *root, struct fmt_graph *g)
{
    r->jn = json_get(root, "nodes");
    r->jl = json_get(root, "links");
    r->graph = json_get(root, "graph");
    if (!r->jn || r->jn->type != JSON_ARRAY || !r->jn->u.array.n || !r->jl || r->jl->type != JSON_ARRAY)
        return fail(r, "not a node-link graph (\"nodes\" and \"links\" lists expected)");
    r->n = (uint32_t)r->jn->u.array.n;
    r->m = (uint32_t)r->jl->u.array.n;
    if (read_nodes(r, g) || read_links(r))
        return -1;
    r->order = malloc(r->n * sizeof *r->order);
    r->pos_of = malloc(r->n * sizeof *r->pos_of);
    if (!r->order || !r->pos_of)
        return oom(r);
    if (!own_order(r) && kahn_order(r))
        return -1;
    if (permute(g, r->order))
        return oom(r);
    if (build_edges(r, g))
        return -1;
    const char *title = json_string(json_get(r->graph, "name"));
    const char *base = strrchr(r->path, '/');
    if ((title && !(g->title = strdup(title))) || !(g->path = strdup(r->path)) ||
        !(g->name = strdup(base ? base + 1 : r->path)))
        return oom(r);
    return 0;
}

int fmt_graph_read(const char *path, struct fmt_graph *g, char *err, size_t err_size)
{
    memset(g, 0, sizeof *g);
    struct json_value root;
    if (json_parse_file(path, &root, err, err_size))
        return -1;
    struct rd r = { .path = path, .err = err, .err_size = err_size };
    int rc = read_graph(&r, &root, g);
    if (!rc)
        rc = fmt_sha256_file(path, g->sha256, err, err_size);
    json_free(&root);
    free(r.by_id);
    free(r.src);
    free(r.dst);
    free(r.order);
    free(r.pos_of);
    if (rc)
        fmt_graph_free(g);
    return rc;
}

void fmt_graph_free(struct fmt_graph *g)
{
    if (g->names)
        for (uint32_t i = 0; i < g->n; i++)
            free(g->names[i]);
    void *arrays[] = { g->names, g->path, g->name, g->title, g->cost, g->flops, g->bytes, g->param,
                       g->workspace, g->kept, g->backward, g->view, g->sink, g->file_pos, g->link_at,
                       g->links, g->pred_at, g->preds, g->succ_at, g->succs };
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
        free(arrays[k]);
    memset(g, 0, sizeof *g);
}

int32_t fmt_graph_find(const struct fmt_graph *g, const char *name)
{
    /* linear: graphs have hundreds of nodes and names are looked up once */
    for (uint32_t i = 0; i < g->n; i++)
        if (!strcmp(g->names[i], name))
            return (int32_t)i;
    return -1;
}

static void write_node(FILE *f, const struct fmt_graph *g, uint32_t i)
{
    fprintf(f, "  {\"id\": %u, \"name\": ", i);
    json_write_string(f, g->names[i]);
    fprintf(f, ", \"backward\": %s, \"cost_cpu\": %.3f", g->backward[i] ? "true" : "false", g->cost[i]);
    if (!isnan(g->flops[i]))
        fprintf(f, ", \"cost_flops\": %.0f", g->flops[i]);
    fprintf(f, ", \"cost_ram\": %llu", (unsigned long long)g->bytes[i]);
    if (g->kept[i])
        fprintf(f, ", \"kept_ram\": %llu", (unsigned long long)g->kept[i]);
    if (g->workspace[i])
        fprintf(f, ", \"workspace_ram\": %llu", (unsigned long long)g->workspace[i]);
    if (g->view[i])
        fprintf(f, ", \"view\": true");
    if (i == 0 || g->param[i])
        fprintf(f, ", \"param_cost\": %llu", (unsigned long long)g->param[i]);
    fprintf(f, "}%s\n", i + 1 < g->n ? "," : "");
}

int fmt_graph_write(FILE *f, const struct fmt_graph *g, const char *source, const char *cost_unit)
{
    fprintf(f, "{\"directed\": true, \"multigraph\": false, \"graph\": {\"name\": ");
    json_write_string(f, g->title ? g->title : "");
    if (source) {
        fprintf(f, ", \"source\": ");
        json_write_string(f, source);
    }
    if (cost_unit) {
        fprintf(f, ", \"cost_cpu_unit\": ");
        json_write_string(f, cost_unit);
    }
    fprintf(f, "},\n\"nodes\": [\n");
    for (uint32_t i = 0; i < g->n; i++)
        write_node(f, g, i);
    fprintf(f, "],\n\"links\": [\n");
    int first = 1;
    for (uint32_t i = 0; i < g->n; i++)
        for (uint32_t q = g->link_at[i]; q < g->link_at[i + 1]; q++) {
            int dup = 0;
            for (uint32_t p = g->link_at[i]; p < q && !dup; p++)
                dup = g->links[p] == g->links[q];
            if (dup)
                continue;
            fprintf(f, "%s  {\"source\": %u, \"target\": %u}", first ? "" : ",\n", g->links[q], i);
            first = 0;
        }
    fprintf(f, "\n]}\n");
    return ferror(f) ? -1 : 0;
}
