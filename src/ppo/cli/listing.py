"""``ppo config`` and ``ppo train --help-config``: the fields of a config, read from the
config itself (:mod:`ppo.config.listing`). Loads no torch."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Sequence
from typing import TextIO

from ppo.config import PPOConfig, listing
from ppo.config.settings import Settings, unknown_key
from ppo.exits import EXIT_USAGE
from ppo.run.messages import error, listed
from ppo.tokens.config import ALGORITHMS, TokenPPOConfig

CONFIGS: dict[str, type[Settings]] = {"ppo": PPOConfig, **dict.fromkeys(ALGORITHMS, TokenPPOConfig)}
"""``ppo config --algorithm``: the config each algorithm reads (ppo's own, and the token-level
one for each ``algorithm`` a TOML file may name)."""


class HelpConfig(argparse.Action):
    """``ppo train --help-config``: ``ppo config``'s listing, then exit 0 (as --help)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest=dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="list every config field (as ppo config does) and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        with contextlib.suppress(OSError):  # a closed pipe: main says so when it flushes
            print(_listing(PPOConfig, listing.fields_of(PPOConfig)))
        parser.exit()


def _listing(config: type[Settings], fields: Sequence[listing.FieldDoc]) -> str:
    return listing.text(
        config,
        fields,
        f"{config.__name__}: the keys of a TOML file (--config) and of --set KEY=VALUE",
    )


def list_config(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``ppo config``: the fields asked for (all by default); exit 2 on a name that is not
    a field, with what to write when it is another library's name."""
    config, prefix = CONFIGS[args.algorithm], "ppo config: "
    known = [f.name for f in listing.fields_of(config)]
    unknown = [name for name in args.names if name not in known]
    for name in unknown:
        error(err, unknown_key(name, known, context=config().to_dict()), prefix=prefix)
    if unknown:
        return EXIT_USAGE
    fields = [
        # the algorithm asked for is what its TOML file says, not the config class's default
        dataclasses.replace(f, default=args.algorithm) if f.name == "algorithm" else f
        for f in listing.fields_of(config)
        if not args.names or f.name in args.names
    ]
    text = listing.as_json(config, fields) if args.json else _listing(config, fields)
    return listed(text, out, err, prefix)
