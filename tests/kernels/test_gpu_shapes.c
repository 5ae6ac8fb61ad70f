/* kernels/test_gpu_shapes.c: the CUDA ops against the CPU ops (or train/optim.c) at the
 * shapes kernels/test_gpu_ops.c does not reach: one row or one element, rows past the column
 * sums' 128-row chunks (cuda_colsum_accumulate's second pass), widths that are no
 * multiple of a block or a warp, paged decode with one kv head, with as many kv
 * heads as heads, with head size 80 and with one-token blocks, vocabularies of
 * 1, 50 and 32000, AdamW without the bf16 copy, the norm past its 1024 x 256 grid.
 * (The device sampler's shapes, and packed attention at head sizes 8, 48 and 80
 * with q_len < kv_len, are kernels/test_gpu_ops.c's cases.)
 *
 * Tolerances, as kernels/test_gpu_ops.c (max |gpu - cpu| / max |cpu| per tensor): fp32 ops
 * 1e-5 (another summation order, never a lower precision); gathers and copies exact;
 * column sums 1e-5 against a double host sum; AdamW 1e-6; sum of squares 1e-12
 * (double sums).
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
#include "gpu_testutil.h"
#include "kernels/cuda_backend.h"
#include "kernels/cuda_kernels.h"
#include "rollout/kv_cache.h"
#include "testutil.h" /* inside: its counter would be unused in a build without CUDA */
#include "train/optim.h"

static const struct backend_ops *G = &cuda_backend, *Cpu = &cpu_backend;

static void free_dev(void **p, size_t n) {
  for (size_t i = 0; i < n; i++) G->free(p[i]);
}

/* ---- RMSNorm and the column sums -------------------------------------------- */

static void rmsnorm_check(int T, int C) {
  size_t n = (size_t)T * C;
  float *x = gt_randv(n, 2), *w = gt_randv(C, 1), *dout = gt_randv(n, 1), *out = gt_randv(n, 1);
  float *rstd = gt_randv(T, 1), *dx = gt_randv(n, 1), *dw = gt_randv(C, 1);
  float *gx = gt_up(G, x, 4 * n), *gw = gt_up(G, w, 4 * C), *gdo = gt_up(G, dout, 4 * n);
  float *go = gt_up(G, out, 4 * n), *gr = gt_up(G, rstd, 4 * T), *gdx = gt_up(G, dx, 4 * n);
  float *gdw = gt_up(G, dw, 4 * C);
  Cpu->rmsnorm_fwd(out, rstd, x, w, T, C, 1e-6f);
  G->rmsnorm_fwd(go, gr, gx, gw, T, C, 1e-6f);
  GT_CHECK_REL(G, go, out, n, 1e-5, "rmsnorm_fwd T=%d C=%d", T, C);
  GT_CHECK_REL(G, gr, rstd, T, 1e-5, "rmsnorm_fwd rstd T=%d C=%d", T, C);
  Cpu->rmsnorm_bwd(dx, dw, dout, x, w, rstd, T, C);
  G->rmsnorm_bwd(gdx, gdw, gdo, gx, gw, gr, T, C);
  GT_CHECK_REL(G, gdx, dx, n, 1e-5, "rmsnorm_bwd dx T=%d C=%d", T, C);
  GT_CHECK_REL(G, gdw, dw, C, 1e-5, "rmsnorm_bwd dw T=%d C=%d", T, C);
  void *d[] = {gx, gw, gdo, go, gr, gdx, gdw};
  free_dev(d, 7);
  free(x), free(w), free(dout), free(out), free(rstd), free(dx), free(dw);
}

