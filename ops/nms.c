/* ops/nms.c — NonMaxSuppression (opsets 10, 11): per batch entry and class,
 * boxes in decreasing score order (equal scores: lower box index first)
 * whose score exceeds score_threshold (when given) are kept unless their IoU
 * with a box already kept exceeds iou_threshold (default 0), up to
 * max_output_boxes_per_class (default 0: none) per class; the output is the
 * int64 [count, 3] list of (batch, class, box) triples in that order.
 * boxes [B, N, 4] are corners (y1, x1, y2, x2, either diagonal) or, with
 * center_point_box = 1, (x_center, y_center, width, height); float. IoU is
 * computed in float in the reference's order of operations (onnx's
 * reference), so boundary cases (IoU equal to the threshold) agree.
 *
 * The count depends on the values, so every input is read on the host
 * (host_inputs): infer counts the selection and the kernel writes it (the
 * CUDA kernel of ops/cuda/vision.c writes it on the host and uploads it, as
 * NonZero's does). Not differentiable: the output is integer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/vision-params.h"
#include "ops/vision-impl.h"

static int nms_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    (void)version;
    int64_t cpb = onnx_node_attr_int(node, "center_point_box", 0);
    if (cpb != 0 && cpb != 1)
        return ew_parse_error(err, err_size, "center_point_box is %lld; expected 0 or 1",
                              (long long)cpb);
    struct nms_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->center_point_box = (int)cpb;
    return 0;
}

static void nms_min_max(float a, float b, float *lo, float *hi)
{
    *lo = a < b ? a : b;
    *hi = a < b ? b : a;
}

/* Box i and box j of one batch entry overlap by more than thr. */
static int nms_suppress(const float *bi, const float *bj, int center, float thr)
{
    float x1lo, x1hi, x2lo, x2hi, y1lo, y1hi, y2lo, y2hi;
    if (!center) {
        nms_min_max(bi[1], bi[3], &x1lo, &x1hi);
        nms_min_max(bj[1], bj[3], &x2lo, &x2hi);
        nms_min_max(bi[0], bi[2], &y1lo, &y1hi);
        nms_min_max(bj[0], bj[2], &y2lo, &y2hi);
    } else {
        float w1 = bi[2] / 2, h1 = bi[3] / 2, w2 = bj[2] / 2, h2 = bj[3] / 2;
        x1lo = bi[0] - w1, x1hi = bi[0] + w1, x2lo = bj[0] - w2, x2hi = bj[0] + w2;
        y1lo = bi[1] - h1, y1hi = bi[1] + h1, y2lo = bj[1] - h2, y2hi = bj[1] + h2;
    }
    float ixlo = x1lo > x2lo ? x1lo : x2lo, ixhi = x1hi < x2hi ? x1hi : x2hi;
    if (!(ixhi > ixlo))
        return 0;
    float iylo = y1lo > y2lo ? y1lo : y2lo, iyhi = y1hi < y2hi ? y1hi : y2hi;
    if (!(iyhi > iylo))
        return 0;
    float inter = (ixhi - ixlo) * (iyhi - iylo);
    if (!(inter > 0))
        return 0;
    float a1 = (x1hi - x1lo) * (y1hi - y1lo), a2 = (x2hi - x2lo) * (y2hi - y2lo);
    float uni = a1 + a2 - inter;
    if (!(a1 > 0) || !(a2 > 0) || !(uni > 0))
        return 0;
    return inter / uni > thr;
}

struct nms_cand {
    float score;
    int64_t idx;
};

/* Decreasing score, then increasing index; NaN scores last. A total order,
 * so qsort's result does not depend on its algorithm. */
