/* onnx/onnx-impl.h — helpers shared by the onnx/ sources, never included
 * outside onnx/ (it pulls in the generated protobuf-c types, which no other
 * module may see). */
#ifndef DTRX_ONNX_IMPL_H
#define DTRX_ONNX_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "onnx/ assumes a little-endian host (raw_data and .npy are little-endian)"
#endif

/* Tensors larger than this many elements are refused as absurd: 2^40. */
#define ONNX_MAX_NUMEL ((int64_t)1 << 40)
/* Protobuf messages nested deeper than this are refused before protobuf-c
 * sees them: its unpacker recurses without a limit, so a hostile file could
 * otherwise exhaust the stack. Each subgraph level costs 3 message levels
 * (Graph -> Node -> Attribute), so this leaves room for ONNX_MAX_SUBGRAPH_DEPTH. */
#define ONNX_PROTO_MAX_DEPTH 256

/* Writes a message into err (if any); always returns -1 for tail calls. */
int onnx_error(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prepends "<prefix>: " to the message already in err; returns -1. */
int onnx_error_prefix(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* strdup that maps NULL to "" (callers check for NULL = out of memory). */
char *onnx_strdup(const char *s);
/* The directory part of a path ("." when it has none); caller frees. */
char *onnx_dirname(const char *path);

/* Whole file into a malloc'ed buffer (caller frees). */
int onnx_file_read(const char *path, uint8_t **data, size_t *len, char *err, size_t size);
/* A whole file, mapped read-only when possible (large models then cost no
 * extra private memory while protobuf-c copies out of them), else read. */
struct onnx_file_view {
    const uint8_t *data;
    size_t len;
    int mapped;
};
int onnx_file_map(const char *path, struct onnx_file_view *v, char *err, size_t size);
void onnx_file_unmap(struct onnx_file_view *v);
int onnx_file_write(const char *path, const void *data, size_t len, char *err, size_t size);

/* Walks the protobuf wire format of `buf` as message type `desc` without
 * building anything: fails on truncation, bad wire types or nesting deeper
 * than ONNX_PROTO_MAX_DEPTH. Run before protobuf-c's unpack. */
int onnx_proto_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                     char *err, size_t size);

/* "float32[2,3]" into buf; returns buf. */
const char *onnx_shape_describe(int dtype, int rank, const int64_t *dims, char *buf, size_t size);

/* Decodes a TensorProto (raw_data, typed fields or external data relative to
 * base_dir, which may be NULL to forbid external data). May take ownership of
 * tp->raw_data's buffer (it then sets it to NULL) to avoid copying large
 * weights. Messages name the tensor. */
int onnx_tensor_from_proto(Onnx__TensorProto *tp, const char *base_dir, struct onnx_tensor *out,
                           char *err, size_t size);
/* A serialized TensorProto (a .pb file's bytes) into *out. */
int onnx_tensor_parse_pb(const uint8_t *buf, size_t len, const char *base_dir, struct onnx_tensor *out,
                         char *err, size_t size);

#endif
