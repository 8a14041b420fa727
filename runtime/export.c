/* runtime/export.c — the training step as a static graph (`dtrexec export`):
 * one forward + loss + backward pass is recorded call by call and written
 * as node-link JSON in the layout Checkmate publishes its graphs in. A node
 * is an operator call: its name is the ONNX node's, "<forward>/grad[/k]"
 * for the calls its gradient emitter issued, "loss[/k]" for the loss;
 * cost_cpu is the measured kernel time in microseconds (the fastest of
 * EXPORT_TIMING_PASSES runs of the step), cost_flops the cost
 * model's, cost_ram the bytes of its outputs (0 for views, which share their
 * input's memory); workspace_ram the most arena bytes the kernel held beside
 * its inputs and outputs while it ran (scratch such as oneDNN's or an
 * im2col buffer, freed when the call returns; omitted when 0); the first
 * node's param_cost holds the bytes that stay resident all step (weights,
 * inputs, optimizer state, the targets the first loss draws, and the
 * constants the step makes: shapes and scales of gradient emitters, the
 * loss's seed). A link joins the producer of each input to its consumer;
 * weights, inputs and constants are not nodes. A call of a gradient is
 * also linked to what the earlier calls of the same gradient read or made
 * and the runtime still holds (record_group), so that checkpoint-all's
 * peak bounds the runtime's unbudgeted arena peak (tests/export_check.py).
 *
 * kept_ram the bytes of its outputs that the runtime holds to the end of
 * the step whatever a schedule frees (final parameter gradients, pinned
 * until the optimizer; the graph's outputs), not in cost_ram (omitted when
 * 0); a kept view's bytes are its source's kept bytes.
 *
 * Views (alias outputs: Reshape, a MatMul gradient's transposed operand)
 * are marked "view": true. They have no bytes of their own, and a reader
 * of a view is linked to the view's source as well (through views of
 * views), since the arena holds the shared storage while the view is
 * read: a schedule then keeps or recomputes the source wherever a view is
 * read. When the source is freed the view goes with it; the runtime
 * replays a view read after its source was recomputed (zero cost, counted
 * in --stats view_remats), which a schedule that keeps the 0-byte view
 * does not count as a recomputation.
 *
 * workspace_ram, kept_ram and view are this exporter's additions to Checkmate's
 * layout: a node needs its workspace only while it runs, so a planner
 * counts it at that node's run on top of the resident values and the
 * node's outputs, and its kept bytes from its first run to the end
 * (dtr/sim/sim.h, "Memory accounting"); graphs without them (Checkmate's
 * own) read as 0.
 * Gradient accumulation needs no field: the runtime sums gradients with
 * ordinary Sum calls, which are nodes like any other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/format/graph.h"
#include "runtime/arena.h"
#include "runtime/memory.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/stepnames.h"
#include "runtime/train.h"

/* Runs of the step whose fastest kernel time per call is cost_cpu. */
#define EXPORT_TIMING_PASSES 3

struct rt_node {
    char *name;
    int backward;
    int view;                      /* a view: its output shares its first input's storage */
    double seconds, flops;
    size_t bytes;
    size_t workspace;              /* arena bytes beside inputs and outputs while it ran */
    size_t kept;                   /* of bytes: outputs still live when the step ends */
    int n_out;
    int *outs;                     /* value ids of its outputs that own memory */
    int n_in;
    int *inputs;                   /* producer node of each input, -1 for none */
};

struct rt_recorder {
    int n, cap;
    struct rt_node *nodes;
    int *producer;                 /* per value id: node index, -1 */
    int *view_of;                  /* per value id: the value whose storage a view shares, -1 */
    uint8_t *constant_seen;        /* per value id: a step constant already counted */
    int producer_cap;
    size_t step_constants;         /* bytes of the constants the step made (shapes, seeds, targets) */
    size_t peak_before;            /* the arena's high-water mark before the running call */
    char group[1024];              /* "<forward>/grad" of the gradient being recorded, "" outside one */
    int n_held, held_cap;
    int *held;                     /* value ids its calls read or made so far */
};

