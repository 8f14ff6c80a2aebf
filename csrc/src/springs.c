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
 * Area springs (ps_area_springs) hold a triangle's signed area (in 3D a
 * tetrahedron's signed volume: volume_springs below, the same law): for
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
 * spring: a, then b, then c). A spring too short to have an axis has
 * f = -0.0 (F_a keeps its bits; F_b -= -0.0 turns a -0.0 into 0.0). Sums
 * over components run left to right (x, y, z; the rate a, b, c, each x then
 * y). Compiled with -ffp-contract=off.
 *
 * The x86-64-v3 build in 2D computes four springs' forces per AVX2
 * iteration. On one thread it adds them to the particles at once, spring by
 * spring, end a then end b, as the scatter loop does. On several threads,
 * whose scatters would race, it makes two passes: pass 1 computes every
 * spring's force with no scatter, each thread a range of springs, and pass
 * 2 has each particle add its springs' forces from a list of them in spring
 * order (its incidence list, built by a counting sort when the springs
 * change), each thread a range of particles. Each particle receives the
 * same additions in the same order as in the scatter loop, so the bits are
 * the same on every build and thread count; the baseline build and 3D keep
 * the scalar scatter loop.
 */
#include <math.h>
#include "internal.h"

/* One spring's force on endpoint a (b receives -1 times it), component c at f[c];
 * dimension-generic. A spring too short to have an axis (or of NaN length) gives -0.0:
 * x + -0.0 is x bit for bit, so end a is left as it was. */
PS_INLINE void spring_force(double *f, const double *xa, const double *xb,
                            const double *va, const double *vb,
                            double rest, double k, double damp, int dim)
{
    double d[3], len2 = 0.0;
    for (int c = 0; c < dim; c++) {
        d[c] = xb[c] - xa[c];
        len2 = len2 + d[c] * d[c];
    }
    double len = sqrt(len2);
    if (!(len > PS_MIN_LENGTH)) {
        for (int c = 0; c < dim; c++) f[c] = -0.0;
        return;
    }
    double inv = 1.0 / len, vrel = 0.0;
    for (int c = 0; c < dim; c++) {
        d[c] = d[c] * inv;
        vrel = vrel + (vb[c] - va[c]) * d[c];
    }
    double s = k * (len - rest) + damp * vrel;
    for (int c = 0; c < dim; c++) f[c] = s * d[c];
}

#if defined(__AVX2__)

#define PS_SPRINGS_PER_THREAD 4096  /* the least springs in a part (ps_parts) */

/* The x86-64-v3 build's spring forces in 2D, four springs at a time: spring_force's arithmetic
 * in the same order (0.0 + dx dx + dy dy; the vector sqrt and divide round as the scalar ones),
 * so the same bits; stored as rows of f_out (pass 1), or, where `force` is not NULL, added to
 * it as the scatter loop adds them. Returns the first spring it left to the scalar loop. */
