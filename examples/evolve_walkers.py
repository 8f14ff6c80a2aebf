"""Evolve voxel walkers: a small genetic search over 5 x 5 robot designs (Evolution Gym's
grids: 0 empty, 1 rigid, 2 soft, 3 horizontal and 4 vertical actuator), each driven by the same
fixed periodic gait (``pysoft.envs.walker.gait``); a design's fitness is how far it walks in 4 s
(``gait_distance``). A generation's designs are evaluated as Ray tasks, on this machine or on
the Ray cluster ``--address`` (or ``RAY_ADDRESS``) names; ``--serial`` evaluates them here, one
after another. A fitness is the same number in every process and on every machine running the
same build, so the two give the same search, bit for bit.

    pip install "pysoft[rl,ray]"
    python examples/evolve_walkers.py [--generations 5] [--population 16] [--serial]
    ray start --head                          # on one machine; `ray start --address=HEAD:6379` on others
    RAY_ADDRESS=HEAD:6379 python examples/evolve_walkers.py --generations 20 --population 64
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

import pysoft
from pysoft import build
from pysoft.build.voxels import WALKER
from pysoft.envs.walker import gait_distance

SECONDS = 4.0  # of gait per evaluation
ELITE = 2  # designs kept unchanged into the next generation
MUTATION = 0.12  # chance that a voxel of a child changes kind


def viable(grid: np.ndarray) -> bool:
    """Whether ``grid`` has an actuator and build.voxels makes a robot of it (a throwaway world:
    a refused design costs no evaluation)."""
    if not np.isin(grid, (3, 4)).any():
        return False
    try:
        build.voxels(pysoft.World(), grid)
    except ValueError:
        return False
    return True


def child(parent: np.ndarray, other: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A viable child: rows from ``parent`` and ``other`` (one-point crossover), then each
    voxel changed to a random kind with probability MUTATION; drawn again until viable."""
    while True:
        cut = int(rng.integers(1, parent.shape[0]))
        grid = np.concatenate([parent[:cut], other[cut:]])
        change = rng.random(grid.shape) < MUTATION
        grid = np.where(change, rng.integers(0, 5, grid.shape), grid)
        if viable(grid):
            return grid


def evaluate_serial(designs: list[np.ndarray]) -> list[float]:
    return [gait_distance(d, SECONDS) for d in designs]


Evaluator = Callable[[list[np.ndarray]], list[float]]


def ray_evaluator(address: str | None = None, num_cpus: int | None = None) -> Evaluator:
    """Evaluate designs as Ray tasks: ``ray.init(address)`` joins the cluster ``address`` (or
    ``RAY_ADDRESS``) names, or starts a local one (of ``num_cpus`` CPUs) when neither does."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(gait_distance)

    def evaluate(designs: list[np.ndarray]) -> list[float]:
        return [float(f) for f in ray.get([remote.remote(d, SECONDS) for d in designs])]

    return evaluate


def evolve(evaluate: Evaluator, generations: int = 5,
           population: int = 16, seed: int = 0) -> list[np.ndarray]:
    """The search: a first generation of the default walker and its mutants; each next one
    the ELITE best and children of parents drawn from the better half. Returns every
    generation's fitnesses (m), in the generation's order."""
    if not (isinstance(population, int) and population > ELITE):
        raise ValueError(f"population must be an int above {ELITE}, got {population!r}")
    if not (isinstance(generations, int) and generations >= 1):
        raise ValueError(f"generations must be a positive int, got {generations!r}")
    rng = np.random.default_rng(seed)
    base = np.asarray(WALKER)
    designs = [base] + [child(base, base, rng) for _ in range(population - 1)]
    history = []
    for generation in range(generations):
        fitness = np.array(evaluate(designs))
        history.append(fitness)
        order = np.argsort(-fitness, kind="stable")
        best = designs[order[0]]
        print(f"generation {generation}: best {fitness[order[0]]:+.3f} m, "
              f"mean {fitness.mean():+.3f} m\n{best}")
        parents = [designs[i] for i in order[:max(ELITE, population // 2)]]
        designs = [designs[i] for i in order[:ELITE]]
        while len(designs) < population:
            a, b = rng.integers(0, len(parents), 2)
            designs.append(child(parents[a], parents[b], rng))
    return history


def main(generations: int = 5, population: int = 16, seed: int = 0, serial: bool = False,
         address: str | None = None, num_cpus: int | None = None) -> list[np.ndarray]:
    """Run the search (Ray unless ``serial``); every generation's fitnesses."""
    if serial:
        return evolve(evaluate_serial, generations, population, seed)
    import ray

    started = not ray.is_initialized()
    try:
        return evolve(ray_evaluator(address, num_cpus), generations, population, seed)
    finally:
        if started:
            ray.shutdown()


def _args(argv: Any = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--generations", type=int, default=5)
    p.add_argument("--population", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--serial", action="store_true", help="evaluate here, one design after another")
    p.add_argument("--address", default=None,
                   help="a Ray cluster's address (default: RAY_ADDRESS, or a local one)")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray instance")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = _args()
    main(a.generations, a.population, a.seed, a.serial, a.address, a.num_cpus)
