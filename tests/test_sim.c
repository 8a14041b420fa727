/* tests/test_sim.c — the simulator's readers and driver on small inputs
 * whose memory and costs are worked out by hand: every op-log record kind,
 * malformed logs (errors name the line), both graph layouts, and the JSON
 * reader. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"
#include "testutil.h"

static char tmpdir[256];

static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/test_sim_XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    }
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Every record kind. By hand (sizes in bytes, costs in TIME units):
 * baseline (banishing, unbudgeted): w 100; a 200 (300); view av; b 300
 * (600); COPY b2; RELEASE b; MUTATE b2 gets a new 300-byte value (900, the
 * peak) and the old one is freed (600); h: c 50, d 60 (710); COPY_FROM c<-d
 * frees c (660); b2, then a and av go (160). Compute 10+1+20+5+40 = 76.
 * Under 800 bytes, eager: the MUTATE needs 900 -> evict a (the only
 * candidate: b is its input, w a constant); releasing the old b evicts it
 * (400); h needs av: a is recomputed (10, 600) and the view replayed (1),
 * then c, d (710). Total 87, recomputed 11, 1 eviction, 4 eager ones (b,
 * c, b2, a). Under 700: h's d does not fit and nothing is evictable. */
static const char *every_record =
    "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"old\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"old\",\"MEMORY\":\"5\"}\n"
    "{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
    "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"100\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\"],\"RESULT\":[\"a\"],\"TIME\":\"10\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"200\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"view\",\"ARGS\":[\"a\"],\"RESULT\":[\"av\"],\"TIME\":1}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"av\",\"MEMORY\":\"200\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"av\",\"ALIAS\":\"0\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"ARGS\":[\"av\"],\"RESULT\":[\"b\"],\"TIME\":\"20\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"300\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"COPY\",\"DST\":\"b2\",\"SRC\":\"b\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"b\"}\n"
    "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"add_\",\"ARGS\":[\"b2\",\"w\"],\"MUTATE\":[0],\"TIME\":\"5\"}\n"
    "{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"BACKWARD\"}\n"
    "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"h\",\"ARGS\":[\"b2\",\"av\",\"w\"],\"RESULT\":[\"c\",\"d\"],\"TIME\":\"40\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"c\",\"MEMORY\":\"50\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"c\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"d\",\"MEMORY\":\"60\"}\n"
    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"d\",\"ALIAS\":\"-1\"}\n"
    "{\"INSTRUCTION\":\"COPY_FROM\",\"DST\":\"c\",\"SRC\":\"d\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"b2\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"av\"}\n"
    "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"old\"}\n";

START_TEST(test_every_record_kind)
{
    char err[512];
    struct sim_program p;
    const char *path = write_tmp("every.log", every_record);
    ck_assert_msg(sim_program_load(path, &p, err, sizeof err) == 0, "load: %s", err);
    ck_assert_uint_eq(p.n_calls, 5);
    ck_assert_uint_eq(p.ignored_releases, 1);   /* "old" was defined before START */
    struct sim_baseline b;
    ck_assert_msg(sim_baseline_run(&p, &b, err, sizeof err) == 0, "baseline: %s", err);
    ck_assert_double_eq(b.compute, 76);
    ck_assert_uint_eq(b.peak_bytes, 900);
    ck_assert_uint_eq(b.constant_bytes, 100);

    for (int h = 0; h < DTR_HEURISTIC_COUNT; h++) {
        struct sim_options o;
        sim_options_default(&o);
        o.heuristic = (enum dtr_heuristic)h;
        o.budget_bytes = 800;
        struct sim_result r;
        ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
        ck_assert_msg(r.outcome == SIM_PASS, "%s: %s", dtr_heuristic_name(o.heuristic), r.message);
        ck_assert_double_eq(r.total_compute, 87);
        ck_assert_double_eq(r.remat_compute, 11);
        ck_assert_uint_eq(r.remats, 2);
        ck_assert_uint_eq(r.evictions, 1);
        ck_assert_uint_eq(r.dealloc_evictions, 4);
        ck_assert_uint_eq(r.peak_bytes, 710);
        ck_assert_uint_eq(r.pinned_bytes, 160);
        ck_assert_double_eq_tol(r.overhead, 87.0 / 76.0, 1e-12);
    }
    struct sim_options o;
    sim_options_default(&o);
    struct sim_result r;
    o.budget_bytes = 700;
    ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
    ck_assert_int_eq(r.outcome, SIM_OOM);
    ck_assert_msg(strstr(r.message, "line 19"), "message: %s", r.message);
    /* recomputing a (10) passes 0.1 x 76 */
    o.budget_bytes = 800;
    o.remat_limit = 0.1;
    ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
    ck_assert_int_eq(r.outcome, SIM_REMAT_EXCEEDED);
    ck_assert_double_eq(r.total_compute, 46);
    /* ratio: floor(900 x 0.9) = 810 */
    o.budget_bytes = 0;
    o.budget_ratio = 0.9;
    o.remat_limit = 1;
    ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
    ck_assert_uint_eq(r.budget_bytes, 810);
    ck_assert_int_eq(r.outcome, SIM_PASS);
    sim_program_free(&p);
}
END_TEST

