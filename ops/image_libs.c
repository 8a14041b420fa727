/* ops/image_libs.c — the codecs that go through system libraries: JPEG
 * (libjpeg; baseline and progressive; libjpeg's default islow IDCT and fancy
 * upsampling, as PIL decodes), PNG (libpng; palette, grey, 16-bit and alpha
 * converted to 8-bit RGB), TIFF (libtiff's RGBA reader:
 * any compression and photometric libtiff knows), WebP (libwebp; still
 * images) and JPEG 2000 (openjpeg; JP2 files and raw J2K codestreams, up to
 * 16-bit components, no subsampled ones). Each library's errors become the
 * message; none of them prints anything. Each library is opened on the first
 * image of its format (ops/syslib.h); a missing one is the decode's error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "ops/image-impl.h"
#include "ops/syslib.h"

static int side_ok(int64_t w, int64_t h) { return w >= 1 && h >= 1 && w <= IMAGE_MAX_SIDE && h <= IMAGE_MAX_SIDE; }

static int side_error(const char *fmt_name, int64_t w, int64_t h, char *err, size_t es)
{
    return image_error(err, es, "%s: size %lld x %lld is out of range (1..%lld)", fmt_name, (long long)w,
                       (long long)h, (long long)IMAGE_MAX_SIDE);
}

/* ---- JPEG ----------------------------------------------------------------- */

struct jpeg_fail {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
};

static void jpeg_on_error(j_common_ptr cinfo)
{
    struct jpeg_fail *f = (struct jpeg_fail *)cinfo->err;
    f->mgr.format_message(cinfo, f->msg);
    longjmp(f->jump, 1);
}

static void jpeg_on_message(j_common_ptr cinfo, int level) { (void)cinfo; (void)level; }

static int jpeg_match(const uint8_t *b, size_t n) { return n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }

