"""pysoft.envs: Gymnasium's own checker on every environment (its warnings are errors here),
bit-identical episodes for a seed and actions, the vector environment against Gymnasium's
SyncVectorEnv of the single environments (bytes compared, auto-resets included), rendering,
and bad input named."""

from __future__ import annotations

import gc
import os
import warnings
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # render_mode="human" without a display
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

import pysoft.envs  # noqa: E402  (registers the ids)
from pysoft.envs import vector  # noqa: E402

IDS = ["pysoft/Walker-v0", "pysoft/UpStepper-v0", "pysoft/JellyCar-v0"]


def test_importing_registers_every_id() -> None:
    assert set(IDS) <= set(gym.registry)
    for env_id in IDS:
        spec = gym.spec(env_id)
        assert spec.vector_entry_point is not None and spec.max_episode_steps is not None


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_passes_without_warnings(env_id: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(env_id)
        check_env(env.unwrapped)  # also makes the env in every render mode and renders it
        env.close()


def _episode(env: Any, seed: int, steps: int) -> bytes:
    """The bytes of an episode's observations, rewards and flags for ``seed`` and actions
    drawn from a generator seeded alike."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = [obs.tobytes()]
    for _ in range(steps):
        action = rng.uniform(-1.0, 1.0, env.action_space.shape)
        obs, reward, terminated, truncated, info = env.step(action)
        out += [obs.tobytes(), np.float64(reward).tobytes(), bytes([terminated, truncated]),
                np.float64(info["x"]).tobytes()]
        if terminated or truncated:
            obs, _ = env.reset()
            out.append(obs.tobytes())
    return b"".join(out)


@pytest.mark.parametrize("env_id", IDS)
def test_the_same_seed_and_actions_give_the_same_episode(env_id: str) -> None:
    a, b = gym.make(env_id, max_episode_steps=40), gym.make(env_id, max_episode_steps=40)
    first = _episode(a, 7, 90)  # two time limits: the second episode from an unseeded reset
    assert first == _episode(b, 7, 90)
    assert first == _episode(a, 7, 90)  # the same env again after a reseed
    assert first != _episode(a, 8, 90)  # the seed matters (the reset noise)


def _vector_run(envs: Any, steps: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    obs, info = envs.reset(seed=seed)
    out = [obs.tobytes(), np.asarray(info["x"]).tobytes()]
    for _ in range(steps):
        result = envs.step(rng.uniform(-1.0, 1.0, envs.action_space.shape))
        out += [np.asarray(r).tobytes() for r in result[:4]]
        out += [np.asarray(result[4]["x"]).tobytes(), np.asarray(result[4]["_x"]).tobytes()]
    return out


@pytest.mark.parametrize(("env_id", "threads"), [("pysoft/Walker-v0", 1), ("pysoft/Walker-v0", 2),
                                                 ("pysoft/UpStepper-v0", 2), ("pysoft/JellyCar-v0", 1)])
def test_the_vector_env_equals_the_single_envs(env_id: str, threads: int) -> None:
    """make_vec's default mode for these ids (vector_entry_point) against Gymnasium's own
    SyncVectorEnv of gymnasium.make'd envs: the same bytes step by step, through two
    auto-resets (next-step mode) of every sub-environment."""
    ours = gym.make_vec(env_id, num_envs=3, threads=threads, max_episode_steps=25)
    assert isinstance(ours, vector.SoftVectorEnv) and ours.threads == threads
    assert ours.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    reference = gym.make_vec(env_id, num_envs=3, vectorization_mode="sync", max_episode_steps=25)
    assert isinstance(reference, gym.vector.SyncVectorEnv)
    mine, theirs = _vector_run(ours, 60, 3), _vector_run(reference, 60, 3)
    assert len(mine) == len(theirs)
    for k, (x, y) in enumerate(zip(mine, theirs, strict=True)):
        assert x == y, f"item {k} differs"


def test_a_vector_step_is_one_step_many_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int, int]] = []
    real = vector.step_many

    def counted(worlds: Any, frames: int = 1, *, threads: int = 1) -> None:
        calls.append((len(worlds), frames, threads))
        real(worlds, frames, threads=threads)

    monkeypatch.setattr(vector, "step_many", counted)
    envs = gym.make_vec("pysoft/Walker-v0", num_envs=4, threads=2)
    envs.reset(seed=0)
    for _ in range(3):
        envs.step(np.zeros(envs.action_space.shape))
    assert calls == [(4, 1, 2)] * 3


@pytest.mark.parametrize("env_id", IDS)
def test_rgb_array_renders_the_world(env_id: str) -> None:
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (320, 480, 3)
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 3  # not a blank image
    envs = gym.make_vec(env_id, num_envs=2, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 2 and frames[0].shape == (320, 480, 3)


def test_human_mode_draws_in_a_window() -> None:
    env = gym.make("pysoft/Walker-v0", render_mode="human")
    env.reset(seed=0)
    assert env.step(np.zeros(env.action_space.shape))[0].shape == env.observation_space.shape
    assert env.render() is None
    env.close()
    env.close()  # twice is fine


def test_the_default_walker_and_its_spaces() -> None:
    env = pysoft.envs.WalkerEnv()
    k = int(np.isin(pysoft.envs.WALKER, (3, 4)).sum())
    n = len(env.robot.particles)
    assert env.action_space.shape == (k,) and env.observation_space.shape == (2 + 2 * n,)
    assert env.action_space.low.min() == -1.0 and env.action_space.high.max() == 1.0
    env.reset(seed=0)
    env.step(np.full(k, 1.0))
    assert np.all(env.robot.muscles.activation == 1.5)  # activation = 1 + 0.5 action
    env.step(np.full(k, -3.0))  # clipped to -1
    assert np.all(env.robot.muscles.activation == 0.5)


def test_a_robot_is_an_argument() -> None:
    grid = np.array([[3, 3, 3], [4, 0, 4]])
    env = gym.make("pysoft/Walker-v0", robot=grid)
    assert env.action_space.shape == (5,)
    obs, _ = env.reset(seed=1)
    assert obs.shape == env.observation_space.shape


def test_bad_input_is_named() -> None:
    env = gym.make("pysoft/Walker-v0")
    env.reset(seed=0)
    k = env.action_space.shape[0]
    with pytest.raises(ValueError, match="action"):
        env.step(np.zeros(k + 1))
    with pytest.raises(ValueError, match="action"):
        env.step(np.full(k, np.nan))
    with pytest.raises(ValueError, match="robot"):
        pysoft.envs.WalkerEnv(robot=np.array([[1, 1], [2, 2]]))  # no actuator
    with pytest.raises(ValueError):
        pysoft.envs.WalkerEnv(robot=np.array([[3, 0], [0, 3]]))  # disconnected
    with pytest.raises(ValueError):
        pysoft.envs.WalkerEnv(robot=np.zeros((3, 3), dtype=int))  # empty
    with pytest.raises(ValueError, match="render_mode"):
        pysoft.envs.WalkerEnv(render_mode="ansi")
    with pytest.raises(ValueError, match="reset_noise_scale"):
        pysoft.envs.JellyCarEnv(reset_noise_scale=-1.0)
    envs = gym.make_vec("pysoft/Walker-v0", num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        envs.step(np.zeros((3, k)))
    with pytest.raises(ValueError, match="seed"):
        envs.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="num_envs"):
        pysoft.envs.WalkerVectorEnv(num_envs=0)
    with pytest.raises(ValueError, match="threads"):
        pysoft.envs.WalkerVectorEnv(num_envs=2, threads=0)
    with pytest.raises(ValueError, match="render_mode"):
        pysoft.envs.WalkerVectorEnv(num_envs=2, render_mode="human")


def test_the_benchmark_rows_run() -> None:
    """python -m pysoft bench's soft-robot rows, briefly (figures are not checked: no timed tests)."""
    from pysoft import bench

    w = bench.bench_walkers(num_envs=4, rounds=1, steps=5, vector_steps=2)
    assert w is not None and w["num_envs"] == 4 and w["substeps"] == 8 and w["hz"] == 60
    assert all(w[k] > 0 for k in ("single_sim_s_per_s", "vector1_steps_per_s", "vector2_vs_single"))
    lines = bench.describe_walkers(w)
    assert len(lines) == 4 and all("target" in line for line in lines[1:])


# -- the walkers' batch: one call for all muscles, one for all observations -------------------

def _pointers(ffi: Any, arrays: list[np.ndarray]) -> tuple[Any, list[Any]]:
    keep = [ffi.from_buffer("double[]", a) for a in arrays]
    return ffi.new("double *[]", keep), keep


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_walker_kernels_give_their_twins_bits(seed: int) -> None:
    """ps_walkers_drive and ps_walkers_observe (csrc/src/envs.c) against the twins of
    pysoft/twins/envs.py: the same bytes, with actions outside [-1, 1], positions far enough
    to be clamped, a NaN velocity, and rows in any order."""
    from pysoft import _native
    from pysoft._constants import MUSCLE_RANGE
    from pysoft.envs._base import OBS_LIMIT
    from pysoft.twins import envs as twin

    ffi, lib = _native.require()
    rng = np.random.default_rng(seed)
    nw, k, m, n, rows_in = 3, 5, 9, 7, 12
    action = rng.uniform(-2.0, 2.0, (nw, k))
    action[0, 0], action[1, 1] = -1.0, 1.0
    owners = rng.integers(0, k, (m, 2)).astype(np.int32)
    owners[0, 1] = owners[0, 0]  # a muscle of one voxel
    muscle_rows = np.stack([rng.permutation(m + 4)[:m] for _ in range(nw)]).astype(np.int32)
    act_c = [np.full(m + 4, np.nan) for _ in range(nw)]
    act_py = [a.copy() for a in act_c]
    act_ptrs, keep = _pointers(ffi, act_c)
    low, high = 0.6, 1.4  # (narrower than MUSCLE_RANGE: the clamp acts)
    assert MUSCLE_RANGE[0] < low < high < MUSCLE_RANGE[1]
    lib.ps_walkers_drive(act_ptrs, ffi.from_buffer("double[]", action),
                         ffi.from_buffer("int32_t[]", muscle_rows), ffi.from_buffer("int32_t[]", owners),
                         nw, k, m, low, high)
    twin.walkers_drive(act_py, action.reshape(-1), muscle_rows.reshape(-1), owners.reshape(-1),
                       nw, k, m, low, high)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(act_c, act_py, strict=True))
    assert all(np.isfinite(a[r]).all() and np.isnan(np.delete(a, r)).all()
               for a, r in zip(act_c, muscle_rows, strict=True))  # (the muscles' rows and none else)
    assert min(a[r].min() for a, r in zip(act_c, muscle_rows, strict=True)) == low

    pos = [rng.normal(0.0, 60.0, (rows_in, 2)) for _ in range(nw)]
    vel = [rng.normal(0.0, 80.0, (rows_in, 2)) for _ in range(nw)]
    vel[2][3, 1] = np.nan
    rows = np.stack([rng.permutation(rows_in)[:n] for _ in range(nw)]).astype(np.int32)
    weights = rng.uniform(0.5, 1.5, n)
    weights /= weights.sum()
    time = [np.array([rng.uniform(0.0, 100.0)]) for _ in range(nw)]  # (each world's, as pipeline._time)
    results = []
    for kernel in ("c", "python"):
        obs, x, times = np.full((nw, 2 + 2 * n), 7.0), np.full(nw, 7.0), np.full(nw, 7.0)
        if kernel == "c":
            p, v, t = _pointers(ffi, pos), _pointers(ffi, vel), _pointers(ffi, time)  # (with their buffers)
            lib.ps_walkers_observe(ffi.from_buffer("double[]", obs), ffi.from_buffer("double[]", x),
                                   ffi.from_buffer("double[]", times), p[0], v[0], t[0],
                                   ffi.from_buffer("int32_t[]", rows), ffi.from_buffer("double[]", weights),
                                   nw, n, OBS_LIMIT)
        else:
            twin.walkers_observe(obs.reshape(-1), x, times, [a.reshape(-1) for a in pos],
                                 [a.reshape(-1) for a in vel], time, rows.reshape(-1), weights, nw, n,
                                 OBS_LIMIT)
        results.append((obs.tobytes(), x.tobytes(), times.tobytes()))
        assert times.tolist() == [t[0] for t in time]
        assert np.nanmax(np.abs(obs)) == OBS_LIMIT and np.isnan(obs[2, :2]).any()  # clamped; NaN kept
        assert np.isfinite(obs[:2]).all()
    assert results[0] == results[1]
    del keep


