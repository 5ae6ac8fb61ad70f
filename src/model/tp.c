/* model/tp.c: the TP group's collectives, the shard maps and the vocabulary-parallel
 * embedding (model/tp.h). */
#include "model/tp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/allreduce.h"
#include "mpi/wait.h"
#include "util/alloc.h"
#include "util/error.h"

void tp_group_init(struct tp_group *g, MPI_Comm comm) {
  g->comm = comm;
  MPI_CHECK(MPI_Comm_rank(comm, &g->rank));
  MPI_CHECK(MPI_Comm_size(comm, &g->size));
}

static struct tp_traffic traffic;  /* this process's, since it started */

void tp_traffic_get(struct tp_traffic *out) {
  *out = traffic;
}

/* One all-reduce of n values of size bytes, counted as the model's (forward, backward and
 * logprob: kind 0) or a weight gather's (kind 1). */
static void count(int kind, size_t n, size_t size) {
  traffic.bytes[kind] += (double)n * (double)size;
  traffic.calls[kind]++;
}

static void sum_floats(const struct tp_group *g, float *x, size_t n, int kind) {
  if (g->size == 1) return;
  count(kind, n, sizeof(float));
  allreduce_sum_floats(x, n, 0, g->comm);
}

void tp_sum_floats(const struct tp_group *g, float *x, size_t n) {
  sum_floats(g, x, n, 0);
}

void tp_sum_doubles(const struct tp_group *g, double *x, int n) {
  if (g->size == 1) return;
  count(0, (size_t)n, sizeof(double));
  allreduce_polite(x, n, MPI_DOUBLE, MPI_SUM, g->comm);
}

void tp_max_floats(const struct tp_group *g, float *x, int n) {
  if (g->size == 1) return;
  count(0, (size_t)n, sizeof(float));
  allreduce_polite(x, n, MPI_FLOAT, MPI_MAX, g->comm);
}

void tp_gather_cols(const struct tp_group *g, const float *local, int rows, int cols, float *full) {
  size_t part = (size_t)rows * (size_t)cols, n = (size_t)g->size;
  if (g->size == 1) {
    memcpy(full, local, sizeof(float) * part);
    return;
  }
  if (part > (size_t)INT32_MAX) die_local("tp: %zu floats per rank are too many for one gather", part);
  count(0, part, sizeof(float));
  float *all = malloc_check(sizeof(float) * part * n);
  MPI_Request req;
  MPI_CHECK(MPI_Iallgather(local, (int)part, MPI_FLOAT, all, (int)part, MPI_FLOAT, g->comm, &req));
  wait_request(&req, MPI_STATUS_IGNORE);
  for (size_t r = 0; r < n; r++)
    for (size_t i = 0; i < (size_t)rows; i++)
      memcpy(full + (i * n + r) * (size_t)cols, all + (r * (size_t)rows + i) * (size_t)cols, sizeof(float) * (size_t)cols);
  free(all);
}

/* One tensor between its full form f (entry fe; f at its first value) and this rank's
 * shard l (entry le; l at its first value): to_full copies l into its place in f, else the
 * place into l. */
static void shard_copy(const struct tp_group *g, const struct param_entry *fe, float *f,
                       const struct param_entry *le, float *l, int to_full) {
  enum param_split s = param_split(le->kind);
  if (s != SPLIT_COLS) {
    if (s == SPLIT_ROWS) f += (size_t)g->rank * le->numel;
    if (to_full) memcpy(f, l, sizeof(float) * le->numel);
    else memcpy(l, f, sizeof(float) * le->numel);
    return;
  }
  size_t lc = (size_t)le->cols, fc = (size_t)fe->cols;
  for (size_t r = 0; r < (size_t)le->rows; r++) {
    float *a = f + r * fc + (size_t)g->rank * lc, *b = l + r * lc;
    if (to_full) memcpy(a, b, sizeof(float) * lc);
    else memcpy(b, a, sizeof(float) * lc);
  }
}

