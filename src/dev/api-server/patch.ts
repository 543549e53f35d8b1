/**
 * The three patch formats PATCH accepts: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and
 * strategic merge patch, which client-side `kubectl apply` sends for built-in kinds. The strategic
 * one is merge patch plus its directives (`$patch`, `$setElementOrder/…`, `$retainKeys`,
 * `$deleteFromPrimitiveList/…`) and the merge keys of the lists our kinds have; without those,
 * applying a Service twice would write `$setElementOrder/ports` into the object.
 */
import { ApiError } from './status.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** PatchType is a PATCH request's Content-Type, which decides how the body is applied. */
export type PatchType =
  | 'application/merge-patch+json'
  | 'application/json-patch+json'
  | 'application/strategic-merge-patch+json';

/** PATCH_TYPES are the content types PATCH accepts (server-side apply is not served). */
export const PATCH_TYPES: readonly PatchType[] = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
];

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unprocessable(message: string): ApiError {
  return new ApiError(422, 'Invalid', message);
}

/** mergePatch applies an RFC 7386 merge patch: objects merge, null deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value) as Json;
  }
  return result;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw unprocessable(`JSON pointer must start with '/': ${pointer}`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function containerAt(doc: Json, tokens: string[], pointer: string): Json {
  let node: Json = doc;
  for (const token of tokens) {
    const next: Json | undefined = Array.isArray(node) ? node[Number(token)] : isObject(node) ? node[token] : undefined;
    if (next === undefined) throw unprocessable(`doc is missing path: "${pointer}"`);
    node = next;
  }
  return node;
}

function getAt(doc: Json, pointer: string): Json {
  return containerAt(doc, parsePointer(pointer), pointer);
}

function removeAt(doc: Json, pointer: string): Json {
  const tokens = parsePointer(pointer);
  const last = tokens.pop();
  if (last === undefined) throw unprocessable('cannot remove the whole document');
  const parent = containerAt(doc, tokens, pointer);
  if (Array.isArray(parent)) {
    const index = Number(last);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length)
      throw unprocessable(`doc is missing path: "${pointer}"`);
    return parent.splice(index, 1)[0]!;
  }
  if (!isObject(parent) || !(last in parent)) throw unprocessable(`doc is missing path: "${pointer}"`);
  const removed = parent[last]!;
  delete parent[last];
  return removed;
}

function addAt(doc: Json, pointer: string, value: Json, replace: boolean): Json {
  const tokens = parsePointer(pointer);
  const last = tokens.pop();
  if (last === undefined) return value;
  const parent = containerAt(doc, tokens, pointer);
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : Number(last);
    if (!Number.isInteger(index) || index < 0 || index > parent.length || (replace && index === parent.length)) {
      throw unprocessable(`doc is missing path: "${pointer}"`);
    }
    parent.splice(index, replace ? 1 : 0, value);
  } else if (isObject(parent)) {
    if (replace && !(last in parent)) throw unprocessable(`doc is missing path: "${pointer}"`);
    parent[last] = value;
  } else {
    throw unprocessable(`doc is missing path: "${pointer}"`);
  }
  return doc;
}

interface JsonPatchOp {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

/** jsonPatch applies an RFC 6902 patch (add, remove, replace, move, copy, test), all or nothing. */
export function jsonPatch(target: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw new ApiError(400, 'BadRequest', 'json patch must be a list of operations');
  let doc = structuredClone(target) as Json;
  for (const raw of patch as JsonPatchOp[]) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string')
      throw unprocessable(`invalid json patch operation: ${JSON.stringify(raw)}`);
    switch (raw.op) {
      case 'add':
        doc = addAt(doc, raw.path, structuredClone(raw.value ?? null), false);
        break;
      case 'replace':
        doc = addAt(doc, raw.path, structuredClone(raw.value ?? null), true);
        break;
      case 'remove':
        removeAt(doc, raw.path);
        break;
      case 'move':
        doc = addAt(doc, raw.path, removeAt(doc, raw.from ?? ''), false);
        break;
      case 'copy':
        doc = addAt(doc, raw.path, structuredClone(getAt(doc, raw.from ?? '')), false);
        break;
      case 'test':
        if (JSON.stringify(getAt(doc, raw.path)) !== JSON.stringify(raw.value ?? null))
          throw unprocessable(`testing value ${raw.path} failed`);
        break;
      default:
        throw unprocessable(`Unexpected kind: ${raw.op}`);
    }
  }
  return doc;
}

