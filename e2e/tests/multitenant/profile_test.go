//go:build e2e

package multitenant

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/e2e/framework"
)

// tenantUser is the user the suite impersonates: an editor of its namespace only.
const tenantUser = "tenant-a"

// attempt is one thing a tenant asks for: the object, and the text the refusal must
// hold ("" when it must be admitted).
type attempt struct {
	name string
	obj  func(ns string) client.Object
	want string
}

func cluster(mutate func(*v1alpha1.ValkeyCluster)) func(string) client.Object {
	return func(ns string) client.Object {
		vc := framework.NewValkeyCluster(ns, "try", 3, 1)
		mutate(vc)
		return vc
	}
}

func externalAccess(ea v1alpha1.ExternalAccessSpec) func(string) client.Object {
	return cluster(func(vc *v1alpha1.ValkeyCluster) { vc.Spec.ExternalAccess = &ea })
}

func store(endpoint string) v1alpha1.ObjectStoreSpec {
	return v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "backups", Endpoint: endpoint,
		Credentials: v1alpha1.S3Credentials{SecretName: "s3"}}}
}

func schedule(every, endpoint string) func(string) client.Object {
	return func(ns string) client.Object {
		return &v1alpha1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "try"},
			Spec: v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "vk", Schedule: every, ObjectStore: store(endpoint)}}
	}
}

var attempts = []attempt{
	{name: "a sidecar", want: "spec.containers[0]: Forbidden", obj: cluster(func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.Containers = []corev1.Container{{Name: "side", Image: "busybox"}}
	})},
	{name: "the NetworkPolicy off", want: "spec.networkPolicy.enabled: Forbidden", obj: cluster(func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: ptr.To(false)}
	})},
	{name: "NodePort Services, a type not listed", want: "spec.externalAccess.type: Forbidden: NodePort is not admitted by this operator's policy",
		obj: externalAccess(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessNodePort})},
	{name: "an internet-facing load balancer", want: "spec.externalAccess.annotations[service.beta.kubernetes.io/aws-load-balancer-scheme]: Forbidden",
		obj: externalAccess(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer,
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing"}})},
	{name: "DNS names in another team's zone", want: "spec.externalAccess.hostnameTemplate: Forbidden",
		obj: externalAccess(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{member}.team-b.example.com"})},
	{name: "more members than the cap", want: "spec.shards: Invalid value: 34: 34 shards x (1 + 2 replicas) = 102 members",
		obj: func(ns string) client.Object { return framework.NewValkeyCluster(ns, "try", 34, 2) }},
	{name: "a module", want: "spec.config", obj: cluster(func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.Config = map[string]string{"loadmodule": "/tmp/evil.so"}
	})},
	{name: "backups every second", want: "spec.schedule: Invalid value: \"@every 1s\"", obj: schedule("@every 1s", "")},
	{name: "an object store at the metadata address", want: "spec.objectStore.s3.endpoint: Invalid value: \"http://169.254.169.254/latest\"",
		obj: schedule("@every 1h", "http://169.254.169.254/latest")},
	// What the administrator's lists admit.
	{name: "a load balancer with external-dns's annotations under the team's suffix",
		obj: externalAccess(v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalAccessLoadBalancer, HostnameTemplate: "{member}.valkey" + allowedSuffix,
			Annotations: map[string]string{allowedAnnotationPrefix + "ttl": "60"}})},
	{name: "the server's environment patched", obj: cluster(func(vc *v1alpha1.ValkeyCluster) {
		vc.Spec.Containers = []corev1.Container{{Name: "server", Env: []corev1.EnvVar{{Name: "TZ", Value: "UTC"}}}}
	})},
}

// TestMultiTenantProfile checks, as a namespace's editor, what the multiTenant profile
// refuses and admits, then that a cluster the tenant creates works behind its
// NetworkPolicy.
func TestMultiTenantProfile(t *testing.T) {
	var tenant client.Client
	f := framework.NewFeature(suite, "a namespace's editor under the multiTenant profile").
		Assess("the webhooks refuse what a shared Kubernetes must, naming the field, and admit the rest", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k := framework.ClusterFrom(ctx, t)
			ns := framework.Namespace(ctx)
			tenant = tenantClient(ctx, t, k, ns)
			for _, a := range attempts {
				err := tenant.Create(ctx, a.obj(ns), client.DryRunAll)
				switch {
				case a.want == "" && err != nil:
					t.Errorf("%s: refused: %v", a.name, err)
				case a.want == "":
					t.Logf("%s: admitted", a.name)
				case err == nil:
					t.Errorf("%s: admitted, want a refusal with %q", a.name, a.want)
				case !strings.Contains(err.Error(), "admission webhook") || !strings.Contains(err.Error(), a.want):
					t.Errorf("%s: %v, want the webhook's refusal with %q", a.name, err, a.want)
				default:
					t.Logf("%s: refused: %s", a.name, err)
				}
			}
			return ctx
		}).
		Assess("a cluster the tenant creates reaches Ready behind its NetworkPolicy", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if tenant == nil {
				t.Fatal("no tenant client: the step before failed")
			}
			k := framework.ClusterFrom(ctx, t)
			vc := framework.NewValkeyCluster(framework.Namespace(ctx), "vk", 3, 1)
			if err := tenant.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			took := k.WaitClusterReady(ctx, t, vc, 4*time.Minute)
			var np networkingv1.NetworkPolicyList
			if err := k.Client.List(ctx, &np, client.InNamespace(vc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: vc.Name}); err != nil {
				t.Fatal(err)
			}
			if len(np.Items) == 0 {
				t.Errorf("cluster %s has no NetworkPolicy", vc.Name)
			}
			t.Logf("%s Ready %s after apply, %d NetworkPolicies", vc.Name, took.Round(100*time.Millisecond), len(np.Items))
			k.CheckStatusContract(ctx, t, vc)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// tenantClient gives tenantUser every verb on the project's resources and on Secrets of
// ns (a Role, bound in ns only) and returns a client that impersonates it.
func tenantClient(ctx context.Context, t *testing.T, k *framework.Cluster, ns string) client.Client {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-editor"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"*"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-editor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenantUser}}}
	for _, o := range []client.Object{role, binding} {
		if err := k.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(k.REST)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenantUser}
	c, err := client.New(cfg, client.Options{Scheme: k.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
