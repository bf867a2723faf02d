// The text renderer of `hookguard why`: what a terminal shows of text a Pod wrote, long termination messages, ages.
import { describe, expect, it } from 'vitest';
import type { HookExplanation } from '../../../src/core/explain/index.js';
import { printable } from '../../../src/report/report.js';
import { duration, renderWhyJson, renderWhyText } from '../../../src/report/why.js';

const failed: HookExplanation = {
  kind: 'Job',
  namespace: 'shop',
  name: 'db-migrate',
  state: 'Failed',
  reason: 'ContainerFailed',
  message: 'container migrate of Pod db-migrate-9tq2w exited with code 1 (Error)',
  nextStep: 'Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate',
};

describe('renderWhyText', () => {
  it('escapes control characters a Pod wrote, so its text cannot rewrite the terminal', () => {
    const text = renderWhyText({
      scope: 'job shop/db-migrate',
      hooks: [{ ...failed, terminationMessage: 'ok\u001b[2J\u001b]0;owned\u0007\rgone\u009b31m' }],
      examined: 1,
      notShown: 0,
      overCap: 0,
    });
    expect(text).toBe(
      [
        'Job shop/db-migrate: Failed (ContainerFailed)',
        '  container migrate of Pod db-migrate-9tq2w exited with code 1 (Error)',
        '  termination message:',
        '    | ok\\u001b[2J\\u001b]0;owned\\u0007\\rgone\\u009b31m',
        '  next step: Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate',
        '',
      ].join('\n'),
    );
  });

  it('shows the last 20 lines of a long termination message and says so', () => {
    const lines = Array.from({ length: 80 }, (_, index) => `line ${index + 1}`);
    const text = renderWhyText({
      scope: 'job shop/db-migrate',
      hooks: [{ ...failed, terminationMessage: `${lines.join('\n')}\n` }],
      examined: 1,
      notShown: 0,
      overCap: 0,
    });
    expect(text).toContain('  termination message (last 20 of 80 lines):\n    | line 61\n');
    expect(text).toContain('    | line 80\n  next step:');
    expect(text).not.toContain('line 60\n');
  });

  it('quotes a component only when the message does not already carry its words', () => {
    const quoted = { ...failed, quoted: 'Job has reached the specified backoff limit', quotedFrom: 'condition Failed' };
    const text = (hook: HookExplanation) =>
      renderWhyText({ scope: 's', hooks: [hook], examined: 1, notShown: 0, overCap: 0 });
    expect(text(quoted)).toContain('\n  condition Failed: Job has reached the specified backoff limit\n');
    expect(
      text({ ...quoted, message: `${failed.message}; Job has reached the specified backoff limit` }),
    ).not.toContain('condition Failed:');
  });
});

describe('renderWhyJson', () => {
  it('writes every explanation in one field order, whatever order the core built it in, and leaves unset fields out', () => {
    const shuffled: HookExplanation = {
      nextStep: failed.nextStep,
      exitCode: 1,
      container: 'migrate',
      signal: undefined,
      message: failed.message,
      reason: failed.reason,
      state: failed.state,
      name: failed.name,
      namespace: failed.namespace,
      kind: failed.kind,
      pod: 'db-migrate-9tq2w',
    };
    const json = renderWhyJson({ scope: 's', hooks: [shuffled], examined: 1, notShown: 0, overCap: 0 });
    const [hook] = (JSON.parse(json) as { hooks: Record<string, unknown>[] }).hooks;
    expect(Object.keys(hook ?? {})).toEqual([
      'kind',
      'namespace',
      'name',
      'state',
      'reason',
      'message',
      'nextStep',
      'pod',
      'container',
      'exitCode',
    ]);
  });
});

describe('printable and duration', () => {
  it.each([
    ['tab\tand newline\nescaped', 'tab\\tand newline\\nescaped'],
    ['a bidi override \u202e reversed', 'a bidi override \\u202e reversed'],
    ['\u0000\u007f', '\\u0000\\u007f'],
    ['naïve 日本', 'naïve 日本'],
  ])('%j', (input, shown) => expect(printable(input)).toBe(shown));

  it.each([
    [0, '0s'],
    [59, '59s'],
    [60, '1m00s'],
    [1138, '18m58s'],
    [3600, '1h00m'],
    [47 * 3600 + 59 * 60, '47h59m'],
    [49 * 3600, '2d01h'],
  ])('%i s is %s', (seconds, text) => expect(duration(seconds)).toBe(text));
});
