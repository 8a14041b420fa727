/* runtime/stepnames.h — the exported names of a training step's calls
 * (stepnames.c), shared by the export recorder (export.c) and the schedule
 * follower (planned.c). */
#ifndef DTRX_RUNTIME_STEPNAMES_H
#define DTRX_RUNTIME_STEPNAMES_H

struct dtrx_session;
struct rt_call;

/* Exported names of the step's calls, in execution order (stepnames.c). */
struct rt_step_names {
    int n, cap;
    char **call_names;
    char **names;
    const struct rt_call **calls;
};

/* Step recording for `dtrexec export` (export.c): its call hook records
 * every executed call while s->recorder is set. */
struct rt_recorder;
/* The exported name of the step's next call c (stepnames.c). */
const char *rt_step_name(struct dtrx_session *s, const struct rt_call *c);
void rt_step_names_reset(struct dtrx_session *s);
void rt_step_names_free(struct dtrx_session *s);
/* 1 when name is base or base/<number>. */
int rt_name_is_numbered(const char *name, const char *base);

#endif
