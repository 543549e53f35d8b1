/** `npm run bench [-- NAME…]` runs the named benchmarks (all by default). Benchmarks print; they never fail CI. */
import { runAdmission } from './admission.js';
import { runAdmissionFlood } from './admission-flood.js';
import { runDataplane } from './dataplane.js';
import { runBursts, runEventToRoute, runFootprint, runTrafficDuringReloads } from './cluster-benches.js';
import { runBadTenant } from './bad-tenant.js';
import { runEndpointToTraffic, runRollingUpdates } from './endpoint-benches.js';
import { runGatewayRouting } from './gateway-routing.js';
import { runGatewayL4 } from './gateway-l4.js';
import { runIncremental } from './incremental.js';
import { runMetricsScrape } from './metrics-scrape.js';
import { runProfiles } from './profiles.js';
import { runRegexPaths } from './regex-paths.js';
import { runRegexHost } from './regex-host.js';
import { runRequestMetrics } from './request-metrics.js';
import { runTracing } from './tracing.js';
import { runRoutesAsData } from './routes-as-data.js';
import { runScale } from './scale.js';
import { runSharePhases } from './share-phases.js';
import { runScaleCertificates } from './scale-certificates.js';
import { runWaf } from './waf.js';

const BENCHMARKS: Record<string, () => Promise<void>> = {
  scale: () => runScale(),
  'scale-certificates': () => runScaleCertificates(),
  incremental: () => runIncremental(),
  'event-to-route': () => runEventToRoute(),
  bursts: () => runBursts(),
  'traffic-during-reloads': () => runTrafficDuringReloads(),
  footprint: () => runFootprint(),
  'bad-tenant': () => runBadTenant(),
  'regex-paths': () => runRegexPaths(),
  'regex-host': () => runRegexHost(),
  'rolling-updates': () => runRollingUpdates(),
  'endpoint-to-traffic': () => runEndpointToTraffic(),
  admission: () => runAdmission(),
  'admission-flood': () => runAdmissionFlood(),
  'request-metrics': () => runRequestMetrics(),
  tracing: () => runTracing(),
  'metrics-scrape': () => runMetricsScrape(),
  'gateway-routing': () => runGatewayRouting(),
  'gateway-l4': () => runGatewayL4(),
  profiles: () => runProfiles(),
  'routes-as-data': () => runRoutesAsData(),
  'share-phases': () => runSharePhases(),
  dataplane: () => runDataplane(),
  waf: () => runWaf(),
};

const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(BENCHMARKS);
for (const name of names) {
  const bench = BENCHMARKS[name];
  if (!bench) {
    console.error(`unknown benchmark ${JSON.stringify(name)}; known: ${Object.keys(BENCHMARKS).join(', ')}`);
    process.exit(2);
  }
  await bench();
}
