/* ops/signal_window.c — the generators of ops/signal.c's inputs (opset 17):
 * HannWindow, HammingWindow, BlackmanWindow (size: an integer scalar;
 * periodic, default 1: N = size, else size - 1) and MelWeightMatrix
 * (num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
 * upper_edge_hertz: scalars; output [dft_length / 2 + 1, num_mel_bins]).
 * output_datatype (default float) may be any real or integer type.
 *
 * Values are computed in double exactly as the ONNX reference writes them
 * and cast once: Hann sin^2(pi n / N), Hamming 25/46 - 21/46 cos(2 pi n / N),
 * Blackman 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N). The mel
 * matrix takes the reference's integer bins floor((dft_length + 1) * hz /
 * sample_rate) of num_mel_bins + 2 points evenly spaced in mel (2595
 * log10(1 + hz / 700)), and triangles between neighbours. Every input is
 * read on the host and no input is differentiable: no gradient. No CUDA
 * kernel: the outputs are small and their inputs host values, so these
 * belong on the host (--device cuda refuses them by name).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"

/* pi as numpy has it (M_PI is not ISO C) */
#define SIGNAL_PI 3.141592653589793

enum window_kind { WINDOW_HANN, WINDOW_HAMMING, WINDOW_BLACKMAN, WINDOW_MEL };

struct window_params {
    int kind;                      /* enum window_kind */
    int periodic;
    int dtype;                     /* output_datatype */
};

#define OUT_TYPES "float, double, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, " \
                  "uint32, uint64"

static int out_type_ok(int d)
{
    switch (d) {
    case ONNX_DTYPE_FLOAT: case ONNX_DTYPE_DOUBLE: case ONNX_DTYPE_FLOAT16: case ONNX_DTYPE_BFLOAT16:
    case ONNX_DTYPE_INT8: case ONNX_DTYPE_INT16: case ONNX_DTYPE_INT32: case ONNX_DTYPE_INT64:
    case ONNX_DTYPE_UINT8: case ONNX_DTYPE_UINT16: case ONNX_DTYPE_UINT32: case ONNX_DTYPE_UINT64:
        return 1;
    default:
        return 0;
    }
}

static int window_parse_kind(const struct onnx_node *node, int kind, void **params, char *err,
                             size_t err_size)
{
    struct window_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->kind = kind;
    p->periodic = onnx_node_attr_int(node, "periodic", 1) != 0;
    p->dtype = (int)onnx_node_attr_int(node, "output_datatype", ONNX_DTYPE_FLOAT);
    if (!out_type_ok(p->dtype)) {
        ew_parse_error(err, err_size, "output_datatype %d is not supported (%s)", p->dtype, OUT_TYPES);
        free(p);
        *params = NULL;
        return -1;
    }
    return 0;
}

static int kind_of(const char *op)
{
    return !strcmp(op, "HannWindow") ? WINDOW_HANN : !strcmp(op, "HammingWindow") ? WINDOW_HAMMING
        : !strcmp(op, "BlackmanWindow") ? WINDOW_BLACKMAN : WINDOW_MEL;
}

static int window_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    return window_parse_kind(node, kind_of(node->op_type), params, err, err_size);
}

/* Element i of an output of type d set to v (integers truncate and
 * saturate, as a cast from double). */
static void store(int d, void *data, int64_t i, double v)
{
    switch (d) {
    case ONNX_DTYPE_FLOAT: ((float *)data)[i] = (float)v; break;
    case ONNX_DTYPE_DOUBLE: ((double *)data)[i] = v; break;
    case ONNX_DTYPE_FLOAT16: ((uint16_t *)data)[i] = ew_f64_to_f16(v); break;
    case ONNX_DTYPE_BFLOAT16: ((uint16_t *)data)[i] = ew_f64_to_bf16(v); break;
    case ONNX_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)ew_sat_i64(v < -128 ? -128 : v > 127 ? 127 : v); break;
    case ONNX_DTYPE_INT16: ((int16_t *)data)[i] = (int16_t)ew_sat_i64(v < -32768 ? -32768 : v > 32767 ? 32767 : v); break;
    case ONNX_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)ew_sat_i64(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v); break;
    case ONNX_DTYPE_INT64: ((int64_t *)data)[i] = ew_sat_i64(v); break;
    case ONNX_DTYPE_UINT8: ((uint8_t *)data)[i] = (uint8_t)ew_sat_u64(v > 255 ? 255 : v); break;
    case ONNX_DTYPE_UINT16: ((uint16_t *)data)[i] = (uint16_t)ew_sat_u64(v > 65535 ? 65535 : v); break;
    case ONNX_DTYPE_UINT32: ((uint32_t *)data)[i] = (uint32_t)ew_sat_u64(v > UINT32_MAX ? UINT32_MAX : v); break;
    default: ((uint64_t *)data)[i] = ew_sat_u64(v); break;
    }
}

