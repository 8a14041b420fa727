/* runtime/device.c — the runtime's side of running on a device other than
 * the host: opening the session's backend, every copy between host memory
 * and tensor memory, host copies of the inputs an operator reads on the host
 * (op_def.host_inputs), the kernel of an operator on the session's backend,
 * kernel timing, and host mirrors of the tensors dtrx_session_tensor hands
 * out.
 *
 * A session on the host has no rt_device (s->device is NULL) and every
 * function here reduces to what the runtime did before: memcpy, the CPU
 * kernel, wall-clock time. The test device "cpu-staged" runs the CPU
 * kernels through the device path. */
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"

#define DEVICE_KERNEL_SLOTS 1024   /* a power of two above the registry's size */
#define DEVICE_MAX_HOST_INPUTS 32
#define DEVICE_MIRROR_GAP 256       /* unchanged bytes that split a mirror's write-back */

typedef int (*kernel_fn)(struct op_call *);

/* A tensor handed to the embedder as host memory: `host` is what it reads
 * and writes, `shadow` what the device held when it was handed out (or was
 * last written back), so that the bytes written are seen and copied to the
 * device before the next run. */
struct rt_mirror {
    struct rt_value *value;
    void *host, *shadow;
    size_t bytes;
};

struct rt_kernel_slot {
    const struct op_def *def;
    kernel_fn kernel;               /* NULL: the backend has none */
};

struct rt_device {
    const struct backend *backend;
    void *stage;                    /* host staging of rt_host_view */
    size_t stage_bytes;
    struct rt_mirror *mirrors;
    int n_mirrors, mirrors_capacity;
    int timing;                     /* the device timer measures the running kernel */
    struct rt_kernel_slot kernels[DEVICE_KERNEL_SLOTS];
};

static const char *backend_error(const struct backend *b)
{
    return b->last_error ? b->last_error(b) : "failed";
}

static struct backend cpu_staged;

/* "cpu-staged": the host backend taken through the device path (copies
 * through the backend, host copies of host_inputs, output and mirror
 * copies), so that tests exercise this file's logic without a GPU. */
static enum dtrx_status open_cpu_staged(struct dtrx_session *s)
{
    cpu_staged = backend_cpu;
    cpu_staged.name = "cpu-staged";
    struct rt_device *d = calloc(1, sizeof *d);
    if (!d)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    d->backend = &cpu_staged;
    s->device = d;
    return DTRX_OK;
}

enum dtrx_status rt_device_open(struct dtrx_session *s)
{
    const char *name = s->opts.device ? s->opts.device : "cpu";
    s->device = NULL;
    if (!strcmp(name, "cpu"))
        return DTRX_OK;
    if (!strcmp(name, "cpu-staged"))
        return open_cpu_staged(s);
    if (strcmp(name, "cuda"))
        return rt_fail(DTRX_ERR_INPUT, "unknown device '%s' (cpu, cuda)", name);
    /* The device's backend module, loaded on first use (ops/backend_module.c). */
    char why[1024] = "";
    const struct backend_module *m = backend_module_load(name, why, sizeof why);
    const struct backend *b = m ? m->open(why, sizeof why) : NULL;
    if (!b)
        return rt_fail(DTRX_ERR_INPUT, "device '%s' is not available: %s", name, why[0] ? why : "unknown reason");
    struct rt_device *d = calloc(1, sizeof *d);
    if (!d) {
        if (b->close)
            b->close(b);
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    }
    d->backend = b;
    s->device = d;
    return DTRX_OK;
}

void rt_device_close(struct dtrx_session *s)
{
    struct rt_device *d = s->device;
    if (!d)
        return;
    for (int i = 0; i < d->n_mirrors; i++) {
        free(d->mirrors[i].host);
        free(d->mirrors[i].shadow);
    }
    free(d->mirrors);
    free(d->stage);
    if (d->backend->close)
        d->backend->close(d->backend);
    free(d);
    s->device = NULL;
}

const struct backend *rt_backend(const struct dtrx_session *s)
{
    return s->device ? s->device->backend : &backend_cpu;
}

int rt_device_on_host(const struct dtrx_session *s) { return !s->device; }

enum dtrx_status rt_to_device(struct dtrx_session *s, void *dst, const void *src, size_t bytes)
{
    if (!s->device) {
        if (bytes)
            memcpy(dst, src, bytes);
        return DTRX_OK;
    }
    const struct backend *b = s->device->backend;
    if (b->copy_to_device(b->ctx, dst, src, bytes))
        return rt_fail(DTRX_ERR_INTERNAL, "%s: copying %zu bytes to the device: %s", b->name, bytes, backend_error(b));
    return DTRX_OK;
}

