/**
 * The incremental build is only an optimisation: a build that borrows from the previous one's
 * memo (and a template that keeps partial texts) must give exactly what a fresh build and a
 * freshly compiled template give. fast-check walks sequences of cluster states made from the
 * fixtures' objects: objects removed and added back, replaced by equal copies (new identity,
 * as an informer hands out), Ingresses aged or re-pathed, ConfigMaps and flags switched.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BuildMemo, buildModel, secretsRead } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import type { Ingress, KubeObject, Snapshot } from '../../src/model/snapshot.js';
import { loadManifests } from '../../src/manifests/load.js';
import { DEFAULT_TEMPLATE, readTemplateSources } from '../../src/render/load.js';
import { compileTemplate, render } from '../../src/render/render.js';

const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;
const names = (await readdir(FIXTURES, { withFileTypes: true }))
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
const fixtures = await Promise.all(
  names.map(async (name) => {
    const expected = (parse(await readFile(join(FIXTURES, name, 'expected.yaml'), 'utf8')) ?? {}) as {
      options?: Partial<BuildOptions>;
    };
    return {
      name,
      snapshot: await loadManifests([join(FIXTURES, name, 'input.yaml')]),
      options: { ...defaultBuildOptions, ...expected.options },
    };
  }),
);
const sources = await readTemplateSources(DEFAULT_TEMPLATE);
/** the from-scratch render: no partial's text kept, so it shares nothing with a build but its model */
const oracle = compileTemplate(sources, { keepTexts: false });
const KINDS = ['ingresses', 'ingressClasses', 'services', 'endpointSlices', 'secrets', 'configMaps'] as const;

/**
 * One object of a state: kept as is, left out, copied (same content, new object), for an Ingress
 * aged or given a new path, for a Secret rotated (the next Secret's certificate and key).
 */
type Edit = 'same' | 'absent' | 'copy' | 'older' | 'repath';
const edit = fc.constantFrom<Edit>('same', 'same', 'same', 'absent', 'copy', 'older', 'repath');

function apply(base: Snapshot, edits: readonly Edit[], cache: Map<string, KubeObject>): Snapshot {
  let n = 0;
  const out: Record<string, KubeObject[]> = {};
  for (const kind of KINDS) {
    out[kind] = [];
    for (const [i, object] of (base[kind] as readonly KubeObject[]).entries()) {
      const e = edits[n++ % edits.length]!;
      if (e === 'absent') continue;
      const rotated = kind === 'secrets' && e === 'repath';
      if (e === 'same' || (kind !== 'ingresses' && e !== 'copy' && !rotated)) {
        out[kind].push(object);
        continue;
      }
      // An age or path edit gives the same object again, as a cache does when nothing changed; a copy is new every
      // time.
      const key = `${kind}/${i}/${e}`;
      let changed = e === 'copy' ? undefined : cache.get(key);
      if (!changed) {
        const ingress = object as Ingress;
        const secrets = base.secrets;
        const next: KubeObject | Ingress =
          e === 'copy'
            ? structuredClone(object)
            : rotated
              ? ({ ...object, data: { ...secrets[(i + 1) % secrets.length]!.data } } as KubeObject)
              : e === 'older'
                ? { ...ingress, metadata: { ...ingress.metadata, creationTimestamp: '2001-01-01T00:00:00Z' } }
                : {
                    ...ingress,
                    spec: {
                      ...ingress.spec,
                      rules: (ingress.spec?.rules ?? []).map((r) => ({
                        ...r,
                        http: {
                          paths: [
                            ...(r.http?.paths ?? []),
                            { path: '/added', pathType: 'Prefix', backend: r.http?.paths?.[0]?.backend ?? {} },
                          ],
                        },
                      })),
                    },
                  };
        cache.set(key, (changed = next));
      }
      out[kind].push(changed);
    }
    // An unchanged kind is the same array, as the cache hands it out, so the build may keep its index.
    const before = base[kind] as readonly KubeObject[];
    if (out[kind].length === before.length && out[kind].every((o, i) => o === before[i]))
      out[kind] = before as KubeObject[];
  }
  return out as unknown as Snapshot;
}

describe('an incremental build', () => {
  // Only Secrets moving is the case the build shortcuts most (plans and hosts that named none of
  // them are kept unchecked): every Secret of every fixture, removed, then rotated, alone.
  const withSecrets = fixtures.filter((f) => f.snapshot.secrets.length > 0);
  it.each(withSecrets.map((f) => [f.name, f] as const))(
    'equals a fresh build when only a Secret of %s changes',
    (_, fixture) => {
      const { snapshot: base, options } = fixture;
      base.secrets.forEach((secret, i) => {
        const next = base.secrets[(i + 1) % base.secrets.length]!;
        const states: Snapshot[] = [
          base,
          { ...base, secrets: base.secrets.filter((s) => s !== secret) },
          base,
          {
            ...base,
            secrets: base.secrets.map((s) => (s === secret ? ({ ...s, data: { ...next.data } } as typeof s) : s)),
          },
        ];
        const memo = new BuildMemo();
        for (const snapshot of states) {
          const incremental = buildModel(snapshot, options, memo);
          const freshMemo = new BuildMemo();
          const fresh = buildModel(snapshot, options, freshMemo);
          expect(incremental.problems).toEqual(fresh.problems);
          expect(incremental.model).toEqual(fresh.model);
          expect(secretsRead(memo, options)).toEqual(secretsRead(freshMemo, options));
        }
      });
    },
  );

  it.each(fixtures.map((f) => [f.name, f] as const))('equals a fresh build through changes of %s', (_, fixture) => {
    // kept across runs as the controller keeps it across builds (texts are kept by object, and each run's builds
    // make their own objects)
    const kept = compileTemplate(sources);
    fc.assert(
      fc.property(
        fc.array(fc.array(edit, { minLength: 1, maxLength: 12 }), { minLength: 2, maxLength: 6 }),
        fc.boolean(),
        (states, dropConfigMap) => {
          const memo = new BuildMemo();
          const copies = new Map<string, KubeObject>();
          for (const [step, edits] of states.entries()) {
            const snapshot = apply(fixture.snapshot, edits, copies);
            // Switching a flag half-way must throw the memo's plans away, not reuse them.
            const options =
              dropConfigMap && step % 2 === 1 ? { ...fixture.options, configMap: undefined } : fixture.options;
            const incremental = buildModel(snapshot, options, memo);
            const freshMemo = new BuildMemo();
            const fresh = buildModel(snapshot, options, freshMemo);
            expect(incremental.problems).toEqual(fresh.problems);
            expect(incremental.model).toEqual(fresh.model);
            // the Secrets the watcher is told about, counted plan by plan, as a fresh build reads them
            expect(secretsRead(memo, options)).toEqual(secretsRead(freshMemo, options));
            expect(render(incremental.model, kept)).toBe(render(fresh.model, oracle));
          }
        },
      ),
      { numRuns: Number(process.env.INCREMENTAL_RUNS ?? 8) },
    );
  });
});
