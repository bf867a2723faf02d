// Every configuration key, declared once: its default, the values it accepts, its environment variable and its
// doc line. The checks, the defaults, the env map, the Config type and docs/configuration.md's table
// (`npm run docs:config`) are derived from this declaration. Units are in the names.
import { normalizeArgoVersion } from '../core/argocd-version.js';
import { DELETE_POLICY_NAMES, type HookTool } from '../core/delete-policies.js';
import { parseQuantity } from '../core/quantity.js';
import type { ResourceList, RuleSettings } from '../core/rule.js';
import type { Advisory } from '../core/types.js';
import {
  defaultsOf,
  flag,
  group,
  integer,
  list,
  listOf,
  mapping,
  oneOf,
  optionalInteger,
  optionalText,
  settingsOf,
  sibling,
  text,
  type Format,
  type Same,
  type ValueOf,
} from './schema.js';
import { imageReferenceProblem } from './image-reference.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The finalizers `hookguard sweep` knows how to judge, one profile each (src/sweep/profiles.ts, docs/sweep.md). */
export const SWEEP_PROFILES = ['argocd-hook', 'argo-workflows'] as const;
export type SweepProfileId = (typeof SWEEP_PROFILES)[number];

const NOT_EMPTY: Format = {
  accepts: 'text, not empty',
  problem: (value) => (value.trim() === '' ? 'must not be empty' : undefined),
};

const QUANTITY: Format = {
  accepts: 'a Kubernetes quantity above 0',
  problem: (value) => {
    const nano = parseQuantity(value);
    return nano !== undefined && nano > 0n
      ? undefined
      : `must be a Kubernetes quantity above 0 like 100m or 128Mi, got "${value}"`;
  },
};

/** What a tool accepts as a delete policy: known names only (a typo would be dropped by Helm and Argo CD), none empty. */
function deletePolicies(tool: HookTool): Format {
  const names = DELETE_POLICY_NAMES[tool];
  return {
    accepts: `comma-separated, of ${names.join(', ')}`,
    problem: (value) => {
      const items = value.split(',').map((item) => item.trim());
      const unknown = items.find((item) => !names.includes(item));
      if (unknown === undefined) return undefined;
      return unknown === ''
        ? `must list delete policies, comma-separated, none empty: got "${value}"`
        : `"${unknown}" is not a delete policy ${tool === 'helm' ? 'Helm' : 'Argo CD'} knows (${names.join(', ')})`;
    },
  };
}

/** `rules.<rule>.enabled`: every rule can be switched off for the whole installation. */
function ruleEnabled(id: string, doc = `false: ${id} is off for every object, at admission and render time.`) {
  return flag({ default: true, doc });
}

const IMAGE_REFERENCE: Format = {
  accepts: 'an image reference',
  problem: imageReferenceProblem,
};

/** A semantic version, as `accepts` shows it by `example`. */
function versionLike(accepts: string, example: string): Format {
  return {
    accepts: `${accepts} like ${example}`,
    problem: (value) =>
      normalizeArgoVersion(value) === undefined ? `"${value}" is not a semantic version like ${example}` : undefined,
  };
}

const HELM_VERSION = versionLike('a version', '4.2.1');
const GITOPS_VERSION = versionLike('OpenShift GitOps versions', '1.9.0');
const ARGO_CD_VERSION = versionLike('a version', '2.14.3');
const HELM_CONTROLLER_VERSION = versionLike('a version', '1.6.3');

// A DNS-1123 label, as Kubernetes requires of a namespace name.
const NAMESPACE: Format = {
  accepts: 'namespaces',
  problem: (value) =>
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value) ? undefined : 'is not a namespace name (a DNS-1123 label)',
};

const USERNAME: Format = {
  accepts: 'usernames',
  problem: (value) => (value.trim() === '' ? 'must not be empty' : undefined),
};

/** The identity `argocd cluster add` creates for an Argo CD that manages this cluster from elsewhere. */
export const ARGOCD_MANAGER = 'system:serviceaccount:kube-system:argocd-manager';

/**
 * The labels the application controller's StatefulSet or Deployment carries in every install checked:
 * argo-cd v3.5.1 manifests/base/application-controller/argocd-application-controller-statefulset.yaml (and the
 * Deployment of manifests/base/application-controller-deployment/); argo-helm argo-cd-10.1.1
 * charts/argo-cd/templates/_common.tpl `argo-cd.labels` (component = controller.name, default
 * `application-controller`; part-of: argocd); argocd-operator v0.18.0 controllers/argocd/statefulset.go
 * newStatefulSetWithName with common.DefaultLabels (part-of: argocd), which OpenShift GitOps v1.20.0 builds on.
 * `app.kubernetes.io/name` does not do: the operator's is `<name>-application-controller`. Argo Rollouts, Workflows
 * and Events say `part-of: argo-rollouts|argo-workflows|argo-events`, or carry no such labels.
 */
const CONTROLLER_SELECTOR = 'app.kubernetes.io/component=application-controller,app.kubernetes.io/part-of=argocd';

function resources(kind: string, cpu: string, memory: string) {
  const doc = (name: string) =>
    `The guard's ${name} ${kind} is the smallest ${name} request of the Pod's containers, at most this.`;
  return {
    cpu: text({ default: cpu, format: QUANTITY, doc: doc('CPU') }),
    memory: text({ default: memory, format: QUANTITY, doc: doc('memory') }),
  };
}

