#!/usr/bin/env node
/**
 * Entrypoint of `acs-server` (the program is `service/server-cli.ts`): the only place that calls
 * process.exit for it, with the code {@link runAcsServer} returns; nothing under service/ does.
 */
import { runAcsServer } from '../service/server-cli.ts';

const code = await runAcsServer(process.argv.slice(2));
// Let pending writes flush before leaving; the database, the agent loop's timer or open sockets
// must not keep a stopped server or a finished admin command alive.
process.stdout.write('', () => process.exit(code));
