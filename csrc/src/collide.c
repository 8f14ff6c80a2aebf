/* collide.c -- the collide pass: particles against colliders.
 *
 * This file keeps particles out of the colliders. The pass goes on in
 * edges.c, which keeps the colliders' corners and capsule ends out of the
 * outline edges (2D) and surface triangles (3D) of closed bodies (an obstacle
 * smaller than the particle spacing cannot slip between their particles), and
 * in contacts.c (bodies against bodies).
 *
 * A collider is a pose (centre c, rotation R, row-major dim x dim, world =
 * R local + c) and a shape in its own frame, one of two kinds:
 *
 *   PS_POLYTOPE  the intersection of half-spaces n_f . y <= o_f (local y):
 *                Plane (1 face), Box (4 or 6), convex Polygon (one per edge);
 *   PS_CAPSULE   the points within radius R of the segment [a, b]:
 *                Disc and Sphere (a == b) and Segment (terrain pieces).
 *
 * A particle of radius r is tested against the shape grown by r (polytope
 * faces pushed out by r: a sharp-cornered approximation of the rounded
 * Minkowski sum, r larger than it at most by r(sqrt(dim) - 1) at corners).
 *
 * Finding the contact of particle i with collider j, in j's frame, from the
 * substep's start p (prev_pos) to its position x:
 *   - swept: if the centre's path p -> x enters the core shape (not grown:
 *     Cyrus-Beck clipping for polytopes, the first root of |y(t) - axis| = R
 *     for capsules), the contact is on the entry surface, so a fast particle
 *     never passes through a thin box, segment or plane;
 *   - else static: if x is inside the grown shape, the contact is on its
 *     nearest surface (the shallowest face of a polytope). A particle sliding
 *     along a surface only ever touches neighbouring shapes' grown skins, so
 *     the seam between two touching boxes does not snag it;
 *   depth = how far x must move along the contact normal to reach that
 *   surface's grown tangent plane.
 * Before any of that, two broad-phase culls that never skip a contact: a still
 * plane (among the first PS_FAST_PLANES colliders) is skipped when p and x both
 * lie above it in the world frame, x by more than r (its world normal and offset
 * are computed once per call: no frame change per particle); any other collider
 * is skipped when x is farther from c than bound[j] + grow[j] r + |x - p|
 * (bound: radius of a sphere around c holding the core shape, inf for planes;
 * grow: how far the grown shape reaches per unit r, sqrt(dim) for boxes,
 * 1/sin(alpha/2) at a polygon vertex of angle alpha, 1 for capsules). When every
 * collider is such a still plane (a floor, walls), particles are taken in blocks
 * of PS_COLLIDE_BLOCK: the plane test (above_plane: x above each plane by more than r,
 * which is all the search looks at then) runs first over the whole block, in a loop
 * that vectorises (on the x86-64-v3 build in 2D, four rows at a time into a bit per row,
 * so the list of rows to search is made without a branch per row), and only the
 * particles near a plane are searched.
 * The deepest contact over all colliders wins (Box2D-style: the most
 * penetrating feature decides, so particles are not snagged at the seams of
 * touching shapes); it is resolved, and the search repeats up to
 * `iterations` times, which settles concave corners made of several shapes.
 *
 * Resolution, relative to the collider's surface velocity at the contact,
 * u = v_c + w x (x - c) (w: angular velocity, (k, 3); in 2D only w_z):
 *   x += push n;  vn = (v - u) . n;  if vn < 0:
 *     vn' = -e vn, or 0 if -vn <= rest_speed or the particle was touching the
 *     surface at the substep's start (its start position, carried by the surface,
 *     within rest_speed h of the grown shape): a particle pressed onto a floor by
 *     its body gains more than rest_speed in one substep, and that is its load,
 *     not an impact (no resting jitter);
 *     Coulomb friction with the normal impulse per unit mass dvn = vn' - vn:
 *     if |vt| <= mu dvn static friction holds: vt = 0 and the substep's
 *     tangential displacement relative to the surface is undone (no creep);
 *     else |vt| shrinks by mu dvn (kinetic); then vt *= keep (the material's
 *     exponential tangential damping, keep = exp(-rate h), seed 000).
 * push is the depth, unless the particle began the substep inside the collider
 * (its start, carried by the surface, d0 deep in the grown shape) by more than
 * PS_MAX_PUSHOUT_SPEED h: then it is pushed only so far that it stays
 * d0 - PS_MAX_PUSHOUT_SPEED h deep (pushout()), and comes out over later
 * substeps, at that speed beyond the penetration it gains (Box2D's contact
 * push-out speed). A particle spawned or written deep into a collider, or pushed
 * in by its body's constraints, does not jump out in one substep (its body,
 * squashed flat against a wall at once, threw it off at 10 m/s). The push moves
 * it and gives it no velocity.
 * Undoing the slip along one surface can move a particle back into another
 * (the floor's friction undoing a wall's push-out, which would leave a grain
 * inside the wall for ever): a particle whose slip was undone is projected out
 * of the colliders again, up to `iterations` times, deepest first, removing
 * only approaching normal velocity (no friction, no restitution).
 * Contacts are reported per particle: the last collider touched (row, or
 * -1), its normal, and the accumulated normal impulse m dvn (N s), which a
 * call with `clear` (a frame's first substep) resets to -1 and 0 first; and
 * `support` holds the normal of the particle's last contact in this substep
 * (zero if none): the body contacts that follow never push a particle into
 * the collider it rests on (a collider does not give way); `stuck` is 1 for a
 * particle whose slip static friction undid in this substep (a collider with
 * friction > 0: at friction 0, |vt| <= 0 takes the static branch only when vt is
 * exactly 0, and nothing holds the particle along the surface), 0 for the others.
 *
 * Momentum: a collider changes a particle's momentum by its normal impulse and,
 * where the material has friction, by Coulomb's bounded tangential one; on a
 * frictionless collider (friction 0, no tangential damping) nothing acts along
 * the surface. `stuck` tells the XPBD settle solve (constraints.c) which
 * particles a collider holds along the surface too: a particle held only
 * along its normal must stay free to slide, or the settle's corrections push
 * the body along the floor.
 *
 * Loop order: particles outer, iterations, colliders in index order, faces
 * in index order; dot products sum components left to right. The NumPy twin
 * follows the same order per particle, so results are bitwise equal.
 * Particles are independent, so the x86-64-v3 build may take four at a time:
 * against a single still plane in 2D (a floor), four near it whose contact is
 * the common one (at most one push of at most the push-out step, no bounce)
 * go through the same operations in vector lanes (plane_contacts_2d_avx); a
 * block of particles clear of every still plane only has its support zeroed.
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include "internal.h"

/* Still planes among the first PS_FAST_PLANES colliders get a world-frame test that skips
 * particles clear of them before any frame change; PS_PLANE_SLACK (relative) covers the
 * rounding by which it can differ from the local test, so it never skips a contact and the
 * results are those of the full test, bit for bit. */
