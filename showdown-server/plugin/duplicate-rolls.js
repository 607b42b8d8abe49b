'use strict';
/**
 * Duplicate rolls: the two games of a mirror pair get the same roll for the same event.
 *
 * Installed beside Showdown's simulator (dist/sim/pokebench-duplicate-rolls.js) and loaded before it in
 * every node process PokéBench starts (the server's `--require`, which its simulator processes inherit,
 * and scripts/load_sim.js), this changes nothing unless a battle's seed ends in `,duplicate`
 * (`sodium,<hex>,duplicate`, which Showdown's own PRNG reads as `sodium,<hex>`). Such a battle draws its
 * random numbers not from one stream in the order they are asked for, but from many streams, each keyed
 * by what the draw is for:
 *
 *  - while a move runs (full paralysis and confusion, accuracy, critical hit, damage roll, secondary
 *    effects, the target's contact abilities, a multi-hit count, a sleep's length...): the scope is
 *    (side, the user's species, how many moves that Pokémon has begun so far);
 *  - anything else (speed ties, end-of-turn effects, switch-ins): the scope is the turn;
 *
 * and within a scope, by the kind of draw: `c24` a chance out of 24 (a critical hit), `c100` a chance out
 * of 100 (an accuracy check), `r16-undefined` a number below 16 (a damage roll), `h2` a shuffle of two
 * (a speed tie)... So a move without an accuracy check does not shift its damage roll onto another draw.
 *
 * Each stream is Showdown's own PRNG (ChaCha20), seeded with SHA-256 of the battle seed, the scope and
 * the kind, and no stream is started twice in a game, so each game alone is an ordinary random battle.
 * But the teams stay with their side in both games of a pair: when side 1's Garchomp makes its second
 * move in either game, its accuracy check, critical hit and damage roll are the same, whoever controls
 * it, where Showdown's one stream parts the two games' rolls as soon as the players choose differently.
 * The luck of such an event then helps each player once (duplicate bridge's trick), and the pair's score
 * keeps less of it.
 *
 * The flag is in the seed, so the input log (`>start {"seed": ...}`) replays the game exactly in any
 * process that loaded this file.
 */

const crypto = require('crypto');
const {Battle} = require('./battle');
const {BattleActions} = require('./battle-actions');
const {PRNG} = require('./prng');

const FLAG = ',duplicate';

class DuplicateRolls {
	constructor(battle, seed) {
		this.battle = battle;
		this.startingSeed = seed;
		this.base = seed.slice(0, -FLAG.length);
		this.uses = new Map();
		/** The key of the move use under way (null: none), and its streams by kind of draw. */
		this.move = null;
		this.streams = new Map();
		this.turnNumber = -1;
	}

	/** A move's next use by `pokemon` begins: its draws get streams of their own. Returns the outer use. */
	beginMove(pokemon) {
		const key = `${pokemon.side.id}|${pokemon.set.species}`;
		const count = (this.uses.get(key) || 0) + 1;
		this.uses.set(key, count);
		const outer = [this.move, this.streams];
		this.move = `move|${key}|${count}`;
		this.streams = new Map();
		return outer;
	}

	endMove([move, streams]) {
		this.move = move;
		this.streams = streams;
	}

	/** The stream of one kind of draw (e.g. `c24`: a chance out of 24, a critical hit) in the current scope. */
	stream(kind) {
		if (!this.move && this.turnNumber !== this.battle.turn) {
			this.turnNumber = this.battle.turn;
			this.streams = new Map();
		}
		let stream = this.streams.get(kind);
		if (!stream) {
			const scope = this.move || `turn|${this.battle.turn}`;
			const hex = crypto.createHash('sha256').update(`${this.base}|${scope}|${kind}`).digest('hex');
			stream = new PRNG(`sodium,${hex}`);
			this.streams.set(kind, stream);
		}
		return stream;
	}

	random(from, to) { return this.stream(`r${from}-${to}`).random(from, to); }
	randomChance(numerator, denominator) { return this.stream(`c${denominator}`).randomChance(numerator, denominator); }
	sample(items) { return this.stream(`s${items.length}`).sample(items); }
	shuffle(items, start = 0, end = items.length) { return this.stream(`h${end - start}`).shuffle(items, start, end); }
	getSeed() { return this.startingSeed; }
}

// Battle's constructor (and resetRNG) assign `this.prng`: a battle whose seed carries the flag
// gets the keyed streams instead of the one stream.
Object.defineProperty(Battle.prototype, 'prng', {
	configurable: true,
	get() { return this._prng; },
	set(prng) {
		const seed = prng && prng.startingSeed;
		this._prng = typeof seed === 'string' && seed.endsWith(FLAG) && !(prng instanceof DuplicateRolls) ?
			new DuplicateRolls(this, seed) : prng;
	},
});

const runMove = BattleActions.prototype.runMove;
BattleActions.prototype.runMove = function (moveOrMoveName, pokemon, ...rest) {
	const rolls = this.battle.prng;
	if (!(rolls instanceof DuplicateRolls)) return runMove.call(this, moveOrMoveName, pokemon, ...rest);
	const outer = rolls.beginMove(pokemon);
	try {
		return runMove.call(this, moveOrMoveName, pokemon, ...rest);
	} finally {
		rolls.endMove(outer);
	}
};

Battle.duplicateRolls = true;  // what the server's plugin checks before it accepts a duplicate seed

module.exports = {DuplicateRolls, FLAG};
