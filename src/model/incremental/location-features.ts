/**
 * LocationFeatures: whether some location of a build's servers has the WAF, the Core Rule Set or tracing on, what the
 * http level loads only while a location needs it. Counted, and kept from build to build: a change looks at the servers
 * that came and went (listChange), not at every location of 10,000 hosts.
 */
import type { Server } from '../nginx-model.js';
import { listChange } from './list-diff.js';

/** Features says which of them some location has. */
export interface Features {
  readonly waf: boolean;
  readonly coreRules: boolean;
  readonly traced: boolean;
}

export class LocationFeatures {
  private last: readonly Server[] = [];
  private lastAlone: Server | undefined;
  private waf = 0;
  private coreRules = 0;
  private traced = 0;

  /** of counts `servers` (the build's, in its order) and `alone` (the catch-all, kept apart) and says which features some location has. */
  of(servers: readonly Server[], alone?: Server): Features {
    const { gone, came } = listChange(this.last, servers);
    for (const server of gone) this.count(server, -1);
    for (const server of came) this.count(server, 1);
    if (alone !== this.lastAlone) {
      if (this.lastAlone) this.count(this.lastAlone, -1);
      if (alone) this.count(alone, 1);
    }
    this.last = servers;
    this.lastAlone = alone;
    return { waf: this.waf > 0, coreRules: this.coreRules > 0, traced: this.traced > 0 };
  }

  private count(server: Server, sign: 1 | -1): void {
    for (const location of server.locations) {
      if (location.waf !== null) {
        this.waf += sign;
        if (location.waf.coreRules) this.coreRules += sign;
      }
      if (location.tracing !== null) this.traced += sign;
    }
  }
}
