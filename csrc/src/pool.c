/* pool.c -- the worker threads a pass may split its loop over (World(threads=N)).
 *
 * ps_pool_run(fn, args, parts) calls fn(args, part, parts) once for each part
 * 0 .. parts-1: part 0 on the calling thread, the others on the pool's
 * workers, and returns when all are done. The caller's pass splits its loop
 * by part in a fixed way (springs j0 .. j1, particles i0 .. i1) so that each
 * row is computed by the same arithmetic whichever thread runs it: the
 * results are bit for bit those of one thread.
 *
 * The workers are started on the first run that asks for them (at most
 * PS_MAX_THREADS - 1, never stopped) and hold no simulation state. A run asked for from
 * within a run's part (a world's pass while ps_run_worlds hands worlds to the threads) takes
 * one part on the thread that asks: the same bits, and no thread waits on itself. Between
 * runs a worker spins for a while (a step's passes follow each other within
 * microseconds) and then sleeps on a condition variable. A process forked
 * from one that started them starts its own. Without POSIX threads every
 * run takes one part.
 */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#endif
#include "internal.h"

#define PS_SPIN 10000 /* polls of a waiting worker before it sleeps (some tens of µs) */

#if defined(_WIN32)

int ps_pool_run(ps_part_fn fn, void *args, int parts)
{
    (void)parts;
    fn(args, 0, 1);
    return 1;
}

#else

static struct {
    pthread_mutex_t run;  /* one run at a time (two Python threads may call kernels at once) */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int workers;          /* started */
    int sleepers;         /* workers waiting on wake */
    long generation;      /* runs posted so far */
    int pending;          /* workers that have not finished the current run */
    ps_part_fn fn;
    void *args;
    int parts;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          0, 0, 0, 0, 0, 0, 0};

static long first_seen[PS_MAX_THREADS];  /* the generation each worker was started at */
static __thread int in_part;  /* whether this thread is running a part of a run */

static void pause_briefly(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#endif
}

/* Worker `index` (1 .. workers) takes part `index` of each run that has that many parts and
 * reports every run done (taken or not), so a run ends only when every worker has seen it. */
static void *worker(void *arg)
{
    int index = (int)(intptr_t)arg;
    long seen = first_seen[index];
    in_part = 1;
    for (;;) {
        for (int s = 0; s < PS_SPIN && __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE) == seen; s++)
            pause_briefly();
        if (__atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE) == seen) {
            pthread_mutex_lock(&pool.lock);
            while (__atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE) == seen) {
                pool.sleepers++;
                pthread_cond_wait(&pool.wake, &pool.lock);
                pool.sleepers--;
            }
            pthread_mutex_unlock(&pool.lock);
        }
        seen = __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE);
        if (index < pool.parts) pool.fn(pool.args, index, pool.parts);
        __atomic_sub_fetch(&pool.pending, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void forget_workers(void)  /* in a forked child: the workers were not copied */
{
    pool.workers = 0;
    pool.sleepers = 0;
    pthread_mutex_init(&pool.run, NULL);
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
}

int ps_pool_run(ps_part_fn fn, void *args, int parts)
{
    static int atfork = 0;
    if (parts > PS_MAX_THREADS) parts = PS_MAX_THREADS;
    if (parts <= 1 || in_part) {
        fn(args, 0, 1);
        return 1;
    }
    pthread_mutex_lock(&pool.run);
    if (!atfork) atfork = pthread_atfork(NULL, NULL, forget_workers) == 0;
    while (pool.workers < parts - 1) {
        pthread_t t;
        pthread_attr_t attr;
        int index = pool.workers + 1;
        first_seen[index] = pool.generation;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, worker, (void *)(intptr_t)index);
        pthread_attr_destroy(&attr);
        if (failed) break;
        pool.workers = index;
    }
    if (parts > pool.workers + 1) parts = pool.workers + 1;
    if (parts <= 1) {
        pthread_mutex_unlock(&pool.run);
        fn(args, 0, 1);
        return 1;
    }
    pool.fn = fn, pool.args = args, pool.parts = parts;
    __atomic_store_n(&pool.pending, pool.workers, __ATOMIC_RELAXED);
    pthread_mutex_lock(&pool.lock);
    __atomic_add_fetch(&pool.generation, 1, __ATOMIC_RELEASE);
    if (pool.sleepers) pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    in_part = 1;
    fn(args, 0, parts);
    in_part = 0;
    while (__atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE)) pause_briefly();
    pthread_mutex_unlock(&pool.run);
    return parts;
}

#endif

int ps_parts(int threads, int rows, int least)
{
    int most = rows / least;
    int parts = threads < most ? threads : most;
    return parts > 1 ? parts : 1;
}

/* The start of part `part` of `count` rows split `parts` ways. */
int ps_part_start(int count, int part, int parts)
{
    return (int)((int64_t)count * part / parts);
}
