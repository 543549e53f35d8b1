import { readFile } from 'node:fs/promises';
import { checkIp } from '../model/validate.js';

/**
 * nameservers reads the `nameserver` lines of resolv.conf, for nginx's `resolver` (auth-url
 * names looked up per request, as ingress-nginx does). Addresses that are not plain IPs (an IPv6
 * zone, a typo) are left out; a missing file gives none, and then such names fail at request time.
 */
export async function nameservers(path = '/etc/resolv.conf'): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const [keyword, address] = line.trim().split(/\s+/);
    if (keyword !== 'nameserver' || address === undefined) continue;
    const ip = checkIp(address);
    if (!ip.ok) continue;
    const formatted = ip.value.family === 6 ? `[${ip.value.address}]` : ip.value.address;
    if (!out.includes(formatted)) out.push(formatted);
  }
  return out;
}
