/* pysoft.h -- the one declaration of every kernel the C core exports.
 *
 * The C compiler includes this file and pysoft/_build.py hands the text
 * between the cdef markers to cffi's cdef(), so nothing is declared twice.
 * Keep that region free of preprocessor lines: cffi cannot read them.
 * The sources are csrc/src/<feature>.c, one per feature or pass (the
 * comment before each group below names it); csrc/src/internal.h holds the
 * helpers and constants they share.
 *
 * Every kernel is a pure function over caller-owned arrays: written arrays
 * first (then any workspace it may overwrite), then read-only arrays, then
 * counts, then scalars. Kernels never
 * allocate, keep no state (the worker threads of pool.c, which a kernel
 * given threads > 1 splits its loop over, hold none) and loop in a fixed
 * order; each documents its
 * accumulation order so that its NumPy twin (same name without the ps_
 * prefix, in pysoft/twins/<file>.py) matches it bit for bit.
 *
 * Layout: positions, velocities and forces are row-major (n, dim) doubles;
 * per-particle scalars are (n,) doubles; index pairs are (m, 2) int32 rows.
 * A particle whose inv_mass is 0 is immovable: integrators skip it.
 */
#ifndef PYSOFT_H
#define PYSOFT_H

#include <stdint.h>

/* cdef-begin */

/* gravity.c */
void ps_radial_gravity(double *force, const double *pos, const double *mass,
                       const double *inv_mass, const double *well_center,
                       const double *well_strength, const int32_t *well_falloff,
                       const double *well_min_distance, int n, int w, int dim);
void ps_gravity_drag(double *force, double *vel, double *start_vel, const double *mass,
                     const double *inv_mass, const double *gravity,
                     int n, int dim, double drag, int record);

/* springs.c */
void ps_springs(double *force, const double *pos, const double *vel,
                const int32_t *pairs, const double *rest_length,
                const double *stiffness, const double *damping, int32_t *spring_end,
                int32_t *incidence, double *spring_force, int32_t *incidence_state,
                int m, int dim, int n, int threads);
void ps_area_springs(double *force, const double *pos, const double *vel,
                     const int32_t *triangles, const double *rest_area,
                     const double *rest_gradient, const double *stiffness,
                     const double *damping, int m, int dim);
void ps_muscles(double *rest_length, const double *muscle_length, const double *activation,
                int m, double low, double high);

/* envs.c: pysoft.envs' walkers, many worlds a call (world w's arrays through pointers) */
void ps_walkers_drive(double *const *act, const double *action, const int32_t *muscle_rows,
                      const int32_t *owners, int nw, int k, int m, double low, double high);
void ps_walkers_observe(double *obs, double *x, double *times, const double *const *pos,
                        const double *const *vel, const double *const *time,
                        const int32_t *rows, const double *weights, int nw, int n, double limit);
/* The same for one walker of a batch, as a world's `after` (ps_world): world `w` of the batch
 * `walkers` (a ps_walkers: ps_walkers_observe's arguments) observed as ps_walkers_observe
 * observes it, and observed[w] set to 1. */
typedef struct {
    double *obs, *x, *times;
    const double *const *pos;
    const double *const *vel;
    const double *const *time;
    const int32_t *rows;
    const double *weights;
    int n;
    double limit;
    int32_t *observed;
} ps_walkers;
void ps_walker_observed(const void *walkers, int w);

/* bodies.c */
void ps_pressure(double *force, const double *pos, const int32_t *outline,
                 const int32_t *body_start, const int32_t *body_count,
                 const double *amount, const double *min_area, int nb, int dim);
void ps_shape_match(double *force, const double *pos, const double *vel,
                    const double *mass, const double *inv_mass,
                    const int32_t *members, const double *rest,
                    const int32_t *body_start, const int32_t *body_count,
                    const double *stiffness, const double *damping, int nb, int dim);
void ps_rolling_resistance(double *vel, double *rolled, const double *pos, const double *mass,
                           const double *inv_mass, const double *contact_impulse,
                           const int32_t *members, const int32_t *body_start,
                           const int32_t *body_count, const double *coefficient, int nb, int dim);

/* grab.c */
void ps_grab(double *force, const double *pos, const double *vel, const int32_t *particle,
             const double *target, const double *stiffness, const double *damping,
             int m, int dim);

/* integrate.c */
void ps_symplectic_euler(double *pos, double *vel, double *prev_pos,
                         const double *force, const double *inv_mass,
                         int n, int dim, double h);
void ps_explicit_euler(double *pos, double *vel, double *prev_pos,
                       const double *force, const double *inv_mass,
                       int n, int dim, double h);
void ps_verlet_drift(double *pos, double *vel_pred, double *prev_pos,
                     const double *vel, const double *force,
                     const double *inv_mass, int n, int dim, double h);
void ps_verlet_kick(double *vel, const double *force0, const double *force1,
                    const double *inv_mass, int n, int dim, double h);
