"""``python -m pysoft sandbox``: a pygame-ce window to play with soft bodies.

The scenes are ``pysoft.scenes.SHOWCASE``'s (``--scene course``, ``planets``, ...).
Mouse: left-drag grabs the nearest particle (a mouse spring), right-drag pushes with a
disc. Keys: B box, C circle, G gas ball, R rope, P polygon (a star) at the cursor, M the
next model for new bodies; SPACE pauses, "." steps one frame; 1 outlines, 2 springs,
3 particles, 4 contacts, 5 pressure (view toggles); UP/DOWN gravity x 1.25 / 0.8; K/J every
spring's and area spring's stiffness x 1.25 / 0.8 of its built value (each capped where the
substep could not keep it stable, see ``stiffness_loads``); O/L every gas body's amount
x 1.25 / 0.8 (new bodies get both factors too); LEFT/RIGHT drive the car where the scene
has one (a ``scenes.Motor``: full throttle while held); S substeps (the scene's x1, x2, x4:
never fewer, as the builders' skins are as stiff as the built substep keeps stable; the
stiffness caps follow); I the next integrator; +/- zoom; BACKSPACE reloads the scene; ESC or
closing the window quits. A world that blows up (an ``InstabilityError``: the explicit Euler
integrator, a body spawned inside a planet) pauses with the error on screen.
The mouse wheel zooms about the pointer; a middle-drag pans.

A 3D scene (``jelly3d``, ``drape3d``) is seen through a ``Camera3D``: a right-drag orbits
the camera about its target (the wheel zooms, a middle-drag pans), a left-drag grabs the
particle under the cursor and moves it in the plane through it that faces the camera, and
the same keys spawn 3D bodies where the cursor points (on the plane through the camera's
target, above the floor): B a cube, C a ball of the model, G a gas ball, R a rope, P a torus
(a mesh body).
The particle count, ms per step and per pass, and the stiffness and gas factors are on
screen. ``--frames N`` runs N frames and exits (scripted runs and tests; with
SDL_VIDEODRIVER=dummy no display is needed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pysoft
from pysoft import build, meshes, scenes
from pysoft.build import solid
from pysoft.draw import Camera, Camera3D, DrawFlags, pick
from pysoft.draw.pygame import BACKGROUND, PygameDrawer, load

MODELS = ("springs", "pressure", "shape_matching", "xpbd", "springs+shape_matching")
STAR = np.array([(0.0, 0.5), (0.15, 0.15), (0.5, 0.1), (0.2, -0.12), (0.3, -0.5), (0.0, -0.25),
                 (-0.3, -0.5), (-0.2, -0.12), (-0.5, 0.1), (-0.15, 0.15)])


# The most stiffness a key press may load a particle with (``stiffness_loads``): what the
# builders allow a gas ball's skin, k h^2 / m <= SKIN_STABLE for each of a ring particle's two
# springs. (Every showcase scene stiffened 10x, so capped, stays stable: tests/test_sandbox.py.)
STIFFNESS_LIMIT = 2.0 * build.SKIN_STABLE
FACTORS = (0.1, 10.0)  # the range of the stiffness and gas factors
ORBIT = 0.01  # radians of orbit per pixel of a right-drag (3D)
WHEEL = 1.15  # zoom per notch of the mouse wheel
SPAWN_HEIGHT = 0.5  # m: 3D bodies spawn at least this high (above a floor at y = 0)


def stiffness_loads(world: pysoft.World, springs: np.ndarray | None = None,
                    areas: np.ndarray | None = None) -> np.ndarray:
    """Per particle row: h^2 / m x the stiffness its springs and area springs put on it, at
    the world's substep h: half the row's sum of |M^-1 K|, whose largest over the particles
    bounds the squared frequency of the fastest mode, w^2 h^2 (Gershgorin). A particle of a
    ring of springs k carries 2 k h^2 / m, and the ring's fastest mode has exactly twice
    that. ``springs`` and ``areas`` stand in for the stored stiffnesses (in row order);
    immovable particles carry nothing."""
    store, h = world.store, world.dt / world.substeps
    load = np.zeros(store.particles.n)
    S, T = store.springs, store.tables["area_springs"]
    k = S.view("stiffness") if springs is None else springs
    pairs = S.view("pairs")
    np.add.at(load, pairs[:, 0], k)
    np.add.at(load, pairs[:, 1], k)
    if T.n:  # an area spring's force on corner i is k_a dA/dx_i: its row sums k_a g_i sum_j g_j
        tri = T.view("triangles")
        p = world.positions[tri]
        if tri.shape[1] == 3:
            g = 0.5 * np.stack([np.linalg.norm(p[:, (i + 2) % 3] - p[:, (i + 1) % 3], axis=1)
                                for i in range(3)], axis=1)  # |dA/dx_i|: half the opposite side
        else:  # a tetrahedron (3D): |dV/dx_i| is a third of the opposite face's area
            g = np.stack([np.linalg.norm(np.cross(p[:, (i + 2) % 4] - p[:, (i + 1) % 4],
                                                  p[:, (i + 3) % 4] - p[:, (i + 1) % 4]), axis=1) / 6.0
                          for i in range(4)], axis=1)
        ka = T.view("stiffness") if areas is None else areas
        np.add.at(load, tri, 0.5 * ka[:, None] * g * g.sum(axis=1, keepdims=True))
    mass = store.particles.view("mass")
    return np.where(np.isfinite(mass), load * h * h / mass, 0.0)


class Sandbox:
    """The window, the world and the tools; ``handle`` takes pygame events, ``frame`` draws
    and steps once."""

    def __init__(self, scene: str = "demo", size: tuple[int, int] = (960, 640)) -> None:
        self.pg = pg = load()
        pg.init()
        self.screen = pg.display.set_mode(size)
        pg.display.set_caption("pysoft sandbox")
        self.model = 0
        self.running = True
        self.pointer = np.array(size, dtype=float) / 2  # the mouse, as its events last put it
        self.size = size
        self.load(scene)

    def load(self, scene: str) -> None:
        """Start ``scene`` afresh (BACKSPACE reloads the current one)."""
        self.scene = scene
        self.world = scenes.SHOWCASE[scene]()
        self.dim = self.world.dim
        self.camera: Camera | Camera3D = Camera3D(*self.size) if self.dim == 3 else Camera(*self.size)
        self.camera.fit_world(self.world, margin=0.1)
        self.drawer = PygameDrawer(self.screen, self.camera)
        self.flags = (DrawFlags.OUTLINES | DrawFlags.COLLIDERS if self.dim == 3 else
                      DrawFlags.OUTLINES | DrawFlags.SPRINGS | DrawFlags.STRAIN | DrawFlags.COLLIDERS)
        self.grip: np.ndarray | None = None  # 3D: the grabbed point, through which the drag plane goes
        self.dragging = 0  # the mouse button that orbits (3, in 3D) or pans (2), while held
        self.note = ""  # why the last spawn was refused, if it was
        self.paused, self.advance = False, False
        self.trouble = ""  # the InstabilityError that paused the world, if one did
        self.hand: Any = None
        self.pusher: Any = None
        self.spawned: list[int] = []
        self.ms = 0.0
        self.stiffness, self.gas = 1.0, 1.0  # factors over the built stiffness and gas amounts
        self.capped = 0  # springs held below their factor by the stability limit
        self._built: dict[str, dict[int, float]] = {"springs": {}, "area_springs": {}}
        self.substeps = self.world.substeps  # as the scene was built: S cycles x1, x2, x4
        self.motor = next((s for s in self.world.systems if isinstance(s, scenes.Motor)), None)
        if self.motor is not None:
            self.motor.throttle = 0.0  # the arrow keys drive

    def mouse(self) -> np.ndarray:
        """The mouse in world coordinates (3D: on the plane facing the camera through the
        grabbed point, or through the camera's target)."""
        if isinstance(self.camera, Camera3D):
            return self.camera.to_world(self.pointer, through=self.grip)
        return self.camera.to_world(self.pointer)

    def spawn_point(self) -> tuple[float, ...]:
        """Where a new body goes: under the cursor (3D: at least SPAWN_HEIGHT up)."""
        at = self.mouse()
        if self.dim == 3:
            at[1] = max(float(at[1]), SPAWN_HEIGHT)
        return tuple(at.tolist())

    def handle(self, event: Any) -> None:
        pg, w = self.pg, self.world
        if hasattr(event, "pos"):
            moved = np.array(event.pos, dtype=float) - self.pointer
            self.pointer = np.array(event.pos, dtype=float)
            if event.type == pg.MOUSEMOTION and self.dragging:
                self.drag(moved)
        if event.type == pg.QUIT:
            self.running = False
        elif event.type == pg.MOUSEBUTTONDOWN and event.button == 1:
            if isinstance(self.camera, Camera3D):
                near = pick(w, self.camera, self.pointer, 40.0, movable=True)
                self.grip = None if near is None else w.positions[w.row(near)].copy()
            else:
                near = w.nearest_particle(self.mouse(), 40.0 / self.camera.scale, movable=True)  # 40 pixels
            if near is not None:
                self.hand = w.grab(near, stiffness=self._grip(near), damping=1.0)
        elif event.type == pg.MOUSEBUTTONDOWN and event.button == 3 and self.dim == 3:
            self.dragging = 3  # orbit
        elif event.type == pg.MOUSEBUTTONDOWN and event.button == 3:
            self.pusher = w.add_pusher(0.15, position=tuple(self.mouse().tolist()))
        elif event.type == pg.MOUSEBUTTONDOWN and event.button == 2:
            self.dragging = 2  # pan
        elif event.type == pg.MOUSEBUTTONUP and event.button in (2, 3) and self.dragging == event.button:
            self.dragging = 0
        elif event.type == pg.MOUSEWHEEL:
            self.camera.zoom(WHEEL ** float(event.y), about=self.pointer)
        elif event.type == pg.MOUSEBUTTONUP and event.button == 1 and self.hand is not None:
            self.hand.release()
            self.hand, self.grip = None, None
        elif event.type == pg.MOUSEBUTTONUP and event.button == 3 and self.pusher is not None:
            self.pusher.remove()
            self.pusher = None
        elif event.type == pg.KEYDOWN:
            self.key(event.key, event.unicode)
        elif (event.type == pg.KEYUP and self.motor is not None and event.key in (pg.K_LEFT, pg.K_RIGHT)
              and self.motor.throttle == (1.0 if event.key == pg.K_RIGHT else -1.0)):
            self.motor.throttle = 0.0  # let go of the key that drives

    def drag(self, moved: np.ndarray) -> None:
        """A drag of ``moved`` pixels with the orbit (right, 3D) or pan (middle) button held."""
        if self.dragging == 3 and isinstance(self.camera, Camera3D):
            self.camera.orbit(-ORBIT * float(moved[0]), ORBIT * float(moved[1]))
        elif self.dragging == 2:
            self.camera.pan(moved)

    def _grip(self, entity: int) -> float:
        """A mouse spring as stiff as the grabbed particle allows (k h^2 / m = 0.1)."""
        w = self.world
        m = float(w.store.particles.view("mass")[w.row(entity)])
        h = w.dt / w.substeps
        return min(200.0, 0.1 * m / (h * h))

    def key(self, key: int, text: str) -> None:
        pg, w = self.pg, self.world
        bodies = w.store.bodies.n
        if key in (pg.K_b, pg.K_c, pg.K_g, pg.K_r, pg.K_p):
            try:
                self.spawned.append(self.spawn(key))
                self.note = ""
            except ValueError as e:  # a mesh the tetrahedraliser refused, say: say so, go on
                self.note = f"not built: {e}"
        elif key == pg.K_ESCAPE:
            self.running = False
        elif key == pg.K_BACKSPACE:
            self.load(self.scene)
        elif key == pg.K_SPACE:
            self.paused = not self.paused
        elif text == ".":
            self.advance = True
        elif key == pg.K_m:
            self.model = (self.model + 1) % len(MODELS)
        elif text in "12345" and text:
            flag = (DrawFlags.OUTLINES, DrawFlags.SPRINGS | DrawFlags.STRAIN, DrawFlags.PARTICLES,
                    DrawFlags.CONTACTS, DrawFlags.PRESSURE)[int(text) - 1]
            self.flags ^= flag
        elif key == pg.K_UP:
            w.gravity = np.asarray(w.gravity) * 1.25
        elif key == pg.K_DOWN:
            w.gravity = np.asarray(w.gravity) * 0.8
        elif key in (pg.K_k, pg.K_j):
            self.set_stiffness(self.stiffness * (1.25 if key == pg.K_k else 0.8))
        elif key in (pg.K_o, pg.K_l):
            self.set_gas(self.gas * (1.25 if key == pg.K_o else 0.8))
        elif key in (pg.K_LEFT, pg.K_RIGHT) and self.motor is not None:
            self.motor.throttle = 1.0 if key == pg.K_RIGHT else -1.0
        elif key == pg.K_s:  # never fewer than built: the builders' skins are as stiff as that allows
            w.substeps = {self.substeps: 2 * self.substeps, 2 * self.substeps: 4 * self.substeps}.get(
                w.substeps, self.substeps)
            self.set_stiffness(self.stiffness)  # the caps follow the substep
        elif key == pg.K_i:
            names = pysoft.INTEGRATORS
            w.integrator = names[(names.index(w.integrator) + 1) % len(names)]
        elif text in ("+", "="):
            self.camera.zoom(1.25, about=self.pointer)
        elif text == "-":
            self.camera.zoom(0.8, about=self.pointer)
        if w.store.bodies.n > bodies:  # a new body: the factors apply to it too
            if self.stiffness != 1.0:
                self.set_stiffness(self.stiffness)
            for entity in self.spawned[-1:]:
                gas = w.body(entity).pressure
                if gas is not None:
                    gas.amount *= self.gas

    def spawn(self, key: int) -> int:
        """The body a spawn key makes at the cursor (B, C, G, R, P), in 2D or 3D."""
        pg, w = self.pg, self.world
        at = self.spawn_point()
        model = MODELS[self.model]
        end = (at[0] + 1.0, *at[1:])
        if key == pg.K_g:
            return build.ball(w, center=at, radius=0.3 if self.dim == 2 else 0.25)
        if key == pg.K_r:
            return build.rope(w, start=at, end=end, segments=12, pin=())
        if self.dim == 2:
            if key == pg.K_b:
                return build.box(w, center=at, size=(0.5, 0.5), model=model)
            if key == pg.K_c:
                return build.circle(w, center=at, radius=0.3, rings=2, model=model)
            return build.polygon(w, STAR + np.array(at), model=model)
        if key == pg.K_b:
            return build.cube(w, center=at, size=0.4, cells=3, model=model)
        if key == pg.K_c:
            return solid.ball(w, center=at, radius=0.25, subdivisions=1, model=model)
        return build.mesh(w, meshes.torus(0.25, 0.1, 20, 8), model=model, center=at)

    def set_stiffness(self, factor: float) -> None:
        """Every spring and area spring at ``factor`` x its built stiffness (``factor`` kept in
        ``FACTORS``), except where that would load a particle beyond ``STIFFNESS_LIMIT`` at the
        world's substep (``stiffness_loads``): there at the most the limit allows."""
        w = self.world
        self.stiffness = factor = float(np.clip(factor, *FACTORS))
        base = {}
        for name, built in self._built.items():  # the built values, recorded when first seen
            T = w.store.tables[name]
            base[name] = np.array([built.setdefault(int(e), float(k))
                                   for e, k in zip(T.view("entity").tolist(), T.view("stiffness").tolist(),
                                                   strict=True)])
        load = stiffness_loads(w, base["springs"], base["area_springs"])
        self.capped = 0
        for name, ends in (("springs", "pairs"), ("area_springs", "triangles")):
            T = w.store.tables[name]
            if not T.n:
                continue
            worst = load[T.view(ends)].max(axis=1)
            with np.errstate(divide="ignore"):
                most = np.where(worst > 0.0, STIFFNESS_LIMIT / worst, np.inf)
            T.view("stiffness")[:] = base[name] * np.minimum(factor, most)
            self.capped += int((most < factor).sum())

    def set_gas(self, factor: float) -> None:
        """Every gas body's amount scaled from the present ``self.gas`` to ``factor`` (kept in
        ``FACTORS``); a popped balloon (amount 0) stays popped."""
        w = self.world
        factor = float(np.clip(factor, *FACTORS))
        for entity in w.store.bodies.view("entity").tolist():
            gas = w.body(entity).pressure
            if gas is not None:
                gas.amount *= factor / self.gas
        self.gas = factor

    def frame(self) -> None:
        """Aim the tools at the mouse, step (unless paused), draw."""
        pg, w = self.pg, self.world
        here = self.mouse()
        if self.hand is not None:
            self.hand.target = here
        if self.pusher is not None:
            self.pusher.target = here
        if not self.paused or self.advance:
            t0 = pg.time.get_ticks()
            try:
                w.step()
            except pysoft.InstabilityError as e:  # show it and pause: the window stays up
                self.paused, self.trouble = True, f"{e}  (BACKSPACE reloads the scene)"
            self.ms = float(pg.time.get_ticks() - t0)
            self.advance = False
        self.screen.fill(BACKGROUND)
        w.debug_draw(self.drawer, self.flags)
        passes = "  ".join(f"{k} {v:.2f}" for k, v in getattr(w, "profile", {}).items())
        lines = [f"{w.store.particles.n} particles  {w.store.springs.n} springs  "
                 f"{w.store.bodies.n} bodies  t {w.time:.2f} s  step {self.ms:.1f} ms"
                 + ("  PAUSED" if self.paused else ""),
                 f"ms per pass: {passes}",
                 f"new bodies: {MODELS[self.model]} (M)  gravity {np.asarray(w.gravity)[1]:.2f}  "
                 f"substeps {w.substeps}  integrator {w.integrator} ({w.backend})",
                 f"stiffness x{self.stiffness:.2f}" + (f" ({self.capped} capped)" if self.capped else "")
                 + f"  gas x{self.gas:.2f}"
                 + (f"  car throttle {self.motor.throttle:+.0f}" if self.motor is not None else ""),
                 ("drag: grab  right-drag: orbit  wheel: zoom  middle-drag: pan  B cube C ball G gas ball "
                  "R rope P torus  SPACE pause . step  1-5 view" if self.dim == 3 else
                  "drag: grab  right-drag: push  B box C circle G ball R rope P star  SPACE pause . step  "
                  "1-5 view"),
                 "UP/DOWN gravity  K/J stiffness  O/L gas  S substeps  I integrator  +/- zoom"
                 + ("  LEFT/RIGHT drive" if self.motor is not None else "") + "  BACKSPACE reload"]
        if self.trouble:
            lines.append(self.trouble)
        if self.note:
            lines.append(self.note)
        for k, line in enumerate(lines):
            self.drawer.label((8, 8 + 18 * k), line)
        pg.display.flip()

    def run(self, frames: int | None = None) -> int:
        """The loop at 60 Hz; ``frames`` ends it after that many frames. Returns the frames run."""
        clock = self.pg.time.Clock()
        done = 0
        while self.running and (frames is None or done < frames):
            for event in self.pg.event.get():
                self.handle(event)
            self.frame()
            done += 1
            if frames is None:
                clock.tick(60)
        self.pg.quit()
        return done
