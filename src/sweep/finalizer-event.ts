// The Event a removal, or a failed one, leaves on the object, so that `kubectl describe` and Argo CD's UI show who
// removed which finalizer, and why. Written by the controllers' Event writer (src/controllers/events.ts).
import type { EventsV1Event } from '@kubernetes/client-node';
import { kubeEvent } from '../controllers/events.js';
import type { KubeObject } from '../core/types.js';
import type { SweptKind } from './qualify.js';

export const REPORTING_CONTROLLER = 'hookguard.io/sweep';
export const EVENT_REASONS = { removed: 'FinalizerRemoved', failed: 'FinalizerRemovalFailed' } as const;
export const EVENT_ACTION = 'RemoveFinalizer';

export interface FinalizerEventFacts {
  kind: SweptKind;
  /** The object as judged, before the patch. */
  object: KubeObject;
  finalizer: string;
  outcome: keyof typeof EVENT_REASONS;
  reasons: readonly string[];
  finalizersBefore: readonly string[];
  finalizersAfter: readonly string[];
  actor: string;
  reportingInstance: string;
  now: Date;
}

export function finalizerEvent(facts: FinalizerEventFacts): EventsV1Event {
  const removed = facts.outcome === 'removed';
  const what = removed ? `Removed ${facts.finalizer}` : `Could not remove ${facts.finalizer}`;
  const change = removed
    ? ` Finalizers [${facts.finalizersBefore.join(', ')}] -> [${facts.finalizersAfter.join(', ')}].`
    : '';
  return kubeEvent({
    regarding: facts.object,
    apiVersion: facts.kind === 'Job' ? 'batch/v1' : 'v1',
    kind: facts.kind,
    type: removed ? 'Normal' : 'Warning',
    reason: EVENT_REASONS[facts.outcome],
    action: EVENT_ACTION,
    note: `${what} (hookguard sweep as ${facts.actor}): ${facts.reasons.join('; ')}.${change}`,
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: facts.reportingInstance,
    now: facts.now,
  });
}
