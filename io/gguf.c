/* io/gguf.c: GGUF v2/v3 parser (header, metadata, tensor infos) with bounds checks
 * on every read, typed metadata getters, and the model loader that maps
 * llama.cpp tensor names onto the Hugging Face parameter table.
 *
 * Layout (little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv;
 * n_kv x {string key, u32 type, value}; n_tensors x {string name, u32 n_dims,
 * u64 ne[n_dims], u32 dtype, u64 offset}; padding to the alignment; data.
 * A string is u64 length + bytes; an array is u32 element type, u64 count,
 * elements. */
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/params.h"

#define GGUF_MAGIC "GGUF"

/* A read cursor over the file bytes; every read checks the bound first. */
struct cur {
  const uint8_t *b;
  size_t size, pos;
  const char *name;
  char *err;
  size_t errlen;
};

static int fail(struct cur *c, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (c->errlen) snprintf(c->err, c->errlen, "%s: %s", c->name, msg);
  return -1;
}

static int need(struct cur *c, uint64_t n, const char *what) {
  if (n > c->size - c->pos)
    return fail(c, "truncated: %s needs %llu bytes at offset %zu but the file has %zu", what,
                (unsigned long long)n, c->pos, c->size);
  return 0;
}

static int rd_u32(struct cur *c, uint32_t *v, const char *what) {
  if (need(c, 4, what)) return -1;
  memcpy(v, c->b + c->pos, 4);
  c->pos += 4;
  return 0;
}

static int rd_u64(struct cur *c, uint64_t *v, const char *what) {
  if (need(c, 8, what)) return -1;
  memcpy(v, c->b + c->pos, 8);
  c->pos += 8;
  return 0;
}

static int rd_str(struct cur *c, struct gguf_str *s, const char *what) {
  uint64_t len;
  if (rd_u64(c, &len, what)) return -1;
  if (len > c->size - c->pos)
    return fail(c, "%s claims %llu bytes at offset %zu, past the end of the file (%zu bytes)",
                what, (unsigned long long)len, c->pos - 8, c->size);
  s->p = (const char *)c->b + c->pos;
  s->len = len;
  c->pos += len;
  return 0;
}

