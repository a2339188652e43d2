{{/* Name prefix of every object: the release name, unless fullnameOverride is set. */}}
{{- define "valkey-operator.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of a component's objects: (list $ "cluster-controller"). */}}
{{- define "valkey-operator.componentName" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}
{{- printf "%s-%s" (include "valkey-operator.fullname" $root) $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of a component: (list $ "cluster-controller"). */}}
{{- define "valkey-operator.selectorLabels" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}
app.kubernetes.io/name: valkey-operator
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ $name }}
{{- end -}}

{{/* Labels of a component's objects. */}}
{{- define "valkey-operator.labels" -}}
{{- $root := index . 0 -}}
{{ include "valkey-operator.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
{{- end -}}

{{/* Image of a component: its own registry/repository/tag, else the shared default. (list $ .Values.clusterController) */}}
{{- define "valkey-operator.image" -}}
{{- $root := index . 0 -}}{{- $c := index . 1 -}}
{{- $img := $root.Values.image -}}
{{- $registry := default $img.registry $c.image.registry -}}
{{- $repository := default $img.repository $c.image.repository -}}
{{- $tag := default (default $root.Chart.AppVersion $img.tag) $c.image.tag -}}
{{- if $registry -}}{{ printf "%s/%s:%s" $registry $repository $tag }}{{- else -}}{{ printf "%s:%s" $repository $tag }}{{- end -}}
{{- end -}}

{{/* Namespace the webhook Service lives in. */}}
{{- define "valkey-operator.namespace" -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/* The Secret of the webhooks' serving certificate. */}}
{{- define "valkey-operator.webhooksCertSecret" -}}
{{- default (printf "%s-cert" (include "valkey-operator.componentName" (list . "webhooks"))) .Values.webhooks.certificates.secretName -}}
{{- end -}}
