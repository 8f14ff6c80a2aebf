/* contacts.c -- bodies against bodies, in the collide pass (2D; 3D in contacts3d.c).
 *
 * After particles, then outline edges, meet colliders (collide.c, edges.c),
 * each substep, particles meet the outlines of soft bodies (JellyCar's body
 * collision, seed 004; Mueller et al. 2020, "Detailed rigid body simulation
 * with extended position based dynamics", for the positional friction):
 *
 *   edge contacts   a particle i against a closed body B it does not belong
 *                   to: if i is inside B's outline (crossing number: edges
 *                   straddling its height with i on their left, counted from
 *                   the last edge round, products instead of a division), it is
 *                   pushed out through the edge it entered by during the
 *                   substep (an edge whose side it crossed, from the substep's
 *                   start positions prev_pos to now, within the edge; of
 *                   several, the one it met most head-on), or else the
 *                   nearest edge; if i
 *                   is outside but nearer an edge than r_i + r_edge, it is
 *                   pushed away from it. With self-collision, an outline
 *                   particle that crossed one of its own body's edges (not
 *                   its own two) is pushed back the same way.
 *   particle pairs  particles with radii: free particles (when
 *                   particle_collisions), members of open bodies (ropes), and
 *                   members of a self-colliding body (pairs that overlap in
 *                   the rest shape excepted).
 *
 * A contact of particle i with the point q = (1 - t) x_a + t x_b of an edge
 * (a == b, t = 0 for a particle pair), normal n, separation s = r_i + r_q:
 *   C = (x_i - q) . n - s;  if C < 0:  W = w_i + (1-t)^2 w_a + t^2 w_b,
 *   x_i += w_i (-C/W) n,  x_a -= (1-t) w_a (-C/W) n,  x_b -= t w_b (-C/W) n
 * (linear momentum is conserved: the masses times the moves sum to zero). A
 * particle that met a collider in this substep is not moved into it: its
 * inverse mass counts as 0 for a contact that would push it along -support
 * (collide.c's `support`), so a stack resting on a floor is held by the floor
 * at once rather than a particle a substep.
 * Then, on the relative velocity v_r = v_i - ((1-t) v_a + t v_b), vn = v_r . n:
 * the velocities follow the push (-C / h, at most the approach speed plus
 * PS_MAX_PUSHOUT: an overlap met at rest comes apart at that speed, not in
 * one substep), as in position-based dynamics, so that positions and
 * velocities agree; and an approach ends at vn' = -e vn (0 below
 * rest_speed). dvn, the relative normal velocity change of both, is the
 * normal impulse P = dvn / W. Coulomb friction on the tangential part v_t
 * is bounded by mu dvn: static (the substep's relative tangential
 * displacement within mu dvn h) undoes that displacement (no creep) and
 * removes v_t; kinetic shrinks |v_t| by mu dvn. Each impulse J goes
 * +w_i J to i, -(1-t) w_a J to a and -t w_b J to b. Materials mix as in Box2D: mu = sqrt(mu_1 mu_2), e = max.
 * A particle's material and filter are its body's (owner >= 0), or its own
 * (a free particle, or one shared by several bodies: owner == -2). A pair
 * collides only if each one's category meets the other's mask.
 *
 * Broad phase, linear in particles, with candidate lists kept from substep
 * to substep (Box2D's fat boxes, or the Verlet lists of molecular dynamics):
 * each target body's outline bounding box (from the positions at the pass's
 * start, grown by twice the largest radius; kept with its outline's largest
 * radius, so a particle outside a body with no radius on either side is let
 * go before the edge search) is the body's box. To list the candidates, the
 * boxes grown by a quarter of a cell on each side are entered in a spatial
 * hash of square cells (side: half the boxes' mean extent, doubled until the
 * entries fit `nentries`), and each particle records the bodies
 * whose grown box holds it (fat_first, fat_count into fat_body, bodies
 * ascending). Each pass then tests each listed body's own box. The lists are
 * kept while no particle is farther than a slack of 0.45 times that growth
 * from where they were made (fat_pos) -- a box then moves by at most the
 * slack too, so every body whose box holds a particle is on its list, with a
 * tenth of the growth to spare for rounding -- and the layout is the same (the
 * counts, the largest radius, particle_collisions, and a 64-bit signature of
 * the owners, flags and outlines); otherwise they are made again, in turns
 * if the pairs outgrow `npairs`. Particle pairs use a second hash of the
 * particles (cells four times the largest radius) and each particle's 3 x 3
 * cells. The candidates are defined by the start positions alone -- (i, B)
 * with i in B's box; (i, j) with |x_i - x_j| <= 2 (r_i + r_j) -- so the
 * hashing and the lists change nothing but speed.
 *
 * Order (the NumPy twin follows it, so results are bitwise equal):
 * `iterations` times: every edge pair (i ascending, B ascending), then every
 * particle pair (i ascending, j ascending), each resolved at once with the
 * current positions (Gauss-Seidel). Sums run left to right.
 * Contacts are reported per particle i: the last body hit (row; -2 for a
 * free particle), the contact point and normal, and the accumulated normal
 * impulse. Returns the number of contacts resolved.
 */