#define PS_FAST_PLANES 8
#define PS_PLANE_SLACK 1e-12
#define PS_COLLIDE_BLOCK 64


/* Whether the path p0 -> x of a particle of radius r stays clear of the still plane pw
 * (world normal, offset n . y <= o, slack scale): both ends above it, x by more than r,
 * with a margin for the rounding by which this world-frame test can differ from the local
 * one. deepest() skips the plane then. */
PS_INLINE int clear_of_plane(const double *pw, const double *x, const double *p0, double r,
                             int dim)
{
    double d1 = ps_dot(pw, x, dim) - pw[dim], d0 = ps_dot(pw, p0, dim) - pw[dim];
    double slack = pw[dim + 1];
    for (int a = 0; a < dim; a++) slack = slack + fabs(x[a]) + fabs(p0[a]);
    slack = PS_PLANE_SLACK * slack;
    return d1 > r + slack && d0 > slack;
}

/* Whether a particle at x of radius r is clear of the still plane pw when every collider is
 * a still plane: the search then is plane_deepest's, in the same world frame, whose depth
 * r - (n . x - o) is positive only if n . x - o (the same operations) is not above r; so a
 * particle for which this holds has no contact, and the block pre-pass skips it. (Its start
 * plays no part in finding a plane contact.) */
PS_INLINE int above_plane(const double *pw, const double *x, double r, int dim)
{
    return ps_dot(pw, x, dim) - pw[dim] > r;
}

/* local = R^T (world - c) */
PS_INLINE void to_local(double *out, const double *x, const double *c,
                            const double *R, int dim)
{
    double d[3];
    for (int a = 0; a < dim; a++) d[a] = x[a] - c[a];
    for (int a = 0; a < dim; a++) {
        double s = 0.0;
        for (int b = 0; b < dim; b++) s = s + R[b * dim + a] * d[b];
        out[a] = s;
    }
}

/* world direction = R local */
PS_INLINE void to_world(double *out, const double *v, const double *R, int dim)
{
    for (int a = 0; a < dim; a++) {
        double s = 0.0;
        for (int b = 0; b < dim; b++) s = s + R[a * dim + b] * v[b];
        out[a] = s;
    }
}

/* Contact with a grown polytope: returns depth (> 0) and the local normal. */
PS_INLINE double polytope_contact(double *nrm, const double *p, const double *x, double r,
                               const double *fn, const double *fo, int nf, int dim)
{
    /* swept: Cyrus-Beck clipping of p -> x against the core, n.y <= o */
    double t_in = 0.0, t_out = 1.0;
    int f_in = -1, outside = 0, missed = 0;
    for (int f = 0; f < nf; f++) {
        const double *n = fn + (long)f * dim;
        double d0 = ps_dot(n, p, dim) - fo[f];
        double d1 = ps_dot(n, x, dim) - fo[f];
        /* a start within PS_SWEEP_SLOP inside the face, moving inward, is outside it */
        if (d0 >= 0.0 || (d0 >= -PS_SWEEP_SLOP && d1 < d0)) {
            outside = 1;
            if (d1 >= 0.0) {
                missed = 1;
            } else {
                double t = d0 / (d0 - d1);
                if (f_in < 0 || t > t_in) { t_in = t; f_in = f; }
            }
        } else if (d1 >= 0.0) {
            double t = d0 / (d0 - d1);
            if (t < t_out) t_out = t;
        }
    }
    int face = -1;
    if (outside && !missed && f_in >= 0 && !(t_in > t_out)) {
        face = f_in;
    } else {
        /* static: the shallowest face of the grown shape, if x is inside it */
        double best = 0.0;
        for (int f = 0; f < nf; f++) {
            double s = ps_dot(fn + (long)f * dim, x, dim) - fo[f];
            if (face < 0 || s > best) { best = s; face = f; }
        }
        if (!(best < r)) return 0.0;
    }
    const double *n = fn + (long)face * dim;
    for (int c = 0; c < dim; c++) nrm[c] = n[c];
    return r - (ps_dot(n, x, dim) - fo[face]);
}

/* Closest point on segment [a, b] to y. */
PS_INLINE void closest_on_segment(double *q, const double *y, const double *a,
                                      const double *b, int dim)
{
    double ab[3], ay[3];
    for (int c = 0; c < dim; c++) { ab[c] = b[c] - a[c]; ay[c] = y[c] - a[c]; }
    double l2 = ps_dot(ab, ab, dim), t = 0.0;
    if (l2 > 0.0) {
        t = ps_dot(ay, ab, dim) / l2;
        t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    }
    for (int c = 0; c < dim; c++) q[c] = a[c] + t * ab[c];
}

/* Smallest root in [0, 1] of A t^2 + B t + C = 0 (A > 0), or -1. */
PS_INLINE double first_root(double A, double B, double C)
{
    double disc = B * B - 4.0 * A * C;
    if (!(A > 0.0) || disc < 0.0) return -1.0;
    double t = (-B - sqrt(disc)) / (2.0 * A);
    return (t >= 0.0 && t <= 1.0) ? t : -1.0;
}

