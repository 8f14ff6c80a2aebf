/* contacts3d.c -- bodies against bodies in 3D, in the collide pass.
 *
 * ps_body_contacts (contacts.c) hands a 3D world here: the 2D rules of
 * contacts.c carried over from outline edges to surface triangles (a 3D
 * body's outline rows are its surface, three rows a triangle, each
 * counter-clockwise seen from outside, so the outward normal of (a, b, c) is
 * (b - a) x (c - a)):
 *
 *   vertex-face     a particle i against a closed body B it does not belong
 *                   to: if i is inside B's surface (the parity of the
 *                   triangles a ray from i toward +z crosses, see `inside`),
 *                   it is pushed out through the triangle nearest where it
 *                   was at the substep's start (prev_pos; of the triangles
 *                   whose plane it is behind now), which is the one it came
 *                   in by; if i is outside but nearer a triangle than
 *                   r_i + r_q + skin, it is pushed away from the triangle's
 *                   nearest point q. The skin (PS_SURFACE_SKIN, 2 % of the
 *                   triangle's size, the square root of twice its area)
 *                   keeps particles of no radius resting just outside a
 *                   surface, so they meet it by the outside rule, whose
 *                   normal turns smoothly over edges and corners, instead
 *                   of entering it every substep and being pushed out
 *                   through whichever face is nearest: two cubes stacked
 *                   corner over corner slid off each other that way. Inside,
 *                   the normal is the triangle's; at an edge or a corner of
 *                   it, the mean of the unit normals of the triangles that
 *                   hold that edge or corner.
 *   particle pairs  as in 2D: free particles (when particle_collisions),
 *                   members of open bodies (cloth, ropes), and members of a
 *                   self-colliding body (pairs that overlap in the rest shape
 *                   excepted), with a hash of 3 x 3 x 3 cells.
 *
 * Self-collision of a 3D surface is by its particles (the particle pairs
 * above): with radii of at least the spacing / (2 sqrt 2) on a square
 * lattice, a particle pair meets before a particle passes through a cell of
 * the same sheet, and no edge can cross another without one of its ends
 * meeting an end of the other. Vertex-face against a body's own surface
 * would add the same guard at a triangle's cost per pair; edge-edge tests
 * are needed only when particles are far apart relative to their radii, and
 * are not made (docs/guides/3d.md). A 3D world with a
 * self-colliding body calls this pass again after a settle solve (the
 * constraints solved again after the collide pass, constraints.c), which
 * knows nothing of these contacts and pulled a cloth's folds back shut
 * (pysoft/features/contacts.py).
 *
 * A contact of particle i with q = ta x_a + tb x_b + tc x_c (barycentric
 * weights of the triangle's nearest point; a = b = c, ta = 1 for a particle
 * pair), normal n, separation s = r_i + (ta r_a + tb r_b + tc r_c) + skin
 * (no skin for a particle pair):
 *   C = (x_i - q) . n - s;  if C < 0:  W = w_i + ta^2 w_a + tb^2 w_b + tc^2 w_c,
 *   x_i += w_i (-C/W) n,  x_k -= t_k w_k (-C/W) n  (k = a, b, c),
 * so the masses times the moves sum to zero (momentum is kept). The
 * velocities, restitution, Coulomb friction (static undoing the substep's
 * relative tangential displacement, kinetic bounded by mu dvn), the support
 * rule (a particle resting on a collider is not pushed into it) and the
 * materials' mixing are contacts.c's, component for component, but for
 * the limits of a push, which keep a deep overlap (bodies spawned into
 * each other) from tearing the bodies in a substep:
 *   - its depth -C is at most reach = came + PS_MAX_PUSHOUT h, where came
 *     is the substep's approach: the approach speed -vn times h, or the
 *     relative displacement along -n from the substep's start (prev_pos)
 *     to the pass's (snap), or from where the frame's last pass left them
 *     (left_pos: NaN, so not taken, before the frame's first pass; the pass
 *     writes it as it ends), whichever is more. What the substep brought
 *     in is undone at once (a cloth's fold that the constraint pass pulled
 *     shut), and so is what came in after the last pass: the XPBD settle
 *     solve, after the pass, knows nothing of body contacts and pulled a
 *     corner pushed out of another body back in by as much, every substep
 *     (a material cube's corner rested 68 mm inside a blob in a 1.4 m bin);
 *     an older overlap at PS_MAX_PUSHOUT;
 *   - the whole contact (every move and impulse, so momentum is still
 *     kept) is scaled by the largest s in [0, 1] that leaves each particle
 *     it moves within reach of where it began the pass, or no farther if
 *     it is farther already (`share`): many particles of one body pushing
 *     the same triangle's corners move them, together, no more than one.
 *     A particle's moves are counted by role: as a triangle's corner, what
 *     contacts' reactions moved it in the pass (`reacted`, zeroed as the
 *     pass starts); as the particle pushed, the rest of its move from snap.
 *     Counted together, a corner its own contact had pushed out of a third
 *     body by more than this contact's reach vetoed every push on the
 *     triangles it holds (at any weight, 0.006 in the case found), and a
 *     particle on the far side of them stayed inside, substep after substep
 *     (a shape-matched cube's corner 62 mm inside a material cube);
 *   - the velocity the push gives (follow = -C/h) brings the relative
 *     normal velocity to at most PS_MAX_PUSHOUT apart, not vn +
 *     PS_MAX_PUSHOUT (a particle still inside, already leaving, gains no
 *     more speed substep after substep).
 *
 * Inside test: the ray from p toward +z crosses triangle (a, b, c) when p's
 * projection on the xy plane is in the triangle's projection and the
 * triangle's plane is above p. Each projected edge's side is computed once
 * per edge from its lower row (E = cross((v - u).xy, (p - u).xy), u the lower
 * row), and negated for a triangle that runs the edge the other way, so the
 * two triangles sharing an edge see exactly opposite values; a point exactly
 * on a projected edge (E == 0: lattices lined up over each other) belongs to
 * the side the edge's direction names (y rising, or x falling at equal y), so
 * of two triangles sharing the edge exactly one claims it and the parity is
 * that of a ray past the edge. Triangles seen edge-on (no projected area) are
 * never crossed.
 *
 * Broad phase: contacts.c's, in 3D -- each target body's surface box (lo x,
 * lo y, lo z, hi x, hi y, hi z, grown by g = twice the largest radius and
 * twice the skin of a triangle as large as the box; g; whether its
 * triangles' boxes are made yet; the most its particles have moved in the
 * pass; whether its surface has a row of another body: ten numbers a body in
 * `aabb`), grown
 * boxes in a spatial hash of cubic cells, the candidate lists
 * fat_first/fat_count/fat_body kept while no particle moved farther than the
 * slack and the layout's signature is the same. The candidates are defined by
 * the start positions alone ((i, B) with i in B's box; (i, j) with
 * |x_i - x_j| <= 2 (r_i + r_j)), so the hashing changes nothing but speed.
 * A pair's two scans (the ray's triangles, the nearest triangle's) share one pass over the
 * triangles' boxes; the x86-64-v3 build tests the ray crossings, the nearest points and the
 * entry search four triangles an instruction, each lane the scalar arithmetic (the same
 * bits). An outside particle farther from its nearest triangle than the separation, by a
 * margin over the rounding of C, is let go before the normal: resolve would find C >= 0.
 *
 * Clearance: while the lists are kept, each pair (i, B) of them keeps c (fat_clear), a lower
 * bound on the distance from i to B's surface with every particle where the lists were made
 * (fat_pos), i outside it; -inf (nothing known) when the lists are made, and whenever
 * face_contact meets the pair and does not let it go outside. If D is at most the distance
 * from x_i to the surface now, and each corner and i are within dB and di of fat_pos, then
 * c = D - di - dB: a point of a triangle is a mean of its corners, so it moves no more than
 * they do, and as the particles slide in straight lines from now to fat_pos, the distance
 * never falls below c > 0 -- i never meets the surface, and whether it is inside (the parity
 * of a ray's crossings, the tie rules of `claims` making it that of the exact surface) cannot
 * change. For the same reason, on a later pass, if c - di - dB (those drifts then) is more
 * than the largest separation the pair can have (r_i + the largest radius + the largest skin:
 * see `skin_bound`), by a margin of 1e-6 and 1e-10 of the box over rounding, i is outside
 * and farther than the separation: face_contact would let it go, moving nothing, and it is
 * not called. D is face_contact's own: the least of the scanned triangles' distances, and of
 * g - |x - snap|, less the corners' moves in the pass (each coordinate), for the triangles
 * whose grown boxes at the pass's start held no snap_i. dB is fat_drift (the most a particle
 * of B's, or of any body's if B's surface has a row not B's alone, was from fat_pos at the
 * pass's start) plus sqrt 3 times what surface_moved says. A pair whose particle is outside
 * B's grown box at the pass's start (not met) takes c from the box instead: snap_i is outside
 * the surface's corners' box, so outside the surface and at least box[6] plus how far beyond
 * the grown box it is from it (`box_gap`); the clearance is tested before the box. When the
 * lists are made again for the same layout (a particle moved past the slack), each pair of
 * the old lists that is in the new ones keeps its clearance less how far i and B's surface
 * (fat_drift) are from the old lists' positions -- by the same argument, a bound for the new
 * ones (fat_kept holds the old pairs meanwhile) -- instead of starting from -inf: one particle
 * past the slack no longer sends every pair near a surface through face_contact. The twin
 * computes every pair; the results are the same.
 *
 * Order (the NumPy twin, pysoft/twins/contacts3d.py, follows it, so results
 * are bitwise equal): `iterations` times: every (i, B) pair (i ascending, B
 * ascending), then every particle pair (i ascending, j ascending), each
 * resolved at once with the current positions (Gauss-Seidel). Triangles are
 * scanned in surface order; ties keep the first. Returns the number of
 * contacts resolved.
 */
#include <math.h>
#include <string.h>
#include "contact_common.h"

#define PS_BOX 10            /* numbers a body's box holds in aabb */
#define PS_SCAN 32           /* triangles a block of the surface (a box of its own) */
#define PS_SURFACE_SKIN 0.02 /* a surface's contact skin, a fraction of its triangle's size */

