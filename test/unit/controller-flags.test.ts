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

describe('--validating-webhook', () => {
  const pem = ['--validating-webhook-certificate=/c.pem', '--validating-webhook-key=/k.pem'];
  const webhookOf = (args: string[]) => {
    const parsed = parseControllerFlags(args);
    if (!('config' in parsed)) throw new Error('no config');
    return parsed.config.webhook;
  };

  it('is off when absent', () => expect(webhookOf([])).toBeNull());

  it.each([
    [':8443', { port: 8443 }],
    ['127.0.0.1:9443', { host: '127.0.0.1', port: 9443 }],
    ['[::1]:8443', { host: '::1', port: 8443 }],
  ])('reads %s as Go does', (address, where) =>
    expect(webhookOf([`--validating-webhook=${address}`, ...pem])).toEqual({
      ...where,
      certFile: '/c.pem',
      keyFile: '/k.pem',
    }),
  );

  it.each([
    [['--validating-webhook=:8443'], /needs --validating-webhook-certificate and --validating-webhook-key/],
    [['--validating-webhook=8443', ...pem], /must be \[IP\]:PORT/],
    [['--validating-webhook=example.com:8443', ...pem], /is not an IP address/],
    [['--validating-webhook=:99999', ...pem], /must be a port number/],
    [['--validating-webhook=:10254', ...pem], /--healthz-port and --validating-webhook are both 10254/],
  ])('%s is refused', (args, message) => expect(() => parseControllerFlags(args)).toThrow(message));

  const own = [
    '--validating-webhook-secret=ingress-actors/ingress-actors-admission',
    '--validating-webhook-service=ingress-actors/admission',
  ];

  it('with --validating-webhook-secret makes its own certificate: no files, the Service’s names, the configuration', () => {
    expect(
      webhookOf(['--validating-webhook=:8443', ...own, '--validating-webhook-configuration=ingress-actors-admission']),
    ).toEqual({
      port: 8443,
      selfSigned: {
        secret: { namespace: 'ingress-actors', name: 'ingress-actors-admission' },
        service: { namespace: 'ingress-actors', name: 'admission' },
        configuration: 'ingress-actors-admission',
      },
    });
    // Without a configuration the caBundle is someone else's to set.
    expect(webhookOf(['--validating-webhook=:8443', ...own])?.selfSigned?.configuration).toBeNull();
  });

  it.each([
    [[...own], /--validating-webhook-secret needs --validating-webhook$/],
    [['--validating-webhook=:8443', ...own, ...pem], /both name the certificate; give one/],
    [['--validating-webhook=:8443', own[0]!], /needs --validating-webhook-service/],
    [['--validating-webhook=:8443', ...pem, own[1]!], /go with --validating-webhook-secret/],
    [['--validating-webhook=:8443', '--validating-webhook-secret=admission', own[1]!], /must be namespace\/name/],
    [
      ['--validating-webhook=:8443', ...own, '--validating-webhook-configuration=Not_A_Name'],
      /must be a ValidatingWebhookConfiguration name/,
    ],
  ])('%s is refused', (args, message) => expect(() => parseControllerFlags(args)).toThrow(message));
});

