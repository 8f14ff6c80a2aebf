/* edges.c -- the collide pass, part two: body outline edges (2D) and surface triangles (3D)
 * against colliders.
 *
 * collide.c keeps every particle out of the colliders, but a body's surface
 * between two outline particles is an edge, and a collider's feature smaller
 * than the particle spacing (a small disc, a box corner, the end of a thin
 * segment) can poke through it unseen. This pass keeps colliders' features
 * out of the edges of closed bodies (whose outline encloses an area), right
 * after collide.c and before the body contacts (contacts.c).
 *
 * Features of a collider j (pose c, R; see collide.c):
 *   a 2D polytope of three or more faces (Box, Polygon; faces in
 *   counter-clockwise order): its corners, radius 0; corner f is where face
 *   f meets face f + 1 (mod the count), y = the solution of n_f . y = o_f,
 *   n_g . y = o_g by Cramer's rule (skipped unless n_f x n_g > 0); a Plane
 *   has no corner;
 *   a capsule (Disc, Segment): its end points a and b (b only if it differs
 *   from a), with the capsule's radius R.
 * A capsule's axis crossing an edge between two particles needs no feature:
 * the particles either side are kept out of the capsule by collide.c, so
 * the axis can only cross an edge near one of its ends.
 *
 * Edge a -> b of a counter-clockwise outline (x_a, x_b now; p_a, p_b at the
 * substep's start, prev_pos), length L, outward normal n = (e_y, -e_x) / L,
 * and a feature point q of radius R: t = (q - x_a) . e / L^2, the signed
 * distance s = (q - x_a) . n, the edge's radius r_e = (1 - t) r_a + t r_b.
 * It is a contact if 0 < t < 1 (strictly: a feature at an end is the
 * particle's, collide.c's) and s < R + r_e, and, when q is on the inner side
 * (s < 0), only if it came in through this edge during the substep: at the
 * start, q0 = q - h u (u: the collider's surface velocity at q) was not
 * farther inside the start edge's line than PS_EDGE_SLACK L0 (a corner that
 * rests exactly on an edge is found again despite rounding). A point deep
 * inside the body that did not cross this edge is not its contact.
 *
 * Resolution, with the contact normal N = -n (from the collider into the
 * body) and the depth d = R + r_e - s: the two ends move along N, shared by
 * barycentric weight and inverse mass, so that the edge's point
 * q_e = (1 - t) x_a + t x_b moves by exactly d N (the usual point-edge
 * projection against an immovable point):
 *   w_a = (1 - t) inv_a,  w_b = t inv_b,  D = (1 - t) w_a + t w_b,
 *   k_a = w_a / D,  k_b = w_b / D,  x_a += d k_a N,  x_b += d k_b N.
 * An end resting on a collider in this substep is not pushed into it (its
 * w counts as 0 when support . N < 0, as in contacts.c); an edge whose D is
 * 0 (both ends pinned or held) is left alone. A lever is capped: no end
 * moves by more than PS_EDGE_LEVER times the point (k <= 2). Two free ends
 * of equal mass never reach it (k <= 1.21), but with one end pinned or held
 * and the feature near it (t -> 0) the free end would move by d / t: a
 * feature at a held particle flung its edge's other end at 400 m/s. Capped,
 * such a contact is resolved only in part (q_e moves by ((1-t) k_a + t k_b) d).
 * Velocities, as collide.c does for a particle, on the edge point's velocity
 * v_e = (1 - t) v_a + t v_b relative to the surface, v_r = v_e - u,
 * vn = v_r . N: if vn < 0, vn' = -e vn (0 if -vn <= rest_speed), dvn =
 * vn' - vn; Coulomb friction bounded by mu dvn: static (|v_t| <= mu dvn)
 * stops v_t and undoes the substep's tangential slip of q_e relative to the
 * surface, (q_e - (1 - t) p_a - t p_b) - h u; kinetic shrinks |v_t| by mu dvn
 * and multiplies by keep. The change dv of v_e (a move dx of q_e) is given
 * to the ends as k_a dv and k_b dv: q_e changes by exactly dv, and the
 * impulses m_a k_a dv = (1 - t) dv / D on a and t dv / D on b have no moment
 * about q_e (when no lever is capped). An end that moved is reported like a
 * particle contact of collide.c (its contact_collider, contact_normal N, its
 * normal impulse m_a k_a dvn added to contact_impulse) and its support
 * becomes N; where static friction (friction > 0) undid the slip, it is
 * `stuck` (collide.c: the XPBD settle holds it along the surface too).
 *
 * Momentum: the ends' velocity changes k_a dv, k_b dv are impulses
 * (1 - t) dv / D and t dv / D, along N (the normal impulse) and, with
 * friction, along the surface (bounded by mu times the normal one): with no
 * friction, an edge contact changes momentum along its normal only.
 *
 * Broad phase: an edge is tested against collider j only if the sphere
 * around j's centre of radius bound[j] reaches the edge's sphere (its
 * midpoint, radius (1/2 + PS_EDGE_SLACK) L + max(r_a, r_b)), both grown by
 * twice their motion in the substep (the edge's farther-moved end's
 * |x - p|; h times the collider's speed |v_c| + |w| bound[j]); lengths are
 * taken as L1 norms (|x| + |y|: no square root, never shorter). The cull is
 * first taken at the pass's start for every edge (edge_near: 1 if any
 * collider is near): each closed body's box of its outline particles, grown
 * by its edges' largest reach, against each collider's reach, and then each
 * edge of a body that is near a collider against that collider, so a
 * thousand bodies far from the few obstacles cost a thousand box tests per
 * obstacle. The sweeps visit only the near edges, each collider culled again
 * at the current positions: an edge that a correction moves near a collider
 * waits for the next substep.
 *
 * Order (the NumPy twin follows it, so results are bitwise equal):
 * `iterations` sweeps, each over the closed bodies in row order and their
 * edges in outline order -- or, when `reverse` is set, bodies and edges
 * backward -- the colliders in index order and their features in index
 * order, each contact resolved at once (Gauss-Seidel); a sweep that finds no
 * contact ends the pass. The World reverses every other substep: two
 * contacts that share a particle (a box resting on two small discs) are
 * then resolved first one, then the other, and a symmetric scene is not
 * pushed sideways by the order (forward only, an XPBD box landing on two
 * small discs gained 0.34 m/s sideways; alternating, 0.01 m/s). Sums run
 * left to right. Returns the contacts resolved.
 *
 * In 3D (dim == 3) the same pass keeps features out of the triangles of closed
 * surfaces (a 3D body's outline rows, three a triangle, counter-clockwise seen
 * from outside; the triangles of an outline whose count is not a multiple of
 * three leave the rest out). Features of collider j:
 *   a polytope of four or more faces with a finite bound (a Box): its
 *   corners, radius 0: y = (o_f (n_g x n_h) + o_g (n_h x n_f) + o_h (n_f x n_g))
 *   / det, det = n_f . (n_g x n_h), for each triple of faces f < g < h with
 *   |det| > PS_CORNER_DET, kept if no other face e has n_e . y - o_e >
 *   PS_CORNER_TOL bound[j] (it lies on the polytope) and no face e < h other
 *   than f, g is within that of y (the triple of its three lowest faces gives
 *   each corner once); index order: triples in lexicographic order. Only the
 *   faces whose plane is within the triangle's reach (plus the collider's
 *   motion) of the triangle's centroid (in j's frame) can hold a corner near
 *   it (the corner is on all three planes), so triples of other faces are not
 *   tried: a box under a body costs three dot products per face, no triple,
 *   until a corner is near (a bit per face for the first PS_CORNER_FACES
 *   faces; later faces are never culled);
 *   a capsule (Sphere, Segment): its ends a and b (b only if it differs from
 *   a), with the capsule's radius -- a sphere smaller than the spacing of the
 *   surface particles is kept out by its centre.
 * Triangle (a, b, c), x now and p at the substep's start, its normal
 * n = (x_b - x_a) x (x_c - x_a) / L2 (L2 = that cross product's length, twice
 * the area; skipped unless L2 > PS_MIN_LENGTH^2), feature q of radius R: with
 * d = q - x_a, the barycentric weights of q's projection t_b = ((d x e2) . n)
 * / L2, t_c = ((e1 x d) . n) / L2, t_a = (1 - t_b) - t_c (e1 = x_b - x_a,
 * e2 = x_c - x_a), s = d . n, r_t = t_a r_a + t_b r_b + t_c r_c. A contact if
 * all three weights are > 0 (strictly: a feature over an edge or a corner of
 * the triangle belongs to the neighbour, or to the particle) and s < R + r_t,
 * and when s < 0, only if at the start q0 = q - h u was not farther inside
 * the start triangle's plane than PS_EDGE_SLACK sqrt(L2_0) (a length: the
 * square root of twice its area). Resolution as for an edge, with three
 * corners: w_k = t_k inv_k (0 for a corner whose support . N < 0), D = sum
 * t_k w_k, k_k = w_k / D capped at PS_EDGE_LEVER, x_k += d k_k N, so that the
 * triangle's point sum t_k x_k moves by exactly d N (uncapped); the
 * velocities, restitution, Coulomb friction, stuck and the reports on the
 * point's velocity sum t_k v_k, exactly as for an edge (component sums x, y,
 * z left to right; three-term sums (a + b) + c). Momentum likewise: the
 * corners' impulses m_k k_k dv = t_k dv / D sum to dv / D and have no moment
 * about the triangle's point.
 * The 3D cull: a triangle's reach about its centroid m = ((x_a + x_b) + x_c)
 * / 3 is (1 + 2 PS_EDGE_SLACK) dmax + max r + 2 moved (dmax: its corners'
 * largest L1 distance from m; moved: the largest L1 move of a corner in the
 * substep); a collider's reach is bound[j] + 2 h (|v|_1 + |w|_1 bound[j]).
 * At the pass's start, per closed body, one loop over its surface entries: its
 * box, its particles' largest L1 move and radius; no triangle's reach exceeds
 * emax = (1 + 2 PS_EDGE_SLACK) ext + max r + 2 moved (ext: the box's L1
 * extent, the sum of its sides, bounds any triangle's dmax). Against each
 * featured collider: the box grown by emax against the collider's reach, and
 * for a polytope, at least three faces within (ext / 2 + emax) + motion of
 * the box's centre (a corner near the body is on three face planes near it:
 * a body resting on a large box is near its top face only); then each
 * triangle of a near body, its sphere against the collider's and, for a
 * polytope, three faces within its reach plus the motion (edge_near: the flag
 * of all three of its entries). A body far from every feature costs one loop
 * over its surface entries. The sweeps: bodies in row order and their triangles in surface
 * order (backward when `reverse`), the colliders in index order and their
 * features in index order, each near triangle's sphere culled again at the
 * current positions.
 * Not covered: a collider's edge (a box's edge, a capsule's side) crossing a
 * triangle between its corners with every corner and feature outside (a thin
 * post met side-on by a coarse surface); only features are kept out.
 */
