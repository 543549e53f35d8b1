/**
 * Faults the controller does not survive yet. A fault marked with one of these is still checked
 * and counted as not survived in the final line, but does not fail the run; once it survives, the
 * run fails until the entry is removed. `RELIABILITY_STRICT=1` fails on these too.
 */
export const knownBugs = {
  'reload-not-retried':
    'a reload that fails for a reason outside the config (ENOSPC writing nginx.conf.next, nginx -t ' +
    'unable to run) is never retried: the nginx-process machine records the failure and goes back ' +
    'to running with nothing pending (machines/nginxProcess.machine.ts, reloading.onError), and the ' +
    'sync queue counted the sync as done when it handed the text over (src/actors/sync.ts sends ' +
    'nginx.reload and resolves), so nginx keeps the old config until some later API change',
  'rotated-certificate-not-served':
    'a TLS Secret whose certificate changes (a renewal) is written to certificates/<ns>_<name>.pem, ' +
    'but nginx.conf text does not change, so the nginx-process machine skips the reload as already ' +
    'applied (machines/nginxProcess.machine.ts, guard isApplied compares the text only) and nginx ' +
    'keeps serving the old certificate from memory until an unrelated change or a restart reloads it; ' +
    'the certificate file name (src/model/tls.ts) carries no content hash and src/actors/sync.ts ' +
    'does not tell the nginx actor that a certificate changed',
  'ssl-ciphers-not-checked':
    'the ConfigMap key ssl-ciphers accepts any word of cipher-list characters (checkCiphers in ' +
    'src/model/config-map.ts), e.g. "503" or "1m"; nginx -t then fails with "SSL_CTX_set_cipher_list ' +
    'failed (no cipher match)", so every later config is refused and no Ingress change is applied ' +
    'until the ConfigMap changes, against the property test\'s own rule "either rejects the object ' +
    'or writes a config that passes nginx -t"',
} as const;

/** knownBugOfReloadError names the known bug an nginx -t refusal comes from, if it is one. */
export function knownBugOfReloadError(error: string): keyof typeof knownBugs | undefined {
  return /SSL_CTX_set_cipher_list\(.*\) failed/.test(error) ? 'ssl-ciphers-not-checked' : undefined;
}
