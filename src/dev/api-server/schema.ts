/**
 * A CRD version's openAPIV3Schema applied to its objects as kube-apiserver's structural schema
 * code does: unknown fields pruned (kept under `x-kubernetes-preserve-unknown-fields`),
 * `default` values filled in (on writes and on reads), and validation of the cheap, linear rules:
 * type, nullable, required, enum, minLength/maxLength, minItems/maxItems,
 * minProperties/maxProperties, minimum/maximum, and `pattern` when the pattern lies in the
 * project's safe regex subset (src/model/regex-path.ts), run by V8's linear-time engine (the `l`
 * flag), so no value can make a pattern backtrack; a pattern outside the subset is skipped. Not
 * evaluated: CEL `x-kubernetes-validations`, `format`, `anyOf`/`oneOf`/`allOf`/`not`,
 * `uniqueItems`, list-type and map keys. Every walk visits each value once.
 */
import { setFlagsFromString } from 'node:v8';
import { MAX_REGEX_PATH, regexSyntaxRefusal } from '../../model/regex-path.js';
import { OBJECT_META_FIELDS } from './objects.js';
import type { StatusCause } from './status.js';

type Obj = Record<string, unknown>;
/** Schema is one node of an openAPIV3Schema, untrusted JSON. */
type Schema = Obj;

const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);
const schemaAt = (value: unknown): Schema | undefined => (isObj(value) ? value : undefined);

/** The fields of ObjectMeta: a custom resource's `metadata` keeps these, whatever its schema says. */
const OBJECT_META = new Set(OBJECT_META_FIELDS);

const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);

function preserves(schema: Schema): boolean {
  return schema['x-kubernetes-preserve-unknown-fields'] === true;
}

/** An embedded resource and the root keep apiVersion, kind and metadata (ObjectMeta fields only). */
function pruneMeta(object: Obj, path: string, unknown: string[]): void {
  const metadata = object.metadata;
  if (!isObj(metadata)) return;
  for (const key of Object.keys(metadata)) {
    if (OBJECT_META.has(key)) continue;
    unknown.push(join(join(path, 'metadata'), key));
    delete metadata[key];
  }
}

/** pruneValue prunes `value` under `schema`; `root` is the object itself, which is embedded like an embedded resource. */
function pruneValue(value: unknown, schema: Schema | undefined, path: string, unknown: string[], root = false): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    const items = schemaAt(schema.items);
    value.forEach((item, i) => {
      pruneValue(item, items, `${path}[${i}]`, unknown);
    });
    return;
  }
  if (!isObj(value)) return;
  const properties = schemaAt(schema.properties) ?? {};
  const additional = schemaAt(schema.additionalProperties);
  const embedded = root || schema['x-kubernetes-embedded-resource'] === true;
  if (embedded) pruneMeta(value, path, unknown);
  for (const key of Object.keys(value)) {
    if (embedded && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) continue;
    const inner = schemaAt(properties[key]) ?? additional;
    if (inner) pruneValue(value[key], inner, join(path, key), unknown);
    else if (!preserves(schema) && schema.additionalProperties !== true) {
      unknown.push(join(path, key));
      delete value[key];
    }
  }
}

/**
 * pruneUnknown removes, in place, the fields of a custom resource its schema does not declare and
 * returns their paths (`spec.foo`), for `fieldValidation` to warn about or refuse.
 */
export function pruneUnknown(object: Obj, schema: unknown): string[] {
  const root = schemaAt(schema);
  const unknown: string[] = [];
  if (root) pruneValue(object, root, '', unknown, true);
  else pruneMeta(object, '', unknown);
  return unknown;
}

