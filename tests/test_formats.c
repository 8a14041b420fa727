/* The interchange formats (dtr/format/): each reader's checks, with the
 * field named in the message; each writer read back to the same in-memory
 * form; the trace reader's fast path against the general JSON parser. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtr/format/graph.h"
#include "dtr/format/json.h"
#include "dtr/format/schedule.h"
#include "dtr/format/stats.h"
#include "dtr/format/trace.h"
#include "tests/testutil.h"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static const char *write_tmp(const char *name, const char *text)
{
    const char *path = tmp_path(name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* ---- trace ---- */

static void trace_rejects(const char *line, const char *want1, const char *want2)
{
    char err[512];
    struct fmt_trace t;
    char text[1024];
    snprintf(text, sizeof text, "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n%s\n", line);
    ck_assert_msg(fmt_trace_parse(text, strlen(text), "t.log", &t, err, sizeof err) == -1, "accepted: %s", line);
    ck_assert_msg(strstr(err, "t.log:2:") && strstr(err, want1) && strstr(err, want2), "'%s': error '%s' lacks '%s' / '%s'",
                  line, err, want1, want2);
    ck_assert_uint_eq(t.n_recs, 0);   /* emptied on failure */
}

START_TEST(test_trace_checks_fields)
{
    const char *call = "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\"],\"RESULT\":[\"a\"],\"TIME\":";
    char buf[512];
    const char *bad_times[] = { "\"inf\"", "\"-1\"", "-0.5", "\"nan\"", "1e999", "\"\"", "null", "[1]" };
    for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
        snprintf(buf, sizeof buf, "%s%s}", call, bad_times[i]);
        trace_rejects(buf, "CALL f: TIME", "finite non-negative");
    }
    trace_rejects("{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"g\",\"ARGS\":[\"w\"],\"MUTATE\":[0],\"TIME\":\"Infinity\"}",
                  "MUTATE g: TIME", "finite");
    const char *bad_sizes[] = { "\"-8\"", "\"1e30\"", "\"4611686018427387905\"", "\"8.5\"", "\"x\"", "true" };
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        snprintf(buf, sizeof buf, "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":%s}", bad_sizes[i]);
        trace_rejects(buf, "MEMORY of 'w'", "byte count");
    }
    trace_rejects("{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"w\",\"ALIAS\":\"-2\"}", "ALIAS of 'w'", "-1 or an argument");
    trace_rejects("{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"w\",\"ALIAS\":0.5}", "ALIAS of 'w'", "-1 or an argument");
    trace_rejects("{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"g\",\"ARGS\":[\"w\"],\"MUTATE\":[-1],\"TIME\":1}", "MUTATE[0]",
                  "non-negative argument index");
    trace_rejects("{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"g\",\"ARGS\":[\"w\"],\"MUTATE\":[],\"TIME\":1}", "MUTATE g",
                  "MUTATE list");
    trace_rejects("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\", 3],\"RESULT\":[\"a\"],\"TIME\":1}", "ARGS[1]",
                  "not a name");
    trace_rejects("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":\"w\",\"RESULT\":[\"a\"],\"TIME\":1}", "CALL",
                  "ARGS list");
    trace_rejects("{\"INSTRUCTION\":\"CALL\",\"ARGS\":[],\"RESULT\":[\"a\"],\"TIME\":1}", "CALL", "string NAME");
    trace_rejects("{\"INSTRUCTION\":\"COPY\",\"DST\":\"a\"}", "COPY", "string SRC");
    trace_rejects("{\"INSTRUCTION\":\"ANNOTATE\"}", "ANNOTATE", "string ANNOTATION");
    trace_rejects("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"u\",\"ARGS\":[\"w\"],\"IN_PLACE\":[\"1\"],\"RESULT\":[\"a\"],"
                  "\"TIME\":1}", "CALL u: IN_PLACE[0]", "argument index below 1");
    trace_rejects("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"u\",\"ARGS\":[\"w\"],\"IN_PLACE\":0,\"RESULT\":[\"a\"],"
                  "\"TIME\":1}", "CALL u: IN_PLACE", "list of argument indices");
    trace_rejects("{\"INSTRUCTION\":7}", "string INSTRUCTION", "");
    trace_rejects("{\"INSTRUCTION\":\"JUMP\"}", "unknown INSTRUCTION 'JUMP'", "");
    trace_rejects("{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"w\"", "not JSON", "");
    trace_rejects("{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"w\"} x", "not JSON", "");
    trace_rejects("[\"RELEASE\"]", "JSON object", "");
}
END_TEST

