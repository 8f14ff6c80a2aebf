/* constraints.c -- the constraints pass: XPBD distance, volume and material constraints.
 *
 * Extended position-based dynamics (Macklin, Mueller, Chentanez 2016, "XPBD:
 * position-based simulation of compliant constrained dynamics"), one
 * or a few iterations per substep ("small steps", Macklin et al. 2019; Ten
 * Minute Physics). For a constraint C(x) = 0 with gradients g_i, compliance
 * alpha (m/N for distance, 1/(N m) for area; 0 is rigid), alpha~ = alpha/h^2
 * and the multiplier lambda accumulated over the substep's iterations (the
 * World zeroes it at each substep):
 *     dlambda = (-C - alpha~ lambda) / (sum_i w_i |g_i|^2 + alpha~),  lambda += dlambda
 *     x_i += w_i dlambda g_i,   v_i += f w_i dlambda g_i / h,
 *     withheld_i += (1 - f) w_i dlambda g_i / h   (only where f < 1)
 * so velocities follow the position corrections under every integrator;
 * f <= 1 limits the velocity change one correction gives: a body pushed out of
 * a wall or turned inside out at once is corrected by far more than it moved,
 * and following all of it threw it at tens of m/s. For a simplex, the fastest
 * vertex's change is at most PS_MAX_CORRECTION_SPEED. For a distance, the
 * change du = (w_a + w_b) dlambda / h of the ends' relative velocity u along
 * it is at most PS_MAX_CORRECTION_SPEED, or |u| + PS_MAX_CORRECTION_SPEED when
 * du opposes u: a correction that holds ends flying apart takes their speed
 * with it (capped at 3 m/s, ends that kept their speed while their positions
 * were held gained energy without bound: an XPBD cloth spawned over a disc went
 * to 1,000 m/s). `withheld` (m/s, per particle, zeroed by the World at each
 * substep under integrator "xpbd") sums the velocity the caps kept back; the
 * "xpbd" velocity update v = (x - p) / h - withheld (integrate.c) leaves it out.
 *
 * The positions-only solve (follow == 0; the World's main solve of a 3D world under
 * integrator "xpbd"): that integrator's velocity update v = (x - p) / h - withheld, right after
 * the solve, sets every velocity the corrections would have moved, so the distance and volume
 * solves leave vel alone: half the rows they read and write. A distance's cap still needs the
 * ends' relative velocity u along it, and takes the one that update would give them now,
 * sum_c (((x_b - p_b) - (x_a - p_a)) / h - (withheld_b - withheld_a)) g_c (p: prev_pos), only
 * where |du| > PS_MAX_CORRECTION_SPEED (within it f = 1 whatever u is). It equals the
 * following solve's u but for rounding: a world where no correction is capped gets the same
 * bits either way. withheld is kept as in the following solve.
 *
 * Momentum: a correction moves particle i by w_i dlambda g_i, so it changes
 * the momentum sum_i m_i dx_i = dlambda sum_i g_i, and the gradients of a
 * distance or a simplex sum to zero (a constraint's value does not change when
 * all its points move together); f is one factor for the whole correction,
 * positions, velocities and withheld shares alike, so every correction keeps
 * the momentum of its particles to rounding, capped or not, and so does the
 * pass. (A cap per particle would not: it changed the velocities of some of a
 * correction's particles and not of the others.)
 * A constraint whose particles are all immovable, or whose gradients vanish
 * (coincident points, a flattened simplex), is skipped.
 *
 * distance: C = |x_b - x_a| - L0,  g_b = -g_a = (x_b - x_a) / |x_b - x_a|
 * volume:   2D triangle, C = A - A0 with A = 1/2 (x2 - x1) x (x3 - x1),
 *           g1 = 1/2 (y2 - y3, x3 - x2) and cyclically;
 *           3D tetrahedron, C = V - V0 with V = 1/6 (x2-x1) . ((x3-x1) x (x4-x1)),
 *           g_i = 1/6 (x_b - x_a) x (x_c - x_a) over the faces opposite i
 *           (solved in six times these gradients: volume_tet).
 *
 * material (3D tetrahedra): with the rest edge matrix Dm = [X1 - X0, X2 - X0, X3 - X0] (its
 *           inverse stored, row-major) and the current one Ds, F = Ds Dm^-1 (I at rest,
 *           whichever the corners' order), E = (F^T F - I) / 2 (Green's strain) and
 *           dev E = E - tr(E)/3 I, two constraints per tet, each with its own multiplier:
 *               deviatoric C_D = |dev E|_F,   alpha_D = 1 / (2 mu V0)
 *               volume     C_H = det F - 1,   alpha_H = 1 / (K V0)
 *           (mu = E / (2 (1 + nu)) the shear modulus, K = E / (3 (1 - 2 nu)) the bulk one,
 *           V0 the rest volume), the energy mu V0 |dev E|^2 + K V0 / 2 (det F - 1)^2: linear
 *           elasticity of (E, nu) at small strain, zero at rest and under any rotation, and
 *           a volume term that is positive for every nu in (-1, 1/2), so a tet turned inside
 *           out (det F < 0, where dev E of a mirror image is 0) is pushed back by it.
 *           dC/dx_{k+1} is row k of (dC/dF) Dm^-T, dC/dx_0 minus their sum; dC_D/dF =
 *           F dev E / |dev E| (0 where dev E = 0), dC_H/dF = cof F (columns f1 x f2, f2 x f0,
 *           f0 x f1 for the columns f_b of F).
 *           Why not the stable Neo-Hookean pair of Macklin and Mueller 2021 (C_D = |F|,
 *           C_H = det F - gamma, gamma = 1 + mu/lambda): both are nonzero at rest and their
 *           gradients there are parallel, so a shear changes neither to first order and the
 *           material's shear stiffness comes only from their curvature, which the XPBD
 *           update leaves out: shear was integrated explicitly, a rubber box of 10 cm tets
 *           blew up at 8 substeps of a 60 Hz frame (x500 a frame) and a steel-like beam needed
 *           240. |dev E| changes at first order in any shear (a cone at rest, as a distance
 *           constraint of rest length 0 is), so shear is implicit like every XPBD constraint.
 *           The two are solved together, a 2 x 2 system in (dl_D, dl_H) with
 *           S_XY = sum_i w_i g^X_i . g^Y_i:
 *               [S_DD + a_D   S_DH      ] [dl_D]   [-C_D - a_D l_D]
 *               [S_DH         S_HH + a_H] [dl_H] = [-C_H - a_H l_H]
 *           by Cramer's rule, its determinant written (S_DD S_HH - S_DH^2, clamped at 0)
 *           + a_D S_HH + a_H S_DD + a_D a_H so it never cancels to <= 0 (one after the other,
 *           Gauss-Seidel, converged slower as nu nears 1/2). x_i += w_i (dl_D g^D_i + dl_H g^H_i);
 *           the velocity share f as for a simplex (the fastest corner's change at most
 *           PS_MAX_CORRECTION_SPEED). Skipped: a tet of four immovable corners, no gradient
 *           (S_DD + S_HH = 0: collapsed to a point), a compliance that is not > 0 (the World
 *           never makes one). 3D only: the kernel does nothing for dim != 3. Sums in the
 *           order written in the code.
 *
 * Order: constraints are solved Gauss-Seidel in `order`, which the World
 * groups into batches (`batch_start`) in which no two constraints share a
 * particle (greedy graph colouring). Within a batch the order cannot change
 * the result, so the NumPy twin solves a batch at once and still matches the
 * C loop bit for bit. The World hands the kernels a plan of the batches
 * (pysoft/_coloring.py): tile by tile of bodies that share no particle, each
 * tile's share of every batch in batch order, which gives the same bits and
 * keeps a tile's particles in cache.
 *
 * The settle solve (after the collide pass) solves the constraints again with the
 * particles static friction holds in this substep immovable; ps_settle_mass gives it their
 * inverse masses (and returns 1; with no particle stuck it writes nothing and returns 0: no
 * settle this substep): 0 for a particle that is `stuck` (collide.c, edges.c: static friction of
 * a collider with friction > 0 undid its slip), inv_mass for the others; 0 for every member of
 * a body none of whose members is stuck (but a row it shares with a body that has one); and 0
 * for every member of a body held from opposite sides: two of its held members' supports (their last
 * contact normals this substep, nonzero where a collider held them) more than 120 degrees
 * apart (dot < -1/2). A particle a collider holds only along its normal (no friction, or
 * sliding) keeps its inverse mass: immovable in the settle, it took the tangential part of
 * its constraints' corrections from the collider, a force along the surface that no
 * frictionless contact exerts (an XPBD box on a floor of friction 0 slid away at 0.75 m/s
 * after 10 s, a tetrahedral cube at 2-5 m/s). With only stuck particles immovable, the
 * settle changes a body's momentum along a surface only where static friction holds it (a
 * friction force, though not bounded by mu times the normal one: on floors of friction
 * 0.001-0.01 a resting XPBD box creeps at 3-6 mm/s); a particle the settle moves into a
 * collider is pushed out again by the collide pass that follows (its normal impulse). Such a
 * body (pressed flat between a plate and the floor) cannot meet its constraints; with only
 * its held members immovable, the settle put each substep's conflict into the few free
 * members, and velocity after it. The test: u, the support of the body's first held member
 * (member order); w, the held support least aligned with u (the first of equals); opposed if
 * some held support has dot < -1/2 with w. In 2D, u lies inside the arc the supports span
 * or w opposes it, and w is one end of that arc: an opposed pair is found exactly when
 * there is one.
 *
 * A body with no stuck member sits the settle out: the settle corrects around the particles
 * static friction put back, and a body without one has nothing of that to correct. Solved
 * again, such a body got a third sweep of its constraints in each substep in which any
 * particle anywhere was stuck: its stiffness hung on other bodies' contacts. The settle
 * solves its own plan (ps_settle_plan): the solve plan less the constraints none of whose
 * particles is movable in it, which a solve leaves as they are (each kernel skips a
 * constraint of no inverse mass, multiplier and all): in a pile it leaves out every body
 * that rests on other bodies alone.
 *
 * The untangle pass (before each substep's constraint solve, ps_untangle): a body with an area
 * (3D: volume) constraint of its own inside out (all three corners owned by it, `owner`; its signed area
 * of the other sign than its rest area) and not held from opposite sides (the test above, on
 * the last substep's supports) gets its rest shape: for its members x_i with rest offsets
 * q_i (mean 0),
 *     c = mean x_i, u = mean v_i, r_i = x_i - c
 *     D = sum q_i . r_i, S = sum q_i x r_i, cos = D / L, sin = S / L, L = sqrt(D^2 + S^2)
 *         (the best-fit rotation R, shape matching's: ps_rigid_fit, internal.h)
 *     w = sum r_i x (v_i - u) / sum |r_i|^2   (the best-fit spin)
 *     x_i = c + R q_i,   v_i = u + w z x (R q_i)     (movable members only)
 * Its conflicting constraints would otherwise move its members one way in a substep's
 * solve and the other in the next, with velocity following. `tangled` reports the bodies
 * put back (1) and is 0 for the others. In 3D the same with the 3D fit (ps_rigid_fit3:
 * Horn's rotation, the spin from the members' inertia tensor): x_i = c + R q_i,
 * v_i = u + w x (R q_i). A member moved so adds (x_new - x_old) / h - (v_new - v_old) to
 * withheld[i], which integrator "xpbd"'s velocity update v = (x - p) / h - withheld leaves
 * out: the move is not velocity. Sums over members in member order. The means are
 * not weighted by mass: the members' momentum is kept when their masses are equal (every
 * builder's bodies), and changes by the difference of the two means otherwise.
 *
 * The x86-64-v3 build solves a batch's distance constraints (2D and 3D) and
 * tetrahedra four at a time (AVX2), with the scalar solve's operations in its order, so
 * the same bits (the pinned hashes hold on both builds): one constraint's square root and
 * chain of divisions wait on each other, four of them overlap. In 3D the four lanes'
 * corrections are applied as vectors and stored back row by row (applied lane by lane in
 * scalar code, they took most of a tetrahedron's time), and on a CPU with AVX-512 the same
 * functions compiled for AVX-512VL run instead (constraints_avx.h: its masked stores write
 * a row's three doubles at once; PYSOFT_AVX512=0 in the environment keeps the AVX2 ones).
 * The untangle pass's test of the tetrahedra runs four at a time there too.
 *
 * The spin pass (around each substep's main solve, after the untangle pass): the corrections
 * are along the constraints' gradients, which keep angular momentum only to first order in
 * their size (each correction's gradient is taken at the positions the earlier ones left), so a
 * body corrected by a large part of its size in one substep (flattened, or spinning fast) gained
 * or lost spin (a cube flattened to 2 % of its height came back spinning at 0.67 m/s). For a
 * body whose spin is kept (spins_alone: members all its own, movable and held by no collider,
 * no constraint linking it to another particle), ps_spin_record stores its angular momentum about its centre of mass
 * before the solve, L0 = sum m_i r_i x v_i; ps_spin_keep finds it after the solve, L1, with the
 * velocities the solve left (mode 0) or integrator "xpbd"'s (x - p) / h - withheld (modes 1, 2),
 * and takes dL = L1 - L0 off as a rigid spin w = I^-1 dL (I the members' inertia tensor about
 * the centre now; by its adjugate, or 2 dL / tr I for members on a line; 2D: I = sum m |r|^2):
 * v_i -= w x r_i (mode 0), or withheld_i += w x r_i (modes 1, 2: the velocity update follows).
 * sum_i m_i w x r_i = 0: the momentum stays. Mode 2 (the positions-only solve, 3D) finds L0
 * in the same pass from the positions p and velocities v the solve began from (the solve left
 * them; x = p + h v then, and sum m (p - c_p) x v is the same moment), for bodies the untangle
 * pass did not put back (`tangled`), and ps_spin_record is not called. The moments are taken
 * in one pass about the body's first member o (s_i = x_i - o): M, sum m s, sum m v,
 * sum m s x v and sum m s s^T, and moved to the centre c = sum m s / M (L = A - c x P, I by
 * the parallel axis theorem). Sums in member order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* The share f of a distance correction's change du of the ends' relative velocity u (along
 * the constraint) that velocities follow: all of it up to PS_MAX_CORRECTION_SPEED; when it
 * opposes u (the ends flying apart pulled back, or closing pushed apart), up to |u| more. */
