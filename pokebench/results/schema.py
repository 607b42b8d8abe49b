"""The published results contract: one row model per published table, and ``meta.json``.

A published folder (``data/site/NAME/``) is what the site, the notebook and anyone else build
on. Every table has one pydantic row model here; the column documentation in
``docs/results.md`` is generated from these models (:func:`columns_markdown`, and a test keeps
the two equal), and :func:`pokebench.results.reading.load_results` checks ``SCHEMA_VERSION``.

Change a model, and you change the contract: bump ``SCHEMA_VERSION`` and regenerate the docs
(``python -m pokebench.results.schema > /dev/null`` prints nothing; see :func:`main`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SCHEMA_VERSION", "SIDE_ONE_SCORE", "GameRow", "DecisionRow", "DecisionQualityRow", "QualitySpreadRow", "LuckRow", "LuckTurnRow", "RatingRow", "H2HRow", "PairRow", "PlayerRow", "Meta",
           "RunInfo", "BootstrapInfo", "TABLES", "columns", "columns_markdown"]

#: Version of the published folder's layout. 1: the first versioned contract. 2: decision quality
#: (decision_quality.csv, decision_quality_spread.csv, the per-player figures in ratings.csv).
#: 3: the luck of every turn (luck.csv, luck_turns.csv). 4: the luck of bots' own draws (luck_turns.csv's
#: action_luck). 5: what the luck adjustment did per matchup (pairs.csv's luck columns).
SCHEMA_VERSION = 5


#: Side one's score by games.csv's ``winner`` (a tie counts half a win): ratings, figures, luck and the
#: continual harness's tables all score a game by it.
SIDE_ONE_SCORE: dict[str, float] = {"p1": 1.0, "tie": 0.5, "p2": 0.0}


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GameRow(_Row):
    """``games.csv``: one row per distinct finished game (harness errors never enter the results)."""

    uid: str = Field(description="Stable id of the game: SHA-256 of its format, seeds, players, Showdown version and "
                                 "input log (16 hex digits). The same game in several runs has the same uid and is one row.")
    game_id: str = Field(description="The game's id in its run: `<matchup>.p<pair>.g<game>`.")
    run: str = Field(description="The run that played it (the first named, when several runs hold the same game).")
    copies: int = Field(description="How many of the published runs hold this same game; it counts once.")
    matchup: str = Field(description="`<A>-vs-<B>`: the two players of the mirror pair.")
    pair: int = Field(description="Mirror pair number k (1, 2, ...): the same seeds in every matchup.")
    game: int = Field(description="1: player A on side 1; 2: player B on side 1 (sides swapped, same seeds).")
    p1: str = Field(description="Player on side 1.")
    p2: str = Field(description="Player on side 2.")
    winner: Literal["p1", "p2", "tie"] = Field(description="`p1`, `p2` or `tie` (a tie counts half a win).")
    turns: int = Field(description="Turns played.")
    end_reason: str = Field(description="How the game ended (`normal`, `turn_limit`, `forfeit`, ...).")
    battle_seed: str = Field(description="Showdown PRNG seed of the battle's rolls; `,duplicate` at its end for a run "
                                         "with `rolls=duplicate` (docs/method.md).")
    p1_team_seed: str = Field(description="Seed of side 1's random team.")
    p2_team_seed: str = Field(description="Seed of side 2's random team.")
    showdown_version: str = Field(description="Version of the pinned Showdown server that played it.")
    started_at: str = Field(description="UTC start, ISO 8601 with milliseconds and `Z`.")
    ended_at: str = Field(description="UTC end, ISO 8601 with milliseconds and `Z`.")


class DecisionRow(_Row):
    """``decisions.csv``: one row per saved answer of an LLM player, or per decision of a bot that logs its own."""

    uid: str = Field(description="The game's uid (games.csv).")
    game_id: str = Field(description="The game's id in its run.")
    run: str = Field(description="The game's run.")
    side: str = Field(description="`p1` or `p2`.")
    player: str = Field(description="The player that answered.")
    idx: int = Field(description="Order of the answer within the side's game (0, 1, ...).")
    turn: int | None = Field(description="Battle turn of the answer.")
    decision: int | None = Field(description="Decision number within the game (a re-ask keeps its decision's number).")
    kind: str | None = Field(description="Empty for an answer; `refine` for a Continual Harness refinement call.")
    action: str | None = Field(description="The legal action played, as listed to the model; empty for an answer "
                                           "that named none.")
    reason: str | None = Field(description="The answer's REASON line.")
    raw: str | None = Field(description="The model's raw answer text (secrets redacted; of an answer longer than "
                                        "the model's `max_answer_chars`, its end; its length is `answer_chars` "
                                        "in `extra`).")
    invalid: str | None = Field(description="Why the answer named no legal action (the message sent back); empty if "
                                            "it named one.")
    reask: bool | None = Field(description="The answer replied to a re-ask (after an invalid answer or a refusal).")
    refusal: bool | None = Field(description="Showdown refused the action this answer chose.")
    refusal_error: str | None = Field(description="Showdown's error message for a refused action.")
    random_pick: bool | None = Field(description="After too many invalid answers the harness picked at random.")
    model: str | None = Field(description="The model asked (its config's id).")
    served_model: str | None = Field(description="The model id the API says answered.")
    input_tokens: int | None = Field(description="Input tokens (cached input included).")
    cached_input_tokens: int | None = Field(description="Input tokens read from the provider's prompt cache.")
    cache_write_tokens: int | None = Field(description="Input tokens written to the provider's prompt cache.")
    output_tokens: int | None = Field(description="Output tokens (reasoning included).")
    reasoning_tokens: int | None = Field(description="Reasoning tokens (already inside output_tokens).")
    cost_usd: float | None = Field(description="Cost at list prices, USD; empty when unknown.")
    latency_s: float | None = Field(description="Seconds from the request to the answer.")
    extra: str = Field(description="JSON object of every other field the player recorded (e.g. `sent`: the message "
                                   "the model was sent; retries); `{}` when none.")


class DecisionQualityRow(_Row):
    """``decision_quality.csv``: one row per decision of every player (bots and LLMs), scored by poke-engine's
    search (``pokebench analyse RUN``; docs/analysis.md). Values are the engine's expected score of side one
    (0 a loss, 1 a win). Unsuffixed columns are from the player's own information (the headline: what it
    could know); ``_full`` columns from full information (both teams exact). Empty when not searched."""

    uid: str = Field(description="The game's uid (games.csv).")
    game_id: str = Field(description="The game's id in its run.")
    run: str = Field(description="The game's run.")
    side: str = Field(description="`p1` or `p2`: the side that decided.")
    player: str = Field(description="The player that decided.")
    decision: int = Field(description="Decision number of the side in the game (1, 2, ...; as decisions.csv "
                                      "numbers an LLM's decisions).")
    turn: int = Field(description="Battle turn of the decision.")
    kind: str = Field(description="`move` (a turn's choice) or `switch` (a forced switch).")
    choice: str = Field(description="The choice Showdown recorded (`move moonblast terastallize`, `switch 3`).")
    options: int = Field(description="Legal actions offered (a Terastallized move counts as its own); a "
                                     "decision with 1 is not searched and not in the figures.")
    action: str | None = Field(description="The choice in the engine's words (`moonblast-tera`, `switch florges`).")
    engine_action: str | None = Field(description="The engine's choice (its most visited action), player's information.")
    best_value: float | None = Field(description="Value of the engine's choice.")
    value: float | None = Field(description="Value of the action chosen.")
    regret: float | None = Field(description="best_value − value (0 when the engine's choice was played; "
                                             "slightly negative is search noise).")
    match: bool | None = Field(description="The player chose the engine's action.")
    blunder: bool | None = Field(description="regret ≥ the blunder threshold (0.2).")
    engine_action_full: str | None = Field(description="The engine's choice from full information.")
    best_value_full: float | None = Field(description="Its value, full information.")
    value_full: float | None = Field(description="Value of the action chosen, full information.")
    regret_full: float | None = Field(description="Regret from full information.")
    match_full: bool | None = Field(description="The player chose the engine's action, full information.")
    blunder_full: bool | None = Field(description="Blunder from full information.")
    engine: str = Field(description="The engine and version that searched (`poke-engine 0.0.48`).")
    settings: str = Field(description="The search settings (iterations per position, sampled positions of the "
                                      "player's information, version of the analysis).")
    note: str | None = Field(description="Why a view has no figures (a position the engine could not take).")


class QualitySpreadRow(_Row):
    """``decision_quality_spread.csv``: decisions searched twice (``pokebench analyse RUN --spread N``): the
    engine's search has no seed, this is how much its scores move from one search to the next."""

    uid: str = Field(description="The game's uid.")
    side: str = Field(description="The side that decided.")
    decision: int = Field(description="Decision number of the side in the game.")
    view: str = Field(description="`player` (its own information) or `full`.")
    engine_action_1: str = Field(description="The engine's choice, first search.")
    engine_action_2: str = Field(description="The engine's choice, second search.")
    regret_1: float = Field(description="Regret of the action chosen, first search.")
    regret_2: float = Field(description="Regret, second search.")