/* Contact with a capsule of radius R + r around [a, b]. */
PS_INLINE double capsule_contact(double *nrm, const double *p, const double *x, double r,
                              const double *a, const double *b, double R, int dim)
{
    double rr = R + r, q[3], d[3] = {0.0, 0.0, 0.0}, m[3], ab[3], t_hit = 2.0;
    closest_on_segment(q, p, a, b, dim);
    for (int c = 0; c < dim; c++) m[c] = p[c] - q[c];
    if (ps_dot(m, m, dim) >= R * R) {
        /* swept: first time the centre's path p + t (x - p) touches the core */
        for (int c = 0; c < dim; c++) { d[c] = x[c] - p[c]; ab[c] = b[c] - a[c]; }
        double l2 = ps_dot(ab, ab, dim), dd = ps_dot(d, d, dim);
        if (l2 > 0.0) {  /* the side of the capsule: distance to the axis line */
            for (int c = 0; c < dim; c++) m[c] = p[c] - a[c];
            double md = ps_dot(m, ab, dim), ddab = ps_dot(d, ab, dim);
            double A = dd - ddab * ddab / l2;
            double B = 2.0 * (ps_dot(m, d, dim) - md * ddab / l2);
            double C = ps_dot(m, m, dim) - md * md / l2 - R * R;
            double t = first_root(A, B, C);
            if (t >= 0.0) {
                double s = (md + t * ddab) / l2;
                if (s >= 0.0 && s <= 1.0) t_hit = t;
            }
        }
        for (int e = 0; e < 2; e++) {  /* the round ends */
            const double *end = e ? b : a;
            for (int c = 0; c < dim; c++) m[c] = p[c] - end[c];
            double t = first_root(dd, 2.0 * ps_dot(m, d, dim), ps_dot(m, m, dim) - R * R);
            if (t >= 0.0 && t < t_hit) t_hit = t;
        }
    }
    if (!(t_hit > 1.0)) {
        double y[3];
        for (int c = 0; c < dim; c++) y[c] = p[c] + t_hit * d[c];
        closest_on_segment(q, y, a, b, dim);
        for (int c = 0; c < dim; c++) m[c] = y[c] - q[c];
    } else {
        closest_on_segment(q, x, a, b, dim);
        for (int c = 0; c < dim; c++) m[c] = x[c] - q[c];
        if (!(ps_dot(m, m, dim) < rr * rr)) return 0.0;
    }
    double len = sqrt(ps_dot(m, m, dim));
    if (len > PS_MIN_LENGTH) {
        for (int c = 0; c < dim; c++) nrm[c] = m[c] / len;
    } else {  /* on the axis: no direction is preferred; push along local +y */
        for (int c = 0; c < dim; c++) nrm[c] = c == 1 ? 1.0 : 0.0;
    }
    for (int c = 0; c < dim; c++) m[c] = x[c] - q[c];
    double depth = rr - ps_dot(nrm, m, dim);
    return depth > 0.0 ? depth : 0.0;
}

/* Depth (0: none) and local normal of collider j's grown shape against the local path
 * p -> x of a particle of radius r: a polytope's or a capsule's contact. */
PS_INLINE double shape_contact(double *nl, const double *pl, const double *xl, double r, int j,
                               const int32_t *kind, const int32_t *face_start,
                               const int32_t *face_count, const double *face_normal,
                               const double *face_offset, const double *cap_a,
                               const double *cap_b, const double *cap_radius, int dim)
{
    if (kind[j] == PS_POLYTOPE)
        return polytope_contact(nl, pl, xl, r, face_normal + (long)face_start[j] * dim,
                                face_offset + face_start[j], face_count[j], dim);
    return capsule_contact(nl, pl, xl, r, cap_a + (long)j * dim, cap_b + (long)j * dim,
                           cap_radius[j], dim);
}

/* Surface velocity of collider j at x: u = v_c + w x (x - c). */
PS_INLINE void surface_velocity(double *u, const double *x, int j, const double *center,
                                const double *velocity, const double *angular_velocity, int dim)
{
    const double *cj = center + (long)j * dim, *w = angular_velocity + 3L * j;
    double rel[3];
    for (int c = 0; c < dim; c++) rel[c] = x[c] - cj[c];
    if (dim == 2) {
        u[0] = velocity[2L * j] + -w[2] * rel[1];
        u[1] = velocity[2L * j + 1] + w[2] * rel[0];
    } else {
        const double *vc = velocity + 3L * j;
        u[0] = vc[0] + (w[1] * rel[2] - w[2] * rel[1]);
        u[1] = vc[1] + (w[2] * rel[0] - w[0] * rel[2]);
        u[2] = vc[2] + (w[0] * rel[1] - w[1] * rel[0]);
    }
}

/* Does collider j move (a velocity or an angular velocity)? */
PS_INLINE int moves(int j, const double *velocity, const double *angular_velocity, int dim)
{
    const double *v = velocity + (long)j * dim, *w = angular_velocity + 3L * j;
    for (int a = 0; a < dim; a++)
        if (v[a] != 0.0) return 1;
    return w[0] != 0.0 || w[1] != 0.0 || w[2] != 0.0;
}

/* The deepest contact of particle i (at x, from p0) over all colliders: its depth
 * (0: none), collider (-1: none) and world normal. Against a moving collider the
 * substep's start is taken in the collider's frame: p0 carried by the surface,
 * p0 + h u(p0), so a particle the plate pushed last substep starts outside it, not
 * inside it where the plate has since moved. */
PS_INLINE double deepest(int *best_j, double *best_n, const double *x, const double *p0,
                         double r, const int32_t *kind, const double *center,
                         const double *rotation, const double *velocity,
                         const double *angular_velocity, const int32_t *face_start,
                         const int32_t *face_count, const double *face_normal,
                         const double *face_offset, const double *cap_a, const double *cap_b,
                         const double *cap_radius, const double *bound, const double *grow,
                         const double *plane, int nplane, int k, int dim, double h, int any_moving)
{
    double best = 0.0;
    double path_len = -1.0;  /* |x - p|, computed at the first bounded still collider */
    *best_j = -1;
    for (int j = 0; j < k; j++) {
        const double *c = center + (long)j * dim;
        const double *R = rotation + (long)j * dim * dim;
        double xl[3], pl[3], nl[3] = {0.0, 0.0, 0.0}, depth, carried[3];
        const double *pj = p0;
        int moving = any_moving && moves(j, velocity, angular_velocity, dim);
        if (moving) {
            double u[3];
            surface_velocity(u, p0, j, center, velocity, angular_velocity, dim);
            for (int a = 0; a < dim; a++) carried[a] = p0[a] + h * u[a];
            pj = carried;
        }
        if (j < nplane && plane[(long)j * (dim + 2) + dim + 1] != 0.0 && !moving
            && clear_of_plane(plane + (long)j * (dim + 2), x, p0, r, dim))
            continue;  /* a still plane the path stays clear of */
        if (bound[j] <= DBL_MAX) {
            double off[3], path[3], len;
            if (moving) {
                for (int a = 0; a < dim; a++) path[a] = x[a] - pj[a];
                len = sqrt(ps_dot(path, path, dim));
            } else {
                if (path_len < 0.0) {
                    for (int a = 0; a < dim; a++) path[a] = x[a] - p0[a];
                    path_len = sqrt(ps_dot(path, path, dim));
                }
                len = path_len;
            }
            for (int a = 0; a < dim; a++) off[a] = x[a] - c[a];
            double lim = bound[j] + grow[j] * r + len;
            if (ps_dot(off, off, dim) > lim * lim) continue;
        }
        to_local(xl, x, c, R, dim);
        to_local(pl, pj, c, R, dim);
        depth = shape_contact(nl, pl, xl, r, j, kind, face_start, face_count, face_normal,
                              face_offset, cap_a, cap_b, cap_radius, dim);
        if (depth > best) {
            best = depth;
            *best_j = j;
            to_world(best_n, nl, R, dim);
        }
    }
    return best;
}

