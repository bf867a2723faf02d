// Which of hookguard's rules the admission policies of `hookguard policies` carry, and why the rest stay with the
// webhook: what `hookguard policies --explain` prints and docs/policies.md and docs/rules.md show.
import { builtInRules, catalogOf, type CatalogEntry } from '../rules/index.js';

/**
 * `policy`: an admission policy does at admission exactly what the webhook does (the rule's change or verdict; the
 * finding's text aside, which a mutating policy cannot send). `partial`: part of it, and `leftOut` says which part.
 * `webhook only`: none of it. `render time`: the rule takes effect only at render time (`hookguard check`, the Helm
 * plugin, the Argo CD plugin), where no admission happens, with or without a webhook.
 */
export type Coverage = 'policy' | 'partial' | 'webhook only' | 'render time';

export interface RuleCoverage {
  id: string;
  /** The side of the rule, as `hookguard rules` lists it. */
  webhook: CatalogEntry['webhook'];
  operation: CatalogEntry['operation'];
  coverage: Coverage;
  /** What the policy does: the kind of policy and how. */
  how?: string;
  /** What is left to the webhook, and why CEL cannot do it (partial and webhook only). */
  leftOut?: string;
}

const FINDINGS =
  'a mutating policy sends no warning, so the finding that names the change is not said (the change is made)';

