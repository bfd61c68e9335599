/** Entries of the Settings → Network allow-list, checked the same in the renderer and the main process. */

/** 4 or 6 for an IPv4 / IPv6 address, 0 otherwise (no Node APIs: the renderer uses it too). */
export function ipVersion(s: string): 0 | 4 | 6 {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (v4) return v4.slice(1).every((p) => Number(p) <= 255 && (p === '0' || !p.startsWith('0'))) ? 4 : 0;
  if (!s.includes(':') || !/^[0-9a-f:.]+$/i.test(s)) return 0;
  try {
    new URL(`http://[${s}]/`);
    return 6;
  } catch {
    return 0;
  }
}

/** A host name, an IP address, or an address/prefix CIDR range. */
export function isAllowListEntry(entry: string): boolean {
  const [net, bits, extra] = entry.trim().split('/');
  if (extra !== undefined || !net) return false;
  const kind = ipVersion(net);
  if (kind) return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (kind === 4 ? 32 : 128));
  return bits === undefined && /^(?=.{1,253}\.?$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$/i.test(net);
}
