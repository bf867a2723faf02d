// A stand-in for kube-apiserver (none can be installed here), on 127.0.0.1 only. It answers the paths and bodies
// hookguard's client uses exactly as the API server does: List bodies with metadata.resourceVersion; `watch=true` as a
// chunked stream of newline-delimited {"type","object"} events (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR with a 410
// Expired Status), resuming from a resourceVersion; GET of one object; PATCH with application/json-patch+json, where a
// failed `test` op answers 422 Invalid; Status bodies for 404, 409, 410, 422, 429 (with Retry-After) and 5xx. An object
// with a deletionTimestamp goes away once its last finalizer does, as in the API server. Lists page with `limit` and
// `continue`; a token from before a compaction answers 410 Expired; `Accept:
// application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` gets metadata only. events.k8s.io/v1 Events are
// created (POST) and checked as kube-apiserver checks them. Tests can drop watches, expire resourceVersions, stop and
// restart it, and inject failures. It also answers Secrets, Mutating- and ValidatingWebhookConfigurations, Leases (create, and PUT with resourceVersion conflicts, 409), custom
// resources defined from their CRD (validated against its schema, with a status subresource), and CREATEs of Jobs and
// Pods through the admission webhooks when `admission` is set: it calls hookguard's /mutate and /validate over TLS,
// applies the JSON patch, fails open as failurePolicy Ignore does, and returns warnings as `Warning: 299 - "<text>"`
// headers; a dry run (`dryRun=All`) stores nothing. See test/support/fake-admission.ts. Events are served through
// core v1 and events.k8s.io/v1 alike, as the one resource they are, with the field selectors kube-apiserver accepts.
// Label selectors are read as kube-apiserver reads them, every form, a malformed one refused with its 400
// (test/support/label-selector.ts).
// GET /apis answers the discovery APIGroupList; /version, /api and each group version's APIResourceList answer too (legacy discovery, enough for helm 3's install;
// no aggregated discovery, no OpenAPI). `serve()` adds a kind, stored and answered like the others.
// PATCH is JSON patch only; any other type is answered 405 (server-side apply of CRDs, hookguard's chart hook, is
// tested against the real API server: test/cluster/upgrade-crds.test.ts). With `authorize` set,
// every request is authorized first and refused with kube-apiserver's 403 text (RBAC's rules: rbacAuthorizer).
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { applyPatch, type Operation } from '../../src/core/json-patch.js';
import { badRequestStatus, parseLabelSelector, selectorMatches, type Requirement } from './label-selector.js';
import { KubeConfig } from '@kubernetes/client-node';
import { statusBody } from './api-status.js';

export { statusBody };
import { admit, schemaValidator, type Admission, type AdmissionResult } from './fake-admission.js';

type Json = Record<string, unknown>;
export type KubeItem = Json & {
  apiVersion: string;
  kind: string;
  /** No namespace for a cluster-scoped object (a Namespace). */
  metadata: Json & { name: string; namespace?: string };
};
type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface Resource {
  /** URL prefix of the group version: /api/v1 or /apis/batch/v1. */
  prefix: string;
  plural: string;
  group: string;
  kind: string;
  apiVersion: string;
  clusterScoped?: boolean;
  /** A status subresource: PUT of the object keeps its status, PUT of /status changes only the status. */
  statusSubresource?: boolean;
  /** Schema errors of an object (a custom resource's openAPIV3Schema); none when valid. */
  schemaErrors?: (object: unknown) => string[];
  /** metadata.generation kept: 1 when created, one more with every change of spec (custom resources, CRDs). */
  generation?: boolean;
}

const RESOURCES: readonly Resource[] = [
  { prefix: '/apis/apps/v1', plural: 'deployments', group: 'apps', kind: 'Deployment', apiVersion: 'apps/v1' },
  { prefix: '/apis/apps/v1', plural: 'statefulsets', group: 'apps', kind: 'StatefulSet', apiVersion: 'apps/v1' },
  { prefix: '/apis/batch/v1', plural: 'jobs', group: 'batch', kind: 'Job', apiVersion: 'batch/v1' },
  { prefix: '/api/v1', plural: 'pods', group: '', kind: 'Pod', apiVersion: 'v1' },
  {
    prefix: '/apis/coordination.k8s.io/v1',
    plural: 'leases',
    group: 'coordination.k8s.io',
    kind: 'Lease',
    apiVersion: 'coordination.k8s.io/v1',
  },
  {
    prefix: '/apis/argoproj.io/v1alpha1',
    plural: 'workflows',
    group: 'argoproj.io',
    kind: 'Workflow',
    apiVersion: 'argoproj.io/v1alpha1',
  },
  {
    prefix: '/apis/argoproj.io/v1alpha1',
    plural: 'applications',
    group: 'argoproj.io',
    kind: 'Application',
    apiVersion: 'argoproj.io/v1alpha1',
  },
  {
    prefix: '/apis/events.k8s.io/v1',
    plural: 'events',
    group: 'events.k8s.io',
    kind: 'Event',
    apiVersion: 'events.k8s.io/v1',
  },
  // core v1 Events: the same objects as events.k8s.io/v1 Events in kube-apiserver (one storage, two shapes). Stored in
  // whichever shape they were put in; a list through either API serves all of them, converted (eventsServed()).
  { prefix: '/api/v1', plural: 'events', group: '', kind: 'Event', apiVersion: 'v1' },
  // Cluster-scoped: no metadata.namespace; stored, and found by modify/remove/get, with the namespace ''.
  { prefix: '/api/v1', plural: 'namespaces', group: '', kind: 'Namespace', apiVersion: 'v1', clusterScoped: true },
  { prefix: '/api/v1', plural: 'secrets', group: '', kind: 'Secret', apiVersion: 'v1' },
  ...(['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'] as const).map((kind) => ({
    prefix: '/apis/admissionregistration.k8s.io/v1',
    plural: `${kind.toLowerCase()}s`,
    group: 'admissionregistration.k8s.io',
    kind,
    apiVersion: 'admissionregistration.k8s.io/v1',
    clusterScoped: true,
  })),
];

