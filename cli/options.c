/* cli/options.c — parsing helpers shared by the subcommands. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "runtime/dtrexec.h"

static const struct {
    const char *suffix;
    double factor;
} size_units[] = {
    { "", 1 }, { "B", 1 },
    { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
    { "K", 1024.0 }, { "M", 1048576.0 }, { "G", 1073741824.0 },
    { "KIB", 1024.0 }, { "MIB", 1048576.0 }, { "GIB", 1073741824.0 }, { "TIB", 1099511627776.0 },
};

int cli_parse_size(const char *text, double *bytes, double *ratio)
{
    char *end = NULL;
    double v = strtod(text, &end);
    *bytes = 0;
    *ratio = 0;
    if (end == text || !isfinite(v) || !(v > 0))
        return -1;
    if ((end[0] == 'x' || end[0] == 'X') && !end[1]) {
        if (!(v >= CLI_RATIO_MIN && v <= CLI_RATIO_MAX))
            return -1;
        *ratio = v;
        return 0;
    }
    while (isspace((unsigned char)*end))
        end++;
    for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++)
        if (!strcasecmp(end, size_units[i].suffix)) {
            double b = v * size_units[i].factor;
            if (!(b >= 1 && b <= CLI_SIZE_MAX))
                return -1;
            *bytes = b;
            return 0;
        }
    return -1;
}

int cli_parse_number(const char *cmd, const char *opt, const char *text, double min, double max, double *out)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < min || v > max) {
        fprintf(stderr, "%s: %s expects a finite number from %g to %g, got '%s'\n", cmd, opt, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *text, long long min, long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        fprintf(stderr, "%s: %s expects an integer from %lld to %lld, got '%s'\n", cmd, opt, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_patterns_add(char **list, const char *pattern)
{
    size_t old = *list ? strlen(*list) : 0;
    char *grown = realloc(*list, old + strlen(pattern) + 2);
    if (!grown)
        return -1;
    if (old)
        grown[old++] = ',';
    strcpy(grown + old, pattern);
    *list = grown;
    return 0;
}

void cli_patterns_warn_unmatched(const char *option, const char *patterns, const struct dtrx_param_info *p, int n)
{
    for (const char *at = patterns; at && *at;) {
        size_t len = strcspn(at, ",");
        char pattern[512];
        snprintf(pattern, sizeof pattern, "%.*s", (int)len, at);
        int hit = 0;
        for (int i = 0; i < n && !hit; i++)
            hit = !fnmatch(pattern, p[i].name, 0);
        if (!hit && pattern[0])
            fprintf(stderr, "dtrexec: warning: %s '%s' matches no initializer\n", option, pattern);
        at += len + (at[len] == ',');
    }
}
