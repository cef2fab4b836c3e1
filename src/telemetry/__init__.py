"""Typed training telemetry: the event contract, an emitter bus, and a crash-safe event log.

Depends on msgspec only. Any trainer can record a run that Sanctum shows and checks::

    from telemetry import Recorder, RolloutPayload
    with Recorder(env_id="CartPole-v1", config=cfg) as rec:
        rec.emit(RolloutPayload(update=0, global_step=512))

The package's names load with the module that defines them, when first used, so that
``import telemetry.text`` (or ``telemetry.files``), as a command's argument parsing does,
loads neither msgspec nor the event log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from telemetry.lazy import exports

if TYPE_CHECKING:  # the public names, listed once (telemetry.lazy reads their homes here)
    from telemetry.bus import Emitter as Emitter
    from telemetry.bus import EventBus as EventBus
    from telemetry.bus import SinkError as SinkError
    from telemetry.codec import PayloadError as PayloadError
    from telemetry.eventlog import EventLogError as EventLogError
    from telemetry.eventlog import EventLogNotFound as EventLogNotFound
    from telemetry.eventlog import EventLogReader as EventLogReader
    from telemetry.eventlog import EventLogWriter as EventLogWriter
    from telemetry.eventlog import LogInUse as LogInUse
    from telemetry.eventlog import ReadBatch as ReadBatch
    from telemetry.eventlog import SchemaVersionError as SchemaVersionError
    from telemetry.eventlog import SkippedLine as SkippedLine
    from telemetry.eventlog import read_events as read_events
    from telemetry.events import SCHEMA_MAJOR as SCHEMA_MAJOR
    from telemetry.events import Anomaly as Anomaly
    from telemetry.events import AnomalyPayload as AnomalyPayload
    from telemetry.events import EarlyStop as EarlyStop
    from telemetry.events import Event as Event
    from telemetry.events import Heartbeat as Heartbeat
    from telemetry.events import HeartbeatPayload as HeartbeatPayload
    from telemetry.events import KLMeasure as KLMeasure
    from telemetry.events import PPOUpdate as PPOUpdate
    from telemetry.events import PPOUpdatePayload as PPOUpdatePayload
    from telemetry.events import Rollout as Rollout
    from telemetry.events import RolloutPayload as RolloutPayload
    from telemetry.events import RunFinished as RunFinished
    from telemetry.events import RunFinishedPayload as RunFinishedPayload
    from telemetry.events import RunStarted as RunStarted
    from telemetry.events import RunStartedPayload as RunStartedPayload
    from telemetry.events import TrainerInfo as TrainerInfo
    from telemetry.halting import Halter as Halter
    from telemetry.recorder import Recorder as Recorder

__getattr__ = exports(__name__)
