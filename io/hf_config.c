/* io/hf_config.c: Hugging Face model directories (io/safetensors.h): config.json
 * to and from struct model_config, and the load / save of a whole directory
 * (single file or shards + model.safetensors.index.json, generation_config.json,
 * tokenizer files). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/model_h5.h"
#include "io/safetensors.h"
#include "model/params.h"

char *hf_read_text(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  char *s = NULL;
  long n = -1;
  if (!fseek(fp, 0, SEEK_END) && (n = ftell(fp)) >= 0 && !fseek(fp, 0, SEEK_SET) &&
      (s = malloc((size_t)n + 1)) && fread(s, 1, (size_t)n, fp) == (size_t)n) {
    s[n] = 0;
    if (len) *len = (size_t)n;
  } else {
    free(s);
    s = NULL;
    errno = errno ? errno : EIO;
  }
  fclose(fp);
  return s;
}

/* An integer field; missing -> def (def < 0: required). */
static int cfg_int(const cJSON *o, const char *key, int def, int *out, const char *name, char *err,
                   size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v)) {
    if (def < 0) snprintf(err, errlen, "%s: missing integer '%s'", name, key);
    *out = def;
    return def < 0 ? -1 : 0;
  }
  /* the GGUF loader's range (io/gguf.c arch_int): every size fits an int with room for products */
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= MODEL_SIZE_MAX) ||
      v->valuedouble != (double)(int)v->valuedouble) {
    snprintf(err, errlen, "%s: '%s' must be a positive integer of at most %d", name, key,
             MODEL_SIZE_MAX);
    return -1;
  }
  *out = (int)v->valuedouble;
  return 0;
}

static int cfg_num(const cJSON *o, const char *key, double def, double *out, const char *name,
                   char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = def;
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0)) {
    snprintf(err, errlen, "%s: '%s' must be a positive number", name, key);
    return -1;
  }
  *out = v->valuedouble;
  return 0;
}

/* Options of the HF config that rlpt's model does not implement. */
static int cfg_unsupported(const cJSON *o, const char *name, char *err, size_t errlen) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "rope_scaling");
  if (v && !cJSON_IsNull(v)) {
    snprintf(err, errlen, "%s: rope_scaling is not supported (rlpt implements plain RoPE)", name);
    return -1;
  }
  v = cJSON_GetObjectItemCaseSensitive(o, "hidden_act");
  if (v && (!cJSON_IsString(v) || strcmp(v->valuestring, "silu"))) {
    snprintf(err, errlen, "%s: hidden_act must be \"silu\"", name);
    return -1;
  }
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "attention_bias")) ||
      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "mlp_bias"))) {
    snprintf(err, errlen, "%s: attention_bias / mlp_bias (o_proj / MLP biases) are not supported",
             name);
    return -1;
  }
  return 0;
}

