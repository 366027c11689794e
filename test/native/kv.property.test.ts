/**
 * Property tests of PagedKvCache against an independent reference model (test/helpers/kv-model.ts):
 * random command sequences run on both, and every observable is compared after every command.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { PagedKvCache, SwerlError } from '../../src/index.js';
import { KvModel, KvModelError, type KvModelOptions } from '../helpers/kv-model.js';

// ---- commands ------------------------------------------------------------------------------------

/** A sequence reference, resolved against the state when the command runs. */
type SeqRef = { kind: 'live' | 'newest' | 'dead' | 'unknown'; idx: number };

type Command =
  | { t: 'create' }
  | {
      t: 'append';
      seq: SeqRef;
      /** Append to a new sequence (created first, as a 'create' command). */
      fresh: boolean;
      /** Take tokens from this sequence of the history (continuing it when it extends seq). */
      src: number | null;
      srcBlocks: number;
      extra: number[];
      /** Commit right after the append (and after the prefix writes). */
      commitAfter: boolean;
    }
  | { t: 'badAppend'; seq: SeqRef; variant: number }
  | {
      t: 'batch';
      /** Sequences of the batch (may repeat, or be dead/unknown: then it must fail as a whole). */
      seqs: SeqRef[];
      /** Per sequence: continue it from this history entry (null: no), then extra tokens. */
      srcs: (number | null)[];
      extras: number[][];
      commitAfter: boolean;
    }
  | { t: 'commit'; seq: SeqRef }
  | { t: 'fork'; seq: SeqRef }
  | { t: 'free'; seq: SeqRef }
  | { t: 'version'; version: number }
  | { t: 'write'; seq: SeqRef; layer: number; mode: number; a: number; b: number; seed: number }
  | { t: 'read'; seq: SeqRef; layer: number; a: number; b: number };

const seqRefArb: fc.Arbitrary<SeqRef> = fc.record({
  kind: fc.oneof(
    { weight: 9, arbitrary: fc.constant('live' as const) },
    { weight: 4, arbitrary: fc.constant('newest' as const) },
    { weight: 1, arbitrary: fc.constant('dead' as const) },
    { weight: 1, arbitrary: fc.constant('unknown' as const) },
  ),
  idx: fc.nat(1000),
});

interface CommandOptions {
  /** Generate random writeKv commands (else KV is written only as the prefix function). */
  randomWrites: boolean;
  /** Tokens are 0..maxToken. */
  maxToken: number;
  /** Weight of setWeightVersion commands (appends weigh 10). */
  versionWeight: number;
}

function commandArb({ randomWrites, maxToken, versionWeight }: CommandOptions): fc.Arbitrary<Command> {
  const token = fc.integer({ min: 0, max: maxToken });
  const srcArb: fc.Arbitrary<number | null> = fc.option(fc.nat(1000), { freq: 4 });
  const extraArb: fc.Arbitrary<number[]> = fc.oneof(
    { weight: 1, arbitrary: fc.constant<number[]>([]) },
    { weight: 3, arbitrary: fc.array(token, { minLength: 1, maxLength: 15 }) },
  );
  const cmds: fc.WeightedArbitrary<Command>[] = [
    { weight: 2, arbitrary: fc.constant({ t: 'create' as const }) },
    {
      weight: 10,
      arbitrary: fc.record({
        t: fc.constant('append' as const),
        seq: seqRefArb,
        fresh: fc.boolean(),
        src: srcArb,
        srcBlocks: fc.integer({ min: 1, max: 3 }),
        extra: extraArb,
        commitAfter: fc.oneof(fc.constant(true), fc.boolean()),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ t: fc.constant('badAppend' as const), seq: seqRefArb, variant: fc.nat(5) }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        t: fc.constant('batch' as const),
        seqs: fc.array(seqRefArb, { minLength: 1, maxLength: 4 }),
        srcs: fc.array(srcArb, { minLength: 4, maxLength: 4 }),
        extras: fc.array(extraArb, { minLength: 4, maxLength: 4 }),
        commitAfter: fc.boolean(),
      }),
    },
    { weight: 6, arbitrary: fc.record({ t: fc.constant('commit' as const), seq: seqRefArb }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('fork' as const), seq: seqRefArb }) },
    { weight: 6, arbitrary: fc.record({ t: fc.constant('free' as const), seq: seqRefArb }) },
    {
      weight: versionWeight,
      arbitrary: fc.record({ t: fc.constant('version' as const), version: fc.integer({ min: 0, max: 2 }) }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('read' as const),
        seq: seqRefArb,
        layer: fc.nat(1),
        a: fc.nat(100),
        b: fc.nat(100),
      }),
    },
  ];
  if (randomWrites) {
    cmds.push({
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('write' as const),
        seq: seqRefArb,
        layer: fc.nat(1),
        mode: fc.nat(9),
        a: fc.nat(100),
        b: fc.nat(100),
        seed: fc.nat(),
      }),
    });
  }
  return fc.oneof(...cmds);
}

