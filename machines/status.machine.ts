import { assign, fromPromise, setup } from 'xstate';
import type { GatewayStatus } from '../src/model/gateway/routes.js';
import type { Problem } from '../src/model/nginx-model.js';
import type { StatusCommand } from './events.js';

/** StatusInput configures the status actor; every duration is in milliseconds. */
export interface StatusInput {
  /** `--election-ttl`: how long a Lease stays valid without renewal (client-go's LeaseDuration) */
  readonly leaseDurationMs: number;
  /**
   * a leader that could not renew for this long steps down; shorter than leaseDurationMs (client-go's RenewDeadline)
   */
  readonly renewDeadlineMs: number;
  /** how often the leader renews and a follower tries to acquire (client-go's RetryPeriod) */
  readonly retryPeriodMs: number;
  /** `--update-status`: the leader writes `status.loadBalancer` of the Ingresses it serves */
  readonly updateStatus: boolean;
  /** `--update-status-on-shutdown`: the last replica clears the addresses it wrote when it stops */
  readonly updateStatusOnShutdown: boolean;
  /** the leader checks the status this often even without a change (ingress-nginx: 60 s) */
  readonly resyncPeriodMs: number;
  /** bound on the whole stop (clear, release) */
  readonly stopTimeoutMs: number;
}

/**
 * LeaseResult is what `acquireLease` and `renewLease` report: whether this replica holds the
 * Lease now, who does, and (when someone else does) how long until their Lease will have
 * expired as far as this replica can tell, so a follower tries again exactly then.
 */
export interface LeaseResult {
  readonly leader: boolean;
  readonly holder: string | null;
  readonly expiresInMs: number | null;
}

/** ShutdownCheck is what `checkPeers` reports on stop: whether another replica will take the Lease over. */
export interface ShutdownCheck {
  readonly othersWillTakeOver: boolean;
  /** why, for the log: `1 other ready endpoint`, `no peer information`, … */
  readonly reason: string;
}

/**
 * PublishStatusInput is what `publishStatus` and `clearStatus` get: the Ingresses the last sync served, null before
 * any.
 */
export interface PublishStatusInput {
  readonly served: readonly string[] | null;
}

/** PublishGatewayStatusInput is what `publishGatewayStatus` gets: the last sync's Gateway API status, null before any. */
export interface PublishGatewayStatusInput {
  readonly status: GatewayStatus | null;
}

/** RecordEventsInput is what `recordEvents` gets: the problems of the last sync, null before any. */
export interface RecordEventsInput {
  readonly problems: readonly Problem[] | null;
}

/** StatusOutput is the final state's output: whether this replica led when stopped, and what it did about it. */
export interface StatusOutput {
  readonly wasLeader: boolean;
  readonly cleared: boolean;
  readonly released: boolean;
}

/** StatusEvent is every event the status machine handles. */
export type StatusEvent = StatusCommand;

