/* io/test_gguf.c: the GGUF reader against files written by others and by us.
 *
 * 1. tests/ref/gguf_dequant.gguf (written by llama.cpp's `gguf` Python package,
 *    tests/ref/gguf_ref.py): one metadata key of every value type, alignment 64,
 *    and for each dtype (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K)
 *    quantized bytes next to the package's own dequantization: ours must agree
 *    to 1e-6 relative (both compute d*q(+m) in fp32 in the same order).
 * 2. a tiny llama model written here: config from the metadata, tied
 *    embeddings, Q8_0 dequant, and the q/k RoPE row permutation undone exactly
 *    (the loaded q/k equal the Hugging Face matrices bit for bit);
 * 3. the same model as qwen2: q/k kept as stored, q/k/v biases, untied lm_head. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_testutil.h"
#include "io/gguf.h"
#include "model/params.h"
#include "testutil.h"

static void check_metadata(const struct gguf_file *f) {
  char err[512];
  int64_t v;
  double d;
  static const struct { const char *key; int64_t want; } ints[] = {
    {"t.u8", 200}, {"t.i8", -100}, {"t.u16", 60000}, {"t.i16", -30000}, {"t.u32", 4000000000LL},
    {"t.i32", -2000000000LL}, {"t.bool", 1}, {"t.u64", (1LL << 40) + 3}, {"t.i64", -(1LL << 40) - 5},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    CHECK_MSG(!gguf_get_int(f, ints[i].key, &v, err, sizeof err) && v == ints[i].want, "%s", ints[i].key);
  }
  CHECK(!gguf_get_float(f, "t.f32", &d, err, sizeof err) && d == 1.5);
  CHECK(!gguf_get_float(f, "t.f64", &d, err, sizeof err) && d == -2.25);
  struct gguf_str s;
  CHECK(!gguf_get_str(f, "t.str", &s, err, sizeof err) && s.len == strlen("héllo wörld") &&
        !memcmp(s.p, "héllo wörld", s.len));
  CHECK(gguf_get_str(f, "t.u8", &s, err, sizeof err) == -1 && strstr(err, "not a string"));
  CHECK(gguf_get_int(f, "t.missing", &v, err, sizeof err) == -1 && strstr(err, "missing"));
  struct gguf_str *arr = NULL;
  uint64_t n = 0;
  CHECK(!gguf_get_str_array(f, "t.arr_str", &arr, &n, err, sizeof err) && n == 4);
  if (arr && n == 4) {
    const char *want[] = {"a", "", "üñí", "<|im_start|>"};
    for (int i = 0; i < 4; i++)
      CHECK_MSG(arr[i].len == strlen(want[i]) && !memcmp(arr[i].p, want[i], arr[i].len), "arr[%d]", i);
  }
  free(arr);
  int32_t *ia = NULL;
  CHECK(!gguf_get_int_array(f, "t.arr_i32", &ia, &n, err, sizeof err) && n == 3 && ia[0] == 1 &&
        ia[1] == -2 && ia[2] == 3);
  free(ia);
  ia = NULL;
  CHECK(!gguf_get_int_array(f, "t.arr_u8", &ia, &n, err, sizeof err) && n == 3 && ia[2] == 9);
  free(ia);
  CHECK(f->alignment == 64 && f->data_off % 64 == 0);
}

static void check_dequant(const struct gguf_file *f) {
  static const char *types[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                                "Q4_K", "Q5_K", "Q6_K"};
  char err[512], name[64];
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    snprintf(name, sizeof name, "q.%s", types[i]);
    const struct gguf_tensor *q = gguf_find_tensor(f, name);
    snprintf(name, sizeof name, "ref.%s", types[i]);
    const struct gguf_tensor *r = gguf_find_tensor(f, name);
    CHECK_MSG(q && r && gguf_tensor_numel(q) == gguf_tensor_numel(r), "tensors of %s", types[i]);
    if (!q || !r) continue;
    CHECK(!strcmp(gguf_dtype_name(q->type), types[i]));
    size_t n = gguf_tensor_numel(q);
    float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    CHECK(!gguf_tensor_to_f32(f, q, got, err, sizeof err));
    CHECK(!gguf_tensor_to_f32(f, r, want, err, sizeof err));
    int bad = 0;
    double maxd = 0;
    for (size_t j = 0; j < n; j++) {
      if (isinf(want[j])) {
        bad += got[j] != want[j];
        continue;
      }
      double dd = fabs((double)got[j] - want[j]);
      if (dd > maxd) maxd = dd;
      bad += !(dd <= 1e-6 * fmax(1.0, fabs(want[j])));
    }
    printf("dequant %-5s %4zu values, max |diff| %.3g\n", types[i], n, maxd);
    CHECK_MSG(bad == 0, "%s: %d values differ from gguf.quants.dequantize", types[i], bad);
    free(got);
    free(want);
  }
  CHECK(gguf_f16_to_f32(0x7e00) != gguf_f16_to_f32(0x7e00)); /* NaN stays NaN */
  CHECK(gguf_f16_to_f32(0x0001) == ldexpf(1.0f, -24));      /* smallest subnormal */
  CHECK(gguf_f16_to_f32(0x3c00) == 1.0f && gguf_f16_to_f32(0xc000) == -2.0f);
  CHECK(!gguf_dtype_supported(GGML_Q2_K) && gguf_dtype_supported(GGML_Q6_K));
}

