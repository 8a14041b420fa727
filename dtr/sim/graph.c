/* dtr/sim/graph.c — a static graph (dtr/format/graph.h) as a simulator
 * program. Each node is one call with one output; a node's parameters
 * (param_cost) are a constant it reads, made before the first call. Nodes
 * run in the graph's topological order; a call reads its predecessors in
 * link order (a repeated link reads twice), then its parameters; every
 * value is released right after its last reader runs; sinks stay live.
 * Steps carry the node's position in the file as their line. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"

int sim_program_from_graph(const struct fmt_graph *g, struct sim_program *p, char *err, size_t err_size)
{
    memset(p, 0, sizeof *p);
    uint32_t n = g->n, m = g->link_at[n];
    uint32_t *value = malloc((n + 1) * sizeof *value), *param_value = malloc((n + 1) * sizeof *param_value);
    uint32_t *last_reader = malloc((n + 1) * sizeof *last_reader), *inputs = malloc((m + n + 1) * sizeof *inputs);
    int rc = -1;
    if (!value || !param_value || !last_reader || !inputs)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        last_reader[i] = UINT32_MAX;
    for (uint32_t k = 0; k < n; k++)
        for (uint32_t q = g->link_at[k]; q < g->link_at[k + 1]; q++)
            last_reader[g->links[q]] = k;
    /* parameters live for the whole step: constants first */
    for (uint32_t k = 0; k < n; k++) {
        param_value[k] = UINT32_MAX;
        if (g->param[k] && (param_value[k] = sim_program_constant(p, g->param[k], g->file_pos[k])) == UINT32_MAX)
            goto out;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t ni = 0, line = g->file_pos[k];
        for (uint32_t q = g->link_at[k]; q < g->link_at[k + 1]; q++)
            inputs[ni++] = value[g->links[q]];
        if (param_value[k] != UINT32_MAX)
            inputs[ni++] = param_value[k];
        if ((value[k] = sim_program_call(p, inputs, ni, &g->bytes[k], NULL, 1, g->cost[k], line)) == UINT32_MAX)
            goto out;
        for (uint32_t q = g->link_at[k]; q < g->link_at[k + 1]; q++) {
            uint32_t s = g->links[q];
            /* released once, even when linked twice */
            if (last_reader[s] == k) {
                last_reader[s] = UINT32_MAX - 1;
                if (sim_program_ref(p, SIM_STEP_RELEASE, value[s], line))
                    goto out;
            }
        }
    }
    for (uint32_t k = 0; k < n; k++)
        if (g->sink[k] && sim_program_ref(p, SIM_STEP_PIN, value[k], g->file_pos[k]))
            goto out;
    p->name = strdup(g->name ? g->name : "graph");
    rc = p->name ? 0 : -1;
out:
    if (rc) {
        snprintf(err, err_size, "%s: out of memory", g->name ? g->name : "graph");
        sim_program_free(p);
    }
    free(value);
    free(param_value);
    free(last_reader);
    free(inputs);
    return rc;
}

int sim_program_load_graph(const char *path, struct sim_program *p, char *err, size_t err_size)
{
    struct fmt_graph g;
    memset(p, 0, sizeof *p);
    if (fmt_graph_read(path, &g, err, err_size))
        return -1;
    int rc = sim_program_from_graph(&g, p, err, err_size);
    fmt_graph_free(&g);
    return rc;
}
