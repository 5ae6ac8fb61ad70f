/* rl/test_rm.c: the reward-model component ([reward] rm_path, rm_alpha; rl/reward_model.h).
 *
 *   golden    the PyTorch reference model with a value head (tests/ref/golden_gqa_bias_value.h5,
 *             tests/ref/model_ref.py) loaded as a reward model: each sequence's score equals the
 *             reference's per-token value at its last token within 1e-4 (fp32 vs float64,
 *             the tolerance of test_model_golden)
 *   init      a model made as `rlpt init` makes it (model_params_init + model_h5_write, value
 *             head): packed scores equal a separate model_forward of each sequence alone, and
 *             scores in one packed forward equal scores in many small ones, within 1e-5
 *   ckpt      a checkpoint directory whose /model has no value head: its PPO /critic is used
 *             (via `latest`), scores equal a forward of the critic's weights within 1e-5
 *   errors    missing file, not HDF5, no value head, other vocabulary, max_seq too short,
 *             an over-long sequence: 2 (or -1) with a message naming rm_path; the same from
 *             the metadata-only reward_model_check
 *   mixing    r = alpha * rule + (1 - alpha) * rm on hand-computed numbers (alpha 0.25, 1, 0),
 *             a NaN score zeroed and counted, batch statistics of the rm part (exact to 1e-12)
 *   metrics   `test_rm --metrics FILE ALPHA` (the MPI run test) checks every RL line of a
 *             metrics JSONL has reward_parts.rm and reward_mean = ALPHA * reward_parts.correct
 *             + (1 - ALPHA) * reward_parts.rm within 1e-5 (correct_weight 1, no other part). */
#include <cjson/cJSON.h>
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_fixture.h"
#include "io/model_h5.h"
#include "rl/reward.h"
#include "rl/reward_model.h"
#include "testutil.h"

static void *read_ds(hid_t f, const char *name, hid_t type, size_t elem, int *n) {
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  hid_t sp = H5Dget_space(ds);
  *n = (int)H5Sget_simple_extent_npoints(sp);
  void *buf = malloc(elem * (size_t)*n);
  H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  H5Sclose(sp);
  H5Dclose(ds);
  return buf;
}

static void test_golden(void) {
  char path[4096], err[512];
  const char *src = getenv("RLPT_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/ref/golden_gqa_bias_value.h5", src ? src : "..");
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  CHECK_MSG(f >= 0, "cannot open %s", path);
  if (f < 0) return;
  int nt, nc, nv;
  int *tok = read_ds(f, "tokens", H5T_NATIVE_INT, sizeof(int), &nt);
  int *cu = read_ds(f, "cu_seqlens", H5T_NATIVE_INT, sizeof(int), &nc);
  double *val = read_ds(f, "value", H5T_NATIVE_DOUBLE, sizeof(double), &nv);
  H5Fclose(f);
  int nseq = nc - 1;
  struct reward_model rm;
  CHECK(reward_model_load(&rm, path, 50, 24, 64, err, sizeof err) == 0);
  CHECK(strcmp(rm.group, "model") == 0);
  struct rm_seq seqs[8];
  double out[8];
  for (int s = 0; s < nseq; s++) {  /* split each into a 2-token "prompt" and the rest */
    int n = cu[s + 1] - cu[s];
    seqs[s] = (struct rm_seq){.a = tok + cu[s], .na = 2, .b = tok + cu[s] + 2, .nb = n - 2};
  }
  CHECK(reward_model_score(&rm, seqs, nseq, out, err, sizeof err) == 0);
  for (int s = 0; s < nseq; s++) {
    CHECK_NEAR(out[s], val[cu[s + 1] - 1], 1e-4);
    printf("  golden seq %d: rm %.7f reference %.7f\n", s, out[s], val[cu[s + 1] - 1]);
  }
  reward_model_free(&rm);
  free(tok);
  free(cu);
  free(val);
}

static struct model_config tiny_config(int value_head) {
  return (struct model_config){.vocab_size = 30, .dim = 16, .layers = 2, .heads = 4, .kv_heads = 2,
                               .ffn_dim = 32, .max_seq = 40, .head_dim = 4, .rope_theta = 10000.0,
                               .norm_eps = 1e-5, .init_std = 0.3, .tie_embeddings = 1, .qkv_bias = 0,
                               .value_head = value_head};
}

/* The model file `rlpt init` would write for mc (its own two calls). */
static void write_init_file(const char *path, const struct model_config *mc, uint64_t seed) {
  struct param_table t;
  param_table_build(&t, mc);
  float *p = malloc(sizeof(float) * t.total);
  model_params_init(&t, p, mc->init_std, seed);
  CHECK(model_h5_write(path, mc, p) == 0);
  free(p);
  param_table_free(&t);
}