/* The arena's high-water mark restarts at the bytes in use, so that after
 * the call it tells the most the call held: its outputs and workspace. */
static enum dtrx_status record_begin(struct dtrx_session *s, const struct rt_call *c)
{
    (void)c;
    struct rt_recorder *r = s->recorder;
    r->peak_before = s->arena.peak_bytes;
    s->arena.peak_bytes = s->arena.in_use_bytes;
    return DTRX_OK;
}

/* The workspace of the call that just ran: what the arena held at most
 * during it beyond what it holds now (inputs, outputs; the call frees
 * nothing else), and the high-water mark restored. */
static size_t record_workspace(struct dtrx_session *s)
{
    struct rt_recorder *r = s->recorder;
    size_t peak = s->arena.peak_bytes, ws = peak > s->arena.in_use_bytes ? peak - s->arena.in_use_bytes : 0;
    if (r->peak_before > peak)
        s->arena.peak_bytes = r->peak_before;
    return ws;
}

/* 1 when node n's outputs include value id. */
static int node_makes(const struct rt_node *n, int id)
{
    for (int k = 0; k < n->n_out; k++)
        if (n->outs[k] == id)
            return 1;
    return 0;
}

static void node_link(struct rt_node *n, int src)
{
    int *grown = realloc(n->inputs, sizeof(int) * (size_t)(n->n_in + 1));
    if (grown) {
        n->inputs = grown;
        n->inputs[n->n_in++] = src;
    }
}

static void group_hold(struct rt_recorder *r, int id)
{
    if (r->n_held == r->held_cap) {
        int cap = r->held_cap ? 2 * r->held_cap : 32;
        int *grown = realloc(r->held, sizeof *grown * (size_t)cap);
        if (!grown)
            return;
        r->held = grown;
        r->held_cap = cap;
    }
    r->held[r->n_held++] = id;
}

/* The calls of one gradient (one emitter call) run back to back, and the
 * runtime lets go of what they read and made only when the last of them
 * has run: the forward call's saved values and output gradient
 * (train.c, release_saved), the temporaries (release_temporaries). A
 * partial gradient sum is freed at once when it is added to. So each call
 * of a gradient after the first is linked to the producer of every value
 * an earlier call of it read or made that is still resident now, just
 * after the call ran: a schedule keeps those bytes as the arena does
 * (with a ConvGradWeight before the ConvGradData, the convolution's input
 * stays through the ConvGradData; the MSE's difference through the Add
 * of its two gradients). */
static void record_group(struct dtrx_session *s, struct rt_recorder *r, const struct rt_call *c, const char *name,
                         struct rt_node *n)
{
    const char *grad = c->node ? NULL : strstr(name, "/grad");
    char group[sizeof r->group] = "";
    if (grad && n->backward)
        snprintf(group, sizeof group, "%.*s/grad", (int)(grad - name), name);
    if (strcmp(group, r->group)) {
        snprintf(r->group, sizeof r->group, "%s", group);
        r->n_held = 0;
    }
    if (!group[0])
        return;
    for (int k = 0; k < r->n_held; k++) {
        int id = r->held[k];
        if (!s->values[id]->mem.storage)
            continue;
        if (r->producer[id] >= 0 && r->producer[id] != r->n)
            node_link(n, r->producer[id]);
        int src = r->view_of[id];
        if (src >= 0 && r->producer[src] >= 0 && r->producer[src] != r->n)
            node_link(n, r->producer[src]);
    }
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0 && r->producer[c->in[i]] >= 0)
            group_hold(r, c->in[i]);
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0)
            group_hold(r, c->out[i]);
}

