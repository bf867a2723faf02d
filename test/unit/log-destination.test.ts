// BoundedLogDestination (src/http/log-destination.ts): log lines queue up to maxQueueBytes in front of a stdout that
// takes them slowly or never; the rest are dropped and counted, and the next line that is queued says how many.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BoundedLogDestination, isoTimeOncePerMillisecond } from '../../src/http/log-destination.js';

/** A stdout whose reader takes nothing until release() (as a pipe nobody reads): every write stays queued. */
function stalledStdout() {
  const written: string[] = [];
  const held: Array<() => void> = [];
  const stream = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _encoding, callback) {
      held.push(() => {
        // One chunk holds the lines of one turn of the event loop: kept here a line each.
        written.push(...chunk.toString('utf8').split(/(?<=\n)/));
        callback();
      });
    },
  });
  return {
    stream,
    written,
    release() {
      while (held.length > 0) held.shift()!();
    },
  };
}

/** A destination that takes every line written to it as an audit line, as pino marks one (lastObj.audit). */
function auditLog(stream: Writable, maxQueueBytes: number): BoundedLogDestination {
  const destination = new BoundedLogDestination(stream, maxQueueBytes);
  destination.lastObj = { audit: {} };
  return destination;
}

/** The end of this turn of the event loop, when the destination hands the lines it took to the stream. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

const line = (n: number) => `${JSON.stringify({ level: 30, msg: 'admission decision', n })}\n`;

describe('BoundedLogDestination', () => {
  it('queues up to maxQueueBytes, drops and counts the rest, and the next line written says how many were dropped', async () => {
    const stdout = stalledStdout();
    const size = Buffer.byteLength(line(0));
    const destination = auditLog(stdout.stream, size * 3);
    for (let n = 0; n < 10; n += 1) destination.write(line(n));
    // Three lines' worth are taken, and wait for the stream.
    expect(destination.dropped).toBe(7);
    expect(destination.queuedBytes).toBe(size * 3);
    await tick();
    expect(destination.queuedBytes).toBe(size * 3);
    stdout.release();
    await new Promise((resolve) => setImmediate(resolve));
    stdout.release();
    await new Promise((resolve) => setImmediate(resolve));
    stdout.release();
    expect(destination.queuedBytes).toBe(0);
    destination.write(line(10));
    destination.write(line(11));
    await tick();
    stdout.release();
    expect(stdout.written.map((text) => JSON.parse(text) as Record<string, unknown>)).toEqual([
      { level: 30, msg: 'admission decision', n: 0 },
      { level: 30, msg: 'admission decision', n: 1 },
      { level: 30, msg: 'admission decision', n: 2 },
      { level: 30, msg: 'admission decision', n: 10, linesDroppedBefore: 7 },
      { level: 30, msg: 'admission decision', n: 11 },
    ]);
    expect(destination.dropped).toBe(7);
  });

  it('keeps counting when the line that would carry the count is dropped too', async () => {
    const stdout = stalledStdout();
    // Room for one line with its count, not for two lines.
    const destination = auditLog(stdout.stream, Buffer.byteLength(line(0)) + 30);
    destination.write(line(0));
    destination.write(line(1));
    expect(destination.dropped).toBe(1);
    // Queued behind line 0, line 2 with its count does not fit either: both are counted in the next line.
    destination.write(line(2));
    expect(destination.dropped).toBe(2);
    await tick();
    stdout.release();
    destination.write(line(3));
    await tick();
    stdout.release();
    expect(stdout.written).toEqual([line(0), line(3).replace('}\n', ',"linesDroppedBefore":2}\n')]);
  });

  it('drops and counts every line once stdout failed (EPIPE: nobody will ever read)', async () => {
    const stream = new Writable({
      write(_chunk, _encoding, callback) {
        callback(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    const destination = auditLog(stream, 1 << 20);
    destination.write(line(0));
    await tick();
    await tick();
    destination.write(line(1));
    destination.write(line(2));
    expect(destination.dropped).toBe(2);
  });

  it('at shutdown, writes what is queued when stdout takes it, and gives up on what it does not by the deadline', async () => {
    const taken = stalledStdout();
    const flushing = new BoundedLogDestination(taken.stream, 1 << 20);
    flushing.write(line(0));
    flushing.write(line(1));
    const result = flushing.end(60_000);
    taken.release();
    await new Promise((resolve) => setImmediate(resolve));
    taken.release();
    expect(await result).toEqual({ flushed: true });
    expect(taken.written).toEqual([line(0), line(1)]);

    const stuck = stalledStdout();
    const giving = new BoundedLogDestination(stuck.stream, 1 << 20);
    giving.write(line(0));
    giving.write(line(1));
    expect(await giving.end(1)).toEqual({ flushed: false, unwrittenBytes: Buffer.byteLength(line(0)) * 2 });
    expect(stuck.stream.destroyed).toBe(true);
  });

  it('keeps room for what the server says besides its audit lines: a flood of audit lines never hides a reload', async () => {
    const stdout = stalledStdout();
    const destination = new BoundedLogDestination(stdout.stream, 400);
    const logger = pino({ base: undefined, timestamp: false }, destination);
    for (let n = 0; n < 20; n += 1) logger.info({ audit: { uid: `u-${n}` } }, 'admission decision');
    const droppedAudit = destination.dropped;
    expect(droppedAudit).toBeGreaterThan(0);
    logger.info({ certificate: 'new' }, 'serving certificate reloaded');
    logger.info({ audit: { uid: 'u-20' } }, 'admission decision');
    expect(destination.dropped).toBe(droppedAudit + 1);
    expect(destination.queuedBytes).toBeLessThanOrEqual(500);
    await tick();
    stdout.release();
    const messages = stdout.written.map((text) => (JSON.parse(text) as { msg: string }).msg);
    expect(messages.at(-1)).toBe('serving certificate reloaded');
  });

  it('is what pino writes to: its lines, with the count where lines were dropped', async () => {
    const stdout = stalledStdout();
    const destination = new BoundedLogDestination(stdout.stream, 200);
    const logger = pino({ base: undefined, timestamp: false }, destination);
    for (let n = 0; n < 5; n += 1) logger.info({ audit: { n } }, 'admission decision');
    await tick();
    stdout.release();
    logger.info({ audit: { n: 5 } }, 'admission decision');
    await tick();
    stdout.release();
    const lines = stdout.written.map((text) => JSON.parse(text) as Record<string, unknown>);
    expect(lines.at(-1)).toEqual({
      level: 30,
      audit: { n: 5 },
      msg: 'admission decision',
      linesDroppedBefore: 5 - (lines.length - 1),
    });
    expect(destination.dropped).toBe(5 - (lines.length - 1));
  });
});

describe('isoTimeOncePerMillisecond', () => {
  afterEach(() => vi.restoreAllMocks());

  it("writes pino's isoTime text, worked out again only when the millisecond changes", () => {
    const now = vi.spyOn(Date, 'now').mockReturnValue(Date.parse('2026-11-27T13:15:16.189Z'));
    const time = isoTimeOncePerMillisecond();
    expect(time()).toBe(',"time":"2026-11-27T13:15:16.189Z"');
    expect(time()).toBe(pino.stdTimeFunctions.isoTime());
    now.mockReturnValue(Date.parse('2026-11-27T13:15:16.190Z'));
    expect(time()).toBe(',"time":"2026-11-27T13:15:16.190Z"');
    expect(time()).toBe(pino.stdTimeFunctions.isoTime());
  });
});
