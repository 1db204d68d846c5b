/**
 * Server-sent events from text, as the HTML standard parses them, without I/O.
 *
 * Rules:
 * - lines end with CRLF, LF or CR, and a chunk may end anywhere, between a CR and its
 *   LF included: text is fed as it arrives, events come out once complete;
 * - an empty line dispatches the event being built: its `event` (default `message`),
 *   its `data` lines joined by LF, its `id`; an event whose data is empty is not
 *   dispatched (only its type is reset), as the standard says;
 * - a line starting with `:` is a comment (the server's `: ping` keepalive): no event;
 * - `field: value` drops one space after the colon; a line without a colon is a field
 *   with an empty value; unknown fields are ignored; `retry` takes digits only;
 * - an event cut off by the end of the stream (no empty line yet) is never dispatched:
 *   a reconnect resumes from the last whole record, so a half frame is lost to nobody.
 */

export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
  retry: number | null;
}

export class SseParser {
  private pending = "";
  private skipLineFeed = false;
  private type = "";
  private data: string[] = [];
  private id: string | null = null;
  private retry: number | null = null;

  /** The events completed by `text`. */
  feed(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    if (this.skipLineFeed && text.startsWith("\n")) start = 1;
    this.skipLineFeed = false;
    const buffer = this.pending + text.slice(start);
    this.pending = "";
    let position = 0;
    while (position < buffer.length) {
      const lineFeed = buffer.indexOf("\n", position);
      const carriage = buffer.indexOf("\r", position);
      const end = carriage === -1 ? lineFeed : lineFeed === -1 ? carriage : Math.min(carriage, lineFeed);
      if (end === -1) break;
      const event = this.line(buffer.slice(position, end));
      if (event !== null) events.push(event);
      position = end + 1;
      if (buffer[end] === "\r") {
        if (position === buffer.length) this.skipLineFeed = true;
        else if (buffer[position] === "\n") position += 1;
      }
    }
    this.pending = buffer.slice(position);
    return events;
  }

  private line(line: string): SseEvent | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") this.type = value;
    else if (name === "data") this.data.push(value);
    else if (name === "id" && !value.includes("\0")) this.id = value;
    else if (name === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return null;
  }

  private dispatch(): SseEvent | null {
    const data = this.data.join("\n");
    const hadData = this.data.length > 0;
    const event = { event: this.type || "message", data, id: this.id, retry: this.retry };
    this.type = "";
    this.data = [];
    this.retry = null;
    return hadData ? event : null;
  }
}
