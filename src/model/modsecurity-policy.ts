/**
 * The modsecurity-snippet allow-list. A snippet is read as ModSecurity reads its configuration (one directive a line,
 * a trailing `\` joins lines, words and double-quoted strings, `#` comments), after nginx's single-quote unescaping
 * (`\"`, `\'`, `\\`), which ingress-nginx's `modsecurity_rules '…'` applied to the same text. Each directive must be
 * on the list, with its arguments checked, and what passes is printed again from what was checked, one directive per
 * `modsecurity_rules` line (src/render/quote.ts quotes it for nginx). Nothing on the list names a file or a program
 * (no Include, no SecAuditLog, no `exec`, no `@pmFromFile`), touches a collection other requests share (no `initcol`,
 * only `tx.` variables) or reaches beyond the location's own rule set: a tenant's SecRuleEngine or SecRuleRemoveById
 * changes its own locations only (each location's rules are a rule set of its own, merged with the shared ones).
 */
import type { ModSecurityDirective } from './nginx-model.js';
import { checkRegex } from './snippet-policy.js';
import { checkCidr, type Checked } from './validate.js';

/**
 * MAX_SNIPPET bounds a snippet's length and MAX_DIRECTIVES its directives: each check below is linear in its input.
 */
const MAX_SNIPPET = 16_384;
const MAX_DIRECTIVES = 64;
const MAX_ARGUMENT = 1024;

/** TENANT_RULE_IDS are the rule ids an annotation's rules may take: ModSecurity's range for local rules. */
export const TENANT_RULE_IDS = { min: 1, max: 99_999 } as const;
/**
 * CONFIG_RULE_IDS are the ids the ConfigMap's rules may take: apart from tenants', from the controller's own
 * (200000-299999, src/model/waf.ts) and from the CRS's (900000+). Two rules with one id would fail nginx's load.
 */
export const CONFIG_RULE_IDS = { min: 300_000, max: 899_999 } as const;

/** ModSecurityScope is whose snippet it is: an Ingress's (its locations' rule set) or the ConfigMap's (http level). */
export type ModSecurityScope = 'ingress' | 'config';

/** own is `record[key]` when the record itself has it (never a prototype's `toString`), else undefined. */
const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;
const show = (v: string) => JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v);
const onOff = (v: string) => (v === 'On' || v === 'Off' ? null : `${show(v)} is not On or Off`);
const oneOf =
  (...words: string[]) =>
  (v: string) =>
    words.includes(v) ? null : `${show(v)} is not ${words.join(' or ')}`;
/** bytes accepts a count of bytes up to 1 GiB (ModSecurity's limits are plain numbers). */
const bytes = (v: string) =>
  /^\d{1,10}$/.test(v) && Number(v) <= 2 ** 30 ? null : `${show(v)} is not a byte count up to 1073741824`;
const mimeTypes = (v: string) =>
  /^[a-z0-9.+-]+\/[a-z0-9.+-]+( [a-z0-9.+-]+\/[a-z0-9.+-]+)*$/.test(v)
    ? null
    : `${show(v)} is not a list of MIME types`;
/** ruleIdList accepts rule ids and ranges `a-b`, as SecRuleRemoveById takes them. */
const ruleIdOrRange = (v: string) => (/^\d{1,9}(-\d{1,9})?$/.test(v) ? null : `${show(v)} is not a rule id or range`);
/**
 * macros accepts the `%{…}` expansions ModSecurity resolves at load: a `tx.` variable or the matched variable's name
 * or value (an unknown one would fail nginx's load, every tenant's reload with it).
 */
const macros = (v: string) =>
  [...v.matchAll(/%\{([^}]*)\}?/g)].every((m) =>
    /^%\{(?:tx\.[A-Za-z0-9_]{1,64}|MATCHED_VAR|MATCHED_VAR_NAME)\}$/i.test(m[0]),
  )
    ? null
    : `${show(v)} expands something other than %{tx.name}, %{MATCHED_VAR} or %{MATCHED_VAR_NAME}`;