static void record_call(struct dtrx_session *s, const struct rt_call *c, const char *name, double seconds)
{
    struct rt_recorder *r = s->recorder;
    size_t workspace = record_workspace(s);
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
        r->producer = grown;
        int *views = realloc(r->view_of, sizeof *views * (size_t)cap);
        if (!views)
            return;
        r->view_of = views;
        uint8_t *seen = realloc(r->constant_seen, (size_t)cap);
        if (!seen)
            return;
        r->constant_seen = seen;
        for (int i = r->producer_cap; i < cap; i++) {
            grown[i] = -1;
            views[i] = -1;
            seen[i] = 0;
        }
        r->producer_cap = cap;
    }
    if (!name)
        return;
    struct rt_node *n = &r->nodes[r->n];
    memset(n, 0, sizeof *n);
    n->name = strdup(name);
    n->inputs = malloc(sizeof(int) * (size_t)(c->n_in + 1));
    if (!n->name || !n->inputs) {
        free(n->name);
        free(n->inputs);
        return;
    }
    n->backward = !c->node && c->origin && strcmp(c->origin, "loss");
    n->view = c->def->alias && c->out[0] >= 0;
    n->seconds = seconds;
    n->flops = c->cost_flops;
    n->workspace = workspace;
    for (int i = 0; i < c->n_in; i++) {
        n->inputs[n->n_in++] = c->in[i] >= 0 ? r->producer[c->in[i]] : -1;
        /* A view shares its source's storage, which the arena holds while
         * the view is read: a reader of a view reads its source too, so
         * that a schedule keeps (or recomputes) the source's bytes while
         * the view's readers run; the view itself has no bytes. */
        int src = c->in[i] >= 0 ? r->view_of[c->in[i]] : -1;
        if (src >= 0 && r->producer[src] >= 0) {
            int *grown = realloc(n->inputs, sizeof(int) * (size_t)(c->n_in + n->n_in + 1));
            if (grown) {
                n->inputs = grown;
                n->inputs[n->n_in++] = r->producer[src];
            }
        }
        /* A constant made during the step (a gradient emitter's shape or
         * scale, the loss's seed) is no node: its bytes are counted as
         * resident all step, with the parameters (an upper bound; they are
         * small). */
        const struct rt_value *v = c->in[i] >= 0 ? s->values[c->in[i]] : NULL;
        if (v && r->producer[c->in[i]] < 0 && v->kind == RT_VALUE_INTERMEDIATE && !r->constant_seen[c->in[i]]) {
            r->constant_seen[c->in[i]] = 1;
            r->step_constants += arena_rounded(tensor_size_bytes(&v->t));
        }
    }
    /* Control links, so that every schedule runs the calls of one gradient
     * in the order the emitter issues them: the loss's gradient after the
     * loss (it starts from the seed 1, not from the loss's output), and each
     * <node>/grad/k after the call before it in the same group. Only the
     * call that made the loss value starts from the seed; the gradients of
     * the loss's inner calls (the MSE's Sub and Mul) read their output
     * gradients, and a link to their forward call would keep its output
     * (the squared error) resident in every schedule until then, where the
     * runtime drops it after its one reader. */
    const char *grad = strstr(name, "/grad");
    if (grad && !c->node) {
        char base[1024];
        snprintf(base, sizeof base, "%.*s", (int)(grad - name), name);
        int is_loss_grad = rt_name_is_numbered(base, "loss");
        char group[1024];
        snprintf(group, sizeof group, "%s/grad", base);
        for (int i = r->n - 1; i >= 0; i--) {
            int same_group = rt_name_is_numbered(r->nodes[i].name, group);
            if (!same_group && !(is_loss_grad && !strcmp(r->nodes[i].name, base)))
                continue;
            if (!same_group && !node_makes(&r->nodes[i], s->train.loss))
                break;
            node_link(n, i);
            break;
        }
    }
    n->outs = malloc(sizeof(int) * (size_t)(c->n_out + 1));
    if (!n->outs) {
        free(n->name);
        free(n->inputs);
        return;
    }
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0) {
            if (!(c->def->alias && i == 0)) {
                n->bytes += arena_rounded(tensor_size_bytes(&s->values[c->out[i]]->t));
                n->outs[n->n_out++] = c->out[i];
            } else if (c->in[0] >= 0) {
                int src = r->view_of[c->in[0]];
                r->view_of[c->out[i]] = src >= 0 ? src : c->in[0];
            }
            r->producer[c->out[i]] = r->n;
        }
    record_group(s, r, c, name, n);
    r->n++;
}