/* Value at the last token of tokens[0..n) by a model_forward of that sequence alone. */
static double alone_value(struct model *m, const int *tokens, int n) {
  int cu[2] = {0, n};
  float *v = malloc(sizeof(float) * (size_t)n);
  CHECK(model_forward(m, tokens, cu, 1, NULL, NULL, v) == 0);
  double x = v[n - 1];
  free(v);
  return x;
}

#define NSEQ 7
static const int lens[NSEQ] = {1, 5, 40, 12, 3, 27, 9};

static void make_seqs(int *tok, struct rm_seq *seqs) {
  int off = 0;
  for (int s = 0; s < NSEQ; s++) {
    for (int k = 0; k < lens[s]; k++) tok[off + k] = (s * 7 + k * 13 + 1) % 30;
    int na = lens[s] / 3;
    seqs[s] = (struct rm_seq){.a = tok + off, .na = na, .b = tok + off + na, .nb = lens[s] - na};
    off += lens[s];
  }
}

static void test_init_file(void) {
  struct model_config mc = tiny_config(1);
  char err[512];
  write_init_file("rm_test_init.h5", &mc, 99);
  /* the independent path: the same parameters in a fresh model */
  struct model ref;
  CHECK(model_create(&ref, &mc, 64, &cpu_backend) == 0);
  model_params_init(&ref.table, ref.params, mc.init_std, 99);
  int tok[200];
  struct rm_seq seqs[NSEQ];
  make_seqs(tok, seqs);
  double big[NSEQ], small[NSEQ];
  struct reward_model rm, rm2;
  CHECK(reward_model_load(&rm, "rm_test_init.h5", 30, 40, 4096, err, sizeof err) == 0);
  CHECK(rm.budget == 4096);
  CHECK(reward_model_score(&rm, seqs, NSEQ, big, err, sizeof err) == 0);  /* one forward */
  CHECK(reward_model_load(&rm2, "rm_test_init.h5", 30, 40, 1, err, sizeof err) == 0);
  CHECK(rm2.budget == 40);  /* raised to the policy's max_seq */
  CHECK(reward_model_score(&rm2, seqs, NSEQ, small, err, sizeof err) == 0);  /* several forwards */
  double worst = 0, spread = 0;
  for (int s = 0; s < NSEQ; s++) {
    double a = alone_value(&ref, seqs[s].a, lens[s]);
    CHECK_NEAR(big[s], a, 1e-5);
    CHECK_NEAR(small[s], a, 1e-5);
    worst = fmax(worst, fmax(fabs(big[s] - a), fabs(small[s] - big[s])));
    spread = fmax(spread, fabs(big[s] - big[0]));
  }
  CHECK(spread > 1e-3);  /* the scores differ between sequences: the test can tell them apart */
  printf("  init file: %d sequences, max |packed - alone| %.2e, score spread %.3f\n", NSEQ, worst, spread);
  /* a sequence longer than max_seq / budget is refused with a message */
  struct rm_seq longer = {.a = tok, .na = 40, .b = tok, .nb = 1};
  CHECK(reward_model_score(&rm, &longer, 1, big, err, sizeof err) == -1 && strstr(err, "41 tokens"));
  struct rm_seq empty = {0};
  CHECK(reward_model_score(&rm, &empty, 1, big, err, sizeof err) == -1);
  int badtok[2] = {3, 30};
  struct rm_seq oob = {.a = badtok, .na = 2};
  CHECK(reward_model_score(&rm, &oob, 1, big, err, sizeof err) == -1 && strstr(err, "outside 0..29"));
  reward_model_free(&rm);
  reward_model_free(&rm2);
  model_free(&ref);
}

static void test_ckpt_critic(void) {
  struct ckpt_state st;
  char err[512];
  CHECK(fixture_state(&st, 3, 42, 0) == 0);
  CHECK(ckpt_write("rm_test_ckpt", &st, NULL, MPI_COMM_WORLD) == CKPT_OK);
  struct reward_model rm;
  CHECK(reward_model_load(&rm, "rm_test_ckpt", 40, 64, 256, err, sizeof err) == 0);
  CHECK(rm.group && strcmp(rm.group, "critic") == 0 && strstr(rm.path, "step_00000003.h5"));
  struct model ref;
  CHECK(model_create(&ref, &st.critic_mc, 64, &cpu_backend) == 0);
  memcpy(ref.params, st.critic_params, sizeof(float) * ref.table.total);
  int tok[20];
  for (int k = 0; k < 20; k++) tok[k] = (k * 11 + 5) % 40;
  struct rm_seq seqs[2] = {{.a = tok, .na = 8, .b = tok + 8, .nb = 4}, {.a = tok + 12, .na = 8}};
  double out[2];
  CHECK(reward_model_score(&rm, seqs, 2, out, err, sizeof err) == 0);
  CHECK_NEAR(out[0], alone_value(&ref, tok, 12), 1e-5);
  CHECK_NEAR(out[1], alone_value(&ref, tok + 12, 8), 1e-5);
  reward_model_free(&rm);
  model_free(&ref);
  ckpt_state_free(&st);
}

