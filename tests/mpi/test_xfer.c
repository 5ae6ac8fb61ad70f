/* mpi/test_xfer.c (3 ranks): sample batches survive encode -> send -> receive ->
 * decode bit for bit; truncated and corrupt buffers are rejected; the chunked
 * weight broadcast gives every rank the root's parameters; polite waits
 * return on arrival and report deadlines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/params.h"
#include "mpi/wait.h"
#include "mpi/xfer.h"
#include "testutil.h"
#include "util/clock.h"

static uint64_t rnd(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int rint_(uint64_t *s, int n) { return (int)(rnd(s) % (uint64_t)n); }
static float rfloat(uint64_t *s) { return (float)((double)(rnd(s) >> 11) / 9007199254740992.0); }

/* One random sample: every field, random lengths, random parts. */
static void random_sample(struct sample *x, uint64_t *s) {
  sample_init(x);
  x->prompt_id = (int64_t)rnd(s);
  x->group = rint_(s, 512);
  x->index = rint_(s, 64);
  x->weight_version = (int64_t)rnd(s) >> 20;
  x->step = rint_(s, 100000);
  x->finish = (enum finish_reason)rint_(s, FINISH_COUNT);
  x->flags = (uint32_t)rnd(s);
  x->reward = rint_(s, 10) == 0 ? NAN : (double)rfloat(s) * 2 - 1;
  int np = rint_(s, 300), nr = rint_(s, 3000);
  int32_t *tok = malloc((size_t)(np + nr + 1) * sizeof *tok);
  float *lp = malloc((size_t)(nr + 1) * sizeof *lp);
  for (int i = 0; i < np + nr; i++) tok[i] = (int32_t)(uint32_t)rnd(s); /* any int32 */
  for (int i = 0; i < nr; i++) lp[i] = rint_(s, 500) == 0 ? -INFINITY : -10 * rfloat(s);
  CHECK(sample_set_prompt(x, tok, np) == 0);
  CHECK(sample_set_response(x, tok + np, rint_(s, 5) ? lp : NULL, nr) == 0);
  if (nr > 0 && rint_(s, 3) == 0) {  /* an in-flight update split it: per-token versions */
    int64_t *tv = malloc((size_t)nr * sizeof *tv);
    for (int i = 0; i < nr; i++) tv[i] = x->weight_version + (i >= nr / 2);
    CHECK(sample_set_tok_versions(x, tv) == 0);
    free(tv);
  }
  int mode = rint_(s, 3); /* none, scalar, per token */
  if (mode == 1) CHECK(sample_set_adv(x, lp, 1) == 0);
  if (mode == 2 && nr > 0) CHECK(sample_set_adv(x, lp, nr) == 0);
  int parts = rint_(s, 5);
  for (int p = 0; p < parts; p++) {
    char name[48];
    int len = 1 + rint_(s, 40);
    for (int i = 0; i < len; i++) name[i] = (char)(' ' + rint_(s, 95));
    name[len] = 0;
    CHECK(sample_set_part(x, name, (double)rfloat(s)) == 0);
  }
  free(tok);
  free(lp);
}

static void random_batch(struct sample_batch *b, uint64_t seed, int n) {
  sample_batch_init(b);
  for (int i = 0; i < n; i++) random_sample(sample_batch_add(b), &seed);
}

static int batches_equal(const struct sample_batch *a, const struct sample_batch *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++)
    if (!sample_equal(&a->s[i], &b->s[i])) return 0;
  return 1;
}

/* Little-endian write of `bytes` bytes at off, then re-seal the checksum so
 * only the structural checks can catch the change. */
static void patch(unsigned char *buf, size_t len, size_t off, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) buf[off + (size_t)i] = (unsigned char)(v >> (8 * i));
  uint64_t sum = xfer_checksum(buf, len - 8);
  for (int i = 0; i < 8; i++) buf[len - 8 + (size_t)i] = (unsigned char)(sum >> (8 * i));
}

