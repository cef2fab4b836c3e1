"""Webhook destinations: what each is posted, hostile text neutralised, secrets unprinted."""

from __future__ import annotations

import json

import msgspec
import pytest

from sanctum.live.notify import Destination, destination, wanted
from sanctum.model.alerts import Alert
from tests.sanctum.logs import an_alert

HOSTILE = "<!channel> @everyone **bold** [x](http://evil) & <@123>"


def _alert(line: str = HOSTILE, change: str = "critical", verdict: str = "FAIL") -> Alert:
    return an_alert(line=line, change=change, verdict=verdict)


def test_slack_gets_text_with_its_markup_characters_escaped() -> None:
    body = json.loads(destination("slack:https://hooks.slack.com/x").body(_alert()))
    assert body == {
        "text": "&lt;!channel&gt; @everyone **bold** [x](http://evil) &amp; &lt;@123&gt;",
        "mrkdwn": False,  # so **bold** and [x](...) stay the characters they are
        "unfurl_links": False,
        "unfurl_media": False,
    }


def test_discord_gets_content_that_mentions_nobody_and_no_markdown() -> None:
    body = json.loads(destination("discord:https://discord.com/api/webhooks/1/t").body(_alert()))
    assert body["allowed_mentions"] == {"parse": []}
    assert body["content"] == (
        "\\<!channel\\> @everyone \\*\\*bold\\*\\* \\[x\\]\\(http://evil\\) & \\<@123\\>"
    )


def test_a_bare_url_gets_the_alert_as_json() -> None:
    alert = _alert()
    body = json.loads(destination("https://example.com/hook").body(alert))
    assert body["line"] == HOSTILE
    assert {k: body[k] for k in ("run", "verdict", "rule", "update", "step", "value")} == {
        "run": "run",
        "verdict": "FAIL",
        "rule": "KL",
        "update": 3,
        "step": 2048,
        "value": 0.5,
    }
    assert body["path"] == "runs/a/events.jsonl"


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("https://hooks.slack.com/services/T0/B0/secret", "https://hooks.slack.com"),
        (
            "slack:https://user:pw@hooks.example.com:8443/secret?token=t",
            "https://hooks.example.com:8443",
        ),
    ],
)
def test_only_scheme_host_and_port_are_shown(spec: str, shown: str) -> None:
    assert destination(spec).shown == shown


@pytest.mark.parametrize(
    "spec", ["file:///etc/passwd", "slack:", "hooks.slack.com/x", "teams:https://x"]
)
def test_anything_but_an_http_url_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="http"):
        destination(spec)


def test_notify_level_critical_sends_a_fail_and_its_recovery_only() -> None:
    keep = wanted("critical")
    assert not keep(_alert(change="warning", verdict="WARN"))
    assert not keep(_alert(change="recovered", verdict="OK"))  # from a warning
    assert keep(_alert())
    assert keep(_alert(change="recovered", verdict="OK"))
    assert all(wanted("warning")(_alert(change="warning", verdict="WARN")) for _ in range(2))


def test_a_destination_is_its_kind_and_url() -> None:
    assert destination("discord:http://127.0.0.1:8/x") == Destination(
        "discord", "http://127.0.0.1:8/x"
    )


def test_a_nan_value_is_posted_as_null_never_a_dead_thread() -> None:
    """A NaN KL is the commonest critical: the JSON body spells it as alerts.jsonl does."""
    nan = msgspec.structs.replace(_alert(), value=float("nan"))
    body = json.loads(destination("https://example.com/hook").body(nan))
    assert body["value"] is None and body["rule"] == "KL"


def test_a_url_that_cannot_be_posted_is_refused_and_never_shown_whole() -> None:
    for bad in ("https://example.com:abc/s3cr3t", "https://example.com/s3cr3t x"):
        with pytest.raises(ValueError, match=r"port|space") as refused:
            destination(bad)
        assert "s3cr3t" not in str(refused.value)
    assert "s3cr3t" not in repr(destination("slack:https://hooks.slack.com/s3cr3t"))