static void test_errors(void) {
  struct reward_model rm;
  char err[512];
  struct model_config nv = tiny_config(0), vh = tiny_config(1);
  write_init_file("rm_test_novalue.h5", &nv, 1);
  write_init_file("rm_test_init.h5", &vh, 99);
  FILE *f = fopen("rm_test_text.h5", "w");
  if (f) { fputs("not hdf5\n", f); fclose(f); }
  CHECK(reward_model_load(&rm, "rm_test_missing.h5", 30, 40, 64, err, sizeof err) == 2 &&
        strstr(err, "rm_path") && strstr(err, "does not exist"));
  CHECK(reward_model_load(&rm, "rm_test_text.h5", 30, 40, 64, err, sizeof err) == 2 &&
        strstr(err, "rm_path") && strstr(err, "cannot open"));
  CHECK(reward_model_load(&rm, "rm_test_novalue.h5", 30, 40, 64, err, sizeof err) == 2 &&
        strstr(err, "rm_path") && strstr(err, "no value head"));
  CHECK(reward_model_load(&rm, "rm_test_init.h5", 31, 40, 64, err, sizeof err) == 2 &&
        strstr(err, "rm_path") && strstr(err, "vocab_size 30, the policy 31"));
  CHECK(reward_model_load(&rm, "rm_test_init.h5", 30, 41, 64, err, sizeof err) == 2 &&
        strstr(err, "rm_path") && strstr(err, "max_seq 40"));
  CHECK(reward_model_load(&rm, ".", 30, 40, 64, err, sizeof err) == 2 && strstr(err, "no readable checkpoint"));
  /* the metadata-only check (rank 0 at rlpt run setup) agrees */
  CHECK(reward_model_check("rm_test_init.h5", 30, 40, NULL, err, sizeof err) == 0);
  CHECK(reward_model_check("rm_test_novalue.h5", 30, 40, NULL, err, sizeof err) == 2 && strstr(err, "no value head"));
  CHECK(reward_model_check("rm_test_init.h5", 30, 41, NULL, err, sizeof err) == 2 && strstr(err, "max_seq 40"));
  printf("  e.g. %s\n", err);
}

static struct config mix_config(double alpha, int with_rm) {
  struct config cfg;
  config_defaults(&cfg);
  snprintf(cfg.task.name, sizeof cfg.task.name, "arith");
  cfg.rollout.max_new_tokens = 20;
  cfg.reward.correct_weight = 1.0;
  cfg.reward.format_weight = 0.5;
  snprintf(cfg.reward.format_tags, sizeof cfg.reward.format_tags, "<a>,</a>");
  cfg.reward.rm_alpha = alpha;
  if (with_rm) snprintf(cfg.reward.rm_path, sizeof cfg.reward.rm_path, "rm.h5");
  return cfg;
}

