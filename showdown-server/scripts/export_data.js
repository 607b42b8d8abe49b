#!/usr/bin/env node
/**
 * Export the display names and move data of the installed Pokémon Showdown server to one JSON file.
 *
 *   node showdown-server/scripts/export_data.js <pokemon-showdown package dir> <out.json>
 *
 * Run by PokéBench at set-up (pokebench/showdown/node.py). The prompt (pokebench/text/prompt.py)
 * names moves, items, abilities and species as Showdown does, and describes moves with their short
 * descriptions, from this file.
 */
'use strict';

const fs = require('fs');
const path = require('path');

const [pkgDir, out] = [path.resolve(process.argv[2]), path.resolve(process.argv[3])];
const d = path.join(pkgDir, 'dist', 'data');
const text = require(path.join(d, 'text', 'moves.js')).MovesText;
const moves = require(path.join(d, 'moves.js')).Moves;
const data = {moves: {}, items: {}, abilities: {}, species: {}};
for (const [id, m] of Object.entries(moves)) {
	const t = text[id] || {};
	data.moves[id] = {name: m.name, type: m.type, category: m.category, basePower: m.basePower,
		accuracy: m.accuracy, shortDesc: t.shortDesc || t.desc || ''};
}
for (const [id, x] of Object.entries(require(path.join(d, 'items.js')).Items)) data.items[id] = x.name;
for (const [id, x] of Object.entries(require(path.join(d, 'abilities.js')).Abilities)) data.abilities[id] = x.name;
for (const [id, x] of Object.entries(require(path.join(d, 'pokedex.js')).Pokedex)) data.species[id] = x.name;
fs.mkdirSync(path.dirname(out), {recursive: true});
const tmp = `${out}.${process.pid}.tmp`;
fs.writeFileSync(tmp, JSON.stringify(data));
fs.renameSync(tmp, out);
console.log(`wrote ${Object.keys(data.moves).length} moves, ${Object.keys(data.species).length} species to ${out}`);