static size_t vtype_size(uint32_t t) {
  static const size_t sz[GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return t < GGUF_VTYPE_COUNT ? sz[t] : 0;
}

/* Skips one value of type t (not an array) at the cursor. */
static int skip_scalar(struct cur *c, uint32_t t, const char *key) {
  if (t == GGUF_STRING) {
    struct gguf_str s;
    return rd_str(c, &s, "string value");
  }
  size_t n = vtype_size(t);
  if (!n) return fail(c, "key '%s' has unknown value type %u", key, t);
  return need(c, n, "value") ? -1 : (c->pos += n, 0);
}

static int parse_value(struct cur *c, struct gguf_kv *kv, const char *key) {
  if (rd_u32(c, &kv->type, "value type")) return -1;
  if (kv->type != GGUF_ARRAY) {
    kv->val = c->b + c->pos;
    return skip_scalar(c, kv->type, key);
  }
  if (rd_u32(c, &kv->arr_type, "array type") || rd_u64(c, &kv->arr_n, "array count")) return -1;
  kv->val = c->b + c->pos;
  if (kv->arr_type == GGUF_ARRAY) return fail(c, "key '%s' is a nested array (unsupported)", key);
  if (kv->arr_type == GGUF_STRING) {
    if (kv->arr_n > (c->size - c->pos) / 8)
      return fail(c, "key '%s' claims %llu strings, more than the file can hold", key,
                  (unsigned long long)kv->arr_n);
    for (uint64_t i = 0; i < kv->arr_n; i++)
      if (skip_scalar(c, GGUF_STRING, key)) return -1;
    return 0;
  }
  size_t es = vtype_size(kv->arr_type);
  if (!es) return fail(c, "key '%s' is an array of unknown type %u", key, kv->arr_type);
  if (kv->arr_n > (c->size - c->pos) / es)
    return fail(c, "key '%s' claims %llu elements, past the end of the file", key,
                (unsigned long long)kv->arr_n);
  c->pos += kv->arr_n * es;
  return 0;
}

/* key as a printable NUL-terminated string (truncated) for messages */
static const char *str_tmp(const struct gguf_str *s, char *buf, size_t cap) {
  size_t n = s->len < cap - 1 ? (size_t)s->len : cap - 1;
  memcpy(buf, s->p, n);
  buf[n] = '\0';
  return buf;
}

static int str_eq(const struct gguf_str *s, const char *z) {
  size_t n = strlen(z);
  return s->len == n && !memcmp(s->p, z, n);
}

static int parse_kvs(struct cur *c, struct gguf_file *f) {
  /* each key/value takes at least 8 (key length) + 4 (type) + 1 bytes */
  if (f->n_kv > (c->size - c->pos) / 13)
    return fail(c, "header claims %llu metadata keys, more than the file can hold",
                (unsigned long long)f->n_kv);
  f->kv = calloc(f->n_kv ? f->n_kv : 1, sizeof *f->kv);
  if (!f->kv) return fail(c, "out of memory for %llu keys", (unsigned long long)f->n_kv);
  char key[128];
  for (uint64_t i = 0; i < f->n_kv; i++) {
    struct gguf_kv *kv = &f->kv[i];
    if (rd_str(c, &kv->key, "metadata key")) return -1;
    if (parse_value(c, kv, str_tmp(&kv->key, key, sizeof key))) return -1;
    for (uint64_t j = 0; j < i; j++)
      if (f->kv[j].key.len == kv->key.len && !memcmp(f->kv[j].key.p, kv->key.p, kv->key.len))
        return fail(c, "duplicate metadata key '%s'", key);
  }
  return 0;
}

static int parse_tensor_info(struct cur *c, struct gguf_tensor *t) {
  char name[128];
  if (rd_str(c, &t->name, "tensor name")) return -1;
  str_tmp(&t->name, name, sizeof name);
  if (rd_u32(c, &t->n_dims, "tensor dims")) return -1;
  if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
    return fail(c, "tensor '%s' has %u dimensions (1..%d allowed)", name, t->n_dims, GGUF_MAX_DIMS);
  uint64_t numel = 1;
  for (int d = 0; d < GGUF_MAX_DIMS; d++) {
    uint64_t ne = 1;
    if ((uint32_t)d < t->n_dims && rd_u64(c, &ne, "tensor shape")) return -1;
    if (ne == 0 || ne > (uint64_t)INT64_MAX / numel)
      return fail(c, "tensor '%s' has an invalid shape (dimension %d = %llu)", name, d,
                  (unsigned long long)ne);
    numel *= ne;
    t->ne[d] = (int64_t)ne;
  }
  if (rd_u32(c, &t->type, "tensor type") || rd_u64(c, &t->offset, "tensor offset")) return -1;
  size_t be, bb;
  if (gguf_dtype_block(t->type, &be, &bb))
    return fail(c, "tensor '%s' has unknown data type %u", name, t->type);
  if ((uint64_t)t->ne[0] % be)
    return fail(c, "tensor '%s': row length %lld is not a multiple of the %s block size %zu", name,
                (long long)t->ne[0], gguf_dtype_name(t->type), be);
  if (numel / be > UINT64_MAX / bb) return fail(c, "tensor '%s' is too large", name);
  t->nbytes = numel / be * bb;
  return 0;
}

/* A tensor's place in the data section, for the overlap check. */
struct span { uint64_t off, end, i; };

static int cmp_span(const void *a, const void *b) {
  const struct span *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return x->i < y->i ? -1 : 1;
}

/* No two tensors share a byte of the data section: in offset order each starts at or
 * after the furthest end so far (a file that reuses bytes is corrupt or hostile). */
static int check_overlap(struct cur *c, const struct gguf_file *f) {
  if (f->n_tensors < 2) return 0;
  struct span *sp = malloc(sizeof *sp * f->n_tensors);
  if (!sp) return fail(c, "out of memory for %llu tensors", (unsigned long long)f->n_tensors);
  for (uint64_t i = 0; i < f->n_tensors; i++)  /* no overflow: inside the file (place_tensors) */
    sp[i] = (struct span){.off = f->tensors[i].offset,
                          .end = f->tensors[i].offset + f->tensors[i].nbytes, .i = i};
  qsort(sp, f->n_tensors, sizeof *sp, cmp_span);
  uint64_t end = sp[0].end, owner = sp[0].i;
  int rc = 0;
  for (uint64_t k = 1; k < f->n_tensors && !rc; k++) {
    if (sp[k].off < end) {
      char a[128], b[128];
      const struct gguf_tensor *t = &f->tensors[sp[k].i], *o = &f->tensors[owner];
      str_tmp(&t->name, a, sizeof a);
      str_tmp(&o->name, b, sizeof b);
      rc = fail(c, "tensor '%s' (%llu bytes at data offset %llu) overlaps tensor '%s' (%llu bytes "
                "at data offset %llu)", a, (unsigned long long)t->nbytes,
                (unsigned long long)t->offset, b, (unsigned long long)o->nbytes,
                (unsigned long long)o->offset);
    }
    if (sp[k].end > end) {
      end = sp[k].end;
      owner = sp[k].i;
    }
  }
  free(sp);
  return rc;
}

/* Places the tensors in the data section and checks they lie inside the file and do not
 * overlap. */
static int place_tensors(struct cur *c, struct gguf_file *f) {
  char name[128];
  uint64_t pad = (f->alignment - c->pos % f->alignment) % f->alignment;
  if (f->n_tensors && pad > c->size - c->pos)
    return fail(c, "truncated: the tensor data section would start past the end of the file");
  f->data_off = c->pos + (size_t)(pad < c->size - c->pos ? pad : c->size - c->pos);
  size_t avail = c->size - f->data_off;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    struct gguf_tensor *t = &f->tensors[i];
    str_tmp(&t->name, name, sizeof name);
    if (t->offset % f->alignment)
      return fail(c, "tensor '%s' offset %llu is not a multiple of the alignment %llu", name,
                  (unsigned long long)t->offset, (unsigned long long)f->alignment);
    if (t->offset > avail || t->nbytes > avail - t->offset)
      return fail(c, "tensor '%s' (%llu bytes at data offset %llu) lies past the end of the file "
                  "(%zu data bytes)", name, (unsigned long long)t->nbytes,
                  (unsigned long long)t->offset, avail);
    t->data = c->b + f->data_off + t->offset;
    for (uint64_t j = 0; j < i; j++)
      if (f->tensors[j].name.len == t->name.len &&
          !memcmp(f->tensors[j].name.p, t->name.p, t->name.len))
        return fail(c, "duplicate tensor name '%s'", name);
  }
  return check_overlap(c, f);
}

