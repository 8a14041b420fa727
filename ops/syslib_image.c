/* ops/syslib_image.c — forwarding definitions of the codec functions
 * ops/image_libs.c calls (ops/syslib.h): libjpeg, libpng, libtiff, libwebp
 * and OpenJPEG. image_libs.c opens each codec's library (syslib_open) before
 * decoding, so a missing one becomes the decoder's error. */
#include <stdarg.h>
#include <stdio.h>

#include <jpeglib.h>
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "ops/syslib-impl.h"

SYSLIB_FN(SYSLIB_TIFF, TIFF *, TIFFClientOpenExt,
          (const char *a0, const char *a1, thandle_t a2, TIFFReadWriteProc a3, TIFFReadWriteProc a4, TIFFSeekProc a5,
           TIFFCloseProc a6, TIFFSizeProc a7, TIFFMapFileProc a8, TIFFUnmapFileProc a9, TIFFOpenOptions *opts),
          (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, opts))
SYSLIB_FN_VOID(SYSLIB_TIFF, TIFFClose, (TIFF * tif), (tif))
SYSLIB_FN(SYSLIB_TIFF, TIFFOpenOptions *, TIFFOpenOptionsAlloc, (void), ())
SYSLIB_FN_VOID(SYSLIB_TIFF, TIFFOpenOptionsFree, (TIFFOpenOptions * a0), (a0))
SYSLIB_FN_VOID(SYSLIB_TIFF, TIFFOpenOptionsSetErrorHandlerExtR,
               (TIFFOpenOptions * opts, TIFFErrorHandlerExtR handler, void *errorhandler_user_data),
               (opts, handler, errorhandler_user_data))
SYSLIB_FN_VOID(SYSLIB_TIFF, TIFFOpenOptionsSetWarningHandlerExtR,
               (TIFFOpenOptions * opts, TIFFErrorHandlerExtR handler, void *warnhandler_user_data),
               (opts, handler, warnhandler_user_data))
SYSLIB_FN(SYSLIB_TIFF, int, TIFFReadRGBAImageOriented,
          (TIFF * a0, uint32_t a1, uint32_t a2, uint32_t *a3, int a4, int a5), (a0, a1, a2, a3, a4, a5))
SYSLIB_FN(SYSLIB_WEBP, uint8_t *, WebPDecodeRGBInto,
          (const uint8_t *data, size_t data_size, uint8_t *output_buffer, size_t output_buffer_size, int output_stride),
          (data, data_size, output_buffer, output_buffer_size, output_stride))
SYSLIB_FN(SYSLIB_WEBP, int, WebPGetInfo, (const uint8_t *data, size_t data_size, int *width, int *height),
          (data, data_size, width, height))
SYSLIB_FN_VOID(SYSLIB_JPEG, jpeg_CreateDecompress, (j_decompress_ptr cinfo, int version, size_t structsize),
               (cinfo, version, structsize))
SYSLIB_FN_VOID(SYSLIB_JPEG, jpeg_destroy_decompress, (j_decompress_ptr cinfo), (cinfo))
SYSLIB_FN(SYSLIB_JPEG, boolean, jpeg_finish_decompress, (j_decompress_ptr cinfo), (cinfo))
SYSLIB_FN_VOID(SYSLIB_JPEG, jpeg_mem_src, (j_decompress_ptr cinfo, const unsigned char *inbuffer, unsigned long insize),
               (cinfo, inbuffer, insize))
SYSLIB_FN(SYSLIB_JPEG, int, jpeg_read_header, (j_decompress_ptr cinfo, boolean require_image), (cinfo, require_image))
SYSLIB_FN(SYSLIB_JPEG, JDIMENSION, jpeg_read_scanlines,
          (j_decompress_ptr cinfo, JSAMPARRAY scanlines, JDIMENSION max_lines), (cinfo, scanlines, max_lines))
