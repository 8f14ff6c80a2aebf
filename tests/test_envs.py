"""pysoft.envs: Gymnasium's own checker on every environment (its warnings are errors here),
bit-identical episodes for a seed and actions, the vector environment against Gymnasium's
SyncVectorEnv of the single environments (bytes compared, auto-resets included), rendering,
and bad input named."""

from __future__ import annotations

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
