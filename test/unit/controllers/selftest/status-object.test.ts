// selfTest.statusObject: the HookGuard object the leader writes the status of, named in the line about a missing one.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config/load.js';
import type { SelfTestClient } from '../../../../src/controllers/selftest/client.js';
import { SelfTest } from '../../../../src/controllers/selftest/self-test.js';
import { generateDevCertificate } from '../../../../src/tls/certificates.js';
import { capturedLogger } from '../../../support/log-sink.js';

/** A client whose dry run fails (no webhook needed here) and that finds no HookGuard object. */
const noObject: SelfTestClient = {
  dryRunCreate: () => Promise.reject(new Error('no API server here')),
  readStatusObject: () => Promise.resolve(undefined),
  writeStatus: () => Promise.reject(new Error('not reached')),
};

async function missingLine(statusObject: string | undefined): Promise<unknown> {
  const { logger, lines } = capturedLogger('debug');
  const { cert } = await generateDevCertificate();
  const test = new SelfTest(
    noObject,
    {
      mode: 'enforce',
      namespace: 'hookguard-selftest',
      intervalSeconds: 60,
      requestTimeoutMs: 1000,
      certificateWarningDays: 14,
      pinnedArgocdVersion: null,
      advisories: [],
      ...(statusObject === undefined ? {} : { statusObject }),
    },
    { certificate: () => cert, discovery: () => ({ enabled: true, synced: true, watching: true, instances: [] }) },
    () => undefined,
    logger,
    'replica-a',
  );
  await test.once(new AbortController().signal);
  return lines.find((line) => line.msg.startsWith('the HookGuard object'))?.msg;
}

describe('selfTest.statusObject', () => {
  it("is the chart's object, hookguard, by default", () => {
    expect(loadConfig().selfTest.statusObject).toBe('hookguard');
  });

  it.each([
    [undefined, 'hookguard'],
    ['hookguard-staging', 'hookguard-staging'],
  ])('a missing object is named in the log line (%s)', async (configured, named) => {
    expect(await missingLine(configured)).toBe(
      `the HookGuard object "${named}" does not exist or cannot be read: the Helm chart creates it (helm upgrade the ` +
        'release to recreate it); if its CRD hookguards.hookguard.io is missing too, first kubectl apply -f ' +
        'charts/hookguard/crds/ (Helm installs crds/ on first install only)',
    );
  });
});
