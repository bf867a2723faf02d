// Pure: what the hook watcher reads from a hook Job or bare hook Pod alone (as the watch delivers it), before it pays
// for the Pods and Events explainHook() needs; and the Event it writes from an explanation.
import { createHash } from 'node:crypto';
import { conditionTrue, isRecord, metadataOf } from '../../core/objects.js';
import type { HookExplanation } from '../../core/explain/index.js';
import type { KubeObject } from '../../core/types.js';
import { printable } from '../../report/report.js';
import { ELLIPSIS, NOTE_LIMIT_BYTES } from '../events.js';

/**
 * - `finished`: it succeeded; nothing to say, ever.
 * - `failed`: the Job's Failed (or FailureTarget) condition, or the Pod's Failed phase: explain it now.
 * - `overdue`: not finished and older than the stuck threshold: explain it (it may merely be a long run).
 * - `young`: not finished, younger than that: nothing to read yet.
 */
export type Triage = 'finished' | 'failed' | 'overdue' | 'young';

export function triage(object: KubeObject, nowMs: number, stuckAfterSeconds: number): Triage {
  if (object.kind === 'Pod') {
    const phase = isRecord(object.status) ? object.status.phase : undefined;
    if (phase === 'Succeeded') return 'finished';
    if (phase === 'Failed') return 'failed';
  } else {
    // batch/v1 JobStatus: Complete (and SuccessCriteriaMet) or Failed (FailureTarget comes first, kubernetes 1.31+).
    if (conditionTrue(object, ['Complete', 'SuccessCriteriaMet']) !== undefined) return 'finished';
    if (conditionTrue(object, ['Failed', 'FailureTarget']) !== undefined) return 'failed';
  }
  const timestamp = metadataOf(object)?.creationTimestamp;
  const created = typeof timestamp === 'string' ? Date.parse(timestamp) : NaN;
  if (Number.isNaN(created)) return 'overdue';
  return nowMs - created >= stuckAfterSeconds * 1000 ? 'overdue' : 'young';
}

/** `Failed` → HookFailed; `Stuck` and `Blocked` (Pods that cannot be created) → HookStuck. */
export function eventReasonOf(explanation: HookExplanation): 'HookFailed' | 'HookStuck' {
  return explanation.state === 'Failed' ? 'HookFailed' : 'HookStuck';
}

/**
 * The last characters of `text` whose printable() form fits in `limitBytes` bytes of UTF-8, printable, after "…" when
 * anything was left out (the ellipsis counted). Cut between characters of the text, never inside an escape or a
 * surrogate pair; linear in what is kept.
 */
export function printableTail(text: string, limitBytes: number): string {
  const whole = printable(text);
  if (Buffer.byteLength(whole, 'utf8') <= limitBytes) return whole;
  const budget = limitBytes - Buffer.byteLength(ELLIPSIS, 'utf8');
  let start = text.length;
  let used = 0;
  while (start > 0) {
    let from = start - 1;
    const unit = text.charCodeAt(from);
    if (unit >= 0xdc00 && unit <= 0xdfff && from > 0) {
      const before = text.charCodeAt(from - 1);
      if (before >= 0xd800 && before <= 0xdbff) from -= 1;
    }
    const cost = Buffer.byteLength(printable(text.slice(from, start)), 'utf8');
    if (used + cost > budget) break;
    used += cost;
    start = from;
  }
  return `${ELLIPSIS}${printable(text.slice(start))}`;
}

/**
 * The Event's note: what happened and what to do, as explainHook() says it; with `logLines` (opted in, redacted) the
 * failed container's last log lines, saying that they are log lines. The error is at the end of a log, so the log's
 * TAIL is kept: the note is at most the API server's 1024 bytes, the explanation first and then as much of the log's
 * end as fits. Control characters (a terminal's escape sequences, line breaks) are escaped as `hookguard why` escapes
 * them (printable()): `kubectl describe` and Argo CD show a note as it is.
 */
export function eventNote(explanation: HookExplanation, logLines: string | undefined): string {
  const detail =
    explanation.quoted && !explanation.message.includes(explanation.quoted)
      ? ` (${explanation.quotedFrom ?? 'said'}: ${explanation.quoted})`
      : '';
  const head = printable(
    `${explanation.kind} ${explanation.name} ${explanation.state.toLowerCase()} (${explanation.reason}): ${explanation.message}${detail}. Next: ${explanation.nextStep}`,
  );
  const log = logLines?.trim() ?? '';
  if (log === '') return head;
  const intro = `${head}${/[.!?]$/.test(head) ? '' : '.'} Log lines included (redacted) from ${printable(explanation.container ?? 'the container')}: `;
  const room = NOTE_LIMIT_BYTES - Buffer.byteLength(intro, 'utf8');
  // An explanation that leaves no room for the log goes alone (the Event writer cuts its end).
  return room <= Buffer.byteLength(ELLIPSIS, 'utf8') ? head : `${intro}${printableTail(log, room)}`;
}

/**
 * A fixed Event name per hook (by uid), state and object the Event regards: the same Event posted again (a resync, a
 * restart, another leader) is refused with 409 AlreadyExists, so there is one Event per hook and state. A DNS
 * subdomain of at most 253 characters, as Event names must be: the object's name is cut at 200 characters and then
 * loses any '-' or '.' it ends in (each part of a DNS subdomain ends in a letter or digit).
 */
export function eventName(hookName: string, hookUid: string, reason: string, regarding: string): string {
  const digest = createHash('sha256').update(`${hookUid}\n${reason}\n${regarding}`).digest('hex').slice(0, 16);
  return `${hookName.slice(0, 200).replace(/[-.]+$/, '')}.hookguard-${reason.toLowerCase()}-${digest}`;
}
