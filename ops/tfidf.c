/* ops/tfidf.c — TfIdfVectorizer (opset 9) over int32/int64 or string tokens.
 *
 * X is [C] or [N, C] (a scalar counts as [1]); Y is float [O] or [N, O],
 * O = max(ngram_indexes) + 1. The pool (pool_int64s) holds the 1-grams,
 * then the 2-grams, ... as ngram_counts' CSR offsets say; pool n-gram j is
 * counted into Y[ngram_indexes[j]] each time a row contains it with one of
 * the skips 0..max_skip_count between its tokens (positions s, s+d, ...,
 * d = skip + 1), for lengths min_gram_length..max_gram_length only. A
 * 1-gram is counted once, not once per skip. Where the pool holds one
 * n-gram twice the later entry counts, as onnx.reference and onnxruntime
 * do. Modes: TF the counts; IDF weights[o] where the count is non-zero, 0
 * elsewhere; TFIDF weights[o] * count (weights default to ones). weights
 * is indexed by the output coordinate o, as in onnx.reference and
 * onnxruntime (the spec's text says by pool entry; they coincide when
 * ngram_indexes is 0..n-1).
 *
 * Each length's pool n-grams are sorted once at parse time, so a row's
 * candidate n-gram is found by binary search. String tokens (pool_strings,
 * a STRING X) are numbered at parse time by their place among the pool's
 * distinct strings, sorted by bytes; an input string not in the pool gets
 * -1 and so matches nothing. No gradient (integer or string inputs) and no
 * CUDA kernel of its own: on --device cuda it runs on host copies
 * (op_host_bridge). */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/shape-impl.h"
#include "ops/string-impl.h"

enum tfidf_mode { TFIDF_TF, TFIDF_IDF, TFIDF_TFIDF };

/* The pool n-grams of one length, sorted lexicographically (ties by pool
 * position, so the last of equal ones is the one that counts). */
struct tfidf_level {
    int length;
    int64_t count;
    const int64_t *tokens;         /* pool_int64s from this level's offset: count * length */
    int64_t *order;                /* sorted n-gram numbers within the level */
    int64_t first;                 /* pool position of the level's first n-gram */
};

struct tfidf_params {
    enum tfidf_mode mode;
    int64_t min_len, max_len, max_skip, out_size;
    int64_t n_pool;                /* pool entries (n-grams) in all levels */
    int64_t *pool;                 /* a copy of pool_int64s */
    int64_t *indexes;              /* ngram_indexes, one per pool n-gram */
    float *weights;                /* out_size entries */
    int n_levels;
    struct tfidf_level *levels;    /* lengths min_len..max_len that have n-grams */
    int strings;                   /* 1: pool_strings; tokens are places in vocab */
    int64_t n_vocab;
    struct onnx_string *vocab;     /* the pool's distinct strings, sorted (bytes in the node's attribute) */
};

static void tfidf_free(void *params)
{
    struct tfidf_params *p = params;
    if (!p)
        return;
    for (int i = 0; i < p->n_levels; i++)
        free(p->levels[i].order);
    free(p->levels);
    free(p->pool);
    free(p->indexes);
    free(p->weights);
    free(p->vocab);
    free(p);
}

static int str_cmp(const struct onnx_string *a, const struct onnx_string *b)
{
    size_t m = a->len < b->len ? a->len : b->len;
    int k = m ? memcmp(a->data, b->data, m) : 0;
    return k ? k : (a->len > b->len) - (a->len < b->len);
}

static int str_qcmp(const void *a, const void *b) { return str_cmp(a, b); }