/** metav1.MicroTime's format (RFC3339Micro): the API server cannot decode a Lease or Event time with fewer digits. */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

interface HistoryEntry {
  resourceVersion: number;
  resource: Resource;
  type: EventType;
  object: KubeItem;
}

interface OpenWatch {
  resource: Resource;
  namespace: string | undefined;
  selector: readonly Requirement[];
  response: ServerResponse;
}

export interface InjectedFailure {
  method?: string;
  /** Matches when the request path (without query) contains this. */
  pathIncludes?: string;
  /** Only watch requests (true) or only non-watch requests (false). */
  watch?: boolean;
  /** Only requests of this user. */
  user?: string;
  status: number;
  retryAfterSeconds?: number;
  /** How many requests to fail; default 1. */
  times?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Who sent it, as the API server authenticates a bearer token: a service account token's subject. */
  user: string;
  query: Record<string, string>;
  accept?: string;
  contentType?: string;
  body?: unknown;
  status: number;
  /** When it arrived (Date.now()): the order and spacing of writes, for tests that assert them. */
  at: number;
}

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

/** One event of a watch stream: a JSON line. */
function writeEvent(response: ServerResponse, type: string, object: Json): void {
  response.write(`${JSON.stringify({ type, object })}\n`);
}

function matches(object: KubeItem, namespace: string | undefined, selector: readonly Requirement[]): boolean {
  if (namespace !== undefined && object.metadata.namespace !== namespace) return false;
  return selectorMatches(selector, (object.metadata.labels ?? {}) as Record<string, string>);
}

/** The user a bearer token stands for: a JWT's subject (service account tokens), or NAME for `token-of-NAME`. */
function userOf(authorization: string | undefined): string {
  const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
  if (token === undefined) return 'system:anonymous';
  const payload = token.split('.')[1];
  if (payload !== undefined) {
    try {
      const sub = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown }).sub;
      if (typeof sub === 'string') return sub;
    } catch {
      // not a JWT
    }
  }
  return token.startsWith('token-of-') ? token.slice('token-of-'.length) : token;
}

export class FakeApiServer {
  private server: Server | undefined;
  private readonly resources: Resource[] = [...RESOURCES];
  /** The admission webhooks Job and Pod CREATEs go through; none when unset. */
  admission: Admission | undefined;
  /** Every webhook call the server made, and how it ended (a failed call fails open: failurePolicy Ignore). */
  readonly webhookCalls: AdmissionResult['calls'] = [];
  private readonly objects = new Map<string, KubeItem>();
  private readonly history: HistoryEntry[] = [];
  private resourceVersion = 100;
  /** Watches from a resourceVersion at or below this are too old (etcd compacted them). */
  private compactedThrough = 0;
  private readonly watches = new Set<OpenWatch>();
  private readonly failures: InjectedFailure[] = [];
  readonly requests: RecordedRequest[] = [];
  /** Whether a request may go ahead, as an authorizer decides (rbacAuthorizer); unset: everything is allowed. */
  authorize: ((attributes: AuthorizationAttributes) => boolean) | undefined;
  /** Runs before a PATCH is applied: a test's chance to make a concurrent change. */
  beforePatch: ((object: KubeItem) => void) | undefined;
  /** Runs before a list is answered, with its query: a test's chance to compact (and so expire a continue token). */
  beforeList: ((query: Record<string, string>) => void) | undefined;
  /** false: answer full lists whatever the Accept header asks, as a server that cannot convert them does. */
  metadataLists = true;

  port = 0;

