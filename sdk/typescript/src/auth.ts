/**
 * Where a bearer token comes from.
 *
 * Rules (the Python SDK's `runnel_client.auth`):
 * - a token is a string, or a function returning one (or a promise of one);
 * - a function is called for every request and for every reconnect of a follow, so a
 *   short-lived token is renewed without the caller's help; caching is the function's
 *   business;
 * - a function is renewable: after the server ended a follow at its token's expiry,
 *   asking again may give a token that is not expired; a string is not.
 */

export type TokenSource = string | (() => string | Promise<string>);

export async function tokenOf(source: TokenSource): Promise<string> {
  return typeof source === "function" ? await source() : source;
}

export function renewable(source: TokenSource): boolean {
  return typeof source === "function";
}
