/* model/import.c: [model] init = gguf:PATH | hf:DIR for a run (model/import.h):
 * the model config merged from the file and the deck, the file's BPE tokenizer
 * on every rank, and the weights for the train ranks. */
#include "model/import.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "io/hf_tokenizer.h"
#include "io/safetensors.h"
#include "tasks/chat.h"
#include "tokenizer/bpe.h"

int model_import_is_gguf(const struct config *cfg) {
  return !strncmp(cfg->model.init, "gguf:", 5);
}

int model_import_is_hf(const struct config *cfg) { return !strncmp(cfg->model.init, "hf:", 3); }

int model_import_is_file(const struct config *cfg) {
  return model_import_is_gguf(cfg) || model_import_is_hf(cfg);
}

/* One integer shape key: default -> the file's value, else it must agree. */
static int merge_int(const char *key, long deck, long def, int file, int *out, const char *path,
                     char *err, size_t errlen) {
  if (deck == def || deck == file) {
    *out = file;
    return 0;
  }
  snprintf(err, errlen, "[model] %s = %ld but %s has %d (leave the key out to take the file's)",
           key, deck, path, file);
  return 2;
}

static int merge_flt(const char *key, double deck, double def, double file, double *out,
                     const char *path, char *err, size_t errlen) {
  if (deck == def || fabs(deck - file) <= 1e-6 * fabs(file)) {
    *out = file;
    return 0;
  }
  snprintf(err, errlen, "[model] %s = %g but %s has %g (leave the key out to take the file's)",
           key, deck, path, file);
  return 2;
}

static int merge_config(const struct config *cfg, const struct model_config *fmc,
                        struct model_config *mc, const char *path, char *err, size_t errlen) {
  struct config def;
  config_defaults(&def);
  const struct config *d = &def;
  *mc = *fmc;
  int rc = merge_int("vocab_size", cfg->model.vocab_size, d->model.vocab_size, fmc->vocab_size,
                     &mc->vocab_size, path, err, errlen);
  if (!rc) rc = merge_int("dim", cfg->model.dim, d->model.dim, fmc->dim, &mc->dim, path, err, errlen);
  if (!rc) rc = merge_int("layers", cfg->model.layers, d->model.layers, fmc->layers, &mc->layers, path,
                          err, errlen);
  if (!rc) rc = merge_int("heads", cfg->model.heads, d->model.heads, fmc->heads, &mc->heads, path, err,
                          errlen);
  if (!rc) rc = merge_int("kv_heads", cfg->model.kv_heads, d->model.kv_heads, fmc->kv_heads,
                          &mc->kv_heads, path, err, errlen);
  if (!rc) rc = merge_int("ffn_dim", cfg->model.ffn_dim, d->model.ffn_dim, fmc->ffn_dim, &mc->ffn_dim,
                          path, err, errlen);
  if (!rc) rc = merge_int("tie_embeddings", cfg->model.tie_embeddings, d->model.tie_embeddings,
                          fmc->tie_embeddings, &mc->tie_embeddings, path, err, errlen);
  if (!rc) rc = merge_int("qkv_bias", cfg->model.qkv_bias, d->model.qkv_bias, fmc->qkv_bias,
                          &mc->qkv_bias, path, err, errlen);
  if (!rc) rc = merge_flt("rope_theta", cfg->model.rope_theta, d->model.rope_theta, fmc->rope_theta,
                          &mc->rope_theta, path, err, errlen);
  if (!rc) rc = merge_flt("norm_eps", cfg->model.norm_eps, d->model.norm_eps, fmc->norm_eps,
                          &mc->norm_eps, path, err, errlen);
  if (rc) return rc;
  if (cfg->model.max_seq > fmc->max_seq) {
    snprintf(err, errlen, "[model] max_seq = %ld exceeds %s's context length %d", cfg->model.max_seq,
             path, fmc->max_seq);
    return 2;
  }
  mc->max_seq = (int)cfg->model.max_seq;
  mc->init_std = cfg->model.init_std;
  mc->value_head = cfg->model.value_head;
  mc->head_dim = mc->dim / mc->heads;
  return 0;
}

/* The tokenizer's checks against the model: an EOS to stop on, and no id the
 * embedding lacks. No BOS when the file says prompts start without one. */
static int tokenizer_fits(struct tokenizer *tok, int add_bos, const struct model_config *mc,
                          const char *init, char *err, size_t errlen) {
  if (!add_bos) tok->bos_id = -1;
  if (tok->eos_id < 0)
    snprintf(err, errlen, "[model] init = %s: the tokenizer has no EOS token", init);
  else if (tok->vocab_size > mc->vocab_size)
    snprintf(err, errlen, "[model] init = %s: the tokenizer has %d tokens but the model's "
             "vocabulary only %d", init, tok->vocab_size, mc->vocab_size);
  else
    return 0;
  tokenizer_free(tok);
  return 2;
}

/* The file's model config (before the merge with the deck). */
static int file_config(const char *init, struct model_config *fmc, char *err, size_t errlen) {
  char msg[768];
  int rc = 0;
  if (!strncmp(init, "hf:", 3)) {
    rc = st_dir_config(init + 3, fmc, msg, sizeof msg);
  } else {
    struct gguf_file f;
    rc = gguf_open(&f, init + 5, msg, sizeof msg);
    if (!rc) {
      rc = gguf_model_config(&f, fmc, msg, sizeof msg);
      gguf_close(&f);
    }
  }
  if (rc) snprintf(err, errlen, "[model] init = %s: %s", init, msg);
  return rc ? 2 : 0;
}

