/* ops/backend_module.c — finding and opening a device backend's shared
 * module (see "backend modules" in ops.h), as onnxruntime loads its
 * execution providers: nothing of the device is loaded until a session asks
 * for it, and a missing or broken install is reported by name.
 *
 * A module is opened once per process and never closed (device runtimes do
 * not survive being unloaded); a failure is not remembered, so a later call
 * looks again. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"

/* The install libdir, fixed at build time (CMake defines it). */
#ifndef DTRX_MODULE_DIR
#define DTRX_MODULE_DIR "/usr/local/lib"
#endif

#define MODULE_MAX_LOADED 4
#define MODULE_CANDIDATES 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[32];
    const struct backend_module *module;
} loaded[MODULE_MAX_LOADED];

static int say(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t size, const char *fmt, ...)
{
    if (why && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* "DTRX_CUDA_MODULE" for "cuda". */
static void env_name(const char *name, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "DTRX_");
    for (const char *p = name; *p && n + 1 < size; p++)
        out[n++] = (char)toupper((unsigned char)*p);
    snprintf(out + n, size - n, "_MODULE");
}

/* dir/libdtrexec_<name>.so of the folder holding `file`; 0 if `file` names no folder. */
static int beside(const char *file, const char *name, char *out, size_t size)
{
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (!slash)
        return 0;
    return snprintf(out, size, "%.*s/libdtrexec_%s.so", (int)(slash - file), file, name) < (int)size;
}

/* The candidate files in search order (after the environment override):
 * beside the object holding this code (libdtrexec.so, or the executable
 * libdtrexec.a was linked into), beside the executable, the install libdir. */
static int candidates(const char *name, char out[MODULE_CANDIDATES][PATH_MAX])
{
    int n = 0;
    Dl_info info;
    char real[PATH_MAX];
    if (dladdr((void *)backend_module_load, &info) && info.dli_fname && realpath(info.dli_fname, real) &&
        beside(real, name, out[n], PATH_MAX))
        n++;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        if (beside(exe, name, out[n], PATH_MAX) && (n == 0 || strcmp(out[n], out[0])))
            n++;
    }
    if (snprintf(out[n], PATH_MAX, "%s/libdtrexec_%s.so", DTRX_MODULE_DIR, name) < PATH_MAX)
        n++;
    return n;
}

int backend_module_find(const char *name, char *path, size_t size)
{
    char env[64];
    env_name(name, env, sizeof env);
    const char *over = getenv(env);
    if (over && *over)
        return access(over, F_OK) || snprintf(path, size, "%s", over) >= (int)size ? -1 : 0;
    char c[MODULE_CANDIDATES][PATH_MAX];
    int n = candidates(name, c);
    for (int i = 0; i < n; i++)
        if (!access(c[i], F_OK))
            return snprintf(path, size, "%s", c[i]) >= (int)size ? -1 : 0;
    return -1;
}

/* Opens `path` as backend `name`'s module; `from` says where the path came from. */
static const struct backend_module *open_module(const char *name, const char *path, const char *from, char *why,
                                                size_t size)
{
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        say(why, size, "cannot load the %s module %s (%s): %s", name, path, from, e ? e : "unknown dynamic loader error");
        return NULL;
    }
    const struct backend_module *m = dlsym(h, BACKEND_MODULE_SYMBOL);
    if (!m) {
        say(why, size, "%s (%s) is not a dtrexec backend module: it has no symbol %s", path, from, BACKEND_MODULE_SYMBOL);
        dlclose(h);
        return NULL;
    }
    if (m->abi != BACKEND_MODULE_ABI || !m->name || strcmp(m->name, name) || !m->open || !m->kernel) {
        say(why, size, "%s (%s) is not a dtrexec '%s' module of backend ABI %d (it says '%s', ABI %d)", path, from, name,
            BACKEND_MODULE_ABI, m->name ? m->name : "?", m->abi);
        dlclose(h);
        return NULL;
    }
    return m;
}

static const struct backend_module *search(const char *name, char *why, size_t size)
{
    char env[64];
    env_name(name, env, sizeof env);
    const char *over = getenv(env);
    if (over && *over) {
        char from[96];
        snprintf(from, sizeof from, "from %s", env);
        if (access(over, F_OK)) {
            say(why, size, "the %s module %s (%s) does not exist", name, over, from);
            return NULL;
        }
        return open_module(name, over, from, why, size);
    }
    char c[MODULE_CANDIDATES][PATH_MAX];
    int n = candidates(name, c);
    for (int i = 0; i < n; i++)
        if (!access(c[i], F_OK))
            return open_module(name, c[i], i == n - 1 ? "the install libdir" : "beside dtrexec", why, size);
    char list[3 * PATH_MAX + 64] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", c[i]);
    say(why, size, "no %s module: none of %s exists (this build has no %s backend, or set %s to the module's path)",
        name, list, name, env);
    return NULL;
}

const struct backend_module *backend_module_load(const char *name, char *why, size_t why_size)
{
    if (!name || !*name || strlen(name) >= sizeof loaded[0].name || strchr(name, '/')) {
        say(why, why_size, "bad backend name '%s'", name ? name : "");
        return NULL;
    }
    pthread_mutex_lock(&lock);
    const struct backend_module *m = NULL;
    int free_slot = -1;
    for (int i = 0; i < MODULE_MAX_LOADED && !m; i++) {
        if (loaded[i].module && !strcmp(loaded[i].name, name))
            m = loaded[i].module;
        else if (!loaded[i].module && free_slot < 0)
            free_slot = i;
    }
    if (!m && free_slot < 0)
        say(why, why_size, "too many backend modules");
    else if (!m && (m = search(name, why, why_size))) {
        snprintf(loaded[free_slot].name, sizeof loaded[free_slot].name, "%s", name);
        loaded[free_slot].module = m;
    }
    pthread_mutex_unlock(&lock);
    return m;
}
