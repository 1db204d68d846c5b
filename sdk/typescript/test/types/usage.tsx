// The package's types as a user meets them, through its published entry points (dist's
// .d.ts): `npm run check:types` compiles this, and each `@ts-expect-error` is a mistake the
// types must catch (an unused one fails the check).
import { LiveEvent, RunnelClient, type StreamRecord, TokenExpired } from "@runnel/client";
import { useRunnelStream } from "@runnel/client/react";

declare const token: string;

export async function produceAndFollow(): Promise<number[]> {
  const rn = new RunnelClient({ baseUrl: "http://127.0.0.1:8080", token });
  const answer = rn.stream("run-1", "answer");
  await answer.create({ content_class: "output.text", consumers: ["ui"] });
  // @ts-expect-error a definition needs its content_class
  await answer.create({ consumers: ["ui"] });
  const producer = answer.producer({ keyPrefix: "run-1/answer" });
  const key: string = await producer.write({ text: "Hello" });
  // @ts-expect-error a producer needs a key prefix: it names the work
  rn.producer("run-1", "answer", {});
  const seen: number[] = [key.length];
  for await (const record of answer.follow({ consumer: "ui" })) {
    const sequence: number = record.sequence; // live: false yields records only
    seen.push(sequence);
  }
  for await (const item of answer.follow({ live: true, tokenProvider: async () => token })) {
    // @ts-expect-error a live follow yields live events too: narrow first
    seen.push(item.sequence);
    if (item instanceof LiveEvent) seen.push(item.attempt ?? 0);
    else seen.push((item satisfies StreamRecord).sequence);
  }
  try {
    await answer.read({ after: 0, limit: 10 });
  } catch (error) {
    if (error instanceof TokenExpired) seen.push(error.lastSequence ?? 0);
  }
  return seen;
}

export function Answer() {
  const { records, live, status, error } = useRunnelStream("run-1", "answer", { token, consumer: "ui", live: true });
  // @ts-expect-error status is one of the hook's named states
  const wrong: "open" = status;
  return (
    <section data-status={status} data-wrong={wrong}>
      {records.map((record) => <p key={record.sequence}>{String(record.payload)}</p>)}
      {live.map((step) => <p key={step.source}>{step.text}</p>)}
      {error === null ? null : <p>{error.message}</p>}
    </section>
  );
}
