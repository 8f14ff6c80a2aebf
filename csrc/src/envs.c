/* envs.c -- pysoft.envs' walkers: a step's work around the frame, for many worlds in one call.
 *
 * A vector environment (pysoft/envs/vector.py) drives the muscles of all its walkers in one
 * call and reads their observations in one call, or each walker's right after its frame in
 * step_many's lane (ps_walker_observed, its world's `after`: its arrays still in the caches of
 * the CPU that ran it); a single environment makes the same calls on a batch of one, so the
 * two give the same bits. World w's arrays are reached through
 * pointers (its Store's buffers never move): act[w] its spring table's activations, pos[w]
 * and vel[w] its particle table's positions and velocities (2D: rows of two doubles). The
 * index arrays are per world, row-major: muscle_rows (nw, m), rows (nw, n).
 */
#include "pysoft.h"

static double clamp(double v, double low, double high)
{
    if (v > high) v = high; /* (as np.minimum then np.maximum: NaN stays NaN) */
    if (v < low) v = low;
    return v;
}

/* Muscles from actions: world w's actuator j has the action c = action[w k + j] clipped to
 * [-1, 1] and the activation e_j = 1 + 0.5 c; muscle i, of actuators owners[2 i] and
 * owners[2 i + 1] (the same one twice for a muscle of one voxel), gets the activation
 * 0.5 (e_a + e_b) clamped to [low, high] (as VoxelRobot.drive), written at row
 * muscle_rows[w m + i] of act[w]. */
void ps_walkers_drive(double *const *act, const double *action, const int32_t *muscle_rows,
                      const int32_t *owners, int nw, int k, int m, double low, double high)
{
    for (int w = 0; w < nw; w++) {
        const double *a = action + (int64_t)w * k;
        const int32_t *rows = muscle_rows + (int64_t)w * m;
        double *out = act[w];
        for (int i = 0; i < m; i++) {
            double ea = 1.0 + 0.5 * clamp(a[owners[2 * i]], -1.0, 1.0);
            double eb = 1.0 + 0.5 * clamp(a[owners[2 * i + 1]], -1.0, 1.0);
            out[rows[i]] = clamp(0.5 * (ea + eb), low, high);
        }
    }
}

/* Observations: world w's robot is its particles rows[w n + j], j = 0 .. n-1, with weights
 * weights[j] (their masses over the total). Its centre c = sum_j weights[j] pos_j and velocity
 * u = sum_j weights[j] vel_j (each summed from 0.0 in j order, a product then a sum); its
 * observation row obs[w size ..], size = 2 + 2 n, is (u_x, u_y, pos_0 - c, pos_1 - c, ...),
 * each value clamped to [-limit, limit] (NaN stays NaN); x[w] = c_x, unclamped; times[w] =
 * *time[w], the world's time. */
static void observe(double *obs, double *x, double *times, const double *const *pos,
                    const double *const *vel, const double *const *time, const int32_t *rows,
                    const double *weights, int w, int n, double limit)
{
    int64_t size = 2 + 2 * (int64_t)n;
    const double *p = pos[w], *v = vel[w];
    const int32_t *r = rows + (int64_t)w * n;
    double cx = 0.0, cy = 0.0, ux = 0.0, uy = 0.0;
    for (int j = 0; j < n; j++) {
        int64_t row = r[j];
        cx += weights[j] * p[2 * row];
        cy += weights[j] * p[2 * row + 1];
        ux += weights[j] * v[2 * row];
        uy += weights[j] * v[2 * row + 1];
    }
    double *o = obs + w * size;
    o[0] = clamp(ux, -limit, limit);
    o[1] = clamp(uy, -limit, limit);
    for (int j = 0; j < n; j++) {
        int64_t row = r[j];
        o[2 + 2 * j] = clamp(p[2 * row] - cx, -limit, limit);
        o[3 + 2 * j] = clamp(p[2 * row + 1] - cy, -limit, limit);
    }
    x[w] = cx;
    times[w] = *time[w];
}

void ps_walkers_observe(double *obs, double *x, double *times, const double *const *pos,
                        const double *const *vel, const double *const *time, const int32_t *rows,
                        const double *weights, int nw, int n, double limit)
{
    for (int w = 0; w < nw; w++) observe(obs, x, times, pos, vel, time, rows, weights, w, n, limit);
}

void ps_walker_observed(const void *walkers, int w)
{
    const ps_walkers *b = walkers;
    observe(b->obs, b->x, b->times, b->pos, b->vel, b->time, b->rows, b->weights, w, b->n, b->limit);
    b->observed[w] = 1;
}
