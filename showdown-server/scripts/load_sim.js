/**
 * The installed Pokémon Showdown simulator, for the scripts beside this file: `loadSim(script, pkgDir)`
 * requires `<pkgDir>/dist/sim`, or says how to install it and exits.
 */
'use strict';

const path = require('path');

function loadSim(script, pkgDir) {
	try {
		require(path.join(pkgDir, 'dist', 'sim', 'pokebench-duplicate-rolls'));  // before the simulator is used
		return require(path.join(pkgDir, 'dist', 'sim'));
	} catch (err) {
		console.error(`${script}: the Pokémon Showdown server is not installed in ${pkgDir} (${err.message}).\n` +
			'Install it first: `make setup` (or `pokebench-server install`).');
		process.exit(1);
	}
}

module.exports = {loadSim};
