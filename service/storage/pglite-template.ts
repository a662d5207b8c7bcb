/**
 * A prepared PGlite data directory ("template"): what `initdb` makes, made once and copied into
 * every embedded database that has none yet (`--in-memory`, a new `--data-dir`).
 *
 * PGlite 0.5 runs `initdb` in a second PGlite instance inside the starting process, which cost
 * ~450 MB of peak memory and seconds at every in-memory start (docs/performance.md, "Memory of the
 * embedded database"). Copying a ready data directory instead costs its ~30 MB and a fraction of
 * a second, and copying it file by file (rather than from a tarball, PGlite's `loadDataDir`, which
 * holds the whole tarball twice while it unpacks) adds no transient peak. The directory is what
 * `initdb` wrote and PostgreSQL shut down cleanly, so a database started from it is the same as one
 * started by `initdb`.
 *
 * Where it comes from, first found wins:
 * 1. beside this module, `pglite-template/`: the installed package ships one (`npm run build`
 *    makes it, `scripts/build.ts`);
 * 2. the cache directory (`ACS_PGLITE_TEMPLATE_DIR`, else `$XDG_CACHE_HOME/acs-server`, else
 *    `~/.cache/acs-server`), where a checkout keeps the one it made.
 * When neither has one for the installed PGlite, one is made in a child process (its peak memory
 * stays out of the server's) and put in the cache; when that fails too, or `ACS_PGLITE_TEMPLATE`
 * is `off`, PGlite runs `initdb` itself, as before. The directory's name carries PGlite's version:
 * a new PGlite makes a new template.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryFS, type PGlite } from '@electric-sql/pglite';

/**
 * Bumped when what the template holds changes for the same PGlite (its `initdb` arguments, its
 * layout). A template is a directory holding `data/` (the data directory) and `dirs.json` (every
 * directory of `data/`, empty ones included: npm packs no empty directory, and PostgreSQL needs
 * them).
 */
const TEMPLATE_FORMAT = 2;

/** The manifest of a template's directories, beside its `data/`. */
const DIRS_FILE = 'dirs.json';

/** Environment variable naming the cache directory of templates. */
export const TEMPLATE_DIR_ENV = 'ACS_PGLITE_TEMPLATE_DIR';

/** Environment variable that, set to `off`, makes PGlite run `initdb` in the process as before templates. */
export const TEMPLATE_SWITCH_ENV = 'ACS_PGLITE_TEMPLATE';

/**
 * `initdb` arguments of a template beyond PGlite's own. 1 MB WAL segments instead of 16 MB: a
 * segment is written out in full when it is created, and in memory every byte of it is resident
 * (PostgreSQL accepts any power of two from 1 to 1024 MB, fixed at `initdb`).
 */
const INITDB_ARGS = ['--wal-segsize=1'];

