// The offline evaluation behind `hookguard check`: each document as a CREATE, through the mutating decision and
// then the validating one on what the mutation stored, as the API server would call the two webhooks.
import { applyPatch } from '../core/json-patch.js';
import type { DecisionContext } from '../core/context.js';
import { computedPatch, decide } from '../core/decide.js';
import { isRecord } from '../core/objects.js';
import type { Finding, KubeObject, Operation } from '../core/types.js';
import type { Source } from './read.js';

export interface CheckResult {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name?: string;
  allowed: boolean;
  patch: Operation[];
  findings: Finding[];
  source: Source;
}

export interface CheckOptions {
  /** The user the objects are applied as: Argo CD's controller, or a person running Helm. */
  username: string;
}

export function checkObject(
  object: KubeObject,
  source: Source,
  index: number,
  context: DecisionContext,
  options: CheckOptions,
): CheckResult {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const request = {
    uid: `check-${index + 1}`,
    operation: 'CREATE',
    namespace: typeof metadata.namespace === 'string' ? metadata.namespace : undefined,
    userInfo: { username: options.username },
    object,
  };
  const mutation = decide(request, 'mutate', context);
  const patch = computedPatch(mutation);
  const stored = patch.length > 0 ? applyPatch(structuredClone(object), patch, false, false).newDocument : object;
  const validation = decide({ ...request, object: stored }, 'validate', context);
  return {
    apiVersion: object.apiVersion as string,
    kind: object.kind as string,
    ...(typeof metadata.namespace === 'string' ? { namespace: metadata.namespace } : {}),
    ...(typeof metadata.name === 'string'
      ? { name: metadata.name }
      : typeof metadata.generateName === 'string'
        ? { name: metadata.generateName }
        : {}),
    allowed: mutation.allowed && validation.allowed,
    patch,
    findings: [...mutation.findings, ...validation.findings],
    source,
  };
}
