// Manifests as text, for the tests that run `hookguard check` on what a chart renders.

/** An Argo CD sync hook Job that opts out of the min-runtime guard: denied by version-race where the race is known. */
export const OPTED_OUT_JOB = `apiVersion: batch/v1
kind: Job
metadata:
  name: fast
  namespace: apps
  annotations:
    argocd.argoproj.io/hook: PreSync
    hookguard.io/skip: min-runtime
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: alpine:3.20
          command: ["true"]
`;

/** A hook Job of one alpine container, with these annotations and `spec` fields (each a line, unindented). */
export function hookJobText(name: string, annotations: readonly string[], spec: readonly string[]): string {
  const indent = (lines: readonly string[], by: string) => lines.map((line) => `${by}${line}\n`).join('');
  return `apiVersion: batch/v1
kind: Job
metadata:
  name: ${name}
  annotations:
${indent(annotations, '    ')}spec:
${indent(spec, '  ')}  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: alpine:3.20
`;
}