/* Lines the fast path leaves to the general parser (escapes, UTF-8,
 * nested values, other whitespace) read as the plain ones. */
START_TEST(test_trace_fast_and_general_paths_agree)
{
    const char *plain = "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"x1\",\"x2\"],\"RESULT\":[\"x3\"],\"TIME\":\"12.5\"}\n"
                        "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x3\",\"MEMORY\":\"1024\"}\n";
    const char *other = "  { \"TIME\" : 12.5 , \"INSTRUCTION\":\"CALL\", \"extra\": {\"a\": [true, null]},\n"
                        "\"NAME\":\"\\u0066\",\"ARGS\":[\"x\\u0031\",\"x2\"],\"RESULT\":[\"x3\"]}\r\n"
                        "\n"
                        "{\"MEMORY\":1024, \"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x3\", \"note\":\"\xc3\xa9\"}\n";
    char err[512];
    struct fmt_trace a, b;
    ck_assert_msg(fmt_trace_parse(plain, strlen(plain), "a", &a, err, sizeof err) == 0, "%s", err);
    /* the first record spans two lines in `other`: not a log */
    ck_assert_int_eq(fmt_trace_parse(other, strlen(other), "b", &b, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "b:1:") && strstr(err, "not JSON"), "%s", err);
    char *joined = strdup(other);
    *strchr(joined, '\n') = ' ';
    ck_assert_msg(fmt_trace_parse(joined, strlen(joined), "b", &b, err, sizeof err) == 0, "%s", err);
    free(joined);
    ck_assert_uint_eq(a.n_recs, 2);
    ck_assert_uint_eq(b.n_recs, 2);
    ck_assert_uint_eq(b.recs[1].line, 3);   /* after a blank line */
    for (uint32_t i = 0; i < 2; i++) {
        ck_assert_int_eq(a.recs[i].kind, b.recs[i].kind);
        ck_assert_str_eq(fmt_trace_name(&a, a.recs[i].name), fmt_trace_name(&b, b.recs[i].name));
        ck_assert_double_eq(a.recs[i].time, b.recs[i].time);
        ck_assert_int_eq(a.recs[i].value, b.recs[i].value);
        ck_assert_uint_eq(a.recs[i].n_args, b.recs[i].n_args);
        ck_assert_uint_eq(a.recs[i].n_res, b.recs[i].n_res);
        for (uint32_t k = 0; k < a.recs[i].n_args; k++)
            ck_assert_str_eq(fmt_trace_name(&a, a.ids[a.recs[i].args_at + k]),
                             fmt_trace_name(&b, b.ids[b.recs[i].args_at + k]));
    }
    ck_assert_double_eq(a.recs[0].time, 12.5);
    ck_assert_int_eq(a.recs[1].value, 1024);
    ck_assert_uint_ne(fmt_trace_find(&a, "x2"), UINT32_MAX);
    ck_assert_uint_eq(fmt_trace_find(&a, "x9"), UINT32_MAX);
    fmt_trace_free(&a);
    fmt_trace_free(&b);
}
END_TEST

