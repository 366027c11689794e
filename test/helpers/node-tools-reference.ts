/**
 * The scaffold's tools as they were before the bash scripts of src/agent/tools.ts: one Node
 * script per tool. Kept only as the oracle that test/unit/tools-shell.test.ts compares the bash
 * tools against byte for byte (recorded trajectories hold these scripts' output).
 */

import { WINDOW } from '../../src/agent/tools.js';
import type { Sandbox } from '../../src/env/sandbox-api.js';

const COMMON = `
const fs = require('node:fs');
const path = require('node:path');
const STATE = path.join(process.env.SWERL_WS, '.swerl', 'state.json');
const WINDOW = ${WINDOW};
function load() { try { return JSON.parse(fs.readFileSync(STATE, 'utf8')); } catch { return { file: null, first: 1 }; } }
function save(s) { fs.writeFileSync(STATE, JSON.stringify(s)); }
function fail(msg) { process.stdout.write(msg + '\\n'); process.exit(1); }
function lines(file) { const t = fs.readFileSync(file, 'utf8'); if (t === '') return []; const l = t.split('\\n'); if (l[l.length - 1] === '') l.pop(); return l; }
function show(s) {
  const l = lines(s.file);
  const first = Math.max(1, Math.min(s.first, Math.max(1, l.length - WINDOW + 1)));
  s.first = first; save(s);
  const last = Math.min(l.length, first + WINDOW - 1);
  const out = ['[File: ' + path.relative(process.env.SWERL_WS, s.file) + ' (' + l.length + ' lines total)]'];
  if (first > 1) out.push('(' + (first - 1) + ' more lines above)');
  for (let i = first; i <= last; i++) out.push(i + ':' + l[i - 1]);
  if (last < l.length) out.push('(' + (l.length - last) + ' more lines below)');
  process.stdout.write(out.join('\\n') + '\\n');
}
function needFile(s) { if (!s.file || !fs.existsSync(s.file)) fail('No file open. Use the open command first.'); }
`;

/** The Node script sources by tool name. */
export const NODE_TOOL_SCRIPTS: Record<string, string> = {
  open: `${COMMON}
const [file, line] = process.argv.slice(2);
if (!file) fail('Usage: open <file> [<line_number>]');
const abs = path.resolve(file);
if (!fs.existsSync(abs) || fs.statSync(abs).isDirectory()) fail('Error: File ' + file + ' not found');
const n = line === undefined ? 1 : Number(line);
if (!Number.isInteger(n) || n < 1) fail('Usage: open <file> [<line_number>]');
show({ file: abs, first: Math.max(1, n - Math.floor(WINDOW / 2)) });
`,
  goto: `${COMMON}
const s = load(); needFile(s);
const n = Number(process.argv[2]);
if (!Number.isInteger(n) || n < 1) fail('Usage: goto <line_number>');
if (n > lines(s.file).length) fail('Error: <line> must be less than or equal to ' + lines(s.file).length);
s.first = Math.max(1, n - Math.floor(WINDOW / 2)); show(s);
`,
  scroll_down: `${COMMON}
const s = load(); needFile(s); s.first += WINDOW; show(s);
`,
  scroll_up: `${COMMON}
const s = load(); needFile(s); s.first = Math.max(1, s.first - WINDOW); show(s);
`,
  create: `${COMMON}
const file = process.argv[2];
if (!file) fail('Usage: create <filename>');
const abs = path.resolve(file);
if (fs.existsSync(abs)) fail('Error: File ' + file + ' already exists');
fs.mkdirSync(path.dirname(abs), { recursive: true });
fs.writeFileSync(abs, '');
show({ file: abs, first: 1 });
`,
  edit: `${COMMON}
const args = process.argv.slice(2);
const s = load();
let file = s.file;
const fi = args.indexOf('--file');
if (fi >= 0) { file = path.resolve(args[fi + 1] || ''); args.splice(fi, 2); }
if (!file || !fs.existsSync(file)) fail('No file open. Use the open command first, or edit --file PATH.');
const m = /^(\\d+):(\\d+)$/.exec(args[0] || '');
if (!m) fail('Usage: edit [--file PATH] <start>:<end> << \\'EOF\\'\\n<replacement text>\\nEOF');
const start = Number(m[1]), end = Number(m[2]);
const l = lines(file);
if (start < 1 || end < start - 1 || end > l.length) fail('Error: line range ' + start + ':' + end + ' is outside 1:' + l.length);
let text = args.length > 1 ? args.slice(1).join(' ') : fs.readFileSync(0, 'utf8');
const repl = text === '' ? [] : text.replace(/\\n$/, '').split('\\n');
l.splice(start - 1, end - start + 1, ...repl);
fs.writeFileSync(file, l.join('\\n') + '\\n');
process.stdout.write('File updated. Please review the changes and make sure they are correct (correct indentation, no duplicate lines, etc). Edit the file again if necessary.\\n');
show({ file, first: Math.max(1, start - Math.floor(WINDOW / 2)) });
`,
  replace: `${COMMON}
const args = process.argv.slice(2);
const all = args[0] === '--replace-all';
if (all) args.shift();
if (args.length !== 2) fail('Usage: replace [--replace-all] <search> <replace>');
const s = load(); needFile(s);
const t = fs.readFileSync(s.file, 'utf8');
const count = t.split(args[0]).length - 1;
if (count === 0) fail('Error: ' + JSON.stringify(args[0]) + ' not found in the open file');
if (count > 1 && !all) fail('Error: ' + count + ' matches; use --replace-all or a longer search string');
fs.writeFileSync(s.file, all ? t.split(args[0]).join(args[1]) : t.replace(args[0], args[1]));
const at = t.slice(0, t.indexOf(args[0])).split('\\n').length;
process.stdout.write('File updated. Please review the changes and make sure they are correct (correct indentation, no duplicate lines, etc). Edit the file again if necessary.\\n');
s.first = Math.max(1, at - Math.floor(WINDOW / 2)); show(s);
`,
  search_file: `${COMMON}
const [term, given] = process.argv.slice(2);
if (!term) fail('Usage: search_file <search_term> [<file>]');
const s = load();
const file = given ? path.resolve(given) : s.file;
if (!file || !fs.existsSync(file)) fail(given ? 'Error: File ' + given + ' not found' : 'No file open. Use the open command first, or give a file.');
const hits = lines(file).map((x, i) => [i + 1, x]).filter(([, x]) => x.includes(term));
if (hits.length === 0) { process.stdout.write('No matches found for "' + term + '" in ' + path.relative(process.cwd(), file) + '\\n'); process.exit(0); }
process.stdout.write('Found ' + hits.length + ' matches for "' + term + '" in ' + path.relative(process.cwd(), file) + ':\\n' + hits.map(([n, x]) => 'Line ' + n + ':' + x).join('\\n') + '\\n');
`,
};

/** Installs the Node tools into a sandbox's `.swerl/bin`, as installTools did before. */
export async function installNodeTools(sb: Sandbox): Promise<void> {
  for (const [name, src] of Object.entries(NODE_TOOL_SCRIPTS))
    await sb.writeFile(`.swerl/bin/${name}`, `#!/usr/bin/env node\n${src}`, { executable: true });
  await sb.writeFile('.swerl/package.json', '{"type":"commonjs"}\n');
  await sb.writeFile('.swerl/cwd', sb.workdir);
}
