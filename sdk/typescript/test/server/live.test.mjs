// The live side channel against a real server, under the two-layer rules (ADR 0019): a
// newer attempt supersedes, the step's record settles it, a straggler after it is dropped.
import assert from "node:assert/strict";
import { test } from "node:test";

import { FollowState, LiveEvent, LiveText } from "../../dist/index.js";
import { client, collect, runId, until } from "../support/server.mjs";

test("a newer attempt supersedes, the record settles the step, a straggler is dropped", async () => {
  const run = runId();
  const stream = client().stream(run, "answer");
  await stream.create({ content_class: "output.text" });
  const state = new FollowState(0);
  const text = new LiveText();
  const follower = collect((async function* () {
    for await (const item of client().stream(run, "answer").follow({ live: true, state })) {
      text.apply(item);
      yield item;
    }
  })());
  const seen = (predicate) => follower.items.some(predicate);
  const chunk = (value) => (item) => item instanceof LiveEvent && item.chunk === value;
  await until(async () => {
    await stream.publishLive(["probe"]); // no source: a chunk of no step
    return seen(chunk("probe"));
  }, "the follow to see a probe");
  await stream.publishLive(["first try"], { source: "turn-1", attempt: 1 });
  await until(() => seen(chunk("first try")), "attempt 1");
  await stream.publishLive(["second try"], { source: "turn-1", attempt: 2 });
  await until(() => seen(chunk("second try")), "attempt 2");
  assert.deepEqual(text.chunks("turn-1"), ["second try"]);
  await stream.publishLive(["stale"], { source: "turn-1", attempt: 1 });
  await stream.append([{ payload: "the answer", idempotency_key: "turn-1" }]);
  await until(() => state.cursor === 1, "the record");
  assert.deepEqual(text.sources(), []);
  await stream.publishLive(["straggler"], { source: "turn-1", attempt: 2 });
  await stream.publishLive(["marker"]);
  await until(() => seen(chunk("marker")), "the marker after the straggler");
  await stream.close();
  const items = await follower.done;
  const supersedes = items.find(chunk("second try")).supersedes;
  assert.equal(supersedes, true);
  assert.ok(!items.some(chunk("stale")) && !items.some(chunk("straggler")));
  assert.equal(state.liveDropped, 2);
  assert.deepEqual(items.filter((item) => !(item instanceof LiveEvent)).map((item) => item.payload), ["the answer"]);
});
