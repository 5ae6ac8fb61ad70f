/* env/test_env_train.c: tool tokens get no gradient (rl/experience.h's resp_mask in
 * train/rl_step.c). One GRPO step on a tiny model, old logprobs = the rollout's, from the
 * same start each time:
 *   (a) a tool turn in the middle of each response: giving its tokens garbage rollout
 *       logprobs changes nothing (parameters bit-identical), and logprob_diff_max stays
 *       < 1e-5 (the tool tokens are not compared); the same batch without the mask moves the
 *       parameters elsewhere (the check can fail) and its logprob_diff_max is large;
 *   (b) a tool turn at the end of each response: the update equals that of the responses
 *       cut before it, without a mask (1e-6 relative: the masked rows' zero gradients only
 *       change the packed shapes' summation order), i.e. the loss does not depend on the
 *       masked tokens' logits;
 *   (c) the mask survives the wire format between ranks (mpi/xfer.h) and sample_copy, and
 *       an all-ones mask is not kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "mpi/xfer.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"

static const char *deck_tiny =
    "[run]\nseed = 7\nsteps = 5\n"
    "[model]\ndim = 32\nlayers = 2\nheads = 4\nkv_heads = 2\nffn_dim = 64\nmax_seq = 32\n"
    "[optim]\nlr = 1e-2\ngrad_clip = 1.0\n"
    "[algo]\nold_logprobs = rollout\nkl_coef = 0.1\n"
    "[ranks]\nmicro_batch_seqs = 64\n";

#define N_MODEL 5   /* model tokens of a response: 3 before the tool turn, 2 after */
#define N_TOOL 4

struct fix {
  struct config cfg;
  struct model_config mc;
  struct trainer t;
};

static void fix_make(struct fix *f) {
  char err[512];
  memset(f, 0, sizeof *f);
  CHECK(config_parse(&f->cfg, "tiny.ini", deck_tiny, 0, NULL, err, sizeof err) == 0);
  CHECK(model_config_from_deck(&f->mc, &f->cfg, TOK_CHAR_VOCAB, err, sizeof err) == 0);
  CHECK(trainer_create(&f->t, &f->cfg, &f->mc, 512, MPI_COMM_SELF, err, sizeof err) == 0);
  trainer_begin_rl(&f->t);
}

enum layout { TOOL_MIDDLE, TOOL_END, TOOL_NONE };

/* 2 groups x 2 samples; rollout logprobs of the sampled tokens from the current weights,
 * tool_lp for the tool tokens; mask them when masked. */
static void batch(struct trainer *t, struct sample_batch *b, enum layout lay, float tool_lp, int masked) {
  for (int k = 0; k < 4; k++) {
    struct sample *s = sample_batch_add(b);
    int32_t prompt[4] = { TOK_CHAR_BOS, '1' + k - 32, '*' - 32, '=' - 32 }, resp[16];
    uint8_t mask[16];
    int n = 0, tool0 = lay == TOOL_MIDDLE ? 3 : N_MODEL, n_tool = lay == TOOL_NONE ? 0 : N_TOOL;
    for (int j = 0; j < N_MODEL + n_tool; j++) {
      int tool = j >= tool0 && j < tool0 + n_tool;
      resp[n] = tool ? "<t>9"[j - tool0] - 32 : '0' + (k * 3 + j * 7) % 10 - 32;
      mask[n++] = !tool;
    }
    int tok[32], cu[2] = { 0, 4 + n };
    float lp[32], rlp[16];
    for (int j = 0; j < 4; j++) tok[j] = prompt[j];
    for (int j = 0; j < n; j++) tok[4 + j] = resp[j];
    CHECK(model_forward(&t->policy, tok, cu, 1, lp, NULL, NULL) == 0);
    for (int j = 0; j < n; j++) rlp[j] = mask[j] ? lp[3 + j] : tool_lp;
    sample_set_prompt(s, prompt, 4);
    sample_set_response(s, resp, rlp, n);
    if (masked) CHECK(sample_set_resp_mask(s, mask) == 0 && s->resp_mask);
    s->group = k / 2;
    s->index = k % 2;
    s->weight_version = t->weight_version;
    s->reward = k % 2;
  }
}

