"""Recorders for trainers we do not own, each writing the same event log ``sanctum`` reads.

Every integration imports its trainer only when it is used, so ``telemetry`` keeps to
msgspec and the standard library; without the trainer's extra it says which one to
install. ``telemetry.integrations.sb3``: Stable-Baselines3's PPO, one callback.
"""
