/** The script of kyverno's pre-delete scale-to-zero hook (chart 3.5.0), as the chart renders it. */
export const KYVERNO_SCALE_TO_ZERO =
  'set -euo pipefail\n' +
  'kubectl scale -n ns deployment -l app.kubernetes.io/part-of=rel-kyverno --replicas=0\n' +
  'sleep 30\n' +
  'kubectl delete validatingwebhookconfiguration -l webhook.kyverno.io/managed-by=kyverno\n' +
  'kubectl delete mutatingwebhookconfiguration -l webhook.kyverno.io/managed-by=kyverno';
