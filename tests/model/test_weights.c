/* model/test_weights.c: the residency states and transitions of struct weights
 * (model/weights.h), and the model's forward through them, without a GPU.
 *
 * A stand-in device backend is the CPU backend with its memory ops set (host memory that
 * counts uploads and downloads): the model then takes its device path (weights uploaded,
 * products on the "device" buffers) with the CPU backend's arithmetic, so its logprobs
 * must equal the host model's to the bit. Checked:
 *   host backend   the device buffer is the host buffer; transitions only record states
 *   transitions    untracked host writes: every weights_to_device uploads and the state
 *                  stays RESIDENCY_HOST; tracked: one upload, then RESIDENCY_BOTH;
 *                  device written -> RESIDENCY_DEVICE (bf16 copy remade unless the writer
 *                  wrote it), weights_to_host downloads once; weights_device_target
 *   model          logprobs on the stand-in device == on the host backend; a tracked
 *                  model uploads once over two forwards; model_forward_with of a second
 *                  struct weights == a model that holds those weights, and leaves the
 *                  model's own weights and state alone. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "testutil.h"
#include "util/rng.h"

/* copies of weights_bytes (the weights under test; the batch arrays go up too) */
static int uploads, downloads, conversions;
static size_t weights_bytes;

static void *fake_alloc(size_t bytes) { return calloc(1, bytes); }
static void fake_free(void *p) { free(p); }
static void fake_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static void fake_upload(void *dst, const void *src, size_t bytes) {
  uploads += bytes == weights_bytes;
  memcpy(dst, src, bytes);
}
static void fake_download(void *dst, const void *src, size_t bytes) {
  downloads += bytes == weights_bytes;
  memcpy(dst, src, bytes);
}
static void fake_to_bf16(uint16_t *dst, const float *src, size_t n) {
  conversions++;
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &src[i], sizeof u);
    dst[i] = (uint16_t)(u >> 16);
  }
}

/* Present so that the weights keep a bf16 working copy; no test multiplies with it. */
static void no_matmul_w16(int ta, int tb, int M, int N, int K, float alpha, const float *A,
                          int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc) {
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B;
  (void)ldb, (void)beta, (void)C, (void)ldc;
  CHECK(0);
}

/* The CPU backend's arithmetic on "device" memory (bf16: with a working copy too). */
static struct backend_ops fake_device(int bf16) {
  struct backend_ops ops = cpu_backend;
  ops.name = "fake-device";
  ops.alloc = fake_alloc;
  ops.free = fake_free;
  ops.zero = fake_zero;
  ops.upload = fake_upload;
  ops.download = fake_download;
  if (bf16) {
    ops.to_bf16 = fake_to_bf16;
    ops.matmul_w16 = no_matmul_w16;
  }
  return ops;
}

static void check_host_backend(void) {
  struct weights w;
  CHECK(weights_create(&w, 10, &cpu_backend) == 0);
  CHECK(w.dev == w.host && w.dev16 == NULL && w.state == RESIDENCY_HOST);
  CHECK(weights_to_device(&w) == 0 && w.state == RESIDENCY_HOST);
  weights_track_host_writes(&w);
  CHECK(weights_to_device(&w) == 0 && w.state == RESIDENCY_BOTH);
  weights_device_written(&w, WEIGHTS_BF16_STALE);
  CHECK(w.state == RESIDENCY_DEVICE);
  weights_to_host(&w);
  CHECK(w.state == RESIDENCY_BOTH && weights_device_target(&w) == w.host);
  weights_free(&w);
}

/* Host writes untracked, then tracked. */
static void check_host_writes(const struct backend_ops *ops) {
  struct weights w;
  CHECK(weights_create(&w, 6, ops) == 0);
  weights_bytes = sizeof(float) * 6;
  CHECK(w.dev == NULL && w.state == RESIDENCY_HOST);
  for (int i = 0; i < 6; i++) w.host[i] = (float)i;
  uploads = 0;
  CHECK(weights_to_device(&w) == 0 && weights_to_device(&w) == 0);
  CHECK(uploads == 2 && w.state == RESIDENCY_HOST);
  CHECK(w.dev != NULL && w.dev != w.host && w.dev[5] == 5.0f);
  weights_track_host_writes(&w);
  CHECK(weights_to_device(&w) == 0 && weights_to_device(&w) == 0);
  CHECK(uploads == 3 && w.state == RESIDENCY_BOTH);
  w.host[5] = 7.0f;
  weights_host_written(&w);
  CHECK(w.state == RESIDENCY_HOST);
  CHECK(weights_to_device(&w) == 0 && uploads == 4 && w.dev[5] == 7.0f);
  weights_free(&w);
}