def test_a_walker_drives_its_muscles_as_its_robot_does() -> None:
    """The action's activations are VoxelRobot.drive's of 1 + 0.5 action (clipped), bit for bit."""
    env = pysoft.envs.WalkerEnv()
    env.reset(seed=0)
    rng = np.random.default_rng(5)
    for _ in range(3):
        action = rng.uniform(-1.5, 1.5, env.action_space.shape)
        env.act(action)
        mine = env.robot.muscles.activation.copy()
        env.robot.drive(1.0 + 0.5 * np.clip(action, -1.0, 1.0))
        assert mine.tobytes() == env.robot.muscles.activation.tobytes()


def test_a_vector_step_drives_and_observes_every_walker_in_one_call_each() -> None:
    """One call drives every walker; one observes them all, or each world's frame in
    step_many's lane ends with its walker's observation (ps_walker_observed): the same bits
    as single environments'."""
    from pysoft import _native

    calls: list[str] = []

    class Counting:
        def __init__(self, lib: Any) -> None:
            self.lib = lib

        def __getattr__(self, name: str) -> Any:
            fn = getattr(self.lib, name)

            def call(*args: Any) -> Any:
                calls.append(name)
                return fn(*args)
            return call

    envs = gym.make_vec("pysoft/Walker-v0", num_envs=5)
    batch = envs._batch
    batch._lib = Counting(batch._lib)
    envs.reset(seed=0)
    assert calls == ["ps_walkers_observe"]
    envs.step(np.zeros(envs.action_space.shape))  # (the first frames start from Python)
    assert calls == ["ps_walkers_observe", "ps_walkers_drive", "ps_walkers_observe"]
    singles = [gym.make("pysoft/Walker-v0") for _ in range(5)]
    for i, env in enumerate(singles):
        env.reset(seed=i)
        env.step(np.zeros(env.action_space.shape))
    rng = np.random.default_rng(3)
    for _ in range(3):  # then every world's frame in the lane ends with its observation
        calls.clear()
        actions = rng.uniform(-1.0, 1.0, envs.action_space.shape)
        obs, rewards, _, _, infos = envs.step(actions)
        assert calls == ["ps_walkers_drive"] and batch._observed.all()
        for i, env in enumerate(singles):
            o, r, _, _, info = env.step(actions[i])
            assert o.tobytes() == obs[i].tobytes() and r == rewards[i]
            assert info["x"] == infos["x"][i] and info["time"] == infos["time"][i]
    ffi, _ = _native.require()
    kept = [env.world for env in envs.envs]
    worlds = [w._frame.world for w in kept]
    assert all(w.after != ffi.NULL for w in worlds)
    del envs, batch
    gc.collect()  # (a batch let go of: no world's frame reads into its arrays again)
    assert all(w.after == ffi.NULL and w.after_data == ffi.NULL for w in worlds)
    assert all(w._frame.after_kept is not None for w in kept)  # (what it read stays with the world)
    before = [w.time for w in kept]
    pysoft.step_many(kept, 2)
    assert [w.time for w in kept] == [(t + kept[0].dt) + kept[0].dt for t in before]