#include <math.h>
#include "internal.h"

#define PS_CLOSED 1 /* body flag: the outline encloses an area (pysoft/features/bodies.py) */

typedef struct {
    double *pos, *vel, *contact_normal, *contact_impulse, *support;
    int32_t *contact_collider, *stuck;
    const double *prev_pos, *radius, *mass, *inv_mass;
    const int32_t *kind;
    const double *center, *rotation, *velocity, *angular_velocity, *restitution, *friction, *keep;
    const int32_t *face_start, *face_count;
    const double *face_normal, *face_offset, *cap_a, *cap_b, *cap_radius, *bound;
    double h, rest_speed;
} Edges;

/* How many features collider j has (see the essay). */
static inline int feature_count(const Edges *s, int j)
{
    if (s->kind[j] == PS_CAPSULE) {
        const double *a = s->cap_a + 2L * j, *b = s->cap_b + 2L * j;
        return (a[0] == b[0] && a[1] == b[1]) ? 1 : 2;
    }
    return s->face_count[j] >= 3 ? s->face_count[j] : 0;
}

/* Feature f of collider j: world point q and radius R; 0 if it is not one (parallel faces). */
static inline int feature(const Edges *s, int j, int f, double *q, double *R)
{
    double y0, y1;
    if (s->kind[j] == PS_CAPSULE) {
        const double *y = (f ? s->cap_b : s->cap_a) + 2L * j;
        y0 = y[0];
        y1 = y[1];
        *R = s->cap_radius[j];
    } else {
        int m = s->face_count[j], f2 = f + 1 < m ? f + 1 : 0;
        const double *n1 = s->face_normal + 2L * (s->face_start[j] + f);
        const double *n2 = s->face_normal + 2L * (s->face_start[j] + f2);
        double o1 = s->face_offset[s->face_start[j] + f];
        double o2 = s->face_offset[s->face_start[j] + f2];
        double det = n1[0] * n2[1] - n1[1] * n2[0];
        if (!(det > 0.0)) return 0;
        y0 = (o1 * n2[1] - o2 * n1[1]) / det;
        y1 = (n1[0] * o2 - n2[0] * o1) / det;
        *R = 0.0;
    }
    const double *c = s->center + 2L * j, *Rm = s->rotation + 4L * j;
    q[0] = c[0] + (Rm[0] * y0 + Rm[1] * y1);
    q[1] = c[1] + (Rm[2] * y0 + Rm[3] * y1);
    return 1;
}

