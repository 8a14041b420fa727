/* tests/testutil.c — helpers shared by the Check suites. */
#include <stdlib.h>

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
