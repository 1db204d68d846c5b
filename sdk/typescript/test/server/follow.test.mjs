// follow() against a real server: connections cut under it (a TCP proxy breaks them),
// retention overtaking the cursor (410), and subscribe tokens that expire under it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { FollowState, ResyncRequired, TokenExpired } from "../../dist/index.js";
import { client, collect, proxy, runId, until } from "../support/server.mjs";

const sequences = (items) => items.map((item) => item.sequence);

test("a follow whose connection is cut again and again loses and repeats nothing", async () => {
  const through = await proxy();
  try {
    const run = runId();
    const writer = client().stream(run, "s");
    await writer.create({ content_class: "output.text" });
    const state = new FollowState(0);
    const follower = collect(client({ baseUrl: through.url }).stream(run, "s").follow({ state }));
    for (let round = 0; round < 4; round += 1) {
      await writer.append(Array.from({ length: 5 }, (_, n) => ({ payload: round * 5 + n + 1 })));
      await until(() => state.cursor === (round + 1) * 5, `records up to ${(round + 1) * 5}`);
      through.cut();
    }
    await writer.append([{ payload: 21 }]);
    await writer.close();
    const items = await follower.done;
    assert.deepEqual(sequences(items), Array.from({ length: 21 }, (_, n) => n + 1));
    assert.deepEqual(items.map((item) => item.payload), Array.from({ length: 21 }, (_, n) => n + 1));
    assert.ok(state.reconnects >= 4, `reconnects: ${state.reconnects}`);
    assert.deepEqual([state.gaps, state.cursor], [0, 21]);
  } finally {
    await through.close();
  }
});

test("retention past the cursor: ResyncRequired, or onResync's cursor and on from there", async () => {
  const stream = client().stream(runId(), "s");
  await stream.create({ content_class: "output.text", retention: { max_records: 2 } });
  await stream.append([1, 2, 3, 4, 5].map((payload) => ({ payload })));
  // the server's retention worker prunes within a sweep (RUNNEL_SWEEP_SECONDS)
  await until(async () => (await stream.info()).status.earliest === 4, "the pruning sweep");
  await assert.rejects(stream.read({ after: 0 }), (error) => error instanceof ResyncRequired && error.earliest === 4);
  await assert.rejects(async () => { for await (const _ of stream.follow()) { /* nothing arrives */ } },
                       (error) => error instanceof ResyncRequired && error.status === 410);
  await stream.close();
  const resyncs = [];
  const items = [];
  for await (const item of stream.follow({ onResync: (error) => { resyncs.push(error.problem.requested); return error.earliest - 1; } })) {
    items.push(item);
  }
  assert.deepEqual(resyncs, [0]);
  assert.deepEqual(sequences(items), [4, 5]);
});

test("subscribe tokens expiring under a follow are renewed through the provider, nothing lost", async () => {
  const stream = client().stream(runId(), "s");
  await stream.create({ content_class: "output.text" });
  await stream.append([{ payload: 1 }, { payload: 2 }]);
  const minted = [];
  const tokenProvider = async () => {
    minted.push((await stream.subscribeToken({ ttlSeconds: 2 })).token);
    return minted.at(-1);
  };
  const state = new FollowState(0);
  const follower = collect(stream.follow({ state, tokenProvider }));
  let next = 3;
  await until(async () => {
    await stream.append([{ payload: next }]);
    next += 1;
    return state.tokenRefreshes >= 2;
  }, "two renewals");
  await stream.append([{ payload: next }]);
  await stream.close();
  const items = await follower.done;
  assert.deepEqual(sequences(items), Array.from({ length: next }, (_, n) => n + 1));
  assert.equal(state.duplicates, 0);
  assert.equal(minted.length, state.tokenRefreshes + 1);
});

test("a string subscribe token that expires ends the follow with TokenExpired at its cursor", async () => {
  const owner = client().stream(runId(), "s");
  await owner.create({ content_class: "output.text" });
  await owner.append([{ payload: 1 }, { payload: 2 }]);
  const { token } = await owner.subscribeToken({ ttlSeconds: 2 });
  const seen = [];
  await assert.rejects(async () => {
    for await (const item of client({ token }).stream(owner.runId, "s").follow()) seen.push(item.sequence);
  }, (error) => error instanceof TokenExpired && error.lastSequence === 2);
  assert.deepEqual(seen, [1, 2]);
});