class LuckRow(_Row):
    """``luck.csv``: one row per analysed game (``pokebench analyse RUN``; docs/analysis.md, "Luck"): side one's
    luck, the sum over the game's move turns of V(what happened) − the expected V over the turn's chance
    outcomes (V: side one's win probability), and the luck-adjusted score. Side two's luck is −luck_p1 and its
    adjusted score 1 − adjusted_p1. A game with no move turn that could be valued has a row with luck_p1 0 and
    `error` filled, never none. Empty when the runs were not analysed."""

    uid: str = Field(description="The game's uid (games.csv).")
    game_id: str = Field(description="The game's id in its run.")
    run: str = Field(description="The game's run.")
    p1: str = Field(description="The player on side one.")
    p2: str = Field(description="The player on side two.")
    score_p1: float = Field(description="Side one's score: 1 a win, 0.5 a tie, 0 a loss.")
    luck_p1: float = Field(description="Side one's luck, with V's log-odds shifted by skill_shift_p1 (at shift 0 the "
                                       "sum of its turns' luck in luck_turns.csv); side two's is the opposite.")
    adjusted_p1: float = Field(description="score_p1 − luck_p1: side one's luck-adjusted score (same expectation "
                                           "as the score, less variance; can fall outside 0 to 1).")
    start_p1: float | None = Field(description="V at the first turn − 0.5: the luck of the teams dealt; reported, "
                                               "not subtracted in adjusted_p1 (mirror pairs cancel it).")
    skill_shift_p1: float = Field(description="The shift of V's log-odds for side one (times each turn's share of HP "
                                              "left) the luck was measured with: from side one's player's score in "
                                              "the other mirror pairs of its matchup (docs/analysis.md).")
    turns_analysed: int = Field(description="Move turns whose luck was measured.")
    turns_failed: int = Field(description="Move turns the engine could not take (their luck counts as 0).")
    error: str | None = Field(description="Why the game has no luck (no move turn the engine could value); "
                                          "empty otherwise.")
    value_model: str = Field(description="The value function's key (hash of its coefficients) and the version of "
                                         "the luck analysis.")


