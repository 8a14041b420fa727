/* tests/test_ops_strings.c — the string operators' kernels (ops/string*.c,
 * ops/regex.c) called directly: UTF-8 case mapping edge cases; every
 * string operator through op_host_bridge on a fake device that keeps each
 * byte inverted, which must give the host kernel's handles bit for bit (the
 * device holds only the 16-byte handles; the bytes stay on the host); a
 * kernel without a string heap fails with a message instead of writing
 * dangling handles. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/string-impl.h"

/* ---- a tiny interning heap, as the runtime's (runtime/strings.c) --------- */

static char *heap[256];
static size_t heap_len[256];
static int heap_n;

static const char *intern(void *ctx, const char *bytes, size_t len)
{
    (void)ctx;
    for (int i = 0; i < heap_n; i++)
        if (heap_len[i] == len && !memcmp(heap[i], bytes, len))
            return heap[i];
    if (heap_n == 256)
        return NULL;
    heap[heap_n] = malloc(len + 1);
    memcpy(heap[heap_n], bytes, len);
    heap_len[heap_n] = len;
    return heap[heap_n++];
}

static void heap_clear(void)
{
    for (int i = 0; i < heap_n; i++)
        free(heap[i]);
    heap_n = 0;
}

/* ---- the fake device of tests/test_ops_host_bridge.c ---------------------- */

static void invert(void *dst, const void *src, size_t bytes)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < bytes; i++)
        d[i] = (unsigned char)~s[i];
}

static int fake_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    invert(dst, src, bytes);
    return 0;
}

static int fake_sync(void *ctx)
{
    (void)ctx;
    return 0;
}

static const struct backend fake_device = {
    .kind = BACKEND_CUDA, .name = "fake", .copy_to_device = fake_copy, .copy_to_host = fake_copy,
    .synchronize = fake_sync,
};

static struct tensor strs(struct onnx_string *h, const char *const *s, int n)
{
    for (int i = 0; i < n; i++)
        h[i] = (struct onnx_string){ s[i], strlen(s[i]) };
    return (struct tensor){ .dtype = ONNX_DTYPE_STRING, .rank = 1, .dims = { n }, .data = h };
}

/* Runs `name` on the host and through the bridge on the fake device; the
 * outputs must agree bit for bit. Returns output 0 of the host run in *out
 * (data malloc'ed, the caller frees). */
static void run_both(const char *domain, const char *name, int opset, struct onnx_attr *attrs, int n_attrs, int n_in,
                     struct tensor *const *inputs, int n_out, struct tensor *out)
{
    static char *names[4] = { "a", "b", "c", "d" };
    struct onnx_node node = { .name = "strings_node", .op_type = (char *)name, .domain = (char *)domain,
                              .n_inputs = n_in, .inputs = names, .n_outputs = n_out, .outputs = names,
                              .n_attrs = n_attrs, .attrs = attrs };
    int version = 0;
    const struct op_def *def = op_registry_find(domain, name, opset, &version);
    ck_assert_msg(def != NULL, "%s is not registered", name);
    char err[256] = "";
    void *params = NULL;
    ck_assert_msg(!def->parse || !def->parse(&node, version, &params, err, sizeof err), "parse: %s", err);
    struct tensor host_out[2], dev_in[2], dev_out[2];
    const struct tensor *in_ptr[2], *dev_in_ptr[2];
    struct tensor *out_ptr[2] = { &host_out[0], &host_out[1] }, *dev_out_ptr[2] = { &dev_out[0], &dev_out[1] };
    for (int i = 0; i < n_in; i++) {
        in_ptr[i] = inputs[i];
        dev_in[i] = *inputs[i];
        size_t bytes = tensor_size_bytes(inputs[i]);
        dev_in[i].data = malloc(bytes + 1);
        invert(dev_in[i].data, inputs[i]->data, bytes);
        /* host_inputs reach a device kernel as host copies (runtime/device.c) */
        dev_in_ptr[i] = def->host_inputs >> i & 1 ? inputs[i] : &dev_in[i];
    }
    struct op_env env = { .backend = &backend_cpu, .string_intern = intern, .err = err, .err_size = sizeof err };
    struct op_call c = { .def = def, .version = version, .params = params, .node_name = "strings_node",
                         .n_in = n_in, .in = in_ptr, .n_out = n_out, .out = out_ptr, .env = &env };
    ck_assert_msg(def->infer(&c) == 0, "infer: %s", err);
    for (int k = 0; k < n_out; k++) {
        dev_out[k] = host_out[k];
        host_out[k].data = calloc(1, tensor_size_bytes(&host_out[k]) + 1);
        dev_out[k].data = calloc(1, tensor_size_bytes(&dev_out[k]) + 1);
    }
    ck_assert_msg(def->kernel[BACKEND_CPU](&c) == 0, "cpu kernel: %s", err);
    struct op_env dev_env = env;
    dev_env.backend = &fake_device;
    struct op_call d = c;
    d.in = dev_in_ptr;
    d.out = dev_out_ptr;
    d.env = &dev_env;
    /* Equal's device kernel is the CUDA comparison, which bridges strings */
    ck_assert_msg(def->kernel[BACKEND_CUDA] == op_host_bridge || !strcmp(name, "Equal"), "%s has no bridge kernel",
                  name);
    ck_assert_msg(op_host_bridge(&d) == 0, "bridge: %s", err);
    for (int k = 0; k < n_out; k++) {
        size_t bytes = tensor_size_bytes(&host_out[k]);
        unsigned char *back = malloc(bytes + 1);
        invert(back, dev_out[k].data, bytes);
        ck_assert_msg(!memcmp(back, host_out[k].data, bytes), "%s: output %d differs from the host's", name, k);
        free(back);
        free(dev_out[k].data);
        if (k)
            free(host_out[k].data);
    }
    *out = host_out[0];
    for (int i = 0; i < n_in; i++)
        free(dev_in[i].data);
    if (params)
        (def->params_free ? def->params_free : free)(params);
}

