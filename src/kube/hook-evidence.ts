// What `hookguard why` reads from the API server to explain a hook: the hook, its Pods, the Events about both (from
// events.k8s.io/v1 and core v1 alike), the hooks of a namespace or of the cluster, an Argo CD Application, a Flux
// HelmRelease. Every read is a GET of JSON (src/kube/api-request.ts), every list is paged and capped, and lists of
// Jobs and Pods parse only the items that carry a hook annotation (src/kube/list-scan.ts). The judgement itself is
// src/core/explain/. The hook watcher reads through the same reader, with a CallBudget (src/kube/call-budget.ts) every
// call goes through.
import type { KubeConfig } from '@kubernetes/client-node';
import { isRecord } from '../core/objects.js';
import type { HookEvidence } from '../core/explain/index.js';
import { ApiCallError } from '../errors.js';
import { apiFailure } from './api-failure.js';
import { getBody, ReceiveBuffer } from './api-request.js';
import type { CallBudget } from './call-budget.js';
import { scanListPage } from './list-scan.js';

export type HookKindName = 'Job' | 'Pod';
type Json = Record<string, unknown>;

/** client-go's pager size (tools/pager defaultPageSize). */
const PAGE_SIZE = 500;
/** A Job's Pods and an object's Events are read as one page each: enough for any hook, bounded for any cluster. */
export const POD_LIMIT = 100;
export const EVENT_LIMIT = 100;
const TIMEOUT_MS = 30_000;

/**
 * Both hook annotations end in `/hook"` as kube-apiserver writes them (`"helm.sh/hook":`, `"argocd.argoproj.io/hook":`;
 * Go's encoding/json escapes neither), and the delete-policy and weight annotations do not: a list item without
 * this text is no hook and is not parsed.
 */
export const HOOK_MARKER = '/hook"';

export interface HookReader {
  /** One Job or Pod; undefined when it does not exist. */
  get(kind: HookKindName, namespace: string, name: string): Promise<Json | undefined>;
  /** The hook with its Pods and the Events about both. */
  evidence(hook: Json): Promise<HookEvidence>;
  /**
   * The Jobs or Pods carrying a hook annotation that `keep` keeps, in a namespace or (undefined) the whole cluster,
   * page by page: only what is kept stays in memory.
   */
  listHooks(kind: HookKindName, namespace: string | undefined, keep: (hook: Json) => boolean): Promise<Json[]>;
  /** An Argo CD Application (argoproj.io/v1alpha1); undefined when it does not exist. */
  getApplication(namespace: string, name: string): Promise<Json | undefined>;
  /** A Flux HelmRelease (helm.toolkit.fluxcd.io/v2); undefined when it does not exist. */
  getHelmRelease(namespace: string, name: string): Promise<Json | undefined>;
  /**
   * Every hook Job or Pod carrying `labelSelector`, in every namespace, page by page, with the list's resourceVersion
   * to watch from (a reflector's list).
   */
  listLabelled(kind: HookKindName, labelSelector: string): Promise<{ items: Json[]; resourceVersion: string }>;
}

/** A reader without a budget: `hookguard why`, whose calls why.maxHooks bounds. */
const UNLIMITED: Pick<CallBudget, 'run'> = { run: (call) => call() };

