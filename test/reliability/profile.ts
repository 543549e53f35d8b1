/**
 * The reliability suite's two profiles, chosen by `RELIABILITY_PROFILE` (`full`, the default of
 * `npm run test:reliability`, or `ci`, the short run .ci/run does after `npm test`).
 */

/** Profile is how hard each part of the suite pushes. */
export interface Profile {
  readonly name: 'ci' | 'full';
  /** kill -9 cycles of the nginx master */
  readonly nginxKills: number;
  /** API server restarts (pause, writes while down, resume) and how long it stays down */
  readonly apiRestarts: number;
  readonly apiDownMs: number;
  /** rounds of "every watch dropped" (alternately closed and cut) */
  readonly watchDrops: number;
  /** rounds of "history compacted" (dropped watches resume into 410 Gone) */
  readonly compactions: number;
  /** how long the API server answers 500, and then how long it hangs every request */
  readonly apiErrorMs: number;
  /** hostile objects written through the API server */
  readonly hostileObjects: number;
}

const profiles: Record<Profile['name'], Profile> = {
  ci: {
    name: 'ci',
    nginxKills: 5,
    apiRestarts: 2,
    apiDownMs: 1_000,
    watchDrops: 2,
    compactions: 2,
    apiErrorMs: 3_000,
    hostileObjects: 400,
  },
  full: {
    name: 'full',
    nginxKills: 100,
    apiRestarts: 5,
    apiDownMs: 3_000,
    watchDrops: 6,
    compactions: 5,
    apiErrorMs: 30_000,
    hostileObjects: 10_000,
  },
};

/** profile is the profile of this run. */
export const profile: Profile = (() => {
  const name = process.env.RELIABILITY_PROFILE ?? 'full';
  if (name !== 'ci' && name !== 'full')
    throw new Error(`RELIABILITY_PROFILE must be ci or full, not ${JSON.stringify(name)}`);
  return profiles[name];
})();
