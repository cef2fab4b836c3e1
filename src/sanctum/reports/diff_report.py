"""``sanctum diff`` for a terminal: the diff document (:mod:`sanctum.reports.diff`) as short tables.

Every line is made visible before it is printed (run ids, config values and early-stop
reasons come from logs). Numbers read as everywhere in Sanctum (:func:`format_value`); a
``-`` in a table means none (not measured, never reached), as each header says.
"""

from __future__ import annotations

from typing import Any

from sanctum.formatting import format_value, plural, visible_lines
from sanctum.reports.compare import config_value

EARLY_STOPS_SHOWN = 5
"""Early-stop reasons listed per run in the text (``--json`` lists what the fold kept)."""


def format_text(doc: dict[str, Any]) -> str:
    """The whole diff, section by section."""
    return visible_lines(
        [
            *_header(doc),
            *_config(doc["config"]),
            *_returns(doc["returns"]),
            *_rules(doc["rules"]),
            *_metrics(doc["metrics"]),
            *_early_stops(doc["early_stops"]),
        ]
    )


def _header(doc: dict[str, Any]) -> list[str]:
    lines = ["sanctum diff"]
    for side in ("a", "b"):
        r = doc[side]
        steps = "no step" if r["global_step"] is None else plural(r["global_step"], "step")
        lines.append(
            f"{side.upper()}  {r['run_id']}  {r['path']}  (env {r['env_id']}, seed {r['seed']}, "
            f"schema {r['schema']}, {r['status']}, {plural(r['updates'], 'update')}, {steps}, "
            f"verdict {r['verdict_text']}{' so far' if r['verdict_so_far'] else ''})"
        )
        if r["earlier_runs"]:
            lines.append(
                f"   the log holds earlier runs, not compared: {', '.join(r['earlier_runs'])}"
            )
    if not doc["comparable"]:
        lines.append(
            f"WARNING: incomparable runs ({'; '.join(doc['incomparable'])}): "
            "their numbers do not measure the same thing"
        )
    return lines


def _config(differences: list[dict[str, Any]]) -> list[str]:
    if not differences:
        return ["", "config: the same"]
    width = max(len(d["key"]) for d in differences)
    verb = "differs" if len(differences) == 1 else "differ"
    lines = ["", f"config ({plural(len(differences), 'key')} {verb})"]
    for d in differences:
        a = config_value(d["a"], d["only_in"] != "b")
        b = config_value(d["b"], d["only_in"] != "a")
        lines.append(f"  {d['key']:<{width}}  A {a}  B {b}")
    return lines


def _returns(returns: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"returns (mean of the last {returns['episodes']}+ episodes, at the same steps; "
        "- = no episode yet)",
        f"  {'step':>10} {'A':>10} {'B':>10} {'B - A':>10}",
    ]
    for p in returns["at_steps"]:
        lines.append(
            f"  {p['step']:>10} {_num(p['a']):>10} {_num(p['b']):>10} {_num(p['b_minus_a']):>10}"
        )
    for key in ("initial", "final"):
        a, b = returns["a"][key], returns["b"][key]
        change = None if a is None or b is None else b - a
        lines.append(f"  {key:>10} {_num(a):>10} {_num(b):>10} {_num(change):>10}")
    return lines


def _num(value: float | None) -> str:
    return format_value(value, None, "-")


def _rules(rules: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "health (final and worst value per rule; first update at warning and at critical; "
        "- = none)",
        f"  {'rule':<26} {'final A':>9} {'final B':>9} {'worst A':>9} {'worst B':>9} "
        f"{'1st warn A/B':>13} {'1st crit A/B':>13}",
    ]
    for r in rules:
        a, b = r["a"], r["b"]
        lines.append(
            f"  {r['label'] + ' ' + r['metric']:<26} {a['final_text']:>9} "
            f"{b['final_text']:>9} {a['worst_text']:>9} {b['worst_text']:>9} "
            f"{_pair(a['first_warning'], b['first_warning']):>13} "
            f"{_pair(a['first_critical'], b['first_critical']):>13}"
        )
    return lines


def _pair(a: int | None, b: int | None) -> str:
    return f"{'-' if a is None else a}/{'-' if b is None else b}"


def _metrics(metrics: list[dict[str, Any]]) -> list[str]:
    lines = ["", "other metrics (final value; - = not measured)"]
    lines.append(f"  {'metric':<26} {'final A':>10} {'final B':>10}")
    for m in metrics:
        lines.append(f"  {m['metric']:<26} {_num(m['a']['final']):>10} {_num(m['b']['final']):>10}")
    return lines


def _early_stops(stops: dict[str, Any]) -> list[str]:
    lines = ["", f"early stops: A {stops['a']['count']}, B {stops['b']['count']}"]
    for side in ("a", "b"):
        listed = stops[side]["listed"]
        lines += [
            f"  {side.upper()} update {x['update']}: {x['reason']}"
            for x in listed[:EARLY_STOPS_SHOWN]
        ]
        if stops[side]["count"] > EARLY_STOPS_SHOWN:
            more = stops[side]["count"] - EARLY_STOPS_SHOWN
            lines.append(f"  {side.upper()} ... and {more} more (--json lists up to {len(listed)})")
    return lines
