/* reference.c -- the benchmark's yardstick, not a pass of the engine.
 *
 * The canonical scene "boxes" stepped by the straightforward scalar C loop a
 * competent programmer writes first, to the yardstick's specification
 * (python -m pysoft bench reports World.step against it, interleaved in one
 * run): structure of arrays, one loop over springs computing the damped force
 * and scattering it to both ends as it goes, one loop over particles doing
 * semi-implicit Euler and the floor at y = 0 (position projection;
 * restitution e and Coulomb friction mu on the velocity). One substep per step.
 */
#include <math.h>
#include <string.h>
#include "internal.h"

/* The spring loop: forces cleared, then each spring's force scattered to both ends. */
static inline void reference_springs(const double *x, const double *y, const double *vx,
                                     const double *vy, double *fx, double *fy, const int32_t *a,
                                     const int32_t *b, const double *rest, int n, int ns,
                                     double k, double c)
{
    memset(fx, 0, sizeof(double) * (size_t)n);
    memset(fy, 0, sizeof(double) * (size_t)n);
    for (int i = 0; i < ns; i++) {
        int p = a[i], q = b[i];
        double dx = x[q] - x[p], dy = y[q] - y[p];
        double L = sqrt(dx * dx + dy * dy);
        double inv = 1.0 / L, nx = dx * inv, ny = dy * inv;
        double vrel = (vx[q] - vx[p]) * nx + (vy[q] - vy[p]) * ny;
        double f = k * (L - rest[i]) + c * vrel;
        double gx = f * nx, gy = f * ny;
        fx[p] += gx;
        fy[p] += gy;
        fx[q] -= gx;
        fy[q] -= gy;
    }
}

/* The spring loop alone (the benchmark's spring pass against the reference's). */
void ps_reference_springs(double *x, double *y, double *vx, double *vy, double *fx, double *fy,
                          const int32_t *a, const int32_t *b, const double *rest, int n, int ns,
                          double k, double c)
{
    reference_springs(x, y, vx, vy, fx, fy, a, b, rest, n, ns, k, c);
}

void ps_reference_steps(double *x, double *y, double *vx, double *vy, double *fx, double *fy,
                        const int32_t *a, const int32_t *b, const double *rest, int n, int ns,
                        double k, double c, double dt, double inv_mass, double g, double e,
                        double mu, int nsteps)
{
    for (int t = 0; t < nsteps; t++) {
        reference_springs(x, y, vx, vy, fx, fy, a, b, rest, n, ns, k, c);
        double hm = dt * inv_mass, hg = dt * g;
        for (int i = 0; i < n; i++) {
            double u = vx[i] + hm * fx[i];
            double v = vy[i] + (hm * fy[i] + hg);
            double px = x[i] + dt * u, py = y[i] + dt * v;
            if (py < 0.0) {
                py = 0.0;
                if (v < 0.0) {
                    double dvn = (1.0 + e) * (-v);
                    v = -e * v;
                    double red = fabs(u) < mu * dvn ? fabs(u) : mu * dvn;
                    u = u > 0.0 ? u - red : u + red;
                }
            }
            vx[i] = u;
            vy[i] = v;
            x[i] = px;
            y[i] = py;
        }
    }
}
