/**
 * What the store holds per execution: each table's bytes with its indexes, read from the store itself
 * (SQLite's `dbstat`, PostgreSQL's `pg_total_relation_size`), so run.ts can print bytes per execution
 * as the difference between two readings divided by the executions between them.
 */
import Database from 'better-sqlite3';
import pg from 'pg';

/** Bytes per table, its indexes included; `file` is the whole database (SQLite: the file's pages). */
export type Sizes = Map<string, number>;

/** `vacuum`: on PostgreSQL, VACUUM first (what autovacuum would have reclaimed by now is counted free). */
export async function storeSizes(databaseUrl: string, { vacuum = true } = {}): Promise<Sizes> {
  if (databaseUrl.startsWith('sqlite:')) return sqliteSizes(databaseUrl.slice('sqlite:'.length));
  return postgresSizes(databaseUrl, vacuum);
}

function sqliteSizes(path: string): Sizes {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const sizes: Sizes = new Map();
    // dbstat names each b-tree: a table, or an index whose `tbl_name` is its table.
    const rows = db
      .prepare(
        `select coalesce(m.tbl_name, s.name) as tbl, sum(s.pgsize) as bytes
           from dbstat s left join sqlite_schema m on m.name = s.name group by tbl`,
      )
      .all() as Array<{ tbl: string; bytes: number }>;
    for (const r of rows) sizes.set(r.tbl, r.bytes);
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const pages = db.pragma('page_count', { simple: true }) as number;
    sizes.set('file', pageSize * pages);
    return sizes;
  } finally {
    db.close();
  }
}

async function postgresSizes(url: string, vacuum: boolean): Promise<Sizes> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    if (vacuum) await client.query('vacuum');
    const { rows } = await client.query<{ tbl: string; bytes: string }>(
      `select c.relname as tbl, pg_total_relation_size(c.oid) as bytes
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.relkind = 'r' and n.nspname = 'public'`,
    );
    const sizes: Sizes = new Map(rows.map((r) => [r.tbl, Number(r.bytes)]));
    const total = await client.query<{ bytes: string }>(
      'select pg_database_size(current_database()) as bytes',
    );
    sizes.set('file', Number(total.rows[0].bytes));
    return sizes;
  } finally {
    await client.end();
  }
}

/** Bytes per execution for each table that grew between `before` and `after`, largest first. */
export function perExecution(before: Sizes, after: Sizes, executions: number): Array<[string, number]> {
  const grown: Array<[string, number]> = [];
  for (const [table, bytes] of after) {
    const delta = bytes - (before.get(table) ?? 0);
    if (delta > 0 || table === 'file') grown.push([table, delta / executions]);
  }
  return grown.sort((a, b) => b[1] - a[1]);
}
