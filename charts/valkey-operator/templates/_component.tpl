{{/*
One operator component: ServiceAccount, Deployment and metrics Service (its RBAC is
templates/rbac.yaml).
Call with (dict "root" $ "key" "clusterController" "name" "cluster-controller" "args" (list ...) "ports" (list ...) "volumes" ... );
"command" is the container's command, /usr/local/bin/<name> unless given.
*/}}
{{- define "valkey-operator.component" -}}
{{- $root := .root -}}{{- $c := index $root.Values .key -}}{{- $name := .name -}}
{{- $fullname := include "valkey-operator.componentName" (list $root $name) -}}
{{- if and (eq (toString $root.Values.policy.profile) "multiTenant") (not $root.Values.valkeyNetworkPolicy.enabled) -}}
{{- fail "policy.profile multiTenant keeps every cluster's NetworkPolicy: valkeyNetworkPolicy.enabled must be true" -}}
{{- end -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "valkey-operator.labels" (list $root $name) | nindent 4 }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "valkey-operator.labels" (list $root $name) | nindent 4 }}
spec:
  replicas: {{ $c.replicas }}
  selector:
    matchLabels:
      {{- include "valkey-operator.selectorLabels" (list $root $name) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "valkey-operator.labels" (list $root $name) | nindent 8 }}
      annotations:
        kubectl.kubernetes.io/default-container: manager
        {{- with $c.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ $fullname }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      terminationGracePeriodSeconds: 10
      containers:
        - name: manager
          image: {{ include "valkey-operator.image" (list $root $c) }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: {{ toJson (.command | default (list (printf "/usr/local/bin/%s" $name))) }}
          args:
            - --metrics-bind-address=:8080
            - --metrics-secure={{ $root.Values.metrics.secure }}
            - --health-probe-bind-address=:8081
            - --leader-elect={{ $c.leaderElection }}
            - --zap-log-level={{ $c.logLevel }}
            - --policy-profile={{ $root.Values.policy.profile | default "default" }}
            {{- with $root.Values.policy.externalAccess.allowedTypes }}
            - --external-access-types={{ join "," . }}
            {{- end }}
            {{- with $root.Values.policy.externalAccess.allowedAnnotations }}
            - --external-access-annotations={{ join "," . }}
            {{- end }}
            {{- with $root.Values.policy.externalAccess.allowedHostnameSuffixes }}
            - --external-access-hostname-suffixes={{ join "," . }}
            {{- end }}
            {{- if $root.Values.policy.refuseSidecars }}
            - --refuse-sidecars=true
            {{- end }}
            {{- with $root.Values.policy.allowedModules }}
            - --allowed-modules={{ join "," . }}
            {{- end }}
            {{- with $root.Values.policy.allowedConfigKeys }}
            - --allowed-config-keys={{ join "," . }}
            {{- end }}
            - --max-members-per-cluster={{ int $root.Values.policy.maxMembersPerCluster }}
            - --min-backup-interval={{ $root.Values.policy.minBackupInterval }}
            {{- with $root.Values.policy.objectStore.allowedEndpoints }}
            - --object-store-allowed-endpoints={{ join "," . }}
            {{- end }}
            {{- with $root.Values.policy.objectStore.kubernetesAPIAddresses }}
            - --kubernetes-api-addresses={{ join "," . }}
            {{- end }}
            {{- range .args }}
            - {{ . }}
            {{- end }}
            {{- range $c.extraArgs }}
            - {{ . }}
            {{- end }}
          env:
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            {{- with $c.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            - name: metrics
              containerPort: 8080
            - name: health
              containerPort: 8081
            {{- range .ports }}
            - name: {{ .name }}
              containerPort: {{ .port }}
            {{- end }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            periodSeconds: 10
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            periodSeconds: 2
          {{- with $c.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- with .volumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- with .volumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $c.affinity }}
      affinity:
        {{- toYaml $c.affinity | nindent 8 }}
      {{- else if gt (int $c.replicas) 1 }}
      {{- /* Several replicas: on different nodes where the cluster can, so one node lost leaves one. */}}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    {{- include "valkey-operator.selectorLabels" (list $root $name) | nindent 20 }}
      {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullname }}-metrics
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "valkey-operator.labels" (list $root $name) | nindent 4 }}
spec:
  selector:
    {{- include "valkey-operator.selectorLabels" (list $root $name) | nindent 4 }}
  ports:
    - name: metrics
      port: 8080
      targetPort: metrics
{{- end -}}

{{/* Arguments every controller (not the webhooks) takes. */}}
{{- define "valkey-operator.controllerArgs" -}}
{{- $root := index . 0 -}}{{- $c := index . 1 -}}
{{- $args := list (printf "--max-concurrent-reconciles=%d" (int $c.maxConcurrentReconciles)) -}}
{{- with $root.Values.watchNamespaces -}}
{{- $args = append $args (printf "--watch-namespaces=%s" (join "," .)) -}}
{{- end -}}
{{- toJson $args -}}
{{- end -}}
