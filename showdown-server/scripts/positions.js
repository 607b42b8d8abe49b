#!/usr/bin/env node
/**
 * Every decision point of recorded games, with Showdown's own battle state (full information).
 *
 *   node showdown-server/scripts/positions.js <pokemon-showdown package dir> < games.jsonl
 *
 * Started by PokéBench (pokebench/engine/from_showdown.py, through pokebench/showdown/node.py), not by hand.
 *
 * stdin: one JSON object per line, {"id": ..., "input_log": [">start ...", ">player p1 ...", ">p1 move 1", ...]}.
 * stdout: one JSON object per game, in the same order:
 *   {"id": ..., "messages": {"p1": [...], "p2": [...]}, "decisions": [...]}
 * "messages" are the protocol lines the simulator sent each side (the split-resolved view a player gets,
 * its |request| lines included), in order. Each decision is a point where a side got a request it had to
 * answer (a move, or a forced switch):
 *   {"index": n, "side": "p1", "turn": t, "request": {...}, "messages": k, "choice": "move moonblast", "state": {...}}
 * where "messages" counts the side's lines it had received by then (its request is the last of them),
 * "choice" is the side's answer from the input log (empty if the game ended first), and "state" is the
 * battle at that moment: {"turn", "field": {...}, "sides": {"p1": {...}, "p2": {...}}} (see dumpSide).
 * "final" is the battle's state when it ended (null if the input log stops before the end).
 */
'use strict';

const path = require('path');
const readline = require('readline');

const {loadSim} = require('./load_sim');

const pkgDir = path.resolve(process.argv[2] || '');
const sim = loadSim('positions.js', pkgDir);
const {extractChannelMessages} = require(path.join(pkgDir, 'dist', 'sim', 'battle'));

/** The plain (JSON) fields of an effect state: numbers, strings, booleans; effects and Pokémon by id. */
function plain(state) {
	const out = {};
	for (const [key, value] of Object.entries(state || {})) {
		if (key === 'target' || key === 'effectOrder') continue;
		if (value === null || ['number', 'string', 'boolean'].includes(typeof value)) {
			out[key] = value;
		} else if (value && typeof value === 'object' && value.side && value.species) {
			out[key] = {side: value.side.id, position: value.side.pokemon.indexOf(value)};  // a Pokémon
		} else if (value && typeof value === 'object' && typeof value.id === 'string') {
			out[key] = value.id;  // an effect
		}
	}
	return out;
}

function dumpPokemon(pokemon) {
	return {
		species: pokemon.species.id,
		base_species: pokemon.baseSpecies.id,
		level: pokemon.level,
		types: pokemon.getTypes(),
		base_types: pokemon.species.types,
		hp: pokemon.hp,
		maxhp: pokemon.maxhp,
		stats: {...pokemon.storedStats},
		boosts: {...pokemon.boosts},
		moves: pokemon.moveSlots.map(slot => ({id: slot.id, pp: slot.pp, maxpp: slot.maxpp, disabled: !!slot.disabled})),
		base_moves: pokemon.baseMoveSlots.map(slot => slot.id),
		item: pokemon.item,
		ability: pokemon.ability,
		base_ability: pokemon.baseAbility,
		tera_type: pokemon.teraType,
		terastallized: pokemon.terastallized || '',
		can_terastallize: !!pokemon.canTerastallize,
		status: pokemon.status,
		status_state: plain(pokemon.statusState),
		volatiles: Object.fromEntries(Object.entries(pokemon.volatiles).map(([id, state]) => [id, plain(state)])),
		weightkg: pokemon.weighthg / 10,
		fainted: pokemon.fainted,
		active: pokemon.isActive,
		last_move: pokemon.lastMove ? pokemon.lastMove.id : '',
		transformed: pokemon.transformed,
	};
}

/** One side: its Pokémon in Showdown's current order (the request's order; `switch N` counts in it). */
function dumpSide(side) {
	const request = side.activeRequest;
	return {
		force_switch: !!(request && request.forceSwitch && request.forceSwitch[0]),
		trapped: !!(request && request.active && request.active[0] && request.active[0].trapped),
		// its move of the turn still to come: the other side's pivot (U-turn...) went first and chooses its switch-in
		// (a fainted Pokémon's move stays queued, and never comes)
		still_to_move: side.battle.queue.list.some(action => action.choice === 'move' && action.pokemon.side === side &&
			!action.pokemon.fainted),
		pokemon: side.pokemon.map(dumpPokemon),
		active: side.active.map(pokemon => (pokemon ? side.pokemon.indexOf(pokemon) : -1)),
		side_conditions: Object.fromEntries(Object.entries(side.sideConditions).map(([id, state]) => [id, plain(state)])),
		slot_conditions: side.slotConditions.map(conditions =>
			Object.fromEntries(Object.entries(conditions).map(([id, state]) => [id, plain(state)]))),
		tera_used: side.pokemon.some(pokemon => !!pokemon.terastallized),
	};
}

function dumpState(battle) {
	const field = battle.field;
	return {
		turn: battle.turn,
		field: {
			weather: field.weather, weather_state: plain(field.weatherState),
			terrain: field.terrain, terrain_state: plain(field.terrainState),
			pseudo_weather: Object.fromEntries(Object.entries(field.pseudoWeather).map(([id, state]) => [id, plain(state)])),
		},
		sides: Object.fromEntries(battle.sides.map(side => [side.id, dumpSide(side)])),
	};
}

/** Replay one input log; every decision point with the state, and each side's messages. */
function replay(game) {
	const stream = new sim.BattleStream({noCatch: true});
	const messages = {p1: [], p2: []};
	stream.pushMessage = (type, data) => {
		if (type === 'update') {
			const channels = extractChannelMessages(data, [1, 2]);
			messages.p1.push(...channels[1]);
			messages.p2.push(...channels[2]);
		} else if (type === 'sideupdate') {
			const [side, lines] = [data.slice(0, data.indexOf('\n')), data.slice(data.indexOf('\n') + 1)];
			if (messages[side]) messages[side].push(...lines.split('\n'));
		}
	};
	const decisions = [];
	const pending = {p1: null, p2: null};
	const seen = {p1: null, p2: null};
	let final = null;
	for (const line of game.input_log) {
		if (!line.startsWith('>')) continue;
		const [type, message] = [line.slice(1).split(' ', 1)[0], line.slice(line.indexOf(' ') + 1)];
		if (pending[type] && message !== 'undo') {
			pending[type].choice = message;
			pending[type] = null;
		}
		stream._writeLine(type, message);
		const battle = stream.battle;
		if (!battle) continue;
		battle.sendUpdates();
		if (battle.ended) {
			final = dumpState(battle);
			break;
		}
		for (const side of battle.sides) {
			const request = side && side.activeRequest;
			if (!request || request.wait || request.teamPreview || seen[side.id] === request) continue;
			seen[side.id] = request;
			const decision = {
				index: decisions.length, side: side.id, turn: battle.turn, request,
				messages: messages[side.id].length, choice: '', state: dumpState(battle),
			};
			decisions.push(decision);
			pending[side.id] = decision;
		}
	}
	return {id: game.id, messages, decisions, final};
}

async function main() {
	const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
	for await (const line of lines) {
		if (!line.trim()) continue;
		process.stdout.write(JSON.stringify(replay(JSON.parse(line))) + '\n');
	}
}

main().catch(err => {
	console.error(`positions.js: ${err.stack || err}`);
	process.exit(1);
});