#include <math.h>
#include <string.h>
#include "contact_common.h"

/* A crossing this far (a fraction of the edge) past an edge's end still counts: a corner
 * that meets a corner enters through both edges, and the head-on rule picks one. */
#define PS_ENTRY_SLACK 0.01

static inline double cross2(double ax, double ay, double bx, double by)
{
    return ax * by - ay * bx;
}

static inline int bucket_of(long cx, long cy, int nbuckets)
{
    uint64_t hx = (uint64_t)cx * 73856093u, hy = (uint64_t)cy * 19349663u;
    return (int)((hx ^ hy) & (uint64_t)(nbuckets - 1));
}

/* Resolve the contact of particle i with q = (1 - t) x_a + t x_b along unit n at
 * separation sep (see the essay). Returns 1 if they were closer than sep. */
static int resolve(const Scene *s, int i, int a, int b, double t, double nx, double ny,
                   double sep, double mu, double e, int report, double qx, double qy)
{
    double *x = s->pos + 2L * i, *xa = s->pos + 2L * a, *xb = s->pos + 2L * b;
    double ta = 1.0 - t;
    double C = ((x[0] - (ta * xa[0] + t * xb[0])) * nx + (x[1] - (ta * xa[1] + t * xb[1])) * ny) - sep;
    if (!(C < 0.0)) return 0;
    double wi = s->inv_mass[i], wa = s->inv_mass[a], wb = s->inv_mass[b];
    /* a particle resting on a collider is not pushed into it (i moves along +n, a, b along -n) */
    const double *si = s->support + 2L * i, *sa = s->support + 2L * a, *sb = s->support + 2L * b;
    if (si[0] * nx + si[1] * ny < 0.0) wi = 0.0;
    if (sa[0] * nx + sa[1] * ny > 0.0) wa = 0.0;
    if (sb[0] * nx + sb[1] * ny > 0.0) wb = 0.0;
    double W = (wi + ta * ta * wa) + t * t * wb;
    if (!(W > 0.0)) return 0;
    double inv_w = 1.0 / W, lam = -C * inv_w;
    x[0] = x[0] + wi * lam * nx;
    x[1] = x[1] + wi * lam * ny;
    xa[0] = xa[0] - ta * wa * lam * nx;
    xa[1] = xa[1] - ta * wa * lam * ny;
    xb[0] = xb[0] - t * wb * lam * nx;
    xb[1] = xb[1] - t * wb * lam * ny;
    double *v = s->vel + 2L * i, *va = s->vel + 2L * a, *vb = s->vel + 2L * b;
    double vrx = v[0] - (ta * va[0] + t * vb[0]), vry = v[1] - (ta * va[1] + t * vb[1]);
    double vn = vrx * nx + vry * ny;
    /* Velocities follow the push (positions and velocities must agree: a push alone would
     * leave particles stacked on each other moving into each other for ever), up to the
     * approach speed plus PS_MAX_PUSHOUT, so an overlap met at rest comes apart gently.
     * Then the approach: vn' = -e vn for a fast one, else 0. dvn is the relative normal
     * velocity change of both, P its impulse per unit inverse mass, and Coulomb's bound on
     * friction mu dvn. */
    double follow = -C * s->inv_h, cap = (vn < 0.0 ? -vn : 0.0) + PS_MAX_PUSHOUT;
    if (follow > cap) follow = cap;
    double target = vn < 0.0 ? ((-vn > s->rest_speed) ? -e * vn : 0.0) : vn;
    double dvn = (target > vn + follow ? target : vn + follow) - vn;
    double P = dvn * inv_w, limit = mu * dvn;
    double vtx = vrx - vn * nx, vty = vry - vn * ny, ptx, pty, vt_len;
    /* the substep's relative tangential displacement */
    const double *p = s->prev_pos + 2L * i, *pa = s->prev_pos + 2L * a, *pb = s->prev_pos + 2L * b;
    double sx = (x[0] - p[0]) - (ta * (xa[0] - pa[0]) + t * (xb[0] - pb[0]));
    double sy = (x[1] - p[1]) - (ta * (xa[1] - pa[1]) + t * (xb[1] - pb[1]));
    double sn = sx * nx + sy * ny, stx = sx - sn * nx, sty = sy - sn * ny;
    double slip = limit * s->h; /* the most static friction holds this substep */
    if (stx * stx + sty * sty <= slip * slip) {
        /* static: undo it, and stop the relative tangential motion */
        stx = stx * inv_w;
        sty = sty * inv_w;
        x[0] = x[0] - wi * stx;
        x[1] = x[1] - wi * sty;
        xa[0] = xa[0] + ta * wa * stx;
        xa[1] = xa[1] + ta * wa * sty;
        xb[0] = xb[0] + t * wb * stx;
        xb[1] = xb[1] + t * wb * sty;
        ptx = -vtx * inv_w;
        pty = -vty * inv_w;
    } else if ((vt_len = sqrt(vtx * vtx + vty * vty)) > limit) {
        double k = limit / (vt_len * W);
        ptx = -vtx * k;
        pty = -vty * k;
    } else {
        ptx = -vtx * inv_w;
        pty = -vty * inv_w;
    }
    double jx = P * nx + ptx, jy = P * ny + pty;
    v[0] = v[0] + wi * jx;
    v[1] = v[1] + wi * jy;
    va[0] = va[0] - ta * wa * jx;
    va[1] = va[1] - ta * wa * jy;
    vb[0] = vb[0] - t * wb * jx;
    vb[1] = vb[1] - t * wb * jy;
    s->contact_body[i] = report;
    s->contact_point[2L * i] = qx;
    s->contact_point[2L * i + 1] = qy;
    s->contact_normal[2L * i] = nx;
    s->contact_normal[2L * i + 1] = ny;
    s->contact_impulse[i] = s->contact_impulse[i] + P;
    return 1;
}