/* out[N] += sum_t a (* b) (* rowscale), every combination, against a double host sum. */
static void colsum_check(int T, int N) {
  size_t n = (size_t)T * N;
  float *a = gt_randv(n, 1), *b = gt_randv(n, 1), *rs = gt_randv(T, 2), *out0 = gt_randv(N, 1);
  float *ga = gt_up(G, a, 4 * n), *gb = gt_up(G, b, 4 * n), *grs = gt_up(G, rs, 4 * T);
  float *gout = G->alloc(4 * (size_t)N), *want = malloc(4 * (size_t)N);
  for (int mode = 0; mode < 4; mode++) {
    int useb = mode & 1, user = mode >> 1;
    for (int c = 0; c < N; c++) {
      double s = out0[c];
      for (int t = 0; t < T; t++)
        s += (double)a[(size_t)t * N + c] * (useb ? b[(size_t)t * N + c] : 1.0f) *
             (user ? rs[t] : 1.0f);
      want[c] = (float)s;
    }
    G->upload(gout, out0, 4 * (size_t)N);
    cuda_colsum_accumulate(gout, ga, useb ? gb : NULL, user ? grs : NULL, T, N);
    GT_CHECK_REL(G, gout, want, N, 1e-5, "colsum T=%d N=%d b=%d rowscale=%d", T, N, useb, user);
  }
  float *db = malloc(4 * (size_t)N);
  memcpy(db, out0, 4 * (size_t)N);
  G->upload(gout, out0, 4 * (size_t)N);
  Cpu->bias_bwd(db, a, T, N);
  G->bias_bwd(gout, ga, T, N);
  GT_CHECK_REL(G, gout, db, N, 1e-5, "bias_bwd T=%d N=%d", T, N);
  void *d[] = {ga, gb, grs, gout};
  free_dev(d, 4);
  free(a), free(b), free(rs), free(out0), free(want), free(db);
}

/* ---- RoPE ---------------------------------------------------------------------- */

static void rope_check(int T, int nh, int D) {
  int maxpos = 300, half = D / 2;
  size_t n = (size_t)T * nh * D, nt = (size_t)maxpos * half;
  float *x = gt_randv(n, 1), *ct = malloc(4 * nt), *st = malloc(4 * nt);
  int *pos = malloc(sizeof(int) * T);
  for (int p = 0; p < maxpos; p++)
    for (int i = 0; i < half; i++) {
      double ang = p * pow(10000.0, -2.0 * i / D);
      ct[(size_t)p * half + i] = (float)cos(ang);
      st[(size_t)p * half + i] = (float)sin(ang);
    }
  for (int t = 0; t < T; t++) pos[t] = t == 0 ? maxpos - 1 : (int)(gt_urand() * maxpos);
  float *gx = gt_up(G, x, 4 * n), *gc = gt_up(G, ct, 4 * nt), *gs = gt_up(G, st, 4 * nt);
  int *gp = gt_up(G, pos, sizeof(int) * T);
  for (int inv = 0; inv < 2; inv++) {
    Cpu->rope(x, pos, ct, st, T, nh, D, inv);
    G->rope(gx, gp, gc, gs, T, nh, D, inv);
    GT_CHECK_REL(G, gx, x, n, 1e-5, "rope T=%d nh=%d D=%d inverse=%d", T, nh, D, inv);
  }
  void *d[] = {gx, gc, gs, gp};
  free_dev(d, 4);
  free(x), free(ct), free(st), free(pos);
}

/* ---- paged decode (packed attention's head sizes 8/48/80: test_gpu_ops) ----- */

/* Rows 0..len-1 of sequence table `tab` of layer `layer`, k or v (kv = 0 | 1), gathered. */
static void paged_gather(float *dst, const float *pool, const struct kv_layout *L, int layer,
                         const int *tab, int len, int kv) {
  size_t row = (size_t)L->kv_heads * L->head_dim, bf = kv_block_floats(L);
  for (int t = 0; t < len; t++) {
    const float *blk = pool + (size_t)tab[t / L->block_size] * bf;
    size_t base = (((size_t)layer * 2 + kv) * L->block_size + t % L->block_size) * row;
    memcpy(dst + (size_t)t * row, blk + base, 4 * row);
  }
}

