/** `teamctl keys rotate`: rotates the organization key the CLI runs with. */
import { unlink, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import ms from 'ms';
import { AcsClient } from '../../client/acs-client.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { activeKeyEnv, clientFor, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/** Longest grace the contract allows (§5 rotate: 0–2,592,000 s). */
const MAX_GRACE_SECONDS = 2_592_000;

/** Parses a grace period: whole seconds (`0`, `3600`) or a duration (`90s`, `30m`, `24h`, `7d`). */
export function graceSeconds(value: string): number {
  // `ms` reads a bare number as milliseconds; here it means seconds.
  const millis: number | undefined = /^\d+$/.test(value) ? Number(value) * 1000 : ms(value as ms.StringValue);
  const seconds = typeof millis === 'number' ? millis / 1000 : NaN;
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_GRACE_SECONDS) {
    throw new InvalidArgumentError(`not a grace period of 0 s to 30 days (e.g. 0, 90s, 30m, 24h): ${value}`);
  }
  return seconds;
}

/**
 * Registers `keys rotate`: finds the organization key the CLI runs with (the first variable of
 * the `--api-key-env` keyring that is set, found by its prefix among the keys of the
 * organizations it reaches), rotates it through the contract's rotate route (§5),
 * prints the new key once on stdout (details on stderr) or writes it to `--out FILE` (created
 * with mode 0600; an existing file is refused) — before anything else can fail — and then checks
 * that the service accepts it (exit 1 with the key saved when it does not). The old key
 * stops working after `--grace` (default 24h; 0 at once). Errors: `invalid_usage` (key not found
 * or ambiguous, file exists), `unresolved_secret` (no variable of the keyring set),
 * `invalid_api_key`, `key_limit`.
 */
export function registerKeys(program: Command, io: CliIo, run: Runner): void {
  const keys = program.command('keys').description('The organization keys teamctl runs with.');
  connectionOptions(
    keys
      .command('rotate')
      .description('Rotate the organization key in use: issue a new key, check it works, print it once (or write it to --out); the old key expires after --grace.')
      .addOption(new Option('--grace <duration>', 'how long the old key keeps working: seconds or 90s, 30m, 24h, 7d (0 = revoke at once)').argParser(graceSeconds).default(86_400, '24h'))
      .option('--out <file>', 'write the new key to this file (mode 0600) instead of printing it')
      .option('--json', 'print the new key and its details as JSON'),
  ).action((opts: { grace: number; out?: string; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const connection = resolveConnection(opts, io.env);
      // The key in use: the first variable of the keyring that is set (no failover here: the
      // key to rotate is that very key).
      const keyEnv = activeKeyEnv(connection, io.env);
      const secret = io.env[keyEnv] as string;
      const client = clientFor(connection, io.env);
      const mine = [];
      for (const org of await client.listOrganizations()) {
        for (const key of await client.listOrgKeys(org.org_id)) if (secret.startsWith(key.prefix)) mine.push({ org, key });
      }
      if (mine.length === 0) throw new ToolkitError('invalid_usage', `the key in ${keyEnv} is not among the active keys of the organizations it reaches`);
      if (mine.length > 1) throw new ToolkitError('invalid_usage', `the key in ${keyEnv} matches ${mine.length} keys by prefix; rotate it with the API (POST /organizations/{org_id}/keys/{key_id}/rotate)`);
      const { org, key } = mine[0]!;
      if (opts.out) {
        // Refuse before rotating, so a taken path never costs the only copy of the new key.
        await writeFile(opts.out, '', { flag: 'wx', mode: 0o600 }).catch((error: NodeJS.ErrnoException) => {
          throw new ToolkitError('invalid_usage', `--out ${opts.out}: ${error.code === 'EEXIST' ? 'the file exists; choose a new path' : error.message}`);
        });
      }
      let rotated;
      try {
        rotated = await client.rotateOrgKey(org.org_id, key.key_id, opts.grace);
      } catch (error) {
        if (opts.out) await unlink(opts.out).catch(() => undefined);
        throw error;
      }
      const { api_key: newKey, ...details } = rotated;
      // The new key exists only in this answer: save or print it before anything else can fail.
      if (opts.out) await writeFile(opts.out, `${newKey}\n`, { mode: 0o600 });
      const oldExpires = opts.grace === 0 ? 'now' : new Date(Date.now() + opts.grace * 1000).toISOString();
      if (opts.json) io.stdout(JSON.stringify({ organization: org.org_name, old_key_id: key.key_id, old_key_expires_at: opts.grace === 0 ? null : oldExpires, ...details, ...(opts.out ? { written_to: opts.out } : { api_key: newKey }) }, null, 2));
      else if (!opts.out) io.stdout(newKey);
      const works = await new AcsClient({ baseUrl: connection.baseUrl, apiKey: newKey })
        .listOrganizations()
        .then((orgs) => orgs.some((o) => o.org_id === org.org_id), () => false);
      io.stderr(`Rotated key "${key.name}" of organization ${org.org_name}: new key ${rotated.prefix}…${works ? ' (checked: it works)' : ''}; the old key ${key.prefix}… expires ${oldExpires}.`);
      if (opts.out && !opts.json) io.stderr(`The new key is in ${opts.out}; put it where ${keyEnv} comes from.`);
      if (!works) throw new ToolkitError('invalid_usage', `the new key ${rotated.prefix}… was saved, but the service did not accept it for organization ${org.org_name}: check it before the old key expires`);
      return ExitCodes.ok;
    }),
  );
}