/* A device writer, then the host copy made current. */
static void check_device_writes(const struct backend_ops *ops) {
  struct weights w;
  CHECK(weights_create(&w, 6, ops) == 0);
  weights_bytes = sizeof(float) * 6;
  CHECK(weights_device_alloc(&w) == 0 && w.dev16 != NULL);
  float *d = weights_device_target(&w);
  CHECK(d == w.dev);
  for (int i = 0; i < 6; i++) d[i] = 1.5f + (float)i;
  conversions = uploads = downloads = 0;
  weights_device_written(&w, WEIGHTS_BF16_STALE);
  CHECK(w.state == RESIDENCY_DEVICE && conversions == 1 && w.dev16[0] == 0x3fc0);
  weights_device_written(&w, WEIGHTS_BF16_WRITTEN);
  CHECK(conversions == 1);
  CHECK(weights_to_device(&w) == 0 && uploads == 0);  /* the device is the truth */
  weights_to_host(&w);
  weights_to_host(&w);
  CHECK(downloads == 1 && w.state == RESIDENCY_BOTH && w.host[5] == 6.5f);
  weights_free(&w);
}

static const int cu[] = {0, 5, 9};
enum { NSEQ = 2, T = 9 };

static struct model_config tiny(void) {
  struct model_config mc = { .vocab_size = 11, .dim = 16, .layers = 2, .heads = 4,
                             .kv_heads = 2, .ffn_dim = 24, .max_seq = 12,
                             .rope_theta = 10000.0, .norm_eps = 1e-5, .init_std = 0.4,
                             .tie_embeddings = 0, .qkv_bias = 1, .value_head = 0 };
  mc.head_dim = mc.dim / mc.heads;
  return mc;
}

static void check_model(const struct backend_ops *dev_ops) {
  struct model_config mc = tiny();
  struct model h, d;
  int tokens[T];
  for (int t = 0; t < T; t++) tokens[t] = (t * 5 + 3) % mc.vocab_size;
  CHECK(model_create(&h, &mc, T, &cpu_backend) == 0);
  CHECK(model_create(&d, &mc, T, dev_ops) == 0);
  model_init_params(&h, 3);
  memcpy(d.params, h.params, sizeof(float) * h.table.total);
  float lp_h[T], lp_d[T], lp_r[T];
  CHECK(model_forward(&h, tokens, cu, NSEQ, lp_h, NULL, NULL) == 0);
  weights_track_host_writes(&d.weights);
  weights_bytes = sizeof(float) * d.table.total;
  uploads = 0;
  CHECK(model_forward(&d, tokens, cu, NSEQ, lp_d, NULL, NULL) == 0);
  CHECK(model_forward(&d, tokens, cu, NSEQ, lp_d, NULL, NULL) == 0);
  CHECK(uploads == 1 && d.weights.state == RESIDENCY_BOTH);
  CHECK(memcmp(lp_h, lp_d, sizeof lp_h) == 0);
  /* other weights through the same model: the answer of a model that holds them */
  struct weights ref;
  CHECK(weights_create(&ref, d.table.total, dev_ops) == 0);
  model_params_init(&d.table, ref.host, mc.init_std, 4);
  CHECK(model_forward_with(&d, &ref, tokens, cu, NSEQ, lp_r, NULL, NULL) == 0);
  memcpy(h.params, ref.host, sizeof(float) * h.table.total);
  CHECK(model_forward(&h, tokens, cu, NSEQ, lp_h, NULL, NULL) == 0);
  CHECK(memcmp(lp_h, lp_r, sizeof lp_h) == 0);
  CHECK(d.weights.state == RESIDENCY_BOTH && d.fwd_params == ref.dev);
  CHECK(model_forward(&d, tokens, cu, NSEQ, lp_r, NULL, NULL) == 0);
  CHECK(memcmp(lp_d, lp_r, sizeof lp_d) == 0 && d.fwd_params == d.weights.dev);
  weights_free(&ref);
  model_free(&h);
  model_free(&d);
}

int main(void) {
  struct backend_ops fp32 = fake_device(0), mixed = fake_device(1);
  check_host_backend();
  check_host_writes(&fp32);
  check_device_writes(&mixed);
  check_model(&fp32);
  return TEST_RESULT("test_weights");
}
