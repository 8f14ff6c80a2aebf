"""Headless drawing: a world rendered as Unicode braille in a terminal.

Each character cell holds 2x4 dots, so an 80x24 terminal shows 160x96 dots.
Springs and body outlines are drawn as dotted lines, collider outlines as
dotted polylines, and horizontal planes as a ruled line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Braille dot bits for (column, row) inside a 2x4 cell (Unicode U+2800 block).
_BITS = np.array([[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]])


def render(world: Any, width: int = 78, height: int = 22,
           view: tuple[float, float, float, float] = (-3.0, -0.3, 3.0, 4.2)) -> str:
    """The world's particles, springs and floor lines in ``view`` (x0, y0, x1, y1), as text."""
    x0, y0, x1, y1 = view
    cols, rows = 2 * width, 4 * height
    pos = world.positions[:, :2]
    pairs = world.store.springs.view("pairs")
    t = np.linspace(0.0, 1.0, 6)[:, None, None]
    edges = np.concatenate([pairs, _outline_edges(world)])
    pts = [pos, *(pos[edges[:, 0]] * (1 - t) + pos[edges[:, 1]] * t)] if len(edges) else [pos]
    pts.extend(_collider_points(world, view))
    pts_all = np.concatenate([p.reshape(-1, 2) for p in pts])
    px = ((pts_all[:, 0] - x0) / (x1 - x0) * (cols - 1)).round().astype(int)
    py = ((y1 - pts_all[:, 1]) / (y1 - y0) * (rows - 1)).round().astype(int)
    inside = (px >= 0) & (px < cols) & (py >= 0) & (py < rows)
    cells = np.zeros((height, width), dtype=np.int64)
    np.bitwise_or.at(cells, (py[inside] // 4, px[inside] // 2), _BITS[px[inside] % 2, py[inside] % 4])
    lines = ["".join(chr(0x2800 + c) if c else " " for c in row) for row in cells]
    for normal, offset in _planes(world):
        if abs(normal[1]) > 0.99:  # a floor or ceiling: a ruled row
            y = offset / normal[1]
            r = round((y1 - y) / (y1 - y0) * (rows - 1)) // 4
            if 0 <= r < height:
                lines[r] = "".join("▔" if ch == " " else ch for ch in lines[r])
    return "\n".join(lines)


def _outline_edges(world: Any) -> np.ndarray:
    """(E, 2) particle rows of every body's outline edges (an open outline, a rope's, is not
    closed)."""
    B, flat = world.store.bodies, world.store.body_outlines.arrays["rows"]
    out = [np.zeros((0, 2), dtype=np.int64)]
    for start, count, flags in zip(B.view("outline_start").tolist(), B.view("outline_count").tolist(),
                                   B.view("flags").tolist(), strict=True):
        if count >= 2:
            ring = flat[start : start + count].astype(np.int64)
            edges = np.stack([ring, np.roll(ring, -1)], axis=1)
            out.append(edges if flags & 1 else edges[:-1])
    return np.concatenate(out)


def _planes(world: Any) -> list[tuple[np.ndarray, float]]:
    """World-space (unit normal, offset) of every plane collider."""
    out = []
    C = world.store.colliders
    for row, entity in enumerate(C.view("entity")):
        geo = world.collider(int(entity)).geometry
        if geo.kind == 0 and len(geo.face_offset) == 1 and len(geo.outline) == 0:
            n = C.view("rotation")[row] @ geo.face_normal[0]
            out.append((n[:2], float(geo.face_offset[0] + n @ C.view("center")[row])))
    return out


def _collider_points(world: Any, view: tuple[float, float, float, float]) -> list[np.ndarray]:
    """Dots along every collider outline, and along slanted planes."""
    C = world.store.colliders
    out = []
    for row, entity in enumerate(C.view("entity")):
        outline = world.collider(int(entity)).geometry.outline
        if len(outline) < 2 or C.view("center").shape[1] != 2:
            continue
        corners = outline @ C.view("rotation")[row].T + C.view("center")[row]
        ring = np.concatenate([corners, corners[:1]])
        t = np.linspace(0.0, 1.0, 24)[:, None, None]
        out.append((ring[:-1] * (1 - t) + ring[1:] * t).reshape(-1, 2))
    x0, y0, x1, y1 = view
    for normal, offset in _planes(world):
        if abs(normal[1]) <= 0.99:  # slanted: dots along the line
            along = np.array([-normal[1], normal[0]])
            s = np.linspace(-2 * (x1 - x0 + y1 - y0), 2 * (x1 - x0 + y1 - y0), 800)
            out.append(offset * normal + s[:, None] * along)
    return out
