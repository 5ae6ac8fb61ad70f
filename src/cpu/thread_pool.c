/* cpu/thread_pool.c: persistent workers for the CPU ops' parallel loops (see
 * cpu/thread_pool.h).
 *
 * A job is published as one atomic ticket, generation << 8 | nt: a worker that
 * sees a new generation knows from the ticket alone whether it takes part (its
 * index < nt), so a worker that sits a job out never reads the job's fields
 * while the caller may be writing the next one. `pending` counts the slices
 * still running on workers; the last one to finish signals the caller. Both
 * sleeps (workers waiting for a ticket, the caller waiting for `pending`) check
 * their condition under `mu`, and both wake-ups are sent under it, so none is
 * lost. */
#include "cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define POOL_MAX_THREADS 64 /* nt fits the ticket's low byte */
#define RANK_SPIN_US 50 /* the rank's pool: a decode step's ops follow within this */

struct pool_worker {
  struct thread_pool *pool;
  int index;    /* 1 .. workers: the slice it runs */
  uint64_t seen; /* the ticket when it was started: it takes the jobs after it */
};

struct thread_pool {
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  pthread_mutex_t busy; /* held by the thread running a job */
  _Atomic uint64_t ticket;
  _Atomic int pending;
  int quit, workers, spin_us;
  pthread_t tid[POOL_MAX_THREADS];
  struct pool_worker self[POOL_MAX_THREADS];
  /* the job; written before the ticket is published, read after it is seen */
  thread_pool_fn fn;
  void *arg;
  size_t n;
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

/* Poll *x until it differs from `from` (seen: returns 1) or spin_us pass (0).
 * The poll yields the core between looks: on a node shared with more runnable
 * threads than cores (other ranks, BLAS's threads) a pause-spin holds the core
 * the awaited thread needs (120-240 us a job instead of 20, measured), while
 * with yields a job costs 15-25 us against 35-40 us for a plain sleep and wake. */
static int spin_until_change_u64(_Atomic uint64_t *x, uint64_t from, int spin_us) {
  if (spin_us <= 0) return 0;
  double end = now_us() + spin_us;
  for (;;) {
    for (int i = 0; i < 4; i++) {
      if (atomic_load_explicit(x, memory_order_acquire) != from) return 1;
      sched_yield();
    }
    if (now_us() > end) return 0;
  }
}

static int spin_until_zero(_Atomic int *x, int spin_us) {
  if (spin_us <= 0) return atomic_load_explicit(x, memory_order_acquire) == 0;
  double end = now_us() + spin_us;
  for (;;) {
    for (int i = 0; i < 4; i++) {
      if (atomic_load_explicit(x, memory_order_acquire) == 0) return 1;
      sched_yield();
    }
    if (now_us() > end) return 0;
  }
}

static void slice_run(thread_pool_fn fn, void *arg, size_t n, int nt, int i) {
  size_t lo = n * (size_t)i / (size_t)nt, hi = n * (size_t)(i + 1) / (size_t)nt;
  if (lo < hi) fn(arg, lo, hi);
}

static uint64_t ticket_wait(struct thread_pool *p, uint64_t seen) {
  if (!spin_until_change_u64(&p->ticket, seen, p->spin_us)) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->ticket) == seen && !p->quit) pthread_cond_wait(&p->wake, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  return atomic_load_explicit(&p->ticket, memory_order_acquire);
}

