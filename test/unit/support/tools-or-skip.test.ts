// The e2e tests that need helm skip on a machine without it, but never in CI: a CI run that skipped them would pass
// having tested nothing (issue 37 item 15: test/e2e/render-time.test.ts skipped with a warning in CI).
import { describe, expect, it, vi } from 'vitest';
import { toolsOrSkip } from '../../support/k8s-tools.js';

const missing = () => Promise.reject(new Error('cluster: helm4 v4.3.2 is not built'));

describe('toolsOrSkip', () => {
  it('hands the tools over when it gets them', async () => {
    await expect(toolsOrSkip('e2e', () => Promise.resolve('helm'), { CI: 'true' })).resolves.toBe('helm');
  });

  it.each([{}, { CI: '' }, { CI: 'false' }])('skips with a warning outside CI (%j)', async (env) => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    await expect(toolsOrSkip('e2e', missing, env)).resolves.toBeUndefined();
    expect(warn).toHaveBeenCalledWith('e2e: cannot get a helm binary: cluster: helm4 v4.3.2 is not built; skipping');
    warn.mockRestore();
  });

  it.each([{ CI: 'true' }, { CI: '1' }])('fails in CI (%j), naming what is missing', async (env) => {
    await expect(toolsOrSkip('e2e', missing, env)).rejects.toThrow(
      'e2e: cannot get a helm binary: cluster: helm4 v4.3.2 is not built (CI is set: not skipping)',
    );
  });
});
