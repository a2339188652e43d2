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
	"context"
	"crypto/sha256"
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	valkeyiov1alpha1 "github.com/valkey-io/valkey-operator/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	scriptsHashKey = "valkey.io/script-hash"
	configHashKey  = "valkey.io/config-hash"
	configFileKey  = "valkey.conf"

	readinessScriptKey = "readiness-check.sh"
	livenessScriptKey  = "liveness-check.sh"

	// Average-ish length of Valkey parameter + value
	averageParameterLength = 20
)

//go:embed scripts/*
var scripts embed.FS
var scriptsHash string

func GetServerConfigMapName(clusterName string) string {
	return resourcePrefix + clusterName
}

// buildManagedConfig returns the operator-managed directives shared by the
// cluster and standalone ValkeyNode config paths.
//
//nolint:goconst
func buildManagedConfig(includeACL bool, tls *valkeyiov1alpha1.NodeTLSSpec) map[string]string {
	config := map[string]string{}

	if includeACL {
		config["aclfile"] = "/config/users/users.acl"
	}

	// Always direct the working dir + cluster-node state file at /data so the
	// server can run with readOnlyRootFilesystem. The /data
	// volume is a PVC when spec.persistence is set, an emptyDir otherwise.
	config["dir"] = dataMountPath
	config["cluster-config-file"] = dataMountPath + "/nodes.conf"

	if tls != nil {
		config["tls-port"] = fmt.Sprintf("%d", DefaultPort)
		config["port"] = "0"
		config["tls-cluster"] = "yes"
		config["tls-replication"] = "yes"
		config["tls-cert-file"] = tlsCertMountPath + "/" + tlsSecretKeyCert
		config["tls-key-file"] = tlsCertMountPath + "/" + tlsSecretKeyKey
		config["tls-ca-cert-file"] = tlsCertMountPath + "/" + tlsSecretKeyCA
		config["tls-auth-clients"] = "optional" // allow clients to connect without client certificate
	}

	return config
}

func writeSortedConfig(builder *strings.Builder, config map[string]string) {
	for _, param := range slices.Sorted(maps.Keys(config)) {
		writeConfigLine(builder, param, config[param])
	}
}

func renderConfig(config map[string]string) string {
	var builder strings.Builder
	builder.Grow(len(config) * averageParameterLength)
	writeSortedConfig(&builder, config)
	return builder.String()
}

func generateValkeyNodeConfig(node *valkeyiov1alpha1.ValkeyNode) string {
	return renderConfig(buildManagedConfig(node.Spec.UsersACLSecretName != "", node.Spec.TLS))
}

// Return a base config of parameters that users shouldn't be able to override.
// Parent-agnostic: takes the TLS config directly so both the ValkeyCluster
// controller and the ValkeyNode pod-template builders render identical bytes.
//
//nolint:goconst
func getBaseConfig(tls *valkeyiov1alpha1.NodeTLSSpec) map[string]string {
	baseConfig := buildManagedConfig(true, tls)
	maps.Copy(baseConfig, map[string]string{
		"cluster-enabled":                 "yes",
		"protected-mode":                  "no",
		"cluster-node-timeout":            "2000",
		"cluster-allow-replica-migration": "no",
		"cluster-replica-validity-factor": "0",
		// On SIGTERM (graceful pod shutdown from a node drain, eviction, or
		// preemption), a cluster primary hands its slots off to a replica as
		// part of shutdown. This covers out-of-band descheduling that the
		// operator's own rolling failover never observes. Requires Valkey 9.0+.
		"shutdown-on-sigterm": "failover",
	})

	return baseConfig
}

// liveConfigAllowlist is the set of user-config keys the operator applies live
// via CONFIG SET. Keys outside this set roll the pod when changed.
var liveConfigAllowlist = map[string]struct{}{
	"maxmemory-policy": {},
	"maxmemory":        {},
	"maxclients":       {},
}

// liveConfigToApply returns the subset of config whose keys are live-settable.
// A nil config is safe: map lookup on a nil map returns the zero value.
func liveConfigToApply(config map[string]string) map[string]string {
	out := map[string]string{}
	for key := range liveConfigAllowlist {
		if value, ok := config[key]; ok {
			out[key] = value
		}
	}
	return out
}

// renderServerConfig renders the full valkey.conf from the given user and base
// config maps. User-provided config is written first and base config last, so
// users cannot override key base directives (Valkey uses the last value in the
// file). Any user keys in excludeUserKeys are omitted (used to compute the roll
// hash, which must ignore live-settable keys).
func renderServerConfig(userConfig, baseConfig map[string]string, excludeUserKeys map[string]struct{}) string {
	var configBuilder strings.Builder
	configBuilder.Grow((len(baseConfig) + len(userConfig)) * averageParameterLength)

	includedKeys := make([]string, 0, len(userConfig))
	for _, param := range slices.Sorted(maps.Keys(userConfig)) {
		if _, skip := excludeUserKeys[param]; skip {
			continue
		}
		includedKeys = append(includedKeys, param)
	}

	if len(includedKeys) > 0 {
		writeConfigLine(&configBuilder, "#", "User Config")
		for _, param := range includedKeys {
			writeConfigLine(&configBuilder, param, userConfig[param])
		}
	}

	writeConfigLine(&configBuilder, "#", "Base Config")
	writeSortedConfig(&configBuilder, baseConfig)

	return configBuilder.String()
}

// buildServerConfig renders the full config written to the shared ConfigMap.
func buildServerConfig(cluster *valkeyiov1alpha1.ValkeyCluster) string {
	return renderServerConfig(cluster.Spec.Config, getBaseConfig(nodeTLSFromCluster(cluster.GetTLS())), nil)
}

