/* mpi/xfer.c: the wire format of sample batches, sized point-to-point messages
 * and the chunked weight broadcast (see xfer.h). */
#include "mpi/xfer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/params.h"
#include "mpi/wait.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/error.h"

#define HEADER_BYTES 24
#define TRAILER_BYTES 8
#define RECORD_FIXED_BYTES 46  /* a record's fields before its first count */
#define RECORD_MIN_BYTES 62    /* a record with every count 0 */

const char *xfer_strerror(int rc) {
  switch (rc) {
    case XFER_OK: return "ok";
    case XFER_TIMEOUT: return "timed out waiting for the peer";
    case XFER_ECORRUPT: return "corrupt or truncated message";
    case XFER_ENOMEM: return "out of memory";
    case XFER_EMISMATCH: return "ranks disagree on the parameter table";
    default: return "unknown error";
  }
}

/* ---- packing ------------------------------------------------------------------------ */

/* Writer: with p == NULL it only counts bytes (the sizing pass). */
struct wbuf {
  unsigned char *p;
  size_t n;
};

static void put_u(struct wbuf *w, uint64_t v, int bytes) {
  if (w->p)
    for (int i = 0; i < bytes; i++) w->p[w->n + (size_t)i] = (unsigned char)(v >> (8 * i));
  w->n += (size_t)bytes;
}

static void put_f32(struct wbuf *w, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  put_u(w, u, 4);
}

static void put_f64(struct wbuf *w, double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  put_u(w, u, 8);
}

static void put_i32s(struct wbuf *w, const int32_t *a, int32_t n) {
  if (!w->p) w->n += 4 * (size_t)n;
  else for (int32_t i = 0; i < n; i++) put_u(w, (uint32_t)a[i], 4);
}

static void put_f32s(struct wbuf *w, const float *a, int32_t n) {
  if (!w->p) w->n += 4 * (size_t)n;
  else for (int32_t i = 0; i < n; i++) put_f32(w, a[i]);
}

static void encode_sample(struct wbuf *w, const struct sample *s) {
  put_u(w, (uint64_t)s->prompt_id, 8);
  put_u(w, (uint32_t)s->group, 4);
  put_u(w, (uint32_t)s->index, 4);
  put_u(w, (uint64_t)s->weight_version, 8);
  put_u(w, (uint64_t)s->step, 8);
  put_u(w, (uint8_t)s->finish, 1);
  int has_lp = s->logprobs && s->n_resp > 0, has_mask = s->resp_mask && s->n_resp > 0;
  int has_tv = s->tok_version && s->n_resp > 0;
  put_u(w, (uint64_t)(has_lp | has_mask << 1 | has_tv << 2), 1);
  put_u(w, s->flags, 4);
  put_f64(w, s->reward);
  put_u(w, (uint32_t)s->n_prompt, 4);
  put_i32s(w, s->prompt, s->n_prompt);
  put_u(w, (uint32_t)s->n_resp, 4);
  put_i32s(w, s->resp, s->n_resp);
  if (has_lp) put_f32s(w, s->logprobs, s->n_resp);
  if (has_mask) {
    if (w->p) memcpy(w->p + w->n, s->resp_mask, (size_t)s->n_resp);
    w->n += (size_t)s->n_resp;
  }
  for (int32_t j = 0; has_tv && j < s->n_resp; j++) put_u(w, (uint64_t)s->tok_version[j], 8);
  put_u(w, (uint32_t)s->n_parts, 4);
  for (int i = 0; i < s->n_parts; i++) {
    size_t len = strlen(s->parts[i].name);
    put_u(w, (uint32_t)len, 4);
    if (w->p) memcpy(w->p + w->n, s->parts[i].name, len);
    w->n += len;
    put_f64(w, s->parts[i].value);
  }
  put_u(w, (uint32_t)s->n_adv, 4);
  put_f32s(w, s->adv, s->n_adv);
}

/* A word-at-a-time multiplicative hash. */
uint64_t xfer_checksum(const void *buf, size_t n) {
  const unsigned char *p = buf;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    for (int k = 0; k < 8; k++) w |= (uint64_t)p[i + (size_t)k] << (8 * k);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  uint64_t w = 0;
  for (int k = 0; i + (size_t)k < n; k++) w |= (uint64_t)p[i + (size_t)k] << (8 * k);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 32);
}

