/**
 * The version both products report (`teamctl --version`, `acs-server --version`, the client's
 * `User-Agent`): package.json's `version`, the one place it is written.
 */
import { readFileSync } from 'node:fs';

/**
 * Reads the version of the package this module belongs to: the nearest package.json above it
 * named `teamctl` (one level up in a checkout, two in the built `dist/` tree of an installed
 * package). Output: the version text, e.g. `0.1.0`. Errors: throws when none is found (a broken
 * installation).
 */
function readVersion(): string {
  for (const up of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'teamctl' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // Not there at this depth: try the next one.
    }
  }
  throw new Error('cannot find the package.json of teamctl next to its modules');
}

/** The package's version, e.g. `0.1.0`. */
export const VERSION: string = readVersion();