static void same_trace(const struct fmt_trace *a, const struct fmt_trace *b)
{
    ck_assert_uint_eq(a->n_recs, b->n_recs);
    for (uint32_t i = 0; i < a->n_recs; i++) {
        const struct fmt_trace_record *x = &a->recs[i], *y = &b->recs[i];
        ck_assert_int_eq(x->kind, y->kind);
        ck_assert_str_eq(fmt_trace_name(a, x->name), fmt_trace_name(b, y->name));
        if (x->kind == FMT_TRACE_COPY || x->kind == FMT_TRACE_COPY_FROM)
            ck_assert_str_eq(fmt_trace_name(a, x->src), fmt_trace_name(b, y->src));
        ck_assert_double_eq(x->time, y->time);
        ck_assert_int_eq(x->value, y->value);
        ck_assert_uint_eq(x->n_args, y->n_args);
        ck_assert_uint_eq(x->n_res, y->n_res);
        for (uint32_t k = 0; k < x->n_args; k++)
            ck_assert_str_eq(fmt_trace_name(a, a->ids[x->args_at + k]), fmt_trace_name(b, b->ids[y->args_at + k]));
        for (uint32_t k = 0; k < x->n_res; k++)
            if (x->kind == FMT_TRACE_CALL)
                ck_assert_str_eq(fmt_trace_name(a, a->ids[x->res_at + k]), fmt_trace_name(b, b->ids[y->res_at + k]));
            else
                ck_assert_uint_eq(a->ids[x->res_at + k], b->ids[y->res_at + k]);
    }
}

