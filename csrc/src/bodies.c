/* bodies.c -- body models in the force pass: gas pressure and shape matching (2D).
 *
 * Bodies are ranges of two concatenated index arrays: outline rows
 * (counter-clockwise, for pressure) and member rows (for shape matching).
 *
 * Pressure (ideal gas, the JellyCar "pressure body", seed 004): a body of
 * outline area A (exact shoelace formula, A = 1/2 sum x_i y_{i+1} - x_{i+1} y_i)
 * holding nRT = amount has pressure P = amount / max(A, min_area). Each edge
 * e = x_{i+1} - x_i feels P |e| along its outward normal (e_y, -e_x)/|e|, half
 * on each endpoint:  F_i += P/2 (e_y, -e_x),  F_{i+1} += P/2 (e_y, -e_x).
 * min_area (a tenth of the rest area) keeps a crushed body's pressure finite
 * (at most 10x its rest pressure), and it is what turns an outline inside out
 * (A <= 0, clockwise, so its edge normals point into the region it encloses)
 * back: the gas pushes it through itself at that bounded pressure until it
 * encloses its gas again, instead of blowing it apart.
 *
 * Shape matching (Mueller et al. 2005, "Meshless deformations based on shape
 * matching"; seed 000), for members x_i with rest offsets q_i:
 *     c = mean x_i,  r_i = x_i - c
 *     the best-fit rotation R (least squares over R q_i ~ r_i) has
 *     cos = D / L, sin = S / L,  D = sum q_i . r_i,  S = sum q_i x r_i,
 *     L = sqrt(D^2 + S^2)  (= angle atan2(S, D) = -atan2(sum r x q, sum r . q),
 *     written without trigonometry so the NumPy twin matches bit for bit);
 *     F_i += m_i k (c + R q_i - x_i)                    k: stiffness, 1/s^2
 *     damping toward the rigid motion (mean velocity u plus the best-fit
 *     angular velocity w = sum r_i x (v_i - u) / sum |r_i|^2):
 *     F_i += m_i d (u + w x r_i - v_i)                  d: damping, 1/s
 * A rigidly moved or rotated body feels no force; a body turned inside out
 * is pulled back to its (unmirrored) rest shape. Immovable members count in
 * c and u but receive no force.
 * Turned inside out: the best-fit reflection (least squares over M q_i ~ r_i,
 * M a mirror) fits by sqrt(E^2 + T^2), E = sum q_x r_x - q_y r_y,
 * T = sum q_y r_x + q_x r_y, the best rotation by L; when
 *     D^2 + S^2 < E^2 + T^2     (the members' best linear fit has det < 0)
 * the stiffness is at least PS_UNMIRROR_STIFFNESS and PS_UNMIRROR_GAIN times the body's
 * own (a cell of springs holds its mirror image against a weaker pull). Gas and area springs push a
 * uniformly inverted outline straight in and fold it; the pull to R q_i takes
 * the body back through a flat state along one axis instead (a symmetric body's
 * R is then arbitrary but fixed: L = 0 gives R = I).
 *
 * Rolling resistance (as Box2D's: a torque against the body's spin, at most
 * coefficient x normal load x lever), for a body whose members touch colliders
 * in this substep, with masses m_i at x_i and velocities v_i:
 *     M = sum m_i,  c = sum m_i x_i / M,  u = sum m_i v_i / M,  r_i = x_i - c
 *     L = sum m_i r_i x (v_i - u),  I = sum m_i |r_i|^2    (spin L / I)
 *     J = the members' normal impulses from colliders this substep (the
 *         growth of their contact_impulse since the last call: `rolled`
 *         holds the sum then, 0 at a frame's start),
 *     A = coefficient J R,  R = sum c_i |r_i| / sum c_i  (the mean lever
 *         about c of the members' contact impulses c_i so far this frame)
 *     v_i += -s (L / I) z x r_i,   s = min(1, A / |L|)
 * It removes angular momentum min(|L|, A) from the spin and keeps the linear
 * momentum (sum m_i z x r_i = 0); friction then slows the body's rolling as
 * its contact slips. A body with an immovable member is skipped (held, it
 * does not roll). Sliding or at rest (L = 0), nothing changes.
 *
 * In 3D a body's outline range holds its closed surface, three rows a
 * triangle (counter-clockwise seen from outside). Pressure: the enclosed
 * volume V = 1/6 sum a . (b x c) (divergence theorem, exact for the
 * polyhedron), P = amount / max(V, min_area) (min_area is then a tenth of the
 * rest volume), and each triangle feels P times its area along its outward
 * normal, a third on each corner: n2 = (b - a) x (c - a) (twice the area
 * times the normal), F_a, F_b, F_c += (P / 6) n2, in that order.
 * Shape matching in 3D: the best-fit rotation R (least squares over
 * R q_i ~ r_i) by Horn's quaternion method: the unit quaternion of R is the
 * eigenvector of the largest eigenvalue of a symmetric 4 x 4 matrix N made
 * from S = sum q_i r_i^T (B. K. P. Horn 1987, "Closed-form solution of
 * absolute orientation using unit quaternions"), found by PS_JACOBI_SWEEPS
 * cyclic Jacobi sweeps. Unlike a polar decomposition of S (S^T S)^-1/2, it
 * needs no inverse, so flat (coplanar) and collinear member sets give a
 * rotation (for collinear members one of the equally good ones), and it
 * always gives a proper rotation, never the reflection that fits a mirrored
 * body; only square roots and divisions, so the NumPy twin matches bit for
 * bit. With no information (a single member, S = 0) R = I. Mirrored: det S
 * < 0 (in 2D the rule above is the same test: D^2 + S^2 - E^2 - T^2 = 4 det).
 * Damping toward the rigid motion u + w x r_i, with w = I^-1 sum r_i x
 * (v_i - u), I = sum |r_i|^2 1 - r_i r_i^T (unit masses, as in 2D) solved by
 * its adjugate; for members on a line (det I <= 1e-12 (tr I / 3)^3), where
 * spin about the line is undefined, w = 2 L / tr I (exact for a line).
 * Accumulation order: bodies in index order; sums over members or edges in
 * index order; pressure adds edge j's force to its first endpoint, then its
 * second. The NumPy twin follows the same order.
 */
