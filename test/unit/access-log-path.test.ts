/**
 * access-log-path (issue 14, low): nginx's master opens the access log as root, so a ConfigMap
 * may name only /dev/stdout or a file under the config folder's logs/.
 */
import { describe, expect, it } from 'vitest';
import { checkAccessLogPath } from '../../src/model/validate.js';

describe('access-log-path', () => {
  it.each(['/dev/stdout', 'logs/access.log', 'logs/tenant-a.log'])('accepts %s', (path) => {
    expect(checkAccessLogPath(path)).toEqual({ ok: true, value: path });
  });

  it("reads ingress-nginx's default, a link to /dev/stdout in its image, as /dev/stdout", () => {
    expect(checkAccessLogPath('/var/log/nginx/access.log')).toEqual({ ok: true, value: '/dev/stdout' });
  });

  it.each([
    ['/etc/cron.d/evil', 'must be /dev/stdout or a file under logs/'],
    ['/var/log/nginx/error.log', 'must be /dev/stdout or a file under logs/'],
    ['nginx.conf', 'must be /dev/stdout or a file under logs/'],
    ['logs', 'must be /dev/stdout or a file under logs/'],
    ['logs/./x.log', 'must be /dev/stdout or a file under logs/'],
    ['logs/tenant-a/access.log', 'the file must be right in logs/'],
    ['/dev/stderr', 'use /dev/stdout'],
    ['logs/../nginx.conf', "may not contain '..'"],
    ['/dev/stdout/../../etc/passwd', "may not contain '..'"],
    ['syslog:server=127.0.0.1', 'is not a plain file path'],
    [`logs/${'a'.repeat(100_000)}`, 'is not a plain file path'],
  ])('refuses %s', (path, message) => {
    const checked = checkAccessLogPath(path);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.message).toContain(message);
  });
});
