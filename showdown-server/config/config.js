'use strict';
/**
 * PokéBench's configuration of the pinned Pokémon Showdown server.
 *
 * `python -m pokebench.cli.server install` copies this file to
 * node_modules/pokemon-showdown/config/config.js (Showdown reads its config only
 * from there). Everything else falls back to config-example.js's defaults.
 */
const env = process.env;

exports.port = 8000; // always overridden on the command line
// Loopback only: PSBINDADDR is ignored by 0.11.11, only this setting counts.
exports.bindaddress = '127.0.0.1';

// One network process, and as many simulator processes as the harness asks for
// (games run in parallel across them).
exports.subprocesses = {
	network: 0,
	simulator: Math.max(1, parseInt(env.POKEBENCH_SIM_PROCESSES || '1', 10) || 1),
	validator: 1,
	verifier: 0,
	localartemis: 0,
	remoteartemis: 0,
	friends: 0,
	chatdb: 0,
	modlog: 0,
	pm: 0,
	battlesearch: 0,
	datasearch: 0,
};

// A local benchmark server: guests log in with `/trn NAME,0,` and no token,
// nothing is throttled, and nothing is sent to or asked of the outside world.
exports.noguestsecurity = true;
exports.nothrottle = true;
exports.noipchecks = true;
exports.backdoor = false;
exports.repl = false;
exports.watchconfig = false;
exports.reportbattles = false;
exports.reportbattlejoins = false;
exports.reportjoins = false;
exports.logchat = false;
// PokéBench's own plugin writes every game's record; Showdown's own logs are off.
exports.logchallenges = false;
exports.loguserstats = 0;
exports.autolockdown = false;
exports.forcetimer = false;
exports.crashguard = true;
exports.crashguardemail = null;
exports.disablehotpatchall = true;
exports.consoleips = [];

// Nothing leaves this machine. Showdown's defaults point at its public servers: the login server
// (contacted by /savereplay, ladders and user stats), its routes, and Net requests such as the Tor
// exit list or a custom avatar's URL. Every address is pointed at nothing (port 9 of 127.0.0.1 has no
// listener), and noNetRequests makes Showdown refuse every HTTP request it would make (lib/net.ts).
exports.noNetRequests = true;
exports.loginserver = 'http://127.0.0.1:9/';
exports.loginserverkeyalgo = 'RSA-SHA1';
exports.loginserverpublickeyid = 0;
exports.loginserverpublickey = '';
exports.routes = {root: '127.0.0.1:9', client: '127.0.0.1:9', dex: '127.0.0.1:9', replays: '127.0.0.1:9'};
exports.ssl = null;
exports.proxyip = false;
