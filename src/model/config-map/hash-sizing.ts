/** The server_names hash sized to the hosts, as ingress-nginx sizes it. */
import type { GlobalConfig } from '../nginx-model.js';

function nextPowerOf2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/**
 * fitServerNameHash raises the server_names hash sizes to fit the hosts, as ingress-nginx does
 * (nginx cannot resize them itself and refuses to start instead).
 */
export function fitServerNameHash(config: GlobalConfig, serverNames: readonly string[]): GlobalConfig {
  const wordSize = 8;
  const longest = Math.max(0, ...serverNames.map((name) => name.length));
  const aligned = (longest + 2 + wordSize - 1) & ~(wordSize - 1);
  const bucket = nextPowerOf2(2 * wordSize + aligned);
  const total = nextPowerOf2(serverNames.reduce((sum, name) => sum + name.length, 0));
  return {
    ...config,
    serverNameHashBucketSize: Math.max(config.serverNameHashBucketSize, bucket),
    serverNameHashMaxSize: Math.max(config.serverNameHashMaxSize, total),
  };
}