class LuckTurnRow(_Row):
    """``luck_turns.csv``: one row per move turn of every analysed game (both sides' choices at the turn's start;
    forced switches have no chance of their own). Values are side one's win probability (V) from the
    full-information position."""

    uid: str = Field(description="The game's uid.")
    game_id: str = Field(description="The game's id in its run.")
    turn: int = Field(description="Battle turn.")
    v_before: float | None = Field(description="V before the turn.")
    v_after: float | None = Field(description="V of what happened: the engine outcome (and damage rolls) nearest "
                                              "the next real position.")
    expected: float | None = Field(description="Σ_k p_k V(outcome k): the turn's expected V over its chance "
                                               "outcomes and damage rolls.")
    luck_p1: float = Field(description="v_after − expected: side one's luck of the turn (0 when not valued).")
    roll_luck: float = Field(description="The part of luck_p1 from the damage rolls of the outcome that happened.")
    action_luck: float = Field(description="The part of luck_p1 from the known random draws of a bot that records "
                               "its policy (the Random bot, ε-Max-damage): Q of the choice drawn less the policy's "
                               "mean Q, the other side's choice held (AIVAT's action term; 0 for other players).")
    outcomes: int = Field(description="Chance outcomes the engine listed for the turn (before damage rolls).")
    event: str = Field(description="The chance event the luck is named by: `critical hit`, `miss`, `secondary "
                                   "effect`, `speed tie`, `damage roll`, `sleep/confusion`, `other`; empty when "
                                   "the turn had no luck (one outcome).")
    error: str | None = Field(description="Why the turn was not valued (a position or choice the engine cannot "
                                          "take); empty otherwise.")


