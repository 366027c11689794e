/**
 * A small Docker image for the DockerSandbox tests, built from this machine's own binaries (bash,
 * coreutils, git, node and the libraries they link), since tests cannot pull from a registry.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The test image's name. */
export const TEST_IMAGE = 'swerl-test/node-git:2';

const TOOLS = [
  'bash',
  'cat',
  'ls',
  'sleep',
  'timeout',
  'kill',
  'mkdir',
  'rm',
  'grep',
  'sed',
  'head',
  'tail',
  'wc',
  'env',
  'realpath',
  'dirname',
  'basename',
  'mktemp',
  'chmod',
  'cp',
  'mv',
  'touch',
  'id',
  'sort',
  'tr',
  'cut',
  'find',
  'xargs',
  'yes',
  'dd',
  'ln',
  'stat',
  'diff',
  'awk',
  'git',
  'node',
  'true',
  'false',
  'echo',
  'printf',
  'seq',
  'pwd',
  'ps',
  'pkill',
  'nproc',
];

function which(name: string): string | null {
  try {
    return execFileSync('bash', ['-c', `type -P ${name}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

function copyWithLibs(root: string, file: string, seen: Set<string>): void {
  if (seen.has(file)) return;
  seen.add(file);
  const target = join(root, file);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(file, target);
  let ldd = '';
  try {
    ldd = execFileSync('ldd', [file], { encoding: 'utf8' });
  } catch {
    return; // static or not an ELF
  }
  for (const m of ldd.matchAll(/(\/[^\s)]+)/g)) {
    const lib = m[1] ?? '';
    if (existsSync(lib)) copyWithLibs(root, lib, seen);
  }
}

/** Whether the engine has the image `name`. */
function hasImage(name: string): boolean {
  try {
    execFileSync('docker', ['image', 'inspect', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Builds the test image unless the engine already has it. */
export function ensureTestImage(): string {
  if (hasImage(TEST_IMAGE)) return TEST_IMAGE;
  const root = mkdtempSync(join(tmpdir(), 'swerl-rootfs-'));
  try {
    const seen = new Set<string>();
    for (const t of TOOLS) {
      const p = which(t);
      if (p) copyWithLibs(root, execFileSync('readlink', ['-f', p], { encoding: 'utf8' }).trim(), seen);
      if (p && !existsSync(join(root, p))) {
        mkdirSync(dirname(join(root, p)), { recursive: true });
        symlinkSync(execFileSync('readlink', ['-f', p], { encoding: 'utf8' }).trim(), join(root, p));
      }
    }
    for (const d of ['bin', 'usr/bin']) mkdirSync(join(root, d), { recursive: true });
    if (!existsSync(join(root, 'bin/sh'))) symlinkSync('/bin/bash', join(root, 'bin/sh'));
    for (const d of ['tmp', 'root', 'etc', 'proc', 'dev', 'sys']) mkdirSync(join(root, d), { recursive: true });
    writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/bash\n');
    writeFileSync(join(root, 'etc/group'), 'root:x:0:\n');
    execFileSync(
      'bash',
      [
        '-c',
        `chmod 1777 "${root}/tmp" && tar -C "${root}" -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'ENV HOME=/root' - ${TEST_IMAGE}`,
      ],
      {
        stdio: 'ignore',
      },
    );
    return TEST_IMAGE;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The test image without the programs `tools` (a container that lacks a tool the grader needs),
 * made from it by a container's commit; built once per engine.
 */
export function ensureTestImageWithout(tools: string[]): string {
  const name = `${TEST_IMAGE}-without-${tools.join('-')}`;
  if (hasImage(name)) return name;
  const base = ensureTestImage();
  const container = `swerl-test-derive-${process.pid}`;
  try {
    const script = 'for t; do while p=$(command -v "$t"); do rm -f -- "$p" || exit 1; done; done';
    execFileSync('docker', ['run', '--name', container, base, 'bash', '-c', script, 'bash', ...tools], {
      stdio: 'ignore',
    });
    execFileSync('docker', ['commit', container, name], { stdio: 'ignore' });
  } finally {
    execFileSync('docker', ['rm', '-f', container], { stdio: 'ignore' });
  }
  return name;
}
