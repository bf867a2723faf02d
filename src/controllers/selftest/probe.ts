// Pure: the probe hook Job the self-test dry-runs through the API server, and what the answer says about whether
// the API server called hookguard.
//
// A server-side dry-run CREATE runs the mutating and validating webhooks whose sideEffects is None and returns
// the admitted object without storing it; the webhooks' warnings come back as `Warning: 299 - "<text>"` headers
// (kubernetes/apiserver v0.36.2: pkg/admission/plugin/webhook/mutating/dispatcher.go callAttrMutatingHook,
// pkg/registry/generic/registry/dryrun.go Create, pkg/endpoints/filters/warning.go; kubernetes/apimachinery v0.36.2
// pkg/util/net/http.go NewWarningHeader). A webhook call that fails under failurePolicy Ignore leaves no trace in
// the answer at all: the object comes back exactly as sent.
import { HELM_HOOK } from '../../core/annotations.js';
import { containersOf, isRecord, metadataOf, podSpecOf } from '../../core/objects.js';
import type { AdmissionRequest, KubeObject, Mode } from '../../core/types.js';
import { findingPrefix } from '../../core/warnings.js';
import { idempotentCleanup } from '../../rules/idempotent-cleanup.js';

/**
 * Only the probe carries this label. Admission requests with it, from hookguard's own identity, are not counted
 * in the admission metrics and write a debug line instead of an audit line. Other dry runs (kubectl diff, Argo CD's
 * server-side diff) are ordinary requests.
 */
export const SELF_TEST_LABEL = 'hookguard.io/self-test';

const PROBE_CONTAINER = 'probe';
const IGNORE_NOT_FOUND = '--ignore-not-found';

/**
 * A Helm hook Job whose container runs `kubectl delete` without `--ignore-not-found`: idempotent-cleanup, a rule
 * that runs on every hook in every mode, adds the flag. It is never stored (dry run), so the name is generated
 * (a fixed one that happened to exist would fail with AlreadyExists) and its Pod never runs; it still passes Pod
 * Security "restricted", so the namespace's admission adds no warning of its own.
 */
export function probeJob(namespace: string): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      generateName: 'hookguard-self-test-',
      namespace,
      labels: {
        'app.kubernetes.io/name': 'hookguard',
        'app.kubernetes.io/component': 'self-test',
        [SELF_TEST_LABEL]: 'probe',
      },
      annotations: { [HELM_HOOK]: 'pre-install' },
    },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels: { [SELF_TEST_LABEL]: 'probe' } },
        spec: {
          restartPolicy: 'Never',
          securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: PROBE_CONTAINER,
              image: 'registry.k8s.io/kubectl:v1.34.1',
              command: ['kubectl', 'delete', 'configmap', 'hookguard-self-test-probe'],
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            },
          ],
        },
      },
    },
  };
}

/** Whether an admission request is the probe: the label, sent by hookguard's own identity (nobody else can hide). */
export function isSelfTestProbe(request: AdmissionRequest, selfTestUsername: string): boolean {
  if (request.userInfo?.username !== selfTestUsername || !isRecord(request.object)) return false;
  const labels = metadataOf(request.object)?.labels;
  return isRecord(labels) && labels[SELF_TEST_LABEL] !== undefined;
}

/**
 * The warning /validate adds to its answer for the probe, and for nothing else. A dry run calls each webhook on its
 * own and each fails open on its own (failurePolicy Ignore), and a validating webhook can change nothing: only
 * something /validate alone returns proves that the API server called it.
 */
export const VALIDATING_MARKER = 'hookguard self-test: the validating webhook judged this probe';

export type SelfTestOutcome = 'Called' | 'NotCalled' | 'Error';

/** The WebhookCalled condition's reason: which webhook the API server did not call, or Called, or Error. */
export type ProbeReason = 'Called' | 'NotCalled' | 'MutatingNotCalled' | 'ValidatingNotCalled' | 'Error';

export interface ProbeVerdict {
  /** Called only when both webhooks were; NotCalled when either was not. */
  outcome: SelfTestOutcome;
  reason: ProbeReason;
  message: string;
}

