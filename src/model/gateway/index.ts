/** The Gateway API core: typed readers, hostname intersection, precedence, routes and status. */
export * from './build.js';
export * from './routes.js';
export { gatewayInputOf } from './input.js';
export { gatewayModel } from './nginx.js';
export { compareHostnames, intersectHostnames } from './hostnames.js';
export { comparePrecedence, type Ranked } from './precedence.js';
export * from './read.js';
export type { Invalid } from './read-fields.js';
export { checkDuration, MAX_MIRRORS, REDIRECT_CODES } from './read-rule.js';
export { isGranted, selectorMatches } from './refs.js';
export * from './types.js';
