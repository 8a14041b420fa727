/* tests/testutil.h — helpers shared by the Check suites. */
#ifndef DTRX_TESTUTIL_H
#define DTRX_TESTUTIL_H

/* ../shared/data, or $DTRX_DATA_DIR when set. */
const char *testutil_data_dir(void);

#endif
