/* integrate.c -- the integrate pass: advance positions and velocities by h.
 *
 * a = F * inv_mass. A particle with inv_mass == 0 is immovable: every kernel
 * here leaves its position and velocity untouched. Every kernel that moves
 * positions first records them in prev_pos (all rows): the collide pass
 * sweeps each particle from prev_pos to pos, so nothing tunnels.
 *
 * symplectic (semi-implicit) Euler, the default:  v += h a;  x += h v
 *     first order, but symplectic: energy of an undamped oscillator stays
 *     bounded (Hairer, Lubich, Wanner, "Geometric numerical integration").
 * explicit Euler:  x += h v;  v += h a      (energy grows; for comparison)
 * velocity Verlet, in two kernels around a second force evaluation:
 *     drift:  x += h v + (h^2/2) a0;   v_pred = v + h a0
 *     kick:   v += (h/2)(a0 + a1)      with a1 = a(x_new, v_pred)
 * classic RK4 on y = (x, v), y' = (v, a(x, v)), four force evaluations:
 *     stage:   x_out = x + c dx;  v_out = v + c a      (c = h/2, h/2, h)
 *     combine: x += (h/6)(v1 + 2 v2 + 2 v3 + v4);  v += (h/6)(a1 + 2a2 + 2a3 + a4)
 * XPBD predict / velocity update (Macklin, Mueller, Chentanez 2016;
 * Mueller et al. 2020, "Detailed rigid body simulation with XPBD"):
 *     predict:  p = x;  v += h a;  x += h v
 *     (constraints then move x)
 *     velocity: v = (x - p) / h - withheld
 *     where withheld is the velocity the constraints' caps kept back from their
 *     corrections this substep (constraints.c: a correction whose velocity
 *     change would pass PS_MAX_CORRECTION_SPEED moves the positions all the
 *     way and the velocities by a share f of it, one f for the whole
 *     correction). An incompressible body pressed by a kinematic plate has its
 *     constraints corrected by far more each substep than it moves, and
 *     v = (x - p) / h alone turned that into velocity without bound (a
 *     shape-matched XPBD box blew up 0.8 s into a press).
 *
 * Momentum: every kernel here changes a particle's momentum by h F only
 * (elementwise, so a force that sums to zero over a body moves the body's
 * momentum not at all). The XPBD velocity update changes the momentum by
 * sum_i m_i ((x_i - p_i) / h - withheld_i - v_i), which is zero to rounding:
 * the constraints' corrections keep momentum in positions and velocities
 * alike, and their withheld shares sum to zero per correction. (It used to
 * cap each particle's difference from the corrections' velocity on its own:
 * particles of one correction got different shares of it, and a body moved
 * 1.5 cm off its rest shape in zero gravity drifted away at 0.07 m/s.)
 *
 * Every kernel is elementwise: no accumulation across particles, so the
 * NumPy twins match bit for bit when they evaluate the same expressions.
 */
#include <math.h>
#include "internal.h"

#define ROWS(body)                                          \
    for (int i = 0; i < n; i++) {                           \
        if (inv_mass[i] == 0.0) continue;                   \
        double im = inv_mass[i]; (void)im;                  \
        for (int c = 0; c < dim; c++) {                     \
            long q = (long)i * dim + c;                     \
            body                                            \
        }                                                   \
    }

/* prev_pos = pos for every row (immovable ones included). */
static void record(double *prev_pos, const double *pos, int n, int dim)
{
    for (long q = 0; q < (long)n * dim; q++) prev_pos[q] = pos[q];
}

/* Symplectic Euler with no branch: an immovable row's new values are computed and thrown
 * away (ps_blend keeps the old bits), so the loop vectorises; the same bits as ROWS. */
PS_INLINE void symplectic_euler_impl(double *restrict pos, double *restrict vel,
                                     const double *restrict force,
                                     const double *restrict inv_mass, int n, int dim, double h)
{
    for (int i = 0; i < n; i++) {
        double im = inv_mass[i];
        uint64_t moves = (uint64_t)0 - (uint64_t)(im != 0.0);
        for (int c = 0; c < dim; c++) {
            long q = (long)i * dim + c;
            double v0 = vel[q], x0 = pos[q];
            double v1 = v0 + h * (force[q] * im);
            double x1 = x0 + h * v1;
            vel[q] = ps_blend(v1, v0, moves);
            pos[q] = ps_blend(x1, x0, moves);
        }
    }
}

#if defined(__AVX2__)
/* The x86-64-v3 build in 2D: two particles (four components) per iteration, recording
 * prev_pos in the same loop; symplectic_euler_impl's operations on each component, so the
 * same bits. Returns the first row it left to the scalar loop. */
