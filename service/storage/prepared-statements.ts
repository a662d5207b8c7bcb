import type { QueryConfig } from 'pg';

/** Bounds of {@link createStatementNames}; counts of runs and of statement texts. */
export interface StatementNameOptions {
  /** Runs of one text (with parameters) before it is prepared: one-off statements are never named. Default 3. */
  preparedAfterRuns?: number;
  /** Texts named at most, per pool; later ones stay unnamed. Default 200. */
  maxNamed?: number;
  /** Distinct texts counted at most before the counts start over. Default 5,000. */
  maxCounted?: number;
}

/**
 * SQLSTATEs after which a named statement is dropped from use and the query run again unnamed:
 * 0A000 "cached plan must not change result type" (another process's migration changed a table
 * under a prepared `SELECT *`: the text is named afresh), 26000 "prepared statement does not
 * exist" and 42P05 "prepared statement already exists" (a pooler such as PgBouncer in transaction
 * mode sends each statement to some server connection: naming is switched off for the pool).
 */
const renameCodes = new Set(['0A000']);
const unsupportedCodes = new Set(['26000', '42P05']);

/** Decides which statements of one `pg` pool run as named prepared statements. */
export interface StatementNames {
  /**
   * The query for `sql` with `params`: named (`acs_<n>`) once its text has been run
   * `preparedAfterRuns` times with parameters, else unnamed. Statements without parameters
   * stay unnamed: they go by the simple protocol, which may hold several statements.
   */
  config(sql: string, params: unknown[] | undefined): QueryConfig;
  /**
   * Whether the failure of a query made by {@link config} should be run again unnamed; when it
   * should, the text or the whole pool has stopped being named first (see the codes above).
   */
  retryUnnamed(config: QueryConfig, error: unknown): boolean;
}

/**
 * Named prepared statements for the statements a process runs often (every append, every key
 * lookup): PostgreSQL parses and plans such a statement once per connection instead of at every
 * run, as JDBC's `prepareThreshold` and asyncpg's statement cache do. With it (and, beside it, a
 * NOTIFY only when another process waits), PostgreSQL's CPU per append fell 10–30% and the
 * service's creates on PostgreSQL got ~25% faster (docs/performance.md). `pg`
 * prepares a name once per connection and keeps it for the connection's life; names are bounded
 * (`maxNamed`) because nothing deallocates them.
 */
export function createStatementNames(options: StatementNameOptions = {}): StatementNames {
  const preparedAfterRuns = options.preparedAfterRuns ?? 3;
  const maxNamed = options.maxNamed ?? 200;
  const maxCounted = options.maxCounted ?? 5_000;
  const runs = new Map<string, number>();
  const names = new Map<string, string>();
  let issued = 0;
  let enabled = true;

  return {
    config(sql, params) {
      if (!enabled || params === undefined) return { text: sql, values: params };
      let name = names.get(sql);
      if (name === undefined && issued < maxNamed) {
        const count = (runs.get(sql) ?? 0) + 1;
        if (count < preparedAfterRuns) {
          if (runs.size >= maxCounted) runs.clear();
          runs.set(sql, count);
        } else {
          runs.delete(sql);
          // A fresh number per naming: a name once prepared with one text is never reused for another.
          name = `acs_${issued++}`;
          names.set(sql, name);
        }
      }
      return name === undefined ? { text: sql, values: params } : { text: sql, values: params, name };
    },
    retryUnnamed(config, error) {
      if (config.name === undefined) return false;
      const code = (error as { code?: unknown } | null)?.code;
      if (typeof code !== 'string') return false;
      if (unsupportedCodes.has(code)) {
        enabled = false;
        return true;
      }
      // Named again later under a new name, planned against the table as it is now.
      if (renameCodes.has(code) && names.get(config.text) === config.name) {
        names.delete(config.text);
        return true;
      }
      return false;
    },
  };
}
