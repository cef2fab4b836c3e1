"""Pilot tests of the rollouts screen (``r``) over a recorded token-level run: the worst and
best rollouts of an update beside the dashboard's verdict, stepping between updates, a
live file growing, a run without rollouts, and hostile content shown as text."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from sanctum.formatting import format_value
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.text.panels import verdict_line
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets.rollouts_screen import HealthStrip, RolloutsScreen
from telemetry import RunStarted, read_events
from telemetry.rollouts import ROLLOUTS_FILE, RolloutRecord, iter_records
from tests.sanctum.app_support import WAIT_LIMIT, lively, wait_until
from tests.sanctum.logs import RunLog
from tests.sanctum.recorded import RECORDED
from tests.waiting import settle

SIZES = [(80, 24), (120, 36)]
RUN = RECORDED / "tokens-s1"
PER_UPDATE = 12  # the run's rollouts_per_update (tests/fixtures/recorded/README.md)


def records() -> list[RolloutRecord]:
    items = list(iter_records(RUN / ROLLOUTS_FILE))
    assert all(isinstance(r, RolloutRecord) for r in items)
    return items  # type: ignore[return-value]


def ends(update: int) -> tuple[RolloutRecord, RolloutRecord]:
    """The lowest and the highest reward_final of ``update`` (ties: the later record)."""
    rs = [r for r in records() if r.id // PER_UPDATE == update]
    worst = min(rs, key=lambda r: (r.reward_final, -r.id))
    best = min(rs, key=lambda r: (-r.reward_final, -r.id))
    return worst, best


def copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "tokens-s1"
    shutil.copytree(RUN, run)
    return run


def strict(tmp_path: Path) -> Thresholds:
    """RefKL warns past 0.001: the recorded run's verdict is WARN with a rule that fired."""
    toml = tmp_path / "strict.toml"
    toml.write_text("[ref_kl]\nwarning = 0.001\ncritical = 1.0\n")
    return load_thresholds(toml)


def text_of(screen: RolloutsScreen, part: str) -> str:
    content = screen.query_one(f"#{part}", Static).content
    assert isinstance(content, Text)  # text, never markup
    return content.plain


def footer_keys(app: App[Any]) -> list[str]:
    return [str(key.description) for key in app.screen.query(FooterKey)]


def strip_text(screen: RolloutsScreen) -> str:
    return screen.query_one(HealthStrip).render().plain


def rollouts_read(count: int) -> Callable[[App[Any]], bool]:
    """The rollouts screen is on top and has read ``count`` records."""

    def read(app: App[Any]) -> bool:
        screen = app.screen
        frame = screen.frame if isinstance(screen, RolloutsScreen) else None
        return frame is not None and frame.records == count

    return read


async def open_screen(pilot: Pilot[None], count: int) -> RolloutsScreen:
    """Press r and wait until the screen has read ``count`` records."""
    await pilot.press("r")
    app = await settle(pilot, rollouts_read(count), f"{count} rollouts on the screen", WAIT_LIMIT)
    assert isinstance(app.screen, RolloutsScreen)
    return app.screen


def assert_shows(body: str, r: RolloutRecord, vocab: list[str]) -> None:
    """The rollout's prompt, then its reward and its per-step table: the completion's tokens
    with the log-prob, entropy and value of each."""
    head = f"#{r.id}  prompt {' '.join(vocab[i] for i in r.input_ids)}  ->  "
    lines = body[body.index(head) :].splitlines()
    assert lines[1].startswith(f"  reward_final {r.reward_final:.3f} = ")
    rows = {line.split()[0]: line.split()[1:] for line in lines[3:7]}
    assert rows["token"] == [vocab[i] for i in r.generated_ids]
    for row, values in (("logp", r.logp_old), ("entropy", r.entropy), ("value", r.values)):
        assert rows[row] == [format_value(v, 3) for v in values]