/* Reads the header, and with rgb non-NULL the pixels. */
static int jpeg_read(const uint8_t *b, size_t n, int64_t *w, int64_t *h, uint8_t *rgb, char *err, size_t es)
{
    if (syslib_open(SYSLIB_JPEG, err, es))
        return -1;
    struct jpeg_decompress_struct cinfo;
    struct jpeg_fail fail;
    cinfo.err = jpeg_std_error(&fail.mgr);
    fail.mgr.error_exit = jpeg_on_error;
    fail.mgr.emit_message = jpeg_on_message;
    if (setjmp(fail.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return image_error(err, es, "JPEG: %s", fail.msg);
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, b, (unsigned long)n);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    int64_t iw = cinfo.image_width, ih = cinfo.image_height;
    if (!side_ok(iw, ih)) {
        jpeg_destroy_decompress(&cinfo);
        return side_error("JPEG", iw, ih, err, es);
    }
    if (rgb) {
        jpeg_start_decompress(&cinfo);
        if ((int64_t)cinfo.output_width != *w || (int64_t)cinfo.output_height != *h ||
            cinfo.output_components != 3) {
            jpeg_destroy_decompress(&cinfo);
            return image_error(err, es, "JPEG: the decoder's output is not %lld x %lld RGB", (long long)*w,
                               (long long)*h);
        }
        while (cinfo.output_scanline < cinfo.output_height) {
            JSAMPROW row = rgb + (size_t)cinfo.output_scanline * (size_t)*w * 3;
            jpeg_read_scanlines(&cinfo, &row, 1);
        }
        jpeg_finish_decompress(&cinfo);
    } else {
        *w = iw;
        *h = ih;
    }
    jpeg_destroy_decompress(&cinfo);
    return 0;
}

const struct image_codec image_codec_jpeg = { "JPEG", jpeg_match, jpeg_read };

/* ---- PNG ------------------------------------------------------------------ */

/* libpng's classic API rather than the simplified one, which takes 16-bit
 * samples for linear light and re-encodes them as sRGB: here 16-bit samples
 * scale to 8 bits as round(v * 255 / 65535), palettes and grey expand to
 * RGB, alpha is dropped and gamma chunks are ignored, as PIL ignores them. */
struct png_mem {
    const uint8_t *b;
    size_t n, pos;
    char msg[200];
};

static void pm_read(png_structp png, png_bytep out, size_t len)
{
    struct png_mem *m = png_get_io_ptr(png);
    if (len > m->n - m->pos)
        png_error(png, "the stream ends early");
    memcpy(out, m->b + m->pos, len);
    m->pos += len;
}

static void pm_on_error(png_structp png, png_const_charp msg)
{
    struct png_mem *m = png_get_error_ptr(png);
    snprintf(m->msg, sizeof m->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void pm_on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

static int pngc_match(const uint8_t *b, size_t n) { return n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8); }

static int pngc_read(const uint8_t *b, size_t n, int64_t *w, int64_t *h, uint8_t *rgb, char *err, size_t es)
{
    if (syslib_open(SYSLIB_PNG, err, es))
        return -1;
    struct png_mem m = { b, n, 0, "" };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &m, pm_on_error, pm_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *volatile rows = NULL;
    if (!png || !info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return image_error(err, es, "PNG: libpng cannot start a decoder");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows);
        return image_error(err, es, "PNG: %s", m.msg);
    }
    png_set_read_fn(png, &m, pm_read);
    png_read_info(png, info);
    int64_t iw = png_get_image_width(png, info), ih = png_get_image_height(png, info);
    if (!side_ok(iw, ih)) {
        png_destroy_read_struct(&png, &info, NULL);
        return side_error("PNG", iw, ih, err, es);
    }
    if (!rgb) {
        *w = iw;
        *h = ih;
        png_destroy_read_struct(&png, &info, NULL);
        return 0;
    }
    int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (depth == 16)
        png_set_scale_16(png);
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
    png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if ((int64_t)png_get_rowbytes(png, info) != iw * 3 || iw != *w || ih != *h)
        png_error(png, "the decoder's output is not 8-bit RGB of the header's size");
    rows = malloc((size_t)ih * sizeof *rows);
    if (!rows)
        png_error(png, "out of host memory for the row table");
    for (int64_t y = 0; y < ih; y++)
        rows[y] = rgb + y * iw * 3;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    return 0;
}

const struct image_codec image_codec_png = { "PNG", pngc_match, pngc_read };

/* ---- TIFF ----------------------------------------------------------------- */

struct tiff_mem {
    const uint8_t *b;
    toff_t n, pos;
    char *err;
    size_t es;
    int failed;
};

static tsize_t tm_read(thandle_t h, tdata_t buf, tsize_t size)
{
    struct tiff_mem *m = h;
    toff_t left = m->pos < m->n ? m->n - m->pos : 0;
    toff_t k = (toff_t)size < left ? (toff_t)size : left;
    memcpy(buf, m->b + m->pos, (size_t)k);
    m->pos += k;
    return (tsize_t)k;
}

static tsize_t tm_write(thandle_t h, tdata_t buf, tsize_t size) { (void)h; (void)buf; (void)size; return -1; }

static toff_t tm_seek(thandle_t h, toff_t off, int whence)
{
    struct tiff_mem *m = h;
    toff_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->n;
    m->pos = base + off;
    return m->pos;
}

static int tm_close(thandle_t h) { (void)h; return 0; }
static toff_t tm_size(thandle_t h) { return ((struct tiff_mem *)h)->n; }

static int tm_on_error(TIFF *t, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)t;
    struct tiff_mem *m = user;
    if (!m->failed && m->err && m->es) {
        char msg[256];
        vsnprintf(msg, sizeof msg, fmt, ap);
        image_error(m->err, m->es, "TIFF: %s%s%s", module ? module : "", module ? ": " : "", msg);
    }
    m->failed = 1;
    return 1;
}

static int tm_on_warning(TIFF *t, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)t; (void)user; (void)module; (void)fmt; (void)ap;
    return 1;
}

static int tiff_match(const uint8_t *b, size_t n)
{
    return n >= 4 && ((b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
                      (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43)));
}

static TIFF *tiff_open(struct tiff_mem *m)
{
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o)
        return NULL;
    TIFFOpenOptionsSetErrorHandlerExtR(o, tm_on_error, m);
    TIFFOpenOptionsSetWarningHandlerExtR(o, tm_on_warning, m);
    TIFF *t = TIFFClientOpenExt("memory", "rm", (thandle_t)m, tm_read, tm_write, tm_seek, tm_close, tm_size,
                                NULL, NULL, o);
    TIFFOpenOptionsFree(o);
    return t;
}

