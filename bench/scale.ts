/**
 * The scale benchmark: N Ingresses → buildModel → render → a real `nginx -t`, for N = 100,
 * 1,000 and 10,000. Figures are ratios within one run (the machines are noisy): the controller's
 * own work against the `nginx -t` floor it cannot remove, and the growth slope in N.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import { nginxBinary, testConfig } from '../src/nginx/binary.js';
import { writeConfigSet } from '../src/nginx/files.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { issueCertificate } from '../src/tls/issue.js';
import { freshTemplate, generateCluster } from './fixtures.js';
import { median } from './stats.js';

/** heapAfterGc is the heap in use once garbage is collected (the benchmarks run with --expose-gc). */
function heapAfterGc(): number {
  if (!global.gc) throw new Error('run with node --expose-gc (npm run bench does)');
  global.gc();
  return process.memoryUsage().heapUsed;
}

function time<T>(fn: (run: number) => T, runs: number): { ms: number; value: T } {
  const samples: number[] = [];
  let value!: T;
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    value = fn(r);
    samples.push(performance.now() - t);
  }
  return { ms: median(samples), value };
}

/** runScale runs the scale benchmark and prints one line per N, then the slopes. */
export async function runScale(sizes = [100, 1000, 10_000]): Promise<void> {
  const template = await loadTemplate();
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  const rows: { n: number; build: number; render: number; nginx: number }[] = [];
  for (const n of sizes) {
    const heapBefore = heapAfterGc();
    const snapshot = generateCluster(n, wildcard);
    const heapWithObjects = heapAfterGc();
    const runs = n >= 10_000 ? 3 : 5;
    const built = time(() => buildModel(snapshot, defaultBuildOptions), runs);
    // A template of its own per run, so each render is a full one.
    let templates = Array.from({ length: runs }, () => freshTemplate(template));
    const rendered = time((r) => render(built.value.model, templates[r]!), runs);
    const kept = templates.at(-1);
    templates = [];
    const dir = await mkdtemp(join(tmpdir(), 'ia-bench-'));
    const conf = await writeConfigSet(dir, rendered.value, built.value.model.certificates);
    // What a running controller holds on to besides the objects: the last model, its text (flat
    // once written: a rendered string is a rope until then), and one template's kept partials.
    const retainedMb = (heapAfterGc() - heapWithObjects) / 2 ** 20;
    const objectsMb = (heapWithObjects - heapBefore) / 2 ** 20;
    void kept;
    const t = performance.now();
    const verdict = await testConfig(nginxBinary(), dir, conf);
    const nginxMs = performance.now() - t;
    await rm(dir, { recursive: true, force: true });
    if (!verdict.ok) throw new Error(`nginx -t failed at n=${n}: ${verdict.output}`);
    if (built.value.problems.length > 0)
      throw new Error(`unexpected problems at n=${n}: ${built.value.problems.length}`);
    const bytesPerIngress = Buffer.byteLength(rendered.value) / n;
    rows.push({ n, build: built.ms, render: rendered.ms, nginx: nginxMs });
    console.log(
      `bench scale detail: n=${n} bytes_per_ingress=${bytesPerIngress.toFixed(0)} objects_heap_mb=` +
        `${objectsMb.toFixed(1)} retained_heap_mb=${retainedMb.toFixed(1)}`,
    );
  }
  // Growth: the log-log slope between the smallest and largest N (1.0 is linear).
  const [first, last] = [rows[0]!, rows.at(-1)!];
  const slope = (a: number, b: number) => Math.log(b / a) / Math.log(last.n / first.n);
  console.log(
    `bench scale slope: build=${slope(first.build, last.build).toFixed(2)} render=` +
      `${slope(first.render, last.render).toFixed(2)} ` +
      `nginx_t=${slope(first.nginx, last.nginx).toFixed(2)} (1.00 = linear in N)`,
  );
  // The issue's form, one line per N, last: R = (build + render) / nginx -t.
  for (const row of rows) {
    console.log(
      `bench scale: n=${row.n} build_ms=${row.build.toFixed(1)} render_ms=${row.render.toFixed(1)} nginx_t_ms=` +
        `${row.nginx.toFixed(0)} ` +
        `ratio=${((row.build + row.render) / row.nginx).toFixed(3)}`,
    );
  }
}
