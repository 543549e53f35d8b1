/**
 * What an OCI image layout holds, for `npm run image`'s last lines and the README: the manifest's digest, each
 * layer's digest and compressed size, and their sum (what a node pulls).
 *   node scripts/image/figures.ts LAYOUT TAG
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Descriptor {
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}
const [layout, tag] = process.argv.slice(2);
if (!layout || !tag) throw new Error('usage: figures.ts LAYOUT TAG');
const blob = (digest: string) => join(layout, 'blobs', ...digest.split(':'));
const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
const manifest = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
if (!manifest) throw new Error(`no ${tag} in ${layout}`);
const { layers, config } = JSON.parse(readFileSync(blob(manifest.digest), 'utf8')) as {
  layers: Descriptor[];
  config: Descriptor;
};
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
console.log(`manifest ${manifest.digest}`);
console.log(`config   ${config.digest}`);
for (const layer of layers) console.log(`layer    ${layer.digest} ${mib(layer.size)}`);
console.log(`compressed size ${mib(layers.reduce((sum, l) => sum + l.size, 0))}`);
