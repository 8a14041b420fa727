/* tests/install/consumer.c — an embedder of the installed libdtrexec
 * (tests/install/install_check.py builds it through pkg-config and through
 * find_package): runs MODEL once on seeded random inputs and prints every
 * value of output 0, one per line ("%.9g"), then one SGD step's loss. */
#include <stdio.h>

#include <dtrexec/dtrexec.h>

static int fail(const char *what)
{
    fprintf(stderr, "consumer: %s: %s\n", what, dtrx_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: consumer MODEL.onnx\n");
        return 1;
    }
    struct dtrx_options o;
    dtrx_options_init(&o);
    o.threads = 1;
    struct dtrx_session *s;
    if (dtrx_session_create(argv[1], &o, &s))
        return fail("create");
    if (dtrx_session_fill_inputs(s) || dtrx_session_run(s))
        return fail("run");
    struct dtrx_tensor y;
    if (dtrx_session_get_output(s, 0, &y))
        return fail("output");
    if (y.dtype != 1)
        return fail("output 0 is not float32");
    for (int64_t i = 0; i < dtrx_tensor_numel(&y); i++)
        printf("%.9g\n", ((const float *)y.data)[i]);
    struct dtrx_train_options t;
    dtrx_train_options_init(&t);
    double loss = 0;
    if (dtrx_session_train_begin(s, &t) || dtrx_session_train_step(s, &loss))
        return fail("train");
    printf("loss %.9g\n", loss);
    dtrx_session_destroy(s);
    return 0;
}
