#!/usr/bin/env node
/**
 * acs-server: the self-hostable Agent Collaboration Service (contract §6).
 *
 * `acs-server start [--host] [--port] [--data-dir] [--in-memory] [--database-url] [--tick-ms]
 * [--dev-credentials FILE] [--rate-limit N]` serves the API until SIGINT/SIGTERM.
 * `acs-server admin access-requests list|approve|reject` and `acs-server admin keys issue` are the
 * operator actions, run against the server's database (`--data-dir`, default `.acs-data`, or
 * `--database-url` / `DATABASE_URL`); they print JSON on stdout, or an error as JSON on stderr and
 * exit 1. The only place in the service that calls process.exit.
 */
import { Command, InvalidArgumentError } from 'commander';
import {
  adminApproveAccessRequest,
  adminErrorOutput,
  adminIssueKey,
  adminListAccessRequests,
  adminRejectAccessRequest,
  type AdminStorage,
} from '../service/admin/admin-actions.ts';
import { startServer } from '../service/index.ts';

function integer(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };
}

const program = new Command('acs-server').description('Agent Collaboration Service, self-hosted');

program
  .command('start')
  .description('start the service and serve until SIGINT or SIGTERM')
  .option('--host <host>', 'interface to listen on', '127.0.0.1')
  .option('--port <port>', 'TCP port; 0 picks a free one', integer(0, 65535), 8080)
  .option('--data-dir <dir>', 'directory of the embedded database', '.acs-data')
  .option('--in-memory', 'embedded database in memory, nothing on disk', false)
  .option('--database-url <url>', 'PostgreSQL URL (default: $DATABASE_URL)')
  .option('--tick-ms <ms>', 'agent loop period in milliseconds', integer(1, 3_600_000), 1000)
  .option('--dev-credentials <file>', 'provision the "dev" organization and write {base_url, api_key, org_id} to FILE')
  .option('--rate-limit <n>', 'requests a minute per API key (default: $ACS_RATE_LIMIT, else 1200)', integer(1, 10_000_000))
  .action(async (flags: { host: string; port: number; dataDir: string; inMemory: boolean; databaseUrl?: string; tickMs: number; devCredentials?: string; rateLimit?: number }) => {
    const databaseUrl = flags.databaseUrl ?? (process.env.DATABASE_URL || undefined);
    const server = await startServer({
      host: flags.host,
      port: flags.port,
      inMemory: flags.inMemory,
      dataDir: flags.dataDir,
      ...(databaseUrl ? { databaseUrl } : {}),
      tickMs: flags.tickMs,
      ...(flags.devCredentials ? { devCredentialsFile: flags.devCredentials } : {}),
      ...(flags.rateLimit !== undefined ? { rateLimit: { max: flags.rateLimit, windowMs: 60_000 } } : {}),
      logger: true,
    });
    process.stdout.write(`acs-server listening on ${server.url}\n`);
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`acs-server stopping (${signal})\n`);
      server.close().then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`acs-server: error while stopping: ${(error as Error).message}\n`);
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });

/** Storage flags shared by every admin command. */
interface StorageFlags {
  dataDir: string;
  databaseUrl?: string;
}

function withStorageFlags(command: Command): Command {
  return command
    .option('--data-dir <dir>', 'directory of the embedded database (stop the server first: one process per data dir)', '.acs-data')
    .option('--database-url <url>', 'PostgreSQL URL (default: $DATABASE_URL)');
}

function storageOf(flags: StorageFlags): AdminStorage {
  return { dataDir: flags.dataDir, databaseUrl: flags.databaseUrl ?? (process.env.DATABASE_URL || undefined) };
}

/** Runs one admin action: its result as JSON on stdout, or its error as JSON on stderr and exit 1. */
async function runAdmin(action: () => Promise<unknown>): Promise<void> {
  try {
    process.stdout.write(JSON.stringify(await action(), null, 2) + '\n');
  } catch (error) {
    process.stderr.write(JSON.stringify(adminErrorOutput(error)) + '\n');
    process.exit(1);
  }
}

const admin = program.command('admin').description('operator actions against the server\'s database (contract §6)');
const accessRequests = admin.command('access-requests').description('review access requests');

withStorageFlags(accessRequests.command('list').description('list access requests, oldest first'))
  .option('--status <status>', 'only requests with this status: pending, approved or rejected')
  .action((flags: StorageFlags & { status?: string }) => runAdmin(() => adminListAccessRequests(storageOf(flags), flags.status)));

withStorageFlags(accessRequests.command('approve').description('create the requested organization; prints its first key once'))
  .argument('<request_id>', 'the access request')
  .action((requestId: string, flags: StorageFlags) => runAdmin(() => adminApproveAccessRequest(storageOf(flags), requestId)));

withStorageFlags(accessRequests.command('reject').description('reject an access request'))
  .argument('<request_id>', 'the access request')
  .option('--reason <reason>', 'why (1-2000 characters)')
  .action((requestId: string, flags: StorageFlags & { reason?: string }) =>
    runAdmin(() => adminRejectAccessRequest(storageOf(flags), requestId, flags.reason)),
  );

withStorageFlags(admin.command('keys').description('organization keys').command('issue').description('issue a key for an existing organization; prints it once'))
  .requiredOption('--org <org_id>', 'the organization')
  .option('--name <name>', 'a name for the key')
  .action((flags: StorageFlags & { org: string; name?: string }) => runAdmin(() => adminIssueKey(storageOf(flags), flags.org, flags.name)));

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`acs-server: ${(error as Error).message}\n`);
  process.exit(1);
});
