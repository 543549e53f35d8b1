import { oneOf, read } from './read.js';
import type { AnnotationGroup } from './types.js';

/** backendProtocolGroup is backend-protocol: how nginx talks to the Service. */
export const backendProtocolGroup: AnnotationGroup<'backendProtocol'> = {
  name: 'BackendProtocol',
  field: 'backendProtocol',
  keys: [
    {
      key: 'backend-protocol',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'HTTP (default), HTTPS, GRPC or GRPCS: proxy_pass http(s):// or grpc_pass grpc(s)://',
      note:
        'AJP and FCGI are refused (ignored: HTTP, the default, applies); HTTPS does not verify the backend certificate, as ' +
        'ingress-nginx without proxy-ssl-verify',
    },
  ],
  parse(input) {
    const protocol = read(input, 'backend-protocol', (v) => {
      if (/^(AJP|FCGI)$/i.test(v.trim()))
        return {
          ok: false,
          message: `${v.trim().toUpperCase()} backends are not supported (HTTP, HTTPS, GRPC, GRPCS)`,
        };
      return oneOf(['HTTP', 'HTTPS', 'GRPC', 'GRPCS'] as const, true)(v);
    });
    return protocol ? (protocol.toLowerCase() as 'http' | 'https' | 'grpc' | 'grpcs') : 'http';
  },
};
