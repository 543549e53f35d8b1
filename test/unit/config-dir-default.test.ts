/**
 * Finding 3: the default --config-dir was /tmp/ingress-actors for everyone, a name any local
 * user can create first in a folder everyone writes to. Now root gets a folder under /var/lib
 * (only root creates names there), any other user one named after its uid.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { defaultConfigDir, parseControllerFlags } from '../../src/cli/controller-flags.js';

it(
  'finding 3: the default config folder is /var/lib/ingress-actors as ' +
    'root, else the user’s own in the temp folder',
  () => {
    expect(defaultConfigDir(0)).toBe('/var/lib/ingress-actors');
    expect(defaultConfigDir(1000)).toBe(join(tmpdir(), 'ingress-actors-1000'));
    const parsed = parseControllerFlags([]);
    if (!('config' in parsed)) throw new Error('unexpected --help');
    expect(parsed.config.configDir).toBe(defaultConfigDir(process.geteuid?.() ?? 0));
    expect(parsed.config.configDir).not.toBe('/tmp/ingress-actors');
  },
);
