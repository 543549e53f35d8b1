/**
 * The image's SBOM, SPDX 2.3 JSON (what Trivy, Grype and the SPDX tools read), written from what is in the image:
 * the Debian packages dpkg installed in the root filesystem (its status file), the npm packages `npm ci` installed
 * in /app/node_modules (its .package-lock.json), and the Node binary. Each package carries a purl, the identifier
 * scanners match advisories by. Deterministic: the same image gives the same document.
 *   node scripts/image/sbom.ts --rootfs DIR --app DIR --node FILE --name N --version V --created ISO > file.spdx.json
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    rootfs: { type: 'string' },
    app: { type: 'string' },
    node: { type: 'string' },
    name: { type: 'string' },
    version: { type: 'string' },
    created: { type: 'string' },
  },
});
const need = (key: keyof typeof values): string => {
  const value = values[key];
  if (!value) throw new Error(`sbom: --${key} is required`);
  return value;
};

interface SpdxPackage {
  SPDXID: string;
  name: string;
  versionInfo: string;
  supplier?: string;
  downloadLocation: string;
  filesAnalyzed: false;
  licenseConcluded: string;
  licenseDeclared: string;
  copyrightText: string;
  primaryPackagePurpose: string;
  checksums?: { algorithm: string; checksumValue: string }[];
  sourceInfo?: string;
  externalRefs?: { referenceCategory: string; referenceType: string; referenceLocator: string }[];
}

const purlRef = (locator: string) => [
  { referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: locator },
];
/** spdxId keeps the characters an SPDXID allows. */
const spdxId = (kind: string, name: string) => `SPDXRef-${kind}-${name.replace(/[^A-Za-z0-9.-]/g, '-')}`;
const pkg = (
  fields: Omit<SpdxPackage, 'filesAnalyzed' | 'copyrightText' | 'downloadLocation'> & { downloadLocation?: string },
): SpdxPackage => ({
  downloadLocation: 'NOASSERTION',
  filesAnalyzed: false,
  copyrightText: 'NOASSERTION',
  ...fields,
});

/** Debian: every package dpkg lists as installed, from /var/lib/dpkg/status (what dpkg-query -W reads). */
const rootfs = need('rootfs');
const debianVersion = readFileSync(join(rootfs, 'etc/debian_version'), 'utf8').trim();
const distro = `debian-${debianVersion}`;
const debs = readFileSync(join(rootfs, 'var/lib/dpkg/status'), 'utf8')
  .split(/\n\n+/)
  .map((paragraph) => {
    const fields = new Map<string, string>();
    for (const line of paragraph.split('\n')) {
      const at = line.indexOf(': ');
      if (at > 0 && !line.startsWith(' ')) fields.set(line.slice(0, at), line.slice(at + 2));
    }
    return fields;
  })
  .filter((f) => f.get('Status') === 'install ok installed')
  .map((f) => {
    const name = f.get('Package') ?? '';
    const version = f.get('Version') ?? '';
    const arch = f.get('Architecture') ?? '';
    // Source: "name" or "name (version)"; scanners match Debian's advisories by source package.
    const [sourceName, sourceVersion] = (f.get('Source') ?? name).split(/ \(|\)/);
    const upstream = `${sourceName}@${sourceVersion ?? version}`;
    return pkg({
      SPDXID: spdxId('deb', `${name}-${arch}`),
      name,
      versionInfo: version,
      supplier: `Organization: ${(f.get('Maintainer') ?? 'Debian').replace(/\s+/g, ' ')}`,
      licenseConcluded: 'NOASSERTION',
      licenseDeclared: 'NOASSERTION',
      primaryPackagePurpose: 'LIBRARY',
      sourceInfo: `built package from: ${upstream}`,
      externalRefs: purlRef(
        `pkg:deb/debian/${encodeURIComponent(name)}@${encodeURIComponent(version)}?arch=${arch}&distro=${distro}` +
          (sourceName === name ? '' : `&upstream=${encodeURIComponent(sourceName ?? name)}`),
      ),
    });
  })
  .sort((a, b) => a.SPDXID.localeCompare(b.SPDXID));

