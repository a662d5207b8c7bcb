#!/usr/bin/env node
/**
 * acs-server: the self-hostable Agent Collaboration Service (contract §6).
 *
 * `acs-server start [--host] [--port] [--data-dir] [--in-memory] [--database-url] [--tick-ms]
 * [--dev-credentials FILE]` serves the API until SIGINT/SIGTERM. The only place in the service
 * that calls process.exit.
 */
import { Command, InvalidArgumentError } from 'commander';
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
  .action(async (flags: { host: string; port: number; dataDir: string; inMemory: boolean; databaseUrl?: string; tickMs: number; devCredentials?: string }) => {
    const databaseUrl = flags.databaseUrl ?? (process.env.DATABASE_URL || undefined);
    const server = await startServer({
      host: flags.host,
      port: flags.port,
      inMemory: flags.inMemory,
      dataDir: flags.dataDir,
      ...(databaseUrl ? { databaseUrl } : {}),
      tickMs: flags.tickMs,
      ...(flags.devCredentials ? { devCredentialsFile: flags.devCredentials } : {}),
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

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`acs-server: ${(error as Error).message}\n`);
  process.exit(1);
});
