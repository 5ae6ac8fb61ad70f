/* model/test_model_golden.c: the C model against the float64 PyTorch reference.
 *
 * tests/ref/model_ref.py wrote golden_*.h5 (weights, packed tokens, loss
 * weights, logprobs, entropies, values and every parameter gradient of
 * L = sum w_t logprob_t + c sum entropy_t (+ sum u_t value_t)). We load the
 * weights through io/model_h5 (so the file layout is tested too), run forward
 * and backward, and compare. The logits are computed in chunks of the default
 * size and of 5 rows, so chunk boundaries fall inside and across sequences.
 *
 * Tolerances (fp32 against float64): logprob, entropy, value within 1e-4
 * absolute; each gradient tensor's max abs error within 1e-3 x that tensor's
 * max magnitude. The KV-cache path (model_forward_kv) must reproduce the
 * trainer's logprobs within 1e-5.
 *
 * golden_lora.h5 (tests/ref/lora_ref.py: PEFT's LoRA formula on all seven projections,
 * rank 4, alpha 8, random B). One adapter alone (/layer): y, dx, dA and dB within 1e-5 x
 * each tensor's max magnitude. The whole model: logprob and entropy within 1e-5 x max(1,
 * |ref|); each adapter's gradient within 1e-4 x its max magnitude (measured 2.2e-5 at
 * worst, layer 0's k_proj: the fp32 round-off of the attention backward upstream of it,
 * which the base tensors' gradients show too, 8.5e-6); the frozen base linears' weight
 * gradients exactly zero (not computed); the KV-cache path as above. */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "io/model_h5.h"
#include "model/lora.h"
#include "model/model.h"
#include "testutil.h"

#define TOL_OUT 1e-4
#define TOL_GRAD_REL 1e-3
#define TOL_LORA_LAYER 1e-5
#define TOL_LORA_REL 1e-4

/* The file under test has LoRA adapters (golden_lora.h5). */
static int g_lora;

/* A base weight whose gradient a LoRA model does not compute (the base is frozen). */
static int frozen_linear(enum param_kind k) {
  return k == P_WQ || k == P_BQ || k == P_WK || k == P_BK || k == P_WV || k == P_BV ||
         k == P_WO || k == P_WGATE || k == P_WUP || k == P_WDOWN || k == P_LM_HEAD;
}