class RatingRow(_Row):
    """``ratings.csv``: one row per player, in point order (best first)."""

    rank: int = Field(description="Order of the point estimates (1 = highest Elo).")
    rank_ub: int = Field(description="Rank that accounts for uncertainty: 1 + the number of players whose interval "
                                     "lies wholly above this player's (their ci_low > this ci_high).")
    player: str = Field(description="The player's name in the run config.")
    elo: float = Field(description="Bradley–Terry Elo (MAP fit of all games at once; the anchor is 1000).")
    ci_low: float | None = Field(description="Lower end of the reported interval: the wider of the bootstrap and "
                                             "the posterior interval (see meta.json `interval_rule`).")
    ci_high: float | None = Field(description="Upper end of the reported interval.")
    interval: str = Field(description="Which interval is reported: `bootstrap`, `posterior` (the bootstrap was "
                                      "narrower: too few pairs for it), or `anchor`.")
    boot_low: float | None = Field(description="Mirror-pair bootstrap percentile interval, lower end.")
    boot_high: float | None = Field(description="Mirror-pair bootstrap percentile interval, upper end.")
    post_low: float | None = Field(description="Normal (Laplace) approximation of the MAP fit's posterior, lower end.")
    post_high: float | None = Field(description="Posterior interval, upper end.")
    elo_adjusted: float | None = Field(description="Elo from luck-adjusted scores (luck.csv's adjusted_p1; a game "
                                                   "without measured luck keeps its result): the same fit, anchor "
                                                   "and bootstrap as `elo` on real-valued scores (docs/method.md); "
                                                   "empty when the games were not analysed for luck.")
    adjusted_lo: float | None = Field(description="Lower end of elo_adjusted's interval, chosen as ci_low's is "
                                                  "(its posterior from the adjusted scores' dispersion).")
    adjusted_hi: float | None = Field(description="Upper end of elo_adjusted's interval.")
    pairs: int = Field(description="Complete mirror pairs the player played.")
    games: int = Field(description="Finished games.")
    wins: int = Field(description="Wins.")
    ties: int = Field(description="Ties.")
    losses: int = Field(description="Losses.")
    win_rate: float = Field(description="(wins + ties / 2) / games.")
    answers: int | None = Field(description="Saved answers of a model (re-asks and refused choices included; a "
                                            "request that ended in an error, cut off or over the context, is none); "
                                            "empty for players that call no model (a bot's own decision records, "
                                            "the search bot's, are not answers).")
    cost_total: float | None = Field(description="Total spend of the player over its games, USD at list prices "
                                                 "(refinement calls included).")
    cost_per_game: float | None = Field(description="cost_total / games: the cost of one side of one game.")
    output_tokens_per_decision: float | None = Field(description="Output tokens per saved answer with usage.")
    seconds_per_decision: float | None = Field(description="Mean time per decision: LLM request to answer, or the "
                                                           "bot's own measured time (Foul Play).")
    reask_rate: float | None = Field(description="Share of saved answers that were re-asks.")
    random_pick_rate: float | None = Field(description="Share of decisions that ended in a random pick.")
    analysed_decisions: int | None = Field(description="Decisions with more than one legal action scored by the "
                                                       "engine (decision_quality.csv); empty when not analysed.")
    mean_regret: float | None = Field(description="Mean regret over them, from the player's own information.")
    mean_regret_low: float | None = Field(description="Bootstrap interval of mean_regret (whole games resampled), "
                                                      "lower end.")
    mean_regret_high: float | None = Field(description="Upper end.")
    engine_agreement: float | None = Field(description="Share of them where the player chose the engine's action.")
    blunders_per_100: float | None = Field(description="Blunders per 100 of them (regret ≥ 0.2).")
    mean_regret_full: float | None = Field(description="Mean regret from full information.")
    luck_mean: float | None = Field(description="Mean luck per game from the player's own side (luck.csv's "
                                                "luck_p1 on side one, its negative on side two), over its games "
                                                "with measured luck; empty when none.")
    luck_lo: float | None = Field(description="Mirror-pair bootstrap percentile interval of luck_mean, lower end "
                                              "(empty with fewer than two pairs with measured luck).")
    luck_hi: float | None = Field(description="Upper end.")


