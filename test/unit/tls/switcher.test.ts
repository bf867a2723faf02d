// The rounds every certificate reader and the keeper share (src/tls/switcher.ts, issue 25 finding 12), and the switch
// to a new pair.
import { describe, expect, it } from 'vitest';
import { issueCa, issueServingCertificate } from '../../../src/tls/authority.js';
import { CertificateSwitcher, coalesced } from '../../../src/tls/switcher.js';
import { capturedLogger } from '../../support/log-sink.js';

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

describe('the switch to a pair the caBundles must trust (certificates.mode self)', () => {
  const SETTINGS = { serviceName: 'hookguard', namespace: 'demo', caValidityDays: 1825, certValidityDays: 365 };
  const NOT_YET = "tls.crt is signed by no CA that every webhook's caBundle holds (issuer CN=hookguard-ca)";

  it('a first pair not trusted yet is waited for, said once at info; once trusted it is taken; a later one is refused', async () => {
    const ca = await issueCa(SETTINGS, Date.now());
    const [first, second] = [
      await issueServingCertificate(SETTINGS, ca, Date.now()),
      await issueServingCertificate(SETTINGS, ca, Date.now()),
    ];
    const { logger, lines } = capturedLogger('debug');
    const switcher = new CertificateSwitcher({ secret: 'demo/hookguard-tls' }, logger);
    // Read between the keeper's Secret write and its caBundle writes, twice.
    expect(switcher.offer(first, () => NOT_YET)).toBe(false);
    expect(switcher.offer(first, () => NOT_YET)).toBe(false);
    expect(switcher.pair).toBeUndefined();
    expect(switcher.offer(first, () => undefined)).toBe(true);
    expect(switcher.pair).toBe(first);
    expect(switcher.offer(second, () => NOT_YET)).toBe(false);
    expect(switcher.pair).toBe(first);
    expect(lines.map((line) => [line.level, line.msg, line.reason])).toEqual([
      [30, 'certificates: waiting for every caBundle to trust the serving certificate', NOT_YET],
      [50, 'certificate reload failed: keeping the previous certificate', 'untrusted'],
    ]);
  });
});
