"""The JSON Schema of the contract: generated from the types, shipped, and true to the logs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ppo.cli import main as ppo_main
from sanctum.cli import main
from telemetry.events import AnomalyPayload, EarlyStop
from telemetry.schema import SCHEMA_FILE, schema_text, shipped_schema_text
from tests.cli_runner import run_main
from tests.sanctum.logs import RunLog, early_stop_update, ppo_update
from tests.sanctum.recorded import RECORDED
from tests.schema_support import assert_valid_log, line_errors

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_schema_and_the_docs_copy_are_what_the_types_generate() -> None:
    generated = schema_text()
    regenerate = "python -m telemetry.schema > src/telemetry/events.schema.json, then docs/"
    assert shipped_schema_text() == generated, regenerate
    assert (ROOT / "docs" / SCHEMA_FILE).read_text(encoding="utf-8") == generated


def test_sanctum_schema_prints_the_shipped_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(shipped_schema_text())


def test_every_event_kind_with_nonfinite_values_validates(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "events.jsonl")
    log.start(config={"lr": 3e-4, "nested": {"clip": 0.2}})
    log.update(ppo_update(0, grad_norm=math.nan, approx_kl=math.inf, value_loss=-math.inf))
    log.update(early_stop_update(1))
    log.anomaly(value=math.nan, update=1)
    log.anomaly(severity="warning", value=None)
    log.heartbeat(4096)
    log.finish("failed", reason="RuntimeError: boom")
    log.close()
    assert assert_valid_log(log.path) == 9
    text = log.path.read_text(encoding="utf-8")
    assert '"NaN"' in text and '"Infinity"' in text and '"-Infinity"' in text


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('{"type":"ppo_update","run_id":"r","seq":1,"ts":1.0,"payload":{"update":0}}', "payload"),
        ('{"type":"rollout","run_id":"r","seq":"1","ts":1.0,"payload":{}}', "seq"),
        (
            '{"type":"ppo_update","run_id":"r","seq":1,"ts":1.0,"payload":{"update":0,'
            '"global_step":1,"approx_kl":"nan","clip_fraction":0,"early_stopped":false}}',
            "approx",
        ),
        ('{"type":"mystery","run_id":"r","seq":1,"ts":1.0,"payload":{}}', ""),
        ('{"type":"heartbeat","run_id":"r","seq":1,"ts":"NaN","payload":{"global_step":1}}', "ts"),
        ('{"type":"heartbeat","run_id":"r","seq":1,"ts":-1,"payload":{"global_step":1}}', "ts"),
    ],
)
def test_a_line_that_breaks_the_contract_fails_validation(line: str, where: str) -> None:
    errors = line_errors(line)
    assert errors and any(where in e for e in errors), errors


def test_the_recorded_trainer_runs_validate() -> None:
    logs = sorted(RECORDED.glob("*/events.jsonl"))
    assert logs
    for path in logs:
        assert_valid_log(path)


def test_a_real_training_run_validates_heartbeats_and_early_stops_included(
    tmp_path: Path,
) -> None:
    args = ["--headless", "--total-steps", "4096", "--set", "heartbeat_seconds=0.001"]
    args += ["--set", "max_kl=0.0001", "--run-dir", str(tmp_path), "--run-id", "schema"]
    result = run_main(ppo_main, "train", *args)
    assert result.returncode == 0, result.stderr
    path = tmp_path / "schema" / "events.jsonl"
    assert_valid_log(path)
    text = path.read_text(encoding="utf-8")
    assert '"type":"heartbeat"' in text and '"early_stopped":true' in text


def test_an_early_stop_record_is_in_the_schema() -> None:
    fields = json.loads(shipped_schema_text())["$defs"]
    assert set(EarlyStop.__struct_fields__) <= set(fields["EarlyStop"]["properties"])
    assert set(AnomalyPayload.__struct_fields__) <= set(fields["AnomalyPayload"]["properties"])
