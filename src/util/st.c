/* st.c - safetensors container: parse/validate and write (see st.h). */
#include "util/st.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

static const struct { const char *name; size_t size; } dtypes[ST_N_DTYPES] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},   [ST_I8] = {"I8", 1},
    [ST_U16] = {"U16", 2},   [ST_I16] = {"I16", 2}, [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_U32] = {"U32", 4}, [ST_I32] = {"I32", 4},
    [ST_F32] = {"F32", 4},   [ST_U64] = {"U64", 8}, [ST_I64] = {"I64", 8},
    [ST_F64] = {"F64", 8},
};

const char *st_dtype_name(st_dtype d) { return (unsigned)d < ST_N_DTYPES ? dtypes[d].name : "?"; }
size_t st_dtype_size(st_dtype d) { return (unsigned)d < ST_N_DTYPES ? dtypes[d].size : 0; }

static int dtype_parse(const char *s, st_dtype *d) {
    for (int i = 0; i < ST_N_DTYPES; i++)
        if (strcmp(s, dtypes[i].name) == 0) {
            *d = (st_dtype)i;
            return 1;
        }
    return 0;
}

void st_sha256_hex(const uint8_t *p, size_t n, char hex[65]) {
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, p, n);
    sodium_bin2hex(hex, 65, h, sizeof h);
}

void st_blake2b_hex(const uint8_t *p, size_t n, char hex[65]) {
    unsigned char h[32];
    crypto_generichash(h, sizeof h, p, n, NULL, 0);
    sodium_bin2hex(hex, 65, h, sizeof h);
}

/* ---- the data section's tree checksum (ST_TREE_KEY) ----
 * Leaf i: BLAKE2b-256 of bytes [i*ST_TREE_CHUNK, (i+1)*ST_TREE_CHUNK), salt
 * = i (little-endian), personal "laya-tree-leaf". Root: BLAKE2b-256 of the
 * leaf digests in order, salt = the data's length, personal
 * "laya-tree-root". Position and length are in the hash, so no other data
 * gives the same leaves; the leaves hash independently, on every core. */

static void salt_of(uint64_t v, unsigned char salt[crypto_generichash_blake2b_SALTBYTES]) {
    memset(salt, 0, crypto_generichash_blake2b_SALTBYTES);
    for (int i = 0; i < 8; i++) salt[i] = (unsigned char)(v >> (8 * i));
}

static void tree_init(crypto_generichash_blake2b_state *s, uint64_t salt_v, const char *personal) {
    unsigned char salt[crypto_generichash_blake2b_SALTBYTES], pers[crypto_generichash_blake2b_PERSONALBYTES] = {0};
    salt_of(salt_v, salt);
    memcpy(pers, personal, strlen(personal));
    crypto_generichash_blake2b_init_salt_personal(s, NULL, 0, 32, salt, pers);
}

static void tree_leaf(const uint8_t *p, size_t n, uint64_t i, unsigned char out[32]) {
    crypto_generichash_blake2b_state s;
    tree_init(&s, i, "laya-tree-leaf");
    crypto_generichash_blake2b_update(&s, p, n);
    crypto_generichash_blake2b_final(&s, out, 32);
}

/* Leaf i of the n bytes at p (the last one may be shorter). */
static void tree_leaf_of(const uint8_t *p, size_t n, size_t i, unsigned char out[32]) {
    size_t b = i * (size_t)ST_TREE_CHUNK, e = n - b < ST_TREE_CHUNK ? n : b + ST_TREE_CHUNK;
    tree_leaf(p + b, e - b, i, out);
}

typedef struct {
    const uint8_t *p;
    size_t n, first, step;
    unsigned char *dig;
} tree_job;

static void *tree_work(void *arg) {
    const tree_job *j = arg;
    size_t nl = (j->n + ST_TREE_CHUNK - 1) / ST_TREE_CHUNK;
    for (size_t i = j->first; i < nl; i += j->step) tree_leaf_of(j->p, j->n, i, j->dig + 32 * i);
    return NULL;
}

