/* cli/cmd_check.c — `dtrexec check DIR…`: runs ONNX backend test folders
 * (model.onnx and test_data_set_N folders of input_N.pb, output_N.pb). Inputs bind by
 * position to the graph inputs; outputs compare by position with
 * |got - expected| <= atol + rtol * |expected| (NaN matches NaN); strings by
 * their bytes. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "onnx/onnx.h"
#include "runtime/dtrexec.h"

struct check_opts {
    double rtol, atol;
    int quiet;
    const char *device;
};

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static double half_to_double(uint16_t h, int bf16)
{
    if (bf16) {
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp(mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp(mant + 1024, exp - 25);
    return sign ? -v : v;
}

static double element(const struct dtrx_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case ONNX_DTYPE_FLOAT: return ((const float *)t->data)[i];
    case ONNX_DTYPE_DOUBLE: return ((const double *)t->data)[i];
    case ONNX_DTYPE_FLOAT16: return half_to_double(((const uint16_t *)t->data)[i], 0);
    case ONNX_DTYPE_BFLOAT16: return half_to_double(((const uint16_t *)t->data)[i], 1);
    case ONNX_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case ONNX_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    case ONNX_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case ONNX_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    case ONNX_DTYPE_UINT8:
    case ONNX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case ONNX_DTYPE_UINT16: return ((const uint16_t *)t->data)[i];
    case ONNX_DTYPE_UINT32: return ((const uint32_t *)t->data)[i];
    case ONNX_DTYPE_UINT64: return (double)((const uint64_t *)t->data)[i];
    default: return NAN;
    }
}

static int is_float_type(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE || dtype == ONNX_DTYPE_FLOAT16 ||
           dtype == ONNX_DTYPE_BFLOAT16;
}

/* STRING elements compare by their bytes. */
static int compare_strings(const struct onnx_string *got, const struct onnx_string *want, int64_t n, char *msg,
                           size_t size)
{
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (got[i].len != want[i].len || (want[i].len && memcmp(got[i].data, want[i].data, want[i].len))) {
            bad++;
            if (first < 0)
                first = i;
        }
    if (!bad)
        return 0;
    snprintf(msg, size, "%lld of %lld strings differ; first at index %lld: got \"%.*s\", expected \"%.*s\"",
             (long long)bad, (long long)n, (long long)first, (int)(got[first].len < 80 ? got[first].len : 80),
             got[first].data ? got[first].data : "", (int)(want[first].len < 80 ? want[first].len : 80),
             want[first].data ? want[first].data : "");
    return -1;
}

/* 0 when `got` matches `want`; otherwise a reason in msg. */
static int compare(const struct dtrx_tensor *got, const struct onnx_tensor *want,
                   const struct check_opts *o, char *msg, size_t size)
{
    if (got->dtype != want->dtype) {
        snprintf(msg, size, "type %s, expected %s", onnx_dtype_name(got->dtype), onnx_dtype_name(want->dtype));
        return -1;
    }
    int same = got->rank == want->rank;
    for (int i = 0; same && i < got->rank; i++)
        same = got->dims[i] == want->dims[i];
    if (!same) {
        int used = snprintf(msg, size, "shape [");
        for (int i = 0; i < got->rank && used < (int)size; i++)
            used += snprintf(msg + used, size - (size_t)used, i ? ",%lld" : "%lld", (long long)got->dims[i]);
        used += snprintf(msg + used, size - (size_t)used, "], expected [");
        for (int i = 0; i < want->rank && used < (int)size; i++)
            used += snprintf(msg + used, size - (size_t)used, i ? ",%lld" : "%lld", (long long)want->dims[i]);
        if (used < (int)size)
            snprintf(msg + used, size - (size_t)used, "]");
        return -1;
    }
    struct dtrx_tensor w = { .dtype = want->dtype, .rank = want->rank, .data = want->data };
    int64_t n = onnx_tensor_numel(want);
    if (want->dtype == ONNX_DTYPE_STRING)
        return compare_strings(got->data, want->data, n, msg, size);
    int exact = !is_float_type(want->dtype);
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        if (exact) {
            size_t es = onnx_dtype_size(want->dtype);
            if (!memcmp((const char *)got->data + i * es, (const char *)want->data + i * es, es))
                continue;
        } else {
            double a = element(got, i), b = element(&w, i);
            if ((isnan(a) && isnan(b)) || a == b)
                continue;
            double diff = fabs(a - b);
            if (diff <= o->atol + o->rtol * fabs(b))
                continue;
            if (diff > worst || isnan(diff))
                worst = diff;
        }
        if (first < 0)
            first = i;
        bad++;
    }
    if (!bad)
        return 0;
    snprintf(msg, size, "%lld of %lld elements differ; first at index %lld: got %.9g, expected %.9g",
             (long long)bad, (long long)n, (long long)first, element(got, first), element(&w, first));
    return -1;
}

