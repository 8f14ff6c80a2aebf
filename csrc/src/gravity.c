/* gravity.c -- uniform gravity with linear drag, and radial gravity wells.
 *
 * Gravity and drag (ps_gravity_drag) *set* the force array, so it runs first
 * in every force evaluation:
 *
 *     F_i = m_i (g - drag v_i)          for movable particles (inv_mass > 0)
 *     F_i = 0, v_i = 0                  for immovable ones (a velocity written to a pinned
 *                                       particle would otherwise drive its springs' dampers)
 *
 * With `record` set it first copies every velocity, as it was, into start_vel: the first
 * pass of a frame that runs in one call records the frame's start velocities there for the
 * instability replay (pysoft/_replay.py), a store beside a load it makes anyway, where a copy
 * of its own would read them all again (4 % of the canonical scene's step).
 *
 * drag is a linear air resistance in 1/s (a particle's velocity decays as
 * exp(-drag t) without other forces).
 *
 * Radial gravity (planets, seed 000; ps_radial_gravity) *adds* to it: each
 * well pulls every movable particle toward its centre with acceleration
 * strength / d^falloff (m/s^2 at 1 m for falloff 2: strength = G M),
 * d = max(|c - x|, min_distance) so the pull stays finite at the centre.
 * falloff is a small integer (0 constant, 1, 2 inverse square, 3), raised by
 * repeated multiplication: no pow(), so the NumPy twin matches bit for bit.
 * Adds F = m a; particles outer, wells inner; sums over components run left
 * to right (x, y, z). Compiled with -ffp-contract=off.
 */
#include <math.h>
#include "internal.h"

PS_INLINE void gravity_drag_impl(double *restrict force, double *restrict vel,
                                 double *restrict start_vel, const double *restrict mass,
                                 const double *restrict inv_mass,
                                 const double *restrict gravity, int n, int dim, double drag)
{
    if (start_vel) memcpy(start_vel, vel, (size_t)n * (size_t)dim * sizeof *vel);
    /* An immovable particle gets no force and no velocity, whatever was written (+0.0,
     * through ps_blend: no branch), and the pointers are restrict (the arrays never
     * overlap), so the loop vectorises. */
    for (int i = 0; i < n; i++) {
        uint64_t moves = (uint64_t)0 - (uint64_t)(inv_mass[i] != 0.0);
        for (int c = 0; c < dim; c++) {
            long q = (long)i * dim + c;
            double v = vel[q];
            force[q] = ps_blend(mass[i] * (gravity[c] - drag * v), 0.0, moves);
            vel[q] = ps_blend(v, 0.0, moves);
        }
    }
}

#if defined(__AVX2__)
/* The x86-64-v3 build in 2D: two particles (four components) per iteration, with
 * gravity_drag_impl's operations on each component, so the same bits. Returns the first row
 * it left to the scalar loop. */
PS_INLINE int gravity_drag_2d_avx(double *restrict force, double *restrict vel,
                                  double *restrict start_vel, const double *restrict mass,
                                  const double *restrict inv_mass,
                                  const double *restrict gravity, int n, double drag)
{
    const __m256d g = _mm256_set_pd(gravity[1], gravity[0], gravity[1], gravity[0]);
    const __m256d dr = _mm256_set1_pd(drag), zero = _mm256_setzero_pd();
    int i = 0;
    for (; i + 2 <= n; i += 2) {
        long q = 2L * i;
        /* [x_i, x_i, x_i+1, x_i+1] of a per-particle array */
        __m256d im = _mm256_permute4x64_pd(_mm256_castpd128_pd256(_mm_loadu_pd(inv_mass + i)), 0x50);
        __m256d m = _mm256_permute4x64_pd(_mm256_castpd128_pd256(_mm_loadu_pd(mass + i)), 0x50);
        __m256d moves = _mm256_cmp_pd(im, zero, _CMP_NEQ_UQ);
        __m256d v = _mm256_loadu_pd(vel + q);
        if (start_vel) _mm256_storeu_pd(start_vel + q, v);
        __m256d f = _mm256_mul_pd(m, _mm256_sub_pd(g, _mm256_mul_pd(dr, v)));
        _mm256_storeu_pd(force + q, _mm256_blendv_pd(zero, f, moves));
        _mm256_storeu_pd(vel + q, _mm256_blendv_pd(zero, v, moves));
    }
    return i;
}
#endif

void ps_gravity_drag(double *force, double *vel, double *start_vel, const double *mass,
                     const double *inv_mass, const double *gravity,
                     int n, int dim, double drag, int record)
{
    double *copy = record ? start_vel : NULL;
#if defined(__AVX2__)
    if (dim == 2) {
        int i = gravity_drag_2d_avx(force, vel, copy, mass, inv_mass, gravity, n, drag);
        gravity_drag_impl(force + 2L * i, vel + 2L * i, copy ? copy + 2L * i : NULL, mass + i,
                          inv_mass + i, gravity, n - i, 2, drag);
        return;
    }
#endif
    if (dim == 2) gravity_drag_impl(force, vel, copy, mass, inv_mass, gravity, n, 2, drag);
    else gravity_drag_impl(force, vel, copy, mass, inv_mass, gravity, n, 3, drag);
}

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
