// Preloaded into the embedded server (`node --require parent_watch.js pokemon-showdown start ...`): the
// server must not outlive the harness that started it, even when the harness is killed with SIGKILL, and
// from the first instant, not only once Showdown has loaded (seconds later on a loaded machine).
//
// The check runs on a worker thread of its own, because Showdown's start-up blocks the main thread
// while it loads. POKEBENCH_PARENT_PID is the harness's pid; once that process is gone, the server
// (and its process group: the simulators) is killed.
'use strict';

const parent = parseInt(process.env.POKEBENCH_PARENT_PID || '0', 10);
// Showdown's own subprocesses (simulators, validators: forked, with an IPC channel) inherit this preload;
// they end with the server, so only the server itself watches.
if (parent > 0 && !process.send) {
	const {Worker} = require('worker_threads');
	const watcher = new Worker(`
		const parent = ${parent};
		const gone = () => {
			try {
				process.kill(parent, 0);
				return false;
			} catch (err) {
				return err.code === 'ESRCH';
			}
		};
		const check = () => {
			if (!gone()) return;
			try { process.kill(-${process.pid}, 'SIGKILL'); } catch {}  // the group, when the server leads it
			process.kill(${process.pid}, 'SIGKILL');
		};
		check();
		setInterval(check, 250);
	`, {eval: true});
	watcher.unref();
}
