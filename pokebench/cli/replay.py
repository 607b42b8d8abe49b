"""`pokebench-replay`: see :func:`pokebench.text.battle_text.main`."""

from pokebench.text.battle_text import main

if __name__ == "__main__":
    raise SystemExit(main())
