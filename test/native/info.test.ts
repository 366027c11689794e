// nativeInfo(), the loader, and the CUDA build on a machine without a GPU.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, nativeInfo, PagedKvCache, SwerlError } from '../../src/index.js';
import { native } from '../../src/native.js';

const root = join(import.meta.dirname, '..', '..');

describe('nativeInfo', () => {
  it('describes the build and the machine', () => {
    const info = nativeInfo();
    const pkg = JSON.parse(
      execFileSync(process.execPath, ['-p', 'JSON.stringify(require("./package.json"))'], { cwd: root }).toString(),
    );
    expect(info.version).toBe(pkg.version);
    expect(typeof info.cuda).toBe('boolean');
    expect(Number.isInteger(info.cudaDevices) && info.cudaDevices >= 0).toBe(true);
    expect(['avx512', 'avx2-fma', 'scalar']).toContain(info.simd);
    expect(info.threads).toBeGreaterThanOrEqual(1);
  });

  it('honours SWERL_NUM_THREADS and SWERL_SIMD', () => {
    const addon = join(root, 'build', 'cmake', 'Release', 'swerl.node');
    const path = existsSync(addon) ? addon : join(root, 'build', 'Release', 'swerl.node');
    const out = execFileSync(
      process.execPath,
      ['-p', `JSON.stringify(require(${JSON.stringify(path)}).nativeInfo())`],
      {
        env: { ...process.env, SWERL_NUM_THREADS: '3', SWERL_SIMD: 'scalar' },
      },
    );
    const info = JSON.parse(out.toString());
    expect(info.threads).toBe(3);
    expect(info.simd).toBe('scalar');
  });

  it('knows every error code the addon can raise', () => {
    for (const code of native().nativeInfo().errorCodes) expect(ErrorCodes).toContain(code);
  });

  it.skipIf(existsSync('/dev/nvidia0'))(
    'loads without a GPU, reports no device, and refuses a CUDA cache cleanly',
    () => {
      const info = nativeInfo();
      expect(info.cudaDevices).toBe(0);
      let err: unknown;
      try {
        new PagedKvCache({ numBlocks: 4, numLayers: 1, numKvHeads: 1, headDim: 8, device: 'cuda' });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SwerlError);
      expect((err as SwerlError).code).toBe('CUDA_UNAVAILABLE');
    },
  );
});

describe('run-time SIMD dispatch', () => {
  // Objects built with -mavx2 must export only their entry points: a weak (inline or template)
  // symbol compiled there could be the copy the linker keeps for the portable path too.
  const objects = (() => {
    const dir = join(root, 'build', 'cmake', 'CMakeFiles');
    if (!existsSync(dir)) return [];
    const found: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (/_avx(2|512)\.cc\.o$/.test(e.name)) found.push(p);
      }
    };
    walk(dir);
    return found;
  })();
  const hasNm = spawnSync('nm', ['--version']).status === 0;

  it.skipIf(objects.length === 0 || !hasNm)('AVX2 objects define no weak symbols', () => {
    for (const o of objects) {
      const weak = execFileSync('nm', ['-C', o])
        .toString()
        .split('\n')
        .filter((l) => / [WVu] /.test(l));
      expect(weak, o).toEqual([]);
    }
  });
});

describe('loader', () => {
  it('throws one NATIVE_LOAD_FAILED error that says what to do when no addon is built', () => {
    const dist = join(root, 'dist');
    expect(existsSync(join(dist, 'index.js')), 'run `npm run build:ts` first').toBe(true);
    const pkg = mkdtempSync(join(tmpdir(), 'swerl-noaddon-'));
    try {
      cpSync(dist, join(pkg, 'dist'), { recursive: true });
      cpSync(join(root, 'package.json'), join(pkg, 'package.json'));
      // The package's JS dependencies, but no build/ folder: only the addon is missing.
      symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'), 'dir');
      const script = `
        import { nativeInfo } from ${JSON.stringify(join(pkg, 'dist', 'index.js'))};
        try { nativeInfo(); console.log('loaded'); }
        catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })); }`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        env: { ...process.env, SWERL_NATIVE_PATH: join(pkg, 'nope.node') },
      }).toString();
      const err = JSON.parse(out);
      expect(err.name).toBe('SwerlError');
      expect(err.code).toBe('NATIVE_LOAD_FAILED');
      expect(err.message).toContain('npm run build:native');
      expect(err.message).toContain('nope.node');
      expect(err.message).toContain(join('build', 'cmake', 'Release', 'swerl.node'));
    } finally {
      rmSync(pkg, { recursive: true, force: true });
    }
  });

  it('falls back to the next candidate when SWERL_NATIVE_PATH does not load', () => {
    const script = `
      import { nativeInfo } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
      console.log(nativeInfo().version);`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, SWERL_NATIVE_PATH: join(root, 'package.json') },
    });
    expect(out.toString().trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
