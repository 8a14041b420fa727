/* cli/options.c — parsing helpers shared by the subcommands. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/dtrexec.h"

/* The runtime's parser (runtime/budget_text.c), so that the Python package
 * takes the same budgets. */
int cli_parse_size(const char *text, double *bytes, double *ratio)
{
    return dtrx_parse_budget(text, bytes, ratio) ? -1 : 0;
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
