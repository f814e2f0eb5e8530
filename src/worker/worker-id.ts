import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * A name for one job instance, written in `locked_by` of what it claims: the host and process tell an
 * operator where a stuck lease came from, the random part keeps two instances in one process apart.
 */
export function newWorkerId(): string {
  return `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
}
