"""`pokebench-server`: see :func:`pokebench.showdown.server.main`."""

from pokebench.showdown.server import main

if __name__ == "__main__":
    raise SystemExit(main())
