/* springs.c -- damped springs, in the force pass.
 *
 * Damped springs (ps_springs) *add* to the force array. For a spring from a
 * to b with rest length L0, stiffness k (N/m) and damping c (N s/m):
 *
 *     d = x_b - x_a,  L = |d|,  u = d / L
 *     s = k (L - L0) + c (v_b - v_a) . u       (tension, N)
 *     F_a += s u,     F_b -= s u
 *
 * Damping acts along the spring axis only, so it never slows a rigid spin.
 * Below PS_MIN_LENGTH the axis is undefined and the spring exerts no force:
 * coincident endpoints never produce NaN, and rest length 0 (a mouse spring)
 * is valid. Hooke's law and this damper are the classic mass-spring model
 * of the seed articles (JellyCar-style soft bodies).
 *
 * Accumulation order (the NumPy twin follows it bit for bit): springs in
 * index order; within a spring, first F_a += f, then F_b -= f. Sums over
 * components run left to right (x, y, z). Compiled with -ffp-contract=off.
 */
#include <math.h>
#include "internal.h"

/* One spring's force f on endpoint a (b receives -f); dimension-generic. */
static inline int spring_force(double *f, const double *xa, const double *xb,
                               const double *va, const double *vb,
                               double rest, double k, double damp, int dim)
{
    double d[3], len2 = 0.0;
    for (int c = 0; c < dim; c++) {
        d[c] = xb[c] - xa[c];
        len2 = len2 + d[c] * d[c];
    }
    double len = sqrt(len2);
    if (!(len > PS_MIN_LENGTH)) return 0;
    double inv = 1.0 / len, vrel = 0.0;
    for (int c = 0; c < dim; c++) {
        d[c] = d[c] * inv;
        vrel = vrel + (vb[c] - va[c]) * d[c];
    }
    double s = k * (len - rest) + damp * vrel;
    for (int c = 0; c < dim; c++) f[c] = s * d[c];
    return 1;
}

void ps_springs(double *force, const double *pos, const double *vel,
                const int32_t *pairs, const double *rest_length,
                const double *stiffness, const double *damping,
                int m, int dim)
{
    double f[3];
    if (dim == 2) {
        /* Same arithmetic as the generic path, unrolled for the common case. */
        for (int j = 0; j < m; j++) {
            long a = 2L * pairs[2 * j], b = 2L * pairs[2 * j + 1];
            double dx = pos[b] - pos[a], dy = pos[b + 1] - pos[a + 1];
            double len2 = 0.0;
            len2 = len2 + dx * dx;
            len2 = len2 + dy * dy;
            double len = sqrt(len2);
            if (!(len > PS_MIN_LENGTH)) continue;
            double inv = 1.0 / len;
            double ux = dx * inv, uy = dy * inv;
            double vrel = 0.0;
            vrel = vrel + (vel[b] - vel[a]) * ux;
            vrel = vrel + (vel[b + 1] - vel[a + 1]) * uy;
            double s = stiffness[j] * (len - rest_length[j]) + damping[j] * vrel;
            double fx = s * ux, fy = s * uy;
            force[a] += fx;
            force[a + 1] += fy;
            force[b] -= fx;
            force[b + 1] -= fy;
        }
        return;
    }
    for (int j = 0; j < m; j++) {
        long a = (long)dim * pairs[2 * j], b = (long)dim * pairs[2 * j + 1];
        if (!spring_force(f, pos + a, pos + b, vel + a, vel + b,
                          rest_length[j], stiffness[j], damping[j], dim))
            continue;
        for (int c = 0; c < dim; c++) force[a + c] += f[c];
        for (int c = 0; c < dim; c++) force[b + c] -= f[c];
    }
}