// nodeServerConfigRollHash derives the config roll hash from the node spec:
// the rendered server config minus live-settable keys. Parents copy Config and
// TLS verbatim onto the node spec, so this hash is byte-identical to the hash
// the ValkeyCluster controller computes from its own spec — a hard requirement,
// since a divergence would change every pod template on operator upgrade and
// roll every pod (see config_rollhash_test.go).
func nodeServerConfigRollHash(node *valkeyiov1alpha1.ValkeyNode) string {
	rendered := renderServerConfig(node.Spec.Config, getBaseConfig(node.Spec.TLS), liveConfigAllowlist)
	return fmt.Sprintf("%x", sha256.Sum256([]byte(rendered)))
}

// Create or update a default valkey.conf
// If additional config is provided, append to the default map
func (r *ValkeyClusterReconciler) upsertConfigMap(ctx context.Context, cluster *valkeyiov1alpha1.ValkeyCluster) error {

	log := logf.FromContext(ctx)

	// Embed readiness check script
	readiness, err := scripts.ReadFile("scripts/readiness-check.sh")
	if err != nil {
		return fmt.Errorf("reading embedded readiness-check.sh: %w", err)
	}

	// Embed liveness check script
	liveness, err := scripts.ReadFile("scripts/liveness-check.sh")
	if err != nil {
		return fmt.Errorf("reading embedded liveness-check.sh: %w", err)
	}

	// Get the new server config
	newServerConfig := buildServerConfig(cluster)

	// Calculate hash of constructed configMap contents (ie: updated scripts, changed/added parameters)
	newServerConfigHash := fmt.Sprintf("%x", sha256.Sum256([]byte(newServerConfig)))

	// Look for, and fetch existing configMap for this cluster
	serverConfigMapName := GetServerConfigMapName(cluster.Name)
	serverConfigMap := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{
		Name:      serverConfigMapName,
		Namespace: cluster.Namespace,
	}, serverConfigMap); err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "failed to fetch server configmap")
			return err
		}

		// ConfigMap not found; This happens on cluster init
		log.V(2).Info("creating server configMap", "name", serverConfigMapName)

		// Create configMap object with contents
		serverConfigMap.ObjectMeta = metav1.ObjectMeta{
			Name:      serverConfigMapName,
			Namespace: cluster.Namespace,
			Labels:    labels(cluster),
			Annotations: map[string]string{
				configHashKey:  newServerConfigHash,
				scriptsHashKey: scriptsHash,
			},
		}
		serverConfigMap.Data = map[string]string{
			readinessScriptKey: string(readiness),
			livenessScriptKey:  string(liveness),
			configFileKey:      newServerConfig,
		}

		// Register ownership of the configMap
		if err := controllerutil.SetControllerReference(cluster, serverConfigMap, r.Scheme); err != nil {
			log.Error(err, "Failed to grab ownership of server configMap")
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "ConfigMapCreationFailed", "UpsertConfigMap", "Failed to grab ownership of server configMap: %v", err)
			return err
		}

		// Create the configMap
		if err := r.Create(ctx, serverConfigMap); err != nil {
			log.Error(err, "Failed to create server configMap")
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "ConfigMapCreationFailed", "UpsertConfigMap", "Failed to create server configMap: %v", err)
			return err
		}

		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, "ConfigMapCreated", "UpsertConfigMap", "Created server configMap")
		return nil
	}

	// ConfigMap exists

	// Compare scripts hash in existing configMap to const value in operator; update scripts contents if different
	updatedScripts := upsertAnnotation(serverConfigMap, scriptsHashKey, scriptsHash)
	if updatedScripts {
		log.V(1).Info("updated readiness, and liveness scripts")
		serverConfigMap.Data[readinessScriptKey] = string(readiness)
		serverConfigMap.Data[livenessScriptKey] = string(liveness)
	}

	// Evaluate both upsertAnnotation calls unconditionally so the configHashKey
	// annotation is always updated when the config changes — even when updatedScripts
	// is true and would otherwise short-circuit the && below.
	updatedConfig := upsertAnnotation(serverConfigMap, configHashKey, newServerConfigHash)

	// If the generated config contents hash (from above) matches the hash of the current
	// config contents, and we did not update the scripts contents, exit early
	if !updatedScripts && !updatedConfig {
		log.V(1).Info("server config unchanged")
		return nil
	}

	// Update the configMap with the generated config contents
	serverConfigMap.Data[configFileKey] = newServerConfig

	// Update
	if err := r.Update(ctx, serverConfigMap); err != nil {
		log.Error(err, "Failed to update server configMap")
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "ConfigMapUpdateFailed", "UpsertConfigMap", "Failed to update server configMap: %v", err)
		return err
	}

	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, "ConfigMapUpdated", "UpsertConfigMap", "Synchronized server configMap")
	return nil
}

// Helper function to write a config line in the form of "parameter value\n" to a strings.Builder
func writeConfigLine(builder *strings.Builder, name, value string) {
	builder.WriteString(name)
	builder.WriteString(" ")
	builder.WriteString(value)
	builder.WriteString("\n")
}

// Calculate the hash of the embedded scripts once on operator init
// to avoid recalculating on each reconcile loop
func init() {

	// Read readiness script
	readiness, err := scripts.ReadFile("scripts/readiness-check.sh")
	if err != nil {
		panic("failure reading embedded readiness-check.sh")
	}

	// Read liveness check script
	liveness, err := scripts.ReadFile("scripts/liveness-check.sh")
	if err != nil {
		panic("failure reading embedded liveness-check.sh")
	}

	// Calculate hash of both files
	scriptsHash = fmt.Sprintf("%x", sha256.Sum256(append(readiness, liveness...)))
}
