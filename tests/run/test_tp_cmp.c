/* run/test_tp_cmp.c: a tensor-parallel run against the same deck on one train rank
 * (tests/run/test_tp_run.sh):
 *   test_tp_cmp A.jsonl B.jsonl [CKPT_A CKPT_B]
 * - the metrics JSONL line by line: the same lines (step, phase), every numeric field but
 *   the wall times and rates within |a - b| <= 1e-5 |a| + 1e-6 (the atol for fields that
 *   are themselves differences of fp32 values, e.g. logprob_diff_max: |rollout - trainer
 *   logprob|, 0 on one rank and ~5e-7 when the trainer's products are split);
 * - the two checkpoints (read with ckpt_read): the same model and step; every tensor of the
 *   policy, the AdamW m and v and the reference within 1e-5 of its max |value| (tu_rel_err).
 * Without the checkpoints, the metrics only. Prints the worst errors. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/ckpt.h"
#include "model/params.h"
#include "testutil.h"

#define RTOL 1e-5
#define ATOL 1e-6
#define TENSOR_TOL 1e-5

static double worst_metric;

static void cmp_line(int ln, const cJSON *a, const cJSON *b) {
  for (const cJSON *x = a->child; x; x = x->next) {
    if (tu_run_dependent_field(x->string)) continue;
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
    int same;
    if (!y) same = 0;
    else if (cJSON_IsNumber(x) && cJSON_IsNumber(y)) {
      double d = fabs(x->valuedouble - y->valuedouble);
      same = d <= ATOL + RTOL * fabs(x->valuedouble);
      if (fabs(x->valuedouble) > 0 && d / fabs(x->valuedouble) > worst_metric)
        worst_metric = d / fabs(x->valuedouble);
    } else if (cJSON_IsNull(x) || cJSON_IsNull(y)) same = cJSON_IsNull(x) && cJSON_IsNull(y);
    else same = cJSON_Compare(x, y, 1);
    CHECK_MSG(same, "line %d: %s: %.17g vs %.17g", ln, x->string, x->valuedouble,
              y ? y->valuedouble : NAN);
  }
}

static int cmp_metrics(const char *pa, const char *pb) {
  FILE *fa = fopen(pa, "r"), *fb = fopen(pb, "r");
  CHECK(fa && fb);
  if (!fa || !fb) return 0;
  char *la = NULL, *lb = NULL;
  size_t ca = 0, cb = 0;
  int n = 0;
  for (;;) {
    ssize_t ra = getline(&la, &ca, fa), rb = getline(&lb, &cb, fb);
    CHECK((ra < 0) == (rb < 0));
    if (ra < 0 || rb < 0) break;
    cJSON *a = cJSON_Parse(la), *b = cJSON_Parse(lb);
    CHECK(a && b);
    if (a && b) cmp_line(++n, a, b);
    cJSON_Delete(a);
    cJSON_Delete(b);
  }
  free(la);
  free(lb);
  fclose(fa);
  fclose(fb);
  return n;
}

static double cmp_vector(const struct param_table *t, const char *what, const float *a,
                         const float *b) {
  double worst = 0;
  for (int i = 0; i < t->n; i++) {
    const struct param_entry *e = &t->e[i];
    double err = tu_rel_err(b + e->offset, a + e->offset, e->numel);
    CHECK_MSG(err <= TENSOR_TOL, "%s %s: relative error %.3g", what, e->name, err);
    worst = err > worst ? err : worst;
  }
  return worst;
}

static void cmp_ckpts(const char *pa, const char *pb) {
  struct ckpt_state a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  CHECK(ckpt_read(pa, &a, NULL, MPI_COMM_SELF) == 0);
  CHECK(ckpt_read(pb, &b, &a.mc, MPI_COMM_SELF) == 0);
  CHECK(a.step == b.step && a.has_optim == b.has_optim && a.has_ref == b.has_ref);
  CHECK(a.params && b.params && a.adam_t == b.adam_t);
  if (!a.params || !b.params) return;
  struct param_table t;
  param_table_build(&t, &a.mc);
  double w = cmp_vector(&t, "params", a.params, b.params);
  if (a.has_optim && b.has_optim) {
    double wm = cmp_vector(&t, "adam_m", a.adam_m, b.adam_m);
    double wv = cmp_vector(&t, "adam_v", a.adam_v, b.adam_v);
    printf("worst tensor errors: params %.3g, adam m %.3g, adam v %.3g\n", w, wm, wv);
  }
  if (a.has_ref && b.has_ref) printf("reference: worst %.3g\n", cmp_vector(&t, "ref", a.ref_params, b.ref_params));
  param_table_free(&t);
  ckpt_state_free(&a);
  ckpt_state_free(&b);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 5 && argc != 3) {
    fprintf(stderr, "usage: test_tp_cmp A.jsonl B.jsonl [CKPT_A CKPT_B]\n");
    MPI_Finalize();
    return 2;
  }
  int n = cmp_metrics(argv[1], argv[2]);
  CHECK(n > 0);
  printf("%d metrics lines compared, worst relative difference %.3g\n", n, worst_metric);
  if (argc == 5) cmp_ckpts(argv[3], argv[4]);
  int rc = TEST_RESULT("test_tp_cmp");
  MPI_Finalize();
  return rc;
}
