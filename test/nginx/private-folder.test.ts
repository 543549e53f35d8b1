/**
 * Finding 3: the config folder could be hijacked when the controller runs as root. Its default
 * (/tmp/ingress-actors) was taken as it was found, owned by anyone, and links inside it were
 * followed by writes, chown and unlink. Here, as root (the suite runs as root; these tests need
 * it to plant another user's folder), a local user's moves are played against the real code and
 * a real root nginx: a folder of theirs, links where the controller or nginx writes, and what
 * the workers (`nobody`) can then read.
 */
import { execa } from 'execa';
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Certificate } from '../../src/model/nginx-model.js';
import { ConfigFolder, stageConfig } from '../../src/nginx/apply.js';
import { nginxBinary } from '../../src/nginx/binary.js';
import { ensureConfigDir, prepareConfigDir, writeCertificates, writeConfigSet } from '../../src/nginx/files.js';
import { workerIdentity } from '../../src/nginx/private-files.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { freePort, get } from '../support/net.js';
import { startNginx, type RunningNginx } from '../support/nginx.js';
import { waitFor } from '../support/wait.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
const NOBODY = 65534;
const root = process.geteuid?.() === 0;

let pem: string;
beforeAll(async () => {
  const made = await issueCertificate({ commonName: 'a.example.com', dnsNames: ['a.example.com'] });
  pem = made.certPem + made.keyPem;
});

const cert: () => Certificate = () => ({ id: 'default/a', file: 'certificates/default_a.pem', pem });
// alice:wonderland, {SHA}
const USERS = 'alice:{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ=\n';
const auth: Certificate = { id: 'default/users', file: 'auth/default_users.htpasswd', pem: USERS };

/**
 * base is this test's folder, passable for nginx's workers (as /tmp is); conf the config folder below it; outside a
 * folder of "someone else".
 */
let base: string;
let conf: string;
let outside: string;
let nginx: RunningNginx | null = null;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'ia-private-'));
  await chmod(base, 0o755);
  conf = join(base, 'conf');
  outside = join(base, 'outside');
  await mkdir(outside, { mode: 0o755 });
  await writeFile(join(outside, 'victim.pem'), 'not yours\n');
});
afterEach(async () => {
  await nginx?.stop();
  nginx = null;
  await rm(base, { recursive: true, force: true });
});

const outsideUnchanged = async () => {
  expect((await readdir(outside)).sort()).toEqual(['victim.pem']);
  expect(await readFile(join(outside, 'victim.pem'), 'utf8')).toBe('not yours\n');
  const folder = await stat(outside);
  expect({ uid: folder.uid, gid: folder.gid, mode: folder.mode & 0o7777 }).toEqual({ uid: 0, gid: 0, mode: 0o755 });
};

/** a config naming the files, serving the folders back to see what the workers can read */
function text(port: number, options: { auth?: boolean } = {}): string {
  return [
    'pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n',
    '  client_body_temp_path tmp/client-body; proxy_temp_path tmp/proxy; fastcgi_temp_path tmp/fastcgi; ' +
      'uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;\n',
    '  access_log off; client_body_buffer_size 1k;\n',
    `  server { listen 127.0.0.1:${port}; server_name _;\n`,
    '    ssl_certificate certificates/default_a.pem; ssl_certificate_key certificates/default_a.pem;\n',
    `    location /certificates/ { alias "${conf}/certificates/"; }\n`,
    `    location /auth/ { alias "${conf}/auth/"; }\n`,
    // (try_files, not return: return answers before the access phase, where auth_basic runs)
    options.auth
      ? '    location /members { auth_basic "m"; auth_basic_user_file auth/default_users.htpasswd; try_files /none ' +
        '@in; }\n    location @in { return 200 "in\\n"; }\n'
      : '',
    // A body larger than the buffer goes to tmp/client-body, written by a worker.
    '    location /upload { client_body_in_file_only clean; proxy_pass http://127.0.0.1:1; error_page 502 = @read; }\n',
    '    location @read { return 200 "read $request_body_file\\n"; }\n',
    '  }\n}\n',
  ].join('');
}

