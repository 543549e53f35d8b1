/** Issue 15: the flag parsing of src/cli in its own words, and the demo's loopback-only build option. */
import { describe, expect, it } from 'vitest';
import { parseControllerFlags, samePort } from '../../src/cli/controller-flags.js';
import { splitDemoFlags } from '../../src/cli/demo.js';
import { parseFlags } from '../../src/cli/flags.js';
import { UsageError } from '../../src/usage-error.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { isOurs, whyNotOurs } from '../../src/model/ingress-class.js';
import { emptySnapshot, type Ingress, type IngressClass } from '../../src/model/snapshot.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';

const options = { out: { type: 'string' }, verbose: { type: 'boolean' } } as const;
const refusal = (args: string[]) => {
  try {
    parseFlags(args, options, 'USAGE');
  } catch (error) {
    return { message: (error as UsageError).message, usage: (error as UsageError).usage };
  }
  return null;
};

describe('parseFlags (finding "unknown flags")', () => {
  it.each([
    [['--frob'], 'unknown flag --frob'],
    [['-x'], 'unknown flag -x'],
    [['--out'], '--out needs a value'],
    [['--out', '--verbose'], '--out needs a value'],
    [['--verbose=yes'], '--verbose takes no value'],
    [['stray'], 'unexpected argument "stray"'],
  ])('%j is refused as %j, with the usage', (args, message) =>
    expect(refusal(args)).toEqual({ message, usage: 'USAGE' }),
  );

  it('reads what parses as parseArgs does', () => {
    expect(parseFlags(['--out', '-', '--verbose'], options, 'USAGE').values).toEqual({ out: '-', verbose: true });
  });
});

describe('controller flags', () => {
  const config = (...argv: string[]) => {
    const parsed = parseControllerFlags(argv);
    if (!('config' in parsed)) throw new Error('help');
    return parsed.config;
  };
  it('--healthz-host takes an IP address (finding "demo": 10254 on loopback only)', () => {
    expect(config().healthzHost).toBeNull();
    expect(config('--healthz-host', '127.0.0.1').healthzHost).toBe('127.0.0.1');
    expect(() => config('--healthz-host', 'localhost; rm')).toThrow('--healthz-host must be an IP address');
  });
  it('--status-page is loopback, all or off (issue 18: the status page on the healthz port), loopback by default', () => {
    expect(config().statusPage).toBe('loopback');
    expect(config('--status-page', 'all').statusPage).toBe('all');
    expect(config('--status-page=off').statusPage).toBe('off');
    expect(() => config('--status-page', 'public')).toThrow('--status-page must be loopback, all or off, not "public"');
  });
  it('finding "inspector port": two listeners on one port are refused, naming both flags', () => {
    expect(() => samePort({ '--inspect-port': 8080, '--http-port': 8080 })).toThrow(
      '--inspect-port and --http-port are both 8080',
    );
    expect(() => config('--inspect', '--http-port', '8080')).toThrow(UsageError);
    expect(() => config('--inspect-port', '9000', '--healthz-port', '9000')).toThrow(
      '--inspect-port and --healthz-port are both 9000',
    );
    expect(config('--http-port', '8080').inspectPort).toBeNull(); // no inspector, no clash
  });
});

describe('splitDemoFlags (finding "demo": controller flags passed on)', () => {
  it('keeps its own flags and passes every other one on', () => {
    const split = splitDemoFlags([
      '--dir',
      'x',
      '--inspect',
      '--http-port=9',
      '--healthz-port',
      '7',
      '--log-level',
      'warn',
    ]);
    expect({ own: Object.fromEntries(split.own), controller: split.controller, help: split.help }).toEqual({
      own: { dir: 'x', 'http-port': '9' },
      controller: ['--inspect', '--healthz-port', '7', '--log-level', 'warn'],
      help: false,
    });
  });
  it.each(['--kubeconfig', '--config-dir=/tmp/x', '--healthz-host'])(
    'refuses %s, which the demo sets itself',
    (flag) => {
      expect(() => splitDemoFlags([flag, 'v'])).toThrow(/the demo sets it itself/);
    },
  );
});

describe('whyNotOurs (finding "render ignored Ingresses")', () => {
  const classes = new Map<string, IngressClass>([
    ['nginx', { metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } }],
    ['other', { metadata: { name: 'other' }, spec: { controller: 'example.com/x' } }],
  ]);
  const cases: Ingress[] = [
    { metadata: { name: 'a' }, spec: { ingressClassName: 'nginx' } },
    { metadata: { name: 'b' }, spec: { ingressClassName: 'other' } },
    { metadata: { name: 'c' }, spec: { ingressClassName: 'gone' } },
    { metadata: { name: 'd', annotations: { 'kubernetes.io/ingress.class': 'nginx' } }, spec: {} },
    { metadata: { name: 'e', annotations: { 'kubernetes.io/ingress.class': 'traefik' } }, spec: {} },
    { metadata: { name: 'f' }, spec: {} },
  ];
  it.each([false, true])(
    'agrees with isOurs (watch-ingress-without-class %s) and gives a reason exactly when not ours',
    (watchIngressWithoutClass) => {
      const opts = { ...defaultBuildOptions, watchIngressWithoutClass };
      for (const ingress of cases)
        expect(whyNotOurs(ingress, classes, opts) === null).toBe(isOurs(ingress, classes, opts));
      expect(cases.filter((i) => whyNotOurs(i, classes, opts) !== null).map((i) => i.metadata!.name)).toEqual(
        watchIngressWithoutClass ? ['b', 'c', 'e'] : ['b', 'c', 'e', 'f'],
      );
    },
  );
});

describe('listenAddress (finding "demo": nginx on 127.0.0.1 only)', () => {
  it(
    'renders every listen with the address, through the ' + 'quoting helper; absent, nginx listens on all addresses',
    async () => {
      const template = await loadTemplate();
      const listens = (listenAddress?: string) =>
        render(
          buildModel(emptySnapshot, {
            ...defaultBuildOptions,
            httpPort: 8080,
            httpsPort: 8443,
            ...(listenAddress ? { listenAddress } : {}),
          }).model,
          template,
        )
          .split('\n')
          .filter((l) => /^\s*listen /.test(l))
          .map((l) => l.trim());
      expect(listens('127.0.0.1')).toEqual([
        'listen "127.0.0.1:8080" default_server;',
        'listen "127.0.0.1:8443" ssl http2 default_server;',
      ]);
      expect(listens('::1')).toEqual([
        'listen "[::1]:8080" default_server;',
        'listen "[::1]:8443" ssl http2 default_server;',
      ]);
      expect(listens()).toEqual(['listen 8080 default_server;', 'listen 8443 ssl http2 default_server;']);
    },
  );
  it('refuses what is not an IP address', () => {
    expect(() =>
      buildModel(emptySnapshot, { ...defaultBuildOptions, listenAddress: '127.0.0.1:80; include /etc/passwd' }),
    ).toThrow(/listenAddress: .* is not an IP address/);
  });
});
