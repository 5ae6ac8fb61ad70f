/* cli/cmd_init.c: `rlpt init DECK --out FILE.h5 [section.key=value ...]` writes a
 * freshly initialised model (the deck's [model] shape, normal(0, init_std)
 * weights from [run] seed) in the HDF5 layout of io/model_h5.h. No MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "io/model_h5.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

static int init_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt init DECK --out FILE.h5 [section.key=value ...]\n"
          "  writes a model initialised from the deck's [model] section and [run] seed\n");
  return rc;
}

/* DECK and FILE from the non-override arguments; 0, or the exit code. */
static int init_args(int n_rest, char **rest, const char **deck, const char **out) {
  *deck = *out = NULL;
  for (int i = 0; i < n_rest; i++) {
    if (!strcmp(rest[i], "-h") || !strcmp(rest[i], "--help")) return init_usage(0) - 1;
    if (!strcmp(rest[i], "--out") && i + 1 < n_rest) *out = rest[++i];
    else if (rest[i][0] != '-' && !*deck) *deck = rest[i];
    else {
      fprintf(stderr, "rlpt: init: unexpected argument '%s'\n", rest[i]);
      return init_usage(2);
    }
  }
  if (!*deck || !*out) return init_usage(2);
  return 0;
}

static int init_write(const struct config *cfg, const char *deck, const char *out) {
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
  float *params = malloc(sizeof(float) * t.total);
  if (!params) {
    fprintf(stderr, "rlpt: init: out of memory for %zu parameters\n", t.total);
    param_table_free(&t);
    return 1;
  }
  model_params_init(&t, params, mc.init_std, (uint64_t)cfg->run.seed);
  int rc = model_h5_write(out, &mc, params);
  if (!rc)
    printf("rlpt: wrote %s: %zu parameters (vocab %d, dim %d, layers %d, heads %d/%d, ffn %d)\n",
           out, t.total, mc.vocab_size, mc.dim, mc.layers, mc.heads, mc.kv_heads, mc.ffn_dim);
  free(params);
  param_table_free(&t);
  return rc;
}

int cmd_init(int argc, char **argv) {
  char **over = calloc((size_t)argc + 1, sizeof *over), **rest = calloc((size_t)argc + 1, sizeof *rest);
  struct config *cfg = malloc(sizeof *cfg);
  int n_over = 0, n_rest = 0, rc = 1;
  const char *deck, *out;
  if (!over || !rest || !cfg) {
    fprintf(stderr, "rlpt: init: out of memory\n");
    goto done;
  }
  config_split_args(argc, argv, over, &n_over, rest, &n_rest);
  rc = init_args(n_rest, rest, &deck, &out);
  if (rc) {
    rc = rc < 0 ? 0 : rc;
    goto done;
  }
  rc = config_load_serial(cfg, deck, n_over, over);
  if (!rc) rc = init_write(cfg, deck, out);
done:
  free(cfg);
  free(over);
  free(rest);
  return rc;
}
