/* kernels/test_gpu_ops.c: every CUDA op against the CPU op (cpu/ops.c, train/optim.c,
 * rollout/sampling.c) on the same random inputs, over several shapes: ragged packed
 * batches, grouped-query heads, decode-style q_len < kv_len, head sizes 16..128.
 *
 * Tolerances (max |gpu - cpu| / max |cpu| over a tensor):
 *   fp32 ops 1e-5 (the CUDA path reduces in another order, never in lower precision);
 *   bf16 GEMM 1e-5 against the CPU GEMM of the same bf16-rounded inputs (products of
 *   bf16 values are exact in fp32), 1e-2 against the unrounded fp32 inputs (bf16 keeps
 *   8 significant bits: 2^-9 relative per input);
 *   AdamW 1e-6 (same scalars, same formula); the norm 1e-12 (double sums);
 *   sampling: the same tokens, logprobs within 1e-6 (1 + |lp|) (float lse, a few ulps).
 * Skips (exit 77) without the CUDA backend or without a device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend.h"
#include "gpu_main.h"
#include "model/device.h"

#ifdef RLPT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#include "kernels/cuda_kernels.h"
#include "rollout/kv_cache.h"
#include "rollout/sampling.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */
#include "train/optim.h"

static const struct backend_ops *G = &cuda_backend, *Cpu = &cpu_backend;
static uint64_t rng_state = 0x243f6a8885a308d3ull;

static double urand(void) { /* [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static float *randv(size_t n, float scale) {
  float *x = malloc(sizeof(float) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) x[i] = (float)(scale * (2.0 * urand() - 1.0));
  return x;
}

static float *copyv(const float *x, size_t n) {
  float *y = malloc(sizeof(float) * (n ? n : 1));
  memcpy(y, x, sizeof(float) * n);
  return y;
}

static void *up(const void *h, size_t bytes) {
  void *d = G->alloc(bytes);
  if (!d) {
    fprintf(stderr, "out of device memory (%zu bytes)\n", bytes);
    exit(1);
  }
  G->upload(d, h, bytes);
  return d;
}

/* max |gpu - ref| / max |ref| with the device tensor downloaded; NaN counts as failure. */
static double rel_err_dev(const void *dev, const float *ref, size_t n) {
  float *h = malloc(sizeof(float) * (n ? n : 1));
  G->download(h, dev, sizeof(float) * n);
  double e = tu_rel_err(h, ref, n);
  free(h);
  return e;
}

#define CHECK_REL(dev, ref, n, tol, what) do { double _e = rel_err_dev(dev, ref, n); \
  CHECK_MSG(_e <= (tol), "%s: relative error %.3g > %.3g", what, _e, (double)(tol)); } while (0)

/* ---- GEMM ---------------------------------------------------------------- */

static uint16_t bf16_round(float f, float *back) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even (inputs are finite) */
  uint16_t b = (uint16_t)(u >> 16);
  uint32_t w = (uint32_t)b << 16;
  memcpy(back, &w, 4);
  return b;
}