/* How deep (0: not) the particle's start p0, carried along by collider j's surface
 * (p0 + h u), lies inside j's shape grown by r: its nearest surface, as for a static contact. */
PS_INLINE double start_depth(const double *p0, const double *u, double h, double r, int j,
                             const int32_t *kind, const double *center, const double *rotation,
                             const int32_t *face_start, const int32_t *face_count,
                             const double *face_normal, const double *face_offset,
                             const double *cap_a, const double *cap_b, const double *cap_radius,
                             int dim)
{
    double y[3], yl[3], nl[3];
    for (int c = 0; c < dim; c++) y[c] = p0[c] + h * u[c];
    to_local(yl, y, center + (long)j * dim, rotation + (long)j * dim * dim, dim);
    return shape_contact(nl, yl, yl, r, j, kind, face_start, face_count, face_normal,
                         face_offset, cap_a, cap_b, cap_radius, dim);
}

#define PS_SHAPES kind, center, rotation, face_start, face_count, face_normal, face_offset, \
                  cap_a, cap_b, cap_radius, dim

/* Was the particle (radius r) touching collider j at the substep's start? Its carried
 * start lies within rest_speed h of the grown shape: a particle that arrives from free
 * flight slower than rest_speed bounces no more than one that started the substep on the
 * surface. */
PS_INLINE int touching(const double *p0, const double *u, double h, double r, double rest_speed,
                       int j, const int32_t *kind, const double *center, const double *rotation,
                       const int32_t *face_start, const int32_t *face_count,
                       const double *face_normal, const double *face_offset, const double *cap_a,
                       const double *cap_b, const double *cap_radius, int dim)
{
    return start_depth(p0, u, h, r + rest_speed * h, j, PS_SHAPES) > 0.0;
}

/* The push-out limit, given how deep the particle's start lay (`start`): all of `depth`,
 * unless the start was deeper than step = PS_MAX_PUSHOUT_SPEED h; then only so far that the
 * particle stays start - step deep (the rest in later substeps). */
PS_INLINE double limit_push(double depth, double start, double step)
{
    double keep = start - step;
    return keep > 0.0 ? (depth > keep ? depth - keep : 0.0) : depth;
}

/* How far to push out a particle found `depth` inside collider j: all of it, unless it
 * began the substep inside (its carried start d0 deep) by more than PS_MAX_PUSHOUT_SPEED h;
 * then only so far that it stays d0 - PS_MAX_PUSHOUT_SPEED h deep (the rest in later
 * substeps). The start is carried by the surface velocity at p0, as in deepest(). Cheap
 * where it cannot matter: no push of at most PS_MAX_PUSHOUT_SPEED h is limited. */
PS_INLINE double pushout(double depth, const double *p0, double h, double r, int j,
                         const double *velocity, const double *angular_velocity,
                         const int32_t *kind, const double *center, const double *rotation,
                         const int32_t *face_start, const int32_t *face_count,
                         const double *face_normal, const double *face_offset,
                         const double *cap_a, const double *cap_b, const double *cap_radius,
                         int dim)
{
    double step = PS_MAX_PUSHOUT_SPEED * h;
    if (!(depth > step)) return depth;
    double u[3];
    surface_velocity(u, p0, j, center, velocity, angular_velocity, dim);
    return limit_push(depth, start_depth(p0, u, h, r, j, PS_SHAPES), step);
}

/* Still planes (every collider one, as collide_impl finds them: world normal n, offset o of
 * n . y <= o): the contact search and its helpers in the world frame. A plane's contact, swept
 * or static, is at depth r - (n . x - o) along n whenever that is positive; these give what
 * deepest(), pushout() and touching() give for planes, computed in the world frame instead of
 * the plane's (no frame change per particle: this is the floor-and-walls scene). */
PS_INLINE double plane_deepest(int *best_j, double *best_n, const double *x, double r,
                               const double *plane, int k, int dim)
{
    double best = 0.0;
    *best_j = -1;
    for (int j = 0; j < k; j++) {
        const double *pw = plane + (long)j * (dim + 2);
        double depth = r - (ps_dot(pw, x, dim) - pw[dim]);
        if (depth > best) {
            best = depth;
            *best_j = j;
            for (int c = 0; c < dim; c++) best_n[c] = pw[c];
        }
    }
    return best;
}

/* How deep the start p0 lies inside plane pw grown by r (0: not). */
PS_INLINE double plane_start_depth(const double *pw, const double *p0, double r, int dim)
{
    double s0 = ps_dot(pw, p0, dim) - pw[dim];
    return s0 < r ? r - s0 : 0.0;
}

PS_INLINE double plane_pushout(double depth, const double *pw, const double *p0, double h,
                               double r, int dim)
{
    double step = PS_MAX_PUSHOUT_SPEED * h;
    if (!(depth > step)) return depth;
    return limit_push(depth, plane_start_depth(pw, p0, r, dim), step);
}

