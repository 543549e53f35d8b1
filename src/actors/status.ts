import { fromPromise } from 'xstate';
import type {
  LeaseResult,
  PublishGatewayStatusInput,
  PublishStatusInput,
  RecordEventsInput,
  ShutdownCheck,
} from '../../machines/status.machine.js';
import type { EventRecorder } from '../kube/events.js';
import { describeApiError, type LeaseElector } from '../kube/leader.js';
import type { GatewayStatusWriter } from '../kube/gateway-status.js';
import { servedLookup, type StatusWriter } from '../kube/status.js';
import type { Logger } from '../log.js';

/** shortError rethrows an API error as `404 NotFound: <its message>`. */
function shortError(error: unknown): never {
  throw new Error(describeApiError(error), { cause: error });
}

/** StatusActorOptions are the adapters the status machine's effects run on. */
export interface StatusActorOptions {
  readonly elector: LeaseElector;
  readonly writer: StatusWriter;
  readonly recorder: EventRecorder;
  /** the Gateway API status writer; absent: the Gateway API is off, nothing to write */
  readonly gatewayWriter?: GatewayStatusWriter;
  /** `namespace/name` of the election Lease, for logs */
  readonly lease: string;
  readonly log: Logger;
}

/**
 * statusActors implements the status machine's effects: the Lease through LeaseElector, the
 * Ingress status through StatusWriter, Events through EventRecorder, the Gateway API status through
 * GatewayStatusWriter, and its logging actions.
 * What they publish comes in their input, from the last `sync.done` the machine was sent.
 * Pass the result to `statusMachine.provide()`.
 */
export function statusActors(options: StatusActorOptions) {
  const { elector, writer, recorder, gatewayWriter, log } = options;
  const who = { lease: options.lease, identity: elector.identity };
  return {
    actors: {
      // A client-node error carries the whole response, headers and date included: keep its status and message.
      acquireLease: fromPromise<LeaseResult, void>(() => elector.tryAcquireOrRenew().catch(shortError)),
      renewLease: fromPromise<LeaseResult, void>(() => elector.tryAcquireOrRenew().catch(shortError)),
      releaseLease: fromPromise<boolean, void>(async () => {
        const released = await elector.release();
        if (released) log.info(who, 'released the leader Lease');
        return released;
      }),
      publishStatus: fromPromise<void, PublishStatusInput>(async ({ input }) => {
        const { written, unchanged } = await writer.publish(input.served && servedLookup(input.served));
        if (written > 0) log.info({ written, unchanged }, 'Ingress status published');
      }),
      recordEvents: fromPromise<void, RecordEventsInput>(async ({ input: { problems } }) => {
        if (problems === null) return;
        const { created, counted, limited } = await recorder.record(problems);
        if (created + counted + limited > 0) log.info({ created, counted, limited }, 'Events for Ingress problems');
      }),
      publishGatewayStatus: fromPromise<void, PublishGatewayStatusInput>(async ({ input }) => {
        if (!gatewayWriter) return;
        const { written, unchanged, conflicts } = await gatewayWriter.publish(input.status);
        if (written > 0) log.info({ written, unchanged, conflicts }, 'Gateway API status published');
      }),
      checkPeers: fromPromise<ShutdownCheck, void>(async () => writer.checkPeers()),
      clearStatus: fromPromise<void, PublishStatusInput>(async ({ input }) => {
        const cleared = await writer.clear(new Set(input.served));
        log.info({ cleared }, 'no other replica will take over: Ingress status cleared');
      }),
    },
    actions: {
      reportLeading: () => log.info(who, 'became the leader'),
      reportFollowing: (_: unknown, { reason }: { reason: string }) =>
        log.warn({ ...who, reason }, 'no longer the leader'),
      // Once per distinct error, not at every retry: the status actor's lastError is the one said before.
      reportLeaseError: (
        { context }: { context: { lastError: string | null } },
        { error, retryInMs }: { error: string; retryInMs: number },
      ) => {
        if (context.lastError !== error)
          log.warn({ ...who, error, retryInMs }, 'cannot take part in the leader election; trying again');
      },
      reportShutdown: (_: unknown, check: ShutdownCheck) =>
        log.info(
          { ...who, ...check },
          check.othersWillTakeOver
            ? 'stopping: another replica will take over, the status stays'
            : 'stopping: no other replica will take over',
        ),
    },
  };
}