static void test_matmul_shape(int ta, int tb, int M, int N, int K, int pad, float beta) {
  int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
  float *A = randv(na, 1), *B = randv(nb, 1), *C = randv(nc, 1), *Cg = copyv(C, nc);
  float *dA = up(A, na * 4), *dB = up(B, nb * 4), *dC = up(C, nc * 4);
  Cpu->matmul(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, beta, C, ldc);
  G->matmul(ta, tb, M, N, K, 0.75f, dA, lda, dB, ldb, beta, dC, ldc);
  char what[96];
  snprintf(what, sizeof what, "matmul ta=%d tb=%d M=%d N=%d K=%d pad=%d", ta, tb, M, N, K, pad);
  CHECK_REL(dC, C, nc, 1e-5, what);
  /* the kernel matmul falls back to when cuBLASLt offers no algorithm, called directly:
   * on a real GPU the heuristic nearly always has one, so matmul alone would skip it */
  G->upload(dC, Cg, nc * 4);
  cuda_gemm_fallback(0, ta, tb, M, N, K, 0.75f, dA, lda, dB, ldb, beta, dC, ldc);
  snprintf(what, sizeof what, "fallback GEMM fp32 ta=%d tb=%d M=%d N=%d K=%d", ta, tb, M, N, K);
  CHECK_REL(dC, C, nc, 1e-5, what);

  /* bf16 inputs, fp32 accumulation and output */
  uint16_t *Ab = malloc(2 * na), *Bb = malloc(2 * nb);
  float *Ar = malloc(4 * na), *Br = malloc(4 * nb), *Cr = copyv(Cg, nc), *C32 = copyv(Cg, nc);
  for (size_t i = 0; i < na; i++) Ab[i] = bf16_round(A[i], &Ar[i]);
  for (size_t i = 0; i < nb; i++) Bb[i] = bf16_round(B[i], &Br[i]);
  void *dAb = up(Ab, 2 * na), *dBb = up(Bb, 2 * nb);
  G->upload(dC, Cg, nc * 4);
  cuda_matmul_bf16(ta, tb, M, N, K, 0.75f, dAb, lda, dBb, ldb, beta, dC, ldc);
  Cpu->matmul(ta, tb, M, N, K, 0.75f, Ar, lda, Br, ldb, beta, Cr, ldc);
  Cpu->matmul(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, beta, C32, ldc);
  snprintf(what, sizeof what, "bf16 matmul (rounded inputs) M=%d N=%d K=%d", M, N, K);
  CHECK_REL(dC, Cr, nc, 1e-5, what);
  snprintf(what, sizeof what, "bf16 matmul (fp32 inputs) M=%d N=%d K=%d", M, N, K);
  CHECK_REL(dC, C32, nc, 1e-2, what);
  G->upload(dC, Cg, nc * 4);
  cuda_gemm_fallback(1, ta, tb, M, N, K, 0.75f, dAb, lda, dBb, ldb, beta, dC, ldc);
  snprintf(what, sizeof what, "fallback GEMM bf16 M=%d N=%d K=%d", M, N, K);
  CHECK_REL(dC, Cr, nc, 1e-5, what);

  /* bf16 conversion kernels agree with the host rounding */
  uint16_t *back = malloc(2 * na);
  void *dconv = G->alloc(2 * na);
  cuda_f32_to_bf16(dconv, dA, na);
  G->download(back, dconv, 2 * na);
  CHECK(!memcmp(back, Ab, 2 * na));
  cuda_bf16_to_f32(dA, dconv, na);
  CHECK_REL(dA, Ar, na, 0.0, "bf16 -> fp32");
  G->free(dconv);
  free(back);
  G->free(dAb);
  G->free(dBb);
  free(Ab);
  free(Bb);
  free(Ar);
  free(Br);
  free(Cr);
  free(C32);
  G->free(dA);
  G->free(dB);
  G->free(dC);
  free(A);
  free(B);
  free(C);
  free(Cg);
}

static void test_matmul(void) {
  static const int shapes[][6] = {
      /* ta tb M N K pad */
      {0, 1, 64, 96, 128, 0}, {0, 0, 37, 53, 29, 3}, {1, 0, 96, 40, 77, 0}, {1, 1, 33, 17, 65, 5},
      {0, 1, 1, 200, 64, 0},  {0, 1, 50, 1, 64, 0},  {0, 0, 50, 64, 1, 0},  {1, 0, 1, 64, 50, 0},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int *s = shapes[i];
    test_matmul_shape(s[0], s[1], s[2], s[3], s[4], s[5], 0.0f);
    test_matmul_shape(s[0], s[1], s[2], s[3], s[4], s[5], 0.5f);
  }
}

/* ---- RMSNorm, RoPE --------------------------------------------------------- */