/* The index of the lowest set bit of w (w != 0) */
static inline int lowest_bit(uint32_t w)
{
#if defined(__GNUC__)
    return __builtin_ctz(w);
#else
    int k = 0;
    while (!(w & 1u)) w >>= 1, k++;
    return k;
#endif
}

static inline int bucket_of(long cx, long cy, long cz, int nbuckets)
{
    uint64_t hx = (uint64_t)cx * 73856093u, hy = (uint64_t)cy * 19349663u, hz = (uint64_t)cz * 83492791u;
    return (int)((hx ^ hy ^ hz) & (uint64_t)(nbuckets - 1));
}

static inline double dot3(const double *u, const double *v)
{
    return (u[0] * v[0] + u[1] * v[1]) + u[2] * v[2];
}

/* The most particle i has moved from the pass's start (each coordinate), noted where it
 * counts (a NaN counts as infinitely far): in *moved (any particle's) and, for a particle of
 * one body, in that body's box (box[8]). */
static inline void note_move(const Scene *s, int i)
{
    double most = 0.0;
    for (int d = 0; d < 3; d++) {
        double e = s->pos[3L * i + d] - s->snap[3L * i + d];
        e = e < 0.0 ? -e : e;
        if (!(e <= most)) most = e == e ? e : INFINITY;
    }
    int o = s->owner[i];
    if (!(most <= *s->moved)) *s->moved = most;
    if (o >= 0 && !(most <= s->aabb[PS_BOX * (long)o + 8])) s->aabb[PS_BOX * (long)o + 8] = most;
}

/* The most a corner of body B's surface (its box `box`) has moved from the pass's start: the
 * most its own particles have (box[8]), or, if its surface has a row that is not B's alone
 * (box[9]: of another body, of several, of none), the most any particle has */
static inline double surface_moved(const Scene *s, const double *box)
{
    return box[9] != 0.0 ? *s->moved : box[8];
}

/* The share (0 to 1) of a contact's push that keeps each particle it moves within `reach`
 * of where it began the pass (snap), or, if one is farther already, no farther: i moves
 * by wi lam n, corner c by -t_c w_c lam n. For each, with a its move so far in that role
 * (i: from snap, less what reactions moved it; a corner: what reactions moved it) and d this
 * one, the largest s with |a + s d| <= max(reach, |a|); the least of them (see the essay). */
static double share(const Scene *s, int i, const int k[3], const double t[3], double wi,
                    const double w[3], double lam, const double n[3], double reach)
{
    double most = 1.0;
    for (int c = -1; c < 3; c++) {
        int r = c < 0 ? i : k[c];
        double f = c < 0 ? wi * lam : -(t[c] * w[c] * lam);
        if (!(f != 0.0)) continue;
        double a[3], d[3];
        const double *pu = s->reacted + 3L * r;
        for (int e = 0; e < 3; e++) {
            a[e] = c < 0 ? (s->pos[3L * r + e] - s->snap[3L * r + e]) - pu[e] : pu[e];
            d[e] = f * n[e];
        }
        double aa = dot3(a, a), ad = dot3(a, d), dd = dot3(d, d), r2 = reach * reach;
        if (aa > r2) r2 = aa;
        if ((aa + 2.0 * ad) + dd <= r2) continue;
        double root = sqrt(ad * ad - dd * (aa - r2)), sh = (root - ad) / dd;
        if (!(sh < most)) continue;
        most = sh > 0.0 ? sh : 0.0;
    }
    return most;
}

/* Resolve the contact of particle i with q = ta x_a + tb x_b + tc x_c along unit n at
 * separation sep (see the essay). Returns 1 if they were closer than sep. */
static int resolve(const Scene *s, int i, const int k[3], const double t[3], const double n[3],
                   double sep, double mu, double e, int report, const double q[3])
{
    double *x = s->pos + 3L * i, *xk[3], *vk[3], w[3];
    const double *pk[3], *pi = s->prev_pos + 3L * i;
    for (int c = 0; c < 3; c++) {
        xk[c] = s->pos + 3L * k[c];
        vk[c] = s->vel + 3L * k[c];
        pk[c] = s->prev_pos + 3L * k[c];
    }
    double C = 0.0;
    for (int d = 0; d < 3; d++)
        C = C + (x[d] - ((t[0] * xk[0][d] + t[1] * xk[1][d]) + t[2] * xk[2][d])) * n[d];
    C = C - sep;
    if (!(C < 0.0)) return 0;
    double wi = s->inv_mass[i];
    const double *si = s->support + 3L * i;
    if ((si[0] * n[0] + si[1] * n[1]) + si[2] * n[2] < 0.0) wi = 0.0;
    for (int c = 0; c < 3; c++) {
        const double *sk = s->support + 3L * k[c];
        w[c] = ((sk[0] * n[0] + sk[1] * n[1]) + sk[2] * n[2] > 0.0) ? 0.0 : s->inv_mass[k[c]];
    }
    double W = ((wi + t[0] * t[0] * w[0]) + t[1] * t[1] * w[1]) + t[2] * t[2] * w[2];
    if (!(W > 0.0)) return 0;
    double *v = s->vel + 3L * i, vr[3], vn = 0.0;
    for (int d = 0; d < 3; d++) {
        vr[d] = v[d] - ((t[0] * vk[0][d] + t[1] * vk[1][d]) + t[2] * vk[2][d]);
        vn = vn + vr[d] * n[d];
    }
    /* the limits of a push (see the essay): its velocity, to at most PS_MAX_PUSHOUT apart;
     * its depth, the substep's approach (came) plus PS_MAX_PUSHOUT h; each particle's move */
    double cap = PS_MAX_PUSHOUT - vn, sn0 = 0.0, sl0 = 0.0;
    if (!(cap > 0.0)) cap = 0.0;
    const double *si0 = s->snap + 3L * i, *sk[3], *li = s->left_pos + 3L * i, *lk[3];
    for (int c = 0; c < 3; c++) {
        sk[c] = s->snap + 3L * k[c];
        lk[c] = s->left_pos + 3L * k[c];
    }
    for (int d = 0; d < 3; d++) {
        sn0 = sn0 + ((si0[d] - pi[d]) - ((t[0] * (sk[0][d] - pk[0][d]) + t[1] * (sk[1][d] - pk[1][d]))
                                         + t[2] * (sk[2][d] - pk[2][d]))) * n[d];
        sl0 = sl0 + ((si0[d] - li[d]) - ((t[0] * (sk[0][d] - lk[0][d]) + t[1] * (sk[1][d] - lk[1][d]))
                                         + t[2] * (sk[2][d] - lk[2][d]))) * n[d];
    }
    double came = (vn < 0.0 ? -vn : 0.0) * s->h;
    if (-sn0 > came) came = -sn0;
    if (-sl0 > came) came = -sl0; /* NaN (no pass before in this frame): not taken */
    double reach = came + PS_MAX_PUSHOUT * s->h;
    if (-C > reach) C = -reach;
    double inv_w = 1.0 / W;
    C = C * share(s, i, k, t, wi, w, -C * inv_w, n, reach);
    double lam = -C * inv_w;
    for (int d = 0; d < 3; d++) x[d] = x[d] + wi * lam * n[d];
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < 3; d++) {
            double m = t[c] * w[c] * lam * n[d];
            xk[c][d] = xk[c][d] - m;
            s->reacted[3L * k[c] + d] = s->reacted[3L * k[c] + d] - m;
        }
    double follow = -C * s->inv_h;
    if (follow > cap) follow = cap;
    double target = vn < 0.0 ? ((-vn > s->rest_speed) ? -e * vn : 0.0) : vn;
    double dvn = (target > vn + follow ? target : vn + follow) - vn;
    double P = dvn * inv_w, limit = mu * dvn;
    /* the substep's relative tangential displacement */
    const double *p = pi;
    double sd[3], vt[3], pt[3], sn = 0.0, st2 = 0.0, vt2 = 0.0;
    for (int d = 0; d < 3; d++) {
        sd[d] = (x[d] - p[d]) - ((t[0] * (xk[0][d] - pk[0][d]) + t[1] * (xk[1][d] - pk[1][d]))
                                 + t[2] * (xk[2][d] - pk[2][d]));
        sn = sn + sd[d] * n[d];
        vt[d] = vr[d] - vn * n[d];
    }
    for (int d = 0; d < 3; d++) {
        sd[d] = sd[d] - sn * n[d];
        st2 = st2 + sd[d] * sd[d];
        vt2 = vt2 + vt[d] * vt[d];
    }
    double slip = limit * s->h, vt_len;
    if (st2 <= slip * slip) { /* static: undo it, and stop the relative tangential motion */
        for (int d = 0; d < 3; d++) sd[d] = sd[d] * inv_w;
        for (int d = 0; d < 3; d++) x[d] = x[d] - wi * sd[d];
        for (int c = 0; c < 3; c++)
            for (int d = 0; d < 3; d++) {
                double m = t[c] * w[c] * sd[d];
                xk[c][d] = xk[c][d] + m;
                s->reacted[3L * k[c] + d] = s->reacted[3L * k[c] + d] + m;
            }
        for (int d = 0; d < 3; d++) pt[d] = -vt[d] * inv_w;
    } else if ((vt_len = sqrt(vt2)) > limit) {
        double kk = limit / (vt_len * W);
        for (int d = 0; d < 3; d++) pt[d] = -vt[d] * kk;
    } else {
        for (int d = 0; d < 3; d++) pt[d] = -vt[d] * inv_w;
    }
    double j[3];
    for (int d = 0; d < 3; d++) {
        j[d] = P * n[d] + pt[d];
        v[d] = v[d] + wi * j[d];
    }
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < 3; d++) vk[c][d] = vk[c][d] - t[c] * w[c] * j[d];
    note_move(s, i);
    for (int c = 0; c < 3; c++) note_move(s, k[c]);
    s->contact_body[i] = report;
    for (int d = 0; d < 3; d++) {
        s->contact_point[3L * i + d] = q[d];
        s->contact_normal[3L * i + d] = n[d];
    }
    s->contact_impulse[i] = s->contact_impulse[i] + P;
    return 1;
}

/* The side of projected edge (u, v) that p is on, computed from the lower row so both
 * triangles of an edge see exactly opposite values; 1 if the triangle running u -> v (with
 * orientation sign `sigma`) claims p (see the essay). */
