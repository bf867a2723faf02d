// A hook Argo CD recorded whose object is gone: what the Application's operation says is all there is.
import { oneLine, quote, record, text } from './readers.js';
import type { HookExplanation } from './types.js';

/** gitops-engine pkg/sync/common/types.go: the operation and hook phases after which nothing is waited for. */
const COMPLETED_PHASES = new Set(['Succeeded', 'Failed', 'Error']);

/**
 * A hook an Argo CD operation lists (`status.operationState.syncResult.resources[]`: group, kind, namespace, name,
 * hookType, hookPhase, message; argo-cd pkg/apis/application/v1alpha1 ResourceResult) whose object is gone, deleted by
 * its delete policy or TTL: what Argo CD recorded is all there is. An operation still running that waits for a hook
 * which no longer exists waits for ever (argo-cd#21055; from v3.4.0 it fails with "… is missing"): Stuck.
 */
export function explainRecordedHook(resource: unknown, operationPhase: string | undefined): HookExplanation {
  const entry = record(resource);
  const hookPhase = text(entry.hookPhase);
  const said = text(entry.message);
  const head: Pick<HookExplanation, 'kind' | 'namespace' | 'name'> = {
    kind: entry.kind === 'Pod' ? 'Pod' : 'Job',
    namespace: text(entry.namespace),
    name: text(entry.name) ?? '<unnamed>',
  };
  const recorded = `${head.kind} ${head.name} no longer exists; Argo CD recorded it as ${hookPhase ?? 'not started'}${said ? `: ${oneLine(said)}` : ''}`;
  const common = {
    ...head,
    reason: 'Deleted' as const,
    message: recorded,
    quoted: quote(said),
    quotedFrom: said ? 'Argo CD syncResult' : undefined,
  };
  if (hookPhase === 'Succeeded') return { ...common, state: 'Succeeded', nextStep: 'Nothing to do.' };
  if (hookPhase !== undefined && COMPLETED_PHASES.has(hookPhase))
    return {
      ...common,
      state: 'Failed',
      nextStep:
        'Its Pods and Events went with it: to keep a failed hook for reading, leave HookFailed out of its delete policy (or raise its ttlSecondsAfterFinished), then sync again.',
    };
  const waiting = operationPhase !== undefined && !COMPLETED_PHASES.has(operationPhase);
  return {
    ...common,
    state: waiting ? 'Stuck' : 'Failed',
    nextStep: waiting
      ? 'Argo CD waits for a hook that is gone: terminate the operation and sync again (argo-cd#21055).'
      : 'Sync again; keep the hook (its delete policy, ttlSecondsAfterFinished) if it fails once more.',
  };
}
