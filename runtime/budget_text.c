/* runtime/budget_text.c — dtrx_parse_budget: the text of a budget, as
 * `dtrexec --budget` and the Python package take it ("4GB", "512MiB",
 * "1000", "0.5x"). The command's parser (cli/options.c) is this one. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>

#include "runtime/status.h"

/* The limits of cli/cli.h's CLI_SIZE_RANGE: 1 byte to 2^62 bytes, 1e-6x to 1000x. */
#define BUDGET_BYTES_MAX 4611686018427387904.0
#define BUDGET_RATIO_MIN 1e-6
#define BUDGET_RATIO_MAX 1e3

static const struct {
    const char *suffix;
    double factor;
} size_units[] = {
    { "", 1 }, { "B", 1 },
    { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
    { "K", 1024.0 }, { "M", 1048576.0 }, { "G", 1073741824.0 },
    { "KIB", 1024.0 }, { "MIB", 1048576.0 }, { "GIB", 1073741824.0 }, { "TIB", 1099511627776.0 },
};

enum dtrx_status dtrx_parse_budget(const char *text, double *bytes, double *ratio)
{
    char *end = NULL;
    double v = strtod(text, &end);
    *bytes = 0;
    *ratio = 0;
    if (end == text || !isfinite(v) || !(v > 0))
        goto bad;
    if ((end[0] == 'x' || end[0] == 'X') && !end[1]) {
        if (!(v >= BUDGET_RATIO_MIN && v <= BUDGET_RATIO_MAX))
            goto bad;
        *ratio = v;
        return DTRX_OK;
    }
    while (isspace((unsigned char)*end))
        end++;
    for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++)
        if (!strcasecmp(end, size_units[i].suffix)) {
            double b = v * size_units[i].factor;
            if (!(b >= 1 && b <= BUDGET_BYTES_MAX))
                goto bad;
            *bytes = b;
            return DTRX_OK;
        }
bad:
    return rt_fail(DTRX_ERR_INPUT, "a budget is a size from 1 byte to 2^62 bytes (4GB, 512MiB, 1000000) or a ratio "
                                   "from 1e-06x to 1000x of the unbudgeted peak, got '%s'", text);
}
