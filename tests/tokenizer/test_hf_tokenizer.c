/* tokenizer/test_hf_tokenizer.c: tokenizer.json loading and writing (io/hf_tokenizer.h)
 * and [model] init = hf:DIR (src/model/import.h).
 *
 * `test_hf_tokenizer` (unit):
 *  - two tokenizer.json fixtures written by Hugging Face `tokenizers`
 *    (tests/ref/hf_tok_ref.py: tests/data/hf_tok_a with [LEFT, RIGHT] merges and
 *    the SmolLM2 pre-tokenizer; hf_tok_b with "LEFT RIGHT" merges, Llama 3's
 *    Split regex, ignore_merges and a BOS-adding post-processor): the ids of
 *    258 strings must equal tokenizers' (tests/ref/hf_tok_golden.json) and
 *    decode must give the text back; bos/eos/add_bos/chat template as the
 *    config files say;
 *  - ignore_merges: a vocabulary token no merge path reaches (ids from tokenizers);
 *  - a byte without a token: refused, or with drop_unknown ([model] unknown_bytes =
 *    drop through model_import_setup) left out as tokenizers does;
 *  - the synthetic GGUF vocabulary with each pre-tokenizer written as
 *    tokenizer.json and read back (both merge formats) encodes 2000 random
 *    byte strings exactly as the GGUF-loaded tokenizer;
 *  - a tiny GGUF model written as a safetensors directory: model_import gives
 *    the same config and the same weights for hf:DIR as for gguf:PATH;
 *  - bad input (missing / malformed files, unsupported options) -> a message
 *    naming the file.
 * `test_hf_tokenizer model` (label model): SmolLM2's GGUF tokenizer written as
 * tokenizer.json and read back gives the Hugging Face ids of
 * tests/ref/bpe_golden.json (and bpe_golden_pre.json through the Llama 3 and
 * Qwen2 Split regexes as their tokenizer.json spell them), and with
 * drop_unknown the ids tokenizers gives for text with bytes SmolLM2 has no
 * token for (tests/ref/bpe_golden_drop.json). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deck/config.h"
#include "gguf_testutil.h"
#include "io/gguf.h"
#include "io/hf_tokenizer.h"
#include "io/safetensors.h"
#include "model/import.h"
#include "model/model.h"
#include "model/params.h"
#include "tasks/chat.h"
#include "testutil.h"

#define SKIP 77

static char *read_all(const char *path) { return hf_read_text(path, NULL); }

static int write_all(const char *path, const char *text) {
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  fputs(text, fp);
  return fclose(fp);
}

static const char *src_dir(void) {
  const char *s = getenv("RLPT_SOURCE_DIR");
  return s && *s ? s : "..";
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* Every {"hex", "ids"} of arr through t: ids equal, decode(encode(s)) == s (no
 * control tokens in the corpus text). Returns the number of strings. */
