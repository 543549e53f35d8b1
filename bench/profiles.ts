/**
 * The profiles benchmark (issue 29, "Locations become profiles"): how many distinct location profiles
 * (src/render/profile.ts) a configuration has against its locations, and the text N profiles take against today's
 * nginx.conf. Counts and sizes, no timing: for the project's fixtures (each with its own options), for the scale
 * benchmark's 10,000-Ingress mix (bench/fixtures.ts generateCluster), and for that mix with annotations spread over it
 * (bench/fixtures.ts ANNOTATION_MIX). Both the default mode (Lua balancer, request metrics)
 * and `--dynamic-backends=false`.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadManifests } from '../src/manifests/load.js';
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../src/model/build-types.js';
import type { Snapshot } from '../src/model/snapshot.js';
import { PROJECT_ROOT } from '../src/project-root.js';
import { loadTemplate } from '../src/render/load.js';
import { profileCensus } from '../src/render/profile.js';
import { compileLocationRenderer, render, type LocationRenderer, type NginxTemplate } from '../src/render/render.js';
import { issueCertificate } from '../src/tls/issue.js';
import { annotationsOf, generateCluster } from './fixtures.js';

/** The default mode's Lua settings, as the controller passes them (paths do not change the counts). */
const DYNAMIC: Partial<BuildOptions> = {
  dynamic: { modules: [], packagePath: '/lua/?.lua', controlSocket: '/run/ia.sock', requestMetrics: true },
};
const MODES = [
  ['lua', DYNAMIC],
  ['static', {}],
] as const;

function annotated(snapshot: Snapshot): Snapshot {
  return {
    ...snapshot,
    ingresses: snapshot.ingresses.map((ingress, i) => ({
      ...ingress,
      metadata: { ...ingress.metadata, annotations: annotationsOf(i) },
    })),
  };
}

interface Figures {
  locations: number;
  profiles: number;
  /** profiles only one location has: what a change of that location could not reuse */
  loneProfiles: number;
  confBytes: number;
  locationBytes: number;
  profileBytes: number;
}

function measure(snapshot: Snapshot, options: BuildOptions, template: NginxTemplate, one: LocationRenderer): Figures {
  const { model } = buildModel(snapshot, options);
  const census = profileCensus(model, one);
  let locationBytes = 0;
  for (const server of [model.defaultServer, ...model.servers])
    for (const location of server.locations) locationBytes += Buffer.byteLength(one(location, model));
  let profileBytes = 0;
  for (const { text } of census.profiles.values()) profileBytes += Buffer.byteLength(text);
  return {
    locations: census.locations,
    profiles: census.profiles.size,
    loneProfiles: [...census.profiles.values()].filter((p) => p.locations === 1).length,
    confBytes: Buffer.byteLength(render(model, template)),
    locationBytes,
    profileBytes,
  };
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)}KiB`;

function line(name: string, mode: string, f: Figures): string {
  return (
    `bench profiles: set=${name} mode=${mode} locations=${f.locations} profiles=${f.profiles} lone_profiles=${f.loneProfiles} ` +
    `nginx_conf=${kb(f.confBytes)} location_text=${kb(f.locationBytes)} profile_text=${kb(f.profileBytes)} ` +
    `conf_without_locations_plus_profiles=${kb(f.confBytes - f.locationBytes + f.profileBytes)}`
  );
}

/** runProfiles prints, per set and mode, locations against profiles and the sizes side by side. */
export async function runProfiles(n = 10_000): Promise<void> {
  const template = await loadTemplate();
  const one = compileLocationRenderer(template.sources);
  const folder = join(PROJECT_ROOT, 'test', 'fixtures');
  const cases = (await readdir(folder, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  for (const [mode, extra] of MODES) {
    // fixtures: each case is its own configuration (its options), so profiles are counted per case and summed
    const sum: Figures = {
      locations: 0,
      profiles: 0,
      loneProfiles: 0,
      confBytes: 0,
      locationBytes: 0,
      profileBytes: 0,
    };
    for (const name of cases.sort()) {
      const expected = (parse(await readFile(join(folder, name, 'expected.yaml'), 'utf8')) ?? {}) as {
        options?: Partial<BuildOptions>;
      };
      const snapshot = await loadManifests([join(folder, name, 'input.yaml')]);
      const f = measure(snapshot, { ...defaultBuildOptions, ...expected.options, ...extra }, template, one);
      for (const k of Object.keys(sum) as (keyof Figures)[]) sum[k] += f[k];
    }
    console.log(line(`fixtures(${cases.length})`, mode, sum));
  }
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  const plain = generateCluster(n, wildcard);
  for (const [name, snapshot] of [
    [`scale-${n}`, plain],
    [`scale-${n}-annotated`, annotated(plain)],
  ] as const) {
    for (const [mode, extra] of MODES)
      console.log(line(name, mode, measure(snapshot, { ...defaultBuildOptions, ...extra }, template, one)));
  }
}
