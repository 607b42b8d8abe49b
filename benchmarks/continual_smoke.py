"""`ch-smoke` end to end with the local OpenAI-compatible server as the model, and what the harness became.

    .venv/bin/python benchmarks/continual_smoke.py [--out /tmp/ch-smoke] [--pairs 3]

The server (pokebench.llm.fake_server) plays every role over real HTTP: the player (a legal move
picked by a hash of the message, so no model skill is involved), the advisors, and a refiner
whose four passes answer from what the refiner prompt gives them — the failure signatures that
the code mined, with their evidence — as a model would be asked to. It is a test of the
machinery (epochs, passes, versions, consultations, costs, published tables), not a measurement
of any model. Prints each version's edits (old -> new), the first message of a game of the last
epoch, and the published harness_gain.csv and learning_curve.csv.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy
from pokebench.players.continual.refiner import REFINER_MARKER
from pokebench.players.continual.versions import HarnessFiles

REPO = Path(__file__).resolve().parent.parent
PRICES = "{input:3,cached_input:0.3,output:15}"  # Sonnet-like list prices, to see the cost columns move


def _counts(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"^- (\w+): (\d+)$", text, re.M)}


def _evidence(text: str, kind: str) -> str | None:
    block = text.split(f"- {kind}:", 1)[1].split("\n- ", 1)[0] if f"- {kind}:" in text else ""
    match = re.search(r"^    [^:]+: (.+)$", block, re.M)
    return match.group(1) if match else None


def refiner_answer(request: ChatRequest) -> str:
    """The four passes, driven by the signatures in the prompt (the games and signatures: the system prompt;
    the harness now and the pass: the user message)."""
    system, user = request.messages[0]["content"], request.messages[-1]["content"]
    number = {"STRATEGY": 1, "MEMORY": 2, "SKILLS": 3, "ADVISORS": 4}[
        re.search(r"This is pass \d of \d: the ([A-Z]+)", user).group(1)]
    signatures = system.split("FAILURE SIGNATURES", 1)[1] if "FAILURE SIGNATURES" in system else ""  # off
    counts = _counts(signatures)
    harness = user.split("THE HARNESS NOW", 1)[1]
    edits: list[dict[str, object]] = []
    if number == 1:
        plan = ["Check type immunities before every attack."] if counts.get("move_into_immunity") else []
        if counts.get("tera_unused_in_loss"):
            plan.append("Terastallize when it turns a losing matchup or secures a KO; do not end a game with it unused.")
        if counts.get("loss_with_healthy_left"):
            plan.append("Switch to a healthy bench Pokémon before the active one is knocked out for nothing.")
        if plan:
            edits.append({"op": "rewrite", "text": " ".join(plan)})
    elif number == 2:
        if (line := _evidence(signatures, "move_into_immunity")) is not None:
            edits.append({"op": "add", "importance": 5, "text": f"An immunity wasted a turn: {line[:180]}"})
        if counts.get("tera_unused_in_loss"):
            edits.append({"op": "add", "importance": 3, "text": "Losses came without Terastallizing."})
        if "[m1]" in harness and not counts.get("move_into_immunity"):
            edits.append({"op": "demote", "id": "m1"})
        edits.append({"op": "update", "id": "m42", "text": "an entry that does not exist"})  # rejected
    elif number == 3:
        if counts.get("move_into_immunity"):
            edits.append({"op": "add", "name": "immunity check", "when": "before choosing an attacking move",
                          "steps": "List the target's types and abilities; drop moves it is immune to; "
                                   "then pick the strongest of the rest."})
    elif counts.get("move_into_immunity") and "type_checker" not in harness:
        edits.append({"op": "add", "name": "type_checker", "when": "unsure whether a move affects the target",
                      "instructions": "Given the battle, say which listed moves the opposing Pokémon is immune "
                                      "or resistant to, in one line each."})
    return json.dumps({"edits": edits})


def policy(request: ChatRequest) -> Reply | str:
    system = request.messages[0].get("content") or ""
    if REFINER_MARKER in system:
        return refiner_answer(request)
    if "an advisor to an AI player" in system:
        return "Avoid moves the target is immune to; the rest are fine."
    last = request.messages[-1]
    if request.tools and last["role"] == "user" and "YOUR HARNESS" in (last.get("content") or ""):
        return Reply(tool_calls=[{"name": "consult", "arguments": {"advisor": "type_checker",
                                                                   "question": "Which of my moves does it resist?"}}])
    return hashed_policy(request)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/ch-smoke"))
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with LocalOpenAI(policy=policy) as api:
        env = dict(os.environ, PYTHONPATH=str(REPO), POKEBENCH_BASE_URL=api.base_url)
        command = [sys.executable, "-m", "pokebench", "+run=ch-smoke", f"pairs={args.pairs}",
                   f"players.ch-local.model.prices={PRICES}", f"players.local.model.prices={PRICES}"]
        print("$", " ".join(command[1:]), f"(cwd {args.out})", flush=True)
        subprocess.run(command, cwd=args.out, env=env, check=True, stderr=subprocess.DEVNULL)
        first = next(r.messages[1]["content"] for r in reversed(api.requests)
                     if len(r.messages) > 1 and r.messages[1]["content"].startswith("YOUR HARNESS"))
    files = HarnessFiles(args.out / "runs" / "ch-smoke" / "players" / "ch-local")
    state = files.read_state()
    print("\nepoch -> version:", state.epochs)
    for snap in files.versions():
        cost = f"${snap.refiner_cost_usd:.4f}" if snap.refiner_cost_usd is not None else "-"
        print(f"\n== version {snap.version} (parent {snap.parent}, {snap.trigger.get('kind')}, "
              f"epochs {snap.trigger.get('epochs', [])}, refiner {len(snap.calls)} calls {cost})")
        if snap.trigger.get("signatures"):
            print("   signatures:", {k: v for k, v in snap.trigger["signatures"].items() if v})
        for name, result in snap.passes.items():
            for applied in result["applied"]:
                print(f"   {name}: {json.dumps(applied['old'], ensure_ascii=False)} -> "
                      f"{json.dumps(applied['new'], ensure_ascii=False)}")
            for rejected in result["rejected"]:
                print(f"   {name} REJECTED {json.dumps(rejected['edit'], ensure_ascii=False)}: {rejected['why']}")
    print("\n== the first message of a game of the last epoch\n")
    print(first)
    site = args.out / "data" / "site" / "ch-smoke"
    for table in ("harness_gain.csv", "learning_curve.csv"):
        print(f"== {table}\n{(site / table).read_text()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