static int check_golden(const struct tokenizer *t, const cJSON *arr, const char *what) {
  int n_str = 0, id_bad = 0, rt_bad = 0, refused_ok = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    const char *hex = cJSON_GetObjectItem(it, "hex")->valuestring;
    const cJSON *want = cJSON_GetObjectItem(it, "ids"), *err_at = cJSON_GetObjectItem(it, "err_at");
    size_t n = strlen(hex) / 2, nid = 0, len = 0, at = 0;
    char *text = malloc(n + 1), *out = malloc(4 * n + 16);
    int *ids = malloc(sizeof(int) * (n + 8));
    for (size_t i = 0; i < n; i++) text[i] = (char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
    int rc = tokenizer_encode(t, text, n, ids, n + 8, &nid, &at);
    n_str++;
    if (err_at) {
      refused_ok += rc == TOK_ERR_UNKNOWN && at == (size_t)err_at->valueint;
      id_bad += !(rc == TOK_ERR_UNKNOWN && at == (size_t)err_at->valueint);
    } else {
      int same = rc == TOK_OK && nid == (size_t)cJSON_GetArraySize(want);
      for (size_t i = 0; same && i < nid; i++) same = ids[i] == cJSON_GetArrayItem(want, (int)i)->valueint;
      if (!same) fprintf(stderr, "%s: ids differ for hex %s\n", what, hex);
      id_bad += !same;
      int back = rc == TOK_OK && tokenizer_decode(t, ids, nid, out, 4 * n + 16, &len) == TOK_OK;
      int has_ctl = 0;
      for (size_t i = 0; i < nid; i++) has_ctl |= tokenizer_is_special(t, ids[i]);
      rt_bad += !has_ctl && (!back || len != n || memcmp(out, text, n));
    }
    free(text); free(out); free(ids);
  }
  printf("%s: %d strings (%d refused at the right byte), %d id mismatches, %d round-trip failures\n",
         what, n_str, refused_ok, id_bad, rt_bad);
  CHECK_MSG(n_str >= 200 && id_bad == 0 && rt_bad == 0, "%s", what);
  return n_str;
}

/* ---- the tokenizers-written fixtures ------------------------------------------------ */

static void check_fixture(const char *name, const cJSON *golden) {
  char dir[1024], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/data/%s", src_dir(), name);
  struct tokenizer t;
  int add_bos = -1;
  if (hf_tokenizer_load(&t, dir, &add_bos, err, sizeof err)) {
    CHECK_MSG(0, "%s", err);
    return;
  }
  check_golden(&t, cJSON_GetObjectItem(golden, name[7] == 'a' ? "a" : "b"), name);
  struct hf_tokenizer h;
  struct chat_template ct;
  CHECK(hf_tokenizer_open(&h, dir, err, sizeof err) == 0);
  int chat_ok = h.spec.chat_template.p &&
                !chat_template_detect(&ct, h.spec.chat_template.p, h.spec.chat_template.len, err,
                                      sizeof err);
  if (name[7] == 'a') {  /* SmolLM2 style */
    CHECK(t.bos_id == tokenizer_bpe_find(&t, "<|im_start|>") && t.bos_id >= 0);
    CHECK(t.eos_id == tokenizer_bpe_find(&t, "<|im_end|>") && add_bos == 0);
    CHECK(!strcmp(tokenizer_bpe_pre(&t), "smollm") && !h.spec.ignore_merges);
    CHECK(chat_ok && ct.kind == CHAT_CHATML);
    int tool = tokenizer_bpe_find(&t, "<tool>"), ids[8];
    size_t n = 0, len = 0;
    char out[32];
    CHECK(tool > 0 && !tokenizer_is_special(&t, tool));  /* added, not special: decoded as text */
    CHECK(tokenizer_encode(&t, "<tool>", 6, ids, 8, &n, NULL) == TOK_OK && n == 1 && ids[0] == tool &&
          tokenizer_decode(&t, ids, 1, out, sizeof out, &len) == TOK_OK && !strcmp(out, "<tool>"));
  } else {  /* Llama 3 style */
    CHECK(t.bos_id == 0 && t.eos_id == 4 && add_bos == 1);  /* eos from config.json */
    CHECK(!strcmp(tokenizer_bpe_pre(&t), "llama-bpe") && h.spec.ignore_merges);
    CHECK(chat_ok && ct.kind == CHAT_LLAMA3);
  }
  if (!h.spec.path) CHECK(!"opened");
  else hf_tokenizer_close(&h);
  tokenizer_free(&t);
}

/* ---- GGUF -> tokenizer.json -> tokenizer ---------------------------------------------- */

