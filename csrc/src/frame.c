/* frame.c -- a frame's passes in one call (ps_run_frame).
 *
 * World.step's stages call one kernel per pass per substep; each call crosses from
 * Python to C and back, which costs a few microseconds a substep (more than all the passes
 * of a small body). When every pass of the frame is a kernel whose arguments do not change
 * between its substeps (the common case: no systems of the user's, no kinematic collider
 * moving, no integrator that evaluates the forces again), the World hands the frame's calls to ps_run_frame as a list of
 * ps_op, and it makes the same calls, in the same order, with the same arguments, for every
 * substep: the same bits as the stages. The few arguments that change with the substep (the
 * collide pass's "new contact report" on the first, the edge pass's direction on odd ones),
 * the scan that runs only on the last substep, and the passes that run only after an earlier
 * one of the substep returned nonzero (the collide-again pass after the edges' contacts or the
 * settle moved a particle, the settle's solve after its inverse masses found a particle stuck),
 * are described by each op (pysoft.h).
 *
 * The dispatch (one function per kernel unpacking p, i and d into its arguments, and the
 * names ps_op_names and argument kinds ps_op_scalars) is generated from this core's header
 * by pysoft/_build.py, so it cannot disagree with the kernels' declarations.
 *
 * With several threads (World.threads), consecutive ops whose kernels treat every particle
 * row on its own (gravity; the integration, the collide pass, the scan: Kernel.rows) form a
 * group: each thread takes a fixed range of the rows through all of the group's ops, with one wait
 * for the group where each op would wait for its own split. The pool's workers are then
 * handed work less often and sooner after their last (a worker idle longer than its spin
 * sleeps, and waking it costs more than a small pass). Any split gives each row the same
 * operations: the same bits. On one thread the ops run as listed (running them block by
 * block of rows measured no faster).
 */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L  /* clock_gettime, POSIX threads */
#include <pthread.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"
#if defined(_WIN32)
#include <windows.h>
#endif
#if defined(__x86_64__) && !defined(_WIN32)
#include <x86intrin.h>
#endif

typedef int64_t (*ps_op_fn)(const ps_op *op);
extern const ps_op_fn ps_op_table[];

static double seconds_now(void)
{
#if defined(_WIN32)
    LARGE_INTEGER t, f;
    QueryPerformanceCounter(&t);
    QueryPerformanceFrequency(&f);
    return (double)t.QuadPart / (double)f.QuadPart;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
#endif
}

#define PS_GROUP_MAX 16  /* the most ops in a group (pysoft/_frame.py keeps to it) */
#define PS_GROUP_ROWS 2048  /* the least rows in a thread's range (as the collide pass's) */

/* Whether op runs on substep s of `substeps` (and, if so, its varying count set). */
static int runs(ps_op *const *ops, ps_op *op, int s, int substeps)
{
    if ((op->when == 2 && s != substeps - 1) || (op->when == 1 && s != 0)
        || (op->after >= 0 && !ops[op->after]->result
            && (op->also < 0 || !ops[op->also]->result))) {
        op->result = 0;  /* did not run this substep: nothing for an `after` to see */
        return 0;
    }
    if (op->vary >= 0) op->i[op->vary] = op->vary_kind == 0 ? (s == 0) : (s % 2);
    return 1;
}

/* A frame's stages are timed in ticks, turned into seconds at its end by the ticks and the
 * seconds the whole frame took: on x86-64 the time-stamp counter, read in a third of the
 * time of the clock (a small world's frame reads it some thirty times); elsewhere seconds. */
static double ticks_now(void)
{
#if defined(__x86_64__) && !defined(_WIN32)
    return (double)__rdtsc();
#else
    return seconds_now();
#endif
}

/* The ticks since *t, added to `stage`'s (none if the count went back: another core's). */
static void clock_stage(int stage, double *t, int nstages, double *seconds)
{
    double t1 = ticks_now();
    if (stage >= 0 && stage < nstages && t1 > *t) seconds[stage] += t1 - *t;
    *t = t1;
}

