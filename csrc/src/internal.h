/* internal.h -- helpers and constants shared by the C files of the core.
 *
 * The constants are defined once, in pysoft/_constants.py; pysoft/_build.py
 * hands them to the compiler as macros (-DPS_MIN_LENGTH=... and so on), so
 * the C core and the NumPy twins can never disagree about them:
 *
 *   PS_MIN_LENGTH   below this length a spring, constraint or normal has no
 *                   direction and exerts nothing (coincident points never
 *                   produce NaN);
 *   PS_POLYTOPE, PS_CAPSULE   the collider kind codes of collide.c;
 *   PS_EDGE_SLACK   how far (a fraction of the edge) a collider's corner may have
 *                   been inside an outline edge's line at the substep's start and
 *                   still be that edge's contact (edges.c);
 *   PS_EDGE_LEVER   the most an outline edge's end moves per unit of its
 *                   contact point's move (edges.c);
 *   PS_SWEEP_SLOP   how far inside a polytope face a substep's start may be and
 *                   still count as outside it for the swept test (collide.c);
 *   PS_MAX_PUSHOUT_SPEED   how fast a collider pushes out a particle that began
 *                   the substep inside it (collide.c);
 *   PS_MAX_CORRECTION_SPEED   the most velocity one XPBD correction gives a
 *                   particle (constraints.c);
 *   PS_INVERSION_GAIN   how much harder an area spring pushes its triangle back
 *                   once it is inside out (springs.c);
 *   PS_UNMIRROR_STIFFNESS   the least shape-matching stiffness of a body that
 *                   fits a mirror image of its rest shape (bodies.c);
 *   PS_UNMIRROR_GAIN   ... and the least multiple of its own stiffness (bodies.c);
 *   PS_JACOBI_SWEEPS   sweeps of the Jacobi method behind a 3D body's best-fit
 *                   rotation (bodies.c);
 *   PS_CELL_LIMIT   |spatial hash cell coordinates| are clamped here (contacts.c);
 *   PS_MAX_THREADS  the most parts a pass may split its loop into (pool.c).
 */
#ifndef PYSOFT_INTERNAL_H
#define PYSOFT_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pysoft.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#if !defined(PS_MIN_LENGTH) || !defined(PS_POLYTOPE) || !defined(PS_CAPSULE) \
    || !defined(PS_EDGE_SLACK) || !defined(PS_EDGE_LEVER) || !defined(PS_SWEEP_SLOP) \
    || !defined(PS_MAX_PUSHOUT_SPEED) \
    || !defined(PS_MAX_CORRECTION_SPEED) || !defined(PS_INVERSION_GAIN) \
    || !defined(PS_UNMIRROR_STIFFNESS) || !defined(PS_UNMIRROR_GAIN) || !defined(PS_JACOBI_SWEEPS) || !defined(PS_CELL_LIMIT) \
    || !defined(PS_MAX_THREADS)
#error "build the core through pysoft/_build.py: it defines the shared constants"
#endif

#if defined(__GNUC__)
#define PS_INLINE static inline __attribute__((always_inline))
#else
#define PS_INLINE static inline
#endif

/* a where mask is all ones, b where it is all zeros, bit for bit (no branch, so a loop of
 * these vectorises; a select of doubles would be turned into a conditional store). */
PS_INLINE double ps_blend(double a, double b, uint64_t mask)
{
    uint64_t ba, bb;
    memcpy(&ba, &a, sizeof ba);
    memcpy(&bb, &b, sizeof bb);
    ba = (ba & mask) | (bb & ~mask);
    memcpy(&a, &ba, sizeof a);
    return a;
}

/* Dot product summed left to right (x, y, z): the order the twins follow. */
PS_INLINE double ps_dot(const double *a, const double *b, int dim)
{
    double s = 0.0;
    for (int c = 0; c < dim; c++) s = s + a[c] * b[c];
    return s;
}

/* A 2D body's best-fit rigid motion (shape matching's, bodies.c): of members x_i = pos[rows[i]]
 * with velocities v_i and rest offsets q_i, their mean c and mean velocity u, the best-fit
 * rotation (cos, sin) of the q_i onto r_i = x_i - c (cos = D / L, sin = S / L, L = sqrt(D^2 +
 * S^2), D = sum q_i . r_i, S = sum q_i x r_i; L = 0 gives the identity), the best-fit spin
 * w = sum r_i x (v_i - u) / sum |r_i|^2 (0 without extent), and whether a reflection fits
 * better (the members' best linear fit has det < 0: sqrt(E^2 + T^2) > L, E = sum q_x r_x -
 * q_y r_y, T = sum q_y r_x + q_x r_y). Sums in member order, from 0.0; count > 0. */
