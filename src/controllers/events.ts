// The Events hookguard's controllers and sweep leave on objects (events.k8s.io/v1), so that `kubectl events`,
// `kubectl describe` and Argo CD's events tab show them. Field rules from kube-apiserver (kubernetes v1.34.1
// pkg/apis/core/validation/events.go, ValidateEventCreate and legacyValidateEvent): eventTime required, in
// microseconds (MicroTime: apimachinery pkg/apis/meta/v1/micro_time.go parses exactly six fractional digits, which
// client-node's V1MicroTime writes and a Date does not); reportingController a qualified name; reportingInstance,
// action and reason at most 128 and the note at most 1024 — Go's len(), so BYTES of UTF-8, not characters.
// `kubectl describe` finds an Event by the kind, name, namespace and uid of `regarding` (kubectl v0.36.3
// pkg/describe/describe.go searchEvents).
import { V1MicroTime, type EventsV1Event } from '@kubernetes/client-node';
import { metadataOf, namespacedName } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';

/** ReportingInstanceLengthLimit, ActionLengthLimit, ReasonLengthLimit (bytes). */
export const FIELD_LIMIT_BYTES = 128;
/** NoteLengthLimit (bytes). */
export const NOTE_LIMIT_BYTES = 1024;
/** What a cut text ends (cutToBytes) or begins (the hook watcher's log tail) with. */
export const ELLIPSIS = '…';
const ELLIPSIS_BYTES = Buffer.byteLength(ELLIPSIS);
const utf8 = new TextEncoder();

/**
 * `text` in at most `limitBytes` bytes of UTF-8: whole, or cut at a character boundary and ended with "…" (3 bytes,
 * counted). Linear in the text; a lone surrogate counts as the 3-byte U+FFFD the API server would read.
 */
export function cutToBytes(text: string, limitBytes: number): string {
  // At most 3 bytes per UTF-16 unit: a text this short fits without encoding it.
  if (text.length * 3 <= limitBytes) return text;
  const bytes = utf8.encode(text);
  if (bytes.length <= limitBytes) return text;
  let end = Math.max(0, limitBytes - ELLIPSIS_BYTES);
  // Back to the first byte of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return `${Buffer.from(bytes.buffer, bytes.byteOffset, end).toString('utf8')}${ELLIPSIS}`;
}

export interface EventFacts {
  /** The object the Event is about, as read. */
  regarding: KubeObject;
  /** Its apiVersion and kind (a list item read as metadata may lack them). */
  apiVersion: string;
  kind: string;
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
  reportingController: string;
  reportingInstance: string;
  now: Date;
  /** A fixed name, so that the same Event posted twice is refused with 409; else the API server completes one. */
  name?: string;
}

/** An events.k8s.io/v1 Event kube-apiserver accepts: every limited field cut to its limit in bytes. */
export function kubeEvent(facts: EventFacts): EventsV1Event {
  const metadata = metadataOf(facts.regarding);
  const { namespace, name } = namespacedName(facts.regarding);
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    // Without a fixed name the API server completes one (client-go's `<name>.<hex nanoseconds>` would outgrow a long
    // object name). The prefix ends with `-`, not `.`: events.k8s.io/v1 validates generateName itself as a DNS
    // subdomain, forgiving only a trailing dash (kubernetes v1.37.2 pkg/apis/core/validation/events.go
    // ValidateEventCreate -> ValidateObjectMeta with NameIsDNSSubdomain; apimachinery v0.37.2
    // pkg/api/validation/generic.go maskTrailingDash), so `migrate.` is refused with 422 and no Event is stored.
    metadata: facts.name === undefined ? { generateName: `${name}-`, namespace } : { name: facts.name, namespace },
    eventTime: new V1MicroTime(facts.now.getTime()),
    reportingController: facts.reportingController,
    reportingInstance: cutToBytes(facts.reportingInstance, FIELD_LIMIT_BYTES),
    action: cutToBytes(facts.action, FIELD_LIMIT_BYTES),
    reason: cutToBytes(facts.reason, FIELD_LIMIT_BYTES),
    type: facts.type,
    note: cutToBytes(facts.note, NOTE_LIMIT_BYTES),
    regarding: {
      apiVersion: facts.apiVersion,
      kind: facts.kind,
      name,
      namespace,
      ...(typeof metadata?.uid === 'string' ? { uid: metadata.uid } : {}),
      ...(typeof metadata?.resourceVersion === 'string' ? { resourceVersion: metadata.resourceVersion } : {}),
    },
  };
}
