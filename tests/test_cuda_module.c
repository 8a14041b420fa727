/* tests/test_cuda_module.c — the CUDA backend as a module loaded on demand
 * (ops/backend_module.c): a host-only process maps none of the CUDA
 * libraries, `dtrexec --version` loads none of them, and a missing or broken
 * module (DTRX_CUDA_MODULE naming a file that does not exist, a file that
 * is no shared object, a shared object that is no dtrexec module, a module
 * of another ABI, the
 * module with a CUDA library missing) is
 * refused with a message naming the file and what is wrong, through the
 * API and as a non-zero exit of the command. Runs the same with or without
 * a CUDA build and a GPU. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"
#include "runtime/dtrexec.h"
#include "testutil.h"

/* 1 if /proc/self/maps names a file containing `what`. */
static int mapped(const char *what)
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, what) != NULL;
    fclose(f);
    return found;
}

static void expect_refused(const char *module, const char *what)
{
    ck_assert_int_eq(setenv("DTRX_CUDA_MODULE", module, 1), 0);
    ck_assert_int_eq(dtrx_device_check("cuda"), DTRX_ERR_INPUT);
    const char *e = dtrx_last_error();
    ck_assert_msg(!strncmp(e, "device 'cuda' is not available: ", 32), "got: %s", e);
    ck_assert_msg(strstr(e, module) && strstr(e, what), "no '%s' or '%s' in: %s", module, what, e);
    char why[1024] = "";
    ck_assert_ptr_null(backend_module_load("cuda", why, sizeof why));
    ck_assert_msg(strstr(why, what), "got: %s", why);
    char path[4096];
    if (access(module, F_OK))
        ck_assert_int_eq(backend_module_find("cuda", path, sizeof path), -1);
}

START_TEST(host_only_maps_no_cuda)
{
    ck_assert_int_eq(dtrx_device_check("cpu"), DTRX_OK);
    int version = 0;
    const struct op_def *mm = op_registry_find("", "MatMul", 13, &version);
    ck_assert_ptr_nonnull(mm);
    ck_assert_ptr_eq(backend_cpu.kernel(mm), mm->kernel[BACKEND_CPU]);
    ck_assert_ptr_nonnull(backend_cpu.kernel(mm));
    const char *libs[] = { "libcudart", "libcublas", "libcudnn", "libdtrexec_cuda" };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        ck_assert_msg(!mapped(libs[i]), "%s is mapped in a host-only process", libs[i]);
}
END_TEST

START_TEST(version_loads_no_cuda)
{
    char out[1 << 16];
    ck_assert_int_eq(testutil_run_cli("--version", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "backends: cpu"), "got: %s", out);
    /* The dynamic loader's own list of what it loads. */
    FILE *p = popen("LD_DEBUG=libs " DTRX_BINARY " --version 2>&1", "r");
    ck_assert_ptr_nonnull(p);
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = 0;
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(strstr(out, "calling init"), "LD_DEBUG gave nothing: %.400s", out);
    ck_assert_msg(!strstr(out, "libcudart") && !strstr(out, "libcudnn") && !strstr(out, "libcublas"),
                  "dtrexec --version loads CUDA: %.2000s", out);
}
END_TEST

START_TEST(missing_module_refused)
{
    expect_refused("/nonexistent/libdtrexec_cuda.so", "does not exist");
    char out[8192];
    int rc = testutil_run_cli("check --device cuda --quiet /nonexistent-folder", out, sizeof out);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, "device 'cuda' is not available: ") && strstr(out, "/nonexistent/libdtrexec_cuda.so"),
                  "got: %s", out);
}
END_TEST

START_TEST(not_a_shared_object_refused)
{
    char path[] = "/tmp/dtrx_not_elf_XXXXXX.so";
    int fd = mkstemps(path, 3);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    /* The dynamic loader's reason is passed on. */
    expect_refused(path, "cannot load the cuda module");
    const char *e = dtrx_last_error();
    ck_assert_msg(strstr(e, "ELF") || strstr(e, "too short"), "no loader reason in: %s", e);
    unlink(path);
}
END_TEST

START_TEST(not_a_module_refused)
{
    /* libm: a real shared object, without the module's entry symbol. */
    Dl_info info;
    ck_assert(dladdr((void *)cos, &info) && info.dli_fname && strchr(info.dli_fname, '/'));
    expect_refused(info.dli_fname, "is not a dtrexec backend module");
    ck_assert_msg(strstr(dtrx_last_error(), BACKEND_MODULE_SYMBOL), "got: %s", dtrx_last_error());
}
END_TEST

START_TEST(other_abi_refused)
{
    expect_refused(DTRX_FAKE_MODULE, "backend ABI");
}
END_TEST

/* The module built here, with its dependency on the CUDA runtime renamed
 * to a library that does not exist (as on a machine without CUDA): the
 * dynamic loader's message names the missing library. Needs the module
 * (CTest names it in DTRX_CUDA_MODULE); skipped in a build without CUDA. */
static char built_module[4096];

START_TEST(missing_cuda_library_named)
{
    if (!built_module[0]) {
        printf("test_cuda_module: missing_cuda_library_named SKIPPED: no CUDA module in this build\n");
        return;
    }
    FILE *f = fopen(built_module, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    ck_assert_int_gt(size, 0);
    rewind(f);
    char *bytes = malloc((size_t)size);
    ck_assert_ptr_nonnull(bytes);
    ck_assert_int_eq(fread(bytes, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    int renamed = 0;
    for (char *at = bytes; (at = memmem(at, (size_t)(bytes + size - at), "libcudart.so", 12)); at += 12, renamed++)
        memcpy(at, "libnocuda.so", 12);
    ck_assert_int_gt(renamed, 0);
    char path[] = "/tmp/dtrx_module_XXXXXX.so";
    int fd = mkstemps(path, 3);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, bytes, (size_t)size), size);
    close(fd);
    free(bytes);
    expect_refused(path, "libnocuda.so");
    ck_assert_msg(strstr(dtrx_last_error(), "cannot open shared object file"), "got: %s", dtrx_last_error());
    unlink(path);
}
END_TEST

int main(void)
{
    TCase *tc;
    Suite *s = testutil_suite("cuda_module", "module", 120, &tc);
    tcase_add_test(tc, host_only_maps_no_cuda);
    tcase_add_test(tc, version_loads_no_cuda);
    tcase_add_test(tc, missing_module_refused);
    tcase_add_test(tc, not_a_shared_object_refused);
    tcase_add_test(tc, not_a_module_refused);
    tcase_add_test(tc, other_abi_refused);
    tcase_add_test(tc, missing_cuda_library_named);
    const char *m = getenv("DTRX_CUDA_MODULE");
    if (m && !access(m, R_OK))
        snprintf(built_module, sizeof built_module, "%s", m);
    return testutil_run(s);
}