static void test_rmsnorm(int T, int C) {
  size_t n = (size_t)T * C;
  float *x = randv(n, 2), *w = randv(C, 1), *dout = randv(n, 1), *out = randv(n, 1);
  float *rstd = randv(T, 1), *dx = randv(n, 1), *dw = randv(C, 1);
  float *dX = up(x, n * 4), *dWt = up(w, C * 4), *dDo = up(dout, n * 4), *dOut = up(out, n * 4);
  float *dR = up(rstd, T * 4), *ddx = up(dx, n * 4), *ddw = up(dw, C * 4);
  Cpu->rmsnorm_fwd(out, rstd, x, w, T, C, 1e-5f);
  G->rmsnorm_fwd(dOut, dR, dX, dWt, T, C, 1e-5f);
  CHECK_REL(dOut, out, n, 1e-5, "rmsnorm_fwd out");
  CHECK_REL(dR, rstd, T, 1e-5, "rmsnorm_fwd rstd");
  Cpu->rmsnorm_bwd(dx, dw, dout, x, w, rstd, T, C); /* accumulates into random dx, dw */
  G->rmsnorm_bwd(ddx, ddw, dDo, dX, dWt, dR, T, C);
  CHECK_REL(ddx, dx, n, 1e-5, "rmsnorm_bwd dx");
  CHECK_REL(ddw, dw, C, 1e-5, "rmsnorm_bwd dw");
  float *bufs[] = {dX, dWt, dDo, dOut, dR, ddx, ddw};
  for (int i = 0; i < 7; i++) G->free(bufs[i]);
  free(x), free(w), free(dout), free(out), free(rstd), free(dx), free(dw);
}

static void test_rope(int T, int nh, int D) {
  int maxpos = 97, half = D / 2;
  size_t n = (size_t)T * nh * D;
  float *x = randv(n, 1), *ct = malloc(4 * maxpos * half), *st = malloc(4 * maxpos * half);
  int *pos = malloc(sizeof(int) * T);
  for (int p = 0; p < maxpos; p++)
    for (int i = 0; i < half; i++) {
      double a = p * pow(10000.0, -2.0 * i / D);
      ct[p * half + i] = (float)cos(a);
      st[p * half + i] = (float)sin(a);
    }
  for (int t = 0; t < T; t++) pos[t] = (int)(urand() * maxpos);
  float *dx = up(x, n * 4), *dc = up(ct, 4 * maxpos * half), *ds = up(st, 4 * maxpos * half);
  int *dp = up(pos, sizeof(int) * T);
  for (int inv = 0; inv < 2; inv++) {
    Cpu->rope(x, pos, ct, st, T, nh, D, inv);
    G->rope(dx, dp, dc, ds, T, nh, D, inv);
    CHECK_REL(dx, x, n, 1e-5, inv ? "rope inverse" : "rope");
  }
  G->free(dx), G->free(dc), G->free(ds), G->free(dp);
  free(x), free(ct), free(st), free(pos);
}

/* ---- attention ------------------------------------------------------------- */

struct attn_case {
  int nseq, H, KVH, D;
  int qlen[4], kvlen[4];
};

