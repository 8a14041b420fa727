/* dtr/sim/planners_graph.c — static graphs for the planners: the node-link
 * JSON of dtr/sim/graph.c (both layouts) read with node names and edges kept,
 * nodes renumbered in the simulator's topological order, and the file's
 * SHA-256 that schedules refer to. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"

/* ---- SHA-256 (FIPS 180-4) ---- */

struct sha256 {
    uint32_t h[8];
    uint8_t buf[64];
    uint64_t len;
    size_t fill;
};

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(struct sha256 *c, const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = cc;
        cc = b;
        b = a;
        a = t1 + t2;
    }
    c->h[0] += a;
    c->h[1] += b;
    c->h[2] += cc;
    c->h[3] += d;
    c->h[4] += e;
    c->h[5] += f;
    c->h[6] += g;
    c->h[7] += h;
}

static void sha_init(struct sha256 *c)
{
    static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memcpy(c->h, h0, sizeof h0);
    c->len = 0;
    c->fill = 0;
}

static void sha_update(struct sha256 *c, const uint8_t *p, size_t n)
{
    c->len += n;
    while (n) {
        size_t k = 64 - c->fill < n ? 64 - c->fill : n;
        memcpy(c->buf + c->fill, p, k);
        c->fill += k;
        p += k;
        n -= k;
        if (c->fill == 64) {
            sha_block(c, c->buf);
            c->fill = 0;
        }
    }
}

static void sha_final(struct sha256 *c, char hex[65])
{
    uint64_t bits = c->len * 8;
    uint8_t pad = 0x80, zero = 0, lenb[8];
    sha_update(c, &pad, 1);
    while (c->fill != 56)
        sha_update(c, &zero, 1);
    for (int i = 0; i < 8; i++)
        lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha_update(c, lenb, 8);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", c->h[i]);
}

int plan_file_sha256(const char *path, char hex[65], char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct sha256 c;
    sha_init(&c);
    uint8_t buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sha_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, err_size, "%s: read error", path);
        return -1;
    }
    sha_final(&c, hex);
    return 0;
}

/* ---- graph ---- */

void plan_graph_free(struct plan_graph *g)
{
    if (g->names)
        for (uint32_t i = 0; i < g->n; i++)
            free(g->names[i]);
    free(g->names);
    free(g->path);
    free(g->name);
    free(g->cost);
    free(g->bytes);
    free(g->workspace);
    free(g->kept);
    free(g->backward);
    free(g->sink);
    free(g->pred_at);
    free(g->preds);
    free(g->succ_at);
    free(g->succs);
    memset(g, 0, sizeof *g);
}

int32_t plan_graph_find(const struct plan_graph *g, const char *name)
{
    /* linear: graphs have hundreds of nodes and names are looked up once */
    for (uint32_t i = 0; i < g->n; i++)
        if (!strcmp(g->names[i], name))
            return (int32_t)i;
    return -1;
}

double plan_graph_compute(const struct plan_graph *g)
{
    double c = 0;
    for (uint32_t i = 0; i < g->n; i++)
        c += g->cost[i];
    return c;
}

uint64_t plan_graph_min_peak(const struct plan_graph *g)
{
    uint64_t best = 0, sinks = 0, kept = 0;
    for (uint32_t v = 0; v < g->n; v++) {
        uint64_t m = g->bytes[v] + g->workspace[v];
        for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++)
            m += g->bytes[g->preds[q]];
        if (m > best)
            best = m;
        if (g->sink[v])
            sinks += g->bytes[v];
        kept += g->kept[v];
    }
    sinks += kept;
    return g->param_bytes + (best > sinks ? best : sinks);
}

struct raw_node {
    int64_t id;
    uint32_t file_pos;
};

static int cmp_raw(const void *a, const void *b)
{
    int64_t x = ((const struct raw_node *)a)->id, y = ((const struct raw_node *)b)->id;
    return x < y ? -1 : x > y;
}

