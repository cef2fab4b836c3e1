"""``sanctum watch --headless``: one alert per change of a run's health, to a real local
webhook; ``--on-critical`` once per run; ``sanctum alerts`` lists what the watcher sent."""

from __future__ import annotations

import json
import shlex
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main
from tests.cli_runner import Ran, run_main
from tests.sanctum.logs import KL_CRITICAL, KL_HOLDS, KL_WARNING, kl_breach, write_run
from tests.sanctum.reports.test_check import write_grpo_run
from tests.sanctum.webhooks import SECRET_PATH, webhook
from tests.waiting import wait_until

BREACH_AT = 8
FIRED_AT = BREACH_AT + KL_HOLDS - 1
"""The update the KL rule reaches its level at (its median of 5 crosses the line)."""


def _watch(*args: object) -> Ran:
    return run_main(main, "watch", "--headless", *map(str, args))


def _recovering(path: Path) -> Path:
    return write_run(path / "events.jsonl", updates=20, overrides=kl_breach(BREACH_AT))


def test_a_run_whose_kl_goes_critical_sends_one_fail_naming_the_rule_and_update(
    tmp_path: Path,
) -> None:
    log = write_run(tmp_path / "events.jsonl", 20, kl_breach(BREACH_AT, KL_CRITICAL, 12))
    with webhook() as hook:
        ran = _watch(log, "--notify", hook.url)
    assert ran.returncode == 1, ran.stderr  # check's exit code for a failed run
    [sent] = hook.accepted
    assert sent["change"] == "critical"
    assert sent["verdict"] == "FAIL"
    assert sent["rule"] == "KL"
    assert sent["update"] == FIRED_AT
    assert sent["value"] == KL_CRITICAL["approx_kl"]
    assert sent["path"] == str(log)
    assert sent["run"] == "run-test"
    assert sent["line"] == ran.stdout.splitlines()[0]


def test_a_recovering_run_sends_the_recovery(tmp_path: Path) -> None:
    with webhook() as hook:
        ran = _watch(_recovering(tmp_path), "--notify", hook.url)
    assert [(a["change"], a["verdict"]) for a in hook.accepted] == [
        ("critical", "FAIL"),
        ("recovered", "OK"),
    ]
    assert hook.accepted[1]["rule"] is None
    assert len(ran.stdout.splitlines()) == 2


def test_a_webhook_answering_500_three_times_then_200_gets_the_message_once(
    tmp_path: Path,
) -> None:
    log = write_run(tmp_path / "events.jsonl", 20, kl_breach(BREACH_AT, KL_CRITICAL, 12))
    with webhook(statuses=[500, 500, 500]) as hook:
        ran = _watch(log, "--notify", hook.url)
    assert hook.requests == 4
    assert len(hook.accepted) == 1
    assert ran.stderr == ""  # it got through: nothing to report


def test_a_failing_webhook_is_reported_once_by_host_and_the_watch_goes_on(
    tmp_path: Path,
) -> None:
    with webhook(statuses=[404] * 10) as hook:
        ran = _watch(_recovering(tmp_path), "--notify", hook.url)
    assert hook.requests == 2  # a 404 is not retried; both alerts were tried
    assert len(ran.stdout.splitlines()) == 2
    [said] = ran.stderr.splitlines()
    host = hook.url.removesuffix(SECRET_PATH)
    assert f"notify {host}: HTTP 404" in said
    assert SECRET_PATH not in ran.stderr + ran.stdout
    assert "s3cr3t" not in ran.stderr + ran.stdout


def test_a_warning_is_not_posted_at_notify_level_critical(tmp_path: Path) -> None:
    warned = kl_breach(BREACH_AT, KL_WARNING)
    log = write_run(tmp_path / "critical-only" / "events.jsonl", 20, warned)
    twin = write_run(tmp_path / "every-change" / "events.jsonl", 20, warned)
    with webhook() as hook:
        ran = _watch(log, "--notify", hook.url, "--notify-level", "critical")
        everything = _watch(twin, "--notify", hook.url)
        again = _watch(twin, "--notify", hook.url)  # its history: nothing is sent twice
    assert ran.returncode == everything.returncode == again.returncode == 0
    assert [a["change"] for a in hook.accepted] == ["warning", "recovered"]  # the twin's


def test_slack_and_discord_get_their_formats_with_hostile_text_neutralised(
    tmp_path: Path,
) -> None:
    log = write_run(tmp_path / "events.jsonl", 20, kl_breach(BREACH_AT, KL_CRITICAL, 12))
    with webhook() as slack, webhook() as discord:
        _watch(log, "--notify", f"slack:{slack.url}", "--notify", f"discord:{discord.url}")
    [slack_sent] = slack.accepted
    [discord_sent] = discord.accepted
    assert slack_sent.keys() == {"text", "mrkdwn", "unfurl_links", "unfurl_media"}
    assert slack_sent["mrkdwn"] is False  # plain text: no markup, no preview
    assert discord_sent["flags"] == 4  # no embeds
    assert "FAIL critical: KL at update" in slack_sent["text"]
    assert discord_sent["allowed_mentions"] == {"parse": []}
    assert "FAIL critical: KL at update" in discord_sent["content"]


def test_a_bad_notify_url_is_a_usage_error_that_does_not_repeat_it(tmp_path: Path) -> None:
    ran = _watch(_recovering(tmp_path), "--notify", "ftp://example.com/s3cr3t")
    assert ran.returncode == 2
    assert "http(s) URL" in ran.stderr
    assert "s3cr3t" not in ran.stderr


_RECORD_ENV = (
    "import json, os, sys; "
    "open(sys.argv[1], 'a').write(json.dumps({k: v for k, v in os.environ.items() "
    "if k.startswith('SANCTUM_')}) + '\\n'); print('stopped the job')"
)