static inline int claims(const double *pos, int iu, int iv, double sigma, double px, double py)
{
    int lo = iu < iv ? iu : iv, hi = iu < iv ? iv : iu;
    const double *a = pos + 3L * lo, *b = pos + 3L * hi;
    double E = (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0]);
    if (lo != iu) E = -E;
    E = sigma * E;
    const double *u = pos + 3L * iu, *v = pos + 3L * iv;
    double dx = sigma * (v[0] - u[0]), dy = sigma * (v[1] - u[1]);
    /* without branches (E's sign is a coin toss in a scan): E > 0, or E == 0 (not a NaN) and
     * the edge's direction names p's side */
    return (E > 0.0) | ((E == 0.0) & ((dy > 0.0) | ((dy == 0.0) & (dx < 0.0))));
}

/* Whether the ray from p toward +z crosses triangle f of tri (see the essay) */
static int crosses(const double *pos, const int32_t *tri, int f, double px, double py, double pz)
{
    int ia = tri[3 * f], ib = tri[3 * f + 1], ic = tri[3 * f + 2];
    const double *a = pos + 3L * ia, *b = pos + 3L * ib, *c = pos + 3L * ic;
    if (((a[2] <= pz) & (b[2] <= pz) & (c[2] <= pz))                   /* wholly below */
        | ((a[0] < px) & (b[0] < px) & (c[0] < px)) | ((a[0] > px) & (b[0] > px) & (c[0] > px))
        | ((a[1] < py) & (b[1] < py) & (c[1] < py)) | ((a[1] > py) & (b[1] > py) & (c[1] > py)))
        return 0;
    double ux = b[0] - a[0], uy = b[1] - a[1], uz = b[2] - a[2];
    double vx = c[0] - a[0], vy = c[1] - a[1], vz = c[2] - a[2];
    double nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
    double sigma = nz > 0.0 ? 1.0 : -1.0;
    double side = ((px - a[0]) * nx + (py - a[1]) * ny) + (pz - a[2]) * nz;
    /* seen edge-on (nz == 0): never; else p in the projection and the plane above p, tested
     * without branches (each a coin toss in a scan) */
    return (nz != 0.0) & claims(pos, ia, ib, sigma, px, py) & claims(pos, ib, ic, sigma, px, py)
           & claims(pos, ic, ia, sigma, px, py) & (sigma * side < 0.0);
}

/* A surface's triangle boxes (see `face_contact`), by coordinate: lo x of its m triangles, then
 * lo y, lo z, hi x, hi y, hi z, m numbers each; then the boxes of its blocks (runs of PS_SCAN
 * triangles, nb = ceil(m / PS_SCAN) of them) alike, nb numbers each, a block's box holding its
 * triangles' (infinite in a coordinate where one of them is NaN). A scan names, in surface
 * order, the triangles whose box holds a query -- lo[d] >= the box's lo d and hi[d] <= its hi d
 * in each coordinate d (a point: lo = hi = p) -- testing a block's triangles at once, with no
 * branch (several boxes an instruction where the compiler can), each test the same comparisons
 * as one box at a time (a NaN, compared with nothing, fails none), and only in blocks whose box
 * holds the query by the same test. face_contact's two queries (the ray's and the nearest
 * triangle's) share one pass over the boxes (`Scan`). */

/* Bit f - f0 of *hit_a (*hit_b) := whether the box of f (f0 <= f < f1, f1 - f0 <= 32) of the m
 * boxes tb holds query a (b): four boxes an instruction in the x86-64-v3 build (ordered
 * comparisons: false with a NaN, as C's) */
static inline void box_hits(const double *tb, int m, int f0, int f1, const double *lo_a,
                            const double *hi_a, const double *lo_b, const double *hi_b,
                            uint32_t *hit_a, uint32_t *hit_b)
{
    const double *xl = tb, *yl = tb + m, *zl = tb + 2L * m, *xh = tb + 3L * m, *yh = tb + 4L * m,
                 *zh = tb + 5L * m;
    double ax = lo_a[0], ay = lo_a[1], az = lo_a[2], bx = hi_a[0], by = hi_a[1], bz = hi_a[2];
    double cx = lo_b[0], cy = lo_b[1], cz = lo_b[2], dx = hi_b[0], dy = hi_b[1], dz = hi_b[2];
    uint32_t ha = 0, hb = 0;
    int f = f0;
#if defined(__AVX2__)
    const __m256d vax = _mm256_set1_pd(ax), vay = _mm256_set1_pd(ay), vaz = _mm256_set1_pd(az);
    const __m256d vbx = _mm256_set1_pd(bx), vby = _mm256_set1_pd(by), vbz = _mm256_set1_pd(bz);
    const __m256d vcx = _mm256_set1_pd(cx), vcy = _mm256_set1_pd(cy), vcz = _mm256_set1_pd(cz);
    const __m256d vdx = _mm256_set1_pd(dx), vdy = _mm256_set1_pd(dy), vdz = _mm256_set1_pd(dz);
    for (; f + 4 <= f1; f += 4) {
        __m256d lx = _mm256_loadu_pd(xl + f), ly = _mm256_loadu_pd(yl + f), lz = _mm256_loadu_pd(zl + f);
        __m256d ux = _mm256_loadu_pd(xh + f), uy = _mm256_loadu_pd(yh + f), uz = _mm256_loadu_pd(zh + f);
        __m256d out = _mm256_or_pd(_mm256_cmp_pd(vax, lx, _CMP_LT_OQ), _mm256_cmp_pd(vbx, ux, _CMP_GT_OQ));
        out = _mm256_or_pd(out, _mm256_or_pd(_mm256_cmp_pd(vay, ly, _CMP_LT_OQ),
                                             _mm256_cmp_pd(vby, uy, _CMP_GT_OQ)));
        out = _mm256_or_pd(out, _mm256_or_pd(_mm256_cmp_pd(vaz, lz, _CMP_LT_OQ),
                                             _mm256_cmp_pd(vbz, uz, _CMP_GT_OQ)));
        __m256d out_b = _mm256_or_pd(_mm256_cmp_pd(vcx, lx, _CMP_LT_OQ), _mm256_cmp_pd(vdx, ux, _CMP_GT_OQ));
        out_b = _mm256_or_pd(out_b, _mm256_or_pd(_mm256_cmp_pd(vcy, ly, _CMP_LT_OQ),
                                                 _mm256_cmp_pd(vdy, uy, _CMP_GT_OQ)));
        out_b = _mm256_or_pd(out_b, _mm256_or_pd(_mm256_cmp_pd(vcz, lz, _CMP_LT_OQ),
                                                 _mm256_cmp_pd(vdz, uz, _CMP_GT_OQ)));
        ha |= (uint32_t)(~_mm256_movemask_pd(out) & 15) << (f - f0);
        hb |= (uint32_t)(~_mm256_movemask_pd(out_b) & 15) << (f - f0);
    }
#endif
    for (; f < f1; f++) {
        ha |= (uint32_t)!((ax < xl[f]) | (bx > xh[f]) | (ay < yl[f]) | (by > yh[f]) | (az < zl[f])
                          | (bz > zh[f])) << (f - f0);
        hb |= (uint32_t)!((cx < xl[f]) | (dx > xh[f]) | (cy < yl[f]) | (dy > yh[f]) | (cz < zl[f])
                          | (dz > zh[f])) << (f - f0);
    }
    *hit_a = ha;
    *hit_b = hb;
}

/* Two scans of a surface's triangles at once (see box_hits): the blocks' boxes PS_SCAN at a
 * time, then the triangles' of each block that holds either query; each scan's triangles in
 * surface order. Query a is left out where `skip_a`. */
typedef struct {
    const double *tb, *lo_a, *hi_a, *lo_b, *hi_b;
    int m, nb, k0, skip_a;
    uint32_t ba, bb; /* the blocks (from k0) holding query a, b */
} Scan;

static inline void scan_start(Scan *it, const double *tb, int m, const double *lo_a, const double *hi_a,
                              const double *lo_b, const double *hi_b, int skip_a)
{
    it->tb = tb, it->lo_a = lo_a, it->hi_a = hi_a, it->lo_b = lo_b, it->hi_b = hi_b, it->m = m;
    it->nb = (m + PS_SCAN - 1) / PS_SCAN;
    it->k0 = -PS_SCAN;
    it->skip_a = skip_a;
    it->ba = it->bb = 0;
}

/* The next block holding either query (its first triangle in *f0), the triangles of it that
 * hold query a in *hit_a, query b in *hit_b; 0 when there are no more */
static inline int scan_block(Scan *it, int *f0, uint32_t *hit_a, uint32_t *hit_b)
{
    while (!(it->ba | it->bb)) {
        it->k0 += PS_SCAN;
        if (it->k0 >= it->nb) return 0;
        int k1 = it->k0 + PS_SCAN < it->nb ? it->k0 + PS_SCAN : it->nb;
        box_hits(it->tb + 6L * it->m, it->nb, it->k0, k1, it->lo_a, it->hi_a, it->lo_b, it->hi_b,
                 &it->ba, &it->bb);
        if (it->skip_a) it->ba = 0;
    }
    uint32_t both = it->ba | it->bb, low = both & (0u - both);
    int k = it->k0 + lowest_bit(both);
    uint32_t in_a = it->ba & low, in_b = it->bb & low;
    it->ba &= ~low;
    it->bb &= ~low;
    *f0 = k * PS_SCAN;
    int f1 = *f0 + PS_SCAN < it->m ? *f0 + PS_SCAN : it->m;
    box_hits(it->tb, it->m, *f0, f1, it->lo_a, it->hi_a, it->lo_b, it->hi_b, hit_a, hit_b);
    if (!in_a) *hit_a = 0;
    if (!in_b) *hit_b = 0;
    return 1;
}

/* How far beyond the box of B's surface at the pass's start (`box`, its corners' box grown by
 * g = box[6]) a point is surely beyond the surface now, in coordinate d: twice the most a
 * corner has moved since (`moved`), and 1e-12 of the box for the rounding of box - g and of
 * the scans' query (see `ray_query`). */
static inline double beyond(const double *box, int d, double moved)
{
    return 2.0 * moved + 1e-12 * ((fabs(box[d]) + fabs(box[3 + d])) + box[6]);
}

