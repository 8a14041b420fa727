/* ops/image_simple.c — the codec table, and the two formats simple enough
 * to parse here:
 *
 *  - BMP: Windows bitmaps with a BITMAPINFOHEADER or later header,
 *    uncompressed (BI_RGB) at 1, 4, 8 (palette), 24 and 32 bits per pixel,
 *    bottom-up or top-down (negative height); rows padded to 4 bytes.
 *  - PNM: P1-P6 (bitmap, greymap, pixmap; ASCII and binary) with comments,
 *    maxval up to 65535, scaled to 0..255 rounding to nearest as
 *    v * 255 / maxval; a PBM's 1 is black.
 *
 * The other formats are in image_libs.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/image-impl.h"

int image_error(char *err, size_t err_size, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const struct image_codec *const codecs[] = {
    &image_codec_jpeg, &image_codec_png, &image_codec_bmp, &image_codec_pnm,
    &image_codec_tiff, &image_codec_webp, &image_codec_jp2,
};

const struct image_codec *image_codec_find(const uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        if (codecs[i]->match(buf, n))
            return codecs[i];
    return NULL;
}

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }

/* ---- BMP ------------------------------------------------------------------ */

struct bmp_header {
    uint32_t data_offset, header_size, compression, colors;
    int64_t width, height;         /* height > 0: bottom-up */
    int bpp;
};

static int bmp_match(const uint8_t *b, size_t n) { return n >= 2 && b[0] == 'B' && b[1] == 'M'; }

static int bmp_parse(const uint8_t *b, size_t n, struct bmp_header *h, char *err, size_t es)
{
    if (n < 54)
        return image_error(err, es, "BMP: %zu bytes are too few for the headers (54)", n);
    h->data_offset = le32(b + 10);
    h->header_size = le32(b + 14);
    if (h->header_size < 40)
        return image_error(err, es, "BMP: header of %u bytes (OS/2 bitmaps) is not supported", h->header_size);
    if (14 + (uint64_t)h->header_size > n)
        return image_error(err, es, "BMP: a header of %u bytes does not fit in %zu bytes", h->header_size, n);
    h->width = (int32_t)le32(b + 18);
    h->height = (int32_t)le32(b + 22);
    h->bpp = (int)le16(b + 28);
    h->compression = le32(b + 30);
    h->colors = le32(b + 46);
    if (h->width <= 0 || h->height == 0 || h->width > IMAGE_MAX_SIDE ||
        h->height > IMAGE_MAX_SIDE || h->height < -IMAGE_MAX_SIDE)
        return image_error(err, es, "BMP: size %lld x %lld is out of range (1..%lld)", (long long)h->width,
                           (long long)h->height, (long long)IMAGE_MAX_SIDE);
    if (h->compression != 0 && !(h->compression == 3 && h->bpp == 32))
        return image_error(err, es, "BMP: compression %u is not supported (uncompressed only)", h->compression);
    if (h->bpp != 1 && h->bpp != 4 && h->bpp != 8 && h->bpp != 24 && h->bpp != 32)
        return image_error(err, es, "BMP: %d bits per pixel is not supported (1, 4, 8, 24, 32)", h->bpp);
    int64_t rows = h->height < 0 ? -h->height : h->height;
    int64_t stride = ((h->width * h->bpp + 31) / 32) * 4;
    if (h->data_offset > n || (int64_t)(n - h->data_offset) / stride < rows)
        return image_error(err, es, "BMP: pixel data ends early (%lld rows of %lld bytes from offset %u, %zu bytes in all)",
                           (long long)rows, (long long)stride, h->data_offset, n);
    if (h->bpp <= 8) {
        uint32_t pal = h->colors ? h->colors : 1u << h->bpp;
        if (pal > 256u || 14 + (uint64_t)h->header_size + 4 * (uint64_t)pal > h->data_offset)
            return image_error(err, es, "BMP: the palette of %u colours does not fit before the pixel data", pal);
        h->colors = pal;
    }
    return 0;
}

static int bmp_read(const uint8_t *b, size_t n, int64_t *width, int64_t *height, uint8_t *rgb, char *err,
                    size_t es)
{
    struct bmp_header hd = { 0 };
    if (bmp_parse(b, n, &hd, err, es))
        return -1;
    int64_t w = hd.width, h = hd.height < 0 ? -hd.height : hd.height;
    if (!rgb) {
        *width = w;
        *height = h;
        return 0;
    }
    if (w != *width || h != *height)
        return image_error(err, es, "BMP: the image is %lld x %lld, not %lld x %lld", (long long)w, (long long)h,
                           (long long)*width, (long long)*height);
    const uint8_t *pal = b + 14 + hd.header_size;
    int64_t stride = ((w * hd.bpp + 31) / 32) * 4;
    for (int64_t y = 0; y < h; y++) {
        int64_t src_row = hd.height > 0 ? h - 1 - y : y;
        const uint8_t *row = b + hd.data_offset + src_row * stride;
        uint8_t *o = rgb + y * w * 3;
        for (int64_t x = 0; x < w; x++, o += 3) {
            const uint8_t *px;
            if (hd.bpp >= 24) {
                px = row + x * (hd.bpp / 8);   /* B, G, R (, A or X) */
            } else {
                int shift = 8 - hd.bpp - (int)((x * hd.bpp) % 8);
                uint32_t idx = (row[(x * hd.bpp) / 8] >> shift) & ((1u << hd.bpp) - 1);
                if (idx >= hd.colors)
                    return image_error(err, es, "BMP: colour index %u is outside the palette of %u", idx, hd.colors);
                px = pal + 4 * idx;            /* B, G, R, 0 */
            }
            o[0] = px[2];
            o[1] = px[1];
            o[2] = px[0];
        }
    }
    return 0;
}