static int cfg_fields(const cJSON *o, const char *name, struct model_config *mc, char *err,
                      size_t errlen) {
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(o, "model_type");
  if (!cJSON_IsString(mt) || (strcmp(mt->valuestring, "llama") && strcmp(mt->valuestring, "qwen2") &&
                              strcmp(mt->valuestring, "mistral"))) {
    snprintf(err, errlen, "%s: model_type %s%.40s%s is not supported (llama, qwen2, mistral)", name,
             cJSON_IsString(mt) ? "'" : "", cJSON_IsString(mt) ? mt->valuestring : "(missing)",
             cJSON_IsString(mt) ? "'" : "");
    return -1;
  }
  int head_dim = 0, window = 0;
  if (cfg_int(o, "hidden_size", -1, &mc->dim, name, err, errlen) ||
      cfg_int(o, "num_hidden_layers", -1, &mc->layers, name, err, errlen) ||
      cfg_int(o, "num_attention_heads", -1, &mc->heads, name, err, errlen) ||
      cfg_int(o, "num_key_value_heads", mc->heads, &mc->kv_heads, name, err, errlen) ||
      cfg_int(o, "intermediate_size", -1, &mc->ffn_dim, name, err, errlen) ||
      cfg_int(o, "vocab_size", -1, &mc->vocab_size, name, err, errlen) ||
      cfg_int(o, "max_position_embeddings", 2048, &mc->max_seq, name, err, errlen) ||
      cfg_int(o, "head_dim", 0, &head_dim, name, err, errlen) ||
      cfg_num(o, "rms_norm_eps", 1e-6, &mc->norm_eps, name, err, errlen) ||
      cfg_num(o, "rope_theta", 10000.0, &mc->rope_theta, name, err, errlen) ||
      cfg_num(o, "initializer_range", 0.02, &mc->init_std, name, err, errlen))
    return -1;
  if (head_dim && head_dim * mc->heads != mc->dim) {
    snprintf(err, errlen, "%s: head_dim %d != hidden_size / num_attention_heads = %d", name,
             head_dim, mc->dim / mc->heads);
    return -1;
  }
  /* A sliding window at least the context is plain causal attention; a smaller
   * one is exact only up to its length, so the context is cut to it. */
  const cJSON *usw = cJSON_GetObjectItemCaseSensitive(o, "use_sliding_window");
  if ((!usw || cJSON_IsTrue(usw)) && strcmp(mt->valuestring, "qwen2") &&
      cfg_int(o, "sliding_window", 0, &window, name, err, errlen))
    return -1;
  if (window > 0 && window < mc->max_seq) mc->max_seq = window;
  mc->tie_embeddings = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "tie_word_embeddings"));
  return 0;
}

int hf_config_parse(const char *json, const char *name, struct model_config *mc, char *err,
                    size_t errlen) {
  memset(mc, 0, sizeof *mc);
  cJSON *o = cJSON_Parse(json);
  int rc = -1;
  if (!cJSON_IsObject(o)) snprintf(err, errlen, "%s: not a JSON object", name);
  else if (!cfg_unsupported(o, name, err, errlen) && !cfg_fields(o, name, mc, err, errlen)) {
    char why[256];
    rc = model_config_check(mc, why, sizeof why);
    if (rc) snprintf(err, errlen, "%s: %s", name, why);
    else mc->head_dim = mc->dim / mc->heads;
  }
  cJSON_Delete(o);
  return rc;
}

char *hf_config_write(const struct model_config *mc, enum st_dtype dtype, int bos_id, int eos_id) {
  cJSON *o = cJSON_CreateObject();
  const char *arch = mc->qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
  cJSON_AddItemToObject(o, "architectures", cJSON_CreateStringArray(&arch, 1));
  cJSON_AddStringToObject(o, "model_type", mc->qkv_bias ? "qwen2" : "llama");
  cJSON_AddNumberToObject(o, "hidden_size", mc->dim);
  cJSON_AddNumberToObject(o, "intermediate_size", mc->ffn_dim);
  cJSON_AddNumberToObject(o, "num_hidden_layers", mc->layers);
  cJSON_AddNumberToObject(o, "num_attention_heads", mc->heads);
  cJSON_AddNumberToObject(o, "num_key_value_heads", mc->kv_heads);
  cJSON_AddNumberToObject(o, "vocab_size", mc->vocab_size);
  cJSON_AddNumberToObject(o, "max_position_embeddings", mc->max_seq);
  cJSON_AddNumberToObject(o, "rms_norm_eps", mc->norm_eps);
  cJSON_AddNumberToObject(o, "rope_theta", mc->rope_theta);
  cJSON_AddNumberToObject(o, "initializer_range", mc->init_std);
  cJSON_AddStringToObject(o, "hidden_act", "silu");
  cJSON_AddBoolToObject(o, "tie_word_embeddings", mc->tie_embeddings);
  cJSON_AddNullToObject(o, "rope_scaling");
  if (mc->qkv_bias) {
    cJSON_AddBoolToObject(o, "use_sliding_window", 0);
    cJSON_AddNumberToObject(o, "sliding_window", mc->max_seq);
    cJSON_AddNumberToObject(o, "max_window_layers", mc->layers);
  } else {
    cJSON_AddBoolToObject(o, "attention_bias", 0);
  }
  if (bos_id >= 0) cJSON_AddNumberToObject(o, "bos_token_id", bos_id);
  if (eos_id >= 0) cJSON_AddNumberToObject(o, "eos_token_id", eos_id);
  cJSON_AddStringToObject(o, "torch_dtype", dtype == ST_BF16 ? "bfloat16" : "float32");
  cJSON_AddBoolToObject(o, "use_cache", 1);
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  return s;
}

