/** The nginx wrapper of the "nginx -t fails" fault. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nginxBinary } from '../../src/nginx/binary.js';

/**
 * writeNginxWrapper writes a shell script that runs the real nginx (exec, so the master's pid is
 * the one the controller spawned), except `nginx -t` while `faultFile` exists: then it fails as
 * nginx would on a transient error.
 */
export async function writeNginxWrapper(dir: string, faultFile: string): Promise<string> {
  const path = join(dir, 'nginx-wrapper.sh');
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  await writeFile(
    path,
    [
      '#!/bin/sh',
      `# nginx, except that -t fails while ${faultFile} exists (the reliability suite's "nginx -t fails" fault)`,
      'for arg in "$@"; do',
      `  if [ "$arg" = "-t" ] && [ -e ${quote(faultFile)} ]; then`,
      '    echo "nginx: [emerg] injected fault: nginx -t cannot run (the reliability suite)" >&2',
      '    exit 1',
      '  fi',
      'done',
      `exec ${quote(nginxBinary())} "$@"`,
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return path;
}
