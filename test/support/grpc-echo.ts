/**
 * A gRPC echo pod as the Gateway API conformance suite's echo-basic serves it (test/support/grpcecho.proto):
 * Echo and EchoTwo answer with the call's full method, its metadata, its :authority and the pod's context;
 * EchoThree is unimplemented. Plaintext HTTP/2 (h2c), as a pod behind a Gateway listens.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';

/** GRPC_ECHO_SERVICE is the echo's fully qualified service name. */
export const GRPC_ECHO_SERVICE = 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho';

const PROTO = fileURLToPath(new URL('./grpcecho.proto', import.meta.url));
const definition = loader.loadSync(PROTO, { keepCase: true, defaults: true });
const echoPackage = grpc.loadPackageDefinition(definition) as unknown as {
  gateway_api_conformance: { echo_basic: { grpcecho: { GrpcEcho: grpc.ServiceClientConstructor } } };
};
/** GrpcEchoClient is the echo's generated client constructor. */
export const GrpcEchoClient = echoPackage.gateway_api_conformance.echo_basic.grpcecho.GrpcEcho;

/** PodContext is who the echo says it is. */
export interface PodContext {
  readonly namespace: string;
  readonly ingress?: string;
  readonly service_name: string;
  readonly pod: string;
}

/** EchoResponse is the echo's answer, as proto-loader decodes it (keepCase). */
export interface EchoResponse {
  readonly assertions: {
    readonly fully_qualified_method: string;
    readonly headers: readonly { readonly key: string; readonly value: string }[];
    readonly authority: string;
    readonly context: PodContext;
  };
}

/** GrpcEchoPod is a running echo: its address and how to stop it. */
export interface GrpcEchoPod {
  readonly ip: string;
  readonly port: number;
  close(): Promise<void>;
}

/** startGrpcEcho starts an echo on `ip` (`port`, or a free one) that names itself by `context`. */
export async function startGrpcEcho(ip: string, context: PodContext, port = 0): Promise<GrpcEchoPod> {
  const server = new grpc.Server();
  const echo =
    (method: string) => (call: grpc.ServerUnaryCall<unknown, EchoResponse>, done: grpc.sendUnaryData<EchoResponse>) => {
      const headers = Object.entries(call.metadata.getMap()).map(([key, value]) => ({ key, value: String(value) }));
      // grpc-js keeps :authority out of the metadata; the call's host is what the client (nginx) sent
      const authority = call.getHost();
      done(null, {
        assertions: {
          fully_qualified_method: `/${GRPC_ECHO_SERVICE}/${method}`,
          headers,
          authority,
          context: { ingress: '', ...context },
        },
      });
    };
  server.addService(GrpcEchoClient.service, { Echo: echo('Echo'), EchoTwo: echo('EchoTwo') });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${ip}:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return {
    ip,
    port: bound,
    close: () =>
      new Promise((done) => {
        server.tryShutdown(() => done());
      }),
  };
}

/** GrpcAnswer is a call's outcome: the echo's answer and the response metadata, or the gRPC status code. */
export type GrpcAnswer =
  | { readonly ok: true; readonly response: EchoResponse; readonly metadata: Record<string, string> }
  | { readonly ok: false; readonly code: grpc.status; readonly details: string };

/** callEcho makes one unary call of `path` (`/<service>/<method>`, any: the router sees the path) with `metadata`. */
export function callEcho(
  client: grpc.Client,
  path: string,
  metadata: Record<string, string> = {},
): Promise<GrpcAnswer> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  const echo = GrpcEchoClient.service.Echo!;
  return new Promise((resolve) => {
    let headers: Record<string, string> = {};
    const call = client.makeUnaryRequest(
      path,
      echo.requestSerialize,
      echo.responseDeserialize as (b: Buffer) => EchoResponse,
      {},
      md,
      { deadline: Date.now() + 10_000 },
      (error, response) => {
        if (error) resolve({ ok: false, code: error.code, details: error.details });
        else resolve({ ok: true, response: response as EchoResponse, metadata: headers });
      },
    );
    call.on('metadata', (m: grpc.Metadata) => {
      headers = Object.fromEntries(Object.entries(m.getMap()).map(([k, v]) => [k, String(v)]));
    });
  });
}
