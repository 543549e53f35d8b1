/**
 * The modsecurity-snippet allow-list (src/model/modsecurity-policy.ts): what ingress-nginx users write passes and is
 * printed again as checked; what reads a file, runs a program, writes the audit log elsewhere, touches a shared
 * collection or takes another range's rule ids is refused with its reason. The audit line reader
 * (src/nginx/waf-audit.ts) on a line this machine's ModSecurity wrote.
 */
import { describe, expect, it } from 'vitest';
import { checkModSecuritySnippet, modSecurityLine, modSecurityRules } from '../../src/model/modsecurity-policy.js';
import { quoteLines } from '../../src/render/quote.js';
import { checkTransactionId } from '../../src/model/annotations/modsecurity.js';
import { MAX_AUDIT_LINE, wafAuditRecord } from '../../src/nginx/waf-audit.js';

const lines = (raw: string, scope: 'ingress' | 'config' = 'ingress') => {
  const checked = checkModSecuritySnippet(raw, scope);
  if (!checked.ok) throw new Error(checked.message);
  return checked.value.map(modSecurityLine);
};
const refusal = (raw: string, scope: 'ingress' | 'config' = 'ingress') => {
  const checked = checkModSecuritySnippet(raw, scope);
  return checked.ok ? null : checked.message;
};

