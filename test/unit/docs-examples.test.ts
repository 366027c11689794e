/**
 * Every code block of the docs fenced as ```js test runs, as written, against the built package
 * (`import ... from 'swerl'` resolves to dist/): a doc example that no longer works fails here.
 * A block fenced as ```text output right after it is what the example must print.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const docs = join(root, 'docs');
const blocks = readdirSync(docs)
  .filter((f) => f.endsWith('.md'))
  .flatMap((f) =>
    [
      ...readFileSync(join(docs, f), 'utf8').matchAll(
        /^```js test\n([\s\S]*?)^```\n(?:\n```text output\n([\s\S]*?)^```$)?/gm,
      ),
    ].map((m, i) => ({
      name: `docs/${f} example ${i + 1}`,
      code: m[1] as string,
      output: m[2],
    })),
  );

describe('docs examples', () => {
  it('there are examples to run', () => expect(blocks.length).toBeGreaterThan(0));
  for (const b of blocks)
    it(`${b.name} runs`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'swerl-doc-'));
      try {
        const entry = pathToFileURL(join(root, 'dist/index.js')).href;
        const file = join(dir, 'example.mjs');
        writeFileSync(file, b.code.replace(/from 'swerl'/g, `from '${entry}'`));
        const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
        if (b.output !== undefined) expect(out).toBe(b.output);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 150_000);
});
