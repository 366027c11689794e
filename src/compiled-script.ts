/**
 * Where a script that runs in another thread or process (a piscina worker, the spawn relay) is,
 * seen from the module that starts it. Such scripts must be plain JavaScript: from dist/ the
 * compiled script sits beside the module; from src/ (the tests run the TypeScript) it is the
 * compiled one in the same folder under dist/.
 */
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The compiled script `name` (e.g. 'text-worker.js') of the folder of the module at `moduleUrl`. */
export function compiledScript(moduleUrl: string, name: string): string {
  const here = fileURLToPath(moduleUrl);
  const dir = dirname(here);
  if (!here.endsWith('.ts')) return join(dir, name);
  const parts = dir.split(sep);
  const src = parts.lastIndexOf('src');
  if (src >= 0) parts[src] = 'dist';
  return join(parts.join(sep), name);
}
