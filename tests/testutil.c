/* tests/testutil.c — helpers shared by the Check suites. */
#include <stdlib.h>

#include "testutil.h"

const char *testutil_data_dir(void)
{
    const char *env = getenv("DTRX_DATA_DIR");
    return env && *env ? env : DTRX_DATA_DIR;
}
