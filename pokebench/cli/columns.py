"""`python -m pokebench.cli.columns`: the column tables of docs/results.md, generated from the published folder's
contract (:mod:`pokebench.results.schema`); paste them between the page's markers (a test keeps them equal)."""

from __future__ import annotations

import argparse
import sys

from pokebench.results.schema import columns_markdown


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m pokebench.cli.columns", description=__doc__).parse_args(argv)
    sys.stdout.write(columns_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