describe('checkModSecuritySnippet', () => {
  it("reads ingress-nginx's snippets, with the escapes its modsecurity_rules '…' needed", () => {
    expect(
      lines(
        'SecRuleEngine On\nSecRequestBodyAccess On\n' +
          'SecRule REQUEST_HEADERS:User-Agent \\"block-ua\\" \\"log,deny,id:107,status:403,msg:\\\'UA blocked\\\'\\"',
      ),
    ).toEqual([
      'SecRuleEngine On',
      'SecRequestBodyAccess On',
      `SecRule "REQUEST_HEADERS:User-Agent" block-ua "log,deny,id:107,status:403,msg:'UA blocked'"`,
    ]);
  });

  it('takes the tuning users need: rule removal, target updates, paranoia level, thresholds, body limits', () => {
    expect(
      lines(
        [
          '# tuning for the shop',
          'SecRuleEngine DetectionOnly',
          'SecRuleRemoveById 920350 942100-942999',
          'SecRuleRemoveByTag "attack-sqli"',
          'SecRuleUpdateTargetById 942100 "!ARGS:password"',
          'SecAction "id:900,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=2"',
          'SecAction "id:901,phase:1,nolog,pass,t:none,setvar:\'tx.inbound_anomaly_score_threshold=10\'"',
          'SecRequestBodyLimit 1048576',
          'SecRequestBodyLimitAction ProcessPartial',
          'SecRule REQUEST_URI "@beginsWith /health" \\',
          '  "id:902,phase:1,pass,nolog,ctl:ruleEngine=Off"',
        ].join('\n'),
      ),
    ).toEqual([
      'SecRuleEngine DetectionOnly',
      'SecRuleRemoveById 920350 942100-942999',
      'SecRuleRemoveByTag attack-sqli',
      'SecRuleUpdateTargetById 942100 "!ARGS:password" ',
      'SecAction "id:900,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=2"',
      'SecAction "id:901,phase:1,nolog,pass,t:none,setvar:\'tx.inbound_anomaly_score_threshold=10\'"',
      'SecRequestBodyLimit 1048576',
      'SecRequestBodyLimitAction ProcessPartial',
      'SecRule REQUEST_URI "@beginsWith /health" "id:902,phase:1,pass,nolog,ctl:ruleEngine=Off"',
    ]);
  });

  it.each([
    ['Include /etc/passwd', /"Include" is not on the modsecurity-snippet allow-list \(it reads a file\)/],
    ['include /etc/passwd', /"include" is not on .*\(it reads a file\)/],
    ['SecAuditLog /var/tmp/modsec_audit.log', /SecAuditLog.*the audit log is the controller's/],
    ['SecAuditLogStorageDir /var/tmp/', /the audit log is the controller's/],
    ['SecDebugLog /tmp/x', /it writes a file/],
    ['SecDataDir /tmp', /it names a folder/],
    ['SecRemoteRules key https://evil.example/rules', /network/],
    ['SecDefaultAction "phase:2,pass,nolog"', /every rule's actions/],
    ['SecRule ARGS "@rx x" "id:1,phase:2,exec:/bin/sh"', /the action "exec" is not on the list/],
    ['SecRule ARGS "@rx x" "id:1,phase:2,setenv:PATH=/tmp"', /the action "setenv"/],
    ['SecRule ARGS "@rx x" "id:1,phase:2,initcol:ip=%{REMOTE_ADDR}"', /the action "initcol"/],
    ['SecRule ARGS "@rx x" "id:1,phase:2,setvar:ip.blocked=1"', /setvar may set only tx\./],
    ['SecRule ARGS "@rx x" "id:1,phase:2,ctl:auditLogParts=+E"', /ctl:auditLogParts is not on the list/],
    ['SecRule ARGS "@rx x" "id:1,phase:2,redirect:https://evil.example/"', /the action "redirect"/],
    ['SecRule ARGS "@pmFromFile /etc/passwd" "id:1,phase:2,deny"', /@pmFromFile is not an operator on the list/],
    ['SecRule ARGS "@inspectFile /bin/sh" "id:1,phase:2,deny"', /@inspectFile/],
    ['SecRule ARGS "@rbl sbl.example" "id:1,phase:2,deny"', /@rbl/],
    ['SecRule ENV:PATH "@rx ." "id:1,phase:2,deny"', /ENV is not a variable on the list/],
    ['SecRule IP:x "@rx ." "id:1,phase:2,deny"', /IP is not a variable on the list/],
    ['SecRule ARGS "@rx x" "phase:2,deny"', /every rule needs an id/],
    ['SecRule ARGS "@rx x" "id:949110,phase:2,deny"', /rule id 949110 is outside 1-99999/],
    ['SecRule ARGS "@rx x" "id:7,deny"\nSecRule ARGS "@rx y" "id:7,deny"', /rule id 7 is used twice/],
    ['SecRule ARGS "@rx x" "id:7,deny,chain"', /the last rule asks for chain/],
    ['SecRuleEngine Maybe', /"Maybe" is not On or DetectionOnly or Off/],
    ['SecRuleEngine On Off', /takes 1 argument/],
    ['SecRule ARGS "@rx \\"x" "id:1,deny"', /holds a quote/],
    ['SecRuleRemoveByTag abc\\\\', /ends with \\/],
    ['SecRuleEngine "On', /left open/],
    ['SecRuleEngine On\u0000', /printable ASCII/],
    ['SecRuleRemoveById 1;Include /etc/passwd', /not a rule id or range/],
    ['toString', /"toString" is not on the modsecurity-snippet allow-list/],
    ['__proto__ x', /"__proto__" is not on/],
    ['SecRule ARGS "@rx x" "id:1,toString"', /the action "toString" is not on the list/],
    ['SecRule ARGS "@constructor x" "id:1,deny"', /@constructor is not an operator/],
  ])('refuses %j', (raw, reason) => {
    expect(refusal(raw)).toMatch(reason);
  });

  it("keeps the ConfigMap's rule ids apart from the tenants', the controller's and the CRS's", () => {
    expect(refusal('SecRule ARGS "@rx x" "id:107,phase:2,deny"', 'config')).toMatch(/outside 300000-899999/);
    expect(refusal('SecRule ARGS "@rx x" "id:200000,phase:2,deny"', 'config')).toMatch(/outside 300000-899999/);
    expect(lines('SecRule ARGS "@rx x" "id:300001,phase:2,deny"', 'config')).toHaveLength(1);
    expect(refusal('SecRule ARGS "@rx x" "id:300001,phase:2,deny"')).toMatch(/outside 1-99999/);
  });

  it('bounds what it reads: length and directives', () => {
    expect(refusal('SecRuleEngine On\n'.repeat(65))).toMatch(/more than 64 directives/);
    expect(refusal(`#${'x'.repeat(20_000)}`)).toMatch(/longer than 16384/);
  });
});

describe('modSecurityRules and quoteLines', () => {
  it('keep a chain in one modsecurity_rules, its line breaks spelled as nginx reads them', () => {
    const checked = checkModSecuritySnippet(
      'SecRuleEngine On\nSecRule REQUEST_URI "@beginsWith /admin" "id:5,phase:1,deny,chain"\n' +
        'SecRule REQUEST_METHOD "!@streq GET" "t:none"\nSecRuleRemoveById 7',
      'ingress',
    );
    if (!checked.ok) throw new Error(checked.message);
    const texts = modSecurityRules(checked.value);
    expect(texts).toEqual([
      'SecRuleEngine On',
      'SecRule REQUEST_URI "@beginsWith /admin" "id:5,phase:1,deny,chain"\nSecRule REQUEST_METHOD "!@streq GET" "t:none"',
      'SecRuleRemoveById 7',
    ]);
    expect(quoteLines(texts[1])).toBe(
      '"SecRule REQUEST_URI \\"@beginsWith /admin\\" \\"id:5,phase:1,deny,chain\\"\\nSecRule REQUEST_METHOD ' +
        '\\"!@streq GET\\" \\"t:none\\""',
    );
    expect(() => quoteLines('a\tb')).toThrow(/control character/);
  });
});

describe('checkTransactionId', () => {
  it('takes words and the variables snippets may read', () => {
    expect(checkTransactionId('modsecurity-$request_id')).toEqual({ ok: true, value: 'modsecurity-$request_id' });
    expect(checkTransactionId('$ia_hsts').ok).toBe(false);
    expect(checkTransactionId('a"b').ok).toBe(false);
    expect(checkTransactionId('a b').ok).toBe(false);
    expect(checkTransactionId('x'.repeat(129)).ok).toBe(false);
  });
});

// Written by ModSecurity 3.0.9 (Debian) for a request the CRS blocked through a profile of the shared server.
const AUDIT_LINE =
  '{"transaction":{"client_ip":"127.0.0.1","time_stamp":"Sat Dec  5 20:26:06 2026","server_id":"2ce1","client_port":51188,' +
  '"host_ip":"127.0.0.1","host_port":18931,"unique_id":"shop/web-front/75ff3162b17544d6d6b80de89aa32946","request":' +
  '{"method":"GET","http_version":1.1,"uri":"/waf?id=1%27%20or%201=1--"},"response":{"http_code":403},"producer":' +
  '{"modsecurity":"ModSecurity v3.0.9 (Linux)","connector":"ModSecurity-nginx v1.0.3","secrules_engine":"Enabled",' +
  '"components":["OWASP_CRS/3.3.4\\""]},"messages":[{"message":"SQL Injection Attack Detected via libinjection",' +
  '"details":{"match":"detected SQLi using libinjection.","reference":"v12,11","ruleId":"942100","file":' +
  '"/usr/share/modsecurity-crs/rules/REQUEST-942-APPLICATION-ATTACK-SQLI.conf","lineNumber":"46","data":"x",' +
  '"severity":"2","ver":"OWASP_CRS/3.3.4","rev":"","tags":[],"maturity":"0","accuracy":"0"}},{"message":' +
  '"Inbound Anomaly Score Exceeded (Total Score: 8)","details":{"match":"m","reference":"","ruleId":"949110","file":' +
  '"/usr/share/modsecurity-crs/rules/REQUEST-949-BLOCKING-EVALUATION.conf","lineNumber":"81","data":"","severity":"2",' +
  '"ver":"OWASP_CRS/3.3.4","rev":"","tags":[],"maturity":"0","accuracy":"0"}}]}}';

describe('wafAuditRecord', () => {
  it('gives the Ingress, the transaction id and the rule ids of an audit line', () => {
    expect(wafAuditRecord(AUDIT_LINE)).toEqual({
      ingress: 'shop/web-front',
      transactionId: '75ff3162b17544d6d6b80de89aa32946',
      rules: ['942100', '949110'],
      status: 403,
      engine: 'Enabled',
      blocked: true,
      method: 'GET',
      uri: '/waf?id=1%27%20or%201=1--',
      client: '127.0.0.1',
    });
  });

  it('reads no Ingress from an id without one, and nothing from what is not an audit line', () => {
    const unnamed = AUDIT_LINE.replace('shop/web-front/', '');
    expect(wafAuditRecord(unnamed)).toMatchObject({ ingress: null, transactionId: '75ff3162b17544d6d6b80de89aa32946' });
    expect(wafAuditRecord('2026/12/05 20:26:06 [error] 1#1: *1 something')).toBeNull();
    expect(wafAuditRecord('{"transaction":')).toBeNull();
    expect(wafAuditRecord(`{"transaction":{"unique_id":"${'a'.repeat(MAX_AUDIT_LINE)}"}}`)).toBeNull();
    expect(wafAuditRecord('{"transaction":[1,2]}')).toMatchObject({ ingress: null, rules: [], status: null });
  });
});
