#!/usr/bin/env node
/** Entrypoint of `teamctl`: the only place that sets the process's exit code. */
import { processIo } from '../cli/io.ts';
import { runCli } from '../cli/program.ts';

const code = await runCli(process.argv.slice(2), processIo());
// Let pending writes flush before leaving; a worker or open handles must not keep the CLI alive.
process.stdout.write('', () => process.exit(code));
