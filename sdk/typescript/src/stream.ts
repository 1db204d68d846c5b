/**
 * Stream handles: `client.stream(runId, streamId)`, one stream's API without its ids.
 * Each method is the client's method of the same name with `runId` and `streamId` filled
 * in: `create(definition)` is `createStream` with the `stream_id` put in, `info()` is
 * `getStream`, `close()` is `closeStream`.
 */

import type { LiveOptions, UploadOptions } from "./calls.js";
import type { FollowCallOptions, ReadOptions, RunnelClient } from "./client.js";
import type { ObjectBody } from "./objects.js";
import type { Producer, ProducerOptions } from "./producer.js";
import type {
  AckResult, AppendResult, BrowserToken, CloseResult, LiveEvent, LiveResult, ObjectIntent,
  ReadPage, RecordInput, StreamDefinition, StreamInfo, StreamRecord, SubscribeGrant,
} from "./wire.js";

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

  publishLive(chunks: unknown[], options: LiveOptions = {}): Promise<LiveResult> {
    return this.client.publishLive(this.runId, this.streamId, chunks, options);
  }

  subscribeToken(options: { ttlSeconds?: number } = {}): Promise<SubscribeGrant> {
    return this.client.subscribeToken(this.runId, this.streamId, options);
  }

  browserToken(options: { ttlSeconds?: number } = {}): Promise<BrowserToken> {
    return this.client.browserToken(this.runId, this.streamId, options);
  }

  uploadObject(body: ObjectBody, options: UploadOptions = {}): Promise<StreamRecord> {
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
