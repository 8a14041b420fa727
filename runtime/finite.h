/* runtime/finite.h — finding where a training step's values stopped
 * being finite (finite.c). */
#ifndef DTRX_RUNTIME_FINITE_H
#define DTRX_RUNTIME_FINITE_H

struct dtrx_session;

/* On: every call's first non-finite output is described in s->nonfinite,
 * once per run, by a call hook; off: no check (finite.c). */
void rt_finite_watch(struct dtrx_session *s, int on);
/* NaN without the sign bit, so that messages never say "-nan" (finite.c). */
double rt_unsigned_nan(double v);

#endif