/* Same ids for 2000 seeded random byte strings (and their refusals at the same byte). */
static void check_same(const struct tokenizer *a, const struct tokenizer *b, const char *what) {
  uint64_t s = 88172645463325252ull;
  int bad = 0;
  static const char *pieces[] = {" ", "the", "12", "<|im_start|>", "<|im_end|>", "\xc3\xa9", "'s",
                                 "\xe4\xbd\xa0", "\xff", "\n\n", "ab"};
  CHECK(a->vocab_size == b->vocab_size && a->bos_id == b->bos_id && a->eos_id == b->eos_id);
  for (int id = 0; id < a->vocab_size; id++)
    bad += strcmp(tokenizer_token_str(a, id), tokenizer_token_str(b, id)) ||
           tokenizer_is_special(a, id) != tokenizer_is_special(b, id);
  for (int r = 0; r < 2000; r++) {
    char text[128];
    size_t n = 0;
    while (n < 96) {
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      if (s % 2) {
        const char *p = pieces[(s >> 8) % (sizeof pieces / sizeof pieces[0])];
        memcpy(text + n, p, strlen(p));
        n += strlen(p);
      } else {
        text[n++] = (char)(s >> 16);
      }
      if ((s >> 40) % 13 == 0) break;
    }
    int ia[256], ib[256];
    size_t na = 0, nb = 0, ea = 0, eb = 0;
    int ra = tokenizer_encode(a, text, n, ia, 256, &na, &ea);
    int rb = tokenizer_encode(b, text, n, ib, 256, &nb, &eb);
    bad += ra != rb || na != nb || ea != eb || memcmp(ia, ib, sizeof(int) * (na < 256 ? na : 256));
  }
  printf("%s: 2000 random strings, %d differences\n", what, bad);
  CHECK_MSG(bad == 0, "%s", what);
}

/* tokenizer.json's merges rewritten as [LEFT, RIGHT] pairs. */
static void merges_to_pairs(const char *path) {
  char *text = read_all(path);
  cJSON *o = cJSON_Parse(text), *mg = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "model"), "merges");
  cJSON *pairs = cJSON_CreateArray(), *m;
  cJSON_ArrayForEach(m, mg) {
    char *sp = strchr(m->valuestring, ' ');
    *sp = 0;
    const char *two[2] = {m->valuestring, sp + 1};
    cJSON_AddItemToArray(pairs, cJSON_CreateStringArray(two, 2));
  }
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "model"), "merges", pairs);
  char *out = cJSON_Print(o);
  CHECK(write_all(path, out) == 0);
  free(out);
  cJSON_Delete(o);
  free(text);
}

/* spec -> DIR/tokenizer.json -> tokenizer, against the spec's own tokenizer. */
static void check_written(const struct bpe_spec *s, const char *dir, const char *what, int pairs) {
  char err[1024], path[1100];
  struct tokenizer a, b;
  int add_bos = -1;
  CHECK_MSG(hf_tokenizer_save(dir, s, err, sizeof err) == 0, "%s", err);
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  if (pairs) merges_to_pairs(path);
  if (tokenizer_bpe_build(&a, s, err, sizeof err) || hf_tokenizer_load(&b, dir, &add_bos, err, sizeof err)) {
    CHECK_MSG(0, "%s: %s", what, err);
    return;
  }
  CHECK(add_bos == (s->add_bos && s->bos_id >= 0));
  CHECK(!strcmp(tokenizer_bpe_pre(&a), tokenizer_bpe_pre(&b)));
  check_same(&a, &b, what);
  tokenizer_free(&a);
  tokenizer_free(&b);
}

static void check_synthetic(const char *dir) {
  static const char *pres[] = {"smollm", "gpt2", "llama-bpe", "qwen2"};
  for (int k = 0; k < 4; k++) {
    struct gb g = {0};
    struct gguf_file f;
    struct bpe_spec s;
    char err[512], what[64];
    synthetic_gguf(&g, pres[k]);
    if (gguf_open_mem(&f, g.b, g.n, "synthetic.gguf", err, sizeof err) ||
        tokenizer_bpe_spec_gguf(&s, &f, err, sizeof err)) {
      CHECK_MSG(0, "%s", err);
      free(g.b);
      continue;
    }
    for (int pairs = 0; pairs < 2; pairs++) {
      snprintf(what, sizeof what, "synthetic %s, %s merges", pres[k], pairs ? "pair" : "string");
      check_written(&s, dir, what, pairs);
    }
    tokenizer_bpe_spec_free(&s);
    gguf_close(&f);
    free(g.b);
  }
}

