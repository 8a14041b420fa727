/* tests/testutil.c — helpers shared by the Check suites. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "testutil.h"

const char *testutil_data_dir(void)
{
    const char *env = getenv("DTRX_DATA_DIR");
    return env && *env ? env : DTRX_DATA_DIR;
}

Suite *testutil_suite(const char *suite, const char *tcase, double timeout, TCase **tc)
{
    Suite *s = suite_create(suite);
    *tc = tcase_create(tcase);
    tcase_set_timeout(*tc, timeout);
    suite_add_tcase(s, *tc);
    return s;
}

int testutil_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

int testutil_run_cli(const char *args, char *out, size_t n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", DTRX_BINARY, args);
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    size_t len = fread(out, 1, n - 1, p);
    out[len] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void testutil_remove_dir(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}
