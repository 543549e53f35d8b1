/**
 * Decoding of the Kubernetes protobuf encoding for request bodies. kubectl's typed clients
 * (`kubectl create namespace|configmap|secret|service|ingress`) send
 * `application/vnd.kubernetes.protobuf` and do not fall back to JSON on a 415, so the server
 * reads it: the `k8s\0` envelope (runtime.Unknown) around the kind's message. Field numbers are
 * those of k8s.io/api's generated.proto; fields left at their zero value are dropped, which is
 * what the server's JSON (all `omitempty`) shows for them. Answers are still JSON, which these
 * clients accept. Kinds kubectl never sends as protobuf get a 415.
 */
import { ApiError } from './status.js';

type Value = unknown;
type Kind = 'string' | 'int' | 'bool' | 'bytes' | 'time' | 'intOrString';

/** Field is one field of a message: a scalar, a nested message, or a map of scalars. */
interface Field {
  readonly name: string;
  readonly kind?: Kind;
  readonly message?: Message;
  readonly map?: 'string' | 'bytes';
  readonly repeated?: boolean;
  /** Fields of the nested message that JSON shows inline in the parent (IngressRule's value). */
  readonly inline?: boolean;
}

type Message = Readonly<Record<number, Field>>;

const s = (name: string, repeated = false): Field => ({ name, kind: 'string', repeated });
const i = (name: string): Field => ({ name, kind: 'int' });
const b = (name: string): Field => ({ name, kind: 'bool' });
const m = (name: string, message: Message, repeated = false): Field => ({ name, message, repeated });
const map = (name: string, values: 'string' | 'bytes' = 'string'): Field => ({ name, map: values });

const OWNER_REFERENCE: Message = {
  1: s('kind'),
  3: s('name'),
  4: s('uid'),
  5: s('apiVersion'),
  6: b('controller'),
  7: b('blockOwnerDeletion'),
};
const OBJECT_META: Message = {
  1: s('name'),
  2: s('generateName'),
  3: s('namespace'),
  5: s('uid'),
  6: s('resourceVersion'),
  7: i('generation'),
  8: { name: 'creationTimestamp', kind: 'time' },
  11: map('labels'),
  12: map('annotations'),
  13: m('ownerReferences', OWNER_REFERENCE, true),
  14: s('finalizers', true),
};

const SERVICE_PORT: Message = {
  1: s('name'),
  2: s('protocol'),
  3: i('port'),
  4: { name: 'targetPort', kind: 'intOrString' },
  5: i('nodePort'),
  6: s('appProtocol'),
};
const SERVICE_SPEC: Message = {
  1: m('ports', SERVICE_PORT, true),
  2: map('selector'),
  3: s('clusterIP'),
  4: s('type'),
  5: s('externalIPs', true),
  7: s('sessionAffinity'),
  8: s('loadBalancerIP'),
  9: s('loadBalancerSourceRanges', true),
  10: s('externalName'),
  11: s('externalTrafficPolicy'),
  12: i('healthCheckNodePort'),
  13: b('publishNotReadyAddresses'),
  17: s('ipFamilyPolicy'),
  18: s('clusterIPs', true),
  19: s('ipFamilies', true),
  20: b('allocateLoadBalancerNodePorts'),
  21: s('loadBalancerClass'),
  22: s('internalTrafficPolicy'),
  23: s('trafficDistribution'),
};

const INGRESS_BACKEND: Message = {
  4: m('service', { 1: s('name'), 2: m('port', { 1: s('name'), 2: i('number') }) }),
  3: m('resource', { 1: s('apiGroup'), 2: s('kind'), 3: s('name') }),
};
const INGRESS_SPEC: Message = {
  4: s('ingressClassName'),
  1: m('defaultBackend', INGRESS_BACKEND),
  2: m('tls', { 1: s('hosts', true), 2: s('secretName') }, true),
  3: m(
    'rules',
    {
      1: s('host'),
      2: {
        name: 'ingressRuleValue',
        inline: true,
        message: {
          1: m('http', { 1: m('paths', { 1: s('path'), 3: s('pathType'), 2: m('backend', INGRESS_BACKEND) }, true) }),
        },
      },
    },
    true,
  ),
};

