/**
 * The log format: readable lines for someone at a terminal (the demo's first screen), JSON lines where stderr is not a
 * terminal (a pod, a pipe), and the flags win either way.
 */
import { describe, expect, it } from 'vitest';
import { prettyLogs } from '../../src/log.js';

describe('prettyLogs', () => {
  it('is readable on a terminal and JSON elsewhere, unless a flag says', () => {
    expect(prettyLogs({ asked: null, stderrIsTTY: true })).toBe(true);
    expect(prettyLogs({ asked: null, stderrIsTTY: false })).toBe(false);
    // Node leaves isTTY undefined on a pipe or a file: a pod's stderr.
    expect(prettyLogs({ asked: null, stderrIsTTY: undefined })).toBe(false);
    expect(prettyLogs({ asked: 'json', stderrIsTTY: true })).toBe(false);
    expect(prettyLogs({ asked: 'pretty', stderrIsTTY: false })).toBe(true);
  });
});