/**
 * Tiny pools, blocks of 1-2 tokens over a 2-token alphabet and frequent weight-version changes:
 * identical content under different parents, blocks evicted and registered again while their old
 * children are still registered, chains through a parent that changed generation.
 */
const staleConfigArb: fc.Arbitrary<KvModelOptions> = fc.record({
  numBlocks: fc.integer({ min: 2, max: 6 }),
  blockSize: fc.integer({ min: 1, max: 2 }),
  numLayers: fc.constant(1),
  numKvHeads: fc.constant(1),
  headDim: fc.integer({ min: 1, max: 2 }),
  prefixCaching: fc.constant(true),
});

const configArb: fc.Arbitrary<KvModelOptions> = fc.record({
  numBlocks: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 6 }) },
    { weight: 1, arbitrary: fc.integer({ min: 7, max: 12 }) },
  ),
  blockSize: fc.integer({ min: 1, max: 5 }),
  numLayers: fc.integer({ min: 1, max: 2 }),
  numKvHeads: fc.integer({ min: 1, max: 2 }),
  headDim: fc.integer({ min: 1, max: 3 }),
  prefixCaching: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
});

// ---- running both ---------------------------------------------------------------------------------

type Outcome = { ok: true; value: unknown } | { ok: false; code: string };

function outcome(fn: () => unknown): Outcome {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (e instanceof SwerlError || e instanceof KvModelError) return { ok: false, code: e.code };
    throw e;
  }
}

/** The surface that both PagedKvCache and KvModel have. */
interface KvLike {
  readonly numLayers: number;
  stats(): object;
  length(seq: number): number;
  committedLength(seq: number): number;
  blockTable(seq: number): Int32Array;
  readKv(seq: number, layer: number, start: number, count: number): { k: Float32Array; v: Float32Array };
}

interface SeqSnapshot {
  id: number;
  length: number;
  committed: number;
  blocks: number[];
  kv: { k: number[]; v: number[] }[];
}

function snapshot(c: KvLike, ids: number[]): { stats: object; seqs: SeqSnapshot[] } {
  return {
    stats: c.stats(),
    seqs: ids.map((id) => {
      const length = c.length(id);
      const kv = [];
      for (let layer = 0; layer < c.numLayers; layer++) {
        const r = c.readKv(id, layer, 0, length);
        kv.push({ k: Array.from(r.k), v: Array.from(r.v) });
      }
      return { id, length, committed: c.committedLength(id), blocks: Array.from(c.blockTable(id)), kv };
    }),
  };
}

/** Deterministic f32-exact values from a seed. */
function fill(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = ((x % 2001) - 1000) / 8 + 0; // + 0 turns -0 into 0
  }
  return out;
}

/** FNV-1a over a token prefix, one step. */
function hashStep(h: number, t: number): number {
  let x = h;
  for (let i = 0; i < 4; i++) {
    x ^= (t >>> (8 * i)) & 0xff;
    x = Math.imul(x, 0x01000193) >>> 0;
  }
  return x;
}

/** KV row of a position, a function of the whole token prefix up to and including it. */
function prefixRow(h: number, layer: number, which: 0 | 1, row: number): Float32Array {
  return fill(row, (h ^ Math.imul(layer + 1, 0x9e3779b1) ^ Math.imul(which + 1, 0x85ebca6b)) >>> 0);
}

/** Expected [k, v] of positions [0, n) of a sequence with `tokens` under the prefix function. */
function prefixKv(tokens: number[], layer: number, row: number): { k: number[]; v: number[] } {
  const k: number[] = [];
  const v: number[] = [];
  let h = 0x811c9dc5;
  for (const t of tokens) {
    h = hashStep(h, t);
    k.push(...prefixRow(h, layer, 0, row));
    v.push(...prefixRow(h, layer, 1, row));
  }
  return { k, v };
}

