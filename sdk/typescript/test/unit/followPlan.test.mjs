// The follow plan's decisions, with no server (docs/adr/0068): each test scripts what the
// server answers and checks what the plan asked for and handed over.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ResyncRequired, TokenExpired, Unauthenticated } from "../../dist/errors.js";
import { follow } from "../../dist/followPlan.js";
import { backoff, FollowState } from "../../dist/following.js";
import { LiveEvent } from "../../dist/wire.js";
import { answer, end, kinds, live, play, record, subscriptions } from "../support/script.mjs";

const OPTIONS = { runId: "r", streamId: "s" };
const sequences = (items) => items.filter((item) => !(item instanceof LiveEvent)).map((item) => item.sequence);
const opened = (effects) => effects.filter((effect) => effect.kind === "open");

test("a cut connection resumes after the cursor: nothing lost, nothing repeated", () => {
  const state = new FollowState(0);
  const outcome = play(follow({ ...OPTIONS, state }, "api-token"), subscriptions([
    { frames: [record(1), record(2)], cut: true },
    { frames: [record(2), record(3)] }, // a repeat at the boundary, then the connection just ends
    { frames: [record(4), end("closed", 4)] },
  ]));
  assert.equal(outcome.error, null);
  assert.deepEqual(sequences(outcome.items), [1, 2, 3, 4]);
  assert.deepEqual(opened(outcome.effects).map((effect) => effect.headers["Last-Event-ID"]), ["0", "2", "3"]);
  assert.deepEqual([state.cursor, state.duplicates, state.gaps, state.reconnects], [4, 1, 0, 2]);
  const sleeps = outcome.effects.filter((effect) => effect.kind === "sleep").map((effect) => effect.seconds);
  assert.equal(sleeps.length, 2);
  assert.ok(sleeps.every((seconds) => seconds >= 0.1 && seconds <= 0.2), String(sleeps)); // reset by each open
});

test("a 5xx answer and a node shutting down are reconnected after a backoff", () => {
  const outcome = play(follow(OPTIONS, "t"), subscriptions([
    { answer: answer(503, { code: "store_unavailable" }) },
    { frames: [record(1), end("shutdown", 1)] },
    { frames: [end("closed", 1)] },
  ]));
  assert.equal(outcome.error, null);
  assert.deepEqual(sequences(outcome.items), [1]);
  assert.equal(outcome.effects.filter((effect) => effect.kind === "sleep").length, 2);
  assert.deepEqual(outcome.effects.filter((effect) => effect.kind === "status").map((effect) => effect.status),
                   ["reconnecting", "following", "reconnecting", "following"]);
});

test("a token's expiry takes a fresh token from the provider and resumes at once", () => {
  let minted = 0;
  const state = new FollowState(0);
  const outcome = play(follow({ ...OPTIONS, state, tokenProvider: () => `sub-${++minted}` }, "api"),
    subscriptions([
      { frames: [record(1)], cut: true },
      // the same token, used before, expired while the follow was away: renew it
      { answer: answer(401, { code: "unauthenticated", detail: "subscribe token expired" }) },
      { frames: [record(2), end("token_expired", 2)] },
      { frames: [record(3), end("closed", 3)] },
    ]));
  assert.equal(outcome.error, null);
  assert.deepEqual(sequences(outcome.items), [1, 2, 3]);
  assert.deepEqual(opened(outcome.effects).map((effect) => effect.token), ["sub-1", "sub-1", "sub-2", "sub-3"]);
  assert.deepEqual(opened(outcome.effects).map((effect) => effect.headers["Last-Event-ID"]), ["0", "1", "1", "2"]);
  assert.equal(state.tokenRefreshes, 2);
  assert.equal(outcome.effects.filter((effect) => effect.kind === "sleep").length, 1, "only the cut waits");
});

test("a string token that expires ends the follow with TokenExpired at the cursor", () => {
  const outcome = play(follow(OPTIONS, "api"), subscriptions([{ frames: [record(1), record(2), end("token_expired", 2)] }]));
  assert.ok(outcome.error instanceof TokenExpired);
  assert.equal(outcome.error.lastSequence, 2);
  assert.deepEqual(sequences(outcome.items), [1, 2]);
});

test("a fresh token refused, and a revoked one, are thrown: a fresh copy would not help", () => {
  const refused = play(follow({ ...OPTIONS, tokenProvider: () => "bad" }, "api"), subscriptions([
    { answer: answer(401, { code: "unauthenticated", detail: "token expired" }) }]));
  assert.ok(refused.error instanceof Unauthenticated || refused.error instanceof TokenExpired);
  assert.equal(refused.error.status, 401);
  assert.equal(opened(refused.effects).length, 1);
  const revoked = play(follow({ ...OPTIONS, tokenProvider: () => "t" }, "api"), subscriptions([
    { frames: [record(1), end("token_revoked", 1)] }]));
  assert.ok(revoked.error instanceof Unauthenticated);
  assert.equal(opened(revoked.effects).length, 1);
});

