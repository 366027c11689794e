/**
 * An engine whose sessions answer with scripted responses instead of sampling, for rollout tests
 * that need a policy to run given commands (a random model cannot be steered to). Every token,
 * the scripted responses included, still goes through the real session, so its KV and the
 * rollout records are what a sampled response would give.
 */
import type { Engine } from '../../src/index.js';

type Session = ReturnType<Engine['openSession']>;
type Request = Parameters<Session['generate']>[0] & { append: ArrayLike<number> };

/**
 * Sessions of `engine` whose n-th generating turn (counted per session; a fork starts at 0)
 * returns `respond(n)` as its tokens, with logprob 0. `seen`, when given, receives every token the
 * sessions are given or answer, in order.
 */
export function scriptedSessions(
  engine: Engine,
  respond: (turn: number) => number[],
  seen?: number[],
): { openSession(): Session } {
  const scripted = (s: Session): Session => {
    let turn = 0;
    return new Proxy(s, {
      get(target, key) {
        if (key === 'fork') return () => scripted(target.fork());
        if (key === 'generate')
          return async (r: Request) => {
            seen?.push(...Array.from(r.append));
            if (r.maxTokens === 0) return target.generate(r);
            const out = respond(turn++);
            await target.generate({ append: Int32Array.from([...Array.from(r.append), ...out]), maxTokens: 0 });
            seen?.push(...out);
            return {
              tokens: Int32Array.from(out),
              logprobs: new Float32Array(out.length),
              finishReason: 'stop',
              cachedTokens: 0,
            };
          };
        const v = Reflect.get(target, key);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  };
  return { openSession: () => scripted(engine.openSession()) };
}
