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
 * Area springs (ps_area_springs, 2D) hold a triangle's signed area: for
 * corners a, b, c (counter-clockwise at rest: A0 > 0), rest area A0,
 * stiffness k (N/m^3) and damping c (N s/m^3),
 *
 *     A = ((x_b - x_a) x (x_c - x_a)) / 2,   g_a = dA/dx_a = (y_b - y_c, x_c - x_b) / 2
 *     (and cyclically g_b = (y_c - y_a, x_a - x_c) / 2, g_c = (y_a - y_b, x_b - x_a) / 2)
 *     s = -(k (A - A0) + c dA/dt),   dA/dt = g_a . v_a + g_b . v_b + g_c . v_c
 *     F_a += s g_a,  F_b += s g_b,  F_c += s g_c
 * The forces sum to zero with zero torque (a rigid motion keeps A); a
 * triangle turned inside out (A < 0) is pushed back through itself, which
 * is what lets a lattice of springs (whose mirror image is at rest too)
 * tell its inside from its outside.
 *
 * Accumulation order (the NumPy twin follows it bit for bit): springs in
 * index order; within a spring, first F_a += f, then F_b -= f (an area
 * spring: a, then b, then c). Sums over components run left to right
 * (x, y, z; the rate a, b, c, each x then y). Compiled with
 * -ffp-contract=off.
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

#if defined(__AVX2__)
/* The x86-64-v3 build's 2D springs, PS_SPRING_BLOCK at a time: each block's endpoint
 * differences are gathered, then every spring's force is computed in a loop of no branch
 * (the vector sqrt and divide round as the scalar ones), then the forces are added in
 * spring order, a then b, skipping the springs too short to have an axis. Each spring's
 * arithmetic is the scalar loop's below, in the same order: the same bits. */
#define PS_SPRING_BLOCK 16

PS_INLINE void spring_block(double *restrict fx, double *restrict fy, int64_t *restrict live,
                            const double *restrict dx, const double *restrict dy,
                            const double *restrict wx, const double *restrict wy,
                            const double *restrict rest, const double *restrict k,
                            const double *restrict damp, int count)
{
    for (int l = 0; l < count; l++) {
        double len2 = 0.0;
        len2 = len2 + dx[l] * dx[l];
        len2 = len2 + dy[l] * dy[l];
        double len = sqrt(len2);
        live[l] = len > PS_MIN_LENGTH;
        double inv = 1.0 / len;
        double ux = dx[l] * inv, uy = dy[l] * inv;
        double vrel = 0.0;
        vrel = vrel + wx[l] * ux;
        vrel = vrel + wy[l] * uy;
        double s = k[l] * (len - rest[l]) + damp[l] * vrel;
        fx[l] = s * ux;
        fy[l] = s * uy;
    }
}

static void springs_2d_blocked(double *restrict force, const double *restrict pos,
                               const double *restrict vel, const int32_t *restrict pairs,
                               const double *restrict rest_length,
                               const double *restrict stiffness,
                               const double *restrict damping, int m)
{
    double dx[PS_SPRING_BLOCK], dy[PS_SPRING_BLOCK], wx[PS_SPRING_BLOCK], wy[PS_SPRING_BLOCK];
    double fx[PS_SPRING_BLOCK], fy[PS_SPRING_BLOCK];
    int64_t live[PS_SPRING_BLOCK];
    for (int j0 = 0; j0 < m; j0 += PS_SPRING_BLOCK) {
        int count = m - j0 < PS_SPRING_BLOCK ? m - j0 : PS_SPRING_BLOCK;
        const int32_t *pr = pairs + 2L * j0;
        for (int l = 0; l < count; l++) {
            long a = 2L * pr[2 * l], b = 2L * pr[2 * l + 1];
            dx[l] = pos[b] - pos[a];
            dy[l] = pos[b + 1] - pos[a + 1];
            wx[l] = vel[b] - vel[a];
            wy[l] = vel[b + 1] - vel[a + 1];
        }
        if (count == PS_SPRING_BLOCK)  /* a constant count: unrolled and vectorised */
            spring_block(fx, fy, live, dx, dy, wx, wy, rest_length + j0, stiffness + j0,
                         damping + j0, PS_SPRING_BLOCK);
        else
            spring_block(fx, fy, live, dx, dy, wx, wy, rest_length + j0, stiffness + j0,
                         damping + j0, count);
        for (int l = 0; l < count; l++) {
            if (!live[l]) continue;
            long a = 2L * pr[2 * l], b = 2L * pr[2 * l + 1];
            force[a] += fx[l];
            force[a + 1] += fy[l];
            force[b] -= fx[l];
            force[b + 1] -= fy[l];
        }
    }
}
#endif

void ps_springs(double *force, const double *pos, const double *vel,
                const int32_t *pairs, const double *rest_length,
                const double *stiffness, const double *damping,
                int m, int dim)
{
    double f[3];
    if (dim == 2) {
#if defined(__AVX2__)
        springs_2d_blocked(force, pos, vel, pairs, rest_length, stiffness, damping, m);
        return;
#endif
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

void ps_area_springs(double *force, const double *pos, const double *vel,
                     const int32_t *triangles, const double *rest_area,
                     const double *stiffness, const double *damping, int m, int dim)
{
    for (int j = 0; j < m; j++) {
        long a = (long)dim * triangles[3 * j], b = (long)dim * triangles[3 * j + 1],
             c = (long)dim * triangles[3 * j + 2];
        double ax = pos[a], ay = pos[a + 1], bx = pos[b], by = pos[b + 1];
        double cx = pos[c], cy = pos[c + 1];
        double area = 0.5 * ((bx - ax) * (cy - ay) - (by - ay) * (cx - ax));
        double gax = 0.5 * (by - cy), gay = 0.5 * (cx - bx);
        double gbx = 0.5 * (cy - ay), gby = 0.5 * (ax - cx);
        double gcx = 0.5 * (ay - by), gcy = 0.5 * (bx - ax);
        double rate = 0.0;
        rate = rate + gax * vel[a];
        rate = rate + gay * vel[a + 1];
        rate = rate + gbx * vel[b];
        rate = rate + gby * vel[b + 1];
        rate = rate + gcx * vel[c];
        rate = rate + gcy * vel[c + 1];
        double s = -(stiffness[j] * (area - rest_area[j]) + damping[j] * rate);
        if (area < 0.0) s = s - PS_INVERSION_GAIN * stiffness[j] * area;
        force[a] += s * gax;
        force[a + 1] += s * gay;
        force[b] += s * gbx;
        force[b + 1] += s * gby;
        force[c] += s * gcx;
        force[c + 1] += s * gcy;
    }
}
