/**
 * A module hook for tests that ask which packages a process loads: preloaded with
 * `node --import`, it appends the name of each package under node_modules the process loads, the
 * first time it loads one, as a line of the file named by `LOADED_PACKAGES_FILE`.
 */
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const packages = new Set();
registerHooks({
  load(url, context, nextLoad) {
    const inside = url.split('/node_modules/').at(-1);
    if (inside !== url) {
      const name = inside.startsWith('@') ? inside.split('/').slice(0, 2).join('/') : inside.split('/')[0];
      if (!packages.has(name)) {
        packages.add(name);
        appendFileSync(process.env.LOADED_PACKAGES_FILE, `${name}\n`);
      }
    }
    return nextLoad(url, context);
  },
});
