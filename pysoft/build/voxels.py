"""Voxel robots: ``build.voxels(world, grid, origin, cell=...)`` in Evolution Gym's convention.

``grid`` is a 2D integer array, row 0 the top row as the array prints: 0 empty, 1 rigid, 2
soft, 3 horizontal actuator, 4 vertical actuator. Each voxel is a square of ``cell`` metres
with a particle at each corner, springs along its four sides and across both diagonals;
voxels that touch share their corner particles, and voxels side by side share the spring of
their common side (the stiffer of the two voxels' springs). Rigid voxels' springs are
RIGID_GAIN times as stiff as soft ones'. An actuator's two sides along its direction (a
horizontal actuator's top and bottom, a vertical one's left and right) are muscles
(``World.add_muscles``): their rest length is the side times the voxel's activation,
clamped to ``MUSCLE_RANGE`` (0.5 to 1.5); a side two actuators share follows the mean of
their activations. The body's outline is the outer boundary of the voxels (a voxel robot that
encloses a hole collides with other bodies along its outside only).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pysoft import _validate as validate
from pysoft.build.planar import STIFFNESS_PER_KG, _body, _or_undo, _particles
from pysoft.features.springs import Muscles
from pysoft.world import World

EMPTY, RIGID, SOFT, HORIZONTAL, VERTICAL = range(5)  # a voxel's kind, as Evolution Gym's
RIGID_GAIN = 8.0  # a rigid voxel's springs against a soft one's (stable at h = 1/480 s)
MUSCLE_GAIN = 4.0  # an actuator's muscles against a soft voxel's springs: they move the body

# A voxel's sides and diagonals, by its corners (0 top-left, 1 top-right, 2 bottom-right,
# 3 bottom-left), and which actuator kind drives each side
_EDGES = ((0, 1, HORIZONTAL), (3, 2, HORIZONTAL), (0, 3, VERTICAL), (1, 2, VERTICAL),
          (0, 2, EMPTY), (1, 3, EMPTY))
# Its sides counter-clockwise (the body's inside on their left), for the outline
_SIDES = ((3, 2), (2, 1), (1, 0), (0, 3))


# The default robot (Evolution Gym's convention: 0 empty, 1 rigid, 2 soft, 3 horizontal and
# 4 vertical actuator; row 0 is the top): a rigid back over two legs of actuators
WALKER = np.array([
    [1, 1, 1, 1, 1],
    [3, 3, 3, 3, 3],
    [4, 4, 0, 4, 4],
    [4, 4, 0, 4, 4],
    [3, 3, 0, 3, 3],
], dtype=np.int64)

# :func:`gait`'s: action amplitude and Hz (the default walker walks 0.6 m in 8 s
# with it, staying up: its top never below 0.43 m of its 0.5 m)
GAIT_AMPLITUDE, GAIT_FREQUENCY = 0.4, 4.0


class VoxelRobot:
    """A voxel robot made by ``build.voxels``: its body, particles and muscles, driven one
    activation per actuator voxel."""

    def __init__(self, world: World, body: int, particles: np.ndarray, actuators: np.ndarray,
                 muscles: Muscles | None, owners: np.ndarray, by_voxel: dict[tuple[int, int], list[int]]
                 ) -> None:
        self.world = world
        self.body = body  #: the body entity
        self.particles = particles  #: the particle entities
        self.actuators = actuators  #: (k, 2) (row, column) of the actuator voxels, row by row
        self.muscles = muscles  #: the muscle springs (None for a robot without actuators)
        self._owners = owners  # (2, muscles): each muscle's two actuators (the same one twice)
        self._by_voxel = by_voxel
        self._pair = np.empty((2, owners.shape[1]))
        self._rows: np.ndarray = np.empty(0, np.intp)
        self._version = -1

    def drive(self, activation: Any) -> None:
        """Set each actuator voxel's activation (one number, or one per row of ``actuators``),
        clamped to MUSCLE_RANGE: allocation-free for a float64 array. ValueError naming
        ``activation`` for NaN or a wrong shape (nothing changes then)."""
        k = len(self.actuators)
        if self.muscles is None:
            raise ValueError("activation: this robot has no actuator voxels")
        pair = self._pair
        if np.ndim(activation) == 0:
            pair.fill(validate.real("activation", activation))
        elif np.shape(activation) != (k,):
            raise ValueError(f"activation must be a number or {k} numbers (one per actuator voxel), "
                             f"got shape {np.shape(activation)}")
        else:
            try:
                values = np.asarray(activation, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"activation must be real numbers: {exc}") from None
            np.take(values, self._owners[0], out=pair[0], mode="clip")  # (raise buffers: allocates)
            np.take(values, self._owners[1], out=pair[1], mode="clip")
        np.add(pair[0], pair[1], out=pair[0])
        np.multiply(pair[0], 0.5, out=pair[0])
        self.muscles.drive(pair[0])

    def voxel_muscles(self, row: int, column: int) -> list[int]:
        """The muscle spring entities of the actuator voxel at (``row``, ``column``)."""
        key = (validate.integer("row", row, -(2**31)), validate.integer("column", column, -(2**31)))
        if key not in self._by_voxel:
            raise ValueError(f"row, column: voxel {key} is not an actuator of this robot")
        return list(self._by_voxel[key])

    def _particle_rows(self) -> np.ndarray:
        P = self.world.store.particles
        if self._version != P.version:
            self._rows = np.array([P.row_of[e] for e in self.particles.tolist()], dtype=np.intp)
            self._version = P.version
        return self._rows

    def center(self) -> np.ndarray:
        """The centre of mass (m)."""
        rows, P = self._particle_rows(), self.world.store.particles
        mass = P.arrays["mass"][rows]
        out: np.ndarray = mass @ P.arrays["pos"][rows] / mass.sum()
        return out

    def velocity(self) -> np.ndarray:
        """The centre of mass's velocity (m/s)."""
        rows, P = self._particle_rows(), self.world.store.particles
        mass = P.arrays["mass"][rows]
        out: np.ndarray = mass @ P.arrays["vel"][rows] / mass.sum()
        return out