describe('--enable-gateway-api and --gateway-controller-name', () => {
  const gatewayOf = (argv: string[]) => {
    const parsed = parseControllerFlags(argv);
    if (!('config' in parsed)) throw new Error('no config');
    return parsed.config.build.gateway;
  };

  it.each([
    [[], { controllerName: 'ingress-actors.io/gateway-controller' }],
    [['--enable-gateway-api'], { controllerName: 'ingress-actors.io/gateway-controller' }],
    [['--enable-gateway-api=false'], undefined],
    [['--gateway-controller-name', 'example.com/gw'], { controllerName: 'example.com/gw' }],
    [['--enable-gateway-api=false', '--gateway-controller-name=example.com/gw'], undefined],
  ])('%j: BuildOptions.gateway is %j', (argv, expected) => expect(gatewayOf(argv)).toEqual(expected));

  it.each([
    ['--gateway-controller-name', 'no-slash'],
    ['--gateway-controller-name', 'Example.com/gw'],
    ['--gateway-controller-name', `${'a'.repeat(250)}.io/x`],
    ['--enable-gateway-api=maybe'],
  ])('%s %s is refused, naming the flag', (...argv) => {
    expect(() => parseControllerFlags(argv)).toThrow(/--(gateway-controller-name|enable-gateway-api)/);
  });

  it('are listed in the usage text', async () => {
    const { CONTROLLER_USAGE } = await import('../../src/cli/controller-flags.js');
    expect(CONTROLLER_USAGE).toMatch(/--enable-gateway-api/);
    expect(CONTROLLER_USAGE).toMatch(/--gateway-controller-name NAME/);
  });
});

describe('--gateway-addresses', () => {
  const poolOf = (value: string) => {
    const parsed = parseControllerFlags(['--gateway-addresses', value]);
    if (!('config' in parsed)) throw new Error('no config');
    return parsed.config.build.gateway?.addresses;
  };

  it.each([
    ['10.0.0.5', ['10.0.0.5']],
    ['10.0.0.5, 10.0.0.1', ['10.0.0.5', '10.0.0.1']],
    ['127.0.0.200-127.0.0.202', ['127.0.0.200', '127.0.0.201', '127.0.0.202']],
    ['10.0.0.255-10.0.1.0', ['10.0.0.255', '10.0.1.0']],
    ['fd00::1,FD00::2', ['fd00::1', 'fd00::2']],
    ['10.0.0.1-10.0.0.1', ['10.0.0.1']],
  ])('%s is the pool %j, in the order written', (value, expected) => expect(poolOf(value)).toEqual(expected));

  it('absent: no pool (one shared address)', () => {
    const parsed = parseControllerFlags([]);
    if (!('config' in parsed)) throw new Error('no config');
    expect(parsed.config.build.gateway).toEqual({ controllerName: 'ingress-actors.io/gateway-controller' });
  });

  it.each([
    ['', /not an IP address/],
    ['10.0.0.1,', /not an IP address/],
    ['gw.example', /not an IP address/],
    ['10.0.0.256', /not an IP address/],
    ['10.0.0.0/24', /not an IP address/],
    ['10.0.0.1-10.0.0.2-10.0.0.3', /not an IP address/],
    ['10.0.0.9-10.0.0.1', /ends before it starts/],
    ['fd00::1-fd00::9', /not a range of IPv4/],
    ['10.0.0.1-x', /not a range of IPv4/],
    ['10.0.0.1,10.0.0.1', /given twice/],
    ['10.0.0.1-10.0.0.3,10.0.0.2', /given twice/],
    ['10.0.0.0-10.0.255.255', /more than 4096/],
  ])('%j is refused, naming the flag', (value, message) => {
    expect(() => poolOf(value)).toThrow(/--gateway-addresses/);
    expect(() => poolOf(value)).toThrow(message);
  });

  it('is listed in the usage text', async () => {
    const { CONTROLLER_USAGE } = await import('../../src/cli/controller-flags.js');
    expect(CONTROLLER_USAGE).toMatch(/--gateway-addresses IP/);
  });
});

describe('--routes-as-data', () => {
  const routesAsData = (argv: string[]) => {
    const parsed = parseControllerFlags(argv);
    if (!('config' in parsed)) throw new Error('unexpected --help');
    return parsed.config.routesAsData;
  };
  it.each([
    [[], true],
    [['--routes-as-data=false'], false],
    [['--routes-as-data=true'], true],
    [['--routes-as-data'], true],
  ])('%j reads as %j', (argv, expected) => expect(routesAsData(argv)).toBe(expected));

  it('is refused with a value that is not a boolean, naming the flag', () => {
    expect(() => parseControllerFlags(['--routes-as-data=maybe'])).toThrow(/--routes-as-data/);
  });
});