def test_on_critical_runs_once_per_run_with_the_run_in_its_environment(
    tmp_path: Path,
) -> None:
    def twice(u: int) -> dict[str, Any]:  # critical, recovered, critical again
        return dict(KL_CRITICAL) if 4 <= u < 4 + KL_HOLDS or 12 <= u < 12 + KL_HOLDS else {}

    failing = write_run(tmp_path / "failing" / "events.jsonl", 20, twice)
    healthy = write_run(tmp_path / "healthy" / "events.jsonl", 20)
    record = tmp_path / "env.jsonl"
    command = shlex.join([sys.executable, "-c", _RECORD_ENV, str(record)])
    ran = _watch(failing, healthy, "--on-critical", command)
    assert ran.returncode == 1
    fired = (4 + KL_HOLDS - 1, 12 + KL_HOLDS - 1)
    assert [line.split(" · ")[0] for line in ran.stdout.splitlines()] == [
        f"run-test: FAIL critical: KL at update {fired[0]} (0.5000)",
        f"run-test: OK recovered at update {fired[0] + KL_HOLDS}",
        f"run-test: FAIL critical: KL at update {fired[1]} (0.5000)",
        f"run-test: OK recovered at update {fired[1] + KL_HOLDS}",
    ]
    [env] = [json.loads(line) for line in record.read_text().splitlines()]
    assert env == {
        "SANCTUM_RUN": "run-test",
        "SANCTUM_RUN_DIR": str(failing.parent),
        "SANCTUM_RULE": "KL",
        "SANCTUM_VERDICT": "FAIL: KL 1x",
        "SANCTUM_UPDATE": str(fired[0]),
    }
    assert "on-critical run-test: stopped the job" in ran.stderr
    assert "on-critical run-test: exited with code 0" in ran.stderr
    again = _watch(failing, healthy, "--on-critical", command)  # the history holds its FAIL
    assert again.returncode == 1 and len(record.read_text().splitlines()) == 1


def test_alerts_on_a_recorded_run_lists_what_the_watcher_sent(tmp_path: Path) -> None:
    log = _recovering(tmp_path)
    derived = run_main(main, "alerts", log, "--json")  # nobody watched it yet
    with webhook() as hook:
        _watch(log, "--notify", hook.url)
    history = run_main(main, "alerts", log, "--json")  # the watcher's alerts.jsonl
    assert json.loads(derived.stdout)["alerts"] == hook.accepted
    assert json.loads(history.stdout)["alerts"] == hook.accepted
    assert json.loads(history.stdout)["source"] == str(tmp_path / "alerts.jsonl")
    assert len(hook.accepted) == 2


def test_watching_a_run_again_does_not_repeat_its_history(tmp_path: Path) -> None:
    log = _recovering(tmp_path)
    _watch(log)
    _watch(log)
    assert len((tmp_path / "alerts.jsonl").read_text().splitlines()) == 2


def test_alerts_since_leaves_out_the_earlier_changes(tmp_path: Path) -> None:
    log = _recovering(tmp_path)
    [_, recovered] = json.loads(run_main(main, "alerts", log, "--json").stdout)["alerts"]
    later = run_main(main, "alerts", log, "--since", str(recovered["ts"]))
    assert later.returncode == 0
    [line] = later.stdout.splitlines()
    assert line.endswith(recovered["line"])
    assert run_main(main, "alerts", log, "--since", "yesterday").returncode == 2


def test_a_healthy_run_exits_0_with_nothing_said(tmp_path: Path) -> None:
    ran = _watch(write_run(tmp_path / "events.jsonl", 20))
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    assert run_main(main, "alerts", tmp_path).stdout == "no change of health\n"


def test_the_dashboard_takes_the_same_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With somewhere to draw, the watcher acts beside the dashboard until it closes."""
    log = write_run(tmp_path / "events.jsonl", 20, kl_breach(BREACH_AT, KL_CRITICAL, 12))
    with webhook(statuses=[404]) as hook:

        class Dashboard:
            return_code = 0

            def __init__(self, path: Path, *_args: object, **_opts: object) -> None:
                self.path = path

            def run(self) -> None:  # open until the watcher beside it has posted
                wait_until(lambda: hook.requests == 1, "the FAIL, posted", 10)

        module = types.ModuleType("sanctum.tui.app")
        module.SanctumApp = Dashboard  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "sanctum.tui.app", module)
        monkeypatch.setenv("TEXTUAL_DRIVER", "fake")
        ran = run_main(main, log, "--notify", hook.url)
    assert (ran.returncode, ran.stdout) == (0, "")  # the dashboard's exit code
    [said] = ran.stderr.splitlines()  # printed once the dashboard closed
    assert "HTTP 404" in said
    assert len((tmp_path / "alerts.jsonl").read_text().splitlines()) == 1


def test_the_watcher_exits_with_checks_code_even_for_a_run_no_rule_judged(
    tmp_path: Path,
) -> None:
    """One implementation of the exit code: a finished run no rule could judge is 2 for
    ``check`` and for the watcher, a failed one 1."""
    judged = ("ref_kl", "entropy", "grad_norm", "reward_mean", "reward_std")
    nothing = dict.fromkeys((*judged, "reward_zero_std_frac", "completion_truncated_frac"), None)
    unjudged = write_grpo_run(tmp_path / "lengths-only" / "events.jsonl", updates=5, **nothing)
    assert run_main(main, "check", unjudged).returncode == 2
    assert _watch(unjudged).returncode == 2
    failing = write_run(tmp_path / "f" / "events.jsonl", 20, kl_breach(BREACH_AT, KL_CRITICAL, 12))
    assert run_main(main, "check", failing).returncode == _watch(failing).returncode == 1
