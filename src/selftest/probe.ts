// Pure: the probe hook Job the self-test dry-runs through the API server, and what the answer says about whether
// the API server called hookguard.
//
// A server-side dry-run CREATE runs the mutating and validating webhooks whose sideEffects is None and returns
// the admitted object without storing it; the webhooks' warnings come back as `Warning: 299 - "<text>"` headers
// (kubernetes/apiserver v0.36.2: pkg/admission/plugin/webhook/mutating/dispatcher.go callAttrMutatingHook,
// pkg/registry/generic/registry/dryrun.go Create, pkg/endpoints/filters/warning.go; kubernetes/apimachinery v0.36.2
// pkg/util/net/http.go NewWarningHeader). A webhook call that fails under failurePolicy Ignore leaves no trace in
// the answer at all: the object comes back exactly as sent.
import { HELM_HOOK } from '../core/annotations.js';
import { containersOf, isRecord, metadataOf, podSpecOf } from '../core/objects.js';
import type { AdmissionRequest, KubeObject, Mode } from '../core/types.js';
import { findingPrefix } from '../core/warnings.js';
import { idempotentCleanup } from '../rules/idempotent-cleanup.js';

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

export type SelfTestOutcome = 'Called' | 'NotCalled' | 'Error';

export interface ProbeVerdict {
  outcome: SelfTestOutcome;
  message: string;
}

function probeCommand(object: unknown): unknown {
  if (!isRecord(object)) return undefined;
  const podSpec = podSpecOf(object);
  const container = (podSpec ? containersOf(podSpec) : []).find((each) => each.name === PROBE_CONTAINER);
  return container?.command;
}

/**
 * What the dry run's answer says. Enforce mode: the object came back with `--ignore-not-found` (hookguard's patch
 * was applied). Audit mode: hookguard withholds the patch and warns instead, so the warning is the evidence.
 * Either one counts in either mode (replicas mid-way through a change of mode may answer either way).
 */
export function judgeProbe(mode: Mode, returned: unknown, warnings: readonly string[]): ProbeVerdict {
  const command = probeCommand(returned);
  if (!Array.isArray(command))
    return { outcome: 'Error', message: 'the API server answered the dry run without the probe container' };
  if (command.includes(IGNORE_NOT_FOUND))
    return {
      outcome: 'Called',
      message: `the API server called the mutating webhook: the dry-run probe came back with hookguard's patch (${IGNORE_NOT_FOUND})`,
    };
  const auditPrefix = findingPrefix({ rule: idempotentCleanup.id, action: 'mutate' }, 'audit');
  if (warnings.some((warning) => warning.startsWith(auditPrefix)))
    return {
      outcome: 'Called',
      message: `the API server called the mutating webhook: the dry-run probe came back with hookguard's audit warning (${auditPrefix} …)`,
    };
  const expected =
    mode === 'audit' ? `hookguard's audit warning "${auditPrefix} …"` : `hookguard's patch (${IGNORE_NOT_FOUND})`;
  return {
    outcome: 'NotCalled',
    message:
      `the dry-run probe came back without ${expected}: the API server did not call the webhook, and ` +
      'failurePolicy Ignore hides why (a stale caBundle, an expired certificate, no ready endpoint, a NetworkPolicy or ' +
      'firewall in the way); the API server logs "failed calling webhook"',
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
