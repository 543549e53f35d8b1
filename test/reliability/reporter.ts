/**
 * ReliabilityReporter sums up the results each reliability test file leaves behind: a table per
 * fault kind, the known bugs and skipped faults, and last the line
 * `reliability: N faults, N survived, N requests, N lost`.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter } from 'vitest/node';
import type { FaultRecord, Results } from './harness.js';
import { knownBugs } from './known-bugs.js';

const pct = (xs: number[], p: number) =>
  xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** summarize turns the files' results into the lines the reporter prints. */
export function summarize(all: readonly Results[]): string[] {
  const faults: FaultRecord[] = all.flatMap((r) => r.faults);
  const kinds = [...new Set(faults.map((f) => f.kind))];
  const lines: string[] = [];
  const profiles = [...new Set(all.map((r) => r.profile))].join(', ') || 'none';
  lines.push('', `reliability suite (profile ${profiles})`);
  lines.push(
    `  ${'fault'.padEnd(34)} ${'injected'.padStart(8)} ${'survived'.padStart(8)} ` +
      `${'converged p50/max ms'.padStart(21)} ${'lost'.padStart(5)}`,
  );
  for (const kind of kinds) {
    const of = faults.filter((f) => f.kind === kind);
    const ms = of.map((f) => f.convergeMs).filter((m): m is number => m !== null);
    const timing = ms.length ? `${pct(ms, 50).toFixed(0)}/${Math.max(...ms).toFixed(0)}` : '-';
    lines.push(
      `  ${kind.padEnd(34)} ${String(of.length).padStart(8)} ` +
        `${String(of.filter((f) => f.survived).length).padStart(8)} ${timing.padStart(21)}` +
        ` ${String(of.reduce((s, f) => s + f.lost, 0)).padStart(5)}`,
    );
  }
  for (const f of faults.filter((f) => !f.survived))
    lines.push(`  not survived: ${f.kind}${f.knownBug ? ` (known bug ${f.knownBug})` : ''}: ${f.detail ?? ''}`);
  for (const bug of new Set([
    ...faults.filter((f) => f.knownBug && !f.survived).map((f) => f.knownBug!),
    ...all.flatMap((r) => r.knownBugsSeen ?? []),
  ])) {
    lines.push(`  known bug ${bug}: ${knownBugs[bug as keyof typeof knownBugs] ?? ''}`);
  }
  for (const r of all) for (const s of r.skipped) lines.push(`  skipped (${r.file}): ${s.kind}: ${s.reason}`);
  for (const r of all) for (const n of r.notes) lines.push(`  note (${r.file}): ${n}`);
  for (const r of all)
    for (const l of r.lostSample)
      lines.push(`  lost (${r.file}): ${l.target} at ${new Date(l.start).toISOString()}: ${l.reason}`);
  for (const r of all) {
    const restarts = Object.entries(r.childRestarts).filter(([, n]) => n > 0);
    if (restarts.length)
      lines.push(`  supervisor restarts (${r.file}): ${restarts.map(([id, n]) => `${id} ×${n}`).join(', ')}`);
  }
  const requests = all.reduce((s, r) => s + r.requests, 0);
  const lost = all.reduce((s, r) => s + r.lost, 0);
  const down = all.reduce((s, r) => s + r.refusedWhileDown, 0);
  const windows = all.flatMap((r) => r.downMs ?? []);
  lines.push(
    `  requests refused while nginx was down (kill -9, not counted as lost): ${down}` +
      (windows.length
        ? `; nginx down ${windows.length} times, p50 ${pct(windows, 50)} ms, max ${Math.max(...windows)} ms`
        : ''),
  );
  lines.push(
    `reliability: ${faults.length} faults, ${faults.filter((f) => f.survived).length} survived, ${requests} ` +
      `requests, ${lost} lost`,
  );
  return lines;
}

/** ReliabilityReporter prints the summary after vitest's own. */
export class ReliabilityReporter implements Reporter {
  constructor(private readonly dir: string) {}

  onInit(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  onTestRunEnd(): void {
    let files: string[] = [];
    try {
      files = readdirSync(this.dir)
        .filter((f) => f.endsWith('.json'))
        .sort();
    } catch {
      files = [];
    }
    const all = files.map((f) => JSON.parse(readFileSync(join(this.dir, f), 'utf8')) as Results);
    process.stdout.write(`${summarize(all).join('\n')}\n`);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