static int parse_alignment(struct cur *c, struct gguf_file *f) {
  f->alignment = GGUF_DEFAULT_ALIGNMENT;
  const struct gguf_kv *kv = gguf_find_kv(f, "general.alignment");
  if (!kv) return 0;
  uint32_t a;
  if (kv->type != GGUF_U32) return fail(c, "general.alignment must be a uint32");
  memcpy(&a, kv->val, 4);
  if (a == 0 || (a & (a - 1))) return fail(c, "general.alignment = %u is not a power of two", a);
  f->alignment = a;
  return 0;
}

static int parse(struct cur *c, struct gguf_file *f) {
  uint32_t version;
  if (need(c, 4, "magic")) return -1;
  if (memcmp(c->b, GGUF_MAGIC, 4)) return fail(c, "not a GGUF file (bad magic)");
  c->pos = 4;
  if (rd_u32(c, &version, "version")) return -1;
  if (version == 1) return fail(c, "GGUF version 1 is not supported (convert to v3)");
  if (version > 0xffff) return fail(c, "big-endian GGUF files are not supported");
  if (version != 2 && version != 3) return fail(c, "unsupported GGUF version %u", version);
  f->version = version;
  if (rd_u64(c, &f->n_tensors, "tensor count") || rd_u64(c, &f->n_kv, "metadata count")) return -1;
  if (parse_kvs(c, f) || parse_alignment(c, f)) return -1;
  /* each tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes */
  if (f->n_tensors > (c->size - c->pos) / 32)
    return fail(c, "header claims %llu tensors, more than the file can hold",
                (unsigned long long)f->n_tensors);
  f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
  if (!f->tensors) return fail(c, "out of memory for %llu tensors", (unsigned long long)f->n_tensors);
  for (uint64_t i = 0; i < f->n_tensors; i++)
    if (parse_tensor_info(c, &f->tensors[i])) return -1;
  return place_tensors(c, f);
}