SYSLIB_FN(SYSLIB_JPEG, boolean, jpeg_start_decompress, (j_decompress_ptr cinfo), (cinfo))
SYSLIB_FN(SYSLIB_JPEG, struct jpeg_error_mgr *, jpeg_std_error, (struct jpeg_error_mgr * err), (err))
SYSLIB_FN(SYSLIB_OPENJP2, opj_codec_t *, opj_create_decompress, (OPJ_CODEC_FORMAT format), (format))
SYSLIB_FN(SYSLIB_OPENJP2, OPJ_BOOL, opj_decode,
          (opj_codec_t * p_decompressor, opj_stream_t *p_stream, opj_image_t *p_image),
          (p_decompressor, p_stream, p_image))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_destroy_codec, (opj_codec_t * p_codec), (p_codec))
SYSLIB_FN(SYSLIB_OPENJP2, OPJ_BOOL, opj_end_decompress, (opj_codec_t * p_codec, opj_stream_t *p_stream),
          (p_codec, p_stream))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_image_destroy, (opj_image_t * image), (image))
SYSLIB_FN(SYSLIB_OPENJP2, OPJ_BOOL, opj_read_header,
          (opj_stream_t * p_stream, opj_codec_t *p_codec, opj_image_t **p_image), (p_stream, p_codec, p_image))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_set_default_decoder_parameters, (opj_dparameters_t * parameters), (parameters))
SYSLIB_FN(SYSLIB_OPENJP2, OPJ_BOOL, opj_set_error_handler,
          (opj_codec_t * p_codec, opj_msg_callback p_callback, void *p_user_data), (p_codec, p_callback, p_user_data))
SYSLIB_FN(SYSLIB_OPENJP2, OPJ_BOOL, opj_set_info_handler,
          (opj_codec_t * p_codec, opj_msg_callback p_callback, void *p_user_data), (p_codec, p_callback, p_user_data))
SYSLIB_FN(SYSLIB_OPENJP2, OPJ_BOOL, opj_set_warning_handler,
          (opj_codec_t * p_codec, opj_msg_callback p_callback, void *p_user_data), (p_codec, p_callback, p_user_data))
SYSLIB_FN(SYSLIB_OPENJP2, OPJ_BOOL, opj_setup_decoder, (opj_codec_t * p_codec, opj_dparameters_t *parameters),
          (p_codec, parameters))
SYSLIB_FN(SYSLIB_OPENJP2, opj_stream_t *, opj_stream_default_create, (OPJ_BOOL p_is_input), (p_is_input))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_stream_destroy, (opj_stream_t * p_stream), (p_stream))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_stream_set_read_function, (opj_stream_t * p_stream, opj_stream_read_fn p_function),
               (p_stream, p_function))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_stream_set_seek_function, (opj_stream_t * p_stream, opj_stream_seek_fn p_function),
               (p_stream, p_function))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_stream_set_skip_function, (opj_stream_t * p_stream, opj_stream_skip_fn p_function),
               (p_stream, p_function))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_stream_set_user_data,
               (opj_stream_t * p_stream, void *p_data, opj_stream_free_user_data_fn p_function),
               (p_stream, p_data, p_function))
SYSLIB_FN_VOID(SYSLIB_OPENJP2, opj_stream_set_user_data_length, (opj_stream_t * p_stream, OPJ_UINT64 data_length),
               (p_stream, data_length))
SYSLIB_FN(SYSLIB_PNG, png_infop, png_create_info_struct, (png_const_structrp png_ptr), (png_ptr))
SYSLIB_FN(SYSLIB_PNG, png_structp, png_create_read_struct,
          (png_const_charp user_png_ver, png_voidp error_ptr, png_error_ptr error_fn, png_error_ptr warn_fn),
          (user_png_ver, error_ptr, error_fn, warn_fn))
SYSLIB_FN_VOID(SYSLIB_PNG, png_destroy_read_struct,
               (png_structpp png_ptr_ptr, png_infopp info_ptr_ptr, png_infopp end_info_ptr_ptr),
               (png_ptr_ptr, info_ptr_ptr, end_info_ptr_ptr))
