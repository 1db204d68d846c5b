// runnel.js: follow a Runnel stream from a browser, with no dependencies (ADR 0038).
// Served by Runnel at /runnel.js; import it as a module:
//
//   import { follow } from "/runnel.js";
//   const following = follow({ run, stream, token, live: true,
//     onRecord: (record) => …, onLive: (chunk, { supersedes }) => …, onEnd: (end) => … });
//   following.close();
//
// The cursor. Every record reaches `onRecord` once, in sequence order: the follower
// keeps the last sequence it handed over and drops anything at or below it. A
// connection it opens itself resumes after that sequence (`?after=`, or nothing from
// 0); a connection the browser re-opens by itself (a dropped connection) resumes with
// the `Last-Event-ID` header the browser sends, which is why `?after=` is left out
// whenever the cursor is 0 (the query would win over the header).
//
// Tokens. A pasted API `token` (or a function returning one) never goes into a URL:
// before each connection it is sent once, in the Authorization header, to
// `POST …/subscribe-token` (ADR 0023), and the URL carries the short-lived subscribe
// token that answers. `subscribeToken` (a function returning one, e.g. from your
// backend) replaces that step; with neither, the URL carries no token (a same-origin
// proxy such as `runnel_client.starlette` adds the credential). When the token expires
// the server ends the stream (`end` with reason `token_expired`): the follower takes a
// fresh one and resumes after its cursor. `end` with reason `shutdown` (a node
// stopping) reconnects after `retryMs`; reason `token_revoked` ends it with `onError`
// (status 401); reason `closed` ends the follow (`onEnd`).
//
// Two layers (ADR 0019), with `live: true`. `onLive(chunk, { source, attempt, supersedes,
// frame })` gets the best-effort chunks that pass the reader's rules: none of a step
// (`source`) whose record (`idempotency_key` = the step) arrived, none of an attempt
// below the newest seen for its step; `supersedes` is true on the first chunk of a
// newer attempt (drop the text shown for the earlier one). `onRecord(record)` comes
// first for a step's record: remove that step's live text then.

const API = "/api/workflow-streams";
const MAX_STEPS = 4096; // steps remembered (settled, attempts); the oldest is forgotten

function remember(table, step, value) {
  table.delete(step);
  table.set(step, value);
  if (table.size > MAX_STEPS) table.delete(table.keys().next().value);
}

// The reader's two rules, over the frames of one follow.
export class Steps {
  constructor() {
    this.settled = new Map();
    this.attempts = new Map();
    this.dropped = 0;
  }

  settle(record) {
    const step = record.idempotency_key;
    if (typeof step !== "string") return;
    this.attempts.delete(step);
    remember(this.settled, step, true);
  }

  // The chunk's details when it passes the rules; null when one drops it.
  admit(frame) {
    const source = typeof frame.source === "string" ? frame.source : null;
    const attempt = Number.isInteger(frame.attempt) ? frame.attempt : null;
    const passed = { source, attempt, supersedes: false, frame };
    if (source === null) return passed;
    if (this.settled.has(source)) { this.dropped += 1; return null; }
    if (attempt === null) return passed;
    const newest = this.attempts.get(source);
    if (newest !== undefined && attempt < newest) { this.dropped += 1; return null; }
    remember(this.attempts, source, attempt);
    passed.supersedes = newest !== undefined && attempt > newest;
    return passed;
  }
}

async function resolve(value) {
  return typeof value === "function" ? await value() : value;
}

export function streamPath(run, stream) {
  return `${API}/runs/${encodeURIComponent(run)}/streams/${encodeURIComponent(stream)}`;
}

// A subscribe token of the stream, minted with the API token (sent in a header only).
export async function mintSubscribeToken({ base = "", run, stream, token, ttlSeconds }) {
  const response = await fetch(`${base}${streamPath(run, stream)}/subscribe-token`, {
    method: "POST",
    headers: { Authorization: `Bearer ${await resolve(token)}`,
               "Content-Type": "application/json" },
    body: JSON.stringify(ttlSeconds ? { ttl_seconds: ttlSeconds } : {}),
  });
  if (!response.ok) {
    const problem = await response.json().catch(() => ({}));
    const error = new Error(`${response.status} ${problem.code || ""}`.trim());
    error.status = response.status;
    error.problem = problem;
    throw error;
  }
  return (await response.json()).token;
}

