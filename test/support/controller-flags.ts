import { freePort } from './net.js';

/** TestControllerFlags are a test controller's first flags and the free ports they gave its three listeners. */
export interface TestControllerFlags {
  readonly flags: string[];
  readonly httpPort: number;
  readonly httpsPort: number;
  readonly healthzPort: number;
}

/**
 * testControllerFlags are the flags every test controller starts with: its kubeconfig, its config folder, and its
 * http, https and healthz listeners on free loopback ports (returned, for the test to reach them).
 */
export async function testControllerFlags(kubeconfig: string, configDir: string): Promise<TestControllerFlags> {
  const [httpPort, httpsPort, healthzPort] = [await freePort(), await freePort(), await freePort()];
  return {
    flags: [
      '--kubeconfig',
      kubeconfig,
      '--http-port',
      String(httpPort),
      '--https-port',
      String(httpsPort),
      '--healthz-port',
      String(healthzPort),
      '--config-dir',
      configDir,
    ],
    httpPort,
    httpsPort,
    healthzPort,
  };
}
