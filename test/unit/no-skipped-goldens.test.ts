// The reporter that fails a run in which a golden test was skipped (vitest.config.ts).
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TestModule, Vitest } from 'vitest/node';
import NoSkippedGoldens from '../support/no-skipped-goldens.js';

function moduleOf(relativeModuleId: string, skipped: string[]): TestModule {
  return {
    relativeModuleId,
    children: {
      *allTests(state?: string) {
        if (state === 'skipped') yield* skipped.map((fullName) => ({ fullName }));
      },
    },
  } as unknown as TestModule;
}

function run(modules: TestModule[], testNamePattern?: RegExp): { exitCode: typeof process.exitCode; said: string[] } {
  const said: string[] = [];
  const error = vi.spyOn(console, 'error').mockImplementation((line: string) => said.push(line));
  const before = process.exitCode;
  const reporter = new NoSkippedGoldens();
  reporter.onInit({ config: { testNamePattern } } as unknown as Vitest);
  reporter.onTestRunEnd(modules);
  const exitCode = process.exitCode;
  process.exitCode = before;
  error.mockRestore();
  return { exitCode, said };
}

describe('no-skipped-goldens reporter', () => {
  afterEach(() => vi.restoreAllMocks());

  it('fails the run naming a skipped golden test', () => {
    const { exitCode, said } = run([moduleOf('test/golden/fixtures.test.ts', ['golden > x.yaml > helm'])]);
    expect(exitCode).toBe(1);
    expect(said).toEqual([
      '\nhookguard: 1 golden test(s) skipped; a golden test must run:',
      '  test/golden/fixtures.test.ts > golden > x.yaml > helm',
    ]);
  });

  it('leaves a run alone when nothing golden was skipped, or a test outside test/golden/ was', () => {
    const { exitCode, said } = run([
      moduleOf('test/golden/fixtures.test.ts', []),
      moduleOf('test/e2e/render-time.test.ts', ['needs a terminal']),
    ]);
    expect(exitCode).toBe(before());
    expect(said).toEqual([]);
  });

  it('leaves a run filtered by test name alone (-t skips on purpose)', () => {
    const { exitCode } = run([moduleOf('test/golden/fixtures.test.ts', ['golden > x.yaml > helm'])], /helm/);
    expect(exitCode).toBe(before());
  });
});

function before(): typeof process.exitCode {
  return process.exitCode;
}