/* One substep of a group's ops, ops[k0 .. k1), split over threads by rows. */
typedef struct {
    ps_op **ops;
    int k0, k1, n;
    char on[PS_GROUP_MAX];                      /* whether ops[k0 + q] runs this substep */
    int64_t got[PS_MAX_THREADS][PS_GROUP_MAX];  /* each range's result, per op */
    double seconds[PS_GROUP_MAX];               /* the calling thread's time per op */
} GroupTask;

/* Rows [r0, r1) through every op of the group that runs, in order: each op over its
 * per-row arrays from row r0, with r1 - r0 rows (or what it has of them) and one thread. */
static void group_part(void *args, int part, int parts)
{
    GroupTask *g = args;
    int r0 = ps_part_start(g->n, part, parts), r1 = ps_part_start(g->n, part + 1, parts);
    double t = part == 0 ? ticks_now() : 0.0;
    for (int k = g->k0; k < g->k1; k++) {
        int q = k - g->k0;
        const ps_op *op = g->ops[k];
        int64_t rows = (op->i[op->rows_slot] < r1 ? op->i[op->rows_slot] : r1) - r0;
        int64_t got = op->combine == 2 ? -1 : 0;
        if (g->on[q] && rows > 0) {
            ps_op range = *op;
            for (int a = 0; a < 48; a++)
                if (op->row_bytes[a])
                    range.p[a] = (char *)op->p[a] + (int64_t)r0 * op->row_bytes[a];
            range.i[op->rows_slot] = rows;
            if (op->threads_slot >= 0) range.i[op->threads_slot] = 1;
            got = ps_op_table[op->kernel](&range);
            if (op->combine == 2 && got >= 0) got += r0;
        }
        g->got[part][q] = got;
        if (part == 0) {
            double t1 = ticks_now();
            g->seconds[q] = t1 > t ? t1 - t : 0.0;
            t = t1;
        }
    }
}

/* The group's ops on one substep: each thread takes its range of the rows through all of
 * them (the ops treat rows on their own, so any split gives the same bits); each op's
 * result is its ranges' combined. The group's time (the wait for the other threads
 * included) is shared among its ops' stages in proportion to the calling thread's time in
 * each. */
static void run_group(ps_op **ops, int k0, int k1, int s, int substeps, int threads, double *t,
                      int nstages, double *seconds)
{
    GroupTask g;
    g.ops = ops, g.k0 = k0, g.k1 = k1, g.n = 0;
    for (int k = k0; k < k1; k++) {
        ps_op *op = ops[k];
        if (!(g.on[k - k0] = (char)runs(ops, op, s, substeps))) continue;
        op->calls++;
        if (op->i[op->rows_slot] > g.n) g.n = (int)op->i[op->rows_slot];
    }
    int parts = ps_pool_run(group_part, &g, ps_parts(threads, g.n, PS_GROUP_ROWS));
    double t1 = ticks_now(), mine = 0.0;  /* mine: the calling thread's time in the ops */
    for (int q = 0; q < k1 - k0; q++) mine += g.seconds[q];
    double scale = mine > 0.0 && t1 > *t ? (t1 - *t) / mine : 0.0;
    *t = t1;
    for (int k = k0; k < k1; k++) {
        ps_op *op = ops[k];
        int q = k - k0;
        if (op->stage >= 0 && op->stage < nstages) seconds[op->stage] += g.seconds[q] * scale;
        if (!g.on[q]) continue;
        int64_t result = op->combine == 2 ? -1 : 0;
        for (int part = 0; part < parts; part++) {
            int64_t got = g.got[part][q];
            if (op->combine == 1) result += got;
            else if (op->combine == 2 && result < 0) result = got;  /* the first range's find */
        }
        op->result = result;
    }
}

/* Runs `substeps` substeps of the ops; seconds[op.stage] (0 <= stage < nstages, zeroed first)
 * is the time of the stage's ops (a reading of the ticks where the stage of the ops that run
 * changes: a run of one stage's ops ends where the next stage's starts). With nstages 0
 * nothing is timed (no clock is read). */
