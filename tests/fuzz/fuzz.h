/* tests/fuzz/fuzz.h — what the fuzz harnesses share. Each harness defines
 * LLVMFuzzerTestOneInput(data, size) (libFuzzer's entry point) and is
 * linked either with -fsanitize=fuzzer (DTRX_FUZZ=ON, clang: a campaign)
 * or with replay.c (every build: CI replays the committed corpus and
 * mutates it for a bounded time). A harness aborts only on a violated
 * property; a sanitizer report ends the run by itself.
 *
 * fuzz_file hands the bytes to path-based readers as /proc/self/fd/N of a
 * memfd, so no file is left behind and no external data resolves. */
#ifndef DTRX_FUZZ_H
#define DTRX_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* memfd_create; the build defines it for every harness file */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_file {
    int fd;
    char path[64];
};

/* 0 with f->path naming the bytes; -1 when the memfd cannot be made. */
static inline int fuzz_file_open(struct fuzz_file *f, const uint8_t *data, size_t size)
{
    f->fd = memfd_create("dtrx-fuzz", 0);
    if (f->fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(f->fd, data + done, size - done);
        if (w <= 0) {
            close(f->fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    return 0;
}

static inline void fuzz_file_close(struct fuzz_file *f)
{
    close(f->fd);
}

#define FUZZ_REQUIRE(cond)                                                                          \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "fuzz: property violated at %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
            abort();                                                                                \
        }                                                                                           \
    } while (0)

#endif
