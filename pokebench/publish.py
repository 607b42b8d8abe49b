"""``python -m pokebench.publish``: the publish command of PokéBench before 0.2.0, kept as an alias of
``pokebench-publish`` (same arguments), with a note pointing to the new name."""

from __future__ import annotations

import sys

from pokebench.results.cli import main

if __name__ == "__main__":
    print("note: `python -m pokebench.publish` is deprecated; use `pokebench-publish` (the same arguments).",
          file=sys.stderr)
    sys.exit(main())