void ps_run_frame(ps_op **ops, int nops, int substeps, int nstages, double *seconds, int threads)
{
    for (int k = 0; k < nstages; k++) seconds[k] = 0.0;
    double start = nstages > 0 ? seconds_now() : 0.0, t = nstages > 0 ? ticks_now() : 0.0, t0 = t;
    int stage = -1;  /* the stage of the ops run since the clock was last read */
    for (int s = 0; s < substeps; s++) {
        for (int k = 0; k < nops;) {
            ps_op *op = ops[k];
            if (op->group >= 0 && threads > 1) {
                int k1 = k + 1;
                while (k1 < nops && k1 - k < PS_GROUP_MAX && ops[k1]->group == op->group) k1++;
                if (stage >= 0) clock_stage(stage, &t, nstages, seconds);
                stage = -1;
                run_group(ops, k, k1, s, substeps, threads, &t, nstages, seconds);
                k = k1;
                continue;
            }
            k++;
            if (!runs(ops, op, s, substeps)) continue;
            if (nstages > 0 && op->stage != stage) {
                if (stage >= 0) clock_stage(stage, &t, nstages, seconds);
                stage = op->stage;
            }
            op->result = ps_op_table[op->kernel](op);
            op->calls++;
        }
    }
    if (stage >= 0) clock_stage(stage, &t, nstages, seconds);
    if (nstages > 0) { /* ticks to seconds, by the frame's own */
        double took = seconds_now() - start, scale = t > t0 && took > 0.0 ? took / (t - t0) : 0.0;
        for (int k = 0; k < nstages; k++) seconds[k] *= scale;
    }
}

/* Lines of each of a world's arrays that prefetch_world asks for. */
#define PS_PREFETCH_LINES 2

/* Ask the memory system for what the frame of world w reads first (its ops, and the first
 * lines of each array they point to) while another world runs: a small world's frame is
 * short next to the time its data takes to come from memory when many worlds were run since
 * (step_many runs hundreds of them in turn), and it reads its arrays in an order no hardware
 * prefetcher follows. It reads the ops' pointers; the arrays are only hinted at, and the bits
 * are the same. */
static void prefetch_world(const ps_world *w)
{
    for (int k = 0; k < w->nops; k++) {
        const ps_op *op = w->ops[k];
        __builtin_prefetch(op);
        for (int a = 0; a < op->nptr; a += 8) __builtin_prefetch(&op->p[a]);
        for (int a = 0; a < op->nptr; a++)
            for (int l = 0; l < PS_PREFETCH_LINES; l++) __builtin_prefetch((const char *)op->p[a] + 64 * l);
    }
}

/* One world's frames (ps_world): between two frames (and before the first, when it resumes)
 * its copies and fills, then the frame on this thread; it stops after a frame whose scan found an unstable particle. Only the last
 * frame is timed (its stages' seconds are the world's profile; clock readings cost a small
 * world's frame a good share of its time). */
static void run_world(ps_world *w)
{
    w->ran = 0;
    if (w->resume)
        for (int k = 0; k < w->nwatch; k++)
            if (memcmp(w->watch[k].to, w->watch[k].source, (size_t)w->watch[k].bytes)) {
                w->ran = -1;
                return;
            }
    for (int f = 0; f < w->frames; f++) {
        if (f > 0 || w->resume)
            for (int k = 0; k < w->nbetween; k++) {
                const ps_copy *c = &w->between[k];
                if (c->source) memmove(c->to, c->source, (size_t)c->bytes);
                else memset(c->to, c->fill, (size_t)c->bytes);
            }
        ps_run_frame(w->ops, w->nops, w->substeps, f == w->frames - 1 ? w->nstages : 0, w->seconds, 1);
        w->ran = f + 1;
        if (w->scan >= 0 && w->ops[w->scan]->result >= 0) break;
    }
    w->found = w->scan >= 0 && w->ran > 0 ? w->ops[w->scan]->result : -1;
}

typedef struct {
    ps_world **worlds;
    int count;
    int next;  /* the next world a thread takes */
    int frames;  /* ps_lane_worlds: the frames each world runs, and (not NULL) its status */
    int32_t *status;
} WorldsTask;

