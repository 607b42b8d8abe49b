"""`python -m pokebench +run=NAME [key=value ...]`: play a run, then publish it.

`python -m pokebench [+run=NAME] --help` lists the runs, and every setting with its value and what it does.
`python -m pokebench export-training RUN [--teacher MODEL]`: a run's decisions as chat-format JSONL.
`python -m pokebench analyse RUN [RUN ...]`: score every stored decision with poke-engine (pokebench.analysis).
"""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pokebench import paths
from pokebench.invocation import config_dir, config_flags, module_command

log = logging.getLogger("pokebench")


#: Exit codes of a run (README, "When a run stops"): 1 harness errors remain, 2 a config or folder error,
#: 3 an error no retry fixes, 4 a budget, 5 the store cannot be written, 130 Ctrl-C, 143 SIGTERM.
EXIT_STORE_WRITE = 5
_terminated = False
#: Hydra has composed the config and called :func:`play` (an error before is the command line's).
_playing = False


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM stops the run as Ctrl-C does: the games in flight are voided and their answers written, the
    server stopped, the resume command printed (whatever handles SIGINT now, asyncio's or Python's)."""
    from pokebench.play.stopping import interrupt

    global _terminated
    _terminated = True
    on_sigint = signal.getsignal(signal.SIGINT)
    if callable(on_sigint) and on_sigint is not signal.default_int_handler:
        on_sigint(signal.SIGINT, frame)
    elif not interrupt():  # SIGINT ignored (a script's background job): asyncio put no handler there
        raise KeyboardInterrupt


def _fail(message: str) -> NoReturn:
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
    if "--help" in sys.argv[1:] or "-h" in sys.argv[1:]:  # every setting with this run's value and what it does
        from hydra.errors import HydraException

        from pokebench.cli.settings_help import settings_help

        flags = config_flags(sys.argv[1:])
        try:
            overrides = [a for a in sys.argv[1:] if not a.startswith("-") and a not in flags]
            print(settings_help(overrides, config_dir(sys.argv[1:])))
        except HydraException as err:  # an unknown run or a malformed key=value
            _fail(f"{err}".splitlines()[0])
        sys.exit(0)
    try:
        play()
    except SystemExit as stop:
        if stop.code == 1 and not _playing:  # Hydra refused the command line (an unknown run, a key not in the
            sys.exit(2)  # config) and printed why; its exit code 1 would say that harness errors remain
        raise


@hydra.main(version_base=None, config_path=str(paths.conf_dir()), config_name="config")
def play(cfg: DictConfig) -> None:
    global _playing
    _playing = True
    # Imported here, not at the top: `--help` (answered by Hydra before this runs) needs none of them.
    from pokebench.play.lock import RunLockedError
    from pokebench.play import trajectories
    from pokebench.play.plan import ConfigError, available_runs, check_run_name, plan_run
    from pokebench.play.runner import RunStopped, run
    from pokebench.play.summary import resume_command
    from pokebench.results.store import StoreError, StoreWriteError
    from pokebench.showdown.server import ServerError

    chosen = HydraConfig.get().runtime.choices.get("run")
    if chosen is None:
        _fail("choose a run with `+run=NAME`. Available runs: " + ", ".join(available_runs())
              + f".\nExample: {module_command('+run=bots-smoke')}")
    signal.signal(signal.SIGTERM, _on_sigterm)
    resume = f"To resume: {resume_command(HydraConfig.get().overrides.task)}"
    name = chosen
    try:
        name = check_run_name(chosen if cfg.name in (None, "") else cfg.name)
        estimate = trajectories.spend_before(cfg, name, plan_run)
        if estimate:
            print(estimate, flush=True)
        if trajectories.count(cfg):  # K learning runs and their evaluations after learning
            missing, sites = trajectories.run_trajectories(cfg, name, run, plan_run)
        else:
            missing, sites = run(cfg, name), [trajectories.Published([name], name)]
        if cfg.publish:
            from pokebench.paths import SITES_DIR
            from pokebench.publish import publish
            from pokebench.results.loading import PublishError

            for site in sites:
                try:
                    out = publish(site.runs, out_dir=SITES_DIR / site.site, anchor=cfg.anchor)
                    print(f"Published {out}/index.html")
                except PublishError as err:
                    print(f"Not published: {err}", file=sys.stderr)
    except StoreWriteError as err:
        print(f"error: {err}\n{resume}", file=sys.stderr)
        sys.exit(EXIT_STORE_WRITE)
    except (ConfigError, ServerError, StoreError, RunLockedError) as err:
        _fail(str(err))
    except RunStopped as err:
        if err.resume:
            resume = f"To resume: {resume_command(HydraConfig.get().overrides.task, err.resume)}"
        print(f"{err}\n{resume}", file=sys.stderr)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        how = "Stopped by SIGTERM" if _terminated else "Interrupted"
        print(f"\n{how}. The games that finished are stored, and the answers of the games in flight are recorded "
              f"as voided (their spend counts); start the same command again to play the rest of run '{name}'.\n"
              f"{resume}", file=sys.stderr)
        sys.exit(143 if _terminated else 130)
    if missing:
        print(f"{missing} game(s) of run '{name}' still ended in harness errors after {cfg.retry_rounds} retry "
              f"round(s) (their causes are in the store's harness_errors); start the same command again to play "
              f"them:\n  {resume_command(HydraConfig.get().overrides.task)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
