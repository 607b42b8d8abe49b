#!/usr/bin/env node
/**
 * The random-battle set table (Foul Play's guesses, the search bot's samples), made by the installed server's own team generator.
 *
 *   node showdown-server/scripts/random_battle_sets.js <pokemon-showdown package dir> <format> <teams> <seed text> [teams]
 *
 * Prints the table as JSON: {"<species id>": {"<level>,<item>,<ability>,<moves...>[,<tera>]": count}};
 * with `teams` last, the teams themselves instead, in the generator's order: [[["<species id>", "<set key>"], ...], ...]
 * (benchmarks/set_inference.py --prior).
 * Team i is generated from the seed sodium,<first 32 hex digits of SHA-256("<seed text>:<i>")>.
 * Run by PokéBench (pokebench/engine/sets.py through pokebench/showdown/node.py).
 */
'use strict';

const crypto = require('crypto');
const path = require('path');

const [pkgDir, format, countText, seedText, mode] = process.argv.slice(2);
const {Teams} = require(path.join(path.resolve(pkgDir), 'dist', 'sim', 'teams'));
const {Dex} = require(path.join(path.resolve(pkgDir), 'dist', 'sim', 'dex'));
const count = parseInt(countText, 10);
const toID = s => String(s || '').toLowerCase().replace(/[^a-z0-9]+/g, '');
const table = {};
const teams = [];
for (let i = 0; i < count; i++) {
	const seed = 'sodium,' + crypto.createHash('sha256').update(`${seedText}:${i}`).digest('hex').slice(0, 32);
	const team = [];
	for (const set of Teams.generate(format, {seed})) {
		const moves = set.moves.map(toID).sort();  // the order is random; the set is the same
		const fields = [set.level || 100, toID(set.item) || 'none', toID(set.ability) || 'noability', ...moves];
		if (moves.length >= 4 && set.teraType) fields.push(toID(set.teraType));
		const dexSpecies = Dex.species.get(set.species);  // a cosmetic forme (Minior-Green) counts as its species
		const species = toID(dexSpecies.isCosmeticForme ? dexSpecies.baseSpecies : set.species);
		const key = fields.join(',');
		table[species] = table[species] || {};
		table[species][key] = (table[species][key] || 0) + 1;
		team.push([species, key]);
	}
	teams.push(team);
}
process.stdout.write(JSON.stringify(mode === 'teams' ? teams : table));