typedef struct {
    double cx, cy, ux, uy, co, si, w;
    int mirrored;
} ps_fit;

PS_INLINE ps_fit ps_rigid_fit(const double *pos, const double *vel, const int32_t *rows,
                              const double *q, int count)
{
    ps_fit f;
    double cx = 0.0, cy = 0.0, ux = 0.0, uy = 0.0;
    for (int j = 0; j < count; j++) {
        const double *x = pos + 2L * rows[j], *v = vel + 2L * rows[j];
        cx = cx + x[0];
        cy = cy + x[1];
        ux = ux + v[0];
        uy = uy + v[1];
    }
    f.cx = cx = cx / count;
    f.cy = cy = cy / count;
    f.ux = ux = ux / count;
    f.uy = uy = uy / count;
    double D = 0.0, S = 0.0, E = 0.0, T = 0.0, L = 0.0, rr = 0.0;
    for (int j = 0; j < count; j++) {
        const double *x = pos + 2L * rows[j], *v = vel + 2L * rows[j];
        double rx = x[0] - cx, ry = x[1] - cy;
        D = D + (q[2 * j] * rx + q[2 * j + 1] * ry);
        S = S + (q[2 * j] * ry - q[2 * j + 1] * rx);
        E = E + (q[2 * j] * rx - q[2 * j + 1] * ry);
        T = T + (q[2 * j + 1] * rx + q[2 * j] * ry);
        L = L + (rx * (v[1] - uy) - ry * (v[0] - ux));
        rr = rr + (rx * rx + ry * ry);
    }
    double len = sqrt(D * D + S * S);
    f.co = 1.0, f.si = 0.0;
    if (len > 0.0) {
        f.co = D / len;
        f.si = S / len;
    }
    f.w = rr > 0.0 ? L / rr : 0.0;
    f.mirrored = D * D + S * S < E * E + T * T;
    return f;
}

/* A simplex's signed measure (2D: a triangle's area; 3D: a tetrahedron's volume, 1/6 of
 * e1 . (e2 x e3)) and its gradient with respect to each corner, g[i] (constraints.c's
 * volume constraints, springs.c's area and volume springs). */
PS_INLINE double ps_simplex(double g[4][3], const double *pos, const int32_t *s, int dim)
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

/* One Jacobi rotation of the symmetric 4 x 4 A zeroing A[p][q], accumulated into V's
 * columns (Numerical Recipes' jacobi: theta = (a_qq - a_pp) / 2 a_pq, t = sgn(theta) /
 * (|theta| + sqrt(theta^2 + 1)), c = 1 / sqrt(t^2 + 1), s = t c). A theta whose square
 * overflows gives t = 0: the rotation is the identity (a_pq is then negligible). */
PS_INLINE void ps_jacobi_rotate(double A[4][4], double V[4][4], int p, int q)
{
    double apq = A[p][q];
    if (apq == 0.0) return;
    double theta = (A[q][q] - A[p][p]) / (2.0 * apq);
    double t = 1.0 / (fabs(theta) + sqrt(theta * theta + 1.0));
    if (theta < 0.0) t = -t;
    double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
    for (int k = 0; k < 4; k++) {
        if (k == p || k == q) continue;
        double akp = A[k][p], akq = A[k][q];
        A[k][p] = A[p][k] = c * akp - s * akq;
        A[k][q] = A[q][k] = s * akp + c * akq;
    }
    double app = A[p][p], aqq = A[q][q];
    A[p][p] = app - t * apq;
    A[q][q] = aqq + t * apq;
    A[p][q] = A[q][p] = 0.0;
    for (int k = 0; k < 4; k++) {
        double vkp = V[k][p], vkq = V[k][q];
        V[k][p] = c * vkp - s * vkq;
        V[k][q] = s * vkp + c * vkq;
    }
}

/* The rotation R (row-major) best taking rest offsets q to offsets r, from S[a][b] = sum
 * q_a r_b: Horn's quaternion method (bodies.c's header says why). */