int gguf_open_mem(struct gguf_file *f, const void *buf, size_t size, const char *name, char *err,
                  size_t errlen) {
  memset(f, 0, sizeof *f);
  snprintf(f->path, sizeof f->path, "%s", name);
  f->base = buf;
  f->size = size;
  struct cur c = {.b = buf, .size = size, .pos = 0, .name = f->path, .err = err, .errlen = errlen};
  if (parse(&c, f)) {
    gguf_close(f);
    return -1;
  }
  return 0;
}

int gguf_open(struct gguf_file *f, const char *path, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
    snprintf(err, errlen, "%s: not a regular non-empty file", path);
    close(fd);
    return -1;
  }
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
    return -1;
  }
  if (gguf_open_mem(f, map, (size_t)st.st_size, path, err, errlen)) {
    munmap(map, (size_t)st.st_size);
    return -1;
  }
  f->mapped = 1;
  return 0;
}

void gguf_close(struct gguf_file *f) {
  free(f->kv);
  free(f->tensors);
  if (f->mapped) munmap((void *)f->base, f->size);
  memset(f, 0, sizeof *f);
}

const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key) {
  for (uint64_t i = 0; i < f->n_kv; i++)
    if (str_eq(&f->kv[i].key, key)) return &f->kv[i];
  return NULL;
}

const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name) {
  for (uint64_t i = 0; i < f->n_tensors; i++)
    if (str_eq(&f->tensors[i].name, name)) return &f->tensors[i];
  return NULL;
}

size_t gguf_tensor_numel(const struct gguf_tensor *t) {
  size_t n = 1;
  for (int d = 0; d < GGUF_MAX_DIMS; d++) n *= (size_t)t->ne[d];
  return n;
}

/* ---- metadata getters ----------------------------------------------------------- */

static const struct gguf_kv *find_or_fail(const struct gguf_file *f, const char *key, char *err,
                                          size_t errlen) {
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  if (!kv && errlen) snprintf(err, errlen, "%s: metadata key '%s' is missing", f->path, key);
  return kv;
}

/* Integer element of type t at p; -1 when t is not an integer type or does not fit. */
static int int_at(uint32_t t, const uint8_t *p, int64_t *out) {
  switch (t) {
    case GGUF_U8: case GGUF_BOOL: *out = p[0]; return 0;
    case GGUF_I8: *out = (int8_t)p[0]; return 0;
    case GGUF_U16: { uint16_t v; memcpy(&v, p, 2); *out = v; return 0; }
    case GGUF_I16: { int16_t v; memcpy(&v, p, 2); *out = v; return 0; }
    case GGUF_U32: { uint32_t v; memcpy(&v, p, 4); *out = v; return 0; }
    case GGUF_I32: { int32_t v; memcpy(&v, p, 4); *out = v; return 0; }
    case GGUF_I64: { int64_t v; memcpy(&v, p, 8); *out = v; return 0; }
    case GGUF_U64: {
      uint64_t v;
      memcpy(&v, p, 8);
      if (v > (uint64_t)INT64_MAX) return -1;
      *out = (int64_t)v;
      return 0;
    }
  }
  return -1;
}

