/**
 * The client: every call of the API over `fetch`.
 *
 * Shapes are the server's (`wire.ts`): a record sent is `{payload}` or `{data,
 * content_type}` with an optional `idempotency_key`; what comes back is a `StreamRecord`.
 * The cursor rule, everywhere: a cursor `c` is the last sequence seen, a read or follow
 * from `c` gives `sequence > c` ascending, each once; `0` is the beginning. Every call
 * throws `RunnelError` for a refusal (its `status` and `code` are the server's problem),
 * `TokenExpired` / `Unauthenticated` for a 401, and `TransportError` when no answer came
 * (a follow and a producer retry those themselves).
 */

import type { TokenSource } from "./auth.js";
import * as calls from "./calls.js";
import { type DriverSettings, type Fetch, iterate, run, type RunOptions } from "./drive.js";
import type { FollowStatus, Plan } from "./effects.js";
import { follow, type FollowOptions } from "./followPlan.js";
import { followRun, type RunFollowOptions } from "./runFollowPlan.js";
import { bytesOf, type ObjectBody } from "./objects.js";
import { Producer, type ProducerOptions } from "./producer.js";
import type {
  AckResult, AppendResult, BrowserToken, CloseResult, DeleteResult, LiveEvent, LiveResult,
  ObjectIntent, ReadPage, RecordInput, StreamDefinition, StreamInfo, StreamRecord, SubscribeGrant,
} from "./wire.js";

export interface ClientOptions {
  /** The server, e.g. `http://127.0.0.1:8080`; a page's own origin by default. */
  baseUrl?: string;
  /** An API token, or a function returning one (asked for every request and reconnect). */
  token: TokenSource;
  /** How long a request and its answer may take (not a subscription): 30 s by default. */
  timeoutSeconds?: number;
  /** How often `append` sends a 429 again after its `Retry-After`: 5 by default. */
  maxBackpressureRetries?: number;
  /** The `fetch` to use (a wrapped one in tests, a runtime's own); the global by default. */
  fetch?: Fetch;
}

/** `follow()`'s options (`followPlan.ts` has the rules). */
export interface FollowCallOptions extends Omit<FollowOptions, "runId" | "streamId"> {
  /** Ends the follow: the iteration ends quietly, the connection is closed. */
  signal?: AbortSignal;
  /** `following` once a subscription is open, `reconnecting` while it waits to try again. */
  onStatus?: (status: FollowStatus) => void;
}

/** `followRun()`'s options (`runFollowPlan.ts` has the rules). */
export interface RunFollowCallOptions extends Omit<RunFollowOptions, "runId"> {
  /** Ends the follow: the iteration ends quietly, the connection is closed. */
  signal?: AbortSignal;
  /** `following` once a subscription is open, `reconnecting` while it waits to try again. */
  onStatus?: (status: FollowStatus) => void;
}

export interface ReadOptions {
  after?: number;
  limit?: number;
  /** Long-poll: with nothing above `after` on an open stream, wait up to this many seconds (0–30). */
  wait?: number;
  signal?: AbortSignal;
}

export class RunnelClient {
  readonly settings: DriverSettings;
  readonly maxBackpressureRetries: number;

  constructor(options: ClientOptions) {
    const baseUrl = options.baseUrl ?? (globalThis as { location?: { origin?: string } }).location?.origin;
    if (baseUrl === undefined) throw new TypeError("baseUrl is required outside a browser page");
    const fetcher = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.settings = { baseUrl, token: options.token, timeoutSeconds: options.timeoutSeconds ?? 30,
                      fetch: fetcher };
    this.maxBackpressureRetries = options.maxBackpressureRetries ?? 5;
  }

  /** A handle on one stream: the methods below without the two ids. */
  stream(runId: string, streamId: string): StreamHandle {
    return new StreamHandle(this, runId, streamId);
  }

  /** An idempotent, batching, retrying writer of the stream (`producer.ts`). */
  producer(runId: string, streamId: string, options: ProducerOptions): Producer {
    return new Producer(this, runId, streamId, options);
  }

  /**
   * Create (or identically re-create) a stream; `{run_id, stream_id, definition, status,
   * created_at}`. 409 `definition_conflict` for a different definition.
   */
  createStream(runId: string, definition: StreamDefinition): Promise<StreamInfo> {
    return this.call(calls.createStream(runId, definition));
  }

  /** The definition and status (`status.consumers` has each consumer's ack); 404 `not_found`. */
  getStream(runId: string, streamId: string): Promise<StreamInfo> {
    return this.call(calls.getStream(runId, streamId));
  }