/** text accepts what a tag or message may say: printable ASCII without quotes or a backslash, known expansions. */
const text = (v: string) =>
  /^[\x20-\x7e]{1,256}$/.test(v) && !/["'\\]/.test(v)
    ? macros(v)
    : `${show(v)} is not 1-256 printable characters without quotes or \\`;

/** VARIABLES are the ModSecurity variables a tenant's SecRule may read: the request, the answer and its own `tx`. */
export const VARIABLES: readonly string[] = [
  'ARGS',
  'ARGS_GET',
  'ARGS_POST',
  'ARGS_NAMES',
  'ARGS_GET_NAMES',
  'ARGS_POST_NAMES',
  'ARGS_COMBINED_SIZE',
  'FILES',
  'FILES_NAMES',
  'FILES_SIZES',
  'QUERY_STRING',
  'REMOTE_ADDR',
  'REQUEST_BASENAME',
  'REQUEST_BODY',
  'REQUEST_BODY_LENGTH',
  'REQUEST_COOKIES',
  'REQUEST_COOKIES_NAMES',
  'REQUEST_FILENAME',
  'REQUEST_HEADERS',
  'REQUEST_HEADERS_NAMES',
  'REQUEST_LINE',
  'REQUEST_METHOD',
  'REQUEST_PROTOCOL',
  'REQUEST_URI',
  'REQUEST_URI_RAW',
  'RESPONSE_BODY',
  'RESPONSE_HEADERS',
  'RESPONSE_STATUS',
  'MATCHED_VAR',
  'MATCHED_VARS',
  'MATCHED_VAR_NAME',
  'MATCHED_VARS_NAMES',
  'TX',
  'XML',
];

/**
 * OPERATORS are the operators a SecRule may use: they look at the value alone. Those that read a file (`@pmFromFile`,
 * `@ipMatchFromFile`, `@inspectFile`), ask the network (`@rbl`, `@geoLookup`) or run a script are not here.
 */
export const OPERATORS: readonly string[] = [
  'rx',
  'streq',
  'contains',
  'containsWord',
  'beginsWith',
  'endsWith',
  'within',
  'pm',
  'strmatch',
  'eq',
  'ne',
  'gt',
  'ge',
  'lt',
  'le',
  'ipMatch',
  'detectSQLi',
  'detectXSS',
  'validateByteRange',
  'validateUrlEncoding',
  'validateUtf8Encoding',
  'unconditionalMatch',
  'noMatch',
];

/** TRANSFORMATIONS are the `t:` functions a rule may apply (all pure). */
const TRANSFORMATIONS: readonly string[] = [
  'none',
  'lowercase',
  'uppercase',
  'urlDecode',
  'urlDecodeUni',
  'htmlEntityDecode',
  'jsDecode',
  'cssDecode',
  'base64Decode',
  'hexDecode',
  'compressWhitespace',
  'removeWhitespace',
  'removeNulls',
  'replaceNulls',
  'removeComments',
  'replaceComments',
  'normalisePath',
  'normalizePath',
  'normalisePathWin',
  'normalizePathWin',
  'cmdLine',
  'length',
  'trim',
  'trimLeft',
  'trimRight',
  'utf8toUnicode',
  'escapeSeqDecode',
  'sqlHexDecode',
];

/**
 * ACTIONS are a rule's actions the list allows, each with its value's check (null: the action takes none). What runs
 * programs (`exec`), sets the environment or a shared collection (`setenv`, `initcol`, `setsid`, `setuid`), sends the
 * request elsewhere (`proxy`, `redirect`) or changes the shared audit log (`ctl:auditLogParts`) is not here.
 */
const ACTIONS: Readonly<Record<string, ((v: string) => string | null) | null>> = {
  id: (v) => (/^\d{1,9}$/.test(v) ? null : `${show(v)} is not a rule id`),
  phase: oneOf('1', '2', '3', '4', '5', 'request', 'response', 'logging'),
  deny: null,
  block: null,
  pass: null,
  drop: null,
  allow: null,
  status: (v) => (/^[1-5]\d\d$/.test(v) ? null : `${show(v)} is not an HTTP status`),
  log: null,
  nolog: null,
  auditlog: null,
  noauditlog: null,
  capture: null,
  multiMatch: null,
  chain: null,
  msg: text,
  logdata: text,
  tag: text,
  rev: text,
  ver: text,
  severity: (v) =>
    /^[0-7]$/.test(v) || ['EMERGENCY', 'ALERT', 'CRITICAL', 'ERROR', 'WARNING', 'NOTICE', 'INFO', 'DEBUG'].includes(v)
      ? null
      : `${show(v)} is not a severity`,
  maturity: (v) => (/^\d$/.test(v) ? null : `${show(v)} is not 0-9`),
  accuracy: (v) => (/^\d$/.test(v) ? null : `${show(v)} is not 0-9`),
  skip: (v) => (/^\d{1,3}$/.test(v) ? null : `${show(v)} is not a count of rules`),
  t: (v) => (TRANSFORMATIONS.includes(v) ? null : `${show(v)} is not a transformation on the list`),
  setvar: (v) =>
    /^!?tx\.[A-Za-z0-9_.-]{1,64}(=[+-]?[A-Za-z0-9_.%{}: -]{0,128})?$/i.test(v)
      ? macros(v)
      : `${show(v)}: setvar may set only tx. variables, to a word or number`,
  ctl: (v) => {
    const m = /^([A-Za-z]+)=(.*)$/.exec(v);
    if (!m) return `${show(v)} is not ctl:name=value`;
    const [, name, value] = m as unknown as [string, string, string];
    switch (name) {
      case 'ruleEngine':
        return oneOf('On', 'Off', 'DetectionOnly')(value);
      case 'requestBodyAccess':
        return oneOf('On', 'Off', 'on', 'off', 'true', 'false')(value);
      case 'requestBodyProcessor':
        return oneOf('URLENCODED', 'MULTIPART', 'XML', 'JSON')(value);
      case 'ruleRemoveById':
        return ruleIdOrRange(value);
      case 'ruleRemoveByTag':
        return /^[A-Za-z0-9_./-]{1,128}$/.test(value) ? null : `${show(value)} is not a tag`;
      case 'ruleRemoveTargetById':
      case 'ruleRemoveTargetByTag': {
        const [what, target, ...rest] = value.split(';');
        if (rest.length > 0 || target === undefined) return `${show(value)} is not <id or tag>;<variable>`;
        return (name === 'ruleRemoveTargetById' ? ruleIdOrRange(what!) : text(what!)) ?? checkTarget(target, false);
      }
      default:
        return `ctl:${name} is not on the list (ruleEngine, requestBodyAccess, requestBodyProcessor, ruleRemoveById, ruleRemoveByTag, ruleRemoveTargetById, ruleRemoveTargetByTag)`;
    }
  },
};

/** checkTarget accepts one variable of a rule's list: `[!&]NAME[:key or /regex/]`, its name on VARIABLES. */
function checkTarget(target: string, allowCount: boolean): string | null {
  const m = /^([!&]?)([A-Z_]+)(?::(.+))?$/.exec(target);
  if (!m) return `${show(target)} is not a variable`;
  const [, prefix, name, key] = m as unknown as [string, string, string, string | undefined];
  if (prefix === '&' && !allowCount) return `${show(target)}: & counts, not a target`;
  if (!VARIABLES.includes(name)) return `${name} is not a variable on the list (docs/annotations.md)`;
  if (key !== undefined && !/^(?:[A-Za-z0-9_.-]{1,128}|\/[^/"]{1,256}\/)$/.test(key))
    return `${show(key)} is not a key (letters, digits, _ . -) or /regex/`;
  return key?.startsWith('/') ? checkRegex(key.slice(1, -1)) : null;
}

/** checkVariables accepts a SecRule's `A|B|!C:key` list. */
function checkVariables(list: string): string | null {
  const parts = list.split('|');
  if (parts.length > 32) return 'more than 32 variables';
  for (const part of parts) {
    const bad = checkTarget(part, true);
    if (bad) return bad;
  }
  return null;
}

/** NO_ARGUMENT are the operators that take none; OPERAND checks the argument of those that need a particular one. */
const NO_ARGUMENT = [
  'detectSQLi',
  'detectXSS',
  'unconditionalMatch',
  'noMatch',
  'validateUrlEncoding',
  'validateUtf8Encoding',
];
const number = (v: string) => (/^-?\d{1,9}$/.test(v) ? null : `${show(v)} is not a number`);
const OPERAND: Readonly<Record<string, (v: string) => string | null>> = {
  rx: checkRegex,
  ipMatch: (v) =>
    v.split(',').every((a) => checkCidr(a.trim()).ok) ? null : `${show(v)} is not a list of addresses or CIDRs`,
  validateByteRange: (v) =>
    /^\d{1,3}(-\d{1,3})?(,\d{1,3}(-\d{1,3})?)*$/.test(v) && v.split(/[,-]/).every((n) => Number(n) <= 255)
      ? null
      : `${show(v)} is not a list of bytes and ranges (0-255)`,
  eq: number,
  ne: number,
  gt: number,
  ge: number,
  lt: number,
  le: number,
};

/**
 * checkOperator accepts `[!]@name arg` with a name on OPERATORS, or a bare regex (`@rx`'s); a regex must be of the
 * subset PCRE and JavaScript read alike (ModSecurity compiles it at load: a bad one would fail every reload).
 */
function checkOperator(op: string): string | null {
  const m = /^!?@([A-Za-z0-9]+)(?: (.*))?$/s.exec(op);
  if (!m) {
    if (op.startsWith('@') || op.startsWith('!@')) return `${show(op)} is not an operator`;
    const regex = op.startsWith('!') ? op.slice(1) : op;
    return macros(regex) ?? checkRegex(regex);
  }
  const [, name, arg] = m as unknown as [string, string, string | undefined];
  if (!OPERATORS.includes(name)) return `@${name} is not an operator on the list (docs/annotations.md)`;
  if (NO_ARGUMENT.includes(name)) return arg === undefined ? null : `@${name} takes no argument`;
  if (arg === undefined || arg.trim() === '') return `@${name} needs an argument`;
  return macros(arg) ?? own(OPERAND, name)?.(arg) ?? null;
}

/**
 * splitActions splits `a,b:'x, y',c` at the commas outside single quotes, each as [name, value or null]; null when
 * a quote is left open.
 */
function splitActions(list: string): [string, string | null][] | null {
  const out: [string, string | null][] = [];
  let i = 0;
  while (i < list.length) {
    let end = i;
    let quoted = false;
    while (end < list.length && (quoted || list[end] !== ',')) {
      if (list[end] === "'") quoted = !quoted;
      end++;
    }
    if (quoted) return null;
    const action = list.slice(i, end).trim();
    const colon = action.indexOf(':');
    if (colon < 0) out.push([action, null]);
    else {
      let value = action.slice(colon + 1).trim();
      if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) value = value.slice(1, -1);
      out.push([action.slice(0, colon).trim(), value]);
    }
    i = end + 1;
  }
  return out;
}

/** checkActions accepts a rule's actions; `ids` collects its id, which must be in the scope's range. */
function checkActions(list: string, scope: ModSecurityScope, ids: Set<number>, chained: boolean): string | null {
  const actions = splitActions(list);
  if (actions === null) return `${show(list)} leaves a quote open`;
  let id: number | null = null;
  for (const [name, value] of actions) {
    if (!Object.hasOwn(ACTIONS, name)) return `the action ${show(name)} is not on the list (docs/annotations.md)`;
    const check = ACTIONS[name];
    if (check === null && value !== null) return `the action ${name} takes no value`;
    if (check !== null && check !== undefined) {
      if (value === null) return `the action ${name} needs a value`;
      const bad = check(value);
      if (bad) return `${name}: ${bad}`;
    }
    if (name === 'id') id = Number(value);
  }
  if (chained) return id === null ? null : 'a chained rule has no id of its own';
  if (id === null) return 'every rule needs an id';
  const range = scope === 'ingress' ? TENANT_RULE_IDS : CONFIG_RULE_IDS;
  if (id < range.min || id > range.max)
    return `rule id ${id} is outside ${range.min}-${range.max} (the ${scope === 'ingress' ? "Ingresses'" : "ConfigMap's"} range)`;
  if (ids.has(id)) return `rule id ${id} is used twice`;
  ids.add(id);
  return null;
}

type ArgsCheck = (args: readonly string[], scope: ModSecurityScope, state: ParseState) => string | null;
interface ParseState {
  readonly ids: Set<number>;
  /** the last rule asked for `chain`: the next directive must be its SecRule */
  chain: boolean;
}
const exactly =
  (n: number, check: (v: string) => string | null): ArgsCheck =>
  (args) =>
    args.length !== n ? `takes ${n} argument${n === 1 ? '' : 's'}` : (args.map(check).find((m) => m !== null) ?? null);
const each =
  (check: (v: string) => string | null): ArgsCheck =>
  (args) =>
    args.length === 0 || args.length > 64
      ? 'takes 1 to 64 arguments'
      : (args.map(check).find((m) => m !== null) ?? null);

/** MODSECURITY_DIRECTIVES are the directives a modsecurity-snippet may hold, with their arguments' checks. */
export const MODSECURITY_DIRECTIVES: Readonly<Record<string, { readonly doc: string; readonly check: ArgsCheck }>> = {
  SecRuleEngine: {
    doc: 'On, DetectionOnly or Off: blocking, logging only, or nothing',
    check: exactly(1, oneOf('On', 'DetectionOnly', 'Off')),
  },
  SecRequestBodyAccess: { doc: 'On or Off', check: exactly(1, onOff) },
  SecRequestBodyLimit: { doc: 'bytes (up to 1 GiB)', check: exactly(1, bytes) },
  SecRequestBodyNoFilesLimit: { doc: 'bytes (up to 1 GiB)', check: exactly(1, bytes) },
  SecRequestBodyLimitAction: { doc: 'Reject or ProcessPartial', check: exactly(1, oneOf('Reject', 'ProcessPartial')) },
  SecResponseBodyAccess: { doc: 'On or Off', check: exactly(1, onOff) },
  SecResponseBodyLimit: { doc: 'bytes (up to 1 GiB)', check: exactly(1, bytes) },
  SecResponseBodyMimeType: { doc: 'MIME types', check: exactly(1, mimeTypes) },
  SecAuditEngine: {
    doc: "On, RelevantOnly or Off (where the log goes is the controller's)",
    check: exactly(1, oneOf('On', 'RelevantOnly', 'Off')),
  },
  SecRuleRemoveById: { doc: 'rule ids and ranges', check: each(ruleIdOrRange) },
  SecRuleRemoveByTag: { doc: 'a tag', check: exactly(1, text) },
  SecRuleRemoveByMsg: { doc: 'a message', check: exactly(1, text) },
  SecRuleUpdateTargetById: {
    doc: 'a rule id and variables (`!ARGS:password`)',
    check: (args) => (args.length !== 2 ? 'takes 2 arguments' : (ruleIdOrRange(args[0]!) ?? checkVariables(args[1]!))),
  },
  SecAction: {
    doc: 'actions on the list (the CRS paranoia level and anomaly thresholds: `setvar:tx.paranoia_level=2`)',
    check: (args, scope, state) =>
      args.length !== 1 ? 'takes 1 argument' : checkActions(args[0]!, scope, state.ids, false),
  },
  SecRule: {
    doc: 'variables, an operator and actions, each on the lists below',
    check: (args, scope, state) => {
      if (args.length < 2 || args.length > 3) return 'takes 2 or 3 arguments';
      const chained = state.chain;
      state.chain = args[2] !== undefined && /(^|,)\s*chain\s*(,|$)/.test(args[2]);
      return (
        checkVariables(args[0]!) ??
        checkOperator(args[1]!) ??
        (args[2] === undefined
          ? chained
            ? null
            : 'every rule needs an id'
          : checkActions(args[2], scope, state.ids, chained))
      );
    },
  },
};

/** REFUSED_MODSECURITY says why well-known directives are not on the list. */
export const REFUSED_MODSECURITY: Readonly<Record<string, string>> = {
  Include: 'it reads a file',
  SecAuditLog: "the audit log is the controller's: JSON on stderr",
  SecAuditLog2: "the audit log is the controller's: JSON on stderr",
  SecAuditLogParts: "the audit log is the controller's: JSON on stderr",
  SecAuditLogType: "the audit log is the controller's: JSON on stderr",
  SecAuditLogFormat: "the audit log is the controller's: JSON on stderr",
  SecAuditLogStorageDir: "the audit log is the controller's: JSON on stderr",
  SecAuditLogDirMode: "the audit log is the controller's: JSON on stderr",
  SecAuditLogFileMode: "the audit log is the controller's: JSON on stderr",
  SecAuditLogRelevantStatus: "the audit log is the controller's: JSON on stderr",
  SecDebugLog: 'it writes a file',
  SecDebugLogLevel: 'the debug log is off',
  SecDataDir: 'it names a folder',
  SecTmpDir: 'it names a folder',
  SecUploadDir: 'it names a folder',
  SecUploadKeepFiles: 'it writes files',
  SecUnicodeMapFile: 'it reads a file',
  SecGeoLookupDb: 'it reads a file',
  SecRemoteRules: 'it fetches rules from the network',
  SecRemoteRulesFailAction: 'it fetches rules from the network',
  SecDefaultAction: "it changes every rule's actions, the CRS's among them",
  SecMarker: 'skipAfter is not on the list',
  SecCollectionTimeout: 'collections are shared by every location',
  SecHttpBlKey: 'it asks the network',
  SecArgumentSeparator: 'it changes how every rule reads arguments',
  SecCookieFormat: 'it changes how every rule reads cookies',
  SecComponentSignature: "it changes the audit log's producer",
  SecServerSignature: "it changes the audit log's producer",
  SecStatusEngine: 'it reports to the network',
  SecConnEngine: 'not in ModSecurity 3',
  SecPcreMatchLimit: 'a machine-wide setting',
  SecPcreMatchLimitRecursion: 'a machine-wide setting',
};

export type { ModSecurityDirective };

/**
 * unescapeNginxSingleQuoted undoes what nginx does to the text of `modsecurity_rules '…'` (ingress-nginx's wrapping):
 * `\"`, `\'` and `\\` lose their backslash, `\t`, `\r`, `\n` become the character; other backslashes stay.
 */
function unescapeNginxSingleQuoted(raw: string): string {
  return raw.replace(/\\(["'\\tnr])/g, (_, c: string) => (c === 't' ? '\t' : c === 'n' ? '\n' : c === 'r' ? '\r' : c));
}

/** wordsOf splits one directive line into words and double-quoted strings (`\"` inside a string is a quote). */
function wordsOf(line: string): Checked<string[]> {
  const words: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (i < line.length && (line[i] === ' ' || line[i] === '\t')) i++;
    if (i >= line.length) break;
    if (line[i] === '"') {
      let word = '';
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && line[i + 1] === '"') {
          word += '"';
          i += 2;
        } else word += line[i++];
      }
      if (i >= line.length) return { ok: false, message: 'a quoted string is left open' };
      i++;
      words.push(word);
    } else {
      let end = i;
      while (end < line.length && line[end] !== ' ' && line[end] !== '\t') end++;
      words.push(line.slice(i, end));
      i = end;
    }
  }
  return { ok: true, value: words };
}

/**
 * checkModSecuritySnippet reads a modsecurity-snippet into checked directives, or says why not (the first refusal).
 */
export function checkModSecuritySnippet(
  raw: string,
  scope: ModSecurityScope,
): Checked<readonly ModSecurityDirective[]> {
  const fail = (message: string): Checked<never> => ({ ok: false, message });
  if (raw.length > MAX_SNIPPET) return fail(`the snippet is longer than ${MAX_SNIPPET} characters`);
  const text = unescapeNginxSingleQuoted(raw);
  if (!/^[\x20-\x7e\t\r\n]*$/.test(text)) return fail('the snippet holds a character other than printable ASCII');
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  const out: ModSecurityDirective[] = [];
  const state: ParseState = { ids: new Set(), chain: false };
  for (const line of lines) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (out.length >= MAX_DIRECTIVES) return fail(`more than ${MAX_DIRECTIVES} directives`);
    const words = wordsOf(trimmed);
    if (!words.ok) return words;
    const [name, ...args] = words.value as [string, ...string[]];
    const entry = own(MODSECURITY_DIRECTIVES, name);
    if (!entry) {
      const why = own(
        REFUSED_MODSECURITY,
        Object.keys(REFUSED_MODSECURITY).find((k) => k.toLowerCase() === name.toLowerCase()) ?? '',
      );
      return fail(`${show(name)} is not on the modsecurity-snippet allow-list${why ? ` (${why})` : ''}`);
    }
    for (const arg of args) {
      if (arg.length > MAX_ARGUMENT) return fail(`${name}: an argument is longer than ${MAX_ARGUMENT} characters`);
      if (/[\t\r\n"]/.test(arg) || arg.endsWith('\\'))
        return fail(`${name}: ${show(arg)} holds a quote, a tab or a line break, or ends with \\`);
    }
    if (state.chain && name !== 'SecRule') return fail('a rule with chain must be followed by its SecRule');
    const bad = entry.check(args, scope, state);
    if (bad) return fail(`${name}: ${bad}`);
    out.push({ name, args });
  }
  if (state.chain) return fail('the last rule asks for chain but no SecRule follows');
  return { ok: true, value: out };
}

/**
 * modSecurityLine prints a checked directive as ModSecurity reads it: a plain word as it is, anything else in double
 * quotes (no argument holds a quote, or ends with a backslash that would escape the closing one). One line, no line break: the template gives each its own `modsecurity_rules`, through the quoting helper.
 */
export function modSecurityLine(d: ModSecurityDirective): string {
  const line = [d.name, ...d.args.map((a) => (/^[A-Za-z0-9_.-]+$/.test(a) ? a : `"${a}"`))].join(' ');
  // ModSecurity 3.0.9's lexer, at the end of a SecRuleUpdateTargetById's targets, waits for more: the next SecRule it
  // loads, in any location, fails (nginx -t with it). A space after the targets ends them.
  return d.name === 'SecRuleUpdateTargetById' ? `${line} ` : line;
}

/**
 * modSecurityRules prints checked directives as the rule texts of `modsecurity_rules` lines: one directive a text,
 * but a rule with `chain` and the rules it chains share one, a line each (ModSecurity parses each `modsecurity_rules`
 * on its own, and a chain cut across two fails nginx's load). The template spells the line breaks as nginx's `\n`.
 */
export function modSecurityRules(directives: readonly ModSecurityDirective[]): string[] {
  const texts: string[] = [];
  let open = false;
  for (const d of directives) {
    const line = modSecurityLine(d);
    if (open) texts[texts.length - 1] += `\n${line}`;
    else texts.push(line);
    open = d.name === 'SecRule' && d.args[2] !== undefined && /(^|,)\s*chain\s*(,|$)/.test(d.args[2]);
  }
  return texts;
}
