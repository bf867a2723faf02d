{{/*
Names are fixed, not derived from the release name: hookguard is one per cluster (its CRD, its cluster-scoped
HookGuard object and its webhook configurations are cluster-wide), and the server finds its Service, Lease and
webhook configurations by these names.
*/}}

{{- define "hookguard.labels" -}}
app.kubernetes.io/name: hookguard
app.kubernetes.io/part-of: hookguard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "hookguard.selectorLabels" -}}
app.kubernetes.io/name: hookguard
app.kubernetes.io/component: webhook
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
{{- define "hookguard.sweepUsername" -}}
system:serviceaccount:{{ .Release.Namespace }}:hookguard-sweep
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
{{- $certificates = dict "mode" "self" "secretName" .Values.certificates.secretName "namespace" .Release.Namespace "serviceName" "hookguard" "webhookName" "hookguard" -}}
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
  "leaderElection" (dict "leaseNamespace" .Release.Namespace)
  "selfTest" (dict "enabled" .Values.selfTest.enabled "namespace" .Values.selfTest.namespace)
  "sweep" (dict "profiles" .Values.sweep.profiles)
  "hookWatch" (dict "enabled" .Values.hookWatch.enabled "eventLogs" .Values.hookWatch.eventLogs)
-}}
{{- mergeOverwrite $config $owned | toYaml -}}
{{- end }}