#include <math.h>
#include "internal.h"

/* Twice a triangle's area times its normal, (b - a) x (c - a); and a . (b x c). */
PS_INLINE void tri_normal(double n[3], const double *a, const double *b, const double *c)
{
    double e0 = b[0] - a[0], e1 = b[1] - a[1], e2 = b[2] - a[2];
    double g0 = c[0] - a[0], g1 = c[1] - a[1], g2 = c[2] - a[2];
    n[0] = e1 * g2 - e2 * g1;
    n[1] = e2 * g0 - e0 * g2;
    n[2] = e0 * g1 - e1 * g0;
}

PS_INLINE double triple(const double *a, const double *b, const double *c)
{
    return a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2])
           + a[2] * (b[0] * c[1] - b[1] * c[0]);
}

static void pressure_3d(double *force, const double *pos, const int32_t *surface,
                        const int32_t *body_start, const int32_t *body_count,
                        const double *amount, const double *min_volume, int nb)
{
    for (int b = 0; b < nb; b++) {
        const int32_t *t = surface + body_start[b];
        int m = body_count[b] / 3;
        double six = 0.0;
        for (int j = 0; j < m; j++)
            six = six + triple(pos + 3L * t[3 * j], pos + 3L * t[3 * j + 1], pos + 3L * t[3 * j + 2]);
        double volume = six / 6.0;
        double P = amount[b] / (volume > min_volume[b] ? volume : min_volume[b]);
        double sixth = P / 6.0;
        for (int j = 0; j < m; j++) {
            long i[3] = {3L * t[3 * j], 3L * t[3 * j + 1], 3L * t[3 * j + 2]};
            double n[3];
            tri_normal(n, pos + i[0], pos + i[1], pos + i[2]);
            for (int k = 0; k < 3; k++)
                for (int c = 0; c < 3; c++) force[i[k] + c] += sixth * n[c];
        }
    }
}

void ps_pressure(double *force, const double *pos, const int32_t *outline,
                 const int32_t *body_start, const int32_t *body_count,
                 const double *amount, const double *min_area, int nb, int dim)
{
    if (dim == 3) {
        pressure_3d(force, pos, outline, body_start, body_count, amount, min_area, nb);
        return;
    }
    for (int b = 0; b < nb; b++) {
        const int32_t *o = outline + body_start[b];
        int m = body_count[b];
        double twice = 0.0;
        for (int j = 0; j < m; j++) {
            const double *p = pos + (long)o[j] * dim, *q = pos + (long)o[(j + 1) % m] * dim;
            twice = twice + (p[0] * q[1] - q[0] * p[1]);
        }
        double area = 0.5 * twice;
        double P = amount[b] / (area > min_area[b] ? area : min_area[b]);
        double half = 0.5 * P;
        for (int j = 0; j < m; j++) {
            long i0 = (long)o[j] * dim, i1 = (long)o[(j + 1) % m] * dim;
            double fx = half * (pos[i1 + 1] - pos[i0 + 1]);
            double fy = half * -(pos[i1] - pos[i0]);
            force[i0] += fx;
            force[i0 + 1] += fy;
            force[i1] += fx;
            force[i1 + 1] += fy;
        }
    }
}