/* file position of the node with this id, or -1 */
static int64_t lookup(const struct raw_node *by_id, uint32_t n, int64_t id)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (by_id[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* the cast keeps -1 negative: the ternary's common type is uint32_t */
    return lo < n && by_id[lo].id == id ? (int64_t)by_id[lo].file_pos : -1;
}

static int cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int plan_graph_load(const char *path, struct plan_graph *g, char *err, size_t err_size)
{
    memset(g, 0, sizeof *g);
    struct json_value root;
    if (json_parse_file(path, &root, err, err_size))
        return -1;
    int rc = -1;
    struct raw_node *by_id = NULL;
    uint32_t *src = NULL, *dst = NULL, *pos_of = NULL, *order = NULL, *indeg = NULL, *fsucc_at = NULL, *fsucc = NULL;
    const struct json_value *jn = json_get(&root, "nodes"), *jl = json_get(&root, "links");
    const struct json_value *graph = json_get(&root, "graph");
    if (!jn || jn->type != JSON_ARRAY || !jn->u.array.n || !jl || jl->type != JSON_ARRAY) {
        snprintf(err, err_size, "%s: not a node-link graph (\"nodes\" and \"links\" lists expected)", path);
        goto out;
    }
    uint32_t n = (uint32_t)jn->u.array.n, m = (uint32_t)jl->u.array.n;
    int checkmate = json_get(&jn->u.array.items[0], "id") != NULL;
    const char *k_cost = "cost_cpu", *k_bytes = "cost_ram", *k_param = "param_cost", *k_id = "id";
    if (!checkmate) {
        const char *t;
        k_cost = (t = json_string(json_get(graph, "node_duration_tag"))) ? t : "duration";
        k_bytes = (t = json_string(json_get(graph, "node_output_cost_tag"))) ? t : "out_cost";
        k_param = (t = json_string(json_get(graph, "node_param_cost_tag"))) ? t : "param_cost";
        k_id = "name";
    }
    /* file-position arrays first; renumbered into topological order below */
    double *fcost = calloc(n, sizeof *fcost);
    uint64_t *fbytes = calloc(n, sizeof *fbytes), *fws = calloc(n, sizeof *fws), *fkept = calloc(n, sizeof *fkept);
    uint8_t *fback = calloc(n, 1);
    char **fnames = calloc(n, sizeof *fnames);
    by_id = malloc(n * sizeof *by_id);
    src = malloc((m + 1) * sizeof *src);
    dst = malloc((m + 1) * sizeof *dst);
    g->n = n;
    g->cost = fcost;
    g->bytes = fbytes;
    g->workspace = fws;
    g->kept = fkept;
    g->backward = fback;
    g->names = fnames;
    if (!fcost || !fbytes || !fws || !fkept || !fback || !fnames || !by_id || !src || !dst) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct json_value *o = &jn->u.array.items[i];
        int64_t id;
        double cost = 0, bytes = 0, param = 0;
        if (o->type != JSON_OBJECT || json_as_int64(json_get(o, k_id), &id)) {
            snprintf(err, err_size, "%s: node %u has no integer \"%s\"", path, i, k_id);
            goto out;
        }
        const struct json_value *jp = json_get(o, k_param);
        if (json_as_double(json_get(o, k_cost), &cost) || json_as_double(json_get(o, k_bytes), &bytes) ||
            (jp && json_as_double(jp, &param)) || !(cost >= 0) || !(bytes >= 0) || !(param >= 0) || !isfinite(cost) ||
            bytes > 9e18 || param > 9e18) {
            snprintf(err, err_size, "%s: node %lld needs finite non-negative \"%s\" and \"%s\" (sizes up to 9e18 bytes)",
                     path, (long long)id, k_cost, k_bytes);
            goto out;
        }
        /* dtrexec export's kernel workspace and kept bytes (runtime/export.c) */
        double ws = 0, kept = 0;
        const struct json_value *jw = json_get(o, "workspace_ram"), *jk = json_get(o, "kept_ram");
        if ((jw && (json_as_double(jw, &ws) || !(ws >= 0) || ws > 9e18)) ||
            (jk && (json_as_double(jk, &kept) || !(kept >= 0) || kept > 9e18))) {
            snprintf(err, err_size, "%s: node %lld: \"workspace_ram\" and \"kept_ram\" must be non-negative numbers",
                     path, (long long)id);
            goto out;
        }
        fcost[i] = cost;
        fbytes[i] = (uint64_t)llround(bytes);
        fws[i] = (uint64_t)llround(ws);
        fkept[i] = (uint64_t)llround(kept);
        g->param_bytes += (uint64_t)llround(param);
        const struct json_value *jb = json_get(o, "backward");
        fback[i] = jb && jb->type == JSON_TRUE;
        const char *nm = checkmate ? json_string(json_get(o, "name")) : NULL;
        char idtext[32];
        snprintf(idtext, sizeof idtext, "%lld", (long long)id);
        fnames[i] = strdup(nm && *nm ? nm : idtext);
        if (!fnames[i]) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        by_id[i].id = id;
        by_id[i].file_pos = i;
    }
    qsort(by_id, n, sizeof *by_id, cmp_raw);
    for (uint32_t i = 1; i < n; i++)
        if (by_id[i].id == by_id[i - 1].id) {
            snprintf(err, err_size, "%s: two nodes have the id %lld", path, (long long)by_id[i].id);
            goto out;
        }
    for (uint32_t e = 0; e < m; e++) {
        const struct json_value *l = &jl->u.array.items[e];
        const struct json_value *ja = json_get(l, "source"), *jb = json_get(l, "target");
        int64_t a, b, pa, pb;
        if (!ja && !jb) {
            ja = json_get(l, "0");
            jb = json_get(l, "1");
        }
        if (json_as_int64(ja, &a) || json_as_int64(jb, &b) || (pa = lookup(by_id, n, a)) < 0 ||
            (pb = lookup(by_id, n, b)) < 0) {
            snprintf(err, err_size, "%s: link %u does not join two known node ids", path, e);
            goto out;
        }
        if (pa == pb) {
            snprintf(err, err_size, "%s: link %u is a self-loop on node %lld", path, e, (long long)a);
            goto out;
        }
        src[e] = (uint32_t)pa;
        dst[e] = (uint32_t)pb;
    }
    /* successor lists by file position, for Kahn's algorithm */
    fsucc_at = calloc(n + 1, sizeof *fsucc_at);
    fsucc = malloc((m + 1) * sizeof *fsucc);
    indeg = calloc(n, sizeof *indeg);
    order = malloc(n * sizeof *order);
    pos_of = malloc(n * sizeof *pos_of);
    if (!fsucc_at || !fsucc || !indeg || !order || !pos_of) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    for (uint32_t e = 0; e < m; e++) {
        fsucc_at[src[e] + 1]++;
        indeg[dst[e]]++;
    }
    for (uint32_t i = 0; i < n; i++)
        fsucc_at[i + 1] += fsucc_at[i];
    {
        uint32_t *fill = calloc(n, sizeof *fill);
        if (!fill) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        for (uint32_t e = 0; e < m; e++)
            fsucc[fsucc_at[src[e]] + fill[src[e]]++] = dst[e];
        free(fill);
    }
    /* the graph's own order when it is a valid one (as dtr/sim/graph.c) */
    int have_order = 0;
    const struct json_value *jo = json_get(graph, "order");
    if (jo && jo->type == JSON_ARRAY && jo->u.array.n == n) {
        have_order = 1;
        for (uint32_t i = 0; i < n; i++)
            pos_of[i] = UINT32_MAX;
        for (uint32_t k = 0; k < n && have_order; k++) {
            int64_t id, p;
            if (json_as_int64(&jo->u.array.items[k], &id) || (p = lookup(by_id, n, id)) < 0 ||
                pos_of[p] != UINT32_MAX) {
                have_order = 0;
                break;
            }
            pos_of[p] = k;
            order[k] = (uint32_t)p;
        }
        for (uint32_t e = 0; e < m && have_order; e++)
            if (pos_of[src[e]] >= pos_of[dst[e]])
                have_order = 0;
    }
    if (!have_order) {
        /* Kahn's algorithm, smallest file position first: a sorted ready
         * list is enough at these sizes */
        uint32_t *ready = malloc(n * sizeof *ready), nr = 0, done = 0;
        if (!ready) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        for (uint32_t i = 0; i < n; i++)
            if (!indeg[i])
                ready[nr++] = i;
        while (nr) {
            qsort(ready, nr, sizeof *ready, cmp_u32);
            uint32_t top = ready[0];
            memmove(ready, ready + 1, (nr - 1) * sizeof *ready);
            nr--;
            pos_of[top] = done;
            order[done++] = top;
            for (uint32_t q = fsucc_at[top]; q < fsucc_at[top + 1]; q++)
                if (--indeg[fsucc[q]] == 0)
                    ready[nr++] = fsucc[q];
        }
        free(ready);
        if (done != n) {
            snprintf(err, err_size, "%s: the graph has a cycle (%u of %u nodes ordered)", path, done, n);
            goto out;
        }
    }
    /* renumber: node k is order[k] */
    {
        double *cost = malloc(n * sizeof *cost);
        uint64_t *bytes = malloc(n * sizeof *bytes), *ws = malloc(n * sizeof *ws), *kept = malloc(n * sizeof *kept);
        uint8_t *back = malloc(n);
        char **names = malloc(n * sizeof *names);
        if (!cost || !bytes || !ws || !kept || !back || !names) {
            free(cost);
            free(bytes);
            free(ws);
            free(kept);
            free(back);
            free(names);
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        for (uint32_t k = 0; k < n; k++) {
            cost[k] = fcost[order[k]];
            bytes[k] = fbytes[order[k]];
            ws[k] = fws[order[k]];
            kept[k] = fkept[order[k]];
            back[k] = fback[order[k]];
            names[k] = fnames[order[k]];
        }
        free(fcost);
        free(fbytes);
        free(fws);
        free(fkept);
        free(fback);
        free(fnames);
        g->cost = cost;
        g->bytes = bytes;
        g->workspace = ws;
        g->kept = kept;
        g->backward = back;
        g->names = names;
    }
    /* edges as (pred, succ) pairs in new numbering, sorted and deduplicated */
    for (uint32_t e = 0; e < m; e++) {
        src[e] = pos_of[src[e]];
        dst[e] = pos_of[dst[e]];
    }
    g->pred_at = calloc(n + 1, sizeof *g->pred_at);
    g->succ_at = calloc(n + 1, sizeof *g->succ_at);
    g->preds = malloc((m + 1) * sizeof *g->preds);
    g->succs = malloc((m + 1) * sizeof *g->succs);
    g->sink = calloc(n, 1);
    if (!g->pred_at || !g->succ_at || !g->preds || !g->succs || !g->sink) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    {
        /* pack (dst, src) into 64 bits to sort edges by consumer, then producer */
        uint64_t *pairs = malloc((m + 1) * sizeof *pairs);
        if (!pairs) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        for (uint32_t e = 0; e < m; e++)
            pairs[e] = (uint64_t)dst[e] << 32 | src[e];
        qsort(pairs, m, sizeof *pairs, cmp64);
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
        uint32_t *fill = calloc(n, sizeof *fill);
        if (!fill) {
            free(pairs);
            snprintf(err, err_size, "%s: out of memory", path);
            goto out;
        }
        /* successors in increasing consumer order: walk consumers in order */
        for (uint32_t d = 0; d < n; d++)
            for (uint32_t q = g->pred_at[d]; q < g->pred_at[d + 1]; q++) {
                uint32_t s = g->preds[q];
                g->succs[g->succ_at[s] + fill[s]++] = d;
            }
        free(fill);
        free(pairs);
    }
    for (uint32_t i = 0; i < n; i++)
        g->sink[i] = g->succ_at[i + 1] == g->succ_at[i];
    if (plan_file_sha256(path, g->sha256, err, err_size))
        goto out;
    const char *base = strrchr(path, '/');
    g->path = strdup(path);
    g->name = strdup(base ? base + 1 : path);
    if (!g->path || !g->name) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto out;
    }
    rc = 0;
out:
    json_free(&root);
    free(by_id);
    free(src);
    free(dst);
    free(pos_of);
    free(order);
    free(indeg);
    free(fsucc_at);
    free(fsucc);
    if (rc)
        plan_graph_free(g);
    return rc;
}

