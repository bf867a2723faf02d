// Shapes shared by the pure core. Inputs come from the network, so every field a rule reads is
// optional here and checked at the point of use; the types describe what a valid object looks like.
import type { Operation } from './json-patch.js';

export type { Operation };

export type Mode = 'enforce' | 'audit';
export type Endpoint = 'mutate' | 'validate';
export type FindingAction = 'mutate' | 'deny' | 'warn';

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  [key: string]: unknown;
}

export interface Container {
  name?: string;
  image?: string;
  command?: string[];
  args?: string[];
  [key: string]: unknown;
}

export interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
  activeDeadlineSeconds?: number;
  [key: string]: unknown;
}

export interface JobSpec {
  backoffLimit?: number;
  activeDeadlineSeconds?: number;
  ttlSecondsAfterFinished?: number;
  suspend?: boolean;
  template?: { metadata?: ObjectMeta; spec?: PodSpec };
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface UserInfo {
  username?: string;
  groups?: string[];
}

/** The `request` of an admission.k8s.io/v1 AdmissionReview, as far as hookguard reads it. */
export interface AdmissionRequest {
  uid: string;
  kind?: GroupVersionKind;
  subResource?: string;
  name?: string;
  namespace?: string;
  operation?: string;
  userInfo?: UserInfo;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
}

export interface Finding {
  rule: string;
  action: FindingAction;
  message: string;
  advisory?: string;
  /**
   * The id of a mitigating rule whose change the object lacks although nothing in it opts out: the mutating webhook
   * was not called, failed, timed out, or a later webhook undid the change. Counted on its own
   * (hookguard_mitigation_missing_total); such a finding warns, it never denies.
   */
  missingMitigation?: string;
  /** What the advisory adds for this Argo CD version and hook (its matching `notes` entry). */
  note?: string;
}

/** Whose names a note speaks of: hooks with a fixed `metadata.name`, or `generateName` hooks (a new name per sync). */
export type HookNaming = 'fixed' | 'generated';

/** Something an advisory says only for some of the versions it affects, or only for some hooks. */
export interface AdvisoryNote {
  /** semver range of the Argo CD versions the note holds for */
  affected: string;
  /** Only for hooks named this way; every hook when unset. */
  hookName?: HookNaming;
  text: string;
}

/** Whose versions an advisory's ranges speak of: Argo CD's (the default), Helm's or Flux's helm-controller's. */
export type AdvisoryTool = 'argocd' | 'helm' | 'helm-controller';
/**
 * Which of Argo CD's hooks an advisory concerns: `sync`, those it runs in a sync phase (gitops-engine getSyncTasks,
 * where the hook finalizer is added; the default), or `delete`, its PreDelete/PostDelete hooks (argo-cd
 * controller/hook.go executeHooks).
 */
export type AdvisoryHooks = 'sync' | 'delete';

export interface Advisory {
  id: string;
  summary: string;
  /** The tool whose versions `affected`, `fixed` and the notes speak of; Argo CD when unset. */
  tool?: AdvisoryTool;
  /** Argo CD's delete-phase hooks (`delete`) or, when unset, its sync-phase hooks. */
  hooks?: AdvisoryHooks;
  /** semver range of affected versions of the tool (Argo CD's unless `tool` says otherwise) */
  affected: string;
  fixed?: string;
  references: string[];
  /** ids of the rules that mitigate this race (version-race judges that they are in place) */
  mitigatedBy: string[];
  /** ids of the rules that only warn about it: nothing they could change at admission removes it */
  warnedBy: string[];
  /** `hookguard sweep --apply` frees what it leaves stuck (no admission rule can) */
  mitigatedBySweep: boolean;
  notes: AdvisoryNote[];
  /** The day its range and sources were last checked against the tools' source (YYYY-MM-DD). */
  checked?: string;
}