/* The cull (see the essay). Collider j's reach: its bound grown by twice its motion. */
static inline double collider_reach(const Edges *s, int j)
{
    const double *v = s->velocity + 2L * j;
    double speed = (fabs(v[0]) + fabs(v[1])) + fabs(s->angular_velocity[3L * j + 2]) * s->bound[j];
    return s->bound[j] + 2.0 * (s->h * speed);
}

/* Edge (ia, ib)'s reach about its midpoint. */
static inline double edge_reach(const Edges *s, int ia, int ib)
{
    const double *xa = s->pos + 2L * ia, *xb = s->pos + 2L * ib;
    const double *pa = s->prev_pos + 2L * ia, *pb = s->prev_pos + 2L * ib;
    double len = fabs(xb[0] - xa[0]) + fabs(xb[1] - xa[1]);
    double moved = fabs(xa[0] - pa[0]) + fabs(xa[1] - pa[1]);
    double moved_b = fabs(xb[0] - pb[0]) + fabs(xb[1] - pb[1]);
    if (moved_b > moved) moved = moved_b;
    double ra = s->radius[ia], rb = s->radius[ib];
    return ((0.5 + PS_EDGE_SLACK) * len + (rb > ra ? rb : ra)) + 2.0 * moved;
}

/* Do edge (ia, ib) (its reach `er`) and collider j (its reach `cr`) come near? */
static inline int edge_near_collider(const Edges *s, int ia, int ib, double er, int j, double cr)
{
    const double *xa = s->pos + 2L * ia, *xb = s->pos + 2L * ib, *c = s->center + 2L * j;
    double mx = 0.5 * (xa[0] + xb[0]) - c[0], my = 0.5 * (xa[1] + xb[1]) - c[1], lim = cr + er;
    return !(mx * mx + my * my > lim * lim);
}

/* Distance along one axis from x to the interval [lo, hi] (0 inside; an empty box, lo > hi
 * from no finite point, is infinitely far). */
static inline double gap(double x, double lo, double hi)
{
    return x < lo ? lo - x : (x > hi ? x - hi : 0.0);
}

