/* runtime/stepnames.c — the exported names of a training step's calls, in
 * the order they ran: a model node keeps its name, the loss's calls are
 * "loss", "loss/1", ..., a gradient call is "<forward call>/grad[/k]".
 * What the export recorder (export.c) writes and what a schedule
 * (planned.c) is matched against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "runtime/stepnames.h"

/* 1 when name is base or base/<number>. */
int rt_name_is_numbered(const char *name, const char *base)
{
    size_t len = strlen(base);
    if (strncmp(name, base, len))
        return 0;
    if (!name[len])
        return 1;
    if (name[len] != '/' || !name[len + 1])
        return 0;
    for (const char *p = name + len + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* The exported name of call c, the next call of the step: appended to the
 * step's list so that later gradient calls can find their forward call's
 * name. Kept only while exporting or following a schedule. */
const char *rt_step_name(struct dtrx_session *s, const struct rt_call *c)
{
    struct rt_step_names *sn = &s->step_names;
    if (sn->n == sn->cap) {
        int cap = sn->cap ? 2 * sn->cap : 256;
        char **a = realloc(sn->call_names, sizeof *a * (size_t)cap);
        if (a)
            sn->call_names = a;
        char **b = a ? realloc(sn->names, sizeof *b * (size_t)cap) : NULL;
        if (b)
            sn->names = b;
        const struct rt_call **k = b ? realloc(sn->calls, sizeof *k * (size_t)cap) : NULL;
        if (!k)
            return NULL;
        sn->calls = k;
        sn->cap = cap;
    }
    char buf[1024];
    if (c->node) {
        snprintf(buf, sizeof buf, "%s", c->name);
    } else {
        const char *origin = c->origin ? c->origin : "runtime";
        int is_loss = !strcmp(origin, "loss");
        /* A gradient of a recorded call takes that call's exported name. */
        for (int i = sn->n - 1; i >= 0 && !is_loss; i--)
            if (!strcmp(sn->call_names[i], origin)) {
                origin = sn->names[i];
                break;
            }
        char base[1024];
        snprintf(base, sizeof base, "%s%s", is_loss ? "loss" : origin, is_loss ? "" : "/grad");
        int k = 0;
        for (int i = 0; i < sn->n; i++)
            k += rt_name_is_numbered(sn->names[i], base);
        if (k)
            snprintf(buf, sizeof buf, "%s/%d", base, k);
        else
            snprintf(buf, sizeof buf, "%s", base);
    }
    char *cn = strdup(c->name), *nn = strdup(buf);
    if (!cn || !nn) {
        free(cn);
        free(nn);
        return NULL;
    }
    sn->call_names[sn->n] = cn;
    sn->calls[sn->n] = c;
    sn->names[sn->n++] = nn;
    return nn;
}

void rt_step_names_reset(struct dtrx_session *s)
{
    struct rt_step_names *sn = &s->step_names;
    for (int i = 0; i < sn->n; i++) {
        free(sn->call_names[i]);
        free(sn->names[i]);
    }
    sn->n = 0;
}

void rt_step_names_free(struct dtrx_session *s)
{
    rt_step_names_reset(s);
    free(s->step_names.call_names);
    free(s->step_names.names);
    free(s->step_names.calls);
}