function defaultValue(value: unknown, schema: Schema | undefined): void {
  if (!schema) return;
  if (Array.isArray(value)) {
    const items = schemaAt(schema.items);
    for (const item of value) defaultValue(item, items);
    return;
  }
  if (!isObj(value)) return;
  const properties = schemaAt(schema.properties) ?? {};
  for (const [key, raw] of Object.entries(properties)) {
    const prop = schemaAt(raw);
    if (!prop) continue;
    // A null in a field that is not nullable is dropped first, then defaulted, as kube-apiserver does.
    if (value[key] === null && prop.nullable !== true) delete value[key];
    if (value[key] === undefined && prop.default !== undefined) value[key] = structuredClone(prop.default);
  }
  const additional = schemaAt(schema.additionalProperties);
  for (const [key, inner] of Object.entries(value)) defaultValue(inner, schemaAt(properties[key]) ?? additional);
}

/** applyDefaults fills, in place, the `default` values of a custom resource's schema (metadata has none). */
export function applyDefaults(object: Obj, schema: unknown): void {
  const root = schemaAt(schema);
  if (!root) return;
  const { metadata, ...rest } = object;
  defaultValue(rest, root);
  for (const key of Object.keys(rest)) object[key] = rest[key];
  if (metadata !== undefined) object.metadata = metadata;
}

/** Compiled `pattern`s; null for one outside the safe subset, which is skipped. */
const PATTERNS = new Map<string, RegExp | null>();

let linearEngine = false;

/**
 * linear compiles a pattern for V8's linear-time engine (automaton-based, no backtracking), which
 * the `l` flag selects once --enable-experimental-regexp-engine is set; it only makes that flag
 * available and changes no other RegExp. Null when the engine refuses the pattern.
 */
function linear(pattern: string): RegExp | null {
  if (!linearEngine) {
    setFlagsFromString('--enable-experimental-regexp-engine');
    linearEngine = true;
  }
  try {
    return new RegExp(pattern, 'l');
  } catch {
    return null;
  }
}

function patternOf(pattern: string): RegExp | null {
  let compiled = PATTERNS.get(pattern);
  if (compiled === undefined) {
    compiled = pattern.length <= MAX_REGEX_PATH && regexSyntaxRefusal(pattern) === null ? linear(pattern) : null;
    if (PATTERNS.size < 10_000) PATTERNS.set(pattern, compiled);
  }
  return compiled;
}

/** patternChecked says whether validation runs a schema `pattern` (it lies in the safe subset) or skips it. */
export function patternChecked(pattern: string): boolean {
  return patternOf(pattern) !== null;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function hasType(value: unknown, schema: Schema): boolean {
  if (schema['x-kubernetes-int-or-string'] === true)
    return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
  switch (schema.type) {
    case 'object':
      return isObj(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    default:
      return true;
  }
}

/** show renders a value in a message as kube-apiserver's field errors do: strings quoted, others as JSON. */
const show = (value: unknown): string => JSON.stringify(value);

function validateValue(value: unknown, schema: Schema | undefined, path: string, causes: StatusCause[]): void {
  if (!schema) return;
  if (value === null) {
    if (schema.nullable === true || schema.type === undefined) return;
    causes.push({
      reason: 'FieldValueTypeInvalid',
      field: path,
      message: `Invalid value: "null": ${path} in body must be of type ${String(schema.type)}: "null"`,
    });
    return;
  }
  if (!hasType(value, schema)) {
    const actual = typeName(value);
    const expected = schema['x-kubernetes-int-or-string'] === true ? 'integer,string' : String(schema.type);
    causes.push({
      reason: 'FieldValueTypeInvalid',
      field: path,
      message: `Invalid value: "${actual}": ${path} in body must be of type ${expected}: "${actual}"`,
    });
    return;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((allowed) => JSON.stringify(allowed) === JSON.stringify(value))) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: path,
      message: `Unsupported value: ${show(value)}: supported values: ${schema.enum.map(show).join(', ')}`,
    });
  }
  if (typeof value === 'string') validateString(value, schema, path, causes);
  else if (typeof value === 'number') validateNumber(value, schema, path, causes);
  else if (Array.isArray(value)) {
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems)
      causes.push({
        reason: 'FieldValueTooMany',
        field: path,
        message: `Too many: ${value.length}: must have at most ${schema.maxItems} items`,
      });
    if (typeof schema.minItems === 'number' && value.length < schema.minItems)
      causes.push({
        reason: 'FieldValueInvalid',
        field: path,
        message: `Invalid value: ${value.length}: ${path} in body should have at least ${schema.minItems} items`,
      });
    const items = schemaAt(schema.items);
    value.forEach((item, i) => {
      validateValue(item, items, `${path}[${i}]`, causes);
    });
  } else if (isObj(value)) validateObject(value, schema, path, causes);
}