def test_walkers_on_the_numpy_backend_give_the_c_cores_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A walker whose world runs on the NumPy twins (the batch then on pysoft/twins/envs.py)
    gives the episode of one on the C core, alone and in a vector env."""
    from pysoft import _native

    c_env, c_vec = pysoft.envs.WalkerEnv(), pysoft.envs.WalkerVectorEnv(num_envs=2, max_episode_steps=3)
    monkeypatch.setattr(_native, "default_backend", lambda: "python")
    py_env, py_vec = pysoft.envs.WalkerEnv(), pysoft.envs.WalkerVectorEnv(num_envs=2, max_episode_steps=3)
    assert py_env.world.backend == "python" and not py_env._batch._c and not py_vec._batch._c
    assert c_env._batch._c and c_vec._batch._c
    assert _episode(py_env, 4, 4) == _episode(c_env, 4, 4)
    assert _vector_run(py_vec, 5, 4) == _vector_run(c_vec, 5, 4)


class _PebbleWalker(pysoft.envs.WalkerEnv):
    """A walker whose world has a pebble (far to the left) in the row before the robot's."""

    def _terrain(self, world: Any) -> None:
        super()._terrain(world)
        self.pebble = world.add_particle((-5.0, 1.0))


def test_a_walker_finds_its_rows_again_after_its_world_changed() -> None:
    """Removing the pebble moves the robot's last particle into its row (and the muscles'
    springs keep theirs): the walker's batch reads and drives the robot's new rows, as a
    batch made afresh does."""
    from pysoft.envs.walker import WalkerBatch

    env = _PebbleWalker()
    env.reset(seed=0)
    before = env._batch._rows.copy()
    env.world.remove(env.pebble)
    action = np.linspace(-1.0, 1.0, env.action_space.shape[0])
    env.act(action)
    assert not np.array_equal(env._batch._rows, before)  # (found again)
    activation = env.robot.muscles.activation.copy()
    env.world.step()
    obs = env.outcome()[0]
    fresh = WalkerBatch([env])
    fresh.observe()
    assert obs.tobytes() == fresh.obs[0].tobytes()
    fresh.act(action.reshape(1, -1))
    assert activation.tobytes() == env.robot.muscles.activation.tobytes()
    centre = env.robot.center()
    assert abs(fresh.x[0] - centre[0]) < 1e-12