/* Whether (x, y) is inside the outline o[0 .. m) of the current positions: the parity of the
 * edges (o[j - 1], o[j]) (o[-1] = o[m - 1]) that straddle the height y with the point on
 * their left (a ray toward -x; products, no division). Only the straddling edges count; the
 * x86-64-v3 build tests four edges a time with the same arithmetic on each (a lane's product
 * is the scalar loop's, whatever the other lanes hold: the same answer). */
static int crossings(const double *pos, const int32_t *o, int m, double x, double y)
{
    int inside = 0, j = 0;
    const double *a = pos + 2L * o[m - 1];
#if defined(__AVX2__)
    const __m256d vx = _mm256_set1_pd(x), vy = _mm256_set1_pd(y), zero = _mm256_setzero_pd();
    __m256d odd = zero;  /* per lane, the parity of its hits (in the sign bit) */
    for (; j + 4 <= m; j += 4) {
        /* rows [b0, b2] and [b1, b3] of the ends b_k = o[j + k], a_k = o[j + k - 1] */
        long a0 = a - pos, a1 = 2L * o[j], a2 = 2L * o[j + 1], a3 = 2L * o[j + 2];
        __m256d b02 = two_rows(pos, 2L * o[j], 2L * o[j + 2]);
        __m256d b13 = two_rows(pos, 2L * o[j + 1], 2L * o[j + 3]);
        __m256d a02 = two_rows(pos, a0, a2), a13 = two_rows(pos, a1, a3);
        __m256d bx = _mm256_unpacklo_pd(b02, b13), by = _mm256_unpackhi_pd(b02, b13);
        __m256d ax = _mm256_unpacklo_pd(a02, a13), ay = _mm256_unpackhi_pd(a02, a13);
        __m256d straddle = _mm256_xor_pd(_mm256_cmp_pd(by, vy, _CMP_GT_OQ),
                                         _mm256_cmp_pd(ay, vy, _CMP_GT_OQ));
        __m256d dy = _mm256_sub_pd(by, ay);
        __m256d c = _mm256_sub_pd(_mm256_mul_pd(_mm256_sub_pd(vx, ax), dy),
                                  _mm256_mul_pd(_mm256_sub_pd(vy, ay), _mm256_sub_pd(bx, ax)));
        __m256d left = _mm256_or_pd(
            _mm256_and_pd(_mm256_cmp_pd(c, zero, _CMP_LT_OQ), _mm256_cmp_pd(dy, zero, _CMP_GT_OQ)),
            _mm256_and_pd(_mm256_cmp_pd(c, zero, _CMP_GT_OQ), _mm256_cmp_pd(dy, zero, _CMP_LT_OQ)));
        odd = _mm256_xor_pd(odd, _mm256_and_pd(straddle, left));
        a = pos + 2L * o[j + 3];
    }
    inside = __builtin_popcount((unsigned)_mm256_movemask_pd(odd)) & 1;
#endif
    int above = a[1] > y;
    for (; j < m; j++) {
        const double *b = pos + 2L * o[j];
        int b_above = b[1] > y;
        if (b_above != above) {
            double dy = b[1] - a[1];
            double c = (x - a[0]) * dy - (y - a[1]) * (b[0] - a[0]);
            inside ^= ((c < 0.0) & (dy > 0.0)) | ((c > 0.0) & (dy < 0.0));
        }
        above = b_above;
        a = b;
    }
    return inside;
}