static void *worker_main(void *arg) {
  struct pool_worker *w = arg;
  struct thread_pool *p = w->pool;
  uint64_t seen = w->seen;
  for (;;) {
    uint64_t t = ticket_wait(p, seen);
    if (t == seen) return NULL; /* woken with no new job: quit */
    seen = t;
    int nt = (int)(t & 0xff);
    if (w->index >= nt) continue;
    slice_run(p->fn, p->arg, p->n, nt, w->index);
    if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

struct thread_pool *thread_pool_create(int workers, int spin_us) {
  struct thread_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->busy, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->ticket, 0);
  atomic_init(&p->pending, 0);
  p->spin_us = spin_us;
  thread_pool_grow(p, workers + 1);
  return p;
}

int thread_pool_threads(const struct thread_pool *p) { return p->workers + 1; }

/* Workers block every signal: a process-directed signal (SIGTERM, the
 * checkpoint signals of run/signals.c) is then handled by a thread of the caller's. */
int thread_pool_grow(struct thread_pool *p, int threads) {
  if (threads > POOL_MAX_THREADS) threads = POOL_MAX_THREADS;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  while (p->workers + 1 < threads) {
    int i = p->workers + 1;
    p->self[i] = (struct pool_worker){.pool = p, .index = i, .seen = atomic_load(&p->ticket)};
    if (pthread_create(&p->tid[i], NULL, worker_main, &p->self[i]) != 0) break;
    p->workers = i;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return p->workers + 1;
}

void thread_pool_free(struct thread_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i <= p->workers; i++) pthread_join(p->tid[i], NULL);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->busy);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

void thread_pool_run(struct thread_pool *p, int nt, size_t n, thread_pool_fn fn, void *arg) {
  if ((size_t)nt > n) nt = (int)n;
  if (!p) nt = 1;
  else if (nt > thread_pool_threads(p)) nt = thread_pool_threads(p);
  if (nt <= 1 || pthread_mutex_trylock(&p->busy) != 0) {
    /* serial (or nested / concurrent use): the same slices, in order, here */
    for (int i = 0; i < (nt > 1 ? nt : 1); i++) slice_run(fn, arg, n, nt > 1 ? nt : 1, i);
    return;
  }
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  atomic_store_explicit(&p->pending, nt - 1, memory_order_relaxed);
  uint64_t next = ((atomic_load(&p->ticket) >> 8) + 1) << 8 | (uint64_t)nt;
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->ticket, next, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  slice_run(fn, arg, n, nt, 0);
  if (!spin_until_zero(&p->pending, p->spin_us)) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->pending) != 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&p->busy);
}

/* ---- the rank's pool ----------------------------------------------------------
 * The backend ops take no context (model/backend.h), and the rank's thread budget they
 * follow is itself process state (OpenBLAS's count, set once by run/threads.h), so
 * the pool lives beside it: created once per process, grown when the budget
 * grows, and left to the process's exit (its workers sleep; nothing to flush). */

static pthread_once_t rank_once = PTHREAD_ONCE_INIT;
static struct thread_pool *rank_pool;

static void rank_pool_start(void) { rank_pool = thread_pool_create(0, RANK_SPIN_US); }

/* A thread's own pool in place of the rank's (thread_pool_use); NULL: the rank's. */
static _Thread_local struct thread_pool *thread_own_pool;

struct thread_pool *thread_pool_use(struct thread_pool *p) {
  struct thread_pool *before = thread_own_pool;
  thread_own_pool = p;
  return before;
}

struct thread_pool *thread_pool_rank(void) {
  if (thread_own_pool) return thread_own_pool;
  pthread_once(&rank_once, rank_pool_start);
  return rank_pool;
}

void thread_pool_par_for(int nt, size_t n, thread_pool_fn fn, void *arg) {
  struct thread_pool *p = nt > 1 ? thread_pool_rank() : NULL;
  /* the rank's pool grows to the budget; a thread's own keeps its size (its share of it) */
  if (p && p == rank_pool && nt > thread_pool_threads(p) && pthread_mutex_trylock(&p->busy) == 0) {
    thread_pool_grow(p, nt);
    pthread_mutex_unlock(&p->busy);
  }
  thread_pool_run(p, nt, n, fn, arg);
}

void thread_pool_par_for_work(int nt, size_t n, size_t cost, size_t min_work, thread_pool_fn fn,
                              void *arg) {
  size_t by_work = n * cost / (min_work ? min_work : 1);
  thread_pool_par_for((size_t)nt > by_work ? (int)by_work : nt, n, fn, arg);
}
