/* io/safetensors.c: parse, validate, convert and write safetensors files
 * (io/safetensors.h). Every number from the file is checked before it is used
 * as a size or an offset; arithmetic that could wrap is done in checked steps. */
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/model_h5.h"
#include "model/params.h"

static const char *const dtype_names[ST_DTYPE_COUNT] = {
  "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32",
  "F32", "F64", "I64", "U64"};
static const unsigned char dtype_sizes[ST_DTYPE_COUNT] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4,
                                                          4, 8, 8, 8};

int st_dtype_from_name(const char *s) {
  for (int i = 0; i < ST_DTYPE_COUNT; i++)
    if (!strcmp(s, dtype_names[i])) return i;
  return -1;
}
const char *st_dtype_name(enum st_dtype d) { return (unsigned)d < ST_DTYPE_COUNT ? dtype_names[d] : "?"; }
size_t st_dtype_size(enum st_dtype d) { return (unsigned)d < ST_DTYPE_COUNT ? dtype_sizes[d] : 0; }

/* A JSON number that is a non-negative integer below 2^53 (exact in a double). */
static int json_u64(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d) return -1;
  *out = (uint64_t)d;
  return 0;
}

/* One header entry into t, checked against the data section's size. */
static int parse_tensor(const cJSON *o, struct st_tensor *t, uint64_t data_size, const char *path,
                        char *err, size_t errlen) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "dtype");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(o, "shape");
  const cJSON *off = cJSON_GetObjectItemCaseSensitive(o, "data_offsets");
  if (strlen(o->string) >= sizeof t->name) {
    snprintf(err, errlen, "%s: tensor name '%.40s...' is too long", path, o->string);
    return -1;
  }
  snprintf(t->name, sizeof t->name, "%s", o->string);
  if (!cJSON_IsObject(o) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off)) {
    snprintf(err, errlen, "%s: tensor '%s' needs \"dtype\" (string), \"shape\" and "
             "\"data_offsets\" (arrays)", path, t->name);
    return -1;
  }
  int d = st_dtype_from_name(dt->valuestring);
  if (d < 0) {
    snprintf(err, errlen, "%s: tensor '%s' has unknown dtype '%.32s'", path, t->name, dt->valuestring);
    return -1;
  }
  t->dtype = (enum st_dtype)d;
  t->ndim = cJSON_GetArraySize(sh);
  if (t->ndim > ST_MAX_DIMS) {
    snprintf(err, errlen, "%s: tensor '%s' has %d dimensions (at most %d)", path, t->name, t->ndim,
             ST_MAX_DIMS);
    return -1;
  }
  uint64_t numel = 1, nbytes;
  for (int i = 0; i < t->ndim; i++) {
    if (json_u64(cJSON_GetArrayItem(sh, i), &t->shape[i]) ||
        (t->shape[i] && numel > UINT64_MAX / t->shape[i])) {
      snprintf(err, errlen, "%s: tensor '%s' has a bad shape (dimension %d)", path, t->name, i);
      return -1;
    }
    numel *= t->shape[i];
  }
  t->numel = numel;
  if (numel > UINT64_MAX / st_dtype_size(t->dtype)) {
    snprintf(err, errlen, "%s: tensor '%s' shape overflows", path, t->name);
    return -1;
  }
  nbytes = numel * st_dtype_size(t->dtype);
  if (cJSON_GetArraySize(off) != 2 || json_u64(cJSON_GetArrayItem(off, 0), &t->begin) ||
      json_u64(cJSON_GetArrayItem(off, 1), &t->end) || t->begin > t->end) {
    snprintf(err, errlen, "%s: tensor '%s' has bad data_offsets (need [begin, end], begin <= end)",
             path, t->name);
    return -1;
  }
  if (t->end > data_size) {
    snprintf(err, errlen, "%s: tensor '%s' data_offsets [%llu, %llu] run past the data section "
             "(%llu bytes; truncated file?)", path, t->name, (unsigned long long)t->begin,
             (unsigned long long)t->end, (unsigned long long)data_size);
    return -1;
  }
  if (t->end - t->begin != nbytes) {
    snprintf(err, errlen, "%s: tensor '%s' holds %llu bytes but its %s shape needs %llu", path,
             t->name, (unsigned long long)(t->end - t->begin), dtype_names[t->dtype],
             (unsigned long long)nbytes);
    return -1;
  }
  return 0;
}

static int cmp_begin(const void *a, const void *b) {
  const struct st_tensor *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}
static int cmp_name(const void *a, const void *b) {
  return strcmp(((const struct st_tensor *)a)->name, ((const struct st_tensor *)b)->name);
}

/* The data section must be covered exactly once: sorted by offset, each tensor
 * starts where the previous ended and the last ends at the data size. Names
 * must be unique. Leaves f->t sorted by name (for st_find). */