PS_INLINE void ps_best_rotation(double R[9], const double S[3][3])
{
    double xx = S[0][0], xy = S[0][1], xz = S[0][2], yx = S[1][0], yy = S[1][1], yz = S[1][2];
    double zx = S[2][0], zy = S[2][1], zz = S[2][2];
    double A[4][4] = {{xx + yy + zz, yz - zy, zx - xz, xy - yx},
                      {yz - zy, xx - yy - zz, xy + yx, zx + xz},
                      {zx - xz, xy + yx, -xx + yy - zz, yz + zy},
                      {xy - yx, zx + xz, yz + zy, -xx - yy + zz}};
    double V[4][4] = {{1.0, 0.0, 0.0, 0.0}, {0.0, 1.0, 0.0, 0.0}, {0.0, 0.0, 1.0, 0.0},
                      {0.0, 0.0, 0.0, 1.0}};
    for (int sweep = 0; sweep < PS_JACOBI_SWEEPS; sweep++)
        for (int p = 0; p < 3; p++)
            for (int q = p + 1; q < 4; q++) ps_jacobi_rotate(A, V, p, q);
    int k = 0;
    for (int j = 1; j < 4; j++)
        if (A[j][j] > A[k][k]) k = j;
    double w = V[0][k], x = V[1][k], y = V[2][k], z = V[3][k];
    double n = ((w * w + x * x) + y * y) + z * z;  /* 1 up to rounding */
    double ww = w * w / n, xx2 = x * x / n, yy2 = y * y / n, zz2 = z * z / n;
    double wx = 2.0 * (w * x) / n, wy = 2.0 * (w * y) / n, wz = 2.0 * (w * z) / n;
    double xy2 = 2.0 * (x * y) / n, xz2 = 2.0 * (x * z) / n, yz2 = 2.0 * (y * z) / n;
    R[0] = ((ww + xx2) - yy2) - zz2, R[1] = xy2 - wz, R[2] = xz2 + wy;
    R[3] = xy2 + wz, R[4] = ((ww - xx2) + yy2) - zz2, R[5] = yz2 - wx;
    R[6] = xz2 - wy, R[7] = yz2 + wx, R[8] = ((ww - xx2) - yy2) + zz2;
}



/* w with I w = L, I the symmetric 3x3 inertia (I00, I11, I22 on the diagonal; I01, I02, I12
 * off it), by I's adjugate; members on a line (I nearly singular): w = 2 L / tr I. 0 with w
 * left as it was if tr I <= 0 (no extent), else 1. */
PS_INLINE int ps_inertia_solve(double w[3], const double L[3], double I00, double I11, double I22,
                               double I01, double I02, double I12)
{
    double a00 = I11 * I22 - I12 * I12, a01 = I02 * I12 - I01 * I22, a02 = I01 * I12 - I02 * I11;
    double a11 = I00 * I22 - I02 * I02, a12 = I02 * I01 - I00 * I12, a22 = I00 * I11 - I01 * I01;
    double detI = (I00 * a00 + I01 * a01) + I02 * a02;
    double tr = (I00 + I11) + I22, third = tr / 3.0;
    if (detI > 1e-12 * (third * third * third)) {
        w[0] = ((a00 * L[0] + a01 * L[1]) + a02 * L[2]) / detI;
        w[1] = ((a01 * L[0] + a11 * L[1]) + a12 * L[2]) / detI;
        w[2] = ((a02 * L[0] + a12 * L[1]) + a22 * L[2]) / detI;
        return 1;
    }
    if (!(tr > 0.0)) return 0;
    for (int a = 0; a < 3; a++) w[a] = 2.0 * L[a] / tr;
    return 1;
}

/* A 3D body's best-fit rigid motion (bodies.c's header): the members' mean position c and
 * velocity u, the rotation R best taking rest offsets q to r_i = x_i - c (Horn; only if
 * `rotation`, else left to ps_best_rotation(f.R, f.S) when needed), the spin w solving
 * I w = sum r_i x (v_i - u) with I = sum |r_i|^2 1 - r_i r_i^T (by its adjugate; members on a
 * line: w = 2 L / tr I), and det S (S = sum q_i r_i^T; < 0: mirrored). Sums in member order. */
typedef struct {
    double c[3], u[3], R[9], w[3], det, S[3][3];
} ps_fit3;

