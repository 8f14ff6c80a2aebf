/* finish.c -- the finish pass: diagnostics after a substep.
 *
 * ps_find_unstable scans particles in index order and returns the first row
 * whose position or velocity is not finite or whose speed exceeds max_speed
 * (compared squared: |v|^2 > max_speed^2, sum left to right), or -1. The
 * world reports that row's entity instead of letting NaN spread silently.
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
