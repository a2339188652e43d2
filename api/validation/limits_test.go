package validation

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// n strings of the given length.
func strs(n, length int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%0*d", length, i)
	}
	return out
}

// configOf is a config of n valid entries.
func configOf(n int) v1alpha1.Config {
	c := v1alpha1.Config{}
	for i := range n {
		c[fmt.Sprintf("notify-key-%d", i)] = "x"
	}
	return c
}

// madeUpKeys admits the made-up keys of configOf (the administrator's escape hatch for
// keys no supported Valkey has), so that the size limits alone decide.
var madeUpKeys = &Policy{AllowedConfigKeys: slices.Collect(maps.Keys(configOf(MaxConfigEntries + 1)))}

// aUser is a valid user whose lists hold n entries of the given length.
func aUser(name string, n, length int) v1alpha1.UserSpec {
	entries := strs(n, length)
	for i := range entries {
		entries[i] = "k" + entries[i][1:]
	}
	return v1alpha1.UserSpec{Name: name, NoPass: true,
		Commands: &v1alpha1.CommandsSpec{Allow: []string{"@read"}},
		Keys:     &v1alpha1.KeysSpec{ReadWrite: entries}}
}

func users(n int) []v1alpha1.UserSpec {
	out := make([]v1alpha1.UserSpec, n)
	for i := range out {
		out[i] = v1alpha1.UserSpec{Name: fmt.Sprintf("user%d", i), NoPass: true}
	}
	return out
}

func peers(n int) []networkingv1.NetworkPolicyPeer {
	out := make([]networkingv1.NetworkPolicyPeer, n)
	for i := range out {
		out[i] = networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: fmt.Sprintf("10.%d.0.0/16", i)}}
	}
	return out
}

