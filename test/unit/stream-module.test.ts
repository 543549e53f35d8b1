/**
 * Finding nginx's stream module (src/nginx/stream.ts) from what `nginx -V` says: Debian's dynamic module,
 * a built-in one, none at all; and `render` with the stream flags, whose output passes a real `nginx -t`.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { checkStream, streamSockets } from '../../src/nginx/stream.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-stream-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** fakeNginx is a script that answers `-V` as an nginx built with `configure` would. */
async function fakeNginx(name: string, configure: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(
    file,
    `#!/bin/sh\necho "nginx version: nginx/1.22.1" >&2\necho "configure arguments: ${configure}" >&2\n`,
  );
  await chmod(file, 0o755);
  return file;
}

describe('checkStream', () => {
  it("finds Debian's dynamic module in nginx's modules folder", async () => {
    const check = await checkStream(nginxBinary(), dir);
    expect(check).toEqual({
      ok: true,
      settings: { modules: ['/usr/lib/nginx/modules/ngx_stream_module.so'], socketDir: dir },
    });
  });

  it('loads nothing when the module is built in', async () => {
    const binary = await fakeNginx('static', '--with-http_ssl_module --with-stream --with-stream_ssl_preread_module');
    expect(await checkStream(binary, dir)).toEqual({ ok: true, settings: { modules: [], socketDir: dir } });
  });

  it('says what to install when nginx has no stream module', async () => {
    const binary = await fakeNginx('none', '--with-http_ssl_module --modules-path=/usr/lib/nginx/modules');
    const check = await checkStream(binary, dir);
    expect(check.ok).toBe(false);
    expect(!check.ok && check.why).toMatch(
      /ngx_stream_module\.so not found \(Debian: apt-get install libnginx-mod-stream\)/,
    );
  });

  it('refuses a config folder whose socket paths would not fit a unix socket address', async () => {
    const check = await checkStream(nginxBinary(), join(dir, 'x'.repeat(100)));
    expect(!check.ok && check.why).toMatch(/longer than 107 bytes \(--config-dir\)/);
    // TLS Terminate's internal sockets (tls_<16 hex>.sock) are the longest name: a folder that fits passthrough.sock
    // but not them is refused too
    const fitsPassthrough = join(dir, 'y'.repeat(107 - dir.length - 1 - 'passthrough.sock'.length - 1));
    const refused = await checkStream(nginxBinary(), fitsPassthrough);
    expect(!refused.ok && refused.why).toMatch(/tls_0{16}\.sock is longer than 107 bytes/);
  });
});

describe('streamSockets', () => {
  it('lists the ssl-passthrough sockets and the TLS Terminate sockets a killed master left, nothing else', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'ia-sockets-'));
    try {
      await writeFile(join(folder, 'tls_0123456789abcdef.sock'), '');
      await writeFile(join(folder, 'tls_nothex.sock'), '');
      await writeFile(join(folder, 'nginx.conf'), '');
      expect(streamSockets({ modules: [], socketDir: folder }).sort()).toEqual(
        [
          join(folder, 'https.sock'),
          join(folder, 'passthrough.sock'),
          join(folder, 'tls_0123456789abcdef.sock'),
        ].sort(),
      );
      // a folder not made yet has nothing left behind
      expect(streamSockets({ modules: [], socketDir: join(folder, 'none') })).toHaveLength(2);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

describe('ingress-actors render with the stream flags', () => {
  it('writes the stream block, its sockets in --out, and nginx -t passes', async () => {
    const manifests = join(dir, 'tcp.yaml');
    await writeFile(
      manifests,
      [
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tcp, namespace: ingress}\ndata: {"9000": "default/db:5432"}',
        'apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: default}\nspec: {ports: [{port: 5432}]}',
        'apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: db-1, namespace: default, labels: ' +
          '{kubernetes.io/service-name: db}}\naddressType: IPv4\nports: [{port: 5432}]\nendpoints: [{addresses: [10.0.0.1]}]',
      ].join('\n---\n'),
    );
    const out = join(dir, 'out');
    const result = await execa(
      CLI,
      [
        'render',
        '--manifests',
        manifests,
        '--tcp-services-configmap',
        'ingress/tcp',
        '--enable-ssl-passthrough',
        '--out',
        out,
      ],
      { reject: false },
    );
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('load_module "/usr/lib/nginx/modules/ngx_stream_module.so";');
    expect(result.stdout).toContain('listen "9000";');
    expect(result.stdout).toContain('server "10.0.0.1:5432";');
    expect(result.stdout).toContain(`listen "unix:${out}/https.sock" ssl http2 proxy_protocol default_server;`);
    const verdict = await testConfig(nginxBinary(), out, join(out, 'nginx.conf'));
    expect(verdict.output).not.toMatch(/\[emerg\]/);
    expect(verdict.ok).toBe(true);
  });
});
