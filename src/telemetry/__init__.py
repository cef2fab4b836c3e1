"""Typed training telemetry: the event contract, an emitter bus, and a crash-safe event log.

Depends on msgspec only. Any trainer can record a run that Sanctum shows and checks::

    from telemetry import Recorder, RolloutPayload
    with Recorder(env_id="CartPole-v1", config=cfg) as rec:
        rec.emit(RolloutPayload(update=0, global_step=512))
"""

from telemetry.bus import Emitter, EventBus, SinkError
from telemetry.codec import PayloadError
from telemetry.eventlog import (
    EventLogError,
    EventLogNotFound,
    EventLogReader,
    EventLogWriter,
    LogInUse,
    ReadBatch,
    SchemaVersionError,
    SkippedLine,
    read_events,
)
from telemetry.events import (
    SCHEMA_MAJOR,
    Anomaly,
    AnomalyPayload,
    EarlyStop,
    Event,
    Heartbeat,
    HeartbeatPayload,
    KLMeasure,
    PPOUpdate,
    PPOUpdatePayload,
    Rollout,
    RolloutPayload,
    RunFinished,
    RunFinishedPayload,
    RunStarted,
    RunStartedPayload,
    TrainerInfo,
)
from telemetry.recorder import Recorder

__all__ = [
    "SCHEMA_MAJOR",
    "Anomaly",
    "AnomalyPayload",
    "EarlyStop",
    "Emitter",
    "Event",
    "EventBus",
    "EventLogError",
    "EventLogNotFound",
    "EventLogReader",
    "EventLogWriter",
    "Heartbeat",
    "HeartbeatPayload",
    "KLMeasure",
    "LogInUse",
    "PPOUpdate",
    "PPOUpdatePayload",
    "PayloadError",
    "ReadBatch",
    "Recorder",
    "Rollout",
    "RolloutPayload",
    "RunFinished",
    "RunFinishedPayload",
    "RunStarted",
    "RunStartedPayload",
    "SchemaVersionError",
    "SinkError",
    "SkippedLine",
    "TrainerInfo",
    "read_events",
]
