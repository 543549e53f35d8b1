/**
 * Watch lines as kube-apiserver writes them: U+2028 and U+2029 escaped (Go's encoding/json always
 * does), so a line reader such as client-node's Watch (Node's readline, which ends lines there
 * too) gets each event whole. Unescaped, an object holding one arrived as two halves and client-node
 * dropped the event without a word.
 */
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { afterEach, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { watchLine } from '../../src/dev/api-server/watch.js';
import { testIngress } from '../support/kube-api.js';

let server: ApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it('escapes U+2028 and U+2029 in watch lines, and the JSON still reads back the same', () => {
  const event = { type: 'ADDED', object: { metadata: { annotations: { a: 'x\u2028y\u2029z\n' } } } };
  const line = watchLine(event);
  expect(line).not.toMatch(/[\u2028\u2029\n]/);
  expect(JSON.parse(line)).toEqual(event);
});

it('delivers an object holding U+2028 to client-node watches', async () => {
  server = await startApiServer();
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfigText);
  const seen: string[] = [];
  const watch = await new Watch(kc).watch(
    '/apis/networking.k8s.io/v1/ingresses',
    {},
    (type: string, obj: { metadata?: { name?: string; annotations?: Record<string, string> } }) => {
      seen.push(`${type} ${obj.metadata?.name} ${JSON.stringify(obj.metadata?.annotations ?? {})}`);
    },
    () => undefined,
  );
  const ingress = testIngress('line', 'default', 'line.example.com');
  server.registry.apply({
    ...ingress,
    metadata: { ...ingress.metadata, annotations: { note: 'one\u2028two\u2029three' } },
  } as never);
  const deadline = Date.now() + 5000;
  while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  watch.abort();
  expect(seen).toEqual([`ADDED line ${JSON.stringify({ note: 'one\u2028two\u2029three' })}`]);
});