/** StatusContext is the status actor's state beyond its state value; the counters feed /metrics and logs. */
export interface StatusContext extends StatusInput {
  /** the holder last seen, this replica's identity included */
  readonly holder: string | null;
  /** when the follower tries again: the current holder's expiry when sooner than retryPeriodMs */
  readonly retryInMs: number;
  /** times this replica became leader */
  readonly elected: number;
  readonly renewals: number;
  readonly lastError: string | null;
  /** a change arrived while a publish ran: publish once more afterwards */
  readonly statusDirty: boolean;
  readonly eventsDirty: boolean;
  readonly gatewayDirty: boolean;
  readonly statusPublishes: number;
  readonly gatewayPublishes: number;
  readonly eventPublishes: number;
  readonly publishFailures: number;
  readonly wasLeader: boolean;
  readonly cleared: boolean;
  readonly released: boolean;
  /** from the last `sync.done`: `namespace/name` of the served Ingresses, null before the first */
  readonly served: readonly string[] | null;
  /** from the last `sync.done`: the problems Events are recorded for, null before the first */
  readonly problems: readonly Problem[] | null;
  /** from the last `sync.done`: the Gateway API status to write, null before the first or with the Gateway API off */
  readonly gatewayStatus: GatewayStatus | null;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const notProvided = (name: string) => async (): Promise<never> => {
  throw new Error(`actor "${name}" not provided`);
};

/**
 * statusMachine is one replica's part in leader election, and the leader's duties: the Ingress
 * status addresses and the Kubernetes Events for problems.
 *
 * States: `follower` (`campaigning`: `acquireLease` → `waiting`: retryPeriodMs, or until the
 * holder's Lease expires if sooner → `campaigning`) until the Lease is ours → `leader`, parallel:
 * `lease` (`held` holds `holding` → `renewing` every retryPeriodMs; a successful renew re-enters
 * `held`, restarting its renewDeadlineMs timer; the timer firing, or a renew that finds the Lease
 * taken, → `follower`), `status` (`off` without --update-status; else `publishing` ⇄ `idle`, on
 * `sync.done` and every resyncPeriodMs), `events` (`recording` ⇄ `idle`, on `sync.done`), `gateway`
 * (`publishing` ⇄ `idle`: the Gateway API status, on `sync.done` and every resyncPeriodMs). `status.stop`: a `waiting`
 * follower → `stopped`; a `campaigning` one →
 * `stopping.releasing`, as its acquire may yet win; the leader → `stopping` (`checking`
 * whether another replica will take over → `clearing` the addresses if none will →
 * `releasing` the Lease) → `stopped` (final; bounded by stopTimeoutMs).
 *
 * Every `sync.done`, in any state, replaces the served Ingresses and problems kept in the context,
 * which the publishes get as input. A change during a publish is not lost: it marks the region
 * dirty and the publish runs again.
 * A failed publish is retried retryPeriodMs later. Output: `{ wasLeader, cleared, released }`.
 *
 * Effects to provide (each a fromPromise): `acquireLease`, `renewLease` (→ LeaseResult; 409 =
 * lost the race, so `leader: false`), `releaseLease` (→ whether it released one), `publishStatus`
 * (PublishStatusInput: write the addresses where they differ), `recordEvents` (RecordEventsInput:
 * Events for new problems), `publishGatewayStatus` (PublishGatewayStatusInput: write the Gateway API status where it
 * differs), `checkPeers` (→ ShutdownCheck), `clearStatus` (PublishStatusInput); and the logging
 * actions `reportLeading`, `reportFollowing`, `reportShutdown`, `reportLeaseError` (a failed campaign whose error
 * differs from the last one: said once, not at every retry).
 */
export const statusMachine = setup({
  types: {
    context: {} as StatusContext,
    events: {} as StatusEvent,
    input: {} as StatusInput,
    output: {} as StatusOutput,
  },
  actors: {
    acquireLease: fromPromise<LeaseResult, void>(notProvided('acquireLease')),
    renewLease: fromPromise<LeaseResult, void>(notProvided('renewLease')),
    releaseLease: fromPromise<boolean, void>(notProvided('releaseLease')),
    publishStatus: fromPromise<void, PublishStatusInput>(notProvided('publishStatus')),
    recordEvents: fromPromise<void, RecordEventsInput>(notProvided('recordEvents')),
    publishGatewayStatus: fromPromise<void, PublishGatewayStatusInput>(notProvided('publishGatewayStatus')),
    checkPeers: fromPromise<ShutdownCheck, void>(notProvided('checkPeers')),
    clearStatus: fromPromise<void, PublishStatusInput>(notProvided('clearStatus')),
  },
  actions: {
    reportLeading: () => {},
    reportFollowing: (_, _params: { reason: string }) => {},
    reportLeaseError: (_, _params: { error: string; retryInMs: number }) => {},
    reportShutdown: (_, _params: ShutdownCheck) => {},
    countStatusPublish: assign({ statusPublishes: ({ context }) => context.statusPublishes + 1 }),
    countEventPublish: assign({ eventPublishes: ({ context }) => context.eventPublishes + 1 }),
    countGatewayPublish: assign({ gatewayPublishes: ({ context }) => context.gatewayPublishes + 1 }),
    recordPublishFailure: assign(({ context }, params: { error: unknown }) => ({
      publishFailures: context.publishFailures + 1,
      lastError: describe(params.error),
    })),
    recordError: assign({ lastError: (_, params: { error: unknown }) => describe(params.error) }),
    recordElected: assign(({ context }, params: { result: LeaseResult }) => ({
      holder: params.result.holder,
      elected: context.elected + 1,
      lastError: null,
    })),
    // Try again when the holder's Lease runs out, if that comes before the next retry.
    recordHolder: assign(({ context }, params: { result: LeaseResult }) => ({
      holder: params.result.holder,
      lastError: null,
      retryInMs:
        params.result.expiresInMs === null
          ? context.retryPeriodMs
          : Math.max(0, Math.min(context.retryPeriodMs, params.result.expiresInMs)),
    })),
    recordRenewed: assign(({ context }) => ({ renewals: context.renewals + 1, lastError: null })),
    recordLost: assign({ holder: (_, params: { result: LeaseResult }) => params.result.holder }),
    retryLater: assign(({ context }) => ({ retryInMs: context.retryPeriodMs })),
    keepSyncResult: assign(({ context, event }) =>
      event.type === 'sync.done'
        ? { served: event.served, problems: event.problems, gatewayStatus: event.gatewayStatus ?? null }
        : { served: context.served, problems: context.problems, gatewayStatus: context.gatewayStatus },
    ),
  },
  guards: {
    holdsLease: (_, params: { result: LeaseResult }) => params.result.leader,
    othersWillTakeOver: (_, params: { check: ShutdownCheck }) => params.check.othersWillTakeOver,
    updateStatus: ({ context }) => context.updateStatus,
    clearOnShutdown: ({ context }) => context.updateStatus && context.updateStatusOnShutdown,
    statusDirty: ({ context }) => context.statusDirty,
    eventsDirty: ({ context }) => context.eventsDirty,
    gatewayDirty: ({ context }) => context.gatewayDirty,
  },
  delays: {
    retryDelay: ({ context }) => context.retryInMs,
    retryPeriod: ({ context }) => context.retryPeriodMs,
    renewDeadline: ({ context }) => context.renewDeadlineMs,
    resyncPeriod: ({ context }) => context.resyncPeriodMs,
    stopTimeout: ({ context }) => context.stopTimeoutMs,
  },
}).createMachine({
  id: 'status',
  context: ({ input }) => ({
    ...input,
    holder: null,
    retryInMs: input.retryPeriodMs,
    elected: 0,
    renewals: 0,
    lastError: null,
    statusDirty: false,
    eventsDirty: false,
    gatewayDirty: false,
    statusPublishes: 0,
    gatewayPublishes: 0,
    eventPublishes: 0,
    publishFailures: 0,
    wasLeader: false,
    cleared: false,
    released: false,
    served: null,
    problems: null,
    gatewayStatus: null,
  }),
  initial: 'follower',
  // Kept in every state (a follower that becomes leader publishes the latest at once); the
  // leader's regions below keep it too, as they handle the event themselves.
  on: { 'sync.done': { actions: 'keepSyncResult' } },
  states: {
    follower: {
      on: { 'status.stop': { target: 'stopped' } },
      initial: 'campaigning',
      states: {
        campaigning: {
          // The acquire's request runs on after its actor stops, and may win the Lease: release
          // it then (releaseLease waits for that request, and gives up only a Lease it holds).
          on: { 'status.stop': { target: '#status.stopping.releasing' } },
          invoke: {
            src: 'acquireLease',
            onDone: [
              {
                guard: { type: 'holdsLease', params: ({ event }) => ({ result: event.output }) },
                target: '#status.leader',
                actions: { type: 'recordElected', params: ({ event }) => ({ result: event.output }) },
              },
              {
                target: 'waiting',
                actions: { type: 'recordHolder', params: ({ event }) => ({ result: event.output }) },
              },
            ],
            onError: {
              target: 'waiting',
              actions: [
                {
                  type: 'reportLeaseError',
                  params: ({ context, event }) => ({ error: describe(event.error), retryInMs: context.retryPeriodMs }),
                },
                { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
                'retryLater',
              ],
            },
          },
        },
        waiting: {
          after: { retryDelay: { target: 'campaigning' } },
        },
      },
    },
    leader: {
      type: 'parallel',
      entry: ['reportLeading', assign({ wasLeader: true })],
      on: {
        'status.stop': { target: 'stopping' },
      },
      states: {
        lease: {
          initial: 'held',
          states: {
            held: {
              // Re-entered on every successful renew, which restarts this timer.
              after: {
                renewDeadline: {
                  target: '#status.follower',
                  actions: {
                    type: 'reportFollowing',
                    params: ({ context }) => ({
                      reason:
                        `could not renew the Lease for ${context.renewDeadlineMs} ms (` +
                        `${context.lastError ?? 'no answer'})`,
                    }),
                  },
                },
              },
              initial: 'holding',
              states: {
                holding: {
                  after: { retryPeriod: { target: 'renewing' } },
                },
                renewing: {
                  invoke: {
                    src: 'renewLease',
                    onDone: [
                      {
                        guard: { type: 'holdsLease', params: ({ event }) => ({ result: event.output }) },
                        target: '#status.leader.lease.held',
                        reenter: true,
                        actions: 'recordRenewed',
                      },
                      {
                        target: '#status.follower',
                        actions: [
                          { type: 'recordLost', params: ({ event }) => ({ result: event.output }) },
                          {
                            type: 'reportFollowing',
                            params: ({ event }) => ({
                              reason: `the Lease is held by ${event.output.holder ?? 'nobody'} now`,
                            }),
                          },
                        ],
                      },
                    ],
                    // Keep leading until the renew deadline; try again after retryPeriodMs.
                    onError: {
                      target: 'holding',
                      actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
                    },
                  },
                },
              },
            },
          },
        },
        status: {
          initial: 'deciding',
          states: {
            deciding: {
              always: [{ guard: 'updateStatus', target: 'publishing' }, { target: 'off' }],
            },
            off: {},
            publishing: {
              entry: assign({ statusDirty: false }),
              on: { 'sync.done': { actions: ['keepSyncResult', assign({ statusDirty: true })] } },
              invoke: {
                src: 'publishStatus',
                input: ({ context }) => ({ served: context.served }),
                onDone: [
                  { guard: 'statusDirty', target: 'publishing', reenter: true, actions: 'countStatusPublish' },
                  { target: 'idle', actions: 'countStatusPublish' },
                ],
                onError: {
                  target: 'failed',
                  actions: { type: 'recordPublishFailure', params: ({ event }) => ({ error: event.error }) },
                },
              },
            },
            idle: {
              on: { 'sync.done': { target: 'publishing', actions: 'keepSyncResult' } },
              after: { resyncPeriod: { target: 'publishing' } },
            },
            // A change here is covered by the retry.
            failed: {
              after: { retryPeriod: { target: 'publishing' } },
            },
          },
        },
        events: {
          initial: 'recording',
          states: {
            recording: {
              entry: assign({ eventsDirty: false }),
              on: { 'sync.done': { actions: ['keepSyncResult', assign({ eventsDirty: true })] } },
              invoke: {
                src: 'recordEvents',
                input: ({ context }) => ({ problems: context.problems }),
                onDone: [
                  { guard: 'eventsDirty', target: 'recording', reenter: true, actions: 'countEventPublish' },
                  { target: 'idle', actions: 'countEventPublish' },
                ],
                onError: {
                  target: 'failed',
                  actions: { type: 'recordPublishFailure', params: ({ event }) => ({ error: event.error }) },
                },
              },
            },
            idle: {
              on: { 'sync.done': { target: 'recording', actions: 'keepSyncResult' } },
            },
            failed: {
              after: { retryPeriod: { target: 'recording' } },
            },
          },
        },
        // The Gateway API status, whatever --update-status says (that flag is about Ingress addresses).
        gateway: {
          initial: 'publishing',
          states: {
            publishing: {
              entry: assign({ gatewayDirty: false }),
              on: { 'sync.done': { actions: ['keepSyncResult', assign({ gatewayDirty: true })] } },
              invoke: {
                src: 'publishGatewayStatus',
                input: ({ context }) => ({ status: context.gatewayStatus }),
                onDone: [
                  { guard: 'gatewayDirty', target: 'publishing', reenter: true, actions: 'countGatewayPublish' },
                  { target: 'idle', actions: 'countGatewayPublish' },
                ],
                onError: {
                  target: 'failed',
                  actions: { type: 'recordPublishFailure', params: ({ event }) => ({ error: event.error }) },
                },
              },
            },
            idle: {
              on: { 'sync.done': { target: 'publishing', actions: 'keepSyncResult' } },
              after: { resyncPeriod: { target: 'publishing' } },
            },
            failed: {
              after: { retryPeriod: { target: 'publishing' } },
            },
          },
        },
      },
    },
    stopping: {
      after: {
        stopTimeout: {
          target: 'stopped',
          actions: assign({ lastError: ({ context }) => `stopping timed out after ${context.stopTimeoutMs} ms` }),
        },
      },
      initial: 'deciding',
      states: {
        deciding: {
          always: [{ guard: 'clearOnShutdown', target: 'checking' }, { target: 'releasing' }],
        },
        checking: {
          invoke: {
            src: 'checkPeers',
            onDone: [
              {
                guard: { type: 'othersWillTakeOver', params: ({ event }) => ({ check: event.output }) },
                target: 'releasing',
                actions: { type: 'reportShutdown', params: ({ event }) => event.output },
              },
              { target: 'clearing', actions: { type: 'reportShutdown', params: ({ event }) => event.output } },
            ],
            // Not knowing is not knowing that nobody will: keep the addresses.
            onError: {
              target: 'releasing',
              actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
            },
          },
        },
        clearing: {
          invoke: {
            src: 'clearStatus',
            input: ({ context }) => ({ served: context.served }),
            onDone: { target: 'releasing', actions: assign({ cleared: true }) },
            onError: {
              target: 'releasing',
              actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
            },
          },
        },
        releasing: {
          invoke: {
            src: 'releaseLease',
            onDone: { target: '#status.stopped', actions: assign({ released: ({ event }) => event.output }) },
            onError: {
              target: '#status.stopped',
              actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
            },
          },
        },
      },
    },
    stopped: { type: 'final' },
  },
  output: ({ context }) => ({ wasLeader: context.wasLeader, cleared: context.cleared, released: context.released }),
});
