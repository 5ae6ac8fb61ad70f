/* io/test_safetensors.c: Hugging Face directories (io/safetensors.h).
 *   round trip HDF5 -> safetensors (F32) -> HDF5 bit-identical; bf16 export
 *   within bf16 rounding (relative 2^-8, and exactly RNE); a 2-shard directory
 *   with an index; config.json both ways (llama / qwen2); clear errors for bad
 *   configs, missing / misshapen / unexpected tensors and bad indexes; and the
 *   golden directory tests/ref/st_golden written by the reference `safetensors`
 *   library (F16 and BF16 tensors) read exactly (tests/ref/st_ref.py). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/model_h5.h"
#include "io/safetensors.h"
#include "model/params.h"
#include "testutil.h"

static struct model_config tiny_config(int qkv_bias, int tied) {
  struct model_config mc = {.vocab_size = 32, .dim = 16, .layers = 2, .heads = 4, .kv_heads = 2,
                            .ffn_dim = 24, .max_seq = 64, .head_dim = 4, .rope_theta = 10000.0,
                            .norm_eps = 1e-5, .init_std = 0.02, .tie_embeddings = tied,
                            .qkv_bias = qkv_bias};
  return mc;
}

/* Values spread over many binades, so rounding is exercised. */
static float *random_params(size_t n, uint64_t seed) {
  float *p = malloc(n * sizeof *p);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(seed >> 11) / 9007199254740992.0;
    p[i] = (float)((u - 0.5) * pow(2.0, (double)(int)(seed >> 3 & 15) - 8));
  }
  return p;
}

static int same_config(const struct model_config *a, const struct model_config *b) {
  return a->vocab_size == b->vocab_size && a->dim == b->dim && a->layers == b->layers &&
         a->heads == b->heads && a->kv_heads == b->kv_heads && a->ffn_dim == b->ffn_dim &&
         a->max_seq == b->max_seq && a->rope_theta == b->rope_theta && a->norm_eps == b->norm_eps &&
         a->tie_embeddings == b->tie_embeddings && a->qkv_bias == b->qkv_bias &&
         a->value_head == b->value_head;
}

static char tmp_root[64];

static void path_in(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", tmp_root, name);
}

