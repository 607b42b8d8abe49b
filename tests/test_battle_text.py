"""The English battle log: Showdown's templates filled in as each side (or a spectator) saw the battle."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pokebench.showdown.node import export_generated
from pokebench.text import effects, events, templates
from pokebench.cli.replay import main
from pokebench.text.names import format_percentage
from pokebench.text.protocol import PROTOCOL_ONLY, SIMPLE
from pokebench.text.renderer import BattleText, render_battle
from pokebench.text.templates import PLACEHOLDER, load_templates

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

REPO_DIR = Path(__file__).resolve().parent.parent
SHOWDOWN_PKG = REPO_DIR / "showdown-server" / "node_modules" / "pokemon-showdown"
needs_showdown = pytest.mark.skipif(shutil.which("node") is None or not (SHOWDOWN_PKG / "dist").is_dir(),
                                    reason="node and the pinned Showdown server are needed")

# The two sample messages of the method page, as Showdown's omniscient log would hold them.
START = """|player|p1|gpt5mini0100001a1||
|player|p2|claude0100001a2||
|teamsize|p1|6
|teamsize|p2|6
|gen|9
|tier|[Gen 9] Random Battle
|
|t:|1796006285
|start
|split|p1
|switch|p1a: Carbink|Carbink, L90|236/236
|switch|p1a: Carbink|Carbink, L90|100/100
|split|p2
|switch|p2a: Calyrex|Calyrex-Shadow, L64|229/229
|switch|p2a: Calyrex|Calyrex-Shadow, L64|100/100
|-ability|p2a: Calyrex|As One
|-ability|p2a: Calyrex|Unnerve
|turn|1""".splitlines()
BEFORE_TURN_6 = """|split|p1
|switch|p1a: Granbull|Granbull, L88, F|302/302
|switch|p1a: Granbull|Granbull, L88, F|100/100
|split|p2
|switch|p2a: Rotom|Rotom-Heat, L83|250/250
|switch|p2a: Rotom|Rotom-Heat, L83|100/100
|turn|5""".splitlines()
TURN_6 = """|
|t:|1796006290
|move|p2a: Rotom|Overheat|p1a: Granbull
|split|p1
|-damage|p1a: Granbull|209/302
|-damage|p1a: Granbull|70/100
|-unboost|p2a: Rotom|spa|2
|move|p1a: Granbull|Earthquake|p2a: Rotom
|-immune|p2a: Rotom|[from] ability: Levitate
|split|p1
|-heal|p1a: Granbull|227/302|[from] item: Leftovers
|-heal|p1a: Granbull|76/100|[from] item: Leftovers
|
|upkeep
|turn|6""".splitlines()


def test_the_first_message_of_the_method_page() -> None:
    assert render_battle(START, "p1") == [
        "Battle started between Player 1 and Player 2!",
        "Go! Carbink!",
        "Player 2 sent out Calyrex (Calyrex-Shadow)!",
        "[The opposing Calyrex's As One]",
        "  The opposing Calyrex has two Abilities!",
        "[The opposing Calyrex's Unnerve]",
        "  Your team is too nervous to eat Berries!",
        "== Turn 1 ==",
    ]


def test_the_turn_6_message_of_the_method_page_fed_incrementally() -> None:
    text = BattleText("p1")
    text.feed(START + BEFORE_TURN_6)
    assert text.feed(TURN_6) == [
        "The opposing Rotom used Overheat!",
        "(Granbull lost 30.8% of its health!)",
        "The opposing Rotom's Sp. Atk fell harshly!",
        "Granbull used Earthquake!",
        "[The opposing Rotom's Levitate]",
        "  It doesn't affect the opposing Rotom...",
        "Granbull restored a little HP using its Leftovers!",
        "== Turn 6 ==",
    ]


def test_the_other_side_sees_its_own_pokemon_plainly_and_public_hp() -> None:
    lines = render_battle(START + BEFORE_TURN_6 + TURN_6, "p2")
    assert lines[:7] == [
        "Battle started between Player 1 and Player 2!",
        "Player 1 sent out Carbink!",
        "Go! Calyrex (Calyrex-Shadow)!",
        "[Calyrex's As One]",
        "  Calyrex has two Abilities!",
        "[Calyrex's Unnerve]",
        "  The opposing team is too nervous to eat Berries!",
    ]
    assert "Player 1 withdrew Carbink!" in lines and "Calyrex, come back!" in lines
    assert lines[-8:] == [
        "Rotom used Overheat!",
        "(The opposing Granbull lost 30% of its health!)",  # the public line: 100/100 -> 70/100
        "Rotom's Sp. Atk fell harshly!",
        "The opposing Granbull used Earthquake!",
        "[Rotom's Levitate]",
        "  It doesn't affect Rotom...",
        "The opposing Granbull restored a little HP using its Leftovers!",
        "== Turn 6 ==",
    ]


def test_a_spectator_reads_public_lines_worded_from_player_1s_side() -> None:
    lines = render_battle(START + BEFORE_TURN_6 + TURN_6, None)
    assert lines[1:3] == ["Go! Carbink!", "Player 2 sent out Calyrex (Calyrex-Shadow)!"]
    assert "(Granbull lost 30% of its health!)" in lines


def test_split_sections_pick_the_secret_line_only_for_their_own_side() -> None:
    log = START + ["|split|p2", "|-damage|p2a: Calyrex|200/229", "|-damage|p2a: Calyrex|88/100"]
    assert render_battle(log, "p2")[-1] == "(Calyrex lost 12.7% of its health!)"
    assert render_battle(log, "p1")[-1] == "(The opposing Calyrex lost 12% of its health!)"


def test_silent_lines_give_no_text_but_keep_the_hp() -> None:
    text = BattleText("p1")
    text.feed(START)
    assert text.feed(["|-damage|p1a: Carbink|118/236|[silent]"]) == []
    assert text.feed(["|-damage|p1a: Carbink|59/236"]) == ["(Carbink lost 25% of its health!)"]


@pytest.mark.parametrize("line, expected", [
    ("|-damage|p1a: Carbink|200/236|[from] item: Life Orb", ["Carbink lost some of its HP!"]),
    ("|-damage|p2a: Calyrex|80/100|[from] item: Rocky Helmet|[of] p1a: Carbink",
     ["The opposing Calyrex was hurt by the Rocky Helmet!"]),  # the item's own template
    ("|-damage|p2a: Calyrex|80/100|[from] ability: Rough Skin|[of] p1a: Carbink",
     ["[Carbink's Rough Skin]", "  The opposing Calyrex was hurt!"]),
    ("|-damage|p1a: Carbink|200/236|[from] Stealth Rock", ["Pointed stones dug into Carbink!"]),
    ("|-damage|p1a: Carbink|200/236|[from] psn", ["Carbink was hurt by poison!"]),
    ("|-heal|p1a: Carbink|236/236|[from] item: Sitrus Berry", ["Carbink restored HP using its Sitrus Berry!"]),
    ("|-enditem|p1a: Carbink|Chesto Berry|[eat]", ["(Carbink ate its Chesto Berry!)"]),
    ("|-enditem|p1a: Carbink|Leftovers|[from] move: Knock Off|[of] p2a: Calyrex",
     ["The opposing Calyrex knocked off Carbink's Leftovers!"]),
    ("|-item|p2a: Calyrex|Choice Scarf|[from] ability: Frisk|[of] p1a: Carbink",
     ["[Carbink's Frisk]", "  Carbink frisked the opposing Calyrex and found its Choice Scarf!"]),
    ("|-status|p1a: Carbink|tox|[from] item: Toxic Orb", ["Carbink was badly poisoned by the Toxic Orb!"]),
    ("|-boost|p1a: Carbink|spa|1|[from] item: Throat Spray", ["The Throat Spray raised Carbink's Sp. Atk!"]),
    ("|-boost|p1a: Carbink|def|3", ["Carbink's Defense rose drastically!"]),
    ("|-unboost|p2a: Calyrex|spe|0", ["The opposing Calyrex's Speed won't go any lower!"]),
    ("|-sidestart|p2: claude0100001a2|move: Stealth Rock",
     ["Pointed stones float in the air around the opposing team!"]),
    ("|-weather|RainDance|[from] ability: Drizzle|[of] p2a: Calyrex",
     ["[The opposing Calyrex's Drizzle]", "  It started to rain!"]),
    ("|-fieldstart|move: Electric Terrain", ["An electric current ran across the battlefield!"]),
    ("|-terastallize|p1a: Carbink|Fighting", ["Carbink has Terastallized into the Fighting-type!"]),
    ("|cant|p2a: Calyrex|par", ["The opposing Calyrex is paralyzed! It can't move!"]),
    ("|-fail|p1a: Carbink", ["But it failed!"]),
    ("|-activate|p1a: Carbink|move: Protect", ["Carbink protected itself!"]),
    ("|-start|p2a: Calyrex|confusion", ["The opposing Calyrex became confused!"]),
    ("|-end|p2a: Calyrex|confusion", ["The opposing Calyrex snapped out of its confusion!"]),
    ("|-crit|p2a: Calyrex", ["A critical hit!"]),
    ("|-supereffective|p2a: Calyrex", ["It's super effective!"]),
    ("|faint|p2a: Calyrex", ["The opposing Calyrex fainted!"]),
])
def test_event_lines(line: str, expected: list[str]) -> None:
    text = BattleText("p1")
    text.feed(START)
    assert text.feed([line]) == expected
    assert text.unfilled == []


def test_an_ability_pop_up_alone_indents_the_effect_that_follows() -> None:
    text = BattleText("p1")
    text.feed(START)
    lines = text.feed(["|-ability|p1a: Carbink|Intimidate|boost", "|-unboost|p2a: Calyrex|atk|1", "|turn|2"])
    assert lines == ["[Carbink's Intimidate]", "  The opposing Calyrex's Attack fell!", "== Turn 2 =="]


def test_user_names_never_reach_the_text() -> None:
    lines = render_battle(START + ["|-message|claude0100001a2 forfeited.", "|win|gpt5mini0100001a1"], "p2")
    assert lines[-2:] == ["Player 2 forfeited.", "Player 1 won the battle!"]
    assert render_battle(START + ["|tie"], "p1")[-1] == "Tie between Player 1 and Player 2!"


def test_protocol_lines_and_unknown_lines_do_not_crash() -> None:
    text = BattleText("p1")
    text.feed(START)
    junk = ['|request|{"active": []}', "|c|someone|hello", "|j|someone", "|", "", "plain text",
            ">battle-gen9randombattle-1", "|inactive|Battle timer is ON", "|rule|Sleep Clause Mod",
            "|-damage|", "|switch|", "|move|", "|-boost|p1a: Carbink", "|-activate|", "|-start|", "|-weather|"]
    text.feed(junk)
    assert text.feed(["|-xyzzy|p2a: Calyrex|Some Effect|[from] item: Leftovers"]) == \
        ["(xyzzy: the opposing Calyrex, Some Effect, Leftovers)"]
    assert text.feed(["|somethingnew|p1a: Carbink"]) == []


def test_each_command_has_one_handler() -> None:
    """The renderer merges the tables of events and effects: a command in both would lose a handler silently."""
    assert not events.HANDLERS.keys() & effects.HANDLERS.keys()
    assert set(SIMPLE) <= events.HANDLERS.keys()
    assert not (events.HANDLERS.keys() | effects.HANDLERS.keys()) & PROTOCOL_ONLY


def test_feed_takes_poke_env_split_lines_and_multi_line_strings() -> None:
    text = BattleText("p1")
    text.feed(["\n".join(START)])
    assert text.feed([["", "move", "p1a: Carbink", "Body Press", "p2a: Calyrex"]]) == ["Carbink used Body Press!"]


def test_percentages_are_written_as_the_client_writes_them() -> None:
    """Whole numbers bare, else one decimal rounded half up (JavaScript's toFixed): 71.96 is "72.0%", not "72%"."""
    assert [format_percentage(x) for x in (30.794, 50.0, 49.999, 71.96, 0.04, -12.5, 12.25)] == \
        ["30.8%", "50%", "50.0%", "72.0%", "0.0%", "12.5%", "12.3%"]
    assert format_percentage(29.6, 0) == "30%"


def test_bad_perspective_is_refused() -> None:
    with pytest.raises(ValueError):
        BattleText("p3")


@needs_showdown
def test_set_up_exports_the_templates_and_the_names_with_node(tmp_path: Path) -> None:
    written = export_generated(tmp_path)
    assert sorted(p.name for p in written) == ["battle-text.json", "showdown-data.json"]
    table = load_templates(tmp_path / "battle-text.json")
    assert table["leftovers"]["heal"] == "  [POKEMON] restored a little HP using its Leftovers!"
    assert table["default"]["turn"] == "== Turn [NUMBER] =="
    data = json.loads((tmp_path / "showdown-data.json").read_text())
    assert data["moves"]["earthquake"]["name"] == "Earthquake" and data["species"]["calyrexshadow"] == "Calyrex-Shadow"


@needs_showdown
def test_the_export_script_says_clearly_when_the_server_is_not_installed(tmp_path: Path) -> None:
    script = REPO_DIR / "showdown-server" / "scripts" / "export_text.js"
    done = subprocess.run(["node", str(script), str(tmp_path / "no-package"), str(tmp_path / "out.json")],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "not installed" in done.stderr and "make setup" in done.stderr
    assert not (tmp_path / "out.json").exists()


def test_missing_templates_say_make_setup_and_start_no_node(tmp_path: Path) -> None:
    with pytest.raises(templates.BattleTextError, match="make setup"):
        load_templates(tmp_path / "missing.json")
    assert not (tmp_path / "missing.json").exists()


# A real battle: two random players on the installed simulator (no server), a fixed seed.
BATTLE_JS = r"""
const pkg = process.argv[1];
const {BattleStream, getPlayerStreams} = require(pkg + '/dist/sim');
const {RandomPlayerAI} = require(pkg + '/dist/sim/tools/random-player-ai');
const battle = new BattleStream({keepAlive: true});
const streams = getPlayerStreams(battle);
const received = {p1: [], p2: []};
const ended = new Set();
class Recorder extends RandomPlayerAI {  // keeps what its player receives, message by message
  constructor(stream, side, seed) { super(stream, {seed}); this.side = side; }
  receive(chunk) {
    received[this.side].push(chunk);
    if (/^\|(win\||tie$)/m.test(chunk)) ended.add(this.side);
    if (ended.size === 2) {
      process.stdout.write(JSON.stringify({log: battle.battle.log, ...received}), () => process.exit(0));
    }
    return super.receive(chunk);
  }
}
new Recorder(streams.p1, 'p1', [11, 1, 2, 3]).start();
new Recorder(streams.p2, 'p2', [11, 4, 5, 6]).start();
streams.omniscient.write(`>start {"formatid":"gen9randombattle","seed":[11,11,7,7]}
>player p1 {"name":"Alice Secret","seed":[11,12,13,14]}
>player p2 {"name":"Bob Secret","seed":[21,22,23,24]}`);
"""


@pytest.fixture(scope="module")
def real_battle() -> dict:
    if shutil.which("node") is None or not (SHOWDOWN_PKG / "dist" / "sim").is_dir():
        pytest.skip("node and the pinned Showdown server are needed")
    done = subprocess.run(["node", "-e", BATTLE_JS, str(SHOWDOWN_PKG)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("perspective", ["p1", "p2", None])
def test_a_real_battle_renders_completely(real_battle: dict, perspective: str | None) -> None:
    log = real_battle["log"]
    assert any(line.startswith("|split|") for line in log)
    text = BattleText(perspective)
    lines = text.feed(log)
    turns = [line.split("|")[2] for line in log if line.startswith("|turn|")]
    assert [line for line in lines if line.startswith("==")] == [f"== Turn {n} ==" for n in turns]
    assert lines[0] == "Battle started between Player 1 and Player 2!"
    winner = next((line.split("|")[2] for line in log if line.startswith("|win|")), None)
    assert lines[-1] == (f"Player {'1' if winner == 'Alice Secret' else '2'} won the battle!" if winner
                         else "Tie between Player 1 and Player 2!")
    assert text.unfilled == []
    for line in lines:
        assert not PLACEHOLDER.search(line) and not re.search(r"undefined|\?\?\?|Secret|\*\*|\x00", line), line
        assert line == line.strip() or (line.startswith("  ") and line[2] != " "), line
    if perspective:  # own HP exact, the other side's in whole percent
        assert any(re.match(r"\((?!The opposing)\S.* lost \d+\.\d%", line) for line in lines)
        assert not any(re.match(r"\(The opposing .* lost \d+\.\d%", line) for line in lines)


@pytest.mark.parametrize("perspective", ["p1", "p2", None])
def test_an_omniscient_log_without_split_sections_shows_the_public_hp(real_battle: dict,
                                                                      perspective: str | None) -> None:
    """The harness's records keep only the secret line of each split: the other side's HP is made public again."""
    log, secret_only = iter(real_battle["log"]), []
    for line in log:
        secret_only.append(next(log) if line.startswith("|split|") else line)
        if line.startswith("|split|"):
            next(log)
    assert render_battle(secret_only, perspective) == render_battle(real_battle["log"], perspective)


@pytest.mark.parametrize("side", ["p1", "p2"])
def test_a_players_own_stream_fed_message_by_message_gives_the_same_text(real_battle: dict, side: str) -> None:
    text = BattleText(side)
    fed = [line for message in real_battle[side] for line in text.feed([message])]
    assert fed == render_battle(real_battle["log"], side)


def test_the_cli_prints_a_recorded_game_and_explains_bad_names(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from pokebench.games import GameSpec
    from pokebench.results.store import RunStore

    spec = GameSpec("demo", "random-vs-max-damage", 1, 1, "random", "max-damage", "s", "a", "b")
    record = {"winner": "p2", "turns": 6, "end_reason": "normal", "showdown_version": "0.11.11",
              "log": START + BEFORE_TURN_6 + TURN_6}
    with RunStore(tmp_path / "runs" / "demo" / "store.sqlite") as store:
        store.save_game(spec, record, {}, "2026-01-01T00:00:00Z")
    runs = ["--runs-dir", str(tmp_path / "runs")]
    assert main(["demo", spec.game_id, "--side", "p2", *runs]) == 0
    assert "Go! Calyrex (Calyrex-Shadow)!" in capsys.readouterr().out.splitlines()
    assert main(["nope", spec.game_id, *runs]) == 2
    assert "Runs in" in capsys.readouterr().err
    assert main(["demo", "nope", *runs]) == 2
    assert spec.game_id in capsys.readouterr().err


def test_the_cli_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`pokebench-replay ... | head` closes the pipe early: no BrokenPipeError traceback, exit 0."""
    import os
    import subprocess
    import sys

    from pokebench.games import GameSpec
    from pokebench.results.store import RunStore

    spec = GameSpec("demo", "random-vs-max-damage", 1, 1, "random", "max-damage", "s", "a", "b")
    record = {"winner": "p2", "turns": 6, "end_reason": "normal", "showdown_version": "0.11.11",
              "log": START + BEFORE_TURN_6 + TURN_6}
    with RunStore(tmp_path / "runs" / "demo" / "store.sqlite") as store:
        store.save_game(spec, record, {}, "2026-01-01T00:00:00Z")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        done = subprocess.run([sys.executable, "-m", "pokebench.cli.replay", "demo", spec.game_id,
                               "--runs-dir", str(tmp_path / "runs")],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
