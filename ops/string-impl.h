/* ops/string-impl.h — STRING tensors for the operator files.
 *
 * A STRING element is a struct onnx_string handle (pointer, length) in the
 * tensor's ordinary storage: 16 bytes, so layout operators (Identity,
 * Reshape, Concat, Gather, Transpose, ...) and device copies move strings
 * like any fixed-size element. The UTF-8 bytes live outside tensor memory
 * and outside the DTR budget: in the loaded model (initializers,
 * attributes) or in the session's string heap (runtime/strings.c). A kernel
 * that makes a new string writes it with op_string_set(), which interns
 * the bytes through env->string_intern: equal contents give equal handles,
 * valid for the session's life, so evicting a string tensor and recomputing
 * it reproduces it bit for bit. A kernel that passes a string on copies the
 * handle.
 *
 * String operators (ops/string.c: StringConcat and what they share;
 * string_normalizer.c, string_split.c, regex.c: RegexFullMatch; Equal on
 * strings in compare.c; TfIdfVectorizer's string tokens in tfidf.c;
 * LabelEncoder's string keys and values in ml_label_encoder.c) are not
 * differentiable, run on the host (op_host_bridge on a device: handles are
 * host pointers, only their 16 bytes travel), and read no locale: case
 * mapping is ASCII plus the Latin-1, Latin Extended-A, Greek and Cyrillic
 * letters (op_utf8_case).
 */
#ifndef DTRX_OPS_STRING_IMPL_H
#define DTRX_OPS_STRING_IMPL_H

#include <string.h>

#include "ops/ops.h"

static inline const struct onnx_string *op_string_at(const struct tensor *t, int64_t i)
{
    return (const struct onnx_string *)t->data + i;
}

static inline int op_string_eq(const struct onnx_string *a, const struct onnx_string *b)
{
    return a->len == b->len && (a->data == b->data || !a->len || !memcmp(a->data, b->data, a->len));
}

/* Element i of the STRING tensor t := the bytes (interned); -1 with a
 * message when the call has no string heap or it is out of memory. */
int op_string_set(struct op_call *c, struct tensor *t, int64_t i, const char *bytes, size_t len);

/* Appends the UTF-8 of s mapped to upper (upper 1) or lower case to out
 * (capacity >= 2 * s->len: no mapping here more than doubles a character's
 * bytes); returns the bytes written. Invalid UTF-8 bytes pass unchanged. */
size_t op_utf8_case(const struct onnx_string *s, int upper, char *out);

/* 0 when input i is a STRING tensor; else -1 with "<what> is <dtype>; it
 * must be a string tensor". */
int op_string_need(struct op_call *c, int i, const char *what);

/* Equal on STRING inputs (compare.c's kernel for dtype string). */
int op_string_equal_cpu(struct op_call *c);

#endif
