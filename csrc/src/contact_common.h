/* What the body-contact passes of 2D (contacts.c) and 3D (contacts3d.c) share: a pass's
 * arrays (Scene), the particles' materials by body, the hashed grid's cells and buckets, and
 * the candidate lists' bookkeeping. */
#ifndef PS_CONTACT_COMMON_H
#define PS_CONTACT_COMMON_H

#include "internal.h"

#define PS_CLOSED 1         /* a body's flags: its outline or surface is closed */
#define PS_SELF 2           /* ... it collides with itself */
#define PS_SHARED (-2)      /* a particle's owner: more than one body */
#define PS_MAX_PUSHOUT 1.0  /* m/s: the speed at which an overlap met at rest is undone */

/* floor(x / cell), clamped; `inv` is 1 / cell (no libm floor: it is a call on baseline x86-64) */
static inline long cell_of(double x, double inv)
{
    double v = x * inv;
    if (!(v > -PS_CELL_LIMIT)) return (long)-PS_CELL_LIMIT;
    if (!(v < PS_CELL_LIMIT)) return (long)PS_CELL_LIMIT;
    long c = (long)v;
    return v < (double)c ? c - 1 : c;
}

/* The smallest power of two >= 2 want, at most cap (a power of two itself or not). */
static inline int buckets_for(int want, int cap)
{
    int h = 1;
    while (h < 2 * want && 2 * h <= cap) h *= 2;
    return h;
}

typedef struct {
    double *pos, *vel, *contact_point, *contact_normal, *contact_impulse;
    int32_t *contact_body;
    const double *prev_pos, *support, *radius, *inv_mass, *friction, *restitution, *rest_pos;
    const double *edge; /* 2D */
    const int32_t *owner, *category, *mask;
    const int32_t *outline, *outline_start, *outline_count;
    const int32_t *member, *member_start, *member_count;
    const int32_t *flags, *body_category, *body_mask;
    const double *body_friction, *body_restitution;
    /* 3D: the pass's start positions, where the last pass of the frame left each particle
     * (NaN before the first), each triangle's grown box, the bodies' boxes, the most any
     * particle has moved from snap (each coordinate) so far (each body's own in its box), and
     * how far contacts' reactions have moved each particle as a triangle's corner in the pass
     * (see contacts3d.c) */
    const double *snap, *left_pos, *tbox;
    double *aabb, *moved, *reacted;
    double h, inv_h, rest_speed;
} Scene;

static inline uint32_t cat_of(const Scene *s, int i)
{
    int o = s->owner[i];
    return (uint32_t)(o >= 0 ? s->body_category[o] : s->category[i]);
}

static inline uint32_t mask_of(const Scene *s, int i)
{
    int o = s->owner[i];
    return (uint32_t)(o >= 0 ? s->body_mask[o] : s->mask[i]);
}

static inline double mu_of(const Scene *s, int i)
{
    int o = s->owner[i];
    return o >= 0 ? s->body_friction[o] : s->friction[i];
}

static inline double e_of(const Scene *s, int i)
{
    int o = s->owner[i];
    return o >= 0 ? s->body_restitution[o] : s->restitution[i];
}

static inline int in_range(const int32_t *rows, int count, int i)
{
    for (int k = 0; k < count; k++)
        if (rows[k] == i) return 1;
    return 0;
}

/* Is particle i in the particle grid? */
static inline int grid_particle(const Scene *s, int i, int particle_collisions)
{
    if (!(s->radius[i] > 0.0)) return 0;
    int o = s->owner[i];
    if (o == -1) return particle_collisions;
    if (o < 0) return 0;
    return !(s->flags[o] & PS_CLOSED) || (s->flags[o] & PS_SELF);
}

/* Counting sort into buckets: start[k] (counts in start[k + 1] on entry, nbuckets + 1
 * entries) become prefix sums; entries are then placed with start[k]++ by the caller
 * and shift_back() restores the starts. */
static inline void prefix(int32_t *start, int nbuckets)
{
    for (int k = 0; k < nbuckets; k++) start[k + 1] += start[k];
}

static inline void shift_back(int32_t *start, int nbuckets)
{
    for (int k = nbuckets; k > 0; k--) start[k] = start[k - 1];
    start[0] = 0;
}

/* The layout the candidate lists were built for: owners, outlines and flags, mixed into 64
 * bits (FNV-1a over 32-bit words). */
static inline uint64_t mix(uint64_t h, int32_t v)
{
    return (h ^ (uint32_t)v) * 1099511628211ULL;
}

#endif