/* World w in step_many's lane (ps_lane_worlds): its status. */
static int32_t lane_world(ps_world *w, int frames)
{
    if (!w->lane) return 0;
    for (int k = 0; k < 4; k++)
        if (*w->versions[k] != w->armed[k]) return 0;
    w->frames = frames, w->resume = 1;
    run_world(w);
    if (w->ran < 0 || w->found >= 0) {
        w->lane = 0;
        return 2;
    }
    double t = *w->time;  /* as step() adds a frame's length, one frame at a time */
    for (int f = 0; f < w->ran; f++) t += w->dt;
    *w->time = t;
    if (w->after) w->after(w->after_data, w->after_index);
    return 1;
}

/* Each thread takes the next world not yet taken until none is left: a world's frames run
 * on one thread, whichever it is, so they are the same bits as its own step(). */
static void worlds_part(void *args, int part, int parts)
{
    WorldsTask *t = args;
    (void)part, (void)parts;
    for (;;) {
#if defined(_WIN32)
        int k = t->next++;
#else
        int k = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED);
#endif
        if (k >= t->count) break;
        if (k + 1 < t->count) prefetch_world(t->worlds[k + 1]);
        if (t->status) t->status[k] = lane_world(t->worlds[k], t->frames);
        else run_world(t->worlds[k]);
    }
}

void ps_run_worlds(ps_world **worlds, int count, int threads)
{
    WorldsTask t = {worlds, count, 0, 0, NULL};
    ps_pool_run(worlds_part, &t, threads < count ? threads : count);
}

void ps_lane_worlds(ps_world **worlds, int count, int frames, int threads, int32_t *status)
{
    WorldsTask t = {worlds, count, 0, frames, status};
    ps_pool_run(worlds_part, &t, threads < count ? threads : count);
}

/* The runner (pysoft.h): a thread that takes the worlds of one posted run at a time, as does
 * the caller's wait (it runs the worlds no thread has taken yet, then waits for those taken).
 * A world is taken with a ticket, (run << 48) | (count << 32) | next world, moved on by a
 * compare-and-swap only while it names the taker's run and a world is left, so a thread still
 * in an older run takes nothing from a newer one; a run is over when its `finished` count
 * reaches `count`, whether or not the runner's thread was ever scheduled. Between runs the
 * runner polls for a while (step_many posts the next run within microseconds of the last
 * one's end) and then sleeps; a wait polls and then sleeps too (it holds no lock of Python's
 * while it waits). */
#define PS_RUNNER_SPIN 20000  /* polls before a wait sleeps (some tens of microseconds) */
#define PS_RUNNER_MAX 0xffff  /* the most worlds in a run (a ticket's count) */

#if defined(_WIN32)

ps_runner *ps_runner_new(void) { return NULL; }
void ps_runner_post(ps_runner *r, ps_world **worlds, int count, int threads, int frames,
                    int32_t *status)
{
    (void)r;
    if (status) ps_lane_worlds(worlds, count, frames, threads, status);
    else ps_run_worlds(worlds, count, threads);
}
void ps_runner_wait(ps_runner *r) { (void)r; }
void ps_runner_free(ps_runner *r) { (void)r; }

#else

struct ps_runner {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;  /* a run was posted, or the thread is to end */
    pthread_cond_t over;  /* the posted run's last world finished */
    uint64_t posted;      /* runs posted so far */
    uint64_t ticket;      /* the current run's: see above */
    ps_world **worlds;    /* the current run's worlds */
    int count, threads;   /* its worlds (0: none pending), the runner's threads for it */
    int frames;           /* a lane run's (status not NULL): ps_lane_worlds's frames, statuses */
    int32_t *status;
    int finished;         /* its worlds finished */
    int quit;
};

static void runner_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#endif
}

/* The next world of run `run` (the low 16 bits of its number) for this thread, and the run's
 * count of worlds in *count; -1 if the ticket is another run's or no world is left. */