/* Every record kind written and read back; the DTR authors' logs too. */
START_TEST(test_trace_write_reads_back)
{
    const char *text = "{\"ANNOTATION\":\"START\",\"INSTRUCTION\":\"ANNOTATE\"}\n"
                       "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
                       "{\"INSTRUCTION\":\"MEMORY\",\"MEMORY\":\"4611686018427387904\",\"NAME\":\"w\"}\n"
                       "{\"ARGS\":[\"w\"],\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\\\"q\",\"RESULT\":[\"a\",\"b\"],\"TIME\":\"0.1\"}\n"
                       "{\"ALIAS\":\"-1\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\"}\n"
                       "{\"ARGS\":[\"w\",\"a\"],\"INSTRUCTION\":\"CALL\",\"IN_PLACE\":[\"0\"],\"NAME\":\"SGDUpdate\","
                       "\"RESULT\":[\"w2\"],\"TIME\":\"8\"}\n"
                       "{\"ALIAS\":\"0\",\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"w2\"}\n"
                       "{\"ARGS\":[\"a\",\"w\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[1,0],\"NAME\":\"add_\",\"TIME\":\"3\"}\n"
                       "{\"DST\":\"c\",\"INSTRUCTION\":\"COPY\",\"SRC\":\"a\"}\n"
                       "{\"DST\":\"c\",\"INSTRUCTION\":\"COPY_FROM\",\"SRC\":\"b\"}\n"
                       "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"c\"}\n";
    char err[512];
    struct fmt_trace a, b;
    ck_assert_msg(fmt_trace_parse(text, strlen(text), "k", &a, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(a.n_recs, 11);
    ck_assert_uint_eq(a.recs[5].n_in_place, 1);
    ck_assert_uint_eq(a.ids[a.recs[5].in_place_at], 0);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ck_assert_int_eq(fmt_trace_write(f, &a), 0);
    fclose(f);
    ck_assert_str_eq(out, text);   /* the same bytes: the writer's layout is the logs' */
    free(out);
    fmt_trace_free(&a);

    static const char *logs[] = { "resnet32-56.log", "lstm-128.log" };
    int ran = 0;
    for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/dtr-logs/%s", testutil_data_dir(), logs[i]);
        if (access(path, R_OK))
            continue;
        ck_assert_msg(fmt_trace_read(path, &a, err, sizeof err) == 0, "%s", err);
        const char *copy = tmp_path("copy.log");
        f = fopen(copy, "w");
        ck_assert_int_eq(fmt_trace_write(f, &a), 0);
        fclose(f);
        ck_assert_msg(fmt_trace_read(copy, &b, err, sizeof err) == 0, "%s", err);
        same_trace(&a, &b);
        fmt_trace_free(&a);
        fmt_trace_free(&b);
        ran++;
    }
    ck_assert_msg(ran == 2 || access(testutil_data_dir(), R_OK), "the DTR logs are missing from %s", testutil_data_dir());
}
END_TEST

/* ---- graph ---- */

static void graph_rejects(const char *nodes, const char *links, const char *want)
{
    char text[2048], err[512];
    snprintf(text, sizeof text, "{\"nodes\": [%s], \"links\": [%s]}", nodes, links);
    const char *path = write_tmp("g.json", text);
    struct fmt_graph g;
    ck_assert_msg(fmt_graph_read(path, &g, err, sizeof err) == -1, "accepted: %s", text);
    ck_assert_msg(strstr(err, "g.json: ") && strstr(err, want), "error '%s' lacks '%s'", err, want);
    ck_assert_uint_eq(g.n, 0);
}

#define N2 "{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8}, {\"id\": 2, \"cost_cpu\": 1, \"cost_ram\": 8}"

START_TEST(test_graph_checks)
{
    graph_rejects(N2, "{\"source\": 1, \"target\": 3}", "link 0 does not join two known node ids");
    graph_rejects(N2, "{\"source\": 1, \"target\": 2}, {\"source\": 7}", "link 1 does not join");
    graph_rejects(N2, "{\"source\": 2, \"target\": 2}", "link 0 is a self-loop on node 2");
    graph_rejects(N2, "{\"source\": 1, \"target\": 2}, {\"source\": 2, \"target\": 1}", "cycle");
    graph_rejects("{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8}, {\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8}", "",
                  "two nodes have the id 1");
    graph_rejects("{\"id\": 1, \"cost_cpu\": \"inf\", \"cost_ram\": 8}", "", "node 1 needs finite non-negative \"cost_cpu\"");
    graph_rejects("{\"id\": 1, \"cost_cpu\": -1, \"cost_ram\": 8}", "", "\"cost_cpu\" and \"cost_ram\"");
    graph_rejects("{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 1e19}", "", "sizes up to 9e18");
    graph_rejects("{\"id\": 1, \"cost_cpu\": 1}", "", "\"cost_ram\"");
    graph_rejects("{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8, \"param_cost\": -4}", "", "node 1 needs");
    graph_rejects("{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8, \"workspace_ram\": \"lots\"}", "", "\"workspace_ram\"");
    graph_rejects("{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8, \"kept_ram\": -1}", "", "\"kept_ram\"");
    graph_rejects("{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8, \"cost_flops\": \"nan\"}", "", "\"cost_flops\"");
    graph_rejects("{\"id\": 1.5, \"cost_cpu\": 1, \"cost_ram\": 8}", "", "node 0 has no integer \"id\"");
    graph_rejects("", "", "not a node-link graph");
}
END_TEST

static void same_graph(const struct fmt_graph *a, const struct fmt_graph *b)
{
    ck_assert_uint_eq(a->n, b->n);
    ck_assert_uint_eq(a->n_edges, b->n_edges);
    ck_assert_uint_eq(a->param_bytes, b->param_bytes);
    for (uint32_t i = 0; i < a->n; i++) {
        ck_assert_str_eq(a->names[i], b->names[i]);
        ck_assert_double_eq_tol(a->cost[i], b->cost[i], 5e-4);   /* written with 3 decimals */
        ck_assert_uint_eq(a->bytes[i], b->bytes[i]);
        ck_assert_uint_eq(a->workspace[i], b->workspace[i]);
        ck_assert_uint_eq(a->kept[i], b->kept[i]);
        ck_assert_uint_eq(a->backward[i], b->backward[i]);
        ck_assert_uint_eq(a->view[i], b->view[i]);
        ck_assert_uint_eq(a->sink[i], b->sink[i]);
        ck_assert_uint_eq(a->pred_at[i + 1], b->pred_at[i + 1]);
    }
    for (uint32_t q = 0; q < a->n_edges; q++)
        ck_assert_uint_eq(a->preds[q], b->preds[q]);
}

/* Checkmate's graphs and a layered one, written in the export layout and
 * read back: the same nodes in the same order, the same edges. */
START_TEST(test_graph_write_reads_back)
{
    static const char *graphs[] = { "vgg16-256-train.json", "random-layered-n100.json" };
    int ran = 0;
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        char path[1024], err[512];
        snprintf(path, sizeof path, "%s/checkmate-graphs/%s", testutil_data_dir(), graphs[i]);
        if (access(path, R_OK))
            continue;
        struct fmt_graph a, b;
        ck_assert_msg(fmt_graph_read(path, &a, err, sizeof err) == 0, "%s", err);
        /* the writer puts all parameters on node 0 only when they are there */
        const char *copy = tmp_path("copy.json");
        FILE *f = fopen(copy, "w");
        ck_assert_int_eq(fmt_graph_write(f, &a, "test", NULL), 0);
        fclose(f);
        ck_assert_msg(fmt_graph_read(copy, &b, err, sizeof err) == 0, "%s", err);
        same_graph(&a, &b);
        ck_assert_str_ne(a.sha256, b.sha256);
        fmt_graph_free(&a);
        fmt_graph_free(&b);
        ran++;
    }
    ck_assert_msg(ran == 2 || access(testutil_data_dir(), R_OK), "Checkmate's graphs are missing");
}
END_TEST

