"""``pokebench export-training RUN [--teacher MODEL]``: a run's decisions as training data (JSONL).

For the paper's co-learning loop (an open model's rollouts through the harness, relabelled by a
frontier teacher, train the open model). One line per answer of an LLM player in a stored game::

    {"messages": [<system>, <user>, <assistant>, ..., <user>, <assistant: the answer>],
     "game_id", "player", "side", "outcome": "won" | "lost" | "tie", "answer_index", "decision",
     "action", "reason", "harness_version", "teacher": {...} (with --teacher)}

The messages are the conversation exactly as the model saw it up to that answer (the player's
working folder keeps each finished game's conversation: ``runs/RUN/players/P/conversations/``),
the last one the model's own answer. Only games in the run's stores are exported (a game voided
by a harness error never is). With ``--teacher MODEL`` (a ``conf/model/MODEL.yaml``) each decision
is sent to the teacher on the same prefix; its answer's action and reason, whether it names a
legal action and whether it agrees with the player's, are added as ``teacher``. Each labelled line
is written as soon as the teacher answers: a teacher that fails leaves every paid label written,
and the same command again asks only for the rest. Ctrl-C and SIGTERM stop it the same way; a request
the stop cut off once the teacher had it (so paid, its answer never read) is listed in
``FILE.cut-off.jsonl`` beside the export, its tokens and cost unknown, and is asked again on the next
start. Beside it, the preference and reward files (:mod:`pokebench.players.continual.training_formats`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Coroutine, Iterator, TypeVar

from omegaconf import OmegaConf

from pokebench import paths
from pokebench.invocation import command_prefix
from pokebench.llm.client import ChatClient, ModelConfig, cost_usd
from pokebench.llm.delivery import cut_off_fields, recorded_if_cut_off
from pokebench.llm.errors import ModelConfigError
from pokebench.players.continual import training_formats
from pokebench.results.store import RunStore, StoreError, run_stores
from pokebench.text import answers

T = TypeVar("T")


@dataclass(frozen=True)
class _Listed:
    """A legal action as a user message lists it: its text only (all that matching an answer needs)."""

    text: str


def _legal(message: str) -> list[_Listed]:
    """The numbered legal actions a user message lists."""
    if "YOUR LEGAL ACTIONS" not in message:
        return []
    block = message.rsplit("YOUR LEGAL ACTIONS", 1)[1].splitlines()[1:]
    texts = []
    for line in block:
        number, dot, text = line.partition(". ")
        if not (dot and number.isdigit()):
            break
        texts.append(text)
    return [_Listed(text) for text in texts]


def _outcomes(run_dir: Path) -> dict[str, dict[str, Any]]:
    """game id -> (winner, players by side) of every stored game of the run."""
    games: dict[str, dict[str, Any]] = {}
    for path in run_stores(run_dir):
        with RunStore.open_existing(path) as store:
            for row in store.games().to_dict("records"):
                games[str(row["game_id"])] = {"winner": row["winner"], "p1": row["p1"], "p2": row["p2"]}
    return games


def _decision_numbers(run_dir: Path) -> dict[tuple[str, str], list[int | None]]:
    """(game id, side) -> the decision number of each answer, in order (the store's answers: no tool calls,
    consultations or refinements)."""
    numbers: dict[tuple[str, str], list[int | None]] = {}
    for path in run_stores(run_dir):
        with RunStore.open_existing(path) as store:
            table = store.decisions()
        for row in table.to_dict("records") if not table.empty else []:
            kind = row.get("kind")  # NaN in the rows of answers once the table has tool calls or consultations
            if (isinstance(kind, str) and kind) or not isinstance(row.get("side"), str):
                continue
            decision = row.get("decision")
            numbers.setdefault((str(row["game_id"]), str(row["side"])), []).append(
                None if decision is None or decision != decision else int(decision))
    return numbers


def examples(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Every answer of every stored game's saved conversation, as one training example each."""
    games = _outcomes(run_dir)
    numbers = _decision_numbers(run_dir)
    for conv_path in sorted((run_dir / "players").glob("*/conversations/*.json")):
        player = conv_path.parent.parent.name
        data = json.loads(conv_path.read_text(encoding="utf-8"))
        game = games.get(data["game_id"])
        if game is None or game.get(data["side"]) != player:
            continue  # not stored (a voided game), or not this player's seat
        winner = game["winner"]
        outcome = "tie" if winner == "tie" else "won" if winner == data["side"] else "lost"
        version = _version(run_dir / "players" / player, data["game_id"])
        messages = data["messages"]
        replies = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and not m.get("tool_calls")]
        decisions = numbers.get((data["game_id"], data["side"]), [])
        if len(decisions) != len(replies):  # the store and the conversation disagree: no decision numbers
            decisions = [None] * len(replies)
        for i, decision in zip(replies, decisions):
            message = messages[i]
            parsed = answers.parse_answer(message.get("content"))
            user = next(m["content"] for m in reversed(messages[:i]) if m.get("role") == "user")
            actions = _legal(user)
            index, _problem = answers.match_action(parsed.action, actions)
            yield {"messages": messages[:i + 1], "game_id": data["game_id"], "player": player,
                   "side": data["side"], "outcome": outcome, "answer_index": i, "decision": decision,
                   "action": actions[index].text if index is not None else None, "reason": parsed.reason,
                   "harness_version": version}


