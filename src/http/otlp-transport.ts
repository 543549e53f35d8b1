/**
 * One OTLP/HTTP export (protobuf POST to the collector's /v1/traces), retried as OpenTelemetry's exporters retry:
 * on 429, 502, 503, 504 and network errors, after Retry-After or a backoff from 1 s growing 1.5× (±20 %, at most
 * 5 s), at most 5 retries, all within one deadline. The answer's body is not needed and not kept.
 */
import { Agent, request } from 'node:http';

/** SendResult is how an export ended: accepted, or why not. */
export type SendResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

type Attempt = SendResult | { readonly ok: false; readonly error: string; readonly retryInMs: number | null };

const RETRIES = 5;
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 5_000;
const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
const RETRYABLE_NETWORK = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/** an HTTP date as RFC 9110 has senders write it (IMF-fixdate) */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** retryAfterMs reads a Retry-After header (seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | null {
  const value = header?.trim();
  if (value === undefined) return null;
  if (/^\d{1,6}$/.test(value)) return Number(value) * 1000;
  if (!IMF_FIXDATE.test(value)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** OtlpTransport posts export requests to one collector URL over kept-alive connections. */
export class OtlpTransport {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 2 });
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly userAgent: string,
  ) {}

  /**
   * send posts `body` (its parts one after the other) until it is accepted, refused for good, retries run out or the
   * deadline passes.
   */
  async send(body: readonly Buffer[]): Promise<SendResult> {
    const deadline = Date.now() + this.timeoutMs;
    let backoff = FIRST_BACKOFF_MS;
    let result = await this.attempt(body, this.timeoutMs);
    for (let retry = 0; retry < RETRIES && 'retryInMs' in result && !this.closed; retry++) {
      const jittered = Math.min(backoff * (0.8 + Math.random() * 0.4), MAX_BACKOFF_MS);
      backoff *= 1.5;
      const wait = result.retryInMs ?? jittered;
      if (wait > deadline - Date.now()) break;
      await new Promise((resolve) => setTimeout(resolve, wait).unref());
      result = await this.attempt(body, Math.max(1, deadline - Date.now()));
    }
    return result.ok ? result : { ok: false, error: result.error };
  }

  private attempt(body: readonly Buffer[], timeoutMs: number): Promise<Attempt> {
    let length = 0;
    for (const part of body) length += part.length;
    return new Promise<Attempt>((resolve) => {
      const req = request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/x-protobuf',
            'content-length': length,
            'user-agent': this.userAgent,
          },
        },
        (res) => {
          const status = res.statusCode ?? 0;
          res.resume(); // the answer's body (a partial success at most) is not read
          res.on('error', () => {});
          res.on('end', () => {
            if (status >= 200 && status <= 299) resolve({ ok: true });
            else if (RETRYABLE_STATUS.has(status))
              resolve({ ok: false, error: `HTTP ${status}`, retryInMs: retryAfterMs(res.headers['retry-after']) });
            else resolve({ ok: false, error: `HTTP ${status}` });
          });
        },
      );
      req.setTimeout(timeoutMs, () => {
        req.destroy();
        resolve({ ok: false, error: 'timed out', retryInMs: null });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        const code = error.code ?? '';
        if (RETRYABLE_NETWORK.has(code)) resolve({ ok: false, error: code, retryInMs: null });
        else resolve({ ok: false, error: error.message });
      });
      for (const part of body) req.write(part);
      req.end();
    });
  }

  /** close ends the kept-alive connections; a send under way ends with its attempt. */
  close(): void {
    this.closed = true;
    this.agent.destroy();
  }
}