  /** Listens on 127.0.0.1; pass the port of an earlier run to come back where clients expect it. */
  async start(port = 0): Promise<this> {
    const server = createServer((request, response) => void this.handle(request, response));
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  /** Goes away like a crashed API server: open watches are cut, new connections refused. */
  async stop(): Promise<void> {
    this.dropWatches();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A KubeConfig pointing at this server, as a user with a bearer token. */
  kubeConfig(user = 'sweeper', token?: string): KubeConfig {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions(kubeConfigOptions(this.url, user, token));
    return kubeConfig;
  }

  private key(resource: Resource, namespace: string, name: string): string {
    return `${resource.plural}/${namespace}/${name}`;
  }

  /** metadata.generation of a custom resource: 1 when created, one more with every change of its spec. */
  private setGeneration(resource: Resource, item: KubeItem, before: KubeItem | undefined): void {
    if (!resource.generation) return;
    const generation = typeof before?.metadata.generation === 'number' ? before.metadata.generation : 0;
    const changed = before === undefined || JSON.stringify(before.spec) !== JSON.stringify(item.spec);
    item.metadata.generation = changed ? generation + 1 : generation;
  }

  private resourceOf(object: Json): Resource {
    const resource = this.resources.find(
      (candidate) => candidate.kind === object.kind && candidate.apiVersion === object.apiVersion,
    );
    if (!resource)
      throw new Error(`the fake API server does not serve ${String(object.apiVersion)} ${String(object.kind)}`);
    return resource;
  }

  private record(resource: Resource, type: EventType, object: KubeItem): void {
    this.history.push({ resourceVersion: this.resourceVersion, resource, type, object: structuredClone(object) });
    for (const watch of this.watches) {
      if (watch.resource === resource && matches(object, watch.namespace, watch.selector))
        writeEvent(watch.response, type, object);
    }
  }

  private bump(object: KubeItem): void {
    this.resourceVersion += 1;
    object.metadata.resourceVersion = String(this.resourceVersion);
  }

  /**
   * Serves a custom resource from its CustomResourceDefinition (the first version): its paths, its scope, its status
   * subresource, and its openAPIV3Schema, against which every write is validated (422 Invalid), as the API server does.
   */
  defineCustomResource(crd: Json): void {
    const spec = crd.spec as {
      group: string;
      scope: string;
      names: { plural: string; kind: string };
      versions: Array<{ name: string; subresources?: { status?: unknown }; schema: { openAPIV3Schema: Json } }>;
    };
    const version = spec.versions[0]!;
    this.resources.push({
      prefix: `/apis/${spec.group}/${version.name}`,
      plural: spec.names.plural,
      group: spec.group,
      kind: spec.names.kind,
      apiVersion: `${spec.group}/${version.name}`,
      clusterScoped: spec.scope === 'Cluster',
      statusSubresource: version.subresources?.status !== undefined,
      schemaErrors: schemaValidator(version.schema.openAPIV3Schema),
      generation: true,
    });
  }

  /** A MutatingWebhookConfiguration and a ValidatingWebhookConfiguration named `name`, with no webhooks. */
  putWebhookConfigurations(name: string): void {
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'])
      this.put({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name }, webhooks: [] });
  }

  /** Creates or replaces an object, as a controller's write would, with ADDED or MODIFIED to watchers. */
  put(object: Json): KubeItem {
    const item = structuredClone(object) as KubeItem;
    const resource = this.resourceOf(item);
    const key = this.key(resource, item.metadata.namespace ?? '', item.metadata.name);
    const existed = this.objects.has(key);
    item.metadata.uid ??= this.objects.get(key)?.metadata.uid ?? `uid-${key}`;
    item.metadata.creationTimestamp ??= this.objects.get(key)?.metadata.creationTimestamp ?? kubeNow();
    this.setGeneration(resource, item, this.objects.get(key));
    this.bump(item);
    this.objects.set(key, item);
    this.record(resource, existed ? 'MODIFIED' : 'ADDED', item);
    return structuredClone(item);
  }

  /** Changes a stored object in place (a concurrent writer), with MODIFIED to watchers. */
  modify(kind: string, namespace: string, name: string, change: (object: KubeItem) => void): KubeItem {
    const { resource, item } = this.existing(kind, namespace, name);
    change(item);
    return this.commit(resource, item);
  }

  remove(kind: string, namespace: string, name: string): void {
    const { resource, key, item } = this.existing(kind, namespace, name);
    this.objects.delete(key);
    this.bump(item);
    this.record(resource, 'DELETED', item);
  }

  get(kind: string, namespace: string, name: string): KubeItem | undefined {
    const found = this.lookup(kind, namespace, name);
    return found ? structuredClone(found.item) : undefined;
  }

  /** The stored object itself (not a copy), with its resource and key. */
  private lookup(
    kind: string,
    namespace: string,
    name: string,
  ): { resource: Resource; key: string; item: KubeItem } | undefined {
    const resource = this.resources.find((candidate) => candidate.kind === kind);
    if (!resource) return undefined;
    const key = this.key(resource, namespace, name);
    const item = this.objects.get(key);
    return item ? { resource, key, item } : undefined;
  }

  private existing(kind: string, namespace: string, name: string): { resource: Resource; key: string; item: KubeItem } {
    const found = this.lookup(kind, namespace, name);
    if (!found) throw new Error(`no ${kind} ${namespace}/${name}`);
    return found;
  }

  /** Stores a changed object; one with a deletionTimestamp and no finalizers left is deleted, as the API server does. */
  private commit(resource: Resource, item: KubeItem): KubeItem {
    const key = this.key(resource, item.metadata.namespace ?? '', item.metadata.name);
    this.bump(item);
    const finalizers = item.metadata.finalizers as string[] | undefined;
    if (item.metadata.deletionTimestamp !== undefined && (finalizers ?? []).length === 0) {
      this.objects.delete(key);
      this.record(resource, 'DELETED', item);
    } else {
      this.objects.set(key, item);
      this.record(resource, 'MODIFIED', item);
    }
    return structuredClone(item);
  }

  /** Etcd compaction: every resourceVersion up to now becomes too old to watch from. */
  compact(): void {
    this.compactedThrough = this.resourceVersion;
  }

  /** Cuts every open watch mid-stream, as a network drop or an API server restart would. */
  dropWatches(): void {
    for (const watch of this.watches) watch.response.destroy();
    this.watches.clear();
  }

  fail(failure: InjectedFailure): void {
    this.failures.push({ times: 1, ...failure });
  }

  private expiredStatus(requested: number): Json {
    return statusBody(410, `too old resource version: ${requested} (${this.compactedThrough + 1})`, {}, 'Expired');
  }

  private reply(
    response: ServerResponse,
    recorded: RecordedRequest,
    status: number,
    body: Json,
    headers: Record<string, string | string[]> = {},
  ): void {
    recorded.status = status;
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  }

  private injected(method: string, path: string, watch: boolean, user: string): InjectedFailure | undefined {
    const index = this.failures.findIndex(
      (failure) =>
        (failure.method === undefined || failure.method === method) &&
        (failure.pathIncludes === undefined || path.includes(failure.pathIncludes)) &&
        (failure.watch === undefined || failure.watch === watch) &&
        (failure.user === undefined || failure.user === user),
    );
    const failure = this.failures[index];
    if (!failure) return undefined;
    failure.times = (failure.times ?? 1) - 1;
    if (failure.times <= 0) this.failures.splice(index, 1);
    return failure;
  }

  /**
   * The discovery document of GET /apis as kube-apiserver answers it (an APIGroupList, apimachinery
   * pkg/apis/meta/v1 types.go): every named group this server serves, each with its one version.
   */
  private apiGroupList(): Json {
    const versions = new Map<string, string>();
    for (const resource of this.resources) {
      if (resource.group !== '') versions.set(resource.group, resource.apiVersion.split('/')[1]!);
    }
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...versions].map(([name, version]) => {
        const groupVersion = { groupVersion: `${name}/${version}`, version };
        return { name, versions: [groupVersion], preferredVersion: groupVersion };
      }),
    };
  }

  /**
   * The rest of discovery as kube-apiserver v1.33 answers it (apimachinery pkg/apis/meta/v1 types.go, version.Info):
   * GET /version, /api (APIVersions) and each group version's APIResourceList (/api/v1, /apis/GROUP/VERSION), from
   * the resources this server serves; undefined for any other path.
   */
  private discovery(path: string): Json | undefined {
    if (path === '/version')
      return {
        major: '1',
        minor: '33',
        gitVersion: 'v1.33.0',
        gitTreeState: 'clean',
        compiler: 'gc',
        platform: 'linux/amd64',
      };
    if (path === '/api')
      return {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${this.port}` }],
      };
    const served = this.resources.filter((resource) => resource.prefix === path);
    if (served.length === 0) return undefined;
    const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: served[0]!.apiVersion,
      resources: served.flatMap((resource) => {
        const about = { singularName: resource.kind.toLowerCase(), namespaced: !resource.clusterScoped };
        const main = { name: resource.plural, ...about, kind: resource.kind, verbs };
        const status = { name: `${resource.plural}/status`, singularName: '', namespaced: about.namespaced };
        return resource.statusSubresource
          ? [main, { ...status, kind: resource.kind, verbs: ['get', 'patch', 'update'] }]
          : [main];
      }),
    };
  }

  /** Serves one more kind, stored and answered like the others (and listed by discovery). */
  serve(kind: { apiVersion: string; kind: string; plural: string; clusterScoped?: boolean }): void {
    const [group, version] = kind.apiVersion.includes('/') ? kind.apiVersion.split('/') : ['', kind.apiVersion];
    this.resources.push({
      prefix: group === '' ? `/api/${version}` : `/apis/${group}/${version}`,
      plural: kind.plural,
      group: group!,
      kind: kind.kind,
      apiVersion: kind.apiVersion,
      ...(kind.clusterScoped ? { clusterScoped: true } : {}),
    });
  }

  /** Resolves /apis/batch/v1/namespaces/ns/jobs/name and friends. */
  private route(path: string): { resource: Resource; namespace?: string; name?: string; status?: boolean } | undefined {
    for (const resource of this.resources) {
      if (!path.startsWith(`${resource.prefix}/`)) continue;
      const rest = path
        .slice(resource.prefix.length + 1)
        .split('/')
        .map(decodeURIComponent);
      if (rest.length === 1 && rest[0] === resource.plural) return { resource };
      if (resource.clusterScoped) {
        if (rest[0] !== resource.plural) continue;
        if (rest.length === 2) return { resource, namespace: '', name: rest[1] };
        if (rest.length === 3 && rest[2] === 'status') return { resource, namespace: '', name: rest[1], status: true };
        continue;
      }
      if (rest.length === 3 && rest[0] === 'namespaces' && rest[2] === resource.plural)
        return { resource, namespace: rest[1] };
      if (rest.length === 4 && rest[0] === 'namespaces' && rest[2] === resource.plural)
        return { resource, namespace: rest[1], name: rest[3] };
      if (rest.length === 5 && rest[0] === 'namespaces' && rest[2] === resource.plural && rest[4] === 'status')
        return { resource, namespace: rest[1], name: rest[3], status: true };
    }
    return undefined;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://fake');
    const method = request.method ?? 'GET';
    const query = Object.fromEntries(url.searchParams);
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const recorded: RecordedRequest = {
      method,
      path: url.pathname,
      user: userOf(request.headers.authorization),
      query,
      status: 0,
      at: Date.now(),
    };
    if (request.headers.accept) recorded.accept = request.headers.accept;
    if (request.headers['content-type']) recorded.contentType = request.headers['content-type'];
    if (text !== '') recorded.body = jsonOrText(text);
    this.requests.push(recorded);

    const watch = query.watch === 'true' || query.watch === '1';
    const failure = this.injected(method, url.pathname, watch, recorded.user);
    if (failure) {
      const retryAfter = failure.retryAfterSeconds;
      const message =
        failure.status === 429 ? 'Too many requests, please try again later.' : `injected failure ${failure.status}`;
      const details = retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {};
      this.reply(
        response,
        recorded,
        failure.status,
        statusBody(failure.status, message, details),
        retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {},
      );
      return;
    }
    if (method === 'GET' && (url.pathname === '/apis' || url.pathname === '/apis/')) {
      this.reply(response, recorded, 200, this.apiGroupList());
      return;
    }
    const discovery = method === 'GET' ? this.discovery(url.pathname) : undefined;
    if (discovery) {
      this.reply(response, recorded, 200, discovery);
      return;
    }
    const route = this.route(url.pathname);
    if (!route) {
      this.reply(response, recorded, 404, statusBody(404, 'the server could not find the requested resource'));
      return;
    }
    const { resource, namespace, name } = route;
    const qualified = resource.group === '' ? resource.plural : `${resource.plural}.${resource.group}`;
    const attributes: AuthorizationAttributes = {
      user: recorded.user,
      verb: verbOf(method, name !== undefined, watch),
      group: resource.group,
      resource: resource.plural,
      subresource: route.status === true ? 'status' : '',
      namespace: namespace ?? '',
      name: name ?? '',
    };
    if (this.authorize && !this.authorize(attributes)) {
      this.reply(response, recorded, 403, forbiddenStatus(qualified, attributes));
      return;
    }
    if (method === 'PATCH' && name !== undefined && route.status !== true) {
      const patchType = (request.headers['content-type'] ?? '').split(';', 1)[0]!;
      if (patchType !== 'application/json-patch+json') {
        const message = `the fake API server does not implement PATCH with ${patchType}`;
        this.reply(response, recorded, 405, statusBody(405, message, {}, 'MethodNotAllowed'));
        return;
      }
    }
    if (method === 'POST' && name === undefined && (namespace !== undefined || resource.clusterScoped)) {
      await this.create(resource, namespace ?? '', text, query, recorded, response, qualified);
      return;
    }
    if (name !== undefined) {
      const key = this.key(resource, namespace ?? '', name);
      const stored = this.objects.get(key);
      if (!stored) {
        this.reply(
          response,
          recorded,
          404,
          statusBody(404, `${qualified} "${name}" not found`, { name, group: resource.group, kind: resource.plural }),
        );
        return;
      }
      if (method === 'GET') {
        this.reply(response, recorded, 200, stored);
        return;
      }
      if (method === 'PUT') {
        this.update(resource, stored, text, route.status === true, response, recorded, qualified);
        return;
      }
      if (method === 'PATCH' && route.status !== true) {
        this.patch(resource, stored, text, response, recorded, qualified);
        return;
      }
      if (method === 'DELETE' && route.status !== true) {
        this.deleteObject(resource, key, stored, response, recorded);
        return;
      }
    }
    if (method !== 'GET' || name !== undefined) {
      this.reply(
        response,
        recorded,
        405,
        statusBody(405, `the fake API server does not implement ${method} ${url.pathname}`, {}, 'MethodNotAllowed'),
      );
      return;
    }
    const parsed = parseLabelSelector(query.labelSelector ?? '');
    if ('error' in parsed) {
      this.reply(response, recorded, 400, badRequestStatus(parsed.error));
      return;
    }
    const selector = parsed.requirements;
    if (watch) {
      this.watch(resource, namespace, selector, query, response, recorded);
      return;
    }
    this.beforeList?.(query);
    let items: KubeItem[];
    if (resource.kind === 'Event') {
      const served = eventsServed(
        resource.apiVersion,
        [...this.objects.values()],
        namespace,
        selector,
        query.fieldSelector,
      );
      if (typeof served === 'string') {
        this.reply(response, recorded, 400, statusBody(400, served, {}, 'BadRequest'));
        return;
      }
      items = served;
    } else
      items = [...this.objects.values()].filter(
        (item) => this.resourceOf(item) === resource && matches(item, namespace, selector),
      );
    // Pages: `limit`, and an opaque `continue` token to pass back for the next page, which names the
    // resourceVersion the list began at: once etcd has compacted past it, the token has expired.
    const token = query.continue
      ? (JSON.parse(Buffer.from(query.continue, 'base64').toString('utf8')) as { rv: number; offset: number })
      : { rv: this.resourceVersion, offset: 0 };
    if (query.continue && token.rv < this.compactedThrough) {
      this.reply(response, recorded, 410, statusBody(410, CONTINUE_EXPIRED, {}, 'Expired'));
      return;
    }
    const limit = query.limit ? Number(query.limit) : items.length;
    const page = items.slice(token.offset, token.offset + limit);
    const more = token.offset + limit < items.length;
    const listMetadata = {
      resourceVersion: String(this.resourceVersion),
      ...(more
        ? { continue: Buffer.from(JSON.stringify({ rv: token.rv, offset: token.offset + limit })).toString('base64') }
        : {}),
    };
    this.reply(
      response,
      recorded,
      200,
      this.metadataLists && wantsMetadataList(recorded.accept)
        ? partialObjectMetadataList(listMetadata, page)
        : { kind: `${resource.kind}List`, apiVersion: resource.apiVersion, metadata: listMetadata, items: page },
    );
  }

  /**
   * DELETE as the generic registry answers it (k8s.io/apiserver pkg/registry/generic/registry/store.go Delete): an
   * object holding finalizers gets a deletionTimestamp and is answered as it now is; one without is removed at once
   * and answered with a Success Status naming it.
   */
  private deleteObject(
    resource: Resource,
    key: string,
    stored: KubeItem,
    response: ServerResponse,
    recorded: RecordedRequest,
  ): void {
    if (((stored.metadata.finalizers as string[] | undefined) ?? []).length > 0) {
      stored.metadata.deletionTimestamp ??= kubeNow();
      this.reply(response, recorded, 200, this.commit(resource, stored));
      return;
    }
    this.objects.delete(key);
    this.bump(stored);
    this.record(resource, 'DELETED', stored);
    const { name, uid } = stored.metadata;
    this.reply(response, recorded, 200, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name, group: resource.group, kind: resource.plural, uid },
    });
  }

  /** The Events stored, oldest first. */
  get events(): KubeItem[] {
    return [...this.objects.values()].filter((item) => item.kind === 'Event').map((item) => structuredClone(item));
  }

  private conflict(resource: Resource, name: string, qualified: string): Json {
    return statusBody(
      409,
      `Operation cannot be fulfilled on ${qualified} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      { name, group: resource.group, kind: resource.plural },
    );
  }

  /** The 400 or 422 the API server gives a body it cannot decode or that its schema refuses; undefined when fine. */
  private refusal(resource: Resource, item: KubeItem): { code: number; body: Json } | undefined {
    if (resource.kind === 'Event') {
      // events.k8s.io/v1 is checked as kube-apiserver's ValidateEventCreate does.
      const problems = eventProblems(item);
      if (problems.length > 0)
        return {
          code: 422,
          body: statusBody(422, `Event "${String(item.metadata.name)}" is invalid: ${problems.join(', ')}`),
        };
    }
    if (resource.kind === 'Lease') {
      const spec = (item.spec ?? {}) as Json;
      for (const field of ['acquireTime', 'renewTime']) {
        const value = spec[field];
        if (value !== undefined && (typeof value !== 'string' || !MICRO_TIME.test(value)))
          return {
            code: 400,
            body: statusBody(
              400,
              `parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse`,
            ),
          };
      }
    }
    const errors = resource.schemaErrors?.(item) ?? [];
    if (errors.length === 0) return undefined;
    return {
      code: 422,
      body: statusBody(
        422,
        `${resource.kind}.${resource.group} "${item.metadata.name}" is invalid: ${errors.join(', ')}`,
        {
          name: item.metadata.name,
          group: resource.group,
          kind: resource.kind,
          causes: errors.map((message) => ({ reason: 'FieldValueInvalid', message })),
        },
      ),
    };
  }

  /**
   * POST to a collection: a name or generateName, 409 AlreadyExists, the admission webhooks for Jobs and Pods, and
   * 201 with the stored object; with `dryRun=All`, the admitted object, stored nowhere.
   */
  private async create(
    resource: Resource,
    namespace: string,
    text: string,
    query: Record<string, string>,
    recorded: RecordedRequest,
    response: ServerResponse,
    qualified: string,
  ): Promise<void> {
    let item = JSON.parse(text) as KubeItem;
    item.metadata ??= {} as KubeItem['metadata'];
    if (!resource.clusterScoped) item.metadata.namespace = namespace;
    const dryRun = query.dryRun === 'All';
    let warnings: string[] = [];
    if (this.admission && (resource.kind === 'Job' || resource.kind === 'Pod')) {
      const result = await admit(this.admission, {
        resource,
        namespace,
        user: recorded.user,
        object: item,
        dryRun,
        generateName: (object) => this.generateName(resource, object),
      });
      this.webhookCalls.push(...result.calls);
      warnings = result.warnings;
      if (result.denied !== undefined) {
        this.reply(response, recorded, 403, statusBody(403, result.denied), warningHeaders(warnings));
        return;
      }
      item = result.object as KubeItem;
    }
    this.generateName(resource, item);
    const key = this.key(resource, item.metadata.namespace ?? '', item.metadata.name);
    if (this.objects.has(key)) {
      this.reply(
        response,
        recorded,
        409,
        statusBody(
          409,
          `${qualified} "${item.metadata.name}" already exists`,
          { name: item.metadata.name, group: resource.group, kind: resource.plural },
          'AlreadyExists',
        ),
      );
      return;
    }
    const refused = this.refusal(resource, item);
    if (refused) {
      this.reply(response, recorded, refused.code, refused.body);
      return;
    }
    if (dryRun) {
      item.metadata.uid = `dry-run-uid-${key}`;
      item.metadata.creationTimestamp = kubeNow();
      this.reply(response, recorded, 201, item, warningHeaders(warnings));
      return;
    }
    const stored = this.put(item);
    this.reply(response, recorded, 201, stored, warningHeaders(warnings));
  }

  /** BeforeCreate's name: generateName plus five random characters, when no name is given. */
  private generateName(_resource: Resource, item: KubeItem): void {
    const prefix = item.metadata.generateName;
    if ((item.metadata.name ?? '') === '' && typeof prefix === 'string')
      item.metadata.name = `${prefix}${Math.random().toString(36).slice(2, 7).padEnd(5, 'x')}`;
  }

  /**
   * PUT of an object: 409 when its resourceVersion is not the stored one. With a status subresource, a PUT of the
   * object keeps the stored status and a PUT of /status changes only the status.
   */
  private update(
    resource: Resource,
    stored: KubeItem,
    text: string,
    toStatus: boolean,
    response: ServerResponse,
    recorded: RecordedRequest,
    qualified: string,
  ): void {
    const body = JSON.parse(text) as KubeItem;
    const sent = body.metadata?.resourceVersion;
    if (sent !== undefined && sent !== '' && sent !== stored.metadata.resourceVersion) {
      this.reply(response, recorded, 409, this.conflict(resource, stored.metadata.name, qualified));
      return;
    }
    let next: KubeItem;
    if (toStatus) {
      next = { ...structuredClone(stored), status: body.status };
    } else {
      next = {
        ...body,
        metadata: { ...body.metadata, uid: stored.metadata.uid, creationTimestamp: stored.metadata.creationTimestamp },
      };
      if (resource.statusSubresource) next.status = stored.status;
      this.setGeneration(resource, next, stored);
    }
    const refused = this.refusal(resource, next);
    if (refused) {
      this.reply(response, recorded, refused.code, refused.body);
      return;
    }
    this.reply(response, recorded, 200, this.commit(resource, next));
  }

  /** A JSON patch (application/json-patch+json; handle() has checked the type). */
  private patch(
    resource: Resource,
    stored: KubeItem,
    text: string,
    response: ServerResponse,
    recorded: RecordedRequest,
    qualified: string,
  ): void {
    this.beforePatch?.(stored);
    const working = structuredClone(stored);
    try {
      applyPatch(working, JSON.parse(text) as Operation[], true, true);
    } catch (error) {
      // What kube-apiserver answers when a JSON patch cannot be applied, a failed `test` op included.
      const cause =
        (error as { name?: string }).name === 'TEST_OPERATION_FAILED'
          ? 'testing value failed'
          : (error as Error).message;
      this.reply(
        response,
        recorded,
        422,
        statusBody(422, 'the server rejected our request due to an error in our request', {
          causes: [{ reason: 'UnexpectedServerResponse', message: cause }],
        }),
      );
      return;
    }
    if (working.metadata.resourceVersion !== stored.metadata.resourceVersion) {
      this.reply(
        response,
        recorded,
        409,
        statusBody(
          409,
          `Operation cannot be fulfilled on ${qualified} "${stored.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
          {
            name: stored.metadata.name,
            group: resource.group,
            kind: resource.plural,
          },
        ),
      );
      return;
    }
    this.reply(response, recorded, 200, this.commit(resource, working));
  }

  private watch(
    resource: Resource,
    namespace: string | undefined,
    selector: readonly Requirement[],
    query: Record<string, string>,
    response: ServerResponse,
    recorded: RecordedRequest,
  ): void {
    const from = Number(query.resourceVersion ?? '0');
    if (from !== 0 && from <= this.compactedThrough) {
      recorded.status = 200;
      response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      writeEvent(response, 'ERROR', this.expiredStatus(from));
      response.end();
      return;
    }
    recorded.status = 200;
    response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    response.flushHeaders();
    const open: OpenWatch = { resource, namespace, selector, response };
    // resourceVersion 0 or absent: "any", the API server starts with synthetic ADDED events for what exists.
    if (from === 0) {
      for (const item of this.objects.values())
        if (this.resourceOf(item) === resource && matches(item, namespace, selector))
          writeEvent(response, 'ADDED', item);
    } else {
      for (const entry of this.history) {
        if (entry.resourceVersion > from && entry.resource === resource && matches(entry.object, namespace, selector))
          writeEvent(response, entry.type, entry.object);
      }
    }
    this.watches.add(open);
    const timeoutSeconds = Number(query.timeoutSeconds ?? '0');
    const timer = timeoutSeconds > 0 ? setTimeout(() => response.end(), timeoutSeconds * 1000) : undefined;
    response.on('close', () => {
      clearTimeout(timer);
      this.watches.delete(open);
    });
  }
}

/** What the API server authorizes a request by (k8s.io/apiserver pkg/authorization/authorizer Attributes). */
export interface AuthorizationAttributes {
  user: string;
  verb: string;
  group: string;
  resource: string;
  subresource: string;
  /** '' when cluster-scoped or across namespaces. */
  namespace: string;
  /** '' for a collection. */
  name: string;
}

/** An RBAC PolicyRule's resource part (rbac.authorization.k8s.io/v1). */
export interface PolicyRule {
  apiGroups?: readonly string[];
  resources?: readonly string[];
  resourceNames?: readonly string[];
  verbs: readonly string[];
}

/**
 * RBAC's decision for users each bound to their rules: kubernetes v1.33 plugin/pkg/auth/authorizer/rbac/rbac.go
 * RuleAllows, with rbacv1helpers' VerbMatches, APIGroupMatches, ResourceMatches (`*`, `resource/subresource`,
 * `*\/subresource`) and ResourceNameMatches (no names: any). A user with no rules is refused everything.
 */
export function rbacAuthorizer(
  rulesByUser: Readonly<Record<string, readonly PolicyRule[]>>,
): (attributes: AuthorizationAttributes) => boolean {
  const has = (list: readonly string[] | undefined, value: string) =>
    (list ?? []).some((v) => v === '*' || v === value);
  return (attributes) => {
    const combined =
      attributes.subresource === '' ? attributes.resource : `${attributes.resource}/${attributes.subresource}`;
    return (rulesByUser[attributes.user] ?? []).some(
      (rule) =>
        has(rule.verbs, attributes.verb) &&
        has(rule.apiGroups, attributes.group) &&
        (rule.resources ?? []).some(
          (resource) =>
            resource === '*' ||
            resource === combined ||
            (attributes.subresource !== '' && resource === `*/${attributes.subresource}`),
        ) &&
        ((rule.resourceNames ?? []).length === 0 || (rule.resourceNames ?? []).includes(attributes.name)),
    );
  };
}

/** The verb a request is authorized as (apiserver pkg/endpoints/request/requestinfo.go). */
function verbOf(method: string, named: boolean, watch: boolean): string {
  if (watch) return 'watch';
  const verb = { GET: named ? 'get' : 'list', POST: 'create', PUT: 'update', PATCH: 'patch' }[method];
  return verb ?? (named ? 'delete' : 'deletecollection');
}

/**
 * kube-apiserver's 403 (apiserver v0.33.0 pkg/endpoints/handlers/responsewriters/errors.go ForbiddenStatusError and
 * forbiddenMessage, apimachinery pkg/api/errors NewForbidden), for an authorizer that gives no reason (RBAC).
 */
function forbiddenStatus(qualified: string, attributes: AuthorizationAttributes): Json {
  const resource =
    attributes.subresource === '' ? attributes.resource : `${attributes.resource}/${attributes.subresource}`;
  const scope = attributes.namespace === '' ? 'at the cluster scope' : `in the namespace "${attributes.namespace}"`;
  const who = `User "${attributes.user}" cannot ${attributes.verb} resource "${resource}" in API group "${attributes.group}" ${scope}`;
  const what = attributes.name === '' ? qualified : `${qualified} "${attributes.name}"`;
  return statusBody(403, `${what} is forbidden: ${who}`, {
    ...(attributes.name === '' ? {} : { name: attributes.name }),
    group: attributes.group,
    kind: attributes.resource,
  });
}

/** A request body as recorded: JSON decoded, anything else (YAML) as its text. */
function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A timestamp as the API server writes metav1.Time. */
function kubeNow(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * One `Warning: 299 - "<text>"` header per distinct warning (k8s.io/apiserver pkg/endpoints/filters/warning.go),
 * the UTF-8 bytes of each sent as they are, as Go writes them.
 */
function warningHeaders(warnings: readonly string[]): Record<string, string[]> {
  if (warnings.length === 0) return {};
  const quoted = [...new Set(warnings)].map((text) => `299 - "${text.replace(/["\\]/g, '\\$&')}"`);
  return { warning: quoted.map((value) => Buffer.from(value, 'utf8').toString('latin1')) };
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

/** A token shaped like a service account's JWT (unsigned: only the API server would verify it). */
export function serviceAccountToken(subject: string): string {
  return `e30.${Buffer.from(JSON.stringify({ iss: 'kubernetes/serviceaccount', sub: subject })).toString('base64url')}.unsigned`;
}