/* ---- schedule ---- */

#define TOY "{\"nodes\": [{\"id\": 0, \"name\": \"a\", \"cost_cpu\": 1, \"cost_ram\": 8}, " \
            "{\"id\": 1, \"name\": \"b\", \"cost_cpu\": 2, \"cost_ram\": 8}], " \
            "\"links\": [{\"source\": 0, \"target\": 1}]}"
#define HEAD "{\"format\": \"dtrexec-schedule\", \"version\": 1, "
#define STEPS "\"steps\": [{\"run\": \"a\"}, {\"run\": \"b\"}, {\"free\": [\"a\"]}]"

static void schedule_rejects(const struct fmt_graph *g, const char *middle, const char *want)
{
    char text[1024], err[512];
    snprintf(text, sizeof text, HEAD "%s" STEPS "}", middle);
    struct schedule s;
    ck_assert_msg(schedule_parse(text, strlen(text), g, &s, err, sizeof err) == -1, "accepted: %s", text);
    ck_assert_msg(strstr(err, want), "error '%s' lacks '%s'", err, want);
    ck_assert_uint_eq(s.n_steps, 0);
}

START_TEST(test_schedule_checks)
{
    char err[512];
    struct fmt_graph g;
    ck_assert_msg(fmt_graph_read(write_tmp("toy.json", TOY), &g, err, sizeof err) == 0, "%s", err);
    schedule_rejects(&g, "\"budget_bytes\": -1, ", "\"budget_bytes\" must be an integer from 0 to 2^62");
    schedule_rejects(&g, "\"budget_bytes\": 1e300, ", "\"budget_bytes\"");
    schedule_rejects(&g, "\"budget_bytes\": 4611686018427387905, ", "\"budget_bytes\"");
    schedule_rejects(&g, "\"budget_bytes\": 10.5, ", "\"budget_bytes\"");
    schedule_rejects(&g, "\"solver\": {\"seconds\": -2}, ", "\"solver\": \"seconds\" must be a finite non-negative");
    schedule_rejects(&g, "\"solver\": {\"time_limit\": \"inf\"}, ", "\"time_limit\" must be a finite");
    schedule_rejects(&g, "\"solver\": {\"gap\": \"big\"}, ", "\"gap\" must be a finite number");
    schedule_rejects(&g, "\"solver\": {\"objective\": 1e999}, ", "\"objective\"");
    schedule_rejects(&g, "\"solver\": {\"name\": 3}, ", "\"name\" must be a string");
    schedule_rejects(&g, "\"solver\": [], ", "\"solver\" must be an object");
    schedule_rejects(&g, "\"graph\": {\"sha256\": \"00\"}, ", "made for another graph");
    schedule_rejects(&g, "\"graph\": {\"file\": 7}, ", "\"graph\" must be");
    const char *bad_step = HEAD "\"steps\": [{\"run\": \"a\"}, {\"run\": \"zz\"}]}";
    struct schedule s;
    ck_assert_int_eq(schedule_parse(bad_step, strlen(bad_step), &g, &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "step 1: runs 'zz', which is no node of toy.json"), "%s", err);
    /* null figures are absent ones (the writer's NaN) */
    const char *ok = HEAD "\"budget_bytes\": null, \"solver\": {\"gap\": null}, " STEPS "}";
    ck_assert_msg(schedule_parse(ok, strlen(ok), &g, &s, err, sizeof err) == 0, "%s", err);
    ck_assert(isnan(s.solver.gap));
    schedule_free(&s);
    fmt_graph_free(&g);
}
END_TEST

