/* grab.c -- grabbing: a mouse spring from a particle to a target point, in the force pass.
 *
 * A grab j holds particle i = particle[j] toward its target t_j with a
 * zero-rest-length spring of stiffness k (N/m) and a damper c (N s/m) on the
 * particle's velocity (the target is moved by the game, frame by frame; its
 * own velocity is not known, so the damper slows the particle, as seed 002's
 * mouse spring does):
 *
 *     F_i += k (t_j - x_i) - c v_i
 *
 * Grabs add to the force array in index order (a particle held by two grabs
 * gets the first one's force first); components left to right. The NumPy twin
 * follows the same order, so results are bitwise equal. Compiled with
 * -ffp-contract=off.
 */
#include "internal.h"

void ps_grab(double *force, const double *pos, const double *vel, const int32_t *particle,
             const double *target, const double *stiffness, const double *damping,
             int m, int dim)
{
    for (int j = 0; j < m; j++) {
        long i = (long)dim * particle[j];
        for (int c = 0; c < dim; c++)
            force[i + c] += stiffness[j] * (target[(long)j * dim + c] - pos[i + c])
                            - damping[j] * vel[i + c];
    }
}
