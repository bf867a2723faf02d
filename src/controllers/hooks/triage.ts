// Pure: what the hook watcher reads from a hook Job or bare hook Pod alone (as the watch delivers it), before it pays
// for the Pods and Events explainHook() needs; and the Event it writes from an explanation.
import { createHash } from 'node:crypto';
import { conditionTrue, isRecord, metadataOf } from '../../core/objects.js';
import type { HookExplanation } from '../../core/explain/index.js';
import type { KubeObject } from '../../core/types.js';

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
 * The Event's note: what happened and what to do, as explainHook() says it; with `logLines` (opted in, redacted) the
 * failed container's last log lines, saying that they are log lines. The Event writer cuts it to 1024 bytes.
 */
export function eventNote(explanation: HookExplanation, logLines: string | undefined): string {
  const detail =
    explanation.quoted && !explanation.message.includes(explanation.quoted)
      ? ` (${explanation.quotedFrom ?? 'said'}: ${explanation.quoted})`
      : '';
  const head = `${explanation.kind} ${explanation.name} ${explanation.state.toLowerCase()} (${explanation.reason}): ${explanation.message}${detail}. Next: ${explanation.nextStep}`;
  return logLines === undefined || logLines.trim() === ''
    ? head
    : `${head}${/[.!?]$/.test(head) ? '' : '.'} Log lines included (redacted) from ${explanation.container ?? 'the container'}: ${logLines.trim()}`;
}

/**
 * A fixed Event name per hook (by uid), state and object the Event regards: the same Event posted again (a resync, a
 * restart, another leader) is refused with 409 AlreadyExists, so there is one Event per hook and state. A DNS
 * subdomain of at most 253 characters, as Event names must be.
 */
export function eventName(hookName: string, hookUid: string, reason: string, regarding: string): string {
  const digest = createHash('sha256').update(`${hookUid}\n${reason}\n${regarding}`).digest('hex').slice(0, 16);
  return `${hookName.slice(0, 200)}.hookguard-${reason.toLowerCase()}-${digest}`;
}