static double follow(double u, double du)
{
    double most = du * u < 0.0 ? fabs(u) + PS_MAX_CORRECTION_SPEED : PS_MAX_CORRECTION_SPEED;
    return fabs(du) <= most ? 1.0 : most / fabs(du);
}

/* What the share 1 - f of a distance correction (da off end a's coordinate qa, db onto end b's
 * qb) that velocities do not follow adds to `withheld` (m/s). */
PS_INLINE void withhold(double *withheld, long qa, long qb, double da, double db, double inv_h,
                        double f)
{
    double k = 1.0 - f;
    withheld[qa] = withheld[qa] - da * inv_h * k;
    withheld[qb] = withheld[qb] + db * inv_h * k;
}

/* The positions-only solve's (follow == 0) relative velocity u of ends a and b along the unit
 * direction g: what the "xpbd" velocity update would give them now, the sum over the axes of
 * (((x_b - p_b) - (x_a - p_a)) / h - (withheld_b - withheld_a)) g (p: prev_pos). */
PS_INLINE double relative_speed(const double *pos, const double *prev_pos, const double *withheld,
                                long a, long b, const double *g, int dim, double inv_h)
{
    double u = 0.0;
    for (int c = 0; c < dim; c++) {
        long qa = a * dim + c, qb = b * dim + c;
        double r = ((pos[qb] - prev_pos[qb]) - (pos[qa] - prev_pos[qa])) * inv_h
                   - (withheld[qb] - withheld[qa]);
        u = u + r * g[c];
    }
    return u;
}

/* Distance constraint j (the scalar solve, any dimension); inv_h = 1 / h, hh = h h. */
PS_INLINE void distance_one(double *pos, double *vel, double *withheld, double *lambda,
                            const double *inv_mass, const double *prev_pos, const int32_t *pairs,
                            const double *rest_length, const double *compliance, int j, int dim,
                            int follow_vel, double inv_h, double hh)
{
    long a = pairs[2 * j], b = pairs[2 * j + 1];
    double wa = inv_mass[a], wb = inv_mass[b], w = wa + wb;
    if (w == 0.0) return;
    double *xa = pos + a * dim, *xb = pos + b * dim;
    double d[3], len2 = 0.0;
    for (int c = 0; c < dim; c++) {
        d[c] = xb[c] - xa[c];
        len2 = len2 + d[c] * d[c];
    }
    double len = sqrt(len2);
    if (!(len > PS_MIN_LENGTH)) return;
    double at = compliance[j] / hh;
    double s = (-(len - rest_length[j]) - at * lambda[j]) / (w + at);
    lambda[j] = lambda[j] + s;
    double f, du = w * s * inv_h;
    if (follow_vel) {
        double u = 0.0;  /* the ends' relative velocity along the constraint */
        for (int c = 0; c < dim; c++)
            u = u + (vel[b * dim + c] - vel[a * dim + c]) * (d[c] / len);
        f = follow(u, du);
    } else if (fabs(du) <= PS_MAX_CORRECTION_SPEED) {
        f = 1.0;  /* within the cap whatever u is: u is not needed */
    } else {
        double g[3];
        for (int c = 0; c < dim; c++) g[c] = d[c] / len;
        f = follow(relative_speed(pos, prev_pos, withheld, a, b, g, dim, inv_h), du);
    }
    for (int c = 0; c < dim; c++) {
        double g = d[c] / len;
        double da = wa * s * g, db = wb * s * g;
        xa[c] = xa[c] - da;
        xb[c] = xb[c] + db;
        if (follow_vel) {
            vel[a * dim + c] = vel[a * dim + c] - da * inv_h * f;
            vel[b * dim + c] = vel[b * dim + c] + db * inv_h * f;
        }
        if (f < 1.0) withhold(withheld, a * dim + c, b * dim + c, da, db, inv_h, f);
    }
}

/* Distance constraint j in 3D: distance_one's solve with the unit direction g = d (1 / |d|),
 * one division where g = d / |d| took three. */
PS_INLINE void distance_3d(double *pos, double *vel, double *withheld, double *lambda,
                           const double *inv_mass, const double *prev_pos, const int32_t *pairs,
                           const double *rest_length, const double *compliance, int j,
                           int follow_vel, double inv_h, double hh)
{
    long a = pairs[2 * j], b = pairs[2 * j + 1];
    double wa = inv_mass[a], wb = inv_mass[b], w = wa + wb;
    if (w == 0.0) return;
    double *xa = pos + 3 * a, *xb = pos + 3 * b, *va = vel + 3 * a, *vb = vel + 3 * b;
    double d[3] = {xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]};
    double len = sqrt(((0.0 + d[0] * d[0]) + d[1] * d[1]) + d[2] * d[2]);
    if (!(len > PS_MIN_LENGTH)) return;
    double il = 1.0 / len, g[3] = {d[0] * il, d[1] * il, d[2] * il};
    double at = compliance[j] / hh;
    double s = (-(len - rest_length[j]) - at * lambda[j]) / (w + at);
    lambda[j] = lambda[j] + s;
    double f, du = w * s * inv_h;
    if (follow_vel)
        f = follow(((0.0 + (vb[0] - va[0]) * g[0]) + (vb[1] - va[1]) * g[1]) + (vb[2] - va[2]) * g[2],
                   du);
    else  /* within the cap whatever u is: u only where it is not */
        f = fabs(du) <= PS_MAX_CORRECTION_SPEED
            ? 1.0 : follow(relative_speed(pos, prev_pos, withheld, a, b, g, 3, inv_h), du);
    double sa = wa * s, sb = wb * s;
    for (int c = 0; c < 3; c++) {
        double da = sa * g[c], db = sb * g[c];
        xa[c] = xa[c] - da;
        xb[c] = xb[c] + db;
        if (follow_vel) {
            va[c] = va[c] - da * inv_h * f;
            vb[c] = vb[c] + db * inv_h * f;
        }
    }
    if (f < 1.0)
        for (int c = 0; c < 3; c++)
            withhold(withheld, a * 3 + c, b * 3 + c, sa * g[c], sb * g[c], inv_h, f);
}

#if defined(__AVX2__)

/* The x86-64-v3 build in 2D: four constraints of one batch (no two share a particle) at a
 * time, distance_one's arithmetic in the same order (the vector sqrt and divide round as
 * the scalar ones; -(x) flips the sign bit as the scalar negation does), so the same bits.
 * A lane distance_one would skip (w == 0, or no length) stores what it loaded. The scalar
 * solve's chain of divisions and the square root wait on each other; four lanes overlap
 * them. Returns the first entry it left to the scalar loop. */