/* cuda_attention_decode_paged against the CPU attention on the rows gathered. */
static void decode_paged_check(struct kv_layout L, int H, int layer, int nseq, const int *kv_len) {
  int D = L.head_dim, KVH = L.kv_heads, max_kv = 0;
  for (int s = 0; s < nseq; s++) max_kv = kv_len[s] > max_kv ? kv_len[s] : max_kv;
  int max_blocks = (max_kv + L.block_size - 1) / L.block_size, nblocks = nseq * max_blocks + 3;
  size_t bf = kv_block_floats(&L), row = (size_t)KVH * D, nq = (size_t)nseq * H * D;
  float *pool = gt_randv(bf * nblocks, 1), *q = gt_randv(nq, 1);
  int *tables = malloc(sizeof(int) * nseq * max_blocks), *perm = malloc(sizeof(int) * nblocks);
  for (int i = 0; i < nblocks; i++) perm[i] = i;
  for (int i = nblocks - 1; i > 0; i--) { /* distinct blocks, shuffled */
    int j = (int)(gt_urand() * (i + 1)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  memcpy(tables, perm, sizeof(int) * nseq * max_blocks);
  int cu_q[5] = {0}, cu_kv[5] = {0};
  for (int s = 0; s < nseq; s++) cu_q[s + 1] = s + 1, cu_kv[s + 1] = cu_kv[s] + kv_len[s];
  float *k = malloc(4 * cu_kv[nseq] * row), *v = malloc(4 * cu_kv[nseq] * row);
  for (int s = 0; s < nseq; s++) {
    paged_gather(k + cu_kv[s] * row, pool, &L, layer, tables + s * max_blocks, kv_len[s], 0);
    paged_gather(v + cu_kv[s] * row, pool, &L, layer, tables + s * max_blocks, kv_len[s], 1);
  }
  float *out = malloc(4 * nq), *lse = malloc(4 * (size_t)nseq * H);
  float *scratch = malloc(4 * attn_scratch_floats(1, max_kv)), scale = 1.0f / sqrtf((float)D);
  struct attn_batch b = {.nseq = nseq, .cu_q = cu_q, .cu_kv = cu_kv, .max_q = 1, .max_kv = max_kv};
  Cpu->attention_fwd(out, lse, q, k, v, &b, H, KVH, D, scale, scratch);
  float *gpool = gt_up(G, pool, 4 * bf * nblocks), *gq = gt_up(G, q, 4 * nq);
  int *gt = gt_up(G, tables, sizeof(int) * nseq * max_blocks);
  int *gl = gt_up(G, kv_len, sizeof(int) * nseq);
  float *gout = G->alloc(4 * nq), *glse = G->alloc(4 * (size_t)nseq * H);
  cuda_attention_decode_paged(gout, glse, gq, gpool, &L, layer, gt, max_blocks, gl, nseq, H, scale);
  const char *f = "paged decode H=%d KVH=%d D=%d block %d layer %d/%d: %s";
  GT_CHECK_REL(G, gout, out, nq, 1e-5, f, H, KVH, D, L.block_size, layer, L.layers, "out");
  GT_CHECK_REL(G, glse, lse, (size_t)nseq * H, 1e-5, f, H, KVH, D, L.block_size, layer, L.layers,
               "lse");
  void *d[] = {gpool, gq, gt, gl, gout, glse};
  free_dev(d, 6);
  free(pool), free(q), free(tables), free(perm), free(k), free(v), free(out), free(lse);
  free(scratch);
}

static void attention_all(void) {
  static const int len_a[4] = {16, 33, 1, 64}, len_b[3] = {5, 1, 40}, len_c[2] = {31, 32};
  decode_paged_check((struct kv_layout){.layers = 1, .kv_heads = 4, .head_dim = 128, .block_size = 16},
                     4, 0, 4, len_a); /* MHA, D 128 */
  decode_paged_check((struct kv_layout){.layers = 3, .kv_heads = 1, .head_dim = 32, .block_size = 1},
                     8, 2, 3, len_b); /* MQA, 1-token blocks */
  decode_paged_check((struct kv_layout){.layers = 2, .kv_heads = 2, .head_dim = 80, .block_size = 8},
                     6, 1, 2, len_c); /* D 80 */
}

/* ---- SwiGLU, embedding, bias, residual ----------------------------------------- */

static void swiglu_check(size_t n) {
  float *g = gt_randv(n, 6), *u = gt_randv(n, 2), *dh = gt_randv(n, 1);
  float *h = malloc(4 * n), *dg = malloc(4 * n), *du = malloc(4 * n);
  float *gg = gt_up(G, g, 4 * n), *gu = gt_up(G, u, 4 * n), *gdh = gt_up(G, dh, 4 * n);
  float *gh = G->alloc(4 * n), *gdg = G->alloc(4 * n), *gdu = G->alloc(4 * n);
  Cpu->swiglu_fwd(h, g, u, n);
  G->swiglu_fwd(gh, gg, gu, n);
  GT_CHECK_REL(G, gh, h, n, 1e-5, "swiglu_fwd n=%zu", n);
  Cpu->swiglu_bwd(dg, du, NULL, dh, g, u, n);
  G->swiglu_bwd(gdg, gdu, NULL, gdh, gg, gu, n); /* separate dgate and dh this time */
  GT_CHECK_REL(G, gdg, dg, n, 1e-5, "swiglu_bwd dgate n=%zu", n);
  GT_CHECK_REL(G, gdu, du, n, 1e-5, "swiglu_bwd dup n=%zu", n);
  Cpu->add(h, dh, n);
  G->add(gh, gdh, n);
  GT_CHECK_REL(G, gh, h, n, 1e-6, "add n=%zu", n);
  void *d[] = {gg, gu, gdh, gh, gdg, gdu};
  free_dev(d, 6);
  free(g), free(u), free(dh), free(h), free(dg), free(du);
}

static void embed_bias_check(int T, int C, int V) {
  size_t nt = (size_t)T * C, nv = (size_t)V * C;
  int *tok = malloc(sizeof(int) * T);
  for (int t = 0; t < T; t++) tok[t] = t % 5 == 4 ? V - 1 : (int)(gt_urand() * V);
  float *table = gt_randv(nv, 1), *out = malloc(4 * nt), *dout = gt_randv(nt, 1);
  float *dtab = gt_randv(nv, 1), *bias = gt_randv(C, 1);
  float *gtab = gt_up(G, table, 4 * nv), *gout = G->alloc(4 * nt), *gdo = gt_up(G, dout, 4 * nt);
  float *gdt = gt_up(G, dtab, 4 * nv), *gb = gt_up(G, bias, 4 * C);
  int *gtok = gt_up(G, tok, sizeof(int) * T);
  Cpu->embed_fwd(out, tok, table, T, C);
  G->embed_fwd(gout, gtok, gtab, T, C);
  GT_CHECK_REL(G, gout, out, nt, 0.0, "embed_fwd T=%d C=%d V=%d", T, C, V);
  Cpu->embed_bwd(dtab, tok, dout, T, C);
  G->embed_bwd(gdt, gtok, gdo, T, C);
  GT_CHECK_REL(G, gdt, dtab, nv, 1e-6, "embed_bwd T=%d C=%d V=%d", T, C, V);
  Cpu->bias_add(out, bias, T, C);
  G->bias_add(gout, gb, T, C);
  GT_CHECK_REL(G, gout, out, nt, 1e-6, "bias_add T=%d N=%d", T, C);
  void *d[] = {gtab, gout, gdo, gdt, gb, gtok};
  free_dev(d, 6);
  free(tok), free(table), free(out), free(dout), free(dtab), free(bias);
}

/* ---- logprob / entropy ------------------------------------------------------------ */

static void logprob_check(int R, int V) {
  size_t n = (size_t)R * V;
  float *z = gt_randv(n, 8), *lp = malloc(4 * R), *ent = malloc(4 * R), *lse = malloc(4 * R);
  float *dlp = gt_randv(R, 1), *dent = gt_randv(R, 1);
  int *tg = malloc(sizeof(int) * R);
  for (int r = 0; r < R; r++) tg[r] = r % 4 == 1 ? -1 : r % 4 == 2 ? V - 1 : (int)(gt_urand() * V);
  float *gz = gt_up(G, z, 4 * n), *glp = G->alloc(4 * R), *gent = G->alloc(4 * R);
  float *glse = G->alloc(4 * R), *gdlp = gt_up(G, dlp, 4 * R), *gdent = gt_up(G, dent, 4 * R);
  int *gtg = gt_up(G, tg, sizeof(int) * R);
  Cpu->logprob_fwd(lp, ent, lse, z, tg, R, V);
  G->logprob_fwd(glp, gent, glse, gz, gtg, R, V);
  GT_CHECK_REL(G, glp, lp, R, 1e-5, "logprob_fwd logprob R=%d V=%d", R, V);
  GT_CHECK_REL(G, glse, lse, R, 1e-5, "logprob_fwd lse R=%d V=%d", R, V);
  GT_CHECK_REL(G, gent, ent, R, 1e-5, "logprob_fwd entropy R=%d V=%d", R, V); /* V 1: both 0 */
  Cpu->logprob_bwd(z, lse, ent, tg, dlp, dent, R, V);
  G->logprob_bwd(gz, glse, gent, gtg, gdlp, gdent, R, V);
  GT_CHECK_REL(G, gz, z, n, 1e-5, "logprob_bwd R=%d V=%d", R, V);
  void *d[] = {gz, glp, gent, glse, gdlp, gdent, gtg};
  free_dev(d, 7);
  free(z), free(lp), free(ent), free(lse), free(dlp), free(dent), free(tg);
}

/* ---- optimizer: AdamW without the bf16 copy, the norm, the clip scale ---------------- */

static void adamw_check(long n) {
  struct adamw o;
  CHECK(adamw_init(&o, n) == 0);
  float *p = gt_randv(n, 1), *gp = gt_up(G, p, 4 * n), *gm = G->alloc(4 * n), *gv = G->alloc(4 * n);
  for (int step = 0; step < 4; step++) {
    struct adamw_hparams hp = {.lr = 1e-3 * (step + 1), .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-6,
                               .weight_decay = step == 2 ? 0.0 : 0.01};
    float *g = gt_randv(n, step == 3 ? 1e-4f : 1.0f), *gg = gt_up(G, g, 4 * n);
    adamw_step(&o, p, g, &hp);
    cuda_adamw_step(gp, NULL, gg, gm, gv, n, o.t, hp.lr, hp.beta1, hp.beta2, hp.eps,
                    hp.weight_decay);
    G->free(gg);
    free(g);
  }
  GT_CHECK_REL(G, gp, p, n, 1e-6, "adamw p n=%ld", n);
  GT_CHECK_REL(G, gm, o.m, n, 1e-6, "adamw m n=%ld", n);
  GT_CHECK_REL(G, gv, o.v, n, 1e-6, "adamw v n=%ld", n);
  float *h = malloc(4 * n);
  G->download(h, gp, 4 * n);
  double ss = optim_sumsq(h, n), gs = cuda_sumsq(gp, n);
  CHECK_MSG(fabs(gs - ss) <= 1e-12 * ss, "sumsq n=%ld: %.17g vs %.17g", n, gs, ss);
  cuda_scale(gp, n, 0.37f);
  for (long i = 0; i < n; i++) h[i] *= 0.37f;
  GT_CHECK_REL(G, gp, h, n, 0.0, "scale n=%ld", n);
  G->free(gp), G->free(gm), G->free(gv);
  free(p), free(h);
  adamw_free(&o);
}

static int run_all(void) {
  rmsnorm_check(1, 64);
  rmsnorm_check(300, 100);
  rmsnorm_check(3, 2048);
  colsum_check(1, 1);
  colsum_check(129, 130);
  colsum_check(385, 7);
  rope_check(1, 1, 2);
  rope_check(37, 16, 128);
  attention_all();
  swiglu_check(1);
  swiglu_check(31);
  swiglu_check(65537);
  embed_bias_check(1, 1, 1);
  embed_bias_check(300, 130, 7);
  embed_bias_check(17, 576, 5000);
  logprob_check(3, 1);
  logprob_check(17, 50);
  logprob_check(2, 32000);
  adamw_check(1);
  adamw_check(257);
  adamw_check(1024L * 256 + 3);
  cuda_gemm_release();
  return TEST_RESULT("test_gpu_shapes");
}
#endif

GPU_TEST_MAIN("test_gpu_shapes", run_all)