/* ---- weights: gguf:PATH and hf:DIR give the same model -------------------------------- */

static void check_model_import(const char *dir) {
  struct gb g = {0};
  struct tiny_llama *tl = calloc(1, sizeof *tl);
  char gpath[400], hf[450], gg[450], err[1024];
  tiny_llama(&g, tl);
  snprintf(gpath, sizeof gpath, "%s/tiny.gguf", dir);
  FILE *fp = fopen(gpath, "wb");
  CHECK(fp && fwrite(g.b, 1, g.n, fp) == g.n && !fclose(fp));
  struct model_config mc, mh, mg;
  struct param_table t;
  float *params = NULL;
  struct st_save_opts o = {.dtype = ST_F32, .bos_id = -1, .eos_id = -1};
  CHECK(gguf_load_model(gpath, &mc, &t, &params, err, sizeof err) == 0);
  CHECK_MSG(st_dir_save(dir, &mc, params, &o, NULL, err, sizeof err) == 0, "%s", err);
  struct config cfg;
  config_defaults(&cfg);
  cfg.model.max_seq = 16;
  snprintf(hf, sizeof hf, "hf:%s", dir);
  snprintf(gg, sizeof gg, "gguf:%s", gpath);
  snprintf(cfg.model.init, sizeof cfg.model.init, "%s", hf);
  CHECK_MSG(model_import_config(&cfg, &mh, err, sizeof err) == 0, "%s", err);
  snprintf(cfg.model.init, sizeof cfg.model.init, "%s", gg);
  CHECK_MSG(model_import_config(&cfg, &mg, err, sizeof err) == 0, "%s", err);
  char *jh = model_config_to_json(&mh), *jg = model_config_to_json(&mg);
  CHECK_MSG(jh && jg && !strcmp(jh, jg), "hf: %s\ngguf: %s", jh, jg);
  free(jh);
  free(jg);
  struct model a = {0}, b = {0};
  if (!model_create(&a, &mg, 16, &cpu_backend) && !model_create(&b, &mh, 16, &cpu_backend)) {
    CHECK(model_import_params(&a, gg, err, sizeof err) == 0);
    CHECK_MSG(model_import_params(&b, hf, err, sizeof err) == 0, "%s", err);
    CHECK(a.table.total == t.total && !memcmp(a.params, b.params, sizeof(float) * t.total));
    printf("tiny model: %zu parameters, gguf: and hf: identical\n", t.total);
  }
  if (a.params) model_free(&a);
  if (b.params) model_free(&b);
  param_table_free(&t);
  free(params);
  free(tl);
  free(g.b);
}

/* ---- bad input ---------------------------------------------------------------------- */

/* DIR/tokenizer.json = fixture NAME's with the first OLD replaced by NEW. */
static int write_edited(const char *dir, const char *name, const char *old, const char *new_) {
  char src[1100], path[1100];
  snprintf(src, sizeof src, "%s/tests/data/%s/tokenizer.json", src_dir(), name);
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  char *text = read_all(src), *at = text ? strstr(text, old) : NULL;
  CHECK_MSG(at != NULL, "fixture %s has '%s'", name, old);
  if (!at) { free(text); return -1; }
  size_t n = strlen(text) + strlen(new_) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, new_, at + strlen(old));
  int rc = write_all(path, out);
  CHECK(rc == 0);
  free(out);
  free(text);
  return rc;
}

