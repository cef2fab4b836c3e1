"""Collecting experience: vector environments (Gymnasium, EnvPool), the collector that steps
them with the policy, and the buffer that turns a rollout into a training batch.

Imports :mod:`ppo.model`, :mod:`ppo.config`, :mod:`ppo.core` and :mod:`ppo.distributed`.
"""