static void check_tiny_llama(void) {
  struct gb g;
  struct tiny_llama *m = calloc(1, sizeof *m);
  tiny_llama(&g, m);
  struct gguf_file f;
  char err[512] = "";
  CHECK_MSG(!gguf_open_mem(&f, g.b, g.n, "tiny.gguf", err, sizeof err), "%s", err);
  struct model_config mc;
  struct param_table t;
  float *p = NULL;
  int rc = gguf_model_load(&f, &mc, &t, &p, err, sizeof err);
  CHECK_MSG(rc == 0, "%s", err);
  if (rc == 0) {
    CHECK(mc.vocab_size == TL_VOCAB && mc.dim == TL_DIM && mc.layers == 1 && mc.heads == TL_HEADS &&
          mc.kv_heads == TL_KV && mc.ffn_dim == TL_FFN && mc.max_seq == TL_MAXSEQ &&
          mc.head_dim == TL_HD && mc.tie_embeddings == 1 && mc.qkv_bias == 0);
    CHECK_NEAR(mc.rope_theta, 5000.0, 0);
    CHECK_NEAR(mc.norm_eps, 1e-6, 1e-12);
    const struct param_entry *q = param_table_find(&t, "model.layers.0.self_attn.q_proj.weight");
    const struct param_entry *k = param_table_find(&t, "model.layers.0.self_attn.k_proj.weight");
    const struct param_entry *v = param_table_find(&t, "model.layers.0.self_attn.v_proj.weight");
    const struct param_entry *up = param_table_find(&t, "model.layers.0.mlp.up_proj.weight");
    const struct param_entry *e = param_table_find(&t, "model.embed_tokens.weight");
    CHECK(q && k && v && up && e && !param_table_find(&t, "lm_head.weight"));
    if (q && k && v && up && e) {
      CHECK(!memcmp(p + q->offset, m->q_hf, sizeof m->q_hf));
      CHECK(!memcmp(p + k->offset, m->k_hf, sizeof m->k_hf));
      CHECK(!memcmp(p + v->offset, m->v, sizeof m->v));
      CHECK(!memcmp(p + e->offset, m->emb, sizeof m->emb));
      int bad = 0;
      for (size_t i = 0; i < up->numel; i++) bad += p[up->offset + i] != tl_q8_value(i);
      CHECK(bad == 0);
    }
    param_table_free(&t);
    free(p);
  }
  gguf_close(&f);
  free(g.b);
  free(m);
}