static int check_layout(struct st_file *f, uint64_t data_size, char *err, size_t errlen) {
  uint64_t pos = 0;
  qsort(f->t, (size_t)f->n, sizeof *f->t, cmp_begin);
  for (int i = 0; i < f->n; i++) {
    if (f->t[i].begin != pos) {
      snprintf(err, errlen, "%s: tensor '%s' at data offset %llu %s (expected %llu)", f->path,
               f->t[i].name, (unsigned long long)f->t[i].begin,
               f->t[i].begin < pos ? "overlaps the previous tensor" : "leaves a hole",
               (unsigned long long)pos);
      return -1;
    }
    pos = f->t[i].end;
  }
  if (pos != data_size) {
    snprintf(err, errlen, "%s: the tensors cover %llu of the %llu data bytes (trailing bytes)",
             f->path, (unsigned long long)pos, (unsigned long long)data_size);
    return -1;
  }
  qsort(f->t, (size_t)f->n, sizeof *f->t, cmp_name);
  for (int i = 1; i < f->n; i++)
    if (!strcmp(f->t[i].name, f->t[i - 1].name)) {
      snprintf(err, errlen, "%s: tensor '%s' appears twice", f->path, f->t[i].name);
      return -1;
    }
  return 0;
}

static int parse_header(struct st_file *f, const cJSON *root, uint64_t data_size, char *err,
                        size_t errlen) {
  int n = 0;
  for (const cJSON *o = root->child; o; o = o->next) {
    if (strcmp(o->string, "__metadata__")) { n++; continue; }
    for (const cJSON *m = cJSON_IsObject(o) ? o->child : NULL; m; m = m->next)
      if (!cJSON_IsString(m)) {
        snprintf(err, errlen, "%s: __metadata__ value '%s' is not a string", f->path, m->string);
        return -1;
      }
    if (!cJSON_IsObject(o)) {
      snprintf(err, errlen, "%s: __metadata__ is not an object", f->path);
      return -1;
    }
  }
  f->t = calloc(n ? (size_t)n : 1, sizeof *f->t);
  if (!f->t) {
    snprintf(err, errlen, "%s: out of memory for %d tensor entries", f->path, n);
    return -1;
  }
  for (const cJSON *o = root->child; o; o = o->next) {
    if (!strcmp(o->string, "__metadata__")) continue;
    if (parse_tensor(o, &f->t[f->n], data_size, f->path, err, errlen)) return -1;
    f->n++;
  }
  return check_layout(f, data_size, err, errlen);
}

int st_open_mem(struct st_file *f, const void *buf, size_t size, const char *name, char *err,
                size_t errlen) {
  memset(f, 0, sizeof *f);
  snprintf(f->path, sizeof f->path, "%s", name);
  f->base = buf;
  f->size = size;
  if (size < 8) {
    snprintf(err, errlen, "%s: %zu bytes is too short for a safetensors file", name, size);
    return -1;
  }
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | f->base[i];
  if (hlen > ST_MAX_HEADER || hlen > size - 8) {
    snprintf(err, errlen, "%s: header length %llu does not fit the file (%zu bytes%s)", name,
             (unsigned long long)hlen, size, hlen > ST_MAX_HEADER ? ", limit 100 MiB" : "");
    return -1;
  }
  f->data_off = 8 + (size_t)hlen;
  if (hlen < 2 || f->base[8] != '{') {
    snprintf(err, errlen, "%s: the header does not start with a JSON object", name);
    return -1;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts((const char *)f->base + 8, (size_t)hlen, &end, 0);
  int rc = -1;
  if (!cJSON_IsObject(root)) {
    snprintf(err, errlen, "%s: the header is not valid JSON (near byte %ld)", name,
             end ? (long)(end - (const char *)f->base) : -1L);
  } else {
    for (const char *p = end; p < (const char *)f->base + f->data_off; p++)
      if (!strchr(" \t\r\n", *p) || !*p) {  /* JSON whitespace (the writer pads with spaces) */
        snprintf(err, errlen, "%s: junk after the JSON header (byte %ld)", name,
                 (long)(p - (const char *)f->base));
        goto done;
      }
    rc = parse_header(f, root, (uint64_t)(size - f->data_off), err, errlen);
  }
done:
  cJSON_Delete(root);
  if (rc) {
    free(f->t);
    f->t = NULL;
    f->n = 0;
  }
  return rc;
}

int st_open(struct st_file *f, const char *path, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  int fd = open(path, O_RDONLY);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
    snprintf(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return -1;
  }
  size_t size = (size_t)sb.st_size;
  void *p = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (size && p == MAP_FAILED) {
    snprintf(err, errlen, "%s: mmap failed: %s", path, strerror(errno));
    return -1;
  }
  if (st_open_mem(f, p, size, path, err, errlen)) {
    if (p) munmap(p, size);
    memset(f, 0, sizeof *f);
    return -1;
  }
  f->mapped = size > 0;
  return 0;
}

void st_close(struct st_file *f) {
  if (f->mapped) munmap((void *)f->base, f->size);
  free(f->t);
  memset(f, 0, sizeof *f);
}

const struct st_tensor *st_find(const struct st_file *f, const char *name) {
  struct st_tensor key;
  if (strlen(name) >= sizeof key.name) return NULL;
  snprintf(key.name, sizeof key.name, "%s", name);
  return f->n ? bsearch(&key, f->t, (size_t)f->n, sizeof *f->t, cmp_name) : NULL;
}

int st_tensor_to_f32(const struct st_file *f, const struct st_tensor *t, float *dst, size_t n,
                     char *err, size_t errlen) {
  if (t->numel != n) {
    snprintf(err, errlen, "%s: tensor '%s' has %llu elements, expected %zu", f->path, t->name,
             (unsigned long long)t->numel, n);
    return -1;
  }
  const uint8_t *src = f->base + f->data_off + t->begin;
  switch (t->dtype) {
  case ST_F32: memcpy(dst, src, n * 4); break;
  case ST_F16:
  case ST_BF16:
    for (size_t i = 0; i < n; i++) {
      uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
      dst[i] = t->dtype == ST_F16 ? gguf_f16_to_f32(h) : gguf_bf16_to_f32(h);
    }
    break;
  case ST_F64:
    for (size_t i = 0; i < n; i++) {
      double d;
      memcpy(&d, src + 8 * i, 8);
      dst[i] = (float)d;
    }
    break;
  default:
    snprintf(err, errlen, "%s: tensor '%s' has dtype %s; only F32, F16, BF16 and F64 convert to "
             "model weights", f->path, t->name, dtype_names[t->dtype]);
    return -1;
  }
  return 0;
}

uint16_t st_f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16 | 0x40);  /* quiet NaN */
  return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

