/**
 * The mini-SWE catalogue: small JavaScript modules with node:test suites, and for each module the
 * realistic single-line bugs that can be injected into it (the mutation kinds of the paper's
 * SWE-style tasks: operator swap, comparison flip, off-by-one, wrong variable, swapped arguments,
 * dropped negation, wrong constant, missing branch). Each bug comes with a reproduction: an
 * expression whose value, run on the buggy code, goes into the issue text.
 */

/** One injectable bug. */
export interface Mutation {
  id: string;
  kind:
    | 'operator-swap'
    | 'comparison-flip'
    | 'off-by-one'
    | 'wrong-variable'
    | 'swapped-arguments'
    | 'dropped-negation'
    | 'wrong-constant'
    | 'missing-branch';
  /** The exact source text to replace (it occurs once in the module). */
  find: string;
  replace: string;
  /** An expression over the module's exports that shows the bug. */
  repro: string;
  /** Its correct value (JSON). */
  expected: string;
  /** What the issue says the user was doing. */
  context: string;
}

/** A module of the catalogue: source, its tests, its bugs. */
export interface ModuleTemplate {
  name: string;
  file: string;
  testFile: string;
  source: string;
  tests: string;
  exports: string[];
  mutations: Mutation[];
}

export const CATALOGUE: ModuleTemplate[] = [
  {
    name: 'pagination',
    file: 'src/pagination.js',
    testFile: 'test/pagination.test.js',
    exports: ['pageCount', 'paginate', 'pageWindow'],
    source: `/** Number of pages needed for total items, size per page. */
export function pageCount(total, size) {
  if (size <= 0) throw new RangeError('size must be positive');
  return Math.ceil(total / size);
}

/** The items of page number page (1-based). */
export function paginate(items, page, size) {
  const start = (page - 1) * size;
  return items.slice(start, start + size);
}

/** Page numbers to show around the current page, at most width of them. */
export function pageWindow(current, pages, width) {
  const half = Math.floor(width / 2);
  let first = Math.max(1, current - half);
  const last = Math.min(pages, first + width - 1);
  first = Math.max(1, last - width + 1);
  const out = [];
  for (let p = first; p <= last; p++) out.push(p);
  return out;
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pageCount, paginate, pageWindow } from '../src/pagination.js';

describe('pageCount', () => {
  test('rounds up partial pages', () => assert.equal(pageCount(10, 3), 4));
  test('exact pages', () => assert.equal(pageCount(9, 3), 3));
  test('rejects a zero size', () => assert.throws(() => pageCount(5, 0), RangeError));
});

describe('paginate', () => {
  const items = ['a', 'b', 'c', 'd', 'e'];
  test('first page', () => assert.deepEqual(paginate(items, 1, 2), ['a', 'b']));
  test('last partial page', () => assert.deepEqual(paginate(items, 3, 2), ['e']));
});

describe('pageWindow', () => {
  test('centred on the current page', () => assert.deepEqual(pageWindow(5, 10, 3), [4, 5, 6]));
  test('clamped at the start', () => assert.deepEqual(pageWindow(1, 10, 3), [1, 2, 3]));
  test('clamped at the end', () => assert.deepEqual(pageWindow(10, 10, 3), [8, 9, 10]));
});
`,
    mutations: [
      {
        id: 'ceil-floor',
        kind: 'wrong-constant',
        find: 'return Math.ceil(total / size);',
        replace: 'return Math.floor(total / size);',
        repro: 'pageCount(10, 3)',
        expected: '4',
        context: 'computing how many pages 10 results need at 3 per page',
      },
      {
        id: 'size-check',
        kind: 'comparison-flip',
        find: 'if (size <= 0) throw',
        replace: 'if (size < 0) throw',
        repro: '(() => { try { return pageCount(5, 0); } catch (e) { return e.name; } })()',
        expected: '"RangeError"',
        context: 'passing a page size of 0 by mistake',
      },
      {
        id: 'start-off-by-one',
        kind: 'off-by-one',
        find: 'const start = (page - 1) * size;',
        replace: 'const start = page * size;',
        repro: "paginate(['a', 'b', 'c', 'd', 'e'], 1, 2)",
        expected: '["a","b"]',
        context: 'asking for the first page of five items, two per page',
      },
      {
        id: 'window-clamp',
        kind: 'missing-branch',
        find: '  first = Math.max(1, last - width + 1);\n',
        replace: '',
        repro: 'pageWindow(10, 10, 3)',
        expected: '[8,9,10]',
        context: 'rendering the page links on the last page',
      },
    ],
  },
  {
    name: 'stats',
    file: 'src/stats.js',
    testFile: 'test/stats.test.js',
    exports: ['mean', 'median', 'clamp', 'variance'],
    source: `/** Arithmetic mean; NaN for an empty list. */
export function mean(xs) {
  if (xs.length === 0) return NaN;
  let sum = 0;
  for (const x of xs) sum += x;
  return sum / xs.length;
}

/** Median of a list of numbers (the list is not modified). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 0 ? (s[mid - 1] + s[mid]) / 2 : s[mid];
}

/** x limited to [lo, hi]. */
export function clamp(x, lo, hi) {
  return Math.min(hi, Math.max(lo, x));
}

/** Population variance. */
export function variance(xs) {
  const m = mean(xs);
  let acc = 0;
  for (const x of xs) acc += (x - m) ** 2;
  return acc / xs.length;
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clamp, mean, median, variance } from '../src/stats.js';

describe('mean', () => {
  test('of numbers', () => assert.equal(mean([1, 2, 3, 4]), 2.5));
  test('of an empty list', () => assert.ok(Number.isNaN(mean([]))));
});

describe('median', () => {
  test('odd length', () => assert.equal(median([3, 1, 2]), 2));
  test('even length', () => assert.equal(median([4, 1, 3, 2]), 2.5));
  test('numeric order', () => assert.equal(median([10, 9, 100]), 10));
});

describe('clamp', () => {
  test('inside', () => assert.equal(clamp(5, 0, 10), 5));
  test('below', () => assert.equal(clamp(-1, 0, 10), 0));
  test('above', () => assert.equal(clamp(11, 0, 10), 10));
});

test('variance', () => assert.equal(variance([2, 4, 4, 4, 5, 5, 7, 9]), 4));
`,
    mutations: [
      {
        id: 'median-even',
        kind: 'off-by-one',
        find: '(s[mid - 1] + s[mid]) / 2',
        replace: '(s[mid] + s[mid + 1]) / 2',
        repro: 'median([4, 1, 3, 2])',
        expected: '2.5',
        context: 'computing the median of an even number of response times',
      },
      {
        id: 'median-sort',
        kind: 'missing-branch',
        find: '[...xs].sort((a, b) => a - b)',
        replace: '[...xs].sort()',
        repro: 'median([10, 9, 100])',
        expected: '10',
        context: 'taking the median of 10, 9 and 100',
      },
      {
        id: 'clamp-args',
        kind: 'swapped-arguments',
        find: 'return Math.min(hi, Math.max(lo, x));',
        replace: 'return Math.max(hi, Math.min(lo, x));',
        repro: 'clamp(5, 0, 10)',
        expected: '5',
        context: 'clamping a volume level of 5 to the range 0..10',
      },
      {
        id: 'variance-var',
        kind: 'wrong-variable',
        find: 'acc += (x - m) ** 2;',
        replace: 'acc += (x - acc) ** 2;',
        repro: 'variance([2, 4, 4, 4, 5, 5, 7, 9])',
        expected: '4',
        context: 'computing the variance of a small sample',
      },
      {
        id: 'mean-empty',
        kind: 'dropped-negation',
        find: 'if (xs.length === 0) return NaN;',
        replace: 'if (xs.length !== 0) return NaN;',
        repro: 'mean([1, 2, 3, 4])',
        expected: '2.5',
        context: 'averaging four measurements',
      },
    ],
  },
  {
    name: 'strings',
    file: 'src/strings.js',
    testFile: 'test/strings.test.js',
    exports: ['capitalize', 'slugify', 'truncate', 'isBlank'],
    source: `/** First letter upper-cased. */
export function capitalize(s) {
  if (s.length === 0) return s;
  return s[0].toUpperCase() + s.slice(1);
}

/** Lower-case words joined by dashes; other characters dropped. */
export function slugify(s) {
  return s
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0)
    .join('-');
}

/** At most max characters, ending with an ellipsis when cut. */
export function truncate(s, max) {
  if (s.length <= max) return s;
  return s.slice(0, max - 1) + '…';
}

/** Whether s has no visible characters. */
export function isBlank(s) {
  return !/\\S/.test(s);
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { capitalize, isBlank, slugify, truncate } from '../src/strings.js';

describe('capitalize', () => {
  test('a word', () => assert.equal(capitalize('hello'), 'Hello'));
  test('empty', () => assert.equal(capitalize(''), ''));
});

describe('slugify', () => {
  test('spaces and punctuation', () => assert.equal(slugify('Hello, World!'), 'hello-world'));
  test('numbers kept', () => assert.equal(slugify('Top 10 tips'), 'top-10-tips'));
});

describe('truncate', () => {
  test('short strings unchanged', () => assert.equal(truncate('abc', 5), 'abc'));
  test('exactly max', () => assert.equal(truncate('abcde', 5), 'abcde'));
  test('cut with an ellipsis', () => assert.equal(truncate('abcdefgh', 5), 'abcd…'));
});

describe('isBlank', () => {
  test('spaces', () => assert.equal(isBlank('   '), true));
  test('text', () => assert.equal(isBlank(' a '), false));
});
`,
    mutations: [
      {
        id: 'truncate-boundary',
        kind: 'comparison-flip',
        find: 'if (s.length <= max) return s;',
        replace: 'if (s.length < max) return s;',
        repro: "truncate('abcde', 5)",
        expected: '"abcde"',
        context: 'truncating a 5-character title to 5 characters',
      },
      {
        id: 'truncate-length',
        kind: 'off-by-one',
        find: 'return s.slice(0, max - 1) + ',
        replace: 'return s.slice(0, max) + ',
        repro: "truncate('abcdefgh', 5).length",
        expected: '5',
        context: 'truncating long titles to 5 characters',
      },
      {
        id: 'blank-negation',
        kind: 'dropped-negation',
        find: 'return !/\\S/.test(s);',
        replace: 'return /\\S/.test(s);',
        repro: "isBlank('   ')",
        expected: 'true',
        context: 'checking whether a form field contains only spaces',
      },
      {
        id: 'slug-filter',
        kind: 'missing-branch',
        find: '    .filter((w) => w.length > 0)\n',
        replace: '',
        repro: "slugify('Hello, World!')",
        expected: '"hello-world"',
        context: 'building a URL slug from a title with punctuation',
      },
    ],
  },
  {
    name: 'cart',
    file: 'src/cart.js',
    testFile: 'test/cart.test.js',
    exports: ['Cart'],
    source: `/** A shopping cart: quantities per SKU, prices in cents. */
export class Cart {
  constructor(prices) {
    this.prices = prices;
    this.lines = new Map();
  }

  add(sku, qty = 1) {
    if (!(sku in this.prices)) throw new Error('unknown sku ' + sku);
    this.lines.set(sku, (this.lines.get(sku) ?? 0) + qty);
  }

  remove(sku, qty = 1) {
    const left = (this.lines.get(sku) ?? 0) - qty;
    if (left > 0) this.lines.set(sku, left);
    else this.lines.delete(sku);
  }

  count() {
    let n = 0;
    for (const q of this.lines.values()) n += q;
    return n;
  }

  /** Total in cents, with percent off when at least minItems items are in the cart. */
  total(percentOff = 0, minItems = 0) {
    let cents = 0;
    for (const [sku, q] of this.lines) cents += this.prices[sku] * q;
    if (this.count() >= minItems) cents -= Math.round((cents * percentOff) / 100);
    return cents;
  }
}
`,
    tests: `import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Cart } from '../src/cart.js';

const prices = { apple: 50, pear: 80 };

describe('Cart', () => {
  test('adds and counts', () => {
    const c = new Cart(prices);
    c.add('apple', 2);
    c.add('pear');
    assert.equal(c.count(), 3);
  });
  test('removes down to nothing', () => {
    const c = new Cart(prices);
    c.add('apple', 2);
    c.remove('apple', 2);
    assert.equal(c.count(), 0);
    assert.deepEqual([...c.lines.keys()], []);
  });
  test('rejects unknown items', () => assert.throws(() => new Cart(prices).add('kiwi')));
  test('totals in cents', () => {
    const c = new Cart(prices);
    c.add('apple', 3);
    c.add('pear', 2);
    assert.equal(c.total(), 310);
  });
  test('discount from the minimum', () => {
    const c = new Cart(prices);
    c.add('apple', 4);
    assert.equal(c.total(10, 4), 180);
  });
});
`,
    mutations: [
      {
        id: 'remove-boundary',
        kind: 'comparison-flip',
        find: 'if (left > 0) this.lines.set(sku, left);',
        replace: 'if (left >= 0) this.lines.set(sku, left);',
        repro:
          "(() => { const c = new Cart({ apple: 50 }); c.add('apple', 2); c.remove('apple', 2); return [...c.lines.keys()]; })()",
        expected: '[]',
        context: 'removing every apple from a cart',
      },
      {
        id: 'discount-min',
        kind: 'comparison-flip',
        find: 'if (this.count() >= minItems) cents',
        replace: 'if (this.count() > minItems) cents',
        repro: "(() => { const c = new Cart({ apple: 50 }); c.add('apple', 4); return c.total(10, 4); })()",
        expected: '180',
        context: 'applying a 10% discount that starts at 4 items, with 4 items in the cart',
      },
      {
        id: 'total-operator',
        kind: 'operator-swap',
        find: 'cents += this.prices[sku] * q;',
        replace: 'cents += this.prices[sku] + q;',
        repro:
          "(() => { const c = new Cart({ apple: 50, pear: 80 }); c.add('apple', 3); c.add('pear', 2); return c.total(); })()",
        expected: '310',
        context: 'checking out three apples and two pears',
      },
      {
        id: 'unknown-sku',
        kind: 'dropped-negation',
        find: 'if (!(sku in this.prices)) throw',
        replace: 'if (sku in this.prices) throw',
        repro: "(() => { const c = new Cart({ apple: 50 }); c.add('apple'); return c.count(); })()",
        expected: '1',
        context: 'adding an apple to an empty cart',
      },
    ],
  },
];
