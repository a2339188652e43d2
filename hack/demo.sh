#!/usr/bin/env bash
# make demo: the operator on the local Kubernetes (or the cluster of $KUBECONFIG), a sample
# ValkeyCluster, and its status once Ready.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${KUBECONFIG:-}" ]]; then
  echo "== no KUBECONFIG given: the local Kubernetes (make local-up)"
  make -s local-up
  KUBECONFIG=$PWD/.cache/localkube/run/kubeconfig
else
  echo "== using the cluster of KUBECONFIG=$KUBECONFIG (the operator image must be available to it)"
fi
export KUBECONFIG
KUBECTL=${KUBECTL:-.cache/k8s/v1.37.2/bin/kubectl}
HELM=${HELM:-hack/tools/bin/helm}
NS=valkey-demo

echo "== installing the operator (chart charts/valkey-operator) into valkey-operator"
"$HELM" upgrade --install valkey-operator charts/valkey-operator \
  --namespace valkey-operator --create-namespace --wait --timeout 3m

echo "== creating the sample cluster (docs/examples/sample.yaml) in $NS"
"$KUBECTL" create namespace "$NS" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
if ! "$KUBECTL" -n "$NS" get secret my-users-secret >/dev/null 2>&1; then
  "$KUBECTL" -n "$NS" create secret generic my-users-secret \
    --from-literal=alicepw="$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" >/dev/null
fi
"$KUBECTL" -n "$NS" apply -f docs/examples/sample.yaml
start=$(date +%s)
"$KUBECTL" -n "$NS" wait valkeycluster/sample --for=condition=Ready --timeout=5m
echo "== Ready after $(( $(date +%s) - start )) s"
"$KUBECTL" -n "$NS" get valkeycluster,valkeynodes -o wide
"$KUBECTL" -n "$NS" get valkeycluster sample -o jsonpath='{range .status.conditions[*]}{.type}={.status} ({.reason}) {.message}{"\n"}{end}'
"$KUBECTL" -n "$NS" get valkeycluster sample -o jsonpath='{range .status.shards[*]}shard {.index}: primary {.primary}, replicas {.replicas}, slots {.slots}{"\n"}{end}'
cat <<MSG

Connect from inside the cluster, in cluster mode, as bob (no password in the sample):
  KUBECONFIG=$KUBECONFIG $KUBECTL -n $NS run client --rm -it --image=docker.io/local/toolbox:dev \\
    --restart=Never -- valkey-cli -c -h sample --user bob --pass any
or as alice, whose password is in Secret my-users-secret (key alicepw):
  KUBECONFIG=$KUBECONFIG $KUBECTL -n $NS get secret my-users-secret -o jsonpath='{.data.alicepw}' | base64 -d
On this machine the pod IPs are reachable from the host too:
  valkey-cli -c -h $("$KUBECTL" -n "$NS" get valkeynodes -o jsonpath='{.items[0].status.podIP}') --user bob --pass any ping
Remove the sample with: KUBECONFIG=$KUBECONFIG $KUBECTL delete namespace $NS
MSG