int model_import_config(const struct config *cfg, struct model_config *mc, char *err,
                        size_t errlen) {
  struct model_config fmc;
  const char *init = cfg->model.init, *path = init + (model_import_is_hf(cfg) ? 3 : 5);
  int rc = file_config(init, &fmc, err, errlen);
  if (!rc) rc = merge_config(cfg, &fmc, mc, path, err, errlen);
  if (!rc && model_config_lora_from_deck(mc, cfg, err, errlen)) rc = 2;
  return rc;
}

int model_import_tokenizer(const struct config *cfg, const char *init, const struct model_config *mc,
                           struct tokenizer *tok, char *err, size_t errlen) {
  char msg[768];
  int add_bos = 1, rc;
  if (!strncmp(init, "hf:", 3)) {
    rc = hf_tokenizer_load(tok, init + 3, &add_bos, msg, sizeof msg);
  } else {
    struct gguf_file f;
    struct bpe_spec s;
    rc = gguf_open(&f, init + 5, msg, sizeof msg);
    if (!rc && !(rc = tokenizer_bpe_spec_gguf(&s, &f, msg, sizeof msg))) {
      add_bos = s.add_bos;
      rc = tokenizer_bpe_build(tok, &s, msg, sizeof msg);
      tokenizer_bpe_spec_free(&s);
    }
    gguf_close(&f);  /* safe after a failed open */
  }
  if (rc) {
    snprintf(err, errlen, "[model] init = %s: tokenizer: %s", init, msg);
    return 2;
  }
  rc = tokenizer_fits(tok, add_bos, mc, init, err, errlen);
  if (!rc) tokenizer_bpe_drop_unknown(tok, cfg->model.unknown_bytes == 1);  /* "error|drop" */
  return rc;
}

int model_import_setup(const struct config *cfg, struct model_config *mc, struct tokenizer *tok,
                       char *err, size_t errlen) {
  int rc = model_import_config(cfg, mc, err, errlen);
  return rc ? rc : model_import_tokenizer(cfg, cfg->model.init, mc, tok, err, errlen);
}

int model_import_or_deck(const struct config *cfg, struct model_config *mc, struct tokenizer *tok,
                         char *err, size_t errlen) {
  if (model_import_is_file(cfg)) {
    int rc = model_import_setup(cfg, mc, tok, err, errlen);
    if (rc) tokenizer_init_char(tok);
    return rc;
  }
  tokenizer_init_char(tok);
  return model_config_from_deck(mc, cfg, tok->vocab_size, err, errlen) != 0 ? 2 : 0;
}

/* The loaded tensors into m->params when their table is m's (without its LoRA adapters,
 * which stay zero: the caller initialises them, model_params_init_lora). */
static int copy_params(struct model *m, const struct param_table *table, const float *params,
                       const char *init, char *err, size_t errlen) {
  size_t base = m->table.trainable ? m->table.trainable : m->table.total;
  int n = 0;
  while (n < m->table.n && m->table.e[n].kind != P_LORA_A) n++;
  int same = table->n == n && table->total == base;
  for (int i = 0; same && i < table->n; i++)
    same = !strcmp(table->e[i].name, m->table.e[i].name) &&
           table->e[i].offset == m->table.e[i].offset && table->e[i].numel == m->table.e[i].numel;
  if (same) memcpy(m->params, params, sizeof(float) * table->total);
  if (same) memset(m->params + base, 0, sizeof(float) * (m->table.total - base));
  else
    snprintf(err, errlen, "[model] init = %s: the file's tensors (%zu parameters) do not match "
             "the run's model (%zu)", init, table->total, base);
  return same ? 0 : 2;
}

int model_import_params(struct model *m, const char *init, char *err, size_t errlen) {
  struct model_config fmc;
  struct param_table table;
  float *params = NULL;
  char msg[768];
  int hf = !strncmp(init, "hf:", 3);
  int rc = hf ? st_dir_load(init + 3, &fmc, &table, &params, msg, sizeof msg)
              : gguf_load_model(init + 5, &fmc, &table, &params, msg, sizeof msg);
  if (rc) {
    snprintf(err, errlen, "[model] init = %s: %s", init, msg);
    return 2;
  }
  rc = copy_params(m, &table, params, init, err, errlen);
  free(params);
  param_table_free(&table);
  return rc;
}

int model_import_chat_template(const char *init, struct chat_template *ct, char *err,
                               size_t errlen) {
  char msg[768] = "";
  int rc;
  if (!strncmp(init, "hf:", 3)) {
    struct hf_tokenizer h;
    rc = hf_tokenizer_open(&h, init + 3, msg, sizeof msg);
    if (!rc && !h.spec.chat_template.p)
      rc = snprintf(msg, sizeof msg, "%s/tokenizer_config.json has no chat_template", init + 3) > 0;
    else if (!rc)
      rc = chat_template_detect(ct, h.spec.chat_template.p, h.spec.chat_template.len, msg, sizeof msg);
    if (h.json) hf_tokenizer_close(&h);
  } else {
    struct gguf_file f;
    rc = gguf_open(&f, init + 5, msg, sizeof msg);
    if (!rc) rc = chat_template_from_gguf(ct, &f, msg, sizeof msg);
    gguf_close(&f);
  }
  if (rc) snprintf(err, errlen, "[model] init = %s: %s", init, msg);
  return rc ? 2 : 0;
}