#define PS_PLANE(J) (plane + (long)(J) * (dim + 2))
#define PS_FIND(J, N) (all_planes ? plane_deepest(J, N, x, radius[i], plane, k, dim) : PS_DEEPEST(J, N))
#define PS_PUSH(D, J) (all_planes ? plane_pushout(D, PS_PLANE(J), p0, h, radius[i], dim) \
                                  : PS_PUSHOUT(D, J))
#define PS_DEEPEST(J, N) deepest(J, N, x, p0, radius[i], kind, center, rotation, velocity, \
                                 angular_velocity, face_start, face_count, face_normal, \
                                 face_offset, cap_a, cap_b, cap_radius, bound, grow, plane, \
                                 nplane, k, dim, h, any_moving)
#define PS_PUSHOUT(D, J) pushout(D, p0, h, radius[i], J, velocity, angular_velocity, PS_SHAPES)

#if defined(__AVX2__)
/* The x86-64-v3 build, 2D, a single still plane (a floor): four particles the block pre-pass
 * found near it (todo[0..3], movable; only the first `lanes` reported: a block's last one to
 * three fill the four by repeating the last, so they too take this path), in the common
 * case, with the scalar loop's operations in its order (so the same bits): each either clear
 * of the plane (nothing to do) or in contact once, pushed out by its depth (no push-out
 * limit), not bouncing, with static or kinetic friction, and clear after it. If any of the four is not that (limited push-out, a
 * bounce, still inside after the contact), nothing is written and it returns 0: the scalar
 * loop takes the four. A resting particle's contact is a chain of roughly a hundred
 * dependent operations around a square root; four of them overlap. Inlined: called as a
 * function, its twenty arguments went through the stack for every four particles (the
 * canonical scene's collide stage 168 against 205 us at 100k, 14.5 against 15.5 at 10k). */
PS_INLINE int plane_contacts_2d_avx(double *pos, double *vel, int32_t *contact_collider,
                                 double *contact_normal, double *contact_impulse, double *support,
                                 int32_t *stuck, const double *prev_pos, const double *radius,
                                 const double *mass, const double *pw, const double *center, const double *velocity,
                                 const double *angular_velocity, double friction, double keep,
                                 const int *todo, int lanes, double h, double rest_speed,
                                 int *contacts)
{
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    const __m256d n0 = _mm256_set1_pd(pw[0]), n1 = _mm256_set1_pd(pw[1]), o = _mm256_set1_pd(pw[2]);
    long i0 = todo[0], i1 = todo[1], i2 = todo[2], i3 = todo[3];
    __m256d r = _mm256_set_pd(radius[i3], radius[i2], radius[i1], radius[i0]);
    __m256d x02 = two_rows(pos, 2 * i0, 2 * i2), x13 = two_rows(pos, 2 * i1, 2 * i3);
    __m256d xx = _mm256_unpacklo_pd(x02, x13), xy = _mm256_unpackhi_pd(x02, x13);
    /* depth = r - (n . x - o) */
    __m256d depth = _mm256_sub_pd(r, _mm256_sub_pd(
        _mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(n0, xx)), _mm256_mul_pd(n1, xy)), o));
    __m256d contact = _mm256_cmp_pd(depth, zero, _CMP_GT_OQ);
    int hit = _mm256_movemask_pd(contact);
    if (!hit) return 1;
    /* plane_pushout: a depth over the push-out step is limited (the scalar loop's) */
    if (_mm256_movemask_pd(_mm256_and_pd(contact, _mm256_cmp_pd(
            depth, _mm256_set1_pd(PS_MAX_PUSHOUT_SPEED * h), _CMP_GT_OQ))))
        return 0;
    __m256d px = _mm256_add_pd(xx, _mm256_mul_pd(depth, n0)), py = _mm256_add_pd(xy, _mm256_mul_pd(depth, n1));
    /* surface_velocity at the pushed position */
    __m256d w2 = _mm256_set1_pd(angular_velocity[2]);
    __m256d rel0 = _mm256_sub_pd(px, _mm256_set1_pd(center[0]));
    __m256d rel1 = _mm256_sub_pd(py, _mm256_set1_pd(center[1]));
    __m256d u0 = _mm256_add_pd(_mm256_set1_pd(velocity[0]),
                               _mm256_mul_pd(_mm256_xor_pd(w2, _mm256_set1_pd(-0.0)), rel1));
    __m256d u1 = _mm256_add_pd(_mm256_set1_pd(velocity[1]), _mm256_mul_pd(w2, rel0));
    __m256d v02 = two_rows(vel, 2 * i0, 2 * i2), v13 = two_rows(vel, 2 * i1, 2 * i3);
    __m256d vx = _mm256_unpacklo_pd(v02, v13), vy = _mm256_unpackhi_pd(v02, v13);
    __m256d vr0 = _mm256_sub_pd(vx, u0), vr1 = _mm256_sub_pd(vy, u1);
    __m256d vn = _mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(vr0, n0)), _mm256_mul_pd(vr1, n1));
    __m256d approach = _mm256_and_pd(contact, _mm256_cmp_pd(vn, zero, _CMP_LT_OQ));
    __m256d p02 = two_rows(prev_pos, 2 * i0, 2 * i2), p13 = two_rows(prev_pos, 2 * i1, 2 * i3);
    __m256d p0x = _mm256_unpacklo_pd(p02, p13), p0y = _mm256_unpackhi_pd(p02, p13);
    /* bounces = -vn > rest_speed && !(plane_start_depth(p0, r + rest_speed h) > 0) */
    __m256d rr = _mm256_add_pd(r, _mm256_set1_pd(rest_speed * h));
    __m256d s0 = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(n0, p0x)),
                                             _mm256_mul_pd(n1, p0y)), o);
    __m256d start = _mm256_blendv_pd(zero, _mm256_sub_pd(rr, s0), _mm256_cmp_pd(s0, rr, _CMP_LT_OQ));
    __m256d bounces = _mm256_andnot_pd(_mm256_cmp_pd(start, zero, _CMP_GT_OQ), _mm256_cmp_pd(
        _mm256_xor_pd(vn, _mm256_set1_pd(-0.0)), _mm256_set1_pd(rest_speed), _CMP_GT_OQ));
    if (_mm256_movemask_pd(_mm256_and_pd(approach, bounces))) return 0;
    __m256d vn_new = zero;
    __m256d dvn = _mm256_sub_pd(vn_new, vn);
    __m256d vt0 = _mm256_sub_pd(vr0, _mm256_mul_pd(vn, n0)), vt1 = _mm256_sub_pd(vr1, _mm256_mul_pd(vn, n1));
    __m256d vt_len = _mm256_sqrt_pd(_mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(vt0, vt0)),
                                                  _mm256_mul_pd(vt1, vt1)));
    __m256d limit = _mm256_mul_pd(_mm256_set1_pd(friction), dvn);
    __m256d stat = _mm256_cmp_pd(vt_len, limit, _CMP_LE_OQ);
    /* static friction: undo the slip along the surface */
    __m256d hh = _mm256_set1_pd(h);
    __m256d slip0 = _mm256_sub_pd(_mm256_sub_pd(px, p0x), _mm256_mul_pd(hh, u0));
    __m256d slip1 = _mm256_sub_pd(_mm256_sub_pd(py, p0y), _mm256_mul_pd(hh, u1));
    __m256d sn = _mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(slip0, n0)), _mm256_mul_pd(slip1, n1));
    __m256d sx = _mm256_sub_pd(px, _mm256_sub_pd(slip0, _mm256_mul_pd(sn, n0)));
    __m256d sy = _mm256_sub_pd(py, _mm256_sub_pd(slip1, _mm256_mul_pd(sn, n1)));
    __m256d scale = _mm256_blendv_pd(_mm256_mul_pd(_mm256_sub_pd(one, _mm256_div_pd(limit, vt_len)),
                                                   _mm256_set1_pd(keep)), zero, stat);
    __m256d nvx = _mm256_add_pd(_mm256_add_pd(u0, _mm256_mul_pd(vt0, scale)), _mm256_mul_pd(vn_new, n0));
    __m256d nvy = _mm256_add_pd(_mm256_add_pd(u1, _mm256_mul_pd(vt1, scale)), _mm256_mul_pd(vn_new, n1));
    /* where each ends: in contact, pushed (and its slip undone if static while approaching) */
    __m256d slide = _mm256_and_pd(approach, stat);
    __m256d fx = _mm256_blendv_pd(xx, _mm256_blendv_pd(px, sx, slide), contact);
    __m256d fy = _mm256_blendv_pd(xy, _mm256_blendv_pd(py, sy, slide), contact);
    /* the scalar loop searches again: it must find nothing */
    __m256d again = _mm256_sub_pd(r, _mm256_sub_pd(
        _mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(n0, fx)), _mm256_mul_pd(n1, fy)), o));
    if (_mm256_movemask_pd(_mm256_and_pd(contact, _mm256_cmp_pd(again, zero, _CMP_GT_OQ)))) return 0;
    __m256d gx = _mm256_blendv_pd(vx, nvx, approach), gy = _mm256_blendv_pd(vy, nvy, approach);
    store_two_rows(pos, 2 * i0, 2 * i2, _mm256_unpacklo_pd(fx, fy));
    store_two_rows(pos, 2 * i1, 2 * i3, _mm256_unpackhi_pd(fx, fy));
    store_two_rows(vel, 2 * i0, 2 * i2, _mm256_unpacklo_pd(gx, gy));
    store_two_rows(vel, 2 * i1, 2 * i3, _mm256_unpackhi_pd(gx, gy));
    double add[4];
    _mm256_storeu_pd(add, _mm256_mul_pd(_mm256_set_pd(mass[i3], mass[i2], mass[i1], mass[i0]), dvn));
    int went = _mm256_movemask_pd(approach), held = friction > 0.0 ? _mm256_movemask_pd(slide) : 0;
    for (int e = 0; e < lanes; e++) {
        if (!(hit >> e & 1)) continue;
        long i = todo[e];
        (*contacts)++;
        contact_collider[i] = 0;
        contact_normal[2 * i] = support[2 * i] = pw[0];
        contact_normal[2 * i + 1] = support[2 * i + 1] = pw[1];
        stuck[i] = held >> e & 1;
        if (went >> e & 1) contact_impulse[i] = contact_impulse[i] + add[e];
    }
    return 1;
}
#endif

