// The two-layer reader's rules (ADR 0019) and the live text a reader shows.
import assert from "node:assert/strict";
import { test } from "node:test";

import { chunkText, LiveText, Steps } from "../../dist/layers.js";

const record = (key) => ({ sequence: 1, content_type: "application/json", appended_at: "t", idempotency_key: key });

test("a settled step takes no more chunks, an older attempt is dropped, a newer one supersedes", () => {
  const steps = new Steps();
  assert.equal(steps.admit({ data: "a", source: "s", attempt: 2 }).supersedes, false);
  assert.equal(steps.admit({ data: "b", source: "s", attempt: 1 }), null);
  assert.equal(steps.admit({ data: "c", source: "s", attempt: 3 }).supersedes, true);
  assert.equal(steps.admit({ data: "d", source: "s" }).chunk, "d"); // no attempt: rule 2 does not apply
  steps.settle(record("s"));
  assert.equal(steps.admit({ data: "e", source: "s", attempt: 9 }), null);
  assert.equal(steps.admit({ data: "f" }).chunk, "f"); // no source: passes untouched
  assert.equal(steps.dropped, 2);
});

test("steps are remembered up to the limit, the least recently seen forgotten first", () => {
  const steps = new Steps(2);
  steps.settle(record("a"));
  steps.settle(record("b"));
  steps.settle(record("c"));
  assert.notEqual(steps.admit({ data: 1, source: "a" }), null);
  assert.equal(steps.admit({ data: 1, source: "c" }), null);
});

test("the live text holds the current attempt of each unsettled step, until its record", () => {
  const text = new LiveText();
  const steps = new Steps();
  for (const frame of [{ data: "Hel", source: "t1", attempt: 1 }, { data: "lo", source: "t1", attempt: 1 },
                       { data: { text: "Bye" }, source: "t2" }, { data: "Hi", source: "t1", attempt: 2 }]) {
    text.apply(steps.admit(frame));
  }
  assert.deepEqual(text.view().map(({ source, text: shown }) => [source, shown]), [["t1", "Hi"], ["t2", "Bye"]]);
  text.apply(record("t1"));
  assert.deepEqual(text.sources(), ["t2"]);
  assert.deepEqual(text.chunks("t1"), []);
  assert.equal(chunkText({ n: 1 }), "{\"n\":1}");
});
