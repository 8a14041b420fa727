/* tests/test_verify.c — `--verify-remat` as a call hook (runtime/verify.c)
 * and the hooks' `computed` entry (rt_call_computed, runtime/exec.c): a
 * budgeted training step of an MLP under DTR, which must recompute. The
 * `computed` hooks must see every recomputation the core reports; with
 * verification on, an honest step passes, and a recomputation whose bytes a
 * test hook changes (in the slot before the verifier's) must stop the step
 * with exit code 3 and a message naming the value and the operator. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx.h"
#include "runtime/dtrexec.h"
#include "runtime/hooks.h"
#include "runtime/session.h"

#define LAYERS 6
#define WIDTH 128
#define BATCH 256

static char model_path[256];

/* x[BATCH, WIDTH] -> (MatMul W_i, Relu) x LAYERS -> y */
static void save_mlp(const char *path)
{
    struct onnx_node nodes[2 * LAYERS];
    struct onnx_tensor inits[LAYERS];
    char names[4 * LAYERS][32];
    char *node_in[2 * LAYERS][2], *node_out[2 * LAYERS][1];
    uint32_t rng = 12345;
    const char *prev = "x";
    memset(nodes, 0, sizeof nodes);
    memset(inits, 0, sizeof inits);
    for (int l = 0; l < LAYERS; l++) {
        char *w = names[4 * l], *mm = names[4 * l + 1], *h = names[4 * l + 2], *mmo = names[4 * l + 3];
        snprintf(w, 32, "w%d", l);
        snprintf(mm, 32, "mm%d", l);
        snprintf(mmo, 32, "z%d", l);
        snprintf(h, 32, l == LAYERS - 1 ? "y" : "h%d", l);
        float *d = malloc(sizeof(float) * WIDTH * WIDTH);
        ck_assert_ptr_nonnull(d);
        for (int i = 0; i < WIDTH * WIDTH; i++) {
            rng = rng * 1664525u + 1013904223u;
            d[i] = ((float)(rng >> 8) / (float)(1u << 24) - 0.5f) * 0.2f;
        }
        inits[l] = (struct onnx_tensor){ .name = w, .dtype = ONNX_DTYPE_FLOAT, .rank = 2, .dims = { WIDTH, WIDTH },
                                         .data = d, .size_bytes = sizeof(float) * WIDTH * WIDTH };
        node_in[2 * l][0] = (char *)prev;
        node_in[2 * l][1] = w;
        node_out[2 * l][0] = mmo;
        nodes[2 * l] = (struct onnx_node){ .name = mm, .op_type = "MatMul", .domain = "", .n_inputs = 2,
                                           .inputs = node_in[2 * l], .n_outputs = 1, .outputs = node_out[2 * l] };
        node_in[2 * l + 1][0] = mmo;
        node_out[2 * l + 1][0] = h;
        nodes[2 * l + 1] = (struct onnx_node){ .name = h, .op_type = "Relu", .domain = "", .n_inputs = 1,
                                               .inputs = node_in[2 * l + 1], .n_outputs = 1,
                                               .outputs = node_out[2 * l + 1] };
        prev = h;
    }
    struct onnx_value_info in = { .name = "x", .elem_type = ONNX_DTYPE_FLOAT, .rank = 2, .dims = { BATCH, WIDTH } };
    struct onnx_value_info out = { .name = "y", .elem_type = ONNX_DTYPE_FLOAT, .rank = 2, .dims = { BATCH, WIDTH } };
    struct onnx_graph g = { .name = "verify_test", .n_nodes = 2 * LAYERS, .nodes = nodes, .n_initializers = LAYERS,
                            .initializers = inits, .n_inputs = 1, .inputs = &in, .n_outputs = 1, .outputs = &out };
    struct onnx_opset opset = { .domain = "", .version = 13 };
    struct onnx_model m = { .ir_version = 7, .producer_name = "test_verify", .n_opsets = 1, .opsets = &opset,
                            .graph = &g };
    char err[512] = "";
    ck_assert_msg(onnx_model_save(&m, path, err, sizeof err) == 0, "saving %s: %s", path, err);
    for (int l = 0; l < LAYERS; l++)
        free(inits[l].data);
}

static void setup(void)
{
    snprintf(model_path, sizeof model_path, "/tmp/dtrx_test_verify_%d.onnx", (int)getpid());
    save_mlp(model_path);
}

static void teardown(void) { unlink(model_path); }

static struct dtrx_session *open_session(size_t budget, int verify)
{
    struct dtrx_options o;
    dtrx_options_init(&o);
    o.budget_bytes = budget;
    o.verify_remat = verify;
    o.threads = 1;
    struct dtrx_session *s = NULL;
    ck_assert_msg(dtrx_session_create(model_path, &o, &s) == DTRX_OK, "%s", dtrx_last_error());
    ck_assert_msg(dtrx_session_fill_inputs(s) == DTRX_OK, "%s", dtrx_last_error());
    struct dtrx_train_options t;
    dtrx_train_options_init(&t);
    t.lr = 0.01;
    ck_assert_msg(dtrx_session_train_begin(s, &t) == DTRX_OK, "%s", dtrx_last_error());
    return s;
}

