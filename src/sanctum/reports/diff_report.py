"""``sanctum diff`` for a terminal: the diff document (:mod:`sanctum.reports.diff`) as short tables.

Every line is made visible before it is printed (run ids, config values and early-stop
reasons come from logs). Numbers read as everywhere in Sanctum (:func:`format_value`); a
``-`` in a table means none (not measured, never reached), as each header says.
"""

from __future__ import annotations

from typing import Any, Final

from sanctum.formatting import SHORT_ABSENT, format_metric, plural, steps_count, visible_lines
from sanctum.reports.compare import config_value
from sanctum.reports.documents import final_cell, not_judged_line
from sanctum.reports.table import right, table_lines
from sanctum.text.run_table import Column

INDENT: Final = "  "
"""Before each line of a table."""

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
        d = doc[side]
        r = d["run"]
        step, unit = r["global_step"], r["step_unit"]
        steps = "no step" if step is None else steps_count(step, unit)
        lines.append(
            f"{side.upper()}  {r['run_id']}  {d['path']}  (env {r['env_id']}, seed {r['seed']}, "
            f"schema {r['schema']}, {r['status']}, {plural(r['updates'], 'update')}, {steps}, "
            f"verdict {d['verdict_text']}{' so far' if d['verdict_so_far'] else ''})"
        )
        earlier = [x["run_id"] for x in d["earlier_runs"] if x["new_run"]]
        if earlier:
            lines.append(f"   the log holds earlier runs, not compared: {', '.join(earlier)}")
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


RETURN_COLUMNS: Final = right("step", "A", "B", "B - A", width=10)
RULE_COLUMNS: Final = (
    Column("rule", 26),
    *right("final A", "final B", "worst A", "worst B", width=9),
    *right("1st warn A/B", "1st crit A/B", width=13),
)
METRIC_COLUMNS: Final = (Column("metric", 26), *right("final A", "final B", width=10))


def _returns(returns: dict[str, Any]) -> list[str]:
    rows = [
        (str(p["step"]), _num(p["a"]), _num(p["b"]), _num(p["b_minus_a"]))
        for p in returns["at_steps"]
    ]
    for key in ("initial", "final"):
        a, b = returns["a"][key], returns["b"][key]
        rows.append((key, _num(a), _num(b), _num(None if a is None or b is None else b - a)))
    title = (
        f"returns (mean of the last {returns['episodes']}+ episodes, at the same steps; "
        "- = no episode yet)"
    )
    return ["", title, *table_lines(RETURN_COLUMNS, rows, INDENT)]


def _num(value: float | None, metric: str = "") -> str:
    """A value as its ``metric`` is shown everywhere (a return without one)."""
    return format_metric(metric, value, absent=SHORT_ABSENT)


def _rules(rules: list[dict[str, Any]]) -> list[str]:
    rows = [
        (
            f"{r['label']} {r['metric']}",
            final_cell(r["a"]),
            final_cell(r["b"]),
            r["a"]["worst_text"],
            r["b"]["worst_text"],
            _pair(r["a"]["first_warning"], r["b"]["first_warning"]),
            _pair(r["a"]["first_critical"], r["b"]["first_critical"]),
        )
        for r in rules
    ]
    title = (
        "health (final and worst value per rule; first update at warning and at critical; - = none)"
    )
    notes = [
        INDENT + line
        for r in rules
        for side in ("a", "b")
        if (line := not_judged_line(r[side], f"{side.upper()}: ")) is not None
    ]
    return ["", title, *table_lines(RULE_COLUMNS, rows, INDENT), *notes]


def _pair(a: int | None, b: int | None) -> str:
    return f"{SHORT_ABSENT if a is None else a}/{SHORT_ABSENT if b is None else b}"


def _metrics(metrics: list[dict[str, Any]]) -> list[str]:
    rows = [
        (name := m["metric"], _num(m["a"]["final"], name), _num(m["b"]["final"], name))
        for m in metrics
    ]
    title = "other metrics (final value; - = not measured)"
    return ["", title, *table_lines(METRIC_COLUMNS, rows, INDENT)]


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