int xfer_encode_batch(const struct sample_batch *b, unsigned char **buf, size_t *len) {
  struct wbuf w = {.p = NULL, .n = 0};
  for (int i = 0; i < b->n; i++) encode_sample(&w, &b->s[i]);
  size_t body = w.n;
  w.p = malloc(HEADER_BYTES + body + TRAILER_BYTES);
  if (!w.p) return XFER_ENOMEM;
  w.n = 0;
  put_u(&w, XFER_MAGIC, 4);
  put_u(&w, XFER_FORMAT_VERSION, 4);
  put_u(&w, (uint64_t)b->n, 8);
  put_u(&w, body, 8);
  for (int i = 0; i < b->n; i++) encode_sample(&w, &b->s[i]);
  put_u(&w, xfer_checksum(w.p, w.n), 8);
  *buf = w.p;
  *len = w.n;
  return XFER_OK;
}

/* ---- unpacking ------------------------------------------------------------------------ */

struct rbuf {
  const unsigned char *p;
  size_t n, pos;
};

static uint64_t get_u(struct rbuf *r, int bytes) {  /* caller checked the room */
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)r->p[r->pos + (size_t)i] << (8 * i);
  r->pos += (size_t)bytes;
  return v;
}

static size_t room(const struct rbuf *r) { return r->n - r->pos; }

#define NEED(cond, ...) do { if (!(cond)) { snprintf(err, errlen, __VA_ARGS__); \
  return XFER_ECORRUPT; } } while (0)

/* Read a u32 count of elements of `elem` bytes and check they fit in what remains. */
static int get_count(struct rbuf *r, size_t elem, int32_t *n, const char *what, char *err,
                     size_t errlen) {
  NEED(room(r) >= 4, "truncated before the %s count", what);
  uint64_t v = get_u(r, 4);
  NEED(v <= INT32_MAX && v * elem <= room(r), "%s count %llu exceeds the %zu bytes left", what,
       (unsigned long long)v, room(r));
  *n = (int32_t)v;
  return XFER_OK;
}

/* Allocate and read n tokens / floats (NULL when n is 0; the caller checks
 * `n && !result` for out of memory). */
static int32_t *get_i32s(struct rbuf *r, int32_t n) {
  int32_t *a = n ? malloc((size_t)n * sizeof *a) : NULL;
  for (int32_t i = 0; a && i < n; i++) a[i] = (int32_t)(uint32_t)get_u(r, 4);
  return a;
}

static float *get_f32s(struct rbuf *r, int32_t n) {
  float *a = n ? malloc((size_t)n * sizeof *a) : NULL;
  for (int32_t i = 0; a && i < n; i++) {
    uint32_t u = (uint32_t)get_u(r, 4);
    memcpy(&a[i], &u, sizeof u);
  }
  return a;
}

static int decode_parts(struct rbuf *r, struct sample *s, char *err, size_t errlen) {
  int rc = get_count(r, 12, &s->n_parts, "reward part", err, errlen);
  if (rc) return rc;
  if (s->n_parts == 0) return XFER_OK;
  s->parts = calloc((size_t)s->n_parts, sizeof *s->parts);
  if (!s->parts) {
    s->n_parts = 0;
    return XFER_ENOMEM;
  }
  for (int i = 0; i < s->n_parts; i++) {
    int32_t len;
    if ((rc = get_count(r, 1, &len, "part name byte", err, errlen))) return rc;
    NEED(memchr(r->p + r->pos, 0, (size_t)len) == NULL, "reward part name holds a NUL byte");
    if (!(s->parts[i].name = malloc((size_t)len + 1))) return XFER_ENOMEM;
    memcpy(s->parts[i].name, r->p + r->pos, (size_t)len);
    s->parts[i].name[len] = 0;
    r->pos += (size_t)len;
    NEED(room(r) >= 8, "truncated inside reward part %d", i);
    uint64_t u = get_u(r, 8);
    memcpy(&s->parts[i].value, &u, sizeof u);
  }
  return XFER_OK;
}