test("410 at the open or as a frame: onResync's cursor, or ResyncRequired without it", () => {
  const pruned = { code: "cursor_pruned", requested: 0, earliest: 4, latest: 5, reason: "resync" };
  const thrown = play(follow(OPTIONS, "t"), subscriptions([{ answer: answer(410, pruned) }]));
  assert.ok(thrown.error instanceof ResyncRequired);
  assert.equal(thrown.error.earliest, 4);
  const seen = [];
  const resumed = play(follow({ ...OPTIONS, onResync: (error) => { seen.push(error.earliest); return error.earliest - 1; } }, "t"),
    subscriptions([
      { answer: answer(410, pruned) },
      { frames: [record(4), { event: "resync", id: null, data: JSON.stringify({ ...pruned, earliest: 9 }) }] },
      { frames: [record(9), end("closed", 9)] },
    ]));
  assert.equal(resumed.error, null);
  assert.deepEqual(seen, [4, 9]);
  assert.deepEqual(opened(resumed.effects).map((effect) => effect.headers["Last-Event-ID"]), ["0", "3", "8"]);
  assert.deepEqual(sequences(resumed.items), [4, 9]);
});

test("a consumer starts at its ack, acks each record once the caller asks for the next, and the last at the end", () => {
  const sent = [];
  const calls = (effect) => {
    sent.push(`${effect.method} ${effect.path.split("/streams/s")[1] || "/"} ${JSON.stringify(effect.json ?? null)}`);
    if (effect.method === "GET") return answer(200, { status: { head: 5, consumers: { ui: 2 } } });
    if (effect.json.sequence === 4) return answer(409, { code: "ack_regression" }); // another follower is further
    return answer(200, { consumer_id: "ui", acked: effect.json.sequence });
  };
  const state = new FollowState(0);
  const outcome = play(follow({ ...OPTIONS, state, consumer: "ui", ackEvery: 2 }, "t"), subscriptions([
    { frames: [record(3), record(4), record(5), end("closed", 5)] }], calls));
  assert.equal(outcome.error, null);
  assert.deepEqual(sequences(outcome.items), [3, 4, 5]);
  assert.deepEqual(opened(outcome.effects)[0].headers["Last-Event-ID"], "2");
  assert.deepEqual(sent, ["GET / null", "POST /consumers/ui/ack {\"sequence\":4}", "POST /consumers/ui/ack {\"sequence\":5}"]);
  const ackOf4 = outcome.effects.findIndex((effect) => effect.kind === "send" && effect.json?.sequence === 4);
  const emitOf4 = outcome.effects.findIndex((effect) => effect.kind === "emit" && effect.item.sequence === 4);
  assert.ok(emitOf4 < ackOf4, "a record is acked only after it was handed over");
  assert.equal(state.acks, 1); // the regression moved the ack without counting one of ours
});

test("an undeclared consumer is refused before any subscription", () => {
  const outcome = play(follow({ ...OPTIONS, consumer: "nobody" }, "t"), subscriptions([],
    () => answer(200, { status: { head: 0, consumers: { ui: 0 } } })));
  assert.equal(outcome.error.code, "consumer_not_found");
  assert.equal(opened(outcome.effects).length, 0);
});

test("live chunks pass the two-layer rules across reconnects", () => {
  const state = new FollowState(0);
  const outcome = play(follow({ ...OPTIONS, state, live: true }, "t"), subscriptions([
    { frames: [live({ seq: 1, data: "He", source: "turn-1", attempt: 1 })], cut: true },
    { frames: [live({ seq: 2, data: "Hi", source: "turn-1", attempt: 2 }),
               live({ seq: 3, data: "x", source: "turn-1", attempt: 1 }),
               record(1, { idempotency_key: "turn-1" }),
               live({ seq: 4, data: "late", source: "turn-1", attempt: 2 }),
               live({ seq: 5, data: "free" }),
               end("closed", 1)] },
  ]));
  assert.equal(outcome.error, null);
  const shown = outcome.items.map((item) => item instanceof LiveEvent ? `${item.chunk}${item.supersedes ? "!" : ""}` : item.sequence);
  assert.deepEqual(shown, ["He", "Hi!", 1, "free"]);
  assert.equal(state.liveDropped, 2);
});

test("the reconnect backoff grows to 5 s, drawn over its upper half", () => {
  assert.deepEqual([1, 2, 3, 6, 40].map((attempt) => backoff(attempt, (low, high) => [low, high])),
                   [[0.1, 0.2], [0.2, 0.4], [0.4, 0.8], [2.5, 5], [2.5, 5]]);
});
