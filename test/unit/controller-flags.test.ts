/** The controller's own flags beside ingress-nginx's: --inspect and --inspect-port. */
import { describe, expect, it } from 'vitest';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';

function inspectFlags(argv: string[]) {
  const parsed = parseControllerFlags(argv);
  if (!('config' in parsed)) throw new Error('unexpected --help');
  return { inspect: parsed.config.inspect, inspectPort: parsed.config.inspectPort };
}

describe('--inspect and --inspect-port', () => {
  it.each([
    [[], { inspect: false, inspectPort: null }],
    [['--inspect'], { inspect: true, inspectPort: null }],
    [['--inspect-port', '9100'], { inspect: false, inspectPort: 9100 }],
    [['--inspect', '--inspect-port=9101'], { inspect: true, inspectPort: 9101 }],
  ])('%j reads as %j', (argv, expected) => expect(inspectFlags(argv)).toEqual(expected));

  it.each([['--inspect-port', 'http'], ['--inspect-port', '70000'], ['--inspect-port=']])(
    '%s %s is refused, naming the flag',
    (...argv) => {
      expect(() => parseControllerFlags(argv)).toThrow(/--inspect-port/);
    },
  );

  it('are listed in the usage text', async () => {
    const { CONTROLLER_USAGE } = await import('../../src/cli/controller-flags.js');
    expect(CONTROLLER_USAGE).toMatch(/--inspect-port N/);
  });
});
