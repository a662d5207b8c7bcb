/**
 * What `teamctl` and `acs-server` run first, in plain JavaScript that any Node.js can parse: it
 * checks the Node.js version against `engines.node` of package.json (the one place it is stated)
 * and only then imports the program. On an older Node the user reads one line naming the Node
 * they need, instead of a crash deep in a module (`ERR_UNKNOWN_FILE_EXTENSION`, a syntax error).
 *
 * Which program: in a source checkout (`bin/NAME.ts` beside this file) the TypeScript itself,
 * which the project's Node 24 runs directly; in an installed package, which ships no sources,
 * the JavaScript built from it (`dist/bin/NAME.js`, `npm run build`). The program runs in this
 * very process, so signals reach it directly (`kill` of the launcher's pid stops the program).
 */
import { existsSync, readFileSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

/** `[major, minor, patch]` of a version text such as `22.12.0` or `>=22.12.0`. */
function versionOf(text) {
  const match = /(\d+)\.(\d+)\.(\d+)/.exec(text);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

/** Whether version `have` is at least `want` (both `[major, minor, patch]`). */
function atLeast(have, want) {
  for (let i = 0; i < 3; i++) {
    if (have[i] !== want[i]) return have[i] > want[i];
  }
  return true;
}

/**
 * Started through npm (`npx`, `npm exec`, `npm run`: npm sets `npm_command`), the program runs
 * as `npm → sh -c → node`. A SIGTERM to npm (`kill $!` after `npx acs-server start … &`) ends
 * npm and its shell but never reaches this process, which would be left running, orphaned. So
 * under npm, when the parent process goes away, the program gets the SIGTERM it missed and stops
 * as it does on any SIGTERM (acs-server closes cleanly). Outside npm nothing changes: a server
 * started with `nohup` or by a supervisor outlives its parent as it should.
 */
function stopWithParentUnderNpm() {
  if (!process.env.npm_command || process.platform === 'win32') return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }, 250);
  // The check never keeps the program alive by itself.
  timer.unref();
}

/**
 * Turns on Node's compile cache (Node 22.1 and later; `module.enableCompileCache`) before the
 * program's modules load: the code V8 compiled for them — and, on Node 24 in a checkout, the
 * JavaScript stripped from their TypeScript — is kept on disk (`os.tmpdir()/node-compile-cache`,
 * Node's default) and reused by the next run, which halves the start-up of every command
 * (docs/performance.md, "Start-up"). `NODE_DISABLE_COMPILE_CACHE=1` turns it off; a cache that
 * cannot be written only costs the saving.
 */
function enableCompileCache() {
  if (typeof module.enableCompileCache !== 'function') return;
  try {
    module.enableCompileCache();
  } catch {
    // Start without the cache.
  }
}

/**
 * Runs the program `name` (`teamctl` or `acs-server`) in this process, or prints one line and
 * sets exit code 1 when this Node.js is older than package.json's `engines.node` (a `>=X.Y.Z`
 * range) or the program cannot be found.
 */
export function launch(name) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const need = versionOf(pkg.engines.node);
  const have = versionOf(process.versions.node);
  if (need && have && !atLeast(have, need)) {
    process.stderr.write(
      `${name}: needs Node.js ${need.join('.')} or later (a maintained release line: 22 or 24); this is Node.js ${process.versions.node} (${process.execPath})\n`,
    );
    process.exitCode = 1;
    return;
  }
  stopWithParentUnderNpm();
  enableCompileCache();
  const source = new URL(`./${name}.ts`, import.meta.url);
  const entry = existsSync(source) ? source : new URL(`../dist/bin/${name}.js`, import.meta.url);
  import(entry.href).catch((error) => {
    // Only a broken installation gets here: the programs report their own errors themselves.
    process.stderr.write(`${name}: cannot start (${error && error.code ? error.code : error}): ${fileURLToPath(entry)}\n`);
    process.exitCode = 1;
  });
}