def test_a_walker_whose_robot_lost_a_part_says_so() -> None:
    env = pysoft.envs.WalkerEnv()
    env.reset(seed=0)
    particle = int(env.robot.particles[3])
    env.world.remove(particle)
    with pytest.raises(ValueError, match=f"particle {particle} of the walker's robot was removed"):
        env.step(np.zeros(env.action_space.shape))
    env = pysoft.envs.WalkerEnv()
    env.reset(seed=0)
    env.world.remove(int(env.robot.muscles.springs[2]))
    with pytest.raises(ValueError, match="removed"):
        env.step(np.zeros(env.action_space.shape))


def test_a_batch_is_of_walkers_of_one_robot() -> None:
    from pysoft.envs.walker import WalkerBatch

    with pytest.raises(ValueError, match="envs"):
        WalkerBatch([pysoft.envs.WalkerEnv(), pysoft.envs.WalkerEnv(robot=np.array([[3, 3, 3], [4, 0, 4]]))])


def test_vector_envs_in_two_threads_share_nothing() -> None:
    """Two vector envs stepped at once in two threads give what each gives alone."""
    import threading

    alone = [_vector_run(gym.make_vec("pysoft/Walker-v0", num_envs=3, max_episode_steps=20), 40, s)
             for s in (1, 2)]
    together: list[list[bytes]] = [[], []]
    envs = [gym.make_vec("pysoft/Walker-v0", num_envs=3, max_episode_steps=20) for _ in range(2)]

    def run(i: int) -> None:
        together[i] = _vector_run(envs[i], 40, i + 1)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone
