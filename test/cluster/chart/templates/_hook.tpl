{{- /* One hook Job: (dict "root" . "name" NAME "hook" PHASES "policy" DELETE-POLICY "exit" CODE) */ -}}
{{- define "hooks.job" -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .root.Release.Name }}-{{ .name }}
  annotations:
    helm.sh/hook: {{ .hook }}
    helm.sh/hook-delete-policy: {{ .policy }}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        test.hookguard.io/exit-code: {{ .exit | default "0" | quote }}
        test.hookguard.io/log: "{{ .name }} ran"
    spec:
      restartPolicy: Never
      containers:
        - name: {{ .name }}
          image: registry.example/hooks/{{ .name }}:1.0
          command: ["/bin/run-{{ .name }}"]
{{- end -}}
