/* tests/fuzz/fuzz_tensor.c — the tensor readers: onnx_tensor_load (a
 * TensorProto .pb or a .npy, chosen by content) and onnx_value_load as a
 * sequence and as an optional (SequenceProto, OptionalProto). A loaded
 * tensor's byte count must match its dims and type. */
#include "onnx/onnx.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_file f;
    if (fuzz_file_open(&f, data, size))
        return 0;
    char err[512] = "";
    struct onnx_tensor t = { 0 };
    if (onnx_tensor_load(f.path, &t, err, sizeof err) == 0) {
        int64_t n = onnx_tensor_numel(&t);
        FUZZ_REQUIRE(n >= 0);
        FUZZ_REQUIRE(n == 0 || t.data);
        onnx_tensor_clear(&t);
    } else {
        FUZZ_REQUIRE(err[0]);
    }
    static const int kinds[] = { ONNX_VALUE_SEQUENCE, ONNX_VALUE_OPTIONAL };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        struct onnx_value v = { 0 };
        err[0] = 0;
        if (onnx_value_load(f.path, kinds[k], &v, err, sizeof err) == 0) {
            FUZZ_REQUIRE(v.n_elems >= 0);
            FUZZ_REQUIRE(kinds[k] != ONNX_VALUE_OPTIONAL || v.n_elems <= 1);
            onnx_value_clear(&v);
        } else {
            FUZZ_REQUIRE(err[0]);
        }
    }
    fuzz_file_close(&f);
    return 0;
}
