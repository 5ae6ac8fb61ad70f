/* mpi/comm.c: resolve the deck's rank layout, place every rank, split the
 * communicators (see comm.h for the layouts, the rank order and the grid order). */
#include "mpi/comm.h"

#include <stdlib.h>
#include <string.h>

#include "deck/config.h"
#include "util/alloc.h"
#include "util/error.h"

const char *role_name(enum role r) {
  static const char *names[ROLE_COUNT] = {"controller", "rollout", "reward", "train"};
  return r >= 0 && r < ROLE_COUNT ? names[r] : "?";
}

const char *roles_mask_str(unsigned roles, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (int r = 0; r < ROLE_COUNT && n < len; r++)
    if (roles & ROLE_BIT(r))
      n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "+" : "", role_name(r));
  return buf;
}

/* The hint every count error ends with: what the layout needs vs what the job has. */
static void need_msg(char *err, size_t errlen, const char *what, long ctl, long rew, long rol,
                     long tr, int world) {
  snprintf(err, errlen,
           "[ranks] %s: the layout needs %ld ranks = controller %ld + reward %ld + rollout %ld + "
           "train %ld; the job has %d (mpirun -np %d)%s",
           what, ctl + rew + rol + tr, ctl, rew, rol, tr, world, world,
           world == 1 ? "; for a single rank use layout = colocated" : "");
}

static int resolve_separate(const struct config *cfg, int world, struct role_counts *o,
                            char *err, size_t errlen) {
  long ctl = cfg->ranks.controller < 0 ? 1 : cfg->ranks.controller;
  long rew = cfg->ranks.reward < 0 ? 1 : cfg->ranks.reward;
  long grid = (long)o->train_dp * o->train_tp * o->train_pp;
  long tr = cfg->ranks.train < 0 ? grid : cfg->ranks.train;
  long rol = cfg->ranks.rollout;
  if (ctl != 1) {
    snprintf(err, errlen, "[ranks] controller = %ld: layout separate needs exactly 1 controller "
             "rank (set controller = auto, or use layout = colocated where rank 0 doubles as "
             "controller)", ctl);
    return 2;
  }
  if (rew < 1 || tr < 1 || rol == 0) {
    snprintf(err, errlen, "[ranks] layout separate needs at least one rank of each role; the deck "
             "gives reward = %ld, train = %ld, rollout = %ld (use layout = colocated to share "
             "ranks)", rew, tr, rol);
    return 2;
  }
  if (tr != grid) {
    snprintf(err, errlen, "[ranks] train = %ld but train_dp * train_tp * train_pp = %d * %d * %d "
             "= %ld; they must be equal (or set train = auto)", tr, o->train_dp, o->train_tp,
             o->train_pp, grid);
    return 2;
  }
  if (rol < 0) {  /* auto: what is left, at least one engine instance */
    rol = world - ctl - rew - tr;
    if (rol < o->rollout_tp) {
      need_msg(err, errlen, "too few ranks for rollout = auto", ctl, rew, o->rollout_tp, tr, world);
      return 2;
    }
  } else if (ctl + rew + rol + tr != world) {
    need_msg(err, errlen, "the role counts do not sum to the world size", ctl, rew, rol, tr, world);
    return 2;
  }
  if (rol % o->rollout_tp) {
    snprintf(err, errlen, "[ranks] rollout = %ld%s ranks do not divide into engine instances of "
             "rollout_tp = %d ranks", rol, cfg->ranks.rollout < 0 ? " (auto: the ranks left)" : "",
             o->rollout_tp);
    return 2;
  }
  o->controller = (int)ctl;
  o->reward = (int)rew;
  o->rollout = (int)rol;
  o->train = (int)tr;
  return 0;
}

static int resolve_colocated(const struct config *cfg, int world, struct role_counts *o,
                             char *err, size_t errlen) {
  long ctl = cfg->ranks.controller < 0 ? 0 : cfg->ranks.controller;
  long workers = world - ctl;
  long grid = (long)o->train_dp * o->train_tp * o->train_pp;
  const char *keys[3] = {"rollout", "reward", "train"};
  long vals[3] = {cfg->ranks.rollout, cfg->ranks.reward, cfg->ranks.train};
  if (workers < 1) {
    snprintf(err, errlen, "[ranks] layout colocated with controller = %ld needs at least %ld ranks; "
             "the job has %d (mpirun -np %d)", ctl, ctl + 1, world, world);
    return 2;
  }
  for (int i = 0; i < 3; i++)
    if (vals[i] >= 0 && vals[i] != workers) {
      snprintf(err, errlen, "[ranks] %s = %ld, but with layout colocated every worker rank does "
               "every role: %s must be auto or %ld (world %d - controller %ld)", keys[i], vals[i],
               keys[i], workers, world, ctl);
      return 2;
    }
  if (grid != workers) {
    snprintf(err, errlen, "[ranks] layout colocated: train_dp * train_tp * train_pp = %d * %d * %d "
             "= %ld but there are %ld worker ranks (world %d - controller %ld)", o->train_dp,
             o->train_tp, o->train_pp, grid, workers, world, ctl);
    return 2;
  }
  if (workers % o->rollout_tp) {
    snprintf(err, errlen, "[ranks] layout colocated: the %ld worker ranks do not divide into "
             "engine instances of rollout_tp = %d ranks", workers, o->rollout_tp);
    return 2;
  }
  o->controller = (int)ctl;
  o->rollout = o->reward = o->train = (int)workers;
  return 0;
}

