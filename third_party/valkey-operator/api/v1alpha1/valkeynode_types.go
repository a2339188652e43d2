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

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// WorkloadType specifies the type of workload to create for the ValkeyNode.
// +kubebuilder:validation:Enum=StatefulSet;Deployment
type WorkloadType string

const (
	// WorkloadTypeStatefulSet creates a ValkeyNode that will be a StatefulSet.
	WorkloadTypeStatefulSet WorkloadType = "StatefulSet"
	// WorkloadTypeDeployment creates a ValkeyNode that will be a Deployment.
	WorkloadTypeDeployment WorkloadType = "Deployment"
)

// ValkeyNodeSpec defines the desired state of ValkeyNode.
// +kubebuilder:validation:XValidation:rule="!(has(self.persistence) && self.workloadType == 'Deployment')",message="persistence requires workloadType StatefulSet"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.persistence) || has(self.persistence)",message="persistence cannot be removed once set"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.persistence) || !has(self.persistence)",message="persistence cannot be added after creation"
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !has(oldSelf.persistence) || quantity(self.persistence.size).compareTo(quantity(oldSelf.persistence.size)) >= 0",message="persistence.size may only be expanded"
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !has(oldSelf.persistence) || ((!has(self.persistence.storageClassName) && !has(oldSelf.persistence.storageClassName)) || (has(self.persistence.storageClassName) && has(oldSelf.persistence.storageClassName) && self.persistence.storageClassName == oldSelf.persistence.storageClassName))",message="persistence.storageClassName is immutable"
type ValkeyNodeSpec struct {
	// Image is the Valkey container image to use.
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullSecrets is a list of references to Secrets used for pulling the pod's
	// images from private registries.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// WorkloadType specifies whether to create a StatefulSet or Deployment.
	// This field is immutable after creation.
	// +kubebuilder:default=StatefulSet
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadType is immutable"
	// +optional
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// Persistence defines durable storage for the ValkeyNode.
	// +optional
	Persistence *PersistenceSpec `json:"persistence,omitempty"`

	// Resources defines the resource requirements for the Valkey container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector defines the node selection constraints.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Affinity defines the pod affinity/anti-affinity rules.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations defines the pod tolerations.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PriorityClassName is the name of an existing PriorityClass applied to
	// the pod, protecting it from eviction under resource pressure.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// TopologySpreadConstraints defines pod topology spread constraints applied
	// to the ValkeyNode workload. The operator augments these constraints with
	// shard-aware selectors derived from node labels.
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// Exporter defines the metrics exporter sidecar configuration.
	// +optional
	Exporter ExporterSpec `json:"exporter,omitempty"`

	// ServerConfigMapName specifies the name of the ConfigMap that contains the
	// scripts, and Valkey config for the ValkeyNode.
	// +optional
	ServerConfigMapName string `json:"serverConfigMapName,omitempty"`

	// UsersACLSecretName is the name of the Secret containing the ACL user
	// file. When set, mounts a users-acl volume from this Secret so the
	// container can load aclfile /config/users/users.acl.
	// +optional
	UsersACLSecretName string `json:"usersACLSecretName,omitempty"`

	// Containers allows patching the default containers via a strategic merge
	// patch. Existing containers (e.g. "server", "metrics-exporter") are merged
	// by name; any container name not present in the defaults is appended.
	// +optional
	Containers []corev1.Container `json:"containers,omitempty"`

	// TLS configuration for the node
	// +optional
	TLS *NodeTLSSpec `json:"tls,omitempty"`

	// Config is the user-facing Valkey configuration, copied verbatim from the
	// owning cluster's Spec.Config. The controller applies the subset of these
	// keys that are live-settable (see the operator's allowlist) via CONFIG SET;
	// the rest take effect on the next pod roll.
	// +optional
	Config map[string]string `json:"config,omitempty"`

	// Override the PodSecurityContext applied to the ValkeyNode pod.
	// When set, this overrides the default PodSecurityContext.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// TerminationGracePeriodSeconds is the pod termination grace period, set by
	// the ValkeyCluster controller so the graceful CLUSTER FAILOVER on SIGTERM
	// can complete before SIGKILL.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// WorkloadRevision is a hash of the fully built pod template the ValkeyCluster
	// controller authorizes this node to apply. The ValkeyCluster controller sets
	// it (cluster-owned nodes only) when advancing a roll. The ValkeyNode
	// controller applies a rolling StatefulSet/Deployment template update only
	// when the template it builds hashes to this value. Standalone nodes ignore
	// the field and apply immediately.
	// +optional
	WorkloadRevision string `json:"workloadRevision,omitempty"`
}

// NodeTLSSpec is the node's own TLS API. It deliberately does not reuse the
// ValkeyCluster TLSSpec: the cluster API expresses user intent whereas this
// API is the resolved view the node controller renders into valkey.conf and
// volume mounts.
type NodeTLSSpec struct {
	// Certificates holds the certificate slots mounted into the node pod.
	// +kubebuilder:validation:Required
	Certificates NodeTLSCertificates `json:"certificates"`
}

// NodeTLSCertificates groups the certificate slots for a ValkeyNode.
type NodeTLSCertificates struct {
	// Server is the node identity presented to clients and peers, and the
	// trust root for the node. The referenced secret must contain `ca.crt`,
	// `tls.crt` and `tls.key`.
	// +kubebuilder:validation:Required
	Server NodeCertificateRef `json:"server"`
}

// NodeCertificateRef references a certificate and its private key held in a
// Secret. It is deliberately a ref and not a source: the cluster-level
// CertificateSource is a union that grows a cert-manager arm, whereas the
// ValkeyCluster controller resolves any such source to a Secret before writing
// the ValkeyNode, so this side only ever names something the node can mount.
type NodeCertificateRef struct {
	// SecretName is the name of the secret.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`
}