PS_INLINE ps_fit3 ps_rigid_fit3(const double *pos, const double *vel, const int32_t *idx,
                                const double *q, int m, int rotation)
{
    ps_fit3 f;
    double *c = f.c, *u = f.u, *w = f.w;
    for (int a = 0; a < 3; a++) c[a] = 0.0, u[a] = 0.0, w[a] = 0.0;
    double (*S)[3] = f.S, L[3] = {0.0, 0.0, 0.0}, I[3][3] = {{0.0}};
    for (int a = 0; a < 3; a++)
        for (int e = 0; e < 3; e++) S[a][e] = 0.0;
#if defined(__AVX2__)
    /* the sums below with the three axes as vector lanes (lane 3 unused): each lane does the
     * scalar loop's operations in its order, so the same bits */
    const __m256i xyz = _mm256_set_epi64x(0, -1, -1, -1);
    __m256d cs = _mm256_setzero_pd(), us = _mm256_setzero_pd();
    for (int j = 0; j < m; j++) {
        cs = _mm256_add_pd(cs, _mm256_maskload_pd(pos + 3L * idx[j], xyz));
        us = _mm256_add_pd(us, _mm256_maskload_pd(vel + 3L * idx[j], xyz));
    }
    double cu[2][4];
    _mm256_storeu_pd(cu[0], cs);
    _mm256_storeu_pd(cu[1], us);
    for (int a = 0; a < 3; a++) {
        c[a] = cu[0][a] / m;
        u[a] = cu[1][a] / m;
    }
    const __m256d cv = _mm256_set_pd(0.0, c[2], c[1], c[0]), uv = _mm256_set_pd(0.0, u[2], u[1], u[0]);
    __m256d Sv[3] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    __m256d Iv[3] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    __m256d Lv = _mm256_setzero_pd();
    for (int j = 0; j < m; j++) {
        const double *qj = q + 3L * j;
        __m256d r = _mm256_sub_pd(_mm256_maskload_pd(pos + 3L * idx[j], xyz), cv);
        __m256d g = _mm256_sub_pd(_mm256_maskload_pd(vel + 3L * idx[j], xyz), uv);
        /* (r1 g2 - r2 g1, r2 g0 - r0 g2, r0 g1 - r1 g0) */
        __m256d r_yzx = _mm256_permute4x64_pd(r, 0xC9), r_zxy = _mm256_permute4x64_pd(r, 0xD2);
        __m256d g_yzx = _mm256_permute4x64_pd(g, 0xC9), g_zxy = _mm256_permute4x64_pd(g, 0xD2);
        Lv = _mm256_add_pd(Lv, _mm256_sub_pd(_mm256_mul_pd(r_yzx, g_zxy), _mm256_mul_pd(r_zxy, g_yzx)));
        double sq[4];
        _mm256_storeu_pd(sq, _mm256_mul_pd(r, r));
        double rr = (sq[0] + sq[1]) + sq[2];
        const __m256d rs[3] = {_mm256_permute4x64_pd(r, 0x00), _mm256_permute4x64_pd(r, 0x55),
                               _mm256_permute4x64_pd(r, 0xAA)};  /* r[a] in every lane */
        for (int a = 0; a < 3; a++) {
            __m256d ra = rs[a];
            Sv[a] = _mm256_add_pd(Sv[a], _mm256_mul_pd(_mm256_set1_pd(qj[a]), r));
            __m256d diag = _mm256_set_pd(0.0, a == 2 ? rr : 0.0, a == 1 ? rr : 0.0, a == 0 ? rr : 0.0);
            Iv[a] = _mm256_add_pd(Iv[a], _mm256_sub_pd(diag, _mm256_mul_pd(ra, r)));
        }
    }
    double out[7][4];
    for (int a = 0; a < 3; a++) {
        _mm256_storeu_pd(out[a], Sv[a]);
        _mm256_storeu_pd(out[3 + a], Iv[a]);
    }
    _mm256_storeu_pd(out[6], Lv);
    for (int a = 0; a < 3; a++) {
        L[a] = out[6][a];
        for (int e = 0; e < 3; e++) S[a][e] = out[a][e], I[a][e] = out[3 + a][e];
    }
#else
    for (int j = 0; j < m; j++)
        for (int a = 0; a < 3; a++) {
            c[a] = c[a] + pos[3L * idx[j] + a];
            u[a] = u[a] + vel[3L * idx[j] + a];
        }
    for (int a = 0; a < 3; a++) {
        c[a] = c[a] / m;
        u[a] = u[a] / m;
    }
    for (int j = 0; j < m; j++) {
        const double *x = pos + 3L * idx[j], *v = vel + 3L * idx[j], *qj = q + 3L * j;
        double r[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
        double g[3] = {v[0] - u[0], v[1] - u[1], v[2] - u[2]};
        for (int a = 0; a < 3; a++)
            for (int e = 0; e < 3; e++) S[a][e] = S[a][e] + qj[a] * r[e];
        L[0] = L[0] + (r[1] * g[2] - r[2] * g[1]);
        L[1] = L[1] + (r[2] * g[0] - r[0] * g[2]);
        L[2] = L[2] + (r[0] * g[1] - r[1] * g[0]);
        double rr = (r[0] * r[0] + r[1] * r[1]) + r[2] * r[2];
        for (int a = 0; a < 3; a++)
            for (int e = 0; e < 3; e++) I[a][e] = I[a][e] + ((a == e ? rr : 0.0) - r[a] * r[e]);
    }
#endif
    if (rotation)
        ps_best_rotation(f.R, (const double (*)[3])S);
    else
        for (int a = 0; a < 9; a++) f.R[a] = a % 4 == 0 ? 1.0 : 0.0;  /* (not fitted) */
    f.det = S[0][0] * (S[1][1] * S[2][2] - S[1][2] * S[2][1])
            - S[0][1] * (S[1][0] * S[2][2] - S[1][2] * S[2][0])
            + S[0][2] * (S[1][0] * S[2][1] - S[1][1] * S[2][0]);
    ps_inertia_solve(w, L, I[0][0], I[1][1], I[2][2], I[0][1], I[0][2], I[1][2]);  /* (I symmetric) */
    return f;
}

#if defined(__AVX2__)

/* [p[i], p[i + 1], p[j], p[j + 1]]: two rows of a 2D array (the x86-64-v3 build's kernels) */
PS_INLINE __m256d two_rows(const double *p, long i, long j)
{
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p + i)), _mm_loadu_pd(p + j), 1);
}