class H2HRow(_Row):
    """``h2h.csv``: one row per ordered (player, opponent) that met, from the player's side."""

    player: str = Field(description="The player.")
    opponent: str = Field(description="The opponent.")
    wins: int = Field(description="Wins of player.")
    ties: int = Field(description="Ties.")
    losses: int = Field(description="Losses of player.")
    games: int = Field(description="Games between them.")
    win_rate: float = Field(description="(wins + ties / 2) / games.")


class PairRow(_Row):
    """``pairs.csv``: per matchup, how its mirror pairs ended (the method's luck argument rests on these), and
    where the games were analysed for luck, what the luck adjustment did on them
    (:mod:`pokebench.results.luck_gain`). A is side one of the matchup's first game."""

    matchup: str = Field(description="`<A>-vs-<B>`.")
    player_a: str = Field(description="Player A.")
    player_b: str = Field(description="Player B.")
    pairs: int = Field(description="Complete mirror pairs (both games finished).")
    a_2_0: int = Field(description="Pairs A won 2–0.")
    split_1_1: int = Field(description="Pairs split 1–1 (each side won with the same team: the teams decided).")
    b_2_0: int = Field(description="Pairs B won 2–0 (0–2 for A).")
    with_ties: int = Field(description="Pairs with at least one tie.")
    incomplete: int = Field(description="Pairs with one game only (the other was a harness error or is not played).")
    luck_pairs: int | None = Field(description="Complete pairs whose two games both had their luck measured (the "
                                               "luck columns' pairs); empty when the games were not analysed.")
    var_raw: float | None = Field(description="Variance over those pairs of A's pair score (the mean of its two "
                                              "games' scores).")
    var_adjusted: float | None = Field(description="The same of A's luck-adjusted pair score (luck.csv).")
    variance_ratio: float | None = Field(description="var_raw / var_adjusted: how many times fewer games the "
                                                     "adjusted score needs for the same interval in this matchup "
                                                     "(below 1: the adjustment added noise here); empty with "
                                                     "fewer than two pairs, or where var_raw is 0 (one side won "
                                                     "every game: no variance to remove).")
    ratio_lo: float | None = Field(description="Lower end of variance_ratio's interval (percentile bootstrap over "
                                               "the pairs, the ratings' level and seed; empty under 3 pairs).")
    ratio_hi: float | None = Field(description="Upper end of variance_ratio's interval.")
    a_luck_mean: float | None = Field(description="A's mean luck per game over those pairs (B's is the opposite; "
                                                  "adjusted − raw is its negative): expectation 0 whatever the "
                                                  "players' skill.")
    a_luck_lo: float | None = Field(description="Lower end of a_luck_mean's interval (the same bootstrap).")
    a_luck_hi: float | None = Field(description="Upper end of a_luck_mean's interval.")


class PlayerRow(_Row):
    """``players.json``: a list of one object per player: its settings apart from its figures."""

    player: str = Field(description="The player's name.")
    kind: str = Field(description="`llm` when it reports decisions (answers), else `bot`.")
    settings: dict[str, Any] = Field(description="What the player reported identically in all its games: class, "
                                                 "model, provider, reasoning, prices, bot parameters (no secrets); "
                                                 "`searches_with_engine` true for a player that searches with "
                                                 "poke-engine, the decision analysis's engine (its decision "
                                                 "quality is not comparable: docs/analysis.md).")
    counters: dict[str, int | float] = Field(description="Summed per-game counters it reported (decisions, refusals, "
                                                   "re-asks, random picks, retries, ...).")
    tables: list[str] = Field(description="Extra per-player tables of the folder that have rows for it "
                                          "(`<name>.csv`, e.g. `learning_curve`).")


