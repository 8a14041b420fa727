/* tests/fuzz/fuzz_image.c — ImageDecoder's codecs (ops/image-impl.h) on
 * arbitrary bytes: the codec found by signature reads the size, and where
 * the image is at most 2^20 pixels decodes it. Each step either succeeds or
 * fails with a message; a decoded image must have the header's size. */
#include <stdlib.h>

#include "ops/image-impl.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct image_codec *codec = image_codec_find(data, size);
    if (!codec)
        return 0;
    char err[256] = "";
    int64_t w = 0, h = 0;
    if (codec->read(data, size, &w, &h, NULL, err, sizeof err)) {
        FUZZ_REQUIRE(err[0]);
        return 0;
    }
    FUZZ_REQUIRE(w >= 1 && h >= 1 && w <= IMAGE_MAX_SIDE && h <= IMAGE_MAX_SIDE);
    if (w * h > ((int64_t)1 << 20))
        return 0;
    uint8_t *rgb = malloc((size_t)(w * h * 3));
    if (!rgb)
        return 0;
    err[0] = 0;
    if (codec->read(data, size, &w, &h, rgb, err, sizeof err))
        FUZZ_REQUIRE(err[0]);
    free(rgb);
    return 0;
}