/* Decode one record into s (zeroed on entry; the caller frees it on error). */
static int decode_sample(struct rbuf *r, struct sample *s, char *err, size_t errlen) {
  NEED(room(r) >= RECORD_FIXED_BYTES, "truncated sample record (%zu bytes left)", room(r));
  s->prompt_id = (int64_t)get_u(r, 8);
  s->group = (int32_t)get_u(r, 4);
  s->index = (int32_t)get_u(r, 4);
  s->weight_version = (int64_t)get_u(r, 8);
  s->step = (int64_t)get_u(r, 8);
  uint64_t finish = get_u(r, 1), arrays = get_u(r, 1), has_lp = arrays & 1, has_mask = (arrays >> 1) & 1;
  uint64_t has_tv = (arrays >> 2) & 1;
  NEED(finish < FINISH_COUNT, "finish reason %llu out of range", (unsigned long long)finish);
  NEED(arrays <= 7, "bad response-arrays flag %llu", (unsigned long long)arrays);
  s->finish = (enum finish_reason)finish;
  s->flags = (uint32_t)get_u(r, 4);
  uint64_t u = get_u(r, 8);
  memcpy(&s->reward, &u, sizeof u);
  int32_t np, nr;
  int rc = get_count(r, 4, &np, "prompt token", err, errlen);
  if (rc) return rc;
  if (!(s->prompt = get_i32s(r, np)) && np) return XFER_ENOMEM;
  s->n_prompt = np;
  if ((rc = get_count(r, 4 + 4 * has_lp + has_mask + 8 * has_tv, &nr, "response token", err, errlen))) return rc;
  NEED(nr > 0 || !arrays, "logprobs, a mask or token versions flagged for an empty response");
  if (!(s->resp = get_i32s(r, nr)) && nr) return XFER_ENOMEM;
  s->n_resp = nr;
  if (has_lp && !(s->logprobs = get_f32s(r, nr))) return XFER_ENOMEM;
  if (has_mask) {
    if (!(s->resp_mask = malloc((size_t)nr))) return XFER_ENOMEM;
    memcpy(s->resp_mask, r->p + r->pos, (size_t)nr);
    r->pos += (size_t)nr;
    for (int32_t j = 0; j < nr; j++) NEED(s->resp_mask[j] <= 1, "mask byte %u", s->resp_mask[j]);
  }
  if (has_tv && !(s->tok_version = malloc((size_t)nr * sizeof *s->tok_version))) return XFER_ENOMEM;
  for (int32_t j = 0; has_tv && j < nr; j++) s->tok_version[j] = (int64_t)get_u(r, 8);
  if ((rc = decode_parts(r, s, err, errlen))) return rc;
  int32_t na;
  if ((rc = get_count(r, 4, &na, "advantage", err, errlen))) return rc;
  NEED(na <= 1 || na == nr, "advantage count %d is neither 0, 1 nor n_resp %d", na, nr);
  if (!(s->adv = get_f32s(r, na)) && na) return XFER_ENOMEM;
  s->n_adv = na;
  return XFER_OK;
}

static int decode_body(struct rbuf *r, uint64_t n, struct sample_batch *out, char *err,
                       size_t errlen) {
  for (uint64_t i = 0; i < n; i++) {
    struct sample *s = sample_batch_add(out);
    if (!s) return XFER_ENOMEM;
    int rc = decode_sample(r, s, err, errlen);
    if (rc == XFER_ECORRUPT && errlen > 0) {
      size_t l = strlen(err);
      snprintf(err + l, errlen - l, " (sample %llu)", (unsigned long long)i);
    }
    if (rc) return rc;
  }
  NEED(room(r) == 0, "%zu stray bytes after the last sample", room(r));
  return XFER_OK;
}

int xfer_decode_batch(const unsigned char *buf, size_t len, struct sample_batch *out, char *err,
                      size_t errlen) {
  struct rbuf r = {.p = buf, .n = len, .pos = 0};
  NEED(len >= HEADER_BYTES + TRAILER_BYTES, "sample batch of %zu bytes is shorter than its header",
       len);
  uint64_t magic = get_u(&r, 4), version = get_u(&r, 4), n = get_u(&r, 8), body = get_u(&r, 8);
  NEED(magic == XFER_MAGIC, "bad magic 0x%08llx (not a sample batch)", (unsigned long long)magic);
  NEED(version == XFER_FORMAT_VERSION, "format version %llu, this build reads %u",
       (unsigned long long)version, XFER_FORMAT_VERSION);
  NEED(body == len - HEADER_BYTES - TRAILER_BYTES, "body of %llu bytes in a %zu-byte buffer",
       (unsigned long long)body, len);
  r.pos = len - TRAILER_BYTES;
  uint64_t sum = get_u(&r, 8);
  NEED(sum == xfer_checksum(buf, len - TRAILER_BYTES), "checksum mismatch");
  NEED(n <= INT32_MAX && n <= body / RECORD_MIN_BYTES, "sample count %llu too large for %llu bytes",
       (unsigned long long)n, (unsigned long long)body);
  r.pos = HEADER_BYTES;
  r.n = len - TRAILER_BYTES;
  int n0 = out->n;
  int rc = decode_body(&r, n, out, err, errlen);
  if (rc) sample_batch_truncate(out, n0);
  if (rc == XFER_ENOMEM) snprintf(err, errlen, "out of memory decoding a sample batch");
  return rc;
}

/* ---- point to point --------------------------------------------------------------------- */

