'use strict';
/**
 * PokéBench's server-side chat plugin for the pinned Pokémon Showdown server.
 *
 * `python -m pokebench.cli.server install` copies this file into
 * node_modules/pokemon-showdown/dist/server/chat-plugins/, where Showdown loads
 * every plugin at boot (server/chat.ts, loadPlugins).
 *
 * The harness registers the next game between two users:
 *
 *     /pokebench register <token> <json>
 *
 * json = {game_id, p1, p2, format, battle_seed, p1_team_seed, p2_team_seed, turn_limit}
 * where p1 and p2 are the user names that must end up on side 1 and side 2.
 * When those two users next start a battle through the ordinary challenge and
 * accept, the plugin
 *  - puts the registered p1 on side 1 whoever challenged whom,
 *  - starts the simulator with the battle seed and gives each side the team that
 *    Showdown's own generator makes from that side's team seed,
 *  - gives both users the same avatar (Showdown picks a random one, which the
 *    input log would keep),
 *  - keeps the battle timer off (an LLM may think for minutes),
 *  - ends the game as a tie when turn `turn_limit` starts,
 *  - sends the game's record to the harness user that registered it when it ends:
 *    `|pokebench|record|<json>` (format, seeds, teams, input log, winner, turns,
 *    how it ended, the full log).
 *
 *     /pokebench void <token> <game_id>
 *
 * ends a registered game that the harness gave up on (a stalled player) as a tie
 * and sends no record for it.
 *
 *     /pokebench ping <token>            -> |pokebench|pong|<Showdown version>
 *     /pokebench format <token> <format> -> |pokebench|format|<format>|<json>
 *
 * ping is the harness's liveness check (a hung server does not answer it); format says
 * whether the server knows a format and can generate random singles teams for it, and
 * whether it can play duplicate rolls (duplicate-rolls.js preloaded).
 * When the simulator process that runs a harness game dies, the plugin sends
 * `|pokebench|crashed|<json>` ({game_id, detail}) at once: the game is void.
 *
 * Only a connection that knows $POKEBENCH_ADMIN_TOKEN (a secret the harness gives
 * the server at start) may use these commands. User names that begin with `pb` are
 * the harness's: logging in under one takes HMAC-SHA256(token, userid) as the login
 * token (`/trn NAME,0,TOKEN`), so nobody else can squat the names its players use.
 */

const crypto = require('crypto');
const {Teams} = require('../../sim/teams');
const {Utils} = require('../../lib');

const ADMIN_TOKEN = process.env.POKEBENCH_ADMIN_TOKEN || '';
const SERVER_VERSION = require('../../../package.json').version;
const SEED_PATTERN = /^sodium,[0-9a-f]{32}$/;
// A battle seed may end in ',duplicate' (duplicate-rolls.js, which the server loads before Showdown).
const BATTLE_SEED_PATTERN = /^sodium,[0-9a-f]{32}(,duplicate)?$/;
const {Battle} = require('../../sim/battle');

/** pairKey(a, b) -> registration, for games whose battle has not started yet. */
const pending = new Map();
/** game_id -> battle, for games in flight. */
const running = new Map();

function pairKey(a, b) {
	return [toID(a), toID(b)].sort().join('\n');
}

function tokenMatches(given) {
	if (!ADMIN_TOKEN) return false;
	const a = Buffer.from(String(given));
	const b = Buffer.from(ADMIN_TOKEN);
	return a.length === b.length && crypto.timingSafeEqual(a, b);
}

function parseRegistration(text) {
	const reg = JSON.parse(text);
	for (const key of ['game_id', 'p1', 'p2', 'format']) {
		if (typeof reg[key] !== 'string' || !reg[key]) throw new Error(`missing ${key}`);
	}
	if (!/^[A-Za-z0-9_.-]+$/.test(reg.game_id)) throw new Error(`bad game_id ${reg.game_id}`);
	for (const key of ['p1_team_seed', 'p2_team_seed']) {
		if (!SEED_PATTERN.test(reg[key])) throw new Error(`${key} must look like sodium,<32 hex digits>`);
	}
	if (!BATTLE_SEED_PATTERN.test(reg.battle_seed)) {
		throw new Error('battle_seed must look like sodium,<32 hex digits> (optionally followed by ,duplicate)');
	}
	if (reg.battle_seed.endsWith(',duplicate') && !Battle.duplicateRolls) {
		throw new Error('this server cannot play duplicate rolls: it was not started with ' +
			'dist/sim/pokebench-duplicate-rolls.js preloaded (start it through PokéBench: pokebench-server start)');
	}
	reg.turn_limit = parseInt(reg.turn_limit, 10);
	if (!(reg.turn_limit > 0)) throw new Error('turn_limit must be a positive integer');
	if (toID(reg.p1) === toID(reg.p2)) throw new Error('p1 and p2 must differ');
	return reg;
}

