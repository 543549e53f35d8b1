/** convert: Ingresses with ingress-nginx annotations → Gateway API objects, and what they cannot express. */
export * from './annotations.js';
export * from './convert.js';
export { convertDocs } from './docs.js';
