/* frame.c -- a frame's passes in one call (ps_run_frame).
 *
 * World.step's stages call one kernel per pass per substep; each call crosses from
 * Python to C and back, which costs a few microseconds a substep (more than all the passes
 * of a small body). When every pass of the frame is a kernel whose arguments do not change
 * between its substeps (the common case: no systems of the user's, no kinematic collider
 * moving, no XPBD constraints), the World hands the frame's calls to ps_run_frame as a list of
 * ps_op, and it makes the same calls, in the same order, with the same arguments, for every
 * substep: the same bits as the stages. The few arguments that change with the substep (the
 * collide pass's "new contact report" on the first, the edge pass's direction on odd ones),
 * the scan that runs only on the last substep, and the collide-again pass that runs only
 * after the edges moved a particle, are described by each op (pysoft.h).
 *
 * The dispatch (one function per kernel unpacking p, i and d into its arguments, and the
 * names ps_op_names and argument kinds ps_op_scalars) is generated from this core's header
 * by pysoft/_build.py, so it cannot disagree with the kernels' declarations.
 */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 199309L  /* clock_gettime */
#endif
#include <time.h>
#include "internal.h"
#if defined(_WIN32)
#include <windows.h>
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

/* Runs `substeps` substeps of the ops; seconds[op.stage] (0 <= stage < nstages, zeroed first)
 * is the time of the stage's ops (one clock reading per op: each op's time ends where the
 * next one's starts). */
void ps_run_frame(ps_op **ops, int nops, int substeps, int nstages, double *seconds)
{
    for (int k = 0; k < nstages; k++) seconds[k] = 0.0;
    double t = seconds_now();
    for (int s = 0; s < substeps; s++) {
        for (int k = 0; k < nops; k++) {
            ps_op *op = ops[k];
            if ((op->when == 2 && s != substeps - 1) || (op->after >= 0 && !ops[op->after]->result)) {
                op->result = 0;  /* did not run this substep: nothing for an `after` to see */
                continue;
            }
            if (op->vary >= 0) op->i[op->vary] = op->vary_kind == 0 ? (s == 0) : (s % 2);
            op->result = ps_op_table[op->kernel](op);
            op->calls++;
            double t1 = seconds_now();
            if (op->stage >= 0 && op->stage < nstages) seconds[op->stage] += t1 - t;
            t = t1;
        }
    }
}
