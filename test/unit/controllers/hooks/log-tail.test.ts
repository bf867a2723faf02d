// The end of a log for the hook watcher's Event, read from a kubelet that answers tailLines and limitBytes as the real
// one does (k8s.io/cri-client v0.37.2 pkg/logs/logs.go ReadLogs): the last tailLines lines, then only the first
// limitBytes of them.
import { describe, expect, it } from 'vitest';
import { LOG_READS, LOG_TAIL_BYTES, lastLogBytes, readLogTail } from '../../../../src/controllers/hooks/client.js';

type Options = { tailLines: number; limitBytes: number };

/** A kubelet holding `log`: each read recorded. */
function kubelet(log: string) {
  const reads: Options[] = [];
  const read = async (options: Options) => {
    reads.push(options);
    const lines = log.split(/(?<=\n)/);
    const tail = lines.slice(Math.max(0, lines.length - options.tailLines)).join('');
    return Buffer.from(tail, 'utf8').subarray(0, options.limitBytes).toString('utf8');
  };
  return { read, reads };
}

describe('readLogTail', () => {
  it('keeps the END of a log whose last 80 lines are longer than 2 KiB (the kubelet cut at limitBytes keeps their start)', async () => {
    const log = `${Array.from({ length: 100 }, (_, index) => `step ${index}: ${'x'.repeat(60)}`).join('\n')}\nERROR: migration 42 failed\n`;
    const { read, reads } = kubelet(log);
    const tail = await readLogTail(read);
    expect(tail.endsWith('ERROR: migration 42 failed\n')).toBe(true);
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(LOG_TAIL_BYTES);
    // Whole lines only: the cut falls at its start, and the partial first line is left out.
    expect(tail.startsWith('step ')).toBe(true);
    expect(log.endsWith(tail)).toBe(true);
    expect(reads).toEqual([LOG_READS[0]]);
  });

  it('returns a short log whole', async () => {
    const { read } = kubelet('one\ntwo\n');
    expect(await readLogTail(read)).toBe('one\ntwo\n');
  });

  it('asks for fewer lines when the last 80 are over the read limit, and gives up on a last line longer than it', async () => {
    const huge = `${'y'.repeat(20_000)}\n`;
    const fewer = kubelet(`${huge.repeat(10)}short 1\nshort 2\n`);
    expect(await readLogTail(fewer.read)).toBe('short 2\n');
    expect(fewer.reads.map((options) => options.tailLines)).toEqual([80, 8, 1]);
    const none = kubelet(`short\n${huge}`);
    expect(await readLogTail(none.read)).toBe('');
    expect(none.reads).toEqual(LOG_READS);
  });

  it('leaves out the partial first line: a password= cut at its start does not go out as a bare value', () => {
    expect(lastLogBytes('db login password=hunter2-horse-staple\nnext\n', 30)).toBe('next\n');
    expect(lastLogBytes('a single long line without a break', 10)).toBe('');
    // A cut inside a multi-byte character is in the first line, which goes.
    expect(lastLogBytes(`${'数'.repeat(20)}\nend\n`, 10)).toBe('end\n');
    expect(lastLogBytes('fits\n', 5)).toBe('fits\n');
  });
});
