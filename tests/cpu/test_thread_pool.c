/* cpu/test_thread_pool.c: the persistent worker pool (cpu/thread_pool.h).
 *
 * - Partition: for many (n, nt), every index of [0, n) is visited exactly once
 *   and every call gets exactly one of the slices [n*i/nt', n*(i+1)/nt') with
 *   nt' = min(nt, n, threads): the split is a function of n and nt, not timing.
 * - Results: per-slice float sums (whose bits depend on the partition) and an
 *   elementwise map equal a serial loop over the same slices, bit for bit, on
 *   every one of many repetitions, with and without the idle spin.
 * - Parallel: a 3-thread job runs its slices on 3 distinct threads.
 * - Nested and concurrent use: a slice that starts a job on the same pool, and
 *   two threads sharing one pool, finish with correct results (serial slices).
 * - Passive idle: over 200 ms with no job, 3 workers use < 40 ms of CPU in all
 *   (a busy spin would use ~600 ms).
 * - Shutdown: pools created, used and freed in a loop, including right after
 *   a job and with no job at all; the rank's pool grows to the asked count. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/thread_pool.h"
#include "testutil.h"

#define MAXN 300
#define MAXCALLS 128

struct cover {
  int count[MAXN];
  size_t lo[MAXCALLS], hi[MAXCALLS];
  _Atomic int calls;
};

static void cover_fn(void *arg, size_t lo, size_t hi) {
  struct cover *c = arg;
  int k = atomic_fetch_add(&c->calls, 1);
  if (k < MAXCALLS) c->lo[k] = lo, c->hi[k] = hi;
  for (size_t i = lo; i < hi; i++) c->count[i]++;
}

static int is_slice(size_t n, int nt, size_t lo, size_t hi) {
  for (int i = 0; i < nt; i++)
    if (lo == n * i / nt && hi == n * (i + 1) / nt) return 1;
  return 0;
}

static void test_partition(struct thread_pool *p) {
  int threads = thread_pool_threads(p);
  for (size_t n = 0; n < MAXN; n += (n < 20 ? 1 : 37))
    for (int nt = 1; nt <= 7; nt++) {
      struct cover *c = calloc(1, sizeof *c);
      thread_pool_run(p, nt, n, cover_fn, c);
      int eff = nt < threads ? nt : threads;
      if ((size_t)eff > n) eff = (int)n;
      int calls = atomic_load(&c->calls), ok = 1;
      for (size_t i = 0; i < n; i++) ok &= c->count[i] == 1;
      for (int k = 0; k < calls; k++) ok &= is_slice(n, eff < 1 ? 1 : eff, c->lo[k], c->hi[k]);
      CHECK_MSG(ok, "n %zu nt %d: not an exact partition into the fixed slices", n, nt);
      CHECK_MSG(calls <= (eff < 1 ? 1 : eff), "n %zu nt %d: %d calls", n, nt, calls);
      free(c);
    }
}

/* sums[slice] = float sum of x over the slice (bits depend on where slices start) */
struct sums {
  const float *x;
  float *y, sums[8];
  size_t n;
  int nt;
};

static void sums_fn(void *arg, size_t lo, size_t hi) {
  struct sums *s = arg;
  float acc = 0.0f;
  for (size_t i = lo; i < hi; i++) {
    acc += s->x[i];
    s->y[i] = s->x[i] * 1.0001f + 0.5f;
  }
  for (int i = 0; i < s->nt; i++)
    if (lo == s->n * i / s->nt) s->sums[i] = acc;
}

static void test_results(struct thread_pool *p) {
  enum { N = 100003, NT = 3 };
  float *x = malloc(sizeof(float) * N), *y0 = malloc(sizeof(float) * N);
  float *y = malloc(sizeof(float) * N);
  for (int i = 0; i < N; i++) x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.4f;
  struct sums ref = {.x = x, .y = y0, .sums = {0}, .n = N, .nt = NT};
  for (int i = 0; i < NT; i++) sums_fn(&ref, (size_t)N * i / NT, (size_t)N * (i + 1) / NT);
  int same = 1;
  for (int rep = 0; rep < 300; rep++) {
    struct sums s = {.x = x, .y = y, .sums = {0}, .n = N, .nt = NT};
    memset(y, 0, sizeof(float) * N);
    thread_pool_run(p, NT, N, sums_fn, &s);
    same &= memcmp(s.sums, ref.sums, sizeof ref.sums) == 0;
    same &= memcmp(y, y0, sizeof(float) * N) == 0;
  }
  CHECK_MSG(same, "pool results differ from the serial loop over the same slices");
  free(x);
  free(y0);
  free(y);
}

struct who {
  pthread_t tid[4];
  _Atomic int k;
};

static void who_fn(void *arg, size_t lo, size_t hi) {
  struct who *w = arg;
  (void)hi;
  w->tid[lo] = pthread_self();
  atomic_fetch_add(&w->k, 1);
  struct timespec ts = {.tv_sec = 0, .tv_nsec = 2000000}; /* 2 ms: the slices overlap in time */
  nanosleep(&ts, NULL);
}

