/* ops/image_decoder.c — ImageDecoder (opset 20): a 1-D uint8 tensor holding
 * an encoded image (JPEG, PNG, BMP, PNM, TIFF, WebP or JPEG 2000, told apart
 * by their signatures; ops/image-impl.h) decoded to uint8 [H, W, C] in
 * pixel_format "RGB" (C = 3, the default), "BGR" (C = 3) or "Grayscale"
 * (C = 1). Grey is computed from RGB as PIL's convert("L") does, the
 * reference's decoder: L = (19595 R + 38470 G + 7471 B + 2^15) >> 16.
 * The output's size depends on the bytes, so the input is read on the host
 * (host_inputs) and infer reads the header; on a device the decode runs on
 * host copies (op_host_bridge). Not differentiable: the output is integer.
 * An empty, unrecognised or damaged stream is an error naming the format
 * and the problem, never a partial image. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/image-impl.h"

enum pixel_format { PIXEL_RGB, PIXEL_BGR, PIXEL_GRAY };

struct image_decoder_params {
    enum pixel_format format;
};

static int image_decoder_parse(const struct onnx_node *node, int version, void **params, char *err,
                               size_t err_size)
{
    (void)version;
    struct image_decoder_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    const char *f = onnx_node_attr_string(node, "pixel_format", "RGB");
    if (!strcmp(f, "RGB")) {
        p->format = PIXEL_RGB;
    } else if (!strcmp(f, "BGR")) {
        p->format = PIXEL_BGR;
    } else if (!strcmp(f, "Grayscale")) {
        p->format = PIXEL_GRAY;
    } else {
        free(*params);
        *params = NULL;
        return ew_parse_error(err, err_size, "pixel_format must be RGB, BGR or Grayscale, got '%.64s'", f);
    }
    return 0;
}

/* The stream of input 0 and its codec, or NULL after op_error. */
static const struct image_codec *stream_codec(struct op_call *c, const uint8_t **buf, size_t *n)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_UINT8)
        return ew_dtype_error(c, "encoded_stream", x->dtype, "uint8"), NULL;
    if (x->rank != 1)
        return op_error(c, "encoded_stream must be 1-D, got rank %d", x->rank), NULL;
    *buf = x->data;
    *n = (size_t)x->dims[0];
    if (*n == 0)
        return op_error(c, "encoded_stream is empty"), NULL;
    const struct image_codec *codec = image_codec_find(*buf, *n);
    if (!codec)
        op_error(c, "encoded_stream (%zu bytes starting %02x %02x %02x %02x) is none of JPEG, PNG, BMP, PNM, "
                 "TIFF, WebP, JPEG 2000", *n, (*buf)[0], *n > 1 ? (*buf)[1] : 0, *n > 2 ? (*buf)[2] : 0,
                 *n > 3 ? (*buf)[3] : 0);
    return codec;
}

static int image_decoder_infer(struct op_call *c)
{
    const struct image_decoder_params *p = c->params;
    const uint8_t *buf;
    size_t n;
    const struct image_codec *codec = stream_codec(c, &buf, &n);
    if (!codec)
        return -1;
    int64_t w = 0, h = 0;
    char msg[256];
    if (codec->read(buf, n, &w, &h, NULL, msg, sizeof msg))
        return op_error(c, "%s", msg);
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_UINT8;
    y->rank = 3;
    y->dims[0] = h;
    y->dims[1] = w;
    y->dims[2] = p->format == PIXEL_GRAY ? 1 : 3;
    if (tensor_check_size(y, msg, sizeof msg))
        return op_error(c, "%s", msg);
    return 0;
}

static int image_decoder_cpu(struct op_call *c)
{
    const struct image_decoder_params *p = c->params;
    const uint8_t *buf;
    size_t n;
    const struct image_codec *codec = stream_codec(c, &buf, &n);
    if (!codec)
        return -1;
    struct tensor *y = c->out[0];
    int64_t h = y->dims[0], w = y->dims[1], px = w * h;
    uint8_t *out = y->data, *rgb = out;
    if (p->format == PIXEL_GRAY) {
        rgb = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, (size_t)px * 3) : NULL;
        if (!rgb)
            return op_error(c, "no scratch memory for the %lld x %lld RGB image (%lld bytes)", (long long)h,
                            (long long)w, (long long)(px * 3));
    }
    char msg[256];
    int rc = codec->read(buf, n, &w, &h, rgb, msg, sizeof msg);
    if (rc) {
        op_error(c, "%s", msg);
    } else if (p->format == PIXEL_BGR) {
        for (int64_t i = 0; i < px; i++) {
            uint8_t r = out[3 * i];
            out[3 * i] = out[3 * i + 2];
            out[3 * i + 2] = r;
        }
    } else if (p->format == PIXEL_GRAY) {
        for (int64_t i = 0; i < px; i++) {
            const uint8_t *s = rgb + 3 * i;
            out[i] = (uint8_t)(((uint32_t)s[0] * 19595u + (uint32_t)s[1] * 38470u + (uint32_t)s[2] * 7471u +
                                0x8000u) >> 16);
        }
    }
    if (rgb != out)
        c->env->scratch_free(c->env->ctx, rgb);
    return rc;
}

const struct op_def op_image_decoder = {
    .domain = "", .name = "ImageDecoder", .since = { 20 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = image_decoder_parse,
    .infer = image_decoder_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = image_decoder_cpu, [BACKEND_CUDA] = op_host_bridge },
    .host_inputs = 1u,
};