const coverage = {
  runs: 0,
  commands: 0,
  hits: 0,
  full: 0,
  evictions: 0,
  forks: 0,
  batches: 0,
  errors: new Map<string, number>(),
};

/**
 * Runs `commands` on a fresh PagedKvCache and KvModel with `config`, comparing every observable
 * after every command. With `prefixWrites`, every appended uncommitted position gets the KV of its
 * token prefix right after the append, and every sequence must always read back its own prefix KV.
 */
function runScenario(config: KvModelOptions, commands: Command[], prefixWrites: boolean): void {
  const real = new PagedKvCache({ ...config, dtype: 'f32' });
  const model = new KvModel(config);
  const bs = config.blockSize;
  const row = config.numKvHeads * config.headDim;
  const dead: number[] = [];
  /** Token lists of every sequence seen, to build appends that hit. */
  const history: number[][] = [];
  coverage.runs++;

  const resolve = (ref: SeqRef): number => {
    const live = model.liveSequences();
    if (ref.kind === 'live' && live.length > 0) return live[ref.idx % live.length] as number;
    if (ref.kind === 'newest' && live.length > 0) return live[live.length - 1] as number;
    if (ref.kind === 'dead' && dead.length > 0) return dead[ref.idx % dead.length] as number;
    const unknown = [0, -1, model.peekNextId() + 1, 1_000_000];
    return unknown[ref.idx % unknown.length] as number;
  };

  /** Tokens to append to id: a continuation (or the start) of a history entry, then extra tokens. */
  const appendTokens = (id: number, src: number | null, srcBlocks: number, extra: number[]): number[] => {
    const own = model.liveSequences().includes(id) ? model.tokens(id) : [];
    const tokens: number[] = [];
    if (src !== null && (history.length > 0 || model.liveSequences().length > 0)) {
      const pool = [...history, ...model.liveSequences().map((s) => model.tokens(s))];
      const from = pool[src % pool.length] as number[];
      // Continue it when it extends this sequence, else copy its start.
      const extends_ = own.length <= from.length && own.every((t, i) => t === from[i]);
      const start = extends_ ? own.length : 0;
      tokens.push(...from.slice(start, start + srcBlocks * bs));
    }
    tokens.push(...extra.slice(0, 3 * bs));
    return tokens;
  };

  const writePrefix = (id: number) => {
    const tokens = model.tokens(id);
    const from = model.committedLength(id);
    if (from >= tokens.length) return;
    for (let layer = 0; layer < config.numLayers; layer++) {
      const { k, v } = prefixKv(tokens, layer, row);
      const kk = Float32Array.from(k.slice(from * row));
      const vv = Float32Array.from(v.slice(from * row));
      real.writeKv(id, layer, from, kk, vv);
      model.writeKv(id, layer, from, kk, vv);
    }
  };

  for (let step = 0; step < commands.length; step++) {
    const cmd = commands[step] as Command;
    const where = `step ${step}: ${JSON.stringify(cmd)}`;
    // A new sequence for a fresh append, or for a command on a live sequence when none is live.
    let fresh: number | undefined;
    const wantsLive =
      'seq' in cmd && (cmd.seq.kind === 'live' || cmd.seq.kind === 'newest') && model.liveSequences().length === 0;
    if ((cmd.t === 'append' && cmd.fresh) || wantsLive) {
      fresh = model.createSequence();
      expect(real.createSequence(), where).toBe(fresh);
    }
    const before = snapshot(real, model.liveSequences());
    let r: Outcome;
    let m: Outcome;
    coverage.commands++;
    switch (cmd.t) {
      case 'create':
        m = outcome(() => model.createSequence());
        r = outcome(() => real.createSequence());
        break;
      case 'append': {
        const id = fresh ?? resolve(cmd.seq);
        const ids = Int32Array.from(appendTokens(id, cmd.src, cmd.srcBlocks, cmd.extra));
        m = outcome(() => model.append(id, ids));
        r = outcome(() => real.append(id, ids));
        if (m.ok && (m.value as { cachedTokens: number }).cachedTokens > 0) coverage.hits++;
        if (m.ok && prefixWrites) writePrefix(id);
        if (m.ok && cmd.commitAfter) {
          model.commit(id);
          real.commit(id);
        }
        break;
      }
      case 'batch': {
        const ids = cmd.seqs.map(resolve);
        const lists = ids.map((id, i) => appendTokens(id, cmd.srcs[i] ?? null, 1, cmd.extras[i] ?? []));
        const tokens = Int32Array.from(lists.flat());
        const counts = lists.map((l) => l.length);
        const perModel = new Int32Array(ids.length);
        const perReal = new Int32Array(ids.length);
        m = outcome(() => ({ ...model.appendBatch(ids, tokens, counts, perModel), perSeq: Array.from(perModel) }));
        r = outcome(() => ({ ...real.appendBatch(ids, tokens, counts, perReal), perSeq: Array.from(perReal) }));
        if (m.ok) {
          coverage.batches++;
          if (prefixWrites) for (const id of ids) writePrefix(id);
          if (cmd.commitAfter) {
            model.commitBatch(ids);
            real.commitBatch(ids);
          }
        }
        break;
      }
      case 'badAppend': {
        // Only on live sequences: with an unknown id too, which error comes first is unspecified.
        const live = model.liveSequences();
        if (live.length === 0) {
          m = r = { ok: true, value: undefined };
          break;
        }
        const id = live[cmd.seq.idx % live.length] as number;
        const variants: ArrayLike<number>[] = [
          [0, -1],
          [1.5],
          [Number.NaN, 0],
          Int32Array.of(1, -1),
          [2 ** 31],
          [1, 2, -3, 0],
        ];
        const tokens = variants[cmd.variant % variants.length] as ArrayLike<number>;
        m = outcome(() => model.append(id, tokens));
        r = outcome(() => real.append(id, tokens));
        break;
      }
      case 'commit': {
        const id = resolve(cmd.seq);
        m = outcome(() => model.commit(id));
        r = outcome(() => real.commit(id));
        break;
      }
      case 'fork': {
        const id = resolve(cmd.seq);
        m = outcome(() => model.fork(id));
        r = outcome(() => real.fork(id));
        if (m.ok) coverage.forks++;
        break;
      }
      case 'free': {
        const id = resolve(cmd.seq);
        const tokens = model.liveSequences().includes(id) ? model.tokens(id) : null;
        m = outcome(() => model.free(id));
        r = outcome(() => real.free(id));
        if (m.ok) {
          dead.push(id);
          if (tokens !== null && tokens.length > 0) history.push(tokens);
        }
        break;
      }
      case 'version':
        m = outcome(() => model.setWeightVersion(cmd.version));
        r = outcome(() => real.setWeightVersion(cmd.version));
        break;
      case 'write': {
        const id = resolve(cmd.seq);
        const live = model.liveSequences().includes(id);
        const len = live ? model.length(id) : 4;
        const committed = live ? model.committedLength(id) : 0;
        const layer = cmd.layer % config.numLayers;
        let start: number;
        let count: number;
        if (cmd.mode < 7 || committed === 0) {
          // Inside the uncommitted range (possibly empty).
          start = committed + (cmd.a % (len - committed + 1));
          count = cmd.b % (len - start + 1);
        } else if (cmd.mode < 9) {
          // Touches a committed position: INVALID_ARGUMENT.
          start = cmd.a % committed;
          count = 1 + (cmd.b % (len - start));
        } else {
          // Runs past the end: INVALID_ARGUMENT.
          start = committed + (cmd.a % (len - committed + 1));
          count = len - start + 1 + (cmd.b % 2);
        }
        const k = fill(count * row, cmd.seed);
        const v = fill(count * row, cmd.seed ^ 0x5bd1e995);
        m = outcome(() => model.writeKv(id, layer, start, k, v));
        r = outcome(() => real.writeKv(id, layer, start, k, v));
        break;
      }
      case 'read': {
        const id = resolve(cmd.seq);
        const len = model.liveSequences().includes(id) ? model.length(id) : 3;
        const layer = cmd.layer % config.numLayers;
        const start = cmd.a % (len + 2);
        const count = cmd.b % (len + 2);
        const toPlain = (x: { k: Float32Array; v: Float32Array }) => ({ k: Array.from(x.k), v: Array.from(x.v) });
        m = outcome(() => toPlain(model.readKv(id, layer, start, count)));
        r = outcome(() => toPlain(real.readKv(id, layer, start, count)));
        break;
      }
    }

    // Same result or same error code.
    expect(r, where).toEqual(m);
    if (!m.ok) {
      coverage.errors.set(m.code, (coverage.errors.get(m.code) ?? 0) + 1);
      if (m.code === 'KV_CACHE_FULL') coverage.full++;
      // A throwing command changes nothing (judged on the real cache alone).
      expect(snapshot(real, model.liveSequences()), `${where} threw ${m.code} but changed the cache`).toEqual(before);
    }

    // Every observable equal.
    model.checkInvariants();
    const live = model.liveSequences();
    const rs = snapshot(real, live);
    const ms = snapshot(model, live);
    expect(rs, where).toEqual(ms);
    for (const id of dead)
      expect(
        outcome(() => real.length(id)),
        where,
      ).toEqual({ ok: false, code: 'UNKNOWN_SEQUENCE' });

    // Invariants of the real cache on its own.
    const st = real.stats();
    expect(st.freeBlocks + st.activeBlocks, where).toBe(st.numBlocks);
    expect(st.cachedBlocks, where).toBeLessThanOrEqual(st.freeBlocks);
    expect(st.cachedTokens, where).toBeLessThanOrEqual(st.queriedTokens);
    const owners = new Map<number, number>();
    const tails = new Set<number>();
    for (const s of rs.seqs) {
      expect(s.blocks.length, where).toBe(Math.ceil(s.length / bs));
      expect(new Set(s.blocks).size, `${where}: a block twice in one table`).toBe(s.blocks.length);
      expect(s.committed, where).toBeLessThanOrEqual(s.length);
      for (const b of s.blocks) {
        expect(b >= 0 && b < config.numBlocks, where).toBe(true);
        owners.set(b, (owners.get(b) ?? 0) + 1);
      }
      if (s.length % bs !== 0) tails.add(s.blocks[s.blocks.length - 1] as number);
    }
    expect(owners.size, `${where}: active blocks vs distinct blocks in live tables`).toBe(st.activeBlocks);
    for (const b of tails) expect(owners.get(b), `${where}: partial tail block ${b} is shared`).toBe(1);

    // Every sequence reads back the KV of its own prefix.
    if (prefixWrites) {
      for (const s of rs.seqs) {
        const tokens = model.tokens(s.id);
        for (let layer = 0; layer < config.numLayers; layer++) {
          expect(s.kv[layer], `${where}: seq ${s.id} layer ${layer} KV is not its prefix's`).toEqual(
            prefixKv(tokens, layer, row),
          );
        }
      }
    }
  }
  coverage.evictions += real.stats().evictions;
}

