/**
 * Per-Gateway addresses (`--gateway-addresses`): each accepted Gateway of ours gets one address of the pool, and
 * nginx listens on `address:port` for its servers, so two Gateways with the same port and hostname stay apart.
 * Pure: the same Gateways and pool always give the same addresses.
 *
 * Order, so that a new Gateway never takes an address another one has:
 * 1. a Gateway whose `spec.addresses` names a pool address gets it when no older Gateway holds it (static);
 * 2. a Gateway whose `status.addresses` already holds a free pool address keeps it (so deleting an older Gateway
 *    moves nobody);
 * 3. the others, oldest first (then namespace/name), get the first free address no Gateway names in its spec.
 */
import { checkIp } from '../validate.js';
import { key } from './listeners.js';
import { byAge } from './precedence.js';
import type { Gateway } from './types.js';

/** AddressVerdict is what the pool gives one Gateway. */
export type AddressVerdict =
  | { readonly kind: 'assigned'; readonly address: string }
  /** Accepted=False, reason UnsupportedAddress: spec.addresses has a type (or value) this controller cannot serve */
  | { readonly kind: 'unsupported'; readonly message: string }
  /** Programmed=False, reason AddressNotUsable: a requested address is not in the pool, or another Gateway's */
  | { readonly kind: 'unusable'; readonly message: string }
  /** Programmed=False, reason AddressNotAssigned: the pool has no free address left */
  | { readonly kind: 'exhausted'; readonly message: string };

/** normalizePool keeps the pool's IP addresses in their checked spelling, each once, in order. */
export function normalizePool(pool: readonly string[]): string[] {
  // a Set keeps the order of first insertion: linear in the pool (up to 4096 addresses), on every build
  const out = new Set<string>();
  for (const a of pool) {
    const ip = checkIp(a);
    if (ip.ok) out.add(ip.value.address);
  }
  return [...out];
}

/**
 * assignAddresses gives every Gateway a verdict: `unsupported` for any whose spec.addresses cannot be served, and
 * for those `eligible` says are accepted, an address of `pool` or why not. Others get none.
 */
export function assignAddresses(
  gateways: readonly Gateway[],
  eligible: (g: Gateway) => boolean,
  rawPool: readonly string[],
): Map<string, AddressVerdict> {
  const pool = normalizePool(rawPool);
  const inPool = new Set(pool);
  const verdicts = new Map<string, AddressVerdict>();
  const ordered = [...gateways].sort((a, b) => byAge(a.meta, b.meta));
  const candidates: Gateway[] = [];
  for (const g of ordered) {
    const unsupported = g.addresses.flatMap((a) => (a.type === 'unsupported' ? [a.written] : []));
    if (unsupported.length > 0) {
      verdicts.set(key(g.meta), {
        kind: 'unsupported',
        message: `spec.addresses: only IPAddress entries with an IP address are supported, not ${unsupported.join(', ')}`,
      });
      continue;
    }
    if (eligible(g)) candidates.push(g);
  }
  const named = (g: Gateway) =>
    g.addresses.flatMap((a) => (a.type === 'IPAddress' && a.value !== undefined ? [a.value] : []));
  // addresses some Gateway names in its spec: dynamic assignment leaves them to it
  const reserved = new Set(candidates.flatMap(named).filter((a) => inPool.has(a)));
  const holder = new Map<string, string>();
  const assign = (g: Gateway, address: string) => {
    holder.set(address, key(g.meta));
    verdicts.set(key(g.meta), { kind: 'assigned', address });
  };
  const rest: Gateway[] = [];
  for (const g of candidates) {
    const wanted = named(g);
    if (g.addresses.length > 1) {
      verdicts.set(key(g.meta), {
        kind: 'unusable',
        message: `spec.addresses: ${g.addresses.length} addresses requested; a Gateway is served on one`,
      });
    } else if (wanted.length === 0) rest.push(g);
    else {
      const address = wanted[0] as string;
      const taken = holder.get(address);
      if (!inPool.has(address))
        verdicts.set(key(g.meta), {
          kind: 'unusable',
          message: `spec.addresses: ${address} is not one of the controller's --gateway-addresses`,
        });
      else if (taken !== undefined)
        verdicts.set(key(g.meta), {
          kind: 'unusable',
          message: `spec.addresses: ${address} is in use by Gateway ${taken}`,
        });
      else assign(g, address);
    }
  }
  const free = (a: string) => inPool.has(a) && !reserved.has(a) && !holder.has(a);
  const fresh: Gateway[] = [];
  for (const g of rest) {
    const kept = g.statusAddresses.find(free);
    if (kept === undefined) fresh.push(g);
    else assign(g, kept);
  }
  for (const g of fresh) {
    const address = pool.find(free);
    if (address === undefined)
      verdicts.set(key(g.meta), {
        kind: 'exhausted',
        message: `every address of --gateway-addresses (${pool.length}) is in use by another Gateway`,
      });
    else assign(g, address);
  }
  return verdicts;
}
