/* model/scratch.c: a freshly initialised model file from a deck (model/scratch.h). */
#include "model/scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "io/model_h5.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/alloc.h"

static int scratch_write(const struct config *cfg, const char *deck, const char *out) {
  struct model_config mc;
  char err[512];
  if (strcmp(cfg->model.init, "scratch")) {
    fprintf(stderr, "rlpt: %s: [model] init = %s; rlpt init only creates scratch models\n", deck,
            cfg->model.init);
    return 2;
  }
  if (model_config_from_deck(&mc, cfg, TOK_CHAR_VOCAB, err, sizeof err)) {
    fprintf(stderr, "rlpt: %s: %s\n", deck, err);
    return 2;
  }
  struct param_table t;
  param_table_build(&t, &mc);
  float *params = malloc_check(sizeof(float) * t.total);
  model_params_init(&t, params, mc.init_std, (uint64_t)cfg->run.seed);
  int rc = model_h5_write(out, &mc, params);
  if (!rc)
    printf("rlpt: wrote %s: %zu parameters (vocab %d, dim %d, layers %d, heads %d/%d, ffn %d)\n",
           out, t.total, mc.vocab_size, mc.dim, mc.layers, mc.heads, mc.kv_heads, mc.ffn_dim);
  free(params);
  param_table_free(&t);
  return rc;
}

int model_scratch_write(const struct model_scratch_opts *o) {
  struct config *cfg = malloc_check(sizeof *cfg);
  int rc = config_load_serial(cfg, o->deck, o->n_over, o->over);
  if (!rc) rc = scratch_write(cfg, o->deck, o->out);
  free(cfg);
  return rc;
}
