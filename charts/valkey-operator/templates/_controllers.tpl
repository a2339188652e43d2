{{/*
The controllers (every component but the webhooks): values key -> binary name. With
controllers.combined they run in one Deployment (templates/manager.yaml) instead of one
each; their RBAC is then bound to that Deployment's ServiceAccount.
*/}}
{{- define "valkey-operator.controllerKeys" -}}
{{- toJson (dict "clusterController" "cluster-controller" "nodeController" "node-controller" "aclController" "acl-controller" "tlsController" "tls-controller" "backupController" "backup-controller") -}}
{{- end -}}

{{/* The service account that runs a component: its own, or the manager's when combined. */}}
{{- define "valkey-operator.runAs" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}
{{- if and $root.Values.controllers.combined (ne $name "webhooks") -}}
{{- include "valkey-operator.componentName" (list $root "manager") -}}
{{- else -}}
{{- include "valkey-operator.componentName" (list $root $name) -}}
{{- end -}}
{{- end -}}

{{/*
A controller's own flags (beyond valkey-operator.controllerArgs), as a JSON list.
Call with (list $ "clusterController").
*/}}
{{- define "valkey-operator.ownArgs" -}}
{{- $root := index . 0 -}}{{- $key := index . 1 -}}{{- $c := index $root.Values $key -}}
{{- $args := list -}}
{{- if eq $key "clusterController" -}}
{{- $np := $root.Values.valkeyNetworkPolicy -}}
{{- $args = append $args (printf "--network-policy-default=%t" $np.enabled) -}}
{{- with $np.metrics -}}
{{- $args = append $args (printf "--network-policy-metrics=%s" (toJson .)) -}}
{{- end -}}
{{- $args = append $args (printf "--fast-failover=%t" (ne $c.fastFailover false)) -}}
{{- else if eq $key "backupController" -}}
{{- /* The backup and restore Jobs run the operator image (its backup-controller binary has the Jobs' subcommands). */ -}}
{{- $img := ternary $root.Values.controllers $c $root.Values.controllers.combined -}}
{{- $args = append $args (printf "--job-image=%s" (include "valkey-operator.image" (list $root $img))) -}}
{{- $args = append $args (printf "--job-deadline=%s" $c.jobDeadline) -}}
{{- end -}}
{{- toJson $args -}}
{{- end -}}

{{/* A controller run alone: its Deployment, unless the controllers run combined. */}}
{{- define "valkey-operator.controller" -}}
{{- $root := index . 0 -}}{{- $key := index . 1 -}}{{- $name := index . 2 -}}{{- $c := index $root.Values $key -}}
{{- if and $c.enabled (not $root.Values.controllers.combined) -}}
{{- $args := concat (include "valkey-operator.controllerArgs" (list $root $c) | fromJsonArray) (include "valkey-operator.ownArgs" (list $root $key) | fromJsonArray) -}}
{{ include "valkey-operator.component" (dict "root" $root "key" $key "name" $name "args" $args) }}
{{- end -}}
{{- end -}}
