/**
 * Per-Gateway addresses (`--gateway-addresses`): each accepted Gateway of ours gets one address of the pool, and
 * nginx listens on `address:port` for its servers, so two Gateways with the same port and hostname stay apart.
 * Pure: the same Gateways and pool always give the same addresses.
 *
 * An address belongs to the Gateway that holds it: a new Gateway never takes an address another one has, even by
 * naming it in `spec.addresses` (it would answer the holder's hostnames). Order:
 * 1. a Gateway whose `status.addresses` already holds a pool address keeps it, when its spec names that address or
 *    none (oldest first, should two hold one), so neither a newer claimant nor a restart moves it, and deleting an
 *    older Gateway moves nobody;
 * 2. a Gateway whose `spec.addresses` names a pool address gets it when no Gateway holds it and no older one named it
 *    first (static);
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
  /** address → the Gateway that has it */
  const holder = new Map<string, Gateway>();
  const assign = (g: Gateway, address: string) => {
    holder.set(address, g);
    verdicts.set(key(g.meta), { kind: 'assigned', address });
  };
  // 1. holders: the address its status shows, when its spec still asks for that one or for any
  const holds = (g: Gateway) => {
    if (g.addresses.length > 1) return undefined;
    const wanted = named(g)[0];
    return g.statusAddresses.find((a) => inPool.has(a) && !holder.has(a) && (wanted === undefined || wanted === a));
  };
  const unheld: Gateway[] = [];
  for (const g of candidates) {
    const held = holds(g);
    if (held === undefined) unheld.push(g);
    else assign(g, held);
  }
  const rest: Gateway[] = [];
  for (const g of unheld) {
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
          // another namespace's Gateway is not named: a tenant learns no other tenant's objects from its status
          message: `spec.addresses: ${address} is in use by ${taken.meta.namespace === g.meta.namespace ? `Gateway ${key(taken.meta)}` : 'a Gateway of another namespace'}, which keeps it`,
        });
      else assign(g, address);
    }
  }
  const free = (a: string) => inPool.has(a) && !reserved.has(a) && !holder.has(a);
  for (const g of rest) {
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
