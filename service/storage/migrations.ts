import type { Db } from './db.ts';

/**
 * The schema of acs-server as an ordered list of migrations. Append only: a migration that has
 * shipped is never edited, a change is a new entry. Each entry is a list of single statements
 * because parameterised drivers run one statement per call.
 */
export const migrations: ReadonlyArray<{ id: string; statements: string[] }> = [
  {
    id: '0001_initial',
    statements: [
      `CREATE TABLE organizations (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        -- the organization whose key created this one; it reaches this one (contract §3)
        provisioned_by uuid REFERENCES organizations(id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX organizations_provisioned_by ON organizations(provisioned_by)`,
      `CREATE TABLE org_keys (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        key_hash text NOT NULL UNIQUE,
        prefix text NOT NULL,
        name text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        expires_at timestamptz,
        revoked_at timestamptz
      )`,
      `CREATE TABLE teams (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        engine_id uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (org_id, name)
      )`,
      // Agents and humans share one table so that one index keeps their names unique together.
      `CREATE TABLE participants (
        id uuid PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('agent', 'human')),
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        provider text,
        model text,
        instructions text NOT NULL DEFAULT '',
        status text NOT NULL DEFAULT 'active',
        email text,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (team_id, name)
      )`,
      `CREATE TABLE edges (
        id uuid PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        participant_a uuid NOT NULL REFERENCES participants(id),
        participant_b uuid NOT NULL REFERENCES participants(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK (participant_a <> participant_b)
      )`,
      `CREATE UNIQUE INDEX edges_pair ON edges (LEAST(participant_a, participant_b), GREATEST(participant_a, participant_b))`,
      `CREATE INDEX edges_a ON edges(participant_a)`,
      `CREATE INDEX edges_b ON edges(participant_b)`,
      `CREATE TABLE threads (
        id uuid PRIMARY KEY,
        -- creation order, so that "newest first" is total even within one millisecond
        seq bigserial NOT NULL,
        edge_id uuid NOT NULL REFERENCES edges(id) ON DELETE CASCADE,
        team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        opener_id uuid NOT NULL,
        subject text NOT NULL DEFAULT '',
        channel text NOT NULL DEFAULT 'web',
        -- doubles as the per-thread message sequence: appends increment it under the row lock
        message_count integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX threads_edge ON threads(edge_id, seq)`,
      `CREATE TABLE messages (
        id uuid PRIMARY KEY,
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        seq integer NOT NULL,
        sender_id uuid NOT NULL,
        content text NOT NULL,
        attachments jsonb NOT NULL DEFAULT '[]'::jsonb,
        -- set on replies written by the agent loop: the message answered (contract §8)
        reply_to uuid,
        sent_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (thread_id, seq)
      )`,
      // At most one automatic answer per (agent, incoming message), also across restarts.
      `CREATE UNIQUE INDEX messages_one_reply ON messages(sender_id, reply_to)`,
      `CREATE TABLE thread_reads (
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        participant_id uuid NOT NULL,
        read_seq integer NOT NULL DEFAULT 0,
        PRIMARY KEY (thread_id, participant_id)
      )`,
      `CREATE TABLE provider_keys (
        org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        provider text NOT NULL,
        ciphertext text NOT NULL,
        key_hint text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, provider)
      )`,
    ],
  },
];

/**
 * Applies every migration not yet recorded in `schema_migrations`, in order, each in its own
 * transaction. A transaction-scoped advisory lock serialises processes that start together
 * against one PostgreSQL database, so each migration runs exactly once.
 * Errors: rejects with the driver's error; the failing migration is rolled back.
 */
export async function migrate(db: Db): Promise<void> {
  await db.query(
    `CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
  ).catch(async (error: unknown) => {
    // Two processes may race on CREATE TABLE IF NOT EXISTS; the loser sees a duplicate.
    const rows = await db.query(`SELECT to_regclass('schema_migrations') AS t`);
    if ((rows[0] as { t: unknown } | undefined)?.t == null) throw error;
  });
  for (const migration of migrations) {
    await db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('acs-server:migrations'))`);
      const done = await tx.query(`SELECT 1 FROM schema_migrations WHERE id = $1`, [migration.id]);
      if (done.length > 0) return;
      for (const statement of migration.statements) await tx.query(statement);
      await tx.query(`INSERT INTO schema_migrations (id) VALUES ($1)`, [migration.id]);
    });
  }
}