/* ignore_merges (fixture b, Llama 3's flag): a piece that is a vocabulary token
 * is that token even when no merge path reaches it; without the flag (fixture a)
 * the merges decide. Ids from Hugging Face tokenizers on the same edit. */
static void check_ignore_merges(const char *dir) {
  static const struct { const char *name, *edit, *text; int n, ids[4]; } cases[] = {
    {"hf_tok_b", "\"vocab\":{\"xyzq\":600,", "xyzq", 1, {600}},
    {"hf_tok_b", "\"vocab\":{\"xyzq\":600,", " xyzq", 4, {446, 93, 94, 85}},
    {"hf_tok_a", "\"vocab\":{\"xyzq\":601,", "xyzq", 4, {90, 91, 92, 83}},
  };
  char cpath[1100];
  snprintf(cpath, sizeof cpath, "%s/tokenizer_config.json", dir);
  unlink(cpath);  /* the earlier checks' */
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct tokenizer t;
    char err[1024];
    int ids[16];
    size_t n = 0;
    if (write_edited(dir, cases[k].name, "\"vocab\":{", cases[k].edit) ||
        hf_tokenizer_load(&t, dir, NULL, err, sizeof err)) {
      CHECK_MSG(0, "%s", err);
      continue;
    }
    int rc = tokenizer_encode(&t, cases[k].text, strlen(cases[k].text), ids, 16, &n, NULL);
    CHECK_MSG(rc == TOK_OK && n == (size_t)cases[k].n && !memcmp(ids, cases[k].ids, n * sizeof(int)),
              "%s '%s': %zu ids, first %d", cases[k].name, cases[k].text, n, n ? ids[0] : -1);
    tokenizer_free(&t);
  }
}

/* A byte without a token (fixture a with 0x04's token renamed): refused by
 * default at its offset; with tokenizer_bpe_drop_unknown left out of its piece,
 * the rest merged, as Hugging Face tokenizers does (ids from tokenizers on the
 * same edit). */
static void check_drop_unknown(const char *dir) {
  static const struct { const char *text; int n, ids[4]; } cases[] = {
    {"a\x04" "b", 2, {67, 68}}, {"!!\x04!!", 2, {448, 448}}, {"\x04", 0, {0}},
    {"x \x04 y", 3, {90, 223, 372}}, {"12\x04" "34", 4, {19, 20, 21, 22}},
  };
  struct tokenizer t;
  char err[1024];
  int ids[16];
  size_t n = 0, at = 0;
  if (write_edited(dir, "hf_tok_a", "\"\xc4\x84\":", "\"\xc4\x84x\":") ||
      hf_tokenizer_load(&t, dir, NULL, err, sizeof err)) {
    CHECK_MSG(0, "%s", err);
    return;
  }
  CHECK(tokenizer_bpe_byte_id(&t, 0x04) < 0);
  CHECK(tokenizer_encode(&t, "ab\x04", 3, ids, 16, &n, &at) == TOK_ERR_UNKNOWN && at == 2);
  tokenizer_bpe_drop_unknown(&t, 1);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int rc = tokenizer_encode(&t, cases[k].text, strlen(cases[k].text), ids, 16, &n, NULL);
    CHECK_MSG(rc == TOK_OK && n == (size_t)cases[k].n && !memcmp(ids, cases[k].ids, n * sizeof(int)),
              "drop '%s': rc %d, %zu ids", cases[k].text, rc, n);
  }
  tokenizer_free(&t);
}

/* [model] unknown_bytes through model_import_setup: a zero model of vocabulary
 * 608 saved as DIR with fixture a's tokenizer (0x04's token renamed). */
