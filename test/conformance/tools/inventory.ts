/**
 * Writes test/conformance/inventory.json from a gateway-api checkout's conformance/tests and pkg/features (Apache-2.0):
 * every test whose ShortName starts with HTTPRoute, Gateway, GRPC, TLSRoute, TCPRoute, UDPRoute, BackendTLSPolicy or
 * ListenerSet, its features, whether they are all core features of a profile (GATEWAY-HTTP, -GRPC, -TLS, -TCP, -UDP,
 * per conformance/utils/suite/profiles.go), and which of those profiles it belongs to; and copies the tests' manifests and conformance/base/manifests.yaml to
 * test/conformance/manifests/, each under a header naming its source. Run: `npx tsx test/conformance/tools/inventory.ts <bare repo dir> <tag>`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';

const [repo, tag] = process.argv.slice(2);
if (!repo || !tag) throw new Error('usage: inventory.ts <gateway-api git dir> <tag>');
const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
const show = (path: string) => git('show', `${tag}:${path}`);

// constant name → feature name, and var name (XFeature) → constant name
const constants = new Map<string, string>();
const vars = new Map<string, string>();
const sets = new Map<string, string[]>();
for (const file of git('ls-tree', '--name-only', tag, 'pkg/features/')
  .split('\n')
  .filter((f) => f.endsWith('.go'))) {
  const text = show(file);
  for (const m of text.matchAll(/^\s*(Support\w+)(?:\s+FeatureName)?\s*=\s*"([^"]+)"/gm)) constants.set(m[1]!, m[2]!);
  for (const m of text.matchAll(/^\s*(?:var\s+)?(\w+)\s*=\s*Feature\{\s*Name:\s*(Support\w+)/gm))
    vars.set(m[1]!, m[2]!);
  for (const m of text.matchAll(/^var (\w+Features) = sets\.New\(([^)]*)\)/gm))
    sets.set(
      m[1]!,
      [...m[2]!.matchAll(/(\w+)/g)].map((v) => constants.get(vars.get(v[1]!) ?? '') ?? v[1]!),
    );
}
const setOf = (...names: string[]) => new Set(names.flatMap((n) => sets.get(n) ?? []));
const profiles = {
  'GATEWAY-HTTP': {
    core: new Set(['Gateway', 'ReferenceGrant', 'HTTPRoute']),
    extended: setOf(
      'GatewayExtendedFeatures',
      'HTTPRouteExtendedFeatures',
      'BackendTLSPolicyCoreFeatures',
      'BackendTLSPolicyExtendedFeatures',
    ),
  },
  'GATEWAY-GRPC': {
    core: new Set(['Gateway', 'ReferenceGrant', 'GRPCRoute']),
    extended: setOf('GatewayExtendedFeatures'),
  },
  'GATEWAY-TLS': {
    core: new Set(['Gateway', 'ReferenceGrant', 'TLSRoute']),
    extended: setOf('GatewayExtendedFeatures', 'TLSRouteExtendedFeatures'),
  },
  'GATEWAY-TCP': {
    core: new Set(['Gateway', 'ReferenceGrant', 'TCPRoute']),
    extended: setOf('GatewayExtendedFeatures', 'TCPRouteExtendedFeatures'),
  },
  'GATEWAY-UDP': {
    // UDPRouteFeatures holds the core feature itself, as profiles.go lists it among the extended ones
    core: new Set(['Gateway', 'ReferenceGrant', 'UDPRoute']),
    extended: setOf('GatewayExtendedFeatures'),
  },
};

const tests = [];
for (const file of git('ls-tree', '--name-only', tag, 'conformance/tests/')
  .split('\n')
  .filter((f) => f.endsWith('.go'))) {
  const text = show(file);
  for (const m of text.matchAll(/(?:confsuite|suite)\.ConformanceTest\{([\s\S]*?)\n\tTest:/g)) {
    const body = m[1]!;
    const name = /ShortName:\s*"(\w+)"/.exec(body)?.[1];
    if (!name || !/^(HTTPRoute|Gateway|GRPC|TLSRoute|TCPRoute|UDPRoute|BackendTLSPolicy|ListenerSet)/.test(name))
      continue;
    const featureBlock = /Features:\s*\[\]features\.FeatureName\{([^}]*)\}/.exec(body)?.[1] ?? '';
    const features = [...featureBlock.matchAll(/features\.(\w+)/g)].map((f) => constants.get(f[1]!) ?? f[1]!);
    const manifests = [...(/Manifests:\s*\[\]string\{([^}]*)\}/.exec(body)?.[1] ?? '').matchAll(/"([^"]+)"/g)].map(
      (x) => `conformance/${x[1]}`,
    );
    const inProfiles = Object.entries(profiles)
      .filter(([, p]) => features.every((f) => p.core.has(f) || p.extended.has(f)))
      .map(([p]) => p);
    const core = inProfiles.some((p) => features.every((f) => profiles[p as keyof typeof profiles].core.has(f)));
    tests.push({
      name,
      source: file,
      features,
      core,
      profiles: inProfiles,
      manifests,
      provisional: /Provisional:\s*true/.test(body),
    });
  }
}
tests.sort((a, b) => a.name.localeCompare(b.name));
const out = {
  source: 'github.com/kubernetes-sigs/gateway-api',
  tag,
  licence: 'Apache-2.0',
  generatedBy: 'test/conformance/tools/inventory.ts',
  profiles: Object.fromEntries(
    Object.entries(profiles).map(([k, v]) => [k, { core: [...v.core].sort(), extended: [...v.extended].sort() }]),
  ),
  tests,
};
const dir = new URL('../manifests/', import.meta.url);
mkdirSync(dir, { recursive: true });
for (const path of new Set(['conformance/base/manifests.yaml', ...tests.flatMap((t) => t.manifests)])) {
  const header = [
    `# Source: github.com/kubernetes-sigs/gateway-api ${tag} ${path}`,
    '# Copyright The Kubernetes Authors. Licensed under the Apache License, Version 2.0',
    '# (http://www.apache.org/licenses/LICENSE-2.0); copied unchanged below this header as test data.',
  ].join('\n');
  const name = path === 'conformance/base/manifests.yaml' ? 'base.yaml' : path.split('/').at(-1)!;
  writeFileSync(new URL(name, dir), `${header}\n${show(path)}`);
}
writeFileSync(new URL('../inventory.json', import.meta.url), `${JSON.stringify(out, null, 2)}\n`);
console.log(`${tests.length} tests, ${tests.filter((t) => t.core).length} core`);
