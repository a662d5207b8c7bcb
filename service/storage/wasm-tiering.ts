/**
 * How V8 compiles the embedded database (PGlite's WebAssembly) in this process.
 *
 * V8 first compiles WebAssembly with its baseline compiler (Liftoff) and recompiles hot functions
 * with its optimising one (TurboFan). One function of PGlite 0.5's postgres (~105 KB of code)
 * takes TurboFan ~600 MB of compiler memory for about a second, once per process, as soon as it
 * is hot — during the migrations at start. With optimisation off the embedded server's peak
 * memory stays under 300 MB; the cost is CPU: ~1.9× for SQL that runs long loops (an
 * `INSERT … SELECT` of 100,000 rows), ~1.1–1.3× for the service's requests (single-row writes,
 * indexed reads) (docs/performance.md, "Memory of the embedded database"). The default, `mixed`,
 * keeps only that function and four others of PostgreSQL's largest at baseline and optimises the
 * rest (pglite-split.ts).
 */
import v8 from 'node:v8';

/** The choices of `acs-server start --pglite-compiler`. */
export const PgliteCompilers = {
  /**
   * Hot functions optimised except PostgreSQL's five largest, which stay at baseline in a module
   * of their own (pglite-split.ts): the optimised speed at a peak under 300 MB. The default.
   */
  mixed: 'mixed',
  /** Liftoff only: no optimising compile, peak memory under 300 MB. */
  baseline: 'baseline',
  /** V8's default: hot functions optimised (faster bulk SQL, a ~600 MB transient peak). */
  optimizing: 'optimizing',
} as const;

/** One of {@link PgliteCompilers}. */
export type PgliteCompiler = (typeof PgliteCompilers)[keyof typeof PgliteCompilers];

/**
 * Keeps every WebAssembly module compiled from now on in this process at V8's baseline compiler:
 * no tier-up to the optimising compiler, neither dynamic (hot functions) nor eager. Call it before
 * the embedded database starts (PGlite compiles its module then); modules compiled earlier keep
 * their tiering. V8 reads these flags when it compiles a module, so setting them at run time
 * works for later modules; `--liftoff-only`, the command-line equivalent, is only read at start.
 */
export function keepWasmAtBaseline(): void {
  v8.setFlagsFromString('--no-wasm-tier-up');
  v8.setFlagsFromString('--no-wasm-dynamic-tiering');
}

/**
 * Makes the embedded databases this process opens from now on compile as `compiler` says: `mixed`
 * finds or makes the split modules (pglite-split.ts, loaded only then), `baseline`
 * {@link keepWasmAtBaseline}, `optimizing` leaves V8 as it is. Resolves with the compiler in
 * effect: `baseline` when `mixed` was asked for and the split modules cannot be had.
 */
export async function usePgliteCompiler(compiler: PgliteCompiler): Promise<PgliteCompiler> {
  if (compiler === PgliteCompilers.mixed) {
    const { prepareMixedCompiler } = await import('./pglite-split.ts');
    if (await prepareMixedCompiler()) return compiler;
    compiler = PgliteCompilers.baseline;
  }
  if (compiler === PgliteCompilers.baseline) keepWasmAtBaseline();
  return compiler;
}
