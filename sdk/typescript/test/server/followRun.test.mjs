// followRun() against a real server (ADR 0073): every stream of a run and one created
// later, through connections cut again and again, each record once and in its stream's order.
import assert from "node:assert/strict";
import { test } from "node:test";

import { RunFollowState } from "../../dist/index.js";
import { client, collect, proxy, runId, until } from "../support/server.mjs";

test("a run follow cut again and again loses and repeats nothing, later streams included", async () => {
  const through = await proxy();
  const stop = new AbortController();
  try {
    const run = runId();
    const writer = client();
    await writer.stream(run, "a").create({ content_class: "output.text" });
    await writer.stream(run, "b").create({ content_class: "output.text" });
    const state = new RunFollowState();
    const follower = collect(client({ baseUrl: through.url }).followRun(run, { state, signal: stop.signal }));
    for (let round = 1; round <= 3; round += 1) {
      await writer.stream(run, "a").append([{ payload: round }, { payload: round }]);
      await writer.stream(run, "b").append([{ payload: round }]);
      await until(() => state.cursor.get("a") === 2 * round && state.cursor.get("b") === round,
                  `round ${round}`);
      through.cut();
    }
    await writer.stream(run, "later").create({ content_class: "output.text" });
    await writer.stream(run, "later").append([{ payload: "new" }]);
    await until(() => state.cursor.get("later") === 1, "the later stream");
    stop.abort();
    const items = await follower.done;
    const of = (streamId) => items.filter((item) => item.stream_id === streamId).map((item) => item.sequence);
    assert.deepEqual(of("a"), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(of("b"), [1, 2, 3]);
    assert.deepEqual(of("later"), [1]);
    assert.equal(items.length, 10);
    assert.equal(state.cursorText(), "a=6,b=3,later=1");
    assert.ok(state.reconnects >= 3, `reconnects: ${state.reconnects}`);
  } finally {
    stop.abort();
    await through.close();
  }
});

test("followRun starts from after and narrows to the streams named", async () => {
  const run = runId();
  const writer = client();
  for (const streamId of ["a", "b", "c"]) {
    await writer.stream(run, streamId).create({ content_class: "output.text" });
    await writer.stream(run, streamId).append([{ payload: 1 }, { payload: 2 }]);
  }
  const items = [];
  for await (const item of client().followRun(run, { after: { a: 1 }, streams: ["a", "b"] })) {
    items.push(`${item.stream_id}${item.sequence}`);
    if (items.length === 3) break;
  }
  assert.deepEqual(items.sort(), ["a2", "b1", "b2"]);
});
