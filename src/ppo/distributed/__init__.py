"""Training across processes: the world of ranks and its collectives, and the launcher of
``ppo train --nproc N``.

The lowest layer of ``ppo``: imports only :mod:`ppo.exits`.
"""
