'use strict';
/**
 * Plays battles in the pinned simulator with duplicate-rolls.js loaded and prints every draw each one made,
 * with the scope it came from (tests/test_duplicate_rolls.py).
 *
 *   node duplicate_rolls_draws.js <pokemon-showdown package dir> < battles.json
 *
 * stdin: [{"seed": "sodium,<hex>[,duplicate]", "teams": [seed1, seed2], "choices": [["move 1", "move 2"], ...]}]
 * (both sides' choices per turn; a side with nothing to choose skips its choice, a forced switch is 'default').
 * stdout: one JSON object per battle: {"duplicate": bool, "draws": [[scope, kind, value], ...], "log": [...]}.
 */

const path = require('path');

const pkg = path.resolve(process.argv[2]);
const {DuplicateRolls} = require(path.join(pkg, 'dist', 'sim', 'pokebench-duplicate-rolls'));
const {Battle} = require(path.join(pkg, 'dist', 'sim', 'battle'));
const {Teams} = require(path.join(pkg, 'dist', 'sim', 'teams'));

let draws = null;
for (const [method, kind] of [['random', (a, b) => `r${a}-${b}`], ['randomChance', (a, b) => `c${b}`]]) {
	const plain = DuplicateRolls.prototype[method];
	DuplicateRolls.prototype[method] = function (...args) {
		const value = plain.apply(this, args);
		if (draws) draws.push([this.move || `turn|${this.battle.turn}`, kind(...args), value]);
		return value;
	};
}

const battles = JSON.parse(require('fs').readFileSync(0, 'utf8'));
for (const spec of battles) {
	draws = [];
	const battle = new Battle({formatid: 'gen9randombattle', seed: spec.seed});
	spec.teams.forEach((seed, i) => battle.setPlayer(`p${i + 1}`, {
		name: `side${i + 1}`, team: Teams.pack(Teams.generate('gen9randombattle', {seed})),
	}));
	for (const [one, two] of spec.choices) {
		if (battle.ended) break;
		for (const [side, choice] of [['p1', one], ['p2', two]]) {
			const state = battle[side].requestState;  // a forced switch takes the first Pokémon that can come in
			if (state && !battle[side].isChoiceDone()) battle.choose(side, state === 'move' ? choice : 'default');
		}
	}
	console.log(JSON.stringify({duplicate: battle.prng instanceof DuplicateRolls, draws, log: battle.log}));
}
