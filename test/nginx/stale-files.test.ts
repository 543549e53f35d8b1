/**
 * The nginx actor's ConfigFolder removes the Secret-derived files no config nginx may still load
 * names, and never one it may. Each "reload" here does what the nginx actor does: stage (write
 * the files, `nginx -t` of the text beside the live nginx.conf, renamed over it only when
 * accepted), then sweep, against the real nginx. The rule: once a config is live, a file goes
 * unless the live nginx.conf names it (or the config the master still serves, after a refusal).
 */
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Certificate } from '../../src/model/nginx-model.js';
import { ConfigFolder } from '../../src/nginx/apply.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { configLayout, writeCertificates } from '../../src/nginx/files.js';
import { workerIdentity } from '../../src/nginx/private-files.js';
import { issueCertificate } from '../../src/tls/issue.js';

let pems: string[];
beforeAll(async () => {
  pems = await Promise.all(
    ['a', 'b', 'c'].map(async (n) => {
      const made = await issueCertificate({ commonName: `${n}.example.com`, dnsNames: [`${n}.example.com`] });
      return made.certPem + made.keyPem;
    }),
  );
});

const cert = (name: string, pem: string): Certificate => ({
  id: `tls/${name}`,
  file: `certificates/tls_${name}.pem`,
  pem,
});
const auth = (name: string, users = 'user:$apr1$abc$abcdefghijklmnopqrstu.\n'): Certificate => ({
  id: `auth/${name}`,
  file: `auth/auth_${name}.htpasswd`,
  pem: users,
});

/**
 * conf is a config naming the files as the template does: a TLS server per certificate, a location per htpasswd file.
 */
function conf(files: readonly Certificate[], refused = false): string {
  const servers = files
    .filter((f) => f.file.startsWith('certificates/'))
    .map(
      (f, i) =>
        `  server { listen 127.0.0.1:${41000 + i} ssl; server_name s${i}; ssl_certificate "${f.file}"; ` +
        `ssl_certificate_key "${f.file}"; }\n`,
    );
  const locations = files
    .filter((f) => f.file.startsWith('auth/'))
    .map((f, i) => `    location /a${i} { auth_basic "r"; auth_basic_user_file "${f.file}"; }\n`);
  return [
    'pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n',
    '  client_body_temp_path tmp/client-body; proxy_temp_path tmp/proxy; fastcgi_temp_path tmp/fastcgi; ' +
      'uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;\n',
    '  access_log off;\n',
    `  server { listen 127.0.0.1:40999; server_name _;\n${locations.join('')}  }\n`,
    ...servers,
    refused ? '  bogus_directive on;\n' : '',
    '}\n',
  ].join('');
}

let dir: string;
let folder: ConfigFolder;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-stale-'));
  folder = new ConfigFolder(nginxBinary(), dir);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/**
 * sync is one reload of the nginx actor: stage the config and its files, then sweep; returns what went and whether
 * nginx took it.
 */
async function sync(
  files: readonly Certificate[],
  options: { refused?: boolean; serving?: readonly Certificate[] } = {},
): Promise<{ removed: string[]; live: boolean }> {
  const staged = await folder.stage({ config: conf(files, options.refused), files });
  const removed = await folder.sweep(staged.ok ? [] : (options.serving ?? []));
  return { removed, live: staged.ok };
}

const exists = (file: string) =>
  lstat(join(dir, file)).then(
    () => true,
    () => false,
  );
/** what a master restarted now (after kill -9) would do first: load nginx.conf */
const restartWouldLoad = async () => (await testConfig(nginxBinary(), dir, join(dir, 'nginx.conf'))).ok;