PS_INLINE int spring_forces_2d_avx(double *restrict f_out, double *force, const double *restrict pos,
                                    const double *restrict vel,
                                    const int32_t *restrict pairs, const double *restrict rest_length,
                                    const double *restrict stiffness,
                                    const double *restrict damping, int m)
{
    const __m256d zero = _mm256_setzero_pd(), dead = _mm256_set1_pd(-0.0);
    const __m256d min_length = _mm256_set1_pd(PS_MIN_LENGTH), one = _mm256_set1_pd(1.0);
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        const int32_t *pr = pairs + 2L * j;
        long a0 = 2L * pr[0], b0 = 2L * pr[1], a1 = 2L * pr[2], b1 = 2L * pr[3];
        long a2 = 2L * pr[4], b2 = 2L * pr[5], a3 = 2L * pr[6], b3 = 2L * pr[7];
        __m256d d02 = _mm256_sub_pd(two_rows(pos, b0, b2), two_rows(pos, a0, a2));
        __m256d d13 = _mm256_sub_pd(two_rows(pos, b1, b3), two_rows(pos, a1, a3));
        __m256d w02 = _mm256_sub_pd(two_rows(vel, b0, b2), two_rows(vel, a0, a2));
        __m256d w13 = _mm256_sub_pd(two_rows(vel, b1, b3), two_rows(vel, a1, a3));
        __m256d dx = _mm256_unpacklo_pd(d02, d13), dy = _mm256_unpackhi_pd(d02, d13);
        __m256d wx = _mm256_unpacklo_pd(w02, w13), wy = _mm256_unpackhi_pd(w02, w13);
        /* 0.0 + dx dx is dx dx, bit for bit (a square is +0.0, positive, inf or NaN) */
        __m256d len2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
        __m256d len = _mm256_sqrt_pd(len2);
        __m256d inv = _mm256_div_pd(one, len);
        __m256d ux = _mm256_mul_pd(dx, inv), uy = _mm256_mul_pd(dy, inv);
        __m256d vrel = _mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(wx, ux)), _mm256_mul_pd(wy, uy));
        __m256d s = _mm256_add_pd(
            _mm256_mul_pd(_mm256_loadu_pd(stiffness + j), _mm256_sub_pd(len, _mm256_loadu_pd(rest_length + j))),
            _mm256_mul_pd(_mm256_loadu_pd(damping + j), vrel));
        __m256d live = _mm256_cmp_pd(len, min_length, _CMP_GT_OQ);  /* false for NaN */
        __m256d fx = _mm256_blendv_pd(dead, _mm256_mul_pd(s, ux), live);
        __m256d fy = _mm256_blendv_pd(dead, _mm256_mul_pd(s, uy), live);
        __m256d lo = _mm256_unpacklo_pd(fx, fy), hi = _mm256_unpackhi_pd(fx, fy);
        if (force) { /* spring order, end a then end b: the scatter loop's additions */
            __m128d r[4] = {_mm256_castpd256_pd128(lo), _mm256_castpd256_pd128(hi),
                            _mm256_extractf128_pd(lo, 1), _mm256_extractf128_pd(hi, 1)};
            long ab[8] = {a0, b0, a1, b1, a2, b2, a3, b3};
            for (int q = 0; q < 4; q++) {
                _mm_storeu_pd(force + ab[2 * q], _mm_add_pd(_mm_loadu_pd(force + ab[2 * q]), r[q]));
                _mm_storeu_pd(force + ab[2 * q + 1], _mm_sub_pd(_mm_loadu_pd(force + ab[2 * q + 1]), r[q]));
            }
            continue;
        }
        /* lo = [x0 y0 x2 y2], hi = [x1 y1 x3 y3]: stored as rows (x0 y0 x1 y1 x2 y2 x3 y3) */
        _mm256_storeu_pd(f_out + 2L * j, _mm256_permute2f128_pd(lo, hi, 0x20));
        _mm256_storeu_pd(f_out + 2L * j + 4, _mm256_permute2f128_pd(lo, hi, 0x31));
    }
    return j;
}

/* The incidence lists: for each particle, its springs' ends in increasing spring order,
 * particle i's in incidence[end[i - 1] .. end[i]) (end[-1] = 0). An entry is 16 j + 8 end
 * (end 0 for a, 1 for b): the byte offset of spring j's force row in pass 2's f, plus half the
 * byte offset of its factor in `sign`, so pass 2 finds both with two masks and no shifts (the
 * spring pass's time 0.59x the reference's spring loop, against 0.65x with entries 2 j + end:
 * 2026-11-26, 10k and 100k). MAX_SPRINGS (2^25) keeps 16 j within an int32.
 * A counting sort: count, sum, then fill backwards (each end[i] counts down to the start of
 * its list), then shift the starts into ends. */
static void build_incidence(int32_t *restrict end, int32_t *restrict incidence,
                            const int32_t *restrict pairs, int m, int n)
{
    memset(end, 0, (size_t)n * sizeof *end);
    for (long e = 0; e < 2L * m; e++) end[pairs[e]]++;
    int32_t total = 0;
    for (int i = 0; i < n; i++) {
        total += end[i];
        end[i] = total;
    }
    for (long e = 2L * m - 1; e >= 0; e--)
        incidence[--end[pairs[e]]] = (int32_t)(16 * (e >> 1) + 8 * (e & 1));
    for (int i = 0; i + 1 < n; i++) end[i] = end[i + 1];
    if (n) end[n - 1] = total;
}