static int runner_next(ps_runner *r, unsigned run, int *count)
{
    uint64_t t = __atomic_load_n(&r->ticket, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((unsigned)(t >> 48) != run) return -1;
        int k = (int)(t & 0xffffffffu);
        *count = (int)((t >> 32) & PS_RUNNER_MAX);
        if (k >= *count) return -1;
        if (__atomic_compare_exchange_n(&r->ticket, &t, t + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return k;
    }
}

/* Run worlds of run `run` until none is left to take. */
static void runner_take(ps_runner *r, unsigned run)
{
    for (;;) {
        int count;
        int k = runner_next(r, run, &count);
        if (k < 0) return;
        ps_world **worlds = r->worlds;  /* (the run's: it cannot end while world k is not done) */
        if (k + 1 < count) prefetch_world(worlds[k + 1]);
        if (r->status) r->status[k] = lane_world(worlds[k], r->frames);
        else run_world(worlds[k]);
        if (__atomic_add_fetch(&r->finished, 1, __ATOMIC_ACQ_REL) == count) {
            pthread_mutex_lock(&r->lock);
            pthread_cond_broadcast(&r->over);
            pthread_mutex_unlock(&r->lock);
        }
    }
}

typedef struct {
    ps_runner *r;
    unsigned run;
} RunnerPart;

static void runner_part(void *args, int part, int parts)
{
    RunnerPart *p = args;
    (void)part, (void)parts;
    runner_take(p->r, p->run);
}

static void *runner_main(void *arg)
{
    ps_runner *r = arg;
    uint64_t seen = 0;
    for (;;) {
        for (int k = 0; k < PS_RUNNER_SPIN; k++) {
            if (__atomic_load_n(&r->posted, __ATOMIC_ACQUIRE) != seen
                || __atomic_load_n(&r->quit, __ATOMIC_ACQUIRE))
                break;
            runner_pause();
        }
        pthread_mutex_lock(&r->lock);
        while (r->posted == seen && !r->quit) pthread_cond_wait(&r->wake, &r->lock);
        if (r->quit) {
            pthread_mutex_unlock(&r->lock);
            return NULL;
        }
        seen = r->posted;
        RunnerPart part = {r, (unsigned)(seen & PS_RUNNER_MAX)};
        int threads = r->threads;
        pthread_mutex_unlock(&r->lock);
        if (threads > 1)
            ps_pool_run(runner_part, &part, threads);
        else
            runner_take(r, part.run);
    }
}

ps_runner *ps_runner_new(void)
{
    ps_runner *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_cond_init(&r->over, NULL);
    if (pthread_create(&r->thread, NULL, runner_main, r)) {
        pthread_cond_destroy(&r->over);
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

void ps_runner_wait(ps_runner *r)
{
    int count = r->count;  /* (only the caller's thread posts and waits) */
    if (!count) return;
    runner_take(r, (unsigned)(r->posted & PS_RUNNER_MAX));
    for (int k = 0; k < PS_RUNNER_SPIN && __atomic_load_n(&r->finished, __ATOMIC_ACQUIRE) < count; k++)
        runner_pause();
    pthread_mutex_lock(&r->lock);
    while (__atomic_load_n(&r->finished, __ATOMIC_ACQUIRE) < count) pthread_cond_wait(&r->over, &r->lock);
    r->count = 0;
    pthread_mutex_unlock(&r->lock);
}

void ps_runner_post(ps_runner *r, ps_world **worlds, int count, int threads, int frames,
                    int32_t *status)
{
    ps_runner_wait(r);  /* one run at a time */
    if (count <= 0) return;
    if (count > PS_RUNNER_MAX) {  /* more than a ticket counts: here, now */
        if (status) ps_lane_worlds(worlds, count, frames, threads, status);
        else ps_run_worlds(worlds, count, threads);
        return;
    }
    pthread_mutex_lock(&r->lock);
    r->worlds = worlds, r->count = count, r->threads = threads, r->finished = 0;
    r->frames = frames, r->status = status;
    uint64_t run = r->posted + 1;
    __atomic_store_n(&r->ticket, ((run & PS_RUNNER_MAX) << 48) | ((uint64_t)count << 32),
                     __ATOMIC_RELEASE);
    __atomic_store_n(&r->posted, run, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

void ps_runner_free(ps_runner *r)
{
    if (!r) return;
    ps_runner_wait(r);
    pthread_mutex_lock(&r->lock);
    __atomic_store_n(&r->quit, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->over);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

#endif
