// certificates.mode self refused where there is no cluster. The two `hookguard serve` processes keeping the Secret and
// the caBundles are tested against the real API server: test/cluster/certificates.test.ts.
import { describe, expect, it } from 'vitest';
import { ServeProcess } from '../support/serve-process.js';

describe('hookguard serve with certificates.mode self (the built CLI)', () => {
  it('exits 2 naming certificates.mode outside a cluster', async () => {
    await expect(ServeProcess.start([], { HOOKGUARD_CERTIFICATES_MODE: 'self' })).rejects.toThrow(
      'invalid config: certificates.mode: self needs a cluster: there is no kubeconfig and no in-cluster service account',
    );
  });
});