/* Is edge (a, b) of particle i's own body near i in the rest shape (i one of its ends, or
 * nearer the edge than its length)? Self-collision leaves such edges alone: a tight bend
 * brings them close without anything crossing. */
static int near_at_rest(const Scene *s, int i, int a, int b)
{
    if (a == i || b == i) return 1;
    const double *q = s->rest_pos + 2L * i, *ra = s->rest_pos + 2L * a, *rb = s->rest_pos + 2L * b;
    double ex = rb[0] - ra[0], ey = rb[1] - ra[1], l2 = ex * ex + ey * ey, t = 0.0;
    if (l2 > 0.0) {
        t = ((q[0] - ra[0]) * ex + (q[1] - ra[1]) * ey) / l2;
        t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    }
    double dx = q[0] - (ra[0] + t * ex), dy = q[1] - (ra[1] + t * ey);
    return dx * dx + dy * dy < l2;
}

/* Particle i against body B's outline (see the essay). Returns 1 on contact. */
static int edge_contact(const Scene *s, int i, int B, double rB)
{
    int o_i = s->owner[i];
    int own = o_i == B || (o_i == PS_SHARED && in_range(s->member + s->member_start[B],
                                                        s->member_count[B], i));
    int flags = s->flags[B];
    const int32_t *o = s->outline + s->outline_start[B];
    int m = s->outline_count[B];
    if (own) {
        /* an open body (a rope) self-collides by its particles alone */
        if ((flags & (PS_SELF | PS_CLOSED)) != (PS_SELF | PS_CLOSED) || o_i != B || !in_range(o, m, i))
            return 0;
    } else {
        if (!(flags & PS_CLOSED)) return 0;
        if (!(cat_of(s, i) & (uint32_t)s->body_mask[B]) || !((uint32_t)s->body_category[B] & mask_of(s, i)))
            return 0;
    }
    const double *pos = s->pos, *prev = s->prev_pos;
    double x = pos[2L * i], y = pos[2L * i + 1], px = prev[2L * i], py = prev[2L * i + 1];
    int inside = own ? 0 : crossings(pos, o, m, x, y);  /* the current outline's */
    if (!inside && !own && !(s->radius[i] + rB > 0.0))
        return 0; /* outside, and no radius to keep a distance with */
    /* the edge entered by during the substep: outside its line at the start, inside now,
     * crossed within the edge; of several, the one met most head-on (the motion relative
     * to the edge most against its outward normal: a corner sliding down along a side it
     * is flush with enters through the top, not the side) */
    int entry = -1;
    double head_on = 0.0;
    if (inside || own) {
        const double *ep = s->edge + 4L * s->outline_start[B];
        for (int j = 0; j < m; j++) {
            /* inside this edge's line at the start: most edges, passed over at once */
            const double *g = ep + 4L * j;
            double s0 = cross2(g[2], g[3], px - g[0], py - g[1]);
            if (!(s0 <= 0.0)) continue;
            int ia = o[j], ib = o[j + 1 < m ? j + 1 : 0];
            const double *a0 = prev + 2L * ia, *b0 = prev + 2L * ib;
            if (own && near_at_rest(s, i, ia, ib)) continue;
            const double *a1 = pos + 2L * ia, *b1 = pos + 2L * ib;
            double s1 = cross2(b1[0] - a1[0], b1[1] - a1[1], x - a1[0], y - a1[1]);
            if (!(s1 > 0.0)) continue;
            double tc = s0 / (s0 - s1);
            double cx = px + tc * (x - px), cy = py + tc * (y - py);
            double ax = a0[0] + tc * (a1[0] - a0[0]), ay = a0[1] + tc * (a1[1] - a0[1]);
            double ex = (b0[0] + tc * (b1[0] - b0[0])) - ax, ey = (b0[1] + tc * (b1[1] - b0[1])) - ay;
            double l2 = ex * ex + ey * ey;
            if (!(l2 > 0.0)) continue;
            double u = (cx - ax) * ex + (cy - ay) * ey; /* the crossing along the edge, times l2 */
            if (!(u >= -PS_ENTRY_SLACK * l2 && u <= (1.0 + PS_ENTRY_SLACK) * l2)) continue;
            double fx = b1[0] - a1[0], fy = b1[1] - a1[1], len = sqrt(fx * fx + fy * fy);
            if (!(len > PS_MIN_LENGTH)) continue;
            double rx = (x - px) - 0.5 * ((a1[0] - a0[0]) + (b1[0] - b0[0]));
            double ry = (y - py) - 0.5 * ((a1[1] - a0[1]) + (b1[1] - b0[1]));
            double score = (rx * fy + ry * -fx) / len;
            if (entry < 0 || score < head_on) {
                head_on = score;
                entry = j;
            }
        }
    }
    /* the nearest edge (not the particle's own two) */
    int near = -1;
    double best = 0.0, t_near = 0.0;
    if (entry < 0) {
        const double *b = pos + 2L * o[0];
        for (int j = 0; j < m; j++) {
            const double *a = b;
            int ib = o[j + 1 < m ? j + 1 : 0];
            b = pos + 2L * ib;
            if (own && near_at_rest(s, i, o[j], ib)) continue;
            double ex = b[0] - a[0], ey = b[1] - a[1], l2 = ex * ex + ey * ey, t = 0.0;
            if (l2 > 0.0) {
                t = ((x - a[0]) * ex + (y - a[1]) * ey) / l2;
                t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
            }
            double dx = x - (a[0] + t * ex), dy = y - (a[1] + t * ey), d2 = dx * dx + dy * dy;
            if (near < 0 || d2 < best) {
                best = d2;
                near = j;
                t_near = t;
            }
        }
        if (near < 0) return 0;
    }
    int j = entry >= 0 ? entry : near;
    int ia = o[j], ib = o[j + 1 < m ? j + 1 : 0];
    const double *a = pos + 2L * ia, *b = pos + 2L * ib;
    double ex = b[0] - a[0], ey = b[1] - a[1], l2 = ex * ex + ey * ey, t = t_near;
    if (entry >= 0 && l2 > 0.0) {
        t = ((x - a[0]) * ex + (y - a[1]) * ey) / l2;
        t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    }
    double qx = a[0] + t * ex, qy = a[1] + t * ey, nx, ny;
    double dx = x - qx, dy = y - qy, dist = 0.0;
    if (!inside && entry < 0) dist = sqrt(dx * dx + dy * dy);
    if (inside || entry >= 0 || !(dist > PS_MIN_LENGTH)) {
        double len = sqrt(l2);
        if (!(len > PS_MIN_LENGTH)) return 0;
        nx = ey / len; /* the outward normal of a counter-clockwise outline's edge */
        ny = -ex / len;
    } else {
        nx = dx / dist;
        ny = dy / dist;
    }
    double sep = s->radius[i] + ((1.0 - t) * s->radius[ia] + t * s->radius[ib]);
    double mu = own ? mu_of(s, i) : sqrt(mu_of(s, i) * s->body_friction[B]);
    double e_i = e_of(s, i), e_b = s->body_restitution[B];
    double e = own ? e_i : (e_i > e_b ? e_i : e_b);
    return resolve(s, i, ia, ib, t, nx, ny, sep, mu, e, B, qx, qy);
}