/**
 * The omniscient log up to the line that ends the battle. Room events that follow it (a player
 * leaving once it has read the result) arrive in a race with the end of the simulator, so they
 * would make the logs of two identical games differ.
 */
function battleLog(battle) {
	const log = battle.room.getLog(-1).split('\n');
	const end = log.findIndex(line => line.startsWith('|win|') || line === '|tie');
	return end >= 0 ? log.slice(0, end + 1) : log;
}

function buildRecord(battle, reg, winnerid) {
	const logData = battle.logData || {};
	const p1id = battle.p1.id;
	const p2id = battle.p2.id;
	let winner = 'tie';
	if (winnerid && winnerid === p1id) winner = 'p1';
	else if (winnerid && winnerid === p2id) winner = 'p2';
	let endReason = 'normal';
	if (reg.turnLimitReached) endReason = 'turn_limit';
	else if (battle.endType === 'forfeit') endReason = 'forfeit';
	else if (battle.endType === 'forced') endReason = 'forced';
	const record = {
		game_id: reg.game_id,
		roomid: battle.roomid,
		format: battle.format,
		showdown_version: SERVER_VERSION,
		battle_seed: reg.battle_seed,
		p1_team_seed: reg.p1_team_seed,
		p2_team_seed: reg.p2_team_seed,
		turn_limit: reg.turn_limit,
		p1: battle.p1.name,
		p2: battle.p2.name,
		winner,
		turns: logData.turns !== undefined ? logData.turns : battle.turn,
		end_reason: endReason,
		score: logData.score || null,
		p1team: logData.p1team || null,
		p2team: logData.p2team || null,
		input_log: logData.inputLog || battle.inputLog || [],
		log: battleLog(battle),
		ended_at: new Date().toISOString(),
	};
	return record;
}

/** The harness user that registered `reg`, if it is still connected. */
function ownerOf(reg) {
	return Users.get(reg.owner);
}

/**
 * A simulator child process that dies takes its battles with it, and Showdown only logs it.
 * Tell the harness at once, so that it voids the game instead of waiting for a stall.
 */
function watchSimulator(battle, reg) {
	const child = battle.stream && battle.stream.process && battle.stream.process.process;
	if (!child || typeof child.once !== 'function') return; // simulated in this process
	const onExit = (code, signal) => {
		if (battle.ended || reg.voided || reg.crashReported) return;
		reg.crashReported = true;
		running.delete(reg.game_id);
		const owner = ownerOf(reg);
		const silent = hungSimulators.get(child);
		const [cause, detail] = silent ?
			['simulator hung', `the simulator process ${child.pid} answered nothing in ${silent} s and was killed`] :
			['simulator crashed', `the simulator process ${child.pid} died (${signal || `exit code ${code}`})`];
		if (owner) owner.send(`|pokebench|crashed|${JSON.stringify({game_id: reg.game_id, cause, detail})}`);
		// The battle can never end now: close its room, so that its players are free for the
		// game's replay (a client that is still "in" the dead battle would never accept a new one).
		setImmediate(() => {
			try {
				battle.room.add(`|-message|PokéBench voided this game (${detail}).`).update();
				battle.room.destroy();
			} catch (err) {
				Monitor.crashlog(err, 'PokéBench closing a crashed battle');
			}
		});
	};
	const onDisconnect = () => onExit(null, 'disconnected');
	child.once('exit', onExit);
	child.once('disconnect', onDisconnect);
	// Called when the battle ends: a process plays many battles, and a listener left on it would keep the
	// finished battle (its room, its log) for the process's whole life.
	reg.unwatchSimulator = () => {
		child.removeListener('exit', onExit);
		child.removeListener('disconnect', onDisconnect);
	};
}

/**
 * A simulator process that hangs (stopped, or stuck in one battle) answers nothing, and Showdown gives each new
 * battle to the process with the fewest: as the harness voids a hung process's stalled games its count falls to 0,
 * so it is given every new battle, and a run stalls game after game (a bots run with one of its two simulator
 * processes SIGSTOPped stored no game in the 15 minutes after). So the plugin asks each simulator process a
 * question every second (Showdown's own EVAL message, answered by any process that runs); one that leaves it
 * unanswered for POKEBENCH_SIMULATOR_TIMEOUT seconds (the harness's liveness time-out) is killed. Its games are
 * then voided at once (watchSimulator), and Showdown starts another process in its place.
 */