function collection(kind: HookKindName, namespace: string | undefined): string {
  const [prefix, plural] = kind === 'Job' ? ['/apis/batch/v1', 'jobs'] : ['/api/v1', 'pods'];
  return namespace === undefined
    ? `${prefix}/${plural}`
    : `${prefix}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
}

function parseObject(body: Buffer, what: string): Json {
  const parsed = JSON.parse(body.toString('utf8')) as unknown;
  if (!isRecord(parsed)) throw new Error(`${what}: the answer is not a JSON object`);
  return parsed;
}

function items(list: Json): Json[] {
  return Array.isArray(list.items) ? list.items.filter(isRecord) : [];
}

/** The label selector of a Job's Pods: its own spec.selector.matchLabels, as the job controller uses it. */
export function podSelectorOf(job: Json): string | undefined {
  const spec = isRecord(job.spec) ? job.spec : {};
  const selector = isRecord(spec.selector) ? spec.selector : {};
  const labels = isRecord(selector.matchLabels) ? selector.matchLabels : {};
  const terms = Object.entries(labels)
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
    .map(([key, value]) => `${key}=${value}`);
  if (terms.length > 0) return terms.join(',');
  const name = isRecord(job.metadata) && typeof job.metadata.name === 'string' ? job.metadata.name : undefined;
  // Jobs before the selector was set by the API server (or a manual selector left empty): the job-name label.
  return name === undefined ? undefined : `job-name=${name}`;
}

/** Both Event APIs refused: what either would need, and the API server's own words for the first. */
function eventsRefused(namespace: string, refusal: unknown): ApiCallError {
  const failure = apiFailure(refusal);
  return new ApiCallError({
    ...failure,
    message:
      `may not list Events in namespace "${namespace}" through either API: grant list on events in API group "" ` +
      `(core v1) or in "events.k8s.io" (either is enough); the API server said: ${failure.message}`,
  });
}

export function kubeHookReader(kubeConfig: KubeConfig, budget: Pick<CallBudget, 'run'> = UNLIMITED): HookReader {
  const pages = new ReceiveBuffer();
  const getJson = async (path: string): Promise<Json | undefined> => {
    try {
      const body = await budget.run(() =>
        getBody(kubeConfig, { path, accept: 'application/json', timeoutMs: TIMEOUT_MS }),
      );
      return parseObject(body, path);
    } catch (error) {
      if (apiFailure(error).status === 404) return undefined;
      throw error;
    }
  };
  const list = async (path: string, query: Record<string, string>): Promise<Json[]> => {
    const search = new URLSearchParams(query).toString();
    return items((await getJson(`${path}?${search}`)) ?? {});
  };
  /**
   * Events about one object through both APIs (field labels: core v1 `involvedObject.*`; events.k8s.io/v1
   * `regarding.*`, kubernetes pkg/apis/events/v1/conversion.go AddFieldLabelConversionsForEvent). An Event is the same
   * object in both, and explainHook() keeps it once. A server without events.k8s.io/v1 answers 404: nothing from it.
   * RBAC grants the two apart (a Role may name `events` in "" only, or in events.k8s.io only): one refused (403), the
   * other's answer is the whole story; only both refused is an error, naming the permission either would need.
   */
  const eventsAbout = async (namespace: string, kind: string, name: string): Promise<Json[]> => {
    const base = `/namespaces/${encodeURIComponent(namespace)}/events`;
    const answers = await Promise.allSettled([
      list(`/api/v1${base}`, {
        fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
        limit: String(EVENT_LIMIT),
      }),
      list(`/apis/events.k8s.io/v1${base}`, {
        fieldSelector: `regarding.kind=${kind},regarding.name=${name}`,
        limit: String(EVENT_LIMIT),
      }),
    ]);
    const refused = answers.flatMap((answer) =>
      answer.status === 'rejected' && apiFailure(answer.reason).status === 403 ? [answer.reason as unknown] : [],
    );
    for (const answer of answers)
      if (answer.status === 'rejected' && !refused.includes(answer.reason)) throw answer.reason;
    if (refused.length === answers.length) throw eventsRefused(namespace, refused[0]);
    return answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
  };
  /**
   * Every page of a list of Jobs or Pods, `limit` PAGE_SIZE and `continue`: each item carrying a hook annotation,
   * with its apiVersion and kind, to `each`. The resourceVersion of the list (the first page's: a continued list is
   * one snapshot).
   */
  const scanHooks = async (
    kind: HookKindName,
    namespace: string | undefined,
    query: Record<string, string>,
    into: ReceiveBuffer,
    each: (hook: Json) => void,
  ): Promise<string> => {
    let continueToken: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const search = new URLSearchParams({ ...query, limit: String(PAGE_SIZE) });
      if (continueToken !== undefined) search.set('continue', continueToken);
      const path = `${collection(kind, namespace)}?${search.toString()}`;
      const body = await budget.run(() =>
        getBody(kubeConfig, { path, accept: 'application/json', timeoutMs: TIMEOUT_MS }, into),
      );
      const page = scanListPage(body, HOOK_MARKER);
      for (const item of page.items)
        // A List's items carry no apiVersion or kind of their own.
        if (isRecord(item)) each({ apiVersion: kind === 'Job' ? 'batch/v1' : 'v1', kind, ...item });
      const version = page.metadata.resourceVersion;
      resourceVersion ??= typeof version === 'string' ? version : '';
      const token = page.metadata.continue;
      continueToken = typeof token === 'string' && token !== '' ? token : undefined;
    } while (continueToken !== undefined);
    return resourceVersion ?? '';
  };
  return {
    async get(kind, namespace, name) {
      return getJson(`${collection(kind, namespace)}/${encodeURIComponent(name)}`);
    },
    async evidence(hook) {
      const metadata = isRecord(hook.metadata) ? hook.metadata : {};
      const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : '';
      const name = typeof metadata.name === 'string' ? metadata.name : '';
      if (hook.kind === 'Pod') return { hook, pods: [], events: await eventsAbout(namespace, 'Pod', name) };
      const selector = podSelectorOf(hook);
      const pods =
        selector === undefined
          ? []
          : await list(collection('Pod', namespace), { labelSelector: selector, limit: String(POD_LIMIT) });
      const podNames = pods.flatMap((pod) =>
        isRecord(pod.metadata) && typeof pod.metadata.name === 'string' ? [pod.metadata.name] : [],
      );
      const events = await Promise.all([
        eventsAbout(namespace, 'Job', name),
        ...podNames.map((podName) => eventsAbout(namespace, 'Pod', podName)),
      ]);
      return { hook, pods, events: events.flat() };
    },
    async listHooks(kind, namespace, keep) {
      const hooks: Json[] = [];
      await scanHooks(kind, namespace, {}, pages, (hook) => {
        if (keep(hook)) hooks.push(hook);
      });
      return hooks;
    },
    async getApplication(namespace, name) {
      return getJson(
        `/apis/argoproj.io/v1alpha1/namespaces/${encodeURIComponent(namespace)}/applications/${encodeURIComponent(name)}`,
      );
    },
    async getHelmRelease(namespace, name) {
      return getJson(
        `/apis/helm.toolkit.fluxcd.io/v2/namespaces/${encodeURIComponent(namespace)}/helmreleases/${encodeURIComponent(name)}`,
      );
    },
    async listLabelled(kind, labelSelector) {
      const items: Json[] = [];
      // A buffer of its own: the Job and Pod reflectors list at the same time.
      const resourceVersion = await scanHooks(kind, undefined, { labelSelector }, new ReceiveBuffer(), (hook) =>
        items.push(hook),
      );
      return { items, resourceVersion };
    },
  };
}