/* qwen2: q/k stored in Hugging Face order (no un-permutation), biases, untied lm_head. */
static void check_tiny_qwen2(void) {
  struct gb g;
  struct tiny_llama *m = calloc(1, sizeof *m);
  tiny_model(&g, m, 1);
  struct gguf_file f;
  char err[512] = "";
  CHECK_MSG(!gguf_open_mem(&f, g.b, g.n, "tiny_qwen2.gguf", err, sizeof err), "%s", err);
  struct model_config mc;
  struct param_table t;
  float *p = NULL;
  int rc = gguf_model_load(&f, &mc, &t, &p, err, sizeof err);
  CHECK_MSG(rc == 0, "%s", err);
  if (rc == 0) {
    CHECK(mc.qkv_bias == 1 && mc.tie_embeddings == 0 && mc.kv_heads == TL_KV);
    static const char *names[] = {"model.layers.0.self_attn.q_proj.weight",
                                  "model.layers.0.self_attn.k_proj.weight",
                                  "model.layers.0.self_attn.q_proj.bias",
                                  "model.layers.0.self_attn.k_proj.bias",
                                  "model.layers.0.self_attn.v_proj.bias", "lm_head.weight"};
    const float *want[] = {m->q_hf, m->k_hf, m->bq, m->bk, m->bv, m->out};
    for (int i = 0; i < 6; i++) {
      const struct param_entry *e = param_table_find(&t, names[i]);
      CHECK_MSG(e && !memcmp(p + e->offset, want[i], e->numel * sizeof(float)), "%s", names[i]);
    }
    param_table_free(&t);
    free(p);
  }
  gguf_close(&f);
  free(g.b);
  free(m);
}

/* Tensors whose data overlap are refused, naming both: the second tensor's data over the
 * first's (the same offset), and over part of it (an aligned offset inside it); tensors
 * that only touch are fine (the tiny model itself). */
static void check_overlap(void) {
  struct gb g;
  struct tiny_llama *m = calloc(1, sizeof *m);
  tiny_llama(&g, m);
  struct gguf_file f;
  char err[512] = "";
  uint64_t offs[2] = {0, 32};  /* token_embd.weight is 1024 bytes at offset 0 */
  for (int i = 0; i < 2; i++) {
    memcpy(g.b + g.off_pos[1], &offs[i], 8);
    err[0] = 0;
    int rc = gguf_open_mem(&f, g.b, g.n, "ov.gguf", err, sizeof err);
    CHECK_MSG(rc == -1, "offset %llu accepted", (unsigned long long)offs[i]);
    if (rc == 0) gguf_close(&f);
    CHECK_MSG(strstr(err, "ov.gguf: tensor 'blk.0.attn_norm.weight'") &&
              strstr(err, "overlaps tensor 'token_embd.weight'"), "%s", err);
  }
  /* blk.0.attn_q.weight (offset 1152) moved onto blk.0.attn_norm.weight (offset 1024, 128
   * bytes): the later tensor named, at the earlier one's place */
  uint64_t at = 1024;
  free(g.b);
  tiny_llama(&g, m);
  memcpy(g.b + g.off_pos[2], &at, 8);
  int rc = gguf_open_mem(&f, g.b, g.n, "ov2.gguf", err, sizeof err);
  CHECK(rc == -1 && strstr(err, "overlaps"));
  if (rc == 0) gguf_close(&f);
  free(g.b);
  free(m);
}

int main(void) {
  const char *src = getenv("RLPT_SOURCE_DIR");
  char path[1024], err[512] = "";
  snprintf(path, sizeof path, "%s/tests/ref/gguf_dequant.gguf", src ? src : "..");
  struct gguf_file f;
  int rc = gguf_open(&f, path, err, sizeof err);
  CHECK_MSG(rc == 0, "%s", err);
  if (rc == 0) {
    CHECK(f.version == 3 && f.n_tensors == 22);
    check_metadata(&f);
    check_dequant(&f);
    gguf_close(&f);
  }
  CHECK(gguf_open(&f, "/nonexistent/x.gguf", err, sizeof err) == -1 &&
        strstr(err, "/nonexistent/x.gguf: cannot open"));
  check_tiny_llama();
  check_tiny_qwen2();
  check_overlap();
  return TEST_RESULT("test_gguf");
}