  /**
   * Append a batch (1–1000 records) in one transaction; `{sequences, head}` (a used
   * idempotency key answers its original sequence and stores nothing). A 429 is sent
   * again after its `Retry-After` up to `backpressureRetries` times, then
   * `BackpressureError`. 409 `stream_closed` / `quota_exhausted`, 413 `too_large`.
   */
  append(runId: string, streamId: string, records: RecordInput[],
         options: { backpressureRetries?: number } = {}): Promise<AppendResult> {
    return this.call(calls.append(runId, streamId, records,
                                  options.backpressureRetries ?? this.maxBackpressureRetries));
  }

  /**
   * One page of records with `sequence > after` (`limit` 1–1000, 100 by default); read on
   * from `next_cursor`. 400 `future_cursor` past the head; `ResyncRequired` (410) when
   * retention removed `after + 1`. With `wait`, a page with nothing above `after` of an
   * open stream answers once a record or the close comes, or after `wait` seconds, empty
   * (400 `invalid_wait` outside 0–30, 429 `too_many_subscriptions` when no slot is free).
   */
  read(runId: string, streamId: string, options: ReadOptions = {}): Promise<ReadPage> {
    return this.call(calls.read(runId, streamId, options.after ?? 0, options.limit ?? 100,
                                options.wait), { signal: options.signal });
  }

  /**
   * Acknowledge a declared consumer up to `sequence`: `{consumer_id, acked}`. 409
   * `ack_regression` below its ack, 400 `ack_beyond_head`, 404 `consumer_not_found`.
   */
  ack(runId: string, streamId: string, consumerId: string, sequence: number): Promise<AckResult> {
    return this.call(calls.ack(runId, streamId, consumerId, sequence));
  }

  /** Close the stream (idempotent): `{closed: true, head}`; followers end after the head. */
  closeStream(runId: string, streamId: string): Promise<CloseResult> {
    return this.call(calls.closeStream(runId, streamId));
  }

  /**
   * Delete the stream, its records and bodies (a writer or an admin); zero counts when deleted
   * before. 409 `legal_hold` while held; its id is never reused (409 `stream_deleted`).
   */
  deleteStream(runId: string, streamId: string): Promise<DeleteResult> {
    return this.call(calls.deleteStream(runId, streamId));
  }

  /** Publish best-effort live chunks, stored nowhere: `{accepted}`. */
  publishLive(runId: string, streamId: string, chunks: unknown[],
              options: calls.LiveOptions = {}): Promise<LiveResult> {
    return this.call(calls.publishLive(runId, streamId, chunks, options));
  }

  /** A read-only token of this one stream's subscription (≤ 300 s, 60 by default). */
  subscribeToken(runId: string, streamId: string, options: { ttlSeconds?: number } = {}): Promise<SubscribeGrant> {
    return this.call(calls.subscribeToken(runId, streamId, options.ttlSeconds));
  }

  /** For a backend: a subscribe token to hand a browser, with the subscribe URL that takes it. */
  browserToken(runId: string, streamId: string, options: { ttlSeconds?: number } = {}): Promise<BrowserToken> {
    return this.call(calls.browserToken(this.settings.baseUrl, runId, streamId, options.ttlSeconds));
  }

  /**
   * Store a large body (≤ 32 MiB) as an object record: prepare with its size and SHA-256,
   * upload, commit; the committed record (`record.object` has `object_id`, `size`,
   * `sha256`, `href`). Safe to repeat (`objects.ts`). 422 `digest_mismatch`.
   */
  async uploadObject(runId: string, streamId: string, body: ObjectBody,
                     options: calls.UploadOptions = {}): Promise<StreamRecord> {
    return this.call(calls.uploadObject(runId, streamId, await bytesOf(body), options));
  }

  /** The intent's state and pins (`sequence` once committed). */
  getObject(runId: string, streamId: string, objectId: string): Promise<ObjectIntent> {
    return this.call(calls.getObject(runId, streamId, objectId));
  }

  /** The body of an object record (the record or its `object_id`), checked against its pins. */
  downloadObject(runId: string, streamId: string, target: StreamRecord | string): Promise<Uint8Array> {
    return this.call(calls.downloadObject(runId, streamId, target));
  }