class RunInfo(_Row):
    name: str = Field(description="The run's name.")
    stores: list[str] = Field(description="Its stores that were merged (`store.sqlite`, `shard-I-of-N.sqlite`).")
    games: int = Field(description="Finished games in its stores (before merging identical games).")
    harness_errors: int = Field(description="Harness errors recorded (never results).")
    partial: bool = Field(description="True when the run looks unfinished (missing shards, missing games of its "
                                      "pairs, unresolved harness errors).")
    partial_reasons: list[str] = Field(description="Why it is partial.")


class BootstrapInfo(_Row):
    samples: int = Field(description="Bootstrap samples.")
    seed: int = Field(description="Seed of numpy's default_rng for the samples.")
    level: float = Field(description="Interval level, e.g. 0.95.")
    unit: str = Field(description="What is resampled: `mirror pair`.")


class Meta(_Row):
    """``meta.json``: what produced the folder and how its numbers were computed."""

    schema_version: int = Field(description="SCHEMA_VERSION of the folder.")
    pokebench_version: str = Field(description="Version of the pokebench package that published it.")
    showdown_versions: list[str] = Field(description="Showdown versions of its games.")
    prompt_versions: list[int] = Field(description="Prompt versions the LLM players reported.")
    runs: list[RunInfo] = Field(description="The merged runs.")
    anchor: str = Field(description="The player fixed at `anchor_elo`.")
    anchor_elo: float = Field(description="The anchor's Elo.")
    prior_sd: float = Field(description="Standard deviation of the N(0, sd²) prior on each rating, Elo points.")
    bootstrap: BootstrapInfo
    interval_rule: str = Field(description="How the reported interval is chosen.")
    rank_rule: str = Field(description="How rank_ub is computed.")
    games: int = Field(description="Distinct games published.")
    duplicates_merged: int = Field(description="Copies of identical games in several runs, counted once.")
    partial: bool = Field(description="True if any run is partial: every page says so.")
    tables: list[str] = Field(description="Files of the folder's tables.")
    played_from: str | None = Field(description="First game's start (UTC).")
    played_to: str | None = Field(description="Last game's end (UTC).")


#: Published table file -> its row model.
TABLES: dict[str, type[_Row]] = {
    "games.csv": GameRow, "decisions.csv": DecisionRow, "decision_quality.csv": DecisionQualityRow,
    "decision_quality_spread.csv": QualitySpreadRow, "luck.csv": LuckRow, "luck_turns.csv": LuckTurnRow,
    "ratings.csv": RatingRow, "h2h.csv": H2HRow,
    "pairs.csv": PairRow, "players.json": PlayerRow,
}


def columns(model: type[BaseModel]) -> list[str]:
    """The columns of a table, in order."""
    return list(model.model_fields)


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    text = str(annotation) if "|" in str(annotation) or "[" in str(annotation) else text
    text = text.replace("typing.", "").replace("NoneType", "empty").replace("<class '", "").replace("'>", "")
    return text.replace("|", "or").replace("None", "empty").replace("Literal", "one of ")


def columns_markdown() -> str:
    """The column documentation of every table (the generated part of ``docs/results.md``)."""
    out = []
    documented: list[tuple[str, type[BaseModel]]] = [*TABLES.items(), ("meta.json", Meta),
                                                      ("meta.json runs[]", RunInfo), ("meta.json bootstrap", BootstrapInfo)]
    for name, model in documented:
        out.append(f"### {name}\n\n{(model.__doc__ or '').strip()}\n\n| column | type | meaning |\n|---|---|---|")
        for field, info in model.model_fields.items():
            desc = (info.description or "").replace("|", "\\|")
            out.append(f"| `{field}` | {_type_name(info.annotation)} | {desc} |")
        out.append("")
    return "\n".join(out)