def _version(work_dir: Path, game_id: str) -> int | None:
    path = work_dir / "trajectories" / f"{''.join(c if c.isalnum() or c in '._-' else '_' for c in game_id)}.json"
    return json.loads(path.read_text(encoding="utf-8")).get("version") if path.is_file() else None


def teacher_config(name: str) -> ModelConfig:
    path = paths.conf_dir() / "model" / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (paths.conf_dir() / "model").glob("*.yaml")))
        raise SystemExit(f"error: no model config {name!r} (conf/model/{name}.yaml); models: {known}")
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    assert isinstance(raw, dict)
    return ModelConfig.from_dict({str(k): v for k, v in raw.items()})


class TeacherFailed(RuntimeError):
    """The teacher failed (after its retries); the labels it gave before are written."""

    def __init__(self, labelled: int, left: int, cause: BaseException) -> None:
        super().__init__(f"the teacher failed after {labelled} new label(s), {left} left: {cause}")
        self.labelled, self.left = labelled, left


class ExportStopped(RuntimeError):
    """Ctrl-C or SIGTERM stopped the export; the labels paid for are written, the requests cut off listed."""

    def __init__(self, how: str, exit_code: int, labelled: int, cut_off: int) -> None:
        super().__init__(how)
        self.how, self.exit_code, self.labelled, self.cut_off = how, exit_code, labelled, cut_off


def cut_off_path(out: Path) -> Path:
    """Where the export `out` lists the teacher's requests that a stop cut off once the teacher had them."""
    return training_formats.beside_path(out, "cut-off")


def _cut_off_record(item: dict[str, Any], config: ModelConfig) -> dict[str, Any]:
    """A request cut off by a stop while the teacher had it: paid, its answer never read."""
    return {**{k: item[k] for k in ("game_id", "player", "answer_index")},
            "teacher": {"model": config.model, **cut_off_fields("the export stopped", "request"),
                        "input_tokens": None, "output_tokens": None, "cost_usd": None}}


def key(item: dict[str, Any]) -> tuple[str, str, int]:
    """An example's identity: (game, player, answer index)."""
    return str(item["game_id"]), str(item["player"]), int(item["answer_index"])


async def relabel(items: list[dict[str, Any]], config: ModelConfig, labelled: Callable[[dict[str, Any]], None],
                  concurrency: int = 4, cut_off: Callable[[dict[str, Any]], None] = lambda record: None) -> None:
    """Add the teacher's label to each example (the same prefix, without the player's answer) and hand it to
    `labelled` as soon as it is paid. After a failure no request is started (the ones in flight finish), and
    :class:`TeacherFailed` says how many were labelled. Cancelled, each request the teacher had is handed to
    `cut_off` (paid, unanswered)."""
    client = ChatClient(config)
    gate = asyncio.Semaphore(concurrency)
    failures: list[BaseException] = []
    done = 0

    async def one(item: dict[str, Any]) -> None:
        nonlocal done
        prefix = item["messages"][:-1]
        async with gate:
            if failures:
                return
            try:
                with recorded_if_cut_off(lambda: cut_off(_cut_off_record(item, config))):
                    completion = await client.complete(prefix)
            except Exception as err:  # an API error after its retries, or a broken answer: reported below
                failures.append(err)
                return
        parsed = answers.parse_answer(completion.text)
        user = next(m["content"] for m in reversed(prefix) if m.get("role") == "user")
        actions = _legal(user)
        index, problem = answers.match_action(parsed.action, actions)
        action = actions[index].text if index is not None else None
        reason = None if parsed.reason is None else client.redact(parsed.reason)
        item["teacher"] = {"model": config.model, "action": action, "reason": reason,
                           "legal": index is not None, "problem": None if index is not None else problem,
                           "agrees": action is not None and action == item["action"],
                           "raw": client.redact(completion.text or ""),
                           "input_tokens": completion.usage.input_tokens,
                           "output_tokens": completion.usage.output_tokens,
                           "cost_usd": cost_usd(completion.usage, config.prices)}
        labelled(item)
        done += 1

    await asyncio.gather(*(one(item) for item in items))
    if failures:
        raise TeacherFailed(done, len(items) - done, failures[0])