static int distance_batch_2d_avx(double *pos, double *vel, double *withheld, double *lambda,
                                 const double *inv_mass, const int32_t *pairs,
                                 const double *rest_length, const double *compliance,
                                 const int32_t *order, int t, int stop, double h)
{
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    const __m256d min_length = _mm256_set1_pd(PS_MIN_LENGTH), sign = _mm256_set1_pd(-0.0);
    const __m256d cap = _mm256_set1_pd(PS_MAX_CORRECTION_SPEED);
    const __m256d inv_h = _mm256_set1_pd(1.0 / h), hh = _mm256_set1_pd(h * h);
    for (; t + 4 <= stop; t += 4) {
        int j0 = order[t], j1 = order[t + 1], j2 = order[t + 2], j3 = order[t + 3];
        long a0 = pairs[2 * j0], a1 = pairs[2 * j1], a2 = pairs[2 * j2], a3 = pairs[2 * j3];
        long b0 = pairs[2 * j0 + 1], b1 = pairs[2 * j1 + 1], b2 = pairs[2 * j2 + 1], b3 = pairs[2 * j3 + 1];
        __m256d wa = _mm256_set_pd(inv_mass[a3], inv_mass[a2], inv_mass[a1], inv_mass[a0]);
        __m256d wb = _mm256_set_pd(inv_mass[b3], inv_mass[b2], inv_mass[b1], inv_mass[b0]);
        a0 *= 2, a1 *= 2, a2 *= 2, a3 *= 2, b0 *= 2, b1 *= 2, b2 *= 2, b3 *= 2;  /* row offsets */
        __m256d w = _mm256_add_pd(wa, wb);
        __m256d xa02 = two_rows(pos, a0, a2), xa13 = two_rows(pos, a1, a3);
        __m256d xb02 = two_rows(pos, b0, b2), xb13 = two_rows(pos, b1, b3);
        __m256d va02 = two_rows(vel, a0, a2), va13 = two_rows(vel, a1, a3);
        __m256d vb02 = two_rows(vel, b0, b2), vb13 = two_rows(vel, b1, b3);
        __m256d d02 = _mm256_sub_pd(xb02, xa02), d13 = _mm256_sub_pd(xb13, xa13);
        __m256d dx = _mm256_unpacklo_pd(d02, d13), dy = _mm256_unpackhi_pd(d02, d13);
        __m256d len2 = _mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(dx, dx)), _mm256_mul_pd(dy, dy));
        __m256d len = _mm256_sqrt_pd(len2);
        __m256d live = _mm256_and_pd(_mm256_cmp_pd(w, zero, _CMP_NEQ_UQ),
                                     _mm256_cmp_pd(len, min_length, _CMP_GT_OQ));
        __m256d rest = _mm256_set_pd(rest_length[j3], rest_length[j2], rest_length[j1], rest_length[j0]);
        __m256d comp = _mm256_set_pd(compliance[j3], compliance[j2], compliance[j1], compliance[j0]);
        __m256d lam = _mm256_set_pd(lambda[j3], lambda[j2], lambda[j1], lambda[j0]);
        __m256d at = _mm256_div_pd(comp, hh);
        __m256d s = _mm256_div_pd(_mm256_sub_pd(_mm256_xor_pd(_mm256_sub_pd(len, rest), sign),
                                                _mm256_mul_pd(at, lam)), _mm256_add_pd(w, at));
        __m256d lam_new = _mm256_blendv_pd(lam, _mm256_add_pd(lam, s), live);
        __m256d gx = _mm256_div_pd(dx, len), gy = _mm256_div_pd(dy, len);
        __m256d r02 = _mm256_sub_pd(vb02, va02), r13 = _mm256_sub_pd(vb13, va13);
        __m256d rx = _mm256_unpacklo_pd(r02, r13), ry = _mm256_unpackhi_pd(r02, r13);
        __m256d u = _mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(rx, gx)), _mm256_mul_pd(ry, gy));
        /* follow(u, w s / h) */
        __m256d du = _mm256_mul_pd(_mm256_mul_pd(w, s), inv_h);
        __m256d opposed = _mm256_cmp_pd(_mm256_mul_pd(du, u), zero, _CMP_LT_OQ);
        __m256d most = _mm256_blendv_pd(cap, _mm256_add_pd(_mm256_andnot_pd(sign, u), cap), opposed);
        __m256d size = _mm256_andnot_pd(sign, du);
        __m256d within = _mm256_cmp_pd(size, most, _CMP_LE_OQ);  /* f = 1: the common case */
        int all_within = _mm256_movemask_pd(within) == 0xF;
        __m256d f = all_within ? one : _mm256_blendv_pd(_mm256_div_pd(most, size), one, within);
        __m256d sa = _mm256_mul_pd(wa, s), sb = _mm256_mul_pd(wb, s);
        __m256d dax = _mm256_mul_pd(sa, gx), day = _mm256_mul_pd(sa, gy);
        __m256d dbx = _mm256_mul_pd(sb, gx), dby = _mm256_mul_pd(sb, gy);
        __m256d kax = _mm256_mul_pd(_mm256_mul_pd(dax, inv_h), f), kay = _mm256_mul_pd(_mm256_mul_pd(day, inv_h), f);
        __m256d kbx = _mm256_mul_pd(_mm256_mul_pd(dbx, inv_h), f), kby = _mm256_mul_pd(_mm256_mul_pd(dby, inv_h), f);
        __m256d live02 = _mm256_unpacklo_pd(live, live), live13 = _mm256_unpackhi_pd(live, live);
        /* back to rows: [x0, y0, x2, y2] and [x1, y1, x3, y3] */
        __m256d da02 = _mm256_unpacklo_pd(dax, day), da13 = _mm256_unpackhi_pd(dax, day);
        __m256d db02 = _mm256_unpacklo_pd(dbx, dby), db13 = _mm256_unpackhi_pd(dbx, dby);
        __m256d ka02 = _mm256_unpacklo_pd(kax, kay), ka13 = _mm256_unpackhi_pd(kax, kay);
        __m256d kb02 = _mm256_unpacklo_pd(kbx, kby), kb13 = _mm256_unpackhi_pd(kbx, kby);
        store_two_rows(pos, a0, a2, _mm256_blendv_pd(xa02, _mm256_sub_pd(xa02, da02), live02));
        store_two_rows(pos, a1, a3, _mm256_blendv_pd(xa13, _mm256_sub_pd(xa13, da13), live13));
        store_two_rows(pos, b0, b2, _mm256_blendv_pd(xb02, _mm256_add_pd(xb02, db02), live02));
        store_two_rows(pos, b1, b3, _mm256_blendv_pd(xb13, _mm256_add_pd(xb13, db13), live13));
        store_two_rows(vel, a0, a2, _mm256_blendv_pd(va02, _mm256_sub_pd(va02, ka02), live02));
        store_two_rows(vel, a1, a3, _mm256_blendv_pd(va13, _mm256_sub_pd(va13, ka13), live13));
        store_two_rows(vel, b0, b2, _mm256_blendv_pd(vb02, _mm256_add_pd(vb02, kb02), live02));
        store_two_rows(vel, b1, b3, _mm256_blendv_pd(vb13, _mm256_add_pd(vb13, kb13), live13));
        if (!all_within) {  /* rare: the capped lanes' withheld shares, as distance_one adds them */
            double fl[4], ax[4], ay[4], bx[4], by[4], lv[4];
            _mm256_storeu_pd(fl, f);
            _mm256_storeu_pd(lv, live);
            _mm256_storeu_pd(ax, dax);
            _mm256_storeu_pd(ay, day);
            _mm256_storeu_pd(bx, dbx);
            _mm256_storeu_pd(by, dby);
            long ra[4] = {a0, a1, a2, a3}, rb[4] = {b0, b1, b2, b3};  /* row offsets */
            double ih = 1.0 / h;
            for (int e = 0; e < 4; e++) {
                if (lv[e] == 0.0 || !(fl[e] < 1.0)) continue;
                withhold(withheld, ra[e], rb[e], ax[e], bx[e], ih, fl[e]);
                withhold(withheld, ra[e] + 1, rb[e] + 1, ay[e], by[e], ih, fl[e]);
            }
        }
        double l[4];
        _mm256_storeu_pd(l, lam_new);
        lambda[j0] = l[0];
        lambda[j1] = l[1];
        lambda[j2] = l[2];
        lambda[j3] = l[3];
    }
    return t;
}
#endif

#if defined(__AVX2__)
/* The x86-64-v3 build in 3D: constraints_avx.h's four-at-a-time distance and tetrahedron
 * solves, as AVX2 functions and, where the compiler can target AVX-512, as AVX-512VL ones chosen
 * at run time (wide()): the same operations, so the same bits. */
/* x, y, z of four lanes back to their rows r[0..3] of a 3-column array (three_rows4's inverse) */
#define PS_ROWS4_SHUFFLE(x, y, z)                                                              \
    __m256d t0 = _mm256_unpacklo_pd(x, y), t1 = _mm256_unpackhi_pd(x, y);                      \
    __m256d zl = _mm256_unpacklo_pd(z, z), zh = _mm256_unpackhi_pd(z, z);                      \
    __m256d r0 = _mm256_permute2f128_pd(t0, zl, 0x20), r1 = _mm256_permute2f128_pd(t1, zh, 0x20); \
    __m256d r2 = _mm256_permute2f128_pd(t0, zl, 0x31), r3 = _mm256_permute2f128_pd(t1, zh, 0x31)

PS_INLINE void store_rows4_avx2(double *p, const long r[4], __m256d x, __m256d y, __m256d z)
{
    PS_ROWS4_SHUFFLE(x, y, z);
    const __m256d row[4] = {r0, r1, r2, r3};
    for (int e = 0; e < 4; e++) {
        _mm_storeu_pd(p + 3 * r[e], _mm256_castpd256_pd128(row[e]));
        _mm_store_sd(p + 3 * r[e] + 2, _mm256_extractf128_pd(row[e], 1));
    }
}

/* How many tetrahedra ahead the vector solve prefetches the corners, multipliers, rest volumes
 * and compliances of: the plan's order reaches them through order[], which no hardware
 * prefetcher follows (4 % off the tet-cubes benchmark's tetrahedra; the distances' solve
 * measured no faster for it). */
#define PS_AHEAD 8
#define PS_WIDE(name) name##_avx2
#define PS_WIDE_TARGET
#define PS_LOAD_ROWS three_rows4
#define PS_STORE_ROWS store_rows4_avx2
#include "constraints_avx.h"
#undef PS_WIDE
#undef PS_WIDE_TARGET
#undef PS_LOAD_ROWS
#undef PS_STORE_ROWS