/* A borrowed view of a loaded value as the API's value (free with view_free). */
static int value_view(const struct onnx_value *v, struct dtrx_value *out)
{
    memset(out, 0, sizeof *out);
    out->kind = v->kind;
    out->tensor = (struct dtrx_tensor){ .dtype = v->tensor.dtype, .rank = v->tensor.rank, .data = v->tensor.data };
    memcpy(out->tensor.dims, v->tensor.dims, sizeof out->tensor.dims);
    if (!v->n_elems)
        return 0;
    if (!(out->elems = calloc((size_t)v->n_elems, sizeof *out->elems)))
        return -1;
    out->n_elems = v->n_elems;
    for (int i = 0; i < v->n_elems; i++)
        if (value_view(&v->elems[i], &out->elems[i]))
            return -1;
    return 0;
}

static void view_free(struct dtrx_value *v)
{
    for (int i = 0; i < v->n_elems; i++)
        view_free(&v->elems[i]);
    free(v->elems);
}

/* compare() over sequences and optionals, element by element. */
static int compare_value(const struct dtrx_value *got, const struct onnx_value *want, const struct check_opts *o,
                         char *msg, size_t size)
{
    static const char *const kinds[] = { "tensor", "sequence", "optional", "value" };
    if (got->kind != want->kind) {
        snprintf(msg, size, "a %s, expected a %s", kinds[got->kind & 3], kinds[want->kind & 3]);
        return -1;
    }
    if (got->kind == DTRX_VALUE_TENSOR)
        return compare(&got->tensor, &want->tensor, o, msg, size);
    if (got->n_elems != want->n_elems) {
        snprintf(msg, size, "%s of %d values, expected %d", kinds[got->kind & 3], got->n_elems, want->n_elems);
        return -1;
    }
    for (int i = 0; i < got->n_elems; i++) {
        char why[400];
        if (compare_value(&got->elems[i], &want->elems[i], o, why, sizeof why)) {
            snprintf(msg, size, "element %d: %s", i, why);
            return -1;
        }
    }
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the test_data_set_* folders of dir (caller frees). */
static int list_data_sets(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_data_set_", 14))
            continue;
        char **grown = realloc(names, sizeof *names * (size_t)(n + 1));
        if (!grown)
            break;
        names = grown;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    *out = names;
    return n;
}

static int run_data_set(struct dtrx_session *s, const char *set_dir, const struct check_opts *o,
                        char *msg, size_t size)
{
    char path[4096], err[512];
    for (int i = 0;; i++) {
        snprintf(path, sizeof path, "%s/input_%d.pb", set_dir, i);
        if (!file_exists(path))
            break;
        const struct dtrx_value_desc *d = dtrx_session_input(s, i);
        struct onnx_value t;
        if (onnx_value_load(path, d ? d->kind : DTRX_VALUE_TENSOR, &t, err, sizeof err)) {
            snprintf(msg, size, "%s", err);
            return DTRX_ERR_INPUT;
        }
        struct dtrx_value in;
        enum dtrx_status st = value_view(&t, &in) ? DTRX_ERR_INTERNAL : dtrx_session_set_input_value(s, i, &in);
        view_free(&in);
        onnx_value_clear(&t);
        if (st) {
            snprintf(msg, size, "input_%d.pb: %s", i, dtrx_last_error());
            return st;
        }
    }
    enum dtrx_status st = dtrx_session_run(s);
    if (st) {
        snprintf(msg, size, "%s", dtrx_last_error());
        return st;
    }
    for (int i = 0;; i++) {
        snprintf(path, sizeof path, "%s/output_%d.pb", set_dir, i);
        if (!file_exists(path)) {
            if (i < dtrx_session_output_count(s)) {
                snprintf(msg, size, "missing %s", path);
                return DTRX_ERR_INPUT;
            }
            break;
        }
        const struct dtrx_value_desc *d = dtrx_session_output(s, i);
        struct onnx_value want;
        if (onnx_value_load(path, d ? d->kind : DTRX_VALUE_TENSOR, &want, err, sizeof err)) {
            snprintf(msg, size, "%s", err);
            return DTRX_ERR_INPUT;
        }
        struct dtrx_value got;
        int bad = dtrx_session_get_output_value(s, i, &got);
        char why[512] = "";
        if (bad)
            snprintf(why, sizeof why, "%s", dtrx_last_error());
        else
            bad = compare_value(&got, &want, o, why, sizeof why);
        dtrx_value_clear(&got);
        onnx_value_clear(&want);
        if (bad) {
            snprintf(msg, size, "output %d: %s", i, why);
            return DTRX_ERR_INPUT;
        }
    }
    return DTRX_OK;
}

static int check_dir(const char *dir, const struct check_opts *o)
{
    char model[4096], msg[2048] = "";
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    struct dtrx_options opts;
    dtrx_options_init(&opts);
    opts.device = o->device;
    struct dtrx_session *s = NULL;
    enum dtrx_status st = dtrx_session_create(model, &opts, &s);
    if (st)
        snprintf(msg, sizeof msg, "%s", dtrx_last_error());
    char **sets = NULL;
    int n_sets = st ? 0 : list_data_sets(dir, &sets);
    if (!st && n_sets <= 0) {
        snprintf(msg, sizeof msg, "no test_data_set_* folder in %s", dir);
        st = DTRX_ERR_INPUT;
    }
    for (int i = 0; i < n_sets && !st; i++) {
        char set_dir[4096];
        snprintf(set_dir, sizeof set_dir, "%s/%s", dir, sets[i]);
        st = run_data_set(s, set_dir, o, msg, sizeof msg);
    }
    for (int i = 0; i < n_sets; i++)
        free(sets[i]);
    free(sets);
    dtrx_session_destroy(s);
    if (st)
        printf("FAIL %s: %s\n", dir, msg);
    else if (!o->quiet)
        printf("PASS %s\n", dir);
    return st ? -1 : 0;
}

#define CHECK_USAGE "usage: dtrexec check [--rtol R] [--atol A] [--device cpu|cuda] [--quiet] DIR...\n"

int cmd_check(int argc, char **argv)
{
    struct check_opts o = { .rtol = 1e-3, .atol = 1e-7, .device = "cpu" };
    int n_dirs = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int takes_value = !strcmp(a, "--rtol") || !strcmp(a, "--atol") || !strcmp(a, "--device");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(CHECK_USAGE, stdout);
            return CLI_EXIT_OK;
        } else if (takes_value && i + 1 >= argc) {
            fprintf(stderr, "dtrexec check: %s needs a value\n" CHECK_USAGE, a);
            return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--rtol")) {
            if (cli_parse_number("dtrexec check", "--rtol", argv[++i], 0, 1e6, &o.rtol))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--atol")) {
            if (cli_parse_number("dtrexec check", "--atol", argv[++i], 0, 1e6, &o.atol))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--device")) {
            o.device = argv[++i];
        } else if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "dtrexec check: unknown option '%s'\n" CHECK_USAGE, a);
            return CLI_EXIT_USAGE;
        }
    }
    /* Once, rather than as the failure of every folder. */
    if (dtrx_device_check(o.device)) {
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
        return CLI_EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rtol") || !strcmp(argv[i], "--atol") || !strcmp(argv[i], "--device")) {
            i++;
            continue;
        }
        if (argv[i][0] == '-')
            continue;
        n_dirs++;
        failed += check_dir(argv[i], &o) != 0;
    }
    if (!n_dirs) {
        fprintf(stderr, "dtrexec check: no test folder given\n" CHECK_USAGE);
        return CLI_EXIT_USAGE;
    }
    printf("%d passed, %d failed\n", n_dirs - failed, failed);
    return failed ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