// ValkeyNodeStatus defines the observed state of ValkeyNode.
type ValkeyNodeStatus struct {
	// ObservedGeneration is the most recent generation observed by the controller.
	// It corresponds to the ValkeyNode's generation, which is updated on mutation
	// of the spec field.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Ready indicates whether the ValkeyNode is ready to serve traffic.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// PodName is the name of the pod created by the workload.
	// +optional
	PodName string `json:"podName,omitempty"`

	// PodIP is the IP address of the pod.
	// +optional
	PodIP string `json:"podIP,omitempty"`

	// Role is the Valkey replication role of this node (primary or replica).
	// +optional
	Role string `json:"role,omitempty"`

	// Conditions represent the current state of the ValkeyNode.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

const (
	// ValkeyNodeConditionReady indicates the ValkeyNode is ready.
	ValkeyNodeConditionReady = "Ready"
	// ValkeyNodeConditionPersistentVolumeClaimReady indicates the managed PVC is ready.
	ValkeyNodeConditionPersistentVolumeClaimReady = "PersistentVolumeClaimReady"
	// ValkeyNodeConditionPersistentVolumeClaimSizeReady indicates the managed PVC has satisfied the requested size.
	ValkeyNodeConditionPersistentVolumeClaimSizeReady = "PersistentVolumeClaimSizeReady"
	// ValkeyNodeConditionLiveConfigApplied indicates that the live-settable subset
	// of Spec.Config has been successfully applied via CONFIG SET. The cluster
	// controller blocks one-at-a-time progress until this condition is True.
	ValkeyNodeConditionLiveConfigApplied = "LiveConfigApplied"
	// ValkeyNodeConditionACLApplied indicates that the ACL the cluster controller
	// wrote to the mounted Secret is live on the server. It is applied via ACL
	// LOAD without a pod roll, so ACL never enters Spec.WorkloadRevision. True
	// means the desired user set, their password hashes, and the current ACL
	// revision are live, confirmed by a bookkeeping revision user whose password
	// is a hash of the managed ACL (see aclRevisionUser); permission-only
	// edits are therefore honoured too.
	ValkeyNodeConditionACLApplied = "ACLApplied"
	// ValkeyNodeConditionWorkloadRollPending indicates a rolling pod-template update
	// is intentionally deferred: the desired template differs from live, and
	// Spec.WorkloadRevision has not yet authorized that template. Status True means
	// waiting for the ValkeyCluster controller to advance Spec.WorkloadRevision
	// (one node at a time today). Expected staging, not an error.
	ValkeyNodeConditionWorkloadRollPending = "WorkloadRollPending"
)

const (
	// ValkeyNodeReasonPodRunning indicates the pod is running.
	ValkeyNodeReasonPodRunning = "PodRunning"
	// ValkeyNodeReasonPodNotReady indicates the pod is not ready.
	ValkeyNodeReasonPodNotReady = "PodNotReady"
	// ValkeyNodeReasonAwaitingWorkloadRevision indicates a pod-template change is
	// ready but blocked until Spec.WorkloadRevision matches the desired template hash.
	ValkeyNodeReasonAwaitingWorkloadRevision = "AwaitingWorkloadRevision"
	// ValkeyNodeReasonPersistentVolumeClaimPending indicates the managed PVC is not ready yet.
	ValkeyNodeReasonPersistentVolumeClaimPending = "PersistentVolumeClaimPending"
	// ValkeyNodeReasonPersistentVolumeClaimBound indicates the managed PVC is bound and ready to use.
	ValkeyNodeReasonPersistentVolumeClaimBound = "PersistentVolumeClaimBound"
	// ValkeyNodeReasonPersistentVolumeClaimSizeSatisfied indicates the PVC capacity matches the requested size.
	ValkeyNodeReasonPersistentVolumeClaimSizeSatisfied = "PersistentVolumeClaimSizeSatisfied"
	// ValkeyNodeReasonPersistentVolumeClaimResizePending indicates the PVC is waiting for filesystem or controller-side expansion to finish.
	ValkeyNodeReasonPersistentVolumeClaimResizePending = "PersistentVolumeClaimResizePending"
	// ValkeyNodeReasonPersistentVolumeClaimResizeInProgress indicates the PVC is actively expanding.
	ValkeyNodeReasonPersistentVolumeClaimResizeInProgress = "PersistentVolumeClaimResizeInProgress"
	// ValkeyNodeReasonPersistentVolumeClaimResizeInfeasible indicates the PVC resize cannot complete without operator action.
	ValkeyNodeReasonPersistentVolumeClaimResizeInfeasible = "PersistentVolumeClaimResizeInfeasible"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// ValkeyNode is the Schema for the valkeynodes API.
// ValkeyNode is an internal CRD. Users should not create ValkeyNodes directly.
// +kubebuilder:printcolumn:name="Ready",type="boolean",JSONPath=".status.ready",description="Whether the node is ready"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".status.role",description="Valkey replication role"
// +kubebuilder:printcolumn:name="Pod",type="string",JSONPath=".status.podName",description="Pod name"
// +kubebuilder:printcolumn:name="IP",type="string",JSONPath=".status.podIP",description="Pod IP",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type ValkeyNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// +required
	Spec ValkeyNodeSpec `json:"spec"`

	// +optional
	Status ValkeyNodeStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// ValkeyNodeList contains a list of ValkeyNode.
type ValkeyNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []ValkeyNode `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &ValkeyNode{}, &ValkeyNodeList{})
		return nil
	})
}
