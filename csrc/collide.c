/* collide.c -- the collide pass: particles against half-spaces (Plane).
 *
 * A plane is (normal n, unit length; offset o): the solid side is
 * n.x < o. A particle of radius r penetrates by depth = r - (n.x - o).
 * Resolution, per particle and plane in index order (particles outer):
 *
 *   1. projection: x += depth n (the particle's surface touches the plane)
 *   2. if the particle approaches (vn = v.n < 0), a velocity-level impulse:
 *        vn' = -e vn     (restitution e), or 0 if -vn <= rest_speed, so
 *                        resting contacts do not jitter;
 *        Coulomb friction with coefficient mu: the tangential speed |vt|
 *        drops by mu (vn' - vn), the normal impulse per unit mass; if that
 *        is enough to stop it, vt = 0 (static friction holds).
 *
 * This is the classic particle-vs-half-space response of position-based
 * game physics (Jakobsen 2001; Mueller et al. 2007), with the friction cone
 * of Coulomb's law applied to the normal impulse of this substep.
 * Returns the number of contacts resolved.
 */
#include <math.h>
#include "pysoft.h"

int ps_collide_planes(double *pos, double *vel, const double *radius,
                      const double *inv_mass, const double *normal,
                      const double *offset, const double *restitution,
                      const double *friction, int n, int k, int dim,
                      double rest_speed)
{
    int contacts = 0;
    for (int i = 0; i < n; i++) {
        if (inv_mass[i] == 0.0) continue;
        double *x = pos + (long)i * dim, *v = vel + (long)i * dim;
        for (int j = 0; j < k; j++) {
            const double *nrm = normal + (long)j * dim;
            double dist = 0.0;
            for (int c = 0; c < dim; c++) dist = dist + nrm[c] * x[c];
            double depth = radius[i] - (dist - offset[j]);
            if (!(depth > 0.0)) continue;
            contacts++;
            for (int c = 0; c < dim; c++) x[c] = x[c] + depth * nrm[c];
            double vn = 0.0;
            for (int c = 0; c < dim; c++) vn = vn + v[c] * nrm[c];
            if (!(vn < 0.0)) continue;
            double vn_new = (-vn > rest_speed) ? -restitution[j] * vn : 0.0;
            double dvn = vn_new - vn;
            double vt[3], vt2 = 0.0;
            for (int c = 0; c < dim; c++) {
                vt[c] = v[c] - vn * nrm[c];
                vt2 = vt2 + vt[c] * vt[c];
            }
            double vt_len = sqrt(vt2), limit = friction[j] * dvn;
            double scale = (vt_len <= limit) ? 0.0 : 1.0 - limit / vt_len;
            for (int c = 0; c < dim; c++) v[c] = vt[c] * scale + vn_new * nrm[c];
        }
    }
    return contacts;
}
