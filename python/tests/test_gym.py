"""ndm.gym.CongestionEnv: the Gym shape, determinism in the seed, both action kinds."""

import numpy as np
import pytest

import ndm.gym


def rollout(env, seed, steps, policy):
    obs, info = env.reset(seed=seed)
    trajectory = [(obs.copy(), 0.0, info["time_s"])]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        trajectory.append((obs.copy(), reward, info["time_s"]))
        if terminated or truncated:
            break
    return info["scenario"], trajectory


@pytest.fixture
def make():
    """CongestionEnv(scenarios=40, seconds=4, **kw), closed after the test."""
    envs = []

    def make(**kw):
        envs.append(ndm.gym.CongestionEnv(scenarios=40, seconds=4, **kw))
        return envs[-1]

    yield make
    for env in envs:
        env.close()


def test_shape(make):
    env = make()
    assert env.observation_space.shape == (len(ndm.gym.FEATURES),)
    assert env.action_space.shape == (1,)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs), obs
    assert info["features"]["rtt_min_ms"] > 0
    obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    assert isinstance(reward, float)
    assert not (terminated or truncated)
    assert info["time_s"] > 0


def test_same_seed_same_trajectory(make):
    env = make(max_steps=60)
    rng = np.random.default_rng(9)
    a = rollout(env, 5, 60, lambda o: env.action_space.sample(rng))
    rng = np.random.default_rng(9)
    b = rollout(env, 5, 60, lambda o: env.action_space.sample(rng))
    assert a[0] == b[0]
    assert len(a[1]) == len(b[1])
    for (oa, ra, ta), (ob, rb, tb) in zip(a[1], b[1]):
        assert np.array_equal(oa, ob)
        assert (ra, ta) == (rb, tb)
    # Another seed, another episode (scenario or trajectory).
    c = rollout(env, 6, 60, lambda o: 0.0)
    d = rollout(env, 5, 60, lambda o: 0.0)
    assert c[0] != d[0] or any(not np.array_equal(x[0], y[0]) for x, y in zip(c[1], d[1]))


def test_actions_act(make):
    env = make(max_steps=40)
    grow = rollout(env, 3, 40, lambda o: 1.0)[1]
    shrink = rollout(env, 3, 40, lambda o: -1.0)[1]
    cwnd = ndm.gym.FEATURES.index("cwnd_packets")
    assert grow[-1][0][cwnd] > shrink[-1][0][cwnd]
    assert shrink[-1][0][cwnd] == 2.0  # the floor: two datagrams


def test_episode_end_and_pacing(make):
    env = make(action="pacing", decision=4)
    env.reset(seed=2)
    steps, terminated = 0, False
    while not terminated:
        _, _, terminated, truncated, info = env.step(0.0)
        steps += 1
        assert not truncated
    assert steps > 10
    assert info["result"]["byte_exact"], info["result"]["error"]
    # Why it ended: the scenario's virtual time ran out (and the drain after it).
    assert info["end"] == "time"
    assert info["time_s"] >= info["episode_seconds"]
    assert info["episode_seconds"] == info["scenario"]["seconds"]
    with pytest.raises(RuntimeError):
        env.step(0.0)
    env.reset(seed=2)  # a new episode after the end


def test_truncation_says_so(make):
    env = make(max_steps=3)
    env.reset(seed=1)
    assert [env.step(0.0)[4]["end"] for _ in range(3)] == [None, None, "max_steps"]


def test_reset_mid_episode(make):
    env = make()
    env.reset(seed=1)
    env.step(0.0)
    obs1, _ = env.reset(seed=1)  # aborts the running episode
    obs2, _ = env.reset(seed=1)
    assert np.array_equal(obs1, obs2)


@pytest.mark.parametrize("kw", [{"action": "window"}, {"decision": 0}])
def test_bad_arguments(kw):
    with pytest.raises(ValueError):
        ndm.gym.CongestionEnv(**kw)