enum dtrx_status rt_to_host(const struct dtrx_session *s, void *dst, const void *src, size_t bytes)
{
    if (!s->device) {
        if (bytes)
            memcpy(dst, src, bytes);
        return DTRX_OK;
    }
    const struct backend *b = s->device->backend;
    if (b->copy_to_host(b->ctx, dst, src, bytes))
        return rt_fail(DTRX_ERR_INTERNAL, "%s: copying %zu bytes to the host: %s", b->name, bytes, backend_error(b));
    return DTRX_OK;
}

const void *rt_host_view(struct dtrx_session *s, const void *data, size_t bytes)
{
    struct rt_device *d = s->device;
    if (!d)
        return data;
    if (bytes > d->stage_bytes) {
        void *p = realloc(d->stage, bytes);
        if (!p)
            return NULL;
        d->stage = p;
        d->stage_bytes = bytes;
    }
    return rt_to_host(s, d->stage, data, bytes) ? NULL : d->stage;
}

/* ---- operator calls --------------------------------------------------- */

kernel_fn rt_kernel_of(struct dtrx_session *s, const struct op_def *def)
{
    struct rt_device *d = s->device;
    if (!d)
        return backend_cpu.kernel(def);
    size_t h = ((uintptr_t)def >> 4) * 2654435761u % DEVICE_KERNEL_SLOTS;
    for (size_t probe = 0; probe < DEVICE_KERNEL_SLOTS; probe++) {
        struct rt_kernel_slot *slot = &d->kernels[(h + probe) % DEVICE_KERNEL_SLOTS];
        if (slot->def == def)
            return slot->kernel;
        if (slot->def)
            continue;
        slot->kernel = d->backend->kernel(def);
        slot->def = def;
        return slot->kernel;
    }
    return NULL;
}

/* Host copies of a call's host_inputs, swapped into its input array for
 * the length of one infer() or kernel call. */
struct host_inputs {
    struct tensor t[DEVICE_MAX_HOST_INPUTS];
    const struct tensor *device[DEVICE_MAX_HOST_INPUTS];
    uint32_t swapped;
};

static void host_inputs_restore(struct op_call *call, struct host_inputs *h)
{
    const struct tensor **in = (const struct tensor **)call->in;
    for (int i = 0; i < DEVICE_MAX_HOST_INPUTS; i++)
        if (h->swapped >> i & 1) {
            free(h->t[i].data);
            in[i] = h->device[i];
        }
    h->swapped = 0;
}

static int host_inputs_fetch(struct dtrx_session *s, struct op_call *call, struct host_inputs *h)
{
    h->swapped = 0;
    uint32_t want = call->def->host_inputs;
    if (!s->device || !want)
        return 0;
    const struct tensor **in = (const struct tensor **)call->in;
    for (int i = 0; i < call->n_in && i < DEVICE_MAX_HOST_INPUTS; i++) {
        if (!(want >> i & 1) || !in[i] || !in[i]->data)
            continue;
        size_t bytes = tensor_size_bytes(in[i]);
        h->t[i] = *in[i];
        h->t[i].data = malloc(bytes ? bytes : 1);
        if (!h->t[i].data) {
            host_inputs_restore(call, h);
            return op_error(call, "out of host memory for a host copy of input %d", i);
        }
        h->device[i] = in[i];
        h->swapped |= 1u << i;
        in[i] = &h->t[i];
        if (rt_to_host(s, h->t[i].data, h->device[i]->data, bytes)) {
            host_inputs_restore(call, h);
            return op_error(call, "%s", dtrx_last_error());
        }
    }
    return 0;
}

int rt_call_infer(struct dtrx_session *s, struct op_call *call)
{
    struct host_inputs h;
    if (host_inputs_fetch(s, call, &h))
        return -1;
    int rc = call->def->infer(call);
    host_inputs_restore(call, &h);
    /* one check for every operator's shape inference: no element or byte
     * count below overflows or exceeds what can be allocated */
    for (int i = 0; !rc && i < call->n_out; i++) {
        char msg[400];
        if (call->out[i] && tensor_check_size(call->out[i], msg, sizeof msg))
            rc = op_error(call, "output %d: %s", i, msg);
    }
    return rc;
}