#if defined(__GNUC__) && defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 8)
#define PS_HAVE_AVX512 1
#define PS_AVX512 __attribute__((target("avx512f,avx512vl")))
/* three_rows4 with AVX-512's masked loads */
PS_INLINE PS_AVX512 void load_rows4_avx512(const double *p, const long r[4], __m256d *x, __m256d *y,
                                           __m256d *z)
{
    __m256d r0 = _mm256_maskz_loadu_pd(7, p + 3 * r[0]), r1 = _mm256_maskz_loadu_pd(7, p + 3 * r[1]);
    __m256d r2 = _mm256_maskz_loadu_pd(7, p + 3 * r[2]), r3 = _mm256_maskz_loadu_pd(7, p + 3 * r[3]);
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    *x = _mm256_permute2f128_pd(t0, t2, 0x20);
    *y = _mm256_permute2f128_pd(t1, t3, 0x20);
    *z = _mm256_permute2f128_pd(t0, t2, 0x31);
}

PS_INLINE PS_AVX512 void store_rows4_avx512(double *p, const long r[4], __m256d x, __m256d y,
                                            __m256d z)
{
    PS_ROWS4_SHUFFLE(x, y, z);
    _mm256_mask_storeu_pd(p + 3 * r[0], 7, r0);  /* a row's three doubles, nothing past it */
    _mm256_mask_storeu_pd(p + 3 * r[1], 7, r1);
    _mm256_mask_storeu_pd(p + 3 * r[2], 7, r2);
    _mm256_mask_storeu_pd(p + 3 * r[3], 7, r3);
}

#define PS_WIDE(name) name##_avx512
#define PS_WIDE_TARGET PS_AVX512
#define PS_LOAD_ROWS load_rows4_avx512
#define PS_STORE_ROWS store_rows4_avx512
#include "constraints_avx.h"
#undef PS_WIDE
#undef PS_WIDE_TARGET
#undef PS_LOAD_ROWS
#undef PS_STORE_ROWS
#endif

/* Whether to take the AVX-512VL functions: this CPU (and its OS) has AVX-512F and VL, and the
 * environment does not say PYSOFT_AVX512=0 (which has the AVX2 ones tested on such a CPU). */
static int wide(void)
{
#if defined(PS_HAVE_AVX512)
    const char *off = getenv("PYSOFT_AVX512");
    if (off && off[0] == '0' && off[1] == '\0') return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

static int distance_batch_3d_avx(double *pos, double *vel, double *withheld, double *lambda,
                                 const double *inv_mass, const double *prev_pos,
                                 const int32_t *pairs, const double *rest_length,
                                 const double *compliance, const int32_t *order, int t, int stop,
                                 int follow_vel, double inv_h, double hh, int use_wide)
{
#if defined(PS_HAVE_AVX512)
    if (use_wide)
        return follow_vel
            ? distance_batch_3d_follow_avx512(pos, vel, withheld, lambda, inv_mass, prev_pos, pairs,
                                              rest_length, compliance, order, t, stop, inv_h, hh)
            : distance_batch_3d_still_avx512(pos, vel, withheld, lambda, inv_mass, prev_pos, pairs,
                                             rest_length, compliance, order, t, stop, inv_h, hh);
#endif
    (void)use_wide;
    return follow_vel
        ? distance_batch_3d_follow_avx2(pos, vel, withheld, lambda, inv_mass, prev_pos, pairs,
                                        rest_length, compliance, order, t, stop, inv_h, hh)
        : distance_batch_3d_still_avx2(pos, vel, withheld, lambda, inv_mass, prev_pos, pairs,
                                       rest_length, compliance, order, t, stop, inv_h, hh);
}

static int volume_batch_3d_avx(double *pos, double *vel, double *withheld, double *lambda,
                               const double *inv_mass, const int32_t *simplices,
                               const double *rest_volume, const double *compliance,
                               const int32_t *order, int t, int stop, int follow_vel,
                               double inv_h, double hh, int use_wide)
{
#if defined(PS_HAVE_AVX512)
    if (use_wide)
        return follow_vel
            ? volume_batch_3d_follow_avx512(pos, vel, withheld, lambda, inv_mass, simplices, rest_volume,
                                            compliance, order, t, stop, inv_h, hh)
            : volume_batch_3d_still_avx512(pos, vel, withheld, lambda, inv_mass, simplices, rest_volume,
                                           compliance, order, t, stop, inv_h, hh);
#endif
    (void)use_wide;
    return follow_vel
        ? volume_batch_3d_follow_avx2(pos, vel, withheld, lambda, inv_mass, simplices, rest_volume,
                                      compliance, order, t, stop, inv_h, hh)
        : volume_batch_3d_still_avx2(pos, vel, withheld, lambda, inv_mass, simplices, rest_volume,
                                     compliance, order, t, stop, inv_h, hh);
}
#endif

void ps_xpbd_distance(double *pos, double *vel, double *withheld, double *lambda,
                      const double *inv_mass, const double *prev_pos, const int32_t *pairs,
                      const double *rest_length, const double *compliance,
                      const int32_t *order, const int32_t *batch_start, int m, int nbatch,
                      int dim, int follow, double h)
{
    double inv_h = 1.0 / h, hh = h * h;
    int follow_vel = follow != 0;
    if (dim == 3) {
#if defined(__AVX2__)
        int use_wide = wide();
#endif
        for (int bt = 0; bt < nbatch; bt++) {
            int t = batch_start[bt];
#if defined(__AVX2__)
            t = distance_batch_3d_avx(pos, vel, withheld, lambda, inv_mass, prev_pos, pairs,
                                      rest_length, compliance, order, t, batch_start[bt + 1],
                                      follow_vel, inv_h, hh, use_wide);
#endif
            for (; t < batch_start[bt + 1]; t++)
                distance_3d(pos, vel, withheld, lambda, inv_mass, prev_pos, pairs, rest_length,
                            compliance, order[t], follow_vel, inv_h, hh);
        }
        return;
    }
    for (int bt = 0; bt < nbatch; bt++) {
        int t = batch_start[bt], stop = batch_start[bt + 1];
#if defined(__AVX2__)
        if (dim == 2 && follow_vel)
            t = distance_batch_2d_avx(pos, vel, withheld, lambda, inv_mass, pairs, rest_length,
                                      compliance, order, t, stop, h);
#endif
        for (; t < stop; t++)
            distance_one(pos, vel, withheld, lambda, inv_mass, prev_pos, pairs, rest_length,
                         compliance, order[t], dim, follow_vel, inv_h, hh);
    }
    (void)m;
}

/* Tetrahedron j (3D): with the edges e_k = x_k - x_0 and G_1 = e_2 x e_3, G_2 = e_3 x e_1,
 * G_3 = e_1 x e_2, G_0 = -(G_1 + G_2 + G_3) (six times the gradients g_i of V), C = e_1 . G_1
 * / 6 - V0 and D = sum_i w_i |G_i|^2 (36 times sum_i w_i |g_i|^2), the update of the header
 * comment is dlambda = 6 k with k = 6 (-C - alpha~ lambda) / (D + 36 alpha~) and
 * x_i += w_i k G_i: three divisions where the gradients' sixths took twelve more. */
PS_INLINE void volume_tet(double *pos, double *vel, double *withheld, double *lambda,
                          const double *inv_mass, const int32_t *simplices,
                          const double *rest_volume, const double *compliance, int j,
                          int follow_vel, double inv_h, double hh)
{
    const int32_t *s = simplices + 4L * j;
    const double *p0 = pos + 3L * s[0], *p1 = pos + 3L * s[1], *p2 = pos + 3L * s[2],
                 *p3 = pos + 3L * s[3];
    double e1[3], e2[3], e3[3], G[4][3];
    for (int c = 0; c < 3; c++) {
        e1[c] = p1[c] - p0[c];
        e2[c] = p2[c] - p0[c];
        e3[c] = p3[c] - p0[c];
    }
    G[1][0] = e2[1] * e3[2] - e2[2] * e3[1];
    G[1][1] = e2[2] * e3[0] - e2[0] * e3[2];
    G[1][2] = e2[0] * e3[1] - e2[1] * e3[0];
    G[2][0] = e3[1] * e1[2] - e3[2] * e1[1];
    G[2][1] = e3[2] * e1[0] - e3[0] * e1[2];
    G[2][2] = e3[0] * e1[1] - e3[1] * e1[0];
    G[3][0] = e1[1] * e2[2] - e1[2] * e2[1];
    G[3][1] = e1[2] * e2[0] - e1[0] * e2[2];
    G[3][2] = e1[0] * e2[1] - e1[1] * e2[0];
    for (int c = 0; c < 3; c++) G[0][c] = -((G[1][c] + G[2][c]) + G[3][c]);
    double C = (e1[0] * G[1][0] + e1[1] * G[1][1] + e1[2] * G[1][2]) / 6.0 - rest_volume[j];
    /* top: the largest w_i^2 |G_i|^2, so the fastest vertex's velocity change is |k| / h sqrt(top) */
    double w[4], D = 0.0, top = 0.0;
    for (int i = 0; i < 4; i++) {
        double g2 = (G[i][0] * G[i][0] + G[i][1] * G[i][1]) + G[i][2] * G[i][2];
        w[i] = inv_mass[s[i]];
        D = D + w[i] * g2;
        double v = w[i] * w[i] * g2;
        if (v > top) top = v;
    }
    if (!(D > 0.0)) return;
    double at = compliance[j] / hh;
    double k = (6.0 * (-C - at * lambda[j])) / (D + 36.0 * at);
    lambda[j] = lambda[j] + 6.0 * k;
    double speed2 = k * k * (inv_h * inv_h) * top;  /* squared: a root only if capped */
    double f = speed2 > PS_MAX_CORRECTION_SPEED * PS_MAX_CORRECTION_SPEED
               ? PS_MAX_CORRECTION_SPEED / sqrt(speed2) : 1.0;
    for (int i = 0; i < 4; i++) {
        double *x = pos + 3L * s[i], *v = vel + 3L * s[i];
        double wk = w[i] * k;
        for (int c = 0; c < 3; c++) {
            double dx = wk * G[i][c];
            x[c] = x[c] + dx;
            if (follow_vel) v[c] = v[c] + dx * inv_h * f;
        }
        if (f < 1.0)
            for (int c = 0; c < 3; c++) {
                long q = 3L * s[i] + c;
                withheld[q] = withheld[q] + wk * G[i][c] * inv_h * (1.0 - f);
            }
    }
}


void ps_xpbd_volume(double *pos, double *vel, double *withheld, double *lambda,
                    const double *inv_mass, const int32_t *simplices, const double *rest_volume,
                    const double *compliance, const int32_t *order,
                    const int32_t *batch_start, int m, int nbatch, int dim, int follow,
                    double h)
{
    double inv_h = 1.0 / h, hh = h * h;
    int k = dim + 1, follow_vel = follow != 0;
    if (dim == 3) {
#if defined(__AVX2__)
        int use_wide = wide();
#endif
        for (int bt = 0; bt < nbatch; bt++) {
            int t = batch_start[bt];
#if defined(__AVX2__)
            t = volume_batch_3d_avx(pos, vel, withheld, lambda, inv_mass, simplices, rest_volume,
                                    compliance, order, t, batch_start[bt + 1], follow_vel, inv_h,
                                    hh, use_wide);
#endif
            for (; t < batch_start[bt + 1]; t++)
                volume_tet(pos, vel, withheld, lambda, inv_mass, simplices, rest_volume,
                           compliance, order[t], follow_vel, inv_h, hh);
        }
        return;
    }
    for (int bt = 0; bt < nbatch; bt++) {
        for (int t = batch_start[bt]; t < batch_start[bt + 1]; t++) {
            int j = order[t];
            const int32_t *s = simplices + (long)j * k;
            double g[4][3];
            double C = ps_simplex(g, pos, s, dim) - rest_volume[j];
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
                    if (follow_vel) vel[q] = vel[q] + dx * inv_h * f;
                    if (f < 1.0) withheld[q] = withheld[q] + dx * inv_h * (1.0 - f);
                }
            }
        }
    }
    (void)m;
}

