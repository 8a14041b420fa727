/* dtr/format/trace.h — the DTR op log ("trace"): JSON lines, one record
 * per line, in the format of the DTR authors' simulator logs (simrd),
 * written by `dtrexec --trace` (runtime/trace.c) and read by the simulator.
 * Records (DESIGN.md "Trace"): CONSTANT {NAME}, MEMORY {NAME, MEMORY},
 * ALIAS {NAME, ALIAS}, CALL {NAME, ARGS, RESULT, TIME, and dtrexec's optional
 * IN_PLACE: argument indices changed in place}, MUTATE {NAME, ARGS,
 * MUTATE, TIME}, COPY / COPY_FROM {DST, SRC}, RELEASE {NAME}, ANNOTATE
 * {ANNOTATION}; numbers may be written as strings ("1728"). Other keys are
 * ignored. In memory (struct fmt_trace) every name is interned to a small
 * integer and each record keeps only its typed fields. The reader checks
 * each record's fields as it reads (TIME finite and non-negative, MEMORY
 * an integer byte count from 0 to 2^62, ALIAS an integer >= -1, MUTATE
 * non-negative integer indices, names strings); errors give "PATH:LINE:"
 * and name the field. What the records mean together (a MEMORY after each
 * CONSTANT, names defined before use) is the simulator's to check
 * (dtr/sim/trace.c). */
#ifndef DTRX_FORMAT_TRACE_H
#define DTRX_FORMAT_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum fmt_trace_kind {
    FMT_TRACE_CONSTANT = 0,
    FMT_TRACE_MEMORY,
    FMT_TRACE_ALIAS,
    FMT_TRACE_CALL,
    FMT_TRACE_MUTATE,
    FMT_TRACE_COPY,
    FMT_TRACE_COPY_FROM,
    FMT_TRACE_RELEASE,
    FMT_TRACE_ANNOTATE,
    FMT_TRACE_KIND_COUNT
};

#define FMT_TRACE_MAX_BYTES 4611686018427387904LL /* 2^62 */

struct fmt_trace_record {
    uint8_t kind;              /* enum fmt_trace_kind */
    uint32_t line;             /* 1-based line in the file */
    uint32_t name;             /* NAME (the op for CALL/MUTATE), DST for COPY*, ANNOTATION */
    uint32_t src;              /* COPY*: SRC */
    uint32_t args_at, n_args;  /* ARGS: name ids in fmt_trace.ids */
    uint32_t res_at, n_res;    /* CALL: RESULT name ids; MUTATE: argument indices (in ids) */
    uint32_t in_place_at, n_in_place; /* CALL: IN_PLACE argument indices (in ids), dtrexec's extension */
    double time;               /* CALL, MUTATE: TIME */
    int64_t value;             /* MEMORY: bytes; ALIAS: -1 or an argument index */
};

struct fmt_trace {
    struct fmt_trace_record *recs;
    uint32_t n_recs, cap_recs;
    uint32_t *ids;             /* ARGS / RESULT / MUTATE lists */
    uint32_t n_ids, cap_ids;
    char *pool;                /* the names, NUL-terminated, one after the other */
    size_t pool_len, pool_cap;
    uint32_t *name_at;         /* name id -> offset into pool */
    uint32_t n_names, cap_names;
    uint32_t *slots;           /* hash table: name id + 1 */
    uint32_t n_slots;
};

/* Reads a whole op log. Returns 0, or -1 with "PATH:LINE: what" in err
 * (t is then empty). An empty log (no records) reads as 0 records. */
int fmt_trace_read(const char *path, struct fmt_trace *t, char *err, size_t err_size);
/* The same from text[0..len); `name` stands for the file in messages. */
int fmt_trace_parse(const char *text, size_t len, const char *name, struct fmt_trace *t, char *err, size_t err_size);
void fmt_trace_free(struct fmt_trace *t);
/* The text of a name id. */
static inline const char *fmt_trace_name(const struct fmt_trace *t, uint32_t id)
{
    return t->pool + t->name_at[id];
}
/* A name's id, or UINT32_MAX when the trace has no such name. */
uint32_t fmt_trace_find(const struct fmt_trace *t, const char *name);
const char *fmt_trace_kind_name(enum fmt_trace_kind k);

/* The writer: one record per line, keys in alphabetical order and numbers
 * as strings, as the DTR authors' logs and runtime/trace.c write them. The
 * streaming form writes one record; fmt_trace_write a whole trace. */
void fmt_trace_put_constant(FILE *f, const char *name);
void fmt_trace_put_memory(FILE *f, const char *name, uint64_t bytes);
void fmt_trace_put_alias(FILE *f, const char *name, int64_t alias);
void fmt_trace_put_call(FILE *f, const char *op, const char *const *args, uint32_t n_args,
                        const char *const *results, uint32_t n_results, double time);
/* A CALL whose arguments in_place[] (indices into args) it changes in
 * place: "IN_PLACE", dtrexec's extension (an optimizer step inside the
 * backward pass; the simulator freezes what was computed from them first,
 * dtr_tensor_mutate). Other readers ignore the key. */
void fmt_trace_put_call_in_place(FILE *f, const char *op, const char *const *args, uint32_t n_args,
                                 const char *const *results, uint32_t n_results, const uint32_t *in_place,
                                 uint32_t n_in_place, double time);
void fmt_trace_put_mutate(FILE *f, const char *op, const char *const *args, uint32_t n_args,
                          const uint32_t *mutated, uint32_t n_mutated, double time);
void fmt_trace_put_copy(FILE *f, int from, const char *dst, const char *src);
void fmt_trace_put_release(FILE *f, const char *name);
void fmt_trace_put_annotate(FILE *f, const char *annotation);
int fmt_trace_write(FILE *f, const struct fmt_trace *t);

#endif