/* Decoding must fail with XFER_ECORRUPT, leave `out` (one sample) as it was. */
static void expect_corrupt(const unsigned char *buf, size_t len, const char *what) {
  struct sample_batch out;
  random_batch(&out, 5, 1);
  char err[256] = "";
  int rc = xfer_decode_batch(buf, len, &out, err, sizeof err);
  CHECK_MSG(rc == XFER_ECORRUPT && out.n == 1, "%s: rc %d, n %d", what, rc, out.n);
  CHECK_MSG(err[0] != 0, "%s: no message", what);
  sample_batch_free(&out);
}

static void test_codec(void) {
  struct sample_batch b, out;
  random_batch(&b, 42, 25);
  unsigned char *buf;
  size_t len;
  char err[256];
  CHECK(xfer_encode_batch(&b, &buf, &len) == XFER_OK);
  sample_batch_init(&out);
  CHECK(xfer_decode_batch(buf, len, &out, err, sizeof err) == XFER_OK);
  CHECK(batches_equal(&b, &out));
  /* every truncation and a flipped bit anywhere are caught */
  size_t cuts[] = {0, 1, 23, 24, 31, 32, 100, len / 2, len - 9, len - 8, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) expect_corrupt(buf, cuts[i], "cut");
  uint64_t s = 7;
  for (int i = 0; i < 20; i++) {
    size_t at = rnd(&s) % len;
    unsigned char bit = (unsigned char)(1u << rint_(&s, 8));
    buf[at] ^= bit;
    expect_corrupt(buf, len, "bit flip");
    buf[at] ^= bit;
  }
  free(buf);
  sample_batch_free(&b);
  sample_batch_free(&out);
}

/* Structural checks behind a valid checksum, on a one-sample batch with
 * n_prompt 3, n_resp 5 with logprobs, no parts and a per-token advantage. */
