/* constraints.c -- the constraints pass: XPBD distance and volume constraints.
 *
 * Extended position-based dynamics (Macklin, Mueller, Chentanez 2016, "XPBD:
 * position-based simulation of compliant constrained dynamics"), one
 * or a few iterations per substep ("small steps", Macklin et al. 2019; Ten
 * Minute Physics). For a constraint C(x) = 0 with gradients g_i, compliance
 * alpha (m/N for distance, 1/(N m) for area; 0 is rigid), alpha~ = alpha/h^2
 * and the multiplier lambda accumulated over the substep's iterations (the
 * World zeroes it at each substep):
 *     dlambda = (-C - alpha~ lambda) / (sum_i w_i |g_i|^2 + alpha~),  lambda += dlambda
 *     x_i += w_i dlambda g_i,   v_i += f w_i dlambda g_i / h
 * so velocities follow the position corrections under every integrator;
 * f <= 1 (the same for all of one constraint's particles, so momentum is kept)
 * limits the velocity change one correction gives: a body pushed out of a wall
 * or turned inside out at once is corrected by far more than it moved, and
 * following all of it threw it at tens of m/s. For a simplex, the fastest
 * vertex's change is at most PS_MAX_CORRECTION_SPEED. For a distance, the
 * change du = (w_a + w_b) dlambda / h of the ends' relative velocity u along
 * it is at most PS_MAX_CORRECTION_SPEED, or |u| + PS_MAX_CORRECTION_SPEED when
 * du opposes u: a correction that holds ends flying apart takes their speed
 * with it (capped at 3 m/s, ends that kept their speed while their positions
 * were held gained energy without bound: an XPBD cloth spawned over a disc went
 * to 1,000 m/s). With integrator "xpbd" the velocity is then recomputed from
 * the positions.
 * A constraint whose particles are all immovable, or whose gradients vanish
 * (coincident points, a flattened simplex), is skipped.
 *
 * distance: C = |x_b - x_a| - L0,  g_b = -g_a = (x_b - x_a) / |x_b - x_a|
 * volume:   2D triangle, C = A - A0 with A = 1/2 (x2 - x1) x (x3 - x1),
 *           g1 = 1/2 (y2 - y3, x3 - x2) and cyclically;
 *           3D tetrahedron, C = V - V0 with V = 1/6 (x2-x1) . ((x3-x1) x (x4-x1)),
 *           g_i = 1/6 (x_b - x_a) x (x_c - x_a) over the faces opposite i.
 *
 * Order: constraints are solved Gauss-Seidel in `order`, which the World
 * groups into batches (`batch_start`) in which no two constraints share a
 * particle (greedy graph colouring). Within a batch the order cannot change
 * the result, so the NumPy twin solves a batch at once and still matches the
 * C loop bit for bit.
 */
#include <math.h>
#include "internal.h"

/* The share f of a distance correction's change du of the ends' relative velocity u (along
 * the constraint) that velocities follow: all of it up to PS_MAX_CORRECTION_SPEED; when it
 * opposes u (the ends flying apart pulled back, or closing pushed apart), up to |u| more. */
static double follow(double u, double du)
{
    double most = du * u < 0.0 ? fabs(u) + PS_MAX_CORRECTION_SPEED : PS_MAX_CORRECTION_SPEED;
    return fabs(du) <= most ? 1.0 : most / fabs(du);
}

void ps_xpbd_distance(double *pos, double *vel, double *lambda, const double *inv_mass,
                      const int32_t *pairs, const double *rest_length,
                      const double *compliance, const int32_t *order,
                      const int32_t *batch_start, int m, int nbatch, int dim, double h)
{
    double inv_h = 1.0 / h, hh = h * h;
    for (int bt = 0; bt < nbatch; bt++) {
        for (int t = batch_start[bt]; t < batch_start[bt + 1]; t++) {
            int j = order[t];
            long a = pairs[2 * j], b = pairs[2 * j + 1];
            double wa = inv_mass[a], wb = inv_mass[b], w = wa + wb;
            if (w == 0.0) continue;
            double *xa = pos + a * dim, *xb = pos + b * dim;
            double d[3], len2 = 0.0;
            for (int c = 0; c < dim; c++) {
                d[c] = xb[c] - xa[c];
                len2 = len2 + d[c] * d[c];
            }
            double len = sqrt(len2);
            if (!(len > PS_MIN_LENGTH)) continue;
            double at = compliance[j] / hh;
            double s = (-(len - rest_length[j]) - at * lambda[j]) / (w + at);
            lambda[j] = lambda[j] + s;
            double u = 0.0;  /* the ends' relative velocity along the constraint */
            for (int c = 0; c < dim; c++)
                u = u + (vel[b * dim + c] - vel[a * dim + c]) * (d[c] / len);
            double f = follow(u, w * s * inv_h);
            for (int c = 0; c < dim; c++) {
                double g = d[c] / len;
                double da = wa * s * g, db = wb * s * g;
                xa[c] = xa[c] - da;
                xb[c] = xb[c] + db;
                vel[a * dim + c] = vel[a * dim + c] - da * inv_h * f;
                vel[b * dim + c] = vel[b * dim + c] + db * inv_h * f;
            }
        }
    }
    (void)m;
}