/* Feature q (radius R) of collider j against edge (ia, ib): 1 if it was a contact. */
static int edge_feature(const Edges *s, int ia, int ib, int j, const double *q, double R)
{
    double *xa = s->pos + 2L * ia, *xb = s->pos + 2L * ib;
    double ex = xb[0] - xa[0], ey = xb[1] - xa[1], l2 = ex * ex + ey * ey, len = sqrt(l2);
    if (!(len > PS_MIN_LENGTH)) return 0;
    double dx = q[0] - xa[0], dy = q[1] - xa[1];
    double t = (dx * ex + dy * ey) / l2;
    if (!(t > 0.0 && t < 1.0)) return 0;
    double nx = ey / len, ny = -ex / len, ta = 1.0 - t;
    double sd = dx * nx + dy * ny;
    double reach = R + (ta * s->radius[ia] + t * s->radius[ib]);
    if (!(sd < reach)) return 0;
    /* the collider's surface velocity at q: u = v_c + w x (q - c) */
    const double *c = s->center + 2L * j, *vc = s->velocity + 2L * j;
    double w = s->angular_velocity[3L * j + 2];
    double ux = vc[0] - w * (q[1] - c[1]), uy = vc[1] + w * (q[0] - c[0]);
    const double *pa = s->prev_pos + 2L * ia, *pb = s->prev_pos + 2L * ib;
    if (sd < 0.0) { /* inside: only if it came through this edge in this substep */
        double fx = pb[0] - pa[0], fy = pb[1] - pa[1], l0 = sqrt(fx * fx + fy * fy);
        if (!(l0 > PS_MIN_LENGTH)) return 0;
        double qx0 = q[0] - s->h * ux, qy0 = q[1] - s->h * uy;
        double s0 = ((qx0 - pa[0]) * fy - (qy0 - pa[1]) * fx) / l0;
        if (!(s0 >= -PS_EDGE_SLACK * l0)) return 0;
    }
    double Nx = -nx, Ny = -ny; /* from the collider into the body */
    double wa = ta * s->inv_mass[ia], wb = t * s->inv_mass[ib];
    const double *sa = s->support + 2L * ia, *sb = s->support + 2L * ib;
    if (sa[0] * Nx + sa[1] * Ny < 0.0) wa = 0.0; /* an end resting on a collider stays on it */
    if (sb[0] * Nx + sb[1] * Ny < 0.0) wb = 0.0;
    double D = ta * wa + t * wb;
    if (!(D > 0.0)) return 0;
    double ka = wa / D, kb = wb / D, depth = reach - sd; /* each end's move per the point's */
    if (ka > PS_EDGE_LEVER) ka = PS_EDGE_LEVER;
    if (kb > PS_EDGE_LEVER) kb = PS_EDGE_LEVER;
    xa[0] = xa[0] + Nx * (depth * ka);
    xa[1] = xa[1] + Ny * (depth * ka);
    xb[0] = xb[0] + Nx * (depth * kb);
    xb[1] = xb[1] + Ny * (depth * kb);
    int ends[2] = {ia, ib};
    double share[2] = {ka, kb};
    for (int k = 0; k < 2; k++) {
        if (!(share[k] > 0.0)) continue;
        int i = ends[k];
        s->contact_collider[i] = j;
        s->contact_normal[2L * i] = Nx;
        s->contact_normal[2L * i + 1] = Ny;
        s->support[2L * i] = Nx;
        s->support[2L * i + 1] = Ny;
    }
    double *va = s->vel + 2L * ia, *vb = s->vel + 2L * ib;
    double vrx = (ta * va[0] + t * vb[0]) - ux, vry = (ta * va[1] + t * vb[1]) - uy;
    double vn = vrx * Nx + vry * Ny;
    if (!(vn < 0.0)) return 1;
    double vn_new = (-vn > s->rest_speed) ? -s->restitution[j] * vn : 0.0;
    double dvn = vn_new - vn;
    double vtx = vrx - vn * Nx, vty = vry - vn * Ny;
    double vt_len = sqrt(vtx * vtx + vty * vty), limit = s->friction[j] * dvn, scale;
    if (vt_len <= limit) {
        /* static friction: undo the substep's slip of the edge point along the surface */
        double slx = ((ta * xa[0] + t * xb[0]) - (ta * pa[0] + t * pb[0])) - s->h * ux;
        double sly = ((ta * xa[1] + t * xb[1]) - (ta * pa[1] + t * pb[1])) - s->h * uy;
        double sn = slx * Nx + sly * Ny;
        double stx = slx - sn * Nx, sty = sly - sn * Ny;
        xa[0] = xa[0] - stx * ka;
        xa[1] = xa[1] - sty * ka;
        xb[0] = xb[0] - stx * kb;
        xb[1] = xb[1] - sty * kb;
        if (s->friction[j] > 0.0) {
            if (ka > 0.0) s->stuck[ia] = 1;
            if (kb > 0.0) s->stuck[ib] = 1;
        }
        scale = 0.0;
    } else {
        scale = (1.0 - limit / vt_len) * s->keep[j];
    }
    double dvx = (scale - 1.0) * vtx + dvn * Nx, dvy = (scale - 1.0) * vty + dvn * Ny;
    va[0] = va[0] + dvx * ka;
    va[1] = va[1] + dvy * ka;
    vb[0] = vb[0] + dvx * kb;
    vb[1] = vb[1] + dvy * kb;
    if (ka > 0.0) s->contact_impulse[ia] = s->contact_impulse[ia] + s->mass[ia] * (dvn * ka);
    if (kb > 0.0) s->contact_impulse[ib] = s->contact_impulse[ib] + s->mass[ib] * (dvn * kb);
    return 1;
}

/* ---- 3D: closed surfaces' triangles against colliders' features (see the essay's last part) */

#define PS_CORNER_DET 1e-9   /* |n_f . (n_g x n_h)| below it: three faces meet in no corner */
#define PS_CORNER_TOL 1e-9   /* a corner this far (times the collider's bound) outside another
                              * face is not on the polytope; this close to it, on that face */
#define PS_CORNER_FACES 64   /* faces the corner cull keeps a bit for (more are never culled) */

