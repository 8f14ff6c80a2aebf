/* forces.c -- the force pass: gravity, linear drag and damped springs.
 *
 * Gravity and drag (ps_gravity_drag) *set* the force array, so it runs first
 * in every force evaluation:
 *
 *     F_i = m_i (g - drag v_i)          for movable particles (inv_mass > 0)
 *     F_i = 0                           for immovable ones
 *
 * drag is a linear air resistance in 1/s (a particle's velocity decays as
 * exp(-drag t) without other forces).
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
#include "pysoft.h"

#define PS_MIN_LENGTH 1e-12

void ps_gravity_drag(double *force, const double *vel, const double *mass,
                     const double *inv_mass, const double *gravity,
                     int n, int dim, double drag)
{
    for (int i = 0; i < n; i++) {
        double *f = force + (long)i * dim;
        const double *v = vel + (long)i * dim;
        if (inv_mass[i] == 0.0) {
            for (int c = 0; c < dim; c++) f[c] = 0.0;
            continue;
        }
        for (int c = 0; c < dim; c++) f[c] = mass[i] * (gravity[c] - drag * v[c]);
    }
}

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

/* Radial gravity (planets, seed 000): each well pulls every movable particle
 * toward its centre with acceleration strength / d^falloff (m/s^2 at 1 m for
 * falloff 2: strength = G M), d = max(|c - x|, min_distance) so the pull
 * stays finite at the centre. falloff is a small integer (0 constant, 1, 2
 * inverse square, 3), raised by repeated multiplication: no pow(), so the
 * NumPy twin matches bit for bit. Adds F = m a; particles outer, wells inner.
 */
void ps_radial_gravity(double *force, const double *pos, const double *mass,
                       const double *inv_mass, const double *well_center,
                       const double *well_strength, const int32_t *well_falloff,
                       const double *well_min_distance, int n, int w, int dim)
{
    for (int i = 0; i < n; i++) {
        if (inv_mass[i] == 0.0) continue;
        const double *x = pos + (long)i * dim;
        double *f = force + (long)i * dim;
        for (int j = 0; j < w; j++) {
            const double *c = well_center + (long)j * dim;
            double d[3], d2 = 0.0;
            for (int a = 0; a < dim; a++) {
                d[a] = c[a] - x[a];
                d2 = d2 + d[a] * d[a];
            }
            double dist = sqrt(d2);
            if (!(dist > PS_MIN_LENGTH)) continue;  /* at the centre: no direction */
            double eff = dist > well_min_distance[j] ? dist : well_min_distance[j];
            double denom = 1.0;
            for (int e = 0; e < well_falloff[j]; e++) denom = denom * eff;
            double s = mass[i] * (well_strength[j] / denom) / dist;
            for (int a = 0; a < dim; a++) f[a] = f[a] + s * d[a];
        }
    }
}