/* Material tet j (3D): the coupled deviatoric and volume solve of the header comment. */
PS_INLINE void material_one(double *pos, double *vel, double *withheld, double *lambda,
                            const double *inv_mass, const int32_t *tets, const double *dm_inv,
                            const double *compliance, int j, double inv_h, double hh)
{
    const int32_t *s = tets + 4L * j;
    const double *B = dm_inv + 9L * j;  /* Dm^-1, row-major */
    double cd = compliance[2 * j], ch = compliance[2 * j + 1];
    if (!(cd > 0.0) || !(ch > 0.0)) return;
    double w[4];
    for (int i = 0; i < 4; i++) w[i] = inv_mass[s[i]];
    if (w[0] == 0.0 && w[1] == 0.0 && w[2] == 0.0 && w[3] == 0.0) return;
    const double *x0 = pos + 3L * s[0];
    /* edges e[k] = x_{k+1} - x_0; columns f[b] of F and c[b] of cof F; D = dev E */
    double e[3][3], f[3][3], c[3][3], D[3][3];
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < 3; a++) e[k][a] = pos[3L * s[k + 1] + a] - x0[a];
    for (int b = 0; b < 3; b++)
        for (int a = 0; a < 3; a++)
            f[b][a] = e[0][a] * B[b] + e[1][a] * B[3 + b] + e[2][a] * B[6 + b];
    for (int b = 0; b < 3; b++)
        for (int d = 0; d < 3; d++)
            D[b][d] = 0.5 * ((f[b][0] * f[d][0] + f[b][1] * f[d][1] + f[b][2] * f[d][2])
                             - (b == d ? 1.0 : 0.0));
    double third = (D[0][0] + D[1][1] + D[2][2]) / 3.0, r2 = 0.0;
    for (int b = 0; b < 3; b++) {
        D[b][b] = D[b][b] - third;
        for (int d = 0; d < 3; d++) r2 = r2 + D[b][d] * D[b][d];
    }
    double CD = sqrt(r2);
    for (int b = 0; b < 3; b++) {
        const double *u = f[(b + 1) % 3], *v = f[(b + 2) % 3];
        c[b][0] = u[1] * v[2] - u[2] * v[1];
        c[b][1] = u[2] * v[0] - u[0] * v[2];
        c[b][2] = u[0] * v[1] - u[1] * v[0];
    }
    double CH = (f[0][0] * c[0][0] + f[0][1] * c[0][1] + f[0][2] * c[0][2]) - 1.0;
    /* dC_D/dF = F D / |D| (0 where D = 0), dC_H/dF = cof F; corner k + 1 gets row k of
     * (dC/dF) Dm^-T, corner 0 minus their sum */
    double P[3][3];
    for (int a = 0; a < 3; a++)
        for (int d = 0; d < 3; d++)
            P[a][d] = CD > 0.0 ? (f[0][a] * D[0][d] + f[1][a] * D[1][d] + f[2][a] * D[2][d]) / CD
                               : 0.0;
    double gD[4][3], gH[4][3];
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < 3; a++) {
            gD[k + 1][a] = P[a][0] * B[3 * k] + P[a][1] * B[3 * k + 1] + P[a][2] * B[3 * k + 2];
            gH[k + 1][a] = c[0][a] * B[3 * k] + c[1][a] * B[3 * k + 1] + c[2][a] * B[3 * k + 2];
        }
    for (int a = 0; a < 3; a++) {
        gD[0][a] = -(gD[1][a] + gD[2][a] + gD[3][a]);
        gH[0][a] = -(gH[1][a] + gH[2][a] + gH[3][a]);
    }
    double sDD = 0.0, sDH = 0.0, sHH = 0.0;
    for (int i = 0; i < 4; i++) {
        double dd = 0.0, dh = 0.0, hh2 = 0.0;
        for (int a = 0; a < 3; a++) {
            dd = dd + gD[i][a] * gD[i][a];
            dh = dh + gD[i][a] * gH[i][a];
            hh2 = hh2 + gH[i][a] * gH[i][a];
        }
        sDD = sDD + w[i] * dd;
        sDH = sDH + w[i] * dh;
        sHH = sHH + w[i] * hh2;
    }
    double aD = cd / hh, aH = ch / hh;
    double gram = sDD * sHH - sDH * sDH;  /* >= 0 (Cauchy-Schwarz) but for rounding */
    if (!(gram > 0.0)) gram = 0.0;
    double det = gram + aD * sHH + aH * sDD + aD * aH;
    if (!(sDD + sHH > 0.0) || !(det > 0.0)) return;
    double rD = -CD - aD * lambda[2 * j], rH = -CH - aH * lambda[2 * j + 1];
    double dD = (rD * (sHH + aH) - sDH * rH) / det;
    double dH = ((sDD + aD) * rH - sDH * rD) / det;
    lambda[2 * j] = lambda[2 * j] + dD;
    lambda[2 * j + 1] = lambda[2 * j + 1] + dH;
    double dx[4][3], top = 0.0;  /* top: the largest |dx_i|^2 (the fastest corner's) */
    for (int i = 0; i < 4; i++) {
        double d2 = 0.0;
        for (int a = 0; a < 3; a++) {
            dx[i][a] = w[i] * (dD * gD[i][a] + dH * gH[i][a]);
            d2 = d2 + dx[i][a] * dx[i][a];
        }
        if (d2 > top) top = d2;
    }
    double speed2 = top * (inv_h * inv_h);
    double share = speed2 > PS_MAX_CORRECTION_SPEED * PS_MAX_CORRECTION_SPEED
                   ? PS_MAX_CORRECTION_SPEED / sqrt(speed2) : 1.0;
    for (int i = 0; i < 4; i++)
        for (int a = 0; a < 3; a++) {
            long q = 3L * s[i] + a;
            pos[q] = pos[q] + dx[i][a];
            vel[q] = vel[q] + dx[i][a] * inv_h * share;
            if (share < 1.0) withheld[q] = withheld[q] + dx[i][a] * inv_h * (1.0 - share);
        }
}

#if defined(__AVX2__)
/* The x86-64-v3 build: material tets order[t .. stop) of one batch (no two share a particle),
 * four at a time, material_one's arithmetic lane by lane in its order (the vector divide and
 * square root round as the scalar ones; -(x) flips the sign bit as the scalar negation does),
 * so the same bits. A lane material_one would leave (no compliance, no mass, no direction)
 * stores what it loaded; capped lanes' withheld shares are added as material_one adds them.
 * Returns the first entry it left to the scalar loop. */
static int material_batch_avx2(double *pos, double *vel, double *withheld, double *lambda,
                               const double *inv_mass, const int32_t *tets, const double *dm_inv,
                               const double *compliance, const int32_t *order, int t, int stop,
                               double inv_h_, double hh_)
{
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), half = _mm256_set1_pd(0.5);
    const __m256d three = _mm256_set1_pd(3.0), sign = _mm256_set1_pd(-0.0);
    const __m256d inv_h = _mm256_set1_pd(inv_h_), hh = _mm256_set1_pd(hh_);
    const __m256d ih2 = _mm256_set1_pd(inv_h_ * inv_h_), cap = _mm256_set1_pd(PS_MAX_CORRECTION_SPEED);
    const __m256d cap2 = _mm256_set1_pd(PS_MAX_CORRECTION_SPEED * PS_MAX_CORRECTION_SPEED);
