// Performs a plan's effects from a script, with no I/O: the unit tests' driver.
//
// `perform(effect)` answers each effect the plan yields (or throws a TransportError,
// which goes into the plan as the real driver's would); emitted items are collected.
// `play` returns what happened: the effects in order, the items, and the outcome.
import { TransportError } from "../../dist/errors.js";

export function answer(status, body = undefined, headers = {}) {
  const text = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
  return { status, headers: new Headers(headers), body: new TextEncoder().encode(text) };
}

export const record = (sequence, extra = {}) => ({
  event: "record", id: String(sequence),
  data: JSON.stringify({ sequence, content_type: "application/json", appended_at: "2026-01-01T00:00:00Z",
                         payload: sequence, ...extra }) });
export const live = (frame) => ({ event: "live", id: null, data: JSON.stringify(frame) });
export const end = (reason, last = 0) => ({ event: "end", id: null,
                                            data: JSON.stringify({ reason, last_sequence: last }) });

export function play(plan, perform, { limit = 500 } = {}) {
  const effects = [];
  const items = [];
  let step = plan.next();
  try {
    while (!step.done) {
      if (effects.length > limit) throw new Error(`more than ${limit} effects: ${JSON.stringify(effects.slice(-5))}`);
      const effect = step.value;
      effects.push(effect);
      if (effect.kind === "emit") {
        items.push(effect.item);
        step = plan.next();
        continue;
      }
      let given;
      try {
        given = perform(effect);
      } catch (error) {
        if (!(error instanceof TransportError)) throw error;
        step = plan.throw(error);
        continue;
      }
      step = plan.next(given);
    }
    return { effects, items, value: step.value, error: null };
  } catch (error) {
    return { effects, items, value: undefined, error };
  }
}

// A server made of subscriptions: each `open` takes the next connection from `connections`,
// a list of {answer, frames}; a `next` past the frames ends that connection (null), or
// throws a TransportError when the connection is marked `cut`.
export function subscriptions(connections, calls = () => answer(200, {})) {
  let current = null;
  return (effect) => {
    switch (effect.kind) {
      case "open": {
        const connection = connections.shift();
        if (connection === undefined) throw new Error("no more connections scripted");
        current = { ...connection, frames: [...(connection.frames ?? [])] };
        return connection.answer ?? answer(200);
      }
      case "next": {
        if (current.frames.length > 0) return current.frames.shift();
        if (current.cut) throw new TransportError("cut");
        return null;
      }
      case "send": return calls(effect);
      case "token": return typeof effect.source === "function" ? effect.source() : effect.source;
      default: return undefined;
    }
  };
}

export const kinds = (effects) => effects.map((effect) => effect.kind);