/* A mirrored body's shape-matching stiffness: at least PS_UNMIRROR_STIFFNESS and
 * PS_UNMIRROR_GAIN times its own. */
static double unmirrored(double k)
{
    double gained = PS_UNMIRROR_GAIN * k;
    double least = gained > PS_UNMIRROR_STIFFNESS ? gained : PS_UNMIRROR_STIFFNESS;
    return k < least ? least : k;
}

static void shape_match_3d(double *force, const double *pos, const double *vel,
                           const double *mass, const double *inv_mass, const int32_t *members,
                           const double *rest, const int32_t *body_start,
                           const int32_t *body_count, const double *stiffness,
                           const double *damping, int nb)
{
    for (int b = 0; b < nb; b++) {
        const int32_t *idx = members + body_start[b];
        const double *q = rest + 3L * body_start[b];
        int m = body_count[b];
        if (m == 0) continue;
        ps_fit3 f = ps_rigid_fit3(pos, vel, idx, q, m, 0);
        const double *c = f.c, *u = f.u, *R = f.R, *w = f.w;
        double det = f.det;
        double k = stiffness[b];
        if (det < 0.0) k = unmirrored(k);
        int pull = k != 0.0;  /* else damping alone: no rotation to fit (its Jacobi sweeps) */
        if (pull) ps_best_rotation(f.R, (const double (*)[3])f.S);
#if defined(__AVX2__)
        /* the loop below with the three axes as vector lanes (lane 3 unused; the same
         * operations lane by lane, so the same bits) */
        const __m256i xyz = _mm256_set_epi64x(0, -1, -1, -1);
        const __m256d cv = _mm256_set_pd(0.0, c[2], c[1], c[0]), uv = _mm256_set_pd(0.0, u[2], u[1], u[0]);
        const __m256d wv = _mm256_set_pd(0.0, w[2], w[1], w[0]);
        const __m256d w_yzx = _mm256_permute4x64_pd(wv, 0xC9), w_zxy = _mm256_permute4x64_pd(wv, 0xD2);
        const __m256d R0 = _mm256_set_pd(0.0, R[6], R[3], R[0]), R1 = _mm256_set_pd(0.0, R[7], R[4], R[1]);
        const __m256d R2 = _mm256_set_pd(0.0, R[8], R[5], R[2]);
        for (int j = 0; j < m; j++) {
            long i = idx[j];
            if (inv_mass[i] == 0.0) continue;
            const double *qj = q + 3L * j;
            __m256d x = _mm256_maskload_pd(pos + 3 * i, xyz), v = _mm256_maskload_pd(vel + 3 * i, xyz);
            __m256d r = _mm256_sub_pd(x, cv);
            __m256d spin = _mm256_sub_pd(_mm256_mul_pd(w_yzx, _mm256_permute4x64_pd(r, 0xD2)),
                                         _mm256_mul_pd(w_zxy, _mm256_permute4x64_pd(r, 0xC9)));
            __m256d md = _mm256_set1_pd(mass[i] * damping[b]);
            __m256d add = _mm256_mul_pd(md, _mm256_sub_pd(_mm256_add_pd(uv, spin), v));
            if (pull) {
                __m256d target = _mm256_add_pd(
                    cv, _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(R0, _mm256_set1_pd(qj[0])),
                                                    _mm256_mul_pd(R1, _mm256_set1_pd(qj[1]))),
                                      _mm256_mul_pd(R2, _mm256_set1_pd(qj[2]))));
                __m256d mk = _mm256_set1_pd(mass[i] * k);
                add = _mm256_add_pd(_mm256_mul_pd(mk, _mm256_sub_pd(target, x)), add);
            }
            double out[4];
            _mm256_storeu_pd(out, add);
            for (int a = 0; a < 3; a++) force[3 * i + a] += out[a];
        }
        continue;
