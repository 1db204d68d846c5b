// The fetch driver's own rules, over a fetch of the test's making: the token asked for
// every request, a silent subscription broken off and resumed, a deadline, the caller's
// signal ending a follow quietly.
import assert from "node:assert/strict";
import { test } from "node:test";

import { FollowState, RunnelClient, TransportError } from "../../dist/index.js";

const encoder = new TextEncoder();
const frame = (sequence) => encoder.encode(
  `id: ${sequence}\r\nevent: record\r\ndata: {"sequence":${sequence},"content_type":"application/json",`
  + `"appended_at":"t","payload":${sequence}}\r\n\r\n`);
const END = encoder.encode("event: end\r\ndata: {\"reason\":\"closed\",\"last_sequence\":2}\r\n\r\n");

/** A body that sends `chunks` and then stays open, sending nothing, until aborted. */
function silentAfter(chunks, signal) {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      signal.addEventListener("abort", () => controller.error(signal.reason));
    },
  });
}

test("every request asks the token function again and sends it as a bearer token", async () => {
  const sent = [];
  let asked = 0;
  const fetch = async (url, init) => {
    sent.push(init.headers.Authorization);
    return new Response(JSON.stringify({ consumer_id: "ui", acked: 1 }), { status: 200 });
  };
  const rn = new RunnelClient({ baseUrl: "http://runnel.test", token: () => `t${++asked}`, fetch });
  await rn.ack("r", "s", "ui", 1);
  await rn.ack("r", "s", "ui", 1);
  assert.deepEqual(sent, ["Bearer t1", "Bearer t2"]);
});

test("a subscription silent past its idle time is broken off and resumed after the cursor", async () => {
  const opened = [];
  const fetch = async (url, init) => {
    opened.push(init.headers["Last-Event-ID"]);
    const chunks = opened.length === 1 ? [frame(1)] : [frame(1), frame(2), END];
    return new Response(silentAfter(chunks, init.signal), { status: 200 });
  };
  const rn = new RunnelClient({ baseUrl: "http://runnel.test", token: "t", fetch });
  const state = new FollowState(0);
  const seen = [];
  for await (const record of rn.follow("r", "s", { state, idleSeconds: 0.2 })) seen.push(record.sequence);
  assert.deepEqual(seen, [1, 2]);
  assert.deepEqual(opened, ["0", "1"]);
  assert.deepEqual([state.reconnects, state.duplicates], [1, 1]);
});

test("a request with no answer within the deadline is a TransportError", async () => {
  const fetch = (url, init) => new Promise((_, reject) => {
    init.signal.addEventListener("abort", () => reject(init.signal.reason));
  });
  const rn = new RunnelClient({ baseUrl: "http://runnel.test", token: "t", fetch, timeoutSeconds: 0.1 });
  await assert.rejects(rn.getStream("r", "s"), (error) => error instanceof TransportError && /within 0.1 s/.test(error.message));
});

test("the caller's signal ends a follow quietly and aborts its connection", async () => {
  let connection;
  const fetch = async (url, init) => {
    connection = init.signal;
    return new Response(silentAfter([frame(1)], init.signal), { status: 200 });
  };
  const rn = new RunnelClient({ baseUrl: "http://runnel.test", token: "t", fetch });
  const stop = new AbortController();
  const seen = [];
  for await (const record of rn.follow("r", "s", { signal: stop.signal, idleSeconds: null })) {
    seen.push(record.sequence);
    setTimeout(() => stop.abort(), 20); // while the follow waits for the next frame
  }
  assert.deepEqual(seen, [1]);
  assert.equal(connection.aborted, true);
});
