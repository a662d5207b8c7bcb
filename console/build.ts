/**
 * Builds the console (the browser app of acs-server, docs/console.md) with esbuild: one
 * minified ES module bundle of `console/src/main.tsx` and its CSS, with content-hashed names
 * under `assets/`, and `index.html` naming them (no inline script or style: the server's
 * Content-Security-Policy allows only files of its own origin). `build-info.json` records the
 * hash of the sources it was built from, so a server running from a clone rebuilds when they
 * change.
 *
 * `npm run build` runs it into `dist/console/` (what the package ships); acs-server run from
 * TypeScript sources (a clone: the quick start, `npm test`) runs {@link ensureConsoleBuild}
 * into `console/dist/` when that is missing or stale. Run by hand: `node console/build.ts [OUT_DIR]`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const consoleDir = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = resolve(consoleDir, '..');

/** The console's own build output in a clone (git-ignored). */
export const cloneBuildDir = join(consoleDir, 'dist');

/** What a build writes beside the assets. */
export interface BuildInfo {
  /** SHA-256 over the sources (see {@link consoleSourceHash}). */
  source_hash: string;
  /** The entry bundle and stylesheet, relative to the build directory. */
  script: string;
  stylesheet: string;
  /** Bytes of JavaScript the first page loads, raw and gzipped. */
  script_bytes: number;
  built_at: string;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name)).sort();
}

/**
 * The hash of everything a build depends on: the console's sources (`console/src`, this file,
 * its tsconfig, `api/mcp-config.ts`) and the versions of the packages it bundles (from
 * package-lock.json). Files the app imports as types only change no output and are left out.
 */
export async function consoleSourceHash(): Promise<string> {
  const hash = createHash('sha256');
  // The app imports one module of the repository's own at run time (the MCP client configurations).
  const files = [...(await filesUnder(join(consoleDir, 'src'))), join(consoleDir, 'build.ts'), join(consoleDir, 'tsconfig.json'), join(repoRoot, 'api', 'mcp-config.ts')];
  for (const file of files) {
    hash.update(relative(repoRoot, file)).update('\0').update(await readFile(file)).update('\0');
  }
  const lock = JSON.parse(await readFile(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages?: Record<string, { version?: string }> };
  for (const name of ['preact', 'preact-iso', 'markdown-it', 'dompurify', 'esbuild']) hash.update(`${name}@${lock.packages?.[`node_modules/${name}`]?.version ?? '?'}\n`);
  return hash.digest('hex');
}

const indexHtml = (script: string, stylesheet: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>ACS console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/${stylesheet}">
<script type="module" src="/${script}"></script>
</head>
<body>
<div id="app"><noscript>The ACS console needs JavaScript.</noscript></div>
</body>
</html>
`;

/**
 * Builds the console into `outDir` (emptied first). Output: what was built.
 * Errors: rejects with esbuild's errors (a syntax or type-stripping error in the sources).
 */
export async function buildConsole(outDir: string): Promise<BuildInfo> {
  const esbuild = await import('esbuild');
  const sourceHash = await consoleSourceHash();
  await rm(outDir, { recursive: true, force: true });
  const result = await esbuild.build({
    absWorkingDir: consoleDir,
    entryPoints: { app: join(consoleDir, 'src', 'main.tsx') },
    outdir: join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome120', 'firefox120', 'safari17'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(consoleDir, 'tsconfig.json'),
    legalComments: 'linked',
    metafile: true,
    write: true,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const outputs = Object.entries(result.metafile.outputs);
  const script = outputs.find(([file, out]) => file.endsWith('.js') && out.entryPoint !== undefined);
  const stylesheet = outputs.find(([file]) => file.endsWith('.css'));
  if (!script || !stylesheet) throw new Error('console build: esbuild wrote no script or no stylesheet');
  const rel = (file: string) => relative(outDir, resolve(consoleDir, file)).split('\\').join('/');
  const info: BuildInfo = {
    source_hash: sourceHash,
    script: rel(script[0]),
    stylesheet: rel(stylesheet[0]),
    script_bytes: script[1].bytes,
    built_at: new Date().toISOString(),
  };
  await writeFile(join(outDir, 'index.html'), indexHtml(info.script, info.stylesheet));
  await writeFile(join(outDir, 'build-info.json'), `${JSON.stringify(info, null, 2)}\n`);
  return info;
}

/** The source hash `dir` was built from, if it holds a build. */
async function builtFrom(dir: string): Promise<string | undefined> {
  try {
    return (JSON.parse(await readFile(join(dir, 'build-info.json'), 'utf8')) as BuildInfo).source_hash;
  } catch {
    return undefined;
  }
}

/**
 * In a clone: the console's build directory, built first when it is missing or was built from
 * other sources. Safe when several processes start at once: each builds into a directory of its
 * own and moves it into place only where no build of the same sources stands (a rename onto an
 * existing directory fails), so a current build is never moved away under a reader. Output: the
 * directory to serve.
 */
export async function ensureConsoleBuild(): Promise<string> {
  const wanted = await consoleSourceHash();
  if ((await builtFrom(cloneBuildDir)) === wanted) return cloneBuildDir;
  const fresh = join(consoleDir, `.build-${process.pid}-${randomBytes(4).toString('hex')}`);
  await buildConsole(fresh);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      await rename(fresh, cloneBuildDir);
      return cloneBuildDir;
    } catch {
      // Something stands there: another process's build of the same sources (use it), or a stale one (retire it).
      if ((await builtFrom(cloneBuildDir)) === wanted) {
        await rm(fresh, { recursive: true, force: true });
        return cloneBuildDir;
      }
      const retired = join(consoleDir, `.old-${process.pid}-${randomBytes(4).toString('hex')}`);
      await rename(cloneBuildDir, retired).catch(() => {});
      await rm(retired, { recursive: true, force: true }).catch(() => {});
    }
  }
  // Still contended: serve this process's own build from where it is.
  return fresh;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? cloneBuildDir);
  await mkdir(out, { recursive: true });
  const info = await buildConsole(out);
  process.stdout.write(`console: ${info.script} (${(info.script_bytes / 1024).toFixed(1)} KiB) into ${out}\n`);
}
