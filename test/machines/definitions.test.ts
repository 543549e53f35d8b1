import { describe, expect, it } from 'vitest';
import { nginxProcessMachine } from '../../machines/nginxProcess.machine.js';
import { rootSupervisorMachine } from '../../machines/rootSupervisor.machine.js';
import { syncQueueMachine } from '../../machines/syncQueue.machine.js';
import { templateMachine } from '../../machines/template.machine.js';

/** stateNames lists every state node's path in a machine definition, for diagrams and docs. */
function stateNames(node: { key: string; states: Record<string, unknown> }, prefix = ''): string[] {
  return Object.values(node.states).flatMap((child) => {
    const c = child as { key: string; states: Record<string, unknown> };
    const path = prefix ? `${prefix}.${c.key}` : c.key;
    return [path, ...stateNames(c, path)];
  });
}

describe('machine definitions', () => {
  it.each([
    [
      'syncQueue',
      syncQueueMachine,
      [
        'waitingForSync',
        'idle',
        'idle.settling',
        'idle.quiet',
        'pending',
        'pending.debouncing',
        'pending.throttled',
        'pending.due',
        'syncing',
        'settled',
        'stopped',
      ],
    ],
    ['template', templateMachine, ['loading', 'ready', 'invalid', 'failed']],
    [
      'nginxProcess',
      nginxProcessMachine,
      [
        'alive',
        'alive.starting',
        'alive.running',
        'alive.pushing',
        'alive.reloading',
        'alive.stopping',
        'alive.stopping.quitting',
        'alive.stopping.killing',
        'died',
        'draining',
        'restarting',
        'failed',
        'stopped',
      ],
    ],
    ['rootSupervisor', rootSupervisorMachine, ['booting', 'running', 'stopping', 'stopped']],
  ] as const)(
    '%s serialises (for the inspector and diagrams) with the states the issue names',
    (id, machine, states) => {
      const json = JSON.parse(JSON.stringify(machine.toJSON())) as {
        id: string;
        key: string;
        states: Record<string, unknown>;
      };
      expect(json.id).toBe(id);
      expect(stateNames(json)).toEqual(states);
    },
  );
});