/* A scalar (or one-element) host input as an integer or a double. */
static int scalar(const struct op_call *c, int i, const char *what, int want_int, double *v)
{
    const struct tensor *t = c->in[i];
    char d[128];
    int is_int = t->dtype == ONNX_DTYPE_INT32 || t->dtype == ONNX_DTYPE_INT64;
    int is_real = t->dtype == ONNX_DTYPE_FLOAT || t->dtype == ONNX_DTYPE_DOUBLE ||
                  t->dtype == ONNX_DTYPE_FLOAT16 || t->dtype == ONNX_DTYPE_BFLOAT16;
    if (tensor_numel(t) != 1 || t->rank > 1 || (want_int ? !is_int : !is_real))
        return op_error(c, "%s %s must be a scalar (%s)", what, tensor_describe(t, d, sizeof d),
                        want_int ? "int32 or int64" : "float, double, float16 or bfloat16");
    *v = is_int ? (double)tensor_get_int(t, 0) : tensor_get_double(t, 0);
    return 0;
}

/* ---- Hann, Hamming, Blackman ---------------------------------------------------- */

static int window_size(const struct op_call *c, int64_t *n)
{
    double v = 0;
    if (scalar(c, 0, "size", 1, &v))
        return -1;
    *n = (int64_t)v;
    if (*n < 0)
        return op_error(c, "size %lld is negative", (long long)*n);
    return 0;
}

static int window_infer(struct op_call *c)
{
    const struct window_params *p = c->params;
    int64_t n;
    if (window_size(c, &n))
        return -1;
    *c->out[0] = (struct tensor){ .dtype = p->dtype, .rank = 1, .dims = { n } };
    return 0;
}

static int window_cpu(struct op_call *c)
{
    const struct window_params *p = c->params;
    int64_t n;
    if (window_size(c, &n))
        return -1;
    /* the reference divides by N - 1 for a symmetric window, also when it is 0 */
    double big_n = (double)(p->periodic ? n : n - 1);
    for (int64_t i = 0; i < n; i++) {
        double x = (double)i, v;
        if (p->kind == WINDOW_HANN) {
            double s = sin(x * SIGNAL_PI / big_n);
            v = s * s;
        } else if (p->kind == WINDOW_HAMMING) {
            double alpha = 25.0 / 46.0;
            v = alpha - cos(x * SIGNAL_PI * 2 / big_n) * (1 - alpha);
        } else {
            v = cos(x * (SIGNAL_PI * 2) / big_n) * -0.5;
            v += cos(x * (SIGNAL_PI * 4) / big_n) * 0.08;
            v += 0.42;
        }
        store(p->dtype, c->out[0]->data, i, v);
    }
    return 0;
}

/* ---- MelWeightMatrix -------------------------------------------------------------- */

struct mel_args {
    int64_t bins, dft_length, sample_rate;
    double lower, upper;
};