int gguf_get_int(const struct gguf_file *f, const char *key, int64_t *out, char *err,
                 size_t errlen) {
  const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
  if (!kv) return -1;
  if (int_at(kv->type, kv->val, out)) {
    snprintf(err, errlen, "%s: metadata key '%s' is not an integer that fits int64", f->path, key);
    return -1;
  }
  return 0;
}

int gguf_get_float(const struct gguf_file *f, const char *key, double *out, char *err,
                   size_t errlen) {
  const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
  if (!kv) return -1;
  int64_t i;
  if (kv->type == GGUF_F32) {
    float v;
    memcpy(&v, kv->val, 4);
    *out = v;
  } else if (kv->type == GGUF_F64) {
    memcpy(out, kv->val, 8);
  } else if (!int_at(kv->type, kv->val, &i)) {
    *out = (double)i;
  } else {
    snprintf(err, errlen, "%s: metadata key '%s' is not a number", f->path, key);
    return -1;
  }
  return 0;
}

int gguf_get_str(const struct gguf_file *f, const char *key, struct gguf_str *out, char *err,
                 size_t errlen) {
  const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
  if (!kv) return -1;
  if (kv->type != GGUF_STRING) {
    snprintf(err, errlen, "%s: metadata key '%s' is not a string", f->path, key);
    return -1;
  }
  memcpy(&out->len, kv->val, 8);  /* validated by the parser */
  out->p = (const char *)kv->val + 8;
  return 0;
}

int gguf_get_str_array(const struct gguf_file *f, const char *key, struct gguf_str **out,
                       uint64_t *n, char *err, size_t errlen) {
  const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
  if (!kv) return -1;
  if (kv->type != GGUF_ARRAY || kv->arr_type != GGUF_STRING) {
    snprintf(err, errlen, "%s: metadata key '%s' is not an array of strings", f->path, key);
    return -1;
  }
  *out = malloc((kv->arr_n ? kv->arr_n : 1) * sizeof **out);
  if (!*out) {
    snprintf(err, errlen, "%s: out of memory reading '%s'", f->path, key);
    return -1;
  }
  const uint8_t *p = kv->val;
  for (uint64_t i = 0; i < kv->arr_n; i++) {  /* lengths validated by the parser */
    memcpy(&(*out)[i].len, p, 8);
    (*out)[i].p = (const char *)p + 8;
    p += 8 + (*out)[i].len;
  }
  *n = kv->arr_n;
  return 0;
}

int gguf_get_int_array(const struct gguf_file *f, const char *key, int32_t **out, uint64_t *n,
                       char *err, size_t errlen) {
  const struct gguf_kv *kv = find_or_fail(f, key, err, errlen);
  if (!kv) return -1;
  size_t es = kv->type == GGUF_ARRAY ? vtype_size(kv->arr_type) : 0;
  int64_t v;
  if (!es || kv->arr_type == GGUF_F32 || kv->arr_type == GGUF_F64 || kv->arr_type == GGUF_STRING) {
    snprintf(err, errlen, "%s: metadata key '%s' is not an array of integers", f->path, key);
    return -1;
  }
  *out = malloc((kv->arr_n ? kv->arr_n : 1) * sizeof **out);
  if (!*out) {
    snprintf(err, errlen, "%s: out of memory reading '%s'", f->path, key);
    return -1;
  }
  for (uint64_t i = 0; i < kv->arr_n; i++) {
    if (int_at(kv->arr_type, kv->val + i * es, &v) || v < INT32_MIN || v > INT32_MAX) {
      snprintf(err, errlen, "%s: '%s'[%llu] does not fit int32", f->path, key,
               (unsigned long long)i);
      free(*out);
      *out = NULL;
      return -1;
    }
    (*out)[i] = (int32_t)v;
  }
  *n = kv->arr_n;
  return 0;
}

