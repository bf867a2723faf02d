{{/*
Names are fixed by default, not derived from the release name: hookguard is one per cluster (its CRD, its
cluster-scoped HookGuard object and its webhook configurations are cluster-wide). fullnameOverride renames every
object the chart makes but the CRD and the HookGuard object (whose names the code knows), and the config tells the
server the names it looks for (certificates.serviceName and .webhookName, leaderElection.leaseName).
*/}}
{{- define "hookguard.name" -}}
{{- default "hookguard" .Values.nameOverride -}}
{{- end }}

{{- define "hookguard.fullname" -}}
{{- default (include "hookguard.name" .) .Values.fullnameOverride -}}
{{- end }}

{{/* The server's service account. */}}
{{- define "hookguard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hookguard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: the service account to use when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end }}

{{/* The Lease the replicas elect a leader with: config.leaderElection.leaseName, or the fullname. */}}
{{- define "hookguard.leaseName" -}}
{{- dig "leaderElection" "leaseName" (include "hookguard.fullname" .) .Values.config -}}
{{- end }}

{{/* The chart's labels over commonLabels (values.schema.json refuses commonLabels naming the chart's own keys). */}}
{{- define "hookguard.labels" -}}
{{- $own := dict
  "app.kubernetes.io/name" (include "hookguard.name" .)
  "app.kubernetes.io/part-of" "hookguard"
  "app.kubernetes.io/instance" .Release.Name
  "app.kubernetes.io/managed-by" .Release.Service
  "app.kubernetes.io/version" .Chart.AppVersion
  "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_")
-}}
{{- toYaml (merge $own .Values.commonLabels) -}}
{{- end }}

{{- define "hookguard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookguard.name" . }}
app.kubernetes.io/component: webhook
{{- end }}

{{/*
A pod template's labels: podLabels and commonLabels under the chart's own (.labels: the pod's selector labels),
so that nothing a platform adds can move a pod out of its Deployment's or Service's selector.
*/}}
{{- define "hookguard.podLabels" -}}
{{- toYaml (merge (dict) (.labels | fromYaml) .root.Values.podLabels .root.Values.commonLabels) -}}
{{- end }}

{{/* A pod template's annotations: podAnnotations under the chart's own (.annotations). */}}
{{- define "hookguard.podAnnotations" -}}
{{- toYaml (merge (dict) .annotations .root.Values.podAnnotations) -}}
{{- end }}

{{- define "hookguard.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}:{{ $tag }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end }}

{{/* The sweep's identity, which its ValidatingAdmissionPolicy matches. */}}
{{- define "hookguard.sweepServiceAccountName" -}}
{{ include "hookguard.fullname" . }}-sweep
{{- end }}

{{- define "hookguard.sweepUsername" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "hookguard.sweepServiceAccountName" . }}
{{- end }}

{{/* kube-system, the release namespace and excludedNamespaces, each once, as a JSON list. */}}
{{- define "hookguard.excludedNamespaces" -}}
{{- concat (list "kube-system" .Release.Namespace) .Values.excludedNamespaces | uniq | toJson -}}
{{- end }}

{{/* Where the serving certificate comes from: a mounted Secret (cert-manager, secret) or hookguard itself (self). */}}
{{- define "hookguard.certificateMounted" -}}
{{- if ne .Values.certificates.mode "self" }}true{{ end -}}
{{- end }}

{{/*
hookguard's config file: `config` with the keys the chart's values set laid over it (values.schema.json refuses
those keys in `config`, so nothing is silently overridden).
*/}}
{{- define "hookguard.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $server := dict "port" (int .Values.webhook.port) "probePort" (int .Values.probePort) -}}
{{- $certificates := dict -}}
{{- if include "hookguard.certificateMounted" . -}}
{{- $_ := set $server "tls" (dict "certFile" "/etc/hookguard/tls/tls.crt" "keyFile" "/etc/hookguard/tls/tls.key") -}}
{{- $_ := set $certificates "mode" "files" -}}
{{- else -}}
{{- $certificates = dict "mode" "self" "secretName" .Values.certificates.secretName "namespace" .Release.Namespace "serviceName" (include "hookguard.fullname" .) "webhookName" (include "hookguard.fullname" .) -}}
{{- end -}}
{{- $argocd := dict "version" .Values.argocd.version "instanceVersions" .Values.argocd.instanceVersions -}}
{{- if .Values.argocd.remote -}}
{{- $_ := set $argocd "remote" .Values.argocd.remote -}}
{{- end -}}
{{- $owned := dict
  "mode" .Values.mode
  "server" $server
  "certificates" $certificates
  "argocd" $argocd
  "excludedNamespaces" (include "hookguard.excludedNamespaces" . | fromJsonArray)
  "leaderElection" (dict "leaseNamespace" .Release.Namespace "leaseName" (include "hookguard.leaseName" .))
  "selfTest" (dict "enabled" (include "hookguard.selfTest" . | eq "true") "namespace" .Values.selfTest.namespace)
  "sweep" (dict "profiles" .Values.sweep.profiles)
  "hookWatch" (dict "enabled" .Values.hookWatch.enabled "eventLogs" .Values.hookWatch.eventLogs "helmReleaseEvents" .Values.hookWatch.helmReleaseEvents)
  "policyParams" (dict "enabled" (ne .Values.admission.mode "webhook") "namespace" .Release.Namespace)
-}}
{{- mergeOverwrite $config $owned | toYaml -}}
{{- end }}

{{/* Both webhooks' names, as the API server's admission metrics label them (name), for a PromQL regex. */}}
{{- define "hookguard.webhookNames" -}}
mutate\\.hookguard\\.io|validate\\.hookguard\\.io
{{- end }}

{{/* Whether the webhook configurations are installed (admission.mode webhook or both). */}}
{{- define "hookguard.webhooks" -}}
{{- if ne .Values.admission.mode "policies" }}true{{ end -}}
{{- end }}

{{/* The self-test runs where it has webhooks to check: with admission.mode policies there are none to call. */}}
{{- define "hookguard.selfTest" -}}
{{- if and .Values.selfTest.enabled (include "hookguard.webhooks" .) }}true{{ end -}}
{{- end }}
