/**
 * Large bodies as object records (docs/api.md, Objects): prepare, upload, commit; and back (the Python
 * SDK's `runnel_client.objects`, the same rules).
 *
 * Rules:
 * - a body is a `Uint8Array`, an `ArrayBuffer` or a `Blob`, held whole (at most 32 MiB:
 *   WebCrypto has no streaming digest). Its size and SHA-256 are measured first and sent
 *   as the prepare's pins, so the server refuses a body that changed in between (422
 *   `digest_mismatch` / `size_mismatch`) and keeps nothing of it;
 * - the intent's idempotency key defaults to one derived from the digest, size and
 *   content type, the same key the Python SDK derives: an upload repeated after a crash
 *   finds its intent and goes on from its state (the upload skipped once uploaded; a
 *   committed intent answers its original sequence), so the same body is one record;
 * - a download is checked against the object's pinned size and digest (the record's
 *   `object`, or the intent's) before it is handed over; a body that does not match is a
 *   `RunnelError` with code `download_mismatch`.
 */

import { digest, type Plan } from "./effects.js";
import { RunnelError } from "./errors.js";
import type { StreamRecord } from "./wire.js";

export type ObjectBody = Uint8Array | ArrayBuffer | Blob;

export interface Pins {
  size: number;
  sha256: string;
}

export async function bytesOf(body: ObjectBody): Promise<Uint8Array> {
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return new Uint8Array(await body.arrayBuffer());
}

/** The SHA-256 of `data` in lower-case hex (WebCrypto: Node 20+, browsers, edge runtimes). */
export async function sha256Hex(data: Uint8Array): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(hash)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The prepare's pins for `data`, its idempotency key defaulted from them. */
export function* preparePins(data: Uint8Array, contentType: string, idempotencyKey: string | undefined,
                             schema: string | undefined): Plan<{ [pin: string]: unknown }> {
  const sha256 = yield* digest(data);
  const key = idempotencyKey ?? `object:${(yield* digest(
    new TextEncoder().encode(`${sha256}:${data.length}:${contentType}`))).slice(0, 40)}`;
  const pins: { [pin: string]: unknown } = {
    idempotency_key: key, sha256, size: data.length, content_type: contentType };
  if (schema !== undefined) pins.schema = schema;
  return pins;
}

export function objectIdOf(target: StreamRecord | string): string {
  if (typeof target === "string") return target;
  if (target.object === undefined) throw new TypeError(`record ${target.sequence} is not an object record`);
  return target.object.object_id;
}

/** Throws `download_mismatch` unless `data` has the pinned size and digest. */
export function* checkDownload(data: Uint8Array, pins: Pins): Plan<Uint8Array> {
  const received = yield* digest(data);
  if (data.length !== pins.size || received !== pins.sha256) {
    throw new RunnelError(0, "download_mismatch", {
      code: "download_mismatch", expected_size: pins.size, received: data.length,
      expected_sha256: pins.sha256,
      detail: "the downloaded body does not match the object's size and digest" });
  }
  return data;
}
