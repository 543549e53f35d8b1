/**
 * What caused a sync, and so a reload or a push, in words an operator reads in the log and on the status page:
 * `Ingress default/app changed`, `EndpointSlice shop/web-x7k2p changed (3 more)`, `template`, `start`.
 */

/** CHANGES_KEPT is how many distinct changes a sync queue remembers between two syncs; the rest are only counted. */
export const CHANGES_KEPT = 8;

/** ChangeList is what changed since the last sync started: the first distinct changes, and how many more came. */
export interface ChangeList {
  /** distinct labels, oldest first (`Ingress default/app`, `template`, …), at most CHANGES_KEPT */
  readonly labels: readonly string[];
  /** changes beyond `labels` (repeats of a kept label are not counted) */
  readonly more: number;
}

/** NO_CHANGES is an empty ChangeList. */
export const NO_CHANGES: ChangeList = Object.freeze({ labels: Object.freeze([]), more: 0 });

/** addChange records one change in a list; it stays small however many come. */
export function addChange(list: ChangeList, label: string): ChangeList {
  if (list.labels.includes(label)) return list;
  if (list.labels.length >= CHANGES_KEPT) return { labels: list.labels, more: list.more + 1 };
  return { labels: [...list.labels, label], more: list.more };
}

/** mergeChanges puts back the changes of a sync that failed in front of those that came since. */
export function mergeChanges(earlier: ChangeList, later: ChangeList): ChangeList {
  let merged: ChangeList = { labels: earlier.labels, more: earlier.more + later.more };
  for (const label of later.labels) merged = addChange(merged, label);
  return merged;
}

/** A label naming an object (`Kind namespace/name`) reads "… changed"; others (`template`, `start`) stand alone. */
const OBJECT_LABEL = /^[A-Z][A-Za-z]* \S/;

/**
 * summarizeTrigger says what caused a sync in one short line: its first change, and how many others came with it.
 * An empty list is `sync` (a retry, or a sync nothing in particular asked for).
 */
export function summarizeTrigger(list: ChangeList): string {
  const [first, ...rest] = list.labels;
  if (first === undefined) return 'sync';
  const others = rest.length + list.more;
  const head = OBJECT_LABEL.test(first) ? `${first} changed` : first;
  return others === 0 ? head : `${head} (${others} more)`;
}

/** TRIGGER_MAX is the longest trigger kept: a reload that carries several syncs' triggers is cut there. */
export const TRIGGER_MAX = 200;

/**
 * combineTriggers is the trigger of a config that replaced a queued one before nginx got it: both causes, the
 * earlier first, cut at TRIGGER_MAX characters.
 */
export function combineTriggers(earlier: string | undefined, later: string | undefined): string | undefined {
  if (earlier === undefined || earlier === later) return later;
  if (later === undefined) return earlier;
  const both = `${earlier}; ${later}`;
  return both.length <= TRIGGER_MAX ? both : `${both.slice(0, TRIGGER_MAX - 1)}…`;
}
