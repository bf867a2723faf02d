import { describe, expect, it } from 'vitest';
import { cutToBytes, kubeEvent, NOTE_LIMIT_BYTES } from '../../../src/controllers/events.js';
import { finalizerEvent } from '../../../src/sweep/finalizer-event.js';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
const job = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'migrate', namespace: 'apps', uid: 'u-1' } };

describe('cutToBytes: kube-apiserver counts len() of the UTF-8 bytes', () => {
  it.each([
    ['ASCII', 'a'.repeat(2000)],
    ['two-byte', 'é'.repeat(2000)],
    ['three-byte', '—'.repeat(2000)],
    ['four-byte', '😀'.repeat(2000)],
    ['mixed', 'Fehler: Datenbank nicht erreichbar — 数据库 😀 '.repeat(40)],
  ])('%s text over the limit ends within 1024 bytes, at a character boundary, with "…"', (_name, text) => {
    const cut = cutToBytes(text, NOTE_LIMIT_BYTES);
    expect(bytes(cut)).toBeLessThanOrEqual(1024);
    expect(bytes(cut)).toBeGreaterThan(1024 - 3 - 4);
    expect(cut.endsWith('…')).toBe(true);
    expect(text.startsWith(cut.slice(0, -1))).toBe(true);
    expect(cut).not.toContain('\uFFFD');
  });

  it('leaves a text within the limit as it is, even when it has more than 1024/3 characters', () => {
    expect(cutToBytes('a'.repeat(1024), 1024)).toBe('a'.repeat(1024));
    expect(cutToBytes('é'.repeat(512), 1024)).toBe('é'.repeat(512));
    expect(cutToBytes('é'.repeat(513), 1024)).toBe(`${'é'.repeat(510)}…`);
  });

  it('cuts reason and action at 128 bytes', () => {
    const event = kubeEvent({
      regarding: job,
      apiVersion: 'batch/v1',
      kind: 'Job',
      type: 'Warning',
      reason: 'Ü'.repeat(100),
      action: 'Ä'.repeat(100),
      note: 'n',
      reportingController: 'hookguard.io/hooks',
      reportingInstance: 'ö'.repeat(100),
      now: new Date(0),
    });
    // That the API server keeps such an Event: test/cluster/hook-watcher.test.ts.
    for (const field of [event.reason, event.action, event.reportingInstance]) expect(bytes(field ?? '')).toBe(127);
  });
});

describe('an Event without a fixed name', () => {
  const unnamed = (regarding: Record<string, unknown>) =>
    kubeEvent({
      regarding,
      apiVersion: 'batch/v1',
      kind: 'Job',
      type: 'Normal',
      reason: 'FinalizerRemoved',
      action: 'RemoveFinalizer',
      note: 'n',
      reportingController: 'hookguard.io/sweep',
      reportingInstance: 'sweep-1',
      now: new Date(0),
    });

  // That the API server stores such an Event, and refused the old prefix `<object>.` with 422 (events.k8s.io/v1
  // checks generateName itself as a DNS subdomain, forgiving only a trailing dash: kubernetes v1.37.2
  // pkg/apis/core/validation/events.go, apimachinery v0.37.2 pkg/api/validation/generic.go maskTrailingDash), is
  // test/cluster/sweep.test.ts's: every Event of the sweep is one without a fixed name.
  it('asks for a name `<object>-<5 random>`, never `<object>.<5 random>`', () => {
    expect(unnamed(job).metadata).toEqual({ generateName: 'migrate-', namespace: 'apps' });
  });

  it('keeps the whole object name as the prefix, from a one-letter name to the longest one', () => {
    for (const name of ['a', `${'a'.repeat(62)}.${'b'.repeat(190)}`])
      expect(unnamed({ ...job, metadata: { ...job.metadata, name } }).metadata?.generateName).toBe(`${name}-`);
  });
});

describe('the sweep Event', () => {
  it('with a long multi-byte reason, has a note within 1024 bytes of UTF-8 (a UTF-16 cut was refused with 422)', () => {
    const event = finalizerEvent({
      kind: 'Job',
      object: job,
      finalizer: 'argocd.argoproj.io/hook-finalizer',
      outcome: 'failed',
      reasons: ['Anwendung „shop“ ist nicht lesbar — 権限がありません'.repeat(30)],
      finalizersBefore: [],
      finalizersAfter: [],
      actor: 'system:serviceaccount:hookguard:hookguard-sweep',
      reportingInstance: 'sweep-1',
      now: new Date(0),
    });
    expect(bytes(event.note ?? '')).toBeLessThanOrEqual(1024);
    expect(event.note?.endsWith('…')).toBe(true);
  });
});
