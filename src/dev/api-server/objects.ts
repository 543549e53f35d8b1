/**
 * The shape of every stored object (apiVersion, kind, metadata) and the fields of ObjectMeta: a leaf the store, the
 * schema checks and the handlers all read.
 */

/** ObjectMeta is the part of metadata the server reads or sets; the rest passes through. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  generateName?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [key: string]: unknown;
}

/** KubeObject is any stored object: JSON with apiVersion, kind and metadata. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** OBJECT_META_FIELDS are the fields of ObjectMeta: every object's `metadata` keeps these, whatever else it says. */
export const OBJECT_META_FIELDS: readonly string[] = [
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
];
