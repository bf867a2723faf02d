// What the API server does to a Pod's resources on CREATE, re-implemented from Kubernetes' source for tests, so
// that a test can ask of any pod spec: would it be admitted under these LimitRanges, and what QoS class would it
// get? Sources (kubernetes/kubernetes itself is too large to fetch here; see /work/notes/research-k8s.md A, B):
// - Pod defaulting, SetDefaults_Pod, and LimitRange defaulting, SetDefaults_LimitRangeItem: k8s.io/kubernetes
//   v1.34.1 pkg/apis/core/v1/defaults.go (vendored in kubernetes-sigs/cluster-capacity 3cb0ea28).
// - LimitRanger: plugin/pkg/admission/limitranger/admission.go (the 1.33+ code, read at ntnn/kubernetes 87e5cd19):
//   PodMutateLimitFunc (defaults, init containers included), PodValidateLimitFunc (min, max, maxLimitRequestRatio
//   per container and init container, and per Pod on podRequests/podLimits with sidecars), runLimitFunc (every
//   LimitRange of the namespace in turn, the first with errors refuses), requestLimitEnforcedValues.
// - request <= limit: validateResourceRequirements, pkg/apis/core/validation/validation.go v1.34.1.
// - The refusal's text: kubernetes/apiserver v0.36.3 pkg/admission/errors.go NewForbidden, kubernetes/apimachinery
//   v0.36.2 pkg/api/errors NewForbidden and pkg/util/errors aggregate.Error.
// - QoS: pkg/apis/core/helper/qos/qos.go ComputePodQOS, v1.34.1 (same vendoring).
// Not modelled: pod-level spec.resources (PodLevelResources), ResourceQuota, Pods being resized.
import { milliValue, parseQuantity } from '../../src/core/quantity.js';

export type ResourceMap = Record<string, string>;

export interface LimitRangeItem {
  type: 'Container' | 'Pod';
  min?: ResourceMap;
  max?: ResourceMap;
  default?: ResourceMap;
  defaultRequest?: ResourceMap;
  maxLimitRequestRatio?: ResourceMap;
}

export interface LimitRange {
  name: string;
  limits: LimitRangeItem[];
}

interface Requirements {
  requests?: ResourceMap;
  limits?: ResourceMap;
}

interface SimContainer {
  name?: string;
  restartPolicy?: string;
  resources?: Requirements | null;
  [key: string]: unknown;
}

export interface SimPodSpec {
  containers?: SimContainer[];
  initContainers?: SimContainer[];
  [key: string]: unknown;
}

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

export interface Admission {
  /** The Pod as stored: defaulted by the API server and by LimitRanger. */
  pod: SimPodSpec;
  /** The kubernetes.io/limit-ranger annotation LimitRanger writes, when it set anything. */
  annotation?: string;
  /** Why the API server refuses the Pod (validation or LimitRanger); undefined when it is admitted. */
  refusal?: string;
  qos: QosClass;
}

function quantity(text: string): bigint {
  const nano = parseQuantity(text);
  if (nano === undefined) throw new Error(`not a quantity: ${text}`);
  return nano;
}

const DECIMAL_SUFFIXES = ['n', 'u', 'm', '', 'k', 'M', 'G', 'T', 'P', 'E'];
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/**
 * Quantity.String(): the canonical text, in the format of the text it was parsed from (a sum keeps the format of
 * its first term). quantity.go CanonicalizeBytes: binary only for whole values of at least 1024, by the largest
 * power of 1024 that divides them; else decimal, by the largest power of 1000 (n to E) that divides them.
 */
function canonical(nano: bigint, binary: boolean): string {
  if (nano === 0n) return '0';
  const magnitude = nano < 0n ? -nano : nano;
  if (binary && magnitude % NANO_PER_UNIT === 0n && magnitude / NANO_PER_UNIT >= 1024n) {
    const value = nano / NANO_PER_UNIT;
    for (let power = BINARY_SUFFIXES.length - 1; power >= 0; power--) {
      const unit = 1024n ** BigInt(power);
      if (value % unit === 0n) return `${value / unit}${BINARY_SUFFIXES[power]}`;
    }
  }
  for (let index = DECIMAL_SUFFIXES.length - 1; index >= 0; index--) {
    const unit = 10n ** BigInt(index * 3);
    if (nano % unit === 0n) return `${nano / unit}${DECIMAL_SUFFIXES[index]}`;
  }
  throw new Error('unreachable: every nano-unit value divides by 1');
}

