"""Constants shared by the C core and the NumPy twins, defined once, here.

``pysoft/_build.py`` passes each as a macro to the C compiler
(``-DPS_MIN_LENGTH=1e-12`` ...), and ``csrc/src/internal.h`` refuses to
compile without them, so C and Python cannot drift apart.
"""

MIN_LENGTH = 1e-12  # m: below it a spring, constraint or contact normal has no direction
POLYTOPE = 0  # collider kind: the intersection of half-spaces n . y <= o
CAPSULE = 1  # collider kind: the points within a radius of a segment

C_MACROS = {"PS_MIN_LENGTH": MIN_LENGTH, "PS_POLYTOPE": POLYTOPE, "PS_CAPSULE": CAPSULE}
