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
  {
    id: '0003_keys_access',
    statements: [
      `CREATE INDEX org_keys_org ON org_keys(org_id)`,
      // Deleting an agent (or its team) deletes its MCP keys, which revokes them (contract §3).
      `CREATE TABLE mcp_keys (
        id uuid PRIMARY KEY,
        agent_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        key_hash text NOT NULL UNIQUE,
        prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      )`,
      `CREATE INDEX mcp_keys_agent ON mcp_keys(agent_id)`,
      `CREATE TABLE access_requests (
        id uuid PRIMARY KEY,
        email text NOT NULL,
        org_name text NOT NULL,
        intended_use text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
        reason text,
        -- the organization created on approval
        org_id uuid REFERENCES organizations(id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        decided_at timestamptz
      )`,
      `CREATE INDEX access_requests_status ON access_requests(status, created_at)`,
    ],
  },
  {
    id: '0004_idempotency_attachments',
    statements: [
      // Attachments belong to an organization (contract §4, §5); the bytes live in the row.
      `CREATE TABLE attachments (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        filename text NOT NULL,
        content_type text NOT NULL,
        size_bytes integer NOT NULL,
        data bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX attachments_org ON attachments(org_id)`,
      // Which messages name an attachment (`attachments @> '["id"]'`): team deletion asks it.
      `CREATE INDEX messages_attachments ON messages USING gin (attachments jsonb_path_ops)`,
      // Idempotency-Key records (contract §1, http/idempotency.ts). The primary key is the claim:
      // INSERT … ON CONFLICT DO NOTHING lets exactly one request of several processes run.
      `CREATE TABLE idempotency_keys (
        -- the caller's organization id, or '' for requests without an organization key
        scope text NOT NULL,
        -- method, route pattern and path parameters
        route text NOT NULL,
        idem_key text NOT NULL,
        request_hash text NOT NULL,
        -- which request holds the claim, so that only it stores or releases the record
        claim_id uuid NOT NULL,
        -- null while the first request runs
        status integer,
        response_type text,
        -- sealed with the secret box: some responses hold a key secret shown only once
        response_body text,
        claimed_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (scope, route, idem_key)
      )`,
      `CREATE INDEX idempotency_keys_expires ON idempotency_keys(expires_at)`,
    ],
  },
  {
    id: '0005_storage',
    statements: [
      // Cross-process long polls (storage/pg-notifier.ts): every insert into messages notifies
      // `acs_thread_messages` with the thread id inside the inserting transaction, so the
      // notification goes out on commit only. Per statement, once per thread: bulk inserts
      // send one notification per thread, not one per row. (Dropped by 0007: see there.)
      `CREATE FUNCTION acs_notify_thread_messages() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM pg_notify('acs_thread_messages', t.thread_id::text)
           FROM (SELECT DISTINCT thread_id FROM new_rows) t;
         RETURN NULL;
       END $$`,
      `CREATE TRIGGER messages_notify AFTER INSERT ON messages REFERENCING NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION acs_notify_thread_messages()`,
    ],
  },
  {
    // unread_count was a count(*) over the thread on every read, so its cost grew with the thread;
    // appends now keep it as a counter (see insertMessage).
    id: '0006_unread_counter',
    statements: [
      `ALTER TABLE threads ADD COLUMN opener_unread integer NOT NULL DEFAULT 0`,
      `UPDATE threads th SET opener_unread = (
         SELECT count(*) FROM messages m WHERE m.thread_id = th.id AND m.sender_id <> th.opener_id
           AND m.seq > COALESCE((SELECT r.read_seq FROM thread_reads r
                                  WHERE r.thread_id = th.id AND r.participant_id = th.opener_id), 0))`,
    ],
  },
  {
    // An append was five round trips (BEGIN, thread read, counter update, insert, COMMIT); as one
    // function call it is one, and PL/pgSQL keeps the plans of its statements per connection.
    // See appendMessage in domain/threads.ts and docs/performance.md.
    id: '0007_append_function',
    statements: [
      // The insert trigger of 0005 notified inside the appending transaction. PostgreSQL holds a
      // cluster-wide lock from a notifying transaction's pre-commit until after its commit
      // record is flushed, so appends committed one at a time whatever the number of clients.
      // The appending process now announces the append after its commit (storage/pg-notifier.ts).
      `DROP TRIGGER messages_notify ON messages`,
      `DROP FUNCTION acs_notify_thread_messages()`,
      // Checks and appends in one statement: the caller's key still active (p_key, when given:
      // a process's key cache must not let a key revoked elsewhere append), the thread within
      // p_org's reach and the sender one of its edge's participants (p_org, when given), the
      // attachments in the thread's organization; then the counter update under the thread's row
      // lock, whose new message_count is the message's seq, so one thread's messages have one
      // total order and commit in that order. A failed check changes nothing and is answered as
      // the outcome (invalid_api_key, not_found, not_a_participant, unknown_reference), not raised,
      // so the caller can tell them apart; 'ok' carries the seq, sent_at and org_id.
      `CREATE FUNCTION acs_append_message(
         p_id uuid, p_thread uuid, p_sender uuid, p_content text, p_attachments jsonb, p_reply_to uuid,
         p_org uuid, p_key uuid,
         OUT outcome text, OUT message_seq integer, OUT message_sent_at timestamptz, OUT thread_org uuid)
       LANGUAGE plpgsql AS $$
       DECLARE
         v_a uuid;
         v_b uuid;
       BEGIN
         IF p_key IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM org_keys k
              WHERE k.id = p_key AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) THEN
           outcome := 'invalid_api_key';
           RETURN;
         END IF;
         UPDATE threads th
            SET message_count = th.message_count + 1,
                opener_unread = th.opener_unread + CASE WHEN th.opener_id = p_sender THEN 0 ELSE 1 END
           FROM edges e, teams t, organizations o
          WHERE th.id = p_thread AND e.id = th.edge_id AND t.id = th.team_id AND o.id = t.org_id
            AND (p_org IS NULL OR ((o.id = p_org OR o.provisioned_by = p_org) AND p_sender IN (e.participant_a, e.participant_b)))
            AND (jsonb_array_length(p_attachments) = 0 OR NOT EXISTS (
                  SELECT 1 FROM jsonb_array_elements_text(p_attachments) AS named(id)
                   WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.id = named.id::uuid AND a.org_id = t.org_id)))
         RETURNING th.message_count, t.org_id INTO message_seq, thread_org;
         IF NOT FOUND THEN
           -- Only failures get here: tell which check failed.
           SELECT t.org_id, e.participant_a, e.participant_b INTO thread_org, v_a, v_b
             FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
             JOIN organizations o ON o.id = t.org_id
            WHERE th.id = p_thread AND (p_org IS NULL OR o.id = p_org OR o.provisioned_by = p_org);
           IF NOT FOUND THEN
             outcome := 'not_found';
           ELSIF p_org IS NOT NULL AND p_sender IS DISTINCT FROM v_a AND p_sender IS DISTINCT FROM v_b THEN
             outcome := 'not_a_participant';
           ELSE
             outcome := 'unknown_reference';
           END IF;
           RETURN;
         END IF;
         INSERT INTO messages (id, thread_id, seq, sender_id, content, attachments, reply_to)
         VALUES (p_id, p_thread, message_seq, p_sender, p_content, p_attachments, p_reply_to)
         RETURNING sent_at INTO message_sent_at;
         outcome := 'ok';
       END $$`,
    ],
  },
  {
    // Deletion protection (contract §4): deleting a protected resource, or anything that would take
    // one along, is refused. Adding a column with a constant default rewrites no table.
    id: '0008_deletion_protection',
    statements: [
      `ALTER TABLE organizations ADD COLUMN deletion_protection boolean NOT NULL DEFAULT false`,
      `ALTER TABLE teams ADD COLUMN deletion_protection boolean NOT NULL DEFAULT false`,
      `ALTER TABLE participants ADD COLUMN deletion_protection boolean NOT NULL DEFAULT false`,
      // Team and organization deletions look for protected participants among all of a team's.
      `CREATE INDEX participants_protected ON participants(team_id) WHERE deletion_protection`,
    ],
  },
  {
    // The agent loop's work, claimed in the database (several processes may share it), its
    // high-water marks, token usage and daily budgets. See agent-loop/agent-loop.ts.
    id: '0009_agent_work_usage',
    statements: [
      // One row per (provider agent, thread on its edges). `handled_seq`: every peer message up
      // to it is answered or skipped (the high-water mark); `latest_seq`: the newest message seen.
      // A row has work while latest_seq > handled_seq; `due_at` says from when it may be claimed:
      // a claim sets it to the lease's end (a process that dies gives the row up then), a failure
      // to the retry time, a paused agent or refused key to 'infinity' (woken by a PATCH or PUT).
      `CREATE TABLE agent_work (
        agent_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        handled_seq integer NOT NULL DEFAULT 0,
        latest_seq integer NOT NULL DEFAULT 0,
        due_at timestamptz NOT NULL DEFAULT now(),
        -- the claim holding the row, null when none
        lease_token uuid,
        failures integer NOT NULL DEFAULT 0,
        PRIMARY KEY (agent_id, thread_id)
      )`,
      // Only rows with work are in this index, so a tick's cost does not grow with idle threads.
      `CREATE INDEX agent_work_due ON agent_work (due_at) WHERE latest_seq > handled_seq`,
      `CREATE INDEX agent_work_thread ON agent_work (thread_id)`,
      // Every message gives the provider agent at the other end of its edge work. A trigger rather
      // than a line in acs_append_message, so every insert path (thread opening, replies) counts.
      `CREATE FUNCTION acs_agent_work_on_message() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO agent_work (agent_id, thread_id, latest_seq)
         SELECT p.id, NEW.thread_id, NEW.seq
           FROM threads th JOIN edges e ON e.id = th.edge_id
           JOIN participants p ON p.id IN (e.participant_a, e.participant_b)
          WHERE th.id = NEW.thread_id AND p.id <> NEW.sender_id AND p.kind = 'agent' AND p.provider IS NOT NULL
         ON CONFLICT (agent_id, thread_id) DO UPDATE SET latest_seq = GREATEST(agent_work.latest_seq, EXCLUDED.latest_seq);
         RETURN NULL;
       END $$`,
      `CREATE TRIGGER messages_agent_work AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION acs_agent_work_on_message()`,
      // Threads that existed before: their marks start at 0; the loop skips what is answered already.
      `INSERT INTO agent_work (agent_id, thread_id, latest_seq)
       SELECT p.id, th.id, th.message_count
         FROM participants p JOIN edges e ON p.id IN (e.participant_a, e.participant_b) JOIN threads th ON th.edge_id = e.id
        WHERE p.kind = 'agent' AND p.provider IS NOT NULL`,
      // A daily token budget (null: unlimited).
      `ALTER TABLE participants ADD COLUMN max_tokens_per_day integer`,
      // Set when the provider refused the key (401/403): the loop stops calling that provider for
      // the organization until the key is replaced (the PUT clears it).
      `ALTER TABLE provider_keys ADD COLUMN refused_at timestamptz`,
      // One row per provider reply: what it cost. Kept when the agent or the thread is deleted,
      // so a team's spending stays on record; deleting the team deletes it.
      `CREATE TABLE agent_usage (
        id uuid PRIMARY KEY,
        agent_id uuid NOT NULL,
        team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL,
        -- the reply posted; null when another process's reply to the same message stood
        message_id uuid,
        provider text NOT NULL,
        model text NOT NULL,
        input_tokens integer NOT NULL,
        output_tokens integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX agent_usage_agent ON agent_usage (agent_id, created_at)`,
      `CREATE INDEX agent_usage_team ON agent_usage (team_id, created_at)`,
      // Tokens per agent and UTC day, so a budget check reads one row.
      `CREATE TABLE agent_daily_usage (
        agent_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        day date NOT NULL,
        tokens bigint NOT NULL DEFAULT 0,
        -- whether "budget spent" was logged for this day (once, whichever process saw it)
        exhausted_logged boolean NOT NULL DEFAULT false,
        PRIMARY KEY (agent_id, day)
      )`,
    ],
  },
  {
    // A change that wakes an agent's parked work (a PATCH of the agent, a PUT of its provider key)
    // while a process holds one of its rows under a claim sets this flag instead of due_at, which
    // the claim's holder owns: when the holder parks the row, the flag makes it due at once rather
    // than parked on what the claim had read (a paused agent, no key, a spent budget).
    id: '0010_agent_work_woken',
    statements: [`ALTER TABLE agent_work ADD COLUMN woken boolean NOT NULL DEFAULT false`],
  },
  {
    // A message may say that its writer waits for the other participant's answer (a program, such
    // as a pipeline step, speaking as a participant through the API). The thread remembers whose
    // answer it awaits until that participant writes; the agent loop leaves that one answer to the
    // program (agent-loop.ts). The append function takes the flag, so an append stays one statement.
    id: '0016_expects_reply',
    statements: [
      `ALTER TABLE messages ADD COLUMN expects_reply boolean NOT NULL DEFAULT false`,
      `ALTER TABLE threads ADD COLUMN awaiting_reply_from uuid`,
      `DROP FUNCTION acs_append_message(uuid, uuid, uuid, text, jsonb, uuid, uuid, uuid)`,
      // As 0007's, plus p_expects_reply: the thread awaits the other participant's answer after a
      // message that expects one, and no longer once that participant writes.
      `CREATE FUNCTION acs_append_message(
         p_id uuid, p_thread uuid, p_sender uuid, p_content text, p_attachments jsonb, p_reply_to uuid,
         p_org uuid, p_key uuid, p_expects_reply boolean,
         OUT outcome text, OUT message_seq integer, OUT message_sent_at timestamptz, OUT thread_org uuid)
       LANGUAGE plpgsql AS $$
       DECLARE
         v_a uuid;
         v_b uuid;
       BEGIN
         IF p_key IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM org_keys k
              WHERE k.id = p_key AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) THEN
           outcome := 'invalid_api_key';
           RETURN;
         END IF;
         UPDATE threads th
            SET message_count = th.message_count + 1,
                opener_unread = th.opener_unread + CASE WHEN th.opener_id = p_sender THEN 0 ELSE 1 END,
                awaiting_reply_from = CASE
                  WHEN p_expects_reply THEN CASE WHEN e.participant_a = p_sender THEN e.participant_b ELSE e.participant_a END
                  WHEN th.awaiting_reply_from = p_sender THEN NULL
                  ELSE th.awaiting_reply_from END
           FROM edges e, teams t, organizations o
          WHERE th.id = p_thread AND e.id = th.edge_id AND t.id = th.team_id AND o.id = t.org_id
            AND (p_org IS NULL OR ((o.id = p_org OR o.provisioned_by = p_org) AND p_sender IN (e.participant_a, e.participant_b)))
            AND (jsonb_array_length(p_attachments) = 0 OR NOT EXISTS (
                  SELECT 1 FROM jsonb_array_elements_text(p_attachments) AS named(id)
                   WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.id = named.id::uuid AND a.org_id = t.org_id)))
         RETURNING th.message_count, t.org_id INTO message_seq, thread_org;
         IF NOT FOUND THEN
           SELECT t.org_id, e.participant_a, e.participant_b INTO thread_org, v_a, v_b
             FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
             JOIN organizations o ON o.id = t.org_id
            WHERE th.id = p_thread AND (p_org IS NULL OR o.id = p_org OR o.provisioned_by = p_org);
           IF NOT FOUND THEN
             outcome := 'not_found';
           ELSIF p_org IS NOT NULL AND p_sender IS DISTINCT FROM v_a AND p_sender IS DISTINCT FROM v_b THEN
             outcome := 'not_a_participant';
           ELSE
             outcome := 'unknown_reference';
           END IF;
           RETURN;
         END IF;
         INSERT INTO messages (id, thread_id, seq, sender_id, content, attachments, reply_to, expects_reply)
         VALUES (p_id, p_thread, message_seq, p_sender, p_content, p_attachments, p_reply_to, p_expects_reply)
         RETURNING sent_at INTO message_sent_at;
         outcome := 'ok';
       END $$`,
    ],
  },
  {
    // The organization event log (contract §9; service/events/). Every change that makes an event
    // writes it in its own transaction (an acknowledged change always has its event); `seq`
    // numbers an organization's events 1, 2, 3, … without gaps, in the order they became visible.
    //
    // Writers only insert (`acs_append_event`: no lock, so appends of one organization commit in
    // parallel); the `seq` is given afterwards, to committed events only, by the sequencer
    // (`acs_sequence_events`, service/events/sequencer.ts), which every process runs after its own
    // commits. It numbers the events it can see, in write order (`n`), under the organization's
    // counter row lock, held until it commits: one sequencer at a time per organization, each
    // numbering after the previous one's numbers, which are visible before the next can start. So
    // the sequenced events are always exactly 1…N, a reader walking `seq > after` misses nothing
    // and sees nothing twice (docs/events.md), and an event of a transaction that began after
    // another committed is numbered after that one's (the order of one thread's messages, of a
    // client's requests). A process that dies before sequencing its commit leaves events without
    // a seq, which any process's sweep numbers within seconds; readers never see unnumbered events.
    //
    // No foreign keys: deleting an organization deletes its log explicitly (domain/organizations.ts).
    id: '0011_events',
    statements: [
      `CREATE TABLE event_counters (
        org_id uuid PRIMARY KEY,
        -- the last seq given
        last_seq bigint NOT NULL
      )`,
      `CREATE TABLE events (
        -- write order, over all organizations (a transaction that begins after another committed
        -- writes after it); the sequencer numbers in this order
        n bigserial PRIMARY KEY,
        org_id uuid NOT NULL,
        -- null until sequenced
        seq bigint,
        event_id uuid NOT NULL,
        type text NOT NULL,
        team_id uuid,
        -- json, not jsonb: kept as written (the fields in the order the API writes them), and
        -- cheaper to store; nothing queries inside it
        data json NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE UNIQUE INDEX events_org_seq ON events (org_id, seq) WHERE seq IS NOT NULL`,
      // What the sequencer looks for: a probe of an empty index when everything is numbered.
      `CREATE INDEX events_unsequenced ON events (org_id, n) WHERE seq IS NULL`,
      // Retention (service/events/retention.ts) deletes by age.
      `CREATE INDEX events_created ON events (created_at)`,
      // ISO 8601 UTC with milliseconds, as the API writes timestamps (contract §1).
      `CREATE FUNCTION acs_iso(ts timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
         SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
       $$`,
      // Writes one event of p_org, not yet numbered. Takes no lock: call it anywhere in a transaction.
      `CREATE FUNCTION acs_append_event(p_org uuid, p_team uuid, p_type text, p_data json) RETURNS uuid
       LANGUAGE sql AS $$
         INSERT INTO events (org_id, event_id, type, team_id, data)
         VALUES (p_org, gen_random_uuid(), p_type, p_team, p_data)
         RETURNING event_id
       $$`,
      // Numbers up to p_limit committed events of p_org that have no seq yet, in write order, after
      // the organization's last seq, and returns them. The first statement locks the counter row
      // (held until this call's transaction commits); the second runs on a snapshot taken after
      // that, so it sees every event the previous sequencer numbered (PL/pgSQL takes a snapshot
      // per statement). Call it in a transaction of its own: its commit publishes the numbers.
      `CREATE FUNCTION acs_sequence_events(p_org uuid, p_limit integer) RETURNS SETOF events
       LANGUAGE plpgsql AS $$
       DECLARE
         v_last bigint;
         v_count bigint;
       BEGIN
         -- Nothing to number (an organization deleted meanwhile included): no counter row written.
         IF NOT EXISTS (SELECT 1 FROM events WHERE org_id = p_org AND seq IS NULL) THEN RETURN; END IF;
         INSERT INTO event_counters AS c (org_id, last_seq) VALUES (p_org, 0)
           ON CONFLICT (org_id) DO UPDATE SET last_seq = c.last_seq
           RETURNING c.last_seq INTO v_last;
         RETURN QUERY
           WITH todo AS (
             SELECT e.n, row_number() OVER (ORDER BY e.n) AS rn FROM events e
              WHERE e.org_id = p_org AND e.seq IS NULL ORDER BY e.n LIMIT p_limit
           ), numbered AS (
             UPDATE events e SET seq = v_last + todo.rn FROM todo WHERE e.n = todo.n RETURNING e.*
           )
           SELECT * FROM numbered ORDER BY seq;
         GET DIAGNOSTICS v_count = ROW_COUNT;
         UPDATE event_counters SET last_seq = v_last + v_count WHERE org_id = p_org;
       END $$`,
      // thread.opened: the Thread as the API returns it after opening (its fields in the API's
      // order, as every JSON object built here), plus the edge's two participants. A deferred
      // trigger: it runs at commit, once the first message is in (message_count 1).
      `CREATE FUNCTION acs_event_thread_opened() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         v record;
       BEGIN
         SELECT th.*, t.org_id, e.participant_a, e.participant_b INTO v
           FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
          WHERE th.id = NEW.id;
         -- Gone again within its own transaction: nothing happened.
         IF NOT FOUND THEN RETURN NULL; END IF;
         PERFORM acs_append_event(v.org_id, v.team_id, 'thread.opened', json_build_object(
           'thread_id', v.id, 'edge_id', v.edge_id, 'team_id', v.team_id, 'subject', v.subject,
           'message_count', v.message_count, 'unread_count', v.opener_unread, 'channel', v.channel,
           'awaiting_reply_from', v.awaiting_reply_from, 'created_at', acs_iso(v.created_at),
           'participants', json_build_array(v.participant_a, v.participant_b)));
         RETURN NULL;
       END $$`,
      `CREATE CONSTRAINT TRIGGER threads_event AFTER INSERT ON threads DEFERRABLE INITIALLY DEFERRED
       FOR EACH ROW EXECUTE FUNCTION acs_event_thread_opened()`,
      // message.created: the Message plus its edge, team and recipient (the other participant).
      // Deferred like thread.opened, so in a thread's opening its message is written (and
      // numbered) after the thread; a trigger, so every insert path counts and an append stays one
      // statement (acs_append_message).
      `CREATE FUNCTION acs_event_message_created() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         v record;
       BEGIN
         SELECT th.team_id, th.edge_id, t.org_id, e.participant_a, e.participant_b INTO v
           FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
          WHERE th.id = NEW.thread_id;
         IF NOT FOUND THEN RETURN NULL; END IF;
         PERFORM acs_append_event(v.org_id, v.team_id, 'message.created', json_build_object(
           'message_id', NEW.id, 'thread_id', NEW.thread_id, 'sender_id', NEW.sender_id, 'content', NEW.content,
           'attachments', NEW.attachments, 'expects_reply', NEW.expects_reply, 'sent_at', acs_iso(NEW.sent_at),
           'edge_id', v.edge_id, 'team_id', v.team_id,
           'recipient_id', CASE WHEN v.participant_a = NEW.sender_id THEN v.participant_b ELSE v.participant_a END));
         RETURN NULL;
       END $$`,
      `CREATE CONSTRAINT TRIGGER messages_event AFTER INSERT ON messages DEFERRABLE INITIALLY DEFERRED
       FOR EACH ROW EXECUTE FUNCTION acs_event_message_created()`,
    ],
  },
  {
    // Webhooks (contract §9; service/events/webhooks/). A webhook keeps its place in its
    // organization's log (`cursor_seq`): whichever process dispatches creates one delivery row per
    // matching event after it and moves it, in one transaction, so a dispatch that dies changes
    // nothing and no event is skipped or dispatched twice. Deliveries are claimed with FOR UPDATE
    // SKIP LOCKED and leased (next_attempt_at moves to the lease's end), so several processes
    // attempt each one once, and one whose process died is attempted again when its lease ends.
    id: '0012_webhooks',
    statements: [
      `CREATE TABLE webhooks (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        url text NOT NULL,
        -- event types, or families such as 'message.*'
        events text[] NOT NULL,
        description text NOT NULL DEFAULT '',
        status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
        -- why it was disabled by the service (a 410 from the receiver); null when enabled or disabled by hand
        disabled_reason text,
        -- the signing secrets, sealed with the secret box; the previous one signs too until it expires
        secret_sealed text NOT NULL,
        previous_secret_sealed text,
        previous_secret_expires_at timestamptz,
        -- the seq up to which deliveries were created
        cursor_seq bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX webhooks_org ON webhooks (org_id)`,
      `CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY,
        webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        org_id uuid NOT NULL,
        seq bigint NOT NULL,
        event_id uuid NOT NULL,
        event_type text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        -- attempts made so far
        attempt integer NOT NULL DEFAULT 0,
        response_status integer,
        error text,
        duration_ms integer,
        -- pending: when the next attempt is due (a claim moves it to its lease's end); else null
        next_attempt_at timestamptz,
        lease_token uuid,
        -- a retry asked for by hand: one attempt, no schedule after it
        manual boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (webhook_id, seq)
      )`,
      `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
      `CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (updated_at) WHERE status <> 'pending'`,
    ],
  },
  {
    // People sign in to the console (contract §10): one-time sign-in links, server-side sessions
    // (a person's: the humans it acts as; an operator's: the admin routes), and the state of an
    // OpenID Connect login between the redirect to the provider and its callback. Secrets are
    // stored as SHA-256 hashes only, as keys are.
    id: '0013_sessions',
    statements: [
      `CREATE TABLE sign_in_links (
        id uuid PRIMARY KEY,
        token_hash text NOT NULL UNIQUE,
        human_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        -- set when the link is opened: a link works once
        used_at timestamptz
      )`,
      `CREATE INDEX sign_in_links_expires ON sign_in_links(expires_at)`,
      `CREATE TABLE sessions (
        id uuid PRIMARY KEY,
        token_hash text NOT NULL UNIQUE,
        kind text NOT NULL CHECK (kind IN ('person', 'operator')),
        -- how it was started: link, oidc, admin_token
        method text NOT NULL,
        csrf_token text NOT NULL,
        -- the verified email of an OpenID Connect sign-in
        email text,
        -- an operator session ends when the admin token it was started with is no longer the server's
        admin_token_hash text,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz NOT NULL DEFAULT now(),
        -- the absolute end (created_at + 7 days); the idle end is last_used_at + 12 hours
        expires_at timestamptz NOT NULL
      )`,
      `CREATE INDEX sessions_expires ON sessions(expires_at)`,
      // The humans a person's session acts as. Deleting a human (or its team, or its organization)
      // deletes its rows here, and the trigger below ends every session that held one.
      `CREATE TABLE session_humans (
        session_id uuid NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        human_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        PRIMARY KEY (session_id, human_id)
      )`,
      `CREATE INDEX session_humans_human ON session_humans(human_id)`,
      `CREATE FUNCTION acs_end_sessions_of_deleted_human() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM sessions WHERE id = OLD.session_id;
        RETURN NULL;
      END $$`,
      `CREATE TRIGGER session_humans_deleted AFTER DELETE ON session_humans
        FOR EACH ROW EXECUTE FUNCTION acs_end_sessions_of_deleted_human()`,
      `CREATE TABLE oidc_logins (
        state_hash text PRIMARY KEY,
        -- binds the login to the browser that started it (a cookie), against login CSRF
        browser_hash text NOT NULL,
        code_verifier text NOT NULL,
        nonce text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      )`,
    ],
  },
  {
    // Hints of provider keys stored before the rule of api/provider-key-hint.ts (a hint shows the
    // last 4 characters of keys of at least 12, else a fixed mask) are masked when the key may
    // have had fewer than 12 characters. SQL cannot count the characters of a sealed key, but it
    // can count its bytes (the sealed value is base64 of a 12-byte IV, a 16-byte tag and the
    // UTF-8 key), and 11 characters take at most 44 bytes: every short key is masked, and a long
    // key of at most 44 bytes shows the mask until it is set again (its hint is cosmetic).
    id: '0014_provider_key_hints',
    statements: [`UPDATE provider_keys SET key_hint = '****' WHERE octet_length(decode(ciphertext, 'base64')) - 28 <= 44`],
  },
  {
    // What the processes of one database share about themselves. Rate-limit counters
    // (storage/rate-limit-store.ts): one row per bucket (an API key, an agent, a client address)
    // and its current fixed window; PGlite keeps its counters in memory. The running processes
    // with their heartbeats (storage/server-instance.ts), and which one claimed an
    // Idempotency-Key, so that a claim of a process that died is taken over at once. UNLOGGED:
    // neither needs the write-ahead log; a crash that empties them starts every window afresh and
    // leaves every claim's process unknown, hence dead, which it is. And whether a claim's work
    // committed.
    id: '0015_process_state',
    statements: [
      `CREATE UNLOGGED TABLE rate_limits (bucket text PRIMARY KEY, hits bigint NOT NULL, reset_at timestamptz NOT NULL)`,
      `CREATE UNLOGGED TABLE server_instances (id uuid PRIMARY KEY, heartbeat_at timestamptz NOT NULL DEFAULT now())`,
      `ALTER TABLE idempotency_keys ADD COLUMN claimed_by uuid`,
      // Set in the transaction of the request's own writes (domain/idempotency.ts): a claim whose
      // work committed is never run again, even when its process died before storing the answer.
      `ALTER TABLE idempotency_keys ADD COLUMN committed boolean NOT NULL DEFAULT false`,
    ],
  },
  {
    // What teamctl needs to manage webhooks as code and to wait on them (issue 19, teamctl side):
    //
    // - A webhook may have a `name`, unique in its organization (a definition's webhooks are
    //   matched to the live ones by it, as teams by theirs), and carries a `secret_fingerprint`: a
    //   salted HMAC of its current secret, from which nobody can recover the secret but by which a
    //   holder of a candidate secret can tell whether it is the webhook's (plan compares the
    //   definition's secret with it). Webhooks created before have none stored: the service
    //   computes one when it reads them.
    // - A message records which message it answers (`answers_message_id`): the message of the
    //   other participant that expected a reply (`expects_reply`), when this one is the first of
    //   its sender since. `message.created` carries it, so a receiver can tell a reply a program
    //   waits for from chatter without asking anything. The thread keeps the id of the message
    //   whose answer it awaits beside `awaiting_reply_from`; the append reads both under the
    //   thread's row lock, before it moves them.
    id: '0017_webhook_names_and_answers',
    statements: [
      `ALTER TABLE webhooks ADD COLUMN name text`,
      `ALTER TABLE webhooks ADD COLUMN secret_fingerprint text`,
      `CREATE UNIQUE INDEX webhooks_org_name ON webhooks (org_id, name) WHERE name IS NOT NULL`,
      `ALTER TABLE messages ADD COLUMN answers_message_id uuid`,
      `ALTER TABLE threads ADD COLUMN awaited_message_id uuid`,
      // Threads awaiting an answer now: the latest message that expects one set it.
      `UPDATE threads th SET awaited_message_id = (
         SELECT m.id FROM messages m WHERE m.thread_id = th.id AND m.expects_reply ORDER BY m.seq DESC LIMIT 1)
        WHERE th.awaiting_reply_from IS NOT NULL`,
      // As 0016's, plus: the thread's awaited message (read under its row lock) becomes the new
      // message's answers_message_id when the thread awaited this sender; awaited_message_id moves
      // with awaiting_reply_from.
      `CREATE OR REPLACE FUNCTION acs_append_message(
         p_id uuid, p_thread uuid, p_sender uuid, p_content text, p_attachments jsonb, p_reply_to uuid,
         p_org uuid, p_key uuid, p_expects_reply boolean,
         OUT outcome text, OUT message_seq integer, OUT message_sent_at timestamptz, OUT thread_org uuid)
       LANGUAGE plpgsql AS $$
       DECLARE
         v_a uuid;
         v_b uuid;
         v_answers uuid;
       BEGIN
         IF p_key IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM org_keys k
              WHERE k.id = p_key AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) THEN
           outcome := 'invalid_api_key';
           RETURN;
         END IF;
         -- The lock the update below takes anyway, taken first: what the thread awaited before this message.
         SELECT CASE WHEN th.awaiting_reply_from = p_sender THEN th.awaited_message_id END INTO v_answers
           FROM threads th WHERE th.id = p_thread FOR UPDATE;
         UPDATE threads th
            SET message_count = th.message_count + 1,
                opener_unread = th.opener_unread + CASE WHEN th.opener_id = p_sender THEN 0 ELSE 1 END,
                awaiting_reply_from = CASE
                  WHEN p_expects_reply THEN CASE WHEN e.participant_a = p_sender THEN e.participant_b ELSE e.participant_a END
                  WHEN th.awaiting_reply_from = p_sender THEN NULL
                  ELSE th.awaiting_reply_from END,
                awaited_message_id = CASE
                  WHEN p_expects_reply THEN p_id
                  WHEN th.awaiting_reply_from = p_sender THEN NULL
                  ELSE th.awaited_message_id END
           FROM edges e, teams t, organizations o
          WHERE th.id = p_thread AND e.id = th.edge_id AND t.id = th.team_id AND o.id = t.org_id
            AND (p_org IS NULL OR ((o.id = p_org OR o.provisioned_by = p_org) AND p_sender IN (e.participant_a, e.participant_b)))
            AND (jsonb_array_length(p_attachments) = 0 OR NOT EXISTS (
                  SELECT 1 FROM jsonb_array_elements_text(p_attachments) AS named(id)
                   WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.id = named.id::uuid AND a.org_id = t.org_id)))
         RETURNING th.message_count, t.org_id INTO message_seq, thread_org;
         IF NOT FOUND THEN
           SELECT t.org_id, e.participant_a, e.participant_b INTO thread_org, v_a, v_b
             FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
             JOIN organizations o ON o.id = t.org_id
            WHERE th.id = p_thread AND (p_org IS NULL OR o.id = p_org OR o.provisioned_by = p_org);
           IF NOT FOUND THEN
             outcome := 'not_found';
           ELSIF p_org IS NOT NULL AND p_sender IS DISTINCT FROM v_a AND p_sender IS DISTINCT FROM v_b THEN
             outcome := 'not_a_participant';
           ELSE
             outcome := 'unknown_reference';
           END IF;
           RETURN;
         END IF;
         INSERT INTO messages (id, thread_id, seq, sender_id, content, attachments, reply_to, expects_reply, answers_message_id)
         VALUES (p_id, p_thread, message_seq, p_sender, p_content, p_attachments, p_reply_to, p_expects_reply, v_answers)
         RETURNING sent_at INTO message_sent_at;
         outcome := 'ok';
       END $$`,
      // As 0011's, plus answers_message_id.
      `CREATE OR REPLACE FUNCTION acs_event_message_created() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         v record;
       BEGIN
         SELECT th.team_id, th.edge_id, t.org_id, e.participant_a, e.participant_b INTO v
           FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
          WHERE th.id = NEW.thread_id;
         IF NOT FOUND THEN RETURN NULL; END IF;
         PERFORM acs_append_event(v.org_id, v.team_id, 'message.created', json_build_object(
           'message_id', NEW.id, 'thread_id', NEW.thread_id, 'sender_id', NEW.sender_id, 'content', NEW.content,
           'attachments', NEW.attachments, 'expects_reply', NEW.expects_reply, 'sent_at', acs_iso(NEW.sent_at),
           'edge_id', v.edge_id, 'team_id', v.team_id,
           'recipient_id', CASE WHEN v.participant_a = NEW.sender_id THEN v.participant_b ELSE v.participant_a END,
           'answers_message_id', NEW.answers_message_id));
         RETURN NULL;
       END $$`,
    ],
  },
  {
    // The append returns the thread's counters as its own update left them (its unread count and
    // whom it awaits), so that a long poll of the thread in the appending process can answer with
    // the new message at once, as a read right after the commit would (domain/threads.ts,
    // getThreadPage), instead of reading the page again. Otherwise as 0017's.
    id: '0018_append_returns_thread',
    statements: [
      `DROP FUNCTION acs_append_message(uuid, uuid, uuid, text, jsonb, uuid, uuid, uuid, boolean)`,
      `CREATE FUNCTION acs_append_message(
         p_id uuid, p_thread uuid, p_sender uuid, p_content text, p_attachments jsonb, p_reply_to uuid,
         p_org uuid, p_key uuid, p_expects_reply boolean,
         OUT outcome text, OUT message_seq integer, OUT message_sent_at timestamptz, OUT thread_org uuid,
         OUT thread_unread integer, OUT thread_awaiting uuid)
       LANGUAGE plpgsql AS $$
       DECLARE
         v_a uuid;
         v_b uuid;
         v_answers uuid;
       BEGIN
         IF p_key IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM org_keys k
              WHERE k.id = p_key AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) THEN
           outcome := 'invalid_api_key';
           RETURN;
         END IF;
         -- The lock the update below takes anyway, taken first: what the thread awaited before this message.
         SELECT CASE WHEN th.awaiting_reply_from = p_sender THEN th.awaited_message_id END INTO v_answers
           FROM threads th WHERE th.id = p_thread FOR UPDATE;
         UPDATE threads th
            SET message_count = th.message_count + 1,
                opener_unread = th.opener_unread + CASE WHEN th.opener_id = p_sender THEN 0 ELSE 1 END,
                awaiting_reply_from = CASE
                  WHEN p_expects_reply THEN CASE WHEN e.participant_a = p_sender THEN e.participant_b ELSE e.participant_a END
                  WHEN th.awaiting_reply_from = p_sender THEN NULL
                  ELSE th.awaiting_reply_from END,
                awaited_message_id = CASE
                  WHEN p_expects_reply THEN p_id
                  WHEN th.awaiting_reply_from = p_sender THEN NULL
                  ELSE th.awaited_message_id END
           FROM edges e, teams t, organizations o
          WHERE th.id = p_thread AND e.id = th.edge_id AND t.id = th.team_id AND o.id = t.org_id
            AND (p_org IS NULL OR ((o.id = p_org OR o.provisioned_by = p_org) AND p_sender IN (e.participant_a, e.participant_b)))
            AND (jsonb_array_length(p_attachments) = 0 OR NOT EXISTS (
                  SELECT 1 FROM jsonb_array_elements_text(p_attachments) AS named(id)
                   WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.id = named.id::uuid AND a.org_id = t.org_id)))
         RETURNING th.message_count, t.org_id, th.opener_unread, th.awaiting_reply_from
           INTO message_seq, thread_org, thread_unread, thread_awaiting;
         IF NOT FOUND THEN
           SELECT t.org_id, e.participant_a, e.participant_b INTO thread_org, v_a, v_b
             FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
             JOIN organizations o ON o.id = t.org_id
            WHERE th.id = p_thread AND (p_org IS NULL OR o.id = p_org OR o.provisioned_by = p_org);
           IF NOT FOUND THEN
             outcome := 'not_found';
           ELSIF p_org IS NOT NULL AND p_sender IS DISTINCT FROM v_a AND p_sender IS DISTINCT FROM v_b THEN
             outcome := 'not_a_participant';
           ELSE
             outcome := 'unknown_reference';
           END IF;
           RETURN;
         END IF;
         INSERT INTO messages (id, thread_id, seq, sender_id, content, attachments, reply_to, expects_reply, answers_message_id)
         VALUES (p_id, p_thread, message_seq, p_sender, p_content, p_attachments, p_reply_to, p_expects_reply, v_answers)
         RETURNING sent_at INTO message_sent_at;
         outcome := 'ok';
       END $$`,
    ],
  },
  {
    // Every write of a request holding an Idempotency-Key marks its claim committed by claim_id
    // (domain/idempotency.ts, markingCommits), inside the write's transaction and so while the
    // write's locks are held (a thread's row, for an append). Without an index that was a scan of
    // every unexpired key: 3.3 ms on average 100 s into the soak and growing with the table, and the
    // appends behind the thread's lock waited for it.
    id: '0019_idempotency_claim_index',
    statements: [`CREATE INDEX idempotency_keys_claim ON idempotency_keys(claim_id)`],
  },
  {
    // A team's edge count (domain/teams.ts), which every create of an agent, a human or an edge
    // reads inside its transaction, and the cascade of a team's delete find its edges by team.
    // Without an index that was a scan of every edge of every organization: 0.56 ms a create on
    // average over a 40,000-create benchmark, growing with the table, and the service's create
    // rate fell by a sixth within a minute (docs/performance.md).
    id: '0020_edges_team_index',
    statements: [`CREATE INDEX edges_team ON edges(team_id)`],
  },
  {
    // The other foreign keys without an index on their columns: deleting the row they refer to
    // (a team, an organization, a human) had the database scan the whole referencing table for
    // its cascade. A team's delete with 100,000 threads stored took 8.5 ms for that scan alone
    // (0.2 ms with the index), growing with the table and under the team's lock.
    id: '0021_foreign_key_indexes',
    statements: [
      `CREATE INDEX threads_team ON threads(team_id)`,
      `CREATE INDEX access_requests_org ON access_requests(org_id)`,
      `CREATE INDEX sign_in_links_human ON sign_in_links(human_id)`,
    ],
  },
  {
    // Agents that act (contract §11): what an agent may call, its turns and their tool calls.
    //
    // - An agent's `tools` is stored in the form the API returns it (each MCP header as a
    //   fingerprint, never its value); the header values are sealed together in `tool_secrets`
    //   (the secret box, as provider keys), opened only for a connection to the server.
    // - A turn answers one incoming message of a provider agent with tools: its finished steps
    //   (the model's messages) are stored as they finish, so any process resumes it after a crash.
    //   At most one turn per (agent, message), also across processes.
    // - A tool call is a row written before its result is used. `wait_*` say where an ask or an
    //   approval waits for its answer (the participant asked, the thread, the question and the
    //   thread's seq after which an answer counts); a message of that participant in that thread
    //   makes the turn's work row due (the trigger below), so a suspended turn holds nothing.
    // - A work row leased by a process records which (`claimed_by`): a process that dies gives its
    //   rows up as soon as its heartbeat is stale, not only when the lease runs out.
    id: '0022_agents_act',
    statements: [
      `ALTER TABLE participants ADD COLUMN max_steps integer NOT NULL DEFAULT 10`,
      `ALTER TABLE participants ADD COLUMN tools jsonb`,
      `ALTER TABLE participants ADD COLUMN tool_secrets text`,
      `ALTER TABLE agent_work ADD COLUMN claimed_by uuid`,
      `CREATE INDEX agent_work_leased ON agent_work (claimed_by) WHERE lease_token IS NOT NULL`,
      `CREATE TABLE agent_turns (
        id uuid PRIMARY KEY,
        agent_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        message_id uuid NOT NULL,
        message_seq integer NOT NULL,
        org_id uuid NOT NULL,
        team_id uuid NOT NULL,
        state text NOT NULL DEFAULT 'running',
        steps integer NOT NULL DEFAULT 0,
        transcript jsonb NOT NULL DEFAULT '[]',
        reply_id uuid,
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        UNIQUE (agent_id, message_id)
      )`,
      `CREATE INDEX agent_turns_open ON agent_turns (agent_id, thread_id) WHERE state IN ('running', 'suspended')`,
      `CREATE INDEX agent_turns_thread ON agent_turns (thread_id)`,
      `CREATE TABLE tool_calls (
        id uuid PRIMARY KEY,
        seq bigint GENERATED BY DEFAULT AS IDENTITY,
        turn_id uuid NOT NULL REFERENCES agent_turns(id) ON DELETE CASCADE,
        org_id uuid NOT NULL,
        team_id uuid NOT NULL,
        agent_id uuid NOT NULL,
        thread_id uuid NOT NULL,
        message_id uuid NOT NULL,
        step integer NOT NULL,
        idx integer NOT NULL,
        model_call_id text NOT NULL,
        model_name text NOT NULL,
        tool text NOT NULL,
        server text,
        arguments jsonb NOT NULL,
        status text NOT NULL,
        result jsonb,
        error text,
        wait_participant uuid,
        wait_thread uuid,
        wait_message uuid,
        wait_after_seq integer,
        wait_deadline timestamptz,
        attempts integer NOT NULL DEFAULT 0,
        started_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        UNIQUE (turn_id, step, idx)
      )`,
      `CREATE INDEX tool_calls_thread ON tool_calls (thread_id, seq)`,
      `CREATE INDEX tool_calls_waiting ON tool_calls (wait_thread) WHERE wait_thread IS NOT NULL AND status IN ('running', 'awaiting_approval')`,
      // An answer to an ask or an approval wakes the turn that waits for it: its work row becomes
      // due now (or, held under a claim, due when its holder parks it, as agent-work.ts wakes).
      `CREATE FUNCTION acs_wake_waiting_turns() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         UPDATE agent_work w SET due_at = CASE WHEN w.lease_token IS NULL THEN now() ELSE w.due_at END,
                                 woken = w.lease_token IS NOT NULL
           FROM tool_calls c
          WHERE c.wait_thread = NEW.thread_id AND c.wait_participant = NEW.sender_id
            AND c.status IN ('running', 'awaiting_approval')
            AND w.agent_id = c.agent_id AND w.thread_id = c.thread_id;
         RETURN NULL;
       END $$`,
      `CREATE TRIGGER messages_wake_turns AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION acs_wake_waiting_turns()`,
    ],
  },
  {
    // Replies as they are written (events/deltas.ts, events/thread-stream.ts).
    //
    // - A thread's stream orders its messages and its live items (deltas of a reply, the steps and
    //   tool calls of its turns) in one sequence: message m at m, the items after it at m.1, m.2, …
    //   `stream_after`/`stream_k` are where the last item went; an item takes the next position
    //   under the thread's row lock (the one an append takes), so positions commit in order.
    // - Live items are kept ten minutes for readers that resume: they are a view of a reply being
    //   written, not a record (the reply itself is the message). The table is logged all the same:
    //   on PGlite the database dies with acs-server, and a crash empties an unlogged table, so a
    //   reply retried after a kill -9 could not say it restarted, nor go on with its deltas'
    //   indexes; and each item's transaction writes the write-ahead log anyway (the thread's
    //   position counter), so logging costs an item little more.
    // - A reply stopped by a person (POST …/stop) is posted with `stopped`; `message.created` says
    //   so (the deferred trigger reads the flag, which the reply's transaction sets after its insert).
    // - A stop asked of a turn, or of a reply in progress (`agent_work`), is a flag the process
    //   running it is told of; `agent_work.reply_id` fixes a plain reply's id when its call starts,
    //   so a retried reply keeps it and its stream can say it restarted.
    id: '0023_thread_streams',
    statements: [
      `ALTER TABLE threads ADD COLUMN stream_after integer NOT NULL DEFAULT 0`,
      `ALTER TABLE threads ADD COLUMN stream_k integer NOT NULL DEFAULT 0`,
      `CREATE TABLE thread_stream (
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        after_seq integer NOT NULL,
        k integer NOT NULL,
        type text NOT NULL,
        data jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (thread_id, after_seq, k)
      )`,
      `CREATE INDEX thread_stream_created ON thread_stream (created_at)`,
      `ALTER TABLE messages ADD COLUMN stopped boolean NOT NULL DEFAULT false`,
      `ALTER TABLE agent_turns ADD COLUMN stop_requested boolean NOT NULL DEFAULT false`,
      `ALTER TABLE agent_work ADD COLUMN stop_requested boolean NOT NULL DEFAULT false`,
      `ALTER TABLE agent_work ADD COLUMN reply_id uuid`,
      // As 0017's, plus `stopped`, read from the row as the transaction leaves it.
      `CREATE OR REPLACE FUNCTION acs_event_message_created() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         v record;
       BEGIN
         SELECT th.team_id, th.edge_id, t.org_id, e.participant_a, e.participant_b,
                (SELECT m.stopped FROM messages m WHERE m.id = NEW.id) AS stopped INTO v
           FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
          WHERE th.id = NEW.thread_id;
         IF NOT FOUND THEN RETURN NULL; END IF;
         PERFORM acs_append_event(v.org_id, v.team_id, 'message.created', json_build_object(
           'message_id', NEW.id, 'thread_id', NEW.thread_id, 'sender_id', NEW.sender_id, 'content', NEW.content,
           'attachments', NEW.attachments, 'expects_reply', NEW.expects_reply, 'sent_at', acs_iso(NEW.sent_at),
           'stopped', COALESCE(v.stopped, false),
           'edge_id', v.edge_id, 'team_id', v.team_id,
           'recipient_id', CASE WHEN v.participant_a = NEW.sender_id THEN v.participant_b ELSE v.participant_a END,
           'answers_message_id', NEW.answers_message_id));
         RETURN NULL;
       END $$`,
    ],
  },
  {
    // The delivery log lists each attempt (contract §9, "lists attempts"), not only the latest:
    // one row per attempt, written with the delivery's row when the attempt's outcome is recorded.
    // Deliveries recorded before keep their latest attempt, the only one stored: listed as it was.
    id: '0024_webhook_delivery_attempts',
    statements: [
      `CREATE TABLE webhook_delivery_attempts (
        delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt integer NOT NULL,
        -- what the delivery became after it: delivered, pending (retried at next_attempt_at), failed
        status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        response_status integer,
        error text,
        duration_ms integer,
        next_attempt_at timestamptz,
        -- when the attempt began (its claim)
        created_at timestamptz NOT NULL,
        PRIMARY KEY (delivery_id, attempt)
      )`,
      // The latest attempt of each delivery stored before: recorded (no lease held), with an outcome.
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status, response_status, error, duration_ms, next_attempt_at, created_at)
       SELECT id, attempt,
              CASE WHEN error IS NULL THEN 'delivered' WHEN status = 'pending' AND NOT manual THEN 'pending' ELSE 'failed' END,
              response_status, error, duration_ms,
              CASE WHEN error IS NOT NULL AND status = 'pending' AND NOT manual THEN next_attempt_at END,
              updated_at - make_interval(secs => COALESCE(duration_ms, 0) / 1000.0)
         FROM webhook_deliveries
        WHERE attempt > 0 AND lease_token IS NULL AND (response_status IS NOT NULL OR error IS NOT NULL)`,
    ],
  },
  {
    // A human's own message moves the human's read mark past everything before it: whoever
    // answers a thread has read what it answers, by whichever way the answer came (the console,
    // `teamctl thread send --from dana`, REST, a pipeline step written in the human's name). Before,
    // only the console's "mark read" moved a human's mark, so a thread answered from the CLI stayed
    // unread in the console. The mark (thread_reads) goes to the message's seq, never back, and a
    // human opener's unread counter goes to 0 (no message of the peer can follow the new one yet:
    // the thread's row is locked). Agents' marks do not move: over MCP a mark is the cursor of
    // wait_for_messages, and moving it past a peer's message written while the agent was writing
    // would take that message from it unseen. Otherwise as 0018's.
    id: '0025_own_message_marks_read',
    statements: [
      `CREATE OR REPLACE FUNCTION acs_append_message(
         p_id uuid, p_thread uuid, p_sender uuid, p_content text, p_attachments jsonb, p_reply_to uuid,
         p_org uuid, p_key uuid, p_expects_reply boolean,
         OUT outcome text, OUT message_seq integer, OUT message_sent_at timestamptz, OUT thread_org uuid,
         OUT thread_unread integer, OUT thread_awaiting uuid)
       LANGUAGE plpgsql AS $$
       DECLARE
         v_a uuid;
         v_b uuid;
         v_answers uuid;
         v_human boolean;
       BEGIN
         IF p_key IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM org_keys k
              WHERE k.id = p_key AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) THEN
           outcome := 'invalid_api_key';
           RETURN;
         END IF;
         SELECT p.kind = 'human' INTO v_human FROM participants p WHERE p.id = p_sender;
         -- The lock the update below takes anyway, taken first: what the thread awaited before this message.
         SELECT CASE WHEN th.awaiting_reply_from = p_sender THEN th.awaited_message_id END INTO v_answers
           FROM threads th WHERE th.id = p_thread FOR UPDATE;
         UPDATE threads th
            SET message_count = th.message_count + 1,
                opener_unread = CASE WHEN th.opener_id <> p_sender THEN th.opener_unread + 1
                                     WHEN v_human THEN 0 ELSE th.opener_unread END,
                awaiting_reply_from = CASE
                  WHEN p_expects_reply THEN CASE WHEN e.participant_a = p_sender THEN e.participant_b ELSE e.participant_a END
                  WHEN th.awaiting_reply_from = p_sender THEN NULL
                  ELSE th.awaiting_reply_from END,
                awaited_message_id = CASE
                  WHEN p_expects_reply THEN p_id
                  WHEN th.awaiting_reply_from = p_sender THEN NULL
                  ELSE th.awaited_message_id END
           FROM edges e, teams t, organizations o
          WHERE th.id = p_thread AND e.id = th.edge_id AND t.id = th.team_id AND o.id = t.org_id
            AND (p_org IS NULL OR ((o.id = p_org OR o.provisioned_by = p_org) AND p_sender IN (e.participant_a, e.participant_b)))
            AND (jsonb_array_length(p_attachments) = 0 OR NOT EXISTS (
                  SELECT 1 FROM jsonb_array_elements_text(p_attachments) AS named(id)
                   WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.id = named.id::uuid AND a.org_id = t.org_id)))
         RETURNING th.message_count, t.org_id, th.opener_unread, th.awaiting_reply_from
           INTO message_seq, thread_org, thread_unread, thread_awaiting;
         IF NOT FOUND THEN
           SELECT t.org_id, e.participant_a, e.participant_b INTO thread_org, v_a, v_b
             FROM threads th JOIN edges e ON e.id = th.edge_id JOIN teams t ON t.id = th.team_id
             JOIN organizations o ON o.id = t.org_id
            WHERE th.id = p_thread AND (p_org IS NULL OR o.id = p_org OR o.provisioned_by = p_org);
           IF NOT FOUND THEN
             outcome := 'not_found';
           ELSIF p_org IS NOT NULL AND p_sender IS DISTINCT FROM v_a AND p_sender IS DISTINCT FROM v_b THEN
             outcome := 'not_a_participant';
           ELSE
             outcome := 'unknown_reference';
           END IF;
           RETURN;
         END IF;
         INSERT INTO messages (id, thread_id, seq, sender_id, content, attachments, reply_to, expects_reply, answers_message_id)
         VALUES (p_id, p_thread, message_seq, p_sender, p_content, p_attachments, p_reply_to, p_expects_reply, v_answers)
         RETURNING sent_at INTO message_sent_at;
         IF v_human THEN
           INSERT INTO thread_reads (thread_id, participant_id, read_seq) VALUES (p_thread, p_sender, message_seq)
           ON CONFLICT (thread_id, participant_id) DO UPDATE SET read_seq = GREATEST(thread_reads.read_seq, EXCLUDED.read_seq);
         END IF;
         outcome := 'ok';
       END $$`,
    ],
  },
  {
    // Messages a person wrote in the console (a session's routes, contract §10) say so, to tell
    // them from messages written in a human's name through an organization key — a pipeline step
    // whose `from` is the human: the console's inbox groups a thread whose latest message of the
    // human asks the peer (`expects_reply`) and was not written in the console apart from what
    // awaits the person (domain/person-reach.ts). Messages written before are taken as not.
    id: '0026_messages_via_session',
    statements: [`ALTER TABLE messages ADD COLUMN via_session boolean NOT NULL DEFAULT false`],
  },
  {
    // Tasks (contract §12; domain/tasks.ts): a unit of work one participant of an edge (the
    // requester) asks of the other (the assignee), in the shape of the Agent2Agent protocol's Task.
    // Its conversation is a thread on the edge, one task per thread (the thread is opened with the
    // task, and its id is the task's A2A context id). `seq` orders a team's tasks newest first
    // (total even within one millisecond), and `after` cursors walk it. The state moves by
    // conditional updates that never leave a final state (completed, failed, canceled, rejected).
    // `status_message_id`: the message of the thread that came with the latest change of state, or
    // null. Artifacts are what the assignee produced, in the order they were added (`seq`).
    // Requester and assignee are the edge's participants, so they need no foreign key of their
    // own: a participant on an edge cannot be deleted, and the edge's deletion takes its tasks.
    id: '0027_tasks',
    statements: [
      `CREATE TABLE tasks (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        org_id uuid NOT NULL,
        team_id uuid NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        edge_id uuid NOT NULL REFERENCES edges(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL UNIQUE REFERENCES threads(id) ON DELETE CASCADE,
        requester_id uuid NOT NULL,
        assignee_id uuid NOT NULL,
        title text NOT NULL DEFAULT '',
        state text NOT NULL DEFAULT 'submitted'
          CHECK (state IN ('submitted', 'working', 'input-required', 'completed', 'failed', 'canceled', 'rejected')),
        status_message_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (requester_id <> assignee_id)
      )`,
      // A team's tasks newest first, all of them or of one state; a participant's, by either role.
      `CREATE INDEX tasks_team ON tasks (team_id, seq)`,
      `CREATE INDEX tasks_team_state ON tasks (team_id, state, seq)`,
      `CREATE INDEX tasks_assignee ON tasks (assignee_id, seq)`,
      `CREATE INDEX tasks_requester ON tasks (requester_id, seq)`,
      `CREATE INDEX tasks_edge ON tasks (edge_id)`,
      `CREATE TABLE task_artifacts (
        id uuid PRIMARY KEY,
        seq bigint GENERATED BY DEFAULT AS IDENTITY,
        task_id uuid NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        name text,
        parts jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX task_artifacts_task ON task_artifacts (task_id, seq)`,
    ],
  },
  {
    // Remote A2A agents as teammates (contract §12, "A2A participants"; service/a2a/remote-*.ts).
    // - `participants.a2a`: the agent's `a2a` in the API's form (URL, header fingerprints);
    //   `a2a_secrets`: its header values, sealed as provider keys are. An agent has a provider or
    //   `a2a`, never both.
    // - Messages give a remote A2A agent work as they give a provider agent (the trigger of 0009,
    //   now for either), so its exchanges are claimed, leased and retried by the agent loop.
    // - `a2a_exchanges`: per (remote agent, thread) the remote's task (its id and context id, its
    //   last state seen) and the message of ours being sent to it (set before it is sent), so a
    //   process that takes the work over asks the remote about that task rather than losing it.
    // - `a2a_posted`: what of the remote's answers was already recorded (its message ids, its
    //   artifact ids, its final answer), written in the transaction that posts it: after a crash
    //   or a remote that starts over, nothing is posted twice.
    id: '0028_a2a_participants',
    statements: [
      `ALTER TABLE participants ADD COLUMN a2a jsonb`,
      `ALTER TABLE participants ADD COLUMN a2a_secrets text`,
      `CREATE OR REPLACE FUNCTION acs_agent_work_on_message() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO agent_work (agent_id, thread_id, latest_seq)
         SELECT p.id, NEW.thread_id, NEW.seq
           FROM threads th JOIN edges e ON e.id = th.edge_id
           JOIN participants p ON p.id IN (e.participant_a, e.participant_b)
          WHERE th.id = NEW.thread_id AND p.id <> NEW.sender_id AND p.kind = 'agent' AND (p.provider IS NOT NULL OR p.a2a IS NOT NULL)
         ON CONFLICT (agent_id, thread_id) DO UPDATE SET latest_seq = GREATEST(agent_work.latest_seq, EXCLUDED.latest_seq);
         RETURN NULL;
       END $$`,
      `CREATE TABLE a2a_exchanges (
        agent_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        remote_task_id text,
        remote_context_id text,
        remote_state text,
        -- the message of ours being sent (null once the remote's answer to it is recorded)
        message_id uuid,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent_id, thread_id)
      )`,
      `CREATE INDEX a2a_exchanges_thread ON a2a_exchanges (thread_id)`,
      `CREATE TABLE a2a_posted (
        agent_id uuid NOT NULL REFERENCES participants(id) ON DELETE CASCADE,
        thread_id uuid NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        remote_key text NOT NULL,
        -- the message of the thread it was posted as (null for an artifact)
        message_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent_id, thread_id, remote_key)
      )`,
      `CREATE INDEX a2a_posted_thread ON a2a_posted (thread_id)`,
    ],
  },
  {
    // A2A push-notification configs (contract §12, service/a2a/push-configs.ts): a webhook scoped
    // to one task, so the §9 worker signs, retries and logs its deliveries like any other.
    id: '0029_a2a_push_configs',
    statements: [
      // The task whose task.* events it delivers (null: an organization's webhook of §9). A task
      // deleted with its edge takes its configs and their delivery log with it.
      `ALTER TABLE webhooks ADD COLUMN task_id uuid REFERENCES tasks(id) ON DELETE CASCADE`,
      // The config's id as A2A names it (the client's, or the webhook's id when it gave none)
      `ALTER TABLE webhooks ADD COLUMN push_config_id text`,
      // A2A's token, sealed with the secret box (sent back as X-A2A-Notification-Token)
      `ALTER TABLE webhooks ADD COLUMN push_token_sealed text`,
      // A2A's authentication: its scheme, and its credentials sealed (never returned)
      `ALTER TABLE webhooks ADD COLUMN push_auth_scheme text`,
      `ALTER TABLE webhooks ADD COLUMN push_auth_sealed text`,
      // the calling agent that set it
      `ALTER TABLE webhooks ADD COLUMN created_by uuid`,
      // set when the task's final state was dispatched: nothing is dispatched after it
      `ALTER TABLE webhooks ADD COLUMN ended_at timestamptz`,
      `CREATE UNIQUE INDEX webhooks_push_config ON webhooks (task_id, push_config_id) WHERE task_id IS NOT NULL`,
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