/* A whole 1-D dataset (or scalar) as doubles / ints; n receives the length. */
static void *read_1d(hid_t f, const char *name, hid_t memtype, size_t elsize, int *n) {
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  if (ds < 0) return NULL;
  hid_t sp = H5Dget_space(ds);
  hssize_t count = H5Sget_simple_extent_npoints(sp);
  void *buf = calloc((size_t)count, elsize);
  H5Dread(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  H5Sclose(sp);
  H5Dclose(ds);
  *n = (int)count;
  return buf;
}

struct golden {
  int T, nseq, *tokens, *cu;
  double *w, *u, c, *logprob, *entropy, *value; /* value NULL without value head */
  float *grads;                                 /* table layout */
};

static int golden_load(struct golden *g, const char *path, const struct param_table *t) {
  memset(g, 0, sizeof *g);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return -1;
  int n, ncu;
  g->tokens = read_1d(f, "tokens", H5T_NATIVE_INT, sizeof(int), &g->T);
  g->cu = read_1d(f, "cu_seqlens", H5T_NATIVE_INT, sizeof(int), &ncu);
  g->nseq = ncu - 1;
  g->w = read_1d(f, "w", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  g->u = read_1d(f, "u", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  double *c = read_1d(f, "c", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  g->c = c ? *c : 0.0;
  free(c);
  g->logprob = read_1d(f, "logprob", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  g->entropy = read_1d(f, "entropy", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  if (H5Lexists(f, "value", H5P_DEFAULT) > 0)
    g->value = read_1d(f, "value", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  g->grads = calloc(t->total, sizeof(float));
  int rc = h5_params_read(f, "grad", t, g->grads, path);
  H5Fclose(f);
  return rc || !g->tokens || !g->cu || !g->w || !g->u || !g->logprob || !g->entropy ? -1 : 0;
}

static void golden_free(struct golden *g) {
  free(g->tokens); free(g->cu); free(g->w); free(g->u);
  free(g->logprob); free(g->entropy); free(g->value); free(g->grads);
}

/* Forward + backward with logit chunks of `chunk` rows; compares everything. */
static void check_run(struct model *m, const struct golden *g, int chunk, const char *label) {
  int T = g->T;
  float *lp = calloc(T, sizeof(float)), *ent = calloc(T, sizeof(float));
  float *val = calloc(T, sizeof(float)), *dlp = calloc(T, sizeof(float));
  float *dent = calloc(T, sizeof(float)), *dval = calloc(T, sizeof(float));
  m->logit_chunk = chunk;
  CHECK(model_forward(m, g->tokens, g->cu, g->nseq, lp, ent, val) == 0);
  double elp = 0, eent = 0, eval = 0;
  for (int t = 0; t < T; t++) {
    double slp = g_lora ? fmax(1.0, fabs(g->logprob[t])) : 1.0;
    double sent = g_lora ? fmax(1.0, fabs(g->entropy[t])) : 1.0;
    elp = fmax(elp, fabs(lp[t] - g->logprob[t]) / slp);
    eent = fmax(eent, fabs(ent[t] - g->entropy[t]) / sent);
    if (g->value) eval = fmax(eval, fabs(val[t] - g->value[t]));
    dlp[t] = (float)g->w[t];
    dent[t] = (float)g->c;
    dval[t] = (float)g->u[t];
  }
  printf("  %s chunk %d: max err logprob %.2e entropy %.2e value %.2e\n", label, chunk, elp, eent,
         eval);
  CHECK_NEAR(elp, 0.0, g_lora ? TOL_LORA_REL : TOL_OUT);
  CHECK_NEAR(eent, 0.0, g_lora ? TOL_LORA_REL : TOL_OUT);
  CHECK_NEAR(eval, 0.0, TOL_OUT);
  model_zero_grad(m);
  model_backward(m, dlp, dent, g->value ? dval : NULL);
  double worst = 0, worst_lora = 0;
  for (int i = 0; i < m->table.n; i++) {
    const struct param_entry *e = &m->table.e[i];
    double err = 0, mag = 0;
    int adapter = e->kind == P_LORA_A || e->kind == P_LORA_B;
    if (g_lora && frozen_linear(e->kind)) {
      for (size_t j = 0; j < e->numel; j++) err = fmax(err, fabs(m->grads[e->offset + j]));
      CHECK_MSG(err == 0, "%s grad %s of a frozen base weight: %.3g, not zero", label, e->name, err);
      continue;
    }
    for (size_t j = 0; j < e->numel; j++) {
      err = fmax(err, fabs(m->grads[e->offset + j] - g->grads[e->offset + j]));
      mag = fmax(mag, fabs(g->grads[e->offset + j]));
    }

    if (adapter) worst_lora = fmax(worst_lora, err / fmax(mag, 1e-30));
    else worst = fmax(worst, err / fmax(mag, 1e-30));
    double tol = adapter ? TOL_LORA_REL : TOL_GRAD_REL;
    CHECK_MSG(mag > 0 && err <= tol * mag, "%s grad %s: max err %.3g vs max |g| %.3g", label,
              e->name, err, mag);
  }
  printf("  %s chunk %d: worst gradient error / magnitude %.2e (LoRA adapters %.2e)\n", label,
         chunk, worst, worst_lora);
  free(lp); free(ent); free(val); free(dlp); free(dent); free(dval);
}

/* A contiguous per-sequence cache for the KV-cache path: [layer][slot][max_seq][kv rows]. */
struct toy_cache {
  int kvd, max_seq, nslot;
  const int *slot_of;   /* batch sequence -> cache slot */
  float *k, *v, *kctx, *vctx;
};

static int toy_exchange(void *ctx, int layer, const struct attn_batch *b, const float *k_new,
                        const float *v_new, const float **k_ctx, const float **v_ctx) {
  struct toy_cache *c = ctx;
  for (int s = 0; s < b->nseq; s++) {
    int n = b->cu_q[s + 1] - b->cu_q[s], len = b->cu_kv[s + 1] - b->cu_kv[s];
    size_t base = ((size_t)layer * c->nslot + c->slot_of[s]) * c->max_seq * c->kvd, row = c->kvd;
    memcpy(c->k + base + (size_t)(len - n) * row, k_new + (size_t)b->cu_q[s] * row,
           sizeof(float) * n * row);
    memcpy(c->v + base + (size_t)(len - n) * row, v_new + (size_t)b->cu_q[s] * row,
           sizeof(float) * n * row);
    memcpy(c->kctx + (size_t)b->cu_kv[s] * row, c->k + base, sizeof(float) * len * row);
    memcpy(c->vctx + (size_t)b->cu_kv[s] * row, c->v + base, sizeof(float) * len * row);
  }
  *k_ctx = c->kctx;
  *v_ctx = c->vctx;
  return 0;
}

/* Feeds the golden sequences through model_forward_kv (a 3-token prefill, then
 * steps of 1 or 2 tokens) and compares the next-token logprob at every position
 * with model_forward's: the rollout engine and the trainer must agree within
 * 1e-5 x max(1, |logprob|) (fp32 GEMMs of different shapes sum in different
 * orders; config A has logprobs near -20). */
static void check_kv_path(struct model *m, const struct golden *g, const char *label) {
  struct toy_cache c = {.kvd = m->cfg.kv_heads * m->cfg.head_dim, .max_seq = m->cfg.max_seq,
                       .nslot = g->nseq};
  size_t cap = (size_t)m->cfg.layers * g->nseq * c.max_seq * c.kvd;
  c.k = calloc(cap, sizeof(float));
  c.v = calloc(cap, sizeof(float));
  c.kctx = calloc((size_t)g->nseq * c.max_seq * c.kvd, sizeof(float));
  c.vctx = calloc((size_t)g->nseq * c.max_seq * c.kvd, sizeof(float));
  float *lp = calloc(g->T, sizeof(float)), *ent = calloc(g->T, sizeof(float));
  float *logits = calloc((size_t)g->T * m->cfg.vocab_size, sizeof(float));
  CHECK(model_forward(m, g->tokens, g->cu, g->nseq, lp, ent, NULL) == 0);
  int done[8] = {0}, slot[8], pos0[8], cu_new[9], tok[64], V = m->cfg.vocab_size;
  struct model_kv_io io = {.ctx = &c, .exchange = toy_exchange};
  c.slot_of = slot;
  double worst = 0;
  for (int step = 0;; step++) {
    int nb = 0, nt = 0;
    cu_new[0] = 0;
    for (int s = 0; s < g->nseq; s++) {
      int len = g->cu[s + 1] - g->cu[s], n = step == 0 ? 3 : 1 + (s == 1 && step % 2);
      if (done[s] >= len) continue;
      n = n < len - done[s] ? n : len - done[s];
      for (int i = 0; i < n; i++) tok[nt + i] = g->tokens[g->cu[s] + done[s] + i];
      slot[nb] = s;
      pos0[nb] = done[s];
      nt += n;
      cu_new[++nb] = nt;
    }
    if (!nb) break;
    CHECK(model_forward_kv(m, tok, cu_new, pos0, nb, &io, 1, logits) == 0);
    for (int b = 0; b < nb; b++)
      for (int r = cu_new[b]; r < cu_new[b + 1]; r++) {
        int s = slot[b], t = g->cu[s] + pos0[b] + r - cu_new[b];
        if (t + 1 >= g->cu[s + 1]) continue; /* the last token has no target */
        const float *z = logits + (size_t)r * V;
        double mx = z[0], sum = 0;
        for (int j = 1; j < V; j++) mx = fmax(mx, z[j]);
        for (int j = 0; j < V; j++) sum += exp(z[j] - mx);
        worst = fmax(worst, fabs(z[g->tokens[t + 1]] - mx - log(sum) - lp[t]) / fmax(1.0, fabs(lp[t])));
      }
    for (int b = 0; b < nb; b++) done[slot[b]] += cu_new[b + 1] - cu_new[b];
  }
  printf("  %s KV-cache path: max |logprob - trainer logprob| / max(1, |logprob|) %.2e\n", label,
         worst);
  CHECK_NEAR(worst, 0.0, 1e-5);
  free(c.k); free(c.v); free(c.kctx); free(c.vctx); free(lp); free(ent); free(logits);
}

/* Skipping the lm_head (no logprob/entropy wanted) changes no number: a
 * value-only forward + value-only backward gives bitwise the gradients of the
 * full forward + value-only backward, and a backward that wants logit
 * gradients after a value-only forward matches the full run bitwise too. */
static void check_head_skip(struct model *m, const struct golden *g, const char *label) {
  int T = g->T;
  size_t n = m->table.total;
  float *lp = calloc(T, sizeof(float)), *ent = calloc(T, sizeof(float));
  float *val = calloc(T, sizeof(float)), *val2 = calloc(T, sizeof(float));
  float *dlp = calloc(T, sizeof(float)), *dent = calloc(T, sizeof(float));
  float *dval = calloc(T, sizeof(float)), *ref = calloc(n, sizeof(float));
  for (int t = 0; t < T; t++) dlp[t] = (float)g->w[t], dent[t] = (float)g->c, dval[t] = (float)g->u[t];
  const float *dv = g->value ? dval : NULL;
  for (int pass = 0; pass < 2; pass++) {
    const float *gl = pass ? dlp : NULL, *ge = pass ? dent : NULL;
    CHECK(model_forward(m, g->tokens, g->cu, g->nseq, lp, ent, val) == 0);
    model_zero_grad(m);
    model_backward(m, gl, ge, dv);
    memcpy(ref, m->grads, sizeof(float) * n);
    memset(m->lse_out, 0, sizeof(float) * T); /* stale statistics must not be reused */
    memset(m->ent_out, 0, sizeof(float) * T);
    CHECK(model_forward(m, g->tokens, g->cu, g->nseq, NULL, NULL, val2) == 0);
    model_zero_grad(m);
    model_backward(m, gl, ge, dv);
    CHECK_MSG(memcmp(ref, m->grads, sizeof(float) * n) == 0, "%s: head-skip pass %d", label, pass);
    CHECK(!g->value || memcmp(val, val2, sizeof(float) * T) == 0);
  }
  free(lp); free(ent); free(val); free(val2); free(dlp); free(dent); free(dval); free(ref);
}

static void check_file(const char *src, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/ref/golden_%s.h5", src, name);
  struct model_config mc;
  int rc = model_h5_read_config(path, &mc);
  CHECK(rc == 0);
  if (rc) return;
  struct model m;
  CHECK(model_create(&m, &mc, 64, &cpu_backend) == 0);
  CHECK(model_h5_read_params(path, &m.table, m.params) == 0);
  struct golden g;
  CHECK(golden_load(&g, path, &m.table) == 0);
  CHECK(g.nseq >= 2 && g.T <= 64);
  CHECK((g.value != NULL) == (mc.value_head != 0));
  check_run(&m, &g, MODEL_LOGIT_CHUNK, name);
  check_run(&m, &g, 5, name);
  check_kv_path(&m, &g, name);
  check_head_skip(&m, &g, name);
  golden_free(&g);
  model_free(&m);
}

/* max |a - ref| / max |ref| over n values. */
static double rel_err(const float *a, const double *ref, int n) {
  double err = 0, mag = 0;
  for (int i = 0; i < n; i++) err = fmax(err, fabs(a[i] - ref[i])), mag = fmax(mag, fabs(ref[i]));
  return err / fmax(mag, 1e-30);
}

/* One adapter alone (model/lora.h) against /layer of golden_lora.h5: y = x W^T + s (x A^T)
 * B^T and the gradients of sum(dy * y). */
static void check_lora_layer(const char *path) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  CHECK(f >= 0);
  if (f < 0) return;
  int nx, nw, na, nb, ndy, n;
  float *x = read_1d(f, "layer/x", H5T_NATIVE_FLOAT, sizeof(float), &nx);
  float *w = read_1d(f, "layer/W", H5T_NATIVE_FLOAT, sizeof(float), &nw);
  float *A = read_1d(f, "layer/A", H5T_NATIVE_FLOAT, sizeof(float), &na);
  float *B = read_1d(f, "layer/B", H5T_NATIVE_FLOAT, sizeof(float), &nb);
  float *dy = read_1d(f, "layer/dy", H5T_NATIVE_FLOAT, sizeof(float), &ndy);
  double *y_ref = read_1d(f, "layer/y", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  double *dx_ref = read_1d(f, "layer/dx", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  double *dA_ref = read_1d(f, "layer/dA", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  double *dB_ref = read_1d(f, "layer/dB", H5T_NATIVE_DOUBLE, sizeof(double), &n);
  double alpha = 0;
  hid_t g = H5Gopen2(f, "layer", H5P_DEFAULT), at = H5Aopen(g, "alpha", H5P_DEFAULT);
  H5Aread(at, H5T_NATIVE_DOUBLE, &alpha);
  H5Aclose(at); H5Gclose(g);
  /* shapes: x [T, in], W [out, in], A [r, in], B [out, r] */
  hid_t ds = H5Dopen2(f, "layer/x", H5P_DEFAULT), sp = H5Dget_space(ds);
  hsize_t dims[2] = {0, 1};
  H5Sget_simple_extent_dims(sp, dims, NULL);
  H5Sclose(sp); H5Dclose(ds);
  int in = (int)dims[1], T = (int)dims[0], out = nw / in, r = na / in;
  H5Fclose(f);
  CHECK(T * in == nx && out * r == nb && T * out == ndy && y_ref && dx_ref && dA_ref && dB_ref);
  float *y = calloc((size_t)T * out, sizeof(float)), *dx = calloc((size_t)T * in, sizeof(float));
  float *dA = calloc((size_t)na, sizeof(float)), *dB = calloc((size_t)nb, sizeof(float));
  float *u = calloc((size_t)T * r, sizeof(float)), *du = calloc((size_t)T * r, sizeof(float));
  struct lora_adapter a = {.A = A, .B = B, .dA = dA, .dB = dB, .r = r, .in = in, .out = out,
                           .scale = (float)(alpha / r)};
  cpu_backend.matmul(0, 1, T, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  lora_fwd(&cpu_backend, 1, &a, y, x, T, u);
  cpu_backend.matmul(0, 0, T, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
  lora_bwd_dx(&cpu_backend, &a, dx, dy, T, du);
  lora_bwd_dw(&cpu_backend, &a, dy, x, du, T, u);
  double ey = rel_err(y, y_ref, T * out), edx = rel_err(dx, dx_ref, T * in);
  double eA = rel_err(dA, dA_ref, na), eB = rel_err(dB, dB_ref, nb);
  printf("  lora layer: max err / max |ref|: y %.2e dx %.2e dA %.2e dB %.2e\n", ey, edx, eA, eB);
  CHECK(ey <= TOL_LORA_LAYER && edx <= TOL_LORA_LAYER && eA <= TOL_LORA_LAYER &&
        eB <= TOL_LORA_LAYER);
  free(x); free(w); free(A); free(B); free(dy); free(y_ref); free(dx_ref); free(dA_ref);
  free(dB_ref); free(y); free(dx); free(dA); free(dB); free(u); free(du);
}

/* model_h5 write -> read is exact; a file of another shape is refused with 2. */
static void check_roundtrip(void) {
  struct model_config mc = {.vocab_size = 20, .dim = 8, .layers = 1, .heads = 2, .kv_heads = 1,
                            .ffn_dim = 12, .max_seq = 8, .rope_theta = 1e4, .norm_eps = 1e-5,
                            .init_std = 0.5, .tie_embeddings = 0, .qkv_bias = 1, .value_head = 1};
  mc.head_dim = 4;
  struct param_table t;
  param_table_build(&t, &mc);
  float *a = malloc(sizeof(float) * t.total), *b = calloc(t.total, sizeof(float));
  model_params_init(&t, a, mc.init_std, 9);
  char path[] = "model_h5_roundtrip.h5";
  CHECK(model_h5_write(path, &mc, a) == 0);
  struct model_config back;
  CHECK(model_h5_read_config(path, &back) == 0);
  CHECK(back.dim == mc.dim && back.kv_heads == mc.kv_heads && back.qkv_bias && back.value_head &&
        !back.tie_embeddings && back.rope_theta == mc.rope_theta);
  CHECK(model_h5_read_params(path, &t, b) == 0);
  CHECK(memcmp(a, b, sizeof(float) * t.total) == 0);
  /* a model of another width must be refused (shape mismatch), not misread */
  struct model_config wide = mc;
  wide.ffn_dim = 16;
  struct param_table tw;
  param_table_build(&tw, &wide);
  float *c = calloc(tw.total, sizeof(float));
  fprintf(stderr, "(four expected errors follow)\n");
  CHECK(model_h5_read_params(path, &tw, c) == 2);
  CHECK(model_h5_read_config("no_such_model.h5", &back) == 2);
  /* a tied model's file lacks lm_head.weight: refused as a missing dataset */
  struct model_config tied = mc;
  tied.tie_embeddings = 1;
  struct param_table tt;
  param_table_build(&tt, &tied);
  CHECK(model_h5_write(path, &tied, a) == 0);
  CHECK(model_h5_read_params(path, &t, b) == 2);
  /* /meta model_config that is not JSON */
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(f, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t str = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  int version = MODEL_H5_FORMAT_VERSION;
  H5Tset_size(str, 6);
  hid_t at = H5Acreate2(g, "model_config", str, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(at, str, "{bad:");
  H5Aclose(at);
  at = H5Acreate2(g, "format_version", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(at, H5T_NATIVE_INT, &version);
  H5Aclose(at);
  H5Sclose(sp); H5Tclose(str); H5Gclose(g); H5Fclose(f);
  CHECK(model_h5_read_config(path, &back) == 2);
  param_table_free(&tt);
  remove(path);
  free(a); free(b); free(c);
  param_table_free(&t);
  param_table_free(&tw);
}

int main(void) {
  check_roundtrip();
  const char *src = getenv("RLPT_SOURCE_DIR");
  if (!src) src = ".";
  check_file(src, "mha_tied");
  check_file(src, "gqa_bias_value");
  g_lora = 1;
  check_file(src, "lora");
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/ref/golden_lora.h5", src);
  check_lora_layer(path);
  return TEST_RESULT("test_model_golden");
}
