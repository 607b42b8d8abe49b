"""Starts the user's Foul Play on PokéBench's local server, offline, without changing its files.

Run with the Python that has Foul Play's requirements (FOULPLAY_PYTHON), not PokéBench's:
this file uses only the standard library and ``requests`` (a Foul Play requirement)::

    python launcher.py --checkout DIR --sets-dir DIR -- <Foul Play's own arguments>

Foul Play would need the internet twice; the launcher answers both locally, in this process,
then runs Foul Play's own entry point (``run.py``) unchanged:

* Login. Foul Play always asks play.pokemonshowdown.com for a login assertion (a guest
  login POSTs ``act=getassertion`` to ``action.php``), then sends ``/trn NAME,0,ASSERTION``.
  Our server accepts an empty assertion for an unregistered name (``noguestsecurity``), so
  ``requests.post`` to that address answers 200 with an empty body. Any other request
  fails at once with a message: nothing is fetched from the network behind the run's back.
* Random-battle sets. Foul Play reads ``<PKMN_SETS_CACHE_DIR>/<format>.json`` and downloads
  it when missing. We point ``fp.data.sets.randbats.PKMN_SETS_CACHE_DIR`` at the table that
  ``pokebench.players.foul_play.sets`` made from the pinned server's own generator.

Written against Foul Play's layout since its July 2026 refactor (the one that pins
poke-engine 0.0.48, as the method's commit 6c467c08 does). If that layout is missing the
launcher exits with code 78 and says so, instead of letting Foul Play download anything.

With ``POKEBENCH_PARENT_PID`` set, the whole process group exits when that process is
gone, so a harness killed with SIGKILL leaves no Foul Play behind. With
``POKEBENCH_HEARTBEAT_FD`` set, a thread writes one byte to that pipe every half second
(:func:`start_heartbeat`): the adapter sees a frozen process whatever it was doing.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import threading
import time
from typing import Any

LOGIN_URL = "https://play.pokemonshowdown.com/action.php"
EXIT_UNSUPPORTED = 78


def _refuse(method: str, url: str) -> None:
    import requests

    raise requests.ConnectionError(f"PokéBench's Foul Play launcher allows no network access ({method} {url}); "
                                   "Foul Play should need none for a random battle on the local server.")


def patch_network() -> None:
    """Answer Foul Play's guest login locally; refuse every other HTTP request."""
    import requests

    def post(url: str | bytes, *args: Any, **kwargs: Any) -> "requests.Response":
        if str(url).startswith(LOGIN_URL):
            response = requests.Response()
            response.status_code = 200
            response._content = b""  # the empty assertion: Foul Play sends `/trn NAME,0,`
            response.url = str(url)
            response.encoding = "utf-8"
            return response
        _refuse("POST", str(url))
        raise AssertionError  # unreachable

    def get(url: str | bytes, *args: Any, **kwargs: Any) -> "requests.Response":
        _refuse("GET", str(url))
        raise AssertionError  # unreachable

    requests.post = post
    requests.get = get


def point_sets_at(sets_dir: str) -> None:
    """Make Foul Play read its random-battle set table from `sets_dir`."""
    try:
        import fp.data.sets.randbats as randbats
    except ImportError as err:
        _unsupported(f"cannot import fp.data.sets.randbats ({err})")
    if not hasattr(randbats, "PKMN_SETS_CACHE_DIR"):
        _unsupported("fp.data.sets.randbats has no PKMN_SETS_CACHE_DIR")
    randbats.PKMN_SETS_CACHE_DIR = sets_dir


def _unsupported(why: str) -> None:
    print(f"PokéBench launcher: this Foul Play checkout has an unexpected layout: {why}. The launcher was "
          "written for Foul Play's layout with poke-engine 0.0.48 (the method pins commit 6c467c08).",
          file=sys.stderr, flush=True)
    sys.exit(EXIT_UNSUPPORTED)


def watch_parent(parent_pid: int) -> None:
    """Kill our process group (Foul Play and its search workers) once `parent_pid` is gone."""
    def loop() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os.killpg(os.getpgrp(), signal.SIGKILL)
            except PermissionError:
                pass

    threading.Thread(target=loop, name="pokebench-parent-watch", daemon=True).start()


def start_heartbeat(interval: float = 0.5) -> None:
    """Beat on the pipe named by POKEBENCH_HEARTBEAT_FD, from a thread of this process, until it exits.

    A thread keeps beating while Foul Play's event loop waits or its search runs; it stops when
    the process is stopped (SIGSTOP) or cannot run at all. Forked search workers do not beat
    (a fork copies no thread). The stand-in of the tests calls this too.
    """
    fd = int(os.environ.pop("POKEBENCH_HEARTBEAT_FD", "-1") or -1)
    if fd < 0:
        return

    def loop() -> None:
        try:
            while True:
                os.write(fd, b".")
                time.sleep(interval)
        except OSError:  # the harness closed its end
            pass

    threading.Thread(target=loop, name="pokebench-heartbeat", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", required=True, help="Foul Play's folder (with run.py and fp/)")
    parser.add_argument("--sets-dir", help="folder holding <format>.json, the random-battle set table")
    parser.add_argument("--check", action="store_true",
                        help="only check that the checkout has the layout the launcher needs (exit 0, else 78)")
    parser.add_argument("foul_play_args", nargs=argparse.REMAINDER, help="-- then Foul Play's own arguments")
    args = parser.parse_args(argv)
    fp_args = args.foul_play_args[1:] if args.foul_play_args[:1] == ["--"] else args.foul_play_args
    checkout = os.path.abspath(args.checkout)
    if args.check:
        sys.path.insert(0, checkout)
        point_sets_at(checkout)  # exits 78, saying why, where the layout is not the one it was written for
        return
    if args.sets_dir is None:
        parser.error("--sets-dir is needed to run Foul Play")
    parent = int(os.environ.get("POKEBENCH_PARENT_PID", "0") or 0)
    if parent > 0:
        watch_parent(parent)
    start_heartbeat()
    sys.path.insert(0, checkout)
    # Foul Play's search workers import fp too, whatever multiprocessing start method is used.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH", "")) if p)
    patch_network()
    point_sets_at(os.path.abspath(args.sets_dir))
    print(f"PokéBench launcher: Foul Play from {checkout}, random-battle sets from {args.sets_dir}, "
          "login assertion answered locally", flush=True)
    sys.argv = [os.path.join(checkout, "run.py"), *fp_args]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