/* The scan's query for whether p is inside the closed surface of the current positions (the
 * parity of the triangles a ray toward +z crosses; see the essay), the surface's body's box
 * being `box` and its triangles' boxes, at the pass's start, grown by g = box[6]. A triangle
 * whose corners' box at the start p is beyond, in x or y, or above, by more than `beyond`
 * has its corners on one side of p now (crosses' first tests), and cannot be crossed: the
 * scan passes over it (its box shrunk by g - beyond: the query p moved out by as much), and
 * the parity is the same. */
static inline void ray_query(const double *p, const double *box, double moved, double lo[3], double hi[3])
{
    for (int d = 0; d < 3; d++) {
        double in = box[6] - beyond(box, d, moved);
        lo[d] = p[d] - in;
        hi[d] = p[d] + in;
    }
    lo[2] = INFINITY; /* the ray reaches up from p: no bound below */
}

/* Whether the ray from x toward +z surely meets no triangle of the surface whose box at the
 * pass's start, grown by box[6], is `box`: x is beyond its corners' box in x or y, or above
 * it, by more than `beyond` -- then every triangle has its three corners on one side of x
 * (crosses' first tests) and the parity is 0 without a scan. */
static inline int clear_of(const double *box, const double *x, double moved)
{
    double g = box[6];
    for (int d = 0; d < 3; d++) {
        double tol = beyond(box, d, moved);
        if (x[d] > (box[3 + d] - g) + tol) return 1;
        if (d < 2 && x[d] < (box[d] + g) - tol) return 1;
    }
    return 0;
}

/* The point of triangle (a, b, c) nearest p (Ericson, "Real-Time Collision Detection"
 * 5.1.5): its barycentric weights t[3]; returns the squared distance. */
static double nearest(const double *a, const double *b, const double *c, const double *p, double t[3])
{
    double ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int d = 0; d < 3; d++) {
        ab[d] = b[d] - a[d];
        ac[d] = c[d] - a[d];
        ap[d] = p[d] - a[d];
        bp[d] = p[d] - b[d];
        cp[d] = p[d] - c[d];
    }
    double d1 = (ab[0] * ap[0] + ab[1] * ap[1]) + ab[2] * ap[2];
    double d2 = (ac[0] * ap[0] + ac[1] * ap[1]) + ac[2] * ap[2];
    double d3 = (ab[0] * bp[0] + ab[1] * bp[1]) + ab[2] * bp[2];
    double d4 = (ac[0] * bp[0] + ac[1] * bp[1]) + ac[2] * bp[2];
    double d5 = (ab[0] * cp[0] + ab[1] * cp[1]) + ab[2] * cp[2];
    double d6 = (ac[0] * cp[0] + ac[1] * cp[1]) + ac[2] * cp[2];
    double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
    if (d1 <= 0.0 && d2 <= 0.0) {
        t[0] = 1.0, t[1] = 0.0, t[2] = 0.0;
    } else if (d3 >= 0.0 && d4 <= d3) {
        t[0] = 0.0, t[1] = 1.0, t[2] = 0.0;
    } else if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
        double v = d1 / (d1 - d3);
        t[0] = 1.0 - v, t[1] = v, t[2] = 0.0;
    } else if (d6 >= 0.0 && d5 <= d6) {
        t[0] = 0.0, t[1] = 0.0, t[2] = 1.0;
    } else if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
        double w = d2 / (d2 - d6);
        t[0] = 1.0 - w, t[1] = 0.0, t[2] = w;
    } else if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
        double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        t[0] = 0.0, t[1] = 1.0 - w, t[2] = w;
    } else {
        double den = (va + vb) + vc;
        double v = vb / den, w = vc / den;
        t[0] = (1.0 - v) - w, t[1] = v, t[2] = w;
    }
    double r = 0.0;
    for (int d = 0; d < 3; d++) {
        double q = (t[0] * a[d] + t[1] * b[d]) + t[2] * c[d], e = p[d] - q;
        r = r + e * e;
    }
    return r;
}

#if defined(__AVX2__)

/* Where `mask` is set, the barycentric weights (t0, t1, t2) become (a, b, c): nearest4's
 * regions, each lane as nearest's branch for its region. */
static inline void blend3(__m256d *t0, __m256d *t1, __m256d *t2, __m256d a, __m256d b, __m256d c,
                          __m256d mask)
{
    *t0 = _mm256_blendv_pd(*t0, a, mask);
    *t1 = _mm256_blendv_pd(*t1, b, mask);
    *t2 = _mm256_blendv_pd(*t2, c, mask);
}

/* nearest() for four triangles at once: lane k of a, b, c (by coordinate) the corners of the k-th,
 * p the point; the weights in t[3], the squared distances returned. The weights are those of the
 * region nearest() would take (its tests in its order: the last blend is its first test), each
 * lane the scalar arithmetic, so each lane's bits are nearest()'s. */
static inline __m256d nearest4(const __m256d a[3], const __m256d b[3], const __m256d c[3],
                               const __m256d p[3], __m256d t[3])
{
    __m256d ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int d = 0; d < 3; d++) {
        ab[d] = _mm256_sub_pd(b[d], a[d]);
        ac[d] = _mm256_sub_pd(c[d], a[d]);
        ap[d] = _mm256_sub_pd(p[d], a[d]);
        bp[d] = _mm256_sub_pd(p[d], b[d]);
        cp[d] = _mm256_sub_pd(p[d], c[d]);
    }
#define PS_DOT4(u, v)                                                                       \
    _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(u[0], v[0]), _mm256_mul_pd(u[1], v[1])), \
                  _mm256_mul_pd(u[2], v[2]))
    __m256d d1 = PS_DOT4(ab, ap), d2 = PS_DOT4(ac, ap), d3 = PS_DOT4(ab, bp), d4 = PS_DOT4(ac, bp);
    __m256d d5 = PS_DOT4(ab, cp), d6 = PS_DOT4(ac, cp);
#undef PS_DOT4
    __m256d vc = _mm256_sub_pd(_mm256_mul_pd(d1, d4), _mm256_mul_pd(d3, d2));
    __m256d vb = _mm256_sub_pd(_mm256_mul_pd(d5, d2), _mm256_mul_pd(d1, d6));
    __m256d va = _mm256_sub_pd(_mm256_mul_pd(d3, d6), _mm256_mul_pd(d5, d4));
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
#define PS_LE(u, v) _mm256_cmp_pd(u, v, _CMP_LE_OQ)
#define PS_GE(u, v) _mm256_cmp_pd(u, v, _CMP_GE_OQ)
#define PS_AND(u, v) _mm256_and_pd(u, v)
    __m256d d43 = _mm256_sub_pd(d4, d3), d56 = _mm256_sub_pd(d5, d6);
    __m256d r_a = PS_AND(PS_LE(d1, zero), PS_LE(d2, zero));
    __m256d r_b = PS_AND(PS_GE(d3, zero), PS_LE(d4, d3));
    __m256d r_ab = PS_AND(PS_AND(PS_LE(vc, zero), PS_GE(d1, zero)), PS_LE(d3, zero));
    __m256d r_c = PS_AND(PS_GE(d6, zero), PS_LE(d5, d6));
    __m256d r_ac = PS_AND(PS_AND(PS_LE(vb, zero), PS_GE(d2, zero)), PS_LE(d6, zero));
    __m256d r_bc = PS_AND(PS_AND(PS_LE(va, zero), PS_GE(d43, zero)), PS_GE(d56, zero));
    __m256d any = _mm256_or_pd(_mm256_or_pd(_mm256_or_pd(r_a, r_b), _mm256_or_pd(r_ab, r_c)),
                               _mm256_or_pd(r_ac, r_bc));
    __m256d t0 = zero, t1 = zero, t2 = zero, w;
    /* a region's weights are computed only where a lane may take it; a lane takes the first
     * region whose test it passes (the last blend), the interior if none */
    if (_mm256_movemask_pd(any) != 15) { /* the interior */
        __m256d den = _mm256_add_pd(_mm256_add_pd(va, vb), vc);
        t1 = _mm256_div_pd(vb, den);
        t2 = _mm256_div_pd(vc, den);
        t0 = _mm256_sub_pd(_mm256_sub_pd(one, t1), t2);
    }
    if (_mm256_movemask_pd(r_bc)) { /* edge bc */
        w = _mm256_div_pd(d43, _mm256_add_pd(d43, d56));
        blend3(&t0, &t1, &t2, zero, _mm256_sub_pd(one, w), w, r_bc);
    }
    if (_mm256_movemask_pd(r_ac)) { /* edge ac */
        w = _mm256_div_pd(d2, _mm256_sub_pd(d2, d6));
        blend3(&t0, &t1, &t2, _mm256_sub_pd(one, w), zero, w, r_ac);
    }
    /* corner c */
    blend3(&t0, &t1, &t2, zero, zero, one, r_c);
    if (_mm256_movemask_pd(r_ab)) { /* edge ab */
        w = _mm256_div_pd(d1, _mm256_sub_pd(d1, d3));
        blend3(&t0, &t1, &t2, _mm256_sub_pd(one, w), w, zero, r_ab);
    }
    /* corner b */
    blend3(&t0, &t1, &t2, zero, one, zero, r_b);
    /* corner a */
    blend3(&t0, &t1, &t2, one, zero, zero, r_a);
#undef PS_LE
#undef PS_GE
#undef PS_AND
    t[0] = t0, t[1] = t1, t[2] = t2;
    __m256d out = zero;
    for (int d = 0; d < 3; d++) {
        __m256d q = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(t0, a[d]), _mm256_mul_pd(t1, b[d])),
                                  _mm256_mul_pd(t2, c[d]));
        __m256d e = _mm256_sub_pd(p[d], q);
        out = _mm256_add_pd(out, _mm256_mul_pd(e, e));
    }
    return out;
}

/* Lanes k of a[3], b[3], c[3] := rows tri[3 g[k]], tri[3 g[k] + 1], tri[3 g[k] + 2] of x */
static inline void corners4(const double *x, const int32_t *tri, const int g[4], __m256d a[3],
                            __m256d b[3], __m256d c[3])
{
    __m256d *out[3] = {a, b, c};
    for (int j = 0; j < 3; j++) {
        const double *r0 = x + 3L * tri[3 * g[0] + j], *r1 = x + 3L * tri[3 * g[1] + j];
        const double *r2 = x + 3L * tri[3 * g[2] + j], *r3 = x + 3L * tri[3 * g[3] + j];
        for (int d = 0; d < 3; d++) out[j][d] = _mm256_set_pd(r3[d], r2[d], r1[d], r0[d]);
    }
}