/* The place of s in the vocabulary, or -1. */
static int64_t vocab_id(const struct tfidf_params *p, const struct onnx_string *s)
{
    int64_t lo = 0, hi = p->n_vocab;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int k = str_cmp(&p->vocab[mid], s);
        if (!k)
            return mid;
        if (k < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* p->pool := the pool strings' places in the sorted distinct vocabulary. */
static int vocab_build(struct tfidf_params *p, const struct onnx_attr *a)
{
    p->strings = 1;
    if (!(p->vocab = malloc(sizeof *p->vocab * (size_t)(a->n + 1))))
        return -1;
    for (int i = 0; i < a->n; i++)
        p->vocab[i] = (struct onnx_string){ a->strings[i], strlen(a->strings[i]) };
    qsort(p->vocab, (size_t)a->n, sizeof *p->vocab, str_qcmp);
    int64_t w = 0;
    for (int64_t i = 0; i < a->n; i++)
        if (!w || str_cmp(&p->vocab[w - 1], &p->vocab[i]))
            p->vocab[w++] = p->vocab[i];
    p->n_vocab = w;
    for (int i = 0; i < a->n; i++)
        p->pool[i] = vocab_id(p, &(struct onnx_string){ a->strings[i], strlen(a->strings[i]) });
    return 0;
}

static int ngram_cmp(const int64_t *a, const int64_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* One pool n-gram while its level is sorted (qsort has no context). */
struct tfidf_entry {
    const int64_t *tokens;
    int64_t j;
    int length;
};

static int entry_cmp(const void *x, const void *y)
{
    const struct tfidf_entry *a = x, *b = y;
    int c = ngram_cmp(a->tokens, b->tokens, a->length);
    return c ? c : (a->j > b->j) - (a->j < b->j);
}

static const struct onnx_attr *need_attr(const struct onnx_node *node, const char *name, int type, char *err,
                                         size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, name);
    if (!a || a->type != type) {
        shape_parse_error(err, err_size, node, "attribute %s is required (%s)", name,
                          type == ONNX_ATTR_INT ? "an int" : type == ONNX_ATTR_INTS ? "ints"
                          : type == ONNX_ATTR_STRINGS ? "strings" : "a string");
        return NULL;
    }
    return a;
}

static int tfidf_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    (void)version;
    int strings = onnx_node_attr(node, "pool_strings") != NULL;
    if (strings && onnx_node_attr(node, "pool_int64s"))
        return shape_parse_error(err, err_size, node, "only one of pool_strings and pool_int64s may be set");
    const struct onnx_attr *mode = need_attr(node, "mode", ONNX_ATTR_STRING, err, err_size);
    const struct onnx_attr *a_min = mode ? need_attr(node, "min_gram_length", ONNX_ATTR_INT, err, err_size) : NULL;
    const struct onnx_attr *a_max = a_min ? need_attr(node, "max_gram_length", ONNX_ATTR_INT, err, err_size) : NULL;
    const struct onnx_attr *a_skip = a_max ? need_attr(node, "max_skip_count", ONNX_ATTR_INT, err, err_size) : NULL;
    const struct onnx_attr *a_counts = a_skip ? need_attr(node, "ngram_counts", ONNX_ATTR_INTS, err, err_size) : NULL;
    const struct onnx_attr *a_idx = a_counts ? need_attr(node, "ngram_indexes", ONNX_ATTR_INTS, err, err_size) : NULL;
    const struct onnx_attr *a_pool = !a_idx ? NULL
                                     : strings ? need_attr(node, "pool_strings", ONNX_ATTR_STRINGS, err, err_size)
                                               : need_attr(node, "pool_int64s", ONNX_ATTR_INTS, err, err_size);
    if (!a_pool)
        return -1;
    const struct onnx_attr *a_w = onnx_node_attr(node, "weights");
    if (a_w && a_w->type != ONNX_ATTR_FLOATS)
        return shape_parse_error(err, err_size, node, "attribute weights must be floats");
    enum tfidf_mode m;
    if (!strcmp(mode->s, "TF"))
        m = TFIDF_TF;
    else if (!strcmp(mode->s, "IDF"))
        m = TFIDF_IDF;
    else if (!strcmp(mode->s, "TFIDF"))
        m = TFIDF_TFIDF;
    else
        return shape_parse_error(err, err_size, node, "mode is \"%s\"; expected \"TF\", \"IDF\" or \"TFIDF\"", mode->s);
    if (a_min->i < 1 || a_max->i < a_min->i || a_max->i > 64)
        return shape_parse_error(err, err_size, node, "gram lengths %lld..%lld; expected 1 <= min <= max <= 64",
                                 (long long)a_min->i, (long long)a_max->i);
    if (a_skip->i < 0)
        return shape_parse_error(err, err_size, node, "max_skip_count is %lld; expected >= 0", (long long)a_skip->i);
    int64_t pool_len = a_pool->n, n_pool = 0;
    for (int i = 0; i < a_counts->n; i++) {
        int64_t start = a_counts->ints[i], end = i + 1 < a_counts->n ? a_counts->ints[i + 1] : pool_len;
        if (start < 0 || end < start || end > pool_len)
            return shape_parse_error(err, err_size, node, "ngram_counts must rise from 0 within the pool of %lld, "
                                     "entry %d is %lld", (long long)pool_len, i, (long long)start);
        if ((end - start) % (i + 1))
            return shape_parse_error(err, err_size, node, "the %d-grams take %lld pool entries, not a multiple "
                                     "of %d", i + 1, (long long)(end - start), i + 1);
        n_pool += (end - start) / (i + 1);
    }
    if (a_idx->n != n_pool)
        return shape_parse_error(err, err_size, node, "ngram_indexes has %d entries, the pool %lld n-grams", a_idx->n,
                                 (long long)n_pool);
    int64_t out_size = 0;
    for (int i = 0; i < a_idx->n; i++) {
        if (a_idx->ints[i] < 0)
            return shape_parse_error(err, err_size, node, "ngram_indexes[%d] is %lld; expected >= 0", i,
                                     (long long)a_idx->ints[i]);
        if (a_idx->ints[i] + 1 > out_size)
            out_size = a_idx->ints[i] + 1;
    }
    if (a_w && a_w->n < out_size)
        return shape_parse_error(err, err_size, node, "weights has %d entries; the output has %lld", a_w->n,
                                 (long long)out_size);
    struct tfidf_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->mode = m;
    p->min_len = a_min->i;
    p->max_len = a_max->i;
    p->max_skip = a_skip->i;
    p->out_size = out_size;
    p->n_pool = n_pool;
    p->pool = malloc(sizeof(int64_t) * (size_t)(pool_len + 1));
    p->indexes = malloc(sizeof(int64_t) * (size_t)(n_pool + 1));
    p->weights = malloc(sizeof(float) * (size_t)(out_size + 1));
    p->levels = calloc((size_t)a_counts->n + 1, sizeof *p->levels);
    if (!p->pool || !p->indexes || !p->weights || !p->levels) {
        tfidf_free(p);
        return shape_parse_error(err, err_size, node, "out of memory");
    }
    if (strings && vocab_build(p, a_pool)) {
        tfidf_free(p);
        return shape_parse_error(err, err_size, node, "out of memory");
    }
    if (pool_len && !strings)
        memcpy(p->pool, a_pool->ints, sizeof(int64_t) * (size_t)pool_len);
    if (n_pool)
        memcpy(p->indexes, a_idx->ints, sizeof(int64_t) * (size_t)n_pool);
    for (int64_t o = 0; o < out_size; o++)
        p->weights[o] = a_w ? a_w->floats[o] : 1.0f;
    int64_t first = 0;
    for (int i = 0; i < a_counts->n; i++) {
        int64_t start = a_counts->ints[i], end = i + 1 < a_counts->n ? a_counts->ints[i + 1] : pool_len;
        int64_t count = (end - start) / (i + 1);
        if (count && i + 1 >= p->min_len && i + 1 <= p->max_len) {
            struct tfidf_level *l = &p->levels[p->n_levels++];
            *l = (struct tfidf_level){ .length = i + 1, .count = count, .tokens = p->pool + start, .first = first };
            struct tfidf_entry *e = malloc(sizeof *e * (size_t)count);
            if (!e || !(l->order = malloc(sizeof(int64_t) * (size_t)count))) {
                free(e);
                tfidf_free(p);
                return shape_parse_error(err, err_size, node, "out of memory");
            }
            for (int64_t j = 0; j < count; j++)
                e[j] = (struct tfidf_entry){ .tokens = l->tokens + j * l->length, .j = j, .length = l->length };
            qsort(e, (size_t)count, sizeof *e, entry_cmp);
            for (int64_t j = 0; j < count; j++)
                l->order[j] = e[j].j;
            free(e);
        }
        first += count;
    }
    *params = p;
    return 0;
}

static int tfidf_shape(const struct op_call *c, int64_t *rows, int64_t *cols)
{
    const struct tensor *x = c->in[0];
    const struct tfidf_params *p = c->params;
    if (p->strings && x->dtype != ONNX_DTYPE_STRING)
        return op_error(c, "X is %s but the pool is pool_strings; X must be a string tensor",
                        onnx_dtype_name(x->dtype));
    if (!p->strings && x->dtype != ONNX_DTYPE_INT32 && x->dtype != ONNX_DTYPE_INT64)
        return op_error(c, "X must be int32 or int64 (the pool is pool_int64s), not %s", onnx_dtype_name(x->dtype));
    if (x->rank > 2)
        return op_error(c, "X has rank %d; expected [C] or [N, C]", x->rank);
    *rows = x->rank == 2 ? x->dims[0] : 1;
    *cols = x->rank == 0 ? 1 : x->dims[x->rank - 1];
    return 0;
}

static int tfidf_infer(struct op_call *c)
{
    const struct tfidf_params *p = c->params;
    int64_t rows = 0, cols = 0;
    if (tfidf_shape(c, &rows, &cols))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_FLOAT;
    y->rank = c->in[0]->rank == 2 ? 2 : 1;
    y->dims[0] = y->rank == 2 ? rows : p->out_size;
    y->dims[1] = p->out_size;
    return 0;
}

/* The pool position of the n-gram `key` in level l, or -1. */
static int64_t level_find(const struct tfidf_level *l, const int64_t *key)
{
    int64_t lo = 0, hi = l->count;   /* first element greater than key */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ngram_cmp(l->tokens + l->order[mid] * l->length, key, l->length) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || ngram_cmp(l->tokens + l->order[lo - 1] * l->length, key, l->length))
        return -1;
    return l->first + l->order[lo - 1];
}

