/**
 * A pod of one container, as a kubelet would run the image, without a kubelet: the image archive `npm run image`
 * made, unpacked by umoci into an OCI bundle; a runtime spec written from a Deployment's container and pod spec
 * (args after the image's entrypoint, env with the fieldRefs resolved, user, read-only root, capabilities,
 * no_new_privs, the pod's sysctls, an emptyDir as a tmpfs); run by runc in a network namespace of its own, joined
 * to this machine by a veth pair (the pod network's stand-in: the pod's address reaches the host's, and back).
 * Needs root, runc, umoci and ip. (Debian's crun 1.8 refuses this machine's hybrid cgroup layout; runc runs on it.)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server } from 'node:net';
import { join } from 'node:path';
import type { V1Container, V1PodSpec } from '@kubernetes/client-node';
import { execa, type ResultPromise } from 'execa';

const ROOT = new URL('../../', import.meta.url).pathname;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** IMAGE_ARCHIVE is what `npm run image` writes (IMAGE_OUT moves it, as for the build). */
export const IMAGE_ARCHIVE = join(
  process.env.IMAGE_OUT ?? join(ROOT, 'dist/image'),
  `ingress-actors-${VERSION}.oci.tar`,
);

/** PodNetwork is a network namespace and the two ends of its veth pair. */
export interface PodNetwork {
  readonly name: string;
  /** the namespace's file, for the runtime spec */
  readonly path: string;
  /** this machine's end: what the pod reaches the test's servers at */
  readonly hostIp: string;
  /** the pod's address */
  readonly podIp: string;
  close(): void;
}

/** podNetwork makes a network namespace with loopback up and a /30 to this machine (subnet 10.213.N.0/30). */
export function podNetwork(name: string, subnet: number): PodNetwork {
  const hostIp = `10.213.${subnet}.1`;
  const podIp = `10.213.${subnet}.2`;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const host = `ia${subnet}h`;
  const pod = `ia${subnet}p`;
  try {
    ip('netns', 'delete', name);
  } catch {}
  ip('netns', 'add', name);
  ip('link', 'add', host, 'type', 'veth', 'peer', 'name', pod);
  ip('link', 'set', pod, 'netns', name);
  ip('addr', 'add', `${hostIp}/30`, 'dev', host);
  ip('link', 'set', host, 'up');
  ip('-n', name, 'addr', 'add', `${podIp}/30`, 'dev', pod);
  ip('-n', name, 'link', 'set', pod, 'up');
  ip('-n', name, 'link', 'set', 'lo', 'up');
  ip('-n', name, 'route', 'add', 'default', 'via', hostIp);
  return {
    name,
    path: `/run/netns/${name}`,
    hostIp,
    podIp,
    close: () => ip('netns', 'delete', name), // the veth pair goes with it
  };
}

/** Relay is a TCP listener on `host` that pipes every connection to 127.0.0.1:`port` (a Service's stand-in). */
export interface Relay {
  readonly port: number;
  close(): Promise<void>;
}

