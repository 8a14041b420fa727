/* tests/fuzz/fuzz_graph.c — the interchange readers (dtr/format/) and what
 * runs behind them: the same bytes as a DTR op log or Checkmate graph
 * (sim_program_load), as an op log (fmt_trace_parse), as a graph
 * (fmt_graph_read), and as a schedule for a fixed three-node chain
 * (schedule_parse, schedule_read_graph_file). What loads as a program is
 * simulated unbudgeted and at half its peak with the DTR heuristic; a
 * passing run must stay within its budget. What a reader takes, its
 * writer writes and the reader takes again, alike. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"
#include "tests/fuzz/fuzz.h"

static const char chain[] =
    "{\"directed\": true, \"nodes\": [{\"id\": 0, \"name\": \"a\", \"cost_cpu\": 1, \"cost_ram\": 8},"
    " {\"id\": 1, \"name\": \"b\", \"cost_cpu\": 2, \"cost_ram\": 8},"
    " {\"id\": 2, \"name\": \"c\", \"cost_cpu\": 1, \"cost_ram\": 8}],"
    " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2}]}";

static void simulate(const struct sim_program *p)
{
    struct sim_baseline b;
    char err[512] = "";
    if (sim_baseline_run(p, &b, err, sizeof err) != 0)
        return;
    for (int half = 0; half < 2; half++) {
        struct sim_options o;
        sim_options_default(&o);
        o.budget_ratio = half ? 0.5 : 0;
        o.remat_limit = 50;
        struct sim_result r;
        if (sim_run(p, &b, &o, &r) == 0 && r.outcome == SIM_PASS && r.budget_bytes)
            FUZZ_REQUIRE(r.peak_bytes <= r.budget_bytes);
    }
}

/* A trace read, written and read again: the same records. */
static void trace_round_trip(const uint8_t *data, size_t size)
{
    char err[512] = "";
    struct fmt_trace t, u;
    if (fmt_trace_parse((const char *)data, size, "fuzz.log", &t, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0] && !t.n_recs);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    FUZZ_REQUIRE(m && fmt_trace_write(m, &t) == 0);
    fclose(m);
    FUZZ_REQUIRE(fmt_trace_parse(text, len, "again.log", &u, err, sizeof err) == 0);
    FUZZ_REQUIRE(u.n_recs == t.n_recs);
    for (uint32_t i = 0; i < t.n_recs; i++) {
        FUZZ_REQUIRE(u.recs[i].kind == t.recs[i].kind && u.recs[i].n_args == t.recs[i].n_args &&
                     u.recs[i].n_res == t.recs[i].n_res && u.recs[i].value == t.recs[i].value);
        FUZZ_REQUIRE(!strcmp(fmt_trace_name(&u, u.recs[i].name), fmt_trace_name(&t, t.recs[i].name)));
    }
    free(text);
    fmt_trace_free(&t);
    fmt_trace_free(&u);
}

/* A graph written and read again: the same nodes and edges. */
static void graph_round_trip(const struct fmt_graph *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    FUZZ_REQUIRE(m && fmt_graph_write(m, g, "fuzz", NULL) == 0);
    fclose(m);
    struct fuzz_file f;
    if (fuzz_file_open(&f, (const uint8_t *)text, len) == 0) {
        char err[512] = "";
        struct fmt_graph h;
        FUZZ_REQUIRE(fmt_graph_read(f.path, &h, err, sizeof err) == 0);
        FUZZ_REQUIRE(h.n == g->n && h.n_edges == g->n_edges && h.param_bytes == g->param_bytes);
        for (uint32_t i = 0; i < g->n; i++)
            FUZZ_REQUIRE(h.bytes[i] == g->bytes[i] && !strcmp(h.names[i], g->names[i]));
        fmt_graph_free(&h);
        fuzz_file_close(&f);
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    trace_round_trip(data, size);
    struct fuzz_file f;
    if (fuzz_file_open(&f, data, size))
        return 0;
    char err[512] = "";
    struct sim_program p;
    memset(&p, 0, sizeof p);
    if (sim_program_load(f.path, &p, err, sizeof err) == 0)
        simulate(&p);
    else
        FUZZ_REQUIRE(err[0]);
    sim_program_free(&p);
    struct fmt_graph g;
    memset(&g, 0, sizeof g);
    err[0] = 0;
    if (fmt_graph_read(f.path, &g, err, sizeof err) == 0) {
        FUZZ_REQUIRE(g.n > 0);
        graph_round_trip(&g);
    } else
        FUZZ_REQUIRE(err[0]);
    fmt_graph_free(&g);
    char file[256];
    err[0] = 0;
    if (schedule_read_graph_file(f.path, file, sizeof file, err, sizeof err) != 0)
        FUZZ_REQUIRE(err[0]);
    fuzz_file_close(&f);
    struct fuzz_file cf;
    if (fuzz_file_open(&cf, (const uint8_t *)chain, sizeof chain - 1))
        return 0;
    memset(&g, 0, sizeof g);
    if (fmt_graph_read(cf.path, &g, err, sizeof err) == 0) {
        struct schedule s;
        memset(&s, 0, sizeof s);
        err[0] = 0;
        if (schedule_parse((const char *)data, size, &g, &s, err, sizeof err) != 0)
            FUZZ_REQUIRE(err[0]);
        schedule_free(&s);
    }
    fmt_graph_free(&g);
    fuzz_file_close(&cf);
    return 0;
}
