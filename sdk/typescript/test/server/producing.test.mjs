// Producing against a real server: 429 back-off, a producer batching a burst into one
// request with keys, retrying through backpressure, and pipe() feeding both layers.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BackpressureError, FollowState, LiveEvent, LiveText } from "../../dist/index.js";
import { client, collect, recordingFetch, runId, until } from "../support/server.mjs";

const TIGHT = { content_class: "output.text", consumers: ["ui"],
                credit: { max_unread_items: 2, on_unread_full: "reject" } };

test("append waits out a 429 for its Retry-After and succeeds once credit is freed", async () => {
  const run = runId();
  const other = client().stream(run, "s");
  let refused;
  const refusal = new Promise((resolve) => { refused = resolve; });
  const recorded = recordingFetch((line, response) => {
    if (response.status === 429) refused(response.headers.get("Retry-After"));
  });
  const stream = client({ fetch: recorded.fetch, maxBackpressureRetries: 3 }).stream(run, "s");
  await stream.create(TIGHT);
  await stream.append([{ payload: 1 }, { payload: 2 }]);
  const appending = stream.append([{ payload: 3 }]);
  assert.ok(Number(await refusal) >= 1);
  await other.ack("ui", 2); // while the client sleeps for Retry-After
  assert.deepEqual((await appending).sequences, [3]);
  assert.deepEqual(recorded.seen.slice(-2), ["POST s/records 429", "POST s/records 201"]);
});

test("append gives up after its bounded retries with BackpressureError", async () => {
  const recorded = recordingFetch();
  const stream = client({ fetch: recorded.fetch, maxBackpressureRetries: 1 }).stream(runId(), "s");
  await stream.create(TIGHT);
  await stream.append([{ payload: 1 }, { payload: 2 }]);
  await assert.rejects(stream.append([{ payload: 3 }]),
                       (error) => error instanceof BackpressureError && error.code === "backpressure" && error.retryAfter >= 1);
  assert.deepEqual(recorded.seen.slice(-2), ["POST s/records 429", "POST s/records 429"]);
});

test("a burst of writes is one request with keys; a restarted producer stores none twice", async () => {
  const recorded = recordingFetch();
  const rn = client({ fetch: recorded.fetch });
  const stream = rn.stream(runId(), "s");
  await stream.create({ content_class: "output.text" });
  const words = Array.from({ length: 50 }, (_, n) => `w${n}`);
  const producer = stream.producer({ keyPrefix: "job-7/answer", lingerSeconds: 0.05 });
  const keys = await Promise.all(words.map((word) => producer.write(word)));
  await producer.close();
  assert.deepEqual(keys.slice(0, 2), ["job-7/answer:0", "job-7/answer:1"]);
  assert.deepEqual(recorded.seen.filter((line) => line.startsWith("POST s/records")), ["POST s/records 201"]);
  assert.deepEqual([producer.stored, producer.head], [50, 50]);
  const again = stream.producer({ keyPrefix: "job-7/answer" });
  for (const word of words) await again.write(word);
  await again.close();
  const page = await stream.read({ limit: 1000 });
  assert.deepEqual(page.records.map((record) => record.payload), words);
  assert.equal(page.head, 50);
});

test("the producer holds its writers back and retries through backpressure, in order", async () => {
  const run = runId();
  const recorded = recordingFetch();
  const stream = client({ fetch: recorded.fetch }).stream(run, "s");
  await stream.create(TIGHT);
  const reader = client().stream(run, "s");
  const state = new FollowState(0);
  const follower = collect(reader.follow({ state, consumer: "ui" })); // acks as it reads
  const producer = stream.producer({ keyPrefix: "p", lingerSeconds: 0 });
  for (let n = 1; n <= 6; n += 1) await producer.write(n);
  await producer.close();
  await stream.close();
  const items = await follower.done;
  assert.deepEqual(items.map((item) => item.payload), [1, 2, 3, 4, 5, 6]);
  const appends = recorded.seen.filter((line) => line.startsWith("POST s/records"));
  assert.ok(appends.length >= 3, appends.join()); // never more than the 2 unread a batch may hold
  assert.equal(producer.stored, 6);
});

test("pipe(): chunks go live at once, each step is one record, and the reader's live text gives way to it", async () => {
  const run = runId();
  const stream = client().stream(run, "answer");
  await stream.create({ content_class: "output.text" });
  const state = new FollowState(0);
  const text = new LiveText();
  const shown = [];
  const follower = collect((async function* () {
    for await (const item of client().stream(run, "answer").follow({ live: true, state })) {
      text.apply(item);
      shown.push(item instanceof LiveEvent ? `live ${item.source} ${item.chunk}` : `record ${item.idempotency_key} ${item.payload}`);
      yield item;
    }
  })());
  await until(async () => { // a live chunk reaches only the readers connected when it is published
    await stream.publishLive(["probe"]); // no source: it names no step
    return shown.includes("live null probe");
  }, "the follow to see a probe");
  const producer = stream.producer({ keyPrefix: "turn-1" });
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  async function* tokens() {
    yield "Hel";
    yield "lo";
    await gate; // the step stays open until its live text was seen
    yield "!";
  }
  const piping = producer.pipe(tokens());
  await until(() => text.chunks("turn-1:0").join("") === "Hello", "the live text");
  release();
  assert.deepEqual(await piping, ["turn-1:0"]);
  await stream.close();
  await follower.done;
  assert.deepEqual(shown.filter((line) => line.startsWith("record")), ["record turn-1:0 Hello!"]);
  assert.ok(shown.includes("live turn-1:0 Hel"), shown.join(" | "));
  assert.deepEqual(text.sources(), []); // the record replaced the live text
});