/* The block pre-pass of collide_impl: the rows of [i0, i1) (at most PS_COLLIDE_BLOCK) to
 * search, into todo in increasing order; returns how many. A row is searched if it is
 * movable and, when every collider is a still plane (the first k of `plane`), not
 * above_plane of every plane. */
PS_INLINE int near_rows(int *todo, const double *plane, int k, int all_planes, const double *pos,
                        const double *radius, const double *inv_mass, int i0, int i1, int dim)
{
    int64_t near[PS_COLLIDE_BLOCK];
    if (all_planes) {
        for (int i = i0; i < i1; i++) near[i - i0] = 0;
        for (int j = 0; j < k; j++) {
            const double *pw = plane + (long)j * (dim + 2);
            for (int i = i0; i < i1; i++)
                near[i - i0] |= !above_plane(pw, pos + (long)i * dim, radius[i], dim);
        }
    }
    int ntodo = 0;
    for (int i = i0; i < i1; i++)
        if (!(inv_mass[i] == 0.0 || (all_planes && !near[i - i0]))) todo[ntodo++] = i;
    return ntodo;
}

#if defined(__AVX2__)
/* The block pre-pass of collide_impl in 2D with only still planes, on the x86-64-v3 build:
 * the rows of [i0, i1) (at most 64) that are movable and not above_plane of every plane,
 * into todo in increasing order; returns how many. Four rows at a time, above_plane's
 * operations in its order (the same decision); a bit per row, so the list is made without
 * a branch per row. */
