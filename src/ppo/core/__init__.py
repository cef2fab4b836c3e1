"""The maths of PPO as pure functions and small stateful helpers: KL estimators and KL
controllers, advantages, losses, action distributions, gradient norms, running
normalisation.

Imports :mod:`ppo.distributed` (to merge statistics across ranks) and nothing else of
``ppo``: the config imports the maths, never the reverse.
"""
