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

#if defined(__AVX2__)
#include <immintrin.h>

/* [p[i], p[i + 1], p[j], p[j + 1]]: two rows of a 2D array (the x86-64-v3 build's kernels) */
PS_INLINE __m256d two_rows(const double *p, long i, long j)
{
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p + i)), _mm_loadu_pd(p + j), 1);
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

#endif /* PYSOFT_INTERNAL_H */
