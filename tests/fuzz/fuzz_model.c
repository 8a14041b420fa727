/* tests/fuzz/fuzz_model.c — the ONNX model loader from bytes
 * (onnx_model_load_buffer), then, for what loads, a session over the same
 * bytes under a 4 MiB budget: create, seeded inputs, one run. Errors are
 * expected; a crash, a leak, undefined behaviour or an error without a
 * message is a finding. */
#include <string.h>

#include "onnx/onnx.h"
#include "runtime/dtrexec.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct onnx_model *m = NULL;
    char err[512] = "";
    if (onnx_model_load_buffer(data, size, NULL, &m, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0]);
        return 0;
    }
    onnx_model_free(m);
    struct fuzz_file f;
    if (fuzz_file_open(&f, data, size))
        return 0;
    struct dtrx_options o;
    dtrx_options_init(&o);
    o.budget_bytes = 4u << 20;
    o.threads = 1;
    struct dtrx_session *s = NULL;
    enum dtrx_status st = dtrx_session_create(f.path, &o, &s);
    if (st == DTRX_OK) {
        st = dtrx_session_fill_inputs(s);
        if (st == DTRX_OK)
            st = dtrx_session_run(s);
        dtrx_session_destroy(s);
    }
    if (st != DTRX_OK)
        FUZZ_REQUIRE(dtrx_last_error() && dtrx_last_error()[0]);
    fuzz_file_close(&f);
    return 0;
}