/* The recorded nodes in the graph JSON's in-memory form, written by its one
 * writer (dtr/format/graph.h); the arrays point into r where they can. */
static enum dtrx_status write_graph(const struct rt_recorder *r, const char *model, size_t persistent_bytes,
                                    const char *path)
{
    uint32_t n = (uint32_t)r->n, m = 0;
    for (int i = 0; i < r->n; i++)
        m += (uint32_t)r->nodes[i].n_in;
    struct fmt_graph g = { .n = n, .title = (char *)model };
    g.names = malloc(n * sizeof *g.names);
    g.cost = malloc(n * sizeof *g.cost);
    g.flops = malloc(n * sizeof *g.flops);
    g.bytes = malloc(n * sizeof *g.bytes);
    g.param = calloc(n, sizeof *g.param);
    g.workspace = malloc(n * sizeof *g.workspace);
    g.kept = malloc(n * sizeof *g.kept);
    g.backward = malloc(n);
    g.view = malloc(n);
    g.link_at = malloc((n + 1) * sizeof *g.link_at);
    g.links = malloc((m + 1) * sizeof *g.links);
    enum dtrx_status st = DTRX_OK;
    if (!g.names || !g.cost || !g.flops || !g.bytes || !g.param || !g.workspace || !g.kept || !g.backward ||
        !g.view || !g.link_at || !g.links)
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    m = 0;
    for (uint32_t i = 0; !st && i < n; i++) {
        const struct rt_node *nd = &r->nodes[i];
        g.names[i] = nd->name;
        g.cost[i] = 1e6 * nd->seconds;   /* microseconds */
        g.flops[i] = nd->flops;
        g.bytes[i] = nd->bytes - nd->kept;
        g.workspace[i] = nd->workspace;
        g.kept[i] = nd->kept;
        g.backward[i] = (uint8_t)(nd->backward != 0);
        g.view[i] = (uint8_t)(nd->view != 0);
        g.link_at[i] = m;
        for (int k = 0; k < nd->n_in; k++)
            if (nd->inputs[k] >= 0)
                g.links[m++] = (uint32_t)nd->inputs[k];
        g.link_at[i + 1] = m;
    }
    /* Weights, inputs and optimizer state stay resident all step: the
     * first node carries them, as param_cost, so budgets count them. */
    if (!st && n)
        g.param[0] = persistent_bytes;
    FILE *f = st ? NULL : fopen(path, "w");
    if (!st && !f)
        st = rt_fail(DTRX_ERR_INPUT, "cannot write the graph to '%s'", path);
    if (f && (fmt_graph_write(f, &g, "dtrexec export", "microseconds") | fclose(f)))
        st = rt_fail(DTRX_ERR_INPUT, "cannot write the graph to '%s'", path);
    void *arrays[] = { g.names, g.cost, g.flops, g.bytes, g.param, g.workspace, g.kept, g.backward, g.view,
                       g.link_at, g.links };
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
        free(arrays[k]);
    return st;
}

static void record_after(struct dtrx_session *s, const struct rt_call *c)
{
    record_call(s, c, rt_step_name(s, c), c->measured_seconds);
}

/* The recorder's call hook: the arena's high-water mark restarted before
 * each call, the call recorded after it. */
static const struct rt_call_hook record_hook = { .before = record_begin, .after = record_after };

static void recorder_attach(struct dtrx_session *s, struct rt_recorder *r)
{
    s->recorder = r;
    s->hooks[RT_HOOK_RECORD] = r ? &record_hook : NULL;
}

