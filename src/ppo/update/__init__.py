"""One PPO update: the agent's epochs and minibatches, the state of an update in progress,
its typed statistics and the ``ppo_update`` payload built from them.

Imports :mod:`ppo.rollout` (the batch), :mod:`ppo.model`, :mod:`ppo.config`,
:mod:`ppo.core` and :mod:`ppo.distributed`.
"""
