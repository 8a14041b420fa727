/* ops/image-impl.h — still-image decoders behind ImageDecoder
 * (ops/image_decoder.c).
 *
 * One struct image_codec per container format, found by the signature at
 * the start of the encoded bytes (image_codec_find). Its read answers two
 * questions: with rgb NULL the size of the image (width and height, nothing
 * decoded), and with rgb its pixels as 8-bit interleaved RGB, row-major,
 * top row first, into a buffer of width * height * 3 bytes that the caller
 * owns (the size must be what the first call gave). Grey images come out with R = G = B; an alpha channel is dropped,
 * as PIL's convert("RGB") drops it. BMP and PNM are parsed here
 * (image_simple.c); JPEG, PNG, TIFF, WebP and JPEG 2000 go through the
 * system's libjpeg, libpng, libtiff, libwebp and openjpeg (image_libs.c),
 * whose working memory is their own (host memory outside the budget, like
 * oneDNN's). Errors go to err as one line naming what is wrong with the
 * stream; functions return 0 or -1. */
#ifndef DTRX_OPS_IMAGE_IMPL_H
#define DTRX_OPS_IMAGE_IMPL_H

#include <stddef.h>
#include <stdint.h>

struct image_codec {
    const char *name;                                  /* "JPEG", "PNG", ... */
    int (*match)(const uint8_t *buf, size_t n);        /* 1 when the signature is this format's */
    int (*read)(const uint8_t *buf, size_t n, int64_t *width, int64_t *height, uint8_t *rgb,
                char *err, size_t err_size);
};

extern const struct image_codec image_codec_bmp, image_codec_pnm;
extern const struct image_codec image_codec_jpeg, image_codec_png, image_codec_tiff,
    image_codec_webp, image_codec_jp2;

/* The codec whose signature starts buf, or NULL. */
const struct image_codec *image_codec_find(const uint8_t *buf, size_t n);

/* Writes a message into err; returns -1. */
int image_error(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The largest width or height accepted (as libjpeg's and libpng's limits). */
#define IMAGE_MAX_SIDE ((int64_t)1 << 24)

#endif
