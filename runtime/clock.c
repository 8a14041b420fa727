/* runtime/clock.c — the monotonic clock the runtime times steps, kernels and
 * DTR's bookkeeping with. A leaf: it calls nothing of the runtime. */
#include <time.h>

#include "runtime/clock.h"

double rt_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
