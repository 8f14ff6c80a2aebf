/* finish.c -- the finish pass: diagnostics after a substep.
 *
 * ps_find_unstable scans particles in index order and returns the first row
 * whose position or velocity is not finite or whose speed exceeds max_speed
 * (compared squared: |v|^2 > max_speed^2, sum left to right), or -1. The
 * world reports that row's entity instead of letting NaN spread silently.
 *
 * ps_clamp_speeds (on_instability="clamp") repairs what the scan finds, in
 * index order: a particle whose position or velocity is not finite goes back
 * to its substep's start (prev_pos; the origin along an axis where that is not
 * finite either) at rest; one faster than max_speed has its velocity scaled to
 * exactly that speed (v *= max_speed / |v|, |v|^2 summed left to right).
 * Returns the number of particles changed.
 */
#include <math.h>
#include "internal.h"

#ifndef PS_COMPILE_FLAGS
#define PS_COMPILE_FLAGS "unknown"
#endif

/* The flags this core was compiled with, for `python -m pysoft info`. */
const char *ps_compile_flags(void) { return PS_COMPILE_FLAGS; }

int ps_find_unstable(const double *pos, const double *vel, int n, int dim,
                     double max_speed)
{
    double limit = max_speed * max_speed;
    for (int i = 0; i < n; i++) {
        const double *x = pos + (long)i * dim, *v = vel + (long)i * dim;
        double v2 = 0.0;
        int finite = 1;
        for (int c = 0; c < dim; c++) {
            finite &= isfinite(x[c]) && isfinite(v[c]);
            v2 = v2 + v[c] * v[c];
        }
        if (!finite || v2 > limit) return i;
    }
    return -1;
}

int ps_clamp_speeds(double *pos, double *vel, const double *prev_pos, int n, int dim,
                    double max_speed)
{
    double limit = max_speed * max_speed;
    int changed = 0;
    for (int i = 0; i < n; i++) {
        double *x = pos + (long)i * dim, *v = vel + (long)i * dim;
        const double *p = prev_pos + (long)i * dim;
        double v2 = 0.0;
        int finite = 1;
        for (int c = 0; c < dim; c++) {
            finite &= isfinite(x[c]) && isfinite(v[c]);
            v2 = v2 + v[c] * v[c];
        }
        if (!finite) {
            for (int c = 0; c < dim; c++) {
                x[c] = isfinite(p[c]) ? p[c] : 0.0;
                v[c] = 0.0;
            }
            changed++;
        } else if (v2 > limit) {
            double s = max_speed / sqrt(v2);
            for (int c = 0; c < dim; c++) v[c] = v[c] * s;
            changed++;
        }
    }
    return changed;
}
