import { readdirSync, readFileSync } from 'node:fs';

/** Resident memory of a process, MiB. */
export const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
};

/** CPU seconds (user and system) a process has used. */
export const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

/**
 * CPU seconds of every PostgreSQL server process on this machine (backends, WAL writer,
 * checkpointer): the benchmark's server is local, and on two shared cores its work is as much part
 * of an execution's cost as svc's. Not a figure for a remote server.
 */
export const postgresCpuSeconds = () => {
  let sum = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('postgres')) continue;
      sum += cpuSeconds(Number(entry));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return sum;
};

/** The store's statement and transaction counters of one process, from its /metrics. */
export async function storeActivity(base: string | undefined) {
  if (!base) return { statements: 0, transactions: 0 };
  const text = await (await fetch(`${base}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    statements: read('svc_store_statements_total'),
    transactions: read('svc_store_transactions_total'),
  };
}
