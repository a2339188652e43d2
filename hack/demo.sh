#!/usr/bin/env bash
# make demo: the operator on the local Kubernetes (or the cluster of $KUBECONFIG), a sample
# ValkeyCluster, and its status once Ready.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBECONFIG:=$PWD/.cache/localkube/run/kubeconfig}"
export KUBECONFIG
KUBECTL=${KUBECTL:-.cache/k8s/v1.37.2/bin/kubectl}
HELM=${HELM:-hack/tools/bin/helm}
NS=valkey-demo

echo "== installing the operator (chart charts/valkey-operator) into valkey-operator"
"$HELM" upgrade --install valkey-operator charts/valkey-operator \
  --namespace valkey-operator --create-namespace --wait --timeout 3m

echo "== creating the sample cluster (docs/examples/sample.yaml) in $NS"
"$KUBECTL" create namespace "$NS" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
"$KUBECTL" -n "$NS" apply -f docs/examples/sample.yaml
start=$(date +%s)
"$KUBECTL" -n "$NS" wait valkeycluster/sample --for=condition=Ready --timeout=5m
echo "== Ready after $(( $(date +%s) - start )) s"
"$KUBECTL" -n "$NS" get valkeycluster,valkeynodes -o wide
"$KUBECTL" -n "$NS" get valkeycluster sample -o jsonpath='{range .status.conditions[*]}{.type}={.status} ({.reason}) {.message}{"\n"}{end}'
"$KUBECTL" -n "$NS" get valkeycluster sample -o jsonpath='{range .status.shards[*]}shard {.index}: primary {.primary}, replicas {.replicas}, slots {.slots}{"\n"}{end}'
cat <<MSG

Connect from inside the cluster (user bob has no password in the sample):
  $KUBECTL -n $NS run client --rm -it --image=docker.io/local/toolbox:dev --restart=Never -- \\
    valkey-cli -c -h sample --user bob --pass x cluster info
Remove it with: $KUBECTL delete namespace $NS
MSG
