import type { Checked } from '../validate.js';
import { read } from './read.js';
import type { AnnotationGroup } from './types.js';

function checkCodes(value: string): Checked<number[]> {
  if (value.length > 1024) return { ok: false, message: 'is longer than 1024 characters' };
  const parts = value.split(',').map((p) => p.trim());
  const codes = parts.map(Number);
  if (parts.some((p) => !/^\d{3}$/.test(p)) || codes.some((c) => c < 400 || c > 599)) {
    return {
      ok: false,
      message: `${JSON.stringify(value.slice(0, 80))} is not a comma-separated list of HTTP error codes (400-599)`,
    };
  }
  return { ok: true, value: [...new Set(codes)].sort((a, b) => a - b) };
}

/** customHttpErrorsGroup is custom-http-errors: errors the default backend renders instead of the Service. */
export const customHttpErrorsGroup: AnnotationGroup<'customHttpErrors'> = {
  name: 'CustomHTTPErrors',
  field: 'customHttpErrors',
  keys: [
    {
      key: 'custom-http-errors',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'partial',
      doc:
        "these upstream error codes are answered by the default-backend annotation's Service, else by " +
        '--default-backend-service, with X-Code, X-Original-URI and friends',
      note:
        "with no default backend at all the Service's own error page is passed through (ingress-nginx would show " +
        'its built-in one)',
    },
  ],
  parse: (input) => read(input, 'custom-http-errors', checkCodes) ?? [],
};