/* The two passes in 2D over the arrays of `task`, split into parts (threads): pass 1 by
 * springs, then pass 2 by particles. Pass 1: every spring's force into f (row j: x at
 * f[2 j], y at f[2 j + 1], so pass 2 loads both in one), no scatter. Pass 2: each particle
 * adds its springs' forces in spring order, +f at end a and -1 * f at end b (the bits of
 * subtracting f), starting from its force as it was: the additions the scatter loop makes,
 * in its order. */
typedef struct {
    double *force, *f;
    const double *pos, *vel, *rest_length, *stiffness, *damping;
    const int32_t *pairs, *end, *incidence;
    int m, n;
} SpringPass;

static void spring_forces_2d(void *args, int part, int parts)
{
    const SpringPass *t = args;
    int j = ps_part_start(t->m, part, parts), stop = ps_part_start(t->m, part + 1, parts);
    const int32_t *pairs = t->pairs;
    j += spring_forces_2d_avx(t->f + 2L * j, NULL, t->pos, t->vel, pairs + 2L * j, t->rest_length + j,
                              t->stiffness + j, t->damping + j, stop - j);
    for (; j < stop; j++) {
        long a = 2L * pairs[2 * j], b = 2L * pairs[2 * j + 1];
        spring_force(t->f + 2L * j, t->pos + a, t->pos + b, t->vel + a, t->vel + b,
                     t->rest_length[j], t->stiffness[j], t->damping[j], 2);
    }
}

static void spring_sums_2d(void *args, int part, int parts)
{
    const SpringPass *t = args;
    static const double sign[4] = {1.0, 1.0, -1.0, -1.0};  /* end a: +f; end b: -1 * f */
    const int32_t *restrict end = t->end, *restrict incidence = t->incidence;
    const double *restrict f = t->f;
    double *restrict force = t->force;
    int i = ps_part_start(t->n, part, parts), stop = ps_part_start(t->n, part + 1, parts);
    int e = i ? end[i - 1] : 0;
    for (; i < stop; i++) {  /* x and y in the two lanes: the scalar additions, side by side */
        __m128d sum = _mm_loadu_pd(force + 2L * i);
        for (; e < end[i]; e++) {
            long q = incidence[e];  /* 16 j + 8 end */
            const double *fj = (const double *)((const char *)f + (q & ~15L));
            const double *sj = (const double *)((const char *)sign + 2 * (q & 15));
            sum = _mm_add_pd(sum, _mm_mul_pd(_mm_loadu_pd(sj), _mm_loadu_pd(fj)));
        }
        _mm_storeu_pd(force + 2L * i, sum);
    }
}
#endif

/* One pass, scattering as it goes (the baseline build, and 3D). */
PS_INLINE void spring_scatter(double *restrict force, const double *restrict pos,
                              const double *restrict vel, const int32_t *restrict pairs,
                              const double *restrict rest_length,
                              const double *restrict stiffness, const double *restrict damping,
                              int m, int dim)
{
    double f[3];
    for (int j = 0; j < m; j++) {
        long a = (long)dim * pairs[2 * j], b = (long)dim * pairs[2 * j + 1];
        spring_force(f, pos + a, pos + b, vel + a, vel + b, rest_length[j], stiffness[j],
                     damping[j], dim);
        for (int c = 0; c < dim; c++) force[a + c] += f[c];
        for (int c = 0; c < dim; c++) force[b + c] -= f[c];
    }
}