static void assert_strings(const struct tensor *t, const char *const *want, int n)
{
    ck_assert_int_eq(t->dtype, ONNX_DTYPE_STRING);
    ck_assert_int_eq(tensor_numel(t), n);
    for (int i = 0; i < n; i++) {
        const struct onnx_string *s = op_string_at(t, i);
        ck_assert_msg(s->len == strlen(want[i]) && !memcmp(s->data, want[i], s->len), "element %d: '%.*s', want '%s'",
                      i, (int)s->len, s->data, want[i]);
    }
}

START_TEST(test_utf8_case)
{
    static const struct { const char *in, *upper, *lower; } cases[] = {
        { "abcXYZ 09", "ABCXYZ 09", "abcxyz 09" },
        { "\xc3\xa9t\xc3\xa9 \xc3\xbf", "\xc3\x89T\xc3\x89 \xc5\xb8", "\xc3\xa9t\xc3\xa9 \xc3\xbf" },   /* été ÿ / ÉTÉ Ÿ */
        { "\xcf\x83\xcf\x82", "\xce\xa3\xce\xa3", "\xcf\x83\xcf\x82" },                              /* σς -> ΣΣ */
        { "\xd0\x96\xd1\x91", "\xd0\x96\xd0\x81", "\xd0\xb6\xd1\x91" },                              /* Жё */
        { "\xc4\xb1\xc4\xb0", "I\xc4\xb0", "\xc4\xb1i" },                                          /* ıİ */
        { "\xc3\x9f", "\xc3\x9f", "\xc3\x9f" },                                                    /* ß stays */
        { "\xf0\x9f\x98\x80x", "\xf0\x9f\x98\x80X", "\xf0\x9f\x98\x80x" },                          /* an emoji */
        { "a\xff\xc3(b", "A\xff\xc3(B", "a\xff\xc3(b" },                                           /* invalid bytes */
        { "\xe0\x80\x80q", "\xe0\x80\x80Q", "\xe0\x80\x80q" },                                     /* overlong */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct onnx_string s = { cases[i].in, strlen(cases[i].in) };
        char buf[64];
        size_t n = op_utf8_case(&s, 1, buf);
        ck_assert_msg(n == strlen(cases[i].upper) && !memcmp(buf, cases[i].upper, n), "upper of case %zu", i);
        n = op_utf8_case(&s, 0, buf);
        ck_assert_msg(n == strlen(cases[i].lower) && !memcmp(buf, cases[i].lower, n), "lower of case %zu", i);
    }
}
END_TEST