static void check_unknown_bytes_key(const char *dir) {
  struct model_config mc = {.vocab_size = 608, .dim = 8, .layers = 1, .heads = 2, .kv_heads = 1,
                            .ffn_dim = 16, .max_seq = 32, .rope_theta = 10000, .norm_eps = 1e-5,
                            .init_std = 0.02, .head_dim = 4};
  struct param_table pt;
  struct st_save_opts o = {.dtype = ST_F32, .bos_id = -1, .eos_id = -1};
  char err[1024], src[1100], cpath[1100];
  param_table_build(&pt, &mc);
  float *zeros = calloc(pt.total, sizeof(float));
  snprintf(src, sizeof src, "%s/tests/data/hf_tok_a/tokenizer_config.json", src_dir());
  snprintf(cpath, sizeof cpath, "%s/tokenizer_config.json", dir);
  char *cfg_text = read_all(src);
  CHECK_MSG(st_dir_save(dir, &mc, zeros, &o, NULL, err, sizeof err) == 0, "%s", err);
  CHECK(cfg_text && write_all(cpath, cfg_text) == 0 &&
        write_edited(dir, "hf_tok_a", "\"\xc4\x84\":", "\"\xc4\x84x\":") == 0);
  struct config cfg;
  config_defaults(&cfg);
  cfg.model.max_seq = 32;
  snprintf(cfg.model.init, sizeof cfg.model.init, "hf:%.400s", dir);
  for (int drop = 0; drop < 2; drop++) {
    struct tokenizer t;
    struct model_config got;
    int ids[8];
    size_t n = 0;
    cfg.model.unknown_bytes = drop;
    if (model_import_setup(&cfg, &got, &t, err, sizeof err)) {
      CHECK_MSG(0, "%s", err);
      continue;
    }
    int rc = tokenizer_encode(&t, "!!\x04!!", 5, ids, 8, &n, NULL);
    CHECK_MSG(drop ? rc == TOK_OK && n == 2 && ids[0] == 448 && ids[1] == 448 : rc == TOK_ERR_UNKNOWN,
              "unknown_bytes = %s: rc %d", drop ? "drop" : "error", rc);
    CHECK(got.vocab_size == 608 && t.eos_id == tokenizer_bpe_find(&t, "<|im_end|>") && t.bos_id == -1);
    tokenizer_free(&t);
  }
  unlink(cpath);
  free(cfg_text);
  free(zeros);
  param_table_free(&pt);
}

/* Fixture a with one edit to tokenizer.json: refused with WANT in the message. */
static void expect_refused(const char *dir, const char *old, const char *new_, const char *want) {
  char err[1024] = "";
  struct tokenizer t;
  if (write_edited(dir, "hf_tok_a", old, new_)) return;
  int rc = hf_tokenizer_load(&t, dir, NULL, err, sizeof err);
  CHECK_MSG(rc == -1 && strstr(err, want) && strstr(err, "tokenizer.json"), "'%s' -> rc %d: %s", new_,
            rc, err);
  if (!rc) tokenizer_free(&t);
  printf("refused: %s\n", err);
}

static void check_bad(const char *dir) {
  char err[1024], path[1100];
  struct tokenizer t;
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  unlink(path);
  CHECK(hf_tokenizer_load(&t, dir, NULL, err, sizeof err) == -1 && strstr(err, "tokenizer.json") &&
        strstr(err, "No such file"));
  expect_refused(dir, "\"version\"", "{\"version\"", "line 1: not valid JSON");
  expect_refused(dir, "\"byte_fallback\":false", "\"byte_fallback\":true", "byte_fallback");
  expect_refused(dir, "\"individual_digits\":true", "\"individual_digits\":false", "Digits");
  expect_refused(dir, "\"use_regex\":true", "\"use_regex\":false", "pre_tokenizer");
  expect_refused(dir, "\"normalizer\":null", "\"normalizer\":{\"type\":\"Lowercase\"}", "Lowercase");
  expect_refused(dir, "\"lstrip\":false", "\"lstrip\":true", "lstrip");
  expect_refused(dir, "\"merges\":[[", "\"merges\":[[\"a\"],[", "merge 0");
  expect_refused(dir, "\"!\":", "\"!\":9999,\"unused\":", "no token has id");
  /* a malformed tokenizer_config.json is named too */
  snprintf(path, sizeof path, "%s/tests/data/hf_tok_a/tokenizer.json", src_dir());
  char *text = read_all(path), cpath[1100];
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  snprintf(cpath, sizeof cpath, "%s/tokenizer_config.json", dir);
  CHECK(text && write_all(path, text) == 0 && write_all(cpath, "{\n\"eos_token\": ,\n}") == 0);
  CHECK(hf_tokenizer_load(&t, dir, NULL, err, sizeof err) == -1 &&
        strstr(err, "tokenizer_config.json: line 2: not valid JSON"));
  printf("refused: %s\n", err);
  CHECK(write_all(cpath, "{\"eos_token\": \"<|nope|>\"}") == 0);
  CHECK(hf_tokenizer_load(&t, dir, NULL, err, sizeof err) == -1 && strstr(err, "<|nope|>") &&
        strstr(err, "tokenizer_config.json: eos_token"));
  printf("refused: %s\n", err);
  unlink(cpath);
  free(text);
}

