/**
 * Starts helper processes in their own process groups (setsid) with their output in log files,
 * and stops exactly those groups, by id, at the end.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';

export class ProcessGroup {
  constructor() {
    /** @type {{name: string, child: import('node:child_process').ChildProcess, log: string}[]} */
    this.started = [];
  }

  /** Spawns `command args` as a new session; stdout and stderr go to `log`. */
  spawn(name, command, args, { log, env, cwd } = {}) {
    const fd = openSync(log, 'a');
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    this.started.push({ name, child, log });
    return child;
  }

  /** Stops every started group: SIGTERM, then SIGKILL after `graceMs`. */
  async stopAll(graceMs = 5000) {
    for (const { child } of this.started.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) {
        continue;
      }
      const exited = new Promise((resolve) => child.once('exit', resolve));
      signalGroup(child.pid, 'SIGTERM');
      const timer = new Promise((resolve) => setTimeout(() => resolve('timeout'), graceMs));
      if ((await Promise.race([exited, timer])) === 'timeout') {
        signalGroup(child.pid, 'SIGKILL');
        await exited;
      }
      // Members of the group that outlived its leader (e.g. a language server).
      signalGroup(child.pid, 'SIGKILL');
    }
    this.started = [];
  }
}

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if (err.code !== 'ESRCH') throw err;
  }
}

/** Pids of live processes whose command line mentions `marker` (to check that none is left). */
export function processesMentioning(marker) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const env = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (cmd.includes(marker) || env.includes(marker)) found.push({ pid: Number(entry), cmd: cmd.trim() });
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}