int xfer_send_bytes(const void *buf, size_t len, int dest, int tag, MPI_Comm comm) {
  return xfer_send_bytes_until(buf, len, dest, tag, comm, 0);
}

int xfer_send_bytes_until(const void *buf, size_t len, int dest, int tag, MPI_Comm comm,
                          double timeout_s) {
  unsigned char hdr[8];
  struct wbuf w = {.p = hdr, .n = 0};
  put_u(&w, len, 8);
  MPI_Request req;
  /* synchronous: completes once the receiver has matched it, i.e. is active */
  MPI_CHECK(MPI_Issend(hdr, 8, MPI_BYTE, dest, tag, comm, &req));
  if (wait_request_until(&req, MPI_STATUS_IGNORE, timeout_s)) {
    MPI_Cancel(&req);  /* nothing was matched: the message is withdrawn */
    MPI_Request_free(&req);
    return XFER_TIMEOUT;
  }
  for (size_t off = 0; off < len; off += XFER_CHUNK_BYTES) {
    size_t n = len - off < XFER_CHUNK_BYTES ? len - off : XFER_CHUNK_BYTES;
    MPI_CHECK(MPI_Send((const unsigned char *)buf + off, (int)n, MPI_BYTE, dest, tag, comm));
  }
  return XFER_OK;
}

int xfer_recv_bytes(unsigned char **buf, size_t *len, int source, int tag, MPI_Comm comm,
                    double timeout_s, int *from) {
  MPI_Status st;
  int rc = wait_probe_until(source, tag, comm, &st, timeout_s), count = 0;
  if (rc) return XFER_TIMEOUT;
  int src = st.MPI_SOURCE;
  MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
  if (count != 8) {  /* not a size message: consume it so the stream stays in step */
    unsigned char *junk = malloc(count > 0 ? (size_t)count : 1);
    if (!junk) return XFER_ENOMEM;
    MPI_CHECK(MPI_Recv(junk, count, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE));
    free(junk);
    fprintf(stderr, "xfer: a %d-byte message from rank %d with tag %d where a size message "
            "was due\n", count, src, tag);
    return XFER_ECORRUPT;
  }
  unsigned char hdr[8];
  MPI_CHECK(MPI_Recv(hdr, 8, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE));
  struct rbuf r = {.p = hdr, .n = 8, .pos = 0};
  size_t n = (size_t)get_u(&r, 8);
  unsigned char *p = n ? malloc(n) : NULL;
  if (n && !p) return XFER_ENOMEM;
  for (size_t off = 0; off < n; off += XFER_CHUNK_BYTES) {
    size_t c = n - off < XFER_CHUNK_BYTES ? n - off : XFER_CHUNK_BYTES;
    MPI_CHECK(MPI_Recv(p + off, (int)c, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE));
  }
  *buf = p;
  *len = n;
  if (from) *from = src;
  return XFER_OK;
}

int xfer_send_batch(const struct sample_batch *b, int dest, int tag, MPI_Comm comm) {
  return xfer_send_batch_until(b, dest, tag, comm, 0);
}

int xfer_send_batch_until(const struct sample_batch *b, int dest, int tag, MPI_Comm comm,
                          double timeout_s) {
  unsigned char *buf;
  size_t len;
  int rc = xfer_encode_batch(b, &buf, &len);
  if (rc) return rc;
  rc = xfer_send_bytes_until(buf, len, dest, tag, comm, timeout_s);
  free(buf);
  return rc;
}

int xfer_recv_batch(struct sample_batch *out, int source, int tag, MPI_Comm comm, double timeout_s,
                    int *from, char *err, size_t errlen) {
  unsigned char *buf = NULL;
  size_t len = 0;
  int src = -1;
  int rc = xfer_recv_bytes(&buf, &len, source, tag, comm, timeout_s, &src);
  if (rc == XFER_OK) rc = xfer_decode_batch(buf, len, out, err, errlen);
  else snprintf(err, errlen, "%s", xfer_strerror(rc));
  free(buf);
  if (from) *from = src;
  return rc;
}

/* ---- weight broadcast ------------------------------------------------------------------- */

/* One past the last table entry of the chunk that starts at entry i: the
 * run of contiguous tensors of one layer, or the single tensor i outside them. */
static int chunk_end(const struct param_table *t, int i) {
  int j = i + 1;
  if (t->e[i].layer < 0) return j;
  while (j < t->n && t->e[j].layer == t->e[i].layer &&
         t->e[j].offset == t->e[j - 1].offset + t->e[j - 1].numel)
    j++;
  return j;
}

