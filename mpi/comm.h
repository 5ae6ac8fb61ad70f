/* mpi/comm.h: rank roles and the communicators of a run.
 *
 * The deck's [ranks] section says how many ranks play each role. This module
 * resolves the `auto` counts, checks the layout against the world size, and
 * splits MPI_COMM_WORLD into one communicator per role, the train grid's
 * DP/TP/PP groups, the rollout engine instances and weight_comm.
 *
 * Roles. controller (orchestrates steps, routes data, aggregates metrics),
 * rollout (generation), reward (verifiers / reward model), train (the update).
 *
 * World rank order: controller, then reward, then rollout, then train.
 *   (Reward comes before rollout on purpose: controller + reward are a handful
 *   of service ranks; when they fill whole nodes, e.g. 1 + 7 on 8-GPU nodes,
 *   every rollout instance and every train TP group starts on a node boundary
 *   and its tensor-parallel traffic stays on NVLink.)
 *
 * Layouts.
 *   separate:  disjoint ranks per role. Needs controller = 1, rollout >= 1,
 *              reward >= 1, train >= 1. auto: controller 1, reward 1,
 *              train = train_dp * train_tp * train_pp, rollout = the rest.
 *   colocated: every worker rank runs rollout, reward and train in turn
 *              (rollout = reward = train = workers). controller = 0 (auto):
 *              all ranks are workers and world rank 0 also runs the controller
 *              loop (double duty). controller = 1: rank 0 is a dedicated
 *              controller and ranks 1.. are the workers. Explicit rollout,
 *              reward or train counts must equal the worker count.
 *
 * Train grid (Megatron order): train-local rank t = tp + TP * (dp + DP * pp):
 * tp varies fastest (a TP group is contiguous ranks, i.e. one node), then dp,
 * then pp slowest (pipeline stages may cross nodes).
 *
 * Rollout instances: rollout-local rank r belongs to instance r / rollout_tp
 * with TP rank r % rollout_tp.
 *
 * weight_comm: the train shard owners (train ranks with dp = 0: one whole copy
 * of the model, tp*pp shards) first, in train-grid order, then the rollout
 * ranks that are not owners, in world order. Its rank 0 is train (dp 0, tp 0,
 * pp 0). In colocated layout every worker is a rollout rank, so weight_comm
 * holds all workers. */
#ifndef RLPT_COMM_H
#define RLPT_COMM_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

struct config;

enum role { ROLE_CONTROLLER, ROLE_ROLLOUT, ROLE_REWARD, ROLE_TRAIN, ROLE_COUNT };
#define ROLE_BIT(r) (1u << (r))

/* The resolved layout (no auto left). */
struct role_counts {
  int world;
  int colocated;        /* 1 with layout = colocated */
  int controller;       /* dedicated controller ranks (0 or 1) */
  int rollout, reward, train;  /* ranks that do each role (colocated: each = workers) */
  int rollout_tp, rollout_instances;
  int train_dp, train_tp, train_pp;
};

/* Where one world rank sits; -1 in fields of roles the rank does not play. */
struct rank_place {
  unsigned roles;       /* ROLE_BIT mask */
  enum role role;       /* the rank's main loop: controller, rollout, reward or train
                           (a colocated worker: ROLE_TRAIN, which time-slices rollout) */
  int role_rank[ROLE_COUNT];  /* rank inside each role communicator */
  int dp, tp, pp;       /* train grid coordinates */
  int instance, instance_rank; /* rollout engine instance and TP rank inside it */
  int weight_rank;      /* rank in weight_comm, -1 when not a member */
};

struct comms {
  int world_rank, world_size;
  struct role_counts counts;
  struct rank_place place;
  MPI_Comm world;                 /* the communicator given to comms_create (not owned) */
  MPI_Comm role_comm[ROLE_COUNT]; /* MPI_COMM_NULL where not a member */
  MPI_Comm dp_comm, tp_comm, pp_comm; /* train ranks only: ranks that differ only in dp / tp / pp */
  MPI_Comm instance_comm;         /* rollout ranks only: the rollout_tp ranks of one engine */
  MPI_Comm weight_comm;           /* train shard owners + rollout ranks */
};

/* Resolve `auto` counts for a world of `world` ranks and check the layout.
 * Pure (no MPI). Returns 0, or 2 with a message naming the deck keys, the
 * numbers and a hint in err. */
int roles_resolve(const struct config *cfg, int world, struct role_counts *out, char *err,
                  size_t errlen);
/* Where world rank `rank` sits in the resolved layout. Pure. */
void roles_place(const struct role_counts *c, int rank, struct rank_place *out);
/* "controller", "rollout", "reward", "train". */
const char *role_name(enum role r);
/* The roles of a mask as "rollout+reward+train" into buf. */
const char *roles_mask_str(unsigned roles, char *buf, size_t len);
/* One line describing a rank's place (role, coordinates, instance), no newline. */
void roles_place_str(const struct rank_place *p, char *buf, size_t len);

/* Collective over world: resolve, check and split. Every rank returns the same
 * code (0, or 2 with the same message in err); on error nothing is allocated. */
int comms_create(struct comms *c, const struct config *cfg, MPI_Comm world, char *err,
                 size_t errlen);
void comms_free(struct comms *c);
/* Collective: gathers host and place of every rank; rank 0 prints one line per
 * rank, in world rank order, to f. */
void comms_print_map(const struct comms *c, FILE *f);
/* Collective over comm: this rank's rank among the ranks of comm on its node
 * (MPI_Comm_split_type SHARED), e.g. to pick one GPU per rank of a node. */
int comms_node_rank(MPI_Comm comm);

#endif