/** The judgement for each side of each rule, keyed `id/webhook/operation`. */
const COVERAGE: Readonly<Record<string, Omit<RuleCoverage, 'id' | 'webhook' | 'operation'>>> = {
  'delete-policy/mutating/CREATE': {
    coverage: 'render time',
    leftOut: 'Helm and Argo CD read a delete policy from the rendered manifest only; the webhook writes none either',
  },
  'hook-ttl/mutating/CREATE': {
    coverage: 'policy',
    how: `MutatingAdmissionPolicy hookguard-hook-ttl, JSONPatch add /spec/ttlSecondsAfterFinished; ${FINDINGS}`,
  },
  'idempotent-cleanup/mutating/CREATE': {
    coverage: 'partial',
    how: 'MutatingAdmissionPolicy hookguard-idempotent-cleanup, JSONPatch: backoffLimit of cleanup hook Jobs raised',
    leftOut:
      'adding --ignore-not-found to kubectl delete inside sh -c / bash -c scripts needs a shell-word parser (src/core/shell-words.ts), which CEL has not: commands and args are left as written; the warning about Argo CD re-creating failed delete hooks (version-dependent) is not said',
  },
  'lost-delete-hook/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      'a warning that depends on the Argo CD version applying the hook; a mutating policy cannot warn, and this generator makes no warning-only policy for it',
  },
  'foreign-finalizer/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      'a warning that depends on the Argo CD version applying the hook; a mutating policy cannot warn, and this generator makes no warning-only policy for it',
  },
  'hook-finalizer/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      'runs only on a known affected Argo CD version of the instance that applied the hook; the per-instance choice needs discovery, and this generator does not emit it',
  },
  'native-sidecar/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      'a warning that depends on the Argo CD version applying the hook; a mutating policy cannot warn, and this generator makes no warning-only policy for it',
  },
  'ttl-floor/mutating/CREATE': {
    coverage: 'policy',
    how: `MutatingAdmissionPolicy hookguard-ttl-floor, JSONPatch replace /spec/ttlSecondsAfterFinished; Argo CD sync hooks as the ConfigMap hookguard-policy-params says (ttlFloorOnArgoSyncHooks, from the pinned or unknown Argo CD version); ${FINDINGS}`,
  },
  'min-runtime/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      "the list merge would allow it (initContainers is a map list keyed by name: an ApplyConfiguration adds a new name), but the guard's requests and limits are the smallest of the Pod's containers' quantities capped by rules.minRuntime (src/core/quantity.ts), an existing guard is recognised by its image repository (src/core/image.ts), OpenShift is read from API discovery, and the Job's activeDeadlineSeconds is raised by the wait: Kubernetes CEL's quantity library could compare the quantities, but this generator emits only what its differential test proves against decide(), and @bufbuild/cel has no quantity library",
  },
  'hook-deadline/mutating/CREATE': {
    coverage: 'partial',
    how: 'ValidatingAdmissionPolicy hookguard-hook-deadline, bound with validationActions [Warn]: the missing deadline named in a warning',
    leftOut:
      "setting rules.hookDeadline.activeDeadlineSeconds adds the min-runtime guard's wait, which only the webhook adds; the API server words the warning \"Validation failed for ValidatingAdmissionPolicy 'hookguard-hook-deadline' with binding 'hookguard-hook-deadline': …\"",
  },
  'hook-pod-restart-policy/mutating/CREATE': {
    coverage: 'policy',
    how: `MutatingAdmissionPolicy hookguard-hook-pod-restart-policy, JSONPatch replace /spec/restartPolicy; ${FINDINGS}`,
  },
  'mesh-sidecar/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      "follows each mesh's injection rules across its versions (Istio's value parsing changed in 1.27) from the namespace the server watches; not generated",
  },
  'hook-sync-options/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut: 'a warning only; a mutating policy cannot warn, and this generator makes no warning-only policy for it',
  },
  'suspended-hook/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut: 'a warning only; a mutating policy cannot warn, and this generator makes no warning-only policy for it',
  },
  'hook-managed-by/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut: 'a warning only; a mutating policy cannot warn, and this generator makes no warning-only policy for it',
  },
  'hook-output-log-policy/mutating/CREATE': {
    coverage: 'render time',
    leftOut: 'Helm reads hook-output-log-policy from the rendered manifest only',
  },
  'flux-hook-output-crash/mutating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      "a warning that depends on the Flux helm-controller version running (discovered from its Deployment's image, or flux.helmControllerVersion); a mutating policy cannot warn, and this generator makes no warning-only policy for it",
  },
  'hook-label/mutating/CREATE': {
    coverage: 'policy',
    how: 'MutatingAdmissionPolicy hookguard-hook-label, ApplyConfiguration of metadata.labels (a granular map: other labels kept)',
  },
  'termination-message-policy/mutating/CREATE': {
    coverage: 'policy',
    how: `MutatingAdmissionPolicy hookguard-termination-message-policy, ApplyConfiguration of containers and initContainers by name (map lists keyed by name: the other fields and containers are kept); ${FINDINGS}`,
  },
  'immutable-update/mutating/UPDATE': {
    coverage: 'webhook only',
    leftOut:
      "its explained denial works because the mutating webhook runs before the API server's own immutability check; a ValidatingAdmissionPolicy runs after it (kubernetes/apiserver v0.36.3 pkg/registry/generic/registry/store.go Update: rest.BeforeUpdate, then updateValidation), so the API server's 'field is immutable' always answers first, and a mutating policy cannot deny",
  },
  'version-race/validating/CREATE': {
    coverage: 'webhook only',
    leftOut:
      'judges whether each mitigating rule (min-runtime, ttl-floor, hook-finalizer) would change the object as the webhook would; min-runtime is not generated, and the advisory and version come from discovery per instance; not generated',
  },
  'hook-pod-restart-policy/validating/CREATE': {
    coverage: 'render time',
    leftOut:
      'at admission the API server has already filled in restartPolicy Always, so only the manifest shows that its author wrote it',
  },
};

/** Every rule of the catalog with its coverage, in catalog order. */
export function ruleCoverage(): RuleCoverage[] {
  return catalogOf(builtInRules).map((entry) => {
    const judged = COVERAGE[`${entry.id}/${entry.webhook}/${entry.operation}`];
    if (!judged) throw new Error(`src/policies/coverage.ts: no coverage for ${entry.id} (${entry.webhook})`);
    return { id: entry.id, webhook: entry.webhook, operation: entry.operation, ...judged };
  });
}
