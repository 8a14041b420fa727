/* runtime/device.h — the session's device (device.c). device.c
 * includes only this header, so it brings what device.c uses: the session's
 * structure, errors and the clock. */
#ifndef DTRX_RUNTIME_DEVICE_H
#define DTRX_RUNTIME_DEVICE_H

#include "runtime/clock.h"
#include "runtime/session.h"
#include "runtime/status.h"

/* The session's device (device.c): the backend, host<->tensor copies
 * (memcpy on the host), host copies of an op's host_inputs around infer()
 * and the kernel, the kernel of an op on the backend, kernel timing, and
 * host mirrors of tensors handed out by dtrx_session_tensor (a write to one
 * reaches the device before the next run). */
struct rt_device;
enum dtrx_status rt_device_open(struct dtrx_session *s);
void rt_device_close(struct dtrx_session *s);
const struct backend *rt_backend(const struct dtrx_session *s);
int rt_device_on_host(const struct dtrx_session *s);
enum dtrx_status rt_to_device(struct dtrx_session *s, void *dst, const void *src, size_t bytes);
enum dtrx_status rt_to_host(const struct dtrx_session *s, void *dst, const void *src, size_t bytes);
/* `data` itself on the host, else a host copy valid until the next call; NULL on failure. */
const void *rt_host_view(struct dtrx_session *s, const void *data, size_t bytes);
int (*rt_kernel_of(struct dtrx_session *s, const struct op_def *def))(struct op_call *);
int rt_call_infer(struct dtrx_session *s, struct op_call *call);
int rt_kernel_run(struct dtrx_session *s, int (*kernel)(struct op_call *), struct op_call *call);
double rt_kernel_timer_begin(struct dtrx_session *s);
double rt_kernel_timer_end(struct dtrx_session *s, double t0);
/* The time once the device has finished the work queued so far. */
double rt_now_synced(struct dtrx_session *s);
void *rt_host_mirror(struct dtrx_session *s, struct rt_value *v);
int rt_device_before_run(struct dtrx_session *s);

#endif