static void expect_error(const char *text, const char *want1, const char *want2)
{
    char err[512];
    struct sim_program p;
    const char *path = write_tmp("bad.log", text);
    ck_assert_msg(sim_program_load_trace(path, &p, err, sizeof err) == -1, "accepted: %s", text);
    ck_assert_msg(strstr(err, want1) && strstr(err, want2), "error '%s' lacks '%s' / '%s'", err, want1, want2);
}

START_TEST(test_malformed_logs)
{
    const char *c = "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"8\"}\n";
    char buf[1024];
    expect_error("{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n{\"INSTRUCTION\":\"CALL\",\n", "bad.log:2:", "not JSON");
    expect_error("{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n", ":1:", "MEMORY");
    snprintf(buf, sizeof buf, "%s{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"nope\"],\"RESULT\":[\"a\"],\"TIME\":\"1\"}\n", c);
    expect_error(buf, ":3:", "'nope', which was never defined");
    snprintf(buf, sizeof buf,
             "%s{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\"],\"RESULT\":[\"a\"],\"TIME\":\"1\"}\n"
             "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"8\"}\n"
             "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":\"3\"}\n", c);
    expect_error(buf, ":5:", "ALIAS of 'a'");
    snprintf(buf, sizeof buf,
             "%s{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\"],\"RESULT\":[\"a\"],\"TIME\":\"1\"}\n", c);
    expect_error(buf, ":3:", "not followed by MEMORY and ALIAS");
    snprintf(buf, sizeof buf, "%s{\"INSTRUCTION\":\"FOO\"}\n", c);
    expect_error(buf, ":3:", "unknown INSTRUCTION 'FOO'");
    snprintf(buf, sizeof buf, "%s{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"8\"}\n", c);
    expect_error(buf, ":3:", "follows no CONSTANT or CALL");
    snprintf(buf, sizeof buf, "%s{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"w\"}\n{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"w\"}\n", c);
    expect_error(buf, ":4:", "no references left");
    snprintf(buf, sizeof buf, "%s{\"INSTRUCTION\":\"COPY\",\"DST\":\"w\",\"SRC\":\"w\"}\n", c);
    expect_error(buf, ":3:", "already defined");
    snprintf(buf, sizeof buf, "%s[1,2]\n", c);
    expect_error(buf, ":3:", "JSON object");
    expect_error(c, ":2:", "no CALL");
}
END_TEST

/* A 3-node graph, 0 -> 1 -> 2 and 0 -> 2, in both layouts. Checkmate:
 * outputs 10, 20, 30 bytes, costs 1, 2, 3: 10, 30, 60 (peak) then 0 and 1
 * are released after node 2. The layered one adds 5 bytes of parameters to
 * node 1 (a constant, live throughout): peak 65. */