/* Written and read back: steps, budget, every solver field; the graph
 * file read before the graph (what `dtrexec --plan` does). */
START_TEST(test_schedule_write_reads_back)
{
    char err[512], file[256];
    struct fmt_graph g;
    ck_assert_msg(fmt_graph_read(write_tmp("toy.json", TOY), &g, err, sizeof err) == 0, "%s", err);
    struct schedule s, t;
    schedule_init(&s);
    ck_assert_int_eq(schedule_push(&s, SCHEDULE_RUN, 0, 0), 0);
    ck_assert_int_eq(schedule_push(&s, SCHEDULE_RUN, 1, 0), 0);
    ck_assert_int_eq(schedule_push(&s, SCHEDULE_FREE, 0, 0), 0);
    ck_assert_int_eq(schedule_push(&s, SCHEDULE_RUN, 0, 1), 0);
    s.budget_bytes = 24;
    snprintf(s.solver.name, sizeof s.solver.name, "checkmate-milp");
    snprintf(s.solver.status, sizeof s.solver.status, "optimal");
    snprintf(s.solver.backend, sizeof s.solver.backend, "highs");
    s.solver.seconds = 0.25;
    s.solver.solve_seconds = 0.125;
    s.solver.objective = 4;
    s.solver.bound = 3.5;
    s.solver.gap = 0.125;
    s.solver.time_limit = 60;
    const char *path = tmp_path("s.json");
    ck_assert_msg(schedule_save(path, &g, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(schedule_read_graph_file(path, file, sizeof file, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(file, "toy.json");
    ck_assert_msg(schedule_load(path, &g, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(t.n_steps, s.n_steps);
    for (uint32_t i = 0; i < s.n_steps; i++) {
        ck_assert_int_eq(t.steps[i].kind, s.steps[i].kind);
        ck_assert_uint_eq(t.steps[i].node, s.steps[i].node);
        ck_assert_int_eq(t.steps[i].recompute, s.steps[i].recompute);
    }
    ck_assert_uint_eq(t.budget_bytes, 24);
    ck_assert_str_eq(t.graph_sha256, g.sha256);
    ck_assert_str_eq(t.solver.name, "checkmate-milp");
    ck_assert_str_eq(t.solver.status, "optimal");
    ck_assert_str_eq(t.solver.backend, "highs");
    ck_assert_double_eq(t.solver.seconds, 0.25);
    ck_assert_double_eq(t.solver.solve_seconds, 0.125);
    ck_assert_double_eq(t.solver.objective, 4);
    ck_assert_double_eq(t.solver.bound, 3.5);
    ck_assert_double_eq(t.solver.gap, 0.125);
    ck_assert_double_eq(t.solver.time_limit, 60);
    schedule_free(&t);
    schedule_free(&s);
    /* a schedule that is not one is refused before any graph is read */
    ck_assert_int_eq(schedule_read_graph_file(write_tmp("x.json", "{\"format\": \"other\"}"), file, sizeof file, err,
                                              sizeof err), -1);
    ck_assert_msg(strstr(err, "x.json: \"format\" must be"), "%s", err);
    fmt_graph_free(&g);
}
END_TEST

/* ---- stats ---- */

/* Everything the writer writes reads back; non-finite figures as null. */
START_TEST(test_stats_write_reads_back)
{
    double secs[] = { 0.5, 0.25, INFINITY }, losses[] = { 2.5, 1.25, 0.75 };
    long long dims[] = { 3, 7, 4, 8, 5, 9 };
    char *names[] = { "seq", "batch" };
    struct fmt_stats s = {
        .peak_bytes = 1ull << 40, .budget_bytes = 1000, .pinned_bytes = 64, .baseline_compute = 1e12,
        .total_compute = 1.5e12, .remat_compute = NAN, .evictions = 3, .window_evictions = 1, .compactions = 2,
        .compaction_bytes = 4096, .remats = 5, .view_remats = 1, .op_calls = 99, .dtr_overhead_seconds = 0.01,
        .compaction_seconds = 0.002, .runs = 3, .step_seconds = secs, .n_dims = 2, .dim_names = names,
        .step_dims = dims, .dim_steps = 3, .train = 1, .losses = losses, .nonfinite_step = 4,
    };
    snprintf(s.device, sizeof s.device, "cpu");
    snprintf(s.heuristic, sizeof s.heuristic, "dtr-eq");
    snprintf(s.dealloc, sizeof s.dealloc, "eager");
    const char *path = tmp_path("stats.json");
    FILE *f = fopen(path, "w");
    ck_assert_int_eq(fmt_stats_write(f, &s), 0);
    fclose(f);
    char err[512];
    struct json_value v;
    ck_assert_msg(json_parse_file(path, &v, err, sizeof err) == 0, "%s", err);   /* JSON: no inf or nan */
    json_free(&v);
    struct fmt_stats t;
    ck_assert_msg(fmt_stats_read(path, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(t.device, "cpu");
    ck_assert_str_eq(t.heuristic, "dtr-eq");
    ck_assert_str_eq(t.dealloc, "eager");
    ck_assert_uint_eq(t.peak_bytes, 1ull << 40);
    ck_assert_uint_eq(t.budget_bytes, 1000);
    ck_assert_double_eq(t.total_compute, 1.5e12);
    ck_assert(isnan(t.remat_compute));
    ck_assert_int_eq(t.op_calls, 99);
    ck_assert_int_eq(t.runs, 3);
    ck_assert_double_eq(t.step_seconds[1], 0.25);
    ck_assert(isnan(t.step_seconds[2]));
    ck_assert_int_eq(t.n_dims, 2);
    ck_assert_str_eq(t.dim_names[1], "batch");
    ck_assert_int_eq(t.step_dims[5], 9);
    ck_assert_int_eq(t.train, 1);
    ck_assert_double_eq(t.losses[2], 0.75);
    ck_assert(isnan(t.losses[3]));   /* the step that stopped the run */
    ck_assert_int_eq(t.nonfinite_step, 4);
    fmt_stats_free(&t);
    /* unbudgeted, inference: heuristic null, no loss */
    s.heuristic[0] = 0;
    s.train = 0;
    s.n_dims = 0;
    f = fopen(path, "w");
    ck_assert_int_eq(fmt_stats_write(f, &s), 0);
    fclose(f);
    ck_assert_msg(fmt_stats_read(path, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(t.heuristic, "");
    ck_assert_int_eq(t.train, 0);
    ck_assert_ptr_null(t.losses);
    fmt_stats_free(&t);
    ck_assert_int_eq(fmt_stats_read(write_tmp("bad.json", "{\"device\": \"cpu\", \"heuristic\": null, "
                                                           "\"peak_bytes\": -5}"), &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "\"peak_bytes\" must be a non-negative integer"), "%s", err);
}
END_TEST

int main(void)
{
    /* made here, so that the forked test processes share it */
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_formats_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    TCase *tc;
    Suite *s = testutil_suite("formats", "formats", 120, &tc);
    tcase_add_test(tc, test_trace_checks_fields);
    tcase_add_test(tc, test_trace_fast_and_general_paths_agree);
    tcase_add_test(tc, test_trace_write_reads_back);
    tcase_add_test(tc, test_graph_checks);
    tcase_add_test(tc, test_graph_write_reads_back);
    tcase_add_test(tc, test_schedule_checks);
    tcase_add_test(tc, test_schedule_write_reads_back);
    tcase_add_test(tc, test_stats_write_reads_back);
    int rc = testutil_run(s);
    testutil_remove_dir(tmpdir);
    return rc;
}