/* May particles i and j (j > i, both in the particle grid) touch? */
static int pair_allowed(const Scene *s, int i, int j)
{
    int oi = s->owner[i], oj = s->owner[j];
    if (oi == oj && oi >= 0) {
        if (!(s->flags[oi] & PS_SELF)) return 0;
        const double *ri = s->rest_pos + 2L * i, *rj = s->rest_pos + 2L * j;
        double dx = rj[0] - ri[0], dy = rj[1] - ri[1], r = s->radius[i] + s->radius[j];
        return dx * dx + dy * dy >= r * r; /* neighbours at rest never collide */
    }
    if ((oi >= 0 && (s->flags[oi] & PS_CLOSED)) || (oj >= 0 && (s->flags[oj] & PS_CLOSED))) return 0;
    return (cat_of(s, i) & mask_of(s, j)) && (cat_of(s, j) & mask_of(s, i));
}

/* Particle pair (i, j): push apart to r_i + r_j (see the essay). */
static int pair_contact(const Scene *s, int i, int j)
{
    const double *xi = s->pos + 2L * i, *xj = s->pos + 2L * j;
    double dx = xi[0] - xj[0], dy = xi[1] - xj[1], d = sqrt(dx * dx + dy * dy), nx = 0.0, ny = 1.0;
    if (d > PS_MIN_LENGTH) {
        nx = dx / d;
        ny = dy / d;
    }
    double rj = s->radius[j], ei = e_of(s, i), ej = e_of(s, j);
    int oj = s->owner[j];
    return resolve(s, i, j, j, 0.0, nx, ny, s->radius[i] + rj, sqrt(mu_of(s, i) * mu_of(s, j)),
                   ei > ej ? ei : ej, oj >= 0 ? oj : PS_SHARED, xj[0] + rj * nx, xj[1] + rj * ny);
}

