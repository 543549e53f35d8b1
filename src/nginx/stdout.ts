import { fstatSync } from 'node:fs';
import type { Logger } from '../log.js';

/**
 * nginxStdout decides what nginx's master gets as its stdout, where `access_log /dev/stdout` (the default) writes:
 * the controller's own stdout (the pod's `kubectl logs`), unless that is a socket, which nginx cannot open()
 * (`/dev/stdout failed (6: No such device or address)`: systemd's journal, or a Node parent's pipe). Then nginx gets
 * /dev/null, and the log says so once, with what to do.
 */
export function nginxStdout(log: Logger, fd = 1): 'inherit' | 'ignore' {
  let socket: boolean;
  try {
    socket = fstatSync(fd).isSocket();
  } catch {
    // No stdout at all: nothing to pass on.
    return 'ignore';
  }
  if (!socket) return 'inherit';
  log.warn(
    'stdout is a socket, which nginx cannot open as /dev/stdout: an access log there (the default) is dropped; run ' +
      'the controller with stdout on a pipe, file or terminal (as in a container), or set access-log-path to a file ' +
      'under logs/',
  );
  return 'ignore';
}