static void test_attention(const struct attn_case *c) {
  int cu_q[5] = {0}, cu_kv[5] = {0}, max_q = 0, max_kv = 0;
  for (int s = 0; s < c->nseq; s++) {
    cu_q[s + 1] = cu_q[s] + c->qlen[s];
    cu_kv[s + 1] = cu_kv[s] + c->kvlen[s];
    max_q = c->qlen[s] > max_q ? c->qlen[s] : max_q;
    max_kv = c->kvlen[s] > max_kv ? c->kvlen[s] : max_kv;
  }
  int H = c->H, KVH = c->KVH, D = c->D, Tq = cu_q[c->nseq], Tk = cu_kv[c->nseq];
  size_t nq = (size_t)Tq * H * D, nk = (size_t)Tk * KVH * D;
  float scale = 1.0f / sqrtf((float)D);
  float *q = randv(nq, 1), *k = randv(nk, 1), *v = randv(nk, 1), *dout = randv(nq, 1);
  float *out = malloc(4 * nq), *lse = malloc(4 * (size_t)Tq * H);
  float *dq = malloc(4 * nq), *dk = malloc(4 * nk), *dv = malloc(4 * nk);
  float *scratch = malloc(4 * attn_scratch_floats(max_q, max_kv));
  struct attn_batch b = {.nseq = c->nseq, .cu_q = cu_q, .cu_kv = cu_kv, .max_q = max_q, .max_kv = max_kv};
  Cpu->attention_fwd(out, lse, q, k, v, &b, H, KVH, D, scale, scratch);
  Cpu->attention_bwd(dq, dk, dv, dout, out, lse, q, k, v, &b, H, KVH, D, scale, scratch);

  float *gq = up(q, 4 * nq), *gk = up(k, 4 * nk), *gv = up(v, 4 * nk), *gdo = up(dout, 4 * nq);
  float *gout = G->alloc(4 * nq), *glse = G->alloc(4 * (size_t)Tq * H);
  float *gdq = G->alloc(4 * nq), *gdk = up(dk, 4 * nk), *gdv = up(dv, 4 * nk);
  G->zero(gdk, 4 * nk); /* gradients are written, not accumulated: start from zero */
  G->upload(gdv, q, 4 * (nk < nq ? nk : nq)); /* ... and from garbage */
  int *gcq = up(cu_q, sizeof cu_q), *gck = up(cu_kv, sizeof cu_kv);
  struct attn_batch gb = {.nseq = c->nseq, .cu_q = gcq, .cu_kv = gck, .max_q = max_q, .max_kv = max_kv};
  G->attention_fwd(gout, glse, gq, gk, gv, &gb, H, KVH, D, scale, NULL);
  char what[120];
  snprintf(what, sizeof what, "attention nseq=%d H=%d KVH=%d D=%d Tq=%d Tk=%d", c->nseq, H, KVH, D,
           Tq, Tk);
  fprintf(stderr, "checking %s\n", what);
  CHECK_REL(gout, out, nq, 1e-5, "attention_fwd out");
  CHECK_REL(glse, lse, (size_t)Tq * H, 1e-5, "attention_fwd lse");
  /* backward from the CPU's out/lse is the op's contract; use the GPU's own (equal to 1e-6) */
  G->attention_bwd(gdq, gdk, gdv, gdo, gout, glse, gq, gk, gv, &gb, H, KVH, D, scale, NULL);
  CHECK_REL(gdq, dq, nq, 1e-5, "attention_bwd dq");
  CHECK_REL(gdk, dk, nk, 1e-5, "attention_bwd dk");
  CHECK_REL(gdv, dv, nk, 1e-5, "attention_bwd dv");
  void *bufs[] = {gq, gk, gv, gdo, gout, glse, gdq, gdk, gdv, gcq, gck};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) G->free(bufs[i]);
  free(q), free(k), free(v), free(dout), free(out), free(lse), free(dq), free(dk), free(dv);
  free(scratch);
}