def _read_labelled(out: Path, model: str) -> list[dict[str, Any]]:
    """The examples a former export to `out` labelled (with this teacher); the file is rewritten without a
    line cut short by a kill, so that new lines append after whole ones."""
    if not out.is_file():
        return []
    kept, torn = [], False
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            torn = True
            continue
        teacher = item.get("teacher") if isinstance(item, dict) else None
        if not isinstance(teacher, dict):
            raise SystemExit(f"error: {out} holds examples without a teacher's label; choose another --out")
        if teacher.get("model") != model:
            raise SystemExit(f"error: {out} holds labels of the teacher {teacher.get('model')!r}, not {model!r}; "
                             "choose another --out")
        kept.append(item)
    if torn:
        training_formats.write_jsonl(out, kept)
    return kept


async def _cancelled_by_sigterm(coro: Coroutine[Any, Any, T]) -> T:
    """`coro`, cancelled by SIGTERM as ``asyncio.run`` cancels it on Ctrl-C (its requests in flight recorded)."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await coro
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def export(run_dir: Path, out: Path, teacher: str | None = None) -> int:
    """Write the JSONL file (and, beside it, the preference and reward files); the number of examples.
    Raises :class:`TeacherFailed` or :class:`ExportStopped` (the labels paid for are written)."""
    if not run_stores(run_dir):
        raise SystemExit(f"error: there is no run at {run_dir} (no store); play it first: {command_prefix()} +run=...")
    items = list(examples(run_dir))
    if not teacher:
        count = training_formats.write_jsonl(out, items)
        training_formats.write_beside(out, items, run_dir)
        return count
    config = teacher_config(teacher)
    config.api_key()  # a ModelConfigError (a key not set) before the file is opened
    labelled = _read_labelled(out, config.model)
    known = {key(item) for item in labelled}
    out.parent.mkdir(parents=True, exist_ok=True)
    cut_off: list[dict[str, Any]] = []
    with open(out, "a", encoding="utf-8") as handle:
        def append(item: dict[str, Any]) -> None:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
            handle.flush()
            labelled.append(item)

        def list_cut_off(record: dict[str, Any]) -> None:
            with open(cut_off_path(out), "a", encoding="utf-8") as ledger:
                ledger.write(json.dumps(record, ensure_ascii=False) + "\n")
            cut_off.append(record)

        todo = [item for item in items if key(item) not in known]
        try:
            asyncio.run(_cancelled_by_sigterm(relabel(todo, config, append, cut_off=list_cut_off)))
        except KeyboardInterrupt:
            raise ExportStopped("Interrupted", 130, len(labelled), len(cut_off)) from None
        except asyncio.CancelledError:
            raise ExportStopped("Stopped by SIGTERM", 143, len(labelled), len(cut_off)) from None
        finally:
            handle.flush()
            training_formats.write_beside(out, labelled, run_dir)
    return len(labelled)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pokebench export-training", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="the run's name (runs/RUN) or its folder")
    parser.add_argument("--teacher", help="a model config name (conf/model/NAME.yaml) that relabels each decision")
    parser.add_argument("--out", type=Path, help="the JSONL file (default: runs/RUN/training.jsonl)")
    args = parser.parse_args(argv)
    run_dir = Path(args.run) if Path(args.run).is_dir() else paths.RUNS_DIR / args.run
    out = args.out or run_dir / ("training-" + args.teacher + ".jsonl" if args.teacher else "training.jsonl")
    try:
        count = export(run_dir, out, args.teacher)
    except (StoreError, ModelConfigError) as err:  # a store it cannot use; the teacher's key not set
        print(f"error: {err}", file=sys.stderr)
        return 2
    except TeacherFailed as err:
        print(f"error: {str(err).rstrip('.')}. The {err.labelled} label(s) paid for are in {out}; start the same command again to "
              f"label the other {err.left} (the labelled ones are not asked again).", file=sys.stderr)
        return 1
    except ExportStopped as stop:
        listed = (f"; the {stop.cut_off} request(s) it cut off while the teacher had them (paid, tokens unknown) are "
                  f"listed in {cut_off_path(out)}" if stop.cut_off else "")
        print(f"\n{stop.how}. The {stop.labelled} label(s) paid for are in {out}{listed}; start the same command again "
              "to label the rest (the labelled ones are not asked again).", file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:  # before the teacher was asked anything
        print("\nInterrupted before any request to the teacher.", file=sys.stderr)
        return 130
    print(f"Wrote {count} examples to {out}")
    for path in [*training_formats.beside(out).values(), cut_off_path(out)]:
        if path.is_file():
            print(f"  and {sum(1 for _ in open(path, encoding='utf-8'))} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
