"""Bulk reads for drawing and games: ``World.spring_pairs`` and ``World.body_shapes`` (arrays
for every spring and body at once)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pysoft
from pysoft import build
from pysoft.shapes import signed_area


def _rotate(w: pysoft.World, body: int, angle: float, about: tuple[float, float]) -> None:
    rows = [w.row(e) for e in w.body(body).particles]
    c, s = math.cos(angle), math.sin(angle)
    w.positions[rows] = (w.positions[rows] - about) @ np.array([[c, s], [-s, c]]) + about


def test_body_shapes_match_each_body() -> None:
    """For a box turned by 0.3 rad, a ball, a pressed-out-of-shape polygon and a rope: the
    ragged outlines are each body's outline rows in order; areas are their shoelace areas;
    centroids the members' mass-weighted means; the box's angle is 0.3 rad (1e-12), the
    untouched ball's 0."""
    w = pysoft.World(gravity=(0.0, 0.0))
    box = build.box(w, center=(0.0, 1.0), mass=2.0)
    ball = build.ball(w, center=(3.0, 1.0), radius=0.5)
    star = build.polygon(w, [(5.0, 0.0), (6.0, 0.5), (7.0, 0.0), (6.5, 1.0), (7.0, 2.0), (5.0, 2.0)])
    rope = build.rope(w, start=(-3.0, 0.0), end=(-2.0, 0.0), pin=())
    _rotate(w, box, 0.3, (0.0, 1.0))
    w.positions[[w.row(e) for e in w.body(star).outline[:2]]] += 0.05
    shapes = w.body_shapes()
    assert shapes.entities.tolist() == [box, ball, star, rope]
    for k, body in enumerate(shapes.entities.tolist()):
        outline = [w.row(e) for e in w.body(body).outline]
        assert shapes.rows[shapes.offsets[k]:shapes.offsets[k + 1]].tolist() == outline
        assert shapes.areas[k] == pytest.approx(signed_area(w.positions[outline]), abs=1e-12)
        members = [w.row(e) for e in w.body(body).particles]
        m = w.store.particles.view("mass")[members]
        centroid = (m[:, None] * w.positions[members]).sum(axis=0) / m.sum()
        assert np.allclose(shapes.centroids[k], centroid, atol=1e-12)
    assert shapes.angles[0] == pytest.approx(0.3, abs=1e-12)
    assert shapes.angles[1] == pytest.approx(0.0, abs=1e-12)
    assert shapes.areas[3] == pytest.approx(0.0, abs=1e-12)  # a rope's outline encloses nothing


def test_body_shapes_of_an_empty_world() -> None:
    shapes = pysoft.World().body_shapes()
    assert len(shapes.entities) == 0 and shapes.offsets.tolist() == [0] and len(shapes.rows) == 0


def test_spring_pairs_are_rows_or_entities_and_copies() -> None:
    w = pysoft.World()
    a, b, c = w.add_particles([(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)])
    w.add_springs([[a, b], [b, c]])
    w.remove(a)  # rows move: the pairs follow
    pairs = w.spring_pairs()
    assert pairs.tolist() == [[w.row(b), w.row(c)]]
    assert w.spring_pairs(entities=True).tolist() == [[b, c]]
    pairs[:] = 0  # a copy: the world's springs are untouched
    assert w.spring_pairs().tolist() == [[w.row(b), w.row(c)]]
    with pytest.raises(ValueError, match="entities"):
        w.spring_pairs(entities="yes")  # type: ignore[arg-type]


def test_a_straight_rope_encloses_nothing() -> None:
    """A rope's outline is its particles on a line: the rounding of their shoelace area
    (1.8e-15 m^2 for this one) must not make it a closed body (other bodies would collide
    with its "inside", the outline edges would meet colliders as a surface, and it would be
    drawn filled)."""
    w = pysoft.World()
    rope = build.rope(w, start=(-1.4, 3.9), end=(1.6, 3.9), segments=30, pin=())
    assert abs(signed_area(w.positions[[w.row(e) for e in w.body(rope).outline]])) > 0.0
    assert not w.body(rope).closed
    assert w.body(build.box(w)).closed