/* Signed measure of simplex `s` (area in 2D, volume in 3D) and its gradients. */
static double simplex(double g[4][3], const double *pos, const int32_t *s, int dim)
{
    const double *p[4];
    for (int i = 0; i <= dim; i++) p[i] = pos + (long)s[i] * dim;
    if (dim == 2) {
        double A = 0.5 * ((p[1][0] - p[0][0]) * (p[2][1] - p[0][1])
                          - (p[1][1] - p[0][1]) * (p[2][0] - p[0][0]));
        for (int i = 0; i < 3; i++) {
            const double *q = p[(i + 1) % 3], *r = p[(i + 2) % 3];
            g[i][0] = 0.5 * (q[1] - r[1]);
            g[i][1] = 0.5 * (r[0] - q[0]);
        }
        return A;
    }
    static const int face[4][3] = {{1, 3, 2}, {0, 2, 3}, {0, 3, 1}, {0, 1, 2}};
    for (int i = 0; i < 4; i++) {
        const double *a = p[face[i][0]], *b = p[face[i][1]], *c = p[face[i][2]];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        g[i][0] = (u[1] * v[2] - u[2] * v[1]) / 6.0;
        g[i][1] = (u[2] * v[0] - u[0] * v[2]) / 6.0;
        g[i][2] = (u[0] * v[1] - u[1] * v[0]) / 6.0;
    }
    double e1[3], e2[3], e3[3];
    for (int c = 0; c < 3; c++) {
        e1[c] = p[1][c] - p[0][c];
        e2[c] = p[2][c] - p[0][c];
        e3[c] = p[3][c] - p[0][c];
    }
    double cx = e2[1] * e3[2] - e2[2] * e3[1];
    double cy = e2[2] * e3[0] - e2[0] * e3[2];
    double cz = e2[0] * e3[1] - e2[1] * e3[0];
    return (e1[0] * cx + e1[1] * cy + e1[2] * cz) / 6.0;
}

void ps_xpbd_volume(double *pos, double *vel, double *lambda, const double *inv_mass,
                    const int32_t *simplices, const double *rest_volume,
                    const double *compliance, const int32_t *order,
                    const int32_t *batch_start, int m, int nbatch, int dim, double h)
{
    double inv_h = 1.0 / h, hh = h * h;
    int k = dim + 1;
    for (int bt = 0; bt < nbatch; bt++) {
        for (int t = batch_start[bt]; t < batch_start[bt + 1]; t++) {
            int j = order[t];
            const int32_t *s = simplices + (long)j * k;
            double g[4][3];
            double C = simplex(g, pos, s, dim) - rest_volume[j];
            /* top: the largest w_i^2 |g_i|^2, so the fastest vertex's velocity change is
             * |dlambda| / h sqrt(top) */
            double denom = 0.0, top = 0.0;
            for (int i = 0; i < k; i++) {
                double g2 = 0.0, wi = inv_mass[s[i]];
                for (int c = 0; c < dim; c++) g2 = g2 + g[i][c] * g[i][c];
                denom = denom + wi * g2;
                double v = wi * wi * g2;
                if (v > top) top = v;
            }
            if (!(denom > 0.0)) continue;
            double at = compliance[j] / hh;
            double lam = (-C - at * lambda[j]) / (denom + at);
            lambda[j] = lambda[j] + lam;
            double speed2 = lam * lam * (inv_h * inv_h) * top;  /* squared: a root only if capped */
            double f = speed2 > PS_MAX_CORRECTION_SPEED * PS_MAX_CORRECTION_SPEED
                       ? PS_MAX_CORRECTION_SPEED / sqrt(speed2) : 1.0;
            for (int i = 0; i < k; i++) {
                double w = inv_mass[s[i]];
                for (int c = 0; c < dim; c++) {
                    double dx = w * lam * g[i][c];
                    long q = (long)s[i] * dim + c;
                    pos[q] = pos[q] + dx;
                    vel[q] = vel[q] + dx * inv_h * f;
                }
            }
        }
    }
    (void)m;
}
