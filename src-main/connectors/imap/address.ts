import { isIP } from 'node:net';

/**
 * The From address when none is set: the user name if it is an address, else user@host, with
 * an IP host as an address literal (`user@[127.0.0.1]`, RFC 5321 4.1.3) that SMTP servers accept.
 */
export function defaultAddress(user: string, host: string): string {
  if (user.includes('@')) return user;
  const literal = isIP(host) === 4 ? `[${host}]` : isIP(host) === 6 ? `[IPv6:${host}]` : host;
  return `${user}@${literal}`;
}
