"""Which TensorBoard tag becomes which event-log field: one table per trainer, or a file.

A trainer's table is chosen from the tags a log holds (Stable-Baselines3's ``train/*`` or
CleanRL's ``losses/*``); a TOML mapping file (``--map``) adds tags or overrides entries, or
stands alone for any other trainer. A tag's target is one of: a ``ppo_update`` field (one
value per update, at the step the trainer logged it), a ``rollout`` field (one value per
rollout), ``episode_return`` / ``episode_length`` (one value per finished episode: counted,
averaged and ranged per rollout), ``config.NAME`` (a setting: its first value, and
``NAME_end`` when it changed), or ``ignore`` (known, and deliberately not imported). The
fields a target may name are derived from the payload types, so a new field is mappable
as soon as it exists. A value is multiplied by ``scale`` (SB3's ``entropy_loss`` is the
negative entropy: scale -1). A mapping file::

    trainer = "my-trainer"              # optional: the run's trainer name
    updates_logged_late = false         # optional: see TagMapping.updates_logged_late
    kl_estimator = "k3"                 # optional: the estimator approx_kl is (default k3)
    global_step = "ppo/samples"         # optional: the tag holding each step's global step
    algorithm = "grpo"                  # optional: run_started.algorithm (default ppo)

    [tags]
    "ppo/kl" = "approx_kl"
    "ppo/clip" = "clip_fraction"
    "ppo/entropy_loss" = { field = "entropy", scale = -1.0 }
    "episode/return" = "episode_return"
    "ppo/clip_range" = "config.clip_range"
    "ppo/ref_kl" = ["ref_kl", "config.first_ref_kl"]   # one tag feeding two targets
    "reward/acc" = "reward_components.acc"             # one named reward component
    "debug/grad_hist" = "ignore"

``global_step``: without it an update's ``global_step`` is the TensorBoard step it was
logged at; with it, the value that tag holds at that step (TRL's PPO logs its optimizer
step as the step and the samples so far as ``episode``). A tag's value may be a list of
targets (each a name or ``{ field, scale }``), each fed the same values. A field some health
rule judges takes only a change of units: a ``scale`` of size 1e-6 to 1e6 (0 would judge
zeros, 1e-300 a KL of 50 as 5e-299).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import msgspec

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.run_files import UsageError
from telemetry.events import KLMeasure, PPOUpdatePayload, RolloutPayload, bare_type
from telemetry.files import InputFileError, read_toml
from telemetry.integrations import sb3_figures as sb3

if TYPE_CHECKING:
    from sanctum.importers.tensorboard.reader import TBLog

TargetKind = Literal["update", "component", "rollout", "episode", "config", "ignore"]
NumberKind = type[bool] | type[int] | type[float]


def _number_fields(payload: type[msgspec.Struct], *skip: str) -> dict[str, NumberKind]:
    """The numeric (bool, int, float) fields of a payload, with their kind."""
    found: dict[str, NumberKind] = {}
    for f in msgspec.structs.fields(payload):
        kinds = set(get_args(bare_type(f.type))) or {bare_type(f.type)}
        kind = next((k for k in (bool, int, float) if k in kinds), None)
        if kind is not None and f.name not in skip:
            found[f.name] = kind
    return found


UPDATE_FIELDS: Final = _number_fields(PPOUpdatePayload, "update", "global_step")
"""``ppo_update`` fields a tag may fill (the index and step come from the log's steps)."""
ROLLOUT_FIELDS: Final = _number_fields(RolloutPayload, "update", "global_step")
"""``rollout`` fields a tag may fill."""
EPISODE_FIELDS: Final = ("episode_return", "episode_length")
"""One value per finished episode, gathered into the rollout it finished in."""
EVERY_UPDATE: Final = ("approx_kl", "clip_fraction")
"""The fields Stable-Baselines3 and CleanRL log at every update: their tags tell those
trainers' tables apart, and a step with update figures but without one of them that the
log does hold is not an update (see :func:`held_every_update`). A log with no tag for
either (a GRPO run's) imports without them: not measured. ``early_stopped`` is written
false when no tag holds it."""
COMPONENT: Final = "reward_components."
"""A target ``reward_components.NAME``: one named reward component of ``ppo_update``."""
JUDGED: Final = frozenset(
    name for rule in DEFAULT_THRESHOLDS.rules for name in (rule.metric, rule.per) if name
)
"""The fields some health rule judges: a mapping file may scale them only by a change of
units (:data:`JUDGED_SCALE`)."""
JUDGED_SCALE: Final = (1e-6, 1e6)
"""The sizes of a scale a judged field may take: a change of units or of sign (-1 for a
logged negative, 1e-3 for a figure in thousandths). 0, or 1e-300 (which turns a KL of 50
into 5e-299), would make what a rule judges vanish; 1e300 would make it overflow."""


def _a_unit_scale(scale: float) -> bool:
    return JUDGED_SCALE[0] <= abs(scale) <= JUDGED_SCALE[1]


@dataclass(frozen=True, slots=True)
class Target:
    """Where one tag's values go."""

    kind: TargetKind
    field: str = ""
    """The payload field or config key ("" for ``ignore``)."""
    scale: float = 1.0
    """Each value is multiplied by it (-1: the trainer logs the negative)."""
    reason: str = ""
    """Why an ``ignore`` tag is not imported."""

    def describe(self) -> str:
        """``entropy (x -1)``, ``config.clip_range``, ``not imported: ...``."""
        if self.kind == "ignore":
            return f"not imported: {self.reason}" if self.reason else "not imported"
        prefix = {"config": "config.", "component": COMPONENT}.get(self.kind, "")
        name = prefix + self.field
        return name if self.scale == 1.0 else f"{name} (x {self.scale:g})"


Targets = tuple[Target, ...]
"""Where one tag's values go: usually one target, several when a tag feeds several."""


def describe(targets: Targets) -> str:
    """The targets of one tag, as :meth:`Target.describe` says each."""
    return ", ".join(t.describe() for t in targets)


@dataclass(frozen=True, slots=True)
class Header:
    """What a log's texts and tags say about the run, beyond its scalars (a trainer's
    settings), for ``run_started`` and every update."""

    config: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    algorithm: str | None = None
    """None: the mapping's."""
    kl: Mapping[str, KLMeasure] | None = None
    """None: the mapping's."""
    policy_epochs: int | None = None
    action_count: int | None = None
    """The choices of each action (a language model's vocabulary), when the log says."""
    constants: Mapping[str, float] = field(default_factory=dict)
    """``ppo_update`` fields every update holds (a fixed coefficient the log names once)."""


@dataclass(frozen=True, slots=True)
class TagMapping:
    """One trainer's tags and how to read them."""

    name: str
    """What chose it: ``stable-baselines3``, ``cleanrl``, ``trl-grpo``, ``trl-ppo``,
    ``openrlhf`` or a mapping file."""
    trainer: str
    """The trainer's name for ``run_started.trainer``."""
    tags: Mapping[str, Targets]
    updates_logged_late: bool = False
    """The trainer writes an update's figures with the *next* rollout's (SB3 dumps
    ``train/*`` after collecting the next rollout): each is the update of the rollout
    before, and the last update is never written."""
    kl_estimator: str = "k3"
    """The estimator the trainer's approx_kl is (k3 for SB3 and CleanRL)."""
    hyperparameters_tag: str | None = None
    """A text tag holding the settings as a ``|param|value|`` table (CleanRL's)."""
    notes: tuple[str, ...] = ()
    """How the trainer's definitions differ from ours, written into the config."""
    detect_tags: tuple[str, ...] = ()
    """A log holding every one of these tags is this trainer's (empty: never chosen by
    its tags)."""
    algorithm: str = "ppo"
    """``run_started.algorithm``."""
    kl: Mapping[str, KLMeasure] | None = None
    """``run_started.kl``: what each KL field measures (None: the contract's defaults)."""
    global_step_tag: str | None = None
    """A tag whose value at a step is that step's global step (None: the step itself)."""
    step_unit: str | None = None
    """``run_started.step_unit``: what the global step counts (None: environment steps)."""
    component_tags: tuple[str, str] | None = None
    """(prefix, suffix): a tag ``prefix + NAME + suffix`` feeds ``reward_components[NAME]``."""
    header: Callable[[TBLog], Header] | None = None
    """Reads the trainer's settings from the log (its texts, its tags)."""
    read_texts: tuple[str, ...] = ()
    """The text tags :attr:`header` reads (not listed as data left out)."""

    def tags_for(self, field_name: str) -> list[str]:
        """The tags that fill ``field_name``."""
        return [
            tag
            for tag, targets in self.tags.items()
            if any(t.field == field_name and t.kind != "config" for t in targets)
        ]

    def resolved(self, tags: Collection[str]) -> TagMapping:
        """This mapping with a target for each of ``tags`` that :attr:`component_tags`
        matches (a reward function's tag is named after it)."""
        if self.component_tags is None:
            return self
        head, tail = self.component_tags
        found = {
            tag: (Target("component", tag[len(head) : -len(tail)]),)
            for tag in tags
            if tag.startswith(head) and tag.endswith(tail) and len(tag) > len(head) + len(tail)
        }
        return replace(self, tags=MappingProxyType({**found, **self.tags}))


def _update(name: str, scale: float = 1.0) -> Target:
    return Target("update", name, scale)


def _ignore(reason: str) -> Target:
    return Target("ignore", reason=reason)


def table(entries: Mapping[str, Target]) -> Mapping[str, Targets]:
    """A trainer's table of one target per tag, as :attr:`TagMapping.tags`."""
    return MappingProxyType({tag: (target,) for tag, target in entries.items()})


SB3: Final = TagMapping(
    name="stable-baselines3",
    trainer="stable-baselines3",
    detect_tags=tuple(tag for tag, f in sb3.FIGURES.items() if f.field in EVERY_UPDATE),
    tags=table(
        {
            **{tag: _update(f.field, f.scale) for tag, f in sb3.FIGURES.items()},
            **{tag: Target("config", key) for tag, key in sb3.SETTING_FIGURES.items()},
            **{tag: _ignore(reason) for tag, reason in sb3.NOT_RECORDED.items()},
            "rollout/ep_rew_mean": Target("rollout", "episode_return_mean"),
            "rollout/ep_len_mean": Target("rollout", "episode_length_mean"),
            "time/fps": Target("rollout", "steps_per_second"),
        }
    ),
    updates_logged_late=True,
    notes=(
        "SB3 writes an update's train/* figures with the next rollout's: each update's "
        "global_step is the rollout's it trained on, and the last update is not in the log",
        "rollout/ep_rew_mean and ep_len_mean are SB3's means over its last 100 episodes, "
        "written as each rollout's episode_return_mean and episode_length_mean with "
        "episodes 0: the count of episodes is not logged",
        "train/value_loss is the mean squared error without the 0.5 (twice sanctum-ppo's)",
        "time/fps is the steps per second since learn() began",
    ),
)
"""Stable-Baselines3's PPO: its ``train/*`` tags as ``telemetry.integrations.sb3_figures``
maps its logger (one home for what an SB3 key means); the ``rollout/*`` and ``time/*`` tags,
which the callback measures for itself, as an import reads them."""

CLEANRL: Final = TagMapping(
    name="cleanrl",
    trainer="cleanrl-ppo",
    detect_tags=("losses/approx_kl", "losses/clipfrac"),
    tags=table(
        {
            "losses/approx_kl": _update("approx_kl"),
            "losses/clipfrac": _update("clip_fraction"),
            "losses/entropy": _update("entropy"),
            "losses/policy_loss": _update("policy_loss"),
            "losses/value_loss": _update("value_loss"),
            "losses/explained_variance": _update("explained_variance"),
            "charts/learning_rate": _update("learning_rate"),
            "losses/old_approx_kl": _ignore("the k1 estimator; no field in schema 1"),
            "charts/episodic_return": Target("episode", "episode_return"),
            "charts/episodic_length": Target("episode", "episode_length"),
            "charts/SPS": Target("rollout", "steps_per_second"),
        }
    ),
    hyperparameters_tag="hyperparameters/text_summary",
    notes=(
        "losses/approx_kl, policy_loss, value_loss and entropy are the last minibatch's "
        "values (approx_kl: of the last epoch that ran), not means over the update",
        "charts/SPS is the steps per second since the run began",
    ),
)
"""CleanRL's ``ppo.py`` family (as ``telemetry.integrations.cleanrl`` maps its variables)."""


def detect(tags: Collection[str], tables: Collection[TagMapping]) -> TagMapping | None:
    """The first of ``tables`` whose :attr:`TagMapping.detect_tags` the log all holds."""
    for candidate in tables:
        if candidate.detect_tags and all(t in tags for t in candidate.detect_tags):
            return candidate.resolved(tags)
    return None


def held_every_update(mapping: TagMapping, tags: Collection[str]) -> tuple[str, ...]:
    """The fields of :data:`EVERY_UPDATE` the log holds a tag for under ``mapping``: an
    update lacking one of those is a gap in the log, not an algorithm that does not
    measure it."""
    return tuple(n for n in EVERY_UPDATE if any(t in tags for t in mapping.tags_for(n)))


def holds_update_field(mapping: TagMapping, tags: Collection[str]) -> bool:
    """Whether some tag of the log fills a ``ppo_update`` field under ``mapping``."""
    return any(
        t.kind in ("update", "component") and tag in tags
        for tag, targets in mapping.tags.items()
        for t in targets
    )


def target_of(name: str, scale: float = 1.0) -> Target | None:
    """The target a mapping file names: a field, ``reward_components.NAME``,
    ``config.NAME`` or ``ignore``."""
    if name == "ignore":
        return _ignore("ignored by the mapping file")
    if name.startswith("config.") and len(name) > len("config."):
        return Target("config", name.removeprefix("config."), scale)
    if name.startswith(COMPONENT) and len(name) > len(COMPONENT):
        return Target("component", name.removeprefix(COMPONENT), scale)
    if name in UPDATE_FIELDS:
        return Target("update", name, scale)
    if name in ROLLOUT_FIELDS:
        return Target("rollout", name, scale)
    if name in EPISODE_FIELDS:
        return Target("episode", name, scale)
    return None


@dataclass(frozen=True, slots=True)
class MapFile:
    """What a ``--map`` file says."""

    path: Path
    tags: Mapping[str, Targets]
    settings: Mapping[str, Any] = field(default_factory=dict)
    """``trainer``, ``updates_logged_late``, ``kl_estimator``, ``global_step`` and
    ``algorithm`` when given (by :class:`TagMapping`'s attribute names)."""


_SETTINGS: Final = {
    "trainer": str,
    "updates_logged_late": bool,
    "kl_estimator": str,
    "global_step": str,
    "algorithm": str,
}
_ATTRIBUTE: Final = {"global_step": "global_step_tag"}
"""A mapping file's setting -> the :class:`TagMapping` attribute it sets, where they differ."""


def _entry(where: str, entry: object) -> Target:
    if isinstance(entry, str):
        entry = {"field": entry}
    if not isinstance(entry, dict) or not isinstance(entry.get("field"), str):
        raise UsageError(
            f'{where}: give a field name, {{ field = "...", scale = -1.0 }} or a list of them'
        )
    if set(entry) - {"field", "scale"}:
        raise UsageError(f"{where}: unknown keys {sorted(set(entry) - {'field', 'scale'})}")
    scale = entry.get("scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale):
        raise UsageError(f"{where}: scale must be a finite number, got {scale!r}")
    target = target_of(entry["field"], float(scale))
    if target is None:
        raise UsageError(
            f"{where}: {entry['field']!r} is not a ppo_update or rollout field, "
            f"{' or '.join(EPISODE_FIELDS)}, {COMPONENT}NAME, config.NAME or ignore"
        )
    if target.kind == "update" and target.field in JUDGED and not _a_unit_scale(scale):
        written = "as 0" if scale == 0 else f"{abs(scale):g} times its logged size"
        raise UsageError(
            f"{where}: scale {scale:g} would write every {target.field} {written}, and a "
            f"health rule judges {target.field} in its own units: map it with its real scale "
            f"(of size {JUDGED_SCALE[0]:g} to {JUDGED_SCALE[1]:g}), or not at all"
        )
    return target


def _entries(path: Path, tag: str, entry: object) -> Targets:
    """The targets of one tag: one entry, or a list of them (one tag feeding several)."""
    where = f"{path}: tags.{tag!r}"
    if not isinstance(entry, list):
        return (_entry(where, entry),)
    targets = tuple(_entry(f"{where}[{i}]", e) for i, e in enumerate(entry))
    if not targets:
        raise UsageError(f"{where}: an empty list feeds nothing (map the tag to ignore)")
    if len(targets) > 1 and any(t.kind == "ignore" for t in targets):
        raise UsageError(f"{where}: ignore in a list with other targets")
    names = [replace(t, scale=1.0).describe() for t in targets]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise UsageError(f"{where}: feeds {', '.join(twice)} more than once")
    return targets


def load_map(path: Path) -> MapFile:
    """Read a mapping file; UsageError naming the file and key when it is unusable."""
    try:  # the one opener: a regular file, 1 MiB at most, nested 16 deep at most
        doc = read_toml(path, "mapping file")
    except InputFileError as exc:
        raise UsageError(str(exc)) from None
    tags = doc.pop("tags", {})
    if not isinstance(tags, dict):
        raise UsageError(f"{path}: tags must be a table of tag = field")
    for key, value in doc.items():
        if key not in _SETTINGS:
            raise UsageError(f"{path}: unknown key {key!r} (known: tags, {', '.join(_SETTINGS)})")
        if not isinstance(value, _SETTINGS[key]):
            raise UsageError(f"{path}: {key} must be a {_SETTINGS[key].__name__}, got {value!r}")
    settings = {_ATTRIBUTE.get(key, key): value for key, value in doc.items()}
    return MapFile(path, {tag: _entries(path, tag, e) for tag, e in tags.items()}, settings)


def with_file(base: TagMapping | None, file: MapFile) -> TagMapping:
    """``base`` (or nothing) with the file's tags added over it and its settings applied."""
    name = f"mapping file {file.path.name}"
    start = base or TagMapping(name=name, trainer="unknown", tags={})
    merged = replace(
        start,
        name=name if base is None else f"{base.name} + {name}",
        tags=MappingProxyType({**start.tags, **file.tags}),
    )
    return replace(merged, **dict(file.settings))
