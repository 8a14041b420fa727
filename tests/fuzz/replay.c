/* tests/fuzz/replay.c — a driver for the fuzz harnesses without libFuzzer:
 *
 *     fuzz_X [--runs R] [--seconds S] [--seed N] [--max-len L] PATH...
 *
 * runs LLVMFuzzerTestOneInput on every file under each PATH (a file or a
 * directory of files: the committed corpus), then on R mutations of them
 * (default 0), or as many as S seconds allow when --seconds is given: bit flips, byte changes to boundary values,
 * inserted, deleted and duplicated runs, and splices of two inputs, from a
 * seeded generator (the same seed and R, the same inputs: CTest gives R,
 * so a run is reproducible). The sanitized CI tree runs it, so a finding aborts with the sanitizer's report; the input that
 * found it is written to ./fuzz-crash-<harness>-<n> before it runs. For
 * real campaigns build with DTRX_FUZZ=ON (clang, libFuzzer). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
    uint8_t *data;
    size_t size;
};

static struct input *inputs;
static size_t n_inputs, cap_inputs;

static void add_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    if (n_inputs == cap_inputs) {
        cap_inputs = cap_inputs ? 2 * cap_inputs : 64;
        inputs = realloc(inputs, cap_inputs * sizeof *inputs);
        if (!inputs)
            exit(2);
    }
    inputs[n_inputs++] = (struct input){ buf, (size_t)n };
}

static void add_path(const char *path)
{
    struct stat st;
    if (stat(path, &st)) {
        fprintf(stderr, "replay: no such file or directory: %s\n", path);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        add_file(path);
        return;
    }
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        add_path(sub);
    }
    if (d)
        closedir(d);
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state += 0x9e3779b97f4a7c15ull;
    uint64_t z = rng_state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One mutation of `src` into a fresh buffer of at most max_len bytes. */
static struct input mutate(const struct input *src, const struct input *other, size_t max_len)
{
    size_t cap = max_len + 16, n = src->size < max_len ? src->size : max_len;
    uint8_t *b = malloc(cap);
    if (!b)
        exit(2);
    memcpy(b, src->data, n);
    int rounds = 1 + (int)(rnd() % 4);
    static const uint8_t special[] = { 0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x3f, 0x40 };
    for (int r = 0; r < rounds; r++) {
        size_t at = n ? (size_t)(rnd() % n) : 0;
        switch (rnd() % 6) {
        case 0:
            if (n)
                b[at] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        case 1:
            if (n)
                b[at] = special[rnd() % sizeof special];
            break;
        case 2: {                                   /* insert a run of one byte */
            size_t k = 1 + (size_t)(rnd() % 8);
            if (n + k > max_len)
                break;
            memmove(b + at + k, b + at, n - at);
            memset(b + at, (int)(rnd() & 0xff), k);
            n += k;
            break;
        }
        case 3: {                                   /* delete a run */
            size_t k = 1 + (size_t)(rnd() % 16);
            if (at + k > n)
                k = n - at;
            memmove(b + at, b + at + k, n - at - k);
            n -= k;
            break;
        }
        case 4: {                                   /* duplicate a run */
            size_t k = 1 + (size_t)(rnd() % 32);
            if (at + k > n || n + k > max_len)
                break;
            memmove(b + at + k, b + at, n - at);
            n += k;
            break;
        }
        default: {                                  /* splice in part of another input */
            if (!other->size)
                break;
            size_t from = (size_t)(rnd() % other->size), k = 1 + (size_t)(rnd() % 64);
            if (from + k > other->size)
                k = other->size - from;
            if (at + k > max_len)
                break;
            memcpy(b + at, other->data + from, k);
            if (at + k > n)
                n = at + k;
            break;
        }
        }
    }
    return (struct input){ b, n };
}

int main(int argc, char **argv)
{
    double seconds = -1;
    unsigned long long max_runs = 0;
    size_t max_len = 1 << 20;
    rng_state = 1;
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            max_runs = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--max-len") && i + 1 < argc)
            max_len = strtoull(argv[++i], NULL, 10);
        else
            add_path(argv[i]);
    }
    if (!n_inputs) {
        fprintf(stderr, "usage: %s [--runs R] [--seconds S] [--seed N] [--max-len L] CORPUS...\n", name);
        return 2;
    }
    for (size_t i = 0; i < n_inputs; i++)
        LLVMFuzzerTestOneInput(inputs[i].data, inputs[i].size);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long long runs = 0;
    char crash[256];
    snprintf(crash, sizeof crash, "fuzz-crash-%s-%d", name, (int)getpid());
    double elapsed = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        elapsed = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
        if (seconds >= 0 ? elapsed >= seconds : runs >= max_runs)
            break;
        const struct input *a = &inputs[rnd() % n_inputs], *o = &inputs[rnd() % n_inputs];
        struct input m = mutate(a, o, max_len);
        FILE *f = fopen(crash, "wb");          /* the input in flight, kept if it kills us */
        if (f) {
            fwrite(m.data, 1, m.size, f);
            fclose(f);
        }
        LLVMFuzzerTestOneInput(m.data, m.size);
        free(m.data);
        runs++;
    }
    remove(crash);
    printf("%s: %zu corpus inputs replayed, %llu mutations run in %.1f s, no finding\n", name, n_inputs, runs,
           elapsed);
    for (size_t i = 0; i < n_inputs; i++)
        free(inputs[i].data);
    free(inputs);
    return 0;
}