void ps_rk4_stage(double *pos_out, double *vel_out, const double *pos,
                  const double *vel, const double *dpos, const double *force,
                  const double *inv_mass, int n, int dim, double c);
void ps_rk4_combine(double *pos, double *vel, double *prev_pos, const double *v1,
                    const double *v2, const double *v3, const double *v4,
                    const double *f1, const double *f2, const double *f3,
                    const double *f4, const double *inv_mass,
                    int n, int dim, double h);
void ps_xpbd_predict(double *pos, double *prev_pos, double *vel,
                     const double *force, const double *inv_mass,
                     int n, int dim, double h);
void ps_xpbd_velocity(double *vel, const double *pos, const double *prev_pos,
                      const double *withheld, const double *inv_mass, int n, int dim, double h);

/* constraints.c */
void ps_xpbd_distance(double *pos, double *vel, double *withheld, double *lambda,
                      const double *inv_mass, const double *prev_pos, const int32_t *pairs,
                      const double *rest_length, const double *compliance,
                      const int32_t *order, const int32_t *batch_start, int m, int nbatch,
                      int dim, int follow, double h);
void ps_xpbd_volume(double *pos, double *vel, double *withheld, double *lambda,
                    const double *inv_mass, const int32_t *simplices, const double *rest_volume,
                    const double *compliance, const int32_t *order,
                    const int32_t *batch_start, int m, int nbatch, int dim, int follow,
                    double h);
void ps_xpbd_material(double *pos, double *vel, double *withheld, double *lambda,
                      const double *inv_mass, const int32_t *tets, const double *dm_inv,
                      const double *compliance, const int32_t *order,
                      const int32_t *batch_start, int m, int nbatch, int dim, double h);
int ps_settle_mass(double *settle_inv_mass, const double *support, const int32_t *stuck,
                    const double *inv_mass,
                    const int32_t *members, const int32_t *body_start,
                    const int32_t *body_count, int n, int b, int dim);
void ps_settle_plan(int32_t *settle_order, int32_t *settle_start, const int32_t *order,
                    const int32_t *batch_start, const int32_t *rows, const double *settle_inv_mass,
                    int m, int nbatch, int k);
void ps_zero(double *values, int m);
void ps_untangle(double *pos, double *vel, double *withheld, int32_t *tangled,
                 const double *inv_mass, const double *support, const int32_t *owner,
                 const int32_t *simplices, const double *rest_volume, const int32_t *members,
                 const double *rest, const int32_t *body_start, const int32_t *body_count, int n,
                 int m, int b, int dim, double h);
void ps_spin_record(double *spin, const double *pos, const double *vel, const double *mass,
                    const double *inv_mass, const double *support, const int32_t *owner,
                    const int32_t *linked,
                    const int32_t *members, const int32_t *body_start, const int32_t *body_count,
                    int n, int b, int dim);
void ps_spin_keep(double *vel, double *withheld, const double *spin, const double *pos,
                  const double *prev_pos, const double *mass, const double *inv_mass,
                  const double *support, const int32_t *owner, const int32_t *linked,
                  const int32_t *tangled,
                  const int32_t *members, const int32_t *body_start, const int32_t *body_count,
                  int n, int b, int dim, int mode, double h);

/* collide.c */
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
               int dim, int iterations, double h, double rest_speed, int threads, int clear);

/* edges.c */
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
                    double rest_speed);

/* contacts.c */
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
                     double h, double rest_speed);

/* finish.c */
/* frame.c: a frame's passes in one call. One ps_op per kernel call of a substep, in run
 * order: its kernel (an index into ps_op_names, the kernels of this header in order), the
 * arguments in the kernel's order by kind (pointers p, ints i, doubles d), and when it runs:
 * `when` 0 every substep, 1 only on the first, 2 only on the last; `vary` >= 0 names an i[] slot set at every
 * substep (`vary_kind` 0: 1 on the first substep, else 0; 1: substep % 2); `after` >= 0
 * names an earlier op of the substep whose nonzero result this op waits on (`also` >= 0: or
 * that of this other earlier op; -1: none). `result` is the
 * kernel's last return value (0 for a void kernel), `calls` how many times it ran.
 * Row groups (with threads > 1): consecutive ops of one `group` (>= 0; -1: none) treat
 * every particle row on its own, so each thread takes a range of the rows through all of
 * them, with one wait for the group instead of one per op: i[rows_slot] is the op's row
 * count, row_bytes[k] the bytes per row of pointer k (0: not a per-row array), i[threads_slot]
 * (if >= 0) its own thread count (1 within a range), and `combine` how the ranges' results
 * make the op's: 0 none, 1 their sum, 2 the first row a range returns (-1: none). `nptr`
 * is the number of pointers in p[] (the kernel's arrays). */
typedef struct {
    int kernel, stage, when, vary, vary_kind, after, also;
    int64_t result, calls;
    void *p[48];
    int64_t i[16];
    double d[8];
    int group, rows_slot, threads_slot, combine;
    int32_t row_bytes[48];
    int nptr;  /* the pointers in p[] (the kernel's arrays) */
} ps_op;
extern const char *const ps_op_names[];
extern const char *const ps_op_scalars[];
extern const int ps_op_count;
void ps_run_frame(ps_op **ops, int nops, int substeps, int nstages, double *seconds, int threads);