#define ADD _mm256_add_pd
#define SUB _mm256_sub_pd
#define MUL _mm256_mul_pd
    for (; t + 4 <= stop; t += 4) {
        int j[4] = {order[t], order[t + 1], order[t + 2], order[t + 3]};
        long r[4][4]; /* r[i][lane]: corner i's row */
        for (int e = 0; e < 4; e++)
            for (int i = 0; i < 4; i++) r[i][e] = tets[4L * j[e] + i];
        __m256d cd = _mm256_set_pd(compliance[2 * j[3]], compliance[2 * j[2]], compliance[2 * j[1]],
                                   compliance[2 * j[0]]);
        __m256d ch = _mm256_set_pd(compliance[2 * j[3] + 1], compliance[2 * j[2] + 1],
                                   compliance[2 * j[1] + 1], compliance[2 * j[0] + 1]);
        __m256d w[4], p[4][3], v[4][3];
        for (int i = 0; i < 4; i++) {
            w[i] = _mm256_set_pd(inv_mass[r[i][3]], inv_mass[r[i][2]], inv_mass[r[i][1]], inv_mass[r[i][0]]);
            three_rows4(pos, r[i], &p[i][0], &p[i][1], &p[i][2]);
        }
        __m256d live = _mm256_and_pd(_mm256_cmp_pd(cd, zero, _CMP_GT_OQ), _mm256_cmp_pd(ch, zero, _CMP_GT_OQ));
        __m256d massless = _mm256_and_pd(
            _mm256_and_pd(_mm256_cmp_pd(w[0], zero, _CMP_EQ_OQ), _mm256_cmp_pd(w[1], zero, _CMP_EQ_OQ)),
            _mm256_and_pd(_mm256_cmp_pd(w[2], zero, _CMP_EQ_OQ), _mm256_cmp_pd(w[3], zero, _CMP_EQ_OQ)));
        live = _mm256_andnot_pd(massless, live);
        if (!_mm256_movemask_pd(live)) continue;
        __m256d B[9];
        for (int q = 0; q < 9; q++)
            B[q] = _mm256_set_pd(dm_inv[9L * j[3] + q], dm_inv[9L * j[2] + q], dm_inv[9L * j[1] + q],
                                 dm_inv[9L * j[0] + q]);
        __m256d e[3][3], f[3][3], c[3][3], D[3][3];
        for (int k = 0; k < 3; k++)
            for (int a = 0; a < 3; a++) e[k][a] = SUB(p[k + 1][a], p[0][a]);
        for (int b = 0; b < 3; b++)
            for (int a = 0; a < 3; a++)
                f[b][a] = ADD(ADD(MUL(e[0][a], B[b]), MUL(e[1][a], B[3 + b])), MUL(e[2][a], B[6 + b]));
        for (int b = 0; b < 3; b++)
            for (int d = 0; d < 3; d++) {
                __m256d dot = ADD(ADD(MUL(f[b][0], f[d][0]), MUL(f[b][1], f[d][1])), MUL(f[b][2], f[d][2]));
                D[b][d] = MUL(half, SUB(dot, b == d ? one : zero));
            }
        __m256d third = _mm256_div_pd(ADD(ADD(D[0][0], D[1][1]), D[2][2]), three), r2 = zero;
        for (int b = 0; b < 3; b++) {
            D[b][b] = SUB(D[b][b], third);
            for (int d = 0; d < 3; d++) r2 = ADD(r2, MUL(D[b][d], D[b][d]));
        }
        __m256d CD = _mm256_sqrt_pd(r2);
        for (int b = 0; b < 3; b++) {
            const __m256d *u = f[(b + 1) % 3], *vv = f[(b + 2) % 3];
            c[b][0] = SUB(MUL(u[1], vv[2]), MUL(u[2], vv[1]));
            c[b][1] = SUB(MUL(u[2], vv[0]), MUL(u[0], vv[2]));
            c[b][2] = SUB(MUL(u[0], vv[1]), MUL(u[1], vv[0]));
        }
        __m256d CH = SUB(ADD(ADD(MUL(f[0][0], c[0][0]), MUL(f[0][1], c[0][1])), MUL(f[0][2], c[0][2])), one);
        __m256d some = _mm256_cmp_pd(CD, zero, _CMP_GT_OQ), P[3][3];
        for (int a = 0; a < 3; a++)
            for (int d = 0; d < 3; d++) {
                __m256d num = ADD(ADD(MUL(f[0][a], D[0][d]), MUL(f[1][a], D[1][d])), MUL(f[2][a], D[2][d]));
                P[a][d] = _mm256_and_pd(some, _mm256_div_pd(num, CD));
            }
        __m256d gD[4][3], gH[4][3];
        for (int k = 0; k < 3; k++)
            for (int a = 0; a < 3; a++) {
                gD[k + 1][a] = ADD(ADD(MUL(P[a][0], B[3 * k]), MUL(P[a][1], B[3 * k + 1])), MUL(P[a][2], B[3 * k + 2]));
                gH[k + 1][a] = ADD(ADD(MUL(c[0][a], B[3 * k]), MUL(c[1][a], B[3 * k + 1])), MUL(c[2][a], B[3 * k + 2]));
            }
        for (int a = 0; a < 3; a++) {
            gD[0][a] = _mm256_xor_pd(ADD(ADD(gD[1][a], gD[2][a]), gD[3][a]), sign);
            gH[0][a] = _mm256_xor_pd(ADD(ADD(gH[1][a], gH[2][a]), gH[3][a]), sign);
        }
        __m256d sDD = zero, sDH = zero, sHH = zero;
        for (int i = 0; i < 4; i++) {
            __m256d dd = zero, dh = zero, h2 = zero;
            for (int a = 0; a < 3; a++) {
                dd = ADD(dd, MUL(gD[i][a], gD[i][a]));
                dh = ADD(dh, MUL(gD[i][a], gH[i][a]));
                h2 = ADD(h2, MUL(gH[i][a], gH[i][a]));
            }
            sDD = ADD(sDD, MUL(w[i], dd));
            sDH = ADD(sDH, MUL(w[i], dh));
            sHH = ADD(sHH, MUL(w[i], h2));
        }
        __m256d aD = _mm256_div_pd(cd, hh), aH = _mm256_div_pd(ch, hh);
        __m256d gram = SUB(MUL(sDD, sHH), MUL(sDH, sDH));
        gram = _mm256_and_pd(_mm256_cmp_pd(gram, zero, _CMP_GT_OQ), gram);
        __m256d det = ADD(ADD(ADD(gram, MUL(aD, sHH)), MUL(aH, sDD)), MUL(aD, aH));
        live = _mm256_and_pd(live, _mm256_and_pd(_mm256_cmp_pd(ADD(sDD, sHH), zero, _CMP_GT_OQ),
                                                 _mm256_cmp_pd(det, zero, _CMP_GT_OQ)));
        int lanes = _mm256_movemask_pd(live);
        if (!lanes) continue;
        double lam[8];
        for (int e2 = 0; e2 < 4; e2++) lam[e2] = lambda[2 * j[e2]], lam[4 + e2] = lambda[2 * j[e2] + 1];
        __m256d lD = _mm256_loadu_pd(lam), lH = _mm256_loadu_pd(lam + 4);
        __m256d rD = SUB(_mm256_xor_pd(CD, sign), MUL(aD, lD)), rH = SUB(_mm256_xor_pd(CH, sign), MUL(aH, lH));
        __m256d dD = _mm256_div_pd(SUB(MUL(rD, ADD(sHH, aH)), MUL(sDH, rH)), det);
        __m256d dH = _mm256_div_pd(SUB(MUL(ADD(sDD, aD), rH), MUL(sDH, rD)), det);
        _mm256_storeu_pd(lam, ADD(lD, dD));
        _mm256_storeu_pd(lam + 4, ADD(lH, dH));
        __m256d dx[4][3], top = zero;
        for (int i = 0; i < 4; i++) {
            __m256d d2 = zero;
            for (int a = 0; a < 3; a++) {
                dx[i][a] = MUL(w[i], ADD(MUL(dD, gD[i][a]), MUL(dH, gH[i][a])));
                d2 = ADD(d2, MUL(dx[i][a], dx[i][a]));
            }
            top = _mm256_blendv_pd(top, d2, _mm256_cmp_pd(d2, top, _CMP_GT_OQ));
        }
        __m256d speed2 = MUL(top, ih2), capped = _mm256_cmp_pd(speed2, cap2, _CMP_GT_OQ);
        int any_capped = _mm256_movemask_pd(_mm256_and_pd(capped, live));
        __m256d share = any_capped ? _mm256_blendv_pd(one, _mm256_div_pd(cap, _mm256_sqrt_pd(speed2)), capped) : one;
        for (int i = 0; i < 4; i++) {
            three_rows4(vel, r[i], &v[i][0], &v[i][1], &v[i][2]);
            __m256d np[3], nv[3];
            for (int a = 0; a < 3; a++) {
                np[a] = _mm256_blendv_pd(p[i][a], ADD(p[i][a], dx[i][a]), live);
                nv[a] = _mm256_blendv_pd(v[i][a], ADD(v[i][a], MUL(MUL(dx[i][a], inv_h), share)), live);
            }
            store_rows4_avx2(pos, r[i], np[0], np[1], np[2]);
            store_rows4_avx2(vel, r[i], nv[0], nv[1], nv[2]);
        }
        for (int e2 = 0; e2 < 4; e2++) {
            if (!(lanes >> e2 & 1)) continue;
            lambda[2 * j[e2]] = lam[e2];
            lambda[2 * j[e2] + 1] = lam[4 + e2];
        }
        if (any_capped) { /* rare: the capped lanes' withheld shares, as material_one adds them */
            double sh[4], d[4][3][4];
            _mm256_storeu_pd(sh, share);
            for (int i = 0; i < 4; i++)
                for (int a = 0; a < 3; a++) _mm256_storeu_pd(d[i][a], dx[i][a]);
            for (int e2 = 0; e2 < 4; e2++) {
                if (!(lanes >> e2 & 1) || !(sh[e2] < 1.0)) continue;
                for (int i = 0; i < 4; i++)
                    for (int a = 0; a < 3; a++) {
                        long q = 3L * r[i][e2] + a;
                        withheld[q] = withheld[q] + d[i][a][e2] * inv_h_ * (1.0 - sh[e2]);
                    }
            }
        }
    }
#undef ADD
#undef SUB
#undef MUL
    return t;
}
#endif

void ps_xpbd_material(double *pos, double *vel, double *withheld, double *lambda,
                      const double *inv_mass, const int32_t *tets, const double *dm_inv,
                      const double *compliance, const int32_t *order,
                      const int32_t *batch_start, int m, int nbatch, int dim, double h)
{
    (void)m;
    if (dim != 3) return;
    double inv_h = 1.0 / h, hh = h * h;
    for (int bt = 0; bt < nbatch; bt++) {
        int t = batch_start[bt];
#if defined(__AVX2__)
        t = material_batch_avx2(pos, vel, withheld, lambda, inv_mass, tets, dm_inv, compliance, order,
                                t, batch_start[bt + 1], inv_h, hh);
#endif
        for (; t < batch_start[bt + 1]; t++)
            material_one(pos, vel, withheld, lambda, inv_mass, tets, dm_inv, compliance, order[t],
                         inv_h, hh);
    }
}

/* Whether a collider holds particle i this substep: its support is nonzero. */
PS_INLINE int held(const double *support, long i, int dim)
{
    const double *s = support + i * dim;
    return ps_dot(s, s, dim) > 0.0;
}

/* Whether the body of members rows[0 .. count) is held from opposite sides: two of its held
 * members' supports more than 120 degrees apart (the test in the header comment). */
PS_INLINE int opposed(const double *support, const int32_t *rows, int count, int dim)
{
    int first = 0;
    while (first < count && !held(support, rows[first], dim)) first++;
    if (first == count) return 0;
    const double *u = support + (long)rows[first] * dim, *w = u;
    double least = ps_dot(u, u, dim);
    for (int e = first + 1; e < count; e++) {
        const double *s = support + (long)rows[e] * dim;
        double a = ps_dot(s, u, dim);
        if (held(support, rows[e], dim) && a < least) { least = a; w = s; }
    }
    for (int e = first; e < count; e++)
        if (held(support, rows[e], dim) && ps_dot(support + (long)rows[e] * dim, w, dim) < -0.5)
            return 1;
    return 0;
}