def voxels(world: World, grid: Any, origin: Sequence[float] = (0.0, 0.0), cell: float = 0.1,
           mass: float = 0.1, stiffness: float | None = None, damping: float | None = None,
           particle_radius: float = 0.0, activation: float = 1.0,
           *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
           friction: float = 1.0, restitution: float = 0.0, rolling_resistance: float = 0.0) -> VoxelRobot:
    """A voxel robot of ``grid`` (see the module): ``origin`` the lower-left corner of the
    grid's box (m), ``cell`` a voxel's side (m), ``mass`` each voxel's (kg, a quarter at each
    corner). ``stiffness`` (N/m) and ``damping`` (N s/m) are a soft voxel's springs'
    (default: k/m = 5000 s^-2 for a corner's quarter of a voxel's mass, a damping ratio of
    about 0.2); rigid voxels' are RIGID_GAIN and muscles MUSCLE_GAIN times stiffer.
    ``activation``: the actuators' first one. The body options as ``World.add_body``'s.
    ValueError naming the argument for a grid that is not 2D integers 0 to 4, has no voxel,
    or whose voxels do not all connect side to side; a refused robot adds nothing."""
    if world.dim != 2:
        raise ValueError("world: build.voxels makes a 2D robot; this world has dim=3")
    kinds = _grid(grid)
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    ox, oy = validate.vector("origin", origin, 2)
    side = validate.positive("cell", cell)
    per_voxel = validate.positive("mass", mass)
    start = validate.real("activation", activation)
    quarter = per_voxel / 4
    k = STIFFNESS_PER_KG * quarter if stiffness is None else validate.nonnegative("stiffness", stiffness)
    c = 0.4 * math.sqrt(k * quarter) if damping is None else validate.nonnegative("damping", damping)
    if not (math.isfinite(k) and math.isfinite(c * MUSCLE_GAIN * RIGID_GAIN)):
        raise ValueError("mass, stiffness, damping: the springs' stiffness or damping overflows")
    rows_ = kinds.shape[0]
    filled = np.argwhere(kinds != EMPTY)
    corner_id: dict[tuple[int, int], int] = {}
    for r, col in filled.tolist():  # corners in row-major order of the voxels that use them
        for key in ((r, col), (r, col + 1), (r + 1, col + 1), (r + 1, col)):
            corner_id.setdefault(key, len(corner_id))
    corners = np.array(list(corner_id))
    pos = np.stack([ox + corners[:, 1] * side, oy + (rows_ - corners[:, 0]) * side], axis=1)
    masses = np.zeros(len(corners))
    edges: dict[tuple[int, int], list[Any]] = {}  # (a, b): [stiffness, [actuators]]
    actuators = [(int(r), int(col)) for r, col in filled.tolist() if kinds[r, col] in (HORIZONTAL, VERTICAL)]
    actuator_of = {v: i for i, v in enumerate(actuators)}
    sides: dict[tuple[int, int], int] = {}  # directed outline sides: count of voxels
    for r, col in filled.tolist():
        kind = int(kinds[r, col])
        ids = [corner_id[(r, col)], corner_id[(r, col + 1)], corner_id[(r + 1, col + 1)],
               corner_id[(r + 1, col)]]
        masses[ids] += quarter
        gain = RIGID_GAIN if kind == RIGID else 1.0
        for i, j, drives in _EDGES:
            a, b = sorted((ids[i], ids[j]))
            entry = edges.setdefault((a, b), [0.0, []])
            if drives != EMPTY and kind == drives:
                entry[0] = max(entry[0], MUSCLE_GAIN * k)
                entry[1].append(actuator_of[(r, col)])
            else:
                entry[0] = max(entry[0], gain * k)
        for i, j in _SIDES:
            sides[(ids[i], ids[j])] = sides.get((ids[i], ids[j]), 0) + 1
    outline = _outline(pos, [e for e, n in sides.items() if (e[1], e[0]) not in sides])
    pairs = np.array(list(edges), dtype=np.int64)
    ks = np.array([entry[0] for entry in edges.values()])
    lo = float(masses.min())
    particles = _particles(pos, lo, particle_radius, "grid, origin, cell", pairs)
    entities = np.asarray(world.add_particles(particles.pos, masses=masses, radii=particles.radius),
                          dtype=np.int64)
    with _or_undo(world, entities):
        springs = np.asarray(world.add_springs(entities[pairs], stiffness=ks, damping=c * np.sqrt(ks / k)
                                               if k > 0 else c), dtype=np.int64)
        found = list(edges.values())
        driven = [n for n, entry in enumerate(found) if entry[1]]
        owners = np.array([[found[n][1][0], found[n][1][-1]] for n in driven],
                          dtype=np.intp).reshape(-1, 2).T.copy()
        muscles = world.add_muscles(springs[driven], activation=start) if driven else None
        by_voxel: dict[tuple[int, int], list[int]] = {v: [] for v in actuators}
        for n, m in enumerate(driven):
            for a in set(owners[:, n].tolist()):
                by_voxel[actuators[a]].append(int(springs[m]))
        entity = world.add_body(entities[outline].tolist(), particles=entities.tolist(), **body)
    return VoxelRobot(world, entity, entities, np.array(actuators, dtype=np.int64).reshape(-1, 2),
                      muscles, owners, by_voxel)