/* tokenizer_decode_alloc: 40 copies of hf_tok_a's 32-byte token decode to 1280 bytes,
 * more than the 8 bytes per token + 16 its first buffer holds (the growth path the
 * reward and eval decode through), and an id out of range is refused. */
static void check_decode_alloc(void) {
  char path[1100], err[512];
  const char *ab = "abababababababababababababababab";
  snprintf(path, sizeof path, "%s/tests/data/hf_tok_a", src_dir());
  struct tokenizer t;
  CHECK(hf_tokenizer_load(&t, path, NULL, err, sizeof err) == 0);
  int ids[40], one[2];
  size_t n = 0, len = 0;
  CHECK(tokenizer_encode(&t, ab, strlen(ab), one, 2, &n, NULL) == TOK_OK && n == 1);
  for (int i = 0; i < 40; i++) ids[i] = one[0];
  char *text = NULL;
  CHECK(tokenizer_decode_alloc(&t, ids, 40, &text, &len) == TOK_OK && len == 40 * 32);
  int same = text != NULL && strlen(text) == len;
  for (size_t i = 0; same && i < len; i++) same = text[i] == ab[i % 32];
  CHECK(same);
  free(text);
  ids[3] = 1 << 30;
  CHECK(tokenizer_decode_alloc(&t, ids, 40, &text, &len) == TOK_ERR_UNKNOWN && text == NULL);
  tokenizer_free(&t);
}

/* ---- SmolLM2 (label model) ------------------------------------------------------------ */

static cJSON *load_json(const char *rel) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", src_dir(), rel);
  char *text = read_all(path);
  cJSON *o = text ? cJSON_Parse(text) : NULL;
  CHECK_MSG(o != NULL, "cannot read %s", path);
  free(text);
  return o;
}