static int tiff_read(const uint8_t *b, size_t n, int64_t *w, int64_t *h, uint8_t *rgb, char *err, size_t es)
{
    if (syslib_open(SYSLIB_TIFF, err, es))
        return -1;
    struct tiff_mem m = { b, n, 0, err, es, 0 };
    TIFF *t = tiff_open(&m);
    if (!t)
        return m.failed ? -1 : image_error(err, es, "TIFF: the stream cannot be opened");
    uint32_t iw = 0, ih = 0;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &iw);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &ih);
    if (!side_ok(iw, ih)) {
        TIFFClose(t);
        return side_error("TIFF", iw, ih, err, es);
    }
    if (!rgb) {
        *w = iw;
        *h = ih;
        TIFFClose(t);
        return 0;
    }
    if ((int64_t)iw != *w || (int64_t)ih != *h) {
        TIFFClose(t);
        return image_error(err, es, "TIFF: the image is %u x %u, not %lld x %lld", iw, ih, (long long)*w, (long long)*h);
    }
    uint32_t *raster = malloc((size_t)iw * ih * sizeof *raster);
    if (!raster) {
        TIFFClose(t);
        return image_error(err, es, "TIFF: out of host memory for %u x %u pixels", iw, ih);
    }
    int ok = TIFFReadRGBAImageOriented(t, iw, ih, raster, ORIENTATION_TOPLEFT, 0) && !m.failed;
    TIFFClose(t);
    if (!ok) {
        free(raster);
        return m.failed ? -1 : image_error(err, es, "TIFF: the pixels cannot be read");
    }
    for (size_t i = 0; i < (size_t)iw * ih; i++) {
        rgb[3 * i] = (uint8_t)TIFFGetR(raster[i]);
        rgb[3 * i + 1] = (uint8_t)TIFFGetG(raster[i]);
        rgb[3 * i + 2] = (uint8_t)TIFFGetB(raster[i]);
    }
    free(raster);
    return 0;
}

const struct image_codec image_codec_tiff = { "TIFF", tiff_match, tiff_read };

/* ---- WebP ----------------------------------------------------------------- */

static int webp_match(const uint8_t *b, size_t n) { return n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4); }

static int webp_read(const uint8_t *b, size_t n, int64_t *w, int64_t *h, uint8_t *rgb, char *err, size_t es)
{
    if (syslib_open(SYSLIB_WEBP, err, es))
        return -1;
    int iw = 0, ih = 0;
    if (!WebPGetInfo(b, n, &iw, &ih))
        return image_error(err, es, "WebP: the stream is not a still WebP image libwebp can read");
    if (!side_ok(iw, ih))
        return side_error("WebP", iw, ih, err, es);
    if (!rgb) {
        *w = iw;
        *h = ih;
        return 0;
    }
    if (iw != *w || ih != *h)
        return image_error(err, es, "WebP: the image is %d x %d, not %lld x %lld", iw, ih, (long long)*w, (long long)*h);
    if (!WebPDecodeRGBInto(b, n, rgb, (size_t)iw * (size_t)ih * 3, iw * 3))
        return image_error(err, es, "WebP: libwebp cannot decode the stream");
    return 0;
}

const struct image_codec image_codec_webp = { "WebP", webp_match, webp_read };

/* ---- JPEG 2000 ------------------------------------------------------------ */

struct jp2_mem {
    const uint8_t *b;
    OPJ_SIZE_T n, pos;
    char *err;
    size_t es;
    int failed;
};

static OPJ_SIZE_T jm_read(void *buf, OPJ_SIZE_T size, void *user)
{
    struct jp2_mem *m = user;
    if (m->pos >= m->n)
        return (OPJ_SIZE_T)-1;
    OPJ_SIZE_T k = size < m->n - m->pos ? size : m->n - m->pos;
    memcpy(buf, m->b + m->pos, k);
    m->pos += k;
    return k;
}

static OPJ_OFF_T jm_skip(OPJ_OFF_T off, void *user)
{
    struct jp2_mem *m = user;
    if (off < 0 || (OPJ_SIZE_T)off > m->n - m->pos)
        return -1;
    m->pos += (OPJ_SIZE_T)off;
    return off;
}

static OPJ_BOOL jm_seek(OPJ_OFF_T off, void *user)
{
    struct jp2_mem *m = user;
    if (off < 0 || (OPJ_SIZE_T)off > m->n)
        return OPJ_FALSE;
    m->pos = (OPJ_SIZE_T)off;
    return OPJ_TRUE;
}

static void jm_on_error(const char *msg, void *user)
{
    struct jp2_mem *m = user;
    if (!m->failed) {
        size_t len = strlen(msg);
        image_error(m->err, m->es, "JPEG 2000: %.*s", (int)(len && msg[len - 1] == '\n' ? len - 1 : len), msg);
    }
    m->failed = 1;
}

static void jm_quiet(const char *msg, void *user) { (void)msg; (void)user; }

