"""Constants shared by the C core and the NumPy twins, defined once, here.

``pysoft/_build.py`` passes each as a macro to the C compiler
(``-DPS_MIN_LENGTH=1e-12`` ...), and ``csrc/src/internal.h`` refuses to
compile without them, so C and Python cannot drift apart.
"""

MIN_LENGTH = 1e-12  # m: below it a spring, constraint or contact normal has no direction
POLYTOPE = 0  # collider kind: the intersection of half-spaces n . y <= o
CAPSULE = 1  # collider kind: the points within a radius of a segment
# A collider's corner on the inner side of a body's outline edge is that edge's contact only
# if it was at most this fraction of the edge's length inside the edge's line at the
# substep's start (it came through the edge); the bounding-sphere cull of edges.c adds it too
EDGE_SLACK = 0.1
# No end of an outline edge is moved by more than this many times the depth of its contact
# with a collider (edges.c: a lever about a pinned or held end is capped)
EDGE_LEVER = 2.0

# m: a particle that starts a substep this close inside a polytope face (the rounding of a
# push-out onto that face, or of carrying the start with a moving collider) still counts as
# starting outside it, so the swept test finds the face it came through (collide.c)
SWEEP_SLOP = 1e-9

# m/s: how fast a collider pushes out a particle that began the substep inside it (spawned
# overlapping a wall, written into a box, pushed in by its body's constraints): each substep it
# comes out by at most this speed times h beyond the penetration it gained in the substep, the
# rest in later substeps (Box2D's contact push-out speed). Pushed out at once, a body spawned
# 0.18 m into a wall was squashed flat against it in one substep and its constraints threw it
# off at 10 m/s (collide.c)
MAX_PUSHOUT_SPEED = 1.0

# m/s: the most velocity one XPBD constraint correction may give a particle (velocities follow
# the corrections). A body spawned into a wall or turned inside out is corrected by far more
# than its motion in one substep; following all of it threw such bodies at 13-41 m/s. Scaled
# for the whole constraint, so momentum is kept (constraints.c)
MAX_CORRECTION_SPEED = 3.0

# An area spring's triangle turned inside out (A < 0) is pushed back harder: its stiffness
# gains this many times k times the inverted area (zero at A = 0, so the force is continuous)
INVERSION_GAIN = 2.0
# A 3D volume spring's pull grows with its tetrahedron's faces (its force is k (V - V0) times
# the volume's gradient, whose size is a face's area): up to this many times the squared
# gradient of its rest shape, and no further. A crumpled or jittered lattice of tetrahedra
# otherwise stiffens past what an explicit substep can carry (a ball of springs jittered by a
# tenth of its radius blew up in its first frame); at rest and squashed on a floor no
# tetrahedron comes near it
VOLUME_STIFFENING = 3.0

# 1/s^2: the least stiffness a shape-matched body is pulled toward its rest shape with while
# its members fit a mirror image of that shape better than any rotation of it (turned inside
# out). Area forces alone (gas, area springs) push a uniformly inverted outline straight in,
# which folds it (a mirrored gas disc came back with a fold in 4 of 9 sizes); the pull to the
# rotated rest shape takes the body back through a flat state along one axis instead (9 of 9
# from 100 to 3,000; bodies.c). A body whose own stiffness is higher keeps its own
UNMIRROR_STIFFNESS = 1000.0
# ... and at least this many times its own stiffness: a body whose springs hold its mirror
# image (a single cell of springs with its diagonals, shape-matched at 2,000: the flip goes
# through a flat state its springs resist) stayed inside out at 1x and 2.5x; at 5x it turns back
UNMIRROR_GAIN = 5.0

# Sweeps of the cyclic Jacobi method that finds a 3D shape-matched body's best-fit rotation
# (the top eigenvector of Horn's 4 x 4 quaternion matrix; bodies.c): it converges
# quadratically, and 4 x 4 matrices reach rounding level in 4 or 5 sweeps; a fixed count keeps
# the C core and its NumPy twin on the same operations
JACOBI_SWEEPS = 6

# Spatial hash cells: |cell coordinates| are clamped here (a NaN or infinite coordinate gets
# the lowest or highest cell rather than an undefined conversion; contacts.c)
CELL_LIMIT = 1073741824.0

# The most threads a pass may split its loop over: the C core's pool keeps at most one fewer
# workers (pool.c), World(threads=N) accepts 1 to this
MAX_THREADS = 16

C_MACROS = {"PS_MIN_LENGTH": MIN_LENGTH, "PS_POLYTOPE": POLYTOPE, "PS_CAPSULE": CAPSULE,
            "PS_EDGE_SLACK": EDGE_SLACK, "PS_EDGE_LEVER": EDGE_LEVER, "PS_SWEEP_SLOP": SWEEP_SLOP,
            "PS_MAX_PUSHOUT_SPEED": MAX_PUSHOUT_SPEED,
            "PS_MAX_CORRECTION_SPEED": MAX_CORRECTION_SPEED,
            "PS_INVERSION_GAIN": INVERSION_GAIN, "PS_VOLUME_STIFFENING": VOLUME_STIFFENING,
            "PS_UNMIRROR_STIFFNESS": UNMIRROR_STIFFNESS,
            "PS_UNMIRROR_GAIN": UNMIRROR_GAIN,
            "PS_JACOBI_SWEEPS": JACOBI_SWEEPS, "PS_CELL_LIMIT": CELL_LIMIT,
            "PS_MAX_THREADS": MAX_THREADS}

# A muscle's activation (its rest length over its muscle length) is clamped to this range:
# from half to one and a half times its length, a spring's contraction and extension as a voxel
# robot's actuators make them
MUSCLE_RANGE = (0.5, 1.5)
