/**
 * The trigger of a sync, as the logs and the status page show it (machines/trigger.ts): the first change, and how
 * many more came with it, from a list that stays small however many changes come.
 */
import { describe, expect, it } from 'vitest';
import {
  addChange,
  CHANGES_KEPT,
  combineTriggers,
  mergeChanges,
  NO_CHANGES,
  summarizeTrigger,
  TRIGGER_MAX,
  type ChangeList,
} from '../../machines/trigger.js';

const listOf = (...labels: string[]): ChangeList => labels.reduce(addChange, NO_CHANGES);

describe('summarizeTrigger', () => {
  it.each([
    [[], 'sync'],
    [['Ingress default/app'], 'Ingress default/app changed'],
    [['template'], 'template'],
    [['nginx actor restarted'], 'nginx actor restarted'],
    [['EndpointSlice shop/web-x7k2p', 'EndpointSlice shop/web-b2c4d'], 'EndpointSlice shop/web-x7k2p changed (1 more)'],
    [['ConfigMap ingress/config', 'Ingress default/app', 'template'], 'ConfigMap ingress/config changed (2 more)'],
    [['template', 'Ingress default/app'], 'template (1 more)'],
    [['Ingress default/app', 'Ingress default/app', 'Ingress default/app'], 'Ingress default/app changed'],
    [Array.from({ length: 1000 }, (_, i) => `Ingress default/app-${i}`), 'Ingress default/app-0 changed (999 more)'],
  ])('%j → %s', (labels, expected) => {
    expect(summarizeTrigger(listOf(...labels))).toBe(expected);
  });
});

describe('the change list', () => {
  it(`keeps at most ${CHANGES_KEPT} labels and counts the rest`, () => {
    const list = listOf(...Array.from({ length: 50 }, (_, i) => `Service default/s${i}`));
    expect(list.labels).toHaveLength(CHANGES_KEPT);
    expect(list.more).toBe(50 - CHANGES_KEPT);
  });

  it("puts a failed sync's changes first, without repeating a label", () => {
    const merged = mergeChanges(listOf('Ingress a/x', 'Secret a/tls'), listOf('Secret a/tls', 'Service a/web'));
    expect(merged).toEqual({ labels: ['Ingress a/x', 'Secret a/tls', 'Service a/web'], more: 0 });
    expect(summarizeTrigger(merged)).toBe('Ingress a/x changed (2 more)');
  });
});

describe('combineTriggers', () => {
  it.each([
    [undefined, 'start', 'start'],
    ['start', undefined, 'start'],
    ['template', 'template', 'template'],
    ['template', 'Ingress default/app changed', 'template; Ingress default/app changed'],
  ])('%s + %s → %s', (earlier, later, expected) => {
    expect(combineTriggers(earlier, later)).toBe(expected);
  });

  it(`cuts at ${TRIGGER_MAX} characters however many configs replaced one another`, () => {
    let trigger: string | undefined;
    for (let i = 0; i < 500; i++) trigger = combineTriggers(trigger, `Ingress default/app-${i} changed`);
    expect(trigger!.length).toBeLessThanOrEqual(TRIGGER_MAX);
    expect(trigger!.startsWith('Ingress default/app-0 changed; Ingress default/app-1 changed')).toBe(true);
  });
});
