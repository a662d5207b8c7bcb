/**
 * `--pglite-compiler mixed` (service/storage/pglite-split.ts): PGlite's module rewritten into two,
 * the five largest functions of PostgreSQL in a module V8 keeps at its baseline compiler, and an
 * embedded database that runs on both as on PGlite's own module — errors raised inside a moved
 * function included.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgliteDb } from '../../service/storage/pglite-db.ts';
import { compileSplit, makeSplit, prepareMixedCompiler, preparedSplit, SPLIT_FUNCTIONS, splitPglite, useSplit } from '../../service/storage/pglite-split.ts';
import { TEMPLATE_DIR_ENV } from '../../service/storage/pglite-template.ts';

type Wasm = {
  Module: { new (bytes: Uint8Array): object; imports(m: object): Array<{ module: string; name: string; kind: string }>; exports(m: object): Array<{ name: string; kind: string }> };
};
const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

let work: string;
let dir: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'acs-split-'));
  dir = join(work, 'split');
  await makeSplit(dir);
}, 120_000);

afterAll(async () => {
  useSplit(undefined);
  await rm(work, { recursive: true, force: true });
});

describe('PGlite split', () => {
  it('split: the main module imports the five functions from the split module, which exports exactly them and imports the rest', () => {
    const { main, split } = compileSplit(dir);
    const fromSplit = wasm.Module.imports(main).filter((i) => i.module === 'split');
    expect(fromSplit.map((i) => i.name).sort()).toEqual([...SPLIT_FUNCTIONS].sort());
    expect(fromSplit.every((i) => i.kind === 'function')).toBe(true);
    expect(wasm.Module.exports(split).map((e) => e.name).sort()).toEqual([...SPLIT_FUNCTIONS].sort());
    const splitImports = wasm.Module.imports(split);
    // Memory and the function table are the main module's, not copies.
    expect(splitImports).toEqual(expect.arrayContaining([expect.objectContaining({ module: 'env', name: 'memory', kind: 'memory' }), expect.objectContaining({ module: 'main', kind: 'table' })]));
    expect(splitImports.some((i) => i.module === 'main' && i.kind === 'function')).toBe(true);
  });

  it('split: an embedded database on the two modules parses, runs DDL, views and prepared statements, and survives a syntax error raised inside the parser', async () => {
    useSplit(compileSplit(dir));
    const db = await openPgliteDb();
    try {
      // raw_parser, standard_ProcessUtility (DDL), outNode (a view's rule stored), nodeRead (read back), copyObjectImpl (a prepared plan).
      await db.query('CREATE TABLE t (n int PRIMARY KEY, label text)');
      await db.query('CREATE VIEW big AS SELECT n, upper(label) AS label FROM t WHERE n > 1');
      await db.transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES ($1, $2), ($3, $4)', [1, 'one', 2, 'two']);
      });
      expect(await db.query('SELECT n, label FROM big')).toEqual([{ n: 2, label: 'TWO' }]);
      await db.query('PREPARE pick (int) AS SELECT label FROM t WHERE n = $1');
      expect(await db.query('EXECUTE pick(1)')).toEqual([{ label: 'one' }]);
      // ereport(ERROR) inside raw_parser unwinds through both modules to PostgreSQL's handler.
      await expect(db.query('SELEC 1')).rejects.toMatchObject({ code: '42601' });
      expect(await db.query('EXECUTE pick(2)')).toEqual([{ label: 'two' }]);
      expect(await db.query('SELECT count(*)::int AS n FROM big')).toEqual([{ n: 1 }]);
    } finally {
      await db.close();
      useSplit(undefined);
    }
  }, 120_000);

  it('split: a module without those functions is refused by name, and no modules where none can be made', async () => {
    // The smallest valid module: the magic number and version, no sections.
    await expect(splitPglite(new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]))).rejects.toThrow(/no function exported as raw_parser/);
    // A cache directory that cannot be made (under a file): nothing shipped in a checkout, nothing made.
    const blocked = join(work, 'not-a-dir');
    await writeFile(blocked, '');
    expect(await prepareMixedCompiler({ ...process.env, [TEMPLATE_DIR_ENV]: join(blocked, 'cache') })).toBe(false);
    expect(preparedSplit()).toBeUndefined();
  }, 60_000);
});
