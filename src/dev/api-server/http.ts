/**
 * The small HTTP vocabulary of the server: reading a request body the way the real server
 * decodes it (JSON, YAML or protobuf, by Content-Type), answering JSON, answering a Status for errors,
 * and reading the content negotiation that kubectl uses to ask for Tables.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { decodeProtobuf, isProtobuf } from './protobuf.js';
import { ApiError, badRequest, type StatusObject } from './status.js';

/** The real server's default request body limit (3 MiB). */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** mediaType is the Content-Type without parameters, lower-cased. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/** readBody reads and decodes a request body; an empty body is undefined. */
export async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'RequestEntityTooLarge', 'the request body is too large');
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  const type = mediaType(req.headers['content-type']);
  if (raw.length > 0 && isProtobuf(type)) return decodeProtobuf(raw);
  if (type.includes('cbor')) {
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      'the body of the request was in an unknown format - accepted media types include: application/json, ' +
        'application/yaml, application/vnd.kubernetes.protobuf',
    );
  }
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    if (type === 'application/yaml' || type === 'application/apply-patch+yaml') return parseYaml(text) as unknown;
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(error as Error).message}`);
  }
}

/** sendJson answers with a JSON body, the given HTTP status and any extra headers. */
export function sendJson(
  res: ServerResponse,
  code: number,
  body: unknown,
  headers: Record<string, string | string[]> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-cache, private',
  });
  res.end(text);
}

/** sendError answers with the Status of an ApiError, or a 500 Status for anything unexpected. */
export function sendError(res: ServerResponse, error: unknown): void {
  const status: StatusObject =
    error instanceof ApiError
      ? error.toStatus()
      : {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `Internal error occurred: ${String((error as Error)?.message ?? error)}`,
          reason: 'InternalError',
          code: 500,
        };
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, status.code, status);
}

/** wantsTable says whether the Accept header asks for a meta/v1 Table (kubectl's human output). */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => /;\s*as=Table/.test(part) && /;\s*g=meta\.k8s\.io/.test(part));
}

/** acceptsJson says whether JSON is acceptable at all (it is not when only protobuf is asked for). */
export function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').some((part) => {
    const type = mediaType(part);
    return type === 'application/json' || type === '*/*' || type === 'application/*';
  });
}

/** flag reads a boolean query parameter as the real server does (`true` or `1`). */
export function flag(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  return value === 'true' || value === '1';
}
