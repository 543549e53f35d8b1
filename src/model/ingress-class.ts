import type { Ingress, IngressClass } from './snapshot.js';

/** The legacy class annotation, still honoured as ingress-nginx does. */
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

/** ClassOptions are the flags that decide which Ingresses are this controller's. */
export interface ClassOptions {
  /** `--ingress-class` */
  readonly ingressClass: string;
  /** `--controller-class` */
  readonly controllerClass: string;
  /** `--watch-ingress-without-class` */
  readonly watchIngressWithoutClass: boolean;
}

/**
 * isOurs says whether this controller serves the Ingress: `spec.ingressClassName` naming an
 * IngressClass whose `spec.controller` is ours, else the legacy annotation equal to
 * `--ingress-class`, else (no class at all) only with `--watch-ingress-without-class`.
 */
export function isOurs(ingress: Ingress, classes: ReadonlyMap<string, IngressClass>, options: ClassOptions): boolean {
  const className = ingress.spec?.ingressClassName;
  if (className) return classes.get(className)?.spec?.controller === options.controllerClass;
  const legacy = ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  if (legacy !== undefined) return legacy === options.ingressClass;
  return options.watchIngressWithoutClass;
}
