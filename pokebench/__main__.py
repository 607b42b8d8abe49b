"""`python -m pokebench +run=NAME [key=value ...]`: play a run, then publish it.

`python -m pokebench --help` lists the settings and the runs.
`python -m pokebench export-training RUN [--teacher MODEL]`: a run's decisions as chat-format JSONL.
`python -m pokebench analyse RUN [RUN ...]`: score every stored decision with poke-engine (pokebench.analysis).
"""

from __future__ import annotations

import logging
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pokebench import paths
from pokebench.play.lock import RunLockedError
from pokebench.play.plan import ConfigError, available_runs
from pokebench.play.runner import RunStopped, run
from pokebench.play.summary import resume_command
from pokebench.showdown.server import ServerError
from pokebench.results.store import StoreError

log = logging.getLogger("pokebench")


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    """The `pokebench` command: a subcommand (export-training, analyse), or a run (Hydra's command line)."""
    if len(sys.argv) > 1 and sys.argv[1] == "export-training":
        from pokebench.players.continual.export import main as export_training

        sys.exit(export_training(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "analyse":
        from pokebench.analysis.analyse import main as analyse

        sys.exit(analyse(sys.argv[2:]))
    play()


@hydra.main(version_base=None, config_path=str(paths.conf_dir()), config_name="config")
def play(cfg: DictConfig) -> None:
    chosen = HydraConfig.get().runtime.choices.get("run")
    if chosen is None:
        _fail("choose a run with `+run=NAME`. Available runs: " + ", ".join(available_runs())
              + ".\nExample: python -m pokebench +run=bots-smoke")
    name = cfg.name or chosen
    try:
        missing = run(cfg, name)
        if cfg.publish:
            from pokebench.results.publish import PublishError, publish

            try:
                out = publish([name], anchor=cfg.anchor)
                print(f"Published {out}/index.html")
            except PublishError as err:
                print(f"Not published: {err}", file=sys.stderr)
    except (ConfigError, ServerError, StoreError, RunLockedError) as err:
        _fail(str(err))
    except RunStopped as err:
        print(f"{err}\nTo resume: {resume_command(HydraConfig.get().overrides.task)}", file=sys.stderr)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        print(f"\nInterrupted. The games that finished are stored; start the same command again to play the rest "
              f"of run '{name}'.", file=sys.stderr)
        sys.exit(130)
    if missing:
        print(f"{missing} game(s) of run '{name}' still ended in harness errors after {cfg.retry_rounds} retry "
              f"round(s) (their causes are in the store's harness_errors); start the same command again to play "
              f"them:\n  {resume_command(HydraConfig.get().overrides.task)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