/* The x, y and z of four rows of a 3D array (rows r[0..3], each three doubles from p + 3 r):
 * masked loads (nothing read past a row) and a transpose. */
PS_INLINE void three_rows4(const double *p, const long r[4], __m256d *x, __m256d *y, __m256d *z)
{
    const __m256i m = _mm256_set_epi64x(0, -1, -1, -1);
    __m256d r0 = _mm256_maskload_pd(p + 3 * r[0], m), r1 = _mm256_maskload_pd(p + 3 * r[1], m);
    __m256d r2 = _mm256_maskload_pd(p + 3 * r[2], m), r3 = _mm256_maskload_pd(p + 3 * r[3], m);
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    *x = _mm256_permute2f128_pd(t0, t2, 0x20);
    *y = _mm256_permute2f128_pd(t1, t3, 0x20);
    *z = _mm256_permute2f128_pd(t0, t2, 0x31);
}

/* p[i], p[i + 1] := v[0], v[1] and p[j], p[j + 1] := v[2], v[3] (two_rows' inverse) */
PS_INLINE void store_two_rows(double *p, long i, long j, __m256d v)
{
    _mm_storeu_pd(p + i, _mm256_castpd256_pd128(v));
    _mm_storeu_pd(p + j, _mm256_extractf128_pd(v, 1));
}
#endif

/* pool.c: a pass split over worker threads (see there). fn(args, part, parts) runs once for
 * each part 0 .. parts-1 (fewer parts than asked if threads cannot be started: each pass
 * splits by the parts it is given); returns the parts used. ps_parts: how many parts of
 * `rows` rows to ask for with `threads` threads, each of at least `least` rows (a smaller
 * part is not worth a thread's wake-up). */
typedef void (*ps_part_fn)(void *args, int part, int parts);
int ps_pool_run(ps_part_fn fn, void *args, int parts);
int ps_parts(int threads, int rows, int least);
int ps_part_start(int count, int part, int parts);

/* contacts3d.c: ps_body_contacts for a 3D world (the same arguments, less dim). */
int ps_body_contacts_3d(double *pos, double *vel, int32_t *contact_body, double *contact_point,
                        double *contact_normal, double *contact_impulse, double *snap,
                        double *aabb, int32_t *bucket_start, int32_t *bucket_body,
                        int32_t *cell_start, int32_t *cell_particle, int32_t *near,
                        double *edge, double *fat_pos, int32_t *fat_first, int32_t *fat_count, int32_t *fat_body,
                        double *fat_state, double *fat_clear, double *fat_kept, double *fat_drift,
                        double *reacted, double *left_pos,
                        const double *prev_pos, const double *support,
                        const double *radius, const double *inv_mass,
                        const int32_t *owner, const int32_t *category, const int32_t *mask,
                        const double *friction, const double *restitution, const double *rest_pos,
                        const int32_t *outline, const int32_t *outline_start,
                        const int32_t *outline_count, const int32_t *member,
                        const int32_t *member_start, const int32_t *member_count,
                        const int32_t *body_flags, const int32_t *body_category,
                        const int32_t *body_mask, const double *body_friction,
                        const double *body_restitution, int n, int nb, int nbuckets,
                        int nentries, int npairs, int iterations, int particle_collisions,
                        double h, double rest_speed);

#endif /* PYSOFT_INTERNAL_H */