/* The test hook: counts executions and recomputations; with `corrupt` set,
 * flips one bit of the first recomputed output before the verifier runs. */
static long long seen_first, seen_recomputed;
static int corrupt;

static enum dtrx_status spy_computed(struct dtrx_session *s, const struct rt_call *c, int recomputed)
{
    if (!recomputed) {
        seen_first++;
        return DTRX_OK;
    }
    seen_recomputed++;
    if (corrupt && c->n_out > 0 && c->out[0] >= 0 && !c->def->alias) {
        unsigned char *p = s->values[c->out[0]]->t.data;
        if (p && tensor_size_bytes(&s->values[c->out[0]]->t) > 0)
            p[0] ^= 1;
        corrupt = 0;
    }
    return DTRX_OK;
}

static const struct rt_call_hook spy_hook = { .computed = spy_computed };

static size_t unbudgeted_peak(void)
{
    struct dtrx_session *s = open_session(0, 0);
    double loss;
    ck_assert_msg(dtrx_session_train_step(s, &loss) == DTRX_OK, "%s", dtrx_last_error());
    struct dtrx_stats st;
    dtrx_session_stats(s, &st);
    dtrx_session_destroy(s);
    ck_assert_uint_gt(st.peak_bytes, 0);
    return st.peak_bytes;
}

/* The budgeted step, with the spy in the trace slot (no trace is open). */
static enum dtrx_status budgeted_step(size_t budget, int verify, struct dtrx_stats *st, char *msg, size_t n)
{
    struct dtrx_session *s = open_session(budget, verify);
    ck_assert_ptr_null(s->hooks[RT_HOOK_TRACE]);
    ck_assert_int_lt(RT_HOOK_TRACE, RT_HOOK_VERIFY);
    s->hooks[RT_HOOK_TRACE] = &spy_hook;
    seen_first = seen_recomputed = 0;
    double loss;
    enum dtrx_status rc = dtrx_session_train_step(s, &loss);
    snprintf(msg, n, "%s", rc ? dtrx_last_error() : "");
    dtrx_session_stats(s, st);
    dtrx_session_destroy(s);
    return rc;
}

START_TEST(computed_sees_every_recomputation)
{
    size_t budget = unbudgeted_peak() * 6 / 10;
    struct dtrx_stats st;
    char msg[1024];
    corrupt = 0;
    ck_assert_msg(budgeted_step(budget, 0, &st, msg, sizeof msg) == DTRX_OK, "%s", msg);
    ck_assert_msg(st.remats > 0, "the step at %zu bytes recomputed nothing: the test needs recomputations", budget);
    ck_assert_uint_le(st.peak_bytes, budget);
    ck_assert_int_eq(seen_recomputed, st.remats);
    ck_assert_int_gt(seen_first, 2 * LAYERS);
}
END_TEST

START_TEST(honest_recomputations_pass)
{
    size_t budget = unbudgeted_peak() * 6 / 10;
    struct dtrx_stats st;
    char msg[1024];
    corrupt = 0;
    ck_assert_msg(budgeted_step(budget, 1, &st, msg, sizeof msg) == DTRX_OK, "%s", msg);
    ck_assert_int_gt(st.remats, 0);
    ck_assert_int_eq(seen_recomputed, st.remats);
}
END_TEST

START_TEST(a_changed_recomputation_is_caught)
{
    size_t budget = unbudgeted_peak() * 6 / 10;
    struct dtrx_stats st;
    char msg[1024];
    corrupt = 1;
    enum dtrx_status rc = budgeted_step(budget, 1, &st, msg, sizeof msg);
    ck_assert_int_eq(corrupt, 0);   /* the spy did change a recomputation */
    ck_assert_int_eq(rc, DTRX_ERR_INTERNAL);
    ck_assert_msg(strstr(msg, "gave different bytes than its first execution"), "message: %s", msg);
    ck_assert_msg(strstr(msg, "MatMul") || strstr(msg, "Relu"), "the message names no operator: %s", msg);
    /* without verification the same change goes unnoticed: the check is the hook's */
    corrupt = 1;
    ck_assert_msg(budgeted_step(budget, 0, &st, msg, sizeof msg) == DTRX_OK, "%s", msg);
    ck_assert_int_eq(corrupt, 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("verify");
    TCase *tc = tcase_create("hook");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, computed_sees_every_recomputation);
    tcase_add_test(tc, honest_recomputations_pass);
    tcase_add_test(tc, a_changed_recomputation_is_caught);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