const isBinary = (text: string) => /i$/.test(text);
const canonicalText = (text: string) => canonical(quantity(text), isBinary(text));

const QOS_RESOURCES = new Set(['cpu', 'memory']);
// resource.MaxMilliValue: values above it are compared in whole units (requestLimitEnforcedValues).
const MAX_MILLI_VALUE = (2n ** 63n - 1n) / 1000n;
const NANO_PER_UNIT = 1_000_000_000n;
const wholeValue = (nano: bigint) => (nano + NANO_PER_UNIT - 1n) / NANO_PER_UNIT;

function allContainers(pod: SimPodSpec): SimContainer[] {
  return [...(pod.containers ?? []), ...(pod.initContainers ?? [])];
}

/** SetDefaults_LimitRangeItem: how the API server stores a LimitRange (Container items only). */
export function storedLimitRange(limitRange: LimitRange): LimitRange {
  return {
    name: limitRange.name,
    limits: limitRange.limits.map((item) => {
      if (item.type !== 'Container') return item;
      const byDefault = { ...item.default };
      for (const [key, value] of Object.entries(item.max ?? {})) byDefault[key] ??= value;
      const defaultRequest = { ...item.defaultRequest };
      for (const [key, value] of Object.entries(byDefault)) defaultRequest[key] ??= value;
      for (const [key, value] of Object.entries(item.min ?? {})) defaultRequest[key] ??= value;
      return { ...item, default: byDefault, defaultRequest };
    }),
  };
}

/** SetDefaults_Pod: a container's limit without a request is also its request (Pods only, not templates). */
function defaultPod(pod: SimPodSpec): void {
  for (const container of allContainers(pod)) {
    const limits = container.resources?.limits;
    if (!limits) continue;
    const requests = (container.resources!.requests ??= {});
    for (const [key, value] of Object.entries(limits)) requests[key] ??= value;
  }
}

/** PodMutateLimitFunc: each missing default, containers first, then init containers; returns what it set. */
function applyDefaults(pod: SimPodSpec, limitRange: LimitRange): string[] {
  const defaultRequests: ResourceMap = {};
  const defaultLimits: ResourceMap = {};
  for (const item of limitRange.limits) {
    if (item.type !== 'Container') continue;
    Object.assign(defaultRequests, item.defaultRequest);
    Object.assign(defaultLimits, item.default);
  }
  const notes: string[] = [];
  const merge = (container: SimContainer, prefix: string) => {
    const resources = (container.resources ??= {});
    const limits = (resources.limits ??= {});
    const requests = (resources.requests ??= {});
    const setLimits = Object.keys(defaultLimits).filter((key) => !(key in limits));
    const setRequests = Object.keys(defaultRequests).filter((key) => !(key in requests));
    for (const key of setLimits) limits[key] = defaultLimits[key]!;
    for (const key of setRequests) requests[key] = defaultRequests[key]!;
    if (setRequests.length > 0) notes.push(`${setRequests.sort().join(', ')} request for ${prefix} ${container.name}`);
    if (setLimits.length > 0) notes.push(`${setLimits.sort().join(', ')} limit for ${prefix} ${container.name}`);
  };
  for (const container of pod.containers ?? []) merge(container, 'container');
  for (const container of pod.initContainers ?? []) merge(container, 'init container');
  return notes;
}

/** validateResourceRequirements: a request above its limit is invalid. */
function validationErrors(pod: SimPodSpec): string[] {
  const errors: string[] = [];
  const check = (list: SimContainer[] | undefined, path: string) =>
    (list ?? []).forEach((container, index) => {
      const { requests = {}, limits = {} } = container.resources ?? {};
      for (const [key, request] of Object.entries(requests)) {
        const limit = limits[key];
        if (limit !== undefined && quantity(request) > quantity(limit)) {
          errors.push(
            `${path}[${index}].resources.requests: Invalid value: "${request}": must be less than or equal to ${key} limit of ${limit}`,
          );
        }
      }
    });
  check(pod.containers, 'spec.containers');
  check(pod.initContainers, 'spec.initContainers');
  return errors;
}

