// Preloaded into the embedded server (`node --require saved_format_list.js pokemon-showdown start ...`): the
// server sends every connection, as it connects, the list of formats that `pokebench-server install` saved
// from this same Showdown, instead of building it again.
//
// Showdown builds that list (`Rooms.global.formatListText`, the `|formats|` line) at the first connection,
// from every shown format's rule table, which loads the data of every mod it names: about 2 s of CPU, two
// thirds of a server's start, and the harness's first connection waits for it. The list depends only on the
// installed Showdown, so the install saves what the server sent (pokebench/showdown/format_list.py), and a
// server given that file ($POKEBENCH_FORMAT_LIST) sends it as saved, if its first line is the version of
// the Showdown in the working folder (the server's root). Otherwise Showdown builds its own, as before.
//
// This must be in place before the first connection, and PokéBench's chat plugin loads later (at the first
// chat message), so the list is set on Showdown's room class as Showdown makes `Rooms` global: in its
// set-up, before it listens.
'use strict';

const file = process.env.POKEBENCH_FORMAT_LIST;
if (file && !process.send) { // the server, not its simulator processes (forked: they have an IPC channel)
	const fs = require('fs');
	const path = require('path');
	let saved = null;
	try {
		const text = fs.readFileSync(file, 'utf8');
		const version = require(path.resolve('package.json')).version;
		const newline = text.indexOf('\n');
		if (newline > 0 && text.slice(0, newline) === version) saved = text.slice(newline + 1);
	} catch {}
	if (saved) {
		Object.defineProperty(globalThis, 'Rooms', {
			configurable: true,
			set(rooms) {
				Object.defineProperty(globalThis, 'Rooms', {value: rooms, writable: true, configurable: true});
				Object.defineProperty(rooms.GlobalRoomState.prototype, 'formatListText', {
					configurable: true,
					get: () => saved,
				});
			},
		});
	}
}