/* Collider j's reach in 3D: its bound grown by twice its motion in the substep (L1 lengths). */
static inline double collider_motion3(const Edges *s, int j)
{
    const double *v = s->velocity + 3L * j, *w = s->angular_velocity + 3L * j;
    double speed = ((fabs(v[0]) + fabs(v[1])) + fabs(v[2]))
                   + ((fabs(w[0]) + fabs(w[1])) + fabs(w[2])) * s->bound[j];
    return 2.0 * (s->h * speed);
}

/* Whether collider j has features in 3D: a capsule always; a polytope of 4 or more faces
 * with a finite bound (a Box; a Plane has no corner). */
static inline int featured3(const Edges *s, int j)
{
    if (s->kind[j] == PS_CAPSULE) return 1;
    return s->face_count[j] >= 4 && s->bound[j] < INFINITY;
}

/* Triangle (ia, ib, ic)'s centroid m and its reach about it (the essay). */
static inline double tri_reach(const Edges *s, int ia, int ib, int ic, double *m)
{
    const double *x[3] = {s->pos + 3L * ia, s->pos + 3L * ib, s->pos + 3L * ic};
    const double *p[3] = {s->prev_pos + 3L * ia, s->prev_pos + 3L * ib, s->prev_pos + 3L * ic};
    for (int c = 0; c < 3; c++) m[c] = ((x[0][c] + x[1][c]) + x[2][c]) / 3.0;
    double dmax = 0.0, moved = 0.0, rmax = 0.0;
    for (int k = 0; k < 3; k++) {
        double d = (fabs(x[k][0] - m[0]) + fabs(x[k][1] - m[1])) + fabs(x[k][2] - m[2]);
        double mv = (fabs(x[k][0] - p[k][0]) + fabs(x[k][1] - p[k][1])) + fabs(x[k][2] - p[k][2]);
        double r = s->radius[k == 0 ? ia : (k == 1 ? ib : ic)];
        if (d > dmax) dmax = d;
        if (mv > moved) moved = mv;
        if (r > rmax) rmax = r;
    }
    return ((1.0 + 2.0 * PS_EDGE_SLACK) * dmax + rmax) + 2.0 * moved;
}

/* Do the spheres about m (reach er) and about collider j's centre (reach cr) meet? */
static inline int tri_near_collider(const Edges *s, const double *m, double er, int j, double cr)
{
    const double *c = s->center + 3L * j;
    double dx = m[0] - c[0], dy = m[1] - c[1], dz = m[2] - c[2], lim = cr + er;
    return !((dx * dx + dy * dy) + dz * dz > lim * lim);
}

