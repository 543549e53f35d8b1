/**
 * recheck, the ReDoS checker the regex tests ask, in its pure JavaScript build (RECHECK_SYNC_BACKEND=pure: no Java,
 * no native binary), so its verdict needs nothing but Node.
 */
import { createRequire } from 'node:module';

process.env.RECHECK_SYNC_BACKEND = 'pure';

/** Recheck is the part of recheck's API used here (its own types come with the package). */
interface Recheck {
  checkSync(
    source: string,
    flags: string,
    params?: Record<string, unknown>,
  ): { readonly status: 'safe' | 'vulnerable' | 'unknown'; readonly complexity?: { readonly type: string } };
}

/** checkSync is recheck's synchronous check of `source` with `flags`. */
export const { checkSync } = createRequire(import.meta.url)('recheck') as Recheck;
