/* cli/cmd_check.c — `dtrexec check DIR…`: runs ONNX backend test folders
 * (model.onnx and test_data_set_N folders of input_N.pb, output_N.pb). Inputs bind by
 * position to the graph inputs; outputs compare by position with
 * |got - expected| <= atol + rtol * |expected| (NaN matches NaN). */
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
        struct onnx_tensor t;
        if (onnx_tensor_load(path, &t, err, sizeof err)) {
            snprintf(msg, size, "%s", err);
            return DTRX_ERR_INPUT;
        }
        struct dtrx_tensor in = { .dtype = t.dtype, .rank = t.rank, .data = t.data };
        memcpy(in.dims, t.dims, sizeof in.dims);
        enum dtrx_status st = dtrx_session_set_input(s, i, &in);
        onnx_tensor_clear(&t);
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
        struct onnx_tensor want;
        if (onnx_tensor_load(path, &want, err, sizeof err)) {
            snprintf(msg, size, "%s", err);
            return DTRX_ERR_INPUT;
        }
        struct dtrx_tensor got;
        int bad = dtrx_session_get_output(s, i, &got);
        char why[512] = "";
        if (bad)
            snprintf(why, sizeof why, "%s", dtrx_last_error());
        else
            bad = compare(&got, &want, o, why, sizeof why);
        onnx_tensor_clear(&want);
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

int cmd_check(int argc, char **argv)
{
    struct check_opts o = { .rtol = 1e-3, .atol = 1e-7 };
    int n_dirs = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rtol") && i + 1 < argc)
            o.rtol = atof(argv[++i]);
        else if (!strcmp(argv[i], "--atol") && i + 1 < argc)
            o.atol = atof(argv[++i]);
        else if (!strcmp(argv[i], "--quiet"))
            o.quiet = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: dtrexec check [--rtol R] [--atol A] [--quiet] DIR...\n");
            return CLI_EXIT_USAGE;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rtol") || !strcmp(argv[i], "--atol")) {
            i++;
            continue;
        }
        if (argv[i][0] == '-')
            continue;
        n_dirs++;
        failed += check_dir(argv[i], &o) != 0;
    }
    if (!n_dirs) {
        fprintf(stderr, "usage: dtrexec check [--rtol R] [--atol A] [--quiet] DIR...\n");
        return CLI_EXIT_USAGE;
    }
    printf("%d passed, %d failed\n", n_dirs - failed, failed);
    return failed ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
