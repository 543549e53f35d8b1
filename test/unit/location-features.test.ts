/**
 * LocationFeatures (src/model/incremental/location-features.ts) against a count from scratch: lists of servers as
 * builds hand them over (items replaced, added last, removed; the rest the same objects), whose locations have the
 * WAF, the Core Rule Set or tracing on or not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LocationFeatures } from '../../src/model/incremental/location-features.js';
import type { Server } from '../../src/model/nginx-model.js';

/** a location's three switches: WAF off, on, on with the CRS; traced or not */
const location = fc.record({ waf: fc.constantFrom(0, 1, 2), traced: fc.boolean() });
const server = fc.array(location, { maxLength: 3 }).map(
  (locations) =>
    ({
      locations: locations.map((l) => ({
        waf: l.waf === 0 ? null : { coreRules: l.waf === 2 },
        tracing: l.traced ? { operationName: '' } : null,
      })),
    }) as unknown as Server,
);

const fromScratch = (servers: readonly Server[]) => {
  const all = servers.flatMap((s) => s.locations);
  return {
    waf: all.some((l) => l.waf !== null),
    coreRules: all.some((l) => l.waf?.coreRules === true),
    traced: all.some((l) => l.tracing !== null),
  };
};

/** an edit of the list: replace the item at a place, remove it, or add one last */
const edit = fc.oneof(
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), server }),
  fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('add' as const), server }),
);

describe('LocationFeatures', () => {
  it('says what a count from scratch says, build after build', () => {
    fc.assert(
      fc.property(
        fc.array(server, { maxLength: 8 }),
        fc.array(fc.array(edit, { maxLength: 4 }), { maxLength: 8 }),
        (first, steps) => {
          const features = new LocationFeatures();
          let servers: readonly Server[] = first;
          expect(features.of(servers)).toEqual(fromScratch(servers));
          for (const edits of steps) {
            const next = [...servers];
            for (const e of edits) {
              if (e.kind === 'add') next.push(e.server);
              else if (next.length > 0 && e.kind === 'replace') next[e.at % next.length] = e.server;
              else if (next.length > 0) next.splice(e.at % next.length, 1);
            }
            servers = next;
            expect(features.of(servers)).toEqual(fromScratch(servers));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