function probeCommand(object: unknown): unknown {
  if (!isRecord(object)) return undefined;
  const podSpec = podSpecOf(object);
  const container = (podSpec ? containersOf(podSpec) : []).find((each) => each.name === PROBE_CONTAINER);
  return container?.command;
}

/**
 * Where to look when the API server did not call a webhook (the webhook names of
 * charts/hookguard/templates/webhooks.yaml).
 */
function failedOpen(webhooks: readonly string[]): string {
  return (
    'failurePolicy Ignore hides why (a stale caBundle, an expired certificate, no ready endpoint, a NetworkPolicy or ' +
    'firewall in the way); the API server logs ' +
    webhooks.map((webhook) => `failed calling webhook "${webhook}"`).join(' and ')
  );
}

/**
 * What the dry run's answer says about each webhook. The mutating one: in enforce mode the object came back with
 * `--ignore-not-found` (hookguard's patch was applied); in audit mode hookguard withholds the patch and warns
 * instead, so the warning is the evidence. Either one counts in either mode (replicas mid-way through a change of
 * mode may answer either way); both come from /mutate only. The validating one: VALIDATING_MARKER among the warnings.
 */
export function judgeProbe(mode: Mode, returned: unknown, warnings: readonly string[]): ProbeVerdict {
  const command = probeCommand(returned);
  if (!Array.isArray(command))
    return {
      outcome: 'Error',
      reason: 'Error',
      message: 'the API server answered the dry run without the probe container',
    };
  const auditPrefix = findingPrefix({ rule: idempotentCleanup.id, action: 'mutate' }, 'audit');
  const mutatingEvidence = command.includes(IGNORE_NOT_FOUND)
    ? `hookguard's patch (${IGNORE_NOT_FOUND})`
    : warnings.some((warning) => warning.startsWith(auditPrefix))
      ? `hookguard's audit warning (${auditPrefix} …)`
      : undefined;
  const validatingCalled = warnings.includes(VALIDATING_MARKER);
  const mutatingExpected =
    mode === 'audit' ? `hookguard's audit warning "${auditPrefix} …"` : `hookguard's patch (${IGNORE_NOT_FOUND})`;
  const validatingExpected = `the warning "${VALIDATING_MARKER}"`;
  if (mutatingEvidence !== undefined && validatingCalled)
    return {
      outcome: 'Called',
      reason: 'Called',
      message: `the API server called both webhooks: the dry-run probe came back with ${mutatingEvidence} and ${validatingExpected}`,
    };
  if (mutatingEvidence !== undefined)
    return {
      outcome: 'NotCalled',
      reason: 'ValidatingNotCalled',
      message:
        `the API server called the mutating webhook (the dry-run probe came back with ${mutatingEvidence}) but not ` +
        `the validating one: the probe came back without ${validatingExpected}, so hookguard denies nothing; ` +
        `${failedOpen(['validate.hookguard.io'])}`,
    };
  if (validatingCalled)
    return {
      outcome: 'NotCalled',
      reason: 'MutatingNotCalled',
      message:
        `the API server called the validating webhook (the dry-run probe came back with ${validatingExpected}) but ` +
        `not the mutating one: the probe came back without ${mutatingExpected}, so hookguard changes nothing; ` +
        `${failedOpen(['mutate.hookguard.io'])}`,
    };
  return {
    outcome: 'NotCalled',
    reason: 'NotCalled',
    message:
      `the dry-run probe came back without ${mutatingExpected} and without ${validatingExpected}: the API server ` +
      `called neither webhook, and ${failedOpen(['mutate.hookguard.io', 'validate.hookguard.io'])}`,
  };
}

/**
 * The texts of the `Warning` headers of an answer, joined by the HTTP client into one value
 * (`299 - "a", 299 - "b, with a comma"`): each is a code, an agent and a quoted text with `\"` and `\\` escapes.
 */
export function warningTexts(header: string | undefined): string[] {
  const texts: string[] = [];
  const warning = /\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"(?:\s+"[^"]*")?\s*(?:,|$)/gy;
  let match: RegExpExecArray | null;
  while (header !== undefined && (match = warning.exec(header)) !== null) {
    texts.push(match[1]!.replace(/\\(.)/g, '$1'));
    if (warning.lastIndex >= header.length) break;
  }
  return texts;
}