/* claims() for lanes of edges u -> v: rows u[3], v[3] (x, y used), `swap` where the row of u is
 * above the row of v (E then from v, negated), sigma, and p */
static inline __m256d claims4(const __m256d u[3], const __m256d v[3], __m256d swap, __m256d sigma,
                              __m256d px, __m256d py)
{
    const __m256d zero = _mm256_setzero_pd(), sign = _mm256_set1_pd(-0.0);
    __m256d ax = _mm256_blendv_pd(u[0], v[0], swap), ay = _mm256_blendv_pd(u[1], v[1], swap);
    __m256d bx = _mm256_blendv_pd(v[0], u[0], swap), by = _mm256_blendv_pd(v[1], u[1], swap);
    __m256d E = _mm256_sub_pd(_mm256_mul_pd(_mm256_sub_pd(bx, ax), _mm256_sub_pd(py, ay)),
                              _mm256_mul_pd(_mm256_sub_pd(by, ay), _mm256_sub_pd(px, ax)));
    E = _mm256_blendv_pd(E, _mm256_xor_pd(E, sign), swap);
    E = _mm256_mul_pd(sigma, E);
    __m256d dx = _mm256_mul_pd(sigma, _mm256_sub_pd(v[0], u[0]));
    __m256d dy = _mm256_mul_pd(sigma, _mm256_sub_pd(v[1], u[1]));
    __m256d tie = _mm256_or_pd(_mm256_cmp_pd(dy, zero, _CMP_GT_OQ),
                               _mm256_and_pd(_mm256_cmp_pd(dy, zero, _CMP_EQ_OQ),
                                             _mm256_cmp_pd(dx, zero, _CMP_LT_OQ)));
    return _mm256_or_pd(_mm256_cmp_pd(E, zero, _CMP_GT_OQ),
                        _mm256_and_pd(_mm256_cmp_pd(E, zero, _CMP_EQ_OQ), tie));
}

/* crosses() for triangles g[0 .. 4) of tri: bit k of the result is crosses(pos, tri, g[k], p);
 * each lane the scalar arithmetic (its first tests, then the rest, as a mask) */
static inline int crosses4(const double *pos, const int32_t *tri, const int g[4], double px, double py,
                           double pz)
{
    __m256d a[3], b[3], c[3];
    corners4(pos, tri, g, a, b, c);
    const __m256d vx = _mm256_set1_pd(px), vy = _mm256_set1_pd(py), vz = _mm256_set1_pd(pz);
    const __m256d zero = _mm256_setzero_pd();
#define PS_ALL3(op, q, d)                                                                  \
    _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(a[d], q, op), _mm256_cmp_pd(b[d], q, op)), \
                  _mm256_cmp_pd(c[d], q, op))
    __m256d out = _mm256_or_pd(_mm256_or_pd(PS_ALL3(_CMP_LE_OQ, vz, 2), PS_ALL3(_CMP_LT_OQ, vx, 0)),
                               _mm256_or_pd(PS_ALL3(_CMP_GT_OQ, vx, 0), PS_ALL3(_CMP_LT_OQ, vy, 1)));
    out = _mm256_or_pd(out, PS_ALL3(_CMP_GT_OQ, vy, 1));
#undef PS_ALL3
    int pre = _mm256_movemask_pd(out);
    if (pre == 15) return 0;
    __m256d u[3], v[3];
    for (int d = 0; d < 3; d++) {
        u[d] = _mm256_sub_pd(b[d], a[d]);
        v[d] = _mm256_sub_pd(c[d], a[d]);
    }
    __m256d nx = _mm256_sub_pd(_mm256_mul_pd(u[1], v[2]), _mm256_mul_pd(u[2], v[1]));
    __m256d ny = _mm256_sub_pd(_mm256_mul_pd(u[2], v[0]), _mm256_mul_pd(u[0], v[2]));
    __m256d nz = _mm256_sub_pd(_mm256_mul_pd(u[0], v[1]), _mm256_mul_pd(u[1], v[0]));
    __m256d sigma = _mm256_blendv_pd(_mm256_set1_pd(-1.0), _mm256_set1_pd(1.0),
                                     _mm256_cmp_pd(nz, zero, _CMP_GT_OQ));
    __m256d side = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(vx, a[0]), nx),
                                               _mm256_mul_pd(_mm256_sub_pd(vy, a[1]), ny)),
                                 _mm256_mul_pd(_mm256_sub_pd(vz, a[2]), nz));
    const int32_t *t0 = tri + 3 * g[0], *t1 = tri + 3 * g[1], *t2 = tri + 3 * g[2], *t3 = tri + 3 * g[3];
    __m256i ia = _mm256_set_epi64x(t3[0], t2[0], t1[0], t0[0]);
    __m256i ib = _mm256_set_epi64x(t3[1], t2[1], t1[1], t0[1]);
    __m256i ic = _mm256_set_epi64x(t3[2], t2[2], t1[2], t0[2]);
    __m256d s_ab = _mm256_castsi256_pd(_mm256_cmpgt_epi64(ia, ib));
    __m256d s_bc = _mm256_castsi256_pd(_mm256_cmpgt_epi64(ib, ic));
    __m256d s_ca = _mm256_castsi256_pd(_mm256_cmpgt_epi64(ic, ia));
    __m256d hit = _mm256_and_pd(_mm256_cmp_pd(nz, zero, _CMP_NEQ_UQ), claims4(a, b, s_ab, sigma, vx, vy));
    hit = _mm256_and_pd(hit, _mm256_and_pd(claims4(b, c, s_bc, sigma, vx, vy),
                                           claims4(c, a, s_ca, sigma, vx, vy)));
    hit = _mm256_and_pd(hit, _mm256_cmp_pd(_mm256_mul_pd(sigma, side), zero, _CMP_LT_OQ));
    return _mm256_movemask_pd(hit) & ~pre;
}
#endif

static inline void cross3(const double *u, const double *v, double *out)
{
    out[0] = u[1] * v[2] - u[2] * v[1];
    out[1] = u[2] * v[0] - u[0] * v[2];
    out[2] = u[0] * v[1] - u[1] * v[0];
}

/* (b - a) x (c - a) of rows a, b, c of x */
static inline void normal_of(const double *x, int ia, int ib, int ic, double *out)
{
    const double *a = x + 3L * ia, *b = x + 3L * ib, *c = x + 3L * ic;
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    cross3(u, v, out);
}

/* The outward normal at the point of triangle k with weights t: the triangle's own inside it;
 * on an edge or at a corner, the mean of the unit normals of every triangle of the surface
 * tri[0 .. 3m) that holds that edge or corner (ascending), so a particle resting on a corner
 * or an edge is pushed straight out of it, not along whichever triangle comes first (on a
 * lattice lined up with another, every particle rests on a corner). Returns 0 if it has no
 * direction. */
static int feature_normal(const double *pos, const int32_t *tri, int m, const int k[3],
                          const double t[3], double n[3])
{
    double sum[3] = {0.0, 0.0, 0.0}, nt[3];
    if (t[0] != 0.0 && t[1] != 0.0 && t[2] != 0.0) {
        normal_of(pos, k[0], k[1], k[2], nt);
        double len = sqrt(dot3(nt, nt));
        if (!(len > PS_MIN_LENGTH)) return 0;
        for (int d = 0; d < 3; d++) n[d] = nt[d] / len;
        return 1;
    }
    for (int g = 0; g < m; g++) {
        const int32_t *r = tri + 3 * g;
        int holds = 1;
        for (int c = 0; c < 3 && holds; c++)
            if (t[c] != 0.0) holds = r[0] == k[c] || r[1] == k[c] || r[2] == k[c];
        if (!holds) continue;
        normal_of(pos, r[0], r[1], r[2], nt);
        double len = sqrt(dot3(nt, nt));
        if (!(len > PS_MIN_LENGTH)) continue;
        for (int d = 0; d < 3; d++) sum[d] = sum[d] + nt[d] / len;
    }
    double len = sqrt(dot3(sum, sum));
    if (!(len > PS_MIN_LENGTH)) return 0;
    for (int d = 0; d < 3; d++) n[d] = sum[d] / len;
    return 1;
}

#if defined(__AVX2__)
#define PS_GROUPS 1 /* crosses and nearest four triangles a time */
#else
#define PS_GROUPS 0
#endif

/* The parity of crosses(pos, tri, g[k], x) for k < cnt (1 to 4) */
static inline int crossings(const double *pos, const int32_t *tri, int g[4], int cnt, const double *x)
{
#if defined(__AVX2__)
    if (cnt > 1) {
        for (int k = cnt; k < 4; k++) g[k] = g[cnt - 1];
        unsigned odd = (unsigned)crosses4(pos, tri, g, x[0], x[1], x[2]) & ((1u << cnt) - 1u);
        return __builtin_popcount(odd) & 1;
    }
#endif
    int odd = 0;
    for (int k = 0; k < cnt; k++) odd ^= crosses(pos, tri, g[k], x[0], x[1], x[2]);
    return odd;
}

/* The scan for the nearest triangle, on g[0 .. cnt) (1 to 4, in surface order): each whose
 * squared distance to x is less than *best, or the first if *near < 0, becomes *near (*best,
 * its weights t) */
static inline void nearest_of(const double *pos, const int32_t *tri, int g[4], int cnt,
                              const double *x, int *near, double *best, double t[3])
{
    double d2[4], tw[3][4];
#if defined(__AVX2__)
    if (cnt > 1) {
        for (int k = cnt; k < 4; k++) g[k] = g[cnt - 1];
        __m256d a[3], b[3], c[3], xv[3], tv[3];
        for (int d = 0; d < 3; d++) xv[d] = _mm256_set1_pd(x[d]);
        corners4(pos, tri, g, a, b, c);
        _mm256_storeu_pd(d2, nearest4(a, b, c, xv, tv));
        for (int d = 0; d < 3; d++) _mm256_storeu_pd(tw[d], tv[d]);
    } else
#endif
    {
        for (int k = 0; k < cnt; k++) {
            double tf[3];
            const int32_t *r = tri + 3 * g[k];
            d2[k] = nearest(pos + 3L * r[0], pos + 3L * r[1], pos + 3L * r[2], x, tf);
            tw[0][k] = tf[0], tw[1][k] = tf[1], tw[2][k] = tf[2];
        }
    }
    for (int k = 0; k < cnt; k++)
        if (*near < 0 || d2[k] < *best) {
            *best = d2[k];
            *near = g[k];
            t[0] = tw[0][k], t[1] = tw[1][k], t[2] = tw[2][k];
        }
}