/** The messages of the kinds kubectl's typed clients create. */
const KINDS: Record<string, Message> = {
  Namespace: {
    1: m('metadata', OBJECT_META),
    2: m('spec', { 1: s('finalizers', true) }),
    3: m('status', { 1: s('phase') }),
  },
  ConfigMap: { 1: m('metadata', OBJECT_META), 2: map('data'), 3: map('binaryData', 'bytes'), 4: b('immutable') },
  Secret: {
    1: m('metadata', OBJECT_META),
    2: map('data', 'bytes'),
    3: s('type'),
    4: map('stringData'),
    5: b('immutable'),
  },
  Service: { 1: m('metadata', OBJECT_META), 2: m('spec', SERVICE_SPEC) },
  Ingress: { 1: m('metadata', OBJECT_META), 2: m('spec', INGRESS_SPEC) },
};

const ENVELOPE: Message = {
  1: m('typeMeta', { 1: s('apiVersion'), 2: s('kind') }),
  2: { name: 'raw', kind: 'bytes' },
  3: s('contentEncoding'),
  4: s('contentType'),
};

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw malformed();
      const byte = this.buf[this.pos++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  }

  bytes(): Buffer {
    const length = Number(this.varint());
    if (this.pos + length > this.buf.length) throw malformed();
    const out = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 2) this.bytes();
    else if (wireType === 5) this.pos += 4;
    else throw malformed();
  }
}

function malformed(): ApiError {
  return new ApiError(400, 'BadRequest', 'the protobuf body of the request is malformed');
}

function signed(value: bigint): number {
  return Number(BigInt.asIntN(64, value));
}

function scalar(kind: Kind, reader: Reader): Value {
  switch (kind) {
    case 'string':
      return reader.bytes().toString('utf8');
    case 'bytes':
      return reader.bytes().toString('base64');
    case 'int':
      return signed(reader.varint());
    case 'bool':
      return reader.varint() !== 0n;
    case 'time': {
      const t = decodeMessage(reader.bytes(), { 1: i('seconds'), 2: i('nanos') }) as { seconds?: number };
      return t.seconds ? new Date(t.seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') : undefined;
    }
    case 'intOrString': {
      const v = decodeMessage(reader.bytes(), { 1: i('type'), 2: i('intVal'), 3: s('strVal') }) as {
        type?: number;
        intVal?: number;
        strVal?: string;
      };
      return v.type === 1 ? v.strVal : v.intVal;
    }
  }
}

function isEmpty(value: Value): boolean {
  if (value === undefined || value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

function decodeMessage(buf: Buffer, message: Message): Record<string, Value> {
  const out: Record<string, Value> = {};
  const reader = new Reader(buf);
  while (!reader.done) {
    const tag = Number(reader.varint());
    const number = tag >>> 3;
    const wireType = tag & 7;
    const field = message[number];
    if (!field) {
      reader.skip(wireType);
      continue;
    }
    let value: Value;
    if (field.map) {
      const entry = decodeMessage(reader.bytes(), { 1: s('key'), 2: { name: 'value', kind: field.map } });
      const target = (out[field.name] ??= {}) as Record<string, Value>;
      target[String(entry.key ?? '')] = entry.value ?? '';
      continue;
    }
    if (field.message) value = decodeMessage(reader.bytes(), field.message);
    else value = scalar(field.kind!, reader);
    if (field.inline) {
      Object.assign(out, value as object);
    } else if (field.repeated) {
      ((out[field.name] ??= []) as Value[]).push(value);
    } else if (!isEmpty(value)) {
      out[field.name] = value;
    }
  }
  for (const [key, value] of Object.entries(out)) if (isEmpty(value) && !Array.isArray(value)) delete out[key];
  return out;
}

/** isProtobuf says whether a Content-Type is the Kubernetes protobuf encoding. */
export function isProtobuf(mediaType: string): boolean {
  return mediaType === 'application/vnd.kubernetes.protobuf';
}

/** decodeProtobuf turns a `k8s\0`-framed body into the JSON object a client would have sent. */
export function decodeProtobuf(body: Buffer): Record<string, Value> {
  if (!body.subarray(0, 4).equals(MAGIC)) throw malformed();
  const envelope = decodeMessage(body.subarray(4), ENVELOPE) as {
    typeMeta?: { apiVersion?: string; kind?: string };
    raw?: string;
  };
  const kind = envelope.typeMeta?.kind ?? '';
  const message = KINDS[kind];
  if (!message)
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      `protobuf bodies are only read for ${Object.keys(KINDS).join(', ')}` +
        `; send ${kind || 'this kind'} as application/json`,
    );
  const object = decodeMessage(Buffer.from(envelope.raw ?? '', 'base64'), message);
  return { apiVersion: envelope.typeMeta?.apiVersion, kind, ...object };
}