static void recorder_free(struct rt_recorder *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->nodes[i].name);
        free(r->nodes[i].inputs);
        free(r->nodes[i].outs);
    }
    free(r->nodes);
    free(r->producer);
    free(r->view_of);
    free(r->constant_seen);
    free(r->held);
}

enum dtrx_status dtrx_session_export_graph(struct dtrx_session *s, const char *path)
{
    if (!s->train.active)
        return rt_fail(DTRX_ERR_INPUT, "export needs a training session (dtrx_session_train_begin)");
    struct rt_recorder r = { 0 };
    rt_step_names_reset(s);
    recorder_attach(s, &r);
    int n_before = s->n_values;
    size_t pinned_before = s->stats.pinned_bytes;
    double loss;
    enum dtrx_status st = dtrx_session_backward(s, &loss);
    recorder_attach(s, NULL);
    /* Values made persistent during the step (the targets the first loss
     * draws, resident in every later step) count with the weights. */
    size_t persistent = pinned_before;
    for (int i = n_before; !st && i < s->n_values; i++)
        if (s->values[i]->kind == RT_VALUE_INITIALIZER && s->values[i]->mem.storage)
            persistent += arena_rounded(tensor_size_bytes(&s->values[i]->t));
    if (!st && !r.n)
        st = rt_fail(DTRX_ERR_INPUT, "the training step ran no operator");
    /* What the runtime pins until the step ends (the parameters' final
     * gradients, for the optimizer; the graph's outputs and the loss)
     * stays from its call to the end, whatever the schedule frees. A kept
     * view (a bias gradient reshaped from its ReduceSum) keeps its
     * source's storage: those bytes are the source node's kept bytes. */
    enum { PINNED = 1, KEPT = 2 };
    uint8_t *pinned = st ? NULL : calloc((size_t)s->n_values + 1, 1);
    if (!st && !pinned)
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int p = 0; pinned && p < s->train.n_params; p++) {
        int gid = s->values[s->train.params[p]]->train.grad;
        if (gid >= 0 && gid < s->n_values)
            pinned[gid] |= PINNED;
    }
    for (int id = 0; pinned && id < s->n_values; id++) {
        const struct rt_value *v = s->values[id];
        if (!((pinned[id] & PINNED) || v->use.is_output || id == s->train.loss) || !s->memory->live(s, v))
            continue;
        int src = id < r.producer_cap ? r.view_of[id] : -1;
        pinned[src >= 0 ? src : id] |= KEPT;
    }
    for (int i = 0; pinned && i < r.n; i++)
        for (int k = 0; k < r.nodes[i].n_out; k++) {
            int id = r.nodes[i].outs[k];
            if (pinned[id] & KEPT)
                r.nodes[i].kept += arena_rounded(tensor_size_bytes(&s->values[id]->t));
        }
    free(pinned);
    /* cost_cpu is one kernel timing per call, and one preempted call on a
     * busy machine looks a thousand times dearer than it is: the step runs
     * again (backward only: the weights do not change) and each call keeps
     * its fastest time. */
    for (int pass = 1; !st && pass < EXPORT_TIMING_PASSES; pass++) {
        struct rt_recorder again = { 0 };
        rt_step_names_reset(s);
        recorder_attach(s, &again);
        st = dtrx_session_backward(s, &loss);
        recorder_attach(s, NULL);
        for (int i = 0; !st && i < r.n && i < again.n; i++)
            if (!strcmp(r.nodes[i].name, again.nodes[i].name) && again.nodes[i].seconds < r.nodes[i].seconds)
                r.nodes[i].seconds = again.nodes[i].seconds;
        recorder_free(&again);
    }
    if (!st)
        st = write_graph(&r, s->model->path ? s->model->path : "model", persistent + r.step_constants,
                         path);
    recorder_free(&r);
    return st;
}
