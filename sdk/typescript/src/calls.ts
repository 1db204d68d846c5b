/**
 * The plans of the client's calls (`effects.ts`; the Python SDK's `runnel_client.calls`):
 * each method of `RunnelClient` is one of these, performed by the driver. What each
 * takes, returns and throws is said on `RunnelClient`.
 */

import { checked, type Plan, problemOf, send, type SendEffect, sleep } from "./effects.js";
import { BackpressureError } from "./errors.js";
import { checkDownload, objectIdOf, type Pins, preparePins } from "./objects.js";
import {
  type AckResult, type AppendResult, type BrowserToken, type CloseResult, type DeleteResult,
  type LiveResult,
  type ObjectIntent, type ReadPage, recordOf, type RecordInput, runPath, type StreamDefinition,
  type StreamInfo, streamPath, type StreamRecord, type SubscribeGrant,
} from "./wire.js";

export function* answer<T>(request: Omit<SendEffect, "kind">): Plan<T> {
  return checked<T>(yield* send(request));
}

export function* createStream(runId: string, definition: StreamDefinition): Plan<StreamInfo> {
  return yield* answer({ method: "POST", path: runPath(runId, "streams"), json: definition });
}

export function* getStream(runId: string, streamId: string): Plan<StreamInfo> {
  return yield* answer({ method: "GET", path: streamPath(runId, streamId) });
}

/**
 * A 429 is sent again after its `Retry-After` (1 s without one) up to `retries` times,
 * the same body each time (so its keys hold); then its error is thrown.
 */
export function* append(runId: string, streamId: string, records: RecordInput[],
                        retries: number): Plan<AppendResult> {
  const request = { method: "POST", path: streamPath(runId, streamId, "records"), json: { records } };
  for (let attempt = 0; ; attempt += 1) {
    const response = yield* send(request);
    if (response.status !== 429 || attempt >= retries) return checked<AppendResult>(response);
    const error = problemOf(response);
    yield* sleep(error instanceof BackpressureError ? (error.retryAfter ?? 1) : 1);
  }
}

/** `wait`: long-poll up to that many seconds (0–30) when nothing is above `after`. */
export function* read(runId: string, streamId: string, after: number, limit: number,
                      wait?: number): Plan<ReadPage> {
  const query: { [name: string]: number } = { after, limit };
  if (wait !== undefined) query["wait"] = wait;
  const page = yield* answer<ReadPage>({
    method: "GET", path: streamPath(runId, streamId, "records"), query, waits: wait ?? 0 });
  page.records = page.records.map(recordOf);
  return page;
}

export function* deleteStream(runId: string, streamId: string): Plan<DeleteResult> {
  return yield* answer({ method: "DELETE", path: streamPath(runId, streamId) });
}

export function* ack(runId: string, streamId: string, consumerId: string, sequence: number): Plan<AckResult> {
  return yield* answer({
    method: "POST", path: streamPath(runId, streamId, "consumers", encodeURIComponent(consumerId), "ack"),
    json: { sequence } });
}

export function* closeStream(runId: string, streamId: string): Plan<CloseResult> {
  return yield* answer({ method: "POST", path: streamPath(runId, streamId, "close") });
}

export interface LiveOptions {
  source?: string;
  attempt?: number;
  index?: number;
}

export function* publishLive(runId: string, streamId: string, chunks: unknown[],
                             options: LiveOptions = {}): Plan<LiveResult> {
  const body: { [field: string]: unknown } = { chunks };
  for (const name of ["source", "attempt", "index"] as const) {
    if (options[name] !== undefined) body[name] = options[name];
  }
  return yield* answer({ method: "POST", path: streamPath(runId, streamId, "live"), json: body });
}

export function* subscribeToken(runId: string, streamId: string,
                                ttlSeconds: number | undefined): Plan<SubscribeGrant> {
  return yield* answer({
    method: "POST", path: streamPath(runId, streamId, "subscribe-token"),
    json: ttlSeconds === undefined ? {} : { ttl_seconds: ttlSeconds } });
}

export function* browserToken(baseUrl: string, runId: string, streamId: string,
                              ttlSeconds: number | undefined): Plan<BrowserToken> {
  const grant = yield* subscribeToken(runId, streamId, ttlSeconds);
  const url = new URL(streamPath(runId, streamId, "subscribe"), baseUrl);
  url.searchParams.set("access_token", grant.token);
  return { ...grant, subscribe_url: url.href };
}

export interface UploadOptions {
  contentType?: string;
  idempotencyKey?: string;
  schema?: string;
}

/** Prepare with the pins, upload unless the intent has its body already, commit, read back. */
export function* uploadObject(runId: string, streamId: string, data: Uint8Array,
                              options: UploadOptions = {}): Plan<StreamRecord> {
  const contentType = options.contentType ?? "application/octet-stream";
  const pins = yield* preparePins(data, contentType, options.idempotencyKey, options.schema);
  const prepared = yield* answer<ObjectIntent>({
    method: "POST", path: streamPath(runId, streamId, "objects"), json: pins });
  const objectPath = streamPath(runId, streamId, "objects", encodeURIComponent(prepared.object_id));
  if (prepared.state === "prepared") {
    yield* answer({ method: "PUT", path: `${objectPath}/body`, body: data,
                    headers: { "Content-Type": "application/octet-stream" } });
  }
  const committed = yield* answer<{ sequence: number }>({ method: "POST", path: `${objectPath}/commit` });
  const page = yield* read(runId, streamId, committed.sequence - 1, 1);
  return page.records[0] as StreamRecord;
}

export function* getObject(runId: string, streamId: string, objectId: string): Plan<ObjectIntent> {
  return yield* answer({
    method: "GET", path: streamPath(runId, streamId, "objects", encodeURIComponent(objectId)) });
}

/** The body, checked against the record's pins (or, given an id, the intent's). */
export function* downloadObject(runId: string, streamId: string,
                                target: StreamRecord | string): Plan<Uint8Array> {
  const objectId = objectIdOf(target);
  const pins: Pins = typeof target === "string" ? yield* getObject(runId, streamId, objectId)
    : target.object as Pins;
  const response = yield* send({
    method: "GET", path: `${streamPath(runId, streamId, "objects", encodeURIComponent(objectId))}/body` });
  if (response.status !== 200) throw problemOf(response);
  return yield* checkDownload(response.body, pins);
}