/* Fill the candidate lists (see the essay) for probes first, first + 1, ... until the pairs
 * run out of room; returns the first probe not listed (n when all were). */
static int list_candidates(const Scene *s, int first, int n, int particle_collisions,
                           const double *snap, const double *aabb, double grow,
                           const int32_t *bucket_start, const int32_t *bucket_body, int hb,
                           double ib, int32_t *fat_first, int32_t *fat_count, int32_t *fat_body,
                           int npairs)
{
    int used = 0;
    for (int i = first; i < n; i++) {
        int own = s->owner[i], count = 0, last = -1;
        fat_first[i] = used;
        fat_count[i] = 0;
        if (own == -1 && !particle_collisions) continue;
        double x = snap[2L * i], y = snap[2L * i + 1];
        int k = bucket_of(cell_of(x, ib), cell_of(y, ib), hb);
        int skip = own >= 0 && !(s->flags[own] & PS_SELF) ? own : -1;
        for (int e = bucket_start[k]; e < bucket_start[k + 1]; e++) {
            int b = bucket_body[e];
            if (b == last) continue; /* a body's cells may share a bucket */
            last = b;
            if (b == skip) continue;
            const double *box = aabb + 5L * b;
            if ((x < box[0] - grow) | (x > box[2] + grow) | (y < box[1] - grow) | (y > box[3] + grow))
                continue;
            if (used + count == npairs) return i; /* out of room: list i again later */
            fat_body[used + count++] = b;
        }
        fat_count[i] = count;
        used += count;
    }
    return n;
}

