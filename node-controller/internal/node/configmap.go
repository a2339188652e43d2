package node

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// Keys of the node's ConfigMap: valkey.conf, and the operator's defaults of newer
// versions (see VersionedDefaultsPath).
const (
	ConfigKey            = "valkey.conf"
	VersionedDefaultsKey = "versioned-defaults"
)

// serverConfig is what valkey.conf is rendered from for a node and a user config.
func serverConfig(vn *v1alpha1.ValkeyNode, user map[string]string) valkey.ServerConfig {
	s := vn.Spec
	c := valkey.ServerConfig{
		Port:              ClientPort,
		DataDir:           DataDir,
		ClusterConfigFile: ClusterConfigFile,
		// The pod does not know its version before it runs: the file holds what every
		// supported version takes, and includes what the start command writes for the
		// version it finds.
		VersionedDefaults: VersionedIncludePath,
		User:              user,
	}
	if s.ACLSecretName != "" {
		c.ACLFile = ACLPath
	}
	if s.SystemUsersSecretName != "" {
		c.PrimaryUser = v1alpha1.UserReplication
		c.PrimaryAuthInclude = PrimaryAuthPath
	}
	if s.TLSSecretName != "" {
		c.TLS = &valkey.TLSFiles{CertFile: TLSDir + "/tls.crt", KeyFile: TLSDir + "/tls.key", CAFile: TLSDir + "/ca.crt"}
	}
	return c
}

// memberVersion is the version the member's server reported (status.version, from its
// INFO), the oldest supported when it has not run yet: never the image tag.
func memberVersion(vn *v1alpha1.ValkeyNode) valkey.Version {
	return valkeyconf.MemberVersion(valkey.Version{}, vn.Status.Version)
}

// versionedDefaults is the file of the operator's defaults that only some versions take
// and the user's config does not set: "major.minor key value" lines.
func versionedDefaults(user map[string]string) string {
	var b strings.Builder
	for _, d := range valkeyconf.VersionedDefaults(user) {
		fmt.Fprintf(&b, "%d.%d %s %s\n", d.Since.Major, d.Since.Minor, d.Key, d.Value)
	}
	return b.String()
}

// renderConfig renders valkey.conf of a node for a user config.
func renderConfig(vn *v1alpha1.ValkeyNode, user map[string]string) []byte {
	return valkey.RenderConfig(serverConfig(vn, user))
}

// configHash identifies the part of a node's valkey.conf that only a restart changes:
// the rendering of the spec's config without its live keys.
func configHash(vn *v1alpha1.ValkeyNode) string {
	_, static := splitConfig(normaliseConfig(vn.Spec.Config), memberVersion(vn))
	return hashBytes(renderConfig(vn, static))
}

// normaliseConfig returns the keys RenderConfig would write, lower-cased. When two
// spellings of one key are present, the one rendered last (and so in effect) wins.
func normaliseConfig(in map[string]string) map[string]string {
	keys := make([]string, 0, len(in))
	for k := range in {
		if valkeyconf.ValidName(k) && !valkeyconf.Owned(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[strings.ToLower(k)] = in[k]
	}
	return out
}

// splitConfig splits a normalised config into the keys a server of version v changes
// live and the others.
func splitConfig(cfg map[string]string, v valkey.Version) (live, static map[string]string) {
	live, static = map[string]string{}, map[string]string{}
	for k, val := range cfg {
		if valkeyconf.Live(k, v) {
			live[k] = val
		} else {
			static[k] = val
		}
	}
	return live, static
}

// buildConfigMap is the node's ConfigMap for the user config applied (normalised).
func buildConfigMap(vn *v1alpha1.ValkeyNode, applied map[string]string) (*corev1.ConfigMap, error) {
	ann, err := json.Marshal(applied)
	if err != nil {
		return nil, fmt.Errorf("encode applied config: %w", err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        vn.Name,
			Namespace:   vn.Namespace,
			Labels:      podLabels(vn),
			Annotations: map[string]string{AnnotationConfig: string(ann)},
		},
		Data: map[string]string{ConfigKey: string(renderConfig(vn, applied)), VersionedDefaultsKey: versionedDefaults(applied)},
	}, nil
}

// appliedConfig reads the user config a ConfigMap was rendered from. ok is false when
// the annotation is missing or unreadable (a ConfigMap changed by hand).
func appliedConfig(cm *corev1.ConfigMap) (cfg map[string]string, ok bool) {
	raw, found := cm.Annotations[AnnotationConfig]
	if !found {
		return nil, false
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return nil, false
	}
	if cfg == nil {
		cfg = map[string]string{}
	}
	return cfg, true
}

// configMapMatches reports whether cm already holds what want holds and is controlled
// by the node.
func configMapMatches(cm, want *corev1.ConfigMap, vn *v1alpha1.ValkeyNode) bool {
	return cm.Data[ConfigKey] == want.Data[ConfigKey] && cm.Data[VersionedDefaultsKey] == want.Data[VersionedDefaultsKey] &&
		cm.Annotations[AnnotationConfig] == want.Annotations[AnnotationConfig] &&
		maps.Equal(cm.Labels, want.Labels) &&
		metav1.IsControlledBy(cm, vn)
}

// writeConfigMap creates the node's ConfigMap for applied, or updates the existing one
// (s.configMap) when it differs. It returns whether anything was written.
func (r *Reconciler) writeConfigMap(ctx context.Context, s *scope, applied map[string]string) (bool, error) {
	want, err := buildConfigMap(s.node, applied)
	if err != nil {
		return false, err
	}
	if err := controllerutil.SetControllerReference(s.node, want, r.Scheme); err != nil {
		return false, fmt.Errorf("own ConfigMap: %w", err)
	}
	if s.configMap == nil {
		if err := r.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("create ConfigMap %s: %w", want.Name, err)
		}
		s.configMap, s.applied = want, applied
		return true, nil
	}
	if configMapMatches(s.configMap, want, s.node) {
		s.applied = applied
		return false, nil
	}
	cm := s.configMap.DeepCopy()
	cm.Labels, cm.Data, cm.OwnerReferences = want.Labels, want.Data, want.OwnerReferences
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[AnnotationConfig] = want.Annotations[AnnotationConfig]
	if err := r.Update(ctx, cm); err != nil {
		return false, fmt.Errorf("update ConfigMap %s: %w", cm.Name, err)
	}
	s.configMap, s.applied = cm, applied
	return true, nil
}