int ps_settle_mass(double *settle_inv_mass, const double *support, const int32_t *stuck,
                   const double *inv_mass, const int32_t *members, const int32_t *body_start,
                   const int32_t *body_count, int n, int b, int dim)
{
    int any = 0;
    for (int i = 0; i < n && !any; i++) any = stuck[i] != 0;
    if (!any) return 0;  /* no settle this substep: nothing written */
    for (int i = 0; i < n; i++) settle_inv_mass[i] = stuck[i] ? 0.0 : inv_mass[i];
    /* a body with no stuck member sits it out; a row it shares with one that has is movable */
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < b; j++) {
            const int32_t *rows = members + body_start[j];
            int count = body_count[j], holds = 0;
            for (int e = 0; e < count && !holds; e++) holds = stuck[rows[e]] != 0;
            if (pass == 0 && !holds)
                for (int e = 0; e < count; e++) settle_inv_mass[rows[e]] = 0.0;
            if (pass == 1 && holds)
                for (int e = 0; e < count; e++)
                    settle_inv_mass[rows[e]] = stuck[rows[e]] ? 0.0 : inv_mass[rows[e]];
        }
    for (int j = 0; j < b; j++) {
        const int32_t *rows = members + body_start[j];
        if (opposed(support, rows, body_count[j], dim))
            for (int e = 0; e < body_count[j]; e++) settle_inv_mass[rows[e]] = 0.0;
    }
    return 1;
}

/* The settle solve's plan (see the header comment): the solve plan (order, batch_start: nbatch
 * batches) less the constraints all of whose particles (rows, k of them a constraint) have a
 * settle inverse mass of 0 -- a solve leaves such a constraint as it is (every kernel skips one
 * of no inverse mass) -- each batch's rest in its order. */
void ps_settle_plan(int32_t *settle_order, int32_t *settle_start, const int32_t *order,
                    const int32_t *batch_start, const int32_t *rows, const double *settle_inv_mass,
                    int m, int nbatch, int k)
{
    int kept = 0;
    settle_start[0] = 0;
    for (int bt = 0; bt < nbatch; bt++) {
        for (int t = batch_start[bt]; t < batch_start[bt + 1]; t++) {
            const int32_t *r = rows + (long)k * order[t];
            int moves = 0;
            for (int c = 0; c < k; c++) moves |= settle_inv_mass[r[c]] != 0.0;
            if (moves) settle_order[kept++] = order[t];
        }
        settle_start[bt + 1] = kept;
    }
    (void)m;
}

/* values[0 .. m) = 0: a substep's multipliers, and `withheld`, before the solve. */
void ps_zero(double *values, int m)
{
    if (m > 0) memset(values, 0, (size_t)m * sizeof(double));
}

/* The body that owns all corners of simplex t (its owner, in [0, b)), or -1. */
PS_INLINE int32_t owned(const int32_t *owner, const int32_t *t, int b, int dim)
{
    int32_t o = owner[t[0]];
    if (o < 0 || o >= b || owner[t[1]] != o || owner[t[2]] != o || (dim == 3 && owner[t[3]] != o))
        return -1;
    return o;
}

#if defined(__AVX2__)
/* ps_untangle's test of tetrahedra 0 .. m, four at a time: six times each one's volume by the
 * scalar test's operations in its order (so the same signs), and only for the inside-out ones
 * the owner test (the scalar loop tests the owners first: the same tets flag the same bodies).
 * Returns the first tet it left to the scalar loop. */
static int inverted_tets_avx(int32_t *tangled, const double *pos, const int32_t *owner,
                             const int32_t *simplices, const double *rest_volume, int m, int b)
{
    const __m256d zero = _mm256_setzero_pd();
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        long r[4][4];  /* r[i][lane]: corner i's row */
        for (int e = 0; e < 4; e++)
            for (int i = 0; i < 4; i++) r[i][e] = simplices[4L * (j + e) + i];
        __m256d p[4][3], e1[3], e2[3], e3[3];
        for (int i = 0; i < 4; i++) three_rows4(pos, r[i], &p[i][0], &p[i][1], &p[i][2]);
        for (int c = 0; c < 3; c++) {
            e1[c] = _mm256_sub_pd(p[1][c], p[0][c]);
            e2[c] = _mm256_sub_pd(p[2][c], p[0][c]);
            e3[c] = _mm256_sub_pd(p[3][c], p[0][c]);
        }
        __m256d cx = _mm256_sub_pd(_mm256_mul_pd(e2[1], e3[2]), _mm256_mul_pd(e2[2], e3[1]));
        __m256d cy = _mm256_sub_pd(_mm256_mul_pd(e2[2], e3[0]), _mm256_mul_pd(e2[0], e3[2]));
        __m256d cz = _mm256_sub_pd(_mm256_mul_pd(e2[0], e3[1]), _mm256_mul_pd(e2[1], e3[0]));
        __m256d twice = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(e1[0], cx), _mm256_mul_pd(e1[1], cy)),
                                      _mm256_mul_pd(e1[2], cz));
        __m256d rest = _mm256_loadu_pd(rest_volume + j);
        __m256d inside_out = _mm256_or_pd(
            _mm256_and_pd(_mm256_cmp_pd(rest, zero, _CMP_GT_OQ), _mm256_cmp_pd(twice, zero, _CMP_LT_OQ)),
            _mm256_and_pd(_mm256_cmp_pd(rest, zero, _CMP_LT_OQ), _mm256_cmp_pd(twice, zero, _CMP_GT_OQ)));
        int flags = _mm256_movemask_pd(inside_out);
        for (int e = 0; flags; e++, flags >>= 1) {
            if (!(flags & 1)) continue;
            int32_t o = owned(owner, simplices + 4L * (j + e), b, 3);
            if (o >= 0) tangled[o] = 1;
        }
    }
    return j;
}
#endif

void ps_untangle(double *pos, double *vel, double *withheld, int32_t *tangled, const double *inv_mass,
                 const double *support, const int32_t *owner, const int32_t *simplices,
                 const double *rest_volume, const int32_t *members, const double *rest,
                 const int32_t *body_start, const int32_t *body_count, int n, int m, int b,
                 int dim, double h)
{
    (void)n;
    if (dim != 2 && dim != 3) return;
    double inv_h = 1.0 / h;
    for (int j = 0; j < b; j++) tangled[j] = 0;
    int j0 = 0;
#if defined(__AVX2__)
    if (dim == 3) j0 = inverted_tets_avx(tangled, pos, owner, simplices, rest_volume, m, b);
#endif
    for (int j = j0; j < m; j++) {
        const int32_t *t = simplices + (long)(dim + 1) * j;
        int32_t o = owned(owner, t, b, dim);
        if (o < 0) continue;
        double twice;  /* twice the area (2D), six times the volume (3D) */
        if (dim == 2) {
            const double *a = pos + 2L * t[0], *p = pos + 2L * t[1], *c = pos + 2L * t[2];
            twice = (p[0] - a[0]) * (c[1] - a[1]) - (p[1] - a[1]) * (c[0] - a[0]);
        } else {
            const double *a = pos + 3L * t[0], *p = pos + 3L * t[1], *c = pos + 3L * t[2],
                         *d = pos + 3L * t[3];
            double e1[3], e2[3], e3[3];
            for (int k = 0; k < 3; k++) e1[k] = p[k] - a[k], e2[k] = c[k] - a[k], e3[k] = d[k] - a[k];
            twice = (e1[0] * (e2[1] * e3[2] - e2[2] * e3[1]) + e1[1] * (e2[2] * e3[0] - e2[0] * e3[2]))
                    + e1[2] * (e2[0] * e3[1] - e2[1] * e3[0]);
        }
        if (rest_volume[j] > 0.0 ? twice < 0.0 : rest_volume[j] < 0.0 && twice > 0.0) tangled[o] = 1;
    }
    for (int j = 0; j < b; j++) {
        const int32_t *rows = members + body_start[j];
        const double *q = rest + (long)dim * body_start[j];
        int count = body_count[j];
        if (!tangled[j] || count == 0 || opposed(support, rows, count, dim)) {
            tangled[j] = 0;
            continue;
        }
        if (dim == 3) {  /* x_i = c + R q_i, v_i = u + w x (R q_i) */
            ps_fit3 f = ps_rigid_fit3(pos, vel, rows, q, count, 1);
            for (int e = 0; e < count; e++) {
                long i = rows[e];
                if (inv_mass[i] == 0.0) continue;
                const double *qe = q + 3L * e;
                double g[3];
                for (int a = 0; a < 3; a++)
                    g[a] = (f.R[3 * a] * qe[0] + f.R[3 * a + 1] * qe[1]) + f.R[3 * a + 2] * qe[2];
                double spin[3] = {f.w[1] * g[2] - f.w[2] * g[1], f.w[2] * g[0] - f.w[0] * g[2],
                                  f.w[0] * g[1] - f.w[1] * g[0]};
                for (int a = 0; a < 3; a++) {
                    long k = 3 * i + a;
                    double x0 = pos[k], v0 = vel[k];
                    pos[k] = f.c[a] + g[a];
                    vel[k] = f.u[a] + spin[a];
                    withheld[k] = withheld[k] + ((pos[k] - x0) * inv_h - (vel[k] - v0));
                }
            }
            continue;
        }
        ps_fit f = ps_rigid_fit(pos, vel, rows, q, count);
        for (int e = 0; e < count; e++) {
            long i = rows[e];
            if (inv_mass[i] == 0.0) continue;
            double gx = f.co * q[2 * e] - f.si * q[2 * e + 1];
            double gy = f.si * q[2 * e] + f.co * q[2 * e + 1];
            double x0[2] = {pos[2 * i], pos[2 * i + 1]}, v0[2] = {vel[2 * i], vel[2 * i + 1]};
            pos[2 * i] = f.cx + gx;
            pos[2 * i + 1] = f.cy + gy;
            vel[2 * i] = f.ux + -f.w * gy;
            vel[2 * i + 1] = f.uy + f.w * gx;
            for (int a = 0; a < 2; a++)
                withheld[2 * i + a] = withheld[2 * i + a] + ((pos[2 * i + a] - x0[a]) * inv_h - (vel[2 * i + a] - v0[a]));
        }
    }
}

/* Angular momentum through a body's own constraints (ps_spin_record before the substep's
 * solve, ps_spin_keep after it: the spin pass of the header comment). */

/* Whether body j's spin is kept: it has members, all of them its own (owner j: none shared
 * with another body), none immovable, none a collider holds (support, the last contacts), and
 * no constraint links one to a particle of another body or of none (`linked`, the World's,
 * from the constraint tables). */
PS_INLINE int spins_alone(const int32_t *rows, int count, int j, const int32_t *owner,
                          const double *inv_mass, const double *support, const int32_t *linked, int dim)
{
    if (count <= 0 || linked[j]) return 0;
    for (int e = 0; e < count; e++)
        if (owner[rows[e]] != j || inv_mass[rows[e]] == 0.0 || held(support, rows[e], dim)) return 0;
    return 1;
}

