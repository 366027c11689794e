/**
 * The wide catalogue's further modules: eleven more small JavaScript modules with node:test
 * suites, so that the generated suite's held-out split spans many bug sites in many modules rather
 * than the core catalogue's few (its misspelled-name test split is 11 sites, 7 in one module).
 * They carry no hand-written bugs: their tasks come from the mutation operators (mutate.ts), so
 * the tests must reach every line. Local names are words, written out, so a slip of one is a new
 * name; no template literals or regular expressions, which the renaming leaves alone.
 */
import type { ModuleTemplate } from './catalogue.js';

/** The modules the wide catalogue adds to the core one (CATALOGUE). */
export const WIDE_MODULES: ModuleTemplate[] = [
  {
    name: 'intervals',
    file: 'src/intervals.js',
    testFile: 'test/intervals.test.js',
    exports: ['overlaps', 'mergeIntervals', 'coveredLength'],
    source: `/** Whether two [start, end] intervals share at least one point. */
export function overlaps(first, second) {
  return first[0] <= second[1] && second[0] <= first[1];
}

/** The union of a list of intervals, sorted, with overlapping ones merged. */
export function mergeIntervals(list) {
  const sorted = [...list].sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const span of sorted) {
    const last = merged[merged.length - 1];
    if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
    else merged.push([span[0], span[1]]);
  }
  return merged;
}

/** Total length the intervals cover, overlaps counted once. */
export function coveredLength(list) {
  let total = 0;
  for (const span of mergeIntervals(list)) total += span[1] - span[0];
  return total;
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coveredLength, mergeIntervals, overlaps } from '../src/intervals.js';

describe('overlaps', () => {
  test('sharing a point', () => assert.equal(overlaps([1, 3], [3, 5]), true));
  test('apart', () => assert.equal(overlaps([1, 2], [4, 5]), false));
});

describe('mergeIntervals', () => {
  test('merges overlapping intervals', () => assert.deepEqual(mergeIntervals([[5, 8], [1, 3], [2, 4]]), [[1, 4], [5, 8]]));
  test('leaves its input alone', () => {
    const input = [[2, 6], [1, 3]];
    mergeIntervals(input);
    assert.deepEqual(input, [[2, 6], [1, 3]]);
  });
});

describe('coveredLength', () => {
  test('counts overlaps once', () => assert.equal(coveredLength([[0, 4], [2, 6], [10, 11]]), 7));
  test('of nothing', () => assert.equal(coveredLength([]), 0));
});
`,
    mutations: [],
  },
  {
    name: 'matrix',
    file: 'src/matrix.js',
    testFile: 'test/matrix.test.js',
    exports: ['identity', 'transpose', 'multiply'],
    source: `/** The size x size identity matrix (an array of rows). */
export function identity(size) {
  const rows = [];
  for (let diagonal = 0; diagonal < size; diagonal++) {
    const cells = new Array(size).fill(0);
    cells[diagonal] = 1;
    rows.push(cells);
  }
  return rows;
}

/** Rows become columns. */
export function transpose(matrix) {
  const height = matrix.length;
  const width = height === 0 ? 0 : matrix[0].length;
  const out = [];
  for (let col = 0; col < width; col++) {
    const column = [];
    for (let row = 0; row < height; row++) column.push(matrix[row][col]);
    out.push(column);
  }
  return out;
}

/** The product left x right; throws when the shapes do not fit. */
export function multiply(left, right) {
  if (left[0].length !== right.length) throw new RangeError('shapes do not fit');
  const columns = transpose(right);
  return left.map((line) => columns.map((column) => line.reduce((acc, value, index) => acc + value * column[index], 0)));
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { identity, multiply, transpose } from '../src/matrix.js';

test('identity', () => assert.deepEqual(identity(2), [[1, 0], [0, 1]]));

describe('transpose', () => {
  test('a 2 x 3 matrix', () => assert.deepEqual(transpose([[1, 2, 3], [4, 5, 6]]), [[1, 4], [2, 5], [3, 6]]));
  test('an empty matrix', () => assert.deepEqual(transpose([]), []));
});

describe('multiply', () => {
  test('by the identity', () => assert.deepEqual(multiply([[1, 2], [3, 4]], identity(2)), [[1, 2], [3, 4]]));
  test('a row by a column', () => assert.deepEqual(multiply([[1, 2, 3]], [[4], [5], [6]]), [[32]]));
  test('rejects shapes that do not fit', () => assert.throws(() => multiply([[1, 2]], [[1, 2]]), RangeError));
});
`,
    mutations: [],
  },
  {
    name: 'histogram',
    file: 'src/histogram.js',
    testFile: 'test/histogram.test.js',
    exports: ['histogram', 'countBy', 'topKeys'],
    source: `/** [bucket, count] pairs for buckets of the given width, lowest bucket first. */
export function histogram(values, width) {
  if (width <= 0) throw new RangeError('width must be positive');
  const counts = new Map();
  for (const value of values) {
    const bucket = Math.floor(value / width) * width;
    counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => a[0] - b[0]);
}

/** How many items have each key. */
export function countBy(items, keyOf) {
  const tally = {};
  for (const item of items) {
    const label = keyOf(item);
    tally[label] = (tally[label] ?? 0) + 1;
  }
  return tally;
}

/** The limit most frequent keys of a tally, most frequent first, ties by key. */
export function topKeys(tally, limit) {
  const pairs = Object.entries(tally);
  pairs.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return pairs.slice(0, limit).map((pair) => pair[0]);
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { countBy, histogram, topKeys } from '../src/histogram.js';

describe('histogram', () => {
  test('buckets of width 10', () => assert.deepEqual(histogram([3, 14, 17, 25, 1], 10), [[0, 2], [10, 2], [20, 1]]));
  test('rejects a zero width', () => assert.throws(() => histogram([1], 0), RangeError));
});

test('countBy', () => assert.deepEqual(countBy(['a', 'bb', 'cc', 'd'], (s) => s.length), { 1: 2, 2: 2 }));

describe('topKeys', () => {
  test('most frequent first', () => assert.deepEqual(topKeys({ x: 1, y: 3, z: 2 }, 2), ['y', 'z']));
  test('ties by key', () => assert.deepEqual(topKeys({ b: 2, a: 2 }, 2), ['a', 'b']));
});
`,
    mutations: [],
  },
  {
    name: 'duration',
    file: 'src/duration.js',
    testFile: 'test/duration.test.js',
    exports: ['formatDuration', 'parseDuration'],
    source: `const UNITS = [
  ['h', 3600],
  ['m', 60],
  ['s', 1],
];

/** Seconds as "1h 2m 3s", largest units first, zero units left out ("0s" for zero). */
export function formatDuration(seconds) {
  if (seconds < 0) throw new RangeError('negative duration');
  let rest = Math.round(seconds);
  const parts = [];
  for (const [unit, size] of UNITS) {
    const amount = Math.floor(rest / size);
    rest -= amount * size;
    if (amount > 0) parts.push(amount + unit);
  }
  return parts.length === 0 ? '0s' : parts.join(' ');
}

/** Parses "1h 30m", "90s" or "2m 5s" back into seconds. */
export function parseDuration(text) {
  let total = 0;
  for (const piece of text.trim().split(' ')) {
    if (piece === '') continue;
    const unit = UNITS.find((entry) => entry[0] === piece.slice(-1));
    const amount = Number(piece.slice(0, -1));
    if (!unit || Number.isNaN(amount)) throw new Error('bad duration ' + piece);
    total += amount * unit[1];
  }
  return total;
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDuration } from '../src/duration.js';

describe('formatDuration', () => {
  test('hours, minutes and seconds', () => assert.equal(formatDuration(3723), '1h 2m 3s'));
  test('zero units left out', () => assert.equal(formatDuration(3600), '1h'));
  test('zero', () => assert.equal(formatDuration(0), '0s'));
  test('rejects negatives', () => assert.throws(() => formatDuration(-1), RangeError));
});

describe('parseDuration', () => {
  test('round trip', () => assert.equal(parseDuration('1h 2m 3s'), 3723));
  test('extra spaces', () => assert.equal(parseDuration(' 2m  5s '), 125));
  test('rejects unknown units', () => assert.throws(() => parseDuration('5d'), /bad duration/));
});
`,
    mutations: [],
  },
  {
    name: 'ring',
    file: 'src/ring.js',
    testFile: 'test/ring.test.js',
    exports: ['RingBuffer'],
    source: `/** A fixed-capacity queue that overwrites its oldest item when full. */
export class RingBuffer {
  constructor(capacity) {
    if (capacity < 1) throw new RangeError('capacity must be at least 1');
    this.slots = new Array(capacity);
    this.head = 0;
    this.size = 0;
  }

  push(value) {
    const capacity = this.slots.length;
    const tail = (this.head + this.size) % capacity;
    this.slots[tail] = value;
    if (this.size < capacity) this.size += 1;
    else this.head = (this.head + 1) % capacity;
  }

  shift() {
    if (this.size === 0) return undefined;
    const value = this.slots[this.head];
    this.head = (this.head + 1) % this.slots.length;
    this.size -= 1;
    return value;
  }

  toArray() {
    const out = [];
    for (let offset = 0; offset < this.size; offset++) out.push(this.slots[(this.head + offset) % this.slots.length]);
    return out;
  }
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RingBuffer } from '../src/ring.js';

describe('RingBuffer', () => {
  test('keeps items in order', () => {
    const ring = new RingBuffer(3);
    ring.push(1);
    ring.push(2);
    assert.deepEqual(ring.toArray(), [1, 2]);
  });
  test('overwrites the oldest when full', () => {
    const ring = new RingBuffer(2);
    ring.push(1);
    ring.push(2);
    ring.push(3);
    assert.deepEqual(ring.toArray(), [2, 3]);
  });
  test('shifts the oldest', () => {
    const ring = new RingBuffer(2);
    ring.push('a');
    ring.push('b');
    assert.equal(ring.shift(), 'a');
    assert.deepEqual(ring.toArray(), ['b']);
  });
  test('shifts nothing when empty', () => assert.equal(new RingBuffer(1).shift(), undefined));
  test('rejects a zero capacity', () => assert.throws(() => new RingBuffer(0), RangeError));
});
`,
    mutations: [],
  },
  {
    name: 'money',
    file: 'src/money.js',
    testFile: 'test/money.test.js',
    exports: ['formatCents', 'splitEvenly', 'withTax'],
    source: `/** Cents as a string with two decimals and thousands separators: 123456 is "1,234.56". */
export function formatCents(cents) {
  const sign = cents < 0 ? '-' : '';
  const whole = Math.floor(Math.abs(cents) / 100);
  const fraction = Math.abs(cents) % 100;
  const digits = String(whole);
  const groups = [];
  for (let end = digits.length; end > 0; end -= 3) groups.unshift(digits.slice(Math.max(0, end - 3), end));
  return sign + groups.join(',') + '.' + String(fraction).padStart(2, '0');
}

/** Splits cents into parts shares that differ by at most one cent, the larger shares first. */
export function splitEvenly(cents, parts) {
  if (!Number.isInteger(parts) || parts < 1) throw new RangeError('parts must be a positive integer');
  const share = Math.floor(cents / parts);
  const extra = cents - share * parts;
  const shares = [];
  for (let index = 0; index < parts; index++) shares.push(index < extra ? share + 1 : share);
  return shares;
}

/** Adds percent tax, rounded to the nearest cent. */
export function withTax(cents, percent) {
  return cents + Math.round((cents * percent) / 100);
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCents, splitEvenly, withTax } from '../src/money.js';

describe('formatCents', () => {
  test('thousands and decimals', () => assert.equal(formatCents(123456), '1,234.56'));
  test('small amounts', () => assert.equal(formatCents(5), '0.05'));
  test('negative amounts', () => assert.equal(formatCents(-250), '-2.50'));
});

describe('splitEvenly', () => {
  test('with a remainder', () => assert.deepEqual(splitEvenly(100, 3), [34, 33, 33]));
  test('exactly', () => assert.deepEqual(splitEvenly(90, 3), [30, 30, 30]));
  test('rejects zero parts', () => assert.throws(() => splitEvenly(100, 0), RangeError));
});

test('withTax', () => assert.equal(withTax(1999, 8), 2159));
`,
    mutations: [],
  },
  {
    name: 'words',
    file: 'src/words.js',
    testFile: 'test/words.test.js',
    exports: ['words', 'wrap'],
    source: `/** The words of a text: runs of letters, digits and apostrophes, lower-cased. */
export function words(text) {
  const found = [];
  let current = '';
  for (const char of text.toLowerCase() + ' ') {
    if ((char >= 'a' && char <= 'z') || (char >= '0' && char <= '9') || char === "'") current += char;
    else if (current.length > 0) {
      found.push(current);
      current = '';
    }
  }
  return found;
}

/** Lines of at most width characters, broken between words. */
export function wrap(text, width) {
  const out = [];
  let current = '';
  for (const token of words(text)) {
    if (current.length > 0 && current.length + 1 + token.length > width) {
      out.push(current);
      current = token;
    } else current = current.length > 0 ? (current + ' ' + token) : token;
  }
  if (current.length > 0) out.push(current);
  return out;
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { words, wrap } from '../src/words.js';

test('words', () => assert.deepEqual(words("It's 2 o'clock, Bob!"), ["it's", '2', "o'clock", 'bob']));

describe('wrap', () => {
  test('breaks between words', () => assert.deepEqual(wrap('the quick brown fox', 10), ['the quick', 'brown fox']));
  test('a long word keeps a line of its own', () => assert.deepEqual(wrap('a extraordinary b', 5), ['a', 'extraordinary', 'b']));
  test('empty text', () => assert.deepEqual(wrap('', 10), []));
});
`,
    mutations: [],
  },
  {
    name: 'search',
    file: 'src/search.js',
    testFile: 'test/search.test.js',
    exports: ['lowerBound', 'indexOf', 'countInRange'],
    source: `/** The first index of sorted at which target can be inserted, keeping it sorted. */
export function lowerBound(sorted, target) {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (sorted[middle] < target) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The index of target in sorted, or -1. */
export function indexOf(sorted, target) {
  const position = lowerBound(sorted, target);
  if (position < sorted.length && sorted[position] === target) return position;
  return -1;
}

/** How many integers of sorted lie in [start, stop]. */
export function countInRange(sorted, start, stop) {
  if (start > stop) return 0;
  return lowerBound(sorted, stop + 1) - lowerBound(sorted, start);
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { countInRange, indexOf, lowerBound } from '../src/search.js';

const values = [1, 3, 3, 5, 8];

describe('lowerBound', () => {
  test('before equal values', () => assert.equal(lowerBound(values, 3), 1));
  test('past the end', () => assert.equal(lowerBound(values, 9), 5));
});

describe('indexOf', () => {
  test('present', () => assert.equal(indexOf(values, 5), 3));
  test('absent', () => assert.equal(indexOf(values, 4), -1));
});

describe('countInRange', () => {
  test('inclusive bounds', () => assert.equal(countInRange(values, 3, 5), 3));
  test('an empty range', () => assert.equal(countInRange(values, 6, 2), 0));
});
`,
    mutations: [],
  },
  {
    name: 'grid',
    file: 'src/grid.js',
    testFile: 'test/grid.test.js',
    exports: ['neighbours', 'regionSize'],
    source: `const STEPS = [
  [-1, 0],
  [1, 0],
  [0, -1],
  [0, 1],
];

/** The in-bounds neighbours [y, x] of cell (y, x) in a grid of the given height and width. */
export function neighbours(y, x, height, width) {
  const found = [];
  for (const [dy, dx] of STEPS) {
    const ny = y + dy;
    const nx = x + dx;
    if (ny >= 0 && ny < height && nx >= 0 && nx < width) found.push([ny, nx]);
  }
  return found;
}

/** The number of cells connected to (y, x) that hold the same value. */
export function regionSize(grid, y, x) {
  const height = grid.length;
  const width = grid[0].length;
  const target = grid[y][x];
  const seen = new Set([y * width + x]);
  const queue = [[y, x]];
  while (queue.length > 0) {
    const [cy, cx] = queue.pop();
    for (const [ny, nx] of neighbours(cy, cx, height, width)) {
      const cell = ny * width + nx;
      if (seen.has(cell) || grid[ny][nx] !== target) continue;
      seen.add(cell);
      queue.push([ny, nx]);
    }
  }
  return seen.size;
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { neighbours, regionSize } from '../src/grid.js';

const grid = [[1, 1, 0], [0, 1, 0], [1, 1, 0]];

describe('neighbours', () => {
  test('a corner has two', () => assert.deepEqual(neighbours(0, 0, 3, 3), [[1, 0], [0, 1]]));
  test('the centre has four', () => assert.equal(neighbours(1, 1, 3, 3).length, 4));
});

describe('regionSize', () => {
  test('a connected region', () => assert.equal(regionSize(grid, 0, 0), 5));
  test('a column', () => assert.equal(regionSize(grid, 0, 2), 3));
  test('a single cell', () => assert.equal(regionSize(grid, 1, 0), 1));
});
`,
    mutations: [],
  },
  {
    name: 'series',
    file: 'src/series.js',
    testFile: 'test/series.test.js',
    exports: ['movingAverage', 'percentChange', 'cumulative'],
    source: `/** The average of each window of size consecutive values. */
export function movingAverage(values, size) {
  if (size < 1 || size > values.length) return [];
  const out = [];
  let sum = 0;
  for (let index = 0; index < values.length; index++) {
    sum += values[index];
    if (index >= size) sum -= values[index - size];
    if (index >= size - 1) out.push(sum / size);
  }
  return out;
}

/** The change from before to after in percent, to one decimal. */
export function percentChange(before, after) {
  if (before === 0) throw new RangeError('no percent change from zero');
  return Math.round(((after - before) / before) * 1000) / 10;
}

/** Running totals. */
export function cumulative(values) {
  const totals = [];
  let running = 0;
  for (const value of values) {
    running += value;
    totals.push(running);
  }
  return totals;
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cumulative, movingAverage, percentChange } from '../src/series.js';

describe('movingAverage', () => {
  test('windows of two', () => assert.deepEqual(movingAverage([1, 3, 5, 7], 2), [2, 4, 6]));
  test('a window longer than the list', () => assert.deepEqual(movingAverage([1, 2], 3), []));
});

describe('percentChange', () => {
  test('a rise', () => assert.equal(percentChange(80, 100), 25));
  test('a fall', () => assert.equal(percentChange(200, 150), -25));
  test('from zero', () => assert.throws(() => percentChange(0, 5), RangeError));
});

test('cumulative', () => assert.deepEqual(cumulative([1, 2, 3]), [1, 3, 6]));
`,
    mutations: [],
  },
  {
    name: 'csv',
    file: 'src/csv.js',
    testFile: 'test/csv.test.js',
    exports: ['parseLine', 'formatLine'],
    source: `/** The fields of one CSV line; double quotes enclose a field with commas ("" is a quote). */
export function parseLine(line) {
  const fields = [];
  let field = '';
  let quoted = false;
  for (let index = 0; index < line.length; index++) {
    const char = line[index];
    if (quoted && char === '"' && line[index + 1] === '"') {
      field += '"';
      index++;
    } else if (char === '"') quoted = !quoted;
    else if (char === ',' && !quoted) {
      fields.push(field);
      field = '';
    } else field += char;
  }
  fields.push(field);
  return fields;
}

/** One CSV line from fields, quoting those that need it. */
export function formatLine(fields) {
  return fields
    .map((value) => {
      const text = String(value);
      if (!text.includes(',') && !text.includes('"')) return text;
      return '"' + text.replaceAll('"', '""') + '"';
    })
    .join(',');
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatLine, parseLine } from '../src/csv.js';

describe('parseLine', () => {
  test('plain fields', () => assert.deepEqual(parseLine('a,b,,c'), ['a', 'b', '', 'c']));
  test('quoted commas', () => assert.deepEqual(parseLine('x,"1,2",y'), ['x', '1,2', 'y']));
  test('escaped quotes', () => assert.deepEqual(parseLine('"say ""hi""",z'), ['say "hi"', 'z']));
});

describe('formatLine', () => {
  test('plain', () => assert.equal(formatLine(['a', 1, 'b']), 'a,1,b'));
  test('quotes when needed', () => assert.equal(formatLine(['1,2', 'say "hi"']), '"1,2","say ""hi"""'));
});
`,
    mutations: [],
  },
];
