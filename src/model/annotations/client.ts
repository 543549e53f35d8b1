import { checkOffset, checkSize } from '../validate.js';
import { read } from './read.js';
import type { AnnotationGroup } from './types.js';

/** clientGroup is proxy-body-size and client-body-buffer-size: how much request body nginx takes, and buffers. */
export const clientGroup: AnnotationGroup<'client'> = {
  name: 'ClientBody',
  field: 'client',
  keys: [
    {
      key: 'proxy-body-size',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'client_max_body_size (413 above it; k, m or g; 0: no limit)',
    },
    {
      key: 'client-body-buffer-size',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'client_body_buffer_size (bytes, k or m: nginx reads no g here)',
    },
  ],
  parse(input) {
    const maxBodySize = read(input, 'proxy-body-size', checkOffset) ?? null;
    const bodyBufferSize = read(input, 'client-body-buffer-size', (v) => checkSize(v)) ?? null;
    return maxBodySize === null && bodyBufferSize === null ? null : { maxBodySize, bodyBufferSize };
  },
};
