import { describe, expect, it } from 'vitest';
import { cutToBytes, kubeEvent, NOTE_LIMIT_BYTES } from '../../../src/controllers/events.js';
import { finalizerEvent } from '../../../src/sweep/finalizer-event.js';
import { dnsSubdomainProblems, eventProblems } from '../../support/fake-apiserver.js';

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
    for (const field of [event.reason, event.action, event.reportingInstance]) expect(bytes(field ?? '')).toBe(127);
    expect(eventProblems(JSON.parse(JSON.stringify(event)) as Record<string, unknown>)).toEqual([]);
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

  it('asks for a name `<object>-<5 random>`: events.k8s.io/v1 refuses the generateName `<object>.` with 422', () => {
    const event = unnamed(job);
    expect(event.metadata).toEqual({ generateName: 'migrate-', namespace: 'apps' });
    // The metadata as the API server checks it on create, the name completed as BeforeCreate completes it.
    const created = { ...JSON.parse(JSON.stringify(event)), metadata: { ...event.metadata, name: 'migrate-x7k2p' } };
    expect(eventProblems(created as Record<string, unknown>)).toEqual([]);
    // What every Event sweep wrote got from kube-apiserver v1.37.2 before (apimachinery v0.37.2 IsDNS1123Subdomain).
    const dotted = { ...created, metadata: { generateName: 'migrate.', name: 'migrate.x7k2p', namespace: 'apps' } };
    expect(eventProblems(dotted as Record<string, unknown>)).toEqual([
      `metadata.generateName: Invalid value: "migrate.": ${dnsSubdomainProblems('migrate.')[0]}`,
    ]);
  });

  it('is valid for the longest name an object can have, and for a one-letter one', () => {
    for (const name of ['a', `${'a'.repeat(62)}.${'b'.repeat(190)}`]) {
      const event = unnamed({ ...job, metadata: { ...job.metadata, name } });
      expect(event.metadata?.generateName).toBe(`${name}-`);
      const created = {
        ...JSON.parse(JSON.stringify(event)),
        metadata: { ...event.metadata, name: `${name.slice(0, 58)}x7k2p` },
      };
      expect(eventProblems(created as Record<string, unknown>)).toEqual([]);
    }
  });
});

describe('the sweep Event', () => {
  it('with a long multi-byte reason, is one kube-apiserver accepts (the UTF-16 cut was refused with 422)', () => {
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
    expect(eventProblems(JSON.parse(JSON.stringify(event)) as Record<string, unknown>)).toEqual([]);
  });
});
