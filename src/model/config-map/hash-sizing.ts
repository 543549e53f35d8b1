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
  let longest = 0;
  let total = 0;
  for (const name of serverNames) {
    longest = Math.max(longest, name.length);
    total += name.length;
  }
  return fitSizes(config, longest, total);
}

function fitSizes(config: GlobalConfig, longest: number, totalLength: number): GlobalConfig {
  const wordSize = 8;
  const aligned = (longest + 2 + wordSize - 1) & ~(wordSize - 1);
  const bucket = nextPowerOf2(2 * wordSize + aligned);
  const total = nextPowerOf2(totalLength);
  return {
    ...config,
    serverNameHashBucketSize: Math.max(config.serverNameHashBucketSize, bucket),
    serverNameHashMaxSize: Math.max(config.serverNameHashMaxSize, total),
  };
}

/**
 * ServerNameSizes keeps what fitServerNameHash reads of a list of names (the longest, the total length) as names come
 * and go, so that one host more among 10,000 costs a count, not a walk of every name.
 */
export class ServerNameSizes {
  private readonly byLength = new Map<number, number>();
  private total = 0;
  private longest = 0;

  add(name: string): void {
    this.byLength.set(name.length, (this.byLength.get(name.length) ?? 0) + 1);
    this.total += name.length;
    this.longest = Math.max(this.longest, name.length);
  }

  remove(name: string): void {
    const left = (this.byLength.get(name.length) ?? 0) - 1;
    if (left > 0) this.byLength.set(name.length, left);
    else this.byLength.delete(name.length);
    this.total -= name.length;
    if (left <= 0 && name.length === this.longest) this.longest = Math.max(0, ...this.byLength.keys());
  }

  /** fit is fitServerNameHash of the names held. */
  fit(config: GlobalConfig): GlobalConfig {
    return fitSizes(config, this.longest, this.total);
  }
}