static void test_mixing(void) {
  struct reward_cfg rc;
  struct task t;
  char err[256];
  struct config cfg = mix_config(0.25, 1);
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 0 && task_init(&t, &cfg, err, sizeof err) == 0);
  CHECK(rc.has_rm && rc.weight[REWARD_RM] == 1.0 && strcmp(reward_component_name(REWARD_RM), "rm") == 0);
  struct task_prompt p = {0};
  snprintf(p.answer, sizeof p.answer, "46");
  struct reward_item right = {.prompt = &p, .text = "<a>46</a>", .len = 9, .n_tokens = 5};
  double parts[REWARD_NCOMPONENTS];
  int bad = 0;
  /* rule = 1 * 1 + 0.5 * 1 = 1.5; rm = -2: 0.25 * 1.5 + 0.75 * -2 = -1.125 */
  double r = reward_score_one_rm(&rc, &t, &right, -2.0, parts, &bad);
  CHECK(bad == 0 && parts[REWARD_RM] == -2.0 && parts[REWARD_CORRECT] == 1.0);
  CHECK_NEAR(r, -1.125, 1e-12);
  /* alpha = 1: the rule reward exactly, rm still reported */
  rc.rm_alpha = 1.0;
  r = reward_score_one_rm(&rc, &t, &right, -2.0, parts, &bad);
  CHECK(r == 1.5 && parts[REWARD_RM] == -2.0);
  /* alpha = 0: the RM alone */
  rc.rm_alpha = 0.0;
  r = reward_score_one_rm(&rc, &t, &right, 0.7, parts, &bad);
  CHECK_NEAR(r, 0.7, 1e-15);
  /* a NaN score: zeroed and counted; alpha 0.25 -> 0.25 * 1.5 */
  rc.rm_alpha = 0.25;
  r = reward_score_one_rm(&rc, &t, &right, NAN, parts, &bad);
  CHECK(bad == 1 && parts[REWARD_RM] == 0.0);
  CHECK_NEAR(r, 0.375, 1e-12);
  /* the plain form scores rm 0 */
  r = reward_score_one(&rc, &t, &right, parts, &bad);
  CHECK(bad == 0);
  CHECK_NEAR(r, 0.375, 1e-12);
  /* a batch: groups {right 0.5, wrong 0.5}, {right INF, right 0.5}; wrong in tags: rule 0.5 */
  struct reward_item wrong = {.prompt = &p, .text = "<a>47</a>", .len = 9, .n_tokens = 5};
  struct reward_item items[4] = {right, wrong, right, right};
  items[2].group = items[3].group = 1;
  double rm[4] = {0.5, 0.5, INFINITY, 0.5}, rew[4], bparts[4][REWARD_NCOMPONENTS];
  struct reward_stats st;
  CHECK(reward_score_batch_rm(&rc, &t, items, rm, 4, 2, rew, bparts, &st) == 0);
  CHECK_NEAR(rew[0], 0.25 * 1.5 + 0.75 * 0.5, 1e-12);
  CHECK_NEAR(rew[1], 0.25 * 0.5 + 0.75 * 0.5, 1e-12);
  CHECK_NEAR(rew[2], 0.25 * 1.5, 1e-12);
  CHECK(st.nonfinite == 1);
  CHECK_NEAR(st.part_mean[REWARD_RM], 1.5 / 4, 1e-12);
  CHECK_NEAR(st.part_const_frac[REWARD_RM], 0.5, 1e-12);  /* group 0 constant, group 1 not */
  /* without a reward model the score is ignored and the total is the rule */
  cfg = mix_config(1.0, 0);
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 0 && !rc.has_rm && rc.weight[REWARD_RM] == 0.0);
  r = reward_score_one_rm(&rc, &t, &right, 5.0, parts, &bad);
  CHECK(r == 1.5 && parts[REWARD_RM] == 0.0 && bad == 0);
  /* rm_alpha < 1 without rm_path */
  cfg = mix_config(0.5, 0);
  CHECK(reward_init(&rc, &cfg, err, sizeof err) == 2 && strstr(err, "rm_alpha") && strstr(err, "rm_path"));
  task_free(&t);
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Every RL step line (not eval) of path has reward_parts.rm and the mixed mean. Returns the lines seen. */
static int check_metrics(const char *path, double alpha) {
  FILE *f = fopen(path, "r");
  CHECK_MSG(f != NULL, "cannot open %s", path);
  if (!f) return 0;
  char line[16384];
  int n = 0, rm_nonzero = 0;
  while (fgets(line, sizeof line, f)) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
    int eval = cJSON_GetObjectItemCaseSensitive(o, "eval_pass@1") != NULL;
    if (o && cJSON_IsString(ph) && !strcmp(ph->valuestring, "rl") && !eval) {
      double rm = num(o, "reward_parts.rm"), c = num(o, "reward_parts.correct"), mean = num(o, "reward_mean");
      CHECK_MSG(isfinite(rm), "%s: an rl line without reward_parts.rm", path);
      CHECK_NEAR(mean, alpha * c + (1 - alpha) * rm, 1e-5);
      rm_nonzero += rm != 0.0;
      printf("  step %g: reward_mean %.6f correct %.4f rm %.6f\n", num(o, "step"), mean, c, rm);
      n++;
    }
    cJSON_Delete(o);
  }
  fclose(f);
  CHECK_MSG(rm_nonzero > 0, "%s: reward_parts.rm is 0 on every line (the scores did not arrive)", path);
  return n;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--metrics")) {
    CHECK(check_metrics(argv[2], atof(argv[3])) >= 1);
    return TEST_RESULT("test_rm --metrics");
  }
  MPI_Init(&argc, &argv);
  test_golden();
  test_init_file();
  test_ckpt_critic();
  test_errors();
  test_mixing();
  MPI_Finalize();
  return TEST_RESULT("test_rm");
}