START_TEST(test_bridge_string_ops)
{
    struct onnx_string ha[3], hb[1], hc[3];
    const char *a[3] = { "ab", "", "x y" }, *b[1] = { "-s" }, *w[3] = { "The", "cat", "THE" };
    struct tensor ta = strs(ha, a, 3), tb = strs(hb, b, 1), tw = strs(hc, w, 3), y;
    struct tensor *ins[2] = { &ta, &tb };

    run_both("", "StringConcat", 20, NULL, 0, 2, ins, 1, &y);
    assert_strings(&y, (const char *[]){ "ab-s", "-s", "x y-s" }, 3);
    /* the same contents were interned once: the handles of a rerun are equal */
    struct tensor y2;
    run_both("", "StringConcat", 20, NULL, 0, 2, ins, 1, &y2);
    ck_assert(!memcmp(y.data, y2.data, tensor_size_bytes(&y)));
    free(y.data);
    free(y2.data);

    struct onnx_attr split_attrs[1] = { { .name = "delimiter", .type = ONNX_ATTR_STRING, .s = " ", .s_len = 1 } };
    run_both("", "StringSplit", 20, split_attrs, 1, 1, ins, 2, &y);
    ck_assert_int_eq(y.rank, 2);
    assert_strings(&y, (const char *[]){ "ab", "", "", "", "x", "y" }, 6);
    free(y.data);

    char *stops[1] = { "the" };
    struct onnx_attr norm_attrs[2] = { { .name = "case_change_action", .type = ONNX_ATTR_STRING, .s = "UPPER", .s_len = 5 },
                                       { .name = "stopwords", .type = ONNX_ATTR_STRINGS, .n = 1, .strings = stops } };
    struct tensor *wins[1] = { &tw };
    run_both("", "StringNormalizer", 10, norm_attrs, 2, 1, wins, 1, &y);
    assert_strings(&y, (const char *[]){ "CAT" }, 1);
    free(y.data);

    struct onnx_attr re_attrs[1] = { { .name = "pattern", .type = ONNX_ATTR_STRING, .s = "[a-z]*( \\w)?", .s_len = 12 } };
    run_both("", "RegexFullMatch", 20, re_attrs, 1, 1, ins, 1, &y);
    ck_assert_int_eq(y.dtype, ONNX_DTYPE_BOOL);
    ck_assert_int_eq(((uint8_t *)y.data)[0], 1);
    ck_assert_int_eq(((uint8_t *)y.data)[1], 1);
    ck_assert_int_eq(((uint8_t *)y.data)[2], 1);
    free(y.data);

    struct onnx_string hs[1];
    struct tensor ts = strs(hs, (const char *[]){ "" }, 1);
    struct tensor *eq_ins[2] = { &ta, &ts };
    run_both("", "Equal", 19, NULL, 0, 2, eq_ins, 1, &y);
    ck_assert_int_eq(((uint8_t *)y.data)[0], 0);
    ck_assert_int_eq(((uint8_t *)y.data)[1], 1);
    ck_assert_int_eq(((uint8_t *)y.data)[2], 0);
    free(y.data);
    heap_clear();
}
END_TEST

START_TEST(test_no_string_heap)
{
    struct onnx_string ha[1];
    struct tensor ta = strs(ha, (const char *[]){ "q" }, 1), y;
    const struct tensor *in[2] = { &ta, &ta };
    struct tensor *out[1] = { &y };
    int version = 0;
    const struct op_def *def = op_registry_find("", "StringConcat", 20, &version);
    char err[256] = "";
    struct op_env env = { .backend = &backend_cpu, .err = err, .err_size = sizeof err };
    struct op_call c = { .def = def, .version = version, .node_name = "n", .n_in = 2, .in = in, .n_out = 1,
                         .out = out, .env = &env };
    ck_assert_int_eq(def->infer(&c), 0);
    struct onnx_string slot = { NULL, 0 };
    y.data = &slot;
    ck_assert_int_eq(def->kernel[BACKEND_CPU](&c), -1);
    ck_assert_msg(strstr(err, "no string heap"), "message: %s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("strings");
    TCase *tc = tcase_create("strings");
    tcase_add_test(tc, test_utf8_case);
    tcase_add_test(tc, test_bridge_string_ops);
    tcase_add_test(tc, test_no_string_heap);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
