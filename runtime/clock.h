/* runtime/clock.h — the runtime's monotonic clock (clock.c), a leaf that
 * the device, the DTR bridge and the step timing share. */
#ifndef DTRX_RUNTIME_CLOCK_H
#define DTRX_RUNTIME_CLOCK_H

/* Seconds on the monotonic clock. */
double rt_now_seconds(void);

#endif