void st_tree_blake2b_hex(const uint8_t *p, size_t n, char hex[65]) {
    enum { MAX_THREADS = 8 };
    size_t nl = (n + ST_TREE_CHUNK - 1) / ST_TREE_CHUNK;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (size_t)cpus;
    if (nt > nl) nt = nl ? nl : 1;
    unsigned char *dig = malloc(nl ? 32 * nl : 1), h[32];
    crypto_generichash_blake2b_state root;
    tree_init(&root, (uint64_t)n, "laya-tree-root");
    if (!dig) { /* no room for the digests: one leaf at a time, in order */
        for (size_t i = 0; i < nl; i++) {
            tree_leaf_of(p, n, i, h);
            crypto_generichash_blake2b_update(&root, h, 32);
        }
    } else {
        tree_job jobs[MAX_THREADS];
        pthread_t th[MAX_THREADS];
        int started[MAX_THREADS] = {0};
        for (size_t t = 0; t < nt; t++) {
            jobs[t] = (tree_job){.p = p, .n = n, .first = t, .step = nt, .dig = dig};
            /* the caller's thread takes job 0, and any job no thread took */
            if (t > 0) started[t] = pthread_create(&th[t], NULL, tree_work, &jobs[t]) == 0;
        }
        tree_work(&jobs[0]);
        for (size_t t = 1; t < nt; t++) {
            if (started[t]) pthread_join(th[t], NULL);
            else tree_work(&jobs[t]);
        }
        crypto_generichash_blake2b_update(&root, dig, 32 * nl);
        free(dig);
    }
    crypto_generichash_blake2b_final(&root, h, sizeof h);
    sodium_bin2hex(hex, 65, h, sizeof h);
}

int st_data_verify(const json_t *meta, const uint8_t *data, size_t n, const char **key, char got[65]) {
    const char *tree = json_string_value(json_object_get(meta, ST_TREE_KEY));
    *key = tree ? ST_TREE_KEY : "data_blake2b";
    const char *want = tree ? tree : json_string_value(json_object_get(meta, "data_blake2b"));
    got[0] = 0;
    if (!want || strlen(want) != 64) return 0;
    if (tree) st_tree_blake2b_hex(data, n, got);
    else st_blake2b_hex(data, n, got);
    return !strcmp(got, want);
}

void st_free(st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    free(f->t);
    json_decref(f->meta);
    memset(f, 0, sizeof *f);
}

const st_tensor *st_find(const st_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

const char *st_meta(const st_file *f, const char *key) {
    return f->meta ? json_string_value(json_object_get(f->meta, key)) : NULL;
}

/* A JSON integer in 0..max, or -1. */
static int64_t json_uint(const json_t *v, int64_t max) {
    if (!json_is_integer(v)) return -1;
    json_int_t i = json_integer_value(v);
    return i < 0 || i > max ? -1 : (int64_t)i;
}

/* Validates one tensor entry of the header into t (name not yet set). */
static laya_status parse_entry(const char *name, json_t *e, uint64_t data_start, uint64_t data_len,
                               st_tensor *t, char *err, size_t errlen) {
    if (!json_is_object(e))
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: header entry is not an object", name);
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: unexpected member \"%s\"", name, key);
    }
    const char *ds = json_string_value(json_object_get(e, "dtype"));
    if (!ds) return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: missing or non-string dtype", name);
    if (!dtype_parse(ds, &t->dtype))
        return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: unknown dtype \"%.16s\"", name, ds);

    json_t *sh = json_object_get(e, "shape");
    if (!json_is_array(sh) || json_array_size(sh) > ST_MAX_DIMS)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "tensor %s: shape must be an array of at most %d integers", name, ST_MAX_DIMS);
    t->ndim = (int)json_array_size(sh);
    /* element count with overflow checks: every bound below stays < 2^62 */
    uint64_t count = 1, esize = st_dtype_size(t->dtype);
    for (int i = 0; i < t->ndim; i++) {
        int64_t d = json_uint(json_array_get(sh, (size_t)i), INT64_C(1) << 40);
        if (d < 0)
            return err_set(err, errlen, LAYA_ERR_FORMAT,
                           "tensor %s: shape[%d] is not an integer in 0..2^40", name, i);
        t->shape[i] = d;
        if (d && count > (UINT64_C(1) << 61) / (uint64_t)d / esize)
            return err_set(err, errlen, LAYA_ERR_FORMAT, "tensor %s: shape is absurdly large", name);
        count *= (uint64_t)d;
    }

    json_t *off = json_object_get(e, "data_offsets");
    int64_t b = json_uint(json_array_get(off, 0), INT64_MAX), en = json_uint(json_array_get(off, 1), INT64_MAX);
    if (!json_is_array(off) || json_array_size(off) != 2 || b < 0 || en < 0)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "tensor %s: data_offsets must be two non-negative integers [begin, end]", name);
    if (b > en || (uint64_t)en > data_len)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "tensor %s: data_offsets [%lld, %lld] outside the data section of %llu bytes%s",
                       name, (long long)b, (long long)en, (unsigned long long)data_len,
                       b <= en ? " (truncated file?)" : "");
    t->begin = (uint64_t)b;
    t->end = (uint64_t)en;
    if (t->end - t->begin != count * esize)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "tensor %s: %llu bytes in data_offsets but its shape and dtype %s need %llu",
                       name, (unsigned long long)(t->end - t->begin), ds,
                       (unsigned long long)(count * esize));
    if ((data_start + t->begin) % esize)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "tensor %s: misaligned: file offset %llu is not a multiple of %zu (%s)",
                       name, (unsigned long long)(data_start + t->begin), (size_t)esize, ds);
    return LAYA_OK;
}

