/* tests/fuzz/fuzz_options.c — the command line's number parsers
 * (cli/options.c): a --budget (bytes with a unit, or a ratio "0.5x"), and
 * the range-checked numbers and integers behind --lr, --threads, --dim and
 * the rest. Whatever they accept must be finite and inside the range they
 * were given. (The parsers print their refusals on stderr.) */
#include <math.h>
#include <string.h>

#include "cli/cli.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char text[257];
    memcpy(text, data, size);
    text[size] = 0;
    double bytes, ratio;
    if (cli_parse_size(text, &bytes, &ratio) == 0) {
        FUZZ_REQUIRE(isfinite(bytes) && isfinite(ratio));
        FUZZ_REQUIRE((bytes >= 1 && ratio == 0) || (bytes == 0 && ratio > 0));
    }
    double v;
    if (cli_parse_number("fuzz", "--lr", text, 0, 1e6, &v) == 0)
        FUZZ_REQUIRE(isfinite(v) && v >= 0 && v <= 1e6);
    long long k;
    if (cli_parse_int("fuzz", "--threads", text, 1, 1024, &k) == 0)
        FUZZ_REQUIRE(k >= 1 && k <= 1024);
    return 0;
}