void tp_gather_tensor(const struct tp_group *g, const struct param_entry *fe, float *full,
                      const struct param_entry *le, const float *local) {
  memset(full, 0, sizeof(float) * fe->numel);
  /* a replicated tensor from rank 0 alone: the sum adds zeros to it */
  if (param_split(le->kind) != SPLIT_NONE || g->rank == 0)
    shard_copy(g, fe, full, le, (float *)local, 1);
  sum_floats(g, full, fe->numel, 1);
}

void tp_gather_range(const struct tp_group *g, const struct param_table *full_t, int i0, int i1,
                     float *full, const struct param_table *local_t, const float *local) {
  size_t l0 = local_t->e[i0].offset, n = local_t->e[i1 - 1].offset + local_t->e[i1 - 1].numel - l0;
  size_t f0 = full_t->e[i0].offset;
  if (n > (size_t)INT32_MAX) die_local("tp: %zu floats per rank are too many for one gather", n);
  float *all = g->rank == 0 ? malloc_check(sizeof(float) * n * (size_t)g->size) : NULL;
  if (g->size > 1) {
    count(1, n, sizeof(float));
    wait_barrier(g->comm);  /* politely, then a blocking gather (mpi/wait.h: large messages) */
    MPI_CHECK(MPI_Gather(local + l0, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, 0, g->comm));
  } else {
    memcpy(all, local + l0, sizeof(float) * n);
  }
  for (int r = 0; r < g->size && g->rank == 0; r++) {
    struct tp_group gr = {.comm = g->comm, .rank = r, .size = g->size};
    for (int i = i0; i < i1; i++) {
      const struct param_entry *le = &local_t->e[i];
      if (param_split(le->kind) != SPLIT_NONE || r == 0)
        shard_copy(&gr, &full_t->e[i], full + (full_t->e[i].offset - f0), le,
                   all + (size_t)r * n + (le->offset - l0), 1);
    }
  }
  free(all);
}

void tp_scatter_tensor(const struct tp_group *g, const struct param_entry *fe, const float *full,
                       const struct param_entry *le, float *local) {
  shard_copy(g, fe, (float *)full, le, local, 0);
}

void tp_gather(const struct tp_group *g, const struct param_table *full_t, float *full,
               const struct param_table *local_t, const float *local) {
  for (int i = 0; i < local_t->n; i++)
    tp_gather_tensor(g, &full_t->e[i], full + full_t->e[i].offset, &local_t->e[i],
                     local + local_t->e[i].offset);
}

void tp_scatter(const struct tp_group *g, const struct param_table *full_t, const float *full,
                const struct param_table *local_t, float *local) {
  for (int i = 0; i < local_t->n; i++)
    tp_scatter_tensor(g, &full_t->e[i], full + full_t->e[i].offset, &local_t->e[i],
                      local + local_t->e[i].offset);
}

double tp_sumsq(const struct tp_group *g, const struct param_table *local_t, const float *x) {
  double s[2] = {0.0, 0.0};  /* split, replicated */
  for (int i = 0; i < local_t->n; i++) {
    const struct param_entry *e = &local_t->e[i];
    const float *p = x + e->offset;
    double q = 0.0;
    for (size_t j = 0; j < e->numel; j++) q += (double)p[j] * p[j];
    s[param_split(e->kind) == SPLIT_NONE] += q;
  }
  tp_sum_doubles(g, s, 1);
  return s[0] + s[1];
}

void tp_embed_fwd(const struct tp_group *g, float *out, const int *tokens, const float *emb,
                  int T, int C, int lo, int V) {
  for (int t = 0; t < T; t++) {
    int v = tokens[t] - lo;
    float *o = out + (size_t)t * C;
    if (v >= 0 && v < V) memcpy(o, emb + (size_t)v * C, sizeof(float) * (size_t)C);
    else memset(o, 0, sizeof(float) * (size_t)C);
  }
  tp_sum_floats(g, out, (size_t)T * C);
}

void tp_embed_bwd(float *demb, const int *tokens, const float *dout, int T, int C, int lo, int V) {
  for (int t = 0; t < T; t++) {
    int v = tokens[t] - lo;
    if (v < 0 || v >= V) continue;
    float *d = demb + (size_t)v * C;
    const float *s = dout + (size_t)t * C;
    for (int c = 0; c < C; c++) d[c] += s[c];
  }
}
