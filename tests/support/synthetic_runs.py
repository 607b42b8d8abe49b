"""Synthetic runs for the publishing and site tests: stores built without a Showdown server.

Real game specs from the schedule, short but realistic battle logs and input logs, LLM decisions (with
hostile text) for the players whose name starts with ``llm``, and a bot's own decision records (time and
action, no model, as the search bot logs them) for ``search``, which searches with the analysis's engine.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Sequence

from pokebench.play.schedule import build_schedule
from pokebench.player.decisions import DecisionRecord
from pokebench.results.store import RunStore

REPO = Path(__file__).resolve().parent.parent.parent
BOTS = ["random", "max-damage", "heuristic"]
STRENGTH = {"random": 0, "max-damage": 1, "heuristic": 2, "llm-a": 3, "llm-b": 3, "lonely-a": 0, "lonely-b": 1,
            "search": 2}
SECRET = "fake-api-key-DO-NOT-PUBLISH-4f9a8b7c6d5e"
ENV_SECRET = "ghp_envSECRETvalue_0123456789abcdef"
EVIL_REASON = "<script>alert('pwned')</script> Moonblast hits hard & fast"
EVIL_NICK = "<img src=x onerror=alert(1)>"


# ---- synthetic runs ----------------------------------------------------------------------------

def username(player: str, spec: Any) -> str:
    return f"{player.replace('-', '')[:7]}{spec.pair:05d}{'ab'[spec.game - 1]}{'12'[spec.p1 != player]}"


def battle_log(spec: Any, winner: str, turns: int) -> list[str]:
    """A short omniscient Showdown log: both leads trade hits, the loser's lead faints."""
    u1, u2 = username(spec.p1, spec), username(spec.p2, spec)
    lines = ["|j|☆" + u1, "|j|☆" + u2, "|", "|t:|1760000000", "|gametype|singles",
             f"|player|p1|{u1}|1|", f"|player|p2|{u2}|2|", "|teamsize|p1|6", "|teamsize|p2|6", "|gen|9",
             "|tier|[Gen 9] Random Battle", "|rule|Species Clause: Limit one of each Pokémon", "|",
             "|start", "|split|p1", f"|switch|p1a: {EVIL_NICK}|Carbink, L90|236/236",
             f"|switch|p1a: {EVIL_NICK}|Carbink, L90|100/100", "|split|p2",
             "|switch|p2a: Calyrex|Calyrex-Shadow, L64|200/200", "|switch|p2a: Calyrex|Calyrex-Shadow, L64|100/100",
             "|turn|1"]
    hp1, hp2 = 236, 200
    for t in range(1, turns + 1):
        hp2 = max(hp2 - 40, 1)
        hp1 = max(hp1 - 30, 1)
        lines += ["|", f"|t:|{1760000000 + t}", f"|move|p1a: {EVIL_NICK}|Moonblast|p2a: Calyrex",
                  "|split|p2", f"|-damage|p2a: Calyrex|{hp2}/200", f"|-damage|p2a: Calyrex|{hp2 * 100 // 200}/100",
                  f"|move|p2a: Calyrex|Astral Barrage|p1a: {EVIL_NICK}", "|split|p1",
                  f"|-damage|p1a: {EVIL_NICK}|{hp1}/236", f"|-damage|p1a: {EVIL_NICK}|{hp1 * 100 // 236}/100",
                  "|", "|upkeep"]
        if t < turns:
            lines.append(f"|turn|{t + 1}")
    if winner == "tie":
        lines.append("|tie")
    else:
        loser = "p2a: Calyrex" if winner == "p1" else f"p1a: {EVIL_NICK}"
        lines += [f"|faint|{loser}", f"|win|{u1 if winner == 'p1' else u2}"]
    return lines


def input_log(spec: Any, turns: int) -> list[str]:
    return ['>start {"formatid":"gen9randombattle","seed":"%s"}' % spec.battle_seed,
            '>player p1 {"name":"%s","seed":"%s"}' % (username(spec.p1, spec), spec.p1_team_seed),
            '>player p2 {"name":"%s","seed":"%s"}' % (username(spec.p2, spec), spec.p2_team_seed),
            *[f">{side} move 1" for _ in range(turns) for side in ("p1", "p2")]]


def llm_decisions(side: str, player: str, turns: int, reason: str | None = None) -> list[dict[str, Any]]:
    rows = []
    for t in range(1, turns + 1):
        base = {"side": side, "player": player, "turn": t, "model": "test/model-x", "served_model": "test/model-x-0613",
                "input_tokens": 1000 + t, "cached_input_tokens": 800,
                "output_tokens": 100, "reasoning_tokens": 60, "cost_usd": 0.01, "latency_s": 2.0,
                "reask": False, "refusal": False, "random_pick": False, "api_key": SECRET}
        if t == 1:  # a first answer that named no legal action, then the re-ask
            rows.append(base | {"action": None, "reason": "I am not sure", "output_tokens": 50, "cost_usd": 0.005,
                                "invalid": "no ACTION line: answer with ACTION: <number>"})
            rows.append(base | {"action": "move Moonblast", "reason": reason or EVIL_REASON, "reask": True,
                                "sent": f"YOUR LEGAL ACTIONS\n1. move Moonblast\n(turn {t}) <b>bold?</b>",
                                "raw": f"ACTION: 1\nREASON: {reason or EVIL_REASON}"})
        else:
            rows.append(base | {"action": "move Moonblast", "reason": f"Keep attacking on turn {t}."})
    return rows


