import type pg from 'pg';

/**
 * Prefix of a statement queued on its transaction (`prepared(...).queue`): a write whose result the
 * transaction does not read. A SQL comment, so the statement is the same to the server.
 */
export const QUEUED = '/* queued */ ';

type Send = (text: string, values?: unknown[]) => Promise<pg.QueryResult>;

const answered = (command: string) =>
  ({ command, rowCount: null, rows: [], fields: [], oid: 0 }) as pg.QueryResult;

/**
 * Fewer round trips on one PostgreSQL connection, whose client runs in `pg`'s pipeline mode (it sends
 * a statement without waiting for the answers to those before it). A BEGIN, and a write queued on
 * its transaction, are not sent on their own: they wait for the connection's next statement and go
 * out with it. So the request's transaction (BEGIN, a read, two inserts, COMMIT) takes two round
 * trips instead of five (docs/performance.md "What makes it fast"). The statements reach the server in the
 * order they were made, so a read sees every write queued before it, and nothing is answered as
 * committed before the COMMIT is.
 *
 * `together` runs the sends of held statements and the one they go out with so that they leave in
 * one write to the socket (the store corks the client's stream around them): each write is a system
 * call that also wakes the server's backend, a large share of svc's time on PostgreSQL
 * (docs/performance.md "What makes it fast").
 *
 * A held statement that fails fails the one it went out with, with its own error: the server has
 * aborted the transaction, and a COMMIT would answer ROLLBACK, which must not pass for success. A
 * ROLLBACK discards what was never sent, and costs nothing when the server never saw the BEGIN.
 */
export function pipelined(send: Send, together: (sends: () => void) => void = (sends) => sends()): Send {
  let held: Array<{ text: string; values?: unknown[] }> = [];
  let open = false;
  return (sqlText, values) => {
    let text = sqlText;
    if (text === 'begin') {
      open = true;
      held.push({ text });
      return Promise.resolve(answered('BEGIN'));
    }
    if (text.startsWith(QUEUED)) {
      text = text.slice(QUEUED.length);
      if (open) {
        held.push({ text, values });
        return Promise.resolve(answered('QUEUED'));
      }
    }
    if (text === 'commit' || text === 'rollback') open = false;
    if (held.length === 0) return send(text, values);
    const before = held;
    held = [];
    if (text === 'rollback' && before[0].text === 'begin') return Promise.resolve(answered('ROLLBACK'));
    if (text === 'rollback') return send(text, values);
    let early: Array<Promise<unknown>> = [];
    let last!: Promise<pg.QueryResult>;
    together(() => {
      early = before.map((q) =>
        send(q.text, q.values).then(
          () => undefined,
          (err: unknown) => err ?? new Error('a queued statement failed'),
        ),
      );
      last = send(text, values);
    });
    return Promise.all(early).then((errors) => {
      const failed = errors.find((e) => e !== undefined);
      if (failed === undefined) return last;
      // The statement sent with it fails or answers ROLLBACK because of it: report the cause.
      last.catch(() => {});
      throw failed;
    });
  };
}
