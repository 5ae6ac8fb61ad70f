/* deck/test_config_mpi.c GOOD_DECK BAD_DECK: config_load over MPI_COMM_WORLD (run it on 3 ranks).
 * A bad deck: every rank returns 2 and exactly one line starting "rlpt:" is printed, by rank 0.
 * A good deck with an override: every rank holds the same struct and canonical text.
 * error_agree gives every rank the largest exit code. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deck/config.h"
#include "testutil.h"
#include "util/error.h"

/* Run config_load with this rank's stderr captured; returns rc, *n_msgs = lines starting "rlpt:". */
static int load_captured(struct config *cfg, const char *path, int n_over, char **over, int *n_msgs) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  int rc = config_load(cfg, path, n_over, over, MPI_COMM_WORLD);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  char line[4096];
  *n_msgs = 0;
  while (fgets(line, sizeof line, tmp)) {
    if (!strncmp(line, "rlpt:", 5)) (*n_msgs)++;
    fputs(line, stderr); /* let the log show it */
  }
  fclose(tmp);
  return rc;
}

static char *canonical(const struct config *c, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  config_write_canonical(c, f);
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3) {
    if (rank == 0) fprintf(stderr, "usage: test_config_mpi GOOD_DECK BAD_DECK\n");
    MPI_Finalize();
    return 2;
  }
  struct config cfg;

  /* bad deck: all ranks 2, one message in total, from rank 0 */
  int n_msgs, rc = load_captured(&cfg, argv[2], 0, NULL, &n_msgs);
  int rc_min, rc_max, msgs_total;
  MPI_Allreduce(&rc, &rc_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &rc_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&n_msgs, &msgs_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK_MSG(rc_min == 2 && rc_max == 2, "bad deck: return codes range %d..%d, expected 2 on every rank", rc_min, rc_max);
  CHECK_MSG(msgs_total == 1, "bad deck: %d messages printed, expected exactly 1", msgs_total);
  if (rank != 0) CHECK_MSG(n_msgs == 0, "rank %d printed a message", rank);

  /* missing deck: the same, and the message names the file */
  rc = load_captured(&cfg, "/nonexistent/deck.ini", 0, NULL, &n_msgs);
  MPI_Allreduce(&rc, &rc_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&n_msgs, &msgs_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK_MSG(rc_min == 2 && msgs_total == 1, "missing deck: min rc %d, %d messages", rc_min, msgs_total);

  /* good deck + override: same struct and canonical text everywhere */
  char *over[] = {"algo.group_size=3"};
  memset(&cfg, 0xab, sizeof cfg); /* garbage that the broadcast must replace */
  rc = load_captured(&cfg, argv[1], 1, over, &n_msgs);
  MPI_Allreduce(&rc, &rc_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&n_msgs, &msgs_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK_MSG(rc_max == 0 && msgs_total == 0, "good deck: max rc %d, %d messages", rc_max, msgs_total);
  CHECK(cfg.algo.group_size == 3);
  size_t len;
  char *mine = canonical(&cfg, &len);
  long mylen = (long)len, len0 = mylen;
  MPI_Bcast(&len0, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  char *ref = malloc((size_t)len0 + 1);
  if (rank == 0) memcpy(ref, mine, (size_t)len0 + 1);
  MPI_Bcast(ref, (int)len0 + 1, MPI_CHAR, 0, MPI_COMM_WORLD);
  int same = len0 == mylen && !memcmp(ref, mine, (size_t)len0), all_same;
  struct config c0 = cfg;
  MPI_Bcast(&c0, (int)sizeof c0, MPI_BYTE, 0, MPI_COMM_WORLD);
  same = same && !memcmp(&c0, &cfg, sizeof cfg);
  MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  CHECK_MSG(all_same, "ranks hold different configs (rank %d: %s)", rank, same ? "same" : "differs");
  /* and it equals what a serial load gives */
  struct config serial;
  CHECK(config_load_serial(&serial, argv[1], 1, over) == 0 && !memcmp(&serial, &cfg, sizeof cfg));
  free(mine);
  free(ref);

  /* error_agree: one rank's 2 becomes everyone's 2; all zeros stay 0 */
  CHECK(error_agree(MPI_COMM_WORLD, rank == size - 1 ? 2 : 0) == 2);
  CHECK(error_agree(MPI_COMM_WORLD, 0) == 0);
  CHECK(error_agree(MPI_COMM_WORLD, rank == 0 ? 1 : 2) == 2);

  int fails = tu_failures, total;
  MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  tu_failures = total;
  int result = rank == 0 ? TEST_RESULT("test_config_mpi") : (total != 0);
  MPI_Finalize();
  return result;
}
