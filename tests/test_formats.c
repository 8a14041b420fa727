/* The interchange formats (dtr/format/): each reader's checks, with the
 * field named in the message; each writer read back to the same in-memory
 * form; the trace reader's fast path against the general JSON parser. */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtr/format/graph.h"
#include "dtr/format/json.h"
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
                       "{\"ARGS\":[\"a\",\"w\"],\"INSTRUCTION\":\"MUTATE\",\"MUTATE\":[1,0],\"NAME\":\"add_\",\"TIME\":\"3\"}\n"
                       "{\"DST\":\"c\",\"INSTRUCTION\":\"COPY\",\"SRC\":\"a\"}\n"
                       "{\"DST\":\"c\",\"INSTRUCTION\":\"COPY_FROM\",\"SRC\":\"b\"}\n"
                       "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"c\"}\n";
    char err[512];
    struct fmt_trace a, b;
    ck_assert_msg(fmt_trace_parse(text, strlen(text), "k", &a, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(a.n_recs, 9);
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
    int rc = testutil_run(s);
    testutil_remove_dir(tmpdir);
    return rc;
}
