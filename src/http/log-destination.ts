// Where `hookguard serve` writes its log lines, the audit lines among them: a bounded queue in front of stdout.
//
// pino's default destination (sonic-boom on fd 1) queues without bound unless given `maxLength`: a pipe whose reader
// (the container runtime, a log shipper) stalls made every admission answer grow the heap until the pod was killed,
// and at SIGTERM the backlog held the process for minutes (issue 22). sonic-boom's own bound (`maxLength`, sonic-boom
// 4.2 index.js write()) would cap the memory too: past it, a line is dropped with a `drop` event carrying it, and
// nothing else. What this destination adds over it:
// - the audit/other split: audit lines (those with an `audit` field) may fill the queue up to maxQueueBytes, every
//   other line (a certificate reload, discovery, the self-test, shutdown) a quarter more, so a flood of audit lines
//   never hides what the server itself says;
// - the drop count: each dropped line is counted by kind (`hookguard_log_lines_dropped_total{line="audit"|"other"}`),
//   and the next line written says how many lines of either kind were dropped before it (`"linesDroppedBefore": N`),
//   so whoever reads the log sees the gap where it is;
// - one write per turn of the event loop for all the lines taken in it, and a bounded flush at shutdown (end()).
// A write never waits: on a pipe or socket, stdout is written through a non-blocking libuv stream (node:net), so a
// reader that stops makes the queue fill, never the event loop stop; a file or terminal is written synchronously, as
// Node writes them.
import { fstatSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { Writable } from 'node:stream';

/** What end() saw: every queued line written, or lines still queued at the deadline (then discarded). */
export type FlushResult = { flushed: true } | { flushed: false; unwrittenBytes: number };

/** The stream the destination writes to: its queue length, write, end, destroy and events. */
export type LogStream = Pick<Writable, 'writableLength' | 'write' | 'end' | 'destroy' | 'once' | 'on' | 'off'>;

/** Adds `"linesDroppedBefore": N` to a pino line (`{…}\n`), so whoever reads the log sees the gap where it is. */
function withDropCount(line: string, dropped: number): string {
  return line.endsWith('}\n') ? `${line.slice(0, -2)},"linesDroppedBefore":${dropped}}\n` : line;
}

/** Lines dropped since the start, by kind: audit lines, and every other line. */
export interface DroppedLines {
  audit: number;
  other: number;
}

/** pino's metadata protocol (pino lib/proto.js write): it sets lastObj and the like on the stream before each write. */
const PINO_METADATA = Symbol.for('pino.metadata');

export class BoundedLogDestination {
  readonly #dropped: DroppedLines = { audit: 0, other: 0 };
  #droppedSinceWritten = 0;
  #failed = false;
  /**
   * The lines taken in this turn of the event loop, handed to the stream together once it ends: one stream write
   * (one syscall) for many audit lines instead of one each, which cost more CPU than the decision itself.
   */
  #batch: string[] = [];
  #batchBytes = 0;
  #flushScheduled = false;
  readonly [PINO_METADATA] = true;
  /** The object of the line pino is about to write (set by pino). */
  lastObj: unknown;
  /**
   * Audit lines (those with an `audit` field) may fill the queue up to maxQueueBytes; every other line (a certificate
   * reload, discovery, the self-test, shutdown) may use a quarter more, so that a flood of audit lines never hides
   * what the server itself says. Memory stays bounded by both together.
   */
  private readonly otherLinesLimit: number;

  constructor(
    private readonly stream: LogStream,
    private readonly maxQueueBytes: number,
  ) {
    this.otherLinesLimit = maxQueueBytes + Math.floor(maxQueueBytes / 4);
    // EPIPE (nobody will ever read) or any other write error: the lines from now on are dropped and counted.
    stream.on('error', () => {
      this.#failed = true;
    });
  }

  /** Lines dropped since the start, of both kinds. */
  get dropped(): number {
    return this.#dropped.audit + this.#dropped.other;
  }

  /** Lines dropped since the start, by kind. */
  get droppedByLine(): Readonly<DroppedLines> {
    return this.#dropped;
  }

  /** Bytes queued and not yet taken by the kernel. */
  get queuedBytes(): number {
    return this.stream.writableLength + this.#batchBytes;
  }

  /** pino's destination interface: called once per line, synchronously, on the request's path. */
  write(line: string): void {
    const pending = this.#droppedSinceWritten;
    const text = pending > 0 ? withDropCount(line, pending) : line;
    const lastObj = this.lastObj;
    const isAudit = typeof lastObj === 'object' && lastObj !== null && 'audit' in lastObj;
    const limit = isAudit ? this.maxQueueBytes : this.otherLinesLimit;
    const bytes = Buffer.byteLength(text);
    if (this.#failed || this.stream.writableLength + this.#batchBytes + bytes > limit) {
      this.#dropped[isAudit ? 'audit' : 'other'] += 1;
      this.#droppedSinceWritten += 1;
      return;
    }
    this.#droppedSinceWritten = 0;
    this.#batch.push(text);
    this.#batchBytes += bytes;
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => this.#flush());
    }
  }

  /** Hands the lines taken so far to the stream, in one write. */
  #flush(): void {
    this.#flushScheduled = false;
    if (this.#batch.length === 0) return;
    const text = this.#batch.join('');
    this.#batch = [];
    this.#batchBytes = 0;
    if (!this.#failed) this.stream.write(text);
  }

  /**
   * Ends the stream once every queued line is written, waiting at most deadlineMs; then lets it go: what is still
   * queued is discarded, so that a stdout nobody reads cannot hold the process past its grace period.
   */
  async end(deadlineMs: number): Promise<FlushResult> {
    this.#flush();
    const stream = this.stream;
    if (!this.#failed)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, deadlineMs);
        function done() {
          clearTimeout(timer);
          stream.off('finish', done);
          stream.off('error', done);
          resolve();
        }
        stream.once('finish', done);
        stream.once('error', done);
        stream.end();
      });
    const unwrittenBytes = this.#failed ? 0 : stream.writableLength;
    stream.destroy();
    return unwrittenBytes === 0 ? { flushed: true } : { flushed: false, unwrittenBytes };
  }
}

/**
 * stdout (fd 1) as a non-blocking stream when it is a pipe or a socket (in a container it is a pipe to the
 * runtime); anything else (a file, a terminal, /dev/null) is written synchronously, as Node writes process.stdout
 * there, and never queues.
 */
export function stdoutStream(): LogStream {
  let pipe = false;
  try {
    const stat = fstatSync(1);
    pipe = stat.isFIFO() || stat.isSocket();
  } catch {
    // No fd 1 to look at: written as a file would be.
  }
  if (pipe) return new Socket({ fd: 1, readable: false, writable: true });
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      try {
        for (let written = 0; written < chunk.length;) written += writeSync(1, chunk, written);
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
  });
}

/**
 * pino's `stdTimeFunctions.isoTime` (`,"time":"2026-11-27T13:15:16.189Z"`, the same text), worked out once per
 * millisecond: at thousands of audit lines a second most lines share their millisecond, and formatting the date was
 * a per-request cost of its own.
 */
export function isoTimeOncePerMillisecond(): () => string {
  let millisecond = Number.NaN;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== millisecond) {
      millisecond = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}
