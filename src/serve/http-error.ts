/**
 * The server's HTTP errors, answered with OpenAI's error body `{ error: { message, type, param,
 * code } }` (the shape the `openai` client parses into its APIError classes).
 */
import type { ServerResponse } from 'node:http';
import { SwerlError } from '../errors.js';

/** OpenAI's error body. */
export interface OpenAiErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** An error answered with `status` and OpenAI's error body. */
export class HttpError extends Error {
  constructor(
    message: string,
    readonly status: number = 400,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type: string = status >= 500 ? 'server_error' : 'invalid_request_error',
    /** Extra response headers (Retry-After on a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A 400 about one request parameter. */
export function badParam(param: string | null, message: string, code: string | null = null): HttpError {
  return new HttpError(message, 400, param, code);
}

/** The status, headers and body answering `e` (an HttpError, a SwerlError or anything else). */
export function errorResponse(e: unknown): { status: number; headers: Record<string, string>; body: OpenAiErrorBody } {
  if (e instanceof HttpError)
    return {
      status: e.status,
      headers: e.headers,
      body: { message: e.message, type: e.type, param: e.param, code: e.code },
    };
  if (e instanceof SwerlError) {
    // The engine's refusals of a request are the client's fault; anything else is the server's.
    const client = e.code === 'PROMPT_TOO_LONG' || e.code === 'INVALID_ARGUMENT';
    return {
      status: client ? 400 : 500,
      headers: {},
      body: {
        message: e.message,
        type: client ? 'invalid_request_error' : 'server_error',
        param: null,
        code: e.code === 'PROMPT_TOO_LONG' ? 'context_length_exceeded' : e.code.toLowerCase(),
      },
    };
  }
  return {
    status: 500,
    headers: {},
    body: { message: e instanceof Error ? e.message : 'internal error', type: 'server_error', param: null, code: null },
  };
}

/** Writes a JSON response (nothing when the headers already went out). */
export function sendJson(
  res: ServerResponse,
  status: number,
  data: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  const text = JSON.stringify(data);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

/**
 * Answers `e`: as a JSON error response, or, once a stream has started, as a last `data:` event
 * carrying the error body (what vLLM does), then the end of the stream.
 */
export function sendError(res: ServerResponse, e: unknown): number {
  const { status, headers, body } = errorResponse(e);
  if (res.headersSent) {
    if (!res.writableEnded) {
      res.write(`data: ${JSON.stringify({ error: body })}\n\n`);
      res.end();
    }
    return res.statusCode;
  }
  sendJson(res, status, { error: body }, headers);
  return status;
}