const struct image_codec image_codec_bmp = { "BMP", bmp_match, bmp_read };

/* ---- PNM ------------------------------------------------------------------ */

struct pnm_header {
    int kind;                      /* 1..6 */
    int64_t width, height, maxval;
    size_t data;                   /* offset of the first sample */
};

static int pnm_match(const uint8_t *b, size_t n) { return n >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6'; }

static int pnm_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Reads the unsigned decimal at *pos after whitespace and comments. */
static int pnm_number(const uint8_t *b, size_t n, size_t *pos, int64_t *v)
{
    size_t p = *pos;
    for (;;) {
        while (p < n && pnm_space(b[p]))
            p++;
        if (p < n && b[p] == '#') {
            while (p < n && b[p] != '\n' && b[p] != '\r')
                p++;
            continue;
        }
        break;
    }
    if (p >= n || b[p] < '0' || b[p] > '9')
        return -1;
    int64_t x = 0;
    while (p < n && b[p] >= '0' && b[p] <= '9') {
        x = x * 10 + (b[p++] - '0');
        if (x > (int64_t)1 << 40)
            return -1;
    }
    *v = x;
    *pos = p;
    return 0;
}

static int pnm_parse(const uint8_t *b, size_t n, struct pnm_header *h, char *err, size_t es)
{
    h->kind = b[1] - '0';
    size_t p = 2;
    if (pnm_number(b, n, &p, &h->width) || pnm_number(b, n, &p, &h->height))
        return image_error(err, es, "PNM: the header has no width and height");
    h->maxval = 1;
    if (h->kind != 1 && h->kind != 4 && pnm_number(b, n, &p, &h->maxval))
        return image_error(err, es, "PNM: the header has no maxval");
    if (h->width < 1 || h->height < 1 || h->width > IMAGE_MAX_SIDE || h->height > IMAGE_MAX_SIDE)
        return image_error(err, es, "PNM: size %lld x %lld is out of range (1..%lld)", (long long)h->width,
                           (long long)h->height, (long long)IMAGE_MAX_SIDE);
    if (h->maxval < 1 || h->maxval > 65535)
        return image_error(err, es, "PNM: maxval %lld is out of range (1..65535)", (long long)h->maxval);
    if (h->kind >= 4) {            /* one whitespace byte, then binary samples */
        if (p >= n || !pnm_space(b[p]))
            return image_error(err, es, "PNM: no whitespace before the binary samples");
        p++;
        int64_t ch = h->kind == 6 ? 3 : 1, bytes = h->maxval > 255 ? 2 : 1;
        int64_t need = h->kind == 4 ? (h->width + 7) / 8 * h->height : h->width * h->height * ch * bytes;
        if ((int64_t)(n - p) < need)
            return image_error(err, es, "PNM: %lld bytes of samples expected, %zu present", (long long)need, n - p);
    }
    h->data = p;
    return 0;
}

static uint8_t pnm_scale(int64_t v, int64_t maxval)
{
    if (v > maxval)
        v = maxval;
    return (uint8_t)((v * 255 + maxval / 2) / maxval);
}

static int pnm_read(const uint8_t *b, size_t n, int64_t *width, int64_t *height, uint8_t *rgb, char *err,
                    size_t es)
{
    struct pnm_header hd = { 0 };
    if (pnm_parse(b, n, &hd, err, es))
        return -1;
    int64_t w = hd.width, h = hd.height;
    if (!rgb) {
        *width = w;
        *height = h;
        return 0;
    }
    if (w != *width || h != *height)
        return image_error(err, es, "PNM: the image is %lld x %lld, not %lld x %lld", (long long)w, (long long)h,
                           (long long)*width, (long long)*height);
    int ch = (hd.kind == 3 || hd.kind == 6) ? 3 : 1;
    size_t p = hd.data;
    const uint8_t *s = b + hd.data;
    int wide = hd.maxval > 255;
    for (int64_t i = 0; i < w * h; i++) {
        uint8_t px[3];
        for (int c = 0; c < ch; c++) {
            int64_t v;
            if (hd.kind == 4) {
                int64_t y = i / w, x = i % w;
                v = (s[y * ((w + 7) / 8) + x / 8] >> (7 - x % 8)) & 1;
            } else if (hd.kind >= 5) {
                int64_t k = i * ch + c;
                v = wide ? (int64_t)s[2 * k] << 8 | s[2 * k + 1] : s[k];
            } else if (hd.kind == 1) {
                while (p < n && (pnm_space(b[p]) || b[p] == '#')) {
                    if (b[p] == '#')
                        while (p < n && b[p] != '\n')
                            p++;
                    else
                        p++;
                }
                if (p >= n || (b[p] != '0' && b[p] != '1'))
                    return image_error(err, es, "PNM: bitmap ends early at pixel %lld", (long long)i);
                v = b[p++] - '0';
            } else if (pnm_number(b, n, &p, &v)) {
                return image_error(err, es, "PNM: samples end early at pixel %lld", (long long)i);
            }
            px[c] = (hd.kind == 1 || hd.kind == 4) ? (v ? 0 : 255) : pnm_scale(v, hd.maxval);
        }
        uint8_t *o = rgb + i * 3;
        o[0] = px[0];
        o[1] = ch == 3 ? px[1] : px[0];
        o[2] = ch == 3 ? px[2] : px[0];
    }
    return 0;
}

const struct image_codec image_codec_pnm = { "PNM", pnm_match, pnm_read };