interface Value {
  nano: bigint;
  /** Parsed from (or, for a sum, first added from) a binary-suffixed quantity: String() keeps that format. */
  binary: boolean;
}

type Totals = Map<string, Value>;

function plus(total: Value | undefined, term: Value): Value {
  return total ? { nano: total.nano + term.nano, binary: total.binary } : term;
}

function add(totals: Totals, list: ResourceMap | undefined): void {
  for (const [key, text] of Object.entries(list ?? {}))
    totals.set(key, plus(totals.get(key), { nano: quantity(text), binary: isBinary(text) }));
}

function atLeast(totals: Totals, other: Totals): void {
  for (const [key, value] of other) if (!totals.has(key) || value.nano > totals.get(key)!.nano) totals.set(key, value);
}

/** podRequests / podLimits: max(sum of containers and sidecars, each init step with the sidecars before it). */
export function podTotals(pod: SimPodSpec, list: 'requests' | 'limits'): Totals {
  const totals: Totals = new Map();
  for (const container of pod.containers ?? []) add(totals, container.resources?.[list]);
  const sidecars: Totals = new Map();
  const initSteps: Totals = new Map();
  for (const container of pod.initContainers ?? []) {
    let step: Totals;
    if (container.restartPolicy === 'Always') {
      add(totals, container.resources?.[list]);
      add(sidecars, container.resources?.[list]);
      step = sidecars;
    } else {
      step = new Map();
      add(step, container.resources?.[list]);
      for (const [key, value] of sidecars) step.set(key, plus(step.get(key), value));
    }
    atLeast(initSteps, step);
  }
  atLeast(totals, initSteps);
  return totals;
}

type Values = ReadonlyMap<string, { text: string; nano: bigint }>;

function valuesOf(list: ResourceMap | undefined): Values {
  return new Map(
    Object.entries(list ?? {}).map(([key, text]) => [key, { text: canonicalText(text), nano: quantity(text) }]),
  );
}

function totalsAsValues(totals: Totals): Values {
  return new Map(
    [...totals].map(([key, value]) => [key, { text: canonical(value.nano, value.binary), nano: value.nano }]),
  );
}

/** requestLimitEnforcedValues: milli-units, or whole units when any value is too large for them. */
function enforced(values: bigint[]): bigint[] {
  return values.every((value) => wholeValue(value) <= MAX_MILLI_VALUE)
    ? values.map(milliValue)
    : values.map(wholeValue);
}

function constraintErrors(item: LimitRangeItem, requests: Values, limits: Values): string[] {
  const errors: string[] = [];
  const type = item.type;
  const entries = (list: ResourceMap | undefined) =>
    Object.entries(list ?? {}).map(([key, text]): [string, string] => [key, canonicalText(text)]);
  for (const [key, text] of entries(item.min)) {
    const request = requests.get(key);
    const limit = limits.get(key);
    const [req, lim, min] = enforced([request?.nano ?? 0n, limit?.nano ?? 0n, quantity(text)]);
    if (!request) errors.push(`minimum ${key} usage per ${type} is ${text}.  No request is specified`);
    else if (req! < min!) errors.push(`minimum ${key} usage per ${type} is ${text}, but request is ${request.text}`);
    else if (limit && lim! < min!)
      errors.push(`minimum ${key} usage per ${type} is ${text}, but limit is ${limit.text}`);
  }
  for (const [key, text] of entries(item.max)) {
    const request = requests.get(key);
    const limit = limits.get(key);
    const [req, lim, max] = enforced([request?.nano ?? 0n, limit?.nano ?? 0n, quantity(text)]);
    if (!limit) errors.push(`maximum ${key} usage per ${type} is ${text}.  No limit is specified`);
    else if (lim! > max!) errors.push(`maximum ${key} usage per ${type} is ${text}, but limit is ${limit.text}`);
    else if (request && req! > max!)
      errors.push(`maximum ${key} usage per ${type} is ${text}, but request is ${request.text}`);
  }
  for (const [key, text] of entries(item.maxLimitRequestRatio)) {
    const request = requests.get(key);
    const limit = limits.get(key);
    const [req, lim] = enforced([request?.nano ?? 0n, limit?.nano ?? 0n, quantity(text)]);
    const head = `${key} max limit to request ratio per ${type} is ${text}`;
    if (!request || req === 0n) errors.push(`${head}, but no request is specified or request is 0`);
    else if (!limit || lim === 0n) errors.push(`${head}, but no limit is specified or limit is 0`);
    else {
      const ratio = Number(lim) / Number(req!);
      // float64(observedRatio * 1000) > float64(enforced.MilliValue()), as Go compares them.
      if (ratio * 1000 > Number(milliValue(quantity(text)))) {
        errors.push(`${head}, but provided ratio is ${ratio.toFixed(6)}`);
      }
    }
  }
  return errors;
}

