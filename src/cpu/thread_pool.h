/* cpu/thread_pool.h: a persistent pool of worker threads that runs one parallel
 * loop at a time, for the CPU ops and AdamW.
 *
 * A job is fn(arg, lo, hi) over [0, n) in nt contiguous slices, slice i being
 * [n*i/nt, n*(i+1)/nt): the partition depends on n and nt only, never on timing,
 * so an op that computes every element the same way in any slice gives the same
 * bits on every run. The calling thread runs slice 0, worker i slice i, and the
 * call returns when every slice is done.
 *
 * Idle workers wait passively: after a job they poll for up to spin_us,
 * yielding the core between looks (the next op of a decode step usually
 * follows at once), then sleep on a condition variable, so they never compete
 * with OpenBLAS's threads or other ranks for the cores. Starting a job costs a
 * wake-up (15-40 us on a loaded 2-core node), not a pthread_create and join.
 *
 * A job started while the pool is busy (from inside a slice, or from a second
 * thread) runs its slices one after another on the calling thread: the same
 * partition, no deadlock. */
#ifndef RLPT_THREAD_POOL_H
#define RLPT_THREAD_POOL_H

#include <stddef.h>

struct thread_pool;

typedef void (*thread_pool_fn)(void *arg, size_t lo, size_t hi);

/* A pool of workers - 1 worker threads (0: every job runs on the caller). spin_us:
 * how long an idle worker polls for the next job before it sleeps. NULL when out
 * of memory; fewer workers than asked when threads cannot be started. */
struct thread_pool *thread_pool_create(int workers, int spin_us);
/* Wakes and joins the workers; p must be idle. NULL is a no-op. */
void thread_pool_free(struct thread_pool *p);
/* Threads a job can use: the caller plus the workers. */
int thread_pool_threads(const struct thread_pool *p);
/* Start workers until the pool has `threads` threads (it never shrinks); returns
 * thread_pool_threads afterwards. Only while the pool is idle. */
int thread_pool_grow(struct thread_pool *p, int threads);
/* fn over [0, n) in nt slices (see above); nt is lowered to n and to the pool's
 * threads (the slices then still follow that lower nt). */
void thread_pool_run(struct thread_pool *p, int nt, size_t n, thread_pool_fn fn, void *arg);

/* The rank's pool: one per process (a rank is a process), started on first use
 * and grown to the rank's thread budget, which is OpenBLAS's thread count
 * (run/threads.h sets it); the calling thread's own instead after thread_pool_use.
 * NULL only when it cannot be allocated. */
struct thread_pool *thread_pool_rank(void);
/* Makes p the calling thread's pool in place of the rank's (NULL: the rank's again) and
 * returns the one it replaces: two threads of a rank that work at once (colocate_async's
 * generation and training) each take their share of the cores so. Such a pool is never
 * grown; the jobs' slices then follow its size. */
struct thread_pool *thread_pool_use(struct thread_pool *p);
/* thread_pool_run on the rank's pool with nt threads (at most OpenBLAS's count is
 * what callers pass); serial slices if the pool cannot be had. */
void thread_pool_par_for(int nt, size_t n, thread_pool_fn fn, void *arg);
/* thread_pool_par_for with at most one thread per min_work units of work (n items of
 * `cost` units each): waking a thread for less costs more than it saves. */
void thread_pool_par_for_work(int nt, size_t n, size_t cost, size_t min_work, thread_pool_fn fn,
                              void *arg);

#endif