int gguf_tensor_to_f32(const struct gguf_file *f, const struct gguf_tensor *t, float *dst,
                       char *err, size_t errlen) {
  char name[128];
  if (gguf_dequantize(t->type, t->data, dst, gguf_tensor_numel(t))) {
    snprintf(err, errlen, "%s: tensor '%s' has data type %s, which this reader cannot convert",
             f->path, str_tmp(&t->name, name, sizeof name), gguf_dtype_name(t->type));
    return -1;
  }
  return 0;
}

/* ---- model loading ---------------------------------------------------------------- */

/* The llama.cpp name of a parameter-table entry; -1 for kinds GGUF files do not carry. */
static int gguf_name_of(const struct param_entry *e, char *buf, size_t cap) {
  static const char *blk[] = {
    [P_ATTN_NORM] = "attn_norm.weight", [P_WQ] = "attn_q.weight", [P_BQ] = "attn_q.bias",
    [P_WK] = "attn_k.weight", [P_BK] = "attn_k.bias", [P_WV] = "attn_v.weight",
    [P_BV] = "attn_v.bias", [P_WO] = "attn_output.weight", [P_FFN_NORM] = "ffn_norm.weight",
    [P_WGATE] = "ffn_gate.weight", [P_WUP] = "ffn_up.weight", [P_WDOWN] = "ffn_down.weight",
  };
  switch (e->kind) {
    case P_EMBED: snprintf(buf, cap, "token_embd.weight"); return 0;
    case P_FINAL_NORM: snprintf(buf, cap, "output_norm.weight"); return 0;
    case P_LM_HEAD: snprintf(buf, cap, "output.weight"); return 0;
    case P_SCORE: case P_LORA_A: case P_LORA_B: return -1;
    default: snprintf(buf, cap, "blk.%d.%s", e->layer, blk[e->kind]); return 0;
  }
}

/* llama.cpp's converter reorders the rows of each q/k head from Hugging Face's
 * rotate_half layout (pairs i, i + D/2) to interleaved pairs (2i, 2i + 1):
 * gguf row 2b + a of a head is HF row a*D/2 + b. This puts them back. */
static int unpermute_rows(float *w, int rows, int cols, int n_head) {
  int D = rows / n_head;
  size_t rb = sizeof(float) * (size_t)cols;
  float *tmp = malloc(rb * (size_t)rows);
  if (!tmp) return -1;
  memcpy(tmp, w, rb * (size_t)rows);
  for (int h = 0; h < n_head; h++)
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < D / 2; b++)
        memcpy(w + (size_t)(h * D + a * D / 2 + b) * cols, tmp + (size_t)(h * D + 2 * b + a) * cols,
               rb);
  free(tmp);
  return 0;
}

/* The file tensor for table entry e, checked for name and shape; NULL with a message. */
static const struct gguf_tensor *entry_tensor(const struct gguf_file *f, const struct param_entry *e,
                                              char *err, size_t errlen) {
  char name[96];
  if (gguf_name_of(e, name, sizeof name)) {
    snprintf(err, errlen, "%s: GGUF files carry no %s", f->path, e->name);
    return NULL;
  }
  const struct gguf_tensor *t = gguf_find_tensor(f, name);
  if (!t) {
    snprintf(err, errlen, "%s: tensor '%s' (for %s) is missing", f->path, name, e->name);
    return NULL;
  }
  int64_t want0 = e->cols == 1 ? e->rows : e->cols;
  if (t->ne[0] != want0 || gguf_tensor_numel(t) != e->numel) {
    snprintf(err, errlen, "%s: tensor '%s' has shape [%lld, %lld], expected [%d, %d] for %s",
             f->path, name, (long long)t->ne[0], (long long)t->ne[1], e->cols, e->rows, e->name);
    return NULL;
  }
  if (!gguf_dtype_supported(t->type)) {
    snprintf(err, errlen, "%s: tensor '%s' has data type %s, which this reader cannot convert",
             f->path, name, gguf_dtype_name(t->type));
    return NULL;
  }
  return t;
}

