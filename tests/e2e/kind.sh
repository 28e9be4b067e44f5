#!/usr/bin/env bash
# The e2e suite against a real cluster: create a kind cluster, build and load the
# image, install muster from crds/ and deploy/, wait until its Deployments are
# Available (a scheduler replica leads, the default queue is Open, the controller
# made its peering object), scale them to 0, then run tests/e2e with
# MUSTER_E2E_KUBECONFIG. The cluster is deleted on exit.
#
#   tests/e2e/kind.sh [pytest args...]
#
# Environment: KIND_NODE_IMAGE (kindest/node image; kind's default if unset),
# KEEP_CLUSTER=1 (leave the cluster up for debugging; its kubeconfig is printed).
# Without docker (or without a running engine) or kind, it says so and exits 0.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

say() { printf 'kind.sh: %s\n' "$*" >&2; }

if ! command -v docker >/dev/null 2>&1; then
  say "skipped: docker is not installed"
  exit 0
fi
if ! docker info >/dev/null 2>&1; then
  say "skipped: docker cannot reach a container engine ('docker info' fails)"
  exit 0
fi
if ! command -v kind >/dev/null 2>&1; then
  say "skipped: kind is not installed (https://kind.sigs.k8s.io)"
  exit 0
fi
if ! command -v kubectl >/dev/null 2>&1; then
  say "skipped: kubectl is not installed"
  exit 0
fi

cluster="muster-e2e-$$"
image="muster:kind-e2e-$$"
work=$(mktemp -d)
kubeconfig="$work/kubeconfig"
k() { kubectl --kubeconfig "$kubeconfig" "$@"; }

cleanup() {
  status=$?
  if [[ "${KEEP_CLUSTER:-}" == 1 ]]; then
    say "KEEP_CLUSTER=1: cluster $cluster left up; kubeconfig $kubeconfig"
  else
    kind delete cluster --name "$cluster" >/dev/null 2>&1 || true
    docker image rm "$image" >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT INT TERM

diagnose() {
  say "muster did not come up; what the cluster says:"
  k -n muster-system get deployment,pods,lease -o wide || true
  k get clusterkopfpeering -o wide || true
  for component in scheduler controller; do
    k -n muster-system describe pods -l "app.kubernetes.io/component=$component" || true
    k -n muster-system logs -l "app.kubernetes.io/component=$component" --tail=50 --prefix \
      || true
  done
}

say "creating kind cluster $cluster"
kind create cluster --name "$cluster" --kubeconfig "$kubeconfig" --wait 120s \
  ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}

say "building $image"
docker build --tag "$image" .
kind load docker-image "$image" --name "$cluster"

say "installing crds/ on their own, then deploy/"
k apply -f crds/
k wait --for=condition=Established --timeout=60s \
  crd/podgroups.scheduling.volcano.sh crd/queues.scheduling.volcano.sh
# deploy/ names the published image; a copy of it names the local build instead.
# kustomize resolves ../../crds from deploy/base, so both directories are copied.
cp -R crds deploy "$work/"
cat >>"$work/deploy/kustomization.yaml" <<YAML
images:
- name: ghcr.io/muster-sched/muster
  newName: ${image%%:*}
  newTag: ${image#*:}
YAML
k apply -k "$work/deploy"

say "waiting for the scheduler Deployment to be Available"
if ! k -n muster-system rollout status deployment/muster-scheduler --timeout=180s \
  || ! k -n muster-system wait --for=condition=Available --timeout=60s \
    deployment/muster-scheduler; then
  diagnose
  exit 1
fi
# Readiness says the cache synced; a lease holder and the default queue say that the
# RBAC in deploy/ lets it elect a leader and write Queues.
for _ in $(seq 60); do
  holder=$(k -n muster-system get lease muster-scheduler \
    -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
  state=$(k get queue default -o jsonpath='{.status.state}' 2>/dev/null || true)
  [[ -n "$holder" && "$state" == Open ]] && break
  sleep 1
done
if [[ -z "$holder" || "$state" != Open ]]; then
  say "no leader (lease holder '${holder}') or default queue not Open (state '${state}')"
  diagnose
  exit 1
fi

# The controller: Available once a replica's webhook server listens; its peering object
# (made at start) says that the RBAC in deploy/ lets it.
say "waiting for the controller Deployment to be Available"
if ! k -n muster-system rollout status deployment/muster-controller --timeout=180s \
  || ! k -n muster-system wait --for=condition=Available --timeout=60s \
    deployment/muster-controller; then
  diagnose
  exit 1
fi
for _ in $(seq 60); do
  k get clusterkopfpeering muster-controller >/dev/null 2>&1 && break
  sleep 1
done
if ! k get clusterkopfpeering muster-controller >/dev/null 2>&1; then
  say "the controller made no ClusterKopfPeering muster-controller"
  diagnose
  exit 1
fi
say "muster is up: $holder leads; default queue Open; controller Available"

# The suite starts schedulers and controllers of its own for each test (the controller
# --standalone), under the same scheduler names: the installed ones would race them for
# the tests' pods (binds, PodGroups, queue states), so they stand down.
for component in scheduler controller; do
  k -n muster-system scale "deployment/muster-$component" --replicas=0
done
for _ in $(seq 90); do
  [[ -z "$(k -n muster-system get pods -l 'app.kubernetes.io/component in (scheduler,controller)' \
    -o name)" ]] && break
  sleep 1
done

if [[ ! -x .venv/bin/pytest ]]; then
  make venv
fi
say "running tests/e2e against $cluster"
MUSTER_E2E_KUBECONFIG="$kubeconfig" .venv/bin/pytest tests/e2e "$@"