int roles_resolve(const struct config *cfg, int world, struct role_counts *out, char *err,
                  size_t errlen) {
  memset(out, 0, sizeof *out);
  err[0] = '\0';
  out->world = world;
  out->colocated = cfg->ranks.layout == LAYOUT_COLOCATED;
  out->rollout_tp = (int)cfg->ranks.rollout_tp;
  out->train_dp = (int)cfg->ranks.train_dp;
  out->train_tp = (int)cfg->ranks.train_tp;
  out->train_pp = (int)cfg->ranks.train_pp;
  if (world < 1 || out->rollout_tp < 1 || out->train_dp < 1 || out->train_tp < 1 ||
      out->train_pp < 1) {
    snprintf(err, errlen, "[ranks] world %d, rollout_tp %d, train_dp %d, train_tp %d, train_pp %d: "
             "all must be at least 1", world, out->rollout_tp, out->train_dp, out->train_tp,
             out->train_pp);
    return 2;
  }
  if (cfg->ranks.controller > 1) {
    snprintf(err, errlen, "[ranks] controller = %ld: at most 1 controller rank",
             cfg->ranks.controller);
    return 2;
  }
  if (cfg->ranks.cores_per_node > 0 && cfg->ranks.threads_per_rank > cfg->ranks.cores_per_node) {
    snprintf(err, errlen, "[ranks] threads_per_rank = %ld exceeds cores_per_node = %ld: one rank "
             "cannot use more cores than a node has", cfg->ranks.threads_per_rank,
             cfg->ranks.cores_per_node);
    return 2;
  }
  int rc = out->colocated ? resolve_colocated(cfg, world, out, err, errlen)
                          : resolve_separate(cfg, world, out, err, errlen);
  if (!rc) out->rollout_instances = out->rollout / out->rollout_tp;
  return rc;
}

/* Rank of train-local rank t in weight_comm (colocated: every worker is also a
 * rollout rank, so dp != 0 workers follow the owners; separate: they are not members). */
static int weight_rank_of_train(const struct role_counts *c, int t, int dp, int tp, int pp) {
  int owners = c->train_tp * c->train_pp;
  if (dp == 0) return tp + c->train_tp * pp;
  if (!c->colocated) return -1;
  int block = c->train_tp * c->train_dp, q = t % block;
  return owners + (t / block) * c->train_tp * (c->train_dp - 1) + (q - c->train_tp);
}

void roles_place(const struct role_counts *c, int rank, struct rank_place *p) {
  memset(p, 0, sizeof *p);
  for (int r = 0; r < ROLE_COUNT; r++) p->role_rank[r] = -1;
  p->dp = p->tp = p->pp = p->instance = p->instance_rank = p->weight_rank = -1;
  int ctl = c->controller, rol = -1, tr = -1;
  if (rank < ctl) {
    p->roles = ROLE_BIT(ROLE_CONTROLLER);
    p->role = ROLE_CONTROLLER;
    p->role_rank[ROLE_CONTROLLER] = rank;
    return;
  }
  if (c->colocated) {
    int w = rank - ctl;
    p->roles = ROLE_BIT(ROLE_ROLLOUT) | ROLE_BIT(ROLE_REWARD) | ROLE_BIT(ROLE_TRAIN);
    p->role = ROLE_TRAIN;
    p->role_rank[ROLE_REWARD] = rol = tr = w;
    if (ctl == 0 && rank == 0) {  /* double duty */
      p->roles |= ROLE_BIT(ROLE_CONTROLLER);
      p->role_rank[ROLE_CONTROLLER] = 0;
    }
  } else if (rank < ctl + c->reward) {
    p->roles = ROLE_BIT(ROLE_REWARD);
    p->role = ROLE_REWARD;
    p->role_rank[ROLE_REWARD] = rank - ctl;
  } else if (rank < ctl + c->reward + c->rollout) {
    p->roles = ROLE_BIT(ROLE_ROLLOUT);
    p->role = ROLE_ROLLOUT;
    rol = rank - ctl - c->reward;
  } else {
    p->roles = ROLE_BIT(ROLE_TRAIN);
    p->role = ROLE_TRAIN;
    tr = rank - ctl - c->reward - c->rollout;
  }
  if (rol >= 0) {
    p->role_rank[ROLE_ROLLOUT] = rol;
    p->instance = rol / c->rollout_tp;
    p->instance_rank = rol % c->rollout_tp;
    p->weight_rank = c->train_tp * c->train_pp + rol;  /* separate; colocated is set below */
  }
  if (tr >= 0) {
    p->role_rank[ROLE_TRAIN] = tr;
    p->tp = tr % c->train_tp;
    p->dp = (tr / c->train_tp) % c->train_dp;
    p->pp = tr / (c->train_tp * c->train_dp);
    p->weight_rank = weight_rank_of_train(c, tr, p->dp, p->tp, p->pp);
  }
}