void ps_springs(double *force, const double *pos, const double *vel,
                const int32_t *pairs, const double *rest_length,
                const double *stiffness, const double *damping, int32_t *spring_end,
                int32_t *incidence, double *spring_force, int32_t *incidence_state,
                int m, int dim, int n, int threads)
{
#if defined(__AVX2__)
    if (dim == 2 && ps_parts(threads, m, PS_SPRINGS_PER_THREAD) == 1) { /* one thread: one pass */
        int j = spring_forces_2d_avx(NULL, force, pos, vel, pairs, rest_length, stiffness, damping, m);
        spring_scatter(force, pos, vel, pairs + 2L * j, rest_length + j, stiffness + j, damping + j, m - j, 2);
        return;
    }
    if (dim == 2) {
        if (!incidence_state[0] || incidence_state[1] != m || incidence_state[2] != n) {
            build_incidence(spring_end, incidence, pairs, m, n);
            incidence_state[0] = 1, incidence_state[1] = m, incidence_state[2] = n;
        }
        SpringPass task = {force, spring_force, pos, vel, rest_length, stiffness, damping, pairs,
                           spring_end, incidence, m, n};
        int parts = ps_pool_run(spring_forces_2d, &task, ps_parts(threads, m, PS_SPRINGS_PER_THREAD));
        ps_pool_run(spring_sums_2d, &task, parts);
        return;
    }
#else
    (void)spring_end, (void)incidence, (void)spring_force, (void)incidence_state, (void)n,
        (void)threads;
#endif
    if (dim == 2)  /* a constant dim: the loops unrolled */
        spring_scatter(force, pos, vel, pairs, rest_length, stiffness, damping, m, 2);
    else
        spring_scatter(force, pos, vel, pairs, rest_length, stiffness, damping, m, 3);
}

/* Volume springs (3D area springs): tetrahedron j's signed volume V and its gradient g_i at
 * each corner (ps_simplex), s = -(k (V - V0) + c dV/dt) with dV/dt = sum_i g_i . v_i (corners
 * in order, each x, y, z), and once inside out (V < 0) s -= PS_INVERSION_GAIN k V; where
 * G = sum_i |g_i|^2 (the same order) exceeds cap = PS_VOLUME_STIFFENING x G0 (G0 its rest
 * shape's, rest_gradient), s *= cap / G: the spring stiffens with its faces up to the cap
 * and no further. F_i += s g_i for the corners in order. */
static void volume_springs(double *force, const double *pos, const double *vel,
                           const int32_t *tets, const double *rest_volume,
                           const double *rest_gradient, const double *stiffness,
                           const double *damping, int m)
{
    for (int j = 0; j < m; j++) {
        const int32_t *t = tets + 4L * j;
        double g[4][3];
        double volume = ps_simplex(g, pos, t, 3);
        double rate = 0.0;
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 3; c++) rate = rate + g[i][c] * vel[3L * t[i] + c];
        double s = -(stiffness[j] * (volume - rest_volume[j]) + damping[j] * rate);
        if (volume < 0.0) s = s - PS_INVERSION_GAIN * stiffness[j] * volume;
        double G = 0.0, cap = PS_VOLUME_STIFFENING * rest_gradient[j];
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 3; c++) G = G + g[i][c] * g[i][c];
        if (G > cap) s = s * (cap / G);
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 3; c++) force[3L * t[i] + c] += s * g[i][c];
    }
}

void ps_area_springs(double *force, const double *pos, const double *vel,
                     const int32_t *triangles, const double *rest_area,
                     const double *rest_gradient, const double *stiffness,
                     const double *damping, int m, int dim)
{
    if (dim == 3) {
        volume_springs(force, pos, vel, triangles, rest_area, rest_gradient, stiffness, damping, m);
        return;
    }
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

/* Muscles: a spring whose muscle_length is >= 0 has the rest length muscle_length x its
 * activation, the activation clamped to [low, high] (NaN to low); the others are left alone. */
void ps_muscles(double *rest_length, const double *muscle_length, const double *activation,
                int m, double low, double high)
{
    for (int j = 0; j < m; j++) {
        double base = muscle_length[j];
        if (!(base >= 0.0)) continue;
        double a = activation[j];
        if (!(a >= low)) a = low;
        if (a > high) a = high;
        rest_length[j] = base * a;
    }
}
