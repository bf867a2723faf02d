import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

export type LogLine = Record<string, unknown> & { level: number; msg: string };

/** A pino logger whose JSON lines land in `lines`, parsed. */
export function capturedLogger(level = 'debug'): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      callback();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

/** Polls until `check` returns (or resolves to) something truthy, or fails after timeoutMs with what it was waiting for. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
