import type { ClassOptions } from './build-types.js';
import type { Ingress, IngressClass } from './snapshot.js';
import { show } from './validate.js';

/** The legacy class annotation, still honoured as ingress-nginx does. */
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

/**
 * isOurs says whether this controller serves the Ingress: `spec.ingressClassName` naming an
 * IngressClass whose `spec.controller` is ours, else the legacy annotation equal to
 * `--ingress-class`, else (no class at all) only with `--watch-ingress-without-class`.
 */
export function isOurs(ingress: Ingress, classes: ReadonlyMap<string, IngressClass>, options: ClassOptions): boolean {
  return whyNotOurs(ingress, classes, options) === null;
}

/** whyNotOurs is isOurs's verdict with its reason: null when the Ingress is ours, else why it is left to others. */
export function whyNotOurs(
  ingress: Ingress,
  classes: ReadonlyMap<string, IngressClass>,
  options: ClassOptions,
): string | null {
  const className = ingress.spec?.ingressClassName;
  if (className) {
    const ingressClass = classes.get(className);
    if (!ingressClass) return `spec.ingressClassName ${show(className)}: IngressClass not found`;
    const controller = ingressClass.spec?.controller;
    return controller === options.controllerClass
      ? null
      : `IngressClass ${show(className)} is another controller's (${show(controller ?? '')}, not ` +
          `${show(options.controllerClass)})`;
  }
  const legacy = ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  if (legacy !== undefined)
    return legacy === options.ingressClass
      ? null
      : `${LEGACY_CLASS_ANNOTATION} ${show(legacy)} is another class (not ${show(options.ingressClass)})`;
  return options.watchIngressWithoutClass
    ? null
    : 'no class (neither spec.ingressClassName nor the kubernetes.io/ingress.class annotation; ' +
        '--watch-ingress-without-class serves it)';
}