/** npm: every package `npm ci --omit=dev` installed, from node_modules/.package-lock.json. */
interface LockEntry {
  version?: string;
  license?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
}
const lock = JSON.parse(readFileSync(join(need('app'), 'node_modules/.package-lock.json'), 'utf8')) as {
  packages: Record<string, LockEntry>;
};
const simpleLicense = /^[A-Za-z0-9.+-]+( (OR|AND) [A-Za-z0-9.+-]+)*$/;
const npms = Object.entries(lock.packages)
  .filter(([path, entry]) => path.includes('node_modules/') && entry.version && !entry.link)
  .map(([path, entry]) => {
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const version = entry.version ?? '';
    const license = entry.license && simpleLicense.test(entry.license) ? entry.license : 'NOASSERTION';
    const [algorithm, digest] = (entry.integrity ?? '').split('-');
    const purlName = name.startsWith('@') ? `%40${name.slice(1)}` : name;
    return pkg({
      SPDXID: spdxId('npm', `${name}-${version}-${path.split('node_modules/').length - 1}-${path.length}`),
      name,
      versionInfo: version,
      downloadLocation: entry.resolved ?? 'NOASSERTION',
      licenseConcluded: 'NOASSERTION',
      licenseDeclared: license,
      primaryPackagePurpose: 'LIBRARY',
      ...(algorithm === 'sha512' && digest
        ? { checksums: [{ algorithm: 'SHA512', checksumValue: Buffer.from(digest, 'base64').toString('hex') }] }
        : {}),
      externalRefs: purlRef(`pkg:npm/${purlName}@${encodeURIComponent(version)}`),
    });
  })
  .sort((a, b) => a.SPDXID.localeCompare(b.SPDXID));

/** Node: the binary in /usr/local/bin, by the version it reports and its digest. */
const nodeFile = need('node');
const nodeVersion = execFileSync(nodeFile, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '');
const nodePkg = pkg({
  SPDXID: 'SPDXRef-node',
  name: 'node',
  versionInfo: nodeVersion,
  downloadLocation: `https://nodejs.org/dist/v${nodeVersion}/`,
  licenseConcluded: 'NOASSERTION',
  licenseDeclared: 'MIT',
  primaryPackagePurpose: 'APPLICATION',
  checksums: [
    { algorithm: 'SHA256', checksumValue: createHash('sha256').update(readFileSync(nodeFile)).digest('hex') },
  ],
  externalRefs: purlRef(`pkg:generic/node@${nodeVersion}?download_url=https://nodejs.org/dist/v${nodeVersion}/`),
});

const name = need('name');
const version = need('version');
const image = pkg({
  SPDXID: 'SPDXRef-image',
  name,
  versionInfo: version,
  licenseConcluded: 'NOASSERTION',
  licenseDeclared: 'Apache-2.0',
  primaryPackagePurpose: 'CONTAINER',
  externalRefs: purlRef(`pkg:oci/${name}@${version}`),
});
const os = pkg({
  SPDXID: 'SPDXRef-os-debian',
  name: 'debian',
  versionInfo: debianVersion,
  licenseConcluded: 'NOASSERTION',
  licenseDeclared: 'NOASSERTION',
  primaryPackagePurpose: 'OPERATING-SYSTEM',
});

const packages = [image, os, nodePkg, ...debs, ...npms];
const digest = createHash('sha256').update(JSON.stringify(packages)).digest('hex').slice(0, 32);
const document = {
  spdxVersion: 'SPDX-2.3',
  dataLicense: 'CC0-1.0',
  SPDXID: 'SPDXRef-DOCUMENT',
  name: `${name}-${version}`,
  documentNamespace: `https://ingress-actors.github.io/spdx/${name}-${version}-${digest}`,
  creationInfo: { created: need('created'), creators: ['Tool: ingress-actors-scripts-image-sbom'] },
  packages,
  relationships: [
    { spdxElementId: 'SPDXRef-DOCUMENT', relationshipType: 'DESCRIBES', relatedSpdxElement: image.SPDXID },
    ...packages
      .filter((p) => p !== image)
      .map((p) => ({ spdxElementId: image.SPDXID, relationshipType: 'CONTAINS', relatedSpdxElement: p.SPDXID })),
    ...debs.map((p) => ({ spdxElementId: os.SPDXID, relationshipType: 'CONTAINS', relatedSpdxElement: p.SPDXID })),
  ],
};
process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
