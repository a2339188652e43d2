//go:build e2e

package rbacaudit

// Reasons of the reviewed allowances.
const (
	ownerFinalizers  = "checked by the OwnerReferencesPermissionEnforcement admission plugin (on in the local Kubernetes, as on OpenShift) when the component creates an object it owns with blockOwnerDeletion: an admission check, which no audit event shows; the suites fail without it"
	backupOnly       = "only the backup suite (make e2e, not make test) takes backups and restores"
	networkPolicyOff = "spec.networkPolicy.enabled: false deletes the cluster's NetworkPolicy (cluster-controller integration suite)"
	pdbRemoved       = "a PodDisruptionBudget no longer wanted is deleted: spec.podDisruptionBudget changed between cluster and shard, or off"
	podReplaced      = "a member whose pod runs an old revision and cannot be rolled otherwise (a bare-pod member) gets its pod deleted and created anew"
	claimOwner       = "spec.persistence.reclaimPolicy changed, or a claim grown: the node-controller patches the claim (node-controller integration suite)"
	classDefault     = "a Pending claim without a class: the StorageClasses are listed to find the default one and say why (node-controller integration suite)"
	certRenewed      = "the webhooks' self-signed certificate is renewed in place before it expires (webhooks integration suite)"
	applyCreates     = "the cluster-controller writes these with server-side apply: an apply that creates the object is also authorized as create, a check made inside the request that the audit log records as patch (the suites fail without it)"
	secretOwner      = "checked by the OwnerReferencesPermissionEnforcement admission plugin when the tls-controller gives the Secret cert-manager wrote for a cluster an owner reference to it (spec.tls.certManager, certmanager suite, make e2e): an admission check, which no audit event shows; the suite fails without it"
	externalOnly     = "spec.externalAccess: a NodePort member's node read by name, a gone member's Service deleted (external suite, make e2e)"
	rotationRead     = "a pass during a rotation of the system users' passwords reads the cluster from the API server, not the cache (acl suite)"
	copyAhead        = "a pass that finds the certificate copy newer than the cached status.tls reads the cluster from the API server: only when the cache lags or a status write failed"
	certManagerOnly  = "spec.tls.certManager: the tls-controller keeps the cluster's cert-manager Certificates and Issuers and gives the Secrets cert-manager writes an owner reference (the tls-controller integration suite with cert-manager's CRDs; the certmanager e2e suite with a real cert-manager)"
)

// reviewed are the permissions the RBAC check found unused in make e2e-ci (2026-12-02),
// each kept for the path that needs it; the others were removed from the markers.
var reviewed = []allowance{
	{component: "acl-controller", key: "valkey.io/valkeyclusters/finalizers update", reason: ownerFinalizers},
	{component: "tls-controller", key: "valkey.io/valkeyclusters/finalizers update", reason: ownerFinalizers},
	{component: "cluster-controller", key: "valkey.io/valkeyclusters/finalizers update", reason: ownerFinalizers},
	{component: "node-controller", key: "valkey.io/valkeynodes/finalizers update", reason: ownerFinalizers},
	{component: "backup-controller", key: "valkey.io/valkeybackups/finalizers update", reason: ownerFinalizers},
	{component: "backup-controller", key: "valkey.io/valkeyclusters/finalizers update", reason: ownerFinalizers},

	{component: "cluster-controller", key: "core/services create", reason: applyCreates},
	{component: "cluster-controller", key: "policy/poddisruptionbudgets create", reason: applyCreates},
	{component: "cluster-controller", key: "networking.k8s.io/networkpolicies create", reason: applyCreates},
	{component: "cluster-controller", key: "networking.k8s.io/networkpolicies delete", reason: networkPolicyOff},
	{component: "cluster-controller", key: "policy/poddisruptionbudgets delete", reason: pdbRemoved},
	{component: "node-controller", key: "core/pods delete", reason: podReplaced},
	{component: "node-controller", key: "core/persistentvolumeclaims patch", reason: claimOwner},
	{component: "node-controller", key: "storage.k8s.io/storageclasses list", reason: classDefault},
	{component: "webhooks", key: "core/secrets update (Role)", reason: certRenewed},
	{component: "cluster-controller", key: "core/nodes get", suites: []string{"external"}, reason: externalOnly},
	{component: "acl-controller", key: "valkey.io/valkeyclusters get", suites: []string{"acl"}, reason: rotationRead},
	{component: "tls-controller", key: "valkey.io/valkeyclusters get", reason: copyAhead},
	{component: "tls-controller", key: "core/secrets delete", reason: secretOwner},
	{component: "cluster-controller", key: "core/services delete", suites: []string{"external"}, reason: externalOnly},
	{component: "tls-controller", key: "core/secrets patch", suites: []string{"certmanager"}, reason: certManagerOnly},

	{component: "backup-controller", key: "batch/jobs create", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "batch/jobs delete", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "core/configmaps create", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "batch/jobs get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "core/namespaces get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "core/pods get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "core/pods list", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "core/secrets get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "events.k8s.io/events create", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackups create", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackups delete", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackups get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackups patch", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackups update", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackups/status get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackups/status patch", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackupschedules get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackupschedules/status get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeybackupschedules/status patch", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeyclusters get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeyclusters/status get", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeyclusters/status patch", suites: []string{"backup"}, reason: backupOnly},
	{component: "backup-controller", key: "valkey.io/valkeynodes get", suites: []string{"backup"}, reason: backupOnly},

	{component: "tls-controller", key: "cert-manager.io/certificates create", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/certificates delete", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/certificates get", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/certificates list", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/certificates update", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/certificates watch", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/issuers create", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/issuers delete", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/issuers get", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/issuers list", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/issuers update", suites: []string{"certmanager"}, reason: certManagerOnly},
	{component: "tls-controller", key: "cert-manager.io/issuers watch", suites: []string{"certmanager"}, reason: certManagerOnly},
}