static int mel_args(const struct op_call *c, struct mel_args *m)
{
    double v[5];
    static const char *names[5] = { "num_mel_bins", "dft_length", "sample_rate",
                                    "lower_edge_hertz", "upper_edge_hertz" };
    for (int i = 0; i < 5; i++)
        if (scalar(c, i, names[i], i < 3, &v[i]))
            return -1;
    m->bins = (int64_t)v[0];
    m->dft_length = (int64_t)v[1];
    m->sample_rate = (int64_t)v[2];
    m->lower = v[3];
    m->upper = v[4];
    if (m->bins < 1 || m->dft_length < 1 || m->sample_rate < 1)
        return op_error(c, "num_mel_bins %lld, dft_length %lld and sample_rate %lld must be positive",
                        (long long)m->bins, (long long)m->dft_length, (long long)m->sample_rate);
    if (!(m->lower >= 0 && m->lower <= m->upper))
        return op_error(c, "lower_edge_hertz %g must be in [0, upper_edge_hertz %g]", m->lower, m->upper);
    return 0;
}

static int mel_infer(struct op_call *c)
{
    const struct window_params *p = c->params;
    struct mel_args m;
    if (mel_args(c, &m))
        return -1;
    *c->out[0] = (struct tensor){ .dtype = p->dtype, .rank = 2, .dims = { m.dft_length / 2 + 1, m.bins } };
    return 0;
}

static int mel_cpu(struct op_call *c)
{
    const struct window_params *p = c->params;
    struct mel_args m;
    if (mel_args(c, &m))
        return -1;
    const int64_t rows = m.dft_length / 2 + 1, cols = m.bins, pts = m.bins + 2;
    int64_t *bin = malloc(sizeof(int64_t) * (size_t)pts);
    double *w = calloc((size_t)(rows * cols), sizeof(double));
    if (!bin || !w) {
        free(bin);
        free(w);
        return op_error(c, "out of memory");
    }
    double lo = 2595 * log1p(m.lower / 700) / log(10), hi = 2595 * log1p(m.upper / 700) / log(10);
    double step = (hi - lo) / (double)pts;
    for (int64_t i = 0; i < pts; i++) {
        double hz = 700 * expm1(((double)i * step + lo) / 2595 * log(10));
        bin[i] = (int64_t)floor((double)(m.dft_length + 1) * hz / (double)m.sample_rate);
    }
    int rc = 0;
    for (int64_t i = 0; i < cols && !rc; i++) {
        int64_t l = bin[i], ctr = bin[i + 1], r = bin[i + 2];
        if (l < 0 || ctr >= rows || r > rows) {
            rc = op_error(c, "mel bin %lld spans spectrogram bins [%lld, %lld] outside [0, %lld): "
                          "upper_edge_hertz %g is above the Nyquist frequency of sample_rate %lld",
                          (long long)i, (long long)l, (long long)r, (long long)rows, m.upper,
                          (long long)m.sample_rate);
            break;
        }
        if (ctr == l)
            w[ctr * cols + i] = 1;
        else
            for (int64_t j = l; j <= ctr; j++)
                w[j * cols + i] = (double)(j - l) / (double)(ctr - l);
        for (int64_t j = ctr; j < r; j++)
            w[j * cols + i] = (double)(r - j) / (double)(r - ctr);
    }
    for (int64_t e = 0; !rc && e < rows * cols; e++)
        store(p->dtype, c->out[0]->data, e, w[e]);
    free(bin);
    free(w);
    return rc;
}

static struct op_cost window_cost(const struct op_call *c)
{
    return ew_cost_scaled(c, 4);
}

#define WINDOW_DEF(sym, opname)                                                 \
    const struct op_def sym = {                                                 \
        .domain = "", .name = opname, .since = { 17 },                          \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                   \
        .parse = window_parse, .infer = window_infer, .cost = window_cost,      \
        .kernel = { [BACKEND_CPU] = window_cpu },                               \
        .host_inputs = 1u,                                                      \
    };
WINDOW_DEF(op_hann_window, "HannWindow")
WINDOW_DEF(op_hamming_window, "HammingWindow")
WINDOW_DEF(op_blackman_window, "BlackmanWindow")

const struct op_def op_mel_weight_matrix = {
    .domain = "", .name = "MelWeightMatrix", .since = { 17 },
    .min_in = 5, .max_in = 5, .min_out = 1, .max_out = 1,
    .parse = window_parse, .infer = mel_infer, .cost = window_cost,
    .kernel = { [BACKEND_CPU] = mel_cpu },
    .host_inputs = 0x1fu,
};