#endif
        for (int j = 0; j < m; j++) {
            long i = idx[j];
            if (inv_mass[i] == 0.0) continue;
            const double *x = pos + 3 * i, *v = vel + 3 * i, *qj = q + 3L * j;
            double r[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
            double spin[3] = {w[1] * r[2] - w[2] * r[1], w[2] * r[0] - w[0] * r[2],
                              w[0] * r[1] - w[1] * r[0]};
            double mk = mass[i] * k, md = mass[i] * damping[b];
            for (int a = 0; a < 3; a++) {
                double damp = md * ((u[a] + spin[a]) - v[a]);
                if (!pull) {
                    force[3 * i + a] += damp;
                    continue;
                }
                double target = c[a] + ((R[3 * a] * qj[0] + R[3 * a + 1] * qj[1]) + R[3 * a + 2] * qj[2]);
                force[3 * i + a] += mk * (target - x[a]) + damp;
            }
        }
    }
}

void ps_shape_match(double *force, const double *pos, const double *vel,
                    const double *mass, const double *inv_mass,
                    const int32_t *members, const double *rest,
                    const int32_t *body_start, const int32_t *body_count,
                    const double *stiffness, const double *damping, int nb, int dim)
{
    if (dim == 3) {
        shape_match_3d(force, pos, vel, mass, inv_mass, members, rest, body_start, body_count,
                       stiffness, damping, nb);
        return;
    }
    for (int b = 0; b < nb; b++) {
        const int32_t *idx = members + body_start[b];
        const double *q = rest + (long)body_start[b] * dim;
        int m = body_count[b];
        if (m == 0) continue;
        ps_fit f = ps_rigid_fit(pos, vel, idx, q, m);
        double cx = f.cx, cy = f.cy, ux = f.ux, uy = f.uy, co = f.co, si = f.si, w = f.w;
        double k = stiffness[b];
        if (f.mirrored) k = unmirrored(k);
        for (int j = 0; j < m; j++) {
            long i = idx[j];
            if (inv_mass[i] == 0.0) continue;
            const double *x = pos + i * dim, *v = vel + i * dim;
            double rx = x[0] - cx, ry = x[1] - cy;
            double tx = cx + (co * q[2 * j] - si * q[2 * j + 1]);
            double ty = cy + (si * q[2 * j] + co * q[2 * j + 1]);
            double gx = ux + -w * ry, gy = uy + w * rx;
            double mk = mass[i] * k, md = mass[i] * damping[b];
            force[i * dim] += mk * (tx - x[0]) + md * (gx - v[0]);
            force[i * dim + 1] += mk * (ty - x[1]) + md * (gy - v[1]);
        }
    }
}

void ps_rolling_resistance(double *vel, double *rolled, const double *pos, const double *mass,
                           const double *inv_mass, const double *contact_impulse,
                           const int32_t *members, const int32_t *body_start,
                           const int32_t *body_count, const double *coefficient, int nb, int dim)
{
    for (int b = 0; b < nb; b++) {
        const int32_t *idx = members + body_start[b];
        int m = body_count[b];
        if (m == 0 || !(coefficient[b] > 0.0)) continue;
        double total = 0.0, M = 0.0, cx = 0.0, cy = 0.0, ux = 0.0, uy = 0.0;
        int held = 0;
        for (int j = 0; j < m; j++) {
            long i = idx[j];
            const double *x = pos + i * dim, *v = vel + i * dim;
            double mi = mass[i];
            total = total + contact_impulse[i];
            M = M + mi;
            cx = cx + mi * x[0];
            cy = cy + mi * x[1];
            ux = ux + mi * v[0];
            uy = uy + mi * v[1];
            held |= inv_mass[i] == 0.0;
        }
        double J = total - rolled[b];
        rolled[b] = total;
        if (held || !(J > 0.0) || !(M > 0.0)) continue;
        cx = cx / M;
        cy = cy / M;
        ux = ux / M;
        uy = uy / M;
        double L = 0.0, I = 0.0, lever = 0.0;
        for (int j = 0; j < m; j++) {
            long i = idx[j];
            const double *x = pos + i * dim, *v = vel + i * dim;
            double rx = x[0] - cx, ry = x[1] - cy;
            L = L + mass[i] * (rx * (v[1] - uy) - ry * (v[0] - ux));
            I = I + mass[i] * (rx * rx + ry * ry);
            lever = lever + contact_impulse[i] * sqrt(rx * rx + ry * ry);
        }
        if (!(I > 0.0) || L == 0.0) continue;
        double limit = coefficient[b] * J * (lever / total);
        double s = fabs(L) <= limit ? 1.0 : limit / fabs(L);
        double dw = -s * (L / I);
        for (int j = 0; j < m; j++) {
            long i = idx[j];
            double rx = pos[i * dim] - cx, ry = pos[i * dim + 1] - cy;
            vel[i * dim] += dw * -ry;
            vel[i * dim + 1] += dw * rx;
        }
    }
}
