/* dtr/format/graph.h — the graph JSON: a static training graph as
 * node-link JSON (networkx style), written by `dtrexec export`
 * (runtime/export.c) and by Checkmate, read by the simulator, the planners
 * and the command. Two layouts are read (../shared/data/checkmate-graphs/README.md):
 *   Checkmate (and dtrexec export): nodes {id, name, cost_cpu, cost_ram,
 *     backward, param_cost; export adds cost_flops, kept_ram,
 *     workspace_ram, view}, links {source, target} over ids;
 *   layered: nodes {name (the id), duration, out_cost, param_cost}, links
 *     {"0": source, "1": target}; the graph object may rename the cost keys
 *     in its *_tag fields and give a topological `order`.
 * In memory (struct fmt_graph) the nodes are renumbered in topological
 * order: the graph's own `order` when it is a valid one, else smallest file
 * position first. The reader checks every number (finite, non-negative,
 * sizes up to 9e18 bytes), unique ids, links between known ids, no
 * self-loops and no cycle; errors name the file and the node or link. */
#ifndef DTRX_FORMAT_GRAPH_H
#define DTRX_FORMAT_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fmt_graph {
    char *path;              /* as read (NULL for a graph built in memory) */
    char *name;              /* the file's base name */
    char *title;             /* "graph": {"name"}, NULL when absent */
    char sha256[65];         /* of the file's bytes, lower-case hex ("" when not read) */
    uint32_t n;
    char **names;            /* "name" (Checkmate layout) or the id as text */
    double *cost;            /* cost_cpu / duration */
    double *flops;           /* cost_flops, NaN when absent */
    uint64_t *bytes;         /* cost_ram / out_cost */
    uint64_t *param;         /* param_cost: bytes resident all step (0 when absent) */
    uint64_t *workspace;     /* workspace_ram: kernel scratch while it runs, 0 when absent */
    uint64_t *kept;          /* kept_ram: held from the first run to the end, 0 when absent */
    uint8_t *backward;       /* 1: "backward": true */
    uint8_t *view;           /* 1: "view": true (informative) */
    uint8_t *sink;           /* 1: no successor; a graph output */
    uint32_t *file_pos;      /* the node's index in the file's "nodes" list */
    uint64_t param_bytes;    /* sum of param */
    uint32_t *link_at;       /* n + 1 offsets into links */
    uint32_t *links;         /* each node's predecessors in link order, duplicates kept */
    uint32_t *pred_at;       /* n + 1 offsets into preds */
    uint32_t *preds;         /* distinct predecessors, increasing */
    uint32_t *succ_at;       /* n + 1 offsets into succs */
    uint32_t *succs;         /* distinct successors, increasing */
    uint32_t n_edges;        /* distinct (pred, succ) pairs */
};

/* Reads a graph file (either layout) and its SHA-256. Returns 0, or -1
 * with "PATH: what" in err (g is then empty). */
int fmt_graph_read(const char *path, struct fmt_graph *g, char *err, size_t err_size);
void fmt_graph_free(struct fmt_graph *g);
/* Node index by name, or -1. */
int32_t fmt_graph_find(const struct fmt_graph *g, const char *name);

/* Writes g in the Checkmate layout as dtrexec export does: ids are node
 * indices; cost_cpu with 3 decimals; cost_flops when not NaN; kept_ram,
 * workspace_ram and view when set; param_cost on node 0 always and on
 * others when not 0; links from link_at/links, a repeated predecessor of
 * one node written once. Only n, names, cost, flops, bytes, param,
 * workspace, kept, backward, view, link_at and links (and title) are used.
 * Returns 0, or -1 when writing failed. */
int fmt_graph_write(FILE *f, const struct fmt_graph *g, const char *source, const char *cost_unit);

/* SHA-256 of a file as lower-case hex (65 bytes with the NUL). */
int fmt_sha256_file(const char *path, char hex[65], char *err, size_t err_size);

#endif
