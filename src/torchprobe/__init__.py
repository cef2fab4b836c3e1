"""torchprobe: what a PyTorch PPO trainer does not log, measured from outside and recorded
in the telemetry contract.

:mod:`torchprobe.probe`'s ``UpdateProbe`` wraps any torch policy's update (the KL, clip
fraction, pre-clip gradient norm and entropy it measures); :mod:`torchprobe.torchrl`,
:mod:`torchprobe.skrl` and :mod:`torchprobe.tianshou` are those trainers' recorders built on
it. torch is their trainer, so it is a package of its own above :mod:`telemetry`, which
imports only msgspec and the standard library. Each trainer's library is imported only by
the module that records it.
"""
