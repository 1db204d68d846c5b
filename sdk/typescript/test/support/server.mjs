// What the server tests share: the server they were given (RUNNEL_URL, RUNNEL_TOKEN: the
// pytest wrapper tests/sdk_typescript/ starts a real `runnel serve`), a fresh run id per
// test, a fetch that records what was sent, and a TCP proxy whose connections a test cuts.
import { randomUUID } from "node:crypto";
import { createServer, connect } from "node:net";

import { RunnelClient } from "../../dist/index.js";

export const SERVER_URL = process.env.RUNNEL_URL;
export const TOKEN = process.env.RUNNEL_TOKEN;
/** A token with `streams:admin` too (deleting a stream), when the wrapper gives one. */
export const ADMIN_TOKEN = process.env.RUNNEL_ADMIN_TOKEN;
if (!SERVER_URL || !TOKEN) {
  throw new Error("RUNNEL_URL and RUNNEL_TOKEN name the server: run these through tests/sdk_typescript/");
}
/** Long enough for a test that waits on the server; never a measurement. */
export const GUARD_MS = 30_000;

export const runId = () => `ts-${randomUUID().slice(0, 12)}`;

export function client(options = {}) {
  return new RunnelClient({ baseUrl: SERVER_URL, token: TOKEN, ...options });
}

/** A fetch that records `METHOD path status` of each answer and tells `on` about each. */
export function recordingFetch(on = () => undefined) {
  const seen = [];
  const fetcher = async (input, init) => {
    const response = await fetch(input, init);
    const line = `${init.method} ${new URL(input).pathname.split("/streams/").at(-1)} ${response.status}`;
    seen.push(line);
    on(line, response);
    return response;
  };
  return { fetch: fetcher, seen };
}

/** Resolves once `condition()` holds (polled), or fails after the guard. */
export async function until(condition, what) {
  const deadline = Date.now() + GUARD_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Collects a follow's items in the background. */
export function collect(items) {
  const collected = { items: [], done: null };
  collected.done = (async () => {
    for await (const item of items) collected.items.push(item);
    return collected.items;
  })();
  collected.done.catch(() => undefined);
  return collected;
}

/** A TCP proxy in front of the server: `cut()` breaks every connection through it at once. */
export async function proxy() {
  const target = new URL(SERVER_URL);
  const pairs = new Set();
  const server = createServer((inbound) => {
    const outbound = connect(Number(target.port), target.hostname);
    const pair = [inbound, outbound];
    pairs.add(pair);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    const drop = () => { pairs.delete(pair); inbound.destroy(); outbound.destroy(); };
    inbound.on("error", drop).on("close", drop);
    outbound.on("error", drop).on("close", drop);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  let cuts = 0;
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    get connections() { return pairs.size; },
    get cuts() { return cuts; },
    cut() {
      cuts += 1;
      for (const [inbound, outbound] of pairs) { inbound.resetAndDestroy?.() ?? inbound.destroy(); outbound.destroy(); }
      pairs.clear();
    },
    close: () => new Promise((resolve) => { server.close(resolve); for (const [a, b] of pairs) { a.destroy(); b.destroy(); } }),
  };
}
