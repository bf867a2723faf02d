// The hook watcher's Event text (issue 37 item 7): the log's tail, escaped as `hookguard why` escapes it, in the API
// server's 1024 bytes; and Event names that stay DNS subdomains whatever the hook's name.
import { describe, expect, it } from 'vitest';
import type { HookExplanation } from '../../../../src/core/explain/index.js';
import { NOTE_LIMIT_BYTES } from '../../../../src/controllers/events.js';
import { eventName, eventNote, printableTail } from '../../../../src/controllers/hooks/triage.js';

const FAILED: HookExplanation = {
  kind: 'Job',
  namespace: 'shop',
  name: 'db-migrate',
  state: 'Failed',
  reason: 'ContainerFailed',
  message: 'container migrate of Pod db-migrate-9tq2w exited with code 1 (Error)',
  nextStep: 'Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate',
  pod: 'db-migrate-9tq2w',
  container: 'migrate',
};
const HEAD =
  'Job db-migrate failed (ContainerFailed): container migrate of Pod db-migrate-9tq2w exited with code 1 (Error). ' +
  'Next: Read its log: kubectl logs -n shop db-migrate-9tq2w -c migrate. Log lines included (redacted) from migrate: ';

describe('eventNote', () => {
  it('keeps the end of a long log, where the error is, and says where it was cut', () => {
    const log = `${Array.from({ length: 200 }, (_, line) => `step ${line} ok`).join('\n')}\nERROR: relation "orders" does not exist`;
    const note = eventNote(FAILED, log);
    expect(note.startsWith(`${HEAD}…`)).toBe(true);
    expect(note.endsWith('step 199 ok\\nERROR: relation "orders" does not exist')).toBe(true);
    expect(note).not.toContain('step 0 ok');
    expect(Buffer.byteLength(note, 'utf8')).toBeLessThanOrEqual(NOTE_LIMIT_BYTES);
    expect(Buffer.byteLength(note, 'utf8')).toBeGreaterThan(NOTE_LIMIT_BYTES - 12);
  });

  it('carries a short log whole', () => {
    expect(eventNote(FAILED, 'connecting\nERROR: no route to host\n')).toBe(
      `${HEAD}connecting\\nERROR: no route to host`,
    );
  });

  it('escapes control characters as `hookguard why` does: no terminal escape, no forged line', () => {
    const note = eventNote(
      { ...FAILED, message: 'exited\u001b[2J with code 1' },
      'fine\r\n\u001b[31mERROR\u001b[0m\u2028forged line\u0007',
    );
    expect(note).toContain('exited\\u001b[2J with code 1');
    expect(note.endsWith('fine\\r\\n\\u001b[31mERROR\\u001b[0m\\u2028forged line\\u0007')).toBe(true);
    // eslint-disable-next-line no-control-regex -- no control character may reach the note.
    expect(note).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
  });

  it('cuts the log between characters: never inside an escape or a character of several bytes', () => {
    const tail = printableTail('😀\u001b'.repeat(400), 100);
    expect(Buffer.byteLength(tail, 'utf8')).toBeLessThanOrEqual(100);
    expect(tail).toMatch(/^…(\\u001b)?(😀\\u001b)+$/);
    expect(printableTail('\u0007'.repeat(50), 20)).toBe(`…${'\\u0007'.repeat(2)}`);
  });

  it('leaves the log out when the explanation fills the note', () => {
    const long = { ...FAILED, message: 'x'.repeat(1100) };
    expect(eventNote(long, 'ERROR: the end')).not.toContain('Log lines included');
  });
});

describe('eventName', () => {
  it.each([
    ['a name cut at 200 characters just after a dash', `${'a'.repeat(199)}-tail`],
    ['a name cut just after a dot', `${'b'.repeat(199)}.more`],
    ['a name cut after a run of dashes and dots', `${'c'.repeat(196)}-.-.-end`],
  ])('%s ends in a letter or digit before .hookguard-…', (_what, hookName) => {
    const name = eventName(hookName, 'uid-1', 'HookFailed', 'hook');
    const [part] = name.split('.hookguard-');
    expect(part).toMatch(/[a-z0-9]$/);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
    expect(name.length).toBeLessThanOrEqual(253);
  });

  it('keeps a short name whole', () => {
    expect(eventName('db-migrate', 'uid-1', 'HookFailed', 'hook')).toMatch(
      /^db-migrate\.hookguard-hookfailed-[0-9a-f]{16}$/,
    );
  });
});
