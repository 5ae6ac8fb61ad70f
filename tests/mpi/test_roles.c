/* mpi/test_roles.c: rank roles and communicators (mpi/comm.c) under MPI.
 *
 * Runs at any world size; each case below names the world size it is for and
 * is skipped at other sizes. A good layout must give every communicator the
 * expected size and members (checked against hand-written role lists and the
 * coordinates of comm.h); a bad one must be rejected with the same code and
 * message on every rank. The thread setup (src/run/threads.c) is checked the same
 * way: all ranks of these tests share one node. */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "mpi/comm.h"
#include "run/threads.h"
#include "testutil.h"

enum { C = 1 << ROLE_CONTROLLER, RO = 1 << ROLE_ROLLOUT, RE = 1 << ROLE_REWARD, T = 1 << ROLE_TRAIN };
#define W (RO | RE | T) /* colocated worker */

struct layout_case {
  const char *name;
  int world;
  int colocated;
  long controller, rollout, reward, train;  /* -1 = auto */
  long rollout_tp, dp, tp, pp;
  const char *want_err;  /* NULL: must succeed */
  unsigned roles[8];     /* expected role mask of world ranks 0.. (good cases) */
};

static const struct layout_case cases[] = {
  {"colocated 1", 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, NULL, {C | W}},
  {"separate 1 rejected", 1, 0, -1, -1, -1, -1, 1, 1, 1, 1,
   "the layout needs 4 ranks = controller 1 + reward 1 + rollout 1 + train 1; the job has 1 "
   "(mpirun -np 1); for a single rank use layout = colocated", {0}},
  {"colocated 2 dp 2", 2, 1, -1, -1, -1, -1, 1, 2, 1, 1, NULL, {C | W, W}},
  {"colocated 2 tp 2", 2, 1, -1, -1, -1, -1, 2, 1, 2, 1, NULL, {C | W, W}},
  {"separate 2 counts mismatch", 2, 0, 1, 1, 1, 1, 1, 1, 1, 1,
   "do not sum to the world size: the layout needs 4 ranks = controller 1 + reward 1 + rollout 1 "
   "+ train 1; the job has 2 (mpirun -np 2)", {0}},
  {"separate 4", 4, 0, 1, 1, 1, 1, 1, 1, 1, 1, NULL, {C, RE, RO, T}},
  {"separate 4 auto", 4, 0, -1, -1, -1, -1, 1, 1, 1, 1, NULL, {C, RE, RO, T}},
  {"separate 4 grid mismatch", 4, 0, 1, -1, 1, 2, 1, 1, 1, 1,
   "[ranks] train = 2 but train_dp * train_tp * train_pp = 1 * 1 * 1 = 1", {0}},
  {"colocated 4 tp 2 dp 2", 4, 1, -1, -1, -1, -1, 2, 2, 2, 1, NULL, {C | W, W, W, W}},
  {"colocated 4 grid mismatch", 4, 1, -1, -1, -1, -1, 1, 2, 1, 1,
   "layout colocated: train_dp * train_tp * train_pp = 2 * 1 * 1 = 2 but there are 4 worker ranks",
   {0}},
  {"separate 5 dp 2", 5, 0, 1, 1, 1, 2, 1, 2, 1, 1, NULL, {C, RE, RO, T, T}},
  {"separate 5 rollout_tp 2", 5, 0, -1, -1, -1, -1, 2, 1, 1, 1, NULL, {C, RE, RO, RO, T}},
  /* Separate layouts of <= 5 ranks cannot leave 3 rollout ranks; test_plan
   * checks that message at world 6 without MPI. */
  {"colocated 5 rollout % rollout_tp", 5, 1, -1, -1, -1, -1, 2, 5, 1, 1,
   "the 5 worker ranks do not divide into engine instances of rollout_tp = 2 ranks", {0}},
  {"separate 5 too small for tp 2 pp 2", 5, 0, -1, -1, -1, -1, 1, 1, 2, 2,
   "too few ranks for rollout = auto: the layout needs 7 ranks", {0}},
  {"colocated 5 dedicated controller", 5, 1, 1, -1, -1, -1, 1, 2, 1, 2, NULL, {C, W, W, W, W}},
  {"colocated 5 explicit train", 5, 1, -1, -1, -1, 4, 1, 5, 1, 1,
   "[ranks] train = 4, but with layout colocated every worker rank does every role: train must "
   "be auto or 5", {0}},
};

