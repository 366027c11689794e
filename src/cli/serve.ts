/**
 * `swerl serve --model DIR [--port N]`: an OpenAI-compatible server over a Hugging Face model
 * directory (config.json, safetensors, tokenizer.json, tokenizer_config.json with its chat
 * template). docs/serve.md is the reference of its options and of what it accepts.
 */
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from '../engine/engine.js';
import { SwerlError } from '../errors.js';
import { Model } from '../model/model.js';
import { startOpenAiServer } from '../serve/openai-server.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';

const USAGE = `usage: swerl serve --model DIR [--port 8000] [--host 127.0.0.1] [--name NAME]
                   [--kv-blocks N] [--block-size 16] [--max-batch-tokens 2048]
                   [--max-model-len N] [--max-queued-requests 256] [--max-queued-tokens 1048576]
                   [--api-key KEY] [--quiet]

Serves /v1/models, /v1/completions and /v1/chat/completions for the model in DIR.
  --max-model-len N        longest prompt + completion (default: the smaller of the model's
                           max_position_embeddings and the KV cache); longer requests get a 400
  --max-queued-requests N  requests admitted at once; one more gets a 429
  --max-queued-tokens N    tokens admitted at once (n x (prompt + max_tokens) per request); 429 beyond
  --api-key KEY            require "Authorization: Bearer KEY" (default: $SWERL_API_KEY; none: open)
  --quiet                  no per-request log line on stderr
See docs/serve.md.`;

/** Runs the server until SIGINT/SIGTERM; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        model: { type: 'string' },
        port: { type: 'string', default: '8000' },
        host: { type: 'string', default: '127.0.0.1' },
        name: { type: 'string' },
        'kv-blocks': { type: 'string' },
        'block-size': { type: 'string', default: '16' },
        'max-batch-tokens': { type: 'string', default: '2048' },
        'max-model-len': { type: 'string' },
        'max-queued-requests': { type: 'string', default: '256' },
        'max-queued-tokens': { type: 'string', default: String(2 ** 20) },
        'api-key': { type: 'string' },
        quiet: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (typeof values.model !== 'string') {
    process.stderr.write(`--model DIR is required\n${USAGE}\n`);
    return 2;
  }
  const dir = resolve(values.model);
  const int = (name: string) => {
    const v = values[name];
    const n = typeof v === 'string' ? Number(v) : Number.NaN;
    if (!Number.isInteger(n) || n < 0)
      throw new SwerlError(`--${name} must be a non-negative integer, got ${String(v)}`, 'INVALID_ARGUMENT');
    return n;
  };
  try {
    process.stderr.write(`swerl serve: loading ${dir}\n`);
    const [model, tokenizer] = await Promise.all([Model.load(dir), Tokenizer.load(dir)]);
    const engine = new Engine({
      model,
      blockSize: int('block-size'),
      maxBatchTokens: int('max-batch-tokens'),
      ...(values['kv-blocks'] !== undefined ? { kvBlocks: int('kv-blocks') } : {}),
    });
    const apiKey = typeof values['api-key'] === 'string' ? values['api-key'] : process.env.SWERL_API_KEY || undefined;
    const host = values.host as string;
    if (!apiKey && !['127.0.0.1', 'localhost', '::1'].includes(host))
      process.stderr.write(
        `swerl serve: warning: listening on ${host} without --api-key: anyone who can reach it may use it\n`,
      );
    const server = await startOpenAiServer({
      engine,
      tokenizer,
      modelName: typeof values.name === 'string' ? values.name : basename(dir),
      port: int('port'),
      host,
      maxQueuedRequests: int('max-queued-requests'),
      maxQueuedTokens: int('max-queued-tokens'),
      ...(values['max-model-len'] !== undefined ? { maxModelLen: int('max-model-len') } : {}),
      ...(apiKey ? { apiKey } : {}),
      ...(values.quiet ? {} : { log: (line: string) => process.stderr.write(`${line}\n`) }),
    });
    process.stdout.write(
      `swerl serve: ${server.url} (model ${typeof values.name === 'string' ? values.name : basename(dir)})\n`,
    );
    await new Promise<void>((done) => {
      const stop = () => done();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await server.close();
    return 0;
  } catch (e) {
    const code = e instanceof SwerlError ? ` [${e.code}]` : '';
    process.stderr.write(`swerl serve: ${(e as Error).message}${code}\n`);
    return 1;
  }
}