/** A guard request above its limit would make the API server refuse every guarded Pod. */
function requestsWithinLimits({ requests, limits }: { requests: ResourceList; limits: ResourceList }) {
  for (const resource of ['cpu', 'memory'] as const) {
    const [request, limit] = [parseQuantity(requests[resource]), parseQuantity(limits[resource])];
    if (request !== undefined && limit !== undefined && request > limit) {
      return {
        key: `requests.${resource}`,
        problem: `${requests[resource]} is above limits.${resource} (${limits[resource]})`,
      };
    }
  }
  return undefined;
}

export const KEYS = {
  mode: oneOf(['enforce', 'audit'], {
    default: 'enforce',
    env: 'HOOKGUARD_MODE',
    doc: "`audit` never patches or denies: the same decisions become warnings and audit log lines. It also stops the hook watcher's HookFailed/HookStuck Events: the watcher follows only hooks carrying the label hookguard.io/hook, which audit mode withholds like every change (`hookguard why` explains any hook, read-only).",
  }),
  server: {
    host: text({ default: '0.0.0.0', env: 'HOOKGUARD_HOST', doc: 'Address the HTTPS server listens on.' }),
    port: integer({ default: 8443, min: 1, max: 65535, env: 'HOOKGUARD_PORT', doc: 'Port of the HTTPS server.' }),
    // controller-runtime's split of webhook, health and metrics listeners: idle TLS connections hoarding the webhook
    // port cannot fail the kubelet's probes.
    probePort: integer({
      default: 8080,
      min: 0,
      max: 65535,
      env: 'HOOKGUARD_PROBE_PORT',
      doc: "Port of the plain-HTTP listener for /healthz, /readyz and /metrics, apart from the webhook's TLS port; 0: any free port (logged).",
    }),
    tls: group(
      {
        certFile: optionalText({
          env: 'HOOKGUARD_TLS_CERT_FILE',
          doc: 'PEM certificate of the server, watched and reloaded; null: a generated self-signed development certificate.',
        }),
        keyFile: optionalText({
          env: 'HOOKGUARD_TLS_KEY_FILE',
          doc: 'PEM private key of certFile; set both or neither.',
        }),
        // Files are watched; this periodic re-read is the fallback for file systems whose events get lost.
        reloadIntervalMs: integer({
          default: 60_000,
          min: 1_000,
          max: 86_400_000,
          doc: 'Re-read the certificate files this often, besides watching them.',
        }),
      },
      (tls) =>
        (tls.certFile === null) !== (tls.keyFile === null)
          ? 'certFile and keyFile go together: set both or neither'
          : undefined,
    ),
    // controller-runtime's limit: two 3 MB objects plus the review envelope.
    bodyLimitBytes: integer({
      default: 7 * 1024 * 1024,
      min: 1024,
      max: 64 * 1024 * 1024,
      doc: 'Larger request bodies get 413 (two 3 MB objects plus the review envelope).',
    }),
    // The API server sends a whole request at once; these only cut off slow or stuck clients (docs: limits). Its
    // handshake takes milliseconds; one not done in 2 s holds a slot for a client that sent no ClientHello (issue 25).
    tlsHandshakeTimeoutMs: integer({
      default: 2_000,
      min: 100,
      max: 120_000,
      doc: 'A connection that has not completed its TLS handshake by then is dropped.',
    }),
    // Node refuses a headers timeout longer than the request timeout.
    headersTimeoutMs: integer({
      default: 5_000,
      min: 100,
      max: sibling('requestTimeoutMs'),
      doc: 'Headers not complete by then get 408 and the connection is closed.',
    }),
    // The largest webhook timeoutSeconds the API server allows is 30: later than that nobody waits for the answer.
    requestTimeoutMs: integer({
      default: 30_000,
      min: 100,
      max: 600_000,
      doc: 'A request, body included, not received by then gets 408.',
    }),
    // Longer than the 90 s idle timeout of the API server's client, so the client closes an idle connection
    // first and never sends a request into one we are closing.
    keepAliveTimeoutMs: integer({
      default: 95_000,
      min: 1_000,
      max: 3_600_000,
      doc: "Idle connections are closed after this; longer than the API server client's 90 s.",
    }),
    maxHeaderSizeBytes: integer({
      default: 16 * 1024,
      min: 1024,
      max: 1024 * 1024,
      doc: 'Larger request headers get 431.',
    }),
    maxConnections: integer({
      default: 1_000,
      min: 1,
      max: 1_000_000,
      doc: 'Connections over this are dropped at once; at the limit one slot is kept free by closing a connection of the address holding the most pending or idle ones.',
    }),
    // What one address holds without having sent a whole request costs that address, never the API server's
    // connections (issue 25): the API server sends its request as soon as it connects, so even a burst of its
    // admission calls leaves few of its connections pending at once.
    maxPendingConnectionsPerAddress: integer({
      default: 128,
      min: 1,
      max: 1_000_000,
      env: 'HOOKGUARD_MAX_PENDING_CONNECTIONS_PER_ADDRESS',
      doc: 'Connections from one address that have not sent a whole request yet (TLS handshake, no request, or a body still arriving), on each port; one more is closed at once.',
    }),
    // A body trickled in a byte every few seconds held its connection for requestTimeoutMs (issue 25). The API server
    // sends its body at network speed; 0 turns the check off.
    minBodyBytesPerSecond: integer({
      default: 10_240,
      min: 0,
      max: 1024 * 1024 * 1024,
      env: 'HOOKGUARD_MIN_BODY_BYTES_PER_SECOND',
      doc: 'A request body arriving slower than this on average, after a second of grace, gets 408 and its connection is closed; 0: no minimum.',
    }),
    // After SIGTERM: stay ready-but-failing this long so endpoints drop us before we stop accepting. The delay is
    // part of shutdownTimeoutMs, and draining needs some of it too.
    shutdownDelayMs: integer({
      default: 5_000,
      min: 0,
      max: sibling('shutdownTimeoutMs', 1_000),
      doc: 'After SIGTERM, keep serving (with /readyz failing) this long before draining.',
    }),
    // Well inside Kubernetes' default 30 s grace period.
    shutdownTimeoutMs: integer({
      default: 20_000,
      min: 1_000,
      max: 600_000,
      doc: 'From SIGTERM to exit at most: connections still open then are cut (exit status 1).',
    }),
  },
  // certificates.mode self: src/tls/secret-reader.ts, src/controllers/certificates/, docs/server.md ("Certificates hookguard manages itself").
  certificates: {
    mode: oneOf(['files', 'self'], {
      default: 'files',
      env: 'HOOKGUARD_CERTIFICATES_MODE',
      doc: "`files`: server.tls.certFile/keyFile, or a generated development certificate; `self`: hookguard keeps a CA and its serving certificate in a Secret and the CA in its webhooks' caBundle.",
    }),
    secretName: text({
      default: 'hookguard-tls',
      format: NOT_EMPTY,
      doc: 'The Secret (in certificates.namespace) holding tls.crt, tls.key, ca.crt and ca.key in self mode.',
    }),
    namespace: text({
      default: 'hookguard',
      format: NAMESPACE,
      env: 'HOOKGUARD_CERTIFICATES_NAMESPACE',
      doc: "hookguard's namespace: the Secret's, and the Service's in the certificate's DNS names.",
    }),
    serviceName: text({
      default: 'hookguard',
      format: NOT_EMPTY,
      doc: 'The Service the webhooks call: the certificate is for <serviceName>.<namespace>.svc and .svc.cluster.local.',
    }),
    webhookName: text({
      default: 'hookguard',
      format: NOT_EMPTY,
      doc: 'The name of both the MutatingWebhookConfiguration and the ValidatingWebhookConfiguration whose caBundle hookguard writes.',
    }),
    caValidityDays: integer({
      default: 1825,
      min: 2,
      max: 36500,
      doc: 'A new CA is valid this long (5 years); it is replaced when less than a third is left.',
    }),
    certValidityDays: integer({
      default: 365,
      min: 1,
      max: sibling('caValidityDays'),
      doc: 'A new serving certificate is valid this long; it is re-signed when less than a third is left.',
    }),
    // The bound on how long a replica serves a certificate the Secret no longer holds.
    refreshIntervalMs: integer({
      default: 30_000,
      min: 100,
      max: 3_600_000,
      doc: 'Every replica re-reads the Secret this often; the Lease holder also checks the certificates and caBundles.',
    }),
  },
  log: {
    level: oneOf(LOG_LEVELS, {
      default: 'info',
      env: 'HOOKGUARD_LOG_LEVEL',
      doc: 'Level of the JSON log lines on stdout.',
    }),
    // Brief by default: the findings' prose and the rules that ran cost about 30,000 instructions a hook request, of
    // about 480,000 (docs/benchmark.md, "The brief audit line"); the answer's warnings carry the prose.
    auditDetail: oneOf(['brief', 'full'], {
      default: 'brief',
      env: 'HOOKGUARD_LOG_AUDIT_DETAIL',
      doc: "What each admission decision's audit line says: brief (what was asked, the outcome, each finding's rule, action, advisory and missing mitigation) or full (also each finding's whole message and note, the rules that ran, the hook's system and phases).",
    }),
    // pino's own destination queued without bound: with stdout read slowly, 64 connections for 15 s took the heap
    // from 40 to 341 MiB (issue 22). A few MiB ride out a log shipper's hiccup; beyond them lines are dropped.
    maxQueueBytes: integer({
      default: 4 * 1024 * 1024,
      min: 64 * 1024,
      max: 256 * 1024 * 1024,
      doc: 'Audit lines waiting for stdout take at most this much memory (other log lines a quarter more); lines beyond it are dropped and counted (hookguard_log_lines_dropped_total, by line: audit or other).',
    }),
    // With server.shutdownTimeoutMs (20 s) it stays inside Kubernetes' default 30 s grace period.
    flushTimeoutMs: integer({
      default: 5_000,
      min: 0,
      max: 60_000,
      doc: "At shutdown, wait this long at most for queued log lines to be written; keep shutdownTimeoutMs plus this under the pod's terminationGracePeriodSeconds.",
    }),
  },
  argocd: {
    version: optionalText({
      format: ARGO_CD_VERSION,
      env: 'HOOKGUARD_ARGOCD_VERSION',
      doc: 'Pins the Argo CD version and turns discovery off; null: discovered per instance, or unknown (mutations only, no denials).',
    }),
    controllerUsernames: list({
      default: ['system:serviceaccount:argocd:argocd-application-controller'],
      doc: 'Requests from these users are applied by Argo CD (besides the controllers discovery finds).',
    }),
    trackingLabel: optionalText({
      doc: 'An object with this label counts as applied by Argo CD; null: no label does.',
    }),
    instanceVersions: mapping({
      default: {},
      names: NAMESPACE,
      values: ARGO_CD_VERSION,
      doc: 'The version of the Argo CD whose controller runs in each namespace, over what its image says (operator and OpenShift GitOps images do not say).',
    }),
    // OpenShift GitOps tags its argocd-rhel8 (argocd-rhel9) image with the GitOps version, not Argo CD's. Red Hat
    // publishes which Argo CD each GitOps release ships in its release notes' "Compatibility and support matrix"
    // (openshift/openshift-docs modules/go-compatibility-and-support-matrix.adoc: 1.3.0-1.6.0 at 027c8da2, 1.7.0-1.9.0
    // in openshift-docs#65528; 1.10-1.13 -> 2.8-2.11 as the lead read it there). The Argo CD patch of 1.10.0 to 1.20.0
    // is read from redhat-developer/gitops-operator: each tag's go.mod pins an argoproj-labs/argocd-operator commit
    // whose common/defaults.go ArgoCDDefaultArgoVersion names it (v1.10.0 2.8.3, v1.11.0 2.9.2, v1.12.0 2.10.1,
    // v1.13.0 2.11.2, v1.14.0 2.12.3, v1.15.0 2.13.1, v1.16.0 2.14.4, v1.17.0-rc5 3.0.11, v1.20.0 3.3.2; no 1.18.0 or
    // 1.19.0 tag: the v1.18 and v1.19 branches pin 3.1.5 and 3.1.11). A patch release takes its minor's row.
    openshiftGitopsVersions: mapping({
      default: {
        '1.3.0': '2.1.2',
        '1.4.0': '2.2.2',
        '1.5.0': '2.3.3',
        '1.6.0': '2.4.5',
        '1.7.0': '2.5.4',
        '1.8.0': '2.6.3',
        '1.9.0': '2.7.2',
        '1.10.0': '2.8.3',
        '1.11.0': '2.9.2',
        '1.12.0': '2.10.1',
        '1.13.0': '2.11.2',
        '1.14.0': '2.12.3',
        '1.15.0': '2.13.1',
        '1.16.0': '2.14.4',
        '1.17.0': '3.0.11',
        '1.18.0': '3.1.5',
        '1.19.0': '3.1.11',
        '1.20.0': '3.3.2',
      },
      names: GITOPS_VERSION,
      values: ARGO_CD_VERSION,
      doc: "OpenShift GitOps version -> the Argo CD version it ships (its release notes' compatibility matrix): discovery reads the GitOps version from the argocd-rhel8 or argocd-rhel9 image tag; a patch release not listed takes its minor's row.",
    }),
    remote: mapping<string | null>({
      default: { [ARGOCD_MANAGER]: null },
      names: USERNAME,
      values: ARGO_CD_VERSION,
      nullValues: true,
      doc: 'Identities an Argo CD running elsewhere applies as here, each with its version (null: unknown): they count as Argo CD, judged with that version.',
    }),
  },
  helm: {
    // Helm tells a post-renderer nothing of its version (helm v4.2.1 internal/plugin/runtime_subprocess.go
    // runPostrenderer: Helm's own environment, HELM_PLUGIN_NAME and HELM_PLUGIN_DIR only): the plugin asks the helm
    // that runs it and sets this.
    version: optionalText({
      format: HELM_VERSION,
      env: 'HOOKGUARD_HELM_VERSION',
      doc: 'At render time, the Helm version that will run the hooks (the post-renderer plugin sets it); null: unknown, and every Helm advisory may apply.',
    }),
  },
  // Flux's helm-controller deploys Helm charts too, through the Helm SDK, and crashes on hooks some rules would
  // annotate (data/advisories.yaml, tool: helm-controller; docs/discovery.md, Flux).
  flux: {
    helmControllerVersion: optionalText({
      format: HELM_CONTROLLER_VERSION,
      env: 'HOOKGUARD_FLUX_VERSION',
      doc: "The Flux helm-controller version that deploys the charts (check's --flux-version): at render time the rules change nothing it crashes on; set, it also pins the version at admission and turns Flux discovery off. null: no helm-controller known at render time, discovered at admission.",
    }),
    labelSelector: text({
      default: 'app.kubernetes.io/component=helm-controller',
      format: NOT_EMPTY,
      doc: "Selects Flux's helm-controller Deployments (flux2 manifests/bases/helm-controller/labels.yaml).",
    }),
    // Where Flux is installed (flux install's default flux-system). A controller found here is trusted to be the
    // helm-controller its image says, as an Argo CD controller is (docs/discovery.md, trust model).
    namespaces: list({
      default: ['flux-system'],
      env: 'HOOKGUARD_FLUX_NAMESPACES',
      doc: 'Namespaces Flux is installed in, where discovery looks for helm-controller (unless discovery.clusterWide); only admins should be able to create Deployments there.',
    }),
  },
  excludedNamespaces: list({
    default: ['kube-system'],
    env: 'HOOKGUARD_EXCLUDED_NAMESPACES',
    doc: 'Objects in these namespaces are never touched.',
  }),
  rules: {
    deletePolicy: {
      enabled: ruleEnabled('delete-policy'),
      helm: text({
        default: 'before-hook-creation,hook-succeeded',
        format: deletePolicies('helm'),
        doc: 'helm.sh/hook-delete-policy given to Helm hooks without one, at render time (where Helm reads it).',
      }),
      helmTest: text({
        default: 'before-hook-creation',
        format: deletePolicies('helm'),
        doc: 'The policy for Helm test hooks without one (no hook-succeeded: Helm 3 deletes such Pods before helm test --logs reads them).',
      }),
      argocd: text({
        default: 'BeforeHookCreation,HookSucceeded',
        format: deletePolicies('argocd'),
        doc: 'argocd.argoproj.io/hook-delete-policy given to Argo CD hooks without one, at render time (where Argo CD reads it).',
      }),
    },
    idempotentCleanup: {
      enabled: ruleEnabled('idempotent-cleanup'),
      // Images whose entrypoint is kubectl, so an args-only container runs `kubectl <args>`.
      kubectlImages: list({
        default: [
          'bitnami/kubectl',
          'registry.k8s.io/kubectl',
          'rancher/kubectl',
          'lachlanevenson/k8s-kubectl',
          'openpolicyagent/gatekeeper-crds',
        ],
        doc: 'Images whose entrypoint is kubectl, so a container with only args runs kubectl.',
      }),
      minBackoffLimit: integer({
        default: 3,
        min: 0,
        max: 100,
        doc: 'Cleanup hook Jobs (pre/post-delete) get at least this backoffLimit.',
      }),
    },
    foreignFinalizer: { enabled: ruleEnabled('foreign-finalizer') },
    hookFinalizer: { enabled: ruleEnabled('hook-finalizer') },
    nativeSidecar: { enabled: ruleEnabled('native-sidecar') },
    minRuntime: group(
      {
        enabled: ruleEnabled('min-runtime'),
        minRuntimeSeconds: integer({
          default: 10,
          min: 1,
          max: sibling('maxRuntimeSeconds'),
          doc: 'The init container hookguard-min-runtime waits this long (per object: hookguard.io/min-runtime-seconds).',
        }),
        maxRuntimeSeconds: integer({
          default: 3600,
          min: 1,
          max: 86400,
          doc: 'The longest wait an object may ask for with hookguard.io/min-runtime-seconds.',
        }),
        // distroless debug-nonroot: its config says `user = "65532"`, a numeric non-root user, and it carries busybox
        // at /busybox (GoogleContainerTools/distroless static/static.bzl static_image, common/variables.bzl NONROOT,
        // at cd080764). So the guard needs no runAsUser anywhere: restricted-v2 assigns one from the namespace's range,
        // anyuid and nonroot-v2 leave the image's 65532, which the kubelet can verify as non-root.
        image: text({
          default: 'gcr.io/distroless/static-debian12:debug-nonroot',
          format: IMAGE_REFERENCE,
          doc: 'Image of the guard init container: its USER should be a numeric non-root uid (the default runs as 65532); mirror it and pin it by digest in production.',
        }),
        command: list({
          default: ['/busybox/sleep'],
          nonEmpty: true,
          doc: 'The guard runs this command with the seconds to wait appended.',
        }),
        runAsUser: optionalInteger({
          default: null,
          min: 1,
          max: 2 ** 31 - 1,
          doc: "User (and group) the guard runs as where the Pod sets none, never on OpenShift (see openshift); null (default): the image's user, or the one OpenShift's SCC assigns.",
        }),
        imageRunsAsNonRoot: flag({
          default: true,
          doc: "The guard image's own USER is a numeric non-root uid (the default's is 65532): with no runAsUser, the guard says runAsNonRoot: true. false for an image that runs as root (busybox): then set runAsUser, or the guard says runAsNonRoot only where the Pod must.",
        }),
        // OpenShift is known per cluster, never per namespace: its SCC admission assigns user ids in every namespace,
        // and a namespace just created has no openshift.io/sa.scc.uid-range yet (cluster-policy-controller writes it
        // asynchronously), while a copied annotation proves nothing on another cluster.
        openshift: oneOf(['auto', 'true', 'false'], {
          default: 'auto',
          doc: "Whether the cluster is OpenShift, whose SCCs assign user ids, so the guard sets no runAsUser/runAsGroup of its own. auto: `serve` asks the API server's discovery (GET /apis) for the security.openshift.io group at start and every 5 minutes; `check` takes it as not OpenShift (`check --openshift` says it is).",
        }),
        requests: resources('request', '250m', '512Mi'),
        limits: resources('limit', '250m', '512Mi'),
      },
      requestsWithinLimits,
    ),
    ttlFloor: {
      enabled: ruleEnabled('ttl-floor'),
      minTtlSecondsAfterFinished: integer({
        default: 60,
        min: 0,
        max: 86400 * 7,
        doc: "Hook Jobs' ttlSecondsAfterFinished below this is raised to it (Helm's always, Argo CD's on an affected or unknown version).",
      }),
    },
    hookTtl: {
      enabled: ruleEnabled('hook-ttl'),
      // A day: the TTL deletes a failed Job as it deletes a complete one, so this is how long a failed hook stays readable.
      ttlSecondsAfterFinished: integer({
        default: 86400,
        min: 1,
        max: 86400 * 30,
        doc: 'Hook Jobs with neither a ttlSecondsAfterFinished nor a delete policy that deletes them on success get this TTL (at least the TTL floor). It applies to failed Jobs as to complete ones: a failed hook stays readable this long.',
      }),
    },
    hookDeadline: {
      enabled: ruleEnabled('hook-deadline'),
      // Off by default: past it the Job controller fails the Job and deletes its running Pods, so a migration longer
      // than any value guessed here would be killed mid-run (kubernetes pkg/controller/job/job_controller.go syncJob,
      // pastActiveDeadline).
      activeDeadlineSeconds: integer({
        default: 0,
        min: 0,
        max: 86400 * 7,
        doc: "Opt-in: hook Jobs and bare hook Pods without spec.activeDeadlineSeconds get this, plus the min-runtime guard's wait; 0 (default): none is set, a warning names the missing one.",
      }),
      parallelJobs: flag({
        default: false,
        doc: 'With activeDeadlineSeconds set: also give one to Jobs with completions or parallelism above 1 (each Pod runs within the one deadline).',
      }),
      warn: flag({
        default: true,
        doc: 'Warn (an admission warning, a finding, a metric) about hook Jobs and bare hook Pods without spec.activeDeadlineSeconds.',
      }),
    },
    hookPodRestartPolicy: {
      enabled: ruleEnabled(
        'hook-pod-restart-policy',
        'Bare hook Pods with restartPolicy Always (or none, at render time) get Never; an explicit Always at render time is denied. false: neither.',
      ),
    },
    meshSidecar: {
      enabled: ruleEnabled('mesh-sidecar'),
      action: oneOf(['off', 'warn', 'exclude'], {
        default: 'warn',
        doc: 'Hook Jobs that get a classic Istio or Linkerd sidecar: `warn`; `exclude` also takes them out of injection where only the namespace asks for it; `off` (no namespace watch).',
      }),
      // Istio >= 1.27 on Kubernetes >= 1.33 nodes and Linkerd >= 2.20 inject native sidecars by default; older ones
      // do not, and hookguard sees neither version: `unknown` warns that a sidecar may keep the Job running.
      nativeSidecars: oneOf(['unknown', 'yes', 'no'], {
        default: 'unknown',
        doc: "Whether the cluster's meshes inject native sidecars when a pod does not say: `yes` silences mesh-sidecar, `no` makes its warning definite.",
      }),
    },
    hookSyncOptions: {
      enabled: ruleEnabled(
        'hook-sync-options',
        'Warn about hooks whose argocd.argoproj.io/sync-options holds Replace=true or Force=true. false: off.',
      ),
    },
    lostDeleteHook: {
      enabled: ruleEnabled(
        'lost-delete-hook',
        'Warn about Argo CD PreDelete/PostDelete hooks on versions where Argo CD may take them as done before they ran (argo-cd#29100). false: off.',
      ),
    },
    suspendedHook: {
      enabled: ruleEnabled(
        'suspended-hook',
        'Warn about hook Jobs created suspended (spec.suspend: true, or a kueue.x-k8s.io/queue-name label). false: off.',
      ),
    },
    hookManagedBy: {
      enabled: ruleEnabled(
        'hook-managed-by',
        'Warn about hook Jobs whose spec.managedBy is not kubernetes.io/job-controller. false: off.',
      ),
    },
    hookOutputLogPolicy: {
      enabled: ruleEnabled(
        'hook-output-log-policy',
        "At render time, give Helm hooks without helm.sh/hook-output-log-policy the policy hook-failed (Helm 3.18+ prints a failed hook's logs). false: off.",
      ),
    },
    fluxHookOutputCrash: {
      enabled: ruleEnabled(
        'flux-hook-output-crash',
        'Warn at admission of a Flux hook carrying helm.sh/hook-output-log-policy while a helm-controller that crashes on it runs. false: off.',
      ),
    },
    hookLabel: {
      enabled: ruleEnabled(
        'hook-label',
        "Label admitted hooks hookguard.io/hook: admitted, which serve's hook watcher selects (false: it sees no hook).",
      ),
    },
    terminationMessagePolicy: {
      enabled: ruleEnabled(
        'termination-message-policy',
        "Set terminationMessagePolicy FallbackToLogsOnError on hook containers left at File: a failed container's last log lines (80, 2 KiB) stay in its status. false: off.",
      ),
    },
    immutableUpdate: { enabled: ruleEnabled('immutable-update') },
    versionRace: { enabled: ruleEnabled('version-race') },
  },
  discovery: {
    enabled: flag({
      default: true,
      env: 'HOOKGUARD_DISCOVERY_ENABLED',
      doc: 'Find each Argo CD in the cluster and its version (off anyway while argocd.version is set, or outside a cluster).',
    }),
    labelSelector: text({
      default: CONTROLLER_SELECTOR,
      format: NOT_EMPTY,
      doc: "Selects Argo CD's application controllers (upstream manifests, argo-helm, argocd-operator, OpenShift GitOps).",
    }),
    // Where Argo CD is installed: upstream's manifests and argo-helm's docs use argocd, OpenShift GitOps its
    // openshift-gitops. A controller found here is trusted as an Argo CD identity (docs/discovery.md, trust model).
    namespaces: list({
      default: ['argocd', 'openshift-gitops'],
      env: 'HOOKGUARD_DISCOVERY_NAMESPACES',
      doc: 'Namespaces Argo CD is installed in, where discovery looks (unless discovery.clusterWide); only admins should be able to create Deployments there.',
    }),
    clusterWide: flag({
      default: false,
      env: 'HOOKGUARD_DISCOVERY_CLUSTER_WIDE',
      doc: 'Look in every namespace instead: any namespace whose Deployments match the selector then names an Argo CD identity (opt-in; see docs/discovery.md).',
    }),
    backoffInitialMs: integer({
      default: 500,
      min: 1,
      max: 60_000,
      doc: 'First delay before a failed list or watch is retried; it doubles, with jitter.',
    }),
    backoffMaxMs: integer({
      default: 30_000,
      min: sibling('backoffInitialMs'),
      max: 600_000,
      doc: 'Longest delay between those retries.',
    }),
    // The API server ends every watch after at most this; the reflector then resumes it.
    watchTimeoutSeconds: integer({
      default: 300,
      min: 1,
      max: 3600,
      doc: 'Each watch is renewed after this; one silent for 30 s longer is restarted.',
    }),
  },
  selfTest: {
    enabled: flag({
      default: true,
      env: 'HOOKGUARD_SELF_TEST_ENABLED',
      doc: 'The leader replica dry-runs a probe hook Job through the API server and writes the HookGuard status (off anyway outside a cluster).',
    }),
    // The bound on how long a broken webhook (stale caBundle, unreachable port) goes unnoticed.
    intervalSeconds: integer({
      default: 60,
      min: 1,
      max: 3600,
      doc: 'Run the self-test this often.',
    }),
    // The API server may wait the webhooks' timeoutSeconds (5 s each) before it answers the dry run.
    requestTimeoutMs: integer({
      default: 15_000,
      min: 100,
      max: 120_000,
      doc: 'One API call of the self-test (the dry run, the status read and write) gets no longer than this.',
    }),
    namespace: text({
      default: 'hookguard-selftest',
      format: NOT_EMPTY,
      doc: 'Namespace of the probe Job: one the webhooks select and excludedNamespaces does not list.',
    }),
    statusObject: text({
      default: 'hookguard',
      format: NOT_EMPTY,
      doc: 'The cluster-scoped HookGuard object whose status the leader writes: the one the Helm chart creates (and grants `update` of its status by name).',
    }),
    certificateWarningDays: integer({
      default: 14,
      min: 0,
      max: 365,
      doc: 'CertificateValid turns False this many days before the serving certificate expires.',
    }),
  },
  // client-go's defaults (15 s, 10 s, 2 s) and its two checks: leaseDuration > renewDeadline > 1.2 x retryPeriod.
  leaderElection: group(
    {
      leaseName: text({
        default: 'hookguard',
        format: NOT_EMPTY,
        doc: 'The coordination.k8s.io Lease the replicas elect a leader with.',
      }),
      leaseNamespace: text({ default: 'hookguard', format: NOT_EMPTY, doc: "The Lease's namespace: hookguard's own." }),
      leaseDurationSeconds: integer({
        default: 15,
        min: 1,
        max: 3600,
        doc: 'A replica takes the Lease over once its holder has not renewed it for this long.',
      }),
      renewDeadlineMs: integer({
        default: 10_000,
        min: 100,
        max: 3_600_000,
        doc: 'The leader stops leading (and self-testing) when it has not renewed the Lease for this long.',
      }),
      retryPeriodMs: integer({
        default: 2_000,
        min: 50,
        max: 600_000,
        doc: 'Try to acquire or renew the Lease this often.',
      }),
    },
    (election) =>
      election.leaseDurationSeconds * 1000 <= election.renewDeadlineMs
        ? 'renewDeadlineMs must be shorter than leaseDurationSeconds, or two replicas could lead at once'
        : election.renewDeadlineMs <= 1.2 * election.retryPeriodMs
          ? 'renewDeadlineMs must be longer than 1.2 x retryPeriodMs, or one slow renewal loses the Lease'
          : undefined,
  ),
  sweep: {
    profiles: listOf(SWEEP_PROFILES, {
      default: ['argocd-hook'],
      nonEmpty: true,
      env: 'HOOKGUARD_SWEEP_PROFILES',
      doc: 'The finalizers the sweep removes, by profile (--profile): Argo CD hooks, Argo Workflows pods.',
    }),
    minAgeSeconds: integer({
      default: 600,
      min: 0,
      max: 86400 * 30,
      doc: 'An unfinished hook qualifies once its deletion began this long ago (--min-age-seconds).',
    }),
    // A finished hook whose deletion just began (its TTL, hookguard's floor) may not be recorded yet by a busy or
    // restarting application controller; without its finalizer it vanishes and its result is lost: the sync waits
    // forever before Argo CD 3.4.0 (argo-cd#21055) and fails from 3.4.0, "Resource … is missing, it might have been
    // deleted" (argo-cd#26286; v3.4.0 gitops-engine sync_context.go Sync).
    finishedGraceSeconds: integer({
      default: 300,
      min: 0,
      max: 86400 * 30,
      doc: "A finished hook qualifies only once its deletion began this long ago, and never while its Application's operation lists it as running.",
    }),
    applicationNamespaces: list({
      default: ['argocd', 'openshift-gitops'],
      doc: "Where Argo CD keeps the Applications whose tracking names no namespace (its own namespace): the sweep reads a hook's Application there.",
    }),
    // Argo Workflows' own controller removes its finalizer from a deleting pod 2 minutes after the pod's last
    // change (v3.6.5+); the sweep comes in only well after that, for controllers that are down or stuck.
    argoWorkflowsGraceSeconds: integer({
      default: 600,
      min: 180,
      max: 86400 * 30,
      doc: "A workflow pod qualifies only once its deletion began this long ago: longer than Argo Workflows' own 2-minute fallback.",
    }),
    maxAttempts: integer({
      default: 5,
      min: 1,
      max: 20,
      doc: 'Tries per API call on 429, 5xx or no answer.',
    }),
    backoffInitialMs: integer({
      default: 500,
      min: 1,
      max: 60_000,
      doc: 'First delay between those tries; it doubles, with jitter; a Retry-After wins.',
    }),
    backoffMaxMs: integer({
      default: 10_000,
      min: sibling('backoffInitialMs'),
      max: 600_000,
      doc: 'Longest delay between those tries.',
    }),
  },
  hookWatch: {
    enabled: flag({
      default: true,
      env: 'HOOKGUARD_HOOK_WATCH_ENABLED',
      doc: "serve's Lease holder watches the hooks it admitted (label hookguard.io/hook) and posts one Warning Event, HookFailed or HookStuck, on a hook that fails or is stuck (why.stuckAfterSeconds) and on its Argo CD Application. In audit mode no hook gets the label, so no Event is posted.",
    }),
    // A long migration is overdue without being stuck: each look costs a list of its Pods and Events.
    recheckSeconds: integer({
      default: 60,
      min: 5,
      max: 3600,
      doc: 'A hook that has run longer than why.stuckAfterSeconds without failing is explained again at most this often.',
    }),
    eventLogs: flag({
      default: false,
      env: 'HOOKGUARD_HOOK_WATCH_EVENT_LOGS',
      doc: 'Allow the last log lines of a failed container (redacted: tokens, password=, Authorization:, PEM blocks, long base64) in the Event, where the hook or its namespace is annotated hookguard.io/event-logs: "true". Needs pods/log (the chart grants it with hookWatch.eventLogs).',
    }),
    // Off by default: reading HelmReleases is a grant of its own, and an installation without Flux has none.
    helmReleaseEvents: flag({
      default: false,
      env: 'HOOKGUARD_HOOK_WATCH_HELM_RELEASE_EVENTS',
      doc: 'Post the HookFailed/HookStuck Event also on the Flux HelmRelease that owns the hook (its labels helm.toolkit.fluxcd.io/name and /namespace), as on an Argo CD Application. Needs get on helmreleases.helm.toolkit.fluxcd.io (the chart grants it with hookWatch.helmReleaseEvents).',
    }),
    // controller-runtime's client asks 20 calls a second with a burst of 30 (client-go's bare default is 5 and 10). The
    // watcher explains at most 20 hooks a pass, a pass every 10 s unless something changed: about 14 calls a second
    // at 7 calls a hook, so the bucket binds only when changes come faster than the passes.
    maxConcurrentCalls: integer({
      default: 4,
      min: 1,
      max: 64,
      doc: "The hook watcher's API calls in flight at once (reads and Event writes alike); the rest wait in order.",
    }),
    callsPerSecond: integer({
      default: 20,
      min: 1,
      max: 10_000,
      doc: "The hook watcher's API calls per second, on average (a token bucket refilled at this rate).",
    }),
    callBurst: integer({
      default: 30,
      min: 1,
      max: 10_000,
      doc: 'Calls the hook watcher may make at once after a quiet spell, above hookWatch.callsPerSecond (the token bucket holds this many).',
    }),
  },
  // Off by default: only `hookguard policies` (or the chart's admission.mode policies or both) binds anything to it.
  policyParams: {
    enabled: flag({
      default: false,
      env: 'HOOKGUARD_POLICY_PARAMS_ENABLED',
      doc: "serve's Lease holder keeps the ConfigMap hookguard-policy-params, which the admission policies of `hookguard policies` read (docs/policies.md), current from what Argo CD discovery finds (or argocd.version, argocd.remote). Off: a person writes it (`hookguard policies --argocd-version V | kubectl apply -f -`).",
    }),
    namespace: text({
      default: 'hookguard',
      format: NOT_EMPTY,
      doc: "The ConfigMap's namespace: the one the policies' bindings name (`hookguard policies --namespace`).",
    }),
    // Discovery's snapshot is read in memory, so a look costs nothing; the ConfigMap is written only when it changes.
    recheckSeconds: integer({
      default: 10,
      min: 1,
      max: 3600,
      doc: 'How often the Lease holder compares the parameters with what discovery knows (an Argo CD upgrade reaches the policies within this).',
    }),
  },
  why: {
    // A Pod pulling a large image, a quota another Job frees in a minute, a node autoscaler adding capacity: each
    // looks stuck for a while and is not. Five minutes is what issue 26 allows at most, and Helm's own --timeout
    // default (5m0s, helm pkg/cli) is the same.
    stuckAfterSeconds: integer({
      default: 300,
      min: 30,
      max: 86400,
      env: 'HOOKGUARD_WHY_STUCK_AFTER_SECONDS',
      doc: 'A hook whose Pod has waited this long (image pull, scheduling, a crash loop), or whose Job has failed to create Pods this long, is Stuck or Blocked, not Running (`hookguard why --stuck-after-seconds`, the hook watcher).',
    }),
    // -A and --application read each hook's Pods and Events: a cap keeps one run's API calls bounded.
    maxHooks: integer({
      default: 200,
      min: 1,
      max: 10_000,
      doc: '`hookguard why -A` and `--application` explain at most this many hooks (the rest are counted and named as left out).',
    }),
  },
  check: {
    // A rendered chart is a few MiB at most (CRDs included); past this, reading and parsing would only cost memory.
    maxInputBytes: integer({
      default: 32 * 1024 * 1024,
      min: 1024,
      max: 512 * 1024 * 1024,
      env: 'HOOKGUARD_CHECK_MAX_INPUT_BYTES',
      doc: '`hookguard check` refuses more input than this, files and standard input together (--max-input-bytes).',
    }),
    // The API server refuses a request body over 3 MiB (k8s.io/apiserver pkg/server/config.go, MaxRequestBodyBytes)
    // and etcd a value over 1.5 MiB by default (--max-request-bytes): no stored object holds a longer string, and the
    // source text allows twice that for escapes and indentation. Bounded before the yaml package composes a scalar,
    // which builds a double-quoted one a character at a time (about 40 bytes of memory per character of source).
    maxScalarBytes: integer({
      default: 3 * 1024 * 1024,
      min: 1024,
      max: 512 * 1024 * 1024,
      env: 'HOOKGUARD_CHECK_MAX_SCALAR_BYTES',
      doc: '`hookguard check` refuses a document holding one YAML or JSON scalar (a string, with its quotes, escapes and indentation) longer than this, before reading its value: Kubernetes stores no object that large.',
    }),
  },
};

/** Every setting but `advisories`, which has a shape of its own (src/config/advisories.ts). */
export type Settings = ValueOf<typeof KEYS>;

export interface Config extends Settings {
  /** Built-in advisories merged with the config's additions and overrides. */
  advisories: Advisory[];
}

// The rules are typed in the core (src/core/rule.ts), which cannot import this: the two must agree.
const _rulesAgree: Same<Settings['rules'], RuleSettings> = true;

export const DEFAULTS: Settings = defaultsOf(KEYS);

/** Environment variables and the config key each overrides. */
export const ENV_KEYS: Readonly<Record<string, string>> = Object.fromEntries(
  settingsOf(KEYS).flatMap(([path, setting]) => (setting.spec.env ? [[setting.spec.env, path]] : [])),
);