/* a x b */
static inline void cross3(double *o, const double *a, const double *b)
{
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

static inline double dot3(const double *a, const double *b)
{
    return (a[0] * b[0] + a[1] * b[1]) + a[2] * b[2];
}

/* Feature q (radius R) of collider j against triangle (ia, ib, ic): 1 if it was a contact. */
static int tri_feature(const Edges *s, int ia, int ib, int ic, int j, const double *q, double R)
{
    int idx[3] = {ia, ib, ic};
    double *x[3], *v[3];
    const double *p[3];
    for (int k = 0; k < 3; k++) {
        x[k] = s->pos + 3L * idx[k];
        v[k] = s->vel + 3L * idx[k];
        p[k] = s->prev_pos + 3L * idx[k];
    }
    double e1[3], e2[3], d[3], cr[3], n[3];
    for (int c = 0; c < 3; c++) {
        e1[c] = x[1][c] - x[0][c];
        e2[c] = x[2][c] - x[0][c];
        d[c] = q[c] - x[0][c];
    }
    cross3(cr, e1, e2);
    double len = sqrt(dot3(cr, cr)); /* twice the area */
    if (!(len > PS_MIN_LENGTH * PS_MIN_LENGTH)) return 0;
    for (int c = 0; c < 3; c++) n[c] = cr[c] / len;
    double g[3];
    cross3(g, d, e2);
    double t1 = dot3(g, n) / len;
    cross3(g, e1, d);
    double t2 = dot3(g, n) / len, t0 = (1.0 - t1) - t2;
    if (!(t0 > 0.0 && t1 > 0.0 && t2 > 0.0)) return 0;
    double t[3] = {t0, t1, t2};
    double sd = dot3(d, n);
    double reach = R + ((t0 * s->radius[ia] + t1 * s->radius[ib]) + t2 * s->radius[ic]);
    if (!(sd < reach)) return 0;
    /* the collider's surface velocity at q: u = v_c + w x (q - c) */
    const double *cc = s->center + 3L * j, *vc = s->velocity + 3L * j;
    const double *w = s->angular_velocity + 3L * j;
    double rq[3] = {q[0] - cc[0], q[1] - cc[1], q[2] - cc[2]}, u[3];
    cross3(u, w, rq);
    for (int c = 0; c < 3; c++) u[c] = vc[c] + u[c];
    if (sd < 0.0) { /* inside: only if it came through this triangle in this substep */
        double f1[3], f2[3], c0[3], r0[3];
        for (int c = 0; c < 3; c++) {
            f1[c] = p[1][c] - p[0][c];
            f2[c] = p[2][c] - p[0][c];
            r0[c] = (q[c] - s->h * u[c]) - p[0][c];
        }
        cross3(c0, f1, f2);
        double a0 = sqrt(dot3(c0, c0));
        if (!(a0 > PS_MIN_LENGTH * PS_MIN_LENGTH)) return 0;
        double s0 = dot3(r0, c0) / a0;
        if (!(s0 >= -PS_EDGE_SLACK * sqrt(a0))) return 0;
    }
    double N[3] = {-n[0], -n[1], -n[2]}; /* from the collider into the body */
    double wk[3], D = 0.0, kk[3];
    for (int k = 0; k < 3; k++) {
        wk[k] = t[k] * s->inv_mass[idx[k]];
        if (dot3(s->support + 3L * idx[k], N) < 0.0) wk[k] = 0.0; /* resting on a collider */
    }
    D = (t0 * wk[0] + t1 * wk[1]) + t2 * wk[2];
    if (!(D > 0.0)) return 0;
    double depth = reach - sd;
    for (int k = 0; k < 3; k++) {
        kk[k] = wk[k] / D; /* each corner's move per the point's */
        if (kk[k] > PS_EDGE_LEVER) kk[k] = PS_EDGE_LEVER;
    }
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 3; c++) x[k][c] = x[k][c] + N[c] * (depth * kk[k]);
    for (int k = 0; k < 3; k++) {
        if (!(kk[k] > 0.0)) continue;
        int i = idx[k];
        s->contact_collider[i] = j;
        for (int c = 0; c < 3; c++) {
            s->contact_normal[3L * i + c] = N[c];
            s->support[3L * i + c] = N[c];
        }
    }
    double vr[3];
    for (int c = 0; c < 3; c++) vr[c] = ((t0 * v[0][c] + t1 * v[1][c]) + t2 * v[2][c]) - u[c];
    double vn = dot3(vr, N);
    if (!(vn < 0.0)) return 1;
    double vn_new = (-vn > s->rest_speed) ? -s->restitution[j] * vn : 0.0;
    double dvn = vn_new - vn, vt[3];
    for (int c = 0; c < 3; c++) vt[c] = vr[c] - vn * N[c];
    double vt_len = sqrt(dot3(vt, vt)), limit = s->friction[j] * dvn, scale;
    if (vt_len <= limit) {
        /* static friction: undo the substep's slip of the triangle's point along the surface */
        double sl[3];
        for (int c = 0; c < 3; c++)
            sl[c] = (((t0 * x[0][c] + t1 * x[1][c]) + t2 * x[2][c])
                     - ((t0 * p[0][c] + t1 * p[1][c]) + t2 * p[2][c])) - s->h * u[c];
        double sn = dot3(sl, N);
        for (int c = 0; c < 3; c++) {
            double st = sl[c] - sn * N[c];
            for (int k = 0; k < 3; k++) x[k][c] = x[k][c] - st * kk[k];
        }
        if (s->friction[j] > 0.0)
            for (int k = 0; k < 3; k++)
                if (kk[k] > 0.0) s->stuck[idx[k]] = 1;
        scale = 0.0;
    } else {
        scale = (1.0 - limit / vt_len) * s->keep[j];
    }
    for (int c = 0; c < 3; c++) {
        double dv = (scale - 1.0) * vt[c] + dvn * N[c];
        for (int k = 0; k < 3; k++) v[k][c] = v[k][c] + dv * kk[k];
    }
    for (int k = 0; k < 3; k++)
        if (kk[k] > 0.0)
            s->contact_impulse[idx[k]] = s->contact_impulse[idx[k]] + s->mass[idx[k]] * (dvn * kk[k]);
    return 1;
}

/* World point of local y on collider j: c + R y. */
static inline void world_point(const Edges *s, int j, const double *y, double *q)
{
    const double *c = s->center + 3L * j, *Rm = s->rotation + 9L * j;
    for (int a = 0; a < 3; a++) q[a] = c[a] + ((Rm[3 * a] * y[0] + Rm[3 * a + 1] * y[1]) + Rm[3 * a + 2] * y[2]);
}

/* How many of polytope j's faces have their plane within lim of the world point m (a NaN
 * counts as near). */
static inline int corner_faces(const Edges *s, int j, const double *m, double lim)
{
    int nf = s->face_count[j], count = 0;
    const double *fn = s->face_normal + 3L * s->face_start[j], *fo = s->face_offset + s->face_start[j];
    const double *c = s->center + 3L * j, *Rm = s->rotation + 9L * j;
    double dm[3] = {m[0] - c[0], m[1] - c[1], m[2] - c[2]}, ml[3];
    for (int a = 0; a < 3; a++) ml[a] = (Rm[a] * dm[0] + Rm[3 + a] * dm[1]) + Rm[6 + a] * dm[2];
    for (int f = 0; f < nf; f++)
        if (!(fabs(dot3(fn + 3L * f, ml) - fo[f]) > lim)) count++;
    return count;
}

/* Collider j's features against triangle (ia, ib, ic) (its centroid m, reach er, already
 * found near j): the contacts resolved. A capsule's ends a (and b if it differs); a
 * polytope's corners, triple by triple (f < g < h) of the faces that could hold a corner
 * near the triangle (the corner cull of the essay). */
