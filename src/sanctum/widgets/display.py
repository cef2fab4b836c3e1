"""Display settings shared by the widgets: which metric is featured, how levels look.

One home for what more than one widget needs to agree on, so the banner, the health panel
and the KL chart cannot drift apart: the featured metric, the banner's decimals for it,
and the ``level-*`` CSS classes (the stylesheet decides what each level looks like).
"""

from __future__ import annotations

from typing import Final

from textual.dom import DOMNode

from sanctum.health import Level

KL_METRIC: Final = "approx_kl"
"""The metric the banner and the chart feature."""
REF_KL_METRIC: Final = "ref_kl"
"""The KL to the frozen reference policy, charted beside KL_METRIC when a run has it."""
BANNER_KL_DECIMALS: Final = 3
"""KL in the banner: 3 decimals (the health panel uses the rule's 4); docs/design.md, section 6."""
LEVEL_CLASSES: Final = tuple(f"level-{level.value}" for level in Level)
"""The CSS class of each level."""


def level_class(level: Level) -> str:
    """``level-critical`` ... for ``level``."""
    return f"level-{level.value}"


def set_one_class(node: DOMNode, family: tuple[str, ...], name: str) -> None:
    """Give ``node`` exactly one class of ``family``: ``name``."""
    node.remove_class(*(c for c in family if c != name))
    node.add_class(name)