static void case_config(struct config *cfg, const struct layout_case *k) {
  config_defaults(cfg);
  cfg->ranks.layout = k->colocated ? LAYOUT_COLOCATED : LAYOUT_SEPARATE;
  cfg->ranks.controller = k->controller;
  cfg->ranks.rollout = k->rollout;
  cfg->ranks.reward = k->reward;
  cfg->ranks.train = k->train;
  cfg->ranks.rollout_tp = k->rollout_tp;
  cfg->ranks.train_dp = k->dp;
  cfg->ranks.train_tp = k->tp;
  cfg->ranks.train_pp = k->pp;
}

/* Size of comm, 0 for MPI_COMM_NULL. */
static int comm_size(MPI_Comm c) {
  int n = 0;
  if (c != MPI_COMM_NULL) MPI_Comm_size(c, &n);
  return n;
}

static int comm_rank(MPI_Comm c) {
  int r = -1;
  if (c != MPI_COMM_NULL) MPI_Comm_rank(c, &r);
  return r;
}

/* Every member of c has the same v. */
static int same_over(MPI_Comm c, int v) {
  int lo, hi;
  MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, c);
  MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, c);
  return lo == hi;
}

static void check_good(const struct layout_case *k, const struct comms *cm) {
  const struct role_counts *n = &cm->counts;
  const struct rank_place *p = &cm->place;
  int rank = cm->world_rank;
  int want[ROLE_COUNT] = {0};
  for (int r = 0; r < k->world; r++)
    for (int role = 0; role < ROLE_COUNT; role++) want[role] += !!(k->roles[r] & (1u << role));
  CHECK_MSG(p->roles == k->roles[rank], "%s: rank %d roles %#x, want %#x", k->name, rank, p->roles,
            k->roles[rank]);
  for (int role = 0; role < ROLE_COUNT; role++) {
    int member = !!(p->roles & ROLE_BIT(role)), total = 0;
    CHECK_MSG(member == (cm->role_comm[role] != MPI_COMM_NULL), "%s: rank %d %s comm membership",
              k->name, rank, role_name(role));
    if (member) {
      CHECK_MSG(comm_size(cm->role_comm[role]) == want[role], "%s: %s comm size %d, want %d",
                k->name, role_name(role), comm_size(cm->role_comm[role]), want[role]);
      CHECK(comm_rank(cm->role_comm[role]) == p->role_rank[role]);
    }
    MPI_Allreduce(&member, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_MSG(total == want[role], "%s: %d members of %s, want %d", k->name, total,
              role_name(role), want[role]);
  }
  if (p->roles & ROLE_BIT(ROLE_TRAIN)) {
    int t = p->role_rank[ROLE_TRAIN];
    /* Grid order: t = tp + TP * (dp + DP * pp). */
    CHECK(t == p->tp + n->train_tp * (p->dp + n->train_dp * p->pp));
    CHECK(comm_size(cm->dp_comm) == n->train_dp && comm_rank(cm->dp_comm) == p->dp);
    CHECK(comm_size(cm->tp_comm) == n->train_tp && comm_rank(cm->tp_comm) == p->tp);
    CHECK(comm_size(cm->pp_comm) == n->train_pp && comm_rank(cm->pp_comm) == p->pp);
    CHECK(same_over(cm->tp_comm, p->dp) && same_over(cm->tp_comm, p->pp));
    CHECK(same_over(cm->dp_comm, p->tp) && same_over(cm->dp_comm, p->pp));
    CHECK(same_over(cm->pp_comm, p->tp) && same_over(cm->pp_comm, p->dp));
  } else CHECK(cm->dp_comm == MPI_COMM_NULL && cm->tp_comm == MPI_COMM_NULL && cm->pp_comm == MPI_COMM_NULL);
  if (p->roles & ROLE_BIT(ROLE_ROLLOUT)) {
    CHECK(comm_size(cm->instance_comm) == n->rollout_tp);
    CHECK(comm_rank(cm->instance_comm) == p->instance_rank);
    CHECK(same_over(cm->instance_comm, p->instance));
  } else CHECK(cm->instance_comm == MPI_COMM_NULL);
  /* weight_comm: dp-0 train ranks (tp * pp of them) + every rollout rank. */
  int in_weight = p->dp == 0 || (p->roles & ROLE_BIT(ROLE_ROLLOUT));
  int owners = n->train_tp * n->train_pp;
  int want_w = k->colocated ? n->train : owners + n->rollout;
  CHECK_MSG(in_weight == (cm->weight_comm != MPI_COMM_NULL), "%s: rank %d weight_comm membership",
            k->name, rank);
  if (in_weight) {
    int coords[3] = {p->dp, p->tp, p->pp};
    CHECK_MSG(comm_size(cm->weight_comm) == want_w, "%s: weight_comm size %d, want %d", k->name,
              comm_size(cm->weight_comm), want_w);
    CHECK(comm_rank(cm->weight_comm) == p->weight_rank);
    if (p->dp == 0) CHECK(p->weight_rank == p->tp + n->train_tp * p->pp);
    /* Rank 0 of weight_comm is the train rank at (dp, tp, pp) = (0, 0, 0). */
    MPI_Bcast(coords, 3, MPI_INT, 0, cm->weight_comm);
    CHECK(coords[0] == 0 && coords[1] == 0 && coords[2] == 0);
  }
}

static void run_case(const struct layout_case *k) {
  struct config cfg;
  struct comms cm;
  char err[1024];
  case_config(&cfg, k);
  int rc = comms_create(&cm, &cfg, MPI_COMM_WORLD, err, sizeof err);
  int lo, hi;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK_MSG(lo == hi, "%s: ranks disagree on the verdict (%d vs %d)", k->name, lo, hi);
  if (k->want_err) {
    int found = rc == 2 && strstr(err, k->want_err) != NULL, all;
    MPI_Allreduce(&found, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    CHECK_MSG(found, "%s: rc %d, message '%s', want '%s'", k->name, rc, rc ? err : "", k->want_err);
    CHECK_MSG(all, "%s: some rank lacks the message", k->name);
    return;
  }
  CHECK_MSG(rc == 0, "%s: rejected: %s", k->name, err);
  if (rc) return;
  check_good(k, &cm);
  if (cm.world_rank == 0) printf("%s: map\n", k->name);
  comms_print_map(&cm, stdout);
  comms_free(&cm);
  CHECK(cm.role_comm[ROLE_TRAIN] == MPI_COMM_NULL && cm.weight_comm == MPI_COMM_NULL);
}

/* threads_setup on one node of `world` ranks, with the cores given by the deck. */
static void test_threads(int world) {
  struct config cfg;
  struct threads_info t;
  char err[1024], first[1024];
  config_defaults(&cfg);
  cfg.ranks.cores_per_node = 2L * world;
  cfg.ranks.threads_per_rank = 2;  /* world x 2 = the cores: fits */
  CHECK_MSG(threads_setup(&cfg, MPI_COMM_WORLD, &t, err, sizeof err) == 0, "%s", err);
  CHECK(t.ranks_on_node == world && t.threads == 2 && t.cores == 2 * world && !t.oversubscribed);
  CHECK(openblas_get_num_threads() == 2);
  CHECK(getenv("OMP_NUM_THREADS") && !strcmp(getenv("OMP_NUM_THREADS"), "2"));
  cfg.ranks.threads_per_rank = 3;  /* world x 3 > 2 x world */
  int rc = threads_setup(&cfg, MPI_COMM_WORLD, &t, err, sizeof err), lo;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  CHECK_MSG(rc == 2 && lo == 2, "threads 3: rc %d on this rank, min %d", rc, lo);
  char want[128];
  snprintf(want, sizeof want, "threads_per_rank = 3: %d ranks on node", world);
  CHECK_MSG(strstr(err, want) && strstr(err, "(cores_per_node = from the deck)"), "%s", err);
  memcpy(first, err, sizeof first);
  MPI_Bcast(first, (int)sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK_MSG(!strcmp(first, err), "ranks disagree on the message: '%s' vs '%s'", first, err);
  cfg.ranks.cores_per_node = 1;  /* 1 thread per rank always passes: oversubscribed */
  cfg.ranks.threads_per_rank = 1;
  CHECK(threads_setup(&cfg, MPI_COMM_WORLD, &t, err, sizeof err) == 0);
  CHECK(t.oversubscribed == (world > 1) && openblas_get_num_threads() == 1);
}

int main(int argc, char **argv) {
  int world, rank, ran = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (cases[i].world == world) {
      run_case(&cases[i]);
      ran++;
    }
  CHECK_MSG(ran > 0, "no case for world size %d", world);
  test_threads(world);
  int failures = tu_failures, total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  tu_failures = total;
  if (rank) return total ? 1 : 0;
  printf("%d layout cases at world %d\n", ran, world);
  return TEST_RESULT("test_roles");
}