/* The parameters after one step on the batch; logprob_diff_max into *lpd. */
static float *step(enum layout lay, float tool_lp, int masked, size_t *n, double *lpd) {
  struct fix f;
  fix_make(&f);
  struct sample_batch b;
  sample_batch_init(&b);
  batch(&f.t, &b, lay, tool_lp, masked);
  struct step_metrics m;
  metrics_init(&m);
  CHECK(trainer_rl_step(&f.t, &b, &m) == 0);
  *n = f.t.policy.table.total;
  *lpd = m.logprob_diff_max;
  float *p = malloc(sizeof(float) * *n);
  memcpy(p, f.t.policy.params, sizeof(float) * *n);
  sample_batch_free(&b);
  trainer_free(&f.t);
  return p;
}

static double rel_diff(const float *a, const float *b, size_t n) {
  double md = 0, mr = 0;
  for (size_t i = 0; i < n; i++) {
    md = fmax(md, fabs((double)a[i] - b[i]));
    mr = fmax(mr, fabs((double)b[i]));
  }
  return md / mr;
}

static void test_mask_travels(void) {
  struct fix f;
  fix_make(&f);
  struct sample_batch b, back;
  sample_batch_init(&b);
  sample_batch_init(&back);
  batch(&f.t, &b, TOOL_MIDDLE, 0.0f, 1);
  batch(&f.t, &b, TOOL_NONE, 0.0f, 0);
  unsigned char *buf = NULL;
  size_t len = 0;
  char err[256] = "";
  CHECK(xfer_encode_batch(&b, &buf, &len) == XFER_OK);
  CHECK(xfer_decode_batch(buf, len, &back, err, sizeof err) == XFER_OK);
  CHECK(back.n == b.n);
  for (int i = 0; i < b.n && i < back.n; i++) CHECK(sample_equal(&b.s[i], &back.s[i]));
  CHECK(back.s[0].resp_mask && back.s[0].resp_mask[3] == 0 && !back.s[4].resp_mask);
  struct sample c;
  sample_init(&c);
  CHECK(sample_copy(&c, &b.s[0]) == 0 && sample_equal(&c, &b.s[0]));
  uint8_t ones[16];
  memset(ones, 1, sizeof ones);
  CHECK(sample_set_resp_mask(&c, ones) == 0 && c.resp_mask == NULL);
  CHECK(!sample_equal(&c, &b.s[0]));
  sample_free(&c);
  free(buf);
  sample_batch_free(&b);
  sample_batch_free(&back);
  trainer_free(&f.t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  test_mask_travels();
  size_t n;
  double lpd_a, lpd_g, lpd_u, lpd_e, lpd_c;
  float *a = step(TOOL_MIDDLE, 0.0f, 1, &n, &lpd_a);
  float *g = step(TOOL_MIDDLE, -30.0f, 1, &n, &lpd_g);
  float *u = step(TOOL_MIDDLE, -30.0f, 0, &n, &lpd_u);
  float *e = step(TOOL_END, -30.0f, 1, &n, &lpd_e);
  float *c = step(TOOL_NONE, 0.0f, 0, &n, &lpd_c);
  double d_ag = rel_diff(g, a, n), d_au = rel_diff(u, a, n), d_ec = rel_diff(e, c, n);
  printf("middle tool turn: garbage tool logprobs %.3g, unmasked %.3g (relative to masked); "
         "logprob_diff_max masked %.3g unmasked %.3g\nend tool turn vs cut responses %.3g\n",
         d_ag, d_au, lpd_g, lpd_u, d_ec);
  CHECK(memcmp(a, g, sizeof(float) * n) == 0);
  CHECK(lpd_a < 1e-5 && lpd_g < 1e-5 && lpd_e < 1e-5);
  CHECK(d_au > 1e-4 && lpd_u > 1.0);
  CHECK(d_ec <= 1e-6);
  free(a);
  free(g);
  free(u);
  free(e);
  free(c);
  int rc = TEST_RESULT("test_env_train");
  MPI_Finalize();
  return rc;
}