def _grid(grid: Any) -> np.ndarray:
    """``grid`` as a 2D int array of kinds 0 to 4 with at least one voxel, all connected side
    to side; ValueError naming ``grid`` otherwise."""
    try:
        kinds = np.asarray(grid)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"grid must be a 2D array of voxel kinds 0 to 4: {exc}") from None
    if kinds.ndim != 2 or (kinds.dtype.kind not in "iub" and not (
            kinds.dtype.kind == "f" and np.isfinite(kinds).all() and (kinds == np.round(kinds)).all())):
        raise ValueError(f"grid must be a 2D array of integer voxel kinds 0 to 4, got {kinds.dtype} "
                         f"of shape {kinds.shape}")
    kinds = kinds.astype(np.int64)
    if kinds.size and ((kinds < EMPTY) | (kinds > VERTICAL)).any():
        bad = tuple(int(i) for i in np.argwhere((kinds < EMPTY) | (kinds > VERTICAL))[0])
        raise ValueError(f"grid{list(bad)} = {kinds[bad]}: a voxel kind is 0 (empty), 1 (rigid), "
                         "2 (soft), 3 (horizontal actuator) or 4 (vertical actuator)")
    filled = {tuple(v) for v in np.argwhere(kinds != EMPTY).tolist()}
    if not filled:
        raise ValueError("grid has no voxel (every entry is 0)")
    if kinds.size > 100_000:
        raise ValueError(f"grid: {kinds.size:,} voxels is more than a robot of this builder has "
                         "(at most 100,000)")
    first = min(filled)
    seen, todo = {first}, deque([first])
    while todo:
        r, c = todo.popleft()
        for step in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if step in filled and step not in seen:
                seen.add(step)
                todo.append(step)
    if len(seen) != len(filled):
        apart = min(filled - seen)
        raise ValueError(f"grid: the voxels do not all connect side to side (voxel {list(apart)} is "
                         f"apart from voxel {list(first)})")
    return kinds


