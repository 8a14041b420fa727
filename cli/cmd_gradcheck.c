/* cli/cmd_gradcheck.c — `dtrexec gradcheck MODEL.onnx`: compares the
 * generated backward pass with central finite differences. The loss is
 * L = sum(w * y) over the last floating-point output with fixed random w;
 * analytic gradients come from dtrx_session_backward, numeric ones from
 * (L(x + eps) - L(x - eps)) / 2 eps with L accumulated in double on the
 * host, for every float initializer and input (a sample of elements each).
 * A tensor the backward pass gives no gradient counts as a zero gradient, so
 * an emitter that forgets an input fails wherever the loss depends on it. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "onnx/onnx.h"
#include "runtime/dtrexec.h"

struct gradcheck_opts {
    double eps, rtol, atol;
    int max_elems;
    unsigned long long seed;
    const char *no_grad;           /* comma-separated names that are not differentiable */
    const char *device;
};

#define GRADCHECK_USAGE                                                                                     \
    "usage: dtrexec gradcheck MODEL.onnx [--eps E] [--rtol R] [--atol A] [--max-elems N] [--seed N]\n"    \
    "                         [--no-grad NAME,...] [--dim NAME=N]... [--device cpu|cuda]\n"
#define GRADCHECK_MAX_DIMS 64

static int gradcheck_model(const char *model, const struct gradcheck_opts *op, const char *const *dim_names,
                           const long long *dim_values, int n_dims);

static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && !strncmp(p, name, n))
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static double element(const struct dtrx_tensor *t, int64_t i)
{
    return t->dtype == ONNX_DTYPE_DOUBLE ? ((double *)t->data)[i] : ((float *)t->data)[i];
}

static void set_element(struct dtrx_tensor *t, int64_t i, double v)
{
    if (t->dtype == ONNX_DTYPE_DOUBLE)
        ((double *)t->data)[i] = v;
    else
        ((float *)t->data)[i] = (float)v;
}

static int is_float(int dtype) { return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE; }

/* Index of the output the weighted-sum loss uses: the last float one. */
static int loss_output(struct dtrx_session *s)
{
    int y = -1;
    for (int i = 0; i < dtrx_session_output_count(s); i++) {
        struct dtrx_tensor t;
        if (!dtrx_session_get_output(s, i, &t) && is_float(t.dtype))
            y = i;
    }
    return y;
}

static int weighted_loss(struct dtrx_session *s, const struct dtrx_tensor *w, double *loss)
{
    if (dtrx_session_run(s))
        return -1;
    struct dtrx_tensor y;
    if (dtrx_session_get_output(s, loss_output(s), &y))
        return -1;
    double sum = 0;
    for (int64_t i = 0; i < dtrx_tensor_numel(&y); i++)
        sum += element(&y, i) * element(w, i);
    *loss = sum;
    return 0;
}

static int check_tensor(struct dtrx_session *s, const char *name, const struct dtrx_tensor *w,
                        const struct gradcheck_opts *o, int *checked)
{
    struct dtrx_tensor x, g;
    if (dtrx_session_tensor(s, name, &x) || !is_float(x.dtype) || listed(o->no_grad, name))
        return 0;
    int has_grad = !dtrx_session_get_grad(s, name, &g);
    int64_t n = dtrx_tensor_numel(&x);
    /* Copy the analytic gradient: the forward runs below replace it. */
    double *analytic = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!analytic)
        return -1;
    for (int64_t i = 0; i < n; i++)
        analytic[i] = has_grad ? element(&g, i) : 0;
    int64_t stride = n > o->max_elems ? (n + o->max_elems - 1) / o->max_elems : 1;
    int bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i += stride) {
        double x0 = element(&x, i), lp, lm;
        set_element(&x, i, x0 + o->eps);
        int rc = weighted_loss(s, w, &lp);
        set_element(&x, i, x0 - o->eps);
        rc |= weighted_loss(s, w, &lm);
        set_element(&x, i, x0);
        if (rc) {
            fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
            free(analytic);
            return -1;
        }
        double numeric = (lp - lm) / (2 * o->eps), a = analytic[i];
        double err = fabs(a - numeric), tol = o->atol + o->rtol * fmax(fabs(a), fabs(numeric));
        if (err > worst)
            worst = err;
        if (!(err <= tol)) {
            if (bad < 5)
                printf("  %s[%lld]: analytic %.8g, numeric %.8g (|diff| %.3g > tol %.3g)\n", name,
                       (long long)i, a, numeric, err, tol);
            bad++;
        }
        (*checked)++;
    }
    printf("%s %s: %lld elements, max |diff| %.3g%s\n", bad ? "FAIL" : "ok  ", name,
           (long long)((n + stride - 1) / stride), worst, has_grad ? "" : " (no gradient: taken as zero)");
    free(analytic);
    return bad ? 1 : 0;
}