def bot_decisions(side: str, player: str, turns: int) -> list[dict[str, Any]]:
    """A bot's own records (the search bot's): its time and action per decision, no model, no tokens."""
    return [{"side": side, "player": player, "turn": t, "decision": t - 1, "action": "move 1", "latency_s": 0.076,
             "engine_action": "MOONBLAST", "engine_visits": 900} for t in range(1, turns + 1)]


def game_summary(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """What an LLM player's record says of its game (as LLMPlayer.game_summary does): model facts, counters."""
    return {"served_models": ["test/model-x-0613"], "prompt_version": 3, "end_reason": None,
            "model_facts": {"provider": "test", "base_url_host": "127.0.0.1", "model": "test/model-x",
                            "reasoning": "high", "request": {"max_tokens": 2048},
                            "prices": {"input": 3.0, "cached_input": 0.3, "output": 15.0, "cache_write": 3.75,
                                       "read_on": "2026-10-01"},
                            "cache_breakpoints": False, "reasoning_in_completion": True},
            "answers": len(answers), "llm_decisions": len({a["turn"] for a in answers}),
            "reasks": sum(a["reask"] for a in answers), "invalid_answers": sum(bool(a.get("invalid")) for a in answers),
            "random_picks": 0, "api_retries": 0, "cost_usd": round(sum(a["cost_usd"] for a in answers), 10),
            "latency_s": sum(a["latency_s"] for a in answers),
            **{k: sum(a[k] for a in answers) for k in ("input_tokens", "cached_input_tokens", "output_tokens",
                                                         "reasoning_tokens")}}


def outcome(spec: Any) -> tuple[str, int]:
    """Stronger player wins, except game 1 of even pairs (an upset) and some ties in pair 2."""
    turns = 2 + (spec.pair + spec.game) % 3
    s1, s2 = STRENGTH[spec.p1], STRENGTH[spec.p2]
    if spec.pair == 2 and spec.game == 2 and (s1 + s2) % 2:
        return "tie", turns
    if s1 == s2 or (spec.pair % 2 == 0 and spec.game == 1):
        return ("p2" if s1 > s2 else "p1"), turns
    return ("p1" if s1 > s2 else "p2"), turns


def make_run(runs_dir: Path, name: str, players: Sequence[str] = (*BOTS, "llm-a"), pairs: int = 2,
             matchups: Sequence[tuple[str, str]] | None = None, errors: int = 0,
             games: bool = True, run: str | None = None, seed_text: str | None = None,
             store: str = "store.sqlite", only_pairs: Sequence[int] | None = None,
             reason: str | None = None) -> Path:
    """A store at runs_dir/name/<store> with synthetic finished games (and harness errors)."""
    matchups = list(matchups) if matchups is not None else list(itertools.combinations(players, 2))
    specs = build_schedule(run or name, seed_text or f"seed-{name}", pairs, matchups)
    if only_pairs is not None:
        specs = [s for s in specs if s.pair in only_pairs]
    path = runs_dir / name / store
    with RunStore(path) as store:
        store.bind_config({"seed_text": seed_text or f"seed-{name}", "players": {
            p: ({"_target_": "pokebench.players.llm.LLMPlayer", "model": {"model": "test/model-x", "api_key": SECRET,
                 "prices": {"input": 3.0, "output": 15.0, "read_on": "2026-10-01"}}} if p.startswith("llm")
                else {"_target_": f"bots.{p}"}) for p in players}}, name)
        for spec in specs if games else []:
            winner, turns = outcome(spec)
            record = {"game_id": spec.game_id, "format": "gen9randombattle", "showdown_version": "0.11.11-test",
                      "battle_seed": spec.battle_seed, "p1_team_seed": spec.p1_team_seed,
                      "p2_team_seed": spec.p2_team_seed, "p1": username(spec.p1, spec), "p2": username(spec.p2, spec),
                      "winner": winner, "turns": turns, "end_reason": "normal", "p1team": None, "p2team": None,
                      "input_log": input_log(spec, turns), "log": battle_log(spec, winner, turns),
                      "ended_at": "2026-10-06T12:00:00.000+00:00"}
            sides, decisions = {}, []
            for side, player in (("p1", spec.p1), ("p2", spec.p2)):
                info = {"player": player, "username": username(player, spec), "class": "Bot", "decisions": turns,
                        "refusals": 0, "choice_errors": []}
                if player.startswith("llm"):
                    answers = llm_decisions(side, player, turns, reason)
                    info |= {"class": "LLMPlayer", "model": "test/model-x", "reasoning_effort": "high",
                             "api_key": SECRET, "api_key_env": "POKEBENCH_TEST_API_KEY",
                             "client": {"base_url": "http://127.0.0.1:1/v1", "auth_token": SECRET},
                             **game_summary(answers)}
                    decisions += answers
                elif player == "search":
                    info |= {"class": "SearchBot", "searches_with_engine": True}
                    decisions += bot_decisions(side, player, turns)
                sides[side] = info
            store.save_game(spec, record, sides, "2026-10-06T11:59:00.000+00:00",
                            [DecisionRecord.from_dict(d) for d in decisions])
        for k in range(errors):
            store.save_harness_error(specs[k].game_id, "stall", f"no battle message for 300 s ({SECRET})")
    return path
