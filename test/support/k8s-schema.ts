/**
 * Validate rendered/mutated objects against the Kubernetes OpenAPI schema,
 * using the ajv validators that ship precompiled in `kubernetes-models`.
 *
 * What the validator checks (kubernetes-models 4.5.1): required properties
 * (e.g. container `name`, pod `containers`, job `template`), JSON types
 * (`backoffLimit: "3"` is rejected), enums (`restartPolicy`,
 * `imagePullPolicy`), int32/int64 formats and the IntOrString/Quantity
 * oneOfs. It does NOT reject unknown fields (the schemas have no
 * `additionalProperties: false`), and it does not do the API server's own
 * semantic validation (name/generateName present, image set, DNS-1123 names,
 * non-negative counts...).
 */
import { Certificate } from '@kubernetes-models/cert-manager/cert-manager.io/v1/Certificate';
import { Issuer } from '@kubernetes-models/cert-manager/cert-manager.io/v1/Issuer';
import { MutatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1/MutatingWebhookConfiguration';
import { ValidatingAdmissionPolicy } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
import { ValidatingAdmissionPolicyBinding } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding';
import { ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { CronJob } from 'kubernetes-models/batch/v1/CronJob';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Pod } from 'kubernetes-models/v1/Pod';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';

type Model = new (data: never) => { validate(): void };

/** The kinds hook objects come as, and the kinds hookguard's chart and certs script make (cert-manager's from its own models). */
const MODELS: Readonly<Record<string, Model>> = {
  'batch/v1/Job': Job,
  'v1/Pod': Pod,
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/CronJob': CronJob,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration': MutatingWebhookConfiguration,
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration': ValidatingWebhookConfiguration,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': ValidatingAdmissionPolicy,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': ValidatingAdmissionPolicyBinding,
  'cert-manager.io/v1/Issuer': Issuer,
  'cert-manager.io/v1/Certificate': Certificate,
};

/** Shape of the ajv errors that kubernetes-models' ValidationError carries. */
interface SchemaError {
  instancePath: string;
  keyword: string;
  message?: string;
  params?: Record<string, unknown>;
}

/**
 * Throws unless `obj` is a schema-valid object of one of the kinds in MODELS.
 * The error message lists every schema error as `<json-pointer>: <message>`.
 */
export function assertValidKubeObject(obj: unknown): void {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new Error(`unsupported kind: expected a Kubernetes object, got ${describe(obj)}`);
  }
  const { apiVersion, kind } = obj as { apiVersion?: unknown; kind?: unknown };

  // Helm charts routinely render empty values as explicit nulls, e.g.
  // `imagePullPolicy: ` (kyverno) or `resources: null` (gatekeeper). The real
  // API server accepts these: when it decodes JSON into the Go structs a null
  // leaves the field at its zero value, i.e. the field is simply dropped.
  // kubernetes-models' schemas allow null for plain typed fields but NOT for
  // enum fields (`imagePullPolicy: null` fails "must be equal to one of the
  // allowed values"), which would reject manifests that real clusters accept.
  // So, like the API server, we drop null-valued object properties before
  // validating. Null *array items* are kept (and rejected): the server does
  // not drop those.
  const data = stripNullFields(obj) as Record<string, unknown>;

  const Model = MODELS[`${String(apiVersion)}/${String(kind)}`];
  if (!Model) {
    throw new Error(
      `unsupported kind: ${String(apiVersion)}/${String(kind)} (supported: ${Object.keys(MODELS).join(', ')})`,
    );
  }
  const model = new Model(data as never);

  try {
    model.validate();
  } catch (err) {
    const errors = (err as { errors?: unknown }).errors;
    if (!Array.isArray(errors)) throw err;
    const name = describeName(obj);
    const lines = dedupe((errors as SchemaError[]).map(formatError));
    throw new Error(
      `${String(apiVersion)}/${String(kind)} ${name} is not valid against the Kubernetes schema ` +
        `(${lines.length} error${lines.length === 1 ? '' : 's'}):\n  ${lines.join('\n  ')}`,
      { cause: err },
    );
  }
}

/** Deep copy without null-valued object properties (see comment above). */
export function stripNullFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripNullFields);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v === null) continue;
      out[k] = stripNullFields(v);
    }
    return out;
  }
  return value;
}

function formatError(e: SchemaError): string {
  const path = e.instancePath === '' ? '/' : e.instancePath;
  let msg = e.message ?? e.keyword;
  const params = e.params ?? {};
  if (e.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    msg += ` (${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')})`;
  }
  return `${path}: ${msg}`;
}

function dedupe(xs: string[]): string[] {
  return [...new Set(xs)];
}

function describeName(obj: object): string {
  const md = (obj as { metadata?: { name?: unknown; generateName?: unknown } }).metadata;
  if (md && typeof md.name === 'string') return JSON.stringify(md.name);
  if (md && typeof md.generateName === 'string') return `${JSON.stringify(md.generateName)}*`;
  return '(unnamed)';
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}