/* A body's moments in one pass over its members rows[0 .. count), about its first member's
 * position o (s_i = x_i - o): M = sum m, S = sum m s, P = sum m v, A = sum m s x v, and (if
 * J) J = sum m (|s|^2 - s_a^2) per axis a, K = sum m (s_x s_y, s_x s_z, s_y s_z); in 2D S, P
 * of two, A and J of one (z). Velocities vel, or (x - p) h^-1 - withheld if prev_pos
 * (integrator "xpbd"'s velocity update, integrate.c, as it will be). Sums in member order,
 * from 0.0. `dim` is a constant at each call: one loop per case. */
typedef struct {
    double o[3], M, S[3], P[3], A[3], J[3], K[3], Sb[3], Pb[3], Ab[3];
} ps_moments;

/* With `before` (3D), also Sb, Pb, Ab: S, P and A of the positions p and velocities vel the
 * substep's solve began from (spin_keep's mode 2). */
PS_INLINE void body_moments(ps_moments *b, const double *pos, const double *vel, const double *prev_pos,
                            const double *withheld, const double *mass, const int32_t *rows, int count,
                            int dim, int inertia, int before, double inv_h)
{
    double M = 0.0, S[3] = {0.0, 0.0, 0.0}, P[3] = {0.0, 0.0, 0.0}, A[3] = {0.0, 0.0, 0.0};
    double J[3] = {0.0, 0.0, 0.0}, K[3] = {0.0, 0.0, 0.0}, o[3] = {0.0, 0.0, 0.0};
    double Sb[3] = {0.0, 0.0, 0.0}, Pb[3] = {0.0, 0.0, 0.0}, Ab[3] = {0.0, 0.0, 0.0};
    for (int a = 0; a < dim; a++) o[a] = pos[(long)dim * rows[0] + a];
    for (int e = 0; e < count; e++) {
        long i = rows[e];
        double m = mass[i], x[3] = {0.0, 0.0, 0.0}, v[3] = {0.0, 0.0, 0.0};
        for (int a = 0; a < dim; a++) {
            long q = dim * i + a;
            x[a] = pos[q] - o[a];
            v[a] = prev_pos ? (pos[q] - prev_pos[q]) * inv_h - withheld[q] : vel[q];
        }
        M = M + m;
        for (int a = 0; a < dim; a++) {
            S[a] = S[a] + m * x[a];
            P[a] = P[a] + m * v[a];
        }
        if (dim == 2) {
            A[2] = A[2] + m * (x[0] * v[1] - x[1] * v[0]);
            if (inertia) J[2] = J[2] + m * (x[0] * x[0] + x[1] * x[1]);
            continue;
        }
        A[0] = A[0] + m * (x[1] * v[2] - x[2] * v[1]);
        A[1] = A[1] + m * (x[2] * v[0] - x[0] * v[2]);
        A[2] = A[2] + m * (x[0] * v[1] - x[1] * v[0]);
        if (before) {
            long q = 3 * i;
            double y[3] = {prev_pos[q] - o[0], prev_pos[q + 1] - o[1], prev_pos[q + 2] - o[2]};
            double u[3] = {vel[q], vel[q + 1], vel[q + 2]};
            for (int a = 0; a < 3; a++) {
                Sb[a] = Sb[a] + m * y[a];
                Pb[a] = Pb[a] + m * u[a];
            }
            Ab[0] = Ab[0] + m * (y[1] * u[2] - y[2] * u[1]);
            Ab[1] = Ab[1] + m * (y[2] * u[0] - y[0] * u[2]);
            Ab[2] = Ab[2] + m * (y[0] * u[1] - y[1] * u[0]);
        }
        if (!inertia) continue;
        double xx = x[0] * x[0], yy = x[1] * x[1], zz = x[2] * x[2];
        J[0] = J[0] + m * (yy + zz);
        J[1] = J[1] + m * (xx + zz);
        J[2] = J[2] + m * (xx + yy);
        K[0] = K[0] + m * (x[0] * x[1]);
        K[1] = K[1] + m * (x[0] * x[2]);
        K[2] = K[2] + m * (x[1] * x[2]);
    }
    b->M = M;
    for (int a = 0; a < 3; a++)
        b->o[a] = o[a], b->S[a] = S[a], b->P[a] = P[a], b->A[a] = A[a], b->J[a] = J[a], b->K[a] = K[a],
        b->Sb[a] = Sb[a], b->Pb[a] = Pb[a], b->Ab[a] = Ab[a];
}

/* From the sums S = sum m s, P = sum m v, A = sum m s x v of mass M: the centre c = S / M
 * (offset from o) and the angular momentum L about it, L = A - c x P (2D: L[2]). */
PS_INLINE void spin_of(double c[3], double L[3], const double S[3], const double P[3], const double A[3],
                       double M, int dim)
{
    for (int a = 0; a < 3; a++) c[a] = a < dim ? S[a] / M : 0.0;
    L[0] = dim == 2 ? 0.0 : A[0] - (c[1] * P[2] - c[2] * P[1]);
    L[1] = dim == 2 ? 0.0 : A[1] - (c[2] * P[0] - c[0] * P[2]);
    L[2] = A[2] - (c[0] * P[1] - c[1] * P[0]);
}

/* spin_of a body's moments. */
PS_INLINE void body_spin(double c[3], double L[3], const ps_moments *b, int dim)
{
    spin_of(c, L, b->S, b->P, b->A, b->M, dim);
}

void ps_spin_record(double *spin, const double *pos, const double *vel, const double *mass,
                    const double *inv_mass, const double *support, const int32_t *owner,
                    const int32_t *linked,
                    const int32_t *members, const int32_t *body_start, const int32_t *body_count,
                    int n, int b, int dim)
{
    (void)n;
    if (dim != 2 && dim != 3) return;
    for (int j = 0; j < b; j++) {
        const int32_t *rows = members + body_start[j];
        double c[3], *L = spin + 3L * j;
        if (!spins_alone(rows, body_count[j], j, owner, inv_mass, support, linked, dim)) {
            L[0] = L[1] = L[2] = 0.0;
            continue;
        }
        ps_moments mo;
        if (dim == 2)
            body_moments(&mo, pos, vel, NULL, NULL, mass, rows, body_count[j], 2, 0, 0, 0.0);
        else
            body_moments(&mo, pos, vel, NULL, NULL, mass, rows, body_count[j], 3, 0, 0, 0.0);
        body_spin(c, L, &mo, dim);
    }
}

void ps_spin_keep(double *vel, double *withheld, const double *spin, const double *pos,
                  const double *prev_pos, const double *mass, const double *inv_mass,
                  const double *support, const int32_t *owner, const int32_t *linked,
                  const int32_t *tangled,
                  const int32_t *members, const int32_t *body_start, const int32_t *body_count,
                  int n, int b, int dim, int mode, double h)
{
    (void)n;
    if (dim != 2 && dim != 3) return;
    if (mode == 2 && dim != 3) return;
    double inv_h = 1.0 / h;
    for (int j = 0; j < b; j++) {
        const int32_t *rows = members + body_start[j];
        int count = body_count[j];
        if (!spins_alone(rows, count, j, owner, inv_mass, support, linked, dim) || (mode == 2 && tangled[j]))
            continue;
        ps_moments mo;
        if (dim == 3 && mode == 2)  /* (each case its own loop: dim and the branches folded) */
            body_moments(&mo, pos, vel, prev_pos, withheld, mass, rows, count, 3, 1, 1, inv_h);
        else if (dim == 3 && mode == 1)
            body_moments(&mo, pos, vel, prev_pos, withheld, mass, rows, count, 3, 1, 0, inv_h);
        else if (dim == 3)
            body_moments(&mo, pos, vel, NULL, withheld, mass, rows, count, 3, 1, 0, inv_h);
        else if (mode == 1)
            body_moments(&mo, pos, vel, prev_pos, withheld, mass, rows, count, 2, 1, 0, inv_h);
        else
            body_moments(&mo, pos, vel, NULL, withheld, mass, rows, count, 2, 1, 0, inv_h);
        double c[3], L[3], w[3] = {0.0, 0.0, 0.0}, dL[3], before[3];
        body_spin(c, L, &mo, dim);
        if (mode == 2) {  /* about the centre of the p's (the same point as the x's before the solve) */
            double cb[3];
            spin_of(cb, before, mo.Sb, mo.Pb, mo.Ab, mo.M, 3);
        } else {
            for (int a = 0; a < 3; a++) before[a] = spin[3L * j + a];
        }
        for (int a = 0; a < 3; a++) dL[a] = L[a] - before[a];
        const double M = mo.M;
        if (dim == 2) {  /* I = J - M |c|^2 (the parallel axis theorem) */
            double I = mo.J[2] - M * (c[0] * c[0] + c[1] * c[1]);
            if (!(I > 0.0)) continue;
            w[2] = dL[2] / I;
        } else {  /* I w = dL (ps_inertia_solve, as ps_rigid_fit3) */
            double xx = c[0] * c[0], yy = c[1] * c[1], zz = c[2] * c[2];
            double I00 = mo.J[0] - M * (yy + zz), I11 = mo.J[1] - M * (xx + zz), I22 = mo.J[2] - M * (xx + yy);
            double I01 = M * (c[0] * c[1]) - mo.K[0], I02 = M * (c[0] * c[2]) - mo.K[1];
            double I12 = M * (c[1] * c[2]) - mo.K[2];
            if (!ps_inertia_solve(w, dL, I00, I11, I22, I01, I02, I12)) continue;
        }
        double *out = mode ? withheld : vel, sign = mode ? 1.0 : -1.0;
        double oc[3] = {mo.o[0] + c[0], mo.o[1] + c[1], mo.o[2] + c[2]};  /* the centre */
        if (dim == 2) {
            for (int e = 0; e < count; e++) {
                long i = rows[e];
                double rx = pos[2 * i] - oc[0], ry = pos[2 * i + 1] - oc[1];
                out[2 * i] = out[2 * i] + sign * -(w[2] * ry);
                out[2 * i + 1] = out[2 * i + 1] + sign * (w[2] * rx);
            }
            continue;
        }
        for (int e = 0; e < count; e++) {
            long i = rows[e];
            double r[3] = {pos[3 * i] - oc[0], pos[3 * i + 1] - oc[1], pos[3 * i + 2] - oc[2]};
            out[3 * i] = out[3 * i] + sign * (w[1] * r[2] - w[2] * r[1]);
            out[3 * i + 1] = out[3 * i + 1] + sign * (w[2] * r[0] - w[0] * r[2]);
            out[3 * i + 2] = out[3 * i + 2] + sign * (w[0] * r[1] - w[1] * r[0]);
        }
    }
}
