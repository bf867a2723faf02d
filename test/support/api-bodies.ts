// The bodies kube-apiserver answers with, for the scale stand-in (test/support/scale-apiserver.ts), which serves 10^5
// objects no real API server here can hold: continue-token expiry, PartialObjectMetadataList, the checks of an
// events.k8s.io/v1 create, Events served through both APIs with the field selectors kube-apiserver accepts, and a
// kubeconfig for a plain-HTTP server. Each cites the upstream source it follows.
import { selectorMatches, type Requirement } from './label-selector.js';

type Json = Record<string, unknown>;
export type KubeItem = Json & {
  apiVersion: string;
  kind: string;
  /** No namespace for a cluster-scoped object (a Namespace). */
  metadata: Json & { name: string; namespace?: string };
};

/** metav1.MicroTime's format (RFC3339Micro): the API server cannot decode a Lease or Event time with fewer digits. */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

/** kube-apiserver's answer to a continue token older than the last compaction (apiserver pkg/storage/etcd3/errors.go). */
export const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';

/**
 * Whether the Accept header asks for a PartialObjectMetadataList before anything this stand-in serves: the first
 * media type it can produce wins, as in kube-apiserver's negotiation (protobuf is skipped: it is not spoken here).
 */
export function wantsMetadataList(accept: string | undefined): boolean {
  for (const range of (accept ?? 'application/json').split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim());
    if (type !== 'application/json' && type !== '*/*' && type !== 'application/*') continue;
    const as = Object.fromEntries(parameters.map((parameter) => parameter.split('=') as [string, string]));
    if (as.as === undefined) return false;
    if (as.as === 'PartialObjectMetadataList' && as.g === 'meta.k8s.io' && as.v === 'v1') return true;
  }
  return false;
}

/** A list as kube-apiserver answers `as=PartialObjectMetadataList` (apiserver pkg/endpoints/handlers/response.go). */
export function partialObjectMetadataList(listMetadata: Json, items: readonly Json[]): Json {
  return {
    kind: 'PartialObjectMetadataList',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMetadata,
    items: items.map((item) => ({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: item.metadata,
    })),
  };
}

const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