// ---- scripted scenarios -----------------------------------------------------------------------------

/** The whole surface that both PagedKvCache and KvModel have. */
interface KvCacheLike extends KvLike {
  createSequence(): number;
  append(seq: number, tokens: ArrayLike<number>): { cachedTokens: number; newBlocks: number };
  commit(seq: number): void;
  fork(seq: number): number;
  free(seq: number): void;
  setWeightVersion(version: number): void;
  writeKv(seq: number, layer: number, start: number, k: Float32Array, v: Float32Array): void;
}

/**
 * Drives one cache (real or model) through a script: appends write the prefix-function KV of every
 * uncommitted position, and check() asserts that every live sequence reads back its own prefix KV.
 */
class Driver {
  readonly #c: KvCacheLike;
  readonly #row: number;
  readonly #tokens = new Map<number, number[]>();
  /** Every result, in order, to compare the two runs. */
  readonly log: unknown[] = [];

  constructor(c: KvCacheLike, row: number) {
    this.#c = c;
    this.#row = row;
  }

  create(): number {
    const id = this.#c.createSequence();
    this.#tokens.set(id, []);
    this.log.push({ create: id });
    return id;
  }

  append(seq: number, tokens: number[]): void {
    let r: { cachedTokens: number; newBlocks: number };
    try {
      r = this.#c.append(seq, Int32Array.from(tokens));
    } catch (e) {
      if (!(e instanceof SwerlError || e instanceof KvModelError)) throw e;
      this.log.push({ append: seq, error: e.code });
      return;
    }
    const all = [...(this.#tokens.get(seq) ?? []), ...tokens];
    this.#tokens.set(seq, all);
    const from = this.#c.committedLength(seq);
    for (let layer = 0; layer < this.#c.numLayers; layer++) {
      const { k, v } = prefixKv(all, layer, this.#row);
      this.#c.writeKv(
        seq,
        layer,
        from,
        Float32Array.from(k.slice(from * this.#row)),
        Float32Array.from(v.slice(from * this.#row)),
      );
    }
    this.log.push({ append: seq, ...r, table: Array.from(this.#c.blockTable(seq)) });
  }

  commit(seq: number): void {
    this.#c.commit(seq);
    this.log.push({ commit: seq, stats: this.#c.stats() });
  }

  fork(seq: number): number {
    const id = this.#c.fork(seq);
    this.#tokens.set(id, [...(this.#tokens.get(seq) ?? [])]);
    this.log.push({ fork: seq, id, table: Array.from(this.#c.blockTable(id)) });
    return id;
  }

  free(seq: number): void {
    this.#c.free(seq);
    this.#tokens.delete(seq);
    this.log.push({ free: seq, stats: this.#c.stats() });
  }

  version(v: number): void {
    this.#c.setWeightVersion(v);
    this.log.push({ version: v, stats: this.#c.stats() });
  }

  check(): void {
    for (const [seq, tokens] of this.#tokens) {
      for (let layer = 0; layer < this.#c.numLayers; layer++) {
        const r = this.#c.readKv(seq, layer, 0, tokens.length);
        expect({ k: Array.from(r.k), v: Array.from(r.v) }, `seq ${seq} layer ${layer}`).toEqual(
          prefixKv(tokens, layer, this.#row),
        );
      }
    }
    this.log.push({ stats: this.#c.stats() });
  }
}

/** Runs `script` on the real cache and on the model: same log, and each reads back prefix KV. */
function runScript(config: KvModelOptions, script: (d: Driver) => void): unknown[] {
  const row = config.numKvHeads * config.headDim;
  const real = new Driver(new PagedKvCache({ ...config, dtype: 'f32' }), row);
  const model = new Driver(new KvModel(config), row);
  script(model);
  script(real);
  expect(real.log).toEqual(model.log);
  return real.log;
}

const tiny: KvModelOptions = {
  numBlocks: 4,
  blockSize: 1,
  numLayers: 1,
  numKvHeads: 1,
  headDim: 1,
  prefixCaching: true,
};

describe('PagedKvCache stale-chain scenarios', () => {
  it('does not hit a registered child of an evicted and re-registered parent', () => {
    runScript(tiny, (d) => {
      const u = d.create();
      d.append(u, [0]); // block 0
      const t = d.create();
      d.append(t, [0, 1]); // blocks 1, 2: no hit, block 0 is not committed yet
      d.commit(u); // block 0 registered as [0]
      d.commit(t); // position 0: duplicate of block 0; block 2 registered as [0] -> [1]
      d.free(u); // block 0 cached, at the back of the free queue
      const v1 = d.create();
      d.append(v1, [1]); // block 3, not committed
      const v2 = d.create();
      d.append(v2, [1]); // evicts block 0
      d.commit(v2); // block 0 registered again, as [1]
      d.free(v1);
      const w = d.create();
      d.append(w, [1, 1]); // hits block 0 ([1]); block 2 ([0] -> [1]) must not hit
      d.check();
    });
  });

  it('stops extending a chain whose canonical parent changed generation', () => {
    runScript(tiny, (d) => {
      const u = d.create();
      d.append(u, [0]); // block 0
      const s = d.create();
      d.append(s, [0]); // block 1
      d.commit(u); // block 0 registered as [0]
      d.commit(s); // s's chain: block 0 (its own block 1 is a duplicate)
      d.free(u); // block 0 cached
      const v1 = d.create();
      d.append(v1, [1, 1]); // blocks 2, 3
      const v2 = d.create();
      d.free(v1); // free queue: 2, 3, 0
      d.append(v2, [1]); // block 2
      const v3 = d.create();
      d.append(v3, [1, 1]); // blocks 3 and 0: evicts block 0
      d.commit(v3); // re-registers block 0, as [1] -> [1]
      d.free(v2);
      d.append(s, [1]);
      d.commit(s); // s's chain parent changed generation: nothing registered
      const w = d.create();
      d.append(w, [1, 1]);
      d.check();
      d.free(s);
      d.append(w, [0, 1]);
      d.check();
    });
  });

  it('registers a prefix whose hash an orphaned block (evicted parent) still holds', () => {
    // Block 2 is registered as [0] -> [0] under parent block 0; block 0 is evicted, so block 2 is
    // an orphan: still registered (cached), never hittable. w then commits the same content [0, 0]
    // in blocks 3 and 0: a different parent, so a different key, and block 0 must be registered.
    // x must then hit both blocks (cachedTokens 2, newBlocks 0).
    const log = runScript(tiny, (d) => {
      const u = d.create();
      d.append(u, [0]); // block 0
      const t = d.create();
      d.append(t, [0, 0]); // blocks 1, 2 (block 0 is not committed yet: no hit)
      d.commit(u); // block 0 registered as [0]
      d.commit(t); // t's block 1 duplicates block 0; block 2 registered as [0] -> [0] under block 0
      d.free(u); // free queue: 3, 0 (cached)
      const v = d.create();
      d.append(v, [1, 1]); // blocks 3 and 0: evicts block 0, block 2 is an orphan
      d.free(v); // free queue: 3, 0
      const w = d.create();
      d.append(w, [0, 0]); // blocks 3, 0
      d.commit(w); // block 3 registered as [0], block 0 as [0] -> [0] under block 3
      const x = d.create();
      d.append(x, [0, 0]); // hits blocks 3 and 0
      d.check();
    });
    expect(log).toContainEqual({ append: 5, cachedTokens: 2, newBlocks: 0, table: [3, 0] });
  });

  it('a weight-version change ends every chain, also of live sequences', () => {
    runScript({ ...tiny, numBlocks: 8, blockSize: 2 }, (d) => {
      const a = d.create();
      d.append(a, [0, 1, 1, 0]);
      const b = d.fork(a); // shares both uncommitted blocks
      d.commit(a); // registers them
      d.version(1); // unregisters them
      d.commit(b); // re-registers block 0 of both; a's chain is stale
      d.append(a, [1, 1]);
      d.commit(a); // must not register a's third block under the stale chain
      const c = d.create();
      d.append(c, [0, 1, 1, 0, 1, 1]);
      d.check();
      d.free(a);
      d.free(b);
      const e = d.create();
      d.append(e, [0, 1, 1, 0, 1, 1]);
      d.check();
    });
  });
});

// ---- properties ------------------------------------------------------------------------------------

/** Runs per property; SWERL_KV_PROPERTY_RUNS raises it for a longer search. */
const NUM_RUNS = Number(process.env.SWERL_KV_PROPERTY_RUNS ?? 300);

describe('PagedKvCache against the reference model', () => {
  afterAll(() => {
    // The generators must reach the interesting cases, or the properties prove little (checked
    // only when every property ran, not under a -t filter).
    if (coverage.runs < 3 * NUM_RUNS) return;
    expect(coverage.hits).toBeGreaterThan(50);
    expect(coverage.full).toBeGreaterThan(50);
    expect(coverage.evictions).toBeGreaterThan(50);
    expect(coverage.forks).toBeGreaterThan(50);
    expect(coverage.batches).toBeGreaterThan(50);
    expect(coverage.errors.get('UNKNOWN_SEQUENCE') ?? 0).toBeGreaterThan(20);
    expect(coverage.errors.get('INVALID_ARGUMENT') ?? 0).toBeGreaterThan(20);
  });

  /** Runs NUM_RUNS random scenarios of up to 60 commands on the cache and the model. */
  function checkScenarios(config: fc.Arbitrary<KvModelOptions>, commands: CommandOptions, prefixKv: boolean) {
    const commandList = fc.array(commandArb(commands), { minLength: 1, maxLength: 60, size: 'max' });
    fc.assert(
      fc.property(config, commandList, (cfg, cmds) => {
        runScenario(cfg, cmds, prefixKv);
      }),
      { numRuns: NUM_RUNS },
    );
  }

  it('matches the model on random command sequences (random KV writes)', () => {
    checkScenarios(configArb, { randomWrites: true, maxToken: 3, versionWeight: 1 }, false);
  });

  it('hits, forks and evictions never return wrong KV (KV is a function of the token prefix)', () => {
    checkScenarios(configArb, { randomWrites: false, maxToken: 3, versionWeight: 1 }, true);
  });

  it('never hits through a stale parent (re-registered blocks, old children, version changes)', () => {
    checkScenarios(staleConfigArb, { randomWrites: false, maxToken: 1, versionWeight: 3 }, true);
  });
});