const SimulatorProcesses = require('../room-battle').PM;
const SIMULATOR_TIMEOUT_MS = 1000 * (Number(process.env.POKEBENCH_SIMULATOR_TIMEOUT) || 30);
const PROBE_EVERY_MS = Math.min(1000, SIMULATOR_TIMEOUT_MS / 4);
const PROBE = 'EVALpokebench-probe';
/** child process -> {asked: when the question it has not answered yet was asked (0: none)}. */
const probes = new WeakMap();
/** child process -> the seconds it was given, for those killed as hung (watchSimulator's report says so). */
const hungSimulators = new WeakMap();
let lastProbe = Date.now();

function probeSimulators() {
	const now = Date.now();
	// This process itself was stopped or busy meanwhile: the answers may be waiting unread, so start the clocks again.
	const wasAway = now - lastProbe > 3 * PROBE_EVERY_MS;
	lastProbe = now;
	for (const wrapper of SimulatorProcesses.processes) {
		const child = wrapper.getProcess();
		if (!child || !child.connected || hungSimulators.has(child)) continue;
		let probe = probes.get(child);
		if (!probe) {
			probe = {asked: 0};
			probes.set(child, probe);
			child.on('message', message => {
				if (message === `${PROBE}\n0`) probe.asked = 0;
			});
		}
		if (probe.asked && wasAway) probe.asked = now;
		if (!probe.asked) {
			probe.asked = now;
			child.send(`${PROBE}\nEVAL\n0`, () => {}); // a process that ended meanwhile: its exit says so
		} else if (now - probe.asked >= SIMULATOR_TIMEOUT_MS) {
			const seconds = SIMULATOR_TIMEOUT_MS / 1000;
			hungSimulators.set(child, seconds);
			console.error(`PokéBench: the simulator process ${child.pid} answered nothing in ${seconds} s: killed`);
			child.kill('SIGKILL');
		}
	}
}
setInterval(probeSimulators, PROBE_EVERY_MS).unref();

/** Hooks one harness battle: timer off, tie at the turn limit, record at the end. */
function manageBattle(battle, reg) {
	battle.pokebench = reg;
	running.set(reg.game_id, battle);
	watchSimulator(battle, reg);
	battle.timer.start = () => false;
	const receive = battle.receive.bind(battle);
	battle.receive = lines => {
		receive(lines);
		if (lines[0] === 'update' && battle.turn >= reg.turn_limit && !battle.ended && !reg.turnLimitReached) {
			reg.turnLimitReached = true;
			battle.room.add(`|-message|Turn ${reg.turn_limit}: the game ends as a tie (PokéBench turn limit).`).update();
			void battle.stream.write('>forcetie');
		}
	};
}

const createBattle = Rooms.createBattle;
Rooms.createBattle = function (options) {
	const users = (options.players || []).map(p => p.user).filter(Boolean);
	const reg = users.length === 2 ? pending.get(pairKey(users[0].id, users[1].id)) : undefined;
	if (!reg || toID(reg.format) !== toID(options.format)) return createBattle.call(this, options);
	pending.delete(pairKey(users[0].id, users[1].id));
	if (options.players[0].user.id !== toID(reg.p1)) options.players.reverse();
	options.seed = reg.battle_seed;
	// Showdown gives guests a random avatar, which would end up in the input log.
	for (const player of options.players) player.user.avatar = '1';
	options.players[0].team = Teams.pack(Teams.generate(reg.format, {seed: reg.p1_team_seed}));
	options.players[1].team = Teams.pack(Teams.generate(reg.format, {seed: reg.p2_team_seed}));
	const room = createBattle.call(this, options);
	if (room && room.battle) manageBattle(room.battle, reg);
	return room;
};

// Showdown validates the challenge and the accept of a random-team format in its validator process by
// making a team, to see that the format's generator works, and throwing it away: two teams generated for
// nothing per game. A registered game's teams are made above when its battle is created, which is where a
// generator that fails shows; so a user with a registered game in that format, asking with no team of its
// own (`/utm null`: none once unpacked, as the validator reads it), is answered as the validator answers
// then ('1' and the empty team) without asking it.
const validator = TeamValidatorAsync.TeamValidatorAsync.prototype;
const validateTeam = validator.validateTeam;
validator.validateTeam = function (team, options) {
	const userid = options && options.user;
	if (userid && this.format.team && !Teams.unpack(team)) {
		for (const reg of pending.values()) {
			if ((toID(reg.p1) === userid || toID(reg.p2) === userid) && toID(reg.format) === this.format.id) {
				return Promise.resolve('1');
			}
		}
	}
	return validateTeam.call(this, team, options);
};

