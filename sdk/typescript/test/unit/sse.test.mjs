// The SSE parser over text cut anywhere: the server's CRLF frames, keepalive comments,
// multi-line data, and a frame cut off by the end of the stream.
import assert from "node:assert/strict";
import { test } from "node:test";

import { SseParser } from "../../dist/sse.js";

const FRAMES = "id: 1\r\nevent: record\r\ndata: {\"sequence\":1}\r\n\r\n: ping\r\n\r\n"
  + "event: live\r\ndata: {\"seq\":1}\r\n\r\nevent: end\r\ndata: {\"reason\":\"closed\"}\r\nretry: 900\r\n\r\n";

function events(parser, pieces) {
  return pieces.flatMap((piece) => parser.feed(piece)).map(({ event, data, id, retry }) => ({ event, data, id, retry }));
}

const EXPECTED = [
  { event: "record", data: "{\"sequence\":1}", id: "1", retry: null },
  { event: "live", data: "{\"seq\":1}", id: "1", retry: null },
  { event: "end", data: "{\"reason\":\"closed\"}", id: "1", retry: 900 },
];

test("the server's frames come out whole, the keepalive comment as nothing", () => {
  assert.deepEqual(events(new SseParser(), [FRAMES]), EXPECTED);
});

test("text cut at every position, between a CR and its LF too, gives the same events", () => {
  for (let cut = 1; cut < FRAMES.length; cut += 1) {
    assert.deepEqual(events(new SseParser(), [FRAMES.slice(0, cut), FRAMES.slice(cut)]), EXPECTED, `cut at ${cut}`);
  }
  assert.deepEqual(events(new SseParser(), [...FRAMES]), EXPECTED, "one character at a time");
});

test("LF and lone CR line ends, data lines joined by LF, one space dropped after the colon", () => {
  const parser = new SseParser();
  assert.deepEqual(events(parser, ["data:a\ndata:  b\rdata\r\n\n"]),
                   [{ event: "message", data: "a\n b\n", id: null, retry: null }]);
});

test("an event without data is not dispatched, and a frame cut off by the end is never", () => {
  const parser = new SseParser();
  assert.deepEqual(events(parser, ["event: record\r\n\r\n", "id: 7\r\nevent: record\r\ndata: {\"sequence\""]), []);
});
