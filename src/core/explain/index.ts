// Why a hook failed or hangs, read from what Kubernetes itself wrote: the Job's conditions, its Pods' statuses and the
// Events about both. Pure: the CLI (`hookguard why`) and the hook watcher hand it what they read and render the answer.
// Every message format quoted here is cited where it is read; the golden tests (test/golden/why/) hold real shapes.
import { isRecord } from '../objects.js';
import { explainJob } from './job.js';
import { explainPodHook } from './pod.js';
import { readEvents, record, text } from './readers.js';
import type { Base, ExplainOptions, HookEvidence, HookExplanation } from './types.js';

export { explainRecordedHook } from './recorded.js';
export {
  explainRelease,
  type FluxReleaseOwner,
  type ReleaseEvidence,
  type ReleaseExplanation,
  type ReleaseHookEvidence,
  type ReleaseHookExplanation,
} from './release.js';
export {
  FAILING_STATES,
  QUOTE_LIMIT,
  type BlockedBy,
  type ContainerRole,
  type ExplainOptions,
  type HookEvidence,
  type HookExplanation,
  type HookReason,
  type HookState,
  type JobConditionSummary,
} from './types.js';

export function explainHook(evidence: HookEvidence, options: ExplainOptions): HookExplanation {
  const hook = isRecord(evidence.hook) ? evidence.hook : {};
  const meta = record(hook.metadata);
  const events = readEvents(evidence.events);
  const base: Base = {
    kind: hook.kind === 'Pod' ? 'Pod' : 'Job',
    namespace: text(meta.namespace),
    name: text(meta.name) ?? '<unnamed>',
    options,
    events,
  };
  return base.kind === 'Pod' ? explainPodHook(base, hook) : explainJob(base, hook, evidence.pods);
}