static int load_entry(const struct gguf_file *f, const struct model_config *mc, int permute,
                      const struct param_entry *e, float *dst, char *err, size_t errlen) {
  const struct gguf_tensor *t = entry_tensor(f, e, err, errlen);
  if (!t || gguf_tensor_to_f32(f, t, dst, err, errlen)) return -1;
  int is_q = e->kind == P_WQ || e->kind == P_BQ, is_k = e->kind == P_WK || e->kind == P_BK;
  if (permute && (is_q || is_k) &&
      unpermute_rows(dst, e->rows, e->cols, is_q ? mc->heads : mc->kv_heads)) {
    snprintf(err, errlen, "%s: out of memory", f->path);
    return -1;
  }
  return 0;
}

/* Integer hyperparameter ARCH.key into *out (def >= 0: the default when absent). */
static int arch_int(const struct gguf_file *f, const char *arch, const char *key, int def, int *out,
                    char *err, size_t errlen) {
  char full[128];
  int64_t v;
  snprintf(full, sizeof full, "%s.%s", arch, key);
  if (!gguf_find_kv(f, full) && def >= 0) {
    *out = def;
    return 0;
  }
  if (gguf_get_int(f, full, &v, err, errlen)) return -1;
  if (v < 1 || v > MODEL_SIZE_MAX) {
    snprintf(err, errlen, "%s: %s = %lld is out of range", f->path, full, (long long)v);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int arch_float(const struct gguf_file *f, const char *arch, const char *key, double def,
                      double *out, char *err, size_t errlen) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  if (!gguf_find_kv(f, full)) {
    *out = def;
    return 0;
  }
  return gguf_get_float(f, full, out, err, errlen);
}

/* Refuses what the model does not implement (RoPE scaling) rather than run it wrong. */
static int check_rope(const struct gguf_file *f, const char *arch, const struct model_config *mc,
                      char *err, size_t errlen) {
  char key[128];
  struct gguf_str s;
  int rdim;
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  if (gguf_find_kv(f, key) && (gguf_get_str(f, key, &s, err, errlen) || !str_eq(&s, "none"))) {
    snprintf(err, errlen, "%s: RoPE scaling (%s) is not supported", f->path, key);
    return -1;
  }
  if (gguf_find_tensor(f, "rope_freqs.weight")) {
    snprintf(err, errlen, "%s: RoPE frequency factors (rope_freqs.weight) are not supported",
             f->path);
    return -1;
  }
  if (arch_int(f, arch, "rope.dimension_count", mc->head_dim, &rdim, err, errlen)) return -1;
  if (rdim != mc->head_dim) {
    snprintf(err, errlen, "%s: partial RoPE (%d of %d head dims) is not supported", f->path, rdim,
             mc->head_dim);
    return -1;
  }
  return 0;
}

static int config_from_gguf(const struct gguf_file *f, struct model_config *mc, int *permute,
                            char *err, size_t errlen) {
  struct gguf_str a;
  char arch[32];
  if (gguf_get_str(f, "general.architecture", &a, err, errlen)) return -1;
  str_tmp(&a, arch, sizeof arch);
  if (strcmp(arch, "llama") && strcmp(arch, "qwen2")) {
    snprintf(err, errlen, "%s: architecture '%s' is not supported (llama, qwen2)", f->path, arch);
    return -1;
  }
  *permute = !strcmp(arch, "llama");
  memset(mc, 0, sizeof *mc);
  const struct gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
  if (!emb || emb->n_dims != 2) {
    snprintf(err, errlen, "%s: tensor 'token_embd.weight' is missing or not 2-D", f->path);
    return -1;
  }
  if (arch_int(f, arch, "embedding_length", -1, &mc->dim, err, errlen) ||
      arch_int(f, arch, "block_count", -1, &mc->layers, err, errlen) ||
      arch_int(f, arch, "attention.head_count", -1, &mc->heads, err, errlen) ||
      arch_int(f, arch, "attention.head_count_kv", mc->heads, &mc->kv_heads, err, errlen) ||
      arch_int(f, arch, "feed_forward_length", -1, &mc->ffn_dim, err, errlen) ||
      arch_int(f, arch, "context_length", -1, &mc->max_seq, err, errlen) ||
      arch_float(f, arch, "rope.freq_base", 10000.0, &mc->rope_theta, err, errlen) ||
      arch_float(f, arch, "attention.layer_norm_rms_epsilon", 1e-5, &mc->norm_eps, err, errlen))
    return -1;
  if (emb->ne[1] > (1 << 30)) {
    snprintf(err, errlen, "%s: vocabulary of %lld rows is too large", f->path, (long long)emb->ne[1]);
    return -1;
  }
  mc->vocab_size = (int)emb->ne[1];
  const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
  if (tok && (tok->type != GGUF_ARRAY || tok->arr_n != (uint64_t)mc->vocab_size)) {
    snprintf(err, errlen, "%s: tokenizer.ggml.tokens has %llu entries but token_embd has %d rows",
             f->path, (unsigned long long)(tok->type == GGUF_ARRAY ? tok->arr_n : 0), mc->vocab_size);
    return -1;
  }
  mc->init_std = 0.02;
  mc->tie_embeddings = gguf_find_tensor(f, "output.weight") == NULL;
  mc->qkv_bias = gguf_find_tensor(f, "blk.0.attn_q.bias") != NULL;
  if (model_config_check(mc, err, errlen)) return -1;
  mc->head_dim = mc->dim / mc->heads;
  return check_rope(f, arch, mc, err, errlen);
}

/* Tensors a model of this config has (the parameter table's entry count). */
static uint64_t expected_tensors(const struct model_config *mc) {
  return 2 + (uint64_t)mc->layers * (9 + 3 * (mc->qkv_bias != 0)) + (mc->tie_embeddings == 0);
}

int gguf_model_load(const struct gguf_file *f, struct model_config *mc, struct param_table *table,
                    float **params, char *err, size_t errlen) {
  int permute;
  *params = NULL;
  memset(table, 0, sizeof *table);
  if (config_from_gguf(f, mc, &permute, err, errlen)) return -1;
  /* every file tensor must be one we load; checked before sizing anything by the metadata */
  if (expected_tensors(mc) != f->n_tensors) {
    snprintf(err, errlen, "%s: the file has %llu tensors but a model of this config has %llu "
             "(unsupported extras, or block_count is wrong)", f->path,
             (unsigned long long)f->n_tensors, (unsigned long long)expected_tensors(mc));
    return -1;
  }
  param_table_build(table, mc);
  for (int i = 0; i < table->n; i++)  /* names and shapes first: no allocation on bad files */
    if (!entry_tensor(f, &table->e[i], err, errlen)) goto fail;
  *params = malloc(sizeof(float) * (table->total ? table->total : 1));
  if (!*params) {
    snprintf(err, errlen, "%s: out of memory for %zu parameters", f->path, table->total);
    goto fail;
  }
  for (int i = 0; i < table->n; i++) {
    const struct param_entry *e = &table->e[i];
    if (load_entry(f, mc, permute, e, *params + e->offset, err, errlen)) goto fail;
  }
  return 0;
fail:
  free(*params);
  *params = NULL;
  param_table_free(table);
  return -1;
}

int gguf_model_config(const struct gguf_file *f, struct model_config *mc, char *err, size_t errlen) {
  int permute;
  return config_from_gguf(f, mc, &permute, err, errlen);
}

int gguf_load_model(const char *path, struct model_config *mc, struct param_table *table,
                    float **params, char *err, size_t errlen) {
  struct gguf_file f;
  if (gguf_open(&f, path, err, errlen)) return -1;
  int rc = gguf_model_load(&f, mc, table, params, err, errlen);
  gguf_close(&f);
  return rc;
}
