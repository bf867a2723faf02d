#!/usr/bin/env bash
# Makes a CA and a serving certificate for hookguard's Service, writes them as the Secret hookguard-tls, and
# injects the CA into both webhook configurations' caBundle. Rerunning rotates both: the new CA is put into the
# caBundle next to the previous one before the Secret changes, so the API server trusts the replicas that still
# serve the old certificate while the new one reaches them (hookguard reloads it without a restart).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: certs/hookguard-certs.sh [--namespace NS] [--service NAME] [--out DIR] [--days N] [--apply] [--kubectl PATH]

  --namespace NS   namespace of hookguard's Service (default hookguard)
  --service NAME   name of hookguard's Service and webhook configurations (default hookguard)
  --out DIR        where the CA, the serving certificate and the manifests are written (default ./hookguard-certs);
                   keep it: the next run reads the previous CA from it, for the rotation
  --days N         validity of the serving certificate (default 365; the CA gets 10 years)
  --apply          also patch the caBundle of both webhook configurations and apply the Secret, with kubectl
  --kubectl PATH   the kubectl to run (default: kubectl on PATH)

Writes into DIR: ca.crt, tls.crt, tls.key, secret.yaml (the Secret hookguard-tls),
cabundle-patch.json (a JSON patch for both webhook configurations), and cabundle.pem (what the caBundle holds).
The CA's key is never written: every run makes a new CA, so nothing would ever reuse it.
USAGE
}

namespace=hookguard
service=hookguard
out=./hookguard-certs
days=365
apply=false
kubectl=kubectl

while [[ $# -gt 0 ]]; do
  case "$1" in
    --namespace) namespace="${2:?--namespace needs a value}"; shift 2 ;;
    --service) service="${2:?--service needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --days) days="${2:?--days needs a value}"; shift 2 ;;
    --apply) apply=true; shift ;;
    --kubectl) kubectl="${2:?--kubectl needs a value}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "hookguard-certs: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

dns_label='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
for value in "$namespace" "$service"; do
  if [[ ! "$value" =~ $dns_label ]]; then
    echo "hookguard-certs: \"$value\" is not a valid Kubernetes name (DNS label)" >&2
    exit 2
  fi
done
if [[ ! "$days" =~ ^[1-9][0-9]*$ ]]; then
  echo "hookguard-certs: --days must be a positive integer, got \"$days\"" >&2
  exit 2
fi

umask 077
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

host="$service.$namespace.svc"

# The CA: ECDSA P-256, only for signing serving certificates.
openssl ecparam -name prime256v1 -genkey -noout -out "$work/ca.key" 2>/dev/null
openssl req -x509 -new -key "$work/ca.key" -sha256 -days 3650 -subj "/CN=$service-ca.$namespace" \
  -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$work/ca.crt"

# The serving certificate, for the names the API server uses to reach the Service.
openssl ecparam -name prime256v1 -genkey -noout -out "$work/tls.key" 2>/dev/null
openssl req -new -key "$work/tls.key" -subj "/CN=$host" -out "$work/tls.csr"
cat > "$work/tls.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:$host,DNS:$host.cluster.local
EXT
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days "$days" -sha256 -extfile "$work/tls.ext" -out "$work/tls.crt" 2>/dev/null
openssl verify -CAfile "$work/ca.crt" "$work/tls.crt" >/dev/null

# The caBundle: the new CA, then the previous one while replicas may still serve a certificate it signed.
cp "$work/ca.crt" "$work/cabundle.pem"
if [[ -f "$out/ca.crt" ]] && ! cmp -s "$out/ca.crt" "$work/ca.crt"; then
  cat "$out/ca.crt" >> "$work/cabundle.pem"
fi

b64() { base64 < "$1" | tr -d '\n'; }

cat > "$work/secret.yaml" <<YAML
# Made by certs/hookguard-certs.sh for $host. Holds a private key: do not commit it.
apiVersion: v1
kind: Secret
metadata:
  name: $service-tls
  namespace: $namespace
  labels:
    app.kubernetes.io/name: hookguard
    app.kubernetes.io/part-of: hookguard
type: kubernetes.io/tls
data:
  tls.crt: $(b64 "$work/tls.crt")
  tls.key: $(b64 "$work/tls.key")
  ca.crt: $(b64 "$work/ca.crt")
YAML

printf '[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"%s"}]\n' "$(b64 "$work/cabundle.pem")" > "$work/cabundle-patch.json"

# Only now replace the previous files: a failure above leaves them as they were. The CA key stays in $work, which
# is removed on exit; a key an earlier version of this script left in DIR goes too.
for file in ca.crt tls.key tls.crt cabundle.pem secret.yaml cabundle-patch.json; do
  mv -f "$work/$file" "$out/$file"
done
rm -f "$out/ca.key"
chmod 644 "$out/ca.crt" "$out/tls.crt" "$out/cabundle.pem"

echo "hookguard-certs: wrote a CA and a certificate for $host and $host.cluster.local to $out"
echo "  serving certificate valid until $(openssl x509 -noout -enddate -in "$out/tls.crt" | cut -d= -f2)"

if [[ "$apply" == true ]]; then
  # The caBundle first: the API server must trust the new CA before any replica serves a certificate it signed.
  for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
    "$kubectl" patch "$kind" "$service" --type json --patch-file "$out/cabundle-patch.json"
  done
  # Server-side: a client-side apply would copy the whole Secret, private key included, into its
  # kubectl.kubernetes.io/last-applied-configuration annotation, readable by anyone who may read the Secret's metadata.
  "$kubectl" apply --server-side --field-manager=hookguard-certs --force-conflicts -f "$out/secret.yaml"
  echo "hookguard-certs: caBundle injected and Secret $namespace/$service-tls applied; hookguard reloads it without a restart"
else
  echo "  to install: kubectl patch mutatingwebhookconfiguration $service --type json --patch-file $out/cabundle-patch.json"
  echo "              kubectl patch validatingwebhookconfiguration $service --type json --patch-file $out/cabundle-patch.json"
  echo "              kubectl apply --server-side --field-manager=hookguard-certs --force-conflicts -f $out/secret.yaml"
  echo "  (or rerun with --apply)"
fi
