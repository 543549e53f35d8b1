import { checkModSecuritySnippet } from '../modsecurity-policy.js';
import { OPTIONAL_MODULES } from '../optional-modules.js';
import { checkValue } from '../snippet-policy.js';
import type { Checked } from '../validate.js';
import { read, readBool } from './read.js';
import type { AnnotationGroup, ModSecurityAnnotations } from './types.js';

/**
 * checkTransactionId accepts a modsecurity-transaction-id: letters, digits, `_ . : -` and the variables snippets may
 * read (`$request_id`), at most 128 characters.
 */
export function checkTransactionId(value: string): Checked<string> {
  if (!/^[A-Za-z0-9_.:$-]{1,128}$/.test(value))
    return {
      ok: false,
      message: `${JSON.stringify(value.slice(0, 64))} is not 1-128 letters, digits, _ . : - or $variables`,
    };
  const bad = checkValue(value);
  return bad === null ? { ok: true, value } : { ok: false, message: bad };
}

const NO_MODULE =
  `this nginx has no ModSecurity module (${OPTIONAL_MODULES.modsecurity.file}; Debian: apt-get install ` +
  `${OPTIONAL_MODULES.modsecurity.debian}), so the WAF cannot be applied`;

/**
 * modsecurityGroup is ingress-nginx's ModSecurity annotations. enable-modsecurity turns the WAF on (or off, under the
 * ConfigMap's enable-modsecurity) for the Ingress's locations, in DetectionOnly unless a snippet says `SecRuleEngine
 * On`; enable-owasp-core-rules adds the OWASP Core Rule Set (loaded once for every location that has it);
 * modsecurity-snippet is checked against its own allow-list (src/model/modsecurity-policy.ts). A WAF that cannot be
 * applied (no module, a refused snippet) fails closed: the Ingress's locations answer 503.
 */
export const modsecurityGroup: AnnotationGroup<'modsecurity'> = {
  name: 'ModSecurity',
  field: 'modsecurity',
  keys: [
    {
      key: 'enable-modsecurity',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'deny',
      support: 'supported',
      doc:
        'ModSecurity in the Ingress\'s locations ("false" opts out of the ConfigMap\'s enable-modsecurity); needs ' +
        "Debian's libnginx-mod-http-modsecurity (without it the locations answer 503); DetectionOnly unless a " +
        'snippet says `SecRuleEngine On`',
    },
    {
      key: 'enable-owasp-core-rules',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'deny',
      support: 'supported',
      doc: "the OWASP Core Rule Set (Debian's modsecurity-crs 3.3), loaded once for every location that has it",
    },
    {
      key: 'modsecurity-transaction-id',
      risk: 'High',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'the transaction id of the audit log (letters, digits, `_ . : -` and variables such as `$request_id`)',
      note:
        "the audit record's id is the Ingress's `namespace/name/` followed by it, so the log names the Ingress; " +
        '`$request_id` when absent',
    },
    {
      key: 'modsecurity-snippet',
      risk: 'Critical',
      scope: 'ingress',
      onInvalid: 'deny',
      support: 'partial',
      doc: 'ModSecurity directives for the Ingress\'s locations; needs allow-snippet-annotations "true" and annotations-risk-level Critical',
      note:
        'only the modsecurity-snippet allow-list below: rule engine mode, rule removal and target updates, body ' +
        'limits, SecRule and SecAction with listed variables, operators and actions, rule ids 1-99999; no ' +
        'Include, file, program or audit log setting',
    },
  ],
  parse: (input) => {
    const enable = readBool(input, 'enable-modsecurity');
    const coreRules = readBool(input, 'enable-owasp-core-rules');
    const transactionId = read(input, 'modsecurity-transaction-id', checkTransactionId) ?? null;
    let snippet: ModSecurityAnnotations['snippet'] = null;
    const raw = input.get('modsecurity-snippet');
    if (raw !== undefined) {
      if (!input.config.allowSnippetAnnotations) {
        input.note(
          'modsecurity-snippet',
          'snippets are disabled: they need allow-snippet-annotations: "true" and annotations-risk-level: Critical ' +
            'in the controller ConfigMap',
        );
      } else {
        const checked = checkModSecuritySnippet(raw, 'ingress');
        if (checked.ok) snippet = checked.value;
        else input.invalid('modsecurity-snippet', checked.message);
      }
    }
    // The ConfigMap's enable-modsecurity without the module is its own problem (src/model/global-extras.ts): off.
    const on = enable ?? (input.config.enableModsecurity && input.modules.modsecurity !== undefined);
    if (on && !input.modules.modsecurity) {
      input.invalid('enable-modsecurity', NO_MODULE);
      return null;
    }
    if (on && coreRules === true && !input.modules.crs) {
      input.invalid(
        'enable-owasp-core-rules',
        'this machine has no OWASP Core Rule Set (Debian: apt-get install modsecurity-crs)',
      );
      return null;
    }
    return { on, coreRules, transactionId, snippet };
  },
};
