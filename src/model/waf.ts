/**
 * ModSecurity's shared rule set (issue 32): what nginx.conf loads once, at the http level, while some location has
 * the WAF on. nginx merges the http level's parsed rules into each location (pointers to the same rules), so 1,000
 * Ingresses with the Core Rule Set parse it once, where a `modsecurity_rules_file` per location (ingress-nginx's way)
 * parses it once each. Pure: the module and CRS paths come from BuildOptions (src/nginx/modules.ts).
 */
import type { Features } from './incremental/location-features.js';
import type { GlobalConfig, HttpWaf } from './nginx-model.js';
import type { NginxModules } from './machine-settings.js';
import { modSecurityRules } from './modsecurity-policy.js';

/**
 * BASE_RULES are the settings every rule set starts from, as ingress-nginx's modsecurity.conf (ModSecurity's
 * recommended one): DetectionOnly, request bodies read up to 13 MB (128 KB without files) and parsed by their type,
 * and the audit log as one JSON line a transaction on stderr, the controller's (only the header and the matched rules:
 * no bodies, so a line stays small), for transactions a rule logged or answered 4xx/5xx (not 404). The controller
 * reads it from a FIFO (src/nginx/waf-audit.ts): nginx's stderr is a socket there, which /dev/stderr cannot open.
 */
export const BASE_RULES: readonly string[] = [
  'SecRuleEngine DetectionOnly',
  'SecRequestBodyAccess On',
  'SecRequestBodyLimit 13107200',
  'SecRequestBodyNoFilesLimit 131072',
  'SecRequestBodyLimitAction Reject',
  'SecResponseBodyAccess Off',
  'SecArgumentSeparator &',
  'SecCookieFormat 0',
  'SecRule REQUEST_HEADERS:Content-Type "(?:application(?:/soap\\+|/)|text/)xml" ' +
    '"id:200000,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"',
  'SecRule REQUEST_HEADERS:Content-Type "application/json" ' +
    '"id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"',
  'SecRule REQBODY_ERROR "!@eq 0" ' +
    '"id:200002,phase:2,t:none,log,deny,status:400,msg:\'Failed to parse request body.\',severity:2"',
  'SecAuditEngine RelevantOnly',
  'SecAuditLogRelevantStatus "^(?:5|4(?!04))"',
  'SecAuditLogParts AHZ',
  'SecAuditLogType Serial',
  'SecAuditLogFormat JSON',
];

/** auditLogLine is where the audit log goes: the controller's FIFO, or stderr (a path of the controller's choosing). */
const auditLogLine = (path: string | undefined) =>
  `SecAuditLog ${path !== undefined && /^\/[A-Za-z0-9_./-]+$/.test(path) ? path : '/dev/stderr'}`;

/**
 * LOG4SHELL is CRS 4's Log4Shell rule (944150), which Debian's CRS 3.3.4 does not have: a `${jndi:…}` lookup (or a
 * nested `${…${`) anywhere in the request line, arguments, cookies or headers counts as a critical anomaly, which the
 * CRS's own evaluation (949110) then blocks. Loaded with the CRS, after its setup and before its rules; its id is in
 * the controller's range (200000-299999), so a later CRS that has 944150 does not clash.
 */
export const LOG4SHELL =
  'SecRule REQUEST_LINE|ARGS|ARGS_NAMES|REQUEST_COOKIES|REQUEST_COOKIES_NAMES|REQUEST_HEADERS|XML:/*|XML://@* ' +
  '"@rx (?i)(?:\\$|&dollar;?)(?:\\{|&l(?:brace|cub);?)(?:[^\\}]{0,15}(?:\\$|&dollar;?)(?:\\{|&l(?:brace|cub);?)|jndi|ctx)" ' +
  '"id:200100,phase:2,block,t:none,t:urlDecodeUni,t:jsDecode,t:htmlEntityDecode,log,' +
  "msg:'Potential Remote Command Execution: Log4j / Log4shell',tag:'attack-rce',tag:'log4shell',severity:'CRITICAL'," +
  "setvar:'tx.rce_score=+%{tx.critical_anomaly_score}',setvar:'tx.anomaly_score_pl1=+%{tx.critical_anomaly_score}'\"";

/**
 * httpWaf is the shared rule set, or null when no location has ModSecurity on (then the module is not loaded at all),
 * and the load_module path it needs; `features` says whether some location has it on, and the Core Rule Set.
 */
export function httpWaf(
  config: GlobalConfig,
  features: Pick<Features, 'waf' | 'coreRules'>,
  modules: NginxModules,
  auditLog?: string,
): { readonly waf: HttpWaf | null; readonly load: readonly string[] } {
  const on = features.waf;
  let crs = features.coreRules;
  if (!on || !modules.modsecurity) return { waf: null, load: [] };
  crs &&= modules.crs !== undefined;
  const rules = [
    // first: of two settings in one rule set ModSecurity keeps the first (SecRuleEngine On over the base's
    // DetectionOnly), and its setvar rules run before the CRS initialises (the paranoia level)
    ...modSecurityRules(config.modsecuritySnippet ?? []),
    ...BASE_RULES,
    auditLogLine(auditLog),
    ...(crs && modules.crs ? [`Include ${modules.crs.setup}`, LOG4SHELL, `Include ${modules.crs.rules}`] : []),
  ];
  return { waf: { rules, crs }, load: [modules.modsecurity] };
}