function post(port: number, path: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-length': body.length }, agent: false },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (data += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe.runIf(root)('finding 3: the config folder is private to this process and nginx’s workers', () => {
  it(
    'finding 3 (a): a config folder owned by another user, writable by others or a link is refused, naming ' +
      '--config-dir and what is wrong',
    async () => {
      await mkdir(conf, { mode: 0o700 });
      await chown(conf, NOBODY, NOBODY);
      await expect(ensureConfigDir(conf)).rejects.toThrow(
        `--config-dir ${conf}: ${conf} is owned by uid ${NOBODY}, not by this process (uid 0)`,
      );
      await chown(conf, 0, 0);
      await chmod(conf, 0o777);
      await expect(ensureConfigDir(conf)).rejects.toThrow(/--config-dir .*: .* is writable by everyone \(mode 0777\)/);
      await chmod(conf, 0o770);
      await expect(ensureConfigDir(conf)).rejects.toThrow(/is writable by its group \(mode 0770\)/);
      await rm(conf, { recursive: true });
      await symlink(outside, conf);
      await expect(ensureConfigDir(conf)).rejects.toThrow(`--config-dir ${conf}: ${conf} is a symbolic link`);
      // Nothing was written where they pointed, nor into their folder.
      await outsideUnchanged();
    },
  );

  it('finding 3 (a): every folder the controller keeps below it is checked too', async () => {
    await ensureConfigDir(conf);
    for (const folder of ['certificates', 'auth', 'tmp', 'logs']) {
      await chown(join(conf, folder), NOBODY, NOBODY);
      await expect(ensureConfigDir(conf)).rejects.toThrow(`${join(conf, folder)} is owned by uid ${NOBODY}`);
      await chown(join(conf, folder), 0, 0);
    }
    await ensureConfigDir(conf);
  });

  it(
    'finding 3 (a): `ingress-actors controller` exits 2 with one ' + 'clear line on a config folder of another user',
    async () => {
      await mkdir(conf, { mode: 0o755 });
      await chown(conf, NOBODY, NOBODY);
      const kubeconfig = join(base, 'kubeconfig');
      await writeFile(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'current-context: c',
          'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]',
          'users: [{name: u, user: {}}]',
          'contexts: [{name: c, context: {cluster: c, user: u}}]',
          '',
        ].join('\n'),
      );
      const run = await execa(
        CLI,
        [
          'controller',
          '--kubeconfig',
          kubeconfig,
          '--config-dir',
          conf,
          '--healthz-port',
          String(await freePort()),
          '--log-level',
          'silent',
        ],
        {
          reject: false,
          timeout: 20_000,
        },
      );
      expect({ code: run.exitCode, stderr: run.stderr }).toEqual({
        code: 2,
        stderr:
          `ingress-actors controller: --config-dir ${conf}: ${conf} is owned by uid ${NOBODY}, not by this ` +
          'process (uid 0); remove it or choose another folder',
      });
      expect(await readdir(conf)).toEqual([]);
    },
  );

  it(
    'finding 3 (b): links planted at certificates/, auth/ or tmp/ are refused, and nothing is written, chowned or ' +
      'created where they point',
    async () => {
      for (const folder of ['certificates', 'auth', 'tmp']) {
        await rm(conf, { recursive: true, force: true });
        await mkdir(conf, { mode: 0o700 });
        await symlink(outside, join(conf, folder));
        await expect(writeCertificates(conf, [cert(), auth], new Map())).rejects.toThrow(
          `${join(conf, folder)} is a symbolic link`,
        );
        await expect(stageConfig(nginxBinary(), conf, text(await freePort()), [cert(), auth])).rejects.toThrow(
          `${join(conf, folder)} is a symbolic link`,
        );
        await outsideUnchanged();
      }
    },
  );

  it(
    'finding 3 (b): a link where a certificate, an htpasswd ' +
      'file or nginx.conf.next goes is replaced, not written through',
    async () => {
      await ensureConfigDir(conf);
      for (const file of ['certificates/default_a.pem', 'auth/default_users.htpasswd', 'nginx.conf.next'])
        await symlink(join(outside, 'victim.pem'), join(conf, file));
      const staged = await stageConfig(nginxBinary(), conf, text(await freePort()), [cert(), auth]);
      expect(staged.ok).toBe(true);
      for (const file of ['certificates/default_a.pem', 'auth/default_users.htpasswd', 'nginx.conf'])
        expect((await lstat(join(conf, file))).isFile()).toBe(true);
      expect(await readFile(join(conf, 'certificates/default_a.pem'), 'utf8')).toBe(pem);
      expect(await readFile(join(conf, 'auth/default_users.htpasswd'), 'utf8')).toBe(USERS);
      await outsideUnchanged();
    },
  );

  it(
    'finding 3 (b): a link where nginx writes its pid file is removed before nginx starts, so the root master does ' +
      'not write through it',
    async () => {
      await ensureConfigDir(conf);
      await symlink(join(outside, 'victim.pem'), join(conf, 'nginx.pid'));
      const port = await freePort();
      expect((await stageConfig(nginxBinary(), conf, text(port), [cert(), auth])).ok).toBe(true);
      nginx = await startNginx(conf, port);
      const pid = await waitFor(
        'the pid file',
        async () => (await readFile(join(conf, 'nginx.pid'), 'utf8').catch(() => '')).trim(),
        5_000,
      );
      expect(Number(pid)).toBe(nginx.process.pid);
      expect((await lstat(join(conf, 'nginx.pid'))).isFile()).toBe(true);
      await outsideUnchanged();
    },
  );

  it('finding 3 (c): removing stale files never deletes through a link', async () => {
    // A link at certificates/ to their folder: their *.pem files must not be taken for the controller's own.
    await mkdir(conf, { mode: 0o700 });
    await symlink(outside, join(conf, 'certificates'));
    const memo = new Map<string, string>();
    await expect(writeCertificates(conf, [], memo)).rejects.toThrow('is a symbolic link');
    await expect(writeCertificates(conf, [], memo)).rejects.toThrow('is a symbolic link');
    await outsideUnchanged();
    // A link named as the controller names its files, inside its own folder: left alone, and its target too.
    await rm(join(conf, 'certificates'));
    await ensureConfigDir(conf);
    await symlink(join(outside, 'victim.pem'), join(conf, 'certificates/gone_secret.pem'));
    await symlink(outside, join(conf, 'auth/gone.htpasswd'));
    // The nginx actor's sweep after a live config: the links are not its files.
    const folder = new ConfigFolder(nginxBinary(), conf);
    expect((await folder.stage({ config: text(await freePort()), files: [cert(), auth] })).ok).toBe(true);
    expect(await folder.sweep()).toEqual([]);
    expect(await readlink(join(conf, 'certificates/gone_secret.pem'))).toBe(join(outside, 'victim.pem'));
    await outsideUnchanged();
  });

  it(
    'finding 3 (d): no folder is chowned: every one ' + 'stays this process’s, only its group is the workers’',
    async () => {
      await writeConfigSet(conf, text(await freePort()), [cert(), auth]);
      const worker = await workerIdentity();
      for (const folder of ['.', 'certificates', 'auth', 'tmp', 'logs']) {
        const s = await stat(join(conf, folder));
        expect({ folder, uid: s.uid }).toEqual({ folder, uid: 0 });
      }
      expect((await stat(join(conf, 'certificates'))).gid).toBe(0);
      expect((await stat(join(conf, 'auth'))).gid).toBe(worker!.gid);
      // And the files the workers read are this process's too, not the workers' (who could then rewrite them).
      expect((await stat(join(conf, 'auth/default_users.htpasswd'))).uid).toBe(0);
    },
  );

  it(
    'finding 3 (e): modes: keys 0600 root, htpasswd 0640 root:workers, folders 0700 (certificates), 0750 (auth), ' +
      '0710 (the rest)',
    async () => {
      await writeConfigSet(conf, text(await freePort()), [cert(), auth]);
      const worker = (await workerIdentity())!;
      const expected: Record<string, [number, number, number]> = {
        '.': [0o710, 0, worker.gid],
        certificates: [0o700, 0, 0],
        'certificates/default_a.pem': [0o600, 0, 0],
        auth: [0o750, 0, worker.gid],
        'auth/default_users.htpasswd': [0o640, 0, worker.gid],
        tmp: [0o710, 0, worker.gid],
        logs: [0o710, 0, worker.gid],
        'nginx.conf': [0o600, 0, 0],
      };
      for (const [file, [mode, uid, gid]] of Object.entries(expected)) {
        const s = await lstat(join(conf, file));
        expect({ file, mode: s.mode & 0o7777, uid: s.uid, gid: s.gid }).toEqual({ file, mode, uid, gid });
      }
    },
  );

  it('a folder of an older version (0755, auth/ 0700) is narrowed to the layout', async () => {
    await mkdir(join(conf, 'auth'), { recursive: true, mode: 0o755 });
    await chmod(conf, 0o755);
    await chmod(join(conf, 'auth'), 0o700);
    await prepareConfigDir(conf);
    expect((await stat(conf)).mode & 0o7777).toBe(0o710);
    expect((await stat(join(conf, 'auth'))).mode & 0o7777).toBe(0o750);
  });

  it(
    'a real root nginx: its workers run as workerIdentity, read htpasswd files, buffer bodies in tmp/, and cannot ' +
      'read keys',
    async () => {
      const port = await freePort();
      expect((await stageConfig(nginxBinary(), conf, text(port, { auth: true }), [cert(), auth])).ok).toBe(true);
      nginx = await startNginx(conf, port);
      const worker = (await workerIdentity())!;
      const at = (path: string, headers: Record<string, string> = {}) => get({ host: 'x', port, path, headers });
      // Keys: the master loaded them, a worker is refused them.
      expect((await at('/certificates/default_a.pem')).status).toBe(403);
      // htpasswd: a worker reads it, per request.
      expect((await at('/members')).status).toBe(401);
      const basic = { authorization: `Basic ${Buffer.from('alice:wonderland').toString('base64')}` };
      expect(await at('/members', basic)).toMatchObject({ status: 200, body: 'in\n' });
      // A body too big for the buffer is written by a worker below tmp/.
      const upload = await post(port, '/upload', Buffer.alloc(64 * 1024, 'x'));
      expect(upload.status).toBe(200);
      expect(upload.body).toMatch(new RegExp(`^read ${conf}/tmp/client-body/\\d+\\n$`));
      // The worker that answered (it has switched user by now) is who workerIdentity says.
      const master = nginx.process.pid!;
      const workers = (await readFile(`/proc/${master}/task/${master}/children`, 'utf8')).trim().split(' ');
      expect(workers.length).toBeGreaterThan(0);
      for (const pid of workers) {
        const status = await readFile(`/proc/${pid}/status`, 'utf8');
        expect([/^Uid:\t(\d+)/m.exec(status)?.[1], /^Gid:\t(\d+)/m.exec(status)?.[1]]).toEqual([
          String(worker.uid),
          String(worker.gid),
        ]);
      }
      // And nginx made its temp folders itself, for the workers; nothing else in tmp/ is theirs.
      const body = await stat(join(conf, 'tmp/client-body'));
      expect({ uid: body.uid, mode: body.mode & 0o777 }).toEqual({ uid: worker.uid, mode: 0o700 });
    },
  );
});
