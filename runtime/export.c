/* runtime/export.c — the training step as a static graph (`dtrexec export`):
 * one forward + loss + backward pass is recorded call by call and written
 * as node-link JSON in the layout Checkmate publishes its graphs in. A node
 * is an operator call: its name is the ONNX node's, "<forward>/grad[/k]"
 * for the calls its gradient emitter issued, "loss[/k]" for the loss;
 * cost_cpu is the measured kernel time in microseconds, cost_flops the cost
 * model's, cost_ram the bytes of its outputs (0 for views, which share their
 * input's memory). A link joins the producer of each input to its consumer;
 * weights, inputs and constants are not nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime-impl.h"

struct rt_node {
    char *name;
    const char *call_name;         /* the runtime's name of the call */
    int backward;
    double seconds, flops;
    size_t bytes;
    int n_in;
    int *inputs;                   /* producer node of each input, -1 for none */
};

struct rt_recorder {
    int n, cap;
    struct rt_node *nodes;
    int *producer;                 /* per value id: node index, -1 */
    int producer_cap;
};

static int node_name(struct rt_recorder *r, const struct rt_call *c, char *buf, size_t size)
{
    if (c->node) {
        snprintf(buf, size, "%s", c->name);
        return 0;
    }
    const char *origin = c->origin ? c->origin : "runtime";
    int is_loss = !strcmp(origin, "loss");
    /* A gradient of a recorded call takes that call's exported name. */
    for (int i = 0; i < r->n && !is_loss; i++)
        if (r->nodes[i].call_name && !strcmp(r->nodes[i].call_name, origin)) {
            origin = r->nodes[i].name;
            break;
        }
    int k = 0;
    size_t len = strlen(origin);
    const char *suffix = is_loss ? "" : "/grad";
    for (int i = 0; i < r->n; i++)
        if (!strncmp(r->nodes[i].name, origin, len) &&
            (r->nodes[i].name[len] == 0 || r->nodes[i].name[len] == '/') && strcmp(r->nodes[i].name, origin))
            k++;
    if (k)
        snprintf(buf, size, "%s%s/%d", origin, suffix, k);
    else
        snprintf(buf, size, "%s%s", origin, suffix);
    return 0;
}

void rt_record_call(struct dtrx_session *s, const struct rt_call *c, double seconds)
{
    struct rt_recorder *r = s->recorder;
    if (!c->n_out)
        return;   /* optimizer updates are not part of the exported step */
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 256;
        struct rt_node *grown = realloc(r->nodes, sizeof *grown * (size_t)cap);
        if (!grown)
            return;
        r->nodes = grown;
        r->cap = cap;
    }
    if (s->n_values > r->producer_cap) {
        int cap = s->n_values * 2;
        int *grown = realloc(r->producer, sizeof *grown * (size_t)cap);
        if (!grown)
            return;
        for (int i = r->producer_cap; i < cap; i++)
            grown[i] = -1;
        r->producer = grown;
        r->producer_cap = cap;
    }
    char name[1024];
    node_name(r, c, name, sizeof name);
    struct rt_node *n = &r->nodes[r->n];
    memset(n, 0, sizeof *n);
    n->name = strdup(name);
    n->inputs = malloc(sizeof(int) * (size_t)(c->n_in + 1));
    if (!n->name || !n->inputs) {
        free(n->name);
        free(n->inputs);
        return;
    }
    n->call_name = c->name;
    n->backward = !c->node && c->origin && strcmp(c->origin, "loss");
    n->seconds = seconds;
    n->flops = c->cost_flops;
    for (int i = 0; i < c->n_in; i++)
        n->inputs[n->n_in++] = c->in[i] >= 0 ? r->producer[c->in[i]] : -1;
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0) {
            if (!(c->def->alias && i == 0))
                n->bytes += arena_rounded(tensor_size_bytes(&s->values[c->out[i]]->t));
            r->producer[c->out[i]] = r->n;
        }
    r->n++;
}

static void json_string(FILE *f, const char *str)
{
    fputc('"', f);
    for (; *str; str++) {
        if (*str == '"' || *str == '\\')
            fputc('\\', f);
        if ((unsigned char)*str < 0x20)
            fprintf(f, "\\u%04x", *str);
        else
            fputc(*str, f);
    }
    fputc('"', f);
}

static enum dtrx_status write_graph(const struct rt_recorder *r, const char *model, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return rt_fail(DTRX_ERR_INPUT, "cannot write the graph to '%s'", path);
    fprintf(f, "{\"directed\": true, \"multigraph\": false, \"graph\": {\"name\": ");
    json_string(f, model);
    fprintf(f, ", \"source\": \"dtrexec export\", \"cost_cpu_unit\": \"microseconds\"},\n\"nodes\": [\n");
    for (int i = 0; i < r->n; i++) {
        const struct rt_node *n = &r->nodes[i];
        fprintf(f, "  {\"id\": %d, \"name\": ", i);
        json_string(f, n->name);
        fprintf(f, ", \"backward\": %s, \"cost_cpu\": %.3f, \"cost_flops\": %.0f, \"cost_ram\": %zu}%s\n",
                n->backward ? "true" : "false", 1e6 * n->seconds, n->flops, n->bytes, i + 1 < r->n ? "," : "");
    }
    fprintf(f, "],\n\"links\": [\n");
    int first = 1;
    for (int i = 0; i < r->n; i++) {
        const struct rt_node *n = &r->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            int src = n->inputs[k];
            int dup = src < 0;
            for (int j = 0; j < k && !dup; j++)
                dup = n->inputs[j] == src;
            if (dup)
                continue;
            fprintf(f, "%s  {\"source\": %d, \"target\": %d}", first ? "" : ",\n", src, i);
            first = 0;
        }
    }
    fprintf(f, "\n]}\n");
    if (fclose(f))
        return rt_fail(DTRX_ERR_INPUT, "cannot write the graph to '%s'", path);
    return DTRX_OK;
}

static void recorder_free(struct rt_recorder *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->nodes[i].name);
        free(r->nodes[i].inputs);
    }
    free(r->nodes);
    free(r->producer);
}

enum dtrx_status dtrx_session_export_graph(struct dtrx_session *s, const char *path)
{
    if (!s->train.active)
        return rt_fail(DTRX_ERR_INPUT, "export needs a training session (dtrx_session_train_begin)");
    struct rt_recorder r = { 0 };
    s->recorder = &r;
    double loss;
    enum dtrx_status st = dtrx_session_backward(s, &loss);
    s->recorder = NULL;
    if (!st && !r.n)
        st = rt_fail(DTRX_ERR_INPUT, "the training step ran no operator");
    if (!st)
        st = write_graph(&r, s->model->path ? s->model->path : "model", path);
    recorder_free(&r);
    return st;
}