SYSLIB_FN_NORETURN(SYSLIB_PNG, png_error, (png_const_structrp png_ptr, png_const_charp error_message),
                   (png_ptr, error_message))
SYSLIB_FN(SYSLIB_PNG, png_byte, png_get_bit_depth, (png_const_structrp png_ptr, png_const_inforp info_ptr),
          (png_ptr, info_ptr))
SYSLIB_FN(SYSLIB_PNG, png_byte, png_get_color_type, (png_const_structrp png_ptr, png_const_inforp info_ptr),
          (png_ptr, info_ptr))
SYSLIB_FN(SYSLIB_PNG, png_voidp, png_get_error_ptr, (png_const_structrp png_ptr), (png_ptr))
SYSLIB_FN(SYSLIB_PNG, png_uint_32, png_get_image_height, (png_const_structrp png_ptr, png_const_inforp info_ptr),
          (png_ptr, info_ptr))
SYSLIB_FN(SYSLIB_PNG, png_uint_32, png_get_image_width, (png_const_structrp png_ptr, png_const_inforp info_ptr),
          (png_ptr, info_ptr))
SYSLIB_FN(SYSLIB_PNG, png_voidp, png_get_io_ptr, (png_const_structrp png_ptr), (png_ptr))
SYSLIB_FN(SYSLIB_PNG, size_t, png_get_rowbytes, (png_const_structrp png_ptr, png_const_inforp info_ptr),
          (png_ptr, info_ptr))
SYSLIB_FN_NORETURN(SYSLIB_PNG, png_longjmp, (png_const_structrp png_ptr, int val), (png_ptr, val))
SYSLIB_FN_VOID(SYSLIB_PNG, png_read_end, (png_structrp png_ptr, png_inforp info_ptr), (png_ptr, info_ptr))
SYSLIB_FN_VOID(SYSLIB_PNG, png_read_image, (png_structrp png_ptr, png_bytepp image), (png_ptr, image))
SYSLIB_FN_VOID(SYSLIB_PNG, png_read_info, (png_structrp png_ptr, png_inforp info_ptr), (png_ptr, info_ptr))
SYSLIB_FN_VOID(SYSLIB_PNG, png_read_update_info, (png_structrp png_ptr, png_inforp info_ptr), (png_ptr, info_ptr))
SYSLIB_FN_VOID(SYSLIB_PNG, png_set_expand_gray_1_2_4_to_8, (png_structrp png_ptr), (png_ptr))
SYSLIB_FN_VOID(SYSLIB_PNG, png_set_gray_to_rgb, (png_structrp png_ptr), (png_ptr))
SYSLIB_FN(SYSLIB_PNG, int, png_set_interlace_handling, (png_structrp png_ptr), (png_ptr))
SYSLIB_FN(SYSLIB_PNG, jmp_buf *, png_set_longjmp_fn,
          (png_structrp png_ptr, png_longjmp_ptr longjmp_fn, size_t jmp_buf_size), (png_ptr, longjmp_fn, jmp_buf_size))
SYSLIB_FN_VOID(SYSLIB_PNG, png_set_palette_to_rgb, (png_structrp png_ptr), (png_ptr))
SYSLIB_FN_VOID(SYSLIB_PNG, png_set_read_fn, (png_structrp png_ptr, png_voidp io_ptr, png_rw_ptr read_data_fn),
               (png_ptr, io_ptr, read_data_fn))
SYSLIB_FN_VOID(SYSLIB_PNG, png_set_scale_16, (png_structrp png_ptr), (png_ptr))
SYSLIB_FN_VOID(SYSLIB_PNG, png_set_strip_alpha, (png_structrp png_ptr), (png_ptr))

/* Variadic: forwarded to its va_list form. */
int TIFFGetField(TIFF *tif, uint32_t tag, ...)
{
    typedef int (*fn_type)(TIFF *, uint32_t, va_list);
    SYSLIB_RESOLVE(SYSLIB_TIFF, fn_type, TIFFVGetField)
    va_list ap;
    va_start(ap, tag);
    int r = f(tif, tag, ap);
    va_end(ap);
    return r;
}