static int nms_cmp(const void *pa, const void *pb)
{
    const struct nms_cand *a = pa, *b = pb;
    int an = isnan(a->score), bn = isnan(b->score);
    if (an != bn)
        return an - bn;
    if (!an && a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int nms_check(const struct op_call *c)
{
    const struct tensor *boxes = c->in[0], *scores = c->in[1];
    char a[128], b[128];
    if (boxes->dtype != ONNX_DTYPE_FLOAT || scores->dtype != ONNX_DTYPE_FLOAT)
        return ew_dtype_error(c, boxes->dtype != ONNX_DTYPE_FLOAT ? "boxes" : "scores",
                              boxes->dtype != ONNX_DTYPE_FLOAT ? boxes->dtype : scores->dtype, "float");
    if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
        scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return op_error(c, "boxes %s must be [B, N, 4] and scores %s [B, C, N]",
                        tensor_describe(boxes, a, sizeof a), tensor_describe(scores, b, sizeof b));
    static const char *const names[] = { NULL, NULL, "max_output_boxes_per_class", "iou_threshold",
                                         "score_threshold" };
    for (int i = 2; i < c->n_in; i++) {
        const struct tensor *t = c->in[i];
        if (!t)
            continue;
        int want = i == 2 ? ONNX_DTYPE_INT64 : ONNX_DTYPE_FLOAT;
        if (t->dtype != want || tensor_numel(t) > 1 || t->rank > 1)
            return op_error(c, "input '%s' %s must be a %s scalar or 1-element tensor", names[i],
                            tensor_describe(t, a, sizeof a), onnx_dtype_name(want));
    }
    return 0;
}

int64_t vision_nms_run(const struct op_call *c, int64_t *out)
{
    const struct nms_params *p = c->params;
    const struct tensor *boxes = c->in[0], *scores = c->in[1];
    const struct tensor *tmax = c->n_in > 2 ? c->in[2] : NULL, *tiou = c->n_in > 3 ? c->in[3] : NULL;
    const struct tensor *tscore = c->n_in > 4 ? c->in[4] : NULL;
    int64_t max_out = tmax && tensor_numel(tmax) ? tensor_get_int(tmax, 0) : 0;
    float iou = tiou && tensor_numel(tiou) ? ((const float *)tiou->data)[0] : 0.0f;
    int has_score = tscore && tensor_numel(tscore);
    float score_thr = has_score ? ((const float *)tscore->data)[0] : 0.0f;
    const int64_t nb = boxes->dims[0], n = boxes->dims[1], ncls = scores->dims[1];
    if (max_out <= 0 || n == 0)
        return 0;
    struct nms_cand *cand = malloc(sizeof *cand * (size_t)n);
    int64_t *kept = malloc(sizeof *kept * (size_t)n);
    if (!cand || !kept) {
        free(cand);
        free(kept);
        return op_error(c, "out of host memory for %lld candidate boxes", (long long)n);
    }
    const float *bx = boxes->data, *sc = scores->data;
    int64_t total = 0;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t k = 0; k < ncls; k++) {
            const float *s = sc + (b * ncls + k) * n, *bb = bx + b * n * 4;
            int64_t m = 0, nk = 0;
            for (int64_t i = 0; i < n; i++)
                if (!has_score || s[i] > score_thr)
                    cand[m++] = (struct nms_cand){ s[i], i };
            qsort(cand, (size_t)m, sizeof *cand, nms_cmp);
            for (int64_t i = 0; i < m && nk < max_out; i++) {
                int keep = 1;
                for (int64_t j = 0; j < nk && keep; j++)
                    keep = !nms_suppress(bb + cand[i].idx * 4, bb + kept[j] * 4,
                                         p->center_point_box, iou);
                if (!keep)
                    continue;
                kept[nk++] = cand[i].idx;
                if (out) {
                    out[total * 3] = b;
                    out[total * 3 + 1] = k;
                    out[total * 3 + 2] = cand[i].idx;
                }
                total++;
            }
        }
    free(cand);
    free(kept);
    return total;
}

static int nms_infer(struct op_call *c)
{
    if (nms_check(c))
        return -1;
    int64_t n = vision_nms_run(c, NULL);
    if (n < 0)
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_INT64;
    y->rank = 2;
    y->dims[0] = n;
    y->dims[1] = 3;
    return 0;
}

static int nms_cpu(struct op_call *c)
{
    if (nms_check(c))
        return -1;
    int64_t n = vision_nms_run(c, c->out[0]->data);
    if (n < 0)
        return -1;
    if (n != c->out[0]->dims[0])
        return op_error(c, "selected %lld boxes where infer counted %lld", (long long)n,
                        (long long)c->out[0]->dims[0]);
    return 0;
}

/* About one IoU (20 flops) per pair of candidates of a class, at worst. */
static struct op_cost nms_cost(const struct op_call *c)
{
    const struct tensor *scores = c->in[1];
    double n = (double)(scores->rank == 3 ? scores->dims[2] : 0);
    struct op_cost k = cost_memory(c);
    k.flops = 20.0 * n * n * (double)(scores->rank == 3 ? scores->dims[0] * scores->dims[1] : 0);
    return k;
}

const struct op_def op_non_max_suppression = {
    .domain = "", .name = "NonMaxSuppression", .since = { 10, 11 },
    .min_in = 2, .max_in = 5, .min_out = 1, .max_out = 1,
    .parse = nms_parse, .infer = nms_infer, .cost = nms_cost,
    .kernel = { [BACKEND_CPU] = nms_cpu },
    .host_inputs = 0x1fu,
};
