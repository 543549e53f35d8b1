/**
 * BalancedUpstreams: the upstreams the servers proxy to, kept from one build to the next. The hosts' tallies say
 * which upstream names, variants and base upstreams came, went or changed since the last build, and only those names
 * are worked out again: one changed Ingress at 10,000 costs its upstreams, not a sort and a walk of all of them.
 */
import { balancedUpstream, type KeptUpstream, plainVariant } from '../annotations/apply.js';
import type { Lookups } from '../lookups.js';
import type { BalancedUpstream, GlobalConfig, Problem } from '../nginx-model.js';
import type { HostTable } from './host-table.js';
import { lowerBound } from '../sorted.js';

/** Balanced is the list (sorted by name) and the problems making it found (ClusterIP ones, by name). */
export interface Balanced {
  readonly upstreams: readonly BalancedUpstream[];
  readonly problems: readonly Problem[];
}

export class BalancedUpstreams {
  /** what the kept state was made from: another host table or config starts afresh */
  private from: { hosts: HostTable; config: GlobalConfig; services: Lookups['services'] } | null = null;
  private readonly kept = new Map<string, KeptUpstream>();
  /** each name's base upstream, and each base's names (variants): a base that changed sends its names back */
  private readonly baseOf = new Map<string, string>();
  private readonly namesOfBase = new Map<string, Set<string>>();
  /** the names balanced over a Service's ClusterIP: worked out again when a Service changed */
  private readonly clusterIpNames = new Set<string>();
  private readonly problemsOf = new Map<string, Problem[]>();
  /** the upstreams by name; copied before a change once handed out */
  private list: BalancedUpstream[] = [];
  private handedOut = false;
  private last: Balanced | null = null;

  of(hosts: HostTable, config: GlobalConfig, services: Lookups['services']): Balanced {
    const proxied = hosts.proxied.takeChanges();
    const variants = hosts.variants.takeChanges();
    const used = hosts.used.takeChanges();
    const from = this.from;
    this.from = { hosts, config, services };
    if (from?.hosts !== hosts || from.config !== config || proxied === null || variants === null || used === null)
      return this.afresh(hosts, config, services);
    const names = new Set([...proxied, ...variants]);
    if (from.services !== services) for (const name of this.clusterIpNames) names.add(name);
    for (const base of used) {
      names.add(base);
      for (const name of this.namesOfBase.get(base) ?? []) names.add(name);
    }
    if (names.size === 0 && this.last) return this.last;
    for (const name of names) this.update(hosts, config, services, name);
    return this.result();
  }

  private afresh(hosts: HostTable, config: GlobalConfig, services: Lookups['services']): Balanced {
    const previous = new Map(this.kept);
    for (const name of [...this.kept.keys()]) this.forget(name);
    this.list = [];
    this.handedOut = false;
    for (const name of [...hosts.proxied.keys()].sort()) {
      const made = this.make(hosts, config, services, name, previous.get(name));
      if (made) this.list.push(made.upstream);
    }
    return this.result();
  }

  /** update works `name` out again and puts it in its place in the list, or takes it out. */
  private update(hosts: HostTable, config: GlobalConfig, services: Lookups['services'], name: string): void {
    const known = this.kept.get(name);
    this.forget(name);
    const made = hosts.proxied.has(name) ? this.make(hosts, config, services, name, known) : null;
    const at = lowerBound(this.list, (u) => u.name < name);
    const present = this.list[at]?.name === name;
    if (made === null ? !present : present && this.list[at] === made.upstream) return;
    if (this.handedOut) {
      this.list = this.list.slice();
      this.handedOut = false;
    }
    if (made === null) this.list.splice(at, 1);
    else if (present) this.list[at] = made.upstream;
    else this.list.splice(at, 0, made.upstream);
  }

  /** make balances `name` (a proxied one) and remembers what it was made from, even when its base is missing. */
  private make(
    hosts: HostTable,
    config: GlobalConfig,
    services: Lookups['services'],
    name: string,
    known: KeptUpstream | undefined,
  ): KeptUpstream | null {
    const v = hosts.variants.get(name) ?? plainVariant(name, config);
    this.baseOf.set(name, v.base);
    let names = this.namesOfBase.get(v.base);
    if (!names) this.namesOfBase.set(v.base, (names = new Set()));
    names.add(name);
    if (v.clusterIp) this.clusterIpNames.add(name);
    const problems: Problem[] = [];
    const made = balancedUpstream(name, v, hosts.used.get(v.base), services, known, problems);
    if (problems.length > 0) this.problemsOf.set(name, problems);
    if (made) this.kept.set(name, made);
    return made;
  }

  private forget(name: string): void {
    this.kept.delete(name);
    this.problemsOf.delete(name);
    this.clusterIpNames.delete(name);
    const base = this.baseOf.get(name);
    if (base === undefined) return;
    this.baseOf.delete(name);
    const names = this.namesOfBase.get(base);
    names?.delete(name);
    if (names?.size === 0) this.namesOfBase.delete(base);
  }

  private result(): Balanced {
    this.handedOut = true;
    const problems = [...this.problemsOf.keys()].sort().flatMap((name) => this.problemsOf.get(name)!);
    this.last = { upstreams: this.list, problems };
    return this.last;
  }
}
