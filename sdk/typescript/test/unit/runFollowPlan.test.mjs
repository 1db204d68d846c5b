// The run follow plan's decisions, with no server (ADR 0073): each test scripts what the
// server answers and checks what the plan asked for and handed over.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ResyncRequired, Unauthenticated } from "../../dist/errors.js";
import { followRun } from "../../dist/runFollowPlan.js";
import { RunFollowState } from "../../dist/runFollowing.js";
import { LiveEvent } from "../../dist/wire.js";
import { answer, play, record, subscriptions } from "../support/script.mjs";

const of = (streamId, sequence, extra = {}) => record(sequence, { stream_id: streamId, ...extra });
const runEnd = (reason, cursor = "") => ({ event: "run_end", id: null, data: JSON.stringify({ reason, cursor }) });
const streamEnd = (streamId, last) => ({ event: "end", id: null,
  data: JSON.stringify({ stream_id: streamId, reason: "closed", last_sequence: last }) });
const seen = (items) => items.filter((item) => !(item instanceof LiveEvent)).map((item) => `${item.stream_id}${item.sequence}`);
const cursors = (effects) => effects.filter((effect) => effect.kind === "open").map((effect) => effect.headers["Last-Event-ID"]);

test("cut connections resume every stream from the compound cursor, nothing lost or repeated", () => {
  const state = new RunFollowState({ b: 1 });
  const outcome = play(followRun({ runId: "r", state }, "t"), subscriptions([
    { frames: [of("a", 1), of("b", 2)], cut: true },
    { frames: [of("b", 2), of("a", 2), streamEnd("b", 2)] }, // a repeat, then the connection just ends
    { frames: [of("c", 1), runEnd("erased", "a=2,b=2,c=1")] },
  ]));
  assert.equal(outcome.error, null);
  assert.deepEqual(seen(outcome.items), ["a1", "b2", "a2", "c1"]);
  assert.deepEqual(cursors(outcome.effects), ["b=1", "a=1,b=2", "a=2,b=2"]);
  assert.deepEqual([state.cursorText(), state.duplicates, state.reconnects], ["a=2,b=2,c=1", 1, 2]);
  assert.deepEqual([...state.ended], [["b", 2]]);
  const opened = outcome.effects.find((effect) => effect.kind === "open");
  assert.equal(opened.path, "/api/workflow-streams/runs/r/subscribe");
});

test("the filter and live go in the query; live chunks follow the two-layer rules per stream", () => {
  const chunk = { seq: 1, data: "x", source: "k", attempt: 1, index: 0 };
  const outcome = play(followRun({ runId: "r", live: true, streams: ["a", "b"], contentClass: "output.text" }, "t"),
    subscriptions([{ frames: [
      of("a", 1, { idempotency_key: "k" }),
      { event: "live", id: null, data: JSON.stringify({ stream_id: "a", ...chunk }) },
      { event: "live", id: null, data: JSON.stringify({ stream_id: "b", ...chunk }) },
      runEnd("erased")] }]));
  assert.equal(outcome.error, null);
  const lives = outcome.items.filter((item) => item instanceof LiveEvent);
  assert.deepEqual(lives.map((item) => item.streamId), ["b"]);
  const opened = outcome.effects.find((effect) => effect.kind === "open");
  assert.deepEqual(opened.query, { live: "true", streams: "a,b", content_class: "output.text" });
});

test("a stream's resync asks onResync for that stream's cursor, else throws", () => {
  const resync = { event: "resync", id: null,
    data: JSON.stringify({ code: "cursor_pruned", stream_id: "a", requested: 0, earliest: 4, latest: 5 }) };
  const thrown = play(followRun({ runId: "r" }, "t"), subscriptions([{ frames: [resync] }]));
  assert.ok(thrown.error instanceof ResyncRequired);
  const state = new RunFollowState();
  const outcome = play(followRun({ runId: "r", state, onResync: (error) => error.problem.earliest - 1 }, "t"),
    subscriptions([{ frames: [resync] }, { frames: [of("a", 4), runEnd("erased")] }]));
  assert.equal(outcome.error, null);
  assert.deepEqual(cursors(outcome.effects), [undefined, "a=3"]);
});

test("a revoked token is thrown; too_many_streams reconnects and its refusal is thrown", () => {
  const revoked = play(followRun({ runId: "r" }, "t"), subscriptions([{ frames: [runEnd("token_revoked")] }]));
  assert.ok(revoked.error instanceof Unauthenticated);
  const refused = play(followRun({ runId: "r" }, "t"), subscriptions([
    { frames: [runEnd("too_many_streams")] },
    { answer: answer(400, { code: "too_many_streams_to_follow" }) }]));
  assert.equal(refused.error.code, "too_many_streams_to_follow");
});
