#!/usr/bin/env node
/**
 * Export the battle-log text templates of the installed Pokémon Showdown server to one JSON file.
 *
 *   node showdown-server/scripts/export_text.js <pokemon-showdown package dir> <out.json>
 *
 * Run by PokéBench at set-up (pokebench/showdown/node.py), not by hand.
 *
 * The templates ("[POKEMON] used [MOVE]!", "  [POKEMON]'s [STAT] fell harshly!", ...) live in the
 * server package, `dist/data/text/{default,moves,abilities,items}.js`. PokéBench renders battle
 * logs with them (pokebench/text/battle_text.py). The output is generated data: it is written at
 * set-up (showdown-server/generated/battle-text.json, gitignored) and never committed.
 *
 * Only the strings of the current generation are kept: the per-generation overrides (`gen4: {...}`)
 * and the long move/ability/item descriptions (`desc`, `shortDesc`) are left out.
 */
'use strict';

const fs = require('fs');
const path = require('path');

const SECTIONS = {default: 'DefaultText', moves: 'MovesText', abilities: 'AbilitiesText', items: 'ItemsText'};
const SKIPPED_KEYS = new Set(['desc', 'shortDesc']);

function main() {
	const [pkgDir, out] = [path.resolve(process.argv[2]), path.resolve(process.argv[3])];
	const textDir = path.join(pkgDir, 'dist', 'data', 'text');
	if (!fs.existsSync(textDir)) {
		console.error(
			`export_text.js: the Pokémon Showdown server is not installed: ${textDir} is missing.\n` +
			`Install it first: \`make setup\` (or \`pokebench-server install\`).`
		);
		process.exit(1);
	}
	const version = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
	const sections = {};
	let strings = 0;
	for (const [section, exportName] of Object.entries(SECTIONS)) {
		const table = require(path.join(textDir, `${section}.js`))[exportName];
		if (!table) throw new Error(`${section}.js does not export ${exportName}`);
		sections[section] = {};
		for (const [id, entry] of Object.entries(table)) {
			const kept = {};
			for (const [key, value] of Object.entries(entry)) {
				if (typeof value !== 'string' || SKIPPED_KEYS.has(key)) continue;
				kept[key] = value;
				strings++;
			}
			if (Object.keys(kept).length) sections[section][id] = kept;
		}
	}
	const data = {source: `pokemon-showdown ${version} dist/data/text`, sections};
	fs.mkdirSync(path.dirname(out), {recursive: true});
	const tmp = `${out}.${process.pid}.tmp`;
	fs.writeFileSync(tmp, JSON.stringify(data, null, 1) + '\n');
	fs.renameSync(tmp, out);
	console.log(`wrote ${strings} strings of pokemon-showdown ${version} to ${out}`);
}

main();