// Every limit admits its value and refuses one more, naming the field and the limit in
// the API server's words.
func TestSizeLimits(t *testing.T) {
	sched := func(f func(s *v1alpha1.SchedulingSpec)) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Scheduling = &v1alpha1.SchedulingSpec{}
			f(c.Spec.Scheduling)
		}
	}
	ext := func(f func(e *v1alpha1.ExternalAccessSpec)) func(c *v1alpha1.ValkeyCluster) {
		return func(c *v1alpha1.ValkeyCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer}
			f(c.Spec.ExternalAccess)
		}
	}
	tolerations := func(n int) []corev1.Toleration {
		return make([]corev1.Toleration, n)
	}
	runClusterCases(t, []clusterCase{
		{name: "image at the limit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "r/" + strings.Repeat("a", MaxImageLength-2) }},
		{name: "image too long", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Image = "r/" + strings.Repeat("a", MaxImageLength-1) },
			want: []string{"spec.image: Too long: may not be more than 512 characters"}},
		{name: "exporter image too long", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Exporter.Image = strings.Repeat("a", 513) },
			want: []string{"spec.exporter.image: Too long: may not be more than 512 characters"}},
		{name: "pull secrets at the limit", mutate: func(c *v1alpha1.ValkeyCluster) {
			for i := range MaxImagePullSecrets {
				c.Spec.ImagePullSecrets = append(c.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: fmt.Sprintf("s%d", i)})
			}
		}},
		{name: "too many pull secrets", mutate: func(c *v1alpha1.ValkeyCluster) {
			for i := range MaxImagePullSecrets + 1 {
				c.Spec.ImagePullSecrets = append(c.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: fmt.Sprintf("s%d", i)})
			}
		}, want: []string{"spec.imagePullSecrets: Too many: 17: must have at most 16 items"}},
		{name: "config at the limit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = configOf(MaxConfigEntries) }, policy: madeUpKeys},
		{name: "too many config entries", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Config = configOf(MaxConfigEntries + 1) },
			want: []string{"spec.config: Too many: 201: must have at most 200 items"}},
		{name: "config value at the limit", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Config = v1alpha1.Config{"notify-keyspace-events": strings.Repeat("K", MaxConfigValueLength)}
		}},
		{name: "config value too long", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Config = v1alpha1.Config{"notify-keyspace-events": strings.Repeat("K", MaxConfigValueLength+1)}
		}, want: []string{"spec.config[notify-keyspace-events]: Too long: may not be more than 4096 characters"}},
		{name: "config key too long", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Config = v1alpha1.Config{strings.Repeat("k", MaxConfigKeyLength+1): "1"}
		}, want: []string{"spec.config: Too long: a key of 129 characters; a key may have at most 128"}},
		{name: "config too big together", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Config = v1alpha1.Config{}
			for i := range 17 {
				c.Spec.Config[fmt.Sprintf("notify-key-%d", i)] = strings.Repeat("K", MaxConfigValueLength)
			}
		}, want: []string{"spec.config: Too long: ", "bytes of keys and values, more than the 65536 bytes allowed"}},
		{name: "containers at the limit", mutate: func(c *v1alpha1.ValkeyCluster) {
			for i := range MaxContainers {
				c.Spec.Containers = append(c.Spec.Containers, corev1.Container{Name: fmt.Sprintf("side%d", i), Image: "busybox"})
			}
		}},
		{name: "too many containers", mutate: func(c *v1alpha1.ValkeyCluster) {
			for i := range MaxContainers + 1 {
				c.Spec.Containers = append(c.Spec.Containers, corev1.Container{Name: fmt.Sprintf("side%d", i), Image: "busybox"})
			}
		}, want: []string{"spec.containers: Too many: 9: must have at most 8 items"}},
		{name: "container patches too big", mutate: func(c *v1alpha1.ValkeyCluster) {
			env := make([]corev1.EnvVar, 100)
			for i := range env {
				env[i] = corev1.EnvVar{Name: fmt.Sprintf("V%d", i), Value: strings.Repeat("v", 1000)}
			}
			c.Spec.Containers = []corev1.Container{{Name: "server", Env: env}}
		}, want: []string{"spec.containers: Too long: ", "bytes of JSON, more than the 65536 bytes allowed"}},
		{name: "too many tolerations", mutate: sched(func(s *v1alpha1.SchedulingSpec) { s.Tolerations = tolerations(MaxTolerations + 1) }),
			want: []string{"spec.scheduling.tolerations: Too many: 65: must have at most 64 items"}},
		{name: "tolerations at the limit", mutate: sched(func(s *v1alpha1.SchedulingSpec) { s.Tolerations = tolerations(MaxTolerations) })},
		{name: "too many node selector labels", mutate: sched(func(s *v1alpha1.SchedulingSpec) {
			s.NodeSelector = map[string]string{}
			for i := range MaxNodeSelector + 1 {
				s.NodeSelector[fmt.Sprintf("l%d", i)] = "v"
			}
		}), want: []string{"spec.scheduling.nodeSelector: Too many: 65: must have at most 64 items"}},
		{name: "too many spread constraints", mutate: sched(func(s *v1alpha1.SchedulingSpec) {
			for range MaxSpreadConstraints + 1 {
				s.TopologySpreadConstraints = append(s.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
					MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway})
			}
		}), want: []string{"spec.scheduling.topologySpreadConstraints: Too many: 17: must have at most 16 items"}},
		{name: "affinity too big", mutate: sched(func(s *v1alpha1.SchedulingSpec) {
			var terms []corev1.NodeSelectorTerm
			for range 100 {
				terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: strs(20, 20)}}})
			}
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}), want: []string{"spec.scheduling.affinity: Too long: ", "more than the 32768 bytes allowed"}},
		{name: "priority class name too long", mutate: sched(func(s *v1alpha1.SchedulingSpec) { s.PriorityClassName = strings.Repeat("a", 254) }),
			want: []string{"spec.scheduling.priorityClassName: Too long: may not be more than 253 characters"}},
		{name: "users at the limit", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Users = users(MaxUsers) }},
		{name: "too many users", mutate: func(c *v1alpha1.ValkeyCluster) { c.Spec.Users = users(MaxUsers + 1) },
			want: []string{"spec.users: Too many: 101: must have at most 100 items"}},
		{name: "user lists at the limit", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Users = []v1alpha1.UserSpec{aUser("app", MaxUserListEntries, 8)}
		}},
		{name: "too many key patterns", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Users = []v1alpha1.UserSpec{aUser("app", MaxUserListEntries+1, 8)}
		}, want: []string{"spec.users[0].keys.readWrite: Too many: 257: must have at most 256 items"}},
		{name: "key pattern too long", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Users = []v1alpha1.UserSpec{aUser("app", 1, MaxUserEntryLength+1)}
		}, want: []string{"spec.users[0].keys.readWrite[0]: Too long: may not be more than 1024 characters"}},
		{name: "too many denied commands", mutate: withUser(func(u *v1alpha1.UserSpec) {
			u.Commands = &v1alpha1.CommandsSpec{Deny: make([]string, MaxUserListEntries+1)}
			for i := range u.Commands.Deny {
				u.Commands.Deny[i] = "get"
			}
		}), want: []string{"spec.users[0].commands.deny: Too many: 257: must have at most 256 items"}},
		{name: "too many channel patterns", mutate: withUser(func(u *v1alpha1.UserSpec) {
			u.Channels = &v1alpha1.ChannelsSpec{Patterns: strs(MaxUserListEntries+1, 4)}
		}), want: []string{"spec.users[0].channels.patterns: Too many: 257"}},
		{name: "too many password keys", mutate: withUser(func(u *v1alpha1.UserSpec) {
			u.PasswordSecret.Keys = strs(MaxPasswordKeys+1, 3)
		}), want: []string{"spec.users[0].passwordSecret.keys: Too many: 17: must have at most 16 items"}},
		{name: "permissions too long", mutate: withUser(func(u *v1alpha1.UserSpec) { u.Permissions = strings.Repeat("+get ", 820) }),
			want: []string{"spec.users[0].permissions: Too long: may not be more than 4096 characters"}},
		{name: "user name too long", mutate: withUser(func(u *v1alpha1.UserSpec) { u.Name = strings.Repeat("u", MaxUserNameLength+1) }),
			want: []string{"spec.users[0].name: Too long: may not be more than 128 characters"}},
		{name: "users too big together", mutate: func(c *v1alpha1.ValkeyCluster) {
			for i := range 30 {
				c.Spec.Users = append(c.Spec.Users, aUser(fmt.Sprintf("app%d", i), 100, 20))
			}
		}, want: []string{"spec.users: Too long: ", "bytes of aclfile lines (names, password hashes, key and channel patterns, " +
			"commands, permissions), more than the 65536 bytes allowed"}},
		{name: "100 users of a password and 20 patterns each", mutate: func(c *v1alpha1.ValkeyCluster) {
			for i := range MaxUsers {
				u := aUser(fmt.Sprintf("app%d", i), 20, 20)
				u.NoPass, u.PasswordSecret = false, &v1alpha1.PasswordSecretRef{Name: "pw", Keys: []string{"p"}}
				c.Spec.Users = append(c.Spec.Users, u)
			}
		}},
		{name: "clear-text passwords in permissions count as their hashes", mutate: withUser(func(u *v1alpha1.UserSpec) {
			u.Permissions = strings.Repeat(">p ", 1000)
		}), want: []string{"spec.users: Too long: 66", "more than the 65536 bytes allowed"}},
		{name: "too many client peers", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Clients: peers(MaxNetworkPolicyPeers + 1)}
		}, want: []string{"spec.networkPolicy.clients: Too many: 65: must have at most 64 items"}},
		{name: "too many metrics peers", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Metrics: peers(MaxNetworkPolicyPeers + 1)}
		}, want: []string{"spec.networkPolicy.metrics: Too many: 65"}},
		{name: "too many service annotations", mutate: ext(func(e *v1alpha1.ExternalAccessSpec) {
			e.Annotations = map[string]string{}
			for i := range MaxServiceAnnotations + 1 {
				e.Annotations[fmt.Sprintf("example.com/a%d", i)] = "v"
			}
		}), want: []string{"spec.externalAccess.annotations: Too many: 65: must have at most 64 items"}},
		{name: "service annotations too big", mutate: ext(func(e *v1alpha1.ExternalAccessSpec) {
			e.Annotations = map[string]string{"example.com/a": strings.Repeat("v", MaxAnnotationsBytes)}
		}), want: []string{"spec.externalAccess.annotations: Too long: ", "more than the 32768 bytes allowed"}},
		{name: "too many service labels", mutate: ext(func(e *v1alpha1.ExternalAccessSpec) {
			e.Labels = map[string]string{}
			for i := range MaxServiceLabels + 1 {
				e.Labels[fmt.Sprintf("l%d", i)] = "v"
			}
		}), want: []string{"spec.externalAccess.labels: Too many: 65"}},
		{name: "too many source ranges", mutate: ext(func(e *v1alpha1.ExternalAccessSpec) {
			for i := range MaxSourceRanges + 1 {
				e.LoadBalancerSourceRanges = append(e.LoadBalancerSourceRanges, fmt.Sprintf("10.%d.0.0/16", i))
			}
		}), want: []string{"spec.externalAccess.loadBalancerSourceRanges: Too many: 65: must have at most 64 items"}},
		{name: "whole spec too big", mutate: func(c *v1alpha1.ValkeyCluster) {
			c.Spec.Resources.Claims = make([]corev1.ResourceClaim, 3000)
			for i := range c.Spec.Resources.Claims {
				c.Spec.Resources.Claims[i] = corev1.ResourceClaim{Name: strings.Repeat("c", 80) + strconv.Itoa(i)}
			}
		}, want: []string{"spec: Too long: ", "bytes of JSON, more than the 262144 bytes allowed"}},
		{name: "certificate names at the limit", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			for i := range MaxCertificateNames {
				cm.DNSNames = append(cm.DNSNames, fmt.Sprintf("n%d.example.com", i))
				cm.IPAddresses = append(cm.IPAddresses, fmt.Sprintf("10.0.0.%d", i))
			}
		})},
		{name: "too many certificate names", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			for i := range MaxCertificateNames + 1 {
				cm.DNSNames = append(cm.DNSNames, fmt.Sprintf("n%d.example.com", i))
				cm.IPAddresses = append(cm.IPAddresses, fmt.Sprintf("10.0.0.%d", i))
			}
		}), want: []string{"spec.tls.certManager.dnsNames: Too many: 33: must have at most 32 items",
			"spec.tls.certManager.ipAddresses: Too many: 33: must have at most 32 items"}},
		{name: "issuer name too long", mutate: certManager(func(cm *v1alpha1.CertManagerSpec) {
			cm.IssuerRef = &v1alpha1.IssuerRef{Name: strings.Repeat("a", MaxKubernetesNameLen+1)}
		}), want: []string{"spec.tls.certManager.issuerRef.name: Too long: may not be more than 253 characters"}},
		{name: "the reference sample", mutate: func(c *v1alpha1.ValkeyCluster) { *c = *seedSample() }},
	})
}

