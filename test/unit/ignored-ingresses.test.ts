/**
 * Ingresses of other classes are said once per change (src/sync/ignored.ts): a sync that changes nothing of their
 * class verdict says nothing, a new reason or an Ingress that becomes ours says so once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IgnoredIngresses } from '../../src/sync/ignored.js';
import type { Ingress, IngressClass } from '../../src/model/snapshot.js';
import { ingress, ingressClass } from '../support/manifests.js';

const OPTIONS = { ingressClass: 'nginx', controllerClass: 'k8s.io/ingress-nginx', watchIngressWithoutClass: false };
const ofClass = (name: string, className: string) =>
  ({
    ...ingress(name, { 'a.example.com': [{ path: '/', service: 'web' }] }),
    spec: { ingressClassName: className },
  }) as unknown as Ingress;
const classes = [ingressClass()] as unknown as IngressClass[];

describe('IgnoredIngresses', () => {
  it('says each ignored Ingress once, again only when its verdict changes', () => {
    const ignored = new IgnoredIngresses();
    const first = [ofClass('ours', 'nginx'), ofClass('theirs', 'traefik')];
    expect(ignored.update(first, classes, OPTIONS)).toEqual([
      { ingress: 'default/theirs', why: 'spec.ingressClassName "traefik": IngressClass not found' },
    ]);
    // The same lists (nothing changed), and new lists with the same verdicts: nothing to say.
    expect(ignored.update(first, classes, OPTIONS)).toEqual([]);
    expect(ignored.update([...first], [...classes], OPTIONS)).toEqual([]);
    // Its IngressClass appears, another controller's: a new reason.
    const traefik = [...classes, ingressClass('traefik', 'traefik.io/ingress-controller')] as unknown as IngressClass[];
    expect(ignored.update(first, traefik, OPTIONS)).toEqual([
      {
        ingress: 'default/theirs',
        why: 'IngressClass "traefik" is another controller\'s ("traefik.io/ingress-controller", not "k8s.io/ingress-nginx")',
      },
    ]);
    // It moves to our class: said once, as served.
    expect(ignored.update([first[0]!, ofClass('theirs', 'nginx')], traefik, OPTIONS)).toEqual([
      { ingress: 'default/theirs', why: null },
    ]);
  });

  it('forgets a deleted Ingress quietly, and says it again if it comes back ignored', () => {
    const ignored = new IgnoredIngresses();
    const theirs = ofClass('theirs', 'other');
    expect(ignored.update([theirs], classes, OPTIONS)).toHaveLength(1);
    expect(ignored.update([], classes, OPTIONS)).toEqual([]);
    expect(ignored.update([theirs], classes, OPTIONS)).toHaveLength(1);
  });

  it('judges only what changed, as a fresh judge of the whole list would (updates in place, additions, deletions)', () => {
    // Lists change as the cache changes them: an update keeps its place, an addition comes last, a deletion closes up.
    const edit = fc.oneof(
      fc.record({ kind: fc.constant('update' as const), at: fc.nat(), ours: fc.boolean() }),
      fc.record({ kind: fc.constant('add' as const), name: fc.integer({ min: 0, max: 30 }), ours: fc.boolean() }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(edit, { maxLength: 40 }), (edits) => {
        const ignored = new IgnoredIngresses();
        let list: Ingress[] = [];
        for (const e of edits) {
          list = [...list];
          const className = (ours: boolean) => (ours ? 'nginx' : 'other');
          if (e.kind === 'update' && list.length > 0) {
            const at = e.at % list.length;
            list[at] = ofClass(list[at]!.metadata!.name!, className(e.ours));
          } else if (e.kind === 'add' && !list.some((i) => i.metadata?.name === `i${e.name}`))
            list.push(ofClass(`i${e.name}`, className(e.ours)));
          else if (e.kind === 'delete' && list.length > 0) list.splice(e.at % list.length, 1);
          ignored.update(list, classes, OPTIONS);
          const fresh = new IgnoredIngresses();
          fresh.update(list, classes, OPTIONS);
          expect(new Map(ignored.current)).toEqual(new Map(fresh.current));
        }
      }),
    );
  });
});
