/**
 * PGlite's WebAssembly in two modules, so that V8 may optimise the embedded database's code except
 * its five largest functions (`--pglite-compiler mixed`, the default of `acs-server start`).
 *
 * Why: V8 runs WebAssembly on its baseline compiler (Liftoff) and recompiles hot functions with its
 * optimising one (TurboFan). For most of PostgreSQL's functions that costs a few MB of compiler
 * memory for a moment; for the largest it costs far more — `raw_parser` (the SQL grammar, 105 KB of
 * code) 607 MB, `outNode` 86 MB, `copyObjectImpl` 41 MB, `nodeRead` 34 MB,
 * `standard_ProcessUtility` 33 MB (`--trace-wasm-compilation-times`, PGlite 0.5.16) — and all of
 * them are hot at every start. V8 has no flag to leave one function unoptimised, but it reads its
 * tiering flags when it compiles a module. So those functions are moved into a module of their own
 * compiled with tier-up off; the main module keeps the rest, optimised as usual. A bulk
 * `INSERT … SELECT` runs in the executor, not in those functions, and keeps the optimised speed
 * (docs/performance.md, "Memory of the embedded database").
 *
 * How: binaryen (a devDependency: used where the modules are made, never at run time) rewrites
 * PGlite's `pglite.wasm`:
 * - `main.wasm`: every defined function and global exported (under `__split_f…`/`__split_g…` when
 *   it had no export), and the five functions turned into imports from module `split`;
 * - `split.wasm`: the five functions alone, importing everything else — memory, the function
 *   table, globals, PGlite's own imports, and every other function — from PGlite's imports and
 *   from `main.wasm`'s instance (module `main`).
 * A call from the main module into a split function goes through a JavaScript function (a few
 * tens of nanoseconds, once per parse or per node tree); calls within the split module are direct.
 * PostgreSQL's errors (`ereport` unwinding through Emscripten's `invoke_*` wrappers) cross both
 * modules as JavaScript exceptions, as they crossed PGlite's own frames before.
 *
 * Where the modules come from, first found wins (as the data directory template's,
 * `pglite-template.ts`): beside this module (`pglite-split/`, shipped by `npm run build`), the
 * template cache directory (a checkout's), else made now in a child process (binaryen holds the
 * whole module, ~340 MB for ~5 s, out of the server's peak) and cached. When none can be had (a
 * packed install without them, no binaryen), the caller falls back to the baseline compiler.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { makeWhole, pgliteVersion, shippedCachedOrMade } from './pglite-template.ts';

/**
 * The functions moved into the split module, by their export names in PGlite's `pglite.wasm`:
 * the largest of PostgreSQL's and the costliest to optimise (see the module's comment).
 */
export const SPLIT_FUNCTIONS = ['raw_parser', 'outNode', 'copyObjectImpl', 'nodeRead', 'standard_ProcessUtility'] as const;

/** Bumped when the rewrite changes for the same PGlite (which functions, how they are wired). */
const SPLIT_FORMAT = 1;

/** The import module name of the split functions in `main.wasm`, and of `main.wasm`'s exports in `split.wasm`. */
const SPLIT_MODULE = 'split';
const MAIN_MODULE = 'main';

/** The two rewritten modules' bytes. */
export interface SplitBytes {
  /** PGlite's module without the split functions (they are imports from `split`). */
  main: Uint8Array;
  /** The split functions alone, importing the rest. */
  split: Uint8Array;
}

