/**
 * The version both products report (`teamctl --version`, `acs-server --version`, the client's
 * `User-Agent`): package.json's `version`, the one place it is written; and where the package is.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Finds the package.json of the package this module belongs to: the nearest one above it named
 * `teamctl` (one level up in a checkout; two in the built `dist/` tree of an installed package,
 * the bundle of `dist/bin/` included). Output: its directory and version. Errors: throws when none
 * is found (a broken installation).
 */
function findPackage(): { root: string; version: string } {
  for (const up of ['../', '../../']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(`${up}package.json`, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'teamctl' && typeof pkg.version === 'string') return { root: fileURLToPath(new URL(up, import.meta.url)), version: pkg.version };
    } catch {
      // Not there at this depth: try the next one.
    }
  }
  throw new Error('cannot find the package.json of teamctl next to its modules');
}

const found = findPackage();

/** The package's version, e.g. `0.1.0`. */
export const VERSION: string = found.version;

/** The package's root directory (where package.json is), with a trailing separator. */
export const PACKAGE_ROOT: string = found.root;