/* Decode attention reading K/V through block tables equals the contiguous op. */
static void test_decode_paged(void) {
  struct kv_layout L = {2, 2, 64, 16};
  int H = 6, D = L.head_dim, KVH = L.kv_heads, layer = 1, nseq = 3, nblocks = 24, max_blocks = 6;
  int kv_len[3] = {1, 17, 80};
  size_t bf = kv_block_floats(&L), row = (size_t)KVH * D;
  float *pool = randv(bf * nblocks, 1), *q = randv((size_t)nseq * H * D, 1);
  int tables[3 * 6], perm[24];
  for (int i = 0; i < nblocks; i++) perm[i] = i;
  for (int i = nblocks - 1; i > 0; i--) { /* distinct blocks in a shuffled order */
    int j = (int)(urand() * (i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int i = 0; i < nseq * max_blocks; i++) tables[i] = perm[i];
  int cu_q[4] = {0, 1, 2, 3}, cu_kv[4] = {0};
  for (int s = 0; s < nseq; s++) cu_kv[s + 1] = cu_kv[s] + kv_len[s];
  int Tk = cu_kv[nseq];
  float *k = malloc(4 * Tk * row), *v = malloc(4 * Tk * row);
  for (int s = 0; s < nseq; s++)
    for (int t = 0; t < kv_len[s]; t++) {
      const float *blk = pool + (size_t)tables[s * max_blocks + t / L.block_size] * bf;
      size_t base = ((size_t)layer * 2 * L.block_size + t % L.block_size) * row;
      memcpy(k + (size_t)(cu_kv[s] + t) * row, blk + base, 4 * row);
      memcpy(v + (size_t)(cu_kv[s] + t) * row, blk + base + (size_t)L.block_size * row, 4 * row);
    }
  float *out = malloc(4 * (size_t)nseq * H * D), *lse = malloc(4 * (size_t)nseq * H);
  float *scratch = malloc(4 * attn_scratch_floats(1, 80));
  struct attn_batch b = {.nseq = nseq, .cu_q = cu_q, .cu_kv = cu_kv, .max_q = 1, .max_kv = 80};
  float scale = 1.0f / sqrtf((float)D);
  Cpu->attention_fwd(out, lse, q, k, v, &b, H, KVH, D, scale, scratch);
  float *gpool = up(pool, 4 * bf * nblocks), *gq = up(q, 4 * (size_t)nseq * H * D);
  int *gt = up(tables, sizeof tables), *gl = up(kv_len, sizeof kv_len);
  float *gout = G->alloc(4 * (size_t)nseq * H * D), *glse = G->alloc(4 * (size_t)nseq * H);
  cuda_attention_decode_paged(gout, glse, gq, gpool, &L, layer, gt, max_blocks, gl, nseq, H, scale);
  CHECK_REL(gout, out, (size_t)nseq * H * D, 1e-5, "paged decode out");
  CHECK_REL(glse, lse, (size_t)nseq * H, 1e-5, "paged decode lse");
  void *bufs[] = {gpool, gq, gt, gl, gout, glse};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) G->free(bufs[i]);
  free(pool), free(q), free(k), free(v), free(out), free(lse), free(scratch);
}

/* ---- MLP, embedding, elementwise ---------------------------------------- */

static void test_elementwise(void) {
  size_t n = 10007;
  float *g = randv(n, 4), *u = randv(n, 2), *dh = randv(n, 1), *h = malloc(4 * n);
  float *dg = malloc(4 * n), *du = malloc(4 * n);
  float *gg = up(g, 4 * n), *gu = up(u, 4 * n), *gdh = up(dh, 4 * n), *gh = G->alloc(4 * n);
  float *gdu = G->alloc(4 * n);
  Cpu->swiglu_fwd(h, g, u, n);
  G->swiglu_fwd(gh, gg, gu, n);
  CHECK_REL(gh, h, n, 1e-5, "swiglu_fwd");
  Cpu->swiglu_bwd(dg, du, h, dh, g, u, n);
  G->zero(gh, 4 * n);
  G->swiglu_bwd(gdh, gdu, gh, gdh, gg, gu, n); /* dh aliases dgate, as model/model.c calls it */
  CHECK_REL(gdh, dg, n, 1e-5, "swiglu_bwd dgate");
  CHECK_REL(gdu, du, n, 1e-5, "swiglu_bwd dup");
  CHECK_REL(gh, h, n, 1e-5, "swiglu_bwd h");
  G->swiglu_bwd(gdh, gdu, NULL, gdh, gg, gu, n); /* h may be NULL; again on the new dh */
  Cpu->swiglu_bwd(dg, du, NULL, dg, g, u, n);
  CHECK_REL(gdh, dg, n, 1e-5, "swiglu_bwd h=NULL");

  int T = 41, C = 72, V = 13, tok[41];
  for (int t = 0; t < T; t++) tok[t] = (int)(urand() * V); /* repeats: accumulation order */
  float *table = randv((size_t)V * C, 1), *out = malloc(4 * (size_t)T * C);
  float *dout = randv((size_t)T * C, 1), *dtab = randv((size_t)V * C, 1);
  float *gt = up(table, 4 * (size_t)V * C), *go = G->alloc(4 * (size_t)T * C);
  float *gdo = up(dout, 4 * (size_t)T * C), *gdt = up(dtab, 4 * (size_t)V * C);
  int *gtok = up(tok, sizeof tok);
  Cpu->embed_fwd(out, tok, table, T, C);
  G->embed_fwd(go, gtok, gt, T, C);
  CHECK_REL(go, out, (size_t)T * C, 0.0, "embed_fwd");
  Cpu->embed_bwd(dtab, tok, dout, T, C);
  G->embed_bwd(gdt, gtok, gdo, T, C);
  CHECK_REL(gdt, dtab, (size_t)V * C, 1e-6, "embed_bwd");

  float *bias = randv(C, 1), *db = randv(C, 1);
  float *gb = up(bias, 4 * C), *gdb = up(db, 4 * C);
  Cpu->bias_add(out, bias, T, C);
  G->bias_add(go, gb, T, C);
  CHECK_REL(go, out, (size_t)T * C, 1e-6, "bias_add");
  Cpu->bias_bwd(db, dout, T, C);
  G->bias_bwd(gdb, gdo, T, C);
  CHECK_REL(gdb, db, C, 1e-6, "bias_bwd");
  Cpu->add(out, dout, (size_t)T * C);
  G->add(go, gdo, (size_t)T * C);
  CHECK_REL(go, out, (size_t)T * C, 1e-6, "add");
  void *bufs[] = {gg, gu, gdh, gh, gdu, gt, go, gdo, gdt, gtok, gb, gdb};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) G->free(bufs[i]);
  free(g), free(u), free(dh), free(h), free(dg), free(du), free(table), free(out), free(dout);
  free(dtab), free(bias), free(db);
}