/* The pair's clearance (see the essay) when face_contact finds i outside B and lets it go:
 * the distance from x (i now) to the surface now is at least D, the least of sqrt(best) (the
 * nearest of the triangles scanned, if any: near >= 0) and the gap g - |x - xs| - moved (each
 * coordinate) to those whose grown boxes at the pass's start did not hold xs; less how far i
 * (|x - fat_pos_i|) and the surface (fb[0], from fat_pos to snap, and 1.75 `moved`, at least
 * sqrt(3) times the most any coordinate of a corner moved in the pass) are from the lists'
 * positions, it holds for those. */
static void keep_clear(const Scene *s, int i, const double *bbox, double moved, int near, double best,
                       const double *fb, const double *fat_pos, double *clear)
{
    const double *x = s->pos + 3L * i, *xs = s->snap + 3L * i, *f = fat_pos + 3L * i;
    double far = 0.0, di = 0.0;
    for (int d = 0; d < 3; d++) {
        double e = x[d] - xs[d], u = x[d] - f[d];
        e = e < 0.0 ? -e : e;
        if (!(e <= far)) far = e == e ? e : INFINITY;
        di = di + u * u;
    }
    double D = (bbox[6] - far) - moved;
    if (near >= 0) {
        double dn = sqrt(best);
        if (!(dn >= D)) D = dn; /* a NaN stays, and nothing is let go by it */
    }
    *clear = ((D - sqrt(di)) - fb[0]) - 1.75 * moved;
}

/* Particle i against body B's surface (see the essay). Returns 1 on contact. Where `clear`,
 * a let-go (i outside, no contact) leaves the pair's clearance in *keep, anything else -inf. */
static int face_contact(const Scene *s, int i, int B, const double *bbox, double *keep,
                        const double *fb, const double *fat_pos)
{
    if (keep) *keep = -INFINITY;
    int o_i = s->owner[i];
    if (o_i == B || (o_i == PS_SHARED && in_range(s->member + s->member_start[B], s->member_count[B], i)))
        return 0; /* a surface meets its own particles as particle pairs */
    if (!(s->flags[B] & PS_CLOSED)) return 0;
    if (!(cat_of(s, i) & (uint32_t)s->body_mask[B]) || !((uint32_t)s->body_category[B] & mask_of(s, i)))
        return 0;
    const int32_t *tri = s->outline + s->outline_start[B];
    int m = s->outline_count[B] / 3;
    const double *pos = s->pos, *prev = s->prev_pos, *x = pos + 3L * i, *p = prev + 3L * i;
    const double *boxes = s->tbox + 4L * s->outline_start[B];
    double moved = surface_moved(s, bbox);
    /* One scan for both: the triangles the ray from x may cross (whether i is inside: `in`),
     * and the nearest triangle, of those whose grown box held i at the pass's start (`near`,
     * its weights t_near; used if i is outside) */
    const double *xs = s->snap + 3L * i;
    double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0}, best = 0.0, tf[3];
    double t_near[3] = {0.0, 0.0, 0.0};
    int clear = clear_of(bbox, x, moved), in = 0, near = -1, f0;
    if (!clear) ray_query(x, bbox, moved, lo, hi);
    Scan it;
    scan_start(&it, boxes, m, lo, hi, xs, xs, clear);
    int ray_g[4], nray = 0, hit_g[4], nhit = 0; /* triangles waiting for a group of four */
    for (uint32_t ray, hit; scan_block(&it, &f0, &ray, &hit);) {
        for (; ray; ray &= ray - 1) {
            ray_g[nray++] = f0 + lowest_bit(ray);
            if (nray == 4 || !PS_GROUPS) {
                in ^= crossings(pos, tri, ray_g, nray, x);
                nray = 0;
            }
        }
        for (; hit; hit &= hit - 1) {
            hit_g[nhit++] = f0 + lowest_bit(hit);
            if (nhit == 4 || !PS_GROUPS) {
                nearest_of(pos, tri, hit_g, nhit, x, &near, &best, t_near);
                nhit = 0;
            }
        }
    }
    if (nray) in ^= crossings(pos, tri, ray_g, nray, x);
    if (nhit) nearest_of(pos, tri, hit_g, nhit, x, &near, &best, t_near);
    int entry = -1;
    if (in) { /* the triangle nearest the start, of those whose plane i is behind now */
        double first = 0.0;
        int f = 0;
#if defined(__AVX2__)
        /* four triangles a time: each lane normal_of, dot3 and nearest's arithmetic (see nearest4) */
        __m256d xv[3], pv[3];
        for (int d = 0; d < 3; d++) {
            xv[d] = _mm256_set1_pd(x[d]);
            pv[d] = _mm256_set1_pd(p[d]);
        }
        for (; f + 4 <= m; f += 4) {
            __m256d a[3], b[3], c[3], u[3], v[3], e[3], tv[3];
            int g[4] = {f, f + 1, f + 2, f + 3};
            corners4(pos, tri, g, a, b, c);
            for (int d = 0; d < 3; d++) {
                u[d] = _mm256_sub_pd(b[d], a[d]);
                v[d] = _mm256_sub_pd(c[d], a[d]);
                e[d] = _mm256_sub_pd(xv[d], a[d]);
            }
            __m256d n0 = _mm256_sub_pd(_mm256_mul_pd(u[1], v[2]), _mm256_mul_pd(u[2], v[1]));
            __m256d n1 = _mm256_sub_pd(_mm256_mul_pd(u[2], v[0]), _mm256_mul_pd(u[0], v[2]));
            __m256d n2 = _mm256_sub_pd(_mm256_mul_pd(u[0], v[1]), _mm256_mul_pd(u[1], v[0]));
            __m256d side = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(n0, e[0]), _mm256_mul_pd(n1, e[1])),
                                         _mm256_mul_pd(n2, e[2]));
            int behind = _mm256_movemask_pd(_mm256_cmp_pd(side, _mm256_setzero_pd(), _CMP_LT_OQ));
            if (!behind) continue;
            corners4(prev, tri, g, a, b, c);
            double d2[4];
            _mm256_storeu_pd(d2, nearest4(a, b, c, pv, tv));
            for (int k = 0; k < 4; k++)
                if (((behind >> k) & 1) && (entry < 0 || d2[k] < first)) {
                    first = d2[k];
                    entry = f + k;
                }
        }
#endif
        for (; f < m; f++) {
            int ia = tri[3 * f], ib = tri[3 * f + 1], ic = tri[3 * f + 2];
            double n1[3];
            normal_of(pos, ia, ib, ic, n1);
            const double *a1 = pos + 3L * ia;
            double d1[3] = {x[0] - a1[0], x[1] - a1[1], x[2] - a1[2]};
            if (!(dot3(n1, d1) < 0.0)) continue;
            double d2 = nearest(prev + 3L * ia, prev + 3L * ib, prev + 3L * ic, p, tf);
            if (entry < 0 || d2 < first) {
                first = d2;
                entry = f;
            }
        }
    }
    int f = entry;
    double t[3] = {0.0, 0.0, 0.0};
    if (f >= 0) {
        nearest(pos + 3L * tri[3 * f], pos + 3L * tri[3 * f + 1], pos + 3L * tri[3 * f + 2], x, t);
    } else {
        if (near < 0) {
            if (!in && keep) keep_clear(s, i, bbox, moved, near, best, fb, fat_pos, keep);
            return 0;
        }
        f = near;
        t[0] = t_near[0], t[1] = t_near[1], t[2] = t_near[2];
    }
    int k[3] = {tri[3 * f], tri[3 * f + 1], tri[3 * f + 2]};
    double q[3], dv[3], n[3];
    for (int d = 0; d < 3; d++) {
        q[d] = (t[0] * pos[3L * k[0] + d] + t[1] * pos[3L * k[1] + d]) + t[2] * pos[3L * k[2] + d];
        dv[d] = x[d] - q[d];
    }
    double nt[3];
    normal_of(pos, k[0], k[1], k[2], nt);
    double skin = PS_SURFACE_SKIN * sqrt(sqrt(dot3(nt, nt))); /* of the triangle's size */
    double sep = s->radius[i] + ((t[0] * s->radius[k[0]] + t[1] * s->radius[k[1]]) + t[2] * s->radius[k[2]]);
    sep = sep + skin;
    double dist = 0.0;
    if (!in && entry < 0) {
        /* Outside, and (finite, nonzero) d2 over sep^2 by a margin: the normal is dv / dist and
         * resolve's C, the rounded dv . n - sep, is at least sqrt(d2) (1 - 9 eps) - sep > 0 (no
         * contact, nothing moved), so it is not called */
        double d2 = dot3(dv, dv);
        if (sep >= 0.0 && d2 > (sep * sep) * (1.0 + 1e-9)
            && d2 > (PS_MIN_LENGTH * PS_MIN_LENGTH) * (1.0 + 1e-9) && d2 < INFINITY) {
            if (keep) keep_clear(s, i, bbox, moved, near, best, fb, fat_pos, keep);
            return 0;
        }
        dist = sqrt(d2);
    }
    if (in || entry >= 0 || !(dist > PS_MIN_LENGTH)) {
        if (!feature_normal(pos, tri, m, k, t, n)) return 0;
    } else {
        for (int d = 0; d < 3; d++) n[d] = dv[d] / dist;
    }
    double mu = sqrt(mu_of(s, i) * s->body_friction[B]);
    double e_i = e_of(s, i), e_b = s->body_restitution[B];
    return resolve(s, i, k, t, n, sep, mu, e_i > e_b ? e_i : e_b, B, q);
}

