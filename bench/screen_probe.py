"""On-screen latency and CPU of ``sanctum`` following live runs, as one JSON line.

    python bench/screen_probe.py RUNS RATE SECONDS [sanctum options...]

Follows RUNS runs, each written at RATE updates/s, for SECONDS after the warm-up (the
measured window), with ``sanctum RUN... [sanctum options...]`` (e.g. ``--refresh 0.5``)
in a 120x36 pseudo-terminal. SCREEN_WARMUP=SECONDS in the environment changes the
warm-up (0: none). ``lib/screen.py`` says how each figure is measured.
"""

from __future__ import annotations

import argparse
import json
import os

from lib.screen import WARMUP_SECONDS, measure


def main() -> None:
    summary, _, details = __doc__.split("\n\n", 2)
    parser = argparse.ArgumentParser(
        description=summary,
        epilog=details,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", type=int, help="live runs the dashboard follows")
    parser.add_argument("rate", type=float, help="updates per second written to each run")
    parser.add_argument("seconds", type=float, help="length of the measured window")
    parser.add_argument(
        "options", nargs=argparse.REMAINDER, help="passed to sanctum (e.g. --refresh 0.5)"
    )
    args = parser.parse_args()
    warmup = float(os.environ.get("SCREEN_WARMUP", WARMUP_SECONDS))
    figures = measure(args.runs, args.rate, args.seconds, extra=tuple(args.options), warmup=warmup)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
