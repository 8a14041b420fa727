/* tests/testutil.h — helpers shared by the Check suites. */
#ifndef DTRX_TESTUTIL_H
#define DTRX_TESTUTIL_H

#include <check.h>
#include <stddef.h>

/* ../shared/data, or $DTRX_DATA_DIR when set. */
const char *testutil_data_dir(void);

/* A suite named suite with one test case, *tc, named tcase and given
 * timeout seconds (the tests are added to *tc afterwards). */
Suite *testutil_suite(const char *suite, const char *tcase, double timeout, TCase **tc);

/* Runs s (CK_NORMAL), frees it; main's exit status: 1 when a test failed. */
int testutil_run(Suite *s);

/* Runs the dtrexec binary with args (a shell command line), stdout and
 * stderr together into out (n bytes, NUL-terminated); its exit status. */
int testutil_run_cli(const char *args, char *out, size_t n);

/* Removes a scratch folder and everything in it (rm -rf). */
void testutil_remove_dir(const char *dir);

#endif