describe("the nginx actor's ConfigFolder", () => {
  it('writes the files and folders as ConfigLayout says, and removes nothing while they are named', async () => {
    const files = [cert('a', pems[0]!), auth('x')];
    const layout = configLayout(await workerIdentity());
    expect(await sync(files)).toEqual({ removed: [], live: true });
    expect((await stat(join(dir, 'certificates/tls_a.pem'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'auth/auth_x.htpasswd'))).mode & 0o777).toBe(layout.files.auth.mode);
    expect((await stat(join(dir, 'certificates'))).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, 'auth'))).mode & 0o777).toBe(layout.folders.auth.mode);
    expect(await sync(files)).toEqual({ removed: [], live: true });
    expect(await readFile(join(dir, 'certificates/tls_a.pem'), 'utf8')).toBe(pems[0]);
  });

  it('finding 3 (low): a deleted Secret’s files are gone with the reload that drops them', async () => {
    await sync([cert('a', pems[0]!), cert('b', pems[1]!), auth('x')]);
    expect(await sync([cert('a', pems[0]!)])).toEqual({
      removed: ['auth/auth_x.htpasswd', 'certificates/tls_b.pem'],
      live: true,
    });
    expect(await readdir(join(dir, 'certificates'))).toEqual(['tls_a.pem']);
    expect(await readdir(join(dir, 'auth'))).toEqual([]);
    expect(await sync([cert('a', pems[0]!)])).toEqual({ removed: [], live: true });
    expect(await restartWouldLoad()).toBe(true);
  });

  it(
    'never removes a file of the live config while nginx refuses the configs after it; a refused config’s own ' +
      'files go',
    async () => {
      const first = [cert('a', pems[0]!), cert('b', pems[1]!), auth('x')];
      await sync(first);
      const live = await readFile(join(dir, 'nginx.conf'), 'utf8');
      for (let i = 0; i < 4; i++) {
        const { removed, live: took } = await sync([cert('a', pems[0]!), cert('c', pems[2]!)], {
          refused: true,
          serving: first,
        });
        expect({ removed, took }).toEqual({ removed: ['certificates/tls_c.pem'], took: false });
        expect(await readFile(join(dir, 'nginx.conf'), 'utf8')).toBe(live);
        expect(await exists('certificates/tls_b.pem')).toBe(true);
        expect(await exists('auth/auth_x.htpasswd')).toBe(true);
        // A master restarted now loads the old config: every file it names is still there.
        expect(await restartWouldLoad()).toBe(true);
      }
      // Once a config without them is live, they go.
      expect(await sync([cert('a', pems[0]!)])).toEqual({
        removed: ['auth/auth_x.htpasswd', 'certificates/tls_b.pem'],
        live: true,
      });
    },
  );

  it('writes a removed file again when a config names it again with the same content', async () => {
    await sync([cert('a', pems[0]!), cert('b', pems[1]!)]);
    expect((await sync([cert('a', pems[0]!)])).removed).toEqual(['certificates/tls_b.pem']);
    expect(await sync([cert('a', pems[0]!), cert('b', pems[1]!)])).toEqual({ removed: [], live: true });
    expect(await readFile(join(dir, 'certificates/tls_b.pem'), 'utf8')).toBe(pems[1]);
  });

  it('removes leftovers named as it names files, and nothing else', async () => {
    await mkdir(join(dir, 'certificates'), { recursive: true });
    await mkdir(join(dir, 'auth'), { recursive: true });
    await mkdir(join(dir, 'certificates', 'sub.pem'));
    const foreign = [
      'certificates/README',
      'certificates/key.crt',
      'auth/notes.txt',
      'other.pem',
      'certificates/sub.pem',
    ];
    for (const file of foreign.slice(0, 4)) await writeFile(join(dir, file), 'x');
    // From an earlier run of the controller in the same folder:
    await writeFile(join(dir, 'certificates/old_one.pem'), 'x', { mode: 0o600 });
    await writeFile(join(dir, 'auth/old_one.htpasswd'), 'x', { mode: 0o600 });
    expect((await sync([cert('a', pems[0]!)])).removed).toEqual(['auth/old_one.htpasswd', 'certificates/old_one.pem']);
    for (const file of foreign) expect(await exists(file)).toBe(true);
  });

  it(
    'removes nothing before it made a config live (a ' + 'refusal at its first reload keeps what another wrote)',
    async () => {
      await writeCertificates(dir, [cert('a', pems[0]!)]);
      expect(await sync([cert('b', pems[1]!)], { refused: true })).toEqual({ removed: [], live: false });
      expect(await exists('certificates/tls_a.pem')).toBe(true);
    },
  );
});

describe('writeCertificates', () => {
  it('removes nothing (render --out, boot)', async () => {
    await writeCertificates(dir, [cert('a', pems[0]!), cert('b', pems[1]!)]);
    await writeCertificates(dir, []);
    await writeCertificates(dir, [cert('a', pems[0]!)]);
    expect(await readdir(join(dir, 'certificates'))).toEqual(['tls_a.pem', 'tls_b.pem']);
  });
});