int ps_body_contacts(double *pos, double *vel, int32_t *contact_body, double *contact_point,
                     double *contact_normal, double *contact_impulse, double *snap,
                     double *aabb, int32_t *bucket_start, int32_t *bucket_body,
                     int32_t *cell_start, int32_t *cell_particle, int32_t *near, double *edge,
                     double *fat_pos, int32_t *fat_first, int32_t *fat_count, int32_t *fat_body,
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
                     int nentries, int npairs, int dim, int iterations, int particle_collisions,
                     double h, double rest_speed)
{
    if (dim == 3) /* surfaces of triangles: contacts3d.c */
        return ps_body_contacts_3d(pos, vel, contact_body, contact_point, contact_normal,
                                   contact_impulse, snap, aabb, bucket_start, bucket_body,
                                   cell_start, cell_particle, near, edge, fat_pos, fat_first, fat_count,
                                   fat_body, fat_state, fat_clear, fat_kept, fat_drift, reacted, left_pos, prev_pos, support, radius, inv_mass, owner,
                                   category, mask, friction, restitution, rest_pos, outline,
                                   outline_start, outline_count, member, member_start,
                                   member_count, body_flags, body_category, body_mask,
                                   body_friction, body_restitution, n, nb, nbuckets, nentries,
                                   npairs, iterations, particle_collisions, h, rest_speed);
    Scene s = {.pos = pos, .vel = vel, .contact_point = contact_point, .contact_normal = contact_normal,
               .contact_impulse = contact_impulse, .contact_body = contact_body, .prev_pos = prev_pos,
               .support = support, .radius = radius, .inv_mass = inv_mass, .friction = friction,
               .restitution = restitution, .rest_pos = rest_pos, .edge = edge, .owner = owner,
               .category = category, .mask = mask, .outline = outline, .outline_start = outline_start,
               .outline_count = outline_count, .member = member, .member_start = member_start,
               .member_count = member_count, .flags = body_flags, .body_category = body_category,
               .body_mask = body_mask, .body_friction = body_friction,
               .body_restitution = body_restitution, .h = h, .inv_h = 1.0 / h, .rest_speed = rest_speed};
    /* the positions the candidates come from; the largest radii; whether any particle moved
     * farther than the lists' slack since they were made; the layout's signature */
    int listed = fat_state[0] == 1.0;
    double slack = fat_state[6], slack2 = slack * slack, rmax = 0.0, rgrid = 0.0;
    uint64_t sig = 14695981039346656037ULL;
    int ngrid = 0;
    for (int i = 0; i < n; i++) {
        double x = pos[2L * i], y = pos[2L * i + 1];
        snap[2L * i] = x;
        snap[2L * i + 1] = y;
        if (radius[i] > rmax) rmax = radius[i];
        if (grid_particle(&s, i, particle_collisions)) {
            ngrid++;
            if (radius[i] > rgrid) rgrid = radius[i];
        }
        double dx = x - fat_pos[2L * i], dy = y - fat_pos[2L * i + 1];
        listed &= dx * dx + dy * dy <= slack2;
        sig = mix(sig, owner[i]);
    }
    /* target bodies' boxes: lo x, lo y, hi x, hi y (empty: lo > hi) */
    double margin = 2.0 * rmax, extent = 0.0;
    int targets = 0;
    for (int b = 0; b < nb; b++) {
        double *box = aabb + 5L * b;
        box[0] = box[1] = 1.0;
        box[2] = box[3] = -1.0;
        box[4] = 0.0;
        int m = outline_count[b];
        sig = mix(mix(mix(sig, body_flags[b]), outline_start[b]), m);
        if (!(body_flags[b] & (PS_CLOSED | PS_SELF)) || m < 2) continue;
        const int32_t *o = outline + outline_start[b];
        double *g = edge + 4L * outline_start[b]; /* each edge at the substep's start: a, b - a */
        for (int k = 0; k < m; k++) {
            const double *a0 = prev_pos + 2L * o[k], *b0 = prev_pos + 2L * o[k + 1 < m ? k + 1 : 0];
            g[4L * k] = a0[0];
            g[4L * k + 1] = a0[1];
            g[4L * k + 2] = b0[0] - a0[0];
            g[4L * k + 3] = b0[1] - a0[1];
            sig = mix(sig, o[k]);
        }
        double lx = snap[2L * o[0]], ly = snap[2L * o[0] + 1], hx = lx, hy = ly, rb = radius[o[0]];
        for (int k = 1; k < m; k++) {
            double x = snap[2L * o[k]], y = snap[2L * o[k] + 1];
            if (radius[o[k]] > rb) rb = radius[o[k]];
            if (x < lx) lx = x;
            if (x > hx) hx = x;
            if (y < ly) ly = y;
            if (y > hy) hy = y;
        }
        if (!(isfinite(lx - margin) && isfinite(ly - margin) && isfinite(hx + margin)
              && isfinite(hy + margin)))
            continue; /* a body that blew up (the finish pass reports it) */
        box[0] = lx - margin;
        box[1] = ly - margin;
        box[2] = hx + margin;
        box[3] = hy + margin;
        box[4] = rb;
        extent += (box[2] - box[0]) > (box[3] - box[1]) ? (box[2] - box[0]) : (box[3] - box[1]);
        targets++;
    }
    double sig_hi = (double)(uint32_t)(sig >> 32), sig_lo = (double)(uint32_t)sig;
    listed &= fat_state[1] == sig_hi && fat_state[2] == sig_lo && fat_state[3] == (double)n
              && fat_state[4] == (double)nb && fat_state[5] == margin
              && fat_state[7] == (double)particle_collisions;
    int hb = 1;
    double cs = 1.0, ib = 1.0, grow = 0.0;
    if (targets && !listed) { /* the bodies' hash: each grown box in every cell it covers */
        cs = 0.5 * extent / targets; /* half the mean box: a box covers a few cells */
        if (!(cs > 0.0) || !(cs < 1e300)) cs = 1.0;
        grow = 0.25 * cs; /* over twice the lists' slack (one for the particle, one for the box) */
        ib = 1.0 / cs;
        double total;
        for (;;) {
            total = 0.0;
            for (int b = 0; b < nb; b++) {
                const double *box = aabb + 5L * b;
                if (box[0] > box[2]) continue;
                total += (double)(cell_of(box[2] + grow, ib) - cell_of(box[0] - grow, ib) + 1)
                         * (double)(cell_of(box[3] + grow, ib) - cell_of(box[1] - grow, ib) + 1);
            }
            if (total <= (double)nentries) break;
            cs = 2.0 * cs;
            ib = 1.0 / cs;
        }
        hb = buckets_for((int)total, nbuckets); /* about two buckets per entry */
        for (int k = 0; k <= hb; k++) bucket_start[k] = 0;
        for (int pass = 0; pass < 2; pass++) {
            for (int b = 0; b < nb; b++) {
                const double *box = aabb + 5L * b;
                if (box[0] > box[2]) continue;
                for (long cx = cell_of(box[0] - grow, ib); cx <= cell_of(box[2] + grow, ib); cx++)
                    for (long cy = cell_of(box[1] - grow, ib); cy <= cell_of(box[3] + grow, ib); cy++) {
                        int k = bucket_of(cx, cy, hb);
                        if (pass == 0) bucket_start[k + 1]++;
                        else bucket_body[bucket_start[k]++] = b;
                    }
            }
            if (pass == 0) prefix(bucket_start, hb);
        }
        shift_back(bucket_start, hb);
    }
    /* the particles' hash (cells of four times the largest radius), particles ascending */
    double pc = 4.0 * rgrid, ip = pc > 0.0 ? 1.0 / pc : 1.0;
    int hp = 1;
    if (ngrid >= 2) {
        hp = buckets_for(ngrid, nbuckets);
        for (int k = 0; k <= hp; k++) cell_start[k] = 0;
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < n; i++) {
                if (!grid_particle(&s, i, particle_collisions)) continue;
                int k = bucket_of(cell_of(snap[2L * i], ip), cell_of(snap[2L * i + 1], ip), hp);
                if (pass == 0) cell_start[k + 1]++;
                else cell_particle[cell_start[k]++] = i;
            }
            if (pass == 0) prefix(cell_start, hp);
        }
        shift_back(cell_start, hp);
    }
    int contacts = 0;
    for (int it = 0; it < iterations; it++) {
        for (int i0 = 0; i0 < n && targets;) {
            int i1 = n;
            if (!listed) {
                i1 = list_candidates(&s, i0, n, particle_collisions, snap, aabb, grow, bucket_start,
                                     bucket_body, hb, ib, fat_first, fat_count, fat_body, npairs);
                if (i0 == 0 && i1 == n) { /* all listed: kept until something moves too far */
                    listed = 1;
                    memcpy(fat_pos, snap, sizeof(double) * 2 * (size_t)n);
                    fat_state[0] = 1.0;
                    fat_state[1] = sig_hi;
                    fat_state[2] = sig_lo;
                    fat_state[3] = (double)n;
                    fat_state[4] = (double)nb;
                    fat_state[5] = margin;
                    fat_state[6] = 0.45 * grow; /* a tenth to spare for rounding */
                    fat_state[7] = (double)particle_collisions;
                } else {
                    fat_state[0] = 0.0;
                }
            }
            for (int i = i0; i < i1; i++) { /* each listed body whose own box holds i */
                double x = snap[2L * i], y = snap[2L * i + 1];
                const int32_t *list = fat_body + fat_first[i];
                for (int q = 0; q < fat_count[i]; q++) {
                    const double *box = aabb + 5L * list[q];
                    if ((x < box[0]) | (x > box[2]) | (y < box[1]) | (y > box[3])) continue;
                    contacts += edge_contact(&s, i, list[q], box[4]);
                }
            }
            i0 = i1;
        }
        for (int i = 0; i < n && ngrid >= 2; i++) {
            if (!grid_particle(&s, i, particle_collisions)) continue;
            double x = snap[2L * i], y = snap[2L * i + 1];
            long cx = cell_of(x, ip), cy = cell_of(y, ip);
            int count = 0; /* candidates j > i, kept sorted and distinct in near[] */
            for (long gx = cx - 1; gx <= cx + 1; gx++)
                for (long gy = cy - 1; gy <= cy + 1; gy++) {
                    int k = bucket_of(gx, gy, hp);
                    for (int e = cell_start[k]; e < cell_start[k + 1]; e++) {
                        int j = cell_particle[e];
                        if (j <= i) continue;
                        double dx = snap[2L * j] - x, dy = snap[2L * j + 1] - y;
                        double r = 2.0 * (radius[i] + radius[j]);
                        if (dx * dx + dy * dy > r * r || !pair_allowed(&s, i, j)) continue;
                        int at = count;
                        while (at > 0 && near[at - 1] > j) at--;
                        if (at > 0 && near[at - 1] == j) continue;
                        for (int q = count; q > at; q--) near[q] = near[q - 1];
                        near[at] = j;
                        count++;
                    }
                }
            for (int q = 0; q < count; q++) contacts += pair_contact(&s, i, near[q]);
        }
    }
    return contacts;
}
