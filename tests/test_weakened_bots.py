"""The deliberately weakened Max-damage bots of the calibration ladder, on the real server."""

from __future__ import annotations

import functools

from pokebench.games import GameSpec
from pokebench.players.max_damage import MaxDamageBot, NoisyMaxDamageBot
from pokebench.players.random_bot import RandomBot
from pokebench.seeds import pair_seeds
from support.games import play, results


def _specs(player: str, pairs: int) -> list[GameSpec]:
    return [GameSpec("ladder", f"{player}-vs-random", k, 1, player, "random",
                     *vars(pair_seeds("weakened-bots", k)).values()) for k in range(pairs)]


def test_noise_zero_plays_max_damage_exactly_and_noise_changes_the_games(showdown) -> None:
    factories = {"random": RandomBot, "plain": MaxDamageBot,
                 "eps0": functools.partial(NoisyMaxDamageBot, epsilon=0.0),
                 "eps5": functools.partial(NoisyMaxDamageBot, epsilon=0.5)}
    logs = {}
    for player in ("plain", "eps0", "eps5"):
        [game] = results(play(showdown, _specs(player, 1), factories, turn_limit=40))
        names = {game.players[side]["username"]: side for side in ("p1", "p2")}
        logs[player] = [functools.reduce(lambda text, name: text.replace(name, names[name]), names, line)
                        for line in game.record["log"] if not line.startswith(("|t:|", "|j|"))]
    assert logs["eps0"] == logs["plain"]
    assert logs["eps5"] != logs["plain"]
