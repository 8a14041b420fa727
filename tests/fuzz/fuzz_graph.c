/* tests/fuzz/fuzz_graph.c — the interchange readers and what runs behind
 * them: the same bytes as a DTR op log or Checkmate graph
 * (sim_program_load), as a planner graph (fmt_graph_read), and as a
 * schedule for a fixed three-node chain (schedule_parse). What loads as a
 * program is simulated unbudgeted and at half its peak with the DTR
 * heuristic; a passing run must stay within its budget. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
    if (fmt_graph_read(f.path, &g, err, sizeof err) == 0)
        FUZZ_REQUIRE(g.n > 0);
    else
        FUZZ_REQUIRE(err[0]);
    fmt_graph_free(&g);
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
