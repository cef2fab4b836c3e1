"""The options every calibration bench takes (``health_calibration.py``,
``llm_calibration.py``): what to record, where, and which rule table judges it."""

from __future__ import annotations

import argparse
from pathlib import Path


def calibration_parser(description: str, quick_help: str) -> argparse.ArgumentParser:
    """A parser with ``--quick``, ``--reuse DIR``, ``--keep DIR``, ``--thresholds FILE`` and
    ``--jobs N``; the bench adds its own options."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--reuse", type=Path, metavar="DIR", help="judge the runs in DIR")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="record the corpus into DIR")
    parser.add_argument("--thresholds", type=Path, metavar="FILE", help="rule table to judge with")
    parser.add_argument("--jobs", type=int, default=2, help="runs recorded at once (default 2)")
    return parser
