"""The emit path's timings on a ``ppo_update`` with every field set: emit + record (the
Emitter through the bus into the event log's writer), the line encoder alone, and the
path stage by stage. Written against the names every tree of the project has had
(``telemetry.Emitter``, ``EventBus``, ``EventLogWriter``, ``telemetry.codec.LineEncoder``),
so ``ab_hot_path.py`` times an older tree with the same code; a stage a tree does not have
(the emit-time check) is left out of its figures.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from telemetry import EarlyStop, Emitter, EventBus, EventLogWriter, PPOUpdatePayload, codec
from telemetry.events import Event, PPOUpdate


def full_payload(i: int) -> PPOUpdatePayload:
    """A ppo_update with every field set, as our trainer emits it."""
    return PPOUpdatePayload(
        update=i, global_step=512 * (i + 1), approx_kl=0.0123, approx_kl_max=0.0311,
        kl_final=0.0142, clip_fraction=0.131, clip_fraction_lower=0.004, ratio_mean=1.0012,
        ratio_min=0.71, ratio_max=1.43, entropy=0.612, entropy_coef=0.01, policy_loss=-0.0123,
        value_loss=12.5, kl_penalty=0.0, total_loss=6.2, kl_coef=0.0, explained_variance=0.82,
        grad_norm=0.91, grad_norm_max=1.7, learning_rate=2.4e-4, advantage_mean=0.02,
        advantage_std=3.1, return_mean=41.2, value_mean=39.9, epochs_completed=4,
        minibatches_completed=15, minibatches_planned=16, early_stopped=True,
        early_stop_reason="approx_kl 0.0311 > max_kl 0.0300 at epoch 3 minibatch 3 "
        "(minibatch not applied)",
        early_stop=EarlyStop(epoch=3, minibatch=3, kl=0.0311, threshold=0.03,
                             scope="minibatch", applied=False),
        skipped_steps=0, nonfinite_ratios=0, update_seconds=0.0412,
    )  # fmt: skip


def full_events(n: int) -> list[Event]:
    """``n`` enveloped :func:`full_payload` events, as an Emitter stamps them."""
    return [
        PPOUpdate(run_id="bench", seq=i + 1, ts=1.7e9, payload=full_payload(i)) for i in range(n)
    ]


def time_emit_record(n: int, path: Path) -> float:
    """Microseconds of wall time per ``Emitter.emit`` of a full payload into a bus whose
    one sink is an ``EventLogWriter`` of ``path``."""
    path.unlink(missing_ok=True)
    payloads = [full_payload(i) for i in range(n)]
    bus = EventBus()
    writer = EventLogWriter(path)
    bus.subscribe(writer)
    emitter = Emitter(bus, "bench")
    t0 = time.perf_counter()
    for payload in payloads:
        emitter.emit(payload)
    elapsed = time.perf_counter() - t0
    writer.close()
    return elapsed / n * 1e6


def time_encode(n: int) -> float:
    """Microseconds of wall time per ``LineEncoder.encode`` of a full event."""
    encoder = codec.LineEncoder()
    events = full_events(n)
    t0 = time.perf_counter()
    for event in events:
        encoder.encode(event)
    return (time.perf_counter() - t0) / n * 1e6


def time_stages(n: int, path: Path) -> dict[str, float]:
    """Microseconds per event of each stage of the emit path, timed apart: ``envelope``
    (the event built around its payload), ``encode`` (the line encoder), ``check`` (the
    emit-time check, which encodes the line itself; only in a tree that has one) and
    ``write`` (one ``os.write`` of the line on an ``O_APPEND`` descriptor)."""
    payloads = [full_payload(i) for i in range(n)]
    t0 = time.perf_counter()
    events = [
        PPOUpdate(run_id="bench", seq=i + 1, ts=time.time(), payload=p)
        for i, p in enumerate(payloads)
    ]
    stages = {"envelope": time.perf_counter() - t0}
    encoder = codec.LineEncoder()
    t0 = time.perf_counter()
    for event in events:
        encoder.encode(event)
    stages["encode"] = time.perf_counter() - t0
    check_type = getattr(codec, "EventCheck", None)
    if check_type is not None:
        check = check_type()
        t0 = time.perf_counter()
        for event in events:
            check(event)
        stages["check"] = time.perf_counter() - t0
    line = bytes(encoder.encode(events[0]))
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            os.write(fd, line)
        stages["write"] = time.perf_counter() - t0
    finally:
        os.close(fd)
    return {name: seconds / n * 1e6 for name, seconds in stages.items()}
