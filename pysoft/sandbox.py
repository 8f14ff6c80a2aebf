"""``python -m pysoft sandbox``: a pygame-ce window to play with soft bodies.

Mouse: left-drag grabs the nearest particle (a mouse spring), right-drag pushes with a
disc. Keys: B box, C circle, G gas ball, R rope, P polygon (a star) at the cursor, M the
next model for new bodies; SPACE pauses, "." steps one frame; 1 outlines, 2 springs,
3 particles, 4 contacts, 5 pressure (view toggles); UP/DOWN gravity x 1.25 / 0.8, S
substeps (4, 8, 16), I the next integrator, +/- zoom; ESC or closing the window quits.
The particle count, ms per step and per pass are on screen. ``--frames N`` runs N frames
and exits (scripted runs and tests; with SDL_VIDEODRIVER=dummy no display is needed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pysoft
from pysoft import build, scenes
from pysoft.draw import Camera, DrawFlags
from pysoft.draw.pygame import BACKGROUND, PygameDrawer, load

MODELS = ("springs", "pressure", "shape_matching", "xpbd", "springs+shape_matching")
STAR = np.array([(0.0, 0.5), (0.15, 0.15), (0.5, 0.1), (0.2, -0.12), (0.3, -0.5), (0.0, -0.25),
                 (-0.3, -0.5), (-0.2, -0.12), (-0.5, 0.1), (-0.15, 0.15)])


def _scene(name: str) -> pysoft.World:
    makers: dict[str, Callable[[], pysoft.World]] = {
        "demo": scenes.demo, "pile": lambda: scenes.pile(bodies=40, width=6.0),
        "balls": lambda: scenes.pressure_balls(count=12), "boxes": lambda: scenes.matched_boxes(count=12),
        "cloth": lambda: scenes.xpbd_cloth(cells=24)}
    return makers[name]()


class Sandbox:
    """The window, the world and the tools; ``handle`` takes pygame events, ``frame`` draws
    and steps once."""

    def __init__(self, scene: str = "demo", size: tuple[int, int] = (960, 640)) -> None:
        self.pg = pg = load()
        pg.init()
        self.screen = pg.display.set_mode(size)
        pg.display.set_caption("pysoft sandbox")
        self.world = _scene(scene)
        self.camera = Camera(*size)
        self.camera.fit_world(self.world, margin=0.1)
        self.drawer = PygameDrawer(self.screen, self.camera)
        self.flags = DrawFlags.OUTLINES | DrawFlags.SPRINGS | DrawFlags.STRAIN | DrawFlags.COLLIDERS
        self.model = 0
        self.paused, self.advance, self.running = False, False, True
        self.hand: Any = None
        self.pusher: Any = None
        self.spawned: list[int] = []
        self.ms = 0.0
        self.pointer = np.array(size, dtype=float) / 2  # the mouse, as its events last put it

    def mouse(self) -> np.ndarray:
        """The mouse in world coordinates."""
        return self.camera.to_world(self.pointer)

    def handle(self, event: Any) -> None:
        pg, w = self.pg, self.world
        if hasattr(event, "pos"):
            self.pointer = np.array(event.pos, dtype=float)
        if event.type == pg.QUIT:
            self.running = False
        elif event.type == pg.MOUSEBUTTONDOWN and event.button == 1:
            near = w.nearest_particle(self.mouse(), 40.0 / self.camera.scale, movable=True)  # 40 pixels
            if near is not None:
                self.hand = w.grab(near, stiffness=self._grip(near), damping=1.0)
        elif event.type == pg.MOUSEBUTTONDOWN and event.button == 3:
            self.pusher = w.add_pusher(0.15, position=tuple(self.mouse().tolist()))
        elif event.type == pg.MOUSEBUTTONUP and event.button == 1 and self.hand is not None:
            self.hand.release()
            self.hand = None
        elif event.type == pg.MOUSEBUTTONUP and event.button == 3 and self.pusher is not None:
            self.pusher.remove()
            self.pusher = None
        elif event.type == pg.KEYDOWN:
            self.key(event.key, event.unicode)

    def _grip(self, entity: int) -> float:
        """A mouse spring as stiff as the grabbed particle allows (k h^2 / m = 0.1)."""
        w = self.world
        m = float(w.store.particles.view("mass")[w.row(entity)])
        h = w.dt / w.substeps
        return min(200.0, 0.1 * m / (h * h))

    def key(self, key: int, text: str) -> None:
        pg, w = self.pg, self.world
        at = tuple(self.mouse())
        model = MODELS[self.model]
        if key == pg.K_ESCAPE:
            self.running = False
        elif key == pg.K_SPACE:
            self.paused = not self.paused
        elif text == ".":
            self.advance = True
        elif key == pg.K_b:
            self.spawned.append(build.box(w, center=at, size=(0.5, 0.5), model=model))
        elif key == pg.K_c:
            self.spawned.append(build.circle(w, center=at, radius=0.3, rings=2, model=model))
        elif key == pg.K_g:
            self.spawned.append(build.ball(w, center=at, radius=0.3))
        elif key == pg.K_r:
            self.spawned.append(build.rope(w, start=at, end=(at[0] + 1.0, at[1]), segments=12, pin=()))
        elif key == pg.K_p:
            self.spawned.append(build.polygon(w, STAR + np.array(at), model=model))
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
        elif key == pg.K_s:
            w.substeps = {4: 8, 8: 16}.get(w.substeps, 4)
        elif key == pg.K_i:
            names = pysoft.INTEGRATORS
            w.integrator = names[(names.index(w.integrator) + 1) % len(names)]
        elif text in ("+", "="):
            self.camera.zoom(1.25, about=self.pointer)
        elif text == "-":
            self.camera.zoom(0.8, about=self.pointer)

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
            w.step()
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
                 "drag: grab  right-drag: push  B box C circle G ball R rope P star  "
                 "SPACE pause . step  1-5 view  UP/DOWN gravity  S substeps  I integrator"]
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