/* MPI counts are ints: move n floats in pieces of at most 2^28 (1 GiB). */
static void bcast_floats(float *p, size_t n, int root, MPI_Comm comm, int *calls) {
  const size_t piece = (size_t)1 << 28;
  for (size_t off = 0; off < n; off += piece) {
    size_t c = n - off < piece ? n - off : piece;
    MPI_CHECK(MPI_Bcast(p + off, (int)c, MPI_FLOAT, root, comm));
    (*calls)++;
  }
}

/* n floats as bf16 (round to nearest even) from root, widened back to fp32 on the others;
 * root's own stay fp32. In pieces of at most 2^28 through one buffer of the piece's size. */
static void bcast_bf16(float *p, size_t n, int root, int me, MPI_Comm comm, int *calls) {
  const size_t piece = (size_t)1 << 28;
  uint16_t *h = malloc_check(sizeof *h * (n < piece ? n : piece) + 1);
  for (size_t off = 0; off < n; off += piece) {
    size_t c = n - off < piece ? n - off : piece;
    if (me == root)
      for (size_t i = 0; i < c; i++) h[i] = st_f32_to_bf16(p[off + i]);
    MPI_CHECK(MPI_Bcast(h, (int)c, MPI_UINT16_T, root, comm));
    if (me != root)
      for (size_t i = 0; i < c; i++) p[off + i] = gguf_bf16_to_f32(h[i]);
    (*calls)++;
  }
  free(h);
}

void xfer_round_bf16(float *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = gguf_bf16_to_f32(st_f32_to_bf16(p[i]));
}

/* The table check of the weight broadcast: 1 when every rank of comm has t's shape. */
static int tables_agree(const struct param_table *t, MPI_Comm comm) {
  /* max of (total, -total, n, -n): equal on all ranks iff every rank has the same table */
  long long mine[4] = {(long long)t->total, -(long long)t->total, t->n, -(long long)t->n}, all[4];
  MPI_CHECK(MPI_Allreduce(mine, all, 4, MPI_LONG_LONG, MPI_MAX, comm));
  return all[0] == -all[1] && all[2] == -all[3];
}

static void stats_fill(struct xfer_stats *st, const struct param_table *t, double t0, double t1,
                       int calls, size_t bytes_per_weight) {
  double t2 = clock_seconds();
  if (!st) return;
  st->t_sync = t2 - t0;
  st->t_wait = t1 - t0;
  st->bytes = (double)t->total * (double)bytes_per_weight;
  st->sync_gbps = t2 > t1 ? st->bytes / (t2 - t1) / 1e9 : 0.0;
  st->chunks = calls;
}

int xfer_bcast_weights(float *params, const struct param_table *t, int root, MPI_Comm comm,
                       struct xfer_stats *st) {
  return xfer_bcast_weights_as(params, t, root, comm, 0, st);
}

int xfer_bcast_weights_as(float *params, const struct param_table *t, int root, MPI_Comm comm, int bf16,
                          struct xfer_stats *st) {
  double t0 = clock_seconds();
  wait_barrier(comm);
  double t1 = clock_seconds();
  if (!tables_agree(t, comm)) return XFER_EMISMATCH;
  int calls = 0, me = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &me));
  for (int i = 0; i < t->n;) {
    int j = chunk_end(t, i);
    size_t off = t->e[i].offset, n = t->e[j - 1].offset + t->e[j - 1].numel - off;
    if (bf16) bcast_bf16(params + off, n, root, me, comm, &calls);
    else bcast_floats(params + off, n, root, comm, &calls);
    i = j;
  }
  stats_fill(st, t, t0, t1, calls, bf16 ? sizeof(uint16_t) : sizeof(float));
  return XFER_OK;
}

int xfer_bcast_weights_each(float *params, const struct param_table *t, int root, MPI_Comm comm,
                            xfer_fill_fn fill, void *ctx, struct xfer_stats *st) {
  double t0 = clock_seconds();
  wait_barrier(comm);
  double t1 = clock_seconds();
  if (!tables_agree(t, comm)) return XFER_EMISMATCH;
  float *x = NULL;
  size_t most = 1;
  for (int i = 0; i < t->n; i++) most = t->e[i].numel > most ? t->e[i].numel : most;
  if (fill && !(x = malloc(sizeof(float) * most))) return XFER_ENOMEM;
  int calls = 0;
  for (int i = 0; i < t->n; i++) {
    if (fill) fill(ctx, i, x);
    bcast_floats(fill ? x : params + t->e[i].offset, t->e[i].numel, root, comm, &calls);
  }
  free(x);
  stats_fill(st, t, t0, t1, calls, sizeof(float));
  return XFER_OK;
}
