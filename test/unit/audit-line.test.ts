// auditLineWriter (src/http/audit.ts): hookguard writes its audit line itself, with one JSON.stringify of the
// record, instead of through pino's field loop. The oracle is pino: the same record given to logger.info must come
// out as the same bytes, to the same destination, with the same metadata for BoundedLogDestination.
import { Writable } from 'node:stream';
import { pino, type Logger, type LoggerOptions } from 'pino';
import { describe, expect, it } from 'vitest';
import { auditLineWriter } from '../../src/http/audit.js';
import { BoundedLogDestination } from '../../src/http/log-destination.js';

const MESSAGE = 'admission decision';

/** A pino logger over a destination that keeps what is written to it, and pino's metadata for each line. */
function capturing(options: LoggerOptions) {
  const lines: string[] = [];
  const facts: unknown[] = [];
  const destination = {
    [Symbol.for('pino.metadata')]: true,
    lastLevel: 0,
    lastObj: undefined as unknown,
    lastMsg: undefined as unknown,
    lastTime: undefined as unknown,
    lastLogger: undefined as unknown,
    write(line: string) {
      lines.push(line);
      facts.push({ level: this.lastLevel, obj: this.lastObj, msg: this.lastMsg, time: this.lastTime });
    },
  };
  const logger: Logger = pino(options, destination);
  return { logger, lines, facts, destination };
}

/** A record as the audit line holds one: nested lists, null, a number, an escaped quote and a \u escape kept raw. */
const record = {
  uid: 'uid-1',
  endpoint: 'mutate',
  name: 'say "hi"',
  argocdVersion: null,
  argocdVersionFrom: { by: 'config' },
  findings: [{ rule: 'hook-label', action: 'mutate', advisory: undefined }],
  denial: (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON('"cut\\u2026"'),
  durationMs: 0.012,
};

describe('auditLineWriter', () => {
  it.each<[string, LoggerOptions]>([
    ['the pid and hostname pino adds by default', { timestamp: () => ',"time":1' }],
    ['the base bindings of hookguard serve', { base: { service: 'hookguard' }, timestamp: () => ',"time":"2026"' }],
    ['no time and no bindings', { base: undefined, timestamp: false }],
  ])(
    'writes what logger.info({ audit }, message) writes, byte for byte, with the same metadata: %s',
    (_name, options) => {
      const viaPino = capturing(options);
      const direct = capturing(options);
      viaPino.logger.info({ audit: record }, MESSAGE);
      auditLineWriter(direct.logger, MESSAGE)(record);
      expect(direct.lines).toEqual(viaPino.lines);
      expect(direct.facts).toEqual(viaPino.facts);
    },
  );

  it('writes the bindings of a child logger as pino does', () => {
    const timed = { base: { service: 'hookguard' }, timestamp: () => ',"time":1' };
    const viaPino = capturing(timed);
    const direct = capturing(timed);
    viaPino.logger.child({ component: 'webhook' }).info({ audit: record }, MESSAGE);
    auditLineWriter(direct.logger.child({ component: 'webhook' }), MESSAGE)(record);
    expect(direct.lines).toEqual(viaPino.lines);
    expect(direct.lines[0]).toBe(
      '{"level":30,"time":1,"service":"hookguard","component":"webhook","audit":{"uid":"uid-1","endpoint":"mutate",' +
        '"name":"say \\"hi\\"","argocdVersion":null,"argocdVersionFrom":{"by":"config"},' +
        '"findings":[{"rule":"hook-label","action":"mutate"}],"denial":"cut\\u2026","durationMs":0.012},' +
        '"msg":"admission decision"}\n',
    );
  });

  it('writes nothing below the level info, and writes again once the level allows it', () => {
    const { logger, lines } = capturing({ level: 'warn', timestamp: false, base: undefined });
    const write = auditLineWriter(logger, MESSAGE);
    write(record);
    expect(lines).toEqual([]);
    logger.level = 'debug';
    write({ uid: 'uid-2' });
    expect(lines).toEqual(['{"level":30,"audit":{"uid":"uid-2"},"msg":"admission decision"}\n']);
  });

  it('is an audit line to BoundedLogDestination: dropped at maxQueueBytes, where other lines have a quarter more', () => {
    const held = new Writable({ highWaterMark: 1, write: () => undefined });
    const destination = new BoundedLogDestination(held, 64 * 1024);
    const logger = pino({ timestamp: false, base: undefined }, destination);
    const write = auditLineWriter(logger, MESSAGE);
    write({ uid: 'x'.repeat(40 * 1024) });
    write({ uid: 'x'.repeat(40 * 1024) });
    expect(destination.droppedByLine).toEqual({ audit: 1, other: 0 });
    // 40 KiB queued and 30 KiB more: over the audit lines' 64 KiB, within the 80 KiB of the others.
    logger.info({ other: 'x'.repeat(30 * 1024) }, 'not an audit line');
    expect(destination.droppedByLine).toEqual({ audit: 1, other: 0 });
    write({ uid: 'x'.repeat(10) });
    expect(destination.droppedByLine).toEqual({ audit: 2, other: 0 });
  });
});