static int near_planes_2d_avx(int *todo, const double *plane, int k, const double *pos,
                              const double *radius, const double *inv_mass, int i0, int i1)
{
    const __m256d zero = _mm256_setzero_pd();
    uint64_t bits = 0;
    int i = i0;
    for (; i + 4 <= i1; i += 4) {
        /* lanes hold rows i, i + 2, i + 1, i + 3 (unpack's order); radius and inv_mass too */
        __m256d a = _mm256_loadu_pd(pos + 2L * i), b = _mm256_loadu_pd(pos + 2L * i + 4);
        __m256d xx = _mm256_unpacklo_pd(a, b), xy = _mm256_unpackhi_pd(a, b);
        __m256d r = _mm256_permute4x64_pd(_mm256_loadu_pd(radius + i), 0xD8);
        __m256d im = _mm256_permute4x64_pd(_mm256_loadu_pd(inv_mass + i), 0xD8);
        __m256d near = zero;
        for (int j = 0; j < k; j++) {
            const double *pw = plane + 4L * j;
            __m256d n0 = _mm256_set1_pd(pw[0]), n1 = _mm256_set1_pd(pw[1]), o = _mm256_set1_pd(pw[2]);
            __m256d d1 = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(zero, _mm256_mul_pd(n0, xx)),
                                                     _mm256_mul_pd(n1, xy)), o);
            near = _mm256_or_pd(near, _mm256_cmp_pd(d1, r, _CMP_NGT_UQ));  /* !(d1 > r) */
        }
        unsigned m = (unsigned)_mm256_movemask_pd(_mm256_and_pd(near, _mm256_cmp_pd(im, zero, _CMP_NEQ_UQ)));
        m = (m & 9u) | ((m & 2u) << 1) | ((m & 4u) >> 1);  /* lanes back to rows i .. i + 3 */
        bits |= (uint64_t)m << (i - i0);
    }
    int ntodo = 0;
    for (; bits; bits &= bits - 1) todo[ntodo++] = i0 + __builtin_ctzll(bits);
    return ntodo + near_rows(todo + ntodo, plane, k, 1, pos, radius, inv_mass, i, i1, 2);
}
#endif

/* The kernel body, inlined once per dimension so that `dim` is a constant. */
PS_INLINE int collide_impl(double *pos, double *vel, int32_t *contact_collider,
               double *contact_normal, double *contact_impulse, double *support,
               int32_t *stuck, const double *prev_pos, const double *radius, const double *mass,
               const double *inv_mass, const int32_t *kind, const double *center,
               const double *rotation, const double *velocity,
               const double *angular_velocity, const double *restitution,
               const double *friction, const double *keep,
               const int32_t *face_start, const int32_t *face_count,
               const double *face_normal, const double *face_offset,
               const double *cap_a, const double *cap_b, const double *cap_radius,
               const double *bound, const double *grow, int n, int k, int nfaces,
               int dim, int iterations, int clear, double h, double rest_speed, int i_begin,
               int i_end)
{
    int contacts = 0, any_moving = 0;  /* whether any collider moves: most scenes' do not */
    (void)n;
    (void)nfaces;
    for (int j = 0; j < k && !any_moving; j++) any_moving = moves(j, velocity, angular_velocity, dim);
    /* per still plane: world normal n, offset n . y <= o, and a scale for the slack (0: not
     * a still plane) */
    double plane[PS_FAST_PLANES * 5];
    int nplane = k < PS_FAST_PLANES ? k : PS_FAST_PLANES;
    for (int j = 0; j < nplane; j++) {
        double *pw = plane + (long)j * (dim + 2);
        pw[dim + 1] = 0.0;
        if (kind[j] != PS_POLYTOPE || face_count[j] != 1 || moves(j, velocity, angular_velocity, dim))
            continue;
        const double *c = center + (long)j * dim, *nl = face_normal + (long)face_start[j] * dim;
        double ol = face_offset[face_start[j]];
        to_world(pw, nl, rotation + (long)j * dim * dim, dim);
        pw[dim] = ol + ps_dot(pw, c, dim);
        double scale = 1.0 + fabs(ol);
        for (int a = 0; a < dim; a++) scale = scale + fabs(c[a]);
        pw[dim + 1] = scale;
    }
    /* Only still planes (a floor, walls): a block's particles are first tested against them
     * all in a loop that vectorises, and only those near one go through the search. */
    int all_planes = k <= nplane;
    for (int j = 0; j < nplane && all_planes; j++) all_planes = plane[(long)j * (dim + 2) + dim + 1] != 0.0;
    for (int i0 = i_begin; i0 < i_end; i0 += PS_COLLIDE_BLOCK) {
        int i1 = i_end - i0 > PS_COLLIDE_BLOCK ? i0 + PS_COLLIDE_BLOCK : i_end;
        if (clear)  /* a frame's first substep: a new contact report */
            for (int i = i0; i < i1; i++) {
                contact_collider[i] = -1;
                contact_impulse[i] = 0.0;
            }
        memset(support + (long)i0 * dim, 0, (size_t)(i1 - i0) * (size_t)dim * sizeof *support);
        memset(stuck + i0, 0, (size_t)(i1 - i0) * sizeof *stuck);
        int todo[PS_COLLIDE_BLOCK], ntodo;  /* the block's particles to search */
#if defined(__AVX2__)
        if (dim == 2 && all_planes)
            ntodo = near_planes_2d_avx(todo, plane, k, pos, radius, inv_mass, i0, i1);
        else
#endif
            ntodo = near_rows(todo, plane, k, all_planes, pos, radius, inv_mass, i0, i1, dim);
        for (int q = 0; q < ntodo; q++) {
#if defined(__AVX2__)
            if (dim == 2 && all_planes && k == 1 && q % 4 == 0) {
                /* the last one to three rows fill the four lanes, the last repeated (a lane
                 * repeating another does what it does, and is not reported twice) */
                int four[4], lanes = ntodo - q < 4 ? ntodo - q : 4;
                for (int e = 0; e < 4; e++) four[e] = todo[q + (e < lanes ? e : lanes - 1)];
                if (plane_contacts_2d_avx(pos, vel, contact_collider, contact_normal,
                                          contact_impulse, support, stuck, prev_pos, radius, mass, plane,
                                          center, velocity, angular_velocity, friction[0],
                                          keep[0], four, lanes, h, rest_speed, &contacts)) {
                    q += lanes - 1;
                    continue;
                }
            }
#endif
            int i = todo[q];
            double *sup = support + (long)i * dim;
            double *x = pos + (long)i * dim, *v = vel + (long)i * dim;
            const double *p0 = prev_pos + (long)i * dim;
            int slipped = 0, held = 0;
            for (int it = 0; it < iterations; it++) {
                double best_n[3] = {0.0, 0.0, 0.0};
                int j;
                double best = PS_FIND(&j, best_n);
                if (j < 0) break;
                contacts++;
                best = PS_PUSH(best, j);
                const double *nrm = best_n;
                for (int c = 0; c < dim; c++) x[c] = x[c] + best * nrm[c];
                double u[3];
                surface_velocity(u, x, j, center, velocity, angular_velocity, dim);
                contact_collider[i] = j;
                for (int c = 0; c < dim; c++) {
                    contact_normal[(long)i * dim + c] = nrm[c];
                    sup[c] = nrm[c];
                }
                double vr[3];
                for (int c = 0; c < dim; c++) vr[c] = v[c] - u[c];
                double vn = ps_dot(vr, nrm, dim);
                if (!(vn < 0.0)) continue;
                /* a resting contact (touching at the substep's start) does not bounce: the
                 * approach it gained in one substep is its load, not an impact */
                int bounces = -vn > rest_speed
                    && !(all_planes ? plane_start_depth(PS_PLANE(j), p0, radius[i] + rest_speed * h, dim) > 0.0
                                    : touching(p0, u, h, radius[i], rest_speed, j, PS_SHAPES));
                double vn_new = bounces ? -restitution[j] * vn : 0.0;
                double dvn = vn_new - vn;
                double vt[3];
                for (int c = 0; c < dim; c++) vt[c] = vr[c] - vn * nrm[c];
                double vt_len = sqrt(ps_dot(vt, vt, dim)), limit = friction[j] * dvn;
                double scale;
                if (vt_len <= limit) {
                    /* static friction: undo this substep's slip along the surface */
                    double slip[3];
                    for (int c = 0; c < dim; c++) slip[c] = (x[c] - p0[c]) - h * u[c];
                    double sn = ps_dot(slip, nrm, dim);
                    for (int c = 0; c < dim; c++) x[c] = x[c] - (slip[c] - sn * nrm[c]);
                    slipped = 1;
                    held = held || friction[j] > 0.0;
                    scale = 0.0;
                } else {
                    scale = (1.0 - limit / vt_len) * keep[j];
                }
                for (int c = 0; c < dim; c++) v[c] = u[c] + vt[c] * scale + vn_new * nrm[c];
                contact_impulse[i] = contact_impulse[i] + mass[i] * dvn;
            }
            /* Undoing slip along one surface may move the particle back into another (a wall
             * it was pushed out of): project it out again, without friction. */
            for (int it = 0; slipped && it < iterations; it++) {
                double best_n[3] = {0.0, 0.0, 0.0};
                int j;
                double best = PS_FIND(&j, best_n);
                if (j < 0) break;
                best = PS_PUSH(best, j);
                for (int c = 0; c < dim; c++) x[c] = x[c] + best * best_n[c];
                double u[3], vr[3];
                surface_velocity(u, x, j, center, velocity, angular_velocity, dim);
                for (int c = 0; c < dim; c++) vr[c] = v[c] - u[c];
                double vn = ps_dot(vr, best_n, dim);
                if (vn < 0.0) {
                    for (int c = 0; c < dim; c++) v[c] = v[c] - vn * best_n[c];
                    contact_impulse[i] = contact_impulse[i] + mass[i] * -vn;
                }
            }
            stuck[i] = held;
        }
    }
    return contacts;
}