/** relay makes the test API server (which listens on loopback only) reachable from the pod, as its Service is. */
export async function relay(host: string, port: number): Promise<Relay> {
  const server: Server = createServer((socket) => {
    const upstream = connect(port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay: no port');
  return {
    port: address.port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
      }),
  };
}

/** ClusterService is the API server as a pod reaches it: the kubelet's env and the service account's files. */
export interface ClusterService {
  /** KUBERNETES_SERVICE_HOST and _PORT, as the kubelet sets them */
  readonly env: Record<string, string>;
  /** the service account's folder (token, ca.crt, namespace), to mount where in-cluster config reads it */
  readonly files: Record<string, string>;
  close(): Promise<void>;
}

/** SERVICE_PORT is the Service `kubernetes` as the pod sees it (not 443: the pod's nginx listens there). */
const SERVICE_PORT = 6443;

/**
 * kubernetesService makes the test API server (HTTPS on this machine's loopback, its certificate for 127.0.0.1)
 * the pod's in-cluster API: a relay on the host's end of the veth, and one inside the pod's network namespace on
 * its 127.0.0.1:6443 (where kube-proxy's rules would be), so the certificate's name holds; the service account's
 * token, CA and namespace are files in `dir`.
 */
export async function kubernetesService(
  network: PodNetwork,
  api: { readonly port: number; readonly caPem: string; readonly token: string },
  namespace: string,
  dir: string,
): Promise<ClusterService> {
  const host = await relay(network.hostIp, api.port);
  const script = `const net = require('node:net');
net.createServer((s) => { const u = net.connect(${host.port}, '${network.hostIp}'); s.pipe(u).pipe(s);
  const end = () => { s.destroy(); u.destroy(); }; s.on('error', end).on('close', end); u.on('error', end).on('close', end);
}).listen(${SERVICE_PORT}, '127.0.0.1', () => console.log('listening'));`;
  const inPod = execa('ip', ['netns', 'exec', network.name, process.execPath, '-e', script], {
    reject: false,
    buffer: false,
  });
  await new Promise<void>((resolve, reject) => {
    inPod.stdout?.once('data', () => resolve());
    void inPod.then((r) => reject(new Error(`the pod's relay ended: ${String(r.stderr)}`)));
  });
  const account = join(dir, 'serviceaccount');
  await mkdir(account, { recursive: true });
  await writeFile(join(account, 'token'), api.token);
  await writeFile(join(account, 'ca.crt'), api.caPem);
  await writeFile(join(account, 'namespace'), namespace);
  return {
    env: {
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: String(SERVICE_PORT),
      KUBERNETES_PORT: `tcp://127.0.0.1:${SERVICE_PORT}`,
    },
    files: { '/var/run/secrets/kubernetes.io/serviceaccount': account },
    close: async () => {
      inPod.kill('SIGTERM');
      await inPod;
      await host.close();
    },
  };
}

/** RuntimeSpec is the part of an OCI runtime spec (config.json) this file changes. */
interface RuntimeSpec {
  process: {
    args: string[];
    env: string[];
    cwd: string;
    user: { uid: number; gid: number; additionalGids?: number[] };
    [field: string]: unknown;
  };
  root: { path: string; readonly?: boolean };
  mounts: { destination: string; type?: string; source?: string; options?: string[] }[];
  linux: { namespaces: { type: string; path?: string }[]; [field: string]: unknown };
  [field: string]: unknown;
}

/** Bundle is an unpacked image: the OCI bundle's folder and the ENTRYPOINT and CMD of the image's config. */
export interface Bundle {
  readonly dir: string;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
}

/** unpackImage extracts the archive and has umoci make an OCI bundle (rootfs/ and config.json) in `dir`/bundle. */
export async function unpackImage(dir: string): Promise<Bundle> {
  const layout = join(dir, 'oci');
  await mkdir(layout, { recursive: true });
  await execa('tar', ['-xf', IMAGE_ARCHIVE, '-C', layout]);
  const bundle = join(dir, 'bundle');
  await execa('umoci', ['unpack', '--image', `${layout}:${VERSION}`, bundle]);
  const blob = async <T>(digest: string) =>
    JSON.parse(await readFile(join(layout, 'blobs', ...digest.split(':')), 'utf8')) as T;
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  const tagged = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === VERSION);
  if (!tagged) throw new Error(`${IMAGE_ARCHIVE}: no ${VERSION}`);
  const manifest = await blob<{ config: { digest: string } }>(tagged.digest);
  const config = await blob<{ config?: { Entrypoint?: string[]; Cmd?: string[] } }>(manifest.config.digest);
  return { dir: bundle, entrypoint: config.config?.Entrypoint ?? [], cmd: config.config?.Cmd ?? [] };
}