/** PodValidateLimitFunc for one LimitRange. */
function limitErrors(pod: SimPodSpec, limitRange: LimitRange): string[] {
  const errors: string[] = [];
  for (const item of limitRange.limits) {
    if (item.type === 'Container') {
      for (const container of allContainers(pod)) {
        errors.push(
          ...constraintErrors(item, valuesOf(container.resources?.requests), valuesOf(container.resources?.limits)),
        );
      }
    } else {
      errors.push(
        ...constraintErrors(item, totalsAsValues(podTotals(pod, 'requests')), totalsAsValues(podTotals(pod, 'limits'))),
      );
    }
  }
  return errors;
}

/** utilerrors.NewAggregate(...).Error(), wrapped by admission.NewForbidden. */
function forbidden(name: string, errors: string[]): string {
  const unique = [...new Set(errors)];
  const text = unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
  return `pods "${name}" is forbidden: ${text}`;
}

/** ComputePodQOS (no pod-level resources): init containers count like app containers, requests are summed. */
export function qosClass(pod: SimPodSpec): QosClass {
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let guaranteed = true;
  for (const container of allContainers(pod)) {
    for (const [key, text] of Object.entries(container.resources?.requests ?? {})) {
      const value = quantity(text);
      if (QOS_RESOURCES.has(key) && value > 0n) requests.set(key, (requests.get(key) ?? 0n) + value);
    }
    const found = new Set<string>();
    for (const [key, text] of Object.entries(container.resources?.limits ?? {})) {
      const value = quantity(text);
      if (QOS_RESOURCES.has(key) && value > 0n) {
        found.add(key);
        limits.set(key, (limits.get(key) ?? 0n) + value);
      }
    }
    if (!found.has('cpu') || !found.has('memory')) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [key, request] of requests) if (limits.get(key) !== request) guaranteed = false;
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/**
 * A Pod CREATE through the API server, in its order: defaulting when the body is decoded, LimitRanger's defaults
 * (a mutating admission plugin, so before the mutating webhooks; every LimitRange in turn), then `webhook` (what a
 * mutating webhook does to the Pod, if anything), validation, and LimitRanger's checks (a validating plugin: the
 * first LimitRange with errors refuses). The QoS class is that of what would be stored.
 */
export function admitPod(
  name: string,
  spec: SimPodSpec,
  limitRanges: readonly LimitRange[],
  webhook: (pod: SimPodSpec) => SimPodSpec = (pod) => pod,
): Admission {
  const decoded = structuredClone(spec);
  defaultPod(decoded);
  const stored = limitRanges.map(storedLimitRange);
  let annotation: string | undefined;
  for (const limitRange of stored) {
    // Each LimitRange that sets something rewrites the annotation (mergePodResourceRequirements).
    const notes = applyDefaults(decoded, limitRange);
    if (notes.length > 0) annotation = `LimitRanger plugin set: ${notes.join('; ')}`;
  }
  const pod = webhook(decoded);
  const qos = qosClass(pod);
  const invalid = validationErrors(pod);
  if (invalid.length > 0) return { pod, ...(annotation ? { annotation } : {}), qos, refusal: invalid.join('; ') };
  for (const limitRange of stored) {
    const errors = limitErrors(pod, limitRange);
    if (errors.length > 0) return { pod, ...(annotation ? { annotation } : {}), qos, refusal: forbidden(name, errors) };
  }
  return { pod, ...(annotation ? { annotation } : {}), qos };
}
