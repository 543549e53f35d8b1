/** The Gateway API core: typed readers, hostname intersection, precedence, routes and status. */
export * from './build.js';
export { compareHostnames, intersectHostnames } from './hostnames.js';
export { comparePrecedence, type Ranked } from './precedence.js';
export * from './read.js';
export { isGranted, selectorMatches } from './refs.js';
export * from './types.js';