// The CRDs carry the limits the schema can state with the same values as this package,
// and say them in the field's description (kubectl explain, docs/api.md).
func TestSchemaLimits(t *testing.T) {
	type limit struct {
		path, keyword string
		value         int
		// said: the field's description states the value.
		said bool
	}
	store := func(prefix string) []limit {
		return []limit{
			{prefix + "prefix", "maxLength", MaxPrefixLength, true},
			{prefix + "s3.endpoint", "maxLength", MaxObjectStoreEndpoint, true},
			{prefix + "s3.region", "maxLength", MaxRegionLength, true},
			{prefix + "s3.bucket", "maxLength", 63, true},
			{prefix + "s3.credentials.secretName", "maxLength", MaxKubernetesNameLen, false},
			{prefix + "s3.credentials.accessKeyIDKey", "maxLength", MaxKubernetesNameLen, false},
			{prefix + "s3.caBundle.secretName", "maxLength", MaxKubernetesNameLen, false},
		}
	}
	userList := func(path string) []limit {
		return []limit{{path, "maxItems", MaxUserListEntries, true}, {path + "[]", "maxLength", MaxUserEntryLength, false}}
	}
	crds := map[string][]limit{
		"valkey.io_valkeyclusters.yaml": append(append(append(append(append(append(append([]limit{
			{"image", "maxLength", MaxImageLength, true},
			{"imagePullSecrets", "maxItems", MaxImagePullSecrets, true},
			{"config", "maxProperties", MaxConfigEntries, true},
			{"containers", "maxItems", MaxContainers, true},
			{"exporter.image", "maxLength", MaxImageLength, true},
			{"persistence.storageClassName", "maxLength", MaxKubernetesNameLen, false},
			{"scheduling.tolerations", "maxItems", MaxTolerations, true},
			{"scheduling.nodeSelector", "maxProperties", MaxNodeSelector, true},
			{"scheduling.priorityClassName", "maxLength", MaxKubernetesNameLen, false},
			{"scheduling.topologySpreadConstraints", "maxItems", MaxSpreadConstraints, true},
			{"tls.certificate.secretName", "maxLength", MaxKubernetesNameLen, false},
			{"tls.certManager.issuerRef.name", "maxLength", MaxKubernetesNameLen, false},
			{"tls.certManager.issuerRef.group", "maxLength", MaxKubernetesNameLen, false},
			{"tls.certManager.duration", "maxLength", MaxDurationLength, false},
			{"tls.certManager.renewBefore", "maxLength", MaxDurationLength, false},
			{"tls.certManager.dnsNames", "maxItems", MaxCertificateNames, true},
			{"tls.certManager.dnsNames[]", "maxLength", MaxKubernetesNameLen, false},
			{"tls.certManager.ipAddresses", "maxItems", MaxCertificateNames, true},
			{"tls.certManager.ipAddresses[]", "maxLength", MaxIPAddressLength, false},
			{"users", "maxItems", MaxUsers, true},
			{"users[].name", "maxLength", MaxUserNameLength, true},
			{"users[].permissions", "maxLength", MaxPermissionsLength, true},
			{"users[].passwordSecret.name", "maxLength", MaxKubernetesNameLen, false},
			{"users[].passwordSecret.keys", "maxItems", MaxPasswordKeys, true},
			{"users[].passwordSecret.keys[]", "maxLength", MaxKubernetesNameLen, false},
			{"networkPolicy.clients", "maxItems", MaxNetworkPolicyPeers, true},
			{"networkPolicy.metrics", "maxItems", MaxNetworkPolicyPeers, true},
			{"externalAccess.annotations", "maxProperties", MaxServiceAnnotations, true},
			{"externalAccess.labels", "maxProperties", MaxServiceLabels, true},
			{"externalAccess.loadBalancerSourceRanges", "maxItems", MaxSourceRanges, true},
			{"externalAccess.loadBalancerSourceRanges[]", "maxLength", MaxSourceRangeLength, false},
			{"dataSource.backupName", "maxLength", 63, false},
			{"dataSource.path", "maxLength", MaxDataSourcePath, true},
		}, userList("users[].commands.allow")...), userList("users[].commands.deny")...),
			userList("users[].keys.readWrite")...), userList("users[].keys.readOnly")...),
			userList("users[].keys.writeOnly")...), userList("users[].channels.patterns")...),
			store("dataSource.objectStore.")...),
		"valkey.io_valkeybackups.yaml": append([]limit{{"clusterName", "maxLength", 63, false}}, store("objectStore.")...),
		"valkey.io_valkeybackupschedules.yaml": append([]limit{
			{"clusterName", "maxLength", 63, false},
			{"schedule", "maxLength", MaxScheduleLength, true},
		}, store("objectStore.")...),
	}
	for file, limits := range crds {
		spec := crdSpecSchema(t, file)
		for _, l := range limits {
			t.Run(file+"/"+l.path, func(t *testing.T) {
				s := schemaAt(t, spec, l.path)
				got, ok := s[l.keyword].(int64)
				if !ok || int(got) != l.value {
					t.Fatalf("%s is %v, want %d (the validation package's limit)", l.keyword, s[l.keyword], l.value)
				}
				if d, _ := s["description"].(string); l.said && !strings.Contains(d, strconv.Itoa(l.value)) {
					t.Errorf("the description does not say the limit %d: %q", l.value, d)
				}
			})
		}
	}
}

// crdSpecSchema reads the spec schema of a generated CRD.
func crdSpecSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	versions := crd["spec"].(map[string]any)["versions"].([]any)
	root := versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	return root["properties"].(map[string]any)["spec"].(map[string]any)
}

// schemaAt walks a dotted path ("users[].keys.readWrite[]") down a schema.
func schemaAt(t *testing.T, s map[string]any, path string) map[string]any {
	t.Helper()
	for _, part := range strings.Split(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		props, ok := s["properties"].(map[string]any)
		if !ok || props[name] == nil {
			t.Fatalf("no property %s on the way to %s", name, path)
		}
		s = props[name].(map[string]any)
		if items {
			s = s["items"].(map[string]any)
		}
	}
	return s
}