/* frame.c: many worlds' frames in one call (pysoft.step_many). A world is its frame's ops
 * (as ps_run_frame takes them) and what runs between two of its frames: `between`, copies
 * of `bytes` bytes from `source` to `to` (or, where `source` is NULL, `to` filled with the
 * byte `fill`), in order, before every frame but the first. Its frames end after `frames`, or
 * after the first whose op `scan` (>= 0) returned a row (>= 0); `ran` says how many ran.
 * With `resume` set, the first frame continues the world's last one (its `between` runs
 * before it too), provided each of the `nwatch` regions `watch[k].to` still holds the bytes
 * of its `source` (what the frame's start read when the calls were made); if one does not,
 * nothing runs and `ran` is -1. Each world runs on one thread; ps_run_worlds hands the
 * worlds to up to `threads`. */
typedef struct {
    void *to;
    const void *source;
    int64_t bytes;
    int fill;
} ps_copy;
typedef struct {
    ps_op **ops;
    int nops, substeps, nstages;
    double *seconds;
    ps_copy *between, *watch;
    int nbetween, nwatch, resume, scan, frames, ran;
    int64_t found;  /* after the run: what the scan op returned in the last frame run (-1: none) */
    /* ps_lane_worlds: `lane` 1 while the world may continue from its last frame in C with nothing
     * of Python's to do around its frames, as long as `versions` (its Store's row changes and
     * edits, its settings' changes, the removals made in its esper context: live) still hold
     * `armed`; its time in *time, advanced by `dt` a frame. */
    int lane;
    const int64_t *versions[4];
    int64_t armed[4];
    double *time, dt;
    /* Not NULL: after the world's frames ran in the lane (status 1), on the thread that ran
     * them, while its arrays are in that CPU's caches, after(after_data, after_index): a
     * function of the core's that reads the world for its owner (pysoft.envs' walkers'
     * observations: ps_walker_observed). */
    void (*after)(const void *data, int index);
    const void *after_data;
    int after_index;
} ps_world;
void ps_run_worlds(ps_world **worlds, int count, int threads);
/* frame.c: step_many's lane. Each world whose `lane` is set and whose versions hold what it
 * was armed with runs `frames` frames continuing from its last one (resume, as ps_run_worlds);
 * status[k]: 1 it ran them all and found nothing unstable (its time advanced, frame by frame),
 * 2 it tried (`ran` -1: a watched value changed; or a scan found an unstable particle: `ran`
 * frames ran, its time not advanced; `lane` cleared), 0 it did not run. Worlds handed to up
 * to `threads` threads, each world on one. */
void ps_lane_worlds(ps_world **worlds, int count, int frames, int threads, int32_t *status);
/* frame.c: a thread of its own that runs ps_run_worlds while the caller goes on (step_many's
 * Python work on one list of worlds overlaps the frames of the next). ps_runner_new starts
 * it (NULL where there are no threads, or starting one failed); ps_runner_post hands it
 * (worlds, count, threads) and returns at once (with `status` not NULL, the worlds as
 * ps_lane_worlds runs them: `frames` frames each, their status in status[k]); ps_runner_wait runs the worlds of that run
 * that no thread has taken yet on the calling thread, and returns when the run is done (at
 * once if none was posted), without waiting for the runner's thread to be scheduled when it
 * took none of them; ps_runner_free waits, stops and frees it. One run posted at a time (a
 * run of more than 65,535 worlds runs in the post, on the calling thread); a runner belongs to
 * the caller that made it (nothing in it is shared). */
typedef struct ps_runner ps_runner;
ps_runner *ps_runner_new(void);
void ps_runner_post(ps_runner *runner, ps_world **worlds, int count, int threads, int frames,
                    int32_t *status);
void ps_runner_wait(ps_runner *runner);
void ps_runner_free(ps_runner *runner);

const char *ps_compile_flags(void);
int ps_cpu_has_x86_64_v3(void);
int ps_find_unstable(const double *pos, const double *vel, int n, int dim,
                     double max_speed);
int ps_clamp_speeds(double *pos, double *vel, const double *prev_pos, int n, int dim,
                    double max_speed);

/* reference.c (the benchmark's yardstick, not an engine pass) */
void ps_reference_springs(double *x, double *y, double *vx, double *vy, double *fx, double *fy,
                          const int32_t *a, const int32_t *b, const double *rest, int n, int ns,
                          double k, double c);
void ps_reference_steps(double *x, double *y, double *vx, double *vy, double *fx, double *fy,
                        const int32_t *a, const int32_t *b, const double *rest, int n, int ns,
                        double k, double c, double dt, double inv_mass, double g, double e,
                        double mu, int nsteps);

/* cdef-end */

#endif /* PYSOFT_H */
