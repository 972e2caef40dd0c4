import { timingSafeEqual } from 'node:crypto';

/**
 * What every local HTTP door (serve over HTTP, the dashboard) checks: that a name can only mean this machine (Host
 * against DNS rebinding, Origin against web pages), and a secret compared in constant time.
 */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** `given` equals `expected`, in a time that does not tell how much of it matched. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
