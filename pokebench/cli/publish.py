"""`pokebench-publish`: see :func:`pokebench.results.publish.main`."""

from pokebench.results.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
