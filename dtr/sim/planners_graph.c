/* dtr/sim/planners_graph.c — the planners' measures of a graph
 * (dtr/format/graph.h): one plain pass's compute and a lower bound of any
 * schedule's peak. */
#include "dtr/sim/sim.h"

double plan_graph_compute(const struct fmt_graph *g)
{
    double c = 0;
    for (uint32_t i = 0; i < g->n; i++)
        c += g->cost[i];
    return c;
}

uint64_t plan_graph_min_peak(const struct fmt_graph *g)
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