/** A list merged item by item on this key; '' marks a list of scalars merged as a set. */
type MergeKey = string;

/** The `patchMergeKey`s of the lists of the served kinds (k8s.io/api struct tags). */
const MERGE_KEYS: Record<string, Record<string, MergeKey>> = {
  '*': { 'metadata.ownerReferences': 'uid', 'metadata.finalizers': '' },
  Service: { 'spec.ports': 'port' },
  Node: { 'status.conditions': 'type', 'status.addresses': 'type', 'spec.podCIDRs': '' },
  ValidatingWebhookConfiguration: { webhooks: 'name' },
};

function mergeKeyFor(kind: string, path: string): MergeKey | undefined {
  return MERGE_KEYS[kind]?.[path] ?? MERGE_KEYS['*']![path];
}

function stripDirectives(value: Json): Json {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) if (!key.startsWith('$')) out[key] = stripDirectives(v);
  return out;
}

function mergeList(original: Json | undefined, patch: Json[], kind: string, path: string): Json[] {
  const key = mergeKeyFor(kind, path);
  const base = Array.isArray(original) ? original : [];
  if (key === undefined) return patch.map(stripDirectives);
  if (key === '') {
    const out = [...base];
    for (const item of patch) if (!out.some((o) => JSON.stringify(o) === JSON.stringify(item))) out.push(item);
    return out;
  }
  const out = [...base];
  for (const item of patch) {
    if (!isObject(item)) throw unprocessable(`${path}: expected objects with merge key ${key}`);
    const index = out.findIndex((o) => isObject(o) && JSON.stringify(o[key]) === JSON.stringify(item[key]));
    if (item.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
    } else if (item.$patch === 'replace' || index < 0) {
      if (index >= 0) out[index] = stripDirectives(item);
      else out.push(stripDirectives(item));
    } else {
      out[index] = strategicMerge(out[index], item, kind, path) as Json;
    }
  }
  return out;
}

function orderBy(list: Json[], order: Json[], key: MergeKey | undefined): Json[] {
  const id = (item: Json): string => JSON.stringify(key && isObject(item) ? item[key] : item);
  const rank = new Map(order.map((item, index) => [id(item), index]));
  return [...list].sort((a, b) => (rank.get(id(a)) ?? Infinity) - (rank.get(id(b)) ?? Infinity));
}

/**
 * strategicMerge applies a strategic merge patch to `target` for an object of `kind`. `path` is
 * the dotted field path of `target`, used to find list merge keys; callers start with ''.
 */
export function strategicMerge(target: unknown, patch: unknown, kind: string, path = ''): unknown {
  if (!isObject(patch)) return patch;
  if (patch.$patch === 'replace') return stripDirectives(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  const at = (key: string): string => (path ? `${path}.${key}` : key);
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    if (value === null) delete result[key];
    else if (Array.isArray(value)) result[key] = mergeList(result[key], value, kind, at(key));
    else if (isObject(value) && value.$patch === 'delete') delete result[key];
    else if (isObject(value)) result[key] = strategicMerge(result[key], value, kind, at(key)) as Json;
    else result[key] = value;
  }
  for (const [directive, value] of Object.entries(patch)) {
    const [name, field] = directive.split('/', 2) as [string, string | undefined];
    if (name === '$deleteFromPrimitiveList' && field && Array.isArray(result[field]) && Array.isArray(value)) {
      const drop = new Set(value.map((v) => JSON.stringify(v)));
      result[field] = (result[field] as Json[]).filter((item) => !drop.has(JSON.stringify(item)));
    } else if (name === '$setElementOrder' && field && Array.isArray(result[field]) && Array.isArray(value)) {
      result[field] = orderBy(result[field] as Json[], value, mergeKeyFor(kind, at(field)));
    } else if (name === '$retainKeys' && Array.isArray(value)) {
      const keep = new Set(value.map(String));
      for (const key of Object.keys(result)) if (!keep.has(key) && !(key in patch)) delete result[key];
    }
  }
  return result;
}

/** applyPatch applies a PATCH body of the given content type to the current object. */
export function applyPatch(type: PatchType, target: unknown, patch: unknown, kind: string): unknown {
  switch (type) {
    case 'application/merge-patch+json':
      return mergePatch(target, patch);
    case 'application/json-patch+json':
      return jsonPatch(target, patch);
    case 'application/strategic-merge-patch+json':
      return strategicMerge(target, patch, kind);
  }
}
