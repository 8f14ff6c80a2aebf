/* finish.c -- the finish pass: diagnostics after a substep.
 *
 * ps_find_unstable scans particles in index order and returns the first row
 * whose position or velocity is not finite or whose speed exceeds max_speed
 * (compared squared: |v|^2 > max_speed^2, sum left to right), or -1. The
 * world reports that row's entity instead of letting NaN spread silently. It tests
 * blocks of rows with no early exit first (a loop that vectorises) and searches
 * only a block that has an unstable row.
 *
 * ps_clamp_speeds (on_instability="clamp") repairs what the scan finds, in
 * index order: a particle whose position or velocity is not finite goes back
 * to its substep's start (prev_pos; the origin along an axis where that is not
 * finite either) at rest; one faster than max_speed has its velocity scaled to
 * exactly that speed (v *= max_speed / |v|, |v|^2 summed left to right).
 * Returns the number of particles changed.
 *
 * Momentum: the scan changes nothing. The clamp is a repair of a scene that already went
 * unstable, particle by particle: it does not keep momentum (a body with one particle slowed
 * loses that particle's share), and runs only under on_instability="clamp".
 */
#include <math.h>
#include "internal.h"

#ifndef PS_COMPILE_FLAGS
#define PS_COMPILE_FLAGS "unknown"
#endif

/* The flags this core was compiled with, for `python -m pysoft info`. */
const char *ps_compile_flags(void) { return PS_COMPILE_FLAGS; }

/* Whether this CPU runs the x86-64-v3 build of the core (AVX2, FMA, BMI1/2, ...). */
int ps_cpu_has_x86_64_v3(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
    __builtin_cpu_init();
    return __builtin_cpu_supports("x86-64-v3") != 0;
#elif defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
        && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
#else
    return 0;
#endif
}

/* The first unstable row in [start, end), or -1. */
PS_INLINE int first_unstable(const double *pos, const double *vel, int start, int end, int dim,
                             double limit)
{
    for (int i = start; i < end; i++) {
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

/* Whether any row in [start, end) is unstable: the same tests with no early exit, in 64-bit
 * lanes only (a value is not finite when its exponent bits are all ones), so the loop
 * vectorises; only a block that has an unstable row is searched. */
PS_INLINE int any_unstable(const double *pos, const double *vel, int start, int end, int dim,
                           double limit)
{
    const uint64_t exponent = 0x7ff0000000000000ULL;
    uint64_t bad = 0;
    for (long e = (long)start * dim; e < (long)end * dim; e++) {
        uint64_t bx, bv;
        memcpy(&bx, pos + e, sizeof bx);
        memcpy(&bv, vel + e, sizeof bv);
        bad |= ((bx & exponent) == exponent) | ((bv & exponent) == exponent);
    }
    for (int i = start; i < end; i++) {
        const double *v = vel + (long)i * dim;
        double v2 = 0.0;
        for (int c = 0; c < dim; c++) v2 = v2 + v[c] * v[c];
        bad |= v2 > limit;
    }
    return bad != 0;
}

#define PS_SCAN_BLOCK 256

PS_INLINE int find_unstable_impl(const double *pos, const double *vel, int n, int dim,
                                 double max_speed)
{
    double limit = max_speed * max_speed;
    for (int start = 0; start < n; start += PS_SCAN_BLOCK) {
        int end = n - start > PS_SCAN_BLOCK ? start + PS_SCAN_BLOCK : n;
        if (any_unstable(pos, vel, start, end, dim, limit))
            return first_unstable(pos, vel, start, end, dim, limit);
    }
    return -1;
}

int ps_find_unstable(const double *pos, const double *vel, int n, int dim,
                     double max_speed)
{
    if (dim == 2) return find_unstable_impl(pos, vel, n, 2, max_speed);
    return find_unstable_impl(pos, vel, n, 3, max_speed);
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