const DNS1123_SUBDOMAIN_FORMAT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FORMAT}$`);

/** apimachinery v0.37.2 pkg/util/validation/validation.go IsDNS1123Subdomain: its messages, word for word. */
export function dnsSubdomainProblems(value: string): string[] {
  const problems: string[] = [];
  if (value.length > 253) problems.push('must be no more than 253 characters');
  if (!DNS1123_SUBDOMAIN.test(value))
    problems.push(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '" +
        DNS1123_SUBDOMAIN_FORMAT +
        "')",
    );
  return problems;
}

/**
 * The metadata checks of an events.k8s.io/v1 create (kubernetes v1.37.2 pkg/apis/core/validation/events.go
 * ValidateEventCreate -> ValidateObjectMeta with NameIsDNSSubdomain, apimachinery v0.37.2 pkg/api/validation):
 * generateName is itself a DNS subdomain but for a trailing dash (maskTrailingDash), and so is the name.
 */
function eventNameProblems(metadata: Json): string[] {
  const problems: string[] = [];
  const generateName = typeof metadata.generateName === 'string' ? metadata.generateName : '';
  if (generateName !== '') {
    const masked =
      generateName.length > 1 && generateName.endsWith('-') ? `${generateName.slice(0, -2)}a` : generateName;
    for (const message of dnsSubdomainProblems(masked))
      problems.push(`metadata.generateName: Invalid value: "${generateName}": ${message}`);
  }
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  if (name !== '')
    for (const message of dnsSubdomainProblems(name))
      problems.push(`metadata.name: Invalid value: "${name}": ${message}`);
  else if (generateName === '') problems.push('metadata.name: Required value: name or generateName is required');
  return problems;
}

/**
 * What kube-apiserver refuses in an events.k8s.io/v1 Event it is asked to create (kubernetes v1.37.2
 * pkg/apis/core/validation/events.go ValidateEventCreate; eventTime parsed as MicroTime, exactly six fractional
 * digits: apimachinery pkg/apis/meta/v1/micro_time.go), one message per problem; none for a valid Event.
 */
export function eventProblems(event: Json): string[] {
  const problems: string[] = eventNameProblems((event.metadata ?? {}) as Json);
  const text = (key: string) => (typeof event[key] === 'string' ? event[key] : '');
  if (!MICRO_TIME.test(text('eventTime'))) problems.push(`eventTime: Invalid value: "${text('eventTime')}"`);
  if (!QUALIFIED_NAME.test(text('reportingController'))) problems.push('reportingController: Invalid value');
  for (const key of ['reportingInstance', 'action', 'reason']) {
    if (text(key) === '') problems.push(`${key}: Required value`);
    // Go's len(): bytes of UTF-8 (kubernetes v1.34.1 pkg/apis/core/validation/events.go legacyValidateEvent).
    if (Buffer.byteLength(text(key)) > 128) problems.push(`${key}: Invalid value: "": can have at most 128 characters`);
  }
  if (Buffer.byteLength(text('note')) > 1024)
    problems.push('message: Invalid value: "": can have at most 1024 characters');
  if (event.type !== 'Normal' && event.type !== 'Warning') problems.push(`type: Unsupported value: "${text('type')}"`);
  for (const key of ['deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'deprecatedCount', 'deprecatedSource'])
    if (event[key] !== undefined) problems.push(`${key}: Invalid value: needs to be unset`);
  const regarding = (event.regarding ?? {}) as Json;
  const metadata = (event.metadata ?? {}) as Json;
  if (regarding.namespace !== metadata.namespace)
    problems.push('regarding.namespace: Invalid value: does not match event.namespace');
  return problems;
}

/**
 * The field labels kube-apiserver accepts on Events: core v1 `involvedObject.*`, `reason`, `reportingComponent`,
 * `source`, `type` (pkg/registry/core/event/strategy.go ToSelectableFields); events.k8s.io/v1 `regarding.*`, `reason`,
 * `reportingController`, `type`, mapped onto those (pkg/apis/events/v1/conversion.go AddFieldLabelConversionsForEvent).
 * Any other label is refused with 400, as kube-apiserver does.
 */
const EVENT_FIELDS: Readonly<Record<string, Readonly<Record<string, (event: Json) => unknown>>>> = (() => {
  const about = (event: Json) => (event.involvedObject ?? {}) as Json;
  const core: Record<string, (event: Json) => unknown> = {
    'metadata.name': (event) => (event.metadata as Json).name,
    'metadata.namespace': (event) => (event.metadata as Json).namespace,
    reason: (event) => event.reason,
    reportingComponent: (event) => event.reportingComponent,
    source: (event) => ((event.source ?? {}) as Json).component,
    type: (event) => event.type,
  };
  const events: Record<string, (event: Json) => unknown> = {
    'metadata.name': core['metadata.name'] as (event: Json) => unknown,
    'metadata.namespace': core['metadata.namespace'] as (event: Json) => unknown,
    reason: (event) => event.reason,
    reportingController: (event) => event.reportingComponent,
    type: (event) => event.type,
  };
  for (const field of ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath']) {
    core[`involvedObject.${field}`] = (event) => about(event)[field];
    events[`regarding.${field}`] = (event) => about(event)[field];
  }
  return { v1: core, 'events.k8s.io/v1': events };
})();

/** A core v1 Event as events.k8s.io/v1 serves it, and back (kubernetes pkg/apis/events/v1/conversion.go). */
export function eventAsV1(event: Json): KubeItem {
  if (event.apiVersion === 'v1') return structuredClone(event) as KubeItem;
  const {
    regarding,
    note,
    deprecatedSource,
    deprecatedFirstTimestamp,
    deprecatedLastTimestamp,
    deprecatedCount,
    reportingController,
    ...rest
  } = event;
  return structuredClone({
    ...rest,
    apiVersion: 'v1',
    involvedObject: regarding,
    ...(note !== undefined ? { message: note } : {}),
    ...(deprecatedSource !== undefined ? { source: deprecatedSource } : {}),
    ...(deprecatedFirstTimestamp !== undefined ? { firstTimestamp: deprecatedFirstTimestamp } : {}),
    ...(deprecatedLastTimestamp !== undefined ? { lastTimestamp: deprecatedLastTimestamp } : {}),
    ...(deprecatedCount !== undefined ? { count: deprecatedCount } : {}),
    ...(reportingController !== undefined ? { reportingComponent: reportingController } : {}),
  }) as unknown as KubeItem;
}

export function eventAsEventsV1(event: Json): KubeItem {
  if (event.apiVersion === 'events.k8s.io/v1') return structuredClone(event) as KubeItem;
  const { involvedObject, message, source, firstTimestamp, lastTimestamp, count, reportingComponent, ...rest } = event;
  return structuredClone({
    ...rest,
    apiVersion: 'events.k8s.io/v1',
    regarding: involvedObject,
    ...(message !== undefined ? { note: message } : {}),
    ...(source !== undefined ? { deprecatedSource: source } : {}),
    ...(firstTimestamp !== undefined ? { deprecatedFirstTimestamp: firstTimestamp } : {}),
    ...(lastTimestamp !== undefined ? { deprecatedLastTimestamp: lastTimestamp } : {}),
    ...(count !== undefined ? { deprecatedCount: count } : {}),
    ...(reportingComponent !== undefined ? { reportingController: reportingComponent } : {}),
  }) as unknown as KubeItem;
}

/** Every stored Event, in either shape, as `apiVersion` serves it, filtered; or the 400 message for a bad selector. */
export function eventsServed(
  apiVersion: string,
  stored: readonly KubeItem[],
  namespace: string | undefined,
  selector: readonly Requirement[],
  fieldSelector: string | undefined,
): KubeItem[] | string {
  const fields = EVENT_FIELDS[apiVersion] ?? {};
  const terms: Array<[(event: Json) => unknown, string]> = [];
  for (const term of (fieldSelector ?? '').split(',').filter(Boolean)) {
    const [label, value] = term.split('=');
    const read = label === undefined ? undefined : fields[label];
    if (read === undefined || value === undefined) return `field label not supported: ${label ?? term}`;
    terms.push([read, value]);
  }
  return stored
    .filter((item) => item.kind === 'Event' && (item.apiVersion === 'v1' || item.apiVersion === 'events.k8s.io/v1'))
    .filter((item) => matches(item, namespace, selector))
    .filter((item) => {
      const asV1 = eventAsV1(item);
      return terms.every(([read, value]) => {
        const field = read(asV1);
        return (typeof field === 'string' ? field : '') === value;
      });
    })
    .map((item) => (apiVersion === 'v1' ? eventAsV1(item) : eventAsEventsV1(item)));
}

function matches(object: KubeItem, namespace: string | undefined, selector: readonly Requirement[]): boolean {
  if (namespace !== undefined && object.metadata.namespace !== namespace) return false;
  return selectorMatches(selector, (object.metadata.labels ?? {}) as Record<string, string>);
}

/** The options of a kubeconfig for the fake server (http, so skipTLSVerify is what client-node requires). */
export function kubeConfigOptions(server: string, user: string, token = `token-of-${user}`) {
  return {
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: user, token }],
    contexts: [{ name: 'fake', cluster: 'fake', user }],
    currentContext: 'fake',
  };
}
