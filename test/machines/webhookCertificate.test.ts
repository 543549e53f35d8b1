import { describe, expect, it } from 'vitest';
import { SimulatedClock, createActor, fromPromise } from 'xstate';
import {
  backoffDelayMs,
  type CertificateServed,
  type PatchCaBundleInput,
  type ReportFailureParams,
  webhookCertificateMachine,
} from '../../machines/webhookCertificate.machine.js';
import { advance, deferred, flush, type Deferred } from './harness.js';

const INPUT = { recheckMs: 60_000, backoffBaseMs: 1_000, backoffMaxMs: 8_000 };
const served = (caPem: string, action: CertificateServed['action'] = 'kept'): CertificateServed => ({
  caPem,
  notAfter: 0,
  resourceVersion: '7',
  action,
});

/** start runs the machine; each step takes the next Deferred the test settles. */
function start() {
  const ensures: Deferred<CertificateServed>[] = [];
  const patches: { input: PatchCaBundleInput; done: Deferred<unknown> }[] = [];
  const failures: ReportFailureParams[] = [];
  const machine = webhookCertificateMachine.provide({
    actors: {
      ensureCertificate: fromPromise<CertificateServed>(() => {
        const done = deferred<CertificateServed>();
        ensures.push(done);
        return done.promise;
      }),
      patchCaBundle: fromPromise<unknown, PatchCaBundleInput>(({ input }) => {
        const done = deferred<unknown>();
        patches.push({ input, done });
        return done.promise;
      }),
    },
    actions: { reportFailure: (_, params) => void failures.push(params) },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, { input: INPUT, clock }).start();
  return { actor, clock, ensures, patches, failures };
}

describe('webhookCertificate', () => {
  it('ensures, patches with the served CA, serves, and checks both again after recheckMs', async () => {
    const { actor, clock, ensures, patches } = start();
    expect(actor.getSnapshot().value).toBe('ensuring');
    ensures[0]!.resolve(served('CA1', 'created'));
    await flush();
    expect(actor.getSnapshot().value).toBe('patching');
    expect(patches[0]!.input).toEqual({ caPem: 'CA1' });
    patches[0]!.done.resolve({ matched: 1, patched: 1 });
    await flush();
    expect(actor.getSnapshot().value).toBe('serving');
    await advance(clock, INPUT.recheckMs - 1, 1_000);
    expect(ensures).toHaveLength(1);
    await advance(clock, 1);
    expect(actor.getSnapshot().value).toBe('ensuring');
    ensures[1]!.resolve(served('CA2', 'renewed'));
    await flush();
    expect(patches[1]!.input).toEqual({ caPem: 'CA2' });
    expect(actor.getSnapshot().context).toMatchObject({ caPem: 'CA2', renewals: 1 });
  });

  it('a failed step is reported and retried after a doubling backoff, capped; success resets it', async () => {
    const { actor, clock, ensures, patches, failures } = start();
    ensures[0]!.reject(new Error('403 Forbidden: secrets is forbidden'));
    await flush();
    expect(actor.getSnapshot().value).toBe('backoff');
    expect(failures[0]).toEqual({
      step: 'certificate',
      error: '403 Forbidden: secrets is forbidden',
      retryInMs: 1_000,
    });
    await advance(clock, 1_000, 500);
    ensures[1]!.resolve(served('CA1'));
    await flush();
    for (let i = 0; i < 4; i++) {
      patches.at(-1)!.done.reject(new Error('ValidatingWebhookConfiguration x does not exist (yet)'));
      await flush();
      await advance(clock, failures.at(-1)!.retryInMs, 500);
      ensures.at(-1)!.resolve(served('CA1'));
      await flush();
    }
    expect(failures.map((f) => [f.step, f.retryInMs])).toEqual([
      ['certificate', 1_000],
      ['caBundle', 2_000],
      ['caBundle', 4_000],
      ['caBundle', 8_000],
      ['caBundle', 8_000],
    ]);
    patches.at(-1)!.done.resolve({ matched: 1, patched: 1 });
    await flush();
    expect(actor.getSnapshot().value).toBe('serving');
    expect(actor.getSnapshot().context).toMatchObject({ failures: 0, lastError: null });
  });

  it('backoffDelayMs doubles from the base up to the cap', () => {
    expect([1, 2, 3, 4, 5].map((failures) => backoffDelayMs({ ...INPUT, failures }))).toEqual([
      1_000, 2_000, 4_000, 8_000, 8_000,
    ]);
  });
});
