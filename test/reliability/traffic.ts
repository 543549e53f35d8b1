/**
 * A steady request loop through nginx: one loop per target, one request at a time on a new
 * connection each, counting requests and failures. A failure is a connection error, a timeout, or
 * an answer other than 200 from the expected backend. Faults that take nginx down open a down
 * window; a failed request that overlaps a window is "refused while nginx was down", any other
 * failed request is lost.
 */
import { get } from '../support/net.js';

/** Target is a route that must answer 200 from `backend` for the whole run. */
export interface Target {
  readonly host: string;
  readonly path: string;
  readonly backend: string;
}

/** Failure is one failed request: when it ran, what it asked, what went wrong. */
export interface Failure {
  readonly start: number;
  readonly end: number;
  readonly target: string;
  readonly reason: string;
}

interface Window {
  readonly start: number;
  end: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Traffic runs the loops and keeps the tally. */
export class Traffic {
  requests = 0;
  readonly failures: Failure[] = [];
  private readonly windows: Window[] = [];
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly port: number,
    private readonly targets: readonly Target[],
    private readonly gapMs = 10,
  ) {}

  /** start begins one loop per target. */
  start(): void {
    this.running = true;
    this.loops = this.targets.map((t) => this.loop(t));
  }

  /** stop lets each loop finish its request and resolves when all have. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /**
   * down opens a down window (nginx is about to stop serving); call the result once it serves again, for its length in
   * ms.
   */
  down(): () => number {
    const window: Window = { start: Date.now(), end: Number.POSITIVE_INFINITY };
    this.windows.push(window);
    return () => {
      window.end = Date.now();
      return window.end - window.start;
    };
  }

  /** downMs lists how long each closed down window lasted. */
  downMs(): number[] {
    return this.windows.filter((w) => Number.isFinite(w.end)).map((w) => w.end - w.start);
  }

  private excused(f: Failure): boolean {
    return this.windows.some((w) => f.end >= w.start && f.start <= w.end);
  }

  /** lost lists the failures outside every down window, optionally only those started in [from, to]. */
  lost(from = 0, to = Number.POSITIVE_INFINITY): Failure[] {
    return this.failures.filter((f) => f.start >= from && f.start <= to && !this.excused(f));
  }

  /** refusedWhileDown counts the failures inside down windows. */
  refusedWhileDown(): number {
    return this.failures.filter((f) => this.excused(f)).length;
  }

  /** settled resolves once at least `n` more requests have completed: proof the loops still run. */
  async settled(n = 4, timeoutMs = 15_000): Promise<void> {
    const target = this.requests + n;
    const deadline = Date.now() + timeoutMs;
    while (this.requests < target) {
      if (Date.now() > deadline) throw new Error(`the request loop made no progress in ${timeoutMs} ms`);
      await sleep(10);
    }
  }

  private async loop(target: Target): Promise<void> {
    const name = `${target.host}${target.path}`;
    while (this.running) {
      const start = Date.now();
      let reason: string | null;
      try {
        const reply = await get({ host: target.host, path: target.path, port: this.port });
        reason =
          reply.status === 200 && reply.backend === target.backend
            ? null
            : `HTTP ${reply.status} from ${reply.backend ?? 'nginx'}`;
      } catch (error) {
        reason = (error as Error).message;
      }
      this.requests++;
      if (reason !== null) this.failures.push({ start, end: Date.now(), target: name, reason });
      // After a failure wait longer, as a client would: a refused port fails in microseconds.
      await sleep(reason === null ? this.gapMs : 50);
    }
  }
}