static int pair_allowed(const Scene *s, int i, int j)
{
    int oi = s->owner[i], oj = s->owner[j];
    if (oi == oj && oi >= 0) {
        if (!(s->flags[oi] & PS_SELF)) return 0;
        const double *ri = s->rest_pos + 3L * i, *rj = s->rest_pos + 3L * j;
        double dx = rj[0] - ri[0], dy = rj[1] - ri[1], dz = rj[2] - ri[2], r = s->radius[i] + s->radius[j];
        return (dx * dx + dy * dy) + dz * dz >= r * r; /* neighbours at rest never collide */
    }
    if ((oi >= 0 && (s->flags[oi] & PS_CLOSED)) || (oj >= 0 && (s->flags[oj] & PS_CLOSED))) return 0;
    return (cat_of(s, i) & mask_of(s, j)) && (cat_of(s, j) & mask_of(s, i));
}

static int pair_contact(const Scene *s, int i, int j)
{
    const double *xi = s->pos + 3L * i, *xj = s->pos + 3L * j;
    double dv[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]}, n[3] = {0.0, 1.0, 0.0};
    double d = sqrt(dot3(dv, dv));
    if (d > PS_MIN_LENGTH)
        for (int c = 0; c < 3; c++) n[c] = dv[c] / d;
    double rj = s->radius[j], ei = e_of(s, i), ej = e_of(s, j), q[3];
    for (int c = 0; c < 3; c++) q[c] = xj[c] + rj * n[c];
    int oj = s->owner[j], k[3] = {j, j, j};
    double t[3] = {1.0, 0.0, 0.0};
    return resolve(s, i, k, t, n, s->radius[i] + rj, sqrt(mu_of(s, i) * mu_of(s, j)), ei > ej ? ei : ej,
                   oj >= 0 ? oj : PS_SHARED, q);
}

/* The boxes of surface o[0 .. m) (rows, three a triangle) at the pass's start (snap), each
 * grown by `grown`, and its blocks' boxes, in tb (see `box_hits`) */
static void make_boxes(const double *snap, const int32_t *o, int m, double grown, double *tb)
{
    int mt = m / 3;
    for (int f = 0; f < mt; f++) {
        for (int d = 0; d < 3; d++) {
            double a = snap[3L * o[3 * f] + d], bb = snap[3L * o[3 * f + 1] + d],
                   c = snap[3L * o[3 * f + 2] + d];
            double l = a < bb ? a : bb, u = a > bb ? a : bb;
            l = c < l ? c : l;
            u = c > u ? c : u;
            tb[d * (long)mt + f] = l - grown;
            tb[(3 + d) * (long)mt + f] = u + grown;
        }
    }
    int nbk = (mt + PS_SCAN - 1) / PS_SCAN;
    for (int k = 0; k < nbk; k++) {
        int f0 = k * PS_SCAN, f1 = f0 + PS_SCAN < mt ? f0 + PS_SCAN : mt;
        for (int d = 0; d < 6; d++) {
            const double *v = tb + d * (long)mt;
            double e = v[f0];
            int nan = 0;
            for (int f = f0; f < f1; f++) {
                double c = v[f];
                nan |= c != c;
                if (d < 3 ? c < e : c > e) e = c;
            }
            tb[6L * mt + d * (long)nbk + k] = nan ? (d < 3 ? -INFINITY : INFINITY) : e;
        }
    }
}

/* |x - y|^2 */
static inline double dist2(const double *x, const double *y)
{
    double u0 = x[0] - y[0], u1 = x[1] - y[1], u2 = x[2] - y[2];
    return (u0 * u0 + u1 * u1) + u2 * u2;
}

/* For the skin of a contact with surface o[0 .. m) (rows, three a triangle) while its rows are
 * within e of snap (see the essay): the largest |(b - a) x (c - a)| of its triangles (a, b, c)
 * in fb[1] and |b - a| + |c - a| in fb[2] (a corner moving by at most e, the skin
 * PS_SURFACE_SKIN sqrt |(b - a) x (c - a)| is then at most PS_SURFACE_SKIN times
 * sqrt(fb[1] + e (2 fb[2] + 4 e))); PS_MIN_LENGTH, and 1e-10 of the body's box for the rounding
 * of the clearance and of the distance test, in fb[3]. */
static void skin_bound(const double *snap, const int32_t *o, int m, const double *box, double *fb)
{
    double area = 0.0, sides = 0.0;
    for (int f = 0; f + 3 <= m; f += 3) {
        const double *a = snap + 3L * o[f], *b = snap + 3L * o[f + 1], *c = snap + 3L * o[f + 2];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]}, n[3];
        cross3(u, v, n);
        double e = sqrt(dot3(n, n)), g = sqrt(dot3(u, u)) + sqrt(dot3(v, v));
        if (!(e <= area)) area = e == e ? e : INFINITY;
        if (!(g <= sides)) sides = g == g ? g : INFINITY;
    }
    double scale = ((fabs(box[0]) + fabs(box[3])) + (fabs(box[1]) + fabs(box[4]))) + (fabs(box[2]) + fabs(box[5]));
    fb[1] = area * (1.0 + 1e-9);
    fb[2] = sides * (1.0 + 1e-9);
    fb[3] = PS_MIN_LENGTH + 1e-10 * scale;
}

/* How far p, outside body box `box` (its surface's corners' box grown by box[6]), is from the
 * corners' box: at least box[6] plus how far beyond the grown box it is in one coordinate */
static inline double box_gap(const double *box, const double *p)
{
    double most = 0.0;
    for (int d = 0; d < 3; d++) {
        double e = box[d] - p[d], u = p[d] - box[3 + d];
        if (u > e) e = u;
        if (e > most) most = e;
    }
    return box[6] + most;
}

/* The clearance a pair with a particle of no radius needs to be let go when every corner of
 * the surface is within e of the lists' positions (fb: a body's fat_drift, which keeps it in
 * fb[5] for the move fb[4] of its surface in the pass, e = fb[0] + 1.75 fb[4]; see the loop in
 * ps_body_contacts_3d) */
