// Reading what the API server returned, defensively: fields of the wrong type read as absent. The Events of both APIs
// as one shape, the timing of a state, and the kubectl commands a next step names.
import { isRecord } from '../objects.js';
import type { Base, ExplainOptions, HookEvent, Json } from './types.js';
import { QUOTE_LIMIT } from './types.js';

export function record(value: unknown): Json {
  return isRecord(value) ? value : {};
}
export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
export function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}
export function records(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}
function time(value: unknown): number | undefined {
  const parsed = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isNaN(parsed) ? undefined : parsed;
}
export function quote(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value.length > QUOTE_LIMIT ? `${value.slice(0, QUOTE_LIMIT)}…` : value;
}
/**
 * client-go's event recorder folds the tenth and later Events of one object, reason and type whose messages differ
 * (a refused Pod's generated name differs at each try) into one Event: this prefix and the latest message, counted
 * (k8s.io/client-go v0.37.2 tools/record/events_cache.go, EventAggregatorByReasonMessageFunc; 10 within 600 s). A Job
 * refused for more than about four minutes is quoted so; why says what the latest try was told.
 */
const COMBINED = '(combined from similar events): ';

/** An Event's note without the recorder's `(combined from similar events): `. */
export function uncombined(note: string): string {
  return note.startsWith(COMBINED) ? note.slice(COMBINED.length) : note;
}

/** A component's text on one line, for `message`. */
export function oneLine(value: string): string {
  return value.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * core v1 Event: involvedObject, message, source.component or reportingComponent, firstTimestamp/lastTimestamp/count
 * or eventTime with series; events.k8s.io/v1: regarding, note, reportingController, deprecatedFirstTimestamp/
 * deprecatedLastTimestamp or eventTime with series (k8s.io/api events/v1 types.go, core/v1 types.go). Both APIs serve
 * the same objects, so an Event read through both is kept once (by uid).
 */
export function readEvents(values: readonly unknown[]): HookEvent[] {
  const seen = new Set<string>();
  const events: HookEvent[] = [];
  for (const value of values) {
    if (!isRecord(value)) continue;
    const uid = text(record(value.metadata).uid);
    if (uid !== undefined) {
      if (seen.has(uid)) continue;
      seen.add(uid);
    }
    const v1 = isRecord(value.involvedObject);
    const about = record(v1 ? value.involvedObject : value.regarding);
    const series = record(value.series);
    const firstText =
      text(v1 ? value.firstTimestamp : value.deprecatedFirstTimestamp) ?? text(value.eventTime) ?? undefined;
    const lastText =
      text(series.lastObservedTime) ?? text(v1 ? value.lastTimestamp : value.deprecatedLastTimestamp) ?? firstText;
    events.push({
      uid,
      kind: text(about.kind),
      name: text(about.name),
      type: text(value.type),
      reason: text(value.reason) ?? '',
      note: text(v1 ? value.message : value.note) ?? '',
      component: v1
        ? (text(value.reportingComponent) ?? text(record(value.source).component))
        : (text(value.reportingController) ?? text(record(value.deprecatedSource).component)),
      first: time(firstText),
      firstText,
      last: time(lastText),
    });
  }
  return events;
}

export function eventsAbout(base: Base, kind: string, name: string): HookEvent[] {
  return base.events.filter((event) => event.kind === kind && event.name === name);
}

export function latest(events: readonly HookEvent[]): HookEvent | undefined {
  let found: HookEvent | undefined;
  for (const event of events) if (found === undefined || (event.last ?? 0) >= (found.last ?? 0)) found = event;
  return found;
}

export function quotedEvent(event: HookEvent): string {
  return `Event ${event.reason}${event.component ? ` (${event.component})` : ''}`;
}

interface Timed {
  since?: string;
  forSeconds?: number;
}

export function timed(options: ExplainOptions, since: string | undefined): Timed {
  const at = time(since);
  if (since === undefined || at === undefined) return {};
  return { since, forSeconds: Math.max(0, Math.floor((options.now - at) / 1000)) };
}

/** Waiting long enough to be called Stuck (or Blocked); without a time, it is not. */
export function overdue(options: ExplainOptions, timing: Timed): boolean {
  return timing.forSeconds !== undefined && timing.forSeconds >= options.stuckAfterSeconds;
}

export function runningStep(options: ExplainOptions): string {
  return `Wait: it is called stuck after ${options.stuckAfterSeconds}s.`;
}

export function kubectlLogs(base: Base, pod: string, container: string, previous: boolean): string {
  const namespace = base.namespace ? ` -n ${base.namespace}` : '';
  return `kubectl logs${namespace} ${pod} -c ${container}${previous ? ' --previous' : ''}`;
}

export function kubectlEvents(base: Base, kind: string, name: string): string {
  const namespace = base.namespace ? ` -n ${base.namespace}` : '';
  return `kubectl events${namespace} --for ${kind.toLowerCase()}/${name}`;
}