function validateString(value: string, schema: Schema, path: string, causes: StatusCause[]): void {
  const length = [...value].length;
  if (typeof schema.maxLength === 'number' && length > schema.maxLength)
    causes.push({
      reason: 'FieldValueTooLong',
      field: path,
      message: `Too long: may not be more than ${schema.maxLength} bytes`,
    });
  if (typeof schema.minLength === 'number' && length < schema.minLength)
    causes.push({
      reason: 'FieldValueInvalid',
      field: path,
      message: `Invalid value: ${show(value)}: ${path} in body should be at least ${schema.minLength} chars long`,
    });
  if (typeof schema.pattern === 'string') {
    const pattern = patternOf(schema.pattern);
    if (pattern && !pattern.test(value))
      causes.push({
        reason: 'FieldValueInvalid',
        field: path,
        message: `Invalid value: ${show(value)}: ${path} in body should match '${schema.pattern}'`,
      });
  }
}

function validateNumber(value: number, schema: Schema, path: string, causes: StatusCause[]): void {
  if (typeof schema.minimum === 'number' && value < schema.minimum)
    causes.push({
      reason: 'FieldValueInvalid',
      field: path,
      message: `Invalid value: ${value}: ${path} in body should be greater than or equal to ${schema.minimum}`,
    });
  if (typeof schema.maximum === 'number' && value > schema.maximum)
    causes.push({
      reason: 'FieldValueInvalid',
      field: path,
      message: `Invalid value: ${value}: ${path} in body should be less than or equal to ${schema.maximum}`,
    });
}

function validateObject(value: Obj, schema: Schema, path: string, causes: StatusCause[]): void {
  const count = Object.keys(value).length;
  if (typeof schema.maxProperties === 'number' && count > schema.maxProperties)
    causes.push({
      reason: 'FieldValueTooMany',
      field: path,
      message: `Too many: ${count}: must have at most ${schema.maxProperties} items`,
    });
  if (typeof schema.minProperties === 'number' && count < schema.minProperties)
    causes.push({
      reason: 'FieldValueInvalid',
      field: path,
      message: `Invalid value: ${count}: ${path} in body should have at least ${schema.minProperties} properties`,
    });
  if (Array.isArray(schema.required))
    for (const name of schema.required)
      if (typeof name === 'string' && value[name] === undefined)
        causes.push({ reason: 'FieldValueRequired', field: join(path, name), message: 'Required value' });
  const properties = schemaAt(schema.properties) ?? {};
  const additional = schemaAt(schema.additionalProperties);
  for (const [key, inner] of Object.entries(value))
    validateValue(inner, schemaAt(properties[key]) ?? additional, join(path, key), causes);
}

/**
 * validateCustom checks a custom resource against its schema; each cause names the field as
 * kube-apiserver does (`spec.listeners[0].protocol`). apiVersion, kind and metadata are checked
 * elsewhere (metadata as for every kind), but the root's `required` is checked against the whole
 * object: a schema may require `apiVersion` or `kind`, which every object has.
 */
export function validateCustom(object: Obj, schema: unknown): StatusCause[] {
  const root = schemaAt(schema);
  if (!root) return [];
  const causes: StatusCause[] = [];
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = object;
  const properties = schemaAt(root.properties) ?? {};
  if (Array.isArray(root.required))
    for (const name of root.required)
      if (typeof name === 'string' && object[name] === undefined)
        causes.push({ reason: 'FieldValueRequired', field: name, message: 'Required value' });
  for (const [key, inner] of Object.entries(rest))
    validateValue(inner, schemaAt(properties[key]) ?? schemaAt(root.additionalProperties), key, causes);
  return causes;
}
