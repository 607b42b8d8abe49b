// Preloaded into the embedded server (`node --require parent_watch.js pokemon-showdown start ...`): the
// server must not outlive the harness that started it, even when the harness is killed with SIGKILL, and
// from the first instant, not only once Showdown has loaded (seconds later on a loaded machine).
//
// Showdown's start-up blocks the main thread while it loads, so the check runs in a small process of its
// own (a worker thread slowed the start-up by half), started before anything else. POKEBENCH_PARENT_PID
// is the harness's pid: once that process is gone, the server and its process group (the simulators)
// are killed; once the server is gone, the watcher ends.
'use strict';

const parent = parseInt(process.env.POKEBENCH_PARENT_PID || '0', 10);
// Showdown's own subprocesses (simulators, validators: forked, with an IPC channel) inherit this preload;
// they end with the server, so only the server itself is watched.
if (parent > 0 && !process.send) {
	const watcher = `
		const [parent, server] = [${parent}, ${process.pid}];
		const alive = pid => {
			try {
				process.kill(pid, 0);
				return true;
			} catch (err) {
				return err.code === 'EPERM';
			}
		};
		const check = () => {
			if (!alive(server)) process.exit(0);
			if (alive(parent)) return;
			try { process.kill(-server, 'SIGKILL'); } catch {}  // the group, when the server leads it
			try { process.kill(server, 'SIGKILL'); } catch {}
			process.exit(0);
		};
		check();
		setInterval(check, 250);
	`;
	require('child_process').spawn(process.execPath, ['-e', watcher], {stdio: 'ignore', env: {}}).unref();
}

// A free port the harness picked can be taken by another program before Showdown listens on it (test
// workers or shards starting servers at once). Showdown's crash guard would log that EADDRINUSE and run on,
// listening nowhere, until the harness's start-up timeout; the server exits at once instead, and the harness
// starts it again on another free port (pokebench/showdown/server.py).
if (!process.send) {
	const net = require('net');
	const listen = net.Server.prototype.listen;
	net.Server.prototype.listen = function (...args) {
		this.once('error', err => {
			if (err.code !== 'EADDRINUSE') throw err;
			console.error(`PokéBench: ${err.message}; the server exits so that the harness can start it on another port`);
			process.exit(98);
		});
		return listen.apply(this, args);
	};
}