int rt_kernel_run(struct dtrx_session *s, kernel_fn kernel, struct op_call *call)
{
    struct host_inputs h;
    if (host_inputs_fetch(s, call, &h))
        return -1;
    int rc = kernel(call);
    host_inputs_restore(call, &h);
    return rc;
}

/* Device kernels run asynchronously: where a kernel's own time is wanted
 * (measured costs, `dtrexec export`), the backend's timer measures it, at
 * the price of waiting for it. Otherwise wall-clock time (the launch). */
double rt_kernel_timer_begin(struct dtrx_session *s)
{
    struct rt_device *d = s->device;
    if (d) {
        const struct backend *b = d->backend;
        d->timing = b->timer_start && (s->opts.measured_costs || s->recorder) && !b->timer_start(b->ctx);
    }
    return rt_now_seconds();
}

double rt_kernel_timer_end(struct dtrx_session *s, double t0)
{
    struct rt_device *d = s->device;
    if (d && d->timing) {
        d->timing = 0;
        double secs = d->backend->timer_stop_seconds(d->backend->ctx);
        if (secs >= 0)
            return secs;
    }
    return rt_now_seconds() - t0;
}

double rt_now_synced(struct dtrx_session *s)
{
    if (s->device)
        s->device->backend->synchronize(s->device->backend->ctx);
    return rt_now_seconds();
}

/* ---- host mirrors ----------------------------------------------------- */

void *rt_host_mirror(struct dtrx_session *s, struct rt_value *v)
{
    struct rt_device *d = s->device;
    if (!d)
        return v->t.data;
    size_t bytes = tensor_size_bytes(&v->t);
    struct rt_mirror *m = NULL;
    for (int i = 0; i < d->n_mirrors && !m; i++)
        if (d->mirrors[i].value == v)
            m = &d->mirrors[i];
    if (!m) {
        if (d->n_mirrors == d->mirrors_capacity) {
            int cap = d->mirrors_capacity ? 2 * d->mirrors_capacity : 16;
            struct rt_mirror *grown = realloc(d->mirrors, sizeof *grown * (size_t)cap);
            if (!grown) {
                rt_fail(DTRX_ERR_BUDGET, "out of host memory");
                return NULL;
            }
            d->mirrors = grown;
            d->mirrors_capacity = cap;
        }
        m = &d->mirrors[d->n_mirrors++];
        *m = (struct rt_mirror){ .value = v };
    }
    if (m->bytes != bytes || !m->host) {
        free(m->host);
        free(m->shadow);
        m->host = malloc(bytes ? bytes : 1);
        m->shadow = malloc(bytes ? bytes : 1);
        m->bytes = bytes;
        if (!m->host || !m->shadow) {
            free(m->host);
            free(m->shadow);
            m->host = m->shadow = NULL;
            rt_fail(DTRX_ERR_BUDGET, "out of host memory for a host copy of '%s'", v->name);
            return NULL;
        }
    }
    /* Refreshed on every request: the device holds the current values. */
    if (rt_to_host(s, m->host, v->t.data, bytes))
        return NULL;
    memcpy(m->shadow, m->host, bytes);
    return m->host;
}

int rt_device_before_run(struct dtrx_session *s)
{
    struct rt_device *d = s->device;
    for (int i = 0; d && i < d->n_mirrors; i++) {
        struct rt_mirror *m = &d->mirrors[i];
        struct rt_value *v = m->value;
        if (!m->host || !v->mem.storage || tensor_size_bytes(&v->t) != m->bytes || !memcmp(m->host, m->shadow, m->bytes))
            continue;
        /* Only the bytes the embedder changed, as a write to the tensor
         * itself would: the rest may have been trained since. */
        const unsigned char *h = m->host, *sh = m->shadow;
        for (size_t at = 0; at < m->bytes;) {
            if (h[at] == sh[at]) {
                at++;
                continue;
            }
            size_t end = at + 1, same = 0;
            while (end < m->bytes && same < DEVICE_MIRROR_GAP) {
                same = h[end] == sh[end] ? same + 1 : 0;
                end++;
            }
            end -= same;
            if (rt_to_device(s, (char *)v->t.data + at, h + at, end - at))
                return -1;
            at = end;
        }
        memcpy(m->shadow, m->host, m->bytes);
    }
    return 0;
}

enum dtrx_status dtrx_device_check(const char *device)
{
    struct dtrx_session probe = { .opts = { .device = device } };
    enum dtrx_status st = rt_device_open(&probe);
    rt_device_close(&probe);
    return st;
}