static int tfidf_cpu(struct op_call *c)
{
    const struct tfidf_params *p = c->params;
    const struct tensor *x = c->in[0];
    float *y = c->out[0]->data;
    int64_t rows = 0, cols = 0;
    if (tfidf_shape(c, &rows, &cols))
        return -1;
    int64_t key[64];
    for (int64_t r = 0; r < rows; r++) {
        float *out = y + r * p->out_size;
        memset(out, 0, sizeof(float) * (size_t)p->out_size);
        for (int li = 0; li < p->n_levels; li++) {
            const struct tfidf_level *l = &p->levels[li];
            int64_t n = l->length;
            /* A 1-gram has no gaps: counted for the first skip only. */
            int64_t skips = n == 1 ? 0 : p->max_skip;
            for (int64_t d = 1; d <= skips + 1; d++)
                for (int64_t s = 0; s + (n - 1) * d < cols; s++) {
                    for (int64_t k = 0; k < n; k++)
                        key[k] = p->strings ? vocab_id(p, op_string_at(x, r * cols + s + k * d))
                                            : tensor_get_int(x, r * cols + s + k * d);
                    int64_t j = level_find(l, key);
                    if (j >= 0)
                        out[p->indexes[j]] += 1;
                }
        }
        for (int64_t o = 0; o < p->out_size; o++)
            if (p->mode == TFIDF_IDF)
                out[o] = out[o] > 0 ? p->weights[o] : 0;
            else if (p->mode == TFIDF_TFIDF)
                out[o] *= p->weights[o];
    }
    return 0;
}

static struct op_cost tfidf_cost(const struct op_call *c)
{
    const struct tfidf_params *p = c->params;
    double work = (double)tensor_numel(c->in[0]) * (double)(p->max_skip + 1) * (double)p->max_len *
                  (double)p->max_len * 8;
    return (struct op_cost){ .flops = work,
                             .bytes = (double)tensor_size_bytes(c->in[0]) + (double)tensor_size_bytes(c->out[0]) };
}

const struct op_def op_tfidf_vectorizer = {
    .domain = "", .name = "TfIdfVectorizer", .since = { 9 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = tfidf_parse, .params_free = tfidf_free, .infer = tfidf_infer, .cost = tfidf_cost,
    .kernel = { [BACKEND_CPU] = tfidf_cpu, [BACKEND_CUDA] = op_host_bridge },
};
