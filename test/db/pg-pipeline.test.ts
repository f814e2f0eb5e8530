import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pipelined, QUEUED } from '../../src/db/pg-pipeline.js';

/**
 * What leaves in one write to PostgreSQL's socket: `pipelined` hands the statements that go out
 * together (a held BEGIN or queued writes, and the statement they wait for) to `together`, which the
 * store runs with the client's socket corked. The statements' effects are proven on a real server
 * by queued-writes.test.ts and queued-writes.pg.test.ts; here, which sends share a write.
 */
describe('pipelined statements: one socket write per flight', () => {
  function recorder() {
    const writes: string[][] = [];
    let current: string[] | null = null;
    const send = (text: string) => {
      if (current) current.push(text);
      else writes.push([text]);
      return Promise.resolve({ command: text, rowCount: 0, rows: [], fields: [], oid: 0 } as pg.QueryResult);
    };
    const together = (sends: () => void) => {
      current = [];
      sends();
      writes.push(current);
      current = null;
    };
    return { writes, query: pipelined(send, together) };
  }

  it('the request shape: BEGIN with the read, the queued inserts with the COMMIT', async () => {
    const { writes, query } = recorder();
    await query('begin');
    await query('select 1');
    await query(`${QUEUED}insert a`);
    await query(`${QUEUED}insert b`);
    await query('commit');
    expect(writes).toEqual([
      ['begin', 'select 1'],
      ['insert a', 'insert b', 'commit'],
    ]);
  });

  it('a statement with nothing held goes out alone, as before', async () => {
    const { writes, query } = recorder();
    await query('select 1');
    await query(`${QUEUED}insert outside a transaction`);
    expect(writes).toEqual([['select 1'], ['insert outside a transaction']]);
  });
});