/* ---- loading a directory --------------------------------------------------- */

/* The safetensors files of a model directory. */
struct st_set {
  int n;
  struct st_file f[64];
};

static void set_close(struct st_set *s) {
  for (int i = 0; i < s->n; i++) st_close(&s->f[i]);
  s->n = 0;
}

/* A shard name from the index: a plain file name inside the directory. */
static int shard_name_ok(const char *s) {
  return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int set_open_one(struct st_set *s, const char *dir, const char *file, char *err,
                        size_t errlen) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->f[i].path, path)) return 0;
  if (s->n == (int)(sizeof s->f / sizeof s->f[0])) {
    snprintf(err, errlen, "%s: more than %d shards", dir, s->n);
    return -1;
  }
  if (st_open(&s->f[s->n], path, err, errlen)) return -1;
  s->n++;
  return 0;
}

/* Opens model.safetensors, or every shard model.safetensors.index.json names
 * (and checks each weight_map entry is in the shard it names). */
static int set_open(struct st_set *s, const char *dir, char *err, size_t errlen) {
  char path[1024];
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  char *text = hf_read_text(path, NULL);
  if (!text) return set_open_one(s, dir, "model.safetensors", err, errlen);
  cJSON *o = cJSON_Parse(text), *wm = cJSON_GetObjectItemCaseSensitive(o, "weight_map");
  int rc = 0;
  free(text);
  if (!cJSON_IsObject(wm) || !wm->child) {
    snprintf(err, errlen, "%s: needs a non-empty \"weight_map\" object", path);
    rc = -1;
  }
  for (const cJSON *e = rc ? NULL : wm->child; e && !rc; e = e->next) {
    if (!cJSON_IsString(e) || !shard_name_ok(e->valuestring)) {
      snprintf(err, errlen, "%s: weight_map entry '%s' must name a file in the directory", path,
               e->string);
      rc = -1;
    } else if (!(rc = set_open_one(s, dir, e->valuestring, err, errlen))) {
      char want[1024];
      snprintf(want, sizeof want, "%s/%s", dir, e->valuestring);
      for (int i = 0; i < s->n; i++)
        if (!strcmp(s->f[i].path, want) && !st_find(&s->f[i], e->string)) {
          snprintf(err, errlen, "%s: weight_map says '%s' is in %s, which lacks it", path,
                   e->string, e->valuestring);
          rc = -1;
        }
    }
  }
  cJSON_Delete(o);
  return rc;
}

/* The one file holding name; NULL when none; -1 in *dup when several do. */
static const struct st_tensor *set_find(const struct st_set *s, const char *name, int *fi) {
  const struct st_tensor *found = NULL;
  for (int i = 0; i < s->n; i++) {
    const struct st_tensor *t = st_find(&s->f[i], name);
    if (t && found) { *fi = -1; return found; }
    if (t) { found = t; *fi = i; }
  }
  return found;
}

/* The one tensor of entry e, present once and of e's shape; NULL with a message. */
static const struct st_tensor *entry_tensor(const struct st_set *s, const struct param_entry *e,
                                            const char *dir, int *fi_out, char *err, size_t errlen) {
  int fi = 0;
  const struct st_tensor *t = set_find(s, e->name, &fi);
  if (!t || fi < 0) {
    snprintf(err, errlen, "%s: tensor '%s' is %s", dir, e->name,
             t ? "in more than one shard" : "missing (does config.json match the weights?)");
    return NULL;
  }
  hsize_t dims[2];
  int rank = h5_param_dims(e, dims);
  if (t->ndim != rank || t->shape[0] != dims[0] || (rank == 2 && t->shape[1] != dims[1])) {
    char got[128] = "";
    for (int d = 0; d < t->ndim; d++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", d ? ", " : "",
               (unsigned long long)t->shape[d]);
    snprintf(err, errlen, "%s: tensor '%s' has shape [%s], config.json implies [%llu%s%.0llu]",
             s->f[fi].path, e->name, got, (unsigned long long)dims[0], rank == 2 ? ", " : "",
             rank == 2 ? (unsigned long long)dims[1] : 0ull);
    return NULL;
  }
  *fi_out = fi;
  return t;
}