/** The installed PGlite's version, from its package.json (e.g. `0.5.16`). */
export async function pgliteVersion(): Promise<string> {
  const main = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
  // dist/index.js → the package root.
  const pkg = JSON.parse(await readFile(join(dirname(main), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** The template directory's name for a PGlite version, e.g. `pglite-0.5.16-f2`. */
export function templateName(version: string): string {
  return `pglite-${version}-f${TEMPLATE_FORMAT}`;
}

/** The directory the installed package ships its template in (beside this module). */
export function shippedTemplateDir(): string {
  return fileURLToPath(new URL('./pglite-template/', import.meta.url));
}

/** The cache directory of templates made at run time, from `env`. */
export function templateCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env[TEMPLATE_DIR_ENV]) return env[TEMPLATE_DIR_ENV];
  const cache = env.XDG_CACHE_HOME || join(os.homedir(), '.cache');
  return join(cache, 'acs-server');
}

/** Whether `dir` holds a template: its data directory (PostgreSQL's `PG_VERSION` file) and its manifest. */
function isTemplate(dir: string): boolean {
  return existsSync(join(dir, 'data', 'PG_VERSION')) && existsSync(join(dir, DIRS_FILE));
}

/** Every directory under `root`, as paths relative to it with `/`, parents before children. */
function directoriesOf(root: string, relative = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, relative), { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = relative ? `${relative}/${entry.name}` : entry.name;
    out.push(path, ...directoriesOf(root, path));
  }
  return out;
}

/** The directories a template's data directory has, from its manifest. */
function templateDirectories(template: string): string[] {
  return JSON.parse(readFileSync(join(template, DIRS_FILE), 'utf8')) as string[];
}

/**
 * Makes a directory whole at `dir`, or not at all: `fill` writes it into a fresh directory beside
 * `dir` (in a private work directory), which is then renamed to `dir`, so a reader never sees half
 * of it; when another process made `dir` first (`complete(dir)`), that one is kept. The parent is
 * made first, so a place that cannot be written fails before `fill`'s work.
 */
export async function makeWhole(dir: string, complete: (dir: string) => boolean, fill: (into: string) => Promise<void>): Promise<void> {
  await mkdir(dirname(dir), { recursive: true });
  const work = await mkdtemp(join(dirname(dir), '.making-'));
  try {
    // A directory of its own inside the work one: mkdtemp's is private (0700), and what is made
    // here may be read by whoever runs an installed package.
    const made = join(work, 'made');
    await mkdir(made);
    await fill(made);
    try {
      await rename(made, dir);
    } catch (error) {
      if (!complete(dir)) throw error;
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Makes a template in this process at `dir` ({@link makeWhole}): PGlite's `initdb` on a data
 * directory, shut down cleanly, and its manifest. Costs what an `initdb` costs (hundreds of MB,
 * seconds): call it in a child process (`make-pglite-template`, as {@link pgliteTemplate} does) or
 * at build time.
 */
export async function makeTemplate(dir: string): Promise<void> {
  const { PGlite } = await import('@electric-sql/pglite');
  await makeWhole(dir, isTemplate, async (template) => {
    const pg = await PGlite.create({ dataDir: join(template, 'data'), initDbStartParams: INITDB_ARGS });
    await pg.close();
    await writeFile(join(template, DIRS_FILE), `${JSON.stringify(directoriesOf(join(template, 'data')))}\n`);
  });
}

/**
 * Runs `script` (a sibling module of this one, by name without extension: `make-pglite-template`)
 * in a child process of this Node with `dir` as its argument and V8 kept to its baseline
 * WebAssembly compiler there: the child makes one thing once and exits, so optimising PGlite's
 * code (or binaryen's) would only add to its peak. Resolves when it has exited, however.
 */
async function runSiblingScript(script: string, dir: string): Promise<void> {
  const path = fileURLToPath(new URL(`./${script}${extname(fileURLToPath(import.meta.url))}`, import.meta.url));
  await new Promise<void>((resolve) => {
    const child = spawn(process.execPath, ['--liftoff-only', path, dir], { stdio: ['ignore', 'ignore', 'ignore'] });
    child.on('error', () => resolve());
    child.on('exit', () => resolve());
  });
}

/**
 * A directory made once per PGlite version and kept (the template; the modules of
 * `pglite-split.ts`): `name` in `shipped` (beside the built module, where `npm run build` puts
 * it), else in the cache directory ({@link templateCacheDir}), else made there now by the sibling
 * module `script` in a child process ({@link runSiblingScript}). `complete(dir)` says whether a
 * directory holds the whole thing. Undefined when none can be had (no writable cache, the child
 * failed).
 */
export async function shippedCachedOrMade(
  name: string,
  shipped: string,
  script: string,
  complete: (dir: string) => boolean,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  for (const dir of [shipped, templateCacheDir(env)]) {
    if (complete(join(dir, name))) return join(dir, name);
  }
  const dir = join(templateCacheDir(env), name);
  try {
    await runSiblingScript(script, dir);
  } catch {
    // No child process: nothing made.
  }
  return complete(dir) ? dir : undefined;
}

/**
 * The template directory for the installed PGlite: the shipped one, else the cached one, else one
 * made now in a child process (`make-pglite-template`) and cached. Undefined when none can be had
 * or `ACS_PGLITE_TEMPLATE` is `off`: PGlite then runs `initdb` itself.
 */
export async function pgliteTemplate(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (env[TEMPLATE_SWITCH_ENV] === 'off') return undefined;
  return shippedCachedOrMade(templateName(await pgliteVersion()), shippedTemplateDir(), 'make-pglite-template', isTemplate, env);
}

/**
 * Copies the template into `dataDir` for a first start on disk: into a sibling directory first,
 * then renamed, so a crash halfway leaves no data directory that looks whole. `dataDir` must not
 * exist or be empty.
 */
export async function copyTemplate(template: string, dataDir: string): Promise<void> {
  if (existsSync(dataDir)) await rmdir(dataDir);
  const partial = `${dataDir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await cp(join(template, 'data'), partial, { recursive: true });
  for (const directory of templateDirectories(template)) await mkdir(join(partial, directory), { recursive: true, mode: 0o700 });
  await rename(partial, dataDir);
}

/**
 * PGlite's in-memory file system, filled from a template directory before PostgreSQL starts: one
 * file at a time, so nothing but the files themselves stays in memory. PGlite then finds a data
 * directory and starts it instead of running `initdb`.
 */
export class TemplateMemoryFS extends MemoryFS {
  readonly #template: string;

  constructor(template: string) {
    super();
    this.#template = template;
  }

  /** Copies the template into PGDATA once PGlite's module exists (PGlite calls it before it looks for a database). */
  override async initialSyncFs(): Promise<void> {
    await super.initialSyncFs();
    const mod = (this.pg as PGlite).Module;
    const fs = mod.FS;
    const root = mod.ENV.PGDATA;
    if (!fs.analyzePath(root).exists) fs.mkdirTree(root, 0o700);
    for (const directory of templateDirectories(this.#template)) if (!fs.analyzePath(`${root}/${directory}`).exists) fs.mkdirTree(`${root}/${directory}`, 0o700);
    const copy = (from: string, to: string) => {
      for (const entry of readdirSync(from)) {
        const source = join(from, entry);
        const target = `${to}/${entry}`;
        if (statSync(source).isDirectory()) copy(source, target);
        else fs.writeFile(target, readFileSync(source));
      }
    };
    copy(join(this.#template, 'data'), root);
  }
}
