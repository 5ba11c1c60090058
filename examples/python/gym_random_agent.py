#!/usr/bin/python3
"""A random agent in ndm's Gym-style congestion-control environment: the loop
every learning agent runs (reset, then step with an action until the episode
ends), with the total reward per episode.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/gym_random_agent.py --episodes 3
"""

import argparse

import numpy as np

import ndm.gym


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--action", choices=("cwnd", "pacing"), default="cwnd")
    ap.add_argument("--max-steps", type=int, default=500)
    a = ap.parse_args()
    env = ndm.gym.CongestionEnv(action=a.action, max_steps=a.max_steps)
    rng = np.random.default_rng(a.seed)
    for episode in range(a.episodes):
        obs, info = env.reset(seed=a.seed + episode)
        total, steps, done = 0.0, 0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample(rng))
            total += reward
            steps += 1
            done = terminated or truncated
        f = info["features"]
        print(f"episode {episode}: {info['scenario']['description']}\n"
              f"  {steps} steps, {info['time_s']:.1f} s simulated, reward {total:.1f}, last round "
              f"{f['throughput_mbps']:.2f} Mbit/s, RTT {f['rtt_mean_ms']:.1f} ms (min {f['rtt_min_ms']:.1f})")
    env.close()


if __name__ == "__main__":
    main()