static int load_entry(const struct st_set *s, const struct param_entry *e, float *dst,
                      const char *dir, char *err, size_t errlen) {
  int fi = 0;
  const struct st_tensor *t = entry_tensor(s, e, dir, &fi, err, errlen);
  return t ? st_tensor_to_f32(&s->f[fi], t, dst + e->offset, e->numel, err, errlen) : -1;
}

/* The number of layers the weights hold (1 + the highest N of a model.layers.N. tensor). */
static long file_layers(const struct st_set *s) {
  long top = -1;
  for (int i = 0; i < s->n; i++)
    for (int k = 0; k < s->f[i].n; k++) {
      const char *nm = s->f[i].t[k].name;
      char *end;
      if (strncmp(nm, "model.layers.", 13) || nm[13] < '0' || nm[13] > '9') continue;
      long l = strtol(nm + 13, &end, 10);
      if (*end == '.' && l > top && l < MODEL_SIZE_MAX) top = l;
    }
  return top + 1;
}

/* config.json against the weights before anything is sized by it (as the GGUF loader
 * counts tensors first): its layers must all be there, then every tensor of its table
 * by name and shape, without reading any data. */
static int check_weights(const struct st_set *s, const struct model_config *mc, const char *dir,
                         char *err, size_t errlen) {
  long have = file_layers(s);
  if (mc->layers > have) {
    snprintf(err, errlen, "%s/config.json: num_hidden_layers = %d but the weights have %ld layer%s "
             "(model.layers.N tensors)", dir, mc->layers, have, have == 1 ? "" : "s");
    return -1;
  }
  struct param_table t;
  param_table_build(&t, mc);
  int rc = t.e ? 0 : -1, fi;
  if (rc) snprintf(err, errlen, "%s: out of memory", dir);
  for (int i = 0; i < t.n && !rc; i++)
    if (!entry_tensor(s, &t.e[i], dir, &fi, err, errlen)) rc = -1;
  param_table_free(&t);
  return rc;
}

/* Tensors the table does not hold: HF's rotary inv_freq buffers and a tied
 * model's lm_head copy are ignored (as transformers does), others are errors. */
static int check_extra(const struct st_set *s, const struct param_table *pt, char *err,
                       size_t errlen) {
  for (int i = 0; i < s->n; i++)
    for (int k = 0; k < s->f[i].n; k++) {
      const char *nm = s->f[i].t[k].name;
      size_t len = strlen(nm);
      if (param_table_find(pt, nm) || !strcmp(nm, "lm_head.weight") ||
          (len > 20 && !strcmp(nm + len - 20, "rotary_emb.inv_freq")))
        continue;
      snprintf(err, errlen, "%s: unexpected tensor '%s' (not part of this architecture)",
               s->f[i].path, nm);
      return -1;
    }
  return 0;
}

/* config.json of dir and its safetensors opened (*out; NULL on error); q/k/v bias
 * and value head from the tensors present. */