static const uint8_t jp2_signature[12] = { 0, 0, 0, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A };

static int jp2_match(const uint8_t *b, size_t n)
{
    return (n >= 12 && !memcmp(b, jp2_signature, 12)) ||
           (n >= 4 && b[0] == 0xFF && b[1] == 0x4F && b[2] == 0xFF && b[3] == 0x51);
}

/* An 8-bit sample from component c at pixel i. */
static uint8_t jp2_sample(const opj_image_comp_t *c, size_t i)
{
    int64_t v = c->data[i];
    if (c->sgnd)
        v += (int64_t)1 << (c->prec - 1);
    int64_t top = ((int64_t)1 << c->prec) - 1;
    v = v < 0 ? 0 : v > top ? top : v;
    if (c->prec > 8)
        return (uint8_t)(v >> (c->prec - 8));
    return (uint8_t)((v * 255 + top / 2) / top);
}

static int jp2_read(const uint8_t *b, size_t n, int64_t *w, int64_t *h, uint8_t *rgb, char *err, size_t es)
{
    if (syslib_open(SYSLIB_OPENJP2, err, es))
        return -1;
    struct jp2_mem m = { b, n, 0, err, es, 0 };
    opj_codec_t *codec = opj_create_decompress(b[0] == 0xFF ? OPJ_CODEC_J2K : OPJ_CODEC_JP2);
    opj_stream_t *s = opj_stream_default_create(OPJ_TRUE);
    opj_image_t *img = NULL;
    int rc = -1;
    if (!codec || !s) {
        image_error(err, es, "JPEG 2000: openjpeg cannot start a decoder");
        goto done;
    }
    opj_set_error_handler(codec, jm_on_error, &m);
    opj_set_warning_handler(codec, jm_quiet, &m);
    opj_set_info_handler(codec, jm_quiet, &m);
    opj_stream_set_user_data(s, &m, NULL);
    opj_stream_set_user_data_length(s, n);
    opj_stream_set_read_function(s, jm_read);
    opj_stream_set_skip_function(s, jm_skip);
    opj_stream_set_seek_function(s, jm_seek);
    opj_dparameters_t par;
    opj_set_default_decoder_parameters(&par);
    if (!opj_setup_decoder(codec, &par) || !opj_read_header(s, codec, &img) || !img) {
        if (!m.failed)
            image_error(err, es, "JPEG 2000: the header cannot be read");
        goto done;
    }
    int64_t iw = (int64_t)img->x1 - img->x0, ih = (int64_t)img->y1 - img->y0;
    if (!side_ok(iw, ih)) {
        side_error("JPEG 2000", iw, ih, err, es);
        goto done;
    }
    if (img->numcomps < 1) {
        image_error(err, es, "JPEG 2000: the image has no components");
        goto done;
    }
    if (!rgb) {
        *w = iw;
        *h = ih;
        rc = 0;
        goto done;
    }
    if (!opj_decode(codec, s, img) || !opj_end_decompress(codec, s)) {
        if (!m.failed)
            image_error(err, es, "JPEG 2000: the codestream cannot be decoded");
        goto done;
    }
    if (img->color_space == OPJ_CLRSPC_SYCC || img->color_space == OPJ_CLRSPC_EYCC ||
        img->color_space == OPJ_CLRSPC_CMYK) {
        image_error(err, es, "JPEG 2000: colour space %d is not supported (sRGB and grey)", (int)img->color_space);
        goto done;
    }
    int nc = img->numcomps >= 3 ? 3 : 1;
    for (int k = 0; k < nc; k++) {
        const opj_image_comp_t *c = &img->comps[k];
        if ((int64_t)c->w != *w || (int64_t)c->h != *h || c->prec < 1 || c->prec > 16 || !c->data) {
            image_error(err, es, "JPEG 2000: component %d is %u x %u at %u bits (subsampled or deeper than 16 bits)",
                        k, c->w, c->h, c->prec);
            goto done;
        }
    }
    for (size_t i = 0; i < (size_t)*w * (size_t)*h; i++)
        for (int k = 0; k < 3; k++)
            rgb[3 * i + k] = jp2_sample(&img->comps[nc == 3 ? k : 0], i);
    rc = 0;
done:
    if (img)
        opj_image_destroy(img);
    if (s)
        opj_stream_destroy(s);
    if (codec)
        opj_destroy_codec(codec);
    return rc;
}

const struct image_codec image_codec_jp2 = { "JPEG 2000", jp2_match, jp2_read };
