import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Which of `pids` holds the client end of a loopback TCP connection whose server saw it come from
 * `remotePort` (Linux: the socket's inode from /proc/net/tcp, then the process whose open files
 * include it). Asked while the connection is open; undefined if no process of `pids` holds it.
 */
export function ownerOfLoopbackPort(remotePort: number, pids: number[]): number | undefined {
  const inode = socketInode(remotePort);
  if (inode === undefined) return undefined;
  const target = `socket:[${inode}]`;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return pid;
      } catch {
        // closed between the listing and the read
      }
    }
  }
  return undefined;
}

function socketInode(localPort: number): string | undefined {
  const port = localPort.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines: string[];
    try {
      lines = readFileSync(table, 'utf8').split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const cols = line.trim().split(/\s+/);
      // local_address is `<hex address>:<hex port>`; the inode is the tenth column.
      if (cols.length > 9 && cols[1].endsWith(`:${port}`)) return cols[9];
    }
  }
  return undefined;
}
