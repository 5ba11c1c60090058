"""ndm.gym.CongestionEnv: the Gym shape, determinism in the seed, both action kinds."""

import unittest

import numpy as np

import ndm_test_util  # noqa: F401  (paths)
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


class GymTest(unittest.TestCase):
    def make(self, **kw):
        env = ndm.gym.CongestionEnv(scenarios=40, seconds=4, **kw)
        self.addCleanup(env.close)
        return env

    def test_shape(self):
        env = self.make()
        self.assertEqual(env.observation_space.shape, (len(ndm.gym.FEATURES),))
        self.assertEqual(env.action_space.shape, (1,))
        obs, info = env.reset(seed=1)
        self.assertTrue(env.observation_space.contains(obs), obs)
        self.assertGreater(info["features"]["rtt_min_ms"], 0)
        obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
        self.assertIsInstance(reward, float)
        self.assertFalse(terminated or truncated)
        self.assertGreater(info["time_s"], 0)

    def test_same_seed_same_trajectory(self):
        env = self.make(max_steps=60)
        policy_rng = lambda seed: np.random.default_rng(seed)  # noqa: E731
        rng = policy_rng(9)
        a = rollout(env, 5, 60, lambda o: env.action_space.sample(rng))
        rng = policy_rng(9)
        b = rollout(env, 5, 60, lambda o: env.action_space.sample(rng))
        self.assertEqual(a[0], b[0])
        self.assertEqual(len(a[1]), len(b[1]))
        for (oa, ra, ta), (ob, rb, tb) in zip(a[1], b[1]):
            self.assertTrue(np.array_equal(oa, ob))
            self.assertEqual((ra, ta), (rb, tb))
        # Another seed, another episode (scenario or trajectory).
        c = rollout(env, 6, 60, lambda o: 0.0)
        d = rollout(env, 5, 60, lambda o: 0.0)
        self.assertTrue(c[0] != d[0] or any(not np.array_equal(x[0], y[0]) for x, y in zip(c[1], d[1])))

    def test_actions_act(self):
        env = self.make(max_steps=40)
        grow = rollout(env, 3, 40, lambda o: 1.0)[1]
        shrink = rollout(env, 3, 40, lambda o: -1.0)[1]
        cwnd = ndm.gym.FEATURES.index("cwnd_packets")
        self.assertGreater(grow[-1][0][cwnd], shrink[-1][0][cwnd])
        self.assertEqual(shrink[-1][0][cwnd], 2.0)  # the floor: two datagrams

    def test_episode_end_and_pacing(self):
        env = self.make(action="pacing", decision=4)
        env.reset(seed=2)
        steps, terminated = 0, False
        while not terminated:
            _, _, terminated, truncated, info = env.step(0.0)
            steps += 1
            self.assertFalse(truncated)
        self.assertGreater(steps, 10)
        self.assertTrue(info["result"]["byte_exact"], info["result"]["error"])
        # Why it ended: the scenario's virtual time ran out (and the drain after it).
        self.assertEqual(info["end"], "time")
        self.assertGreaterEqual(info["time_s"], info["episode_seconds"])
        self.assertEqual(info["episode_seconds"], info["scenario"]["seconds"])
        with self.assertRaises(RuntimeError):
            env.step(0.0)
        env.reset(seed=2)  # a new episode after the end

    def test_truncation_says_so(self):
        env = self.make(max_steps=3)
        env.reset(seed=1)
        ends = [env.step(0.0)[4]["end"] for _ in range(3)]
        self.assertEqual(ends, [None, None, "max_steps"])

    def test_reset_mid_episode(self):
        env = self.make()
        env.reset(seed=1)
        env.step(0.0)
        obs1, _ = env.reset(seed=1)  # aborts the running episode
        obs2, _ = env.reset(seed=1)
        self.assertTrue(np.array_equal(obs1, obs2))

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            ndm.gym.CongestionEnv(action="window")
        with self.assertRaises(ValueError):
            ndm.gym.CongestionEnv(decision=0)


if __name__ == "__main__":
    unittest.main()