static int dir_open(const char *dir, struct model_config *mc, struct st_set **out, char *err,
                    size_t errlen) {
  char path[1024];
  int fi;
  *out = NULL;
  snprintf(path, sizeof path, "%s/config.json", dir);
  char *text = hf_read_text(path, NULL);
  if (!text) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  int rc = hf_config_parse(text, path, mc, err, errlen);
  free(text);
  struct st_set *s = rc ? NULL : calloc(1, sizeof *s);
  if (!rc && !s) snprintf(err, errlen, "%s: out of memory", dir);
  if (rc || !s || set_open(s, dir, err, errlen)) {
    if (s) set_close(s);
    free(s);
    return -1;
  }
  mc->qkv_bias = set_find(s, "model.layers.0.self_attn.q_proj.bias", &fi) != NULL;
  mc->value_head = set_find(s, "score.weight", &fi) != NULL;
  if (check_weights(s, mc, dir, err, errlen)) {
    set_close(s);
    free(s);
    return -1;
  }
  *out = s;
  return 0;
}

int st_dir_config(const char *dir, struct model_config *mc, char *err, size_t errlen) {
  struct st_set *s;
  int rc = dir_open(dir, mc, &s, err, errlen);
  if (s) set_close(s);
  free(s);
  return rc;
}

int st_dir_load(const char *dir, struct model_config *mc, struct param_table *t, float **params,
                char *err, size_t errlen) {
  struct st_set *s;
  memset(t, 0, sizeof *t);
  *params = NULL;
  if (dir_open(dir, mc, &s, err, errlen)) return -1;
  int rc = 0;
  param_table_build(t, mc);
  *params = malloc(t->total * sizeof **params);
  if (!*params) {
    snprintf(err, errlen, "%s: out of memory for %zu parameters", dir, t->total);
    rc = -1;
  }
  for (int i = 0; i < t->n && !rc; i++) rc = load_entry(s, &t->e[i], *params, dir, err, errlen);
  if (!rc) rc = check_extra(s, t, err, errlen);
  if (rc) {
    free(*params);
    *params = NULL;
    param_table_free(t);
  }
  set_close(s);
  free(s);
  return rc;
}

/* ---- saving a directory ---------------------------------------------------- */

static int write_text(const char *dir, const char *file, const char *text, char *err,
                      size_t errlen) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *fp = fopen(path, "wb");
  int rc = fp && fputs(text, fp) >= 0 && fputc('\n', fp) != EOF ? 0 : -1;
  if (fp && fclose(fp)) rc = -1;
  if (rc) snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
  return rc;
}

/* bos/eos ids from a tokenizer directory's generation_config.json, else its
 * config.json (an eos list gives its first id). */
void hf_token_ids(const char *dir, int n_vocab, int *bos, int *eos) {
  static const char *files[] = {"config.json", "generation_config.json"};
  for (int f = 0; f < 2; f++) {
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, files[f]);
    char *text = hf_read_text(path, NULL);  /* absent or bad: the ids stay unknown (-1) */
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    const cJSON *v[2] = {cJSON_GetObjectItemCaseSensitive(o, "bos_token_id"),
                         cJSON_GetObjectItemCaseSensitive(o, "eos_token_id")};
    int *ids[2] = {bos, eos};
    for (int k = 0; k < 2; k++) {
      const cJSON *x = cJSON_IsArray(v[k]) ? v[k]->child : v[k];
      if (*ids[k] < 0 && cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < n_vocab)
        *ids[k] = (int)x->valuedouble;
    }
    cJSON_Delete(o);
    free(text);
  }
}

static int copy_file(const char *from, const char *to, char *err, size_t errlen) {
  size_t n = 0;
  char *buf = hf_read_text(from, &n);
  FILE *fp = buf ? fopen(to, "wb") : NULL;
  int rc = fp && fwrite(buf, 1, n, fp) == n ? 0 : -1;
  if (fp && fclose(fp)) rc = -1;
  if (rc) snprintf(err, errlen, "cannot copy %s to %s: %s", from, to, strerror(errno));
  free(buf);
  return rc;
}

/* Copies the HF tokenizer files present in src; returns how many, or -1. */
static int copy_tokenizer(const char *src, const char *dir, char *err, size_t errlen) {
  static const char *files[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json",
                                "chat_template.json"};
  char a[1024], b[1024], ra[4096], rb[4096];
  int n = 0;
  if (realpath(src, ra) && realpath(dir, rb) && !strcmp(ra, rb)) return 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(a, sizeof a, "%s/%s", src, files[i]);
    snprintf(b, sizeof b, "%s/%s", dir, files[i]);
    if (access(a, R_OK)) continue;
    if (copy_file(a, b, err, errlen)) return -1;
    n++;
  }
  return n;
}