static int symplectic_euler_2d_avx(double *restrict pos, double *restrict vel,
                                   double *restrict prev_pos, const double *restrict force,
                                   const double *restrict inv_mass, int n, double h)
{
    const __m256d hh = _mm256_set1_pd(h), zero = _mm256_setzero_pd();
    int i = 0;
    for (; i + 2 <= n; i += 2) {
        long q = 2L * i;
        /* [im_i, im_i, im_i+1, im_i+1] */
        __m256d im = _mm256_permute4x64_pd(_mm256_castpd128_pd256(_mm_loadu_pd(inv_mass + i)), 0x50);
        __m256d moves = _mm256_cmp_pd(im, zero, _CMP_NEQ_UQ);  /* im != 0.0, as ps_blend's mask */
        __m256d x0 = _mm256_loadu_pd(pos + q), v0 = _mm256_loadu_pd(vel + q);
        _mm256_storeu_pd(prev_pos + q, x0);
        __m256d v1 = _mm256_add_pd(v0, _mm256_mul_pd(hh, _mm256_mul_pd(_mm256_loadu_pd(force + q), im)));
        __m256d x1 = _mm256_add_pd(x0, _mm256_mul_pd(hh, v1));
        _mm256_storeu_pd(vel + q, _mm256_blendv_pd(v0, v1, moves));
        _mm256_storeu_pd(pos + q, _mm256_blendv_pd(x0, x1, moves));
    }
    return i;
}
#endif

void ps_symplectic_euler(double *pos, double *vel, double *prev_pos,
                         const double *force, const double *inv_mass,
                         int n, int dim, double h)
{
#if defined(__AVX2__)
    if (dim == 2) {
        int i = symplectic_euler_2d_avx(pos, vel, prev_pos, force, inv_mass, n, h);
        record(prev_pos + 2L * i, pos + 2L * i, n - i, 2);
        symplectic_euler_impl(pos + 2L * i, vel + 2L * i, force + 2L * i, inv_mass + i, n - i, 2, h);
        return;
    }
#endif
    record(prev_pos, pos, n, dim);
    if (dim == 2) symplectic_euler_impl(pos, vel, force, inv_mass, n, 2, h);
    else symplectic_euler_impl(pos, vel, force, inv_mass, n, 3, h);
}

void ps_explicit_euler(double *pos, double *vel, double *prev_pos,
                       const double *force, const double *inv_mass,
                       int n, int dim, double h)
{
    record(prev_pos, pos, n, dim);
    ROWS(pos[q] = pos[q] + h * vel[q];
         vel[q] = vel[q] + h * (force[q] * im);)
}

void ps_verlet_drift(double *pos, double *vel_pred, double *prev_pos,
                     const double *vel, const double *force,
                     const double *inv_mass, int n, int dim, double h)
{
    record(prev_pos, pos, n, dim);
    double hh = 0.5 * h * h;
    ROWS(double a = force[q] * im;
         pos[q] = pos[q] + h * vel[q] + hh * a;
         vel_pred[q] = vel[q] + h * a;)
}

void ps_verlet_kick(double *vel, const double *force0, const double *force1,
                    const double *inv_mass, int n, int dim, double h)
{
    double hh = 0.5 * h;
    ROWS(vel[q] = vel[q] + hh * (force0[q] * im + force1[q] * im);)
}

void ps_rk4_stage(double *pos_out, double *vel_out, const double *pos,
                  const double *vel, const double *dpos, const double *force,
                  const double *inv_mass, int n, int dim, double c_)
{
    /* Immovable rows are copied, so later stages see them where they are. */
    for (int i = 0; i < n; i++) {
        double im = inv_mass[i];
        for (int c = 0; c < dim; c++) {
            long q = (long)i * dim + c;
            if (im == 0.0) {
                pos_out[q] = pos[q];
                vel_out[q] = vel[q];
            } else {
                pos_out[q] = pos[q] + c_ * dpos[q];
                vel_out[q] = vel[q] + c_ * (force[q] * im);
            }
        }
    }
}

void ps_rk4_combine(double *pos, double *vel, double *prev_pos, const double *v1,
                    const double *v2, const double *v3, const double *v4,
                    const double *f1, const double *f2, const double *f3,
                    const double *f4, const double *inv_mass,
                    int n, int dim, double h)
{
    record(prev_pos, pos, n, dim);
    double h6 = h / 6.0;
    ROWS(pos[q] = pos[q] + h6 * (v1[q] + 2.0 * v2[q] + 2.0 * v3[q] + v4[q]);
         vel[q] = vel[q] + h6 * ((f1[q] + 2.0 * f2[q] + 2.0 * f3[q] + f4[q]) * im);)
}

void ps_xpbd_predict(double *pos, double *prev_pos, double *vel,
                     const double *force, const double *inv_mass,
                     int n, int dim, double h)
{
    /* The prediction is a symplectic Euler step that records prev_pos. */
    ps_symplectic_euler(pos, vel, prev_pos, force, inv_mass, n, dim, h);
}

void ps_xpbd_velocity(double *vel, const double *pos, const double *prev_pos,
                      const double *withheld, const double *inv_mass, int n, int dim, double h)
{
    double inv_h = 1.0 / h;
    ROWS(vel[q] = (pos[q] - prev_pos[q]) * inv_h - withheld[q];)
}
