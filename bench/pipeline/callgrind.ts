/**
 * Instructions per execution, counted by valgrind's callgrind (`bench/pipeline --instructions`).
 * Executions/s on this shared 2-core machine swing ±15% between invocations of the same build, which
 * hides a change of 5–10%; callgrind counts the instructions a process executes, whatever else the
 * machine does. They repeat for a fixed sequence of work, which a batching pipeline is not: how many
 * executions share a batch depends on timing, so runs spread ±14% (docs/performance.md), a coarse
 * figure rather than a decision of a few per cent. The process runs under
 * `valgrind --tool=callgrind --instr-atstart=no` (start-up and set-up uninstrumented), the count is
 * zeroed and switched on for the measured submissions only, then dumped and read. It counts the
 * process's own instructions in user space, SQLite's included, not the kernel's (the writes to the
 * WAL, the sockets). Here the machine has no hardware counters (`perf stat` answers "not supported").
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Node's flags for a counted process: V8 without background threads (their share varies run to run). */
export const COUNTED_NODE_ARGS = ['--single-threaded'];

/** Executions run uncounted before counting starts: the JIT's tiers settle first. */
export const WARM_UP = 2_000;

/** The command line prefix that runs a program under callgrind, its dumps written into `dir`. */
export const underCallgrind = (dir: string): string[] => [
  'valgrind',
  '--tool=callgrind',
  '--instr-atstart=no',
  // V8 writes and rewrites machine code on its heap: valgrind must notice code that changes there.
  '--smc-check=all-non-file',
  `--callgrind-out-file=${join(dir, 'callgrind.%p')}`,
];

/**
 * valgrind's gdb server names the pipes callgrind_control talks through after the user and the host
 * *as the process's environment says* (LOGNAME or USER, HOST or HOSTNAME; svc's HOST is its listen
 * address), so the command runs with the same four variables as the process.
 */
function control(...args: string[]): void {
  const pid = args[args.length - 1];
  const names = new Set(['LOGNAME', 'USER', 'HOST', 'HOSTNAME']);
  const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
  for (const pair of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const at = pair.indexOf('=');
    if (names.has(pair.slice(0, at))) env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  execFileSync('callgrind_control', args, { stdio: 'ignore', env });
}

/** Zeroes the counts of process `pid` and switches counting on. */
export function startCounting(pid: number): void {
  control('-z', String(pid));
  control('-i', 'on', String(pid));
}

/** Switches counting off and answers the instructions counted since `startCounting`. */
export async function stopCounting(pid: number, dir: string): Promise<number> {
  const before = new Set(readdirSync(dir));
  control('-d', String(pid));
  // The dump is written when the process next runs valgrind's scheduler (an idle one, later): wait
  // for its file and its totals line.
  for (let i = 0; i < 600; i++) {
    const dump = readdirSync(dir).find((f) => f.startsWith(`callgrind.${pid}.`) && !before.has(f));
    const total = dump && /^totals:\s+(\d+)/m.exec(readFileSync(join(dir, dump), 'utf8'));
    if (total) {
      control('-i', 'off', String(pid));
      return Number(total[1]);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`callgrind wrote no dump of process ${pid} within 60 s`);
}
