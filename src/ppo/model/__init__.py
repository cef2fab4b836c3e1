"""The policy: the actor-critic network, its numpy twin for the rollout path, the frozen
reference policy of fine-tuning, and the checkpoint file that stores them.

Imports :mod:`ppo.config` and :mod:`ppo.core`.
"""