START_TEST(test_graphs)
{
    char err[512];
    struct sim_program p;
    struct sim_baseline b;
    const char *cm = write_tmp("g1.json",
        "{\"directed\": true, \"graph\": {}, \"nodes\": [\n"
        " {\"id\": 2, \"name\": \"c\", \"cost_cpu\": 3, \"cost_ram\": 30, \"backward\": true},\n"
        " {\"id\": 0, \"name\": \"a\", \"cost_cpu\": 1, \"cost_ram\": 10, \"backward\": false},\n"
        " {\"id\": 1, \"name\": \"b\", \"cost_cpu\": 2, \"cost_ram\": 20, \"backward\": false}],\n"
        " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2}, {\"source\": 0, \"target\": 2}]}\n");
    ck_assert_msg(sim_program_load(cm, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(p.n_calls, 3);
    ck_assert_int_eq(sim_baseline_run(&p, &b, err, sizeof err), 0);
    ck_assert_double_eq(b.compute, 6);
    ck_assert_uint_eq(b.peak_bytes, 60);
    /* 40 bytes: node 2 needs 0 and 1 resident plus its 30 -> OOM */
    struct sim_options o;
    sim_options_default(&o);
    struct sim_result r;
    o.budget_bytes = 59;
    ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
    ck_assert_int_eq(r.outcome, SIM_OOM);
    sim_program_free(&p);

    const char *lay = write_tmp("g2.json",
        "{\"graph\": {\"node_duration_tag\": \"duration\", \"node_output_cost_tag\": \"out_cost\","
        " \"node_param_cost_tag\": \"param_cost\", \"order\": [0, 1, 2]},\n"
        " \"nodes\": [{\"name\": 0, \"duration\": 1, \"out_cost\": 10, \"param_cost\": 0},\n"
        "  {\"name\": 1, \"duration\": 2, \"out_cost\": 20, \"param_cost\": 5},\n"
        "  {\"name\": 2, \"duration\": 3, \"out_cost\": 30, \"param_cost\": 0}],\n"
        " \"links\": [{\"0\": 0, \"1\": 1}, {\"0\": 1, \"1\": 2}, {\"0\": 0, \"1\": 2}]}\n");
    ck_assert_msg(sim_program_load(lay, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(sim_baseline_run(&p, &b, err, sizeof err), 0);
    ck_assert_double_eq(b.compute, 6);
    ck_assert_uint_eq(b.peak_bytes, 65);
    ck_assert_uint_eq(b.constant_bytes, 5);
    sim_program_free(&p);

    const char *cyc = write_tmp("g3.json",
        "{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1}, {\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 1}],"
        " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 0}]}");
    ck_assert_int_eq(sim_program_load(cyc, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cycle"), "%s", err);

    /* the published graphs load and replay */
    const char *files[] = { "vgg16-256-train.json", "mobilenet-512-train.json", "resnet50-256-train.json",
                            "random-layered-n100.json", "random-layered-n250.json" };
    const uint32_t nodes[] = { 45, 0, 0, 100, 250 };
    for (int i = 0; i < 5; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/checkmate-graphs/%s", testutil_data_dir(), files[i]);
        ck_assert_msg(sim_program_load(path, &p, err, sizeof err) == 0, "%s", err);
        if (nodes[i])
            ck_assert_uint_eq(p.n_calls, nodes[i]);
        ck_assert_int_eq(sim_baseline_run(&p, &b, err, sizeof err), 0);
        ck_assert(b.compute > 0 && b.peak_bytes > 0);
        o.budget_bytes = 0;
        o.budget_ratio = 0.8;
        ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
        ck_assert_msg(r.outcome != SIM_ERROR, "%s: %s", files[i], r.message);
        ck_assert_uint_le(r.peak_bytes, r.budget_bytes);
        sim_program_free(&p);
    }
}
END_TEST

START_TEST(test_json)
{
    struct json_value v;
    char err[256];
    const char *text = "{\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\n\\u00e9\\ud83d\\ude00\\\"\","
                       " \"n\": \"1728\", \"big\": 9007199254740993, \"o\": {}}";
    ck_assert_msg(json_parse(text, strlen(text), &v, err, sizeof err) == 0, "%s", err);
    const struct json_value *a = json_get(&v, "a");
    ck_assert_int_eq(a->type, JSON_ARRAY);
    ck_assert_uint_eq(a->u.array.n, 5);
    ck_assert_double_eq(a->u.array.items[1].u.number.value, -2500);
    ck_assert_int_eq(a->u.array.items[2].type, JSON_TRUE);
    ck_assert_int_eq(a->u.array.items[4].type, JSON_NULL);
    ck_assert_str_eq(json_string(json_get(&v, "s")), "x\n\xc3\xa9\xf0\x9f\x98\x80\"");
    int64_t i;
    ck_assert_int_eq(json_as_int64(json_get(&v, "n"), &i), 0);
    ck_assert_int_eq(i, 1728);
    ck_assert_int_eq(json_as_int64(json_get(&v, "big"), &i), 0);
    ck_assert(i == 9007199254740993LL);
    ck_assert_int_eq(json_get(&v, "o")->type, JSON_OBJECT);
    ck_assert_ptr_null(json_get(&v, "missing"));
    json_free(&v);

    const char *bad[] = { "{\"a\": 1,\n \"b\" 2}", "[1, 2", "\"abc", "01", "{\"a\": tru}", "[1] x", "\"\\q\"" };
    const char *where[] = { "line 2, column 6", "line 1", "line 1", "line 1, column 2", "line 1", "line 1, column 5",
                            "bad escape" };
    for (int k = 0; k < 7; k++) {
        ck_assert_msg(json_parse(bad[k], strlen(bad[k]), &v, err, sizeof err) == -1, "accepted %s", bad[k]);
        ck_assert_msg(strstr(err, where[k]), "'%s': error '%s' lacks '%s'", bad[k], err, where[k]);
    }
    /* deep nesting is refused, not a stack overflow */
    char *deep = malloc(100001);
    memset(deep, '[', 100000);
    deep[100000] = 0;
    ck_assert_int_eq(json_parse(deep, 100000, &v, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "nesting"));
    free(deep);
}
END_TEST

START_TEST(test_ratios)
{
    double *r;
    int n = sweep_parse_ratios("0.1:1.0:0.1", &r);
    ck_assert_int_eq(n, 10);
    ck_assert(r[2] == 0.3 && r[6] == 0.7 && r[9] == 1.0);
    free(r);
    n = sweep_parse_ratios("0.25,0.5", &r);
    ck_assert_int_eq(n, 2);
    ck_assert(r[1] == 0.5);
    free(r);
    ck_assert_int_eq(sweep_parse_ratios("0.5:0.1:0.1", &r), -1);
    enum dtr_heuristic *h;
    ck_assert_int_eq(sweep_parse_heuristics("dtr,lru,msps", &h), 3);
    ck_assert_int_eq(h[1], DTR_HEURISTIC_LRU);
    free(h);
    ck_assert_int_eq(sweep_parse_heuristics("dtr,bogus", &h), -1);
}
END_TEST

/* The CLI: exit codes and the JSON object of `sim --json`. */
START_TEST(test_cli)
{
    const char *log = write_tmp("every.log", every_record);
    char cmd[2048], out[4096];
    snprintf(cmd, sizeof cmd, "%s sim %s --budget 800B --heuristic lru --json", DTRX_BINARY, log);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    ck_assert_int_eq(WEXITSTATUS(pclose(f)), 0);
    struct json_value v;
    char err[256];
    ck_assert_msg(json_parse(out, n, &v, err, sizeof err) == 0, "%s: %s", err, out);
    const char *keys[] = { "peak_bytes", "budget_bytes", "pinned_bytes", "baseline_compute", "total_compute",
                           "remat_compute", "evictions", "remats", "heuristic", "overhead", "oom", "remat_exceeded",
                           "heuristic_evaluations", "metadata_accesses", "wall_s" };
    for (int k = 0; k < 15; k++)
        ck_assert_msg(json_get(&v, keys[k]), "sim --json lacks %s", keys[k]);
    double x;
    ck_assert_int_eq(json_as_double(json_get(&v, "total_compute"), &x), 0);
    ck_assert_double_eq(x, 87);
    ck_assert_int_eq(json_get(&v, "oom")->type, JSON_FALSE);
    json_free(&v);
    snprintf(cmd, sizeof cmd, "%s sim %s --budget 700B --json > /dev/null", DTRX_BINARY, log);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "%s sim %s --heuristic nope 2> /dev/null", DTRX_BINARY, log);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 1);
    snprintf(cmd, sizeof cmd, "%s sim %s/none.log 2> /dev/null", DTRX_BINARY, tmpdir);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 1);
    snprintf(cmd, sizeof cmd, "%s bench %s --budgets 0.8,1.0 --heuristics dtr,lru --csv %s/s.csv --plot %s/s.svg --quiet",
             DTRX_BINARY, log, tmpdir, tmpdir);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 0);
    snprintf(cmd, sizeof cmd, "%s/s.csv", tmpdir);
    f = fopen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    int lines = 0;
    while (fgets(out, sizeof out, f))
        lines++;
    fclose(f);
    ck_assert_int_eq(lines, 5);   /* header + 2 heuristics x 2 ratios */
    snprintf(cmd, sizeof cmd, "%s/s.svg", tmpdir);
    ck_assert_int_eq(json_parse_file(cmd, &v, err, sizeof err), -1);   /* not JSON, but there */
    ck_assert_int_eq(access(cmd, R_OK), 0);
}
END_TEST

int main(void)
{
    TCase *tc;
    Suite *s = testutil_suite("sim", "sim", 300, &tc);
    tcase_add_test(tc, test_every_record_kind);
    tcase_add_test(tc, test_malformed_logs);
    tcase_add_test(tc, test_graphs);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_ratios);
    tcase_add_test(tc, test_cli);
    return testutil_run(s);
}