static inline double least_clear(const double *fb, double e)
{
    double skin = PS_SURFACE_SKIN * sqrt(fb[1] + e * (2.0 * fb[2] + 4.0 * e));
    return e + (skin + fb[3]) * (1.0 + 1e-6);
}

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
        double x = snap[3L * i], y = snap[3L * i + 1], z = snap[3L * i + 2];
        int k = bucket_of(cell_of(x, ib), cell_of(y, ib), cell_of(z, ib), hb);
        for (int e = bucket_start[k]; e < bucket_start[k + 1]; e++) {
            int b = bucket_body[e];
            if (b == last) continue;
            last = b;
            if (b == own) continue;
            const double *box = aabb + PS_BOX * (long)b;
            if ((x < box[0] - grow) | (x > box[3] + grow) | (y < box[1] - grow) | (y > box[4] + grow)
                | (z < box[2] - grow) | (z > box[5] + grow))
                continue;
            if (used + count == npairs) return i;
            /* bodies ascending: a body's cells may reach the bucket in any order */
            int at = count;
            while (at > 0 && fat_body[used + at - 1] > b) at--;
            if (at > 0 && fat_body[used + at - 1] == b) continue;
            for (int q = count; q > at; q--) fat_body[used + q] = fat_body[used + q - 1];
            fat_body[used + at] = b;
            count++;
        }
        fat_count[i] = count;
        used += count;
    }
    return n;
}

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
                        double h, double rest_speed)
{
    double moved = 0.0;
    Scene s = {.pos = pos, .vel = vel, .contact_point = contact_point, .contact_normal = contact_normal,
               .contact_impulse = contact_impulse, .contact_body = contact_body, .prev_pos = prev_pos,
               .support = support, .radius = radius, .inv_mass = inv_mass, .friction = friction,
               .restitution = restitution, .rest_pos = rest_pos, .owner = owner, .category = category,
               .mask = mask, .outline = outline, .outline_start = outline_start,
               .outline_count = outline_count, .member = member, .member_start = member_start,
               .member_count = member_count, .flags = body_flags, .body_category = body_category,
               .body_mask = body_mask, .body_friction = body_friction,
               .body_restitution = body_restitution, .snap = snap, .left_pos = left_pos,
               .tbox = edge, .aabb = aabb,
               .reacted = reacted,
               .moved = &moved,
               .h = h, .inv_h = 1.0 / h, .rest_speed = rest_speed};
    int listed = fat_state[0] == 1.0;
    double slack = fat_state[6], slack2 = slack * slack, rmax = 0.0, rgrid = 0.0;
    uint64_t sig = 14695981039346656037ULL;
    int ngrid = 0;
    /* the most a particle (dmax), and one of each body (fat_drift[2 b]), is from the lists'
     * positions, squared (a NaN counts as infinitely far) */
    double dmax = 0.0;
    for (int b = 0; b < nb; b++) fat_drift[6L * b] = 0.0;
    for (int i = 0; i < n; i++) {
        double dd = 0.0;
        for (int d = 0; d < 3; d++) {
            double c = pos[3L * i + d], e = c - fat_pos[3L * i + d];
            snap[3L * i + d] = c;
            reacted[3L * i + d] = 0.0;
            dd = dd + e * e;
        }
        if (radius[i] > rmax) rmax = radius[i];
        if (grid_particle(&s, i, particle_collisions)) {
            ngrid++;
            if (radius[i] > rgrid) rgrid = radius[i];
        }
        listed &= dd <= slack2;
        sig = mix(sig, owner[i]);
        if (!(dd <= dmax)) dmax = dd == dd ? dd : INFINITY;
        int o = owner[i];
        if (o >= 0 && !(dd <= fat_drift[6L * o])) fat_drift[6L * o] = dd == dd ? dd : INFINITY;
    }
    double margin = 2.0 * rmax, extent = 0.0;
    int targets = 0;
    for (int b = 0; b < nb; b++) {
        double *box = aabb + PS_BOX * (long)b;
        box[0] = box[1] = box[2] = 1.0;
        box[3] = box[4] = box[5] = -1.0;
        box[6] = box[7] = box[8] = box[9] = 0.0;
        int m = outline_count[b];
        sig = mix(mix(mix(sig, body_flags[b]), outline_start[b]), m);
        if (!(body_flags[b] & PS_CLOSED) || m < 3) continue;
        const int32_t *o = outline + outline_start[b];
        double lo[3], hi[3];
        for (int d = 0; d < 3; d++) lo[d] = hi[d] = snap[3L * o[0] + d];
        for (int k = 0; k < m; k++) {
            sig = mix(sig, o[k]);
            if (owner[o[k]] != b) box[9] = 1.0; /* a row not b's alone: see surface_moved */
            for (int d = 0; d < 3; d++) {
                double c = snap[3L * o[k] + d];
                if (c < lo[d]) lo[d] = c;
                if (c > hi[d]) hi[d] = c;
            }
        }
        double *fb = fat_drift + 6L * b;
        fb[0] = sqrt(box[9] != 0.0 ? dmax : fb[0]);
        fb[4] = 0.0;
        fb[5] = least_clear(fb, fb[0]);
        double big = 0.0, side = 0.0;
        for (int d = 0; d < 3; d++)
            if (hi[d] - lo[d] > side) side = hi[d] - lo[d];
        double grown = margin + 2.0 * PS_SURFACE_SKIN * side; /* radii, and the skin */
        int finite = 1;
        for (int d = 0; d < 3; d++) finite &= isfinite(lo[d] - grown) && isfinite(hi[d] + grown);
        if (!finite) continue; /* a body that blew up (the finish pass reports it) */
        box[7] = 0.0; /* its triangles' boxes: made when a particle first meets its box */
        for (int d = 0; d < 3; d++) {
            box[d] = lo[d] - grown;
            box[3 + d] = hi[d] + grown;
            if (box[3 + d] - box[d] > big) big = box[3 + d] - box[d];
        }
        box[6] = grown;
        extent += big;
        targets++;
    }
    double sig_hi = (double)(uint32_t)(sig >> 32), sig_lo = (double)(uint32_t)sig;
    int same = fat_state[1] == sig_hi && fat_state[2] == sig_lo && fat_state[3] == (double)n
               && fat_state[4] == (double)nb && fat_state[5] == margin
               && fat_state[7] == (double)particle_collisions;
    /* lists made again for the same layout (a particle moved past the slack): each old pair's
     * clearance, less how far i and the surface are from the old lists' positions, holds for
     * the new ones (see the essay) and is kept */
    long carried = 0; /* the old pairs in fat_kept (key i nb + B, ascending; clearance) */
    if (fat_state[0] == 1.0 && same && !listed) {
        long e = 0;
        for (int i = 0; i < n; i++) {
            double di = sqrt(dist2(snap + 3L * i, fat_pos + 3L * i));
            for (int q = 0; q < fat_count[i]; q++, e++) {
                int b = fat_body[e];
                fat_kept[2 * e] = (double)i * (double)nb + (double)b;
                fat_kept[2 * e + 1] = fat_clear[e] > 0.0 ? (fat_clear[e] - di) - fat_drift[6L * b] : -INFINITY;
            }
        }
        carried = e;
    }
    listed &= same;
    int hb = 1;
    double cs = 1.0, ib = 1.0, grow = 0.0;
    if (targets && !listed) { /* the bodies' hash: each grown box in every cell it covers */
        cs = 0.5 * extent / targets;
        if (!(cs > 0.0) || !(cs < 1e300)) cs = 1.0;
        grow = 0.25 * cs;
        ib = 1.0 / cs;
        double total;
        for (;;) {
            total = 0.0;
            for (int b = 0; b < nb; b++) {
                const double *box = aabb + PS_BOX * (long)b;
                if (box[0] > box[3]) continue;
                double cells = 1.0;
                for (int d = 0; d < 3; d++)
                    cells *= (double)(cell_of(box[3 + d] + grow, ib) - cell_of(box[d] - grow, ib) + 1);
                total += cells;
            }
            if (total <= (double)nentries) break;
            cs = 2.0 * cs;
            ib = 1.0 / cs;
        }
        hb = buckets_for((int)total, nbuckets);
        for (int k = 0; k <= hb; k++) bucket_start[k] = 0;
        for (int pass = 0; pass < 2; pass++) {
            for (int b = 0; b < nb; b++) {
                const double *box = aabb + PS_BOX * (long)b;
                if (box[0] > box[3]) continue;
                for (long cx = cell_of(box[0] - grow, ib); cx <= cell_of(box[3] + grow, ib); cx++)
                    for (long cy = cell_of(box[1] - grow, ib); cy <= cell_of(box[4] + grow, ib); cy++)
                        for (long cz = cell_of(box[2] - grow, ib); cz <= cell_of(box[5] + grow, ib); cz++) {
                            int k = bucket_of(cx, cy, cz, hb);
                            if (pass == 0) bucket_start[k + 1]++;
                            else bucket_body[bucket_start[k]++] = b;
                        }
            }
            if (pass == 0) prefix(bucket_start, hb);
        }
        shift_back(bucket_start, hb);
    }
    double pc = 4.0 * rgrid, ip = pc > 0.0 ? 1.0 / pc : 1.0;
    int hp = 1;
    if (ngrid >= 2) {
        hp = buckets_for(ngrid, nbuckets);
        for (int k = 0; k <= hp; k++) cell_start[k] = 0;
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < n; i++) {
                if (!grid_particle(&s, i, particle_collisions)) continue;
                int k = bucket_of(cell_of(snap[3L * i], ip), cell_of(snap[3L * i + 1], ip),
                                  cell_of(snap[3L * i + 2], ip), hp);
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
                if (i0 == 0 && i1 == n) {
                    listed = 1;
                    memcpy(fat_pos, snap, sizeof(double) * 3 * (size_t)n);
                    /* no clearance known yet but a carried one; every particle at its listed
                     * position */
                    long k = 0;
                    for (int i = 0; i < n; i++)
                        for (int q = 0; q < fat_count[i]; q++) {
                            long e = (long)fat_first[i] + q;
                            double key = (double)i * (double)nb + (double)fat_body[e];
                            while (k < carried && fat_kept[2 * k] < key) k++;
                            fat_clear[e] = k < carried && fat_kept[2 * k] == key ? fat_kept[2 * k + 1] : -INFINITY;
                        }
                    for (int b = 0; b < nb; b++) {
                        fat_drift[6L * b] = 0.0;
                        skin_bound(snap, outline + outline_start[b], outline_count[b],
                                   aabb + PS_BOX * (long)b, fat_drift + 6L * b);
                        fat_drift[6L * b + 4] = 0.0;
                        fat_drift[6L * b + 5] = least_clear(fat_drift + 6L * b, fat_drift[6L * b]);
                    }
                    fat_state[0] = 1.0;
                    fat_state[1] = sig_hi;
                    fat_state[2] = sig_lo;
                    fat_state[3] = (double)n;
                    fat_state[4] = (double)nb;
                    fat_state[5] = margin;
                    fat_state[6] = 0.45 * grow;
                    fat_state[7] = (double)particle_collisions;
                } else {
                    fat_state[0] = 0.0;
                }
            }
            int cache = listed; /* the lists whole: each pair's clearance kept (see the essay) */
            for (int i = i0; i < i1; i++) {
                const double *xs = snap + 3L * i;
                const int32_t *list = fat_body + fat_first[i];
                double *clear = fat_clear + fat_first[i];
                /* |x_i - fat_pos_i| and |snap_i - fat_pos_i|, when first needed */
                double di = -1.0, ds = -1.0, ri = (radius[i] + rmax) * (1.0 + 1e-6);
                for (int q = 0; q < fat_count[i]; q++) {
                    int b = list[q];
                    double *box = aabb + PS_BOX * (long)b;
                    double *fb = fat_drift + 6L * b;
                    if (cache && clear[q] > 0.0) { /* far enough outside: face_contact lets it go */
                        double moved_b = surface_moved(&s, box);
                        if (!(moved_b == fb[4])) { /* the surface moved since fb[5] was made */
                            fb[4] = moved_b;
                            fb[5] = least_clear(fb, fb[0] + 1.75 * moved_b);
                        }
                        if (di < 0.0) di = sqrt(dist2(pos + 3L * i, fat_pos + 3L * i));
                        if (clear[q] > (fb[5] + ri) + di) continue;
                    }
                    if ((xs[0] < box[0]) | (xs[0] > box[3]) | (xs[1] < box[1]) | (xs[1] > box[4])
                        | (xs[2] < box[2]) | (xs[2] > box[5])) {
                        if (cache) { /* outside B's grown box: as far from its surface, at least */
                            if (ds < 0.0) ds = sqrt(dist2(xs, fat_pos + 3L * i));
                            clear[q] = box[0] <= box[3] ? (box_gap(box, xs) - ds) - fb[0] : -INFINITY;
                        }
                        continue;
                    }
                    if (box[7] == 0.0) {
                        make_boxes(snap, outline + outline_start[b], outline_count[b], box[6],
                                   edge + 4L * outline_start[b]);
                        box[7] = 1.0;
                    }
                    int hit = face_contact(&s, i, b, box, cache ? clear + q : NULL, fb, fat_pos);
                    if (hit) di = -1.0; /* i moved */
                    contacts += hit;
                }
            }
            i0 = i1;
        }
        for (int i = 0; i < n && ngrid >= 2; i++) {
            if (!grid_particle(&s, i, particle_collisions)) continue;
            const double *xs = snap + 3L * i;
            long cx = cell_of(xs[0], ip), cy = cell_of(xs[1], ip), cz = cell_of(xs[2], ip);
            int count = 0;
            for (long gx = cx - 1; gx <= cx + 1; gx++)
                for (long gy = cy - 1; gy <= cy + 1; gy++)
                    for (long gz = cz - 1; gz <= cz + 1; gz++) {
                        int k = bucket_of(gx, gy, gz, hp);
                        for (int e = cell_start[k]; e < cell_start[k + 1]; e++) {
                            int j = cell_particle[e];
                            if (j <= i) continue;
                            const double *xj = snap + 3L * j;
                            double dx = xj[0] - xs[0], dy = xj[1] - xs[1], dz = xj[2] - xs[2];
                            double r = 2.0 * (radius[i] + radius[j]);
                            if ((dx * dx + dy * dy) + dz * dz > r * r || !pair_allowed(&s, i, j)) continue;
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
    memcpy(left_pos, pos, sizeof(double) * 3 * (size_t)n); /* for the next pass's `came` */
    return contacts;
}