static int tri_collider(const Edges *s, int ia, int ib, int ic, const double *m, double er, int j)
{
    double q[3];
    if (s->kind[j] == PS_CAPSULE) {
        const double *a = s->cap_a + 3L * j, *b = s->cap_b + 3L * j;
        double R = s->cap_radius[j];
        int found = 0;
        world_point(s, j, a, q);
        found += tri_feature(s, ia, ib, ic, j, q, R);
        if (!(a[0] == b[0] && a[1] == b[1] && a[2] == b[2])) {
            world_point(s, j, b, q);
            found += tri_feature(s, ia, ib, ic, j, q, R);
        }
        return found;
    }
    int nf = s->face_count[j];
    const double *fn = s->face_normal + 3L * s->face_start[j], *fo = s->face_offset + s->face_start[j];
    const double *c = s->center + 3L * j, *Rm = s->rotation + 9L * j;
    double dm[3] = {m[0] - c[0], m[1] - c[1], m[2] - c[2]}, ml[3];
    for (int a = 0; a < 3; a++) ml[a] = (Rm[a] * dm[0] + Rm[3 + a] * dm[1]) + Rm[6 + a] * dm[2];
    double lim = er + collider_motion3(s, j), tol = PS_CORNER_TOL * s->bound[j];
    uint64_t near = 0;
    for (int f = 0; f < nf && f < PS_CORNER_FACES; f++)
        if (!(fabs(dot3(fn + 3L * f, ml) - fo[f]) > lim)) near |= (uint64_t)1 << f;
#define PS_NEAR_FACE(f) ((f) >= PS_CORNER_FACES || ((near >> (f)) & 1u))
    int found = 0;
    for (int f = 0; f < nf; f++) {
        if (!PS_NEAR_FACE(f)) continue;
        for (int g = f + 1; g < nf; g++) {
            if (!PS_NEAR_FACE(g)) continue;
            for (int hh = g + 1; hh < nf; hh++) {
                if (!PS_NEAR_FACE(hh)) continue;
                const double *n1 = fn + 3L * f, *n2 = fn + 3L * g, *n3 = fn + 3L * hh;
                double c23[3], c31[3], c12[3];
                cross3(c23, n2, n3);
                cross3(c31, n3, n1);
                cross3(c12, n1, n2);
                double det = dot3(n1, c23);
                if (!(fabs(det) > PS_CORNER_DET)) continue;
                double y[3];
                for (int a = 0; a < 3; a++) y[a] = ((fo[f] * c23[a] + fo[g] * c31[a]) + fo[hh] * c12[a]) / det;
                int corner = 1;
                for (int e = 0; e < nf && corner; e++) {
                    if (e == f || e == g || e == hh) continue;
                    double out = dot3(fn + 3L * e, y) - fo[e];
                    /* outside a face: not on the polytope; on a face of a lower index than
                     * hh: another triple (the three lowest of its faces) gives this corner */
                    if (!(out <= tol) || (e < hh && out >= -tol)) corner = 0;
                }
                if (!corner) continue;
                world_point(s, j, y, q);
                found += tri_feature(s, ia, ib, ic, j, q, 0.0);
            }
        }
    }
#undef PS_NEAR_FACE
    return found;
}

/* The 3D pass: closed bodies' surface triangles (three outline rows each) against every
 * featured collider (the essay). */
static int surfaces_collide(const Edges *s, int32_t *edge_near, const int32_t *outline,
                            const int32_t *outline_start, const int32_t *outline_count,
                            const int32_t *body_flags, int nb, int k, int iterations, int reverse)
{
    for (int b = 0; b < nb; b++) {
        int m = outline_count[b] / 3;
        if (!(body_flags[b] & PS_CLOSED) || m < 1) continue;
        const int32_t *o = outline + outline_start[b];
        int32_t *near = edge_near + outline_start[b];
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        double moved = 0.0, rmax = 0.0, mc[3];
        for (int e = 0; e < 3 * m; e++) {
            const double *x = s->pos + 3L * o[e], *p = s->prev_pos + 3L * o[e];
            for (int c = 0; c < 3; c++) {
                if (x[c] < lo[c]) lo[c] = x[c];
                if (x[c] > hi[c]) hi[c] = x[c];
            }
            double mv = (fabs(x[0] - p[0]) + fabs(x[1] - p[1])) + fabs(x[2] - p[2]);
            if (mv > moved) moved = mv;
            if (s->radius[o[e]] > rmax) rmax = s->radius[o[e]];
            near[e] = 0;
        }
        /* every triangle's reach is at most the one of a triangle as large as the box */
        double ext = ((hi[0] - lo[0]) + (hi[1] - lo[1])) + (hi[2] - lo[2]);
        double emax = ((1.0 + 2.0 * PS_EDGE_SLACK) * ext + rmax) + 2.0 * moved;
        double bc[3] = {0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])};
        for (int j = 0; j < k; j++) {
            if (!featured3(s, j)) continue;
            const double *c = s->center + 3L * j;
            double motion = collider_motion3(s, j), cr = s->bound[j] + motion;
            double dx = gap(c[0], lo[0], hi[0]), dy = gap(c[1], lo[1], hi[1]), dz = gap(c[2], lo[2], hi[2]);
            double lim = cr + emax;
            if ((dx * dx + dy * dy) + dz * dz > lim * lim) continue;
            /* a polytope's corner near the body lies on three face planes near the box's sphere */
            if (s->kind[j] != PS_CAPSULE && corner_faces(s, j, bc, 0.5 * ext + emax + motion) < 3) continue;
            for (int t = 0; t < m; t++) {
                if (near[3 * t]) continue;
                double er = tri_reach(s, o[3 * t], o[3 * t + 1], o[3 * t + 2], mc);
                if (!tri_near_collider(s, mc, er, j, cr)) continue;
                if (s->kind[j] != PS_CAPSULE && corner_faces(s, j, mc, er + motion) < 3) continue;
                near[3 * t] = near[3 * t + 1] = near[3 * t + 2] = 1;
            }
        }
    }
    int contacts = 0;
    for (int it = 0; it < iterations; it++) {
        int found = 0;
        for (int bi = 0; bi < nb; bi++) {
            int b = reverse ? nb - 1 - bi : bi, m = outline_count[b] / 3;
            if (!(body_flags[b] & PS_CLOSED) || m < 1) continue;
            const int32_t *o = outline + outline_start[b];
            const int32_t *near = edge_near + outline_start[b];
            for (int ti = 0; ti < m; ti++) {
                int t = reverse ? m - 1 - ti : ti;
                if (!near[3 * t]) continue;
                int ia = o[3 * t], ib = o[3 * t + 1], ic = o[3 * t + 2];
                double mc[3], er = tri_reach(s, ia, ib, ic, mc);
                for (int j = 0; j < k; j++) {
                    if (!featured3(s, j)) continue;
                    if (!tri_near_collider(s, mc, er, j, s->bound[j] + collider_motion3(s, j))) continue;
                    found += tri_collider(s, ia, ib, ic, mc, er, j);
                }
            }
        }
        contacts += found;
        if (!found) break;
    }
    return contacts;
}