/** PodRun says how a pod runs the container: the pod's name and namespace, what else it mounts, its network. */
export interface PodRun {
  readonly name: string;
  readonly namespace: string;
  readonly nodeName: string;
  readonly network: PodNetwork;
  /** extra environment (KUBECONFIG, say) */
  readonly env?: Record<string, string>;
  /** read-only bind mounts: container path → host path (a Secret volume's stand-in) */
  readonly files?: Record<string, string>;
}

/**
 * writeRuntimeSpec turns the image's runtime spec (umoci's config.json) into the one a kubelet would ask for:
 * the container's args replace the image's CMD and keep its ENTRYPOINT; env adds the container's, fieldRefs read
 * from `run`; the pod's and container's securityContext become the process's user, capabilities (the bounding set
 * only: a non-root process keeps no capabilities across exec, as under containerd), no_new_privs and the
 * read-only root; the pod's sysctls and each emptyDir (a tmpfs, as `medium: Memory`) follow.
 */
export function writeRuntimeSpec(bundle: Bundle, pod: V1PodSpec, container: V1Container, run: PodRun): RuntimeSpec {
  const file = join(bundle.dir, 'config.json');
  const spec = JSON.parse(readFileSync(file, 'utf8')) as RuntimeSpec;
  const args = container.args ?? bundle.cmd;
  const fieldRefs: Record<string, string> = {
    'metadata.name': run.name,
    'metadata.namespace': run.namespace,
    'spec.nodeName': run.nodeName,
    'status.podIP': run.network.podIp,
  };
  const env = (container.env ?? []).map((e) => {
    const ref = e.valueFrom?.fieldRef?.fieldPath;
    const value = ref === undefined ? e.value : fieldRefs[ref];
    if (value === undefined) throw new Error(`env ${e.name}: cannot resolve`);
    return `${e.name}=${value}`;
  });
  // $(VAR) in args is the kubelet's to expand, from the container's env.
  const vars = new Map(env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  const expand = (arg: string) => arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name) => vars.get(name) ?? all);
  const podSecurity = pod.securityContext ?? {};
  const security = container.securityContext ?? {};
  const uid = security.runAsUser ?? podSecurity.runAsUser ?? spec.process.user.uid;
  const gid = security.runAsGroup ?? podSecurity.runAsGroup ?? spec.process.user.gid;
  const added = (security.capabilities?.add ?? []).map((c) => `CAP_${c}`);
  if (!(security.capabilities?.drop ?? []).includes('ALL')) throw new Error('the container does not drop ALL');
  spec.process.args = [...bundle.entrypoint, ...args.map(expand)];
  spec.process.env = [
    ...spec.process.env,
    ...env,
    ...Object.entries(run.env ?? {}).map(([k, v]) => `${k}=${v}`),
    `HOSTNAME=${run.name}`,
  ];
  spec.process.user = {
    uid,
    gid,
    ...(podSecurity.fsGroup === undefined ? {} : { additionalGids: [podSecurity.fsGroup] }),
  };
  spec.process.capabilities = { bounding: added, effective: added, permitted: added, inheritable: [], ambient: [] };
  spec.process.noNewPrivileges = security.allowPrivilegeEscalation === false;
  spec.process.terminal = false;
  // Open files as under containerd 2, whose unit no longer sets LimitNOFILE=infinity: 1024 soft, the runtime's own
  // hard limit (systemd's 524288 on a node; whatever this machine allows here), not umoci's 1024 hard.
  const hard = Number(execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim()) || 1024;
  spec.process.rlimits = [{ type: 'RLIMIT_NOFILE', soft: Math.min(1024, hard), hard }];
  spec.root = { path: join(bundle.dir, 'rootfs'), readonly: security.readOnlyRootFilesystem === true };
  spec.hostname = run.name;
  const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (!volume?.emptyDir) throw new Error(`volume ${mount.name}: only emptyDirs are stood in for`);
    const size = volume.emptyDir.sizeLimit ? [`size=${volume.emptyDir.sizeLimit.replace(/i$/, '')}`] : [];
    spec.mounts.push({
      destination: mount.mountPath,
      type: 'tmpfs',
      source: 'tmpfs',
      options: ['nosuid', 'nodev', 'mode=1777', ...size],
    });
  }
  for (const [destination, source] of Object.entries(run.files ?? {}))
    spec.mounts.push({ destination, type: 'bind', source, options: ['rbind', 'ro'] });
  spec.linux.namespaces = [
    ...spec.linux.namespaces.filter((n) => n.type !== 'network' && n.type !== 'user'),
    { type: 'network', path: run.network.path },
  ];
  spec.linux.sysctl = Object.fromEntries((podSecurity.sysctls ?? []).map((s) => [s.name, s.value]));
  writeFileSync(file, JSON.stringify(spec, null, 2));
  return spec;
}

