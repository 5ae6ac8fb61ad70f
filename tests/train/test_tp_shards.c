/* train/test_tp_shards.c: what a tensor-parallel trainer (trainer_create_tp, [ranks]
 * train_tp > 1) allocates and how its weights move, on every rank of MPI_COMM_WORLD as one
 * TP group (2 ranks). Checked:
 *   - the policy's weights and gradients, the AdamW moments and the reference hold this
 *     rank's shard only: the count computed from the model's dimensions (q, k, v, gate, up
 *     by output rows, o and down by input columns, the tied embedding by vocabulary rows
 *     split train_tp ways; the norms whole), and the shards of the group add up to the full
 *     model with the norms counted once per rank;
 *   - the scratch a weight sync, checkpoint or restart moves a tensor through is one tensor:
 *     the largest of the full table is the embedding, V x C;
 *   - [model] init = scratch built tensor by tensor and gathered back one tensor at a time
 *     (trainer_tensor_full) equals the one-rank model's initial weights bit for bit
 *     (model_params_init on the full table), and trainer_tensor_local of that tensor gives
 *     the rank's shard back exactly. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "io/model_h5.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"

static const char *const deck =
    "[run]\nseed = 5\nsteps = 1\n"
    "[model]\ndim = 32\nlayers = 2\nheads = 4\nkv_heads = 2\nffn_dim = 48\nmax_seq = 32\n"
    "[algo]\nkl_coef = 0.01\n"
    "[task]\nname = arith\n";

/* This rank's floats of mc split over tp ranks, from the dimensions alone. */
static size_t shard_floats(const struct model_config *mc, int tp) {
  size_t C = (size_t)mc->dim, F = (size_t)mc->ffn_dim, V = (size_t)mc->vocab_size;
  size_t kv = (size_t)mc->kv_heads * (size_t)(mc->dim / mc->heads);
  size_t split = C * C + 2 * C * kv + C * C + 3 * C * F;  /* q k v o gate up down */
  size_t norms = 2 * C;
  return (size_t)mc->layers * (split / (size_t)tp + norms) + V * C / (size_t)tp + C;
}

static size_t replicated_floats(const struct model_config *mc) {
  return (size_t)mc->layers * 2 * (size_t)mc->dim + (size_t)mc->dim;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct config cfg;
  struct model_config mc;
  struct tokenizer tok;
  struct trainer t;
  char err[512];
  tokenizer_init_char(&tok);
  int rc = config_parse(&cfg, "shards.ini", deck, 0, NULL, err, sizeof err) ||
           model_config_from_deck(&mc, &cfg, tok.vocab_size, err, sizeof err) ||
           trainer_create_tp(&t, &cfg, &mc, 64, MPI_COMM_SELF, MPI_COMM_WORLD, err, sizeof err);
  if (rc) {
    fprintf(stderr, "setup: %s\n", err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  size_t want = shard_floats(&mc, size), full = model_param_count(&mc);
  CHECK(trainer_tp(&t) == (size > 1));
  CHECK(t.policy.table.total == want);
  CHECK(t.policy.weights.n == want);
  CHECK((size_t)t.opt.n == want);
  CHECK(t.ref.host != NULL && t.ref.n == want);
  CHECK(want * (size_t)size == full + (size_t)(size - 1) * replicated_floats(&mc));
  const struct param_table *ft = trainer_full_table(&t);
  CHECK(ft->total == full);
  CHECK(param_table_max_numel(ft) == (size_t)mc.vocab_size * (size_t)mc.dim);

  float *ref = malloc(sizeof(float) * full), *x = malloc(sizeof(float) * param_table_max_numel(ft));
  float *back = malloc(sizeof(float) * want);
  model_params_init(ft, ref, mc.init_std, (uint64_t)cfg.run.seed);
  long bad = 0, bad_back = 0;
  for (int i = 0; i < ft->n; i++) {
    trainer_tensor_full(&t, t.policy.params, i, x);
    bad += memcmp(x, ref + ft->e[i].offset, sizeof(float) * ft->e[i].numel) != 0;
    trainer_tensor_local(&t, i, x, back);
    const struct param_entry *le = &t.policy.table.e[i];
    bad_back +=
        memcmp(back + le->offset, t.policy.params + le->offset, sizeof(float) * le->numel) != 0;
  }
  CHECK_MSG(bad == 0, "%ld tensors gathered differ from the one-rank init\n", bad);
  CHECK_MSG(bad_back == 0, "%ld shards taken back differ\n", bad_back);
  free(ref);
  free(x);
  free(back);
  trainer_free(&t);
  tokenizer_free(&tok);
  int fails = tu_failures, all = 0;
  MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int out = rank == 0 ? TEST_RESULT("test_tp_shards") : 0;
  MPI_Finalize();
  return all ? 1 : out;
}