def _outline(pos: np.ndarray, sides: list[tuple[int, int]]) -> np.ndarray:
    """The counter-clockwise outer boundary of the voxels from their boundary ``sides``
    (directed, inside on the left): the loops they make, turning as far right as possible
    where two voxels meet at a corner only, and of those the one enclosing the most area."""
    leaving: dict[int, list[int]] = {}
    for a, b in sides:
        leaving.setdefault(a, []).append(b)
    used: set[tuple[int, int]] = set()
    best, best_area = [], -math.inf
    for a0, b0 in sides:
        if (a0, b0) in used:
            continue
        loop, a, b = [a0], a0, b0
        while True:
            used.add((a, b))
            if b == a0:
                break
            loop.append(b)
            d = pos[b] - pos[a]
            choices = [n for n in leaving[b] if (b, n) not in used]
            # the rightmost turn (the smallest angle from the way in): where two voxels meet at a
            # corner only, the loop goes round the voxels it came along and closes there
            a, b = b, min(choices, key=lambda n: _turn(d, pos[n] - pos[b]))
        x, y = pos[loop, 0], pos[loop, 1]
        area = 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
        if area > best_area:
            best, best_area = loop, area
    return np.array(best, dtype=np.int64)


def _turn(d: np.ndarray, e: np.ndarray) -> float:
    """The angle from direction ``d`` to ``e``, counter-clockwise, in (-pi, pi]."""
    return math.atan2(d[0] * e[1] - d[1] * e[0], d[0] * e[0] + d[1] * e[1])


def gait(actuators: NDArray[np.int64], frame: int, out: NDArray[np.float64],
         amplitude: float = GAIT_AMPLITUDE, frequency: float = GAIT_FREQUENCY,
         dt: float = 1.0 / 60.0) -> NDArray[np.float64]:
    """A fixed periodic gait: actuator j's action at ``frame`` is ``amplitude`` x
    sin(2 pi ``frequency`` t - 2 pi col / 5 + pi row / 2) for the voxel at (row, col) (a wave
    running right along the body, each row a quarter period behind the one above), in ``out``:
    an action in [-1, 1] per row of a VoxelRobot's ``actuators``, its activation
    1 + 0.5 x action (``pysoft.envs``' mapping)."""
    np.multiply(actuators[:, 0], 0.5 * np.pi, out=out)
    out -= 0.4 * np.pi * actuators[:, 1]
    out += 2.0 * np.pi * frequency * frame * dt
    np.sin(out, out=out)
    out *= amplitude
    return out