/* Shard boundaries: entries [first[k], first[k + 1]) go to shard k. */
static int plan_shards(const struct param_table *t, size_t elem, size_t cap, int *first) {
  int k = 0;
  size_t bytes = 0;
  first[0] = 0;
  for (int i = 0; i < t->n; i++) {
    size_t b = t->e[i].numel * elem;
    if (cap && bytes && bytes + b > cap) {
      first[++k] = i;
      bytes = 0;
    }
    bytes += b;
  }
  first[++k] = t->n;
  return k;
}

static int write_weights(const char *dir, const struct param_table *t, const float *params,
                         const struct st_save_opts *o, char *err, size_t errlen) {
  size_t elem = st_dtype_size(o->dtype);
  int *first = malloc(((size_t)t->n + 2) * sizeof *first), rc = 0;
  if (!first) return snprintf(err, errlen, "%s: out of memory", dir), -1;
  int k = plan_shards(t, elem, o->shard_bytes, first);
  char path[1024], name[64];
  /* a re-export must not leave the other layout's file behind (the index wins on load) */
  snprintf(path, sizeof path, "%s/%s", dir, k == 1 ? "model.safetensors.index.json" : "model.safetensors");
  unlink(path);
  if (k == 1) {
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rc = st_write_file(path, t, 0, t->n, params, o->dtype, err, errlen);
    free(first);
    return rc;
  }
  cJSON *idx = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(idx, "metadata");
  cJSON *wm = cJSON_AddObjectToObject(idx, "weight_map");
  cJSON_AddNumberToObject(meta, "total_size", (double)(t->total * elem));
  for (int s = 0; s < k && !rc; s++) {
    snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, k);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rc = st_write_file(path, t, first[s], first[s + 1], params, o->dtype, err, errlen);
    for (int i = first[s]; i < first[s + 1]; i++) cJSON_AddStringToObject(wm, t->e[i].name, name);
  }
  char *text = cJSON_Print(idx);
  if (!rc) rc = write_text(dir, "model.safetensors.index.json", text, err, errlen);
  free(text);
  cJSON_Delete(idx);
  free(first);
  return rc;
}

int st_dir_save(const char *dir, const struct model_config *mc, const float *params,
                const struct st_save_opts *o, int *n_tok_files, char *err, size_t errlen) {
  if (ckpt_mkdirs(dir)) {
    snprintf(err, errlen, "%s: cannot create the directory: %s", dir, strerror(errno));
    return -1;
  }
  int bos = o->bos_id, eos = o->eos_id, ntok = 0;
  if (o->tokenizer_dir) hf_token_ids(o->tokenizer_dir, INT_MAX, &bos, &eos);
  struct param_table t;
  param_table_build(&t, mc);
  int rc = write_weights(dir, &t, params, o, err, errlen);
  param_table_free(&t);
  char *cfg = rc ? NULL : hf_config_write(mc, o->dtype, bos, eos);
  if (!rc) rc = write_text(dir, "config.json", cfg, err, errlen);
  free(cfg);
  if (!rc) {
    cJSON *g = cJSON_CreateObject();
    cJSON_AddBoolToObject(g, "_from_model_config", 1);
    if (bos >= 0) cJSON_AddNumberToObject(g, "bos_token_id", bos);
    if (eos >= 0) cJSON_AddNumberToObject(g, "eos_token_id", eos);
    char *text = cJSON_Print(g);
    rc = write_text(dir, "generation_config.json", text, err, errlen);
    free(text);
    cJSON_Delete(g);
  }
  if (!rc && o->tokenizer_dir) rc = (ntok = copy_tokenizer(o->tokenizer_dir, dir, err, errlen)) < 0;
  if (n_tok_files) *n_tok_files = ntok;
  return rc ? -1 : 0;
}
