// A vitest reporter: the run fails when a golden test (test/golden/) was skipped or left as a todo, so a golden
// suite can never pass by not running (an `it.skip`, a `skipIf`, a `.only` elsewhere in its file). A run that
// filters by test name (`-t`) skips tests on purpose and is left alone.
import type { Reporter, TestModule, Vitest } from 'vitest/node';

export const GOLDEN_DIR = 'test/golden/';
const SHOWN = 10;

export default class NoSkippedGoldens implements Reporter {
  private filtered = false;

  onInit(vitest: Vitest): void {
    this.filtered = vitest.config.testNamePattern !== undefined;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    if (this.filtered) return;
    const skipped = testModules
      .filter((module) => module.relativeModuleId.startsWith(GOLDEN_DIR))
      .flatMap((module) =>
        [...module.children.allTests('skipped')].map((test) => `${module.relativeModuleId} > ${test.fullName}`),
      );
    if (skipped.length === 0) return;
    console.error(`\nhookguard: ${skipped.length} golden test(s) skipped; a golden test must run:`);
    for (const name of skipped.slice(0, SHOWN)) console.error(`  ${name}`);
    if (skipped.length > SHOWN) console.error(`  and ${skipped.length - SHOWN} more`);
    process.exitCode = 1;
  }
}