void roles_place_str(const struct rank_place *p, char *buf, size_t len) {
  char mask[64];
  size_t n = (size_t)snprintf(buf, len, "%-32s", roles_mask_str(p->roles, mask, sizeof mask));
  if (p->tp >= 0 && n < len)
    n += (size_t)snprintf(buf + n, len - n, "  train dp %d tp %d pp %d", p->dp, p->tp, p->pp);
  if (p->instance >= 0 && n < len)
    n += (size_t)snprintf(buf + n, len - n, "  rollout instance %d tp %d", p->instance,
                          p->instance_rank);
  if (p->weight_rank >= 0 && n < len)
    snprintf(buf + n, len - n, "  weight_comm %d%s", p->weight_rank, p->dp == 0 ? " (owner)" : "");
  for (n = strlen(buf); n > 0 && buf[n - 1] == ' '; n--) buf[n - 1] = '\0';  /* the padding */
}

/* Split world into the members with color >= 0; others get MPI_COMM_NULL. */
static MPI_Comm split(MPI_Comm world, int member, int color, int key) {
  MPI_Comm out;
  MPI_CHECK(MPI_Comm_split(world, member ? color : MPI_UNDEFINED, key, &out));
  return out;
}

int comms_create(struct comms *c, const struct config *cfg, MPI_Comm world, char *err,
                 size_t errlen) {
  memset(c, 0, sizeof *c);
  MPI_CHECK(MPI_Comm_rank(world, &c->world_rank));
  MPI_CHECK(MPI_Comm_size(world, &c->world_size));
  /* The deck is the same on every rank (config_load broadcasts it), so every
   * rank computes the same verdict and message; the reduction makes the return
   * code agree even if a caller broke that. */
  int rc = error_agree(world, roles_resolve(cfg, c->world_size, &c->counts, err, errlen));
  if (rc) {
    if (!err[0]) snprintf(err, errlen, "[ranks] the layout was rejected on another rank");
    return rc;
  }
  c->world = world;
  struct role_counts *k = &c->counts;
  struct rank_place *p = &c->place;
  roles_place(k, c->world_rank, p);
  for (int r = 0; r < ROLE_COUNT; r++)
    c->role_comm[r] = split(world, p->role_rank[r] >= 0, 0, p->role_rank[r]);
  int train = p->tp >= 0;
  c->dp_comm = split(world, train, p->tp + k->train_tp * p->pp, p->dp);
  c->tp_comm = split(world, train, p->dp + k->train_dp * p->pp, p->tp);
  c->pp_comm = split(world, train, p->tp + k->train_tp * p->dp, p->pp);
  c->instance_comm = split(world, p->instance >= 0, p->instance, p->instance_rank);
  c->weight_comm = split(world, p->weight_rank >= 0, 0, p->weight_rank);
  return 0;
}

static void comm_free_one(MPI_Comm *m) {
  if (*m != MPI_COMM_NULL) MPI_Comm_free(m);
  *m = MPI_COMM_NULL;
}

void comms_free(struct comms *c) {
  if (c->world == MPI_COMM_NULL || !c->world) return;
  for (int r = 0; r < ROLE_COUNT; r++) comm_free_one(&c->role_comm[r]);
  comm_free_one(&c->dp_comm);
  comm_free_one(&c->tp_comm);
  comm_free_one(&c->pp_comm);
  comm_free_one(&c->instance_comm);
  comm_free_one(&c->weight_comm);
  c->world = MPI_COMM_NULL;
}

struct map_entry {
  char host[MPI_MAX_PROCESSOR_NAME];
  struct rank_place place;
};

void comms_print_map(const struct comms *c, FILE *f) {
  struct map_entry me, *all = NULL;
  int len = 0;
  memset(&me, 0, sizeof me);
  MPI_CHECK(MPI_Get_processor_name(me.host, &len));
  me.place = c->place;
  if (c->world_rank == 0) {
    all = malloc_check((size_t)c->world_size * sizeof *all);
  }
  /* Bytes: every rank runs this same binary, so the struct layout is the same. */
  MPI_CHECK(MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, c->world));
  if (c->world_rank == 0) {
    char line[256];
    for (int r = 0; r < c->world_size; r++) {
      roles_place_str(&all[r].place, line, sizeof line);
      fprintf(f, "  rank %5d  %-24s %s\n", r, all[r].host, line);
    }
    fflush(f);
  }
  free(all);
}

int comms_node_rank(MPI_Comm comm) {
  MPI_Comm node;
  int local = 0;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &local));
  MPI_CHECK(MPI_Comm_free(&node));
  return local;
}