/* ---- logprob / entropy ------------------------------------------------------ */

static void test_logprob(int R, int V, int with_dlp, int with_dent) {
  size_t n = (size_t)R * V;
  float *z = randv(n, 6), *lp = malloc(4 * R), *ent = malloc(4 * R), *lse = malloc(4 * R);
  float *dlp = randv(R, 1), *dent = randv(R, 1);
  int *tg = malloc(sizeof(int) * R);
  for (int r = 0; r < R; r++) tg[r] = r % 3 == 2 ? -1 : (int)(urand() * V);
  float *gz = up(z, 4 * n), *glp = G->alloc(4 * R), *gent = G->alloc(4 * R);
  float *glse = G->alloc(4 * R), *gdlp = up(dlp, 4 * R), *gdent = up(dent, 4 * R);
  int *gtg = up(tg, sizeof(int) * R);
  Cpu->logprob_fwd(lp, ent, lse, z, tg, R, V);
  G->logprob_fwd(glp, gent, glse, gz, gtg, R, V);
  CHECK_REL(glp, lp, R, 1e-5, "logprob_fwd logprob");
  CHECK_REL(gent, ent, R, 1e-5, "logprob_fwd entropy");
  CHECK_REL(glse, lse, R, 1e-5, "logprob_fwd lse");
  Cpu->logprob_bwd(z, lse, ent, tg, with_dlp ? dlp : NULL, with_dent ? dent : NULL, R, V);
  G->logprob_bwd(gz, glse, gent, gtg, with_dlp ? gdlp : NULL, with_dent ? gdent : NULL, R, V);
  CHECK_REL(gz, z, n, 1e-5, "logprob_bwd");
  void *bufs[] = {gz, glp, gent, glse, gdlp, gdent, gtg};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) G->free(bufs[i]);
  free(z), free(lp), free(ent), free(lse), free(dlp), free(dent), free(tg);
}

/* ---- optimizer ----------------------------------------------------------- */

static void test_adamw(void) {
  long n = 100003;
  struct adamw o;
  CHECK(adamw_init(&o, n) == 0);
  float *p = randv(n, 1), *gp = up(p, 4 * n), *gm = G->alloc(4 * n), *gv = G->alloc(4 * n);
  uint16_t *gpb = G->alloc(2 * n);
  struct adamw_hparams hp = {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1};
  for (int step = 0; step < 3; step++) {
    float *g = randv(n, 0.5f), *gg = up(g, 4 * n);
    adamw_step(&o, p, g, &hp);
    cuda_adamw_step(gp, gpb, gg, gm, gv, n, o.t, hp.lr, hp.beta1, hp.beta2, hp.eps,
                    hp.weight_decay);
    G->free(gg);
    free(g);
  }
  CHECK_REL(gp, p, n, 1e-6, "adamw p");
  CHECK_REL(gm, o.m, n, 1e-6, "adamw m");
  CHECK_REL(gv, o.v, n, 1e-6, "adamw v");
  uint16_t *pb = malloc(2 * n), *want = malloc(2 * n);
  float *gpf = malloc(4 * n), dummy;
  G->download(pb, gpb, 2 * n);
  G->download(gpf, gp, 4 * n);
  for (long i = 0; i < n; i++) want[i] = bf16_round(gpf[i], &dummy);
  CHECK(!memcmp(pb, want, 2 * n));
  double ss = optim_sumsq(p, n), gs = cuda_sumsq(gp, n);
  CHECK_MSG(fabs(gs - ss) <= 4e-6 * ss, "sumsq %.17g vs %.17g", gs, ss);
  double sp = optim_sumsq(gpf, n);
  CHECK_MSG(fabs(gs - sp) <= 1e-12 * sp, "sumsq of the same values %.17g vs %.17g", gs, sp);
  cuda_scale(gp, n, 0.5f);
  for (long i = 0; i < n; i++) gpf[i] *= 0.5f;
  CHECK_REL(gp, gpf, n, 0.0, "scale");
  G->free(gp), G->free(gm), G->free(gv), G->free(gpb);
  free(p), free(pb), free(want), free(gpf);
  adamw_free(&o);
}

