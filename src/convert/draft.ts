/**
 * The shapes convert builds between reading Ingresses and writing Gateway API objects: an Ingress identified (its
 * name, class and settings), its rules drafted per host, each rule's match, filters and backends.
 */
import type { Ingress } from '../model/snapshot.js';
import type { Settings } from './read-settings.js';

/** Json is one object of a Gateway API spec, as written out. */
export type Json = Record<string, unknown>;

/** Report records one thing convert could not express: the Ingress (`namespace/name`), its field and why. */
export type Report = (owner: string, field: string, reason: string) => void;

/** CATCH_ALL is the host of rules without one: the route has no hostnames. */
export const CATCH_ALL = '';

/** Backend is one backendRef: a Service and port number, weighted when a canary shares the rule. */
export interface Backend {
  readonly name: string;
  readonly port: number;
  weight?: number;
}

/** Rule is one HTTPRoute rule in the making. */
export interface Rule {
  /** `Exact /a`, `PathPrefix /a`, `RegularExpression …`: what a canary's path is matched to */
  readonly key: string;
  readonly match: Json;
  readonly filters: readonly Json[];
  readonly backends: Backend[];
  readonly timeout: string | null;
  /** rules a canary header adds before this one */
  readonly extra: Rule[];
}

/** Draft is the rules of one Ingress for one host: one HTTPRoute (or more, past the CRD's rule limit). */
export interface Draft {
  readonly ingress: Ident;
  readonly host: string;
  readonly rules: Rule[];
}

/** Ident is an Ingress convert keeps: its valid name, its IngressClass and the settings its annotations ask for. */
export interface Ident {
  readonly ingress: Ingress;
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`, as reports name it */
  readonly owner: string;
  readonly className: string;
  readonly settings: Settings;
}
