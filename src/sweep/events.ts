// The Event a removal, or a failed one, leaves on the object (events.k8s.io/v1), so that `kubectl describe` and
// Argo CD's UI show who removed which finalizer, and why. Field rules from kube-apiserver's ValidateEventCreate
// (kubernetes v1.34.1 pkg/apis/core/validation/events.go): eventTime required, in microseconds (MicroTime:
// apimachinery pkg/apis/meta/v1/micro_time.go parses exactly six fractional digits, which client-node's V1MicroTime
// writes and a Date does not); reportingController a qualified name; reportingInstance, action and reason at most
// 128 characters; note at most 1 kB. `kubectl describe` finds an Event by the kind, name, namespace and uid of
// `regarding` (kubectl v0.36.3 pkg/describe/describe.go searchEvents).
import { V1MicroTime, type EventsV1Event } from '@kubernetes/client-node';
import { metadataOf } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';
import type { SweptKind } from './qualify.js';

export const REPORTING_CONTROLLER = 'hookguard.io/sweep';
export const EVENT_REASONS = { removed: 'FinalizerRemoved', failed: 'FinalizerRemovalFailed' } as const;
export const EVENT_ACTION = 'RemoveFinalizer';
const NOTE_LIMIT = 1024;
const FIELD_LIMIT = 128;

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

function cut(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

export function finalizerEvent(facts: FinalizerEventFacts): EventsV1Event {
  const metadata = metadataOf(facts.object);
  const name = String(metadata?.name ?? '');
  const namespace = String(metadata?.namespace ?? '');
  const removed = facts.outcome === 'removed';
  const what = removed ? `Removed ${facts.finalizer}` : `Could not remove ${facts.finalizer}`;
  const change = removed
    ? ` Finalizers [${facts.finalizersBefore.join(', ')}] -> [${facts.finalizersAfter.join(', ')}].`
    : '';
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    // The API server completes the name (client-go's `<name>.<hex nanoseconds>` would outgrow a long object name).
    metadata: { generateName: `${name}.`, namespace },
    eventTime: new V1MicroTime(facts.now.getTime()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: cut(facts.reportingInstance, FIELD_LIMIT),
    action: EVENT_ACTION,
    reason: EVENT_REASONS[facts.outcome],
    type: removed ? 'Normal' : 'Warning',
    note: cut(`${what} (hookguard sweep as ${facts.actor}): ${facts.reasons.join('; ')}.${change}`, NOTE_LIMIT),
    regarding: {
      apiVersion: facts.kind === 'Job' ? 'batch/v1' : 'v1',
      kind: facts.kind,
      name,
      namespace,
      ...(typeof metadata?.uid === 'string' ? { uid: metadata.uid } : {}),
      ...(typeof metadata?.resourceVersion === 'string' ? { resourceVersion: metadata.resourceVersion } : {}),
    },
  };
}