/* HDF5 -> F32 directory -> HDF5: every float bit-identical. */
static void test_round_trip(int qkv_bias, int tied) {
  struct model_config mc = tiny_config(qkv_bias, tied), back;
  struct param_table t, t2;
  param_table_build(&t, &mc);
  float *p = random_params(t.total, 42 + (uint64_t)qkv_bias), *q = NULL;
  char h5a[256], h5b[256], dir[256], err[1024] = "";
  path_in(h5a, sizeof h5a, "a.h5");
  path_in(h5b, sizeof h5b, "b.h5");
  path_in(dir, sizeof dir, qkv_bias ? "rt_qwen" : "rt_llama");
  CHECK(model_h5_write(h5a, &mc, p) == 0);
  struct model_config mh;
  CHECK(model_h5_read_config(h5a, &mh) == 0);
  float *ph = calloc(t.total, sizeof *ph);
  CHECK(model_h5_read_params(h5a, &t, ph) == 0);
  struct st_save_opts o = {.dtype = ST_F32, .bos_id = 1, .eos_id = 2};
  CHECK_MSG(st_dir_save(dir, &mh, ph, &o, NULL, err, sizeof err) == 0, "%s", err);
  CHECK_MSG(st_dir_load(dir, &back, &t2, &q, err, sizeof err) == 0, "%s", err);
  CHECK(same_config(&mc, &back));
  CHECK(q && t2.total == t.total && !memcmp(q, p, t.total * sizeof *p));
  if (q) {
    CHECK(model_h5_write(h5b, &back, q) == 0);
    float *r = calloc(t.total, sizeof *r);
    CHECK(model_h5_read_params(h5b, &t, r) == 0 && !memcmp(r, p, t.total * sizeof *p));
    free(r);
  }
  char cfg[300];
  snprintf(cfg, sizeof cfg, "%s/config.json", dir);
  char *text = hf_read_text(cfg, NULL);
  CHECK(text && strstr(text, qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM"));
  CHECK(text && strstr(text, "\"torch_dtype\":\t\"float32\""));
  free(text);
  free(p), free(q), free(ph);
  param_table_free(&t);
  param_table_free(&t2);
}

/* bf16: exactly round-to-nearest-even of each float, so within 2^-8 relative. */
static void test_bf16(void) {
  CHECK(st_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);           /* tie -> even (down) */
  CHECK(st_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);       /* tie -> even (up) */
  CHECK(st_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);  /* above the tie -> up */
  CHECK(st_f32_to_bf16(INFINITY) == 0x7f80 && st_f32_to_bf16(-INFINITY) == 0xff80);
  CHECK((st_f32_to_bf16(NAN) & 0x7fff) > 0x7f80);             /* still a NaN */
  CHECK(st_f32_to_bf16(3.4e38f) == 0x7f80);                   /* rounds up to inf, as torch does */
  struct model_config mc = tiny_config(1, 0), back;
  struct param_table t, t2;
  param_table_build(&t, &mc);
  float *p = random_params(t.total, 7), *q = NULL;
  char dir[256], err[1024] = "";
  path_in(dir, sizeof dir, "bf16");
  struct st_save_opts o = {.dtype = ST_BF16, .bos_id = -1, .eos_id = -1};
  CHECK_MSG(st_dir_save(dir, &mc, p, &o, NULL, err, sizeof err) == 0, "%s", err);
  CHECK_MSG(st_dir_load(dir, &back, &t2, &q, err, sizeof err) == 0, "%s", err);
  size_t bad = 0, inexact = 0;
  for (size_t i = 0; q && i < t.total; i++) {
    uint32_t u = (uint32_t)st_f32_to_bf16(p[i]) << 16;
    float want;
    memcpy(&want, &u, 4);
    if (q[i] != want) bad++;
    if (!(fabsf(q[i] - p[i]) <= fabsf(p[i]) * 0x1p-8f)) bad++;
    if (q[i] != p[i]) inexact++;
  }
  CHECK_MSG(q && bad == 0, "%zu values not RNE bf16 within 2^-8", bad);
  CHECK(inexact > t.total / 2);  /* the values really were rounded */
  free(p), free(q);
  param_table_free(&t);
  param_table_free(&t2);
}

/* A 2-shard directory: index, names, and the load equals the source. */
static void test_shards(void) {
  struct model_config mc = tiny_config(0, 0), back;
  struct param_table t, t2;
  param_table_build(&t, &mc);
  float *p = random_params(t.total, 9), *q = NULL;
  char dir[256], f[300], err[1024] = "";
  path_in(dir, sizeof dir, "shards");
  struct st_save_opts o = {.dtype = ST_F32, .shard_bytes = t.total * 4 / 2 + 64, .bos_id = -1,
                           .eos_id = -1};
  CHECK_MSG(st_dir_save(dir, &mc, p, &o, NULL, err, sizeof err) == 0, "%s", err);
  snprintf(f, sizeof f, "%s/model-00002-of-00002.safetensors", dir);
  CHECK(access(f, R_OK) == 0);
  snprintf(f, sizeof f, "%s/model.safetensors.index.json", dir);
  CHECK(access(f, R_OK) == 0);
  snprintf(f, sizeof f, "%s/model.safetensors", dir);
  CHECK(access(f, F_OK) != 0);
  CHECK_MSG(st_dir_load(dir, &back, &t2, &q, err, sizeof err) == 0, "%s", err);
  CHECK(q && !memcmp(q, p, t.total * sizeof *p));
  free(q);
  q = NULL;
  param_table_free(&t2);
  /* a single-file re-export into the same directory removes the stale index */
  struct st_save_opts one = {.dtype = ST_BF16, .bos_id = -1, .eos_id = -1};
  CHECK_MSG(st_dir_save(dir, &mc, p, &one, NULL, err, sizeof err) == 0, "%s", err);
  CHECK_MSG(st_dir_load(dir, &back, &t2, &q, err, sizeof err) == 0, "%s", err);
  CHECK(q && q[0] != p[0] && fabsf(q[0] - p[0]) <= fabsf(p[0]) * 0x1p-8f);  /* the bf16 file */
  free(q);
  q = NULL;
  param_table_free(&t2);
  CHECK(st_dir_save(dir, &mc, p, &o, NULL, err, sizeof err) == 0);
  /* an index naming the wrong shard for a tensor is an error naming both */
  snprintf(f, sizeof f, "%s/model.safetensors.index.json", dir);
  char *idx = hf_read_text(f, NULL);
  char *hit = idx ? strstr(idx, "\"model.norm.weight\":\t\"model-00002") : NULL;
  CHECK(hit != NULL);
  if (hit) {
    hit[strlen("\"model.norm.weight\":\t\"model-0000")] = '1';
    FILE *fp = fopen(f, "w");
    fputs(idx, fp);
    fclose(fp);
    CHECK(st_dir_load(dir, &back, &t2, &q, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, "model.norm.weight") && strstr(err, "model-00001-of-00002"), "%s", err);
  }
  free(idx), free(p), free(q);
  param_table_free(&t);
}

static void write_file(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  fputs(text, fp);
  fclose(fp);
}

/* config.json errors and tensor/config mismatches name the file and the key. */
static void test_errors(void) {
  struct model_config mc;
  char err[1024] = "";
  static const char *bad[][2] = {
    {"{\"model_type\": \"gpt2\", \"hidden_size\": 8}", "model_type 'gpt2'"},
    {"{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
     "\"intermediate_size\": 8, \"vocab_size\": 4}", "'hidden_size'"},
    {"{\"model_type\": \"llama\", \"hidden_size\": 8, \"num_hidden_layers\": 1, "
     "\"num_attention_heads\": 2, \"intermediate_size\": 8, \"vocab_size\": 4, "
     "\"rope_scaling\": {\"type\": \"linear\"}}", "rope_scaling"},
    {"{\"model_type\": \"llama\", \"hidden_size\": 8, \"num_hidden_layers\": 1, "
     "\"num_attention_heads\": 3, \"intermediate_size\": 8, \"vocab_size\": 4}", "divide"},
    {"{\"model_type\": \"llama\", \"hidden_size\": 1e30, \"num_hidden_layers\": 1, "
     "\"num_attention_heads\": 2, \"intermediate_size\": 8, \"vocab_size\": 4}",
     "'hidden_size' must be a positive integer"},
    /* absurd sizes: refused before anything is sized by them (a billion layers would be
     * 4e13 parameters; 2^31 overflows an int) */
    {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1000000000, "
     "\"num_attention_heads\": 2, \"intermediate_size\": 8, \"vocab_size\": 4}", "implies"},
    {"{\"model_type\": \"llama\", \"hidden_size\": 8, \"num_hidden_layers\": 2147483648, "
     "\"num_attention_heads\": 2, \"intermediate_size\": 8, \"vocab_size\": 4}",
     "'num_hidden_layers' must be a positive integer of at most 1073741824"},
    {"[1, 2]", "not a JSON object"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    CHECK(hf_config_parse(bad[i][0], "x/config.json", &mc, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, "x/config.json") && strstr(err, bad[i][1]), "case %zu: %s", i, err);
  }
  /* a config that disagrees with the tensors: a shape message; a missing tensor */
  struct model_config m0 = tiny_config(0, 1), got;
  struct param_table t, t2;
  param_table_build(&t, &m0);
  float *p = random_params(t.total, 3), *q = NULL;
  char dir[256], f[300];
  path_in(dir, sizeof dir, "mismatch");
  struct st_save_opts o = {.dtype = ST_F32, .bos_id = -1, .eos_id = -1};
  CHECK(st_dir_save(dir, &m0, p, &o, NULL, err, sizeof err) == 0);
  snprintf(f, sizeof f, "%s/config.json", dir);
  struct model_config m1 = m0;
  m1.ffn_dim = 32;
  char *cfg = hf_config_write(&m1, ST_F32, -1, -1);
  write_file(f, cfg);
  free(cfg);
  CHECK(st_dir_load(dir, &got, &t2, &q, err, sizeof err) != 0);
  CHECK_MSG(strstr(err, "mlp.gate_proj.weight") && strstr(err, "[24, 16]"), "%s", err);
  m1 = m0;
  m1.tie_embeddings = 0;
  cfg = hf_config_write(&m1, ST_F32, -1, -1);
  write_file(f, cfg);
  free(cfg);
  CHECK(st_dir_load(dir, &got, &t2, &q, err, sizeof err) != 0);
  CHECK_MSG(strstr(err, "'lm_head.weight' is missing"), "%s", err);
  /* more layers in the config than in the file (100000: a typo's worth): refused from the
   * tensor names alone, by the config-only reader too, before any table or buffer */
  m1 = m0;
  m1.layers = 100000;
  cfg = hf_config_write(&m1, ST_F32, -1, -1);
  write_file(f, cfg);
  free(cfg);
  CHECK(st_dir_config(dir, &got, err, sizeof err) != 0);
  CHECK_MSG(strstr(err, "num_hidden_layers = 100000 but the weights have 2 layers"), "%s", err);
  CHECK(st_dir_load(dir, &got, &t2, &q, err, sizeof err) != 0 && strstr(err, "100000"));
  /* the config-only reader checks the shapes too (rlpt generate sizes its model by it) */
  m1 = m0;
  m1.ffn_dim = 32;
  cfg = hf_config_write(&m1, ST_F32, -1, -1);
  write_file(f, cfg);
  free(cfg);
  CHECK(st_dir_config(dir, &got, err, sizeof err) != 0);
  CHECK_MSG(strstr(err, "mlp.gate_proj.weight") && strstr(err, "[24, 16]"), "%s", err);
  /* fewer layers in the config than in the file: the extra tensors are errors */
  m1 = m0;
  m1.layers = 1;
  cfg = hf_config_write(&m1, ST_F32, -1, -1);
  write_file(f, cfg);
  free(cfg);
  CHECK(st_dir_load(dir, &got, &t2, &q, err, sizeof err) != 0);
  CHECK_MSG(strstr(err, "unexpected tensor 'model.layers.1."), "%s", err);
  snprintf(f, sizeof f, "%s/model.safetensors", dir);
  unlink(f);
  CHECK(st_dir_load(dir, &got, &t2, &q, err, sizeof err) != 0);
  CHECK_MSG(strstr(err, "model.safetensors") != NULL, "%s", err);
  free(p);
  param_table_free(&t);
}

/* tests/ref/st_golden: written by the reference library (F16 + BF16 weights);
 * expected.safetensors holds the same values as F32. Read exactly. */
static void test_golden(void) {
  const char *src = getenv("RLPT_SOURCE_DIR");
  char dir[1024], exp[1100], err[1024] = "";
  snprintf(dir, sizeof dir, "%s/tests/ref/st_golden", src ? src : ".");
  snprintf(exp, sizeof exp, "%s/expected.safetensors", dir);
  struct model_config mc;
  struct param_table t;
  float *p = NULL;
  CHECK_MSG(st_dir_load(dir, &mc, &t, &p, err, sizeof err) == 0, "%s", err);
  struct st_file ef;
  CHECK_MSG(st_open(&ef, exp, err, sizeof err) == 0, "%s", err);
  if (!p || !ef.t) return;
  CHECK(mc.qkv_bias == 1 && mc.tie_embeddings == 1 && mc.kv_heads == 1 && mc.layers == 1);
  CHECK(ef.n == t.n);
  size_t diff = 0;
  for (int i = 0; i < t.n; i++) {
    const struct st_tensor *e = st_find(&ef, t.e[i].name);
    CHECK_MSG(e != NULL, "%s", t.e[i].name);
    if (!e) continue;
    float *x = malloc(t.e[i].numel * sizeof *x);
    CHECK(st_tensor_to_f32(&ef, e, x, t.e[i].numel, err, sizeof err) == 0);
    diff += memcmp(x, p + t.e[i].offset, t.e[i].numel * sizeof *x) != 0;
    free(x);
  }
  CHECK_MSG(diff == 0, "%zu tensors differ from expected.safetensors", diff);
  st_close(&ef);
  free(p);
  param_table_free(&t);
}

int main(void) {
  snprintf(tmp_root, sizeof tmp_root, "st_test_XXXXXX");
  if (!mkdtemp(tmp_root)) return 1;
  test_round_trip(0, 0);
  test_round_trip(1, 1);
  test_bf16();
  test_shards();
  test_errors();
  test_golden();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_root);
  if (!tu_failures && system(cmd)) fprintf(stderr, "could not remove %s\n", tmp_root);
  return TEST_RESULT("test_safetensors");
}
