/**
 * ModSecurity's audit log, read where nginx writes it: its stderr, the controller's (src/nginx/master.ts). The shared
 * rule set (src/model/waf.ts) asks for one JSON line a transaction (`SecAuditLogFormat JSON`, parts A, H and Z: the
 * request line, the client and the matched rules, never a body), and the transaction id starts with the Ingress's
 * `namespace/name/` (templates/partials/location.hbs). Each such line becomes one log record of the controller's, with
 * the Ingress, the transaction id and the rule ids as fields of their own, each bounded.
 */

/** AUDIT_PREFIX starts every audit line ModSecurity writes in JSON. */
export const AUDIT_PREFIX = '{"transaction":';

/** MAX_AUDIT_LINE bounds the line read as a record; a longer one is logged as nginx's other lines are. */
export const MAX_AUDIT_LINE = 256 * 1024;
const MAX_RULES = 32;
const MAX_TEXT = 256;

/** WafRecord is one audited transaction, as the controller logs it. */
export interface WafRecord {
  /** `namespace/name` of the Ingress, or null when the id does not name one */
  readonly ingress: string | null;
  /** modsecurity-transaction-id as nginx expanded it (`$request_id` by default) */
  readonly transactionId: string;
  /** the ids of the rules that matched, in order, each once (at most 32) */
  readonly rules: readonly string[];
  /** the answer's status: 403 when the WAF blocked with the CRS's default */
  readonly status: number | null;
  /** ModSecurity's mode for the transaction: Enabled (blocking), DetectionOnly or Disabled */
  readonly engine: string | null;
  /** the WAF answered (the engine blocks and the status is an error) */
  readonly blocked: boolean;
  readonly method: string | null;
  readonly uri: string | null;
  readonly client: string | null;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v.slice(0, MAX_TEXT) : null);
const record = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** INGRESS_PREFIX is `namespace/name/` at the start of a transaction id: a DNS label, then a DNS subdomain. */
const INGRESS_PREFIX = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)\//;

/** wafAuditRecord reads one audit line, or gives null when the line is not one (or too long to be read as one). */
export function wafAuditRecord(line: string): WafRecord | null {
  if (!line.startsWith(AUDIT_PREFIX) || line.length > MAX_AUDIT_LINE) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return null;
  }
  const tx = record(record(parsed).transaction);
  const id = typeof tx.unique_id === 'string' ? tx.unique_id : '';
  const named = INGRESS_PREFIX.exec(id);
  const request = record(tx.request);
  const response = record(tx.response);
  const producer = record(tx.producer);
  const rules: string[] = [];
  for (const message of Array.isArray(tx.messages) ? tx.messages : []) {
    const ruleId = text(record(record(message).details).ruleId);
    if (ruleId !== null && /^\d{1,10}$/.test(ruleId) && !rules.includes(ruleId)) rules.push(ruleId);
    if (rules.length >= MAX_RULES) break;
  }
  const status = typeof response.http_code === 'number' ? response.http_code : null;
  const engine = text(producer.secrules_engine);
  return {
    ingress: named ? `${named[1]}/${named[3]}` : null,
    transactionId: (named ? id.slice(named[0].length) : id).slice(0, MAX_TEXT),
    rules,
    status,
    engine,
    blocked: engine === 'Enabled' && status !== null && status >= 400,
    method: text(request.method),
    uri: text(request.uri),
    client: text(tx.client_ip),
  };
}
