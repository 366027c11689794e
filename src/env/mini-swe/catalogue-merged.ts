/**
 * The merged catalogue: the code of the wide catalogue's fifteen modules in the core catalogue's
 * four files. Each core module keeps its own code at its own lines and gains the functions (and
 * tests) of two or three wide modules after it, so that a split spans as many bug sites as the
 * wide catalogue's (about 300 misspelled-name sites, about 50 in the test split) while a task's
 * repository still holds one of four files, which a small model can learn to tell apart.
 */
import { SwerlError } from '../../errors.js';
import { CATALOGUE, type ModuleTemplate } from './catalogue.js';
import { WIDE_MODULES } from './catalogue-wide.js';

/**
 * Which wide modules each core module takes, in order. Chosen to balance the misspelled-name
 * sites (about 93, 75, 56 and 78) so that no file holds more than a third of them.
 */
const MERGES: Record<string, string[]> = {
  pagination: ['search', 'grid', 'intervals'],
  stats: ['matrix', 'histogram', 'series'],
  strings: ['words', 'csv'],
  cart: ['money', 'ring', 'duration'],
};

const IMPORT_LINE = /^import .*;\n/gm;

/** A core module with the code, exports and tests of `parts` appended (its own lines unchanged). */
function mergeModule(core: ModuleTemplate, parts: ModuleTemplate[]): ModuleTemplate {
  const exports = [...core.exports, ...parts.flatMap((p) => p.exports)];
  if (new Set(exports).size !== exports.length)
    throw new SwerlError(`merged catalogue: ${core.name} would export a name twice`, 'INTERNAL');
  const source = `${[core.source.trimEnd(), ...parts.map((p) => p.source.trimEnd())].join('\n\n')}\n`;
  // One import block for the whole suite (an import declared twice is a SyntaxError), then each
  // part's tests without their own imports.
  const header = [
    "import { describe, test } from 'node:test';",
    "import assert from 'node:assert/strict';",
    `import { ${[...exports].sort().join(', ')} } from '../${core.file}';`,
  ].join('\n');
  const bodies = [core, ...parts].map((p) => p.tests.replace(IMPORT_LINE, '').trim());
  const tests = `${header}\n\n${bodies.join('\n\n')}\n`;
  // The core's hand-written bugs keep their ids and lines; one whose text now occurs twice is left.
  const mutations = core.mutations.filter((x) => source.split(x.find).length === 2);
  return { ...core, exports, source, tests, mutations };
}

/** The four merged modules: the core's names and files, the fifteen modules' code. */
export const MERGED_MODULES: ModuleTemplate[] = CATALOGUE.map((core) =>
  mergeModule(
    core,
    (MERGES[core.name] ?? []).map((name) => {
      const part = WIDE_MODULES.find((w) => w.name === name);
      if (!part) throw new SwerlError(`merged catalogue: no wide module ${name}`, 'INTERNAL');
      return part;
    }),
  ),
);
