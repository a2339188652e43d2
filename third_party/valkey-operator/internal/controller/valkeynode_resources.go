/*
Copyright 2025 Valkey Contributors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"encoding/json"
	"fmt"
	"strings"

	valkeyiov1alpha1 "github.com/valkey-io/valkey-operator/api/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// valkeyNodeResourceName returns the name used for resources
// owned by the given ValkeyNode.
func valkeyNodeResourceName(node *valkeyiov1alpha1.ValkeyNode) string {
	return resourcePrefix + node.Name
}

// valkeyNodeLabels returns the standard Kubernetes recommended labels for
// child resources of the given ValkeyNode.
func valkeyNodeLabels(node *valkeyiov1alpha1.ValkeyNode) map[string]string {
	l := baseLabels(node.Name, "valkey-node")
	for _, key := range []string{
		LabelCluster,
		LabelShardIndex,
		LabelNodeIndex,
	} {
		if v, ok := node.Labels[key]; ok {
			l[key] = v
		}
	}
	return l
}

// buildValkeyNodeConfigMap builds a ConfigMap containing the embedded liveness
// and readiness probe scripts, plus an empty valkey.conf.
// The ConfigMap is named via config.go:getConfigMapName(node).
func buildValkeyNodeConfigMap(node *valkeyiov1alpha1.ValkeyNode) (*corev1.ConfigMap, error) {
	liveness, err := scripts.ReadFile("scripts/liveness-check.sh")
	if err != nil {
		return nil, fmt.Errorf("reading embedded liveness-check.sh: %w", err)
	}
	readiness, err := scripts.ReadFile("scripts/readiness-check.sh")
	if err != nil {
		return nil, fmt.Errorf("reading embedded readiness-check.sh: %w", err)
	}

	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      GetServerConfigMapName(node.Name),
			Namespace: node.Namespace,
			Labels:    valkeyNodeLabels(node),
		},
		Data: map[string]string{
			"valkey.conf":        generateValkeyNodeConfig(node),
			"liveness-check.sh":  string(liveness),
			"readiness-check.sh": string(readiness),
		},
	}, nil
}

func valkeyNodePVCName(node *valkeyiov1alpha1.ValkeyNode) string {
	return valkeyNodeResourceName(node) + "-data"
}

func buildValkeyNodePVC(node *valkeyiov1alpha1.ValkeyNode) *corev1.PersistentVolumeClaim {
	if node.Spec.Persistence == nil {
		return nil
	}

	labels := valkeyNodeLabels(node)
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      valkeyNodePVCName(node),
			Namespace: node.Namespace,
			Labels:    labels,
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceStorage: node.Spec.Persistence.Size,
				},
			},
			StorageClassName: node.Spec.Persistence.StorageClassName,
		},
	}
}

// mergePatchContainers applies a strategic merge patch to base containers using
// patches as the patch source. Containers are matched by name; any patch
// container whose name matches a base container is merged into it, while patch
// containers with new names are appended in patch-list order.
func mergePatchContainers(base, patches []corev1.Container) ([]corev1.Container, error) {
	var output []corev1.Container

	patchByName := make(map[string]corev1.Container, len(patches))
	for _, c := range patches {
		patchByName[c.Name] = c
	}

	for _, c := range base {
		patch, ok := patchByName[c.Name]
		if !ok {
			output = append(output, c)
			continue
		}
		baseBytes, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("failed to marshal JSON for container %s: %w", c.Name, err)
		}
		patchBytes, err := json.Marshal(patch)
		if err != nil {
			return nil, fmt.Errorf("failed to marshal JSON for patch container %s: %w", c.Name, err)
		}
		merged, err := strategicpatch.StrategicMergePatch(baseBytes, patchBytes, corev1.Container{})
		if err != nil {
			return nil, fmt.Errorf("failed to generate merge patch for container %s: %w", c.Name, err)
		}
		var result corev1.Container
		if err := json.Unmarshal(merged, &result); err != nil {
			return nil, fmt.Errorf("failed to unmarshal merged container %s: %w", c.Name, err)
		}
		output = append(output, result)
		delete(patchByName, c.Name)
	}

	// Append any patch containers that did not match a base container, in
	// the original patch-list order.
	for _, c := range patches {
		if _, remaining := patchByName[c.Name]; remaining {
			output = append(output, c)
		}
	}

	return output, nil
}

// buildContainersDef builds the base containers definition for the ValkeyNode
// and applies any strategic merge patches from node.Spec.Containers.
func buildContainersDef(node *valkeyiov1alpha1.ValkeyNode) ([]corev1.Container, error) {
	image := DefaultImage
	if node.Spec.Image != "" {
		image = node.Spec.Image
	}

	containers := []corev1.Container{
		{
			Name:      "server",
			Image:     image,
			Resources: node.Spec.Resources,
			Command: []string{
				"valkey-server",
				"/config/valkey.conf",
				"--cluster-announce-ip",
				"$(POD_IP)",
				"--primaryuser",
				replicationUser,
				"--primaryauth",
				"$(PRIMARY_AUTH)",
			},
			Env: []corev1.EnvVar{
				{
					Name: "POD_IP",
					ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{
							FieldPath: "status.podIP",
						},
					},
				},
				{
					Name: "PRIMARY_AUTH",
					ValueFrom: &corev1.EnvVarSource{
						SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{
								Name: getSystemPasswordSecretName(node.Labels[LabelCluster]),
							},
							Key: replicationUser,
						},
					},
				},
			},
			Ports: []corev1.ContainerPort{
				{
					Name:          "client",
					ContainerPort: DefaultPort,
				},
				{
					Name:          "cluster-bus",
					ContainerPort: DefaultClusterBusPort,
				},
			},
			StartupProbe: &corev1.Probe{
				InitialDelaySeconds: 5,
				PeriodSeconds:       5,
				FailureThreshold:    20,
				TimeoutSeconds:      5,
				SuccessThreshold:    1,
				ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{
						Command: []string{
							shellPath,
							"-c",
							"/scripts/liveness-check.sh",
						},
					},
				},
			},
			LivenessProbe: &corev1.Probe{
				InitialDelaySeconds: 5,
				PeriodSeconds:       5,
				FailureThreshold:    5,
				TimeoutSeconds:      5,
				SuccessThreshold:    1,
				ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{
						Command: []string{
							shellPath,
							"-c",
							"/scripts/liveness-check.sh",
						},
					},
				},
			},
			ReadinessProbe: &corev1.Probe{
				InitialDelaySeconds: 5,
				PeriodSeconds:       5,
				FailureThreshold:    5,
				TimeoutSeconds:      2,
				SuccessThreshold:    1,
				ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{
						Command: []string{
							shellPath,
							"-c",
							"/scripts/readiness-check.sh",
						},
					},
				},
			},
			VolumeMounts: []corev1.VolumeMount{
				{
					Name:      "scripts",
					MountPath: "/scripts",
				},
				{
					Name:      "valkey-conf",
					MountPath: "/config",
					ReadOnly:  true,
				},
			},
		},
	}

	// /data is always mounted (PVC when persistence is set, emptyDir otherwise)
	// so the server can write nodes.conf under readOnlyRootFilesystem.
	containers[0].VolumeMounts = append(containers[0].VolumeMounts, corev1.VolumeMount{
		Name:      dataVolumeName,
		MountPath: dataMountPath,
	})

	if node.Spec.TLS != nil {
		containers[0].VolumeMounts = append(containers[0].VolumeMounts, corev1.VolumeMount{
			Name:      tlsVolumeName,
			MountPath: tlsCertMountPath,
			ReadOnly:  true,
		})
		containers[0].Env = append(containers[0].Env,
			corev1.EnvVar{Name: "VALKEY_TLS_ENABLED", Value: "true"},
			corev1.EnvVar{Name: "VALKEY_TLS_CA_FILE", Value: tlsCertMountPath + "/" + tlsSecretKeyCA},
			corev1.EnvVar{Name: "VALKEY_TLS_CERT_FILE", Value: tlsCertMountPath + "/" + tlsSecretKeyCert},
			corev1.EnvVar{Name: "VALKEY_TLS_KEY_FILE", Value: tlsCertMountPath + "/" + tlsSecretKeyKey},
			corev1.EnvVar{Name: "VALKEY_TLS_ARGS", Value: fmt.Sprintf("--tls --cacert %s --cert %s --key %s",
				tlsCertMountPath+"/"+tlsSecretKeyCA, tlsCertMountPath+"/"+tlsSecretKeyCert, tlsCertMountPath+"/"+tlsSecretKeyKey)},
		)
	}

	// Use operator-managed custom user for probes
	clusterName := node.Labels[LabelCluster]
	probeUserSecret := operatorUserPasswordSecret(clusterName)
	if probeUserSecret != nil && probeUserSecret.Name != "" {
		containers[0].Env = append(containers[0].Env,
			corev1.EnvVar{Name: "VALKEY_USER", Value: operatorUser},
			corev1.EnvVar{Name: "VALKEYCLI_AUTH", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: probeUserSecret}},
		)
	}

	// Add exporter sidecar if enabled.
	if node.Spec.Exporter.Enabled {
		containers = append(containers, generateMetricsExporterContainerDef(node.Spec.Exporter, node.Labels[LabelCluster], node.Spec.TLS))
	}

	merged, err := mergePatchContainers(containers, node.Spec.Containers)
	if err != nil {
		return nil, err
	}
	applyContainerAPIDefaults(merged)
	return merged, nil
}

// applyContainerAPIDefaults fills the container fields the API server would
// otherwise default (imagePullPolicy, terminationMessagePath/Policy, port
// protocol, env fieldRef apiVersion, probe period/timeout/thresholds/scheme). The workload
// reconcilers assign the whole desired spec in their CreateOrUpdate mutate
// functions, so a field left unset here is clobbered to its zero value on
// every pass and the operator updates the workload on every reconcile even
// though nothing changed (#315). Runs after mergePatchContainers so
// user-supplied container patches are normalized the same way the API server
// would normalize them.
func applyContainerAPIDefaults(containers []corev1.Container) {
	for i := range containers {
		c := &containers[i]
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = defaultImagePullPolicy(c.Image)
		}
		if c.TerminationMessagePath == "" {
			c.TerminationMessagePath = corev1.TerminationMessagePathDefault
		}
		if c.TerminationMessagePolicy == "" {
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		}
		for j := range c.Ports {
			if c.Ports[j].Protocol == "" {
				c.Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
		for j := range c.Env {
			if vf := c.Env[j].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
				vf.FieldRef.APIVersion = "v1"
			}
		}
		applyProbeAPIDefaults(c.LivenessProbe)
		applyProbeAPIDefaults(c.ReadinessProbe)
		applyProbeAPIDefaults(c.StartupProbe)
	}
}

func applyProbeAPIDefaults(probe *corev1.Probe) {
	if probe == nil {
		return
	}
	// Match API-server Probe defaults so user-supplied container patches that
	// omit these fields do not look like perpetual pod-template drift.
	if probe.TimeoutSeconds == 0 {
		probe.TimeoutSeconds = 1
	}
	if probe.PeriodSeconds == 0 {
		probe.PeriodSeconds = 10
	}
	if probe.SuccessThreshold == 0 {
		probe.SuccessThreshold = 1
	}
	if probe.FailureThreshold == 0 {
		probe.FailureThreshold = 3
	}
	if probe.HTTPGet != nil && probe.HTTPGet.Scheme == "" {
		probe.HTTPGet.Scheme = corev1.URISchemeHTTP
	}
}

// defaultImagePullPolicy mirrors the API server's imagePullPolicy defaulting
// (SetDefaults_Container + parsers.ParseImageName): the effective tag is the
// explicit tag when present — even alongside a digest — "latest" when the
// reference has neither tag nor digest, and empty for a digest-only reference.
// The policy is Always exactly when the effective tag is "latest",
// IfNotPresent otherwise.
func defaultImagePullPolicy(image string) corev1.PullPolicy {
	name := image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i] // strip the digest; an explicit tag before it still counts
	}
	tag := ""
	// ':' only introduces a tag after the last '/' (a registry port such as
	// "reg:5000/img" is not a tag).
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		tag = name[i+1:]
	}
	switch {
	case tag == "latest":
		return corev1.PullAlways
	case tag != "":
		return corev1.PullIfNotPresent
	case len(name) < len(image):
		// Digest-only reference (no tag): IfNotPresent.
		return corev1.PullIfNotPresent
	default:
		// No tag, no digest: the reference normalizes to :latest.
		return corev1.PullAlways
	}
}

// buildValkeyNodePodTemplateSpec constructs a PodTemplateSpec for a single
// Valkey node.
func buildValkeyNodePodTemplateSpec(node *valkeyiov1alpha1.ValkeyNode, labels map[string]string) (corev1.PodTemplateSpec, error) {
	containers, err := buildContainersDef(node)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}

	// Use the explicitly provided ConfigMap name, or fall back to the default
	// resource name (which the controller creates automatically).
	configMapName := node.Spec.ServerConfigMapName
	if configMapName == "" {
		configMapName = GetServerConfigMapName(node.Name)
	}

	podSpec := corev1.PodSpec{
		Containers:                    containers,
		ImagePullSecrets:              node.Spec.ImagePullSecrets,
		NodeSelector:                  node.Spec.NodeSelector,
		Affinity:                      node.Spec.Affinity,
		Tolerations:                   node.Spec.Tolerations,
		PriorityClassName:             node.Spec.PriorityClassName,
		TopologySpreadConstraints:     node.Spec.TopologySpreadConstraints,
		SecurityContext:               node.Spec.PodSecurityContext,
		TerminationGracePeriodSeconds: node.Spec.TerminationGracePeriodSeconds,
		// Fields below are set to the API server's defaults. The workload
		// reconcilers assign the whole desired spec in their CreateOrUpdate
		// mutate functions, so any field left unset here gets clobbered back
		// to its zero value on every pass, the API server re-defaults it, and
		// the operator issues an Update on every reconcile even though nothing
		// changed (#315).
		RestartPolicy: corev1.RestartPolicyAlways,
		DNSPolicy:     corev1.DNSClusterFirst,
		SchedulerName: corev1.DefaultSchedulerName,
		Volumes: []corev1.Volume{
			{
				Name: "scripts",
				VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{
							Name: configMapName,
						},
						DefaultMode: func(i int32) *int32 { return &i }(0755),
					},
				},
			},
			{
				Name: "valkey-conf",
				VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{
							Name: configMapName,
						},
					},
				},
			},
		},
	}

	if node.Spec.UsersACLSecretName != "" {
		podSpec.Volumes = append(podSpec.Volumes, corev1.Volume{
			Name: "users-acl",
			VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{
					SecretName: node.Spec.UsersACLSecretName,
				},
			},
		})
		// Containers[0] is always the server container (exporter is appended after it).
		podSpec.Containers[0].VolumeMounts = append(podSpec.Containers[0].VolumeMounts, corev1.VolumeMount{
			Name:      "users-acl",
			MountPath: "/config/users",
			ReadOnly:  true,
		})
	}

	if node.Spec.TLS != nil {
		podSpec.Volumes = append(podSpec.Volumes, corev1.Volume{
			Name: tlsVolumeName,
			VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{
					SecretName: node.Spec.TLS.Certificates.Server.SecretName,
				},
			},
		})
	}

	// Back /data with a PVC when persistence is set; otherwise an emptyDir so
	// the cluster works on readOnlyRootFilesystem.
	dataVolume := corev1.Volume{Name: dataVolumeName}
	if node.Spec.Persistence != nil {
		dataVolume.VolumeSource = corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: valkeyNodePVCName(node),
			},
		}
	} else {
		dataVolume.VolumeSource = corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{},
		}
	}
	podSpec.Volumes = append(podSpec.Volumes, dataVolume)

	// Mirror the remaining API-server defaults (see the comment on the struct
	// literal above): a nil here is not "unset" once stored, it is a diff.
	if podSpec.SecurityContext == nil {
		podSpec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if podSpec.TerminationGracePeriodSeconds == nil {
		podSpec.TerminationGracePeriodSeconds = func(i int64) *int64 { return &i }(corev1.DefaultTerminationGracePeriodSeconds)
	}
	for i := range podSpec.Volumes {
		if cm := podSpec.Volumes[i].ConfigMap; cm != nil && cm.DefaultMode == nil {
			cm.DefaultMode = func(i int32) *int32 { return &i }(corev1.ConfigMapVolumeSourceDefaultMode)
		}
		if sec := podSpec.Volumes[i].Secret; sec != nil && sec.DefaultMode == nil {
			sec.DefaultMode = func(i int32) *int32 { return &i }(corev1.SecretVolumeSourceDefaultMode)
		}
	}

	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: labels,
		},
		Spec: podSpec,
	}, nil
}

// buildValkeyNodeDeployment constructs a single-replica Deployment for a
// ValkeyNode. This is used when node.Spec.WorkloadType is Deployment.
func buildValkeyNodeDeployment(node *valkeyiov1alpha1.ValkeyNode) (*appsv1.Deployment, error) {
	labels := valkeyNodeLabels(node)
	tmpl, err := buildValkeyNodePodTemplateSpec(node, labels)
	if err != nil {
		return nil, err
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      valkeyNodeResourceName(node),
			Namespace: node.Namespace,
			Labels:    labels,
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: func(i int32) *int32 { return &i }(1),
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RecreateDeploymentStrategyType,
			},
			Selector: &metav1.LabelSelector{
				MatchLabels: labels,
			},
			Template: tmpl,
			// API-server defaults, set explicitly so the desired spec equals
			// the stored one and ensureDeployment's wholesale spec assignment
			// stops producing an Update on every reconcile (#315).
			RevisionHistoryLimit:    func(i int32) *int32 { return &i }(10),
			ProgressDeadlineSeconds: func(i int32) *int32 { return &i }(600),
		},
	}, nil
}

// buildValkeyNodeStatefulSet constructs a single-replica StatefulSet for a
// ValkeyNode. This is used when node.Spec.WorkloadType is StatefulSet (the
// default).
func buildValkeyNodeStatefulSet(node *valkeyiov1alpha1.ValkeyNode) (*appsv1.StatefulSet, error) {
	labels := valkeyNodeLabels(node)
	tmpl, err := buildValkeyNodePodTemplateSpec(node, labels)
	if err != nil {
		return nil, err
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      valkeyNodeResourceName(node),
			Namespace: node.Namespace,
			Labels:    labels,
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    func(i int32) *int32 { return &i }(1),
			ServiceName: valkeyNodeResourceName(node),
			Selector: &metav1.LabelSelector{
				MatchLabels: labels,
			},
			Template: tmpl,
			// API-server defaults, set explicitly so the desired spec equals
			// the stored one and ensureStatefulSet's wholesale spec assignment
			// stops producing an Update on every reconcile (#315).
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
					Partition: func(i int32) *int32 { return &i }(0),
				},
			},
			RevisionHistoryLimit: func(i int32) *int32 { return &i }(10),
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}, nil
}