/* ---- sampling -------------------------------------------------------------- */

static void test_sampling(void) {
  enum { R = 8, V = 3001 };
  float *z = randv((size_t)R * V, 5);
  for (int i = 0; i < 40; i++) z[(size_t)3 * V + i * 7] = 6.0f; /* ties at the top */
  z[(size_t)5 * V + 11] = NAN;                                   /* nothing to sample */
  for (int i = 0; i < V; i++) z[(size_t)6 * V + i] = -INFINITY;  /* nothing to sample */
  float *gz = up(z, 4 * (size_t)R * V);
  struct sampling_params ps[] = {{0, 0, 1}, {1, 0, 1}, {0.7, 0, 1}, {1, 50, 1}, {0.9, 0, 0.9},
                                 {1.3, 20, 0.5}, {1, 0, 0}, {1, 1, 1}};
  struct sampler cs;
  struct cuda_sampler gs;
  CHECK(sampler_init(&cs, V) == 0);
  CHECK(cuda_sampler_init(&gs, V, R) == 0);
  /* odd cases sample chosen rows (the rollout's followers share a row): a repeat, new order */
  static const int pick[R] = {3, 3, 0, 7, 1, 2, 4, 6};
  for (size_t c = 0; c < sizeof ps / sizeof ps[0]; c++) {
    double u[R], lp[R];
    int tok[R];
    const int *rows = c % 2 ? pick : NULL;
    for (int r = 0; r < R; r++) u[r] = urand();
    u[0] = 0.999999999;
    cuda_sampler_sample(&gs, gz, rows, R, &ps[c], u, tok, lp);
    for (int r = 0; r < R; r++) {
      double lc = 0;
      int tc = sampler_sample(&cs, z + (size_t)(rows ? rows[r] : r) * V, &ps[c], u[r], &lc);
      CHECK_MSG(tok[r] == tc, "params %zu row %d: token %d vs %d", c, r, tok[r], tc);
      /* both round the lse and the logprob to float (rollout/sampling.h); the device's expf and sum
       * order may move the lse by an ulp or two: 1e-6 (1 + |lp|) is a few float ulps */
      if (tc >= 0) CHECK_MSG(fabs(lp[r] - lc) <= 1e-6 * (1 + fabs(lc)),
                             "params %zu row %d: logprob %.15g vs %.15g", c, r, lp[r], lc);
    }
  }
  sampler_free(&cs);
  cuda_sampler_free(&gs);
  G->free(gz);
  free(z);
}

static int run_all(void) {
  test_matmul();
  test_rmsnorm(7, 96);
  test_rmsnorm(33, 576);
  test_rope(19, 3, 64);
  test_rope(8, 5, 16);
  static const struct attn_case cases[] = {
      {3, 4, 2, 64, {1, 17, 70}, {1, 17, 70}},         /* ragged packed batch, GQA 2:1 */
      {2, 6, 1, 32, {45, 129}, {45, 129}},             /* MQA, several key tiles */
      {3, 2, 2, 128, {1, 1, 3}, {10, 40, 8}},          /* decode / chunked prefill: q < kv */
      {2, 3, 3, 128, {64, 33}, {64, 33}},              /* D at the limit, tile edges */
      {4, 8, 2, 16, {5, 31, 32, 33}, {5, 31, 32, 33}}, /* tiny heads, lengths around 32 */
      {2, 8, 1, 48, {70, 7}, {70, 150}},   /* MQA, D 48, query tiles, chunked prefill q < kv */
      {1, 2, 2, 80, {97}, {97}},           /* D 80: lanes with three and two columns */
      {3, 4, 4, 8, {1, 2, 3}, {1, 2, 3}},  /* D 8, one-token sequences */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_attention(&cases[i]);
  test_decode_paged();
  test_elementwise();
  test_logprob(5, 1000, 1, 1);
  test_logprob(3, 49152, 1, 0);
  test_logprob(4, 777, 0, 1);
  test_adamw();
  test_sampling();
  cuda_gemm_release();
  return TEST_RESULT("test_gpu_ops");
}
#endif

GPU_TEST_MAIN("test_gpu_ops", run_all)
