"""3D soft bodies: a gas ball, an XPBD cube, a torus of the continuum material (made from a
mesh, tetrahedralised by pysoft), a shape-matched cube and a jelly blob land on a floor, and a
cloth drapes over a sphere. Renders the last frame to a PNG with matplotlib (3D axes; each
body's surface, or the torus's embedded render mesh, shaded by a light from above).

    python examples/solids_3d.py [seconds] [out.png]
"""

from __future__ import annotations

import sys

import numpy as np

import pysoft
from pysoft import build, meshes

COLOURS = ["#e4572e", "#4c9be8", "#76b041", "#f3a712", "#a05ec4", "#29bf9f"]


def scene() -> tuple[pysoft.World, dict[str, int]]:
    """The world and its bodies by name."""
    world = pysoft.World(dim=3)
    world.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0), friction=0.6, restitution=0.2)
    world.add_collider(pysoft.Sphere((1.6, 0.35, 0.0), 0.35), friction=0.8)
    bodies = {
        "gas ball": build.ball(world, center=(-1.5, 0.8, 0.0), radius=0.35),
        "XPBD cube": build.cube(world, center=(-0.5, 0.6, -0.6), size=0.5, cells=3, model="xpbd"),
        "rubber torus": build.mesh(world, meshes.torus(0.32, 0.13, 32, 14), model="material",
                                   center=(0.2, 0.9, 0.4), young=2e4),
        "shape-matched cube": build.cube(world, center=(0.4, 1.4, -0.7), size=(0.6, 0.3, 0.4),
                                         cells=(4, 2, 3), model="shape_matching"),
        "blob": build.blob(world, center=(-0.6, 1.6, 0.6), radius=0.3, segments=24),
        "cloth": build.cloth(world, center=(1.6, 1.1, 0.0), size=(1.2, 1.2), cells=(16, 16), pin="none"),
    }
    cloth = world.body(bodies["cloth"])  # laid flat above the sphere: turn the sheet's plane
    rows = world.store.particles.rows(cloth.particles)
    middle = np.array([1.6, 1.1, 0.0])
    p = world.positions[rows] - middle
    world.positions[rows] = np.stack([p[:, 0], np.zeros(len(p)), p[:, 1]], axis=1) + middle
    return world, bodies


def render(world: pysoft.World, bodies: dict[str, int], path: str) -> None:
    """The bodies' surfaces as shaded triangles on 3D axes (y up), to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    fig = plt.figure(figsize=(9, 4), dpi=120)
    ax = fig.add_subplot(projection="3d", computed_zorder=False)
    light = np.array([0.3, 1.0, 0.5]) / np.linalg.norm([0.3, 1.0, 0.5])
    P = world.store.particles
    for colour, (name, b) in zip(COLOURS, bodies.items(), strict=False):
        body = world.body(b)
        try:
            x, faces = body.render_mesh()
            tris = x[faces]
        except ValueError:
            tris = world.positions[P.rows(body.surface.reshape(-1))].reshape(-1, 3, 3)
        n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
        n /= np.linalg.norm(n, axis=1)[:, None]
        shade = 0.35 + 0.65 * np.abs(n @ light) if name == "cloth" else 0.35 + 0.65 * np.clip(n @ light, 0, 1)
        rgb = np.clip(np.outer(shade, to_rgb(colour)), 0.0, 1.0)
        xz = tris[:, :, [0, 2, 1]]  # matplotlib's z is up: plot (x, z, y)
        ax.add_collection3d(Poly3DCollection(xz, facecolors=rgb, edgecolors="none"))
    u, v = np.mgrid[0:2 * np.pi:24j, 0:np.pi:12j]
    c, r = (1.6, 0.35, 0.0), 0.35
    ax.plot_surface(c[0] + r * np.cos(u) * np.sin(v), c[2] + r * np.sin(u) * np.sin(v),
                    c[1] + r * np.cos(v), color="#bbbbbb", linewidth=0, zorder=-1)
    g = np.linspace(-2.2, 2.3, 2)
    gx, gz = np.meshgrid(g, np.linspace(-1.3, 1.3, 2))
    ax.plot_surface(gx, gz, np.zeros_like(gx), color="#e8e8e8", zorder=-2)
    ax.set(xlim=(-2.2, 2.3), ylim=(-1.3, 1.3), zlim=(0.0, 0.9))
    ax.set_box_aspect((4.5, 2.6, 0.9), zoom=1.3)
    ax.view_init(elev=24, azim=-70)
    ax.set_axis_off()
    ax.set_position((-0.3, -0.45, 1.6, 1.9))  # the 3D box fills the picture
    fig.savefig(path)
    plt.close(fig)


def main(seconds: float = 3.0, out: str | None = None) -> dict[str, float]:
    """Run the scene for ``seconds``; print each body's volume against its built volume; write
    the last frame to ``out`` if given. Returns the volume ratios of the closed bodies."""
    world, bodies = scene()
    built = {name: world.body(b).volume for name, b in bodies.items() if world.body(b).closed}
    for _ in range(round(seconds / world.dt)):
        world.step()
    ratios = {name: world.body(bodies[name]).volume / v for name, v in built.items()}
    for name, ratio in ratios.items():
        print(f"{name:>20}: volume {ratio:.3f} of its built volume")
    lowest = float(world.positions[:, 1].min())
    print(f"after {seconds:g} s: lowest particle at {lowest:.4f} m, fastest "
          f"{float(np.abs(world.velocities).max()):.3f} m/s")
    if out:
        render(world, bodies, out)
        print(f"wrote {out}")
    return ratios


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0, sys.argv[2] if len(sys.argv) > 2 else None)