int cmd_gradcheck(int argc, char **argv)
{
    struct gradcheck_opts o = { .eps = 1e-3, .rtol = 1e-2, .atol = 1e-3, .max_elems = 32, .seed = 7, .device = "cpu" };
    const char *model = NULL;
    const char *dim_names[GRADCHECK_MAX_DIMS];
    char *dim_owned[GRADCHECK_MAX_DIMS];
    long long dim_values[GRADCHECK_MAX_DIMS];
    int n_dims = 0, rc = CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long n;
        int takes_value = !strcmp(a, "--eps") || !strcmp(a, "--rtol") || !strcmp(a, "--atol") ||
                          !strcmp(a, "--max-elems") || !strcmp(a, "--seed") || !strcmp(a, "--no-grad") ||
                          !strcmp(a, "--device") || !strcmp(a, "--dim");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(GRADCHECK_USAGE, stdout);
            rc = CLI_EXIT_OK;
            goto out;
        } else if (takes_value && i + 1 >= argc) {
            fprintf(stderr, "dtrexec gradcheck: %s needs a value\n" GRADCHECK_USAGE, a);
            goto out;
        } else if (!strcmp(a, "--eps")) {
            if (cli_parse_number("dtrexec gradcheck", "--eps", argv[++i], 1e-12, 1, &o.eps))
                goto out;
        } else if (!strcmp(a, "--rtol")) {
            if (cli_parse_number("dtrexec gradcheck", "--rtol", argv[++i], 0, 1e6, &o.rtol))
                goto out;
        } else if (!strcmp(a, "--atol")) {
            if (cli_parse_number("dtrexec gradcheck", "--atol", argv[++i], 0, 1e6, &o.atol))
                goto out;
        } else if (!strcmp(a, "--max-elems")) {
            if (cli_parse_int("dtrexec gradcheck", "--max-elems", argv[++i], 1, INT_MAX, &n))
                goto out;
            o.max_elems = (int)n;
        } else if (!strcmp(a, "--seed")) {
            if (cli_parse_int("dtrexec gradcheck", "--seed", argv[++i], 0, LLONG_MAX, &n))
                goto out;
            o.seed = (unsigned long long)n;
        } else if (!strcmp(a, "--no-grad")) {
            o.no_grad = argv[++i];
        } else if (!strcmp(a, "--device")) {
            o.device = argv[++i];
        } else if (!strcmp(a, "--dim")) {
            const char *val = argv[++i], *eq = strchr(val, '=');
            if (!eq || eq == val || !eq[1]) {
                fprintf(stderr, "dtrexec gradcheck: --dim expects NAME=N, got '%s'\n", val);
                goto out;
            }
            if (n_dims == GRADCHECK_MAX_DIMS) {
                fprintf(stderr, "dtrexec gradcheck: at most %d --dim options\n", GRADCHECK_MAX_DIMS);
                goto out;
            }
            if (cli_parse_int("dtrexec gradcheck", "--dim", eq + 1, 1, (long long)1 << 62, &n))
                goto out;
            dim_owned[n_dims] = strndup(val, (size_t)(eq - val));
            if (!dim_owned[n_dims])
                goto out;
            dim_names[n_dims] = dim_owned[n_dims];
            dim_values[n_dims++] = n;
        } else if (a[0] != '-' && !model) {
            model = a;
        } else if (a[0] != '-') {
            fprintf(stderr, "dtrexec gradcheck: one model only, got '%s' after '%s'\n" GRADCHECK_USAGE, a, model);
            goto out;
        } else {
            fprintf(stderr, "dtrexec gradcheck: unknown option '%s'\n" GRADCHECK_USAGE, a);
            goto out;
        }
    }
    if (!model) {
        fprintf(stderr, "dtrexec gradcheck: no model given\n" GRADCHECK_USAGE);
        goto out;
    }
    rc = gradcheck_model(model, &o, dim_names, dim_values, n_dims);
