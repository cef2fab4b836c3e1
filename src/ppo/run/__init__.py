"""A training run end to end: the trainer, resuming from a checkpoint, what each rank
does differently, stop signals, progress, the pre-flight checks, the dashboard attached to
a run, and what ``ppo train`` prints.

Imports every layer below it (:mod:`ppo.update`, :mod:`ppo.rollout`, :mod:`ppo.model`,
:mod:`ppo.config`, :mod:`ppo.core`, :mod:`ppo.distributed`); Sanctum only lazily, in
:mod:`ppo.run.attach`.
"""