/* SmolLM2 with drop_unknown against tokenizers (tests/ref/bpe_golden_drop.json). */
static void check_drop_smollm2(struct bpe_spec *s, const char *dir) {
  struct tokenizer t;
  char err[1024];
  cJSON *drop = load_json("tests/ref/bpe_golden_drop.json"), *it;
  snprintf(s->pre, sizeof s->pre, "smollm");
  if (!drop || hf_tokenizer_save(dir, s, err, sizeof err) ||
      hf_tokenizer_load(&t, dir, NULL, err, sizeof err)) {
    CHECK_MSG(0, "%s", drop ? err : "no golden");
    cJSON_Delete(drop);
    return;
  }
  tokenizer_bpe_drop_unknown(&t, 1);
  int n_str = 0, bad = 0;
  cJSON_ArrayForEach(it, drop) {
    const char *hex = cJSON_GetObjectItem(it, "hex")->valuestring;
    const cJSON *want = cJSON_GetObjectItem(it, "ids");
    size_t n = strlen(hex) / 2, nid = 0;
    char text[256];
    int ids[256];
    for (size_t i = 0; i < n && i < sizeof text; i++)
      text[i] = (char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
    int same = n < sizeof text && tokenizer_encode(&t, text, n, ids, 256, &nid, NULL) == TOK_OK &&
               nid == (size_t)cJSON_GetArraySize(want);
    for (size_t i = 0; same && i < nid; i++) same = ids[i] == cJSON_GetArrayItem(want, (int)i)->valueint;
    if (!same) fprintf(stderr, "drop_unknown: ids differ for hex %s\n", hex);
    bad += !same;
    n_str++;
  }
  printf("SmolLM2 drop_unknown: %d strings with bytes without a token, %d differ from tokenizers\n",
         n_str, bad);
  CHECK(n_str >= 10 && bad == 0);
  tokenizer_free(&t);
  cJSON_Delete(drop);
}

static int run_model(const char *dir) {
  char pbuf[1024], err[1024];
  const char *p = getenv("RLPT_SMOLLM2_GGUF"), *cache = getenv("RLPT_CACHE"), *home = getenv("HOME");
  if (p && *p) snprintf(pbuf, sizeof pbuf, "%s", p);
  else if (cache && *cache) snprintf(pbuf, sizeof pbuf, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
  else snprintf(pbuf, sizeof pbuf, "%s/.cache/rlpt/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : ".");
  struct gguf_file f;
  struct bpe_spec s;
  if (access(pbuf, R_OK)) {
    printf("SKIP: %s not found (run jobscripts/fetch-smollm2.sh or set RLPT_SMOLLM2_GGUF)\n", pbuf);
    return SKIP;
  }
  if (gguf_open(&f, pbuf, err, sizeof err) || tokenizer_bpe_spec_gguf(&s, &f, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  cJSON *golden = load_json("tests/ref/bpe_golden.json"), *pre = load_json("tests/ref/bpe_golden_pre.json");
  static const char *pres[] = {"smollm", "llama-bpe", "qwen2"};
  for (int k = 0; k < 3 && golden && pre; k++) {
    struct tokenizer a, b;
    snprintf(s.pre, sizeof s.pre, "%s", pres[k]);
    CHECK_MSG(hf_tokenizer_save(dir, &s, err, sizeof err) == 0, "%s", err);
    if (tokenizer_bpe_build(&a, &s, err, sizeof err) || hf_tokenizer_load(&b, dir, NULL, err, sizeof err)) {
      CHECK_MSG(0, "%s", err);
      continue;
    }
    char what[64];
    snprintf(what, sizeof what, "SmolLM2 via tokenizer.json, %s", pres[k]);
    check_golden(&b, k ? cJSON_GetObjectItem(pre, pres[k]) : golden, what);
    check_same(&a, &b, what);
    tokenizer_free(&a);
    tokenizer_free(&b);
  }
  check_drop_smollm2(&s, dir);
  cJSON_Delete(golden);
  cJSON_Delete(pre);
  tokenizer_bpe_spec_free(&s);
  gguf_close(&f);
  return TEST_RESULT("test_hf_tokenizer (SmolLM2)");
}

int main(int argc, char **argv) {
  char dir[] = "/tmp/test_hf_tokenizer.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  int rc;
  if (argc > 1 && !strcmp(argv[1], "model")) {
    rc = run_model(dir);
  } else {
    cJSON *golden = load_json("tests/ref/hf_tok_golden.json");
    if (golden) {
      check_fixture("hf_tok_a", golden);
      check_fixture("hf_tok_b", golden);
    }
    cJSON_Delete(golden);
    check_synthetic(dir);
    check_model_import(dir);
    check_ignore_merges(dir);
    check_drop_unknown(dir);
    check_unknown_bytes_key(dir);
    check_bad(dir);
    check_decode_alloc();
    rc = TEST_RESULT("test_hf_tokenizer");
  }
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
  return rc;
}