static int cmp_begin(const void *a, const void *b) {
    const st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The tensors must tile [0, data_len) exactly. Sorted by begin, each one
 * starts where the previous ended. */
static laya_status check_tiling(const st_file *f, char *err, size_t errlen) {
    st_tensor *s = malloc(((size_t)f->n + 1) * sizeof *s);
    if (!s) return err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory checking tensor offsets");
    memcpy(s, f->t, (size_t)f->n * sizeof *s);
    qsort(s, (size_t)f->n, sizeof *s, cmp_begin);
    laya_status st = LAYA_OK;
    uint64_t at = 0;
    for (int i = 0; i < f->n && st == LAYA_OK; i++) {
        if (s[i].begin < at)
            st = err_set(err, errlen, LAYA_ERR_FORMAT, "tensors %s and %s overlap in the data section",
                         s[i - 1].name, s[i].name);
        else if (s[i].begin > at)
            st = err_set(err, errlen, LAYA_ERR_FORMAT,
                         "a gap of %llu bytes before tensor %s in the data section",
                         (unsigned long long)(s[i].begin - at), s[i].name);
        at = s[i].end;
    }
    if (st == LAYA_OK && at != f->data_len)
        st = err_set(err, errlen, LAYA_ERR_FORMAT,
                     "%llu bytes after the last tensor: the data section must end with it",
                     (unsigned long long)(f->data_len - at));
    free(s);
    return st;
}

laya_status st_parse(const uint8_t *file, size_t len, st_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    if (len < 8)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "file is %zu bytes, too short for a safetensors header", len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | file[i];
    if (n > ST_MAX_HEADER)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "header length %llu exceeds the %d MiB limit (not a safetensors file?)",
                       (unsigned long long)n, ST_MAX_HEADER >> 20);
    if (n < 2 || 8 + n > len)
        return err_set(err, errlen, LAYA_ERR_FORMAT,
                       "header length %llu does not fit the %zu-byte file (truncated?)",
                       (unsigned long long)n, len);
    f->data_start = 8 + n;
    f->data_len = len - f->data_start;
    f->data = file + f->data_start;

    json_error_t je;
    json_t *root = json_loadb((const char *)file + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return err_set(err, errlen, LAYA_ERR_FORMAT, "header is not valid JSON: %s (byte %d)",
                       je.text, je.position);
    laya_status st = LAYA_OK;
    if (!json_is_object(root)) {
        st = err_set(err, errlen, LAYA_ERR_FORMAT, "header is not a JSON object");
        goto done;
    }
    f->t = calloc(json_object_size(root) + 1, sizeof *f->t);
    if (!f->t) {
        st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory reading the header");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(v)) {
                st = err_set(err, errlen, LAYA_ERR_FORMAT, "__metadata__ is not an object");
                goto done;
            }
            const char *mk;
            json_t *mv;
            json_object_foreach(v, mk, mv) {
                if (!json_is_string(mv)) {
                    st = err_set(err, errlen, LAYA_ERR_FORMAT,
                                 "__metadata__ member \"%.64s\" is not a string", mk);
                    goto done;
                }
            }
            f->meta = json_incref(v);
            continue;
        }
        st_tensor *t = &f->t[f->n];
        if ((st = parse_entry(key, v, f->data_start, f->data_len, t, err, errlen)) != LAYA_OK) goto done;
        if (!(t->name = strdup(key))) {
            st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory reading the header");
            goto done;
        }
        f->n++;
    }
    st = check_tiling(f, err, errlen);