export function follow(options) {
  const { base = "", run, stream, token, subscribeToken, url, ttlSeconds,
          live = false, retryMs = 500 } = options;
  const on = (name, ...args) => { if (options[name]) options[name](...args); };
  const state = { cursor: options.after || 0, count: 0, gaps: 0, duplicates: 0,
                  reconnects: 0, renewals: 0, steps: new Steps(), closed: false };
  let source = null;
  let opened = false;
  let timer = null;

  const setState = (text) => on("onState", text, state);

  async function credential() {
    if (subscribeToken) return await subscribeToken();
    if (token) return await mintSubscribeToken({ base, run, stream, token, ttlSeconds });
    return null;
  }

  function retry() {
    if (state.closed) return;
    setState("reconnecting");
    timer = setTimeout(connect, retryMs);
  }

  function onRecord(event) {
    const record = JSON.parse(event.data);
    if (record.sequence <= state.cursor) { state.duplicates += 1; return; }
    if (record.sequence !== state.cursor + 1) state.gaps += 1;
    state.cursor = record.sequence;
    state.count += 1;
    state.steps.settle(record);
    on("onRecord", record, state);
  }

  function onLive(event) {
    const frame = JSON.parse(event.data);
    const passed = state.steps.admit(frame);
    if (passed === null) { on("onDropped", frame, state); return; }
    on("onLive", frame.data, passed, state);
  }

  function onEnd(event, current) {
    current.close();
    const end = JSON.parse(event.data || "{}");
    if (end.reason === "token_expired") {
      state.renewals += 1;
      connect(); // a fresh token, after the cursor
    } else if (end.reason === "shutdown") {
      retry(); // the node is stopping: come back, at whichever node answers
    } else if (end.reason === "token_revoked") {
      state.closed = true; // a fresh token from the same source is refused too
      setState("refused: token revoked");
      on("onError", Object.assign(new Error("the subscription's token was revoked"),
                                  { status: 401, lastSequence: end.last_sequence }), state);
    } else {
      state.closed = true;
      setState("closed");
      on("onEnd", end, state);
    }
  }

  async function connect() {
    if (state.closed) return;
    let credentialValue;
    try {
      credentialValue = await credential();
    } catch (error) {
      if (error.status !== undefined && error.status < 500) {
        state.closed = true; // the token was refused: retrying cannot help
        setState(`refused: ${error.message}`);
        on("onError", error, state);
        return;
      }
      retry(); // the server is away (restarting): try again
      return;
    }
    if (state.closed) return;
    const target = new URL(url || `${base}${streamPath(run, stream)}/subscribe`,
                           location.href);
    if (state.cursor > 0) target.searchParams.set("after", String(state.cursor));
    if (live) target.searchParams.set("live", "true");
    if (credentialValue) target.searchParams.set("access_token", credentialValue);
    const current = new EventSource(target.href);
    source = current;
    const resumable = state.cursor === 0; // the browser's own retry sends Last-Event-ID
    current.addEventListener("open", () => {
      if (opened) state.reconnects += 1;
      opened = true;
      setState("following");
    });
    current.addEventListener("record", onRecord);
    current.addEventListener("live", onLive);
    current.addEventListener("end", (event) => onEnd(event, current));
    current.addEventListener("resync", (event) => {
      current.close();
      state.closed = true;
      setState("resync needed");
      on("onResync", JSON.parse(event.data || "{}"), state);
    });
    current.addEventListener("error", () => {
      if (source !== current || state.closed) return;
      if (resumable && current.readyState === EventSource.CONNECTING) {
        setState("reconnecting"); // the browser retries, with Last-Event-ID
        return;
      }
      // Our own reconnect: a browser retry would repeat this URL's `?after=` (which wins
      // over Last-Event-ID) and its token, which may have expired.
      current.close();
      retry();
    });
  }

  connect();
  return {
    state,
    close() {
      state.closed = true;
      clearTimeout(timer);
      if (source) source.close();
    },
  };
}
