/**
 * A CMake selftest executable (build/cmake/selftest/NAME) for a test file: its path and whether it
 * is built. A checkout built without CMake (node-gyp) has none; the caller skips its checks then,
 * and a warning says what `what` would have checked and how to build it.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export function cmakeSelftest(name: string, what: string): { path: string; built: boolean } {
  const path = resolve('build/cmake/selftest', name);
  const built = existsSync(path);
  if (!built) console.warn(`${what} skipped: ${path} is not built (npm run build:native with CMake)`);
  return { path, built };
}
