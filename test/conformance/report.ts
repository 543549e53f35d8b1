/**
 * The ConformanceReport (gateway-api conformance/apis/v1, built as conformance/utils/suite/reports.go does): per
 * profile, a test counts as extended when any of its features is not one of the profile's core features; a test
 * whose features are not all supported is not counted at all (NOT_SUPPORTED in Go); skipped and failed tests are
 * listed by name; the provisional tests that passed are listed as succeededProvisionalTests. Why a test was skipped
 * has no field in the format: it goes in a comment above the report.
 */
import { stringify } from 'yaml';

export interface InventoryTest {
  readonly name: string;
  readonly source: string;
  readonly features: readonly string[];
  readonly core: boolean;
  readonly profiles: readonly string[];
  readonly manifests: readonly string[];
  readonly provisional: boolean;
  readonly skip?: string;
}
export interface Inventory {
  readonly tag: string;
  readonly profiles: Readonly<
    Record<string, { readonly core: readonly string[]; readonly extended: readonly string[] }>
  >;
  readonly tests: readonly InventoryTest[];
}

/** Outcome is a test's result; `notSupported` (Go: NOT_SUPPORTED) is a test of a feature not claimed, not counted. */
export type Outcome =
  | { readonly result: 'passed' | 'failed' }
  | { readonly result: 'skipped' | 'notSupported'; readonly reason: string };

interface Status {
  result: 'success' | 'partial' | 'failure';
  statistics: { Passed: number; Skipped: number; Failed: number };
  skippedTests?: string[];
  failedTests?: string[];
}

/** conformanceReport builds the report's YAML text (with a comment saying why each skipped test was skipped). */
export function conformanceReport(
  inventory: Inventory,
  outcomes: ReadonlyMap<string, Outcome>,
  supportedExtended: ReadonlySet<string>,
  meta: {
    version: string;
    date: Date;
    profiles: readonly string[];
    /** extended features not claimed, and why (measured limits): a comment above the report */
    notClaimed?: Readonly<Record<string, string>>;
  },
): string {
  const profiles = meta.profiles.map((name) => {
    const profile = inventory.profiles[name]!;
    const core = new Set(profile.core);
    const supported = new Set([...profile.core, ...supportedExtended]);
    const blank = (): Status => ({ result: 'success', statistics: { Passed: 0, Skipped: 0, Failed: 0 } });
    const levels = { core: blank(), extended: undefined as Status | undefined };
    for (const test of [...inventory.tests].sort((a, b) => a.name.localeCompare(b.name))) {
      if (!test.profiles.includes(name) || !test.features.every((f) => supported.has(f))) continue;
      const outcome = outcomes.get(test.name) ?? { result: 'skipped', reason: 'not run' };
      if (outcome.result === 'notSupported') continue;
      const extended = test.features.some((f) => !core.has(f));
      const level = extended ? (levels.extended ??= blank()) : levels.core;
      if (outcome.result === 'passed') level.statistics.Passed++;
      else if (outcome.result === 'failed') {
        level.statistics.Failed++;
        (level.failedTests ??= []).push(test.name);
      } else {
        level.statistics.Skipped++;
        (level.skippedTests ??= []).push(test.name);
      }
    }
    // the Go struct's field order: result, statistics, skippedTests, failedTests
    const settle = (s: Status): Status => ({
      result: s.statistics.Failed > 0 ? 'failure' : s.statistics.Skipped > 0 ? 'partial' : 'success',
      statistics: s.statistics,
      ...(s.skippedTests ? { skippedTests: s.skippedTests } : {}),
      ...(s.failedTests ? { failedTests: s.failedTests } : {}),
    });
    levels.core = settle(levels.core);
    if (levels.extended) levels.extended = settle(levels.extended);
    const said = (s: Status) =>
      s.result === 'success'
        ? 'succeeded'
        : s.result === 'partial'
          ? `partially succeeded with ${s.statistics.Skipped} test skips`
          : `failed with ${s.statistics.Failed} test failures`;
    const summary = `Core tests ${said(levels.core)}${levels.extended ? `. Extended tests ${said(levels.extended)}` : ''}.`;
    const extendedFeatures = profile.extended;
    return {
      name,
      summary,
      core: levels.core,
      ...(levels.extended
        ? {
            extended: {
              ...levels.extended,
              supportedFeatures: extendedFeatures.filter((f) => supportedExtended.has(f)),
              unsupportedFeatures: extendedFeatures.filter((f) => !supportedExtended.has(f)),
            },
          }
        : {}),
    };
  });
  const succeededProvisional = inventory.tests
    .filter((t) => t.provisional && outcomes.get(t.name)?.result === 'passed')
    .map((t) => t.name)
    .sort();
  const report = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'ConformanceReport',
    implementation: {
      organization: 'ingress-actors',
      project: 'ingress-actors',
      url: 'https://github.com/ingress-actors/ingress-actors',
      version: meta.version,
      contact: ['https://github.com/ingress-actors/ingress-actors/issues'],
    },
    date: meta.date.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    gatewayAPIVersion: inventory.tag,
    mode: 'default',
    gatewayAPIChannel: 'standard',
    profiles,
    // Go: the provisional tests that passed, sorted, when any
    ...(succeededProvisional.length > 0 ? { succeededProvisionalTests: succeededProvisional } : {}),
  };
  const why = (result: 'skipped' | 'notSupported') =>
    [...outcomes.entries()].flatMap(([name, o]) =>
      o.result === result ? [`#   ${name}: ${(o as { reason: string }).reason}`] : [],
    );
  const [skipped, notSupported] = [why('skipped'), why('notSupported')];
  const header = [
    '# Written by test/conformance/conformance.test.ts (the Gateway API conformance tests ported to this suite).',
    ...(skipped.length > 0 ? ['# Skipped tests and why:', ...skipped] : []),
    ...(notSupported.length > 0 ? ['# Not run (a feature not claimed; not counted, as in Go):', ...notSupported] : []),
    ...(Object.keys(meta.notClaimed ?? {}).length > 0
      ? [
          '# Extended features not claimed, and why:',
          ...Object.entries(meta.notClaimed ?? {}).map(([feature, why]) => `#   ${feature}: ${why}`),
        ]
      : []),
  ];
  return `${header.join('\n')}\n${stringify(report)}`;
}
