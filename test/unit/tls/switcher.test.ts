// The rounds every certificate reader and the keeper share (src/tls/switcher.ts, issue 25 finding 12).
import { describe, expect, it } from 'vitest';
import { coalesced } from '../../../src/tls/switcher.js';

describe('coalesced rounds', () => {
  it('a call while a round runs asks for one more round after it, however many calls', async () => {
    let rounds = 0;
    let release: () => void = () => undefined;
    const round = coalesced(async () => {
      rounds++;
      if (rounds === 1) await new Promise<void>((resolve) => (release = resolve));
    });
    const first = round();
    const waiting = [round(), round(), round()];
    expect(waiting.every((call) => call === first)).toBe(true);
    release();
    await Promise.all(waiting);
    expect(rounds).toBe(2);
  });

  it('a round that throws rejects its callers, and the next call runs a new round (issue 25, finding 12)', async () => {
    let rounds = 0;
    const round = coalesced(async () => {
      rounds++;
      if (rounds === 1) throw new Error('the API server went away');
    });
    await expect(round()).rejects.toThrow('the API server went away');
    await expect(round()).resolves.toBeUndefined();
    await expect(round()).resolves.toBeUndefined();
    expect(rounds).toBe(3);
  });
});