/** What the harness needs to know of a format before it plays any game in it. */
function formatInfo(asked) {
	const format = Dex.formats.get(asked);
	const info = {showdown_version: SERVER_VERSION, exists: !!(format && format.exists && format.effectType === 'Format'),
		duplicate_rolls: !!Battle.duplicateRolls};
	if (info.exists) {
		info.id = format.id;
		info.name = format.name;
		info.random_teams = typeof format.team === 'string' && format.team.startsWith('random');
		info.game_type = format.gameType || 'singles';
	} else {
		const id = toID(asked);
		info.similar = Dex.formats.all()
			.filter(f => f.effectType === 'Format' && f.team && (f.id.includes(id) || id.includes(f.id) ||
				Utils.levenshtein(f.id, id, 3) <= 2))
			.map(f => f.id).slice(0, 5);
	}
	return info;
}

// Names that begin with HARNESS_PREFIX belong to the harness (see the top of this file).
const HARNESS_PREFIX = 'pb';
function harnessLoginToken(userid) {
	return crypto.createHmac('sha256', ADMIN_TOKEN).update(userid).digest('hex').slice(0, 32);
}
const validateToken = Users.User.prototype.validateToken;
Users.User.prototype.validateToken = async function (token, name, userid, connection) {
	if (!userid.startsWith(HARNESS_PREFIX)) return validateToken.call(this, token, name, userid, connection);
	const expected = ADMIN_TOKEN ? Buffer.from(harnessLoginToken(userid)) : null;
	const given = Buffer.from(String(token || ''));
	if (expected && given.length === expected.length && crypto.timingSafeEqual(given, expected)) return '1';
	this.send(`|nametaken|${name}|Names that begin with "${HARNESS_PREFIX}" are reserved for the PokéBench harness.`);
	return null;
};

// Nothing a local user does may make this server contact another machine: Showdown's login
// server (/savereplay, ladders, user stats) is off, and config.js sets noNetRequests.
LoginServer.disabled = true;
const NO_REPLAYS = 'This is a PokéBench benchmark server: replays are not uploaded anywhere ' +
	'(every game\'s input log is in the run\'s store).';
if (Rooms.GameRoom) {
	Rooms.GameRoom.prototype.uploadReplay = async function (user, connection) {
		if (connection) connection.popup(NO_REPLAYS);
	};
}

// A crash of one simulated battle must not lock the whole benchmark server: the
// harness sees that game stall and records it as a harness error.
Rooms.global.startLockdown = function (err) {
	Monitor.crashlog(err || new Error('lockdown requested'), 'PokéBench (lockdown suppressed)');
};

exports.handlers = {
	onBattleEnd(battle, winnerid) {
		const reg = battle.pokebench;
		if (!reg) return;
		running.delete(reg.game_id);
		if (reg.unwatchSimulator) reg.unwatchSimulator();
		if (reg.voided) return;
		const owner = ownerOf(reg);
		if (!owner) return; // the harness is gone; it plays this game again when it resumes
		try {
			owner.send(`|pokebench|record|${JSON.stringify(buildRecord(battle, reg, winnerid))}`);
		} catch (err) {
			Monitor.crashlog(err, 'PokéBench record');
			owner.send(`|pokebench|error|record of ${reg.game_id} failed: ${err.message}`);
		}
	},
};

exports.commands = {
	pokebench(target, room, user, connection) {
		const [verb, token, ...rest] = target.trim().split(' ');
		if (!tokenMatches(token)) {
			connection.send('|pokebench|refused|only the harness may use /pokebench');
			return;
		}
		if (verb === 'register') {
			let reg;
			try {
				reg = parseRegistration(rest.join(' '));
			} catch (err) {
				connection.send(`|pokebench|error|${err.message}`);
				return;
			}
			reg.owner = user.id;
			pending.set(pairKey(reg.p1, reg.p2), reg);
			connection.send(`|pokebench|registered|${reg.game_id}`);
		} else if (verb === 'void') {
			const gameId = rest.join(' ');
			const battle = running.get(gameId);
			for (const [key, reg] of pending) if (reg.game_id === gameId) pending.delete(key);
			if (battle && !battle.ended) {
				battle.pokebench.voided = true;
				battle.room.add(`|-message|PokéBench voided this game (harness error).`).update();
				void battle.stream.write('>forcetie');
			}
			connection.send(`|pokebench|voided|${gameId}`);
		} else if (verb === 'ping') {
			connection.send(`|pokebench|pong|${SERVER_VERSION}`);
		} else if (verb === 'format') {
			const asked = rest.join(' ');
			connection.send(`|pokebench|format|${asked}|${JSON.stringify(formatInfo(asked))}`);
		} else {
			connection.send(`|pokebench|error|unknown verb ${verb}`);
		}
	},
};