out:
    for (int k = 0; k < n_dims; k++)
        free(dim_owned[k]);
    return rc;
}

/* Checks every gradient of one model; the command's exit code. */
static int gradcheck_model(const char *model, const struct gradcheck_opts *op, const char *const *dim_names,
                           const long long *dim_values, int n_dims)
{
    struct gradcheck_opts o = *op;
    struct dtrx_options opts;
    dtrx_options_init(&opts);
    opts.seed = o.seed;
    opts.threads = 1;
    opts.device = o.device;
    if (dtrx_device_check(o.device)) {
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
        return CLI_EXIT_USAGE;
    }
    struct dtrx_session *s = NULL;
    struct dtrx_train_options topts;
    dtrx_train_options_init(&topts);
    topts.loss = DTRX_LOSS_WEIGHTED_SUM;
    topts.grad_inputs = 1;
    topts.trainable = "*";   /* every float initializer, constants included: all are checked */
    enum dtrx_status st = dtrx_session_create(model, &opts, &s);
    for (int k = 0; !st && k < n_dims; k++)
        st = dtrx_session_bind_dim(s, dim_names[k], (int64_t)dim_values[k]);
    if (!st)
        st = dtrx_session_fill_inputs(s);
    if (!st)
        st = dtrx_session_run(s);
    int y = st ? -1 : loss_output(s);
    if (!st && y < 0)
        st = DTRX_ERR_INPUT;
    /* Weights w in [-1, 1) shaped like the loss output. */
    struct dtrx_tensor w = { 0 };
    if (!st) {
        struct dtrx_tensor yt;
        dtrx_session_get_output(s, y, &yt);
        w = yt;
        size_t bytes = (size_t)dtrx_tensor_numel(&yt) * dtrx_dtype_size(yt.dtype);
        w.data = malloc(bytes ? bytes : 1);
        unsigned long long r = o.seed * 2654435761u + 1;
        for (int64_t i = 0; w.data && i < dtrx_tensor_numel(&w); i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            set_element(&w, i, (double)(r >> 11) * 0x1.0p-53 * 2 - 1);
        }
        st = w.data ? dtrx_session_train_begin(s, &topts) : DTRX_ERR_INTERNAL;
    }
    if (!st)
        st = dtrx_session_set_labels(s, &w);
    double loss = 0;
    if (!st)
        st = dtrx_session_backward(s, &loss);
    if (st) {
        fprintf(stderr, "dtrexec: %s\n", y < 0 && !dtrx_last_error()[0] ? "the model has no float output" : dtrx_last_error());
        free(w.data);
        dtrx_session_destroy(s);
        return (int)st;
    }
    /* Names first: the backward pass's gradients are read before any
     * forward run replaces them, one tensor at a time. */
    struct onnx_model *m = NULL;
    char err[512];
    int failed = 0, checked = 0, rc = 0;
    if (onnx_model_load(model, &m, err, sizeof err)) {
        fprintf(stderr, "dtrexec: %s\n", err);
        rc = CLI_EXIT_USAGE;
    }
    for (int i = 0; !rc && i < m->graph->n_initializers + m->graph->n_inputs; i++) {
        const char *name = i < m->graph->n_initializers ? m->graph->initializers[i].name
                                                         : m->graph->inputs[i - m->graph->n_initializers].name;
        if (i && dtrx_session_backward(s, &loss)) {
            fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
            rc = CLI_EXIT_INTERNAL;
            break;
        }
        int r = check_tensor(s, name, &w, &o, &checked);
        if (r < 0)
            rc = CLI_EXIT_INTERNAL;
        failed += r > 0;
    }
    onnx_model_free(m);
    free(w.data);
    dtrx_session_destroy(s);
    if (rc)
        return rc;
    if (!checked) {
        printf("FAIL: no gradient reached any input or initializer\n");
        return CLI_EXIT_USAGE;
    }
    printf("%s: %d elements checked, %d tensors failed\n", failed ? "FAIL" : "PASS", checked, failed);
    return failed ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
