"""``sanctum import tensorboard``: TensorBoard event files read, mapped to fields, grouped by
step and written as an event log.
"""