done:
    json_decref(root);
    if (st != LAYA_OK) st_free(f);
    return st;
}

/* ---- writer ---- */

typedef struct {
    FILE *fp;                           /* pass 2: write */
    crypto_generichash_state *hash;     /* pass 1: hash */
    int tree;                           /* pass 1: the tree checksum's leaves too */
    unsigned char *leaves;              /* the leaf digests (growing) */
    size_t n_leaves, cap;
    crypto_generichash_blake2b_state leaf;
    size_t fill;
    uint64_t total;
    int oom;
} sink;

static void sink_leaf_done(sink *s) {
    if (s->n_leaves == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 16;
        unsigned char *d = realloc(s->leaves, 32 * c);
        if (!d) { s->oom = 1; return; }
        s->leaves = d, s->cap = c;
    }
    crypto_generichash_blake2b_final(&s->leaf, s->leaves + 32 * s->n_leaves, 32);
    s->n_leaves++;
    tree_init(&s->leaf, s->n_leaves, "laya-tree-leaf");
    s->fill = 0;
}

static int sink_put(sink *s, const void *p, size_t n) {
    if (!s->hash) return fwrite(p, 1, n, s->fp) == n;
    if (crypto_generichash_update(s->hash, p, n) != 0) return 0;
    const uint8_t *b = p;
    while (s->tree && n && !s->oom) {
        size_t k = ST_TREE_CHUNK - s->fill < n ? ST_TREE_CHUNK - s->fill : n;
        crypto_generichash_blake2b_update(&s->leaf, b, k);
        s->fill += k, s->total += k, b += k, n -= k;
        if (s->fill == ST_TREE_CHUNK) sink_leaf_done(s);
    }
    return !s->oom;
}

static uint64_t out_bytes(const st_out *t) {
    uint64_t c = 1;
    for (int i = 0; i < t->ndim; i++) c *= (uint64_t)t->shape[i];
    return c * st_dtype_size(t->dtype);
}

/* Streams every tensor's stored bytes into s, in chunks (no copy of the
 * whole model in memory). */
static int emit_data(const st_out *t, int n, sink *s) {
    enum { CHUNK = 1 << 16 };
    static _Thread_local uint8_t buf[CHUNK];
    for (int i = 0; i < n; i++) {
        uint64_t bytes = out_bytes(&t[i]);
        if (!t[i].fill) {
            if (bytes && !sink_put(s, t[i].src, (size_t)bytes)) return 0;
            continue;
        }
        size_t es = st_dtype_size(t[i].dtype), per = CHUNK / es, count = (size_t)(bytes / es);
        for (size_t first = 0; first < count; first += per) {
            size_t k = count - first < per ? count - first : per;
            t[i].fill(t[i].src, first, k, buf);
            if (!sink_put(s, buf, k * es)) return 0;
        }
    }
    return 1;
}

/* One pass over the tensors' stored bytes: the BLAKE2b-256 of the data
 * section into hex and, if tree_hex, its tree checksum. 0 when out of
 * memory (tree_hex is then unset). */