int ps_edge_collide(double *pos, double *vel, int32_t *contact_collider, double *contact_normal,
                    double *contact_impulse, double *support, int32_t *stuck,
                    int32_t *edge_near, const double *prev_pos, const double *radius,
                    const double *mass, const double *inv_mass, const int32_t *outline,
                    const int32_t *outline_start, const int32_t *outline_count,
                    const int32_t *body_flags, const int32_t *kind, const double *center,
                    const double *rotation, const double *velocity,
                    const double *angular_velocity, const double *restitution,
                    const double *friction, const double *keep, const int32_t *face_start,
                    const int32_t *face_count, const double *face_normal,
                    const double *face_offset, const double *cap_a, const double *cap_b,
                    const double *cap_radius, const double *bound, int n, int nb, int k,
                    int nfaces, int dim, int iterations, int reverse, double h,
                    double rest_speed)
{
    (void)n;
    (void)nfaces;
    Edges s = {pos, vel, contact_normal, contact_impulse, support, contact_collider, stuck, prev_pos,
               radius, mass, inv_mass, kind, center, rotation, velocity, angular_velocity,
               restitution, friction, keep, face_start, face_count, face_normal, face_offset,
               cap_a, cap_b, cap_radius, bound, h, rest_speed};
    if (dim == 3)
        return surfaces_collide(&s, edge_near, outline, outline_start, outline_count, body_flags,
                                nb, k, iterations, reverse);
    if (dim != 2) return 0;
    /* the cull at the pass's start: is any collider near each edge? First a body's box of its
     * outline particles, grown by its edges' largest reach, against each collider's reach;
     * then each edge of a body near a collider against that collider */
    for (int b = 0; b < nb; b++) {
        int m = outline_count[b];
        if (!(body_flags[b] & PS_CLOSED) || m < 3) continue;
        const int32_t *o = outline + outline_start[b];
        int32_t *near = edge_near + outline_start[b];
        double lx = INFINITY, ly = INFINITY, hx = -INFINITY, hy = -INFINITY, emax = 0.0;
        for (int e = 0; e < m; e++) {
            const double *x = pos + 2L * o[e];
            if (x[0] < lx) lx = x[0];
            if (x[0] > hx) hx = x[0];
            if (x[1] < ly) ly = x[1];
            if (x[1] > hy) hy = x[1];
            double er = edge_reach(&s, o[e], o[e + 1 < m ? e + 1 : 0]);
            if (er > emax) emax = er;
            near[e] = 0;
        }
        for (int j = 0; j < k; j++) {
            if (!feature_count(&s, j)) continue;
            const double *c = center + 2L * j;
            double cr = collider_reach(&s, j), dx = gap(c[0], lx, hx), dy = gap(c[1], ly, hy);
            double lim = cr + emax;
            if (dx * dx + dy * dy > lim * lim) continue;
            for (int e = 0; e < m; e++) {
                int ia = o[e], ib = o[e + 1 < m ? e + 1 : 0];
                if (!near[e] && edge_near_collider(&s, ia, ib, edge_reach(&s, ia, ib), j, cr))
                    near[e] = 1;
            }
        }
    }
    int contacts = 0;
    for (int it = 0; it < iterations; it++) {
        int found = 0;
        for (int bi = 0; bi < nb; bi++) {
            int b = reverse ? nb - 1 - bi : bi, m = outline_count[b];
            if (!(body_flags[b] & PS_CLOSED) || m < 3) continue;
            const int32_t *o = outline + outline_start[b];
            const int32_t *near = edge_near + outline_start[b];
            for (int ei = 0; ei < m; ei++) {
                int e = reverse ? m - 1 - ei : ei;
                if (!near[e]) continue;
                int ia = o[e], ib = o[e + 1 < m ? e + 1 : 0];
                double er = edge_reach(&s, ia, ib);
                for (int j = 0; j < k; j++) {
                    int nf = feature_count(&s, j);
                    if (!nf || !edge_near_collider(&s, ia, ib, er, j, collider_reach(&s, j)))
                        continue;
                    for (int f = 0; f < nf; f++) {
                        double q[2], R;
                        if (feature(&s, j, f, q, &R)) found += edge_feature(&s, ia, ib, j, q, R);
                    }
                }
            }
        }
        contacts += found;
        if (!found) break;
    }
    return contacts;
}
