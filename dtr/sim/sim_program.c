/* dtr/sim/sim_program.c — building and freeing simulator programs. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"

static int grow(void **p, uint32_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    if (need >= UINT32_MAX / 2)
        return -1;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = (uint32_t)n;
    return 0;
}

static struct sim_step *step_new(struct sim_program *p)
{
    if (grow((void **)&p->steps, &p->cap_steps, (size_t)p->n_steps + 1, sizeof *p->steps))
        return NULL;
    struct sim_step *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    return s;
}

static int outs_reserve(struct sim_program *p, uint32_t n)
{
    uint32_t cap = p->cap_outs;
    if (grow((void **)&p->out_bytes, &cap, (size_t)p->n_outs + n, sizeof *p->out_bytes))
        return -1;
    uint32_t cap2 = p->cap_outs;
    if (grow((void **)&p->out_alias, &cap2, (size_t)p->n_outs + n, sizeof *p->out_alias))
        return -1;
    p->cap_outs = cap < cap2 ? cap : cap2;
    return 0;
}

uint32_t sim_program_constant(struct sim_program *p, uint64_t bytes, uint32_t line)
{
    if (outs_reserve(p, 1))
        return UINT32_MAX;
    struct sim_step *s = step_new(p);
    if (!s)
        return UINT32_MAX;
    s->kind = SIM_STEP_CONSTANT;
    s->n_out = 1;
    s->out_at = p->n_outs;
    p->out_bytes[p->n_outs] = bytes;
    p->out_alias[p->n_outs++] = -1;
    s->out = p->n_values++;
    s->line = line;
    return s->out;
}

uint32_t sim_program_call(struct sim_program *p, const uint32_t *inputs, uint32_t n_in, const uint64_t *out_bytes,
                          const int32_t *out_alias, uint32_t n_out, double cost, uint32_t line)
{
    if (outs_reserve(p, n_out) ||
        grow((void **)&p->inputs, &p->cap_inputs, (size_t)p->n_inputs + n_in, sizeof *p->inputs))
        return UINT32_MAX;
    struct sim_step *s = step_new(p);
    if (!s)
        return UINT32_MAX;
    s->kind = SIM_STEP_CALL;
    s->n_in = n_in;
    s->n_out = n_out;
    s->in_at = p->n_inputs;
    if (n_in)
        memcpy(p->inputs + p->n_inputs, inputs, n_in * sizeof *inputs);
    p->n_inputs += n_in;
    s->out_at = p->n_outs;
    for (uint32_t k = 0; k < n_out; k++) {
        p->out_bytes[p->n_outs + k] = out_bytes[k];
        p->out_alias[p->n_outs + k] = out_alias ? out_alias[k] : -1;
    }
    p->n_outs += n_out;
    s->out = p->n_values;
    p->n_values += n_out;
    s->cost = cost;
    s->line = line;
    p->n_calls++;
    return s->out;
}

int sim_program_ref(struct sim_program *p, enum sim_step_kind kind, uint32_t value, uint32_t line)
{
    struct sim_step *s = step_new(p);
    if (!s)
        return -1;
    s->kind = (uint8_t)kind;
    s->out = value;
    s->line = line;
    return 0;
}

void sim_program_free(struct sim_program *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->steps);
    free(p->inputs);
    free(p->out_bytes);
    free(p->out_alias);
    memset(p, 0, sizeof *p);
}

int sim_program_load(const char *path, struct sim_program *p, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: cannot open", path);
        return -1;
    }
    /* an op log is one object per line with an INSTRUCTION; anything else
     * is taken for a graph */
    char line[4096];
    int is_trace = 0;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
            line[--n] = 0;
        if (!n)
            continue;
        struct json_value v;
        char msg[8];
        if (!json_parse(line, n, &v, msg, sizeof msg)) {
            is_trace = json_get(&v, "INSTRUCTION") != NULL;
            json_free(&v);
        }
        break;
    }
    fclose(f);
    if (is_trace)
        return sim_program_load_trace(path, p, err, err_size);
    return sim_program_load_graph(path, p, err, err_size);
}
