#!/usr/bin/python3
"""A small congestion-control policy trained with PyTorch in ndm's Gym-style
environment: REINFORCE (Williams 1992) with a Gaussian policy whose mean is a
two-layer network of the per-RTT features, acting on the window once per RTT,
rewarded as Aurora and Orca are (log throughput minus delay and loss
penalties). Episodes come from ndm-train's scenario pool, seeded, so a run
repeats exactly. Needs Debian's python3-torch.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/gym_torch_policy.py --episodes 20
"""

import argparse

import numpy as np
import torch

import ndm.gym


class Policy(torch.nn.Module):
    """Features → the mean of the action (−1..1, the env scales the window by it)."""

    def __init__(self, n_features, hidden=32, std=0.3):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden, 1), torch.nn.Tanh())
        self.std = std

    def forward(self, obs):
        # The features span decades (bytes, Mbit/s, ms): log1p puts them on one scale.
        return self.net(torch.log1p(torch.as_tensor(obs, dtype=torch.float32).clamp(min=0)))

    def act(self, obs):
        """A sampled action and its log-probability (kept for the gradient)."""
        dist = torch.distributions.Normal(self(obs), self.std)
        a = dist.sample().clamp(-1.0, 1.0)
        return a, dist.log_prob(a).sum()


def run_episode(env, policy, seed, max_steps):
    obs, info = env.reset(seed=seed)
    log_probs, rewards = [], []
    for _ in range(max_steps):
        a, lp = policy.act(obs)
        obs, reward, terminated, truncated, info = env.step(a.numpy())
        log_probs.append(lp)
        rewards.append(reward)
        if terminated or truncated:
            break
    return log_probs, rewards


def reinforce_loss(log_probs, rewards, gamma):
    """−Σ log π(a|s)·(G − mean G): the policy gradient with a baseline."""
    returns, g = [], 0.0
    for r in reversed(rewards):
        g = r + gamma * g
        returns.append(g)
    returns = torch.tensor(returns[::-1], dtype=torch.float32)
    advantage = returns - returns.mean()
    return -(torch.stack(log_probs) * advantage).sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--max-steps", type=int, default=100, help="decisions (RTTs) per episode")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--gamma", type=float, default=0.95)
    ap.add_argument("--save", help="write the trained policy's state_dict here (torch.save)")
    a = ap.parse_args()
    if a.episodes < 1 or a.max_steps < 1:
        ap.error("--episodes and --max-steps must be at least 1")
    torch.manual_seed(a.seed)
    env = ndm.gym.CongestionEnv(action="cwnd", max_steps=a.max_steps)
    policy = Policy(env.observation_space.shape[0])
    optimiser = torch.optim.Adam(policy.parameters(), lr=a.lr)
    totals = []
    for episode in range(a.episodes):
        log_probs, rewards = run_episode(env, policy, a.seed + episode, a.max_steps)
        loss = reinforce_loss(log_probs, rewards, a.gamma)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        totals.append(sum(rewards))
        print(f"episode {episode}: {len(rewards)} decisions, reward {totals[-1]:.2f}, loss {loss.item():.3f}")
    env.close()
    k = max(1, len(totals) // 4)
    print(f"mean reward per episode: first {k} {np.mean(totals[:k]):.2f}, last {k} {np.mean(totals[-k:]):.2f}")
    if a.save:
        torch.save(policy.state_dict(), a.save)
        print(f"saved the policy to {a.save}")


if __name__ == "__main__":
    main()