/* ---- writing --------------------------------------------------------------- */

/* The JSON header for entries [first, last), padded with spaces to 8 bytes. */
static char *write_header(const struct param_table *t, int first, int last, enum st_dtype dtype,
                          size_t *hlen) {
  cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "__metadata__");
  cJSON_AddStringToObject(meta, "format", "pt");  /* transformers refuses files without it */
  size_t pos = 0;
  for (int i = first; i < last; i++) {
    const struct param_entry *e = &t->e[i];
    hsize_t dims[2];
    int rank = h5_param_dims(e, dims);
    cJSON *o = cJSON_AddObjectToObject(root, e->name);
    cJSON_AddStringToObject(o, "dtype", dtype_names[dtype]);
    cJSON *sh = cJSON_AddArrayToObject(o, "shape"), *off = cJSON_AddArrayToObject(o, "data_offsets");
    for (int d = 0; d < rank; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)dims[d]));
    cJSON_AddItemToArray(off, cJSON_CreateNumber((double)pos));
    pos += e->numel * dtype_sizes[dtype];
    cJSON_AddItemToArray(off, cJSON_CreateNumber((double)pos));
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!s) return NULL;
  size_t n = strlen(s), padded = (n + 7) / 8 * 8;
  char *h = realloc(s, padded + 1);
  if (!h) { free(s); return NULL; }
  memset(h + n, ' ', padded - n);
  h[padded] = 0;
  *hlen = padded;
  return h;
}

static int write_tensor(FILE *fp, const float *x, size_t n, enum st_dtype dtype) {
  if (dtype == ST_F32) return fwrite(x, 4, n, fp) == n ? 0 : -1;
  uint8_t buf[8192];
  for (size_t i = 0; i < n;) {
    size_t k = 0;
    for (; k < sizeof buf / 2 && i < n; k++, i++) {
      uint16_t h = st_f32_to_bf16(x[i]);
      buf[2 * k] = (uint8_t)h;
      buf[2 * k + 1] = (uint8_t)(h >> 8);
    }
    if (fwrite(buf, 2, k, fp) != k) return -1;
  }
  return 0;
}

int st_write_file(const char *path, const struct param_table *t, int first, int last,
                  const float *params, enum st_dtype dtype, char *err, size_t errlen) {
  if (dtype != ST_F32 && dtype != ST_BF16) {
    snprintf(err, errlen, "%s: can write F32 or BF16, not %s", path, st_dtype_name(dtype));
    return -1;
  }
  size_t hlen = 0;
  char *h = write_header(t, first, last, dtype, &hlen);
  FILE *fp = h ? fopen(path, "wb") : NULL;
  int rc = -1;
  if (fp) {
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    rc = fwrite(len8, 1, 8, fp) == 8 && fwrite(h, 1, hlen, fp) == hlen ? 0 : -1;
    for (int i = first; i < last && !rc; i++)
      rc = write_tensor(fp, params + t->e[i].offset, t->e[i].numel, dtype);
    if (fclose(fp)) rc = -1;
    if (rc) unlink(path);
  }
  if (rc) snprintf(err, errlen, "%s: cannot write: %s", path, h ? strerror(errno) : "out of memory");
  free(h);
  return rc;
}
