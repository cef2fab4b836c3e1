"""Text from outside reaches every output of ``sanctum`` through the one escaping function
(:func:`telemetry.text.visible`): a property test over the whole code-point range drives
the real commands on a real event log (in a folder named after the text), and the
dashboard, ``sanctum rollouts`` and argparse's own errors are checked on the cases a
battery of hostile inputs found."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from textual.content import Content
from textual.widgets import Label

from sanctum.cli import main
from sanctum.formatting import dumps
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.health.thresholds_toml import load_thresholds
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import HealthStatusPanel, KLChart, StatusBanner, TimelinePanel
from sanctum.tui.widgets.help import HelpScreen
from telemetry.events import AnomalyPayload
from telemetry.rollouts import ROLLOUTS_FILE
from telemetry.text import HIDDEN_CATEGORIES, visible
from tests.cli_runner import run_main
from tests.sanctum.app_support import lively, screen_lines, wait_until
from tests.sanctum.logs import RunLog
from tests.sanctum.reports.test_rollouts_view import record

ANY_CODE_POINT = st.characters(min_codepoint=0, max_codepoint=sys.maxunicode, codec=None)
BATTERY = "\x1b]0;x\x07\x1b[2J\u061c\u2060\u2064\U000e0041\u00ad\ufffe\uffff\u202e\n[b]x[/b]"
"""What a battery of hostile cases got through ``visible()`` raw, and a terminal title."""
PLACEHOLDER = "@@HOSTILE@@"
SRC = Path(__file__).resolve().parents[2] / "src"


def hidden(text: str) -> list[str]:
    """The hidden characters ``text`` shows raw (a report's own line breaks aside)."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in HIDDEN_CATEGORIES]


def folder_name(text: str) -> str:
    """``text`` as much as a file name can hold: no ``/`` or NUL, and of the surrogates
    only those that stand for a byte that is not UTF-8 (as Python decodes such a name)."""
    return "run-" + "".join(
        c
        for c in text
        if c not in "/\x00" and (not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF)
    )


def hostile_run(root: Path, text: str) -> tuple[Path, str]:
    """A failed run whose run id, failure reason, early-stop reason and anomaly message
    hold ``text``, in a folder named after it. The project's writer writes the log; the
    text goes in as JSON escapes, as any other writer may spell it (a lone surrogate
    among them: the reader skips such a line as malformed)."""
    folder = root / folder_name(text)
    log = RunLog(folder / "events.jsonl", run_id=f"run<{PLACEHOLDER}>")
    log.start()
    log.update(lively(0, kl=0.004, early_stopped=True, early_stop_reason=PLACEHOLDER))
    log.update(lively(1, kl=0.004))
    log.emit(
        AnomalyPayload(
            severity="critical", metric="grad_norm", value=None, message=PLACEHOLDER, update=1
        )
    )
    log.finish("failed", PLACEHOLDER)
    log.close()
    escaped = json.dumps(text)  # ASCII: \u escapes, surrogate pairs
    path = folder / "events.jsonl"
    path.write_bytes(path.read_bytes().replace(PLACEHOLDER.encode(), escaped[1:-1].encode()))
    return folder, f"run<{json.loads(escaped)}>"  # a surrogate pair reads as one code point


def sanctum(*argv: str | Path) -> tuple[int, str, str]:
    """``sanctum ARGV`` in this process: (exit code, stdout, stderr); both must be text a
    terminal can be given (UTF-8 encodable: a lone surrogate never gets out)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    for stream in (out.getvalue(), err.getvalue()):
        stream.encode("utf-8")  # strict: raises on a lone surrogate
        assert not hidden(stream), hidden(stream)
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=ANY_CODE_POINT, max_size=30))
@example(BATTERY)
@example("\ud800")
@example("\ud800\udcff")
@example("")
def test_every_output_shows_text_from_a_log_escaped(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder, run_id = hostile_run(Path(tmp), text)
        text = run_id[4:-1]  # as the log holds it
        junit = Path(tmp) / "junit.xml"

        code, out, _ = sanctum("check", folder, "--junit", junit)
        judged = code == 1  # the failed run: its lines were read (2: they were skipped)
        assert code in (1, 2)
        if judged:  # the run id, the reason and the anomaly message, each shown escaped
            assert f"run {visible(run_id)}," in out
            assert out.count(visible(text)) >= 2
            assert f"sanctum check {visible(str(folder / 'events.jsonl'))}" in out
        suite = ET.parse(junit).getroot().find("testsuite")  # well-formed XML
        assert suite is not None
        properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
        if judged:
            assert properties["run_id"] == visible(run_id)
            assert properties["path"] == visible(str(folder / "events.jsonl"))
        else:  # the error case names what it was asked to judge
            assert properties["path"] == visible(str(folder))

        code, out, _ = sanctum("check", folder, "--json")
        if judged:  # the same strings to a JSON reader
            doc = json.loads(out)
            assert doc["run_id"] == run_id
            assert doc["path"] == str(folder / "events.jsonl")
            assert any(text in row["message"] for row in doc["rows"])

        code, out, _ = sanctum("summary", folder)
        assert code == (0 if judged else 2)
        if judged:
            assert visible(run_id) in out and visible(text) in out

        code, out, _ = sanctum("summary", folder, "--json")
        if judged:
            run = json.loads(out)["run"]
            assert (run["run_id"], run["reason"]) == (run_id, text)

        code, out, _ = sanctum("watch", "--once", folder)
        if judged:
            assert visible(run_id) in out
        sanctum("watch", "--once", "--json", folder)
        sanctum("diff", folder, folder)


def test_json_output_survives_a_lone_surrogate() -> None:
    """A folder name that is not UTF-8 reaches Python as lone surrogates (``\\udcff``)."""
    document = {"path": "run-\udcff\ud800", "rows": [{"message": "\uffff\x1b"}]}
    text = dumps(document)
    text.encode("utf-8")
    assert not hidden(text)
    assert json.loads(text) == document


async def test_the_dashboard_shows_a_hostile_run_id_and_reason_escaped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = RunLog(path, run_id=f"run{BATTERY}")
    log.start()
    log.update(lively(0, kl=0.004, early_stopped=True, early_stop_reason=BATTERY))
    log.finish("failed", BATTERY)
    log.close()
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: 1_700_000_100.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda s: s.run.status == "failed", "the failed run")
        shown = str(app.query_one(StatusBanner).query_one("#run", Label).render())
        assert visible(f"run{BATTERY}") in shown and not hidden(shown)
        assert "[b]x[/b]" in shown  # markup shown as typed, never parsed
        timeline = app.query_one(TimelinePanel).render()
        assert visible(BATTERY) in str(timeline) and not hidden(str(timeline))
        assert app.return_code is None


async def test_a_rule_label_with_markup_is_shown_as_typed(tmp_path: Path) -> None:
    """A label from a thresholds file names its rule's row in the panel and the help:
    shown as typed, never read as markup (``[/]`` closed nothing and stopped the app)."""
    toml = tmp_path / "thresholds.toml"
    toml.write_text('[approx_kl]\nlabel = "[/]K[red]"\n')
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    log.update(lively(0, kl=0.004))
    log.finish("completed")
    log.close()
    app = SanctumApp(path, load_thresholds(toml), clock=lambda: 1_700_000_100.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda s: s.run.status == "completed", "the finished run")
        assert app.query_one(HealthStatusPanel).row("approx_kl").label == "[/]K[red]/clip"
        assert any("[/]K[red]/clip" in line for line in screen_lines(app))  # the row's name
        subtitle = Content.from_markup(app.query_one(KLChart).border_subtitle or "")
        assert "5×clip" in subtitle.plain  # the chart's lines, named after the other metric
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert app.return_code is None


def test_rollouts_shows_a_hostile_folder_name_escaped(tmp_path: Path) -> None:
    run = tmp_path / folder_name(BATTERY)
    run.mkdir()
    lines = b"".join(msgspec.json.encode(record(i, 0.5)) + b"\n" for i in range(2))
    (run / ROLLOUTS_FILE).write_bytes(lines)
    code, out, err = sanctum("rollouts", run)
    assert code == 0, err
    assert visible(str(run / ROLLOUTS_FILE)) in out


def test_argparse_errors_show_what_was_typed_escaped() -> None:
    name = "bad\x1b]0;x\x07name\u2060"
    result = run_main(main, "check", "a", name)
    assert result.returncode == 2
    assert visible(name) in result.stderr and not hidden(result.stderr)


def test_an_unwritable_junit_file_is_named_escaped(tmp_path: Path) -> None:
    folder, _ = hostile_run(tmp_path, "ok")
    junit = tmp_path / folder_name(BATTERY) / "x" / "junit.xml"
    junit.parent.parent.write_text("a file, not a folder")
    code, _, err = sanctum("check", folder, "--junit", junit)
    assert code == 2
    assert visible(str(junit)) in err


def test_no_other_module_defines_which_characters_are_hidden() -> None:
    """One escaping function: no module of ``src`` but telemetry/text.py spells out hidden
    characters (a regex class of controls, bidi marks) or asks for a Unicode category."""
    spellings = ("\\x00-", "\\x7f-", "\\u202e", "\\u200b", "unicodedata.category", "isprintable")
    offenders = [
        f"{path.relative_to(SRC)}: {word}"
        for path in sorted(SRC.rglob("*.py"))
        if path != SRC / "telemetry" / "text.py"
        for word in spellings
        if word in path.read_text(encoding="utf-8")
    ]
    assert not offenders


def test_a_rule_label_that_hides_characters_is_refused(tmp_path: Path) -> None:
    """A label from a thresholds file names a rule in every view (JUnit's failure type, the
    dashboard's chart titles, the run table's verdict): one that hides characters is bad
    input, said in one line."""
    folder, _ = hostile_run(tmp_path, "ok")
    toml = tmp_path / "thresholds.toml"
    toml.write_text('[approx_kl]\nlabel = "K\\u001b]0;x\\u0007\\uffffL"\n')
    code, out, err = sanctum("check", folder, "--thresholds", toml)
    assert (code, out) == (2, "")
    assert "[approx_kl] label: must be a non-empty string of visible characters" in err
    assert len(err.splitlines()) == 1