/** Container is a running runc container: its `runc run` process (its exit code is the container's). */
export interface Container {
  readonly id: string;
  readonly run: ResultPromise;
  /** whether `runc run` has ended (the container's PID 1 exited, or runc failed) */
  exited(): boolean;
  /** the host pids of the container's processes: its PID 1 and every descendant, zombies included */
  pids(): Promise<number[]>;
  /** sends a signal to the container's PID 1 */
  signal(signal: string): Promise<void>;
  /** kills whatever is left and deletes the container */
  remove(): Promise<void>;
}

/** startContainer runs the bundle under runc, in the foreground of a child process. */
export function startContainer(bundle: Bundle, id: string): Container {
  const run = execa('runc', ['run', '--bundle', bundle.dir, id], { reject: false, stdin: 'ignore', all: true });
  let ended = false;
  void run.then(() => {
    ended = true;
  });
  return {
    id,
    run,
    exited: () => ended,
    pids: async () => {
      // Not `runc ps`: it reads the cgroup, which no longer lists a process once it exited, zombies included.
      const { stdout } = await execa('runc', ['state', id]);
      return descendants((JSON.parse(stdout) as { pid: number }).pid);
    },
    signal: async (signal) => void (await execa('runc', ['kill', id, signal])),
    remove: async () => {
      await execa('runc', ['kill', '--all', id, 'KILL'], { reject: false });
      run.kill('SIGKILL');
      await run;
      await execa('runc', ['delete', '--force', id], { reject: false });
    },
  };
}

/** ProcessInfo is what /proc says of a process: its title (argv joined), state letter, parent, uid and RSS. */
export interface ProcessInfo {
  readonly pid: number;
  readonly title: string;
  readonly state: string;
  readonly ppid: number;
  /** the real uid */
  readonly uid: number;
  readonly rssKiB: number;
}

/** descendants are `root` and every process below it, from each process's PPid in /proc (zombies keep theirs). */
export async function descendants(root: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    const ppid = Number(status.match(/^PPid:\s*(\d+)$/m)?.[1] ?? 0);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found = [root];
  for (let i = 0; i < found.length; i++) found.push(...(children.get(found[i]!) ?? []));
  return found;
}

/** processes reads /proc for each pid (those gone meanwhile are left out). */
export async function processes(pids: readonly number[]): Promise<ProcessInfo[]> {
  const found: ProcessInfo[] = [];
  for (const pid of pids) {
    try {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const field = (name: string) => status.match(new RegExp(`^${name}:\\s*(.*)$`, 'm'))?.[1] ?? '';
      const title = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ').trim();
      found.push({
        pid,
        title: title || field('Name'),
        state: field('State').charAt(0),
        ppid: Number(field('PPid')),
        uid: Number(field('Uid').split(/\s+/)[0]),
        rssKiB: Number.parseInt(field('VmRSS') || '0', 10),
      });
    } catch {}
  }
  return found;
}
