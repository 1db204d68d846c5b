/**
 * `@runnel/client`: the TypeScript client of Runnel (docs/adr/0068). ES modules, typed,
 * no runtime dependency beyond `fetch` (Node 20+, browsers, edge runtimes).
 */

export { type TokenSource } from "./auth.js";
export { type LiveOptions, type UploadOptions } from "./calls.js";
export {
  type ClientOptions, type FollowCallOptions, type ReadOptions, type RunFollowCallOptions, RunnelClient,
  StreamHandle,
} from "./client.js";
export { type Fetch } from "./drive.js";
export { type FollowStatus } from "./effects.js";
export {
  AppendFailed, BackpressureError, type Problem, ResyncRequired, RunnelError, TokenExpired,
  TransportError, Unauthenticated,
} from "./errors.js";
export { FollowState } from "./following.js";
export { RunFollowState } from "./runFollowing.js";
export { chunkText, LiveText, type LiveStep, Steps } from "./layers.js";
export { LivePublisher, type LivePublisherOptions, type LiveSink } from "./live.js";
export { type ObjectBody } from "./objects.js";
export {
  joined, type PipeOptions, Producer, type ProducerClient, type ProducerOptions,
} from "./producer.js";
export { RetryPolicy } from "./retrying.js";
export {
  type AckResult, type AppendResult, type BrowserToken, type CloseResult, type ConsumerDeclaration,
  type DeleteResult,
  LiveEvent, type LiveResult, type ObjectIntent, type ObjectRef, type ReadPage, type RecordInput,
  type StreamDefinition, type StreamInfo, type StreamRecord, type StreamStatus, type SubscribeGrant,
} from "./wire.js";
