/* dtr/format/json.h — a small, general JSON reader and writer helpers for the
 * interchange formats (traces, graphs, schedules, statistics). RFC 8259: objects
 * keep their member order and duplicate keys (json_get returns the first);
 * numbers are doubles, with the source text kept so that integers beyond
 * 2^53 can be read exactly; strings are UTF-8 with escapes decoded (\u0000
 * is kept, so use the length). Errors give line and column. */
#ifndef DTRX_FORMAT_JSON_H
#define DTRX_FORMAT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum json_type {
    JSON_NULL = 0,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
};

struct json_member;

struct json_value {
    enum json_type type;
    union {
        struct {
            double value;
            char *text;          /* the number as written */
        } number;
        struct {
            char *chars;         /* NUL-terminated */
            size_t len;
        } string;
        struct {
            struct json_value *items;
            size_t n;
        } array;
        struct {
            struct json_member *members;
            size_t n;
        } object;
    } u;
};

struct json_member {
    char *key;
    size_t key_len;
    struct json_value value;
};

/* Parses exactly one JSON value (surrounded by optional whitespace) from
 * text[0..len). Returns 0, or -1 with "line L, column C: what" in err. The
 * caller frees *out with json_free. Nesting is limited to 512 levels. */
int json_parse(const char *text, size_t len, struct json_value *out, char *err, size_t err_size);
/* Reads and parses a whole file; err names the file. */
int json_parse_file(const char *path, struct json_value *out, char *err, size_t err_size);
void json_free(struct json_value *v);

/* Member of an object by key, or NULL (also when v is not an object). */
const struct json_value *json_get(const struct json_value *v, const char *key);
/* The string's chars, or NULL when v is not a string. */
const char *json_string(const struct json_value *v);
/* Reads a number, or a string holding a number ("1728", as the DTR logs
 * write them). Returns 0, or -1 when v is neither. */
int json_as_double(const struct json_value *v, double *out);
/* Same for integers: exact for the full int64 range; -1 when not an integer. */
int json_as_int64(const struct json_value *v, int64_t *out);

/* Writes s as a JSON string literal (quotes and escapes). */
void json_write_string(FILE *f, const char *s);
/* Writes a double the shortest way that reads back identically; NaN and
 * infinities (not JSON) as null. */
void json_write_number(FILE *f, double x);

#endif
