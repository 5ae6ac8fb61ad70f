/* run/test_lr_steps.c: the checker of dynsamp_empty_lr (tests/run/tests.cmake): a
 * DAPO run whose every step keeps no group (no update) must still advance the LR
 * schedule once per RL step, so its last checkpoint says trainer step = [run] steps
 * with weight_version 0 (no update applied).
 *
 *   test_clean_lr CKPT_DIR STEPS */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "io/ckpt.h"
#include "testutil.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_clean_lr CKPT_DIR STEPS\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  struct ckpt_state st;
  char path[4096];
  long steps = atol(argv[2]);
  CHECK(ckpt_read_latest(argv[1], &st, NULL, MPI_COMM_SELF, path, sizeof path) == 0);
  double trainer_step = -1;
  for (int i = 0; i < st.n_ctrl; i++)
    if (!strcmp(st.ctrl_name[i], "trainer_step")) trainer_step = st.ctrl[i];
  printf("%s: step %ld, weight_version %ld, trainer_step %g\n", path, st.step, st.weight_version, trainer_step);
  CHECK(st.step == steps);
  CHECK(st.weight_version == 0);  /* every step empty: no update */
  CHECK_MSG(trainer_step == (double)steps, "trainer_step %g, want %ld (one schedule step per RL step)",
            trainer_step, steps);
  ckpt_state_free(&st);
  MPI_Finalize();
  return TEST_RESULT("test_clean_lr");
}
