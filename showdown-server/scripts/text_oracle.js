#!/usr/bin/env node
/**
 * Test-only: replay recorded games through the pinned simulator and render each side's view with an
 * independent renderer, @pkmn/view's LogFormatter (a port of the Showdown client's BattleTextParser),
 * tracked by @pkmn/client's Battle.
 *
 *   node showdown-server/scripts/text_oracle.js <pokemon-showdown package dir> <oracle dir> < games.jsonl
 *
 * Started by PokéBench (pokebench/showdown/node.py, run_text_oracle), not by hand. The oracle's packages
 * are installed at set-up in <oracle dir>/node_modules (showdown-server/oracle/package.json, npm ci).
 *
 * stdin: one JSON object per line, {"id": ..., "input_log": [">start ...", ">player p1 ...", ">p1 move 1", ...]}.
 * stdout: one JSON object per game, in the same order:
 *   {"id": ..., "p1": {"chunks": [...], "text": [...]}, "p2": {...}}
 * where "chunks" are the messages the simulator sent that side (what a player receives, requests included) and "text" is the
 * LogFormatter's text of them, one string per line, as it prints it (section breaks as empty lines,
 * "||hover||text||" marks, indentation kept), without the [silent] lines the Showdown client does not show.
 */
'use strict';

const path = require('path');
const readline = require('readline');
const {loadSim} = require('./load_sim');

const [pkgDir, oracleDir] = [path.resolve(process.argv[2] || ''), path.resolve(process.argv[3] || '')];
function need(name) {
	try {
		return require(require.resolve(name, {paths: [oracleDir]}));
	} catch (err) {
		console.error(`text_oracle.js: ${name} is not installed in ${oracleDir}/node_modules (${err.message}).\n` +
			'Install the test-only oracle packages: `make setup` (npm ci in showdown-server/oracle).');
		process.exit(1);
	}
}
const {Protocol} = need('@pkmn/protocol');
const {LogFormatter} = need('@pkmn/view');
const {Battle} = need('@pkmn/client');
const {Generations} = need('@pkmn/data');
const {Dex} = need('@pkmn/dex');
const sim = loadSim('text_oracle.js', pkgDir);
const gens = new Generations(Dex);

/** The messages each side receives when the input log is played again. */
async function replay(inputLog) {
	const streams = sim.getPlayerStreams(new sim.BattleStream());
	const chunks = {p1: [], p2: []};
	const reading = ['p1', 'p2'].map(async side => {
		for await (const chunk of streams[side]) chunks[side].push(chunk);
	});
	const omniscient = (async () => {
		for await (const chunk of streams.omniscient) void chunk;
	})();
	// One line at a time, as the server writes a player's choice: each side gets its requests between updates.
	for (const line of inputLog) await streams.omniscient.write(line);
	await streams.omniscient.writeEnd();
	await Promise.all([...reading, omniscient]);
	return chunks;
}

/** The LogFormatter's text of one side's messages. */
function render(side, chunks) {
	const battle = new Battle(gens);
	const formatter = new LogFormatter(side, battle);
	const text = [];
	for (const chunk of chunks) {
		for (const {args, kwArgs} of Protocol.parse(chunk)) {
			if (args[0] === 'request') continue;  // the player's choice data, no text
			// Before the tracker: the formatter reads the state before the line. A [silent] line is
			// formatted (the formatter keeps its own state) but not shown: the Showdown client's
			// BattleLog.add drops it, and the LogFormatter leaves that to its caller.
			const formatted = formatter.formatText(args, kwArgs);
			if (formatted && !kwArgs.silent) text.push(...formatted.replace(/\n$/, '').split('\n'));
			battle.add(args, kwArgs);
		}
	}
	return text;
}

async function main() {
	const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
	for await (const line of lines) {
		if (!line.trim()) continue;
		const game = JSON.parse(line);
		const chunks = await replay(game.input_log);
		const out = {id: game.id};
		for (const side of ['p1', 'p2']) out[side] = {chunks: chunks[side], text: render(side, chunks[side])};
		process.stdout.write(JSON.stringify(out) + '\n');
	}
}

main().catch(err => {
	console.error(`text_oracle.js: ${err.stack || err}`);
	process.exit(1);
});