/* The arguments of one collide call, for its parts (each a range of particles: they are
 * independent, so any split gives the same bits). */
typedef struct {
    double *pos, *vel, *contact_normal, *contact_impulse, *support;
    int32_t *contact_collider, *stuck;
    const double *prev_pos, *radius, *mass, *inv_mass, *center, *rotation, *velocity,
        *angular_velocity, *restitution, *friction, *keep, *face_normal, *face_offset, *cap_a,
        *cap_b, *cap_radius, *bound, *grow;
    const int32_t *kind, *face_start, *face_count;
    int n, k, nfaces, dim, iterations, clear;
    double h, rest_speed;
    int contacts[PS_MAX_THREADS];
} CollideTask;

static void collide_part(void *args, int part, int parts)
{
    CollideTask *t = args;
    int i0 = ps_part_start(t->n, part, parts), i1 = ps_part_start(t->n, part + 1, parts);
#define PS_COLLIDE_ARGS(D) t->pos, t->vel, t->contact_collider, t->contact_normal, \
        t->contact_impulse, t->support, t->stuck, t->prev_pos, t->radius, t->mass, t->inv_mass, t->kind, \
        t->center, t->rotation, t->velocity, t->angular_velocity, t->restitution, t->friction, \
        t->keep, t->face_start, t->face_count, t->face_normal, t->face_offset, t->cap_a, \
        t->cap_b, t->cap_radius, t->bound, t->grow, t->n, t->k, t->nfaces, D, t->iterations, \
        t->clear, t->h, t->rest_speed, i0, i1
    t->contacts[part] = t->dim == 2 ? collide_impl(PS_COLLIDE_ARGS(2)) : collide_impl(PS_COLLIDE_ARGS(3));
#undef PS_COLLIDE_ARGS
}

#define PS_PARTICLES_PER_THREAD 2048  /* the least particles in a part (ps_parts) */

int ps_collide(double *pos, double *vel, int32_t *contact_collider,
               double *contact_normal, double *contact_impulse, double *support,
               int32_t *stuck, const double *prev_pos, const double *radius, const double *mass,
               const double *inv_mass, const int32_t *kind, const double *center,
               const double *rotation, const double *velocity,
               const double *angular_velocity, const double *restitution,
               const double *friction, const double *keep,
               const int32_t *face_start, const int32_t *face_count,
               const double *face_normal, const double *face_offset,
               const double *cap_a, const double *cap_b, const double *cap_radius,
               const double *bound, const double *grow, int n, int k, int nfaces,
               int dim, int iterations, double h, double rest_speed, int threads, int clear)
{
    CollideTask t = {pos, vel, contact_normal, contact_impulse, support, contact_collider, stuck,
                     prev_pos, radius, mass, inv_mass, center, rotation, velocity,
                     angular_velocity, restitution, friction, keep, face_normal, face_offset,
                     cap_a, cap_b, cap_radius, bound, grow, kind, face_start, face_count, n, k,
                     nfaces, dim, iterations, clear, h, rest_speed, {0}};
    int parts = ps_pool_run(collide_part, &t, ps_parts(threads, n, PS_PARTICLES_PER_THREAD));
    int contacts = 0;
    for (int p = 0; p < parts; p++) contacts += t.contacts[p];
    return contacts;
}