@pytest.mark.parametrize("size", SIZES)
async def test_r_shows_the_worst_and_best_of_the_latest_update_beside_the_verdict(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    run = copy_run(tmp_path)
    app = SanctumApp(run / "events.jsonl", strict(tmp_path))
    async with app.run_test(size=size) as pilot:
        snapshot = await wait_until(pilot, lambda s: s.run.status == "completed", "the run")
        vocab = snapshot.run.config["vocab"]
        assert "Rollouts" in footer_keys(app)
        screen = await open_screen(pilot, 36)
        head, body = text_of(screen, "rollouts-head"), text_of(screen, "rollouts-samples")
        assert "rollouts.jsonl: 36 rollouts" in head
        assert "update 2 (3 of 3 kept)  12 rollouts" in head
        worst, best = ends(2)
        assert body.index("worst") < body.index(f"#{worst.id} ") < body.index("best")
        assert body.index("best") < body.index(f"#{best.id} ")
        assert_shows(body, worst, vocab)
        assert_shows(body, best, vocab)
        strip = strip_text(screen)  # the dashboard's one verdict, and the rule that fired
        assert f"health: {verdict_line(snapshot)}" in strip
        assert "WARN: RefKL 2x" in strip and "rules fired: RefKL 2x" in strip
        assert "update 2: RefKL 0.0175" in strip

        await pilot.press("left_square_bracket")
        await pilot.pause()
        head, body = text_of(screen, "rollouts-head"), text_of(screen, "rollouts-samples")
        assert "update 1 (2 of 3 kept)" in head
        worst, best = ends(1)
        assert_shows(body, worst, vocab)
        assert_shows(body, best, vocab)
        assert "update 1: RefKL 0.0094" in strip_text(screen)

        await pilot.press("end")
        await pilot.pause()
        assert "update 2 (3 of 3 kept)" in text_of(screen, "rollouts-head")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RolloutsScreen)


async def test_the_screen_follows_the_file_as_the_trainer_appends(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    lines = (RUN / ROLLOUTS_FILE).read_bytes().splitlines(keepends=True)
    partial = b"".join(lines[: 2 * PER_UPDATE]) + lines[2 * PER_UPDATE][:40]  # a torn line
    (run / ROLLOUTS_FILE).write_bytes(partial)
    app = SanctumApp(run / "events.jsonl", DEFAULT_THRESHOLDS)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.run.status == "completed", "the run")
        screen = await open_screen(pilot, 2 * PER_UPDATE)
        assert "update 1 (2 of 2 kept)" in text_of(screen, "rollouts-head")
        with (run / ROLLOUTS_FILE).open("ab") as fh:
            fh.write(b"".join(lines[2 * PER_UPDATE :])[40:])
        await settle(
            pilot,
            lambda a: screen.frame is not None and screen.frame.records == 36,
            "the appended update",
            WAIT_LIMIT,
        )
        await pilot.pause()
        assert "update 2 (3 of 3 kept)" in text_of(screen, "rollouts-head")
        assert f"#{ends(2)[0].id} " in text_of(screen, "rollouts-samples")
        assert screen.frame is not None and screen.frame.skipped == 0


@pytest.mark.parametrize("size", SIZES)
async def test_a_run_without_rollouts_gets_a_one_line_notice(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004))
    log.close()
    app = SanctumApp(path, DEFAULT_THRESHOLDS)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        assert "Rollouts" not in footer_keys(app)
        await pilot.press("r")
        await pilot.pause()
        assert not isinstance(app.screen, RolloutsScreen)
        notes = [n.message for n in app._notifications]
        assert notes == [
            f"No rollouts: {tmp_path / ROLLOUTS_FILE} does not exist (token-level runs write it)."
        ]


async def test_r_is_offered_once_the_trainer_writes_its_first_rollouts(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    (run / ROLLOUTS_FILE).unlink()
    app = SanctumApp(run / "events.jsonl", DEFAULT_THRESHOLDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda s: s.run.status == "completed", "the run")
        assert "Rollouts" not in footer_keys(app)
        shutil.copy(RUN / ROLLOUTS_FILE, run / ROLLOUTS_FILE)
        await settle(pilot, lambda a: "Rollouts" in footer_keys(a), "the r key", WAIT_LIMIT)
        await open_screen(pilot, 36)


@pytest.mark.parametrize("size", SIZES)
async def test_hostile_token_names_are_text_and_a_malformed_line_is_counted(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    config = app_config()
    vocab = [f"[bold]{n}\x1b[2J" if n.startswith("Z") else n for n in config["vocab"]]
    log = RunLog(run / "events.jsonl")
    log.start({**config, "vocab": vocab})
    log.update(lively(0, kl=0.004))
    log.close()
    lines = (RUN / ROLLOUTS_FILE).read_bytes().splitlines(keepends=True)
    lines.insert(5, b'{"id": "[red]not a record\x1b[2J"}\n')
    (run / ROLLOUTS_FILE).write_bytes(b"".join(lines))
    app = SanctumApp(run / "events.jsonl", DEFAULT_THRESHOLDS)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda s: s.update == 0, "update 0")
        screen = await open_screen(pilot, 36)
        head, body = text_of(screen, "rollouts-head"), text_of(screen, "rollouts-samples")
        assert "36 rollouts, 1 unreadable line skipped (line 6: " in head
        assert "[bold]Z" in body and "\\x1b[2J" in body  # literally, escaped
        assert "\x1b" not in head + body + strip_text(screen)


def app_config() -> dict[str, Any]:
    """The recorded run's ``run_started.config``."""
    first = read_events(RUN / "events.jsonl").events[0]
    assert isinstance(first, RunStarted)
    return dict(first.payload.config)