static void test_structure(void) {
  struct sample_batch b;
  sample_batch_init(&b);
  struct sample *x = sample_batch_add(&b);
  int32_t t[5] = {1, 2, 3, 4, 5};
  float lp[5] = {-1, -2, -3, -4, -5};
  sample_set_prompt(x, t, 3);
  sample_set_response(x, t, lp, 5);
  sample_set_adv(x, lp, 5);
  unsigned char *buf, *work;
  size_t len;
  CHECK(xfer_encode_batch(&b, &buf, &len) == XFER_OK);
  CHECK(len == 24 + 62 + 12 + 20 + 20 + 20 + 8);
  work = malloc(len + 4);
  struct { size_t off; uint64_t v; int bytes; const char *what; } cases[] = {
      {0, 0x12345678, 4, "magic"},          {4, 2, 4, "version"},
      {8, 2, 8, "sample count"},            {8, 1ull << 40, 8, "huge sample count"},
      {16, 5, 8, "body length"},            {56, 3, 1, "finish reason"},
      {57, 4, 1, "array flags"},           {70, 0x7fffffff, 4, "prompt count"},
      {86, 0xffffffff, 4, "response count"}, {len - 8 - 24, 2, 4, "advantage count"},
      {len - 8 - 28, 1000, 4, "part count"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memcpy(work, buf, len);
    patch(work, len, cases[i].off, cases[i].v, cases[i].bytes);
    expect_corrupt(work, len, cases[i].what);
  }
  /* four stray bytes after the last sample, with a matching body length */
  memcpy(work, buf, len - 8);
  memset(work + len - 8, 0, 4);
  patch(work, len + 4, 16, len - 32 + 4, 8);
  expect_corrupt(work, len + 4, "stray bytes");
  free(work);
  free(buf);
  sample_batch_free(&b);
}

static void test_send(int rank, MPI_Comm comm) {
  const int sizes[3] = {0, 1, 40};
  char err[256];
  if (rank == 0) {
    for (int dest = 1; dest <= 2; dest++)
      for (int k = 0; k < 3; k++) {
        struct sample_batch b;
        random_batch(&b, (uint64_t)(100 * dest + k), sizes[k]);
        CHECK(xfer_send_batch(&b, dest, XFER_TAG_SAMPLES, comm) == XFER_OK);
        sample_batch_free(&b);
      }
    return;
  }
  for (int k = 0; k < 3; k++) {
    struct sample_batch want, got;
    random_batch(&want, (uint64_t)(100 * rank + k), sizes[k]);
    sample_batch_init(&got);
    int from = -1;
    int rc = xfer_recv_batch(&got, MPI_ANY_SOURCE, XFER_TAG_SAMPLES, comm, 30, &from, err,
                             sizeof err);
    CHECK_MSG(rc == XFER_OK, "rank %d batch %d: %s", rank, k, err);
    CHECK(from == 0);
    CHECK_MSG(batches_equal(&want, &got), "rank %d batch %d differs", rank, k);
    sample_batch_free(&want);
    sample_batch_free(&got);
  }
}

static void fill_params(float *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = rfloat(&seed) - 0.5f;
}

static void test_weights(int rank, MPI_Comm comm) {
  struct model_config mc = {.vocab_size = 37, .dim = 16, .layers = 3, .heads = 4, .kv_heads = 2,
                            .ffn_dim = 24, .max_seq = 32, .head_dim = 4, .qkv_bias = 1};
  struct param_table t;
  param_table_build(&t, &mc);
  float *p = malloc(t.total * sizeof *p), *want = malloc(t.total * sizeof *want);
  fill_params(want, t.total, 99);
  if (rank == 1) memcpy(p, want, t.total * sizeof *p);
  else fill_params(p, t.total, (uint64_t)rank); /* stale weights elsewhere */
  struct xfer_stats st;
  CHECK(xfer_bcast_weights(p, &t, 1, comm, &st) == XFER_OK);
  CHECK(memcmp(p, want, t.total * sizeof *p) == 0);
  /* embed, 3 layers, final norm, lm_head: one chunk each */
  CHECK_MSG(st.chunks == 6, "chunks %d", st.chunks);
  CHECK(st.bytes == (double)t.total * 4 && st.t_sync >= st.t_wait && st.sync_gbps > 0);
  if (rank == 1)
    printf("weights: %zu floats in %d chunks, t_sync %.2e s, %.3f GB/s\n", t.total, st.chunks,
           st.t_sync, st.sync_gbps);
  /* bf16: half the bytes; root keeps its fp32 weights, every other rank gets each rounded to
   * 8 significant bits, ties to even (the reference: frexp, rint in the default rounding
   * mode, ldexp), within 2^-8 relative (half a unit of the 8th bit) */
  if (rank != 1) fill_params(p, t.total, (uint64_t)rank);
  CHECK(xfer_bcast_weights_as(p, &t, 1, comm, 1, &st) == XFER_OK);
  CHECK(st.bytes == (double)t.total * 2 && st.chunks == 6);
  size_t exact = 0, rounded = 0;
  for (size_t i = 0; i < t.total; i++) {
    int e = 0;
    double m = frexp((double)want[i], &e), ref = ldexp(rint(m * 256.0), e - 8);
    if (rank == 1) exact += p[i] == want[i];
    else exact += (double)p[i] == ref && fabs(ref - want[i]) <= fabs((double)want[i]) / 256.0;
    rounded += p[i] != want[i];
  }
  CHECK_MSG(exact == t.total, "%zu of %zu weights as expected on rank %d", exact, t.total, rank);
  CHECK(rank == 1 ? rounded == 0 : rounded > t.total / 2);
  float copy[3] = {want[0], want[1], want[2]};
  xfer_round_bf16(copy, 3);
  for (int i = 0; i < 3 && rank != 1; i++) CHECK(copy[i] == p[i]);
  /* a rank with another model: every rank refuses, nobody hangs */
  struct param_table t2;
  mc.layers = rank == 2 ? 2 : 3;
  param_table_build(&t2, &mc);
  CHECK(xfer_bcast_weights(p, &t2, 0, comm, NULL) == XFER_EMISMATCH);
  param_table_free(&t2);
  param_table_free(&t);
  free(p);
  free(want);
}

static void sleep_s(double s) {
  struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static void test_waits(int rank, MPI_Comm comm) {
  const int tag = XFER_TAG_CONTROL;
  MPI_Status st;
  /* wait_probe returns once rank 0's late message is there */
  if (rank == 0) {
    sleep_s(0.05);
    int v = 1234;
    MPI_Send(&v, 1, MPI_INT, 1, tag, comm);
  } else if (rank == 1) {
    double t0 = clock_seconds();
    CHECK(wait_probe(MPI_ANY_SOURCE, tag, comm, &st) == WAIT_OK && st.MPI_SOURCE == 0);
    int v = 0;
    MPI_Recv(&v, 1, MPI_INT, 0, tag, comm, MPI_STATUS_IGNORE);
    CHECK(v == 1234 && clock_seconds() - t0 < 10);
  } else { /* a deadline on a message that never comes */
    double t0 = clock_seconds();
    CHECK(wait_probe_until(0, tag, comm, &st, 0.05) == WAIT_TIMEOUT);
    double dt = clock_seconds() - t0;
    CHECK_MSG(dt >= 0.05 && dt < 2, "timeout after %.3f s", dt);
    struct sample_batch b;
    char err[128];
    sample_batch_init(&b);
    CHECK(xfer_recv_batch(&b, 0, XFER_TAG_PROMPTS, comm, 0.02, NULL, err, sizeof err) ==
          XFER_TIMEOUT);
  }
  /* wait_request: times out, then resumes the same receive */
  MPI_Request req = MPI_REQUEST_NULL;
  int v = 0;
  if (rank == 2) {
    MPI_Irecv(&v, 1, MPI_INT, 0, tag, comm, &req);
    CHECK(wait_request_until(&req, &st, 0.02) == WAIT_TIMEOUT && req != MPI_REQUEST_NULL);
  }
  CHECK(wait_barrier(comm) == WAIT_OK);
  if (rank == 0) {
    v = 77;
    MPI_Send(&v, 1, MPI_INT, 2, tag, comm);
  } else if (rank == 2) {
    CHECK(wait_request(&req, &st) == WAIT_OK && v == 77 && st.MPI_SOURCE == 0);
  }
  /* a resumable barrier that rank 0 joins late */
  req = MPI_REQUEST_NULL;
  if (rank == 0) {
    sleep_s(0.1);
    CHECK(wait_barrier_until(comm, 0, &req) == WAIT_OK);
  } else {
    CHECK(wait_barrier_until(comm, 0.01, &req) == WAIT_TIMEOUT);
    CHECK(wait_barrier_until(comm, 30, &req) == WAIT_OK);
  }
  /* a message that is not a size message is consumed and reported */
  if (rank == 0) {
    char junk[5] = "junk";
    MPI_Send(junk, 5, MPI_CHAR, 1, XFER_TAG_REWARDS, comm);
  } else if (rank == 1) {
    unsigned char *buf = NULL;
    size_t len = 0;
    CHECK(xfer_recv_bytes(&buf, &len, 0, XFER_TAG_REWARDS, comm, 30, NULL) == XFER_ECORRUPT);
    int pending = 1;
    MPI_Iprobe(0, XFER_TAG_REWARDS, comm, &pending, MPI_STATUS_IGNORE);
    CHECK(!pending);
  }
  /* wait_bcast, both paths (eager and barrier + blocking) */
  int ns[2] = {100, 1 << 20};
  for (int k = 0; k < 2; k++) {
    float *x = malloc((size_t)ns[k] * sizeof *x), *w = malloc((size_t)ns[k] * sizeof *w);
    fill_params(w, (size_t)ns[k], 5);
    if (rank == 2) memcpy(x, w, (size_t)ns[k] * sizeof *x);
    else memset(x, 0, (size_t)ns[k] * sizeof *x);
    CHECK(wait_bcast(x, ns[k], MPI_FLOAT, 2, comm) == WAIT_OK);
    CHECK(memcmp(x, w, (size_t)ns[k] * sizeof *x) == 0);
    free(x);
    free(w);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 3) {
    if (rank == 0) fprintf(stderr, "test_xfer needs 3 ranks, got %d\n", size);
    MPI_Finalize();
    return 1;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (rank == 0) {
    test_codec();
    test_structure();
  }
  wait_barrier(comm);
  test_send(rank, comm);
  wait_barrier(comm);
  test_weights(rank, comm);
  wait_barrier(comm);
  test_waits(rank, comm);
  MPI_Comm_free(&comm);
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank != 0) return fails ? 1 : 0;
  if (all && !fails) fprintf(stderr, "test_xfer: checks failed on other ranks\n");
  return all && !fails ? 1 : TEST_RESULT("test_xfer");
}
