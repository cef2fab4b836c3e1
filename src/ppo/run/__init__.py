"""A training run end to end: the trainer, resuming from a checkpoint, what each rank
does differently, stop signals, progress, the pre-flight checks, the halted run's exit code
and what ``ppo train`` prints.

Imports every layer below it (:mod:`ppo.update`, :mod:`ppo.rollout`, :mod:`ppo.model`,
:mod:`ppo.config`, :mod:`ppo.core`, :mod:`ppo.distributed`) and no Sanctum module: a trainer
halts through any :class:`telemetry.halting.Halter`, and the dashboard is attached from the
command line (:mod:`ppo.cli.attach`).
"""
