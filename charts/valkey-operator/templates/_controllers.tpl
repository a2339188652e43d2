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

{{/*
A controller run alone: its Deployment, unless the controllers run combined. It runs
the manager binary with its name first (manager cluster-controller ...), which is that
controller alone with its own flags, Lease and name: every controller's pod runs the one
file, so a node holds that program's pages once however many of them it runs.
*/}}
{{- define "valkey-operator.controller" -}}
{{- $root := index . 0 -}}{{- $key := index . 1 -}}{{- $name := index . 2 -}}{{- $c := index $root.Values $key -}}
{{- if and $c.enabled (not $root.Values.controllers.combined) -}}
{{- $args := concat (include "valkey-operator.controllerArgs" (list $root $c) | fromJsonArray) (include "valkey-operator.ownArgs" (list $root $key) | fromJsonArray) -}}
{{ include "valkey-operator.component" (dict "root" $root "key" $key "name" $name "args" $args "command" (list "/usr/local/bin/manager" $name)) }}
{{- end -}}
{{- end -}}

{{/*
The controller toggles that can work: the cluster-, node- and acl-controllers form a
cluster together (the cluster-controller creates no member before the acl-controller
names its Secrets in status.acl, and the node-controller runs the members' pods), so
they are all on or all off; with all three off (a release of the CRDs and the webhooks
alone), the tls- and backup-controllers, which act on the clusters those form, are off
too. Renders nothing; fails naming the values otherwise.
*/}}
{{- define "valkey-operator.checkToggles" -}}
{{- $v := .Values -}}
{{- $core := list "clusterController" "nodeController" "aclController" -}}
{{- $on := list -}}{{- $off := list -}}
{{- range $core -}}
{{- if (index $v .).enabled -}}{{- $on = append $on . -}}{{- else -}}{{- $off = append $off . -}}{{- end -}}
{{- end -}}
{{- if and $on $off -}}
{{- fail (printf "%s.enabled=false while %s.enabled=true: clusterController, nodeController and aclController must be all enabled or all disabled, since a cluster forms only with the three (without the acl-controller every cluster waits for status.acl with reason WaitingForACL, without the node-controller no member gets a pod)" (join ".enabled=false, " $off) (join ".enabled=true, " $on)) -}}
{{- end -}}
{{- if not $on -}}
{{- range list "tlsController" "backupController" -}}
{{- if (index $v .).enabled -}}
{{- fail (printf "%s.enabled=true while clusterController, nodeController and aclController are disabled: it acts only on the clusters those three form; disable it too, or enable them" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