/** A compiled WebAssembly module (the project's `lib` has no DOM typings, where TypeScript declares the WebAssembly API). */
export type WasmModule = object & { readonly __wasmModule?: never };
type WasmImports = Record<string, Record<string, unknown>>;
interface WasmInstance {
  exports: Record<string, unknown>;
}
/** The part of the WebAssembly JavaScript API used here. */
interface WasmApi {
  Module: { new (bytes: Uint8Array): WasmModule; imports(module: WasmModule): Array<{ module: string; name: string; kind: string }> };
  instantiate(module: WasmModule, imports?: WasmImports): Promise<WasmInstance>;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** The two modules compiled: `main` with V8's default tiering, `split` at baseline. */
export interface SplitModules {
  main: WasmModule;
  split: WasmModule;
}

/** The directory name of the split modules for a PGlite version, e.g. `pglite-0.5.16-split-s1`. */
export function splitName(version: string): string {
  return `pglite-${version}-split-s${SPLIT_FORMAT}`;
}

/** The directory the installed package ships the split modules in (beside this module). */
export function shippedSplitDir(): string {
  return fileURLToPath(new URL('./pglite-split/', import.meta.url));
}

/** PGlite's own `pglite.wasm`. */
export function pgliteWasmPath(): string {
  return join(dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite'))), 'pglite.wasm');
}

function isSplitDir(dir: string): boolean {
  return existsSync(join(dir, 'main.wasm')) && existsSync(join(dir, 'split.wasm'));
}

/**
 * Rewrites PGlite's module (`bytes`, those of `pglite.wasm`) into the two modules. Errors: when
 * a function of {@link SPLIT_FUNCTIONS} is not among the module's exports (another PGlite build),
 * or binaryen (a devDependency) is not installed. Costs ~340 MB and ~5 s: run it in a child
 * process (`make-pglite-split`, as {@link pgliteSplitDir} does) or at build time.
 */
export async function splitPglite(bytes: Uint8Array): Promise<SplitBytes> {
  const { default: binaryen } = await import('binaryen');
  // The features PGlite's module uses; binaryen's "all" would write newer encodings V8 rejects.
  const features =
    binaryen.Features.MutableGlobals | binaryen.Features.SignExt | binaryen.Features.NontrappingFPToInt | binaryen.Features.BulkMemory | binaryen.Features.ReferenceTypes | binaryen.Features.Multivalue;
  const read = () => {
    const module = binaryen.readBinary(bytes);
    module.setFeatures(features);
    return module;
  };
  const functionsOf = (module: ReturnType<typeof read>) => Array.from({ length: module.getNumFunctions() }, (_, i) => binaryen.getFunctionInfo(module.getFunctionByIndex(i)));
  const globalsOf = (module: ReturnType<typeof read>) => Array.from({ length: module.getNumGlobals() }, (_, i) => binaryen.getGlobalInfo(module.getGlobalByIndex(i)));
  const exportsOf = (module: ReturnType<typeof read>) => Array.from({ length: module.getNumExports() }, (_, i) => binaryen.getExportInfo(module.getExportByIndex(i)));

  const main = read();
  try {
    const functions = functionsOf(main);
    const globals = globalsOf(main);
    const exported = new Map<string, string>();
    const exportedGlobal = new Map<string, string>();
    for (const e of exportsOf(main)) {
      if (e.kind === binaryen.ExternalFunction && !exported.has(e.value)) exported.set(e.value, e.name);
      if (e.kind === binaryen.ExternalGlobal && !exportedGlobal.has(e.value)) exportedGlobal.set(e.value, e.name);
    }
    // The split functions by their internal names.
    const byExport = new Map([...exported].map(([internal, external]) => [external, internal]));
    const targets = SPLIT_FUNCTIONS.map((name) => {
      const internal = byExport.get(name);
      const info = functions.find((f) => f.name === internal && !f.module);
      if (!info) throw new Error(`pglite.wasm has no function exported as ${name}: not the PGlite build this rewrite knows`);
      return { name, info };
    });
    const targetNames = new Set(targets.map((t) => t.info.name));
    for (const f of functions) {
      if (f.module || exported.has(f.name)) continue;
      exported.set(f.name, `__split_f${f.name}`);
      main.addFunctionExport(f.name, `__split_f${f.name}`);
    }
    for (const g of globals) {
      if (g.module || exportedGlobal.has(g.name)) continue;
      exportedGlobal.set(g.name, `__split_g${g.name}`);
      main.addGlobalExport(g.name, `__split_g${g.name}`);
    }
    for (const { name, info } of targets) {
      main.removeFunction(info.name);
      main.addFunctionImport(info.name, SPLIT_MODULE, name, info.params, info.results);
    }
    const mainBytes = main.emitBinary();

    const split = read();
    try {
      for (const f of functionsOf(split)) {
        if (f.module || targetNames.has(f.name)) continue;
        split.removeFunction(f.name);
        split.addFunctionImport(f.name, MAIN_MODULE, exported.get(f.name)!, f.params, f.results);
      }
      for (const g of globalsOf(split)) {
        if (g.module) continue;
        split.removeGlobal(g.name);
        split.addGlobalImport(g.name, MAIN_MODULE, exportedGlobal.get(g.name)!, g.type, g.mutable);
      }
      for (let i = split.getNumElementSegments() - 1; i >= 0; i--) split.removeElementSegment(binaryen.getElementSegmentInfo(split.getElementSegmentByIndex(i)).name);
      const tableExport = exportsOf(split).find((e) => e.kind === binaryen.ExternalTable);
      for (let i = split.getNumTables() - 1; i >= 0; i--) {
        const table = binaryen.getTableInfo(split.getTableByIndex(i));
        if (table.module) continue;
        if (!tableExport) throw new Error('pglite.wasm exports no function table');
        split.removeTable(table.name);
        split.addTableImport(table.name, MAIN_MODULE, tableExport.name);
      }
      for (const e of exportsOf(split)) split.removeExport(e.name);
      for (const { name, info } of targets) split.addFunctionExport(info.name, name);
      // The main module initialises memory; what the split functions do not use goes.
      split.runPasses(['remove-memory-init', 'remove-unused-module-elements', 'strip-dwarf', 'strip-producers']);
      const splitBytes = split.emitBinary();
      return { main: mainBytes, split: splitBytes };
    } finally {
      split.dispose();
    }
  } finally {
    main.dispose();
  }
}

/**
 * Makes the split modules of the installed PGlite at `dir` in this process (`main.wasm`,
 * `split.wasm`), whole or not at all ({@link makeWhole}).
 */
export async function makeSplit(dir: string): Promise<void> {
  await makeWhole(dir, isSplitDir, async (made) => {
    const bytes = await splitPglite(await readFile(pgliteWasmPath()));
    await writeFile(join(made, 'main.wasm'), bytes.main);
    await writeFile(join(made, 'split.wasm'), bytes.split);
  });
}

/**
 * The directory of the installed PGlite's split modules: the shipped one, else the cached one,
 * else one made now in a child process (`make-pglite-split`) and cached. Undefined when none can
 * be had.
 */
export async function pgliteSplitDir(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  return shippedCachedOrMade(splitName(await pgliteVersion()), shippedSplitDir(), 'make-pglite-split', isSplitDir, env);
}

/**
 * Compiles the split modules in `dir`: `split.wasm` with V8's tier-up off (dynamic and eager) and
 * eagerly, so that none of its code is compiled later under other flags, then `main.wasm` with V8's
 * defaults, which are restored. Call it before anything else in the process compiles WebAssembly
 * with non-default tiering flags in mind.
 */
export function compileSplit(dir: string): SplitModules {
  v8.setFlagsFromString('--no-wasm-tier-up');
  v8.setFlagsFromString('--no-wasm-dynamic-tiering');
  v8.setFlagsFromString('--no-wasm-lazy-compilation');
  let split: WasmModule;
  try {
    split = new wasm.Module(readFileSync(join(dir, 'split.wasm')));
  } finally {
    v8.setFlagsFromString('--wasm-tier-up');
    v8.setFlagsFromString('--wasm-dynamic-tiering');
    v8.setFlagsFromString('--wasm-lazy-compilation');
  }
  return { main: new wasm.Module(readFileSync(join(dir, 'main.wasm'))), split };
}

let prepared: SplitModules | undefined;

/**
 * `--pglite-compiler mixed`: finds or makes the split modules ({@link pgliteSplitDir}), compiles
 * them ({@link compileSplit}) and has every embedded database of this process run on them.
 * Resolves false when they cannot be had; the caller then chooses another compiler.
 */
export async function prepareMixedCompiler(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const dir = await pgliteSplitDir(env);
  if (!dir) return false;
  try {
    useSplit(compileSplit(dir));
    return true;
  } catch {
    // Files that do not compile (truncated by a full disk): as if there were none.
    return false;
  }
}

/**
 * Makes every embedded database opened from now on in this process run on `modules`
 * ({@link openPgliteDb} asks {@link preparedSplit}). Undefined: PGlite's own module again.
 */
export function useSplit(modules: SplitModules | undefined): void {
  prepared = modules;
}

/** The split modules {@link useSplit} set, if any. */
export function preparedSplit(): SplitModules | undefined {
  return prepared;
}

let patches = 0;
const originalInstantiate = wasm.instantiate.bind(wasm);

/**
 * Runs `fn` (which creates a PGlite given `modules.main` as its `wasmModule`) with PGlite's
 * instantiation wired to the split module: PGlite instantiates its module itself, with imports it
 * builds, so for as long as `fn` runs `WebAssembly.instantiate` of exactly `modules.main` gets the
 * `split` imports added, and the split module is instantiated right after it from PGlite's imports
 * and the main instance's exports, before PGlite runs any of its code. Any other instantiation is
 * left alone; the original function is back once every such `fn` has ended.
 */
export async function withSplitInstantiation<T>(modules: SplitModules, fn: () => Promise<T>): Promise<T> {
  if (patches++ === 0) {
    wasm.instantiate = (source: WasmModule, imports?: WasmImports) => {
      const which = source instanceof wasm.Module ? splitInstantiations.get(source) : undefined;
      if (!which) return originalInstantiate(source, imports);
      return instantiateSplit(which, imports ?? {});
    };
  }
  splitInstantiations.set(modules.main, modules);
  try {
    return await fn();
  } finally {
    if (--patches === 0) {
      wasm.instantiate = originalInstantiate;
      splitInstantiations.clear();
    }
  }
}

/** Split modules by their main module, for the patched `WebAssembly.instantiate`. */
const splitInstantiations = new Map<WasmModule, SplitModules>();

/** Instantiates `modules.main` with `imports` plus the split functions, then `modules.split`; resolves with the main instance. */
async function instantiateSplit(modules: SplitModules, imports: WasmImports): Promise<WasmInstance> {
  let split: WasmInstance['exports'] | undefined;
  const trampolines: Record<string, (...args: unknown[]) => unknown> = {};
  for (const name of SPLIT_FUNCTIONS) {
    trampolines[name] = (...args: unknown[]) => (split![name] as (...a: unknown[]) => unknown)(...args);
  }
  const main = await originalInstantiate(modules.main, { ...imports, [SPLIT_MODULE]: trampolines });
  const splitImports: WasmImports = { [MAIN_MODULE]: main.exports };
  for (const { module, name } of wasm.Module.imports(modules.split)) {
    if (module === MAIN_MODULE) continue;
    splitImports[module] ??= {};
    splitImports[module][name] = imports[module]![name];
  }
  split = (await originalInstantiate(modules.split, splitImports)).exports;
  return main;
}