static int data_sums(const st_out *t, int n, char hex[65], char *tree_hex) {
    crypto_generichash_state hs;
    crypto_generichash_init(&hs, NULL, 0, 32);
    sink s = {.hash = &hs, .tree = tree_hex != NULL};
    tree_init(&s.leaf, 0, "laya-tree-leaf");
    emit_data(t, n, &s);
    unsigned char h[32];
    crypto_generichash_final(&hs, h, sizeof h);
    sodium_bin2hex(hex, 65, h, sizeof h);
    if (s.fill && !s.oom) sink_leaf_done(&s);
    int ok = !s.oom;
    if (ok && tree_hex) {
        crypto_generichash_blake2b_state root;
        tree_init(&root, s.total, "laya-tree-root");
        if (s.n_leaves) crypto_generichash_blake2b_update(&root, s.leaves, 32 * s.n_leaves);
        crypto_generichash_blake2b_final(&root, h, sizeof h);
        sodium_bin2hex(tree_hex, 65, h, sizeof h);
    }
    free(s.leaves);
    return ok;
}

void st_data_blake2b(const st_out *t, int n, char hex[65]) { data_sums(t, n, hex, NULL); }

laya_status st_write(const char *path, const st_out *t, int n, const json_t *meta,
                     const char *sum_key, char *err, size_t errlen) {
    if (sodium_init() < 0) return err_set(err, errlen, LAYA_ERR_INTERNAL, "libsodium failed to initialize");
    json_t *root = json_object(), *m = meta ? json_deep_copy(meta) : json_object();
    char *hdr = NULL, *tmp = NULL;
    FILE *fp = NULL;
    laya_status st = LAYA_OK;
    if (!root || !m) {
        st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory writing %s", path);
        goto done;
    }
    if (sum_key) {
        char hex[65], tree[65];
        if (!data_sums(t, n, hex, tree)) {
            st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory writing %s", path);
            goto done;
        }
        json_object_set_new(m, sum_key, json_string(hex));
        json_object_set_new(m, ST_TREE_KEY, json_string(tree));
    }
    json_object_set(root, "__metadata__", m);
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        json_t *e = json_object(), *shape = json_array(), *off = json_array();
        json_object_set_new(e, "dtype", json_string(st_dtype_name(t[i].dtype)));
        for (int d = 0; d < t[i].ndim; d++) json_array_append_new(shape, json_integer(t[i].shape[d]));
        json_object_set_new(e, "shape", shape);
        uint64_t b = out_bytes(&t[i]);
        json_array_append_new(off, json_integer((json_int_t)at));
        json_array_append_new(off, json_integer((json_int_t)(at + b)));
        json_object_set_new(e, "data_offsets", off);
        if (json_object_set_new(root, t[i].name, e)) {
            st = err_set(err, errlen, LAYA_ERR_ARG, "tensor name \"%s\" is invalid or repeated", t[i].name);
            goto done;
        }
        at += b;
    }
    if (!(hdr = json_dumps(root, JSON_COMPACT))) {
        st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory writing %s", path);
        goto done;
    }
    size_t hl = strlen(hdr), padded = (8 + hl + ST_ALIGN - 1) / ST_ALIGN * ST_ALIGN - 8;
    if (padded > ST_MAX_HEADER) {
        st = err_set(err, errlen, LAYA_ERR_LIMIT, "header of %zu bytes exceeds the limit", padded);
        goto done;
    }
    size_t tl = strlen(path) + 32;
    if (!(tmp = malloc(tl))) {
        st = err_set(err, errlen, LAYA_ERR_NOMEM, "out of memory writing %s", path);
        goto done;
    }
    snprintf(tmp, tl, "%s.tmp-%ld", path, (long)getpid());
    if (!(fp = fopen(tmp, "wb"))) {
        st = err_set(err, errlen, LAYA_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    sink s = {.fp = fp};
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(hdr, 1, hl, fp) == hl;
    for (size_t i = hl; ok && i < padded; i++) ok = fputc(' ', fp) != EOF;
    ok = ok && emit_data(t, n, &s);
    ok = ok && fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    ok = fclose(fp) == 0 && ok;
    fp = NULL;
    if (!ok || rename(tmp, path) != 0) {
        st = err_set(err, errlen, LAYA_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        remove(tmp);
    }
done:
    if (fp) {
        fclose(fp);
        remove(tmp);
    }
    free(tmp);
    free(hdr);
    json_decref(m);
    json_decref(root);
    return st;
}