  /**
   * Every record above the cursor, once, in order, across reconnects and server restarts;
   * ends when the stream is closed and every record was yielded. With `live: true` the
   * best-effort chunks come too, as `LiveEvent`s under the two-layer rules (ADR 0019).
   * Where it starts, how it acks, renews its token and handles a resync: `followPlan.ts`.
   */
  follow(runId: string, streamId: string, options?: FollowCallOptions & { live?: false }): AsyncGenerator<StreamRecord, void>;
  follow(runId: string, streamId: string, options: FollowCallOptions & { live: boolean }): AsyncGenerator<StreamRecord | LiveEvent, void>;
  follow(runId: string, streamId: string, options: FollowCallOptions = {}): AsyncGenerator<StreamRecord | LiveEvent, void> {
    const { signal, onStatus, ...rules } = options;
    const plan = follow({ ...rules, runId, streamId }, this.settings.token);
    return iterate(this.settings, plan, { signal, onStatus }) as AsyncGenerator<StreamRecord | LiveEvent, void>;
  }

  /**
   * Every record of every stream of the run this client may read, streams created later
   * included, once each and in its stream's order, as ONE subscription (ADR 0073); each
   * record (`stream_id`) and `LiveEvent` (`streamId`) names its stream. Resumes every
   * stream exactly with the compound cursor (`state.cursor`); ends when the run is erased.
   */
  followRun(runId: string, options?: RunFollowCallOptions & { live?: false }): AsyncGenerator<StreamRecord, void>;
  followRun(runId: string, options: RunFollowCallOptions & { live: boolean }): AsyncGenerator<StreamRecord | LiveEvent, void>;
  followRun(runId: string, options: RunFollowCallOptions = {}): AsyncGenerator<StreamRecord | LiveEvent, void> {
    const { signal, onStatus, ...rules } = options;
    const plan = followRun({ ...rules, runId }, this.settings.token);
    return iterate(this.settings, plan, { signal, onStatus }) as AsyncGenerator<StreamRecord | LiveEvent, void>;
  }

  private call<T>(plan: Plan<T>, options: RunOptions = {}): Promise<T> {
    return run(this.settings, plan, options);
  }
}

/**
 * Stream handles: `client.stream(runId, streamId)`, one stream's API without its ids.
 * Each method is the client's method of the same name with `runId` and `streamId` filled
 * in: `create(definition)` is `createStream` with the `stream_id` put in, `info()` is
 * `getStream`, `close()` is `closeStream`, `delete()` is `deleteStream`.
 */
export class StreamHandle {
  constructor(readonly client: RunnelClient, readonly runId: string, readonly streamId: string) {}

  create(definition: StreamDefinition): Promise<StreamInfo> {
    return this.client.createStream(this.runId, { ...definition, stream_id: this.streamId });
  }

  info(): Promise<StreamInfo> {
    return this.client.getStream(this.runId, this.streamId);
  }

  append(records: RecordInput[], options: { backpressureRetries?: number } = {}): Promise<AppendResult> {
    return this.client.append(this.runId, this.streamId, records, options);
  }

  read(options: ReadOptions = {}): Promise<ReadPage> {
    return this.client.read(this.runId, this.streamId, options);
  }

  ack(consumerId: string, sequence: number): Promise<AckResult> {
    return this.client.ack(this.runId, this.streamId, consumerId, sequence);
  }

  close(): Promise<CloseResult> {
    return this.client.closeStream(this.runId, this.streamId);
  }

  delete(): Promise<DeleteResult> {
    return this.client.deleteStream(this.runId, this.streamId);
  }

  publishLive(chunks: unknown[], options: calls.LiveOptions = {}): Promise<LiveResult> {
    return this.client.publishLive(this.runId, this.streamId, chunks, options);
  }

  subscribeToken(options: { ttlSeconds?: number } = {}): Promise<SubscribeGrant> {
    return this.client.subscribeToken(this.runId, this.streamId, options);
  }

  browserToken(options: { ttlSeconds?: number } = {}): Promise<BrowserToken> {
    return this.client.browserToken(this.runId, this.streamId, options);
  }

  uploadObject(body: ObjectBody, options: calls.UploadOptions = {}): Promise<StreamRecord> {
    return this.client.uploadObject(this.runId, this.streamId, body, options);
  }

  getObject(objectId: string): Promise<ObjectIntent> {
    return this.client.getObject(this.runId, this.streamId, objectId);
  }

  downloadObject(target: StreamRecord | string): Promise<Uint8Array> {
    return this.client.downloadObject(this.runId, this.streamId, target);
  }

  producer(options: ProducerOptions): Producer {
    return this.client.producer(this.runId, this.streamId, options);
  }

  follow(options?: FollowCallOptions & { live?: false }): AsyncGenerator<StreamRecord, void>;
  follow(options: FollowCallOptions & { live: boolean }): AsyncGenerator<StreamRecord | LiveEvent, void>;
  follow(options: FollowCallOptions = {}): AsyncGenerator<StreamRecord | LiveEvent, void> {
    return this.client.follow(this.runId, this.streamId, { ...options, live: options.live ?? false });
  }
}