static void test_parallel(struct thread_pool *p) {
  struct who w;
  memset(&w, 0, sizeof w);
  atomic_init(&w.k, 0);
  thread_pool_run(p, 3, 3, who_fn, &w);
  CHECK(atomic_load(&w.k) == 3);
  CHECK(!pthread_equal(w.tid[0], w.tid[1]) && !pthread_equal(w.tid[0], w.tid[2]) &&
        !pthread_equal(w.tid[1], w.tid[2]));
  CHECK(pthread_equal(w.tid[0], pthread_self())); /* slice 0 on the caller */
}

struct nest {
  struct thread_pool *p;
  struct cover inner[4];
};

static void nest_fn(void *arg, size_t lo, size_t hi) {
  struct nest *ne = arg;
  for (size_t i = lo; i < hi; i++) thread_pool_run(ne->p, 3, 50, cover_fn, &ne->inner[i]);
}

static void test_nested(struct thread_pool *p) {
  struct nest *ne = calloc(1, sizeof *ne);
  ne->p = p;
  thread_pool_run(p, 4, 4, nest_fn, ne);
  int ok = 1;
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < 50; i++) ok &= ne->inner[k].count[i] == 1;
  CHECK_MSG(ok, "nested jobs did not cover their ranges exactly once");
  free(ne);
}

struct user {
  struct thread_pool *p;
  int ok;
};

static void *user_main(void *arg) {
  struct user *u = arg;
  u->ok = 1;
  for (int rep = 0; rep < 2000; rep++) {
    struct cover *c = calloc(1, sizeof *c);
    size_t n = (size_t)(rep % 97) + 1;
    thread_pool_run(u->p, 1 + rep % 4, n, cover_fn, c);
    for (size_t i = 0; i < n; i++) u->ok &= c->count[i] == 1;
    free(c);
  }
  return NULL;
}

static void test_concurrent(struct thread_pool *p) {
  struct user u[2] = {{.p = p, .ok = 0}, {.p = p, .ok = 0}};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, user_main, &u[1]) == 0);
  user_main(&u[0]);
  pthread_join(t, NULL);
  CHECK(u[0].ok && u[1].ok);
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void test_idle(struct thread_pool *p) {
  struct cover *c = calloc(1, sizeof *c);
  thread_pool_run(p, 4, 100, cover_fn, c);
  double c0 = cpu_s();
  struct timespec ts = {.tv_sec = 0, .tv_nsec = 200000000};
  nanosleep(&ts, NULL);
  double used = cpu_s() - c0;
  CHECK_MSG(used < 0.040, "idle workers used %.3f s of CPU in 0.2 s", used);
  free(c);
}

static void test_shutdown(void) {
  for (int rep = 0; rep < 40; rep++) {
    struct thread_pool *p = thread_pool_create(rep % 4, rep % 2 ? 0 : 50);
    CHECK(p && thread_pool_threads(p) == rep % 4 + 1);
    if (rep % 3) {
      struct cover *c = calloc(1, sizeof *c);
      thread_pool_run(p, 4, 64, cover_fn, c);
      for (int i = 0; i < 64; i++) CHECK(c->count[i] == 1);
      free(c);
    }
    thread_pool_free(p);
  }
  thread_pool_free(NULL);
}

static void test_rank_pool(void) {
  struct cover *c = calloc(1, sizeof *c);
  thread_pool_par_for(3, 90, cover_fn, c);
  CHECK(thread_pool_rank() && thread_pool_threads(thread_pool_rank()) >= 3);
  for (int i = 0; i < 90; i++) CHECK(c->count[i] == 1);
  CHECK(atomic_load(&c->calls) == 3);
  free(c);
}

/* thread_pool_use: the thread's own pool of 2 threads takes its jobs in 2 slices, whatever nt
 * the caller asks for, and is never grown; NULL gives the rank's pool back. */
static void test_own_pool(void) {
  struct thread_pool *own = thread_pool_create(1, 0), *rank = thread_pool_rank();
  struct cover *c = calloc(1, sizeof *c);
  CHECK(own && c && thread_pool_threads(own) == 2);
  CHECK(thread_pool_use(own) == NULL && thread_pool_rank() == own);
  thread_pool_par_for(4, 90, cover_fn, c);
  for (int i = 0; i < 90; i++) CHECK(c->count[i] == 1);
  CHECK(atomic_load(&c->calls) == 2 && thread_pool_threads(own) == 2);
  for (int k = 0; k < 2; k++) CHECK(is_slice(90, 2, c->lo[k], c->hi[k]));
  CHECK(thread_pool_use(NULL) == own && thread_pool_rank() == rank);
  thread_pool_free(own);
  free(c);
}

int main(void) {
  for (int spin = 0; spin <= 50; spin += 50) {
    struct thread_pool *p = thread_pool_create(3, spin);
    CHECK(p && thread_pool_threads(p) == 4);
    test_partition(p);
    test_results(p);
    test_parallel(p);
    test_nested(p);
    test_concurrent(p);
    test_idle(p);
    thread_pool_free(p);
  }
  test_shutdown();
  test_rank_pool();
  test_own_pool();
  return TEST_RESULT("test_thread_pool");
}
